package io.kvledger.wire;

/**
 * Encodes and decodes {@link Registration} frames. Decoding is strict: a map with str keys,
 * {@code type} one of P, D, HELLO; for P and D all five other fields with their types (the proxy
 * skips registrations missing any). Unknown keys are skipped. Never throws; reusable; not
 * thread-safe.
 */
public final class RegistrationCodec {

    private static final byte[][] KEYS = {
        NotifyDecoder.ascii("type"), NotifyDecoder.ascii("http_address"), NotifyDecoder.ascii("zmq_address"),
        NotifyDecoder.ascii("dp_size"), NotifyDecoder.ascii("tp_size"), NotifyDecoder.ascii("transfer_mode"),
    };
    private static final String[] NAMES = {"type", "http_address", "zmq_address", "dp_size", "tp_size", "transfer_mode"};

    private final WireLimits limits;
    private final MsgpackReader reader;
    private final PyPacker packer = new PyPacker();

    public RegistrationCodec() {
        this(WireLimits.DEFAULT);
    }

    RegistrationCodec(WireLimits limits) {
        this.limits = limits;
        this.reader = new MsgpackReader(limits.maxNestingDepth());
    }

    public byte[] encode(Registration r) {
        if (Registration.HELLO.equals(r.type())) {
            return packer.reset().mapHeader(1).str("type").str(r.type()).toByteArray();
        }
        return packer.reset().mapHeader(6)
                .str("type").str(r.type())
                .str("http_address").str(r.httpAddress())
                .str("zmq_address").str(r.zmqAddress())
                .str("dp_size").integer(r.dpSize())
                .str("tp_size").integer(r.tpSize())
                .str("transfer_mode").str(r.transferMode())
                .toByteArray();
    }

    public DecodeResult<Registration> decode(byte[] frame) {
        return DecodeResult.of(() -> decodeOrThrow(frame));
    }

    private Registration decodeOrThrow(byte[] frame) throws java.io.IOException {
        Frames.checkSize(frame, limits);
        reader.reset(frame);
        if (!NotifyDecoder.startsWithMap(frame)) {
            throw new WireReject(RejectReason.NOT_A_MAP, "registration must be a msgpack map");
        }
        int n = reader.mapHeader("registration");
        // the str fields by key index, the two ints (dp_size, tp_size) in num; seen: a bit per key read
        String[] text = new String[KEYS.length];
        int[] num = new int[KEYS.length];
        int seen = 0;
        for (int i = 0; i < n; i++) {
            int k = reader.key(KEYS, "registration");
            if (k < 0) {
                reader.skip(1, "value of an unknown key");
                continue;
            }
            if ((seen & (1 << k)) != 0) {
                throw new WireReject(RejectReason.DUPLICATE_KEY, "key '" + NAMES[k] + "' appears twice");
            }
            seen |= 1 << k;
            if (k == 3 || k == 4) {
                num[k] = reader.int32(NAMES[k]);
            } else {
                text[k] = reader.string(NAMES[k]);
            }
        }
        Frames.checkEnd(reader);
        if ((seen & 1) == 0) {
            throw new WireReject(RejectReason.MISSING_TYPE, "registration without 'type'");
        }
        String type = text[0];
        if (Registration.HELLO.equals(type)) {
            return new Registration(type, text[1], text[2], num[3], num[4], text[5]);
        }
        if (!Registration.PRODUCER.equals(type) && !Registration.CONSUMER.equals(type)) {
            throw new WireReject(RejectReason.UNKNOWN_TYPE, "registration type '" + NotifyDecoder.clip(type) + "' is not P, D or HELLO");
        }
        for (int k = 1; k < KEYS.length; k++) {
            if ((seen & (1 << k)) == 0) {
                throw new WireReject(RejectReason.MISSING_FIELD, "registration without '" + NAMES[k] + "'");
            }
        }
        return new Registration(type, text[1], text[2], num[3], num[4], text[5]);
    }
}

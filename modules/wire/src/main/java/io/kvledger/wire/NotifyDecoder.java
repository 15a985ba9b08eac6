package io.kvledger.wire;

import java.nio.charset.StandardCharsets;

/**
 * Decodes notify-channel frames (protocol spec 3.3) strictly and boundedly.
 *
 * <p>Dispatch follows the Python listener: a frame whose first byte is a msgpack map header is a
 * structured message and must decode as exactly one map; any other frame is a raw completion id
 * and must be non-empty, valid UTF-8. Unlike Python (which falls back to UTF-8 when the map does
 * not decode), a frame that starts like a map but does not decode is rejected: no valid UTF-8 id
 * starts with a fixmap byte, so such a frame is a broken map, not an id.
 *
 * <p>A structured frame must:
 * <ul>
 *   <li>use str keys only ({@link RejectReason#BIN_KEY}, {@link RejectReason#NON_STRING_KEY}) and
 *       no known key twice ({@link RejectReason#DUPLICATE_KEY});</li>
 *   <li>have a {@code type} of {@code remote_blocks}, {@code write_done} or {@code release}, or no
 *       {@code type} and a {@code req_id} (legacy remote_blocks);</li>
 *   <li>carry {@code transfer_id} (str) and, for remote_blocks, {@code block_notify_list} (array of
 *       32-bit ints); optional {@code req_id} (str or nil), {@code decode_rank} (int, default 0),
 *       {@code consumer_tp_size} (int, positive when present);</li>
 *   <li>end exactly where the map ends ({@link RejectReason#TRAILING_BYTES}).</li>
 * </ul>
 * Keys the protocol does not define are skipped (Python ignores them), after checking they are
 * well-formed and not nested deeper than {@link WireLimits#maxNestingDepth()}.
 *
 * <p>Every rejection says, through {@link Rejection#wouldKillPythonListener()}, whether the same
 * bytes raise out of the Python listener's handler ({@link PythonNotifyListener}).
 *
 * <p>Never throws, never allocates more than a small multiple of the frame's length. Reusable and
 * not thread-safe: one instance per thread.
 */
public final class NotifyDecoder {

    private static final int K_TYPE = 0;
    private static final int K_REQ_ID = 1;
    private static final int K_TRANSFER_ID = 2;
    private static final int K_BLOCK_NOTIFY_LIST = 3;
    private static final int K_DECODE_RANK = 4;
    private static final int K_CONSUMER_TP_SIZE = 5;
    private static final byte[][] KEYS = {
        ascii("type"), ascii("req_id"), ascii("transfer_id"), ascii("block_notify_list"),
        ascii("decode_rank"), ascii("consumer_tp_size"),
    };
    private static final String[] KEY_NAMES = {
        "type", "req_id", "transfer_id", "block_notify_list", "decode_rank", "consumer_tp_size",
    };

    private final WireLimits limits;
    private final MsgpackReader reader;

    public NotifyDecoder() {
        this(WireLimits.DEFAULT);
    }

    NotifyDecoder(WireLimits limits) {
        this.limits = limits;
        this.reader = new MsgpackReader(limits.maxNestingDepth());
    }

    WireLimits limits() {
        return limits;
    }

    /** One-shot decode with default limits. */
    static DecodeResult<NotifyMessage> decodeOnce(byte[] frame) {
        return new NotifyDecoder().decode(frame);
    }

    /** Decodes one frame (a {@code null} frame counts as empty). Never throws. */
    public DecodeResult<NotifyMessage> decode(byte[] frame) {
        Rejection r;
        try {
            return new DecodeResult.Ok<>(decodeOrThrow(frame));
        } catch (WireReject e) {
            r = e.toRejection();
        } catch (Exception e) {
            r = MsgpackReader.translate(e).toRejection();
        } catch (StackOverflowError e) {
            r = new Rejection(RejectReason.NESTING_TOO_DEEP, "nesting exhausted the stack", false);
        }
        return new DecodeResult.Rejected<>(r.withKill(PythonNotifyListener.wouldKill(frame)));
    }

    private NotifyMessage decodeOrThrow(byte[] frame) throws java.io.IOException {
        if (frame == null || frame.length == 0) {
            throw new WireReject(RejectReason.EMPTY_FRAME, "zero-length frame");
        }
        if (frame.length > limits.maxFrameBytes()) {
            throw new WireReject(RejectReason.FRAME_TOO_LARGE, "frame of " + frame.length + " bytes exceeds the limit of "
                    + limits.maxFrameBytes() + " bytes");
        }
        if (!startsWithMap(frame)) {
            reader.reset(frame);
            return new NotifyMessage.RawCompletion(reader.decodeUtf8(frame, 0, frame.length, "raw completion id"));
        }
        reader.reset(frame);
        int n = reader.mapHeader("notify frame");
        int seen = 0;
        String type = null;
        String reqId = null;
        String transferId = null;
        int[] blocks = null;
        int decodeRank = 0;
        Integer consumerTpSize = null;
        for (int i = 0; i < n; i++) {
            int k = reader.key(KEYS, "notify frame");
            if (k >= 0) {
                if ((seen & (1 << k)) != 0) {
                    throw new WireReject(RejectReason.DUPLICATE_KEY, "key '" + KEY_NAMES[k] + "' appears twice");
                }
                seen |= 1 << k;
            }
            switch (k) {
                case K_TYPE -> type = reader.string("type");
                case K_REQ_ID -> {
                    // informational; Python reads it with get(), a D scheduler without one sends None
                    if (reader.nextIsNil()) {
                        reader.nil("req_id");
                    } else {
                        reqId = reader.string("req_id");
                    }
                }
                case K_TRANSFER_ID -> transferId = reader.string("transfer_id");
                case K_BLOCK_NOTIFY_LIST -> {
                    int count = reader.arrayHeader("block_notify_list");
                    blocks = new int[count];
                    for (int j = 0; j < count; j++) {
                        blocks[j] = reader.int32("block_notify_list", j);
                    }
                }
                case K_DECODE_RANK -> decodeRank = reader.int32("decode_rank");
                case K_CONSUMER_TP_SIZE -> consumerTpSize = reader.int32("consumer_tp_size");
                default -> reader.skip(1, "value of an unknown key");
            }
        }
        if (reader.remaining() > 0) {
            throw new WireReject(RejectReason.TRAILING_BYTES, reader.remaining() + " bytes follow the map at offset " + reader.position());
        }
        boolean legacy = false;
        if (type == null) {
            if ((seen & (1 << K_REQ_ID)) == 0) {
                throw new WireReject(RejectReason.MISSING_TYPE, "map has neither 'type' nor 'req_id'");
            }
            legacy = true;
            type = "remote_blocks";
        }
        switch (type) {
            case "remote_blocks" -> {
                require(transferId != null, "remote_blocks", "transfer_id");
                require(blocks != null, "remote_blocks", "block_notify_list");
                return new NotifyMessage.RemoteBlocks(reqId, transferId, BlockIdList.wrap(blocks), decodeRank, legacy);
            }
            case "write_done" -> {
                require(transferId != null, "write_done", "transfer_id");
                return new NotifyMessage.WriteDone(transferId);
            }
            case "release" -> {
                require(transferId != null, "release", "transfer_id");
                if (consumerTpSize != null && consumerTpSize <= 0) {
                    throw new WireReject(RejectReason.INVALID_VALUE, "consumer_tp_size=" + consumerTpSize + " must be positive");
                }
                return new NotifyMessage.Release(transferId, consumerTpSize);
            }
            default -> throw new WireReject(RejectReason.UNKNOWN_TYPE, "type '" + clip(type) + "' is not remote_blocks, write_done or release");
        }
    }

    private static void require(boolean present, String type, String field) {
        if (!present) {
            throw new WireReject(RejectReason.MISSING_FIELD, type + " without '" + field + "'");
        }
    }

    /** Whether the first byte is a msgpack map header (fixmap, map16, map32). */
    static boolean startsWithMap(byte[] frame) {
        int b = frame[0] & 0xff;
        return (b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf;
    }

    static String clip(String s) {
        return s.length() <= 64 ? s : s.substring(0, 64) + "...(" + s.length() + " chars)";
    }

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}

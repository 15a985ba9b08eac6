package io.kvledger.wire;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * Encodes and decodes the two handshake replies: {@link AgentMetadata} (msgspec map form) and the
 * {@link LayerMap}. Decoding follows msgspec and {@code msgpack.loads} strictly: str keys, typed
 * fields, every metadata field present (unknown fields are skipped, as msgspec does), no trailing
 * bytes. Never throws; reusable; not thread-safe.
 */
public final class HandshakeCodec {

    private static final String[] NAMES = {
        "engine_id", "agent_metadata", "kv_caches_base_addr", "num_blocks", "block_len", "attn_backend_name",
    };
    private static final byte[][] KEYS = new byte[NAMES.length][];

    static {
        for (int i = 0; i < NAMES.length; i++) {
            KEYS[i] = NotifyDecoder.ascii(NAMES[i]);
        }
    }

    private final WireLimits limits;
    private final MsgpackReader reader;
    private final PyPacker packer = new PyPacker();

    public HandshakeCodec() {
        this(WireLimits.DEFAULT);
    }

    HandshakeCodec(WireLimits limits) {
        this.limits = limits;
        this.reader = new MsgpackReader(limits.maxNestingDepth());
    }

    public byte[] encodeMetadata(AgentMetadata m) {
        packer.reset().mapHeader(6)
                .str("engine_id").str(m.engineId())
                .str("agent_metadata").bin(m.agentMetadata().raw())
                .str("kv_caches_base_addr");
        long[] addrs = m.kvCachesBaseAddr();
        packer.arrayHeader(addrs.length);
        for (long a : addrs) {
            packer.uint64Bits(a);
        }
        return packer.str("num_blocks").integer(m.numBlocks())
                .str("block_len").integer(m.blockLen())
                .str("attn_backend_name").str(m.attnBackendName())
                .toByteArray();
    }

    public byte[] encodeLayerMap(LayerMap map) {
        packer.reset().mapHeader(map.layers().size());
        map.layers().forEach((name, descs) -> {
            packer.str(name).arrayHeader(descs.size());
            for (OpaqueBytes d : descs) {
                packer.bin(d.raw());
            }
        });
        return packer.toByteArray();
    }

    public DecodeResult<AgentMetadata> decodeMetadata(byte[] frame) {
        return DecodeResult.of(() -> metadata(frame));
    }

    public DecodeResult<LayerMap> decodeLayerMap(byte[] frame) {
        return DecodeResult.of(() -> layerMap(frame));
    }

    private AgentMetadata metadata(byte[] frame) throws java.io.IOException {
        Frames.checkSize(frame, limits);
        if (!NotifyDecoder.startsWithMap(frame)) {
            throw new WireReject(RejectReason.NOT_A_MAP, "agent metadata must be a msgpack map (msgspec map form)");
        }
        reader.reset(frame);
        int n = reader.mapHeader("agent metadata");
        String engineId = null;
        byte[] blob = null;
        long[] addrs = null;
        Long numBlocks = null;
        Long blockLen = null;
        String backend = null;
        int seen = 0;
        for (int i = 0; i < n; i++) {
            int k = reader.key(KEYS, "agent metadata");
            if (k < 0) {
                reader.skip(1, "value of an unknown field");
                continue;
            }
            if ((seen & (1 << k)) != 0) {
                throw new WireReject(RejectReason.DUPLICATE_KEY, "field '" + NAMES[k] + "' appears twice");
            }
            seen |= 1 << k;
            switch (k) {
                case 0 -> engineId = reader.string("engine_id");
                case 1 -> blob = reader.binary("agent_metadata");
                case 2 -> {
                    int count = reader.arrayHeader("kv_caches_base_addr");
                    addrs = new long[count];
                    for (int j = 0; j < count; j++) {
                        addrs[j] = reader.uint64Bits("kv_caches_base_addr", j);
                    }
                }
                case 3 -> numBlocks = reader.integer("num_blocks");
                case 4 -> blockLen = reader.integer("block_len");
                default -> backend = reader.string("attn_backend_name");
            }
        }
        Frames.checkEnd(reader);
        for (int k = 0; k < NAMES.length; k++) {
            if ((seen & (1 << k)) == 0) {
                throw new WireReject(RejectReason.MISSING_FIELD, "agent metadata without '" + NAMES[k] + "'");
            }
        }
        return new AgentMetadata(engineId, OpaqueBytes.wrap(blob), addrs, numBlocks, blockLen, backend);
    }

    private LayerMap layerMap(byte[] frame) throws java.io.IOException {
        Frames.checkSize(frame, limits);
        if (!NotifyDecoder.startsWithMap(frame)) {
            throw new WireReject(RejectReason.NOT_A_MAP, "layer map must be a msgpack map");
        }
        reader.reset(frame);
        int n = reader.mapHeader("layer map");
        LinkedHashMap<String, List<OpaqueBytes>> layers = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            String name = reader.keyString("layer map");
            if (layers.containsKey(name)) {
                throw new WireReject(RejectReason.DUPLICATE_KEY, "layer '" + NotifyDecoder.clip(name) + "' appears twice");
            }
            List<OpaqueBytes> descs;
            try {
                int count = reader.arrayHeader("descriptors");
                descs = new ArrayList<>(count);
                for (int j = 0; j < count; j++) {
                    descs.add(OpaqueBytes.wrap(reader.binary("descriptors", j)));
                }
            } catch (WireReject e) {
                throw e.relabel("descriptors", "descriptors of layer '" + NotifyDecoder.clip(name) + "'");
            }
            layers.put(name, descs);
        }
        Frames.checkEnd(reader);
        return new LayerMap(layers);
    }
}

package io.kvledger.wire;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Generates fuzz frames from a seed: random bytes, mutations of the wire vectors (bit flips,
 * truncation, insertion, splicing, inflated headers) and random Python-valued maps over the
 * protocol's keys. Deterministic for a seed. Shared with the zmq module's live fuzz test by copy
 * of the idea, not the class (test classes do not cross modules).
 */
final class FrameFuzz {

    private static final String[] KEYS = {"type", "req_id", "transfer_id", "block_notify_list", "decode_rank", "consumer_tp_size", "x"};
    private static final String[] TYPES = {"remote_blocks", "write_done", "release", "write_failed", "", "REMOTE_BLOCKS"};
    private static final int[] HEADERS = {0xdc, 0xdd, 0xde, 0xdf, 0xd9, 0xda, 0xdb, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xc1};

    private final SplittableRandom rnd;
    private final List<byte[]> seeds;

    FrameFuzz(long seed) {
        this.rnd = new SplittableRandom(seed);
        this.seeds = new ArrayList<>();
        for (WireVectors.Vector v : WireVectors.all()) {
            if (v.file().equals("notify.json")) {
                seeds.add(v.bytes());
            }
        }
    }

    byte[] next() {
        return switch (rnd.nextInt(8)) {
            case 0 -> randomBytes(rnd.nextInt(0, 48));
            case 1 -> flip(pick());
            case 2 -> truncate(pick());
            case 3 -> insert(pick());
            case 4 -> splice(pick(), pick());
            case 5 -> inflate(pick());
            default -> structured();
        };
    }

    private byte[] pick() {
        return seeds.get(rnd.nextInt(seeds.size()));
    }

    private byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) rnd.nextInt(256);
        }
        if (n > 0 && rnd.nextBoolean()) {
            b[0] = (byte) (0x80 | rnd.nextInt(16));
        }
        return b;
    }

    private byte[] flip(byte[] f) {
        byte[] b = f.clone();
        int flips = 1 + rnd.nextInt(3);
        for (int i = 0; i < flips && b.length > 0; i++) {
            b[rnd.nextInt(b.length)] ^= (byte) (1 << rnd.nextInt(8));
        }
        return b;
    }

    private byte[] truncate(byte[] f) {
        return Arrays.copyOf(f, f.length == 0 ? 0 : rnd.nextInt(f.length));
    }

    private byte[] insert(byte[] f) {
        int at = f.length == 0 ? 0 : rnd.nextInt(f.length + 1);
        byte[] extra = randomBytes(1 + rnd.nextInt(4));
        byte[] b = new byte[f.length + extra.length];
        System.arraycopy(f, 0, b, 0, at);
        System.arraycopy(extra, 0, b, at, extra.length);
        System.arraycopy(f, at, b, at + extra.length, f.length - at);
        return b;
    }

    private byte[] splice(byte[] a, byte[] b) {
        int i = a.length == 0 ? 0 : rnd.nextInt(a.length);
        int j = b.length == 0 ? 0 : rnd.nextInt(b.length);
        byte[] out = new byte[i + b.length - j];
        System.arraycopy(a, 0, out, 0, i);
        System.arraycopy(b, j, out, i, b.length - j);
        return out;
    }

    private byte[] inflate(byte[] f) {
        if (f.length == 0) {
            return new byte[] {(byte) 0xdd, 0x7f, -1, -1, -1};
        }
        int at = rnd.nextInt(f.length);
        byte[] header = {(byte) HEADERS[rnd.nextInt(HEADERS.length)], (byte) (rnd.nextBoolean() ? 0x7f : 0xff), -1, -1, -1};
        byte[] out = Arrays.copyOf(f, Math.max(f.length, at + header.length));
        System.arraycopy(header, 0, out, at, header.length);
        return out;
    }

    private byte[] structured() {
        Map<String, Object> m = new LinkedHashMap<>();
        int n = rnd.nextInt(0, 6);
        for (int i = 0; i < n; i++) {
            String k = KEYS[rnd.nextInt(KEYS.length)];
            m.put(k, value(k, 0));
        }
        if (rnd.nextInt(4) != 0) {
            m.put("type", TYPES[rnd.nextInt(TYPES.length)]);
        }
        if (rnd.nextInt(3) != 0) {
            m.put("transfer_id", "tx-" + rnd.nextInt(1000));
        }
        try {
            return PyMsgpack.encode(m);
        } catch (WireEncodingException e) {
            return new byte[0];
        }
    }

    private Object value(String key, int depth) {
        int kind = rnd.nextInt(depth > 3 ? 8 : 10);
        if (kind == 0 && key.equals("block_notify_list")) {
            List<Object> l = new ArrayList<>();
            for (int i = rnd.nextInt(6); i > 0; i--) {
                l.add(rnd.nextLong(-70000, 70000));
            }
            return l;
        }
        return switch (kind) {
            case 0, 1 -> rnd.nextLong(-5, 1L << 33);
            case 2 -> "s" + rnd.nextInt(100);
            case 3 -> null;
            case 4 -> rnd.nextBoolean();
            case 5 -> rnd.nextDouble();
            case 6 -> new byte[] {(byte) rnd.nextInt(256)};
            case 7 -> "";
            case 8 -> java.util.Arrays.asList(value(key, depth + 1));
            default -> {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("k", value(key, depth + 1));
                yield m;
            }
        };
    }
}

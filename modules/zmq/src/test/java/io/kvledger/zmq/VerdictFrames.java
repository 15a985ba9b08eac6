package io.kvledger.zmq;

import io.kvledger.wire.NotifyEncoder;
import io.kvledger.wire.PyMsgpack;
import io.kvledger.wire.WireEncodingException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Frames for checking the Python-listener model and for the live fuzz test: protocol-shaped maps
 * with random (often wrong) values, the malformed wire vectors, their mutations, and random
 * bytes. Deterministic for a seed.
 */
final class VerdictFrames {

    private static final String[] KEYS = {"type", "req_id", "transfer_id", "block_notify_list", "decode_rank", "consumer_tp_size", "x"};
    private static final String[] TYPES = {"remote_blocks", "write_done", "release", "write_failed", "", "explode"};
    static final List<String> FIXED_HEX = List.of(
            "fffe8081",
            "82c40474797065c40772656c65617365c40b7472616e736665725f6964c40474782d31",
            "82a474797065a76578706c6f6465ab7472616e736665725f6964a474782d31",
            "82a474797065a772656c65617365ab7472616e736665725f6964a474",
            "",
            "83a474797065a772656c65617365ab7472616e736665725f696411b0636f6e73756d65725f74705f73697a65a138",
            "83a474797065a772656c65617365ab7472616e736665725f6964a474782d31b0636f6e73756d65725f74705f73697a6500",
            "85a474797065ad72656d6f74655f626c6f636b73b1626c6f636b5f6e6f746966795f6c697374dd7fffffff",
            "74782d6c65676163792d726177",
            "83a474797065a772656c65617365ab7472616e736665725f6964a174b0636f6e73756d65725f74705f73697a65cb7ff8000000000000",
            "83a474797065a772656c65617365ab7472616e736665725f6964a174b0636f6e73756d65725f74705f73697a65cb7ff0000000000000",
            "83a474797065aa77726974655f646f6e65ab7472616e736665725f6964a174a178d6ff00000001",
            "83a474797065aa77726974655f646f6e65ab7472616e736665725f6964a174a178c703ff010203",
            "81a17891c1");

    private VerdictFrames() {}

    static List<byte[]> generate(long seed, int n) {
        SplittableRandom rnd = new SplittableRandom(seed);
        NotifyEncoder enc = new NotifyEncoder();
        List<byte[]> base = new ArrayList<>();
        for (String h : FIXED_HEX) {
            base.add(HexFormat.of().parseHex(h));
        }
        base.add(enc.remoteBlocks("d", "tx-1", List.of(1, 2, 3), 1));
        base.add(enc.release("tx-1", 8));
        base.add(enc.writeDone("tx-2"));
        List<byte[]> out = new ArrayList<>(base);
        Object deep = 1;
        for (int i = 0; i < 1100; i++) {
            deep = List.of(deep);
        }
        out.add(PyMsgpack.encode(map("type", "write_done", "transfer_id", "t", "x", deep)));
        while (out.size() < n) {
            byte[] f = switch (rnd.nextInt(6)) {
                case 0 -> {
                    byte[] b = base.get(rnd.nextInt(base.size())).clone();
                    if (b.length > 0) {
                        b[rnd.nextInt(b.length)] ^= (byte) (1 << rnd.nextInt(8));
                    }
                    yield b;
                }
                case 1 -> {
                    byte[] b = base.get(rnd.nextInt(base.size()));
                    yield Arrays.copyOf(b, b.length == 0 ? 0 : rnd.nextInt(b.length));
                }
                case 2 -> {
                    byte[] b = new byte[rnd.nextInt(1, 24)];
                    for (int i = 0; i < b.length; i++) {
                        b[i] = (byte) rnd.nextInt(256);
                    }
                    if (rnd.nextBoolean()) {
                        b[0] = (byte) (0x80 | rnd.nextInt(16));
                    }
                    yield b;
                }
                default -> structured(rnd, enc);
            };
            out.add(f);
        }
        return out;
    }

    private static byte[] structured(SplittableRandom rnd, NotifyEncoder enc) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (rnd.nextInt(5) != 0) {
            m.put("type", rnd.nextInt(6) == 0 ? value(rnd, 0) : TYPES[rnd.nextInt(TYPES.length)]);
        }
        if (rnd.nextInt(4) != 0) {
            m.put("transfer_id", rnd.nextInt(4) == 0 ? value(rnd, 0) : "tx-" + rnd.nextInt(100));
        }
        for (int i = rnd.nextInt(4); i > 0; i--) {
            String k = KEYS[rnd.nextInt(KEYS.length)];
            m.put(k, k.equals("block_notify_list") && rnd.nextBoolean() ? ints(rnd) : value(rnd, 0));
        }
        try {
            return PyMsgpack.encode(m);
        } catch (WireEncodingException e) {
            return new byte[] {0x31};
        }
    }

    private static List<Object> ints(SplittableRandom rnd) {
        List<Object> l = new ArrayList<>();
        for (int i = rnd.nextInt(4); i > 0; i--) {
            l.add(rnd.nextLong(-100, 100_000));
        }
        return l;
    }

    private static Object value(SplittableRandom rnd, int depth) {
        return switch (rnd.nextInt(depth > 2 ? 12 : 14)) {
            case 0 -> rnd.nextLong(-3, 20);
            case 1 -> new BigInteger("18446744073709551615");
            case 2 -> "x";
            case 3 -> " +1_6 ";
            case 4 -> "٣";
            case 5 -> "";
            case 6 -> null;
            case 7 -> rnd.nextBoolean();
            case 8 -> rnd.nextBoolean() ? 0.0 : 2.7;
            case 9 -> new byte[] {'4'};
            case 10 -> new byte[0];
            case 11 -> rnd.nextBoolean() ? Double.NaN : Double.POSITIVE_INFINITY;
            case 12 -> new ArrayList<>(Arrays.asList(value(rnd, depth + 1)));
            default -> map("k", value(rnd, depth + 1));
        };
    }

    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }
}

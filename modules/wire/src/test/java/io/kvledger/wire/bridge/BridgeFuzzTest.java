package io.kvledger.wire.bridge;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.wire.PyMsgpack;
import io.kvledger.wire.RejectReason;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Random and mutated request frames never escape the bridge decoder: each is a request or a
 * rejection with a reason and a detail, every request re-encodes to a frame that decodes to the
 * same request, and every rejection yields an error reply Python can read. Budget
 * {@code -Dkvledger.fuzz.budget=N} (default 20,000), seed {@code -Dkvledger.fuzz.seed=S}; a
 * failure names the seed, the index and the frame's hex.
 */
class BridgeFuzzTest {

    static final int BUDGET = Integer.getInteger("kvledger.fuzz.budget", 20_000);
    static final long SEED = Long.getLong("kvledger.fuzz.seed", 0x62726467L);

    private static final String[] KEYS = {"v", "id", "hook", "args", "request_id", "num_prompt_tokens", "prompt_token_ids_len",
            "kv_transfer_params", "num_computed_tokens", "block_ids", "num_external_tokens", "step", "cached_req_ids",
            "cached_new_block_ids", "status", "finished_sending", "finished_recving", "layer_name", "kv_role", "tp_rank", "x"};

    @Test
    void randomAndMutatedFramesNeverEscapeTheDecoder() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        List<byte[]> seeds = new ArrayList<>();
        List<Object> batch = new ArrayList<>();
        for (BridgeRequest r : BridgeSamples.all()) {
            seeds.add(BridgeCodec.encodeRequest(r));
            if (batch.size() < 4) {
                batch.add(PyMsgpack.decodeValue(BridgeCodec.encodeRequest(r), io.kvledger.wire.WireLimits.DEFAULT).valueOrNull().toObject());
            }
        }
        Map<String, Object> envelope = new java.util.LinkedHashMap<>();
        envelope.put("v", 1L);
        envelope.put("id", 99L);
        envelope.put("hook", BridgeCodec.BATCH);
        envelope.put("args", Map.of("calls", batch));
        seeds.add(PyMsgpack.encode(envelope));
        int batches = 0;
        Map<RejectReason, Integer> reasons = new EnumMap<>(RejectReason.class);
        int requests = 0;
        int rejections = 0;
        for (int i = 0; i < BUDGET; i++) {
            byte[] frame = next(rnd, seeds);
            String where = "seed " + SEED + " frame " + i + " hex " + HexFormat.of().formatHex(frame);
            BridgeDecoded d;
            try {
                d = BridgeCodec.decode(frame);
            } catch (Throwable t) {
                throw new AssertionError("decoder threw on " + where, t);
            }
            switch (d) {
                case BridgeDecoded.Request ok -> {
                    requests++;
                    BridgeDecoded again = BridgeCodec.decode(BridgeCodec.encodeRequest(ok.request()));
                    assertThat(again).as(where).isInstanceOf(BridgeDecoded.Request.class);
                    assertThat(BridgeSamples.same(ok.request(), ((BridgeDecoded.Request) again).request())).as(where).isTrue();
                }
                case BridgeDecoded.Rejected r -> {
                    rejections++;
                    reasons.merge(r.rejection().reason(), 1, Integer::sum);
                    assertThat(r.error()).as(where).isNotBlank();
                    assertThat(BridgeCodec.decodeReply(BridgeCodec.encodeError(r)).isOk()).as(where).isTrue();
                }
                case BridgeDecoded.Batch b -> {
                    batches++;
                    List<byte[]> replies = new ArrayList<>();
                    for (BridgeDecoded c : b.calls()) {
                        assertThat(c).as(where).isNotInstanceOf(BridgeDecoded.Batch.class);
                        replies.add(c instanceof BridgeDecoded.Rejected r ? BridgeCodec.encodeError(r)
                                : BridgeCodec.encodeEmpty(((BridgeDecoded.Request) c).request().id()));
                    }
                    assertThat(BridgeCodec.decodeReply(BridgeCodec.encodeBatchReply(b.id(), replies)).isOk()).as(where).isTrue();
                }
            }
        }
        assertThat(requests + rejections + batches).isEqualTo(BUDGET);
        assertThat(batches).as("the batch seed survives some mutations").isPositive();
        // the generator reaches both outcomes and many kinds of rejection
        assertThat(requests).isGreaterThan(BUDGET / 50);
        assertThat(reasons.keySet()).contains(RejectReason.MISSING_FIELD, RejectReason.WRONG_FIELD_TYPE, RejectReason.TRUNCATED,
                RejectReason.UNKNOWN_TYPE, RejectReason.NOT_A_MAP);
    }

    private static byte[] next(SplittableRandom rnd, List<byte[]> seeds) {
        byte[] seed = seeds.get(rnd.nextInt(seeds.size()));
        return switch (rnd.nextInt(7)) {
            case 0 -> {
                byte[] b = new byte[rnd.nextInt(0, 40)];
                for (int i = 0; i < b.length; i++) {
                    b[i] = (byte) rnd.nextInt(256);
                }
                yield b;
            }
            case 1 -> {
                byte[] b = seed.clone();
                int flips = rnd.nextInt(1, 4);
                for (int i = 0; i < flips; i++) {
                    b[rnd.nextInt(b.length)] ^= (byte) (1 << rnd.nextInt(8));
                }
                yield b;
            }
            case 2 -> java.util.Arrays.copyOf(seed, rnd.nextInt(seed.length));
            case 3 -> {
                byte[] b = seed.clone();
                b[rnd.nextInt(b.length)] = (byte) new int[] {0xdc, 0xdd, 0xde, 0xdf, 0xd9, 0xda, 0xdb, 0xc1, 0xc4, 0xd4, 0xcf, 0xd3}[rnd.nextInt(12)];
                yield b;
            }
            case 4 -> {
                byte[] other = seeds.get(rnd.nextInt(seeds.size()));
                int cut = rnd.nextInt(seed.length);
                int from = rnd.nextInt(other.length);
                byte[] b = new byte[cut + other.length - from];
                System.arraycopy(seed, 0, b, 0, cut);
                System.arraycopy(other, from, b, cut, other.length - from);
                yield b;
            }
            default -> structured(rnd);
        };
    }

    /** A random envelope around random args over the protocol's keys and Python values. */
    private static byte[] structured(SplittableRandom rnd) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (rnd.nextInt(10) > 0) {
            m.put("v", rnd.nextInt(10) > 0 ? (Object) 1L : value(rnd, 1));
        }
        if (rnd.nextInt(10) > 0) {
            m.put("id", rnd.nextInt(10) > 0 ? (Object) rnd.nextLong() : value(rnd, 1));
        }
        if (rnd.nextInt(10) > 0) {
            BridgeHook[] hooks = BridgeHook.values();
            m.put("hook", rnd.nextInt(10) > 0 ? hooks[rnd.nextInt(hooks.length)].wireName() : value(rnd, 1));
        }
        Map<String, Object> args = new LinkedHashMap<>();
        int n = rnd.nextInt(6);
        for (int i = 0; i < n; i++) {
            args.put(KEYS[rnd.nextInt(KEYS.length)], value(rnd, 0));
        }
        m.put("args", args);
        return PyMsgpack.encode(m);
    }

    private static Object value(SplittableRandom rnd, int depth) {
        int k = rnd.nextInt(depth > 3 ? 7 : 10);
        return switch (k) {
            case 0 -> null;
            case 1 -> rnd.nextBoolean();
            case 2 -> (long) rnd.nextInt(-3, 100);
            case 3 -> rnd.nextLong();
            case 4 -> rnd.nextDouble();
            case 5 -> "s" + rnd.nextInt(5);
            case 6 -> FinishStatusNames.pick(rnd);
            case 7 -> {
                List<Object> l = new ArrayList<>();
                int n = rnd.nextInt(4);
                for (int i = 0; i < n; i++) {
                    l.add(value(rnd, depth + 1));
                }
                yield l;
            }
            case 8 -> {
                List<Object> l = new ArrayList<>();
                int n = rnd.nextInt(4);
                for (int i = 0; i < n; i++) {
                    l.add((long) rnd.nextInt(0, 1000));
                }
                yield l;
            }
            default -> {
                Map<String, Object> m = new LinkedHashMap<>();
                int n = rnd.nextInt(3);
                for (int i = 0; i < n; i++) {
                    m.put(KEYS[rnd.nextInt(KEYS.length)], value(rnd, depth + 1));
                }
                yield m;
            }
        };
    }

    private static final class FinishStatusNames {
        static String pick(SplittableRandom rnd) {
            io.kvledger.core.model.FinishStatus[] v = io.kvledger.core.model.FinishStatus.values();
            return v[rnd.nextInt(v.length)].name();
        }
    }
}

package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * {@code block-size-override} (class 15) on families of deployments: prefill and decode instances
 * of DP 1 or 2 or TP 1 to 4, every worker journaling its {@code kv_caches_registered}, one backend
 * per instance (MLA of FlashMLA's 64-token blocks or of the configured size, K/V split NHD and HND,
 * fused K/V), configured block sizes 16 and 32, healthy READ traffic on the engines around them.
 * Under vLLM 239b5ff30 every worker whose first tensor's block axis (as that version reads it)
 * differs from the configured block size is named 15, once, and nothing else is; the newest
 * connector, which takes the block size from the tensor, gives no finding on the same journals.
 */
class BlockSizeOverrideFamilyTest {

    private static final String LAYER = "model.layers.0.self_attn.attn";

    /** A backend's first tensor for {@code numBlocks} blocks of {@code block} tokens. */
    record Backend(String name, boolean mla, List<Integer> shapeFor) {
        List<Integer> shape(int numBlocks, int block) {
            List<Integer> s = new ArrayList<>();
            for (int x : shapeFor) {
                s.add(x == -1 ? numBlocks : x == -2 ? block : x);
            }
            return s;
        }

        /** The block size the backend allocates with, given the configured one. */
        int allocates(int configured) {
            return name.equals("FLASHMLA") ? 64 : configured;
        }

        /** Whether vLLM 239b5ff30 reads the block size off this layout where it is. */
        boolean readsBlockAxis() {
            return !name.endsWith("HND");
        }
    }

    // -1: num_blocks, -2: the block size the backend allocates with
    static final List<Backend> BACKENDS = List.of(
            new Backend("FLASHMLA", true, List.of(-1, -2, 576)),
            new Backend("TRITON_MLA", true, List.of(-1, -2, 576)),
            new Backend("FLASH_ATTN", false, List.of(2, -1, -2, 8, 128)),
            new Backend("FLASHINFER", false, List.of(-1, 2, -2, 8, 128)),
            new Backend("FLASH_ATTN_HND", false, List.of(2, -1, 8, -2, 128)));

    /** One instance: its role, DP and TP sizes, backend and configured block size. */
    record Instance(String name, Role role, int dp, int tp, Backend backend, int configured) {}

    private static List<List<Instance>> families() {
        List<List<Instance>> out = new ArrayList<>();
        int i = 0;
        for (Backend b : BACKENDS) {
            for (int configured : List.of(16, 32)) {
                // DP and TP both above 1 is another class (23: the listeners' ports collide)
                int dp = 1 + i % 2;
                int tp = dp > 1 ? 1 : 1 << (i % 3);
                Backend other = BACKENDS.get((i + 1) % BACKENDS.size());
                out.add(List.of(
                        new Instance("P", Role.PRODUCER, dp, tp, b, configured),
                        new Instance("D", Role.CONSUMER, 1, 1 + i % 4, other, configured),
                        new Instance("Q", Role.CONSUMER, 2, 1, b, configured),
                        new Instance("R", Role.CONSUMER, 1, 2, b, configured)));
                i++;
            }
        }
        return out;
    }

    /** The worker nodes of every instance with its registration; returns the workers vLLM 239b5ff30 stops. */
    private static Set<String> deploy(Cluster c, List<Instance> family, Behaviour behaviour) {
        Set<String> stopped = new LinkedHashSet<>();
        int host = 1;
        for (Instance in : family) {
            for (int dp = 0; dp < in.dp; dp++) {
                for (int tp = 0; tp < in.tp; tp++) {
                    String node = in.name + dp + "-tp" + tp;
                    c.node(node, NodeConfig.builder(in.role, TransferMode.READ).hostIp("10.0." + host + ".1")
                            .dp(dp, in.dp, in.dp).tp(tp, in.tp).cacheBlockSize(in.configured).behaviour(behaviour)
                            .build());
                    int allocates = in.backend.allocates(in.configured);
                    List<Integer> shape = in.backend.shape(4096, allocates);
                    c.on(node, new NodeEvent.KvCachesRegistered(1_000 + tp, in.configured, in.backend.name,
                            List.of(new NodeEvent.KvCacheTensor(LAYER, shape, "torch.bfloat16"),
                                    new NodeEvent.KvCacheTensor("model.layers.1.self_attn.attn", shape,
                                            "torch.bfloat16"))));
                    if (allocates != in.configured || !in.backend.readsBlockAxis()) {
                        stopped.add(node);
                    }
                }
            }
            host++;
        }
        return stopped;
    }

    /** Healthy READ traffic on a prefill and a decode engine beside the registrations. */
    private static void traffic(Cluster c, int requests) {
        c.node("P9", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.9.1").build());
        c.node("D9", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.9.2").build());
        for (int r = 0; r < requests; r++) {
            String rid = "cmpl-" + r;
            KvParams params = c.prefillLeg("P9", rid, KvParams.of("do_remote_decode", true, "do_remote_prefill", false,
                    "transfer_id", "tx-" + r));
            c.on("P9", new NodeEvent.ReleaseReceived(20 + r, "tx-" + r, 1));
            c.on("P9", new NodeEvent.FinishedPolled(21 + r));
        }
    }

    @Test
    void every_worker_vllm_239b5ff30_stops_is_named_15_and_nothing_else() {
        int damaged = 0;
        int families = 0;
        for (List<Instance> family : families()) {
            Cluster c = new Cluster();
            Set<String> stopped = deploy(c, family, Behaviour.vllm239b5ff30());
            traffic(c, 3);
            List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
            List<Finding> named = f.stream().filter(x -> x.detector().equals(BlockSizeOverride.DETECTOR)).toList();
            assertThat(named).allSatisfy(x -> {
                assertThat(x.bugClass()).isEqualTo(15);
                assertThat(x.requestId()).isNull();
                assertThat(x.message()).contains(LAYER).contains("asserts the two equal");
            });
            Set<String> nodes = named.stream().map(Finding::node).collect(Collectors.toCollection(LinkedHashSet::new));
            assertThat(nodes).as("family %s", family).containsExactlyInAnyOrderElementsOf(stopped);
            assertThat(named).hasSize(stopped.size());
            assertThat(f).as("nothing but the stopped workers").hasSameSizeAs(named);
            damaged += stopped.size();
            families++;
        }
        assertThat(families).isEqualTo(10);
        assertThat(damaged).as("damaged workers over the families").isGreaterThan(20);
    }

    @Test
    void the_finding_names_the_evidence() {
        Cluster c = new Cluster();
        deploy(c, List.of(new Instance("D", Role.CONSUMER, 1, 1, BACKENDS.get(0), 16)), Behaviour.vllm239b5ff30());
        Finding f = HangDetectors.run(c.ledger, Bounds.defaults()).getFirst();
        assertThat(f.message()).isEqualTo("D0-tp0 registered " + LAYER + " as [4096, 64, 576] torch.bfloat16 (MLA "
                + "[num_blocks, block_size, latent]: block axis 64, backend FLASHMLA) while the connector was configured "
                + "with block_size 16 and computes its offsets with it; vLLM 239b5ff30's register_kv_caches asserts the "
                + "two equal and the worker stops (Fix B of #37716/#39276 takes the block size from the tensor); nothing "
                + "follows it in this journal (the worker stopped there)");
        assertThat(f.atNs()).isEqualTo(1_000);
    }

    @Test
    void the_newest_connector_takes_the_block_size_from_the_tensor_and_gives_nothing() {
        for (List<Instance> family : families()) {
            Cluster c = new Cluster();
            deploy(c, family, Behaviour.newest());
            traffic(c, 2);
            assertThat(HangDetectors.run(c.ledger, Bounds.defaults())).as("family %s", family).isEmpty();
        }
    }

    @Test
    void under_the_seed_profile_the_finding_says_the_check_is_not_known() {
        Cluster c = new Cluster();
        deploy(c, List.of(new Instance("D", Role.CONSUMER, 1, 2, BACKENDS.get(0), 16)), Behaviour.seed());
        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).hasSize(2).allSatisfy(x -> {
            assertThat(x.bugClass()).isEqualTo(15);
            assertThat(x.message()).contains("kvledger does not know this worker's check");
        });
    }

    @Test
    void without_the_registration_an_overridden_group_says_what_the_journal_lacks() {
        Cluster c = new Cluster();
        NodeConfig.Builder b = NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").cacheBlockSize(16)
                .groups(List.of(KvGroupSpec.fullAttention(64))).behaviour(Behaviour.vllm239b5ff30());
        // the scheduler's and one worker's journal of the same engine: one finding for the engine
        c.node("D0", b.build());
        c.node("D0-tp0", b.build());
        c.on("D0-tp0", new NodeEvent.LoadStarted(5));
        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults()).stream()
                .filter(x -> x.detector().equals(BlockSizeOverride.DETECTOR)).toList();
        assertThat(f).hasSize(1);
        assertThat(f.getFirst().bugClass()).isZero();
        assertThat(f.getFirst().message()).startsWith("one of 15 or none: D0's KV-cache group FULL_ATTENTION has block "
                + "size 64 where cache_block_size is 16").contains("the journal lacks the registered tensor shapes");

        // with the worker's registration, the registration decides
        Cluster r = new Cluster();
        r.node("D0", b.build());
        r.node("D0-tp0", b.build());
        r.on("D0-tp0", new NodeEvent.KvCachesRegistered(5, 16, null,
                List.of(new NodeEvent.KvCacheTensor(LAYER, List.of(100, 64, 576), null))));
        List<Finding> g = HangDetectors.run(r.ledger, Bounds.defaults()).stream()
                .filter(x -> x.detector().equals(BlockSizeOverride.DETECTOR)).toList();
        assertThat(g).extracting(Finding::node, Finding::bugClass).containsExactly(org.assertj.core.groups.Tuple.tuple("D0-tp0", 15));

        // a group of the configured size: nothing to say
        Cluster h = new Cluster();
        h.node("D0", b.groups(List.of(KvGroupSpec.fullAttention(16))).build());
        assertThat(HangDetectors.run(h.ledger, Bounds.defaults())).isEmpty();
    }
}

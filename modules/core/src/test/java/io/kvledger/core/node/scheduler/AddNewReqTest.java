package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.ReqMeta;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code MoRIIOConnectorMetadata.add_new_req}, the ReqMeta it builds and what
 * {@code build_connector_meta} leaves behind when it raises (protocol 2.3, issue 11 section 1).
 * The helper is the same in the seed and the newest common (seed-vs-newest, "Helpers"), so every
 * case runs under both presets.
 */
class AddNewReqTest {

    static List<Behaviour> presets() {
        return List.of(Behaviour.seed(), Behaviour.newest());
    }

    /** What the toy proxy hands a prefill leg: remote_engine_id and remote_block_ids present as None. */
    private static KvParams prefillLeg(String tid, Object... extra) {
        KvParams kv = params("do_remote_decode", true, "do_remote_prefill", false, "transfer_id", tid,
                "remote_engine_id", null, "remote_block_ids", null);
        for (int i = 0; i < extra.length; i += 2) {
            kv.put((String) extra[i], extra[i + 1]);
        }
        return kv;
    }

    /** One WRITE producer save of a two-block prompt, built into a ReqMeta (or not). */
    private static List<Effect> saveStep(Behaviour b, String rid, KvParams kv) {
        Node p = new Node(producer(TransferMode.WRITE).behaviour(b));
        p.admit(rid, 32, kv);
        p.alloc(rid, one(1, 2), 0);
        return p.step();
    }

    private static ReqMeta savedMeta(List<Effect> fx) {
        List<ReqMeta> saves = single(fx, Effect.MetadataBuilt.class).reqsToSave();
        assertThat(saves).hasSize(1);
        return saves.get(0);
    }

    // ------------------------------------------------------------------ the ReqMeta fields

    @ParameterizedTest
    @MethodSource("presets")
    void remote_dp_size_defaults_only_when_absent_a_present_zero_stays_zero(Behaviour b) {
        // remote_dp_size=kv_transfer_params.get("remote_dp_size", 1): found by the seed differential
        String rid = proxyRid("dpsize");
        assertThat(savedMeta(saveStep(b, rid, prefillLeg("tx-z", "remote_dp_size", 0L))).remoteDpSize()).isZero();
        assertThat(savedMeta(saveStep(b, rid, prefillLeg("tx-a"))).remoteDpSize()).isEqualTo(1);
        assertThat(savedMeta(saveStep(b, rid, prefillLeg("tx-f", "remote_dp_size", 4L))).remoteDpSize()).isEqualTo(4);
    }

    @ParameterizedTest
    @MethodSource("presets")
    void multi_pod_hosts_falls_back_to_the_resolved_remote_host_without_remote_hosts(Behaviour b) {
        ReqMeta fromRid = savedMeta(saveStep(b, proxyRid("pods"), prefillLeg("tx-pods")));
        ReqMeta fromParams = savedMeta(saveStep(b, "plain-1", prefillLeg("tx-pods", "remote_host", "10.9.0.1",
                "remote_handshake_port", 7301, "remote_notify_port", 62005, "remote_hosts", List.of())));
        ReqMeta given = savedMeta(saveStep(b, proxyRid("pods"), prefillLeg("tx-pods",
                "remote_hosts", List.of("10.0.0.2", "10.0.0.3"))));

        assertThat(fromRid.multiPodHosts()).containsExactly(DECODE.host());
        assertThat(fromParams.multiPodHosts()).as("an empty list is falsy too").containsExactly("10.9.0.1");
        assertThat(given.multiPodHosts()).containsExactly("10.0.0.2", "10.0.0.3");
    }

    @ParameterizedTest
    @MethodSource("presets")
    void remote_engine_id_is_copied_as_given_and_never_synthesized(Behaviour b) {
        ReqMeta none = savedMeta(saveStep(b, proxyRid("eid"), prefillLeg("tx-eid")));
        KvParams absentKey = prefillLeg("tx-eid");
        KvParams noKey = KvParams.empty();
        for (Map.Entry<String, Object> en : absentKey.asMap().entrySet()) {
            if (!en.getKey().equals("remote_engine_id")) {
                noKey.put(en.getKey(), en.getValue());
            }
        }
        ReqMeta absent = savedMeta(saveStep(b, proxyRid("eid"), noKey));
        ReqMeta given = savedMeta(saveStep(b, proxyRid("eid"), prefillLeg("tx-eid", "remote_engine_id", "decode-7")));

        assertThat(none.remoteEngineId()).as("None on a WRITE producer's save").isNull();
        assertThat(absent.remoteEngineId()).isNull();
        assertThat(given.remoteEngineId()).isEqualTo("decode-7");
        // the worker keys its handshakes by the resolved address, whatever the param says
        assertThat(given.handshakeEngineId()).isEqualTo(DECODE.host() + ":" + DECODE.handshakePort());
    }

    @ParameterizedTest
    @MethodSource("presets")
    void remote_dp_size_local_zero_is_the_external_dp_sentinel_and_only_absence_defaults(Behaviour b) {
        ReqMeta zero = savedMeta(saveStep(b, proxyRid("dp"), prefillLeg("tx-dp", "remote_dp_size", 4,
                "remote_dp_size_local", 0)));
        ReqMeta absent = savedMeta(saveStep(b, proxyRid("dp"), prefillLeg("tx-dp", "remote_dp_size", 4)));
        ReqMeta neither = savedMeta(saveStep(b, proxyRid("dp"), prefillLeg("tx-dp")));
        ReqMeta string = savedMeta(saveStep(b, proxyRid("dp"), prefillLeg("tx-dp", "remote_dp_size_local", "2")));

        assertThat(zero.remoteDpSizeLocal()).isZero();
        assertThat(absent.remoteDpSizeLocal()).isEqualTo(4);
        assertThat(neither.remoteDpSizeLocal()).isEqualTo(1);
        assertThat(string.remoteDpSizeLocal()).as("int('2')").isEqualTo(2);
    }

    @ParameterizedTest
    @MethodSource("presets")
    void int_of_a_none_or_non_numeric_remote_dp_size_local_raises_in_add_new_req(Behaviour b) {
        List<Effect> none = saveStep(b, proxyRid("dp-bad"), prefillLeg("tx-dp", "remote_dp_size_local", null));
        List<Effect> text = saveStep(b, proxyRid("dp-bad"), prefillLeg("tx-dp", "remote_dp_size_local", "eight"));
        List<Effect> fallback = saveStep(b, proxyRid("dp-bad"), prefillLeg("tx-dp", "remote_dp_size", "many"));

        for (List<Effect> fx : List.of(none, text, fallback)) {
            assertThat(anomalies(fx)).contains(AnomalyKind.PARAM_NOT_AN_INT);
            assertThat(single(fx, Effect.MetadataBuilt.class).reqsToSave()).isEmpty();
        }
        assertThat(single(none, Effect.Anomaly.class).detail()).contains("TypeError");
        assertThat(single(text, Effect.Anomaly.class).detail()).contains("ValueError");
    }

    @ParameterizedTest
    @MethodSource("presets")
    void missing_remote_block_ids_raises_key_error_in_add_new_req(Behaviour b) {
        KvParams kv = params("do_remote_decode", true, "transfer_id", "tx-kb", "remote_engine_id", null);

        List<Effect> fx = saveStep(b, proxyRid("kb"), kv);

        Effect.Anomaly a = single(fx, Effect.Anomaly.class);
        assertThat(a.kind()).isEqualTo(AnomalyKind.META_PARAM_MISSING);
        assertThat(a.kind().severity()).isEqualTo(AnomalyKind.Severity.WOULD_RAISE);
        assertThat(a.detail()).contains("remote_block_ids").contains("KeyError");
        assertThat(single(fx, Effect.MetadataBuilt.class).reqsToSave()).isEmpty();
    }

    @ParameterizedTest
    @MethodSource("presets")
    void missing_transfer_id_raises_key_error_in_add_new_req(Behaviour b) {
        // A READ consumer aborted before its alloc stages a receive with the live params; nothing
        // wrote a transfer_id into them (only update_state_after_alloc does).
        Node d = new Node(consumer(TransferMode.READ).behaviour(b));
        String rid = proxyRid("no-tid");
        d.admit(rid, 32, params("do_remote_prefill", true, "remote_engine_id", "e", "remote_block_ids", ids(5, 6)));
        d.finish(rid, FinishStatus.FINISHED_ABORTED, one());

        List<Effect> fx = d.step();

        Effect.Anomaly a = single(fx, Effect.Anomaly.class);
        assertThat(a.kind()).isEqualTo(AnomalyKind.META_PARAM_MISSING);
        assertThat(a.detail()).contains("transfer_id");
        assertThat(single(fx, Effect.MetadataBuilt.class).reqsToRecv()).isEmpty();
    }

    @ParameterizedTest
    @MethodSource("presets")
    void scheduler_int_of_a_non_numeric_remote_dp_size_raises_before_the_notify(Behaviour b) {
        Node d = new Node(consumer(TransferMode.WRITE).behaviour(b));
        String rid = proxyRid("dp-str");
        d.admit(rid, 32, params("do_remote_prefill", true, "transfer_id", "tx-s", "remote_engine_id", null,
                "remote_block_ids", null, "remote_dp_size", "two"));
        d.match(rid, 0);

        List<Effect> fx = d.alloc(rid, one(1, 2), 32);

        assertThat(anomalies(fx)).containsExactly(AnomalyKind.PARAM_NOT_AN_INT);
        assertThat(only(fx, Effect.SendRemoteBlocks.class)).isEmpty();
        assertThat(d.state.liveParams(rid).get("do_remote_prefill")).as("the raise skips the clear").isEqualTo(true);
    }

    @ParameterizedTest
    @MethodSource("presets")
    void read_worker_keys_sessions_by_the_resolved_address_not_the_remote_engine_id_param(Behaviour b) {
        Node d = new Node(consumer(TransferMode.READ).behaviour(b));
        String rid = proxyRid("session");
        Object remote = b.on(Switch.READ_RECV_GROUPED_CLIPPED) ? grouped(a(10, 11)) : ids(10, 11);
        d.admit(rid, 64, params("do_remote_prefill", true, "remote_engine_id", "whatever-P-said",
                "remote_block_ids", remote, "transfer_id", "tx-se"));
        d.match(rid, 0);
        d.alloc(rid, one(1, 2), 63);
        ReqMeta m = single(d.step(), Effect.MetadataBuilt.class).reqsToRecv().get(0);

        List<Effect> fx = d.apply(new NodeEvent.LoadStarted(d.now));

        assertThat(m.remoteEngineId()).isEqualTo("whatever-P-said");
        assertThat(m.multiPodHosts()).containsExactly(PREFILL.host());
        assertThat(only(fx, Effect.StartHandshake.class)).extracting(Effect.StartHandshake::key)
                .containsExactly(PREFILL.host() + ":" + PREFILL.handshakePort() + "_dp0");
    }

    // ------------------------------------------------------------------ build_connector_meta unwinding

    @ParameterizedTest
    @MethodSource("presets")
    void build_connector_meta_that_raises_leaves_the_staging_tables_as_python_unwinds_them(Behaviour b) {
        Node p = new Node(producer(TransferMode.WRITE).behaviour(b));
        String chunked = proxyRid("chunked");
        String good = proxyRid("good");
        String bad = proxyRid("bad");
        String done = proxyRid("done");
        p.admit(chunked, 64, prefillLeg("tx-c")); // 4 blocks of 16 needed, 2 allocated: moves to pending
        p.admit(good, 32, prefillLeg("tx-g"));
        p.admit(bad, 32, params("do_remote_decode", true, "transfer_id", "tx-b", "remote_engine_id", null));
        p.admit(done, 32, prefillLeg("tx-d"));
        p.alloc(done, one(7, 8), 0);
        p.meta(); // ships done's save
        p.finish(done, FinishStatus.FINISHED_LENGTH_CAPPED, one(7, 8)); // stages reqs_to_send
        p.alloc(chunked, one(1, 2), 0);
        p.alloc(good, one(3, 4), 0);
        p.alloc(bad, one(5, 6), 0);

        List<Effect> first = p.step();

        assertThat(anomalies(first)).containsExactly(AnomalyKind.META_PARAM_MISSING);
        Effect.MetadataBuilt m1 = single(first, Effect.MetadataBuilt.class);
        assertThat(m1.reqsToSave()).as("the built entries are discarded with the raise").isEmpty();
        assertThat(m1.reqsToSend()).isEmpty();
        // what ran before the raise stays done; nothing after it ran
        assertThat(p.state.pendingSaves()).containsOnlyKeys(chunked);
        assertThat(p.state.stagedSaves()).as("_reqs_need_save is not cleared").containsOnlyKeys(chunked, good, bad);
        assertThat(p.state.paramSnapshots()).as("no snapshot is reclaimed").containsOnlyKeys(chunked, good, bad);

        // The next step meets the same staged entries: the same raise, and the good save and the
        // finished request's reqs_to_send never reach the worker.
        List<Effect> second = p.step();

        assertThat(anomalies(second)).containsExactly(AnomalyKind.META_PARAM_MISSING);
        Effect.MetadataBuilt m2 = single(second, Effect.MetadataBuilt.class);
        assertThat(m2.reqsToSave()).isEmpty();
        assertThat(m2.reqsToSend()).isEmpty();
        assertThat(p.state.stagedSaves()).containsOnlyKeys(chunked, good, bad);
        assertThat(p.state.pendingSaves()).containsOnlyKeys(chunked);
    }

    @ParameterizedTest
    @MethodSource("presets")
    void a_final_chunk_that_raises_keeps_its_pending_entry_but_loses_its_snapshot(Behaviour b) {
        Node p = new Node(producer(TransferMode.WRITE).behaviour(b));
        String rid = proxyRid("final");
        p.admit(rid, 64, params("do_remote_decode", true, "transfer_id", "tx-f", "remote_engine_id", null));
        p.alloc(rid, one(1, 2), 0);
        p.meta(); // not covered: pending, snapshot kept
        assertThat(p.state.paramSnapshots()).containsOnlyKeys(rid);

        List<Effect> fx = p.step(cached(rid, one(3, 4)));

        assertThat(anomalies(fx)).containsExactly(AnomalyKind.META_PARAM_MISSING);
        // the pending list was extended and the snapshot popped before add_new_req raised
        assertThat(p.state.pendingSaves()).containsEntry(rid, one(1, 2, 3, 4));
        assertThat(p.state.paramSnapshots()).isEmpty();
    }
}

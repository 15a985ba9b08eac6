package io.kvledger.core.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class KvTransferParamsTest {

    @Test
    void each_key_reads_as_params_get_and_bool_would() {
        KvParams raw = KvParams.of("transfer_id", "tx-1", "do_remote_prefill", 1L, "do_remote_decode", "",
                "remote_block_ids", List.of(1L, 2L), "remote_engine_id", "e0", "remote_host", "10.0.0.1",
                "remote_hosts", List.of("a", "b"), "remote_handshake_port", 6301L, "remote_notify_port", "61005",
                "remote_dp_rank", 2L, "remote_dp_rank_override", 0.5, "remote_dp_size", 4L, "remote_dp_size_local", 2L,
                "is_request_leader", false, "remote_tp_size", 8L, "tp_size", 2L, "_p_side_truncated", List.of(),
                "something_else", 7L);
        KvTransferParams p = KvTransferParams.of(raw.copy());
        assertThat(p.hasTransferId()).isTrue();
        assertThat(p.transferId()).isEqualTo(TransferId.of("tx-1"));
        assertThat(p.doRemotePrefill()).as("bool(1)").isTrue();
        assertThat(p.doRemoteDecode()).as("bool('')").isFalse();
        assertThat(p.remoteDpRankOverride()).as("bool(0.5)").isTrue();
        assertThat(p.pSideTruncated()).as("bool([])").isFalse();
        assertThat(p.remoteBlockIds()).isEqualTo(List.of(1L, 2L));
        assertThat(p.remoteEngineId()).isEqualTo("e0");
        assertThat(p.remoteHost()).isEqualTo("10.0.0.1");
        assertThat(p.remoteHosts()).isEqualTo(List.of("a", "b"));
        assertThat(p.remoteHandshakePort()).isEqualTo(6301L);
        assertThat(p.remoteNotifyPort()).as("a string stays a string: int() is the reader's").isEqualTo("61005");
        assertThat(p.remoteDpRank()).isEqualTo(2L);
        assertThat(p.remoteDpRankOrZero()).isEqualTo(2L);
        assertThat(p.remoteDpSize()).isEqualTo(4L);
        assertThat(p.remoteDpSizeLocal()).isEqualTo(2L);
        assertThat(p.hasIsRequestLeader()).isTrue();
        assertThat(p.isRequestLeader()).isEqualTo(false);
        assertThat(p.remoteTpSize()).isEqualTo(8L);
        assertThat(p.tpSize()).isEqualTo(2L);
        // every key the raw map holds is a field read the same way as raw.get()
        for (String key : Arrays.asList("remote_block_ids", "remote_engine_id", "remote_host", "remote_hosts",
                "remote_handshake_port", "remote_notify_port", "remote_dp_rank", "remote_dp_size", "remote_dp_size_local",
                "is_request_leader", "remote_tp_size", "tp_size")) {
            assertThat(raw.has(key)).as(key).isTrue();
        }
        assertThat(p.raw()).isEqualTo(raw);
    }

    @Test
    void a_missing_key_and_none_are_told_apart_where_the_connector_tells_them_apart() {
        KvTransferParams none = KvTransferParams.of(KvParams.of("transfer_id", null, "remote_dp_rank", null,
                "remote_dp_size", null, "remote_dp_size_local", null, "remote_block_ids", null, "remote_engine_id", null,
                "is_request_leader", null, "tp_size", null));
        KvTransferParams missing = KvTransferParams.of(KvParams.of("other", 1L));
        assertThat(none.hasTransferId()).isTrue();
        assertThat(missing.hasTransferId()).isFalse();
        assertThat(none.transferId()).isSameAs(TransferId.NONE);
        assertThat(missing.transferId()).isSameAs(TransferId.NONE);
        assertThat(none.remoteDpRankOrZero()).as("params.get('remote_dp_rank', 0) with None").isNull();
        assertThat(missing.remoteDpRankOrZero()).isEqualTo(0L);
        assertThat(List.of(none.hasRemoteDpRank(), none.hasRemoteDpSize(), none.hasRemoteDpSizeLocal(),
                none.hasRemoteBlockIds(), none.hasRemoteEngineId(), none.hasIsRequestLeader(), none.hasTpSize()))
                .containsOnly(true);
        assertThat(List.of(missing.hasRemoteDpRank(), missing.hasRemoteDpSize(), missing.hasRemoteDpSizeLocal(),
                missing.hasRemoteBlockIds(), missing.hasRemoteEngineId(), missing.hasIsRequestLeader(), missing.hasTpSize()))
                .containsOnly(false);
    }

    @Test
    void truthiness_none_and_text_of_each_int_key_read_as_python_gives_them() {
        KvTransferParams p = KvTransferParams.of(KvParams.of("remote_dp_size", "four", "remote_dp_size_local", 0L,
                "is_request_leader", 0L, "remote_notify_port", "", "remote_dp_rank", 1.5, "remote_tp_size", List.of(),
                "tp_size", true, "remote_hosts", "h0", "remote_block_ids", List.of(List.of(1L), 2L)));
        assertThat(p.remoteDpSizeTrue()).as("bool('four')").isTrue();
        assertThat(p.remoteDpSizeText()).isEqualTo("four");
        assertThat(p.remoteDpSizeIntError()).as("int('four')").isEqualTo("ValueError");
        assertThat(p.remoteDpSizeLocalTrue()).as("bool(0)").isFalse();
        assertThat(p.remoteDpSizeLocalText()).isEqualTo("0");
        assertThat(p.isRequestLeaderNone()).as("0 is not None").isFalse();
        assertThat(p.isRequestLeaderTrue()).isFalse();
        assertThat(p.isRequestLeaderText()).isEqualTo("0");
        assertThat(p.remoteNotifyPortNone()).as("'' is not None").isFalse();
        assertThat(p.remoteNotifyPortTrue()).isFalse();
        assertThat(p.remoteDpRankTrue()).as("bool(1.5)").isTrue();
        assertThat(p.remoteDpRankOrZeroText()).isEqualTo("1.5");
        assertThat(p.remoteDpRankOrZeroIntOrBool()).as("a float is no int").isNull();
        assertThat(p.remoteTpSizeTrue()).as("bool([])").isFalse();
        assertThat(p.remoteTpSizeText()).isEqualTo("[]");
        assertThat(p.tpSizeTrue()).isTrue();
        assertThat(p.tpSizeText()).isEqualTo("True");
        assertThat(p.remoteHostsTrue()).isTrue();
        assertThat(p.remoteHostsText()).isEqualTo("h0");
        assertThat(p.remoteHostList()).as("a str is not a list of hosts").isNull();
        assertThat(p.remoteBlockIdsText()).isEqualTo("[[1], 2]");

        KvTransferParams none = KvTransferParams.of(KvParams.of("is_request_leader", null, "remote_dp_size_local", List.of(1L)));
        KvTransferParams missing = KvTransferParams.of(KvParams.of("remote_dp_rank", true));
        assertThat(none.isRequestLeaderNone()).isTrue();
        assertThat(missing.isRequestLeaderNone()).isTrue();
        assertThat(none.isRequestLeaderText()).isEqualTo("None");
        assertThat(none.remoteNotifyPortNone()).isTrue();
        assertThat(none.remoteDpSizeLocalIntError()).as("int([1])").isEqualTo("TypeError");
        assertThat(none.remoteDpRankOrZeroIntOrBool()).as("params.get('remote_dp_rank', 0) absent").isEqualTo(0L);
        assertThat(none.remoteDpRankOrZeroText()).isEqualTo("0");
        assertThat(missing.remoteDpRankOrZeroIntOrBool()).as("True is 1").isEqualTo(1L);
        assertThat(List.of(missing.remoteDpSizeTrue(), missing.remoteDpSizeLocalTrue(), missing.isRequestLeaderTrue(),
                missing.remoteNotifyPortTrue(), missing.remoteTpSizeTrue(), missing.tpSizeTrue(), missing.remoteHostsTrue()))
                .as("an absent key is None: false").containsOnly(false);
        assertThat(missing.remoteDpSizeText()).isEqualTo("None");
    }

    @Test
    void a_transfer_id_of_another_type_is_kept_as_it_came() {
        KvTransferParams p = KvTransferParams.of(KvParams.of("transfer_id", 42L));
        assertThat(p.transferIdValue()).isEqualTo(42L);
        assertThat(p.transferId()).isEqualTo(new TransferId.Int(42));
        assertThat(p.transferId().asString()).isNull();
    }

    @Test
    void the_connector_writes_reach_the_raw_map_and_the_fields_together() {
        KvParams event = KvParams.of("do_remote_prefill", true, "do_remote_decode", true);
        KvTransferParams p = KvTransferParams.of(event.copy());
        p.setDefaultTransferId("synth");
        p.clearRemotePrefill();
        p.markPSideTruncated();
        assertThat(p.transferId()).isEqualTo(TransferId.of("synth"));
        assertThat(p.doRemotePrefill()).isFalse();
        assertThat(p.pSideTruncated()).isTrue();
        assertThat(p.raw().asMap()).containsExactly(java.util.Map.entry("do_remote_prefill", false),
                java.util.Map.entry("do_remote_decode", true), java.util.Map.entry("transfer_id", "synth"),
                java.util.Map.entry("_p_side_truncated", true));
        assertThat(event.asMap()).as("the event's params stay as recorded").containsOnlyKeys("do_remote_prefill", "do_remote_decode");

        // setdefault keeps a present value, even None or an empty string
        KvTransferParams empty = KvTransferParams.of(KvParams.of("transfer_id", ""));
        empty.setDefaultTransferId("synth");
        assertThat(empty.transferIdValue()).isEqualTo("");
        assertThat(empty.raw().get("transfer_id")).isEqualTo("");
    }

    @Test
    void a_shared_snapshot_keeps_what_it_held_when_the_live_params_change() {
        KvTransferParams live = KvTransferParams.of(KvParams.of("transfer_id", "t", "do_remote_prefill", true));
        KvParams snapshot = live.share();
        assertThat(snapshot).isSameAs(live.raw());
        live.clearRemotePrefill();
        assertThat(live.raw()).isNotSameAs(snapshot);
        assertThat(snapshot.get("do_remote_prefill")).isEqualTo(true);
        assertThat(live.raw().get("do_remote_prefill")).isEqualTo(false);
    }

    @Test
    void a_reused_instance_forgets_the_previous_params_and_reuses_an_identical_transfer_id() {
        String raw = "tx-9";
        TransferId tid = TransferId.of(raw);
        KvTransferParams scratch = new KvTransferParams();
        scratch.parseInto(KvParams.of("transfer_id", "other", "remote_dp_rank", 3L, "do_remote_decode", true), null);
        assertThat(scratch.hasRemoteDpRank()).isTrue();
        scratch.parseInto(KvParams.of("transfer_id", raw), tid);
        assertThat(scratch.transferId()).isSameAs(tid);
        assertThat(scratch.hasRemoteDpRank()).isFalse();
        assertThat(scratch.remoteDpRank()).isNull();
        assertThat(scratch.doRemoteDecode()).isFalse();
        // a reused instance never writes into the map it read
        KvParams read = KvParams.of("do_remote_prefill", true);
        scratch.parseInto(read, null).clearRemotePrefill();
        assertThat(read.get("do_remote_prefill")).isEqualTo(true);
    }

    @Test
    void keys_beyond_the_127th_position_are_read_as_well() {
        KvParams raw = KvParams.empty();
        for (int i = 0; i < 200; i++) {
            raw.put("filler_" + i, (long) i);
        }
        raw.put("remote_dp_rank", 5L);
        raw.put("remote_block_ids", null);
        KvTransferParams p = KvTransferParams.of(raw);
        assertThat(p.remoteDpRank()).isEqualTo(5L);
        assertThat(p.hasRemoteBlockIds()).isTrue();
        assertThat(p.remoteBlockIds()).isNull();
        assertThat(p.hasTransferId()).isFalse();
        p.setDefaultTransferId("late");
        assertThat(p.transferIdValue()).isEqualTo("late");
        assertThat(p.hasTransferId()).isTrue();
        assertThat(raw.has("transfer_id")).as("the caller's map is copied before the write").isFalse();
        assertThat(p.raw().get("transfer_id")).isEqualTo("late");
    }

    @Test
    void converted_keys_read_as_int_and_str_would_and_a_wrong_type_is_null_never_a_throw() {
        KvParams raw = KvParams.of("remote_handshake_port", 6301L, "remote_notify_port", " 61005 ",
                "remote_dp_rank", true, "remote_dp_size", 3.9, "remote_dp_size_local", "two",
                "remote_tp_size", List.of(1L), "tp_size", null, "remote_hosts", List.of("a", 7L, false));
        KvTransferParams p = KvTransferParams.of(raw);
        assertThat(p.remoteHandshakePortInt()).isEqualTo(6301L);
        assertThat(p.remoteNotifyPortInt()).as("int(' 61005 ')").isEqualTo(61005L);
        assertThat(p.remoteDpRankInt()).as("int(True)").isEqualTo(1L);
        assertThat(p.remoteDpRankIsNumber()).isTrue();
        assertThat(p.remoteDpRankOrZeroInt()).isEqualTo(1L);
        assertThat(p.remoteDpSizeInt()).as("int(3.9)").isEqualTo(3L);
        assertThat(p.remoteDpSizeLocalInt()).as("int('two') raises").isNull();
        assertThat(KvTransferParams.intError(p.remoteDpSizeLocal())).isEqualTo("ValueError");
        assertThat(p.remoteTpSizeInt()).as("int([1]) raises").isNull();
        assertThat(KvTransferParams.intError(p.remoteTpSize())).isEqualTo("TypeError");
        assertThat(p.tpSizeInt()).as("None").isNull();
        assertThat(p.remoteHostList()).as("str() of each pod host").containsExactly("a", "7", "False");

        KvTransferParams bare = KvTransferParams.of(KvParams.of("remote_dp_rank", "1", "remote_hosts", "h"));
        assertThat(bare.remoteDpRankIsNumber()).as("a str rank raises TypeError in the port arithmetic").isFalse();
        assertThat(bare.remoteDpRankOrZeroInt()).isNull();
        assertThat(bare.remoteDpRankInt()).as("int('1')").isEqualTo(1L);
        assertThat(bare.remoteHostList()).as("not a list").isNull();
        KvTransferParams empty = KvTransferParams.of(KvParams.empty());
        assertThat(empty.remoteDpRankIsNumber()).as("get('remote_dp_rank', 0)").isTrue();
        assertThat(empty.remoteDpRankOrZeroInt()).isZero();
        assertThat(empty.remoteNotifyPortInt()).isNull();
        assertThat(empty.remoteHostList()).isNull();
    }

    @Test
    void remote_host_and_engine_id_read_as_str_with_none_and_truthiness_as_python_tells_them() {
        // (value, str(value) unless None, str(value) only when bool(value))
        Object[][] cases = {
                {"10.0.0.1", "10.0.0.1", "10.0.0.1"},
                {"", "", null},
                {0L, "0", null},
                {false, "False", null},
                {true, "True", "True"},
                {7L, "7", "7"},
                {List.of(), "[]", null},
                {List.of("h"), "['h']", "['h']"},
                {1.5, "1.5", "1.5"},
        };
        for (Object[] c : cases) {
            KvTransferParams p = KvTransferParams.of(KvParams.of("remote_host", c[0], "remote_engine_id", c[0]));
            assertThat(p.remoteHostStr()).as("str(%s)", c[0]).isEqualTo(c[1]);
            assertThat(p.remoteHostIfTrue()).as("%s if bool", c[0]).isEqualTo(c[2]);
            assertThat(p.remoteEngineIdStr()).as("str(%s)", c[0]).isEqualTo(c[1]);
            assertThat(p.hasRemoteEngineId()).isTrue();
        }
        KvTransferParams none = KvTransferParams.of(KvParams.of("remote_host", null, "remote_engine_id", null));
        KvTransferParams absent = KvTransferParams.of(KvParams.of("transfer_id", "t"));
        for (KvTransferParams p : List.of(none, absent)) {
            assertThat(p.remoteHostStr()).isNull();
            assertThat(p.remoteHostIfTrue()).isNull();
            assertThat(p.remoteEngineIdStr()).isNull();
        }
        assertThat(none.hasRemoteEngineId()).as("None is present: params['remote_engine_id'] does not raise").isTrue();
        assertThat(absent.hasRemoteEngineId()).isFalse();
    }

    @Test
    void remote_block_ids_convert_once_to_groups_and_a_malformed_value_is_null_never_a_throw() {
        KvTransferParams flat = KvTransferParams.of(KvParams.of("remote_block_ids", List.of(3L, 4L)));
        BlockGroups g = flat.remoteBlockGroups();
        assertThat(g.size()).isEqualTo(1);
        assertThat(g.first()).containsExactly(3, 4);
        assertThat(flat.remoteBlockGroups()).as("converted once per params").isSameAs(g);
        assertThat(flat.remoteBlockIdsFlat()).isTrue();
        assertThat(flat.remoteBlockIdsTrue()).isTrue();

        KvTransferParams grouped = KvTransferParams.of(KvParams.of("remote_block_ids", List.of(List.of(1L), List.of(2L, 5L))));
        assertThat(grouped.remoteBlockGroups().size()).isEqualTo(2);
        assertThat(grouped.remoteBlockGroups().group(1)).containsExactly(2, 5);
        assertThat(grouped.remoteBlockIdsFlat()).isFalse();

        KvTransferParams empty = KvTransferParams.of(KvParams.of("remote_block_ids", List.of()));
        assertThat(empty.remoteBlockIdsTrue()).as("bool([])").isFalse();
        assertThat(empty.remoteBlockIdsFlat()).isTrue();
        assertThat(empty.remoteBlockGroups().size()).as("one empty group").isEqualTo(1);
        assertThat(empty.remoteBlockGroups().first()).isEmpty();

        // not a list, a float id, ints mixed with lists, a str inside a group, None, absent
        for (Object bad : Arrays.asList(7L, "1,2", List.of(1.5), List.of(1L, List.of(2L)), List.of(List.of("x")), null)) {
            KvTransferParams p = KvTransferParams.of(KvParams.of("remote_block_ids", bad));
            assertThat(p.hasRemoteBlockIds()).isTrue();
            assertThat(p.remoteBlockGroups()).as("%s", bad).isNull();
            assertThat(p.remoteBlockIds()).as("the raw value stays, for the anomaly's text").isEqualTo(bad);
        }
        KvTransferParams absent = KvTransferParams.of(KvParams.of("transfer_id", "t"));
        assertThat(absent.hasRemoteBlockIds()).isFalse();
        assertThat(absent.remoteBlockGroups()).isNull();
        assertThat(absent.remoteBlockIdsTrue()).isFalse();
    }

    @Test
    void a_reused_instance_takes_the_groups_another_params_converted_for_the_very_same_value_only() {
        List<Long> ids = List.of(8L, 9L);
        KvTransferParams live = KvTransferParams.of(KvParams.of("transfer_id", "t", "remote_block_ids", ids));
        BlockGroups g = live.remoteBlockGroups();
        KvTransferParams scratch = new KvTransferParams();
        scratch.parseIntoLike(KvParams.of("transfer_id", live.transferIdValue(), "remote_block_ids", ids, "x", 1L), live);
        assertThat(scratch.remoteBlockGroups()).isSameAs(g);
        assertThat(scratch.transferId()).isSameAs(live.transferId());
        scratch.parseIntoLike(KvParams.of("remote_block_ids", List.of(8L, 9L)), live);
        assertThat(scratch.remoteBlockGroups()).as("an equal but other list is converted anew").isNotSameAs(g);
        assertThat(scratch.remoteBlockGroups().first()).containsExactly(8, 9);
        scratch.parseIntoLike(KvParams.of("remote_block_ids", List.of("x")), null);
        assertThat(scratch.remoteBlockGroups()).as("the previous groups are forgotten").isNull();
    }
}

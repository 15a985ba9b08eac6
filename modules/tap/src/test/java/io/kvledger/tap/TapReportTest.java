package io.kvledger.tap;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.event.NodeEvent;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The cross-node view over journal contents (no sockets): what is expected and what is reported missing. */
class TapReportTest {

    private static final String P = "10.0.0.1";
    private static final String D = "10.0.0.2";

    private static NodeEvent rb(long at, String tid, int decodeRank, Integer... blocks) {
        return new NodeEvent.RemoteBlocksReceived(at, "req-" + tid, tid, List.of(blocks), decodeRank, false);
    }

    @Test
    void a_complete_write_transfer_is_not_listed_and_a_missing_remote_blocks_names_the_rank() {
        TapReport r = TapReport.of(List.of(
                new TapReport.TapJournal(Role.CONSUMER, D, 62005, List.of(new NodeEvent.WriteDoneReceived(50, "tx-ok"),
                        new NodeEvent.WriteDoneReceived(51, "tx-ok"), new NodeEvent.WriteDoneReceived(60, "tx-half"))),
                new TapReport.TapJournal(Role.PRODUCER, P, 61005, List.of(rb(10, "tx-ok", 1, 3), rb(20, "tx-half", 1, 4))),
                new TapReport.TapJournal(Role.PRODUCER, P, 61006, List.of(rb(11, "tx-ok", 1, 3)))));
        assertThat(r.ranks()).extracting(TapReport.Rank::label)
                .containsExactly("P+0 10.0.0.1:61005", "P+1 10.0.0.1:61006", "D+0 10.0.0.2:62005");
        assertThat(r.transfers()).extracting(TapReport.Transfer::transferId).containsExactly("tx-half", "tx-ok");
        assertThat(r.transfers().get(1).complete()).isTrue();
        assertThat(r.transfers().get(0).missing()).containsExactly(
                "remote_blocks never crossed to P+1 10.0.0.1:61006 (decode_rank 1's other transfers reach it)");
        List<String> lines = r.render(false);
        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).isEqualTo("tap-report: 3 rank(s) tapped (P+0 10.0.0.1:61005, P+1 10.0.0.1:61006, "
                + "D+0 10.0.0.2:62005); 6 frame(s) over 0.000000 s; 2 transfer(s), 1 with a frame that never crossed; "
                + "0 rejected frame(s); 0 not forwarded");
        assertThat(lines.get(1)).startsWith("tx-half WRITE: crossed remote_blocks -> P+0 10.0.0.1:61005 at t+0.000000 s (decode_rank 1); "
                + "write_done -> D+0 10.0.0.2:62005 at t+0.000000 s; MISSING: remote_blocks never crossed to P+1");
        assertThat(r.render(true)).hasSize(3).last().asString().endsWith("; complete");
        assertThat(r.hasFindings()).isTrue();
    }

    @Test
    void read_mode_expects_one_release_per_consumer_tp_rank_and_a_raw_id_counts_as_one() {
        TapReport r = TapReport.of(List.of(new TapReport.TapJournal(Role.PRODUCER, P, 61005, List.of(
                new NodeEvent.ReleaseReceived(1_000_000_000L, "tx-r", 2),
                new NodeEvent.ReleaseReceived(2_000_000_000L, "tx-full", 2),
                new NodeEvent.ReleaseReceived(2_100_000_000L, "tx-full", 2),
                new NodeEvent.RawCompletionReceived(3_000_000_000L, "tx-raw")))));
        assertThat(r.transfers()).extracting(TapReport.Transfer::transferId, TapReport.Transfer::mode, TapReport.Transfer::complete)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("tx-full", "READ", true),
                        org.assertj.core.groups.Tuple.tuple("tx-r", "READ", false),
                        org.assertj.core.groups.Tuple.tuple("tx-raw", "READ", true));
        assertThat(r.transfers().get(1).missing()).containsExactly(
                "1 release never crossed: 1 of consumer_tp_size 2 (to P+0 10.0.0.1:61005 so far)");
        assertThat(r.render(false).get(1)).endsWith("last frame 2.000000 s before the end of the journals");
    }

    @Test
    void an_empty_block_list_an_abort_release_and_a_frame_not_forwarded_are_findings() {
        TapReport r = TapReport.of(List.of(
                new TapReport.TapJournal(Role.PRODUCER, P, 61005, List.of(rb(1, "tx-empty", 0),
                        rb(2, "tx-abort", 0, 7), new NodeEvent.ReleaseReceived(3, "tx-abort", 1),
                        new NodeEvent.NotifySendFailed(3, "tcp://10.0.0.1:61005", "release", "tx-abort",
                                "the tap could not forward the frame: ZMQ refused frame 1 of 1 (errno 35)", new byte[] {1}))),
                new TapReport.TapJournal(Role.CONSUMER, D, 62005, List.of(new NodeEvent.WriteDoneReceived(4, "tx-empty")))));
        assertThat(r.transfers()).extracting(TapReport.Transfer::transferId).containsExactly("tx-abort", "tx-empty");
        assertThat(r.transfers().get(0).complete()).as("an abort-before-alloc release: no write_done expected").isTrue();
        assertThat(r.transfers().get(1).missing()).singleElement().asString()
                .startsWith("remote_blocks to P+0 10.0.0.1:61005 had an empty block_notify_list");
        assertThat(r.forwardFailed()).hasSize(1);
        assertThat(r.render(false)).last().isEqualTo("not forwarded -> P+0 10.0.0.1:61005 at t+0.000000 s: release tx-abort: "
                + "the tap could not forward the frame: ZMQ refused frame 1 of 1 (errno 35)");
    }
}

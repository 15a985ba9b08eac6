package io.kvledger.core.moriio;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PortMathTest {

    private static List<Integer> remoteRanks(int localSize, int remoteSize) {
        List<Integer> out = new ArrayList<>();
        for (int rank = 0; rank < localSize; rank++) {
            Checked<Integer> r = PortMath.remoteTpRank(rank, localSize, remoteSize);
            assertThat(r.isOk()).as("rank %d: %s", rank, r.error()).isTrue();
            out.add(r.value());
        }
        return out;
    }

    // --- get_port_offset -------------------------------------------------------------------

    @Test
    void port_offset_two_arg_form_is_dp_plus_tp() {
        assertThat(PortMath.portOffset(0, 0)).isZero();
        assertThat(PortMath.portOffset(3, 5)).isEqualTo(8);
        assertThat(PortMath.portOffset(3, 5)).isEqualTo(PortMath.portOffset(3, 5, 1));
    }

    @Test
    void port_offset_three_arg_form_is_dp_times_tp_size_plus_tp() {
        assertThat(PortMath.portOffset(0, 3, 4)).isEqualTo(3);
        assertThat(PortMath.portOffset(1, 0, 4)).isEqualTo(4);
        assertThat(PortMath.portOffset(2, 3, 4)).isEqualTo(11);
    }

    @Test
    void aborted_read_without_local_blocks_releases_to_port_7002() {
        // test_aborted_read_without_local_blocks_only_releases_remote_blocks: chosen_tp=2, P TP 8.
        assertThat(7000 + PortMath.portOffset(0, 2, 8)).isEqualTo(7002);
    }

    @Test
    void two_arg_listener_form_collides_for_dp1_tp0_and_dp0_tp1() {
        int base = 61005;
        assertThat(base + PortMath.portOffset(1, 0)).isEqualTo(base + 1);
        assertThat(base + PortMath.portOffset(0, 1)).isEqualTo(base + 1);
        // The three-argument dialer form separates them, so dialers miss the listeners.
        assertThat(PortMath.portOffset(1, 0, 2)).isEqualTo(2);
        assertThat(PortMath.portOffset(0, 1, 2)).isEqualTo(1);
    }

    @ParameterizedTest(name = "dp{0} x tp{1}")
    @CsvSource({"2,2", "2,4", "4,2"})
    void three_arg_port_offsets_are_injective(int dpSize, int tpSize) {
        TreeSet<Integer> offsets = new TreeSet<>();
        for (int dp = 0; dp < dpSize; dp++) {
            for (int tp = 0; tp < tpSize; tp++) {
                offsets.add(PortMath.portOffset(dp, tp, tpSize));
            }
        }
        assertThat(offsets).hasSize(dpSize * tpSize);
        assertThat(offsets.first()).isZero();
        assertThat(offsets.last()).isEqualTo(dpSize * tpSize - 1);
    }

    @Test
    void port_offset_overflow_saturates_instead_of_throwing_or_wrapping() {
        assertThat(PortMath.portOffset(Integer.MAX_VALUE, 1)).isEqualTo(Integer.MAX_VALUE);
        assertThat(PortMath.portOffset(1 << 20, 0, 1 << 12)).isEqualTo(Integer.MAX_VALUE);
        assertThat(PortMath.podIndex(Integer.MIN_VALUE, -1)).isEqualTo(Integer.MAX_VALUE);
    }

    @ParameterizedTest(name = "dp={0} tp={1} -> {2}")
    @CsvSource({"1,1,false", "1,8,false", "8,1,false", "0,8,false", "2,2,true", "16,8,true"})
    void port_forms_disagree_only_when_dp_and_tp_both_exceed_one(int dp, int tp, boolean expected) {
        assertThat(PortMath.portFormsDisagree(dp, tp)).isEqualTo(expected);
    }

    @Test
    void port_forms_really_agree_when_dp_or_tp_is_one() {
        for (int dp = 0; dp < 4; dp++) {
            assertThat(PortMath.portOffset(dp, 0)).isEqualTo(PortMath.portOffset(dp, 0, 1));
        }
        for (int tp = 0; tp < 4; tp++) {
            assertThat(PortMath.portOffset(0, tp)).isEqualTo(PortMath.portOffset(0, tp, 4));
        }
    }

    // --- fold_local_rank / pod_index -------------------------------------------------------

    @Test
    void fold_local_rank_is_python_modulo_and_zero_local_size_is_identity() {
        assertThat(PortMath.foldLocalRank(11, 8)).isEqualTo(3);
        assertThat(PortMath.foldLocalRank(7, 8)).isEqualTo(7);
        assertThat(PortMath.foldLocalRank(11, 0)).isEqualTo(11);
        // Python: -1 % 8 == 7 and 5 % -3 == -1.
        assertThat(PortMath.foldLocalRank(-1, 8)).isEqualTo(7);
        assertThat(PortMath.foldLocalRank(5, -3)).isEqualTo(-1);
    }

    @Test
    void pod_index_is_python_floor_division_and_zero_local_size_is_pod_zero() {
        assertThat(PortMath.podIndex(11, 8)).isEqualTo(1);
        assertThat(PortMath.podIndex(7, 8)).isZero();
        assertThat(PortMath.podIndex(16, 8)).isEqualTo(2);
        assertThat(PortMath.podIndex(11, 0)).isZero();
        // Python: -1 // 8 == -1.
        assertThat(PortMath.podIndex(-1, 8)).isEqualTo(-1);
    }

    @Test
    void fold_and_pod_index_recompose_the_global_rank() {
        for (int g = 0; g < 32; g++) {
            assertThat(PortMath.podIndex(g, 8) * 8 + PortMath.foldLocalRank(g, 8)).isEqualTo(g);
        }
    }

    // --- get_moriio_remote_tp_rank ---------------------------------------------------------

    @Test
    void remote_tp_rank_same_tp_maps_to_self() {
        assertThat(remoteRanks(4, 4)).containsExactly(0, 1, 2, 3);
    }

    @Test
    void remote_tp_rank_p4_d8_floor_maps_decode_to_prefill() {
        assertThat(remoteRanks(8, 4)).containsExactly(0, 0, 1, 1, 2, 2, 3, 3);
    }

    @Test
    void remote_tp_rank_p8_d4_maps_to_first_prefill_rank_per_pair() {
        assertThat(remoteRanks(4, 8)).containsExactly(0, 2, 4, 6);
    }

    @ParameterizedTest(name = "local {0}, remote {1}")
    @CsvSource({"6,4", "4,6"})
    void remote_tp_rank_invalid_non_multiple_tp_raises(int localSize, int remoteSize) {
        Checked<Integer> r = PortMath.remoteTpRank(0, localSize, remoteSize);
        assertThat(r.isOk()).isFalse();
        assertThat(r.error()).contains("multiple");
    }

    @Test
    void remote_tp_rank_non_multiple_messages_match_python() {
        assertThat(PortMath.remoteTpRank(0, 4, 6).error())
                .isEqualTo("remote tp_size 6 must be a multiple of local tp_size 4 for heterogeneous-TP P/D");
        assertThat(PortMath.remoteTpRank(0, 6, 4).error())
                .isEqualTo("local tp_size 6 must be a multiple of remote tp_size 4 for heterogeneous-TP P/D");
    }

    @Test
    void remote_tp_rank_rejects_non_positive_sizes() {
        assertThat(PortMath.remoteTpRank(0, 0, 4).error()).isEqualTo("TP sizes must be positive");
        assertThat(PortMath.remoteTpRank(0, 4, 0).error()).isEqualTo("TP sizes must be positive");
        assertThat(PortMath.remoteTpRank(0, -2, 4).isOk()).isFalse();
    }

    @Test
    void remote_tp_rank_rejects_out_of_range_local_rank() {
        assertThat(PortMath.remoteTpRank(4, 4, 4).error()).isEqualTo("local_tp_rank 4 must be in [0, 4)");
        assertThat(PortMath.remoteTpRank(-1, 4, 8).error()).isEqualTo("local_tp_rank -1 must be in [0, 4)");
    }

    @Test
    void effective_remote_tp_rank_treats_unknown_remote_size_as_homogeneous() {
        for (int rank = 0; rank < 4; rank++) {
            assertThat(PortMath.effectiveRemoteTpRank(rank, 4, 0).value()).isEqualTo(rank);
        }
        assertThat(PortMath.effectiveRemoteTpRank(5, 8, 4).value()).isEqualTo(2);
        assertThat(PortMath.effectiveRemoteTpRank(4, 4, 0).isOk()).isFalse();
        assertThat(PortMath.effectiveRemoteTpRank(0, 4, 6).error()).contains("multiple");
        assertThat(PortMath.effectiveRemoteTpRank(0, 4, -1).error()).isEqualTo("TP sizes must be positive");
    }

    // --- get_moriio_expected_ack_count -----------------------------------------------------

    @ParameterizedTest(name = "P{0} D{1}")
    @CsvSource({"4,4", "8,4"})
    void expected_ack_count_for_homogeneous_or_smaller_consumer_tp_is_one(int producerTp, int consumerTp) {
        assertThat(PortMath.expectedAckCount(producerTp, consumerTp).value()).isEqualTo(1);
    }

    @Test
    void expected_ack_count_for_decode_fan_in() {
        assertThat(PortMath.expectedAckCount(4, 8).value()).isEqualTo(2);
        assertThat(PortMath.expectedAckCount(1, 8).value()).isEqualTo(8);
    }

    @Test
    void expected_ack_count_rejects_non_multiple_fan_in() {
        Checked<Integer> r = PortMath.expectedAckCount(4, 6);
        assertThat(r.isOk()).isFalse();
        assertThat(r.error())
                .contains("multiple")
                .isEqualTo("consumer tp_size 6 must be a multiple of producer tp_size 4 for heterogeneous-TP P/D");
    }

    @Test
    void expected_ack_count_rejects_non_positive_sizes() {
        assertThat(PortMath.expectedAckCount(0, 4).error()).isEqualTo("TP sizes must be positive");
        assertThat(PortMath.expectedAckCount(4, 0).error()).isEqualTo("TP sizes must be positive");
    }

    @Test
    void p8_d4_leaves_odd_prefill_ranks_unread_and_unacked() {
        // Section 5.7: each D rank releases only to remoteTpRank(d, D_tp, P_tp).
        TreeSet<Integer> released = new TreeSet<>(remoteRanks(4, 8));
        assertThat(released).containsExactly(0, 2, 4, 6);
        assertThat(PortMath.expectedAckCount(8, 4).value()).isEqualTo(1);
    }
}

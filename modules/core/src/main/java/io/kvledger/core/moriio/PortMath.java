package io.kvledger.core.moriio;

/**
 * Port and rank arithmetic of the MoRIIO connector (protocol spec sections 2.1 and 5.7), exact
 * to the Python helpers {@code get_port_offset}, {@code fold_local_rank}, {@code pod_index},
 * {@code get_moriio_remote_tp_rank} and {@code get_moriio_expected_ack_count}.
 *
 * <p>The Python connector mixes two forms of the port offset: listeners bind with the
 * two-argument form ({@code dp + tp}) and several dialers use the three-argument form
 * ({@code dp * tp_size + tp}). A Java peer must use the same form as the Python code for each
 * socket; see {@link #portFormsDisagree(int, int)} for the topologies where the two differ.
 *
 * <p>Python integers do not overflow. Where a result would leave the {@code int} range these
 * methods throw {@link ArithmeticException} instead of wrapping; no realistic rank or port comes
 * near that range. Functions that raise {@code ValueError} in Python return
 * {@link Checked#fail(String)} with the Python message instead of throwing.
 */
public final class PortMath {

    private PortMath() {}

    /**
     * {@code get_port_offset(dp_rank, tp_rank)}: the two-argument form (default
     * {@code tp_size=1}), {@code dp_rank + tp_rank}. Used by every listener (handshake and notify
     * ROUTER binds) and by the scheduler-side notifies.
     *
     * Never throws: a result outside the {@code int} range saturates (no real port is near it).
     */
    public static int portOffset(int dpRank, int tpRank) {
        return portOffset(dpRank, tpRank, 1);
    }

    /**
     * {@code get_port_offset(dp_rank, tp_rank, tp_size)}: {@code dp_rank * tp_size + tp_rank}. Used
     * by the handshake dialer and the READ {@code release} sender with the remote TP size.
     *
     * Never throws: a result outside the {@code int} range saturates.
     */
    public static int portOffset(int dpRank, int tpRank, int tpSize) {
        long v = (long) dpRank * tpSize + tpRank;
        return (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, v));
    }

    /**
     * {@code fold_local_rank(g, L)}: Python {@code g % L} (sign of the divisor, as
     * {@link Math#floorMod(int, int)}) when {@code L != 0}; {@code g} unchanged when {@code L == 0},
     * the external-DP sentinel for {@code data_parallel_size_local}.
     */
    public static int foldLocalRank(int globalRank, int dpSizeLocal) {
        return dpSizeLocal != 0 ? Math.floorMod(globalRank, dpSizeLocal) : globalRank;
    }

    /**
     * {@code pod_index(g, L)}: Python {@code g // L} (floor division) when {@code L != 0}, else
     * {@code 0}.
     *
     * Never throws ({@code Integer.MIN_VALUE // -1} saturates).
     */
    public static int podIndex(int globalRank, int dpSizeLocal) {
        if (dpSizeLocal == 0) {
            return 0;
        }
        long v = Math.floorDiv((long) globalRank, (long) dpSizeLocal);
        return (int) Math.min(Integer.MAX_VALUE, v);
    }

    /**
     * {@code get_moriio_remote_tp_rank(local_tp_rank, local_tp_size, remote_tp_size)}: the remote
     * TP rank this local rank reads from or releases to.
     *
     * <ul>
     *   <li>Both sizes must be positive, else fails with {@code "TP sizes must be positive"}.
     *   <li>{@code localRank} must be in {@code [0, localSize)}, else fails with
     *       {@code "local_tp_rank R must be in [0, S)"}.
     *   <li>Equal sizes: {@code localRank}.
     *   <li>{@code remoteSize > localSize}: {@code remoteSize} must be a multiple of
     *       {@code localSize}; result {@code localRank * (remoteSize / localSize)}.
     *   <li>{@code remoteSize < localSize}: {@code localSize} must be a multiple of
     *       {@code remoteSize}; result {@code localRank / (localSize / remoteSize)}.
     *   <li>Otherwise fails with a message containing {@code "multiple"}.
     * </ul>
     */
    public static Checked<Integer> remoteTpRank(int localRank, int localSize, int remoteSize) {
        if (localSize <= 0 || remoteSize <= 0) {
            return Checked.fail("TP sizes must be positive");
        }
        if (localRank < 0 || localRank >= localSize) {
            return Checked.fail(
                    "local_tp_rank " + localRank + " must be in [0, " + localSize + ")");
        }
        if (remoteSize == localSize) {
            return Checked.ok(localRank);
        }
        if (remoteSize > localSize) {
            if (remoteSize % localSize != 0) {
                return Checked.fail("remote tp_size " + remoteSize + " must be a multiple of local "
                        + "tp_size " + localSize + " for heterogeneous-TP P/D");
            }
            return Checked.ok(localRank * (remoteSize / localSize));
        }
        if (localSize % remoteSize != 0) {
            return Checked.fail("local tp_size " + localSize + " must be a multiple of remote "
                    + "tp_size " + remoteSize + " for heterogeneous-TP P/D");
        }
        return Checked.ok(localRank / (localSize / remoteSize));
    }

    /**
     * The worker wrapper {@code _remote_tp_rank}: as {@link #remoteTpRank(int, int, int)}, except
     * that {@code remoteSize == 0} (remote TP size unknown, not advertised) is treated as
     * homogeneous, i.e. as {@code remoteSize == localSize}; {@code localRank} is still validated.
     */
    public static Checked<Integer> effectiveRemoteTpRank(int localRank, int localSize, int remoteSize) {
        return remoteTpRank(localRank, localSize, remoteSize == 0 ? localSize : remoteSize);
    }

    /**
     * {@code get_moriio_expected_ack_count(producer_tp_size, consumer_tp_size)}: how many
     * {@code release} ACKs one producer TP rank waits for before a transfer counts as done.
     *
     * <ul>
     *   <li>Non-positive sizes fail with {@code "TP sizes must be positive"}.
     *   <li>{@code consumerTp <= producerTp}: 1.
     *   <li>Otherwise {@code consumerTp} must be a multiple of {@code producerTp} (else fails with
     *       a message containing {@code "multiple"}); result {@code consumerTp / producerTp}.
     * </ul>
     */
    public static Checked<Integer> expectedAckCount(int producerTp, int consumerTp) {
        if (producerTp <= 0 || consumerTp <= 0) {
            return Checked.fail("TP sizes must be positive");
        }
        if (consumerTp <= producerTp) {
            return Checked.ok(1);
        }
        if (consumerTp % producerTp != 0) {
            return Checked.fail("consumer tp_size " + consumerTp + " must be a multiple of "
                    + "producer tp_size " + producerTp + " for heterogeneous-TP P/D");
        }
        return Checked.ok(consumerTp / producerTp);
    }

    /**
     * True when the two-argument listener form and the three-argument dialer form of the port
     * offset disagree, i.e. when {@code dpSize > 1} and {@code tpSize > 1} (bug class 23):
     * listeners collide (dp1/tp0 and dp0/tp1 both bind {@code base + 1}) and dialers aim at ports
     * nobody listens on. With {@code dpSize <= 1} or {@code tpSize <= 1} the forms agree.
     */
    public static boolean portFormsDisagree(int dpSize, int tpSize) {
        return dpSize > 1 && tpSize > 1;
    }

    /**
     * The heterogeneous-TP KV-head guard: prefill and decode TP sizes may differ only when every
     * rank holds all KV heads ({@code min(P_tp, D_tp) >= total_kv_heads}) or the model uses MLA
     * (one latent per token); the connector splits no heads. Fails with the
     * {@code NotImplementedError} message otherwise.
     */
    public static Checked<Boolean> heterogeneousTpHeadGuard(int localTp, int remoteTp, int totalKvHeads, boolean mla) {
        if (localTp == remoteTp || remoteTp == 0 || mla) {
            return Checked.ok(Boolean.TRUE);
        }
        if (Math.min(localTp, remoteTp) >= totalKvHeads) {
            return Checked.ok(Boolean.TRUE);
        }
        return Checked.fail("heterogeneous TP (local " + localTp + ", remote " + remoteTp
                + ") requires replicated KV heads: min TP must be >= total_kv_heads " + totalKvHeads);
    }
}

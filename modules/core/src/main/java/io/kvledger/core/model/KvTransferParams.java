package io.kvledger.core.model;

import io.kvledger.core.moriio.ExtraConfig;

/**
 * A request's {@code kv_transfer_params} as MoRIIO's connector reads them: each upstream key the
 * reducer reads, parsed once (one walk over the map) into a field, next to the raw
 * {@link KvParams} that the connector mutates and that is echoed back as it is.
 *
 * <p>Field types keep Python's semantics exactly. A key whose value the connector only tests for
 * truth is a {@code boolean} ({@code do_remote_prefill}, {@code do_remote_decode},
 * {@code remote_dp_rank_override}, {@code _p_side_truncated}); {@code transfer_id} is a
 * {@link TransferId}. A key the connector converts ({@code int(...)}, {@code str(...)}, a list of
 * block ids) holds the Python value as it came ({@code null} for a missing key or None, as
 * {@code params.get(key)} gives), because a value of the wrong type must fail where and as the
 * connector fails (a named anomaly with the value's text); where the connector tells a missing key
 * from None ({@code params[key]}, {@code params.get(key, default)}) there is a {@code has...}
 * accessor.
 *
 * <p>The connector's three writes go through this class, so the typed fields and the raw map never
 * disagree: {@link #setDefaultTransferId}, {@link #clearRemotePrefill} and
 * {@link #markPSideTruncated}. The raw map may be shared (with the event that carried it, or with
 * a snapshot {@link #share()} gave): the first write copies it, so that neither sees the change.
 */
public final class KvTransferParams {

    private static final Long ZERO = 0L;

    private static final int TRANSFER_ID = 1;
    private static final int REMOTE_BLOCK_IDS = 1 << 1;
    private static final int REMOTE_ENGINE_ID = 1 << 2;
    private static final int REMOTE_DP_RANK = 1 << 3;
    private static final int REMOTE_DP_SIZE = 1 << 4;
    private static final int REMOTE_DP_SIZE_LOCAL = 1 << 5;
    private static final int IS_REQUEST_LEADER = 1 << 6;
    private static final int TP_SIZE = 1 << 7;

    private KvParams raw;
    /** Whether another holder may see {@link #raw}: copied before the first write. */
    private boolean rawShared;
    /** The {@code has...} bits: which of the keys that are told apart from None are present. */
    private int present;

    private TransferId transferId = TransferId.NONE;
    private boolean doRemotePrefill;
    private boolean doRemoteDecode;
    private boolean remoteDpRankOverride;
    private boolean pSideTruncated;
    private Object remoteBlockIds;
    private Object remoteEngineId;
    private Object remoteHost;
    private Object remoteHosts;
    private Object remoteHandshakePort;
    private Object remoteNotifyPort;
    private Object remoteDpRank;
    private Object remoteDpSize;
    private Object remoteDpSizeLocal;
    private Object isRequestLeader;
    private Object remoteTpSize;
    private Object tpSize;

    /** Empty fields, for {@link #parseInto} (a reader that reuses one instance). */
    public KvTransferParams() {
        this.raw = KvParams.empty();
    }

    /**
     * The params of a request, read from {@code raw}, which this object takes over: the caller
     * hands in a map nobody else writes (a {@link KvParams#copy()} of an event's).
     */
    public static KvTransferParams of(KvParams raw) {
        KvTransferParams p = new KvTransferParams(raw);
        p.parse(raw, null);
        return p;
    }

    private KvTransferParams(KvParams raw) {
        this.raw = raw;
    }

    /**
     * Reads {@code params} into this reused instance (its previous fields are dropped). A
     * {@code transfer_id} whose value is the very object {@code sameTransferId} holds reuses it.
     */
    public KvTransferParams parseInto(KvParams params, TransferId sameTransferId) {
        present = 0;
        transferId = TransferId.NONE;
        doRemotePrefill = false;
        doRemoteDecode = false;
        remoteDpRankOverride = false;
        pSideTruncated = false;
        remoteBlockIds = null;
        remoteEngineId = null;
        remoteHost = null;
        remoteHosts = null;
        remoteHandshakePort = null;
        remoteNotifyPort = null;
        remoteDpRank = null;
        remoteDpSize = null;
        remoteDpSizeLocal = null;
        isRequestLeader = null;
        remoteTpSize = null;
        tpSize = null;
        raw = params;
        rawShared = true;
        parse(params, sameTransferId);
        return this;
    }

    private void parse(KvParams params, TransferId sameTransferId) {
        for (int i = 0, n = params.size(); i < n; i++) {
            String key = params.keyAt(i);
            if (key == null) {
                continue;
            }
            Object v = params.valueAt(i);
            switch (key) {
                case "transfer_id" -> {
                    present |= TRANSFER_ID;
                    transferId = sameTransferId != null && sameTransferId.raw() == v ? sameTransferId : TransferId.of(v);
                }
                case "do_remote_prefill" -> doRemotePrefill = ExtraConfig.pythonTruthy(v);
                case "do_remote_decode" -> doRemoteDecode = ExtraConfig.pythonTruthy(v);
                case "remote_dp_rank_override" -> remoteDpRankOverride = ExtraConfig.pythonTruthy(v);
                case "_p_side_truncated" -> pSideTruncated = ExtraConfig.pythonTruthy(v);
                case "remote_block_ids" -> {
                    present |= REMOTE_BLOCK_IDS;
                    remoteBlockIds = v;
                }
                case "remote_engine_id" -> {
                    present |= REMOTE_ENGINE_ID;
                    remoteEngineId = v;
                }
                case "remote_host" -> remoteHost = v;
                case "remote_hosts" -> remoteHosts = v;
                case "remote_handshake_port" -> remoteHandshakePort = v;
                case "remote_notify_port" -> remoteNotifyPort = v;
                case "remote_dp_rank" -> {
                    present |= REMOTE_DP_RANK;
                    remoteDpRank = v;
                }
                case "remote_dp_size" -> {
                    present |= REMOTE_DP_SIZE;
                    remoteDpSize = v;
                }
                case "remote_dp_size_local" -> {
                    present |= REMOTE_DP_SIZE_LOCAL;
                    remoteDpSizeLocal = v;
                }
                case "is_request_leader" -> {
                    present |= IS_REQUEST_LEADER;
                    isRequestLeader = v;
                }
                case "remote_tp_size" -> remoteTpSize = v;
                case "tp_size" -> {
                    present |= TP_SIZE;
                    tpSize = v;
                }
                default -> {
                    // a key the connector does not read stays in the raw map only
                }
            }
        }
    }

    // ------------------------------------------------------------------ the raw map

    /** The raw params as the connector holds them now (with its writes): what is echoed back. */
    public KvParams raw() {
        return raw;
    }

    /**
     * The raw params, to keep as a snapshot ({@code copy.copy(params)}): later writes through this
     * object copy the map first, so the snapshot keeps what it holds now.
     */
    public KvParams share() {
        rawShared = true;
        return raw;
    }

    /** {@code not params}: no key at all. */
    public boolean isEmpty() {
        return raw.isEmpty();
    }

    private KvParams writable() {
        if (rawShared) {
            raw = raw.copy();
            rawShared = false;
        }
        return raw;
    }

    // ------------------------------------------------------------------ the connector's writes

    /** {@code params.setdefault("transfer_id", value)}. */
    public void setDefaultTransferId(String value) {
        if ((present & TRANSFER_ID) == 0) {
            writable().put("transfer_id", value);
            present |= TRANSFER_ID;
            transferId = TransferId.of(value);
        }
    }

    /** {@code params["do_remote_prefill"] = False}. */
    public void clearRemotePrefill() {
        writable().put("do_remote_prefill", Boolean.FALSE);
        doRemotePrefill = false;
    }

    /** {@code params["_p_side_truncated"] = True} (#51052's on_new_request). */
    public void markPSideTruncated() {
        writable().put("_p_side_truncated", Boolean.TRUE);
        pSideTruncated = true;
    }

    // ------------------------------------------------------------------ transfer_id

    /** Whether the key {@code transfer_id} is present (None included). */
    public boolean hasTransferId() {
        return (present & TRANSFER_ID) != 0;
    }

    /** {@code params.get("transfer_id")}: {@link TransferId#NONE} when absent or None. */
    public TransferId transferId() {
        return transferId;
    }

    // ------------------------------------------------------------------ flags (truthiness)

    /** {@code bool(params.get("do_remote_prefill"))}. */
    public boolean doRemotePrefill() {
        return doRemotePrefill;
    }

    /** {@code bool(params.get("do_remote_decode"))}. */
    public boolean doRemoteDecode() {
        return doRemoteDecode;
    }

    /** {@code bool(params.get("remote_dp_rank_override"))}. */
    public boolean remoteDpRankOverride() {
        return remoteDpRankOverride;
    }

    /** {@code bool(params.get("_p_side_truncated"))}. */
    public boolean pSideTruncated() {
        return pSideTruncated;
    }

    // ------------------------------------------------------------------ Python values

    public boolean hasRemoteBlockIds() {
        return (present & REMOTE_BLOCK_IDS) != 0;
    }

    /** {@code params.get("remote_block_ids")}: a list of ints or of lists of ints, as sent. */
    public Object remoteBlockIds() {
        return remoteBlockIds;
    }

    public boolean hasRemoteEngineId() {
        return (present & REMOTE_ENGINE_ID) != 0;
    }

    /** {@code params.get("remote_engine_id")}. */
    public Object remoteEngineId() {
        return remoteEngineId;
    }

    /** {@code params.get("remote_host")}. */
    public Object remoteHost() {
        return remoteHost;
    }

    /** {@code params.get("remote_hosts")}: the pods' hosts, a list when given. */
    public Object remoteHosts() {
        return remoteHosts;
    }

    /** {@code params.get("remote_handshake_port")}. */
    public Object remoteHandshakePort() {
        return remoteHandshakePort;
    }

    /** {@code params.get("remote_notify_port")}. */
    public Object remoteNotifyPort() {
        return remoteNotifyPort;
    }

    public boolean hasRemoteDpRank() {
        return (present & REMOTE_DP_RANK) != 0;
    }

    /** {@code params.get("remote_dp_rank")}. */
    public Object remoteDpRank() {
        return remoteDpRank;
    }

    /** {@code params.get("remote_dp_rank", 0)}: the value used as it is (None stays None). */
    public Object remoteDpRankOrZero() {
        return (present & REMOTE_DP_RANK) != 0 ? remoteDpRank : ZERO;
    }

    public boolean hasRemoteDpSize() {
        return (present & REMOTE_DP_SIZE) != 0;
    }

    /** {@code params.get("remote_dp_size")}. */
    public Object remoteDpSize() {
        return remoteDpSize;
    }

    public boolean hasRemoteDpSizeLocal() {
        return (present & REMOTE_DP_SIZE_LOCAL) != 0;
    }

    /** {@code params.get("remote_dp_size_local")}. */
    public Object remoteDpSizeLocal() {
        return remoteDpSizeLocal;
    }

    public boolean hasIsRequestLeader() {
        return (present & IS_REQUEST_LEADER) != 0;
    }

    /** {@code params.get("is_request_leader")}. */
    public Object isRequestLeader() {
        return isRequestLeader;
    }

    /** {@code params.get("remote_tp_size")}. */
    public Object remoteTpSize() {
        return remoteTpSize;
    }

    public boolean hasTpSize() {
        return (present & TP_SIZE) != 0;
    }

    /** {@code params.get("tp_size")}. */
    public Object tpSize() {
        return tpSize;
    }

    /** The raw params' text. */
    @Override
    public String toString() {
        return raw.toString();
    }
}

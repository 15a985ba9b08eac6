package io.kvledger.core.model;

import io.kvledger.core.moriio.ExtraConfig;
import java.util.List;

/**
 * A request's {@code kv_transfer_params} as MoRIIO's connector reads them: each upstream key the
 * reducer reads, parsed once (one walk over the map) and read through its own accessor, next to
 * the raw {@link KvParams} that the connector mutates and that is echoed back as it is. Nothing
 * reads these params by string key after the walk.
 *
 * <p>Field types keep Python's semantics exactly. A key whose value the connector only tests for
 * truth is a {@code boolean} field ({@code do_remote_prefill}, {@code do_remote_decode},
 * {@code remote_dp_rank_override}, {@code _p_side_truncated}); {@code transfer_id} is a
 * {@link TransferId}. A key the connector converts ({@code int(...)}, {@code str(...)}, a list of
 * block ids) gives the Python value as it came ({@code null} for a missing key or None, as
 * {@code params.get(key)} gives), because a value of the wrong type must fail where and as the
 * connector fails (a named anomaly with the value's text); the walk keeps where it sits in the raw
 * map (a byte per key, so that the one instance per request stays small). Where the connector
 * tells a missing key from None ({@code params[key]}, {@code params.get(key, default)}) there is a
 * {@code has...} accessor. The raw values stay package-private: the reducer reads only typed
 * accessors, each giving what one upstream expression gives: {@code int()} of the ints
 * ({@code ...Int}), their truth ({@code ...True}) and None test ({@code ...None}), the
 * {@code str()} an anomaly's text quotes ({@code ...Text}) and the exception {@code int()} raises
 * ({@code ...IntError}); {@code str()} of {@code remote_host} and {@code remote_engine_id} (with
 * None and truthiness as each call site tests them); and {@code remote_block_ids} as
 * {@link BlockGroups}, converted once per params. Each reads the value where the one walk found
 * it (no lookup by name); none allocates but the texts (read on the anomaly paths), the groups
 * (cached) and {@code int()} of a value that is not already an int.
 *
 * <p>The connector's three writes go through this class, so the typed fields and the raw map never
 * disagree: {@link #setDefaultTransferId}, {@link #clearRemotePrefill} and
 * {@link #markPSideTruncated}. The raw map may be shared (with the event that carried it, or with
 * a snapshot {@link #share()} gave): the first write copies it, so that neither sees the change.
 */
public final class KvTransferParams {

    private static final Long ZERO = 0L;
    /** A key the params do not hold. */
    private static final byte ABSENT = -1;
    /** A key at a position a byte does not hold (params of more than 127 keys): found by name. */
    private static final byte FAR = -2;
    /** {@link #remoteBlockGroups} not converted yet (never a value {@link BlockGroups#fromParamValue} gives). */
    private static final BlockGroups UNPARSED = BlockGroups.wrap(new int[0][]);

    private KvParams raw;
    /** Whether another holder may see {@link #raw}: copied before the first write. */
    /*
     * The five booleans as bits of one byte, so that the one instance per request stays at 40
     * bytes: five boolean fields took it to 48 (a gc.alloc.rate.norm of 8 B more per request in
     * SeedHookMixBenchmark once the groups' field came).
     */
    /** Whether another holder may see {@link #raw}: copied before the first write. */
    private static final byte RAW_SHARED = 1;
    private static final byte DO_REMOTE_PREFILL = 2;
    private static final byte DO_REMOTE_DECODE = 4;
    private static final byte REMOTE_DP_RANK_OVERRIDE = 8;
    private static final byte P_SIDE_TRUNCATED = 16;
    private byte flags;

    private TransferId transferId = TransferId.NONE;
    /*
     * The keys read as Python values: where each sits in the raw map ({@link #ABSENT}, {@link #FAR}
     * or its position). The map never drops a key and writes in place or at its end, so a
     * position holds for good; a byte per key keeps one of these per request small.
     */
    private byte transferIdAt = ABSENT;
    private byte remoteBlockIdsAt = ABSENT;
    private byte remoteEngineIdAt = ABSENT;
    private byte remoteHostAt = ABSENT;
    private byte remoteHostsAt = ABSENT;
    private byte remoteHandshakePortAt = ABSENT;
    private byte remoteNotifyPortAt = ABSENT;
    private byte remoteDpRankAt = ABSENT;
    private byte remoteDpSizeAt = ABSENT;
    private byte remoteDpSizeLocalAt = ABSENT;
    private byte isRequestLeaderAt = ABSENT;
    private byte remoteTpSizeAt = ABSENT;
    private byte tpSizeAt = ABSENT;
    /** {@code remote_block_ids} converted, {@link #UNPARSED} until first read: see {@link #remoteBlockGroups}. */
    private BlockGroups remoteBlockGroups = UNPARSED;

    /** Empty fields, for {@link #parseInto} (a reader that reuses one instance). */
    public KvTransferParams() {
        this.raw = KvParams.empty();
    }

    /**
     * The params of a request, read from {@code raw} without copying it: the first write through
     * this object copies it, so the caller's map (an event's, as recorded) never changes. The
     * caller must not change it either.
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
        transferId = TransferId.NONE;
        flags = 0;
        transferIdAt = ABSENT;
        remoteBlockIdsAt = ABSENT;
        remoteEngineIdAt = ABSENT;
        remoteHostAt = ABSENT;
        remoteHostsAt = ABSENT;
        remoteHandshakePortAt = ABSENT;
        remoteNotifyPortAt = ABSENT;
        remoteDpRankAt = ABSENT;
        remoteDpSizeAt = ABSENT;
        remoteDpSizeLocalAt = ABSENT;
        isRequestLeaderAt = ABSENT;
        remoteTpSizeAt = ABSENT;
        tpSizeAt = ABSENT;
        remoteBlockGroups = UNPARSED;
        raw = params;
        parse(params, sameTransferId);
        return this;
    }

    /**
     * Reads {@code params} into this reused instance, as {@link #parseInto(KvParams, TransferId)},
     * reusing what {@code like} (another request's params, or {@code null}) already converted for a
     * value that is the very same object: its transfer id, and its {@code remote_block_ids} groups.
     */
    public KvTransferParams parseIntoLike(KvParams params, KvTransferParams like) {
        parseInto(params, like == null ? null : like.transferId);
        if (like != null && like.remoteBlockGroups != UNPARSED && remoteBlockIdsAt != ABSENT
                && remoteBlockIds() == like.remoteBlockIds()) {
            remoteBlockGroups = like.remoteBlockGroups;
        }
        return this;
    }

    private void parse(KvParams params, TransferId sameTransferId) {
        flags |= RAW_SHARED;
        for (int i = 0, n = params.size(); i < n; i++) {
            String key = params.keyAt(i);
            if (key == null) {
                continue;
            }
            byte at = i <= Byte.MAX_VALUE ? (byte) i : FAR;
            switch (key) {
                case "transfer_id" -> {
                    transferIdAt = at;
                    Object v = params.valueAt(i);
                    transferId = sameTransferId != null && sameTransferId.holds(v) ? sameTransferId : TransferId.of(v);
                }
                case "do_remote_prefill" -> flag(DO_REMOTE_PREFILL, ExtraConfig.pythonTruthy(params.valueAt(i)));
                case "do_remote_decode" -> flag(DO_REMOTE_DECODE, ExtraConfig.pythonTruthy(params.valueAt(i)));
                case "remote_dp_rank_override" -> flag(REMOTE_DP_RANK_OVERRIDE, ExtraConfig.pythonTruthy(params.valueAt(i)));
                case "_p_side_truncated" -> flag(P_SIDE_TRUNCATED, ExtraConfig.pythonTruthy(params.valueAt(i)));
                case "remote_block_ids" -> remoteBlockIdsAt = at;
                case "remote_engine_id" -> remoteEngineIdAt = at;
                case "remote_host" -> remoteHostAt = at;
                case "remote_hosts" -> remoteHostsAt = at;
                case "remote_handshake_port" -> remoteHandshakePortAt = at;
                case "remote_notify_port" -> remoteNotifyPortAt = at;
                case "remote_dp_rank" -> remoteDpRankAt = at;
                case "remote_dp_size" -> remoteDpSizeAt = at;
                case "remote_dp_size_local" -> remoteDpSizeLocalAt = at;
                case "is_request_leader" -> isRequestLeaderAt = at;
                case "remote_tp_size" -> remoteTpSizeAt = at;
                case "tp_size" -> tpSizeAt = at;
                default -> {
                    // a key the connector does not read stays in the raw map only
                }
            }
        }
    }

    private void flag(byte bit, boolean on) {
        flags = (byte) (on ? flags | bit : flags & ~bit);
    }

    /** The value of a key read as a Python value: {@code params.get(key)}. */
    private Object value(byte at, String key) {
        return at >= 0 ? raw.valueAt(at) : at == ABSENT ? null : raw.get(key);
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
        flags |= RAW_SHARED;
        return raw;
    }

    /** {@code not params}: no key at all. */
    public boolean isEmpty() {
        return raw.isEmpty();
    }

    private KvParams writable() {
        if ((flags & RAW_SHARED) != 0) {
            raw = raw.copy();
            flag(RAW_SHARED, false);
        }
        return raw;
    }

    // ------------------------------------------------------------------ the connector's writes

    /** {@code params.setdefault("transfer_id", value)}. */
    public void setDefaultTransferId(String value) {
        if (transferIdAt == ABSENT) {
            KvParams w = writable();
            w.put("transfer_id", value);
            int i = w.size() - 1; // a new key goes last
            transferIdAt = i <= Byte.MAX_VALUE ? (byte) i : FAR;
            transferId = TransferId.of(value);
        }
    }

    /** {@code params["do_remote_prefill"] = False}. */
    public void clearRemotePrefill() {
        writable().put("do_remote_prefill", Boolean.FALSE);
        flag(DO_REMOTE_PREFILL, false);
    }

    /** {@code params["_p_side_truncated"] = True} (#51052's on_new_request). */
    public void markPSideTruncated() {
        writable().put("_p_side_truncated", Boolean.TRUE);
        flag(P_SIDE_TRUNCATED, true);
    }

    // ------------------------------------------------------------------ transfer_id

    /** Whether the key {@code transfer_id} is present (None included). */
    public boolean hasTransferId() {
        return transferIdAt != ABSENT;
    }

    /** {@code params.get("transfer_id")}: {@link TransferId#NONE} when absent or None. */
    public TransferId transferId() {
        return transferId;
    }

    /**
     * {@code params.get("transfer_id")} as the raw map holds it (the plain-Java value, {@code null}
     * when absent or None): for a dict that echoes the params' values back, as {@link #raw} does.
     */
    public Object transferIdValue() {
        return value(transferIdAt, "transfer_id");
    }

    // ------------------------------------------------------------------ flags (truthiness)

    /** {@code bool(params.get("do_remote_prefill"))}. */
    public boolean doRemotePrefill() {
        return (flags & DO_REMOTE_PREFILL) != 0;
    }

    /** {@code bool(params.get("do_remote_decode"))}. */
    public boolean doRemoteDecode() {
        return (flags & DO_REMOTE_DECODE) != 0;
    }

    /** {@code bool(params.get("remote_dp_rank_override"))}. */
    public boolean remoteDpRankOverride() {
        return (flags & REMOTE_DP_RANK_OVERRIDE) != 0;
    }

    /** {@code bool(params.get("_p_side_truncated"))}. */
    public boolean pSideTruncated() {
        return (flags & P_SIDE_TRUNCATED) != 0;
    }

    // ------------------------------------------------------------------ Python values

    public boolean hasRemoteBlockIds() {
        return remoteBlockIdsAt != ABSENT;
    }

    /**
     * {@code params.get("remote_block_ids")}: a list of ints or of lists of ints, as sent; the raw
     * value (the reducer reads {@link #remoteBlockGroups}, and {@link #remoteBlockIdsText} for an
     * anomaly's text).
     */
    Object remoteBlockIds() {
        return value(remoteBlockIdsAt, "remote_block_ids");
    }

    /** {@code str(params.get("remote_block_ids"))}: for an anomaly's text. */
    public String remoteBlockIdsText() {
        return ExtraConfig.pythonStr(remoteBlockIds());
    }

    /**
     * {@code remote_block_ids} as block groups, converted once per params (on first read, by
     * {@link BlockGroups#fromParamValue}): a list of ints is one group, a list of lists of ints one
     * group per list, an empty list one empty group. {@code null} when the key is absent or None or
     * the value has neither shape (not a list, a float id, lists mixed with ints, a non-int inside a
     * group), which the caller names as the anomaly the connector's {@code TypeError} or assert is.
     */
    public BlockGroups remoteBlockGroups() {
        BlockGroups g = remoteBlockGroups;
        if (g == UNPARSED) {
            g = BlockGroups.fromParamValue(remoteBlockIds());
            remoteBlockGroups = g;
        }
        return g;
    }

    /**
     * Whether {@code remote_block_ids} is a flat list of numbers (the seed's shape; an empty list
     * is flat), by {@link BlockGroups#isFlatParamValue}.
     */
    public boolean remoteBlockIdsFlat() {
        return BlockGroups.isFlatParamValue(remoteBlockIds());
    }

    /** {@code bool(params.get("remote_block_ids"))}: false when absent, None or empty. */
    public boolean remoteBlockIdsTrue() {
        return ExtraConfig.pythonTruthy(remoteBlockIds());
    }

    public boolean hasRemoteEngineId() {
        return remoteEngineIdAt != ABSENT;
    }

    /** {@code params.get("remote_engine_id")}: the raw value (the reducer reads {@link #remoteEngineIdStr}). */
    Object remoteEngineId() {
        return value(remoteEngineIdAt, "remote_engine_id");
    }

    /**
     * {@code str(params.get("remote_engine_id"))}, or {@code null} when the key is absent or None
     * (the connector tells those apart with {@link #hasRemoteEngineId}); any other value, {@code ""}
     * and {@code 0} included, is its Python text.
     */
    public String remoteEngineIdStr() {
        Object v = remoteEngineId();
        return v == null ? null : ExtraConfig.pythonStr(v);
    }

    /** {@code params.get("remote_host")}: the raw value (the reducer reads {@link #remoteHostStr}). */
    Object remoteHost() {
        return value(remoteHostAt, "remote_host");
    }

    /**
     * {@code str(params.get("remote_host"))}, or {@code null} when the key is absent or None: where
     * the connector tests {@code host is None} and formats any other value (an int or a list
     * becomes its Python text; {@code ""} and {@code 0} are kept).
     */
    public String remoteHostStr() {
        Object v = remoteHost();
        return v == null ? null : ExtraConfig.pythonStr(v);
    }

    /**
     * {@code str(params.get("remote_host"))} when the value is true in Python, else {@code null}
     * (absent, None, {@code ""}, {@code 0}, {@code False}, an empty list): where the connector tests
     * {@code if host:} / {@code host or ...}. A true value's text is never empty.
     */
    public String remoteHostIfTrue() {
        Object v = remoteHost();
        return ExtraConfig.pythonTruthy(v) ? ExtraConfig.pythonStr(v) : null;
    }

    /** {@code params.get("remote_hosts")}: the pods' hosts, a list when given. */
    Object remoteHosts() {
        return value(remoteHostsAt, "remote_hosts");
    }

    /** {@code bool(params.get("remote_hosts"))}: false when absent, None or empty. */
    public boolean remoteHostsTrue() {
        return ExtraConfig.pythonTruthy(remoteHosts());
    }

    /** {@code str(params.get("remote_hosts"))}: a value that is not a list, as one host. */
    public String remoteHostsText() {
        return ExtraConfig.pythonStr(remoteHosts());
    }

    /** {@code params.get("remote_handshake_port")}. */
    Object remoteHandshakePort() {
        return value(remoteHandshakePortAt, "remote_handshake_port");
    }

    /** {@code params.get("remote_notify_port")}. */
    Object remoteNotifyPort() {
        return value(remoteNotifyPortAt, "remote_notify_port");
    }

    /** {@code params.get("remote_notify_port") is None}: absent or None. */
    public boolean remoteNotifyPortNone() {
        return remoteNotifyPort() == null;
    }

    /** {@code bool(params.get("remote_notify_port"))}. */
    public boolean remoteNotifyPortTrue() {
        return ExtraConfig.pythonTruthy(remoteNotifyPort());
    }

    /** {@code str(params.get("remote_notify_port"))}: for an anomaly's text. */
    public String remoteNotifyPortText() {
        return ExtraConfig.pythonStr(remoteNotifyPort());
    }

    public boolean hasRemoteDpRank() {
        return remoteDpRankAt != ABSENT;
    }

    /** {@code params.get("remote_dp_rank")}. */
    Object remoteDpRank() {
        return value(remoteDpRankAt, "remote_dp_rank");
    }

    /** {@code bool(params.get("remote_dp_rank"))}. */
    public boolean remoteDpRankTrue() {
        return ExtraConfig.pythonTruthy(remoteDpRank());
    }

    /** {@code params.get("remote_dp_rank", 0)}: the value used as it is (None stays None). */
    Object remoteDpRankOrZero() {
        return remoteDpRankAt != ABSENT ? value(remoteDpRankAt, "remote_dp_rank") : ZERO;
    }

    /** {@code str(params.get("remote_dp_rank", 0))}: for an anomaly's text. */
    public String remoteDpRankOrZeroText() {
        return ExtraConfig.pythonStr(remoteDpRankOrZero());
    }

    public boolean hasRemoteDpSize() {
        return remoteDpSizeAt != ABSENT;
    }

    /** {@code params.get("remote_dp_size")}. */
    Object remoteDpSize() {
        return value(remoteDpSizeAt, "remote_dp_size");
    }

    /** {@code bool(params.get("remote_dp_size"))}. */
    public boolean remoteDpSizeTrue() {
        return ExtraConfig.pythonTruthy(remoteDpSize());
    }

    /** {@code str(params.get("remote_dp_size"))}: for an anomaly's text. */
    public String remoteDpSizeText() {
        return ExtraConfig.pythonStr(remoteDpSize());
    }

    /** The exception {@code int(params.get("remote_dp_size"))} raises when it raises: see {@link #intError}. */
    public String remoteDpSizeIntError() {
        return intError(remoteDpSize());
    }

    public boolean hasRemoteDpSizeLocal() {
        return remoteDpSizeLocalAt != ABSENT;
    }

    /** {@code params.get("remote_dp_size_local")}. */
    Object remoteDpSizeLocal() {
        return value(remoteDpSizeLocalAt, "remote_dp_size_local");
    }

    /** {@code bool(params.get("remote_dp_size_local"))}. */
    public boolean remoteDpSizeLocalTrue() {
        return ExtraConfig.pythonTruthy(remoteDpSizeLocal());
    }

    /** {@code str(params.get("remote_dp_size_local"))}: for an anomaly's text. */
    public String remoteDpSizeLocalText() {
        return ExtraConfig.pythonStr(remoteDpSizeLocal());
    }

    /** The exception {@code int(params.get("remote_dp_size_local"))} raises when it raises: see {@link #intError}. */
    public String remoteDpSizeLocalIntError() {
        return intError(remoteDpSizeLocal());
    }

    public boolean hasIsRequestLeader() {
        return isRequestLeaderAt != ABSENT;
    }

    /** {@code params.get("is_request_leader")}. */
    Object isRequestLeader() {
        return value(isRequestLeaderAt, "is_request_leader");
    }

    /** {@code params.get("is_request_leader") is None}: absent or None. */
    public boolean isRequestLeaderNone() {
        return isRequestLeader() == null;
    }

    /** {@code bool(params.get("is_request_leader"))}. */
    public boolean isRequestLeaderTrue() {
        return ExtraConfig.pythonTruthy(isRequestLeader());
    }

    /** {@code str(params.get("is_request_leader"))}: for the notify gate's text. */
    public String isRequestLeaderText() {
        return ExtraConfig.pythonStr(isRequestLeader());
    }

    /** {@code params.get("remote_tp_size")}. */
    Object remoteTpSize() {
        return value(remoteTpSizeAt, "remote_tp_size");
    }

    /** {@code bool(params.get("remote_tp_size"))}. */
    public boolean remoteTpSizeTrue() {
        return ExtraConfig.pythonTruthy(remoteTpSize());
    }

    /** {@code str(params.get("remote_tp_size"))}: for an anomaly's text. */
    public String remoteTpSizeText() {
        return ExtraConfig.pythonStr(remoteTpSize());
    }

    public boolean hasTpSize() {
        return tpSizeAt != ABSENT;
    }

    /** {@code params.get("tp_size")}. */
    Object tpSize() {
        return value(tpSizeAt, "tp_size");
    }

    /** {@code bool(params.get("tp_size"))}. */
    public boolean tpSizeTrue() {
        return ExtraConfig.pythonTruthy(tpSize());
    }

    /** {@code str(params.get("tp_size"))}: for an anomaly's text. */
    public String tpSizeText() {
        return ExtraConfig.pythonStr(tpSize());
    }

    // ------------------------------------------------------------------ converted (typed)

    /*
     * The keys the connector converts, as the Java types they convert to: an int is what
     * {@code int(value)} gives by {@link KvParams#asLong}'s rules (a bool is 0 or 1, a float is
     * truncated, a str is parsed after stripping), {@code null} when the key is absent or None or
     * when {@code int()} raises; the hosts are {@code str()} of each. Where a value of the wrong
     * type must become an anomaly, the caller names it with the {@code ...Text} and
     * {@code ...IntError} accessors above: these accessors never throw.
     */

    /** {@code int(params.get("remote_handshake_port"))}, or {@code null} (see above). */
    public Long remoteHandshakePortInt() {
        return KvParams.asLong(remoteHandshakePort());
    }

    /** {@code int(params.get("remote_notify_port"))}, or {@code null} (see above). */
    public Long remoteNotifyPortInt() {
        return KvParams.asLong(remoteNotifyPort());
    }

    /** {@code int(params.get("remote_dp_rank"))}, or {@code null} (see above). */
    public Long remoteDpRankInt() {
        return KvParams.asLong(remoteDpRank());
    }

    /**
     * Whether {@code params.get("remote_dp_rank", 0)} is a number (int, bool or float): what the
     * port arithmetic adds to a port without a {@code TypeError}.
     */
    public boolean remoteDpRankIsNumber() {
        Object v = remoteDpRankOrZero();
        return v instanceof Number || v instanceof Boolean;
    }

    /** {@code params.get("remote_dp_rank", 0)} as an int when it is a number, else {@code null}. */
    public Long remoteDpRankOrZeroInt() {
        Object v = remoteDpRankOrZero();
        return v instanceof Number || v instanceof Boolean ? KvParams.asLong(v) : null;
    }

    /**
     * {@code params.get("remote_dp_rank", 0)} when it is an int or a bool (0 or 1), else
     * {@code null} (None, a float, a str, ...): the rank 239b5ff30's port arithmetic takes.
     */
    public Long remoteDpRankOrZeroIntOrBool() {
        Object v = remoteDpRankOrZero();
        return v instanceof Boolean b ? (Long) (b ? 1L : 0L) : v instanceof Long l ? l : null;
    }

    /** {@code int(params.get("remote_dp_size"))}, or {@code null} (see above). */
    public Long remoteDpSizeInt() {
        return KvParams.asLong(remoteDpSize());
    }

    /** {@code int(params.get("remote_dp_size_local"))}, or {@code null} (see above). */
    public Long remoteDpSizeLocalInt() {
        return KvParams.asLong(remoteDpSizeLocal());
    }

    /** {@code int(params.get("remote_tp_size"))}, or {@code null} (see above). */
    public Long remoteTpSizeInt() {
        return KvParams.asLong(remoteTpSize());
    }

    /** {@code int(params.get("tp_size"))}, or {@code null} (see above). */
    public Long tpSizeInt() {
        return KvParams.asLong(tpSize());
    }

    /**
     * {@code remote_hosts} as the pods' hosts, {@code str()} of each item, when it is a non-empty
     * list; {@code null} otherwise (absent, None, empty, or not a list).
     */
    public List<String> remoteHostList() {
        if (!(remoteHosts() instanceof List<?> l) || l.isEmpty()) {
            return null;
        }
        String[] out = new String[l.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ExtraConfig.pythonStr(l.get(i));
        }
        return List.of(out);
    }

    /**
     * The exception Python's {@code int(value)} raises for a value it refuses: {@code ValueError}
     * for a str, {@code TypeError} for the rest.
     */
    static String intError(Object value) {
        return value instanceof String ? "ValueError" : "TypeError";
    }

    /** The raw params' text. */
    @Override
    public String toString() {
        return raw.toString();
    }
}

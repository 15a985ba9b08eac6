package io.kvledger.journal;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.GroupKind;
import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.config.UpstreamVersions;
import io.kvledger.journal.format.PyJson;
import io.kvledger.journal.json.Json;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The first entry of a journal: which format it is written in, which node wrote it, and the
 * complete configuration the node's reducer ran with (so that replay uses the same profile,
 * switches and timeouts unless told otherwise).
 *
 * <p>Stored as a msgpack map (and as the first JSON line) with the keys of {@link #toMap()}:
 * {@code magic}, {@code format_version}, {@code node_id}, {@code origin}, then the node identity
 * ({@code kv_role}, {@code transfer_mode}, {@code host_ip}, {@code dp_rank}, ...) and every other
 * {@link NodeConfig} field, with the behaviour as {@code profile} and the sorted list of enabled
 * {@code switches} (kebab-case keys). A map, unlike the positional payloads, so that a header stays
 * readable across versions: unknown keys are reported, missing keys take the
 * {@link NodeConfig#builder defaults}.
 *
 * @param formatVersion the format version the journal was created with
 * @param nodeId        the node's name ("P0", "D1", or a live node's chosen id)
 * @param config        the node's configuration
 * @param origin        free text saying how the journal came to be ("simulate seed=7 ...",
 *                      "live", "import events.jsonl"); empty when unknown
 * @param proxy         whether {@code kvledger proxy} wrote the journal ({@code kv_role}
 *                      {@code "proxy"}): its entries are proxy records, not node events
 * @param vllmVersion    {@code vllm.__version__} of the engine a vLLM bridge recording came from,
 *                       or {@code null} when unknown (every other journal)
 * @param vllmCommit     the git commit of that vLLM install when it has one, else {@code null}
 * @param innerConnector {@code "module.Class"} of the connector the recorder wrapped, else
 *                       {@code null}
 */
public record JournalHeader(int formatVersion, String nodeId, NodeConfig config, String origin, boolean proxy,
                            String vllmVersion, String vllmCommit, String innerConnector) {

    /**
     * How the origin of a TP rank's worker node starts ({@code kvledger node --engine sim-worker}):
     * its scheduler side replays TP rank 0's, whose node sent the scheduler's notifies.
     */
    public static final String SIM_WORKER_ORIGIN = "kvledger node --engine sim-worker";

    /** The {@code kv_role} of a journal written by {@code kvledger proxy}. */
    static final String PROXY_ROLE = "proxy";

    public JournalHeader {
        Objects.requireNonNull(nodeId, "nodeId");
        Objects.requireNonNull(config, "config");
        origin = origin == null ? "" : origin;
    }

    /** A header that says nothing of a vLLM engine. */
    JournalHeader(int formatVersion, String nodeId, NodeConfig config, String origin, boolean proxy) {
        this(formatVersion, nodeId, config, origin, proxy, null, null, null);
    }

    /** A node's header. */
    JournalHeader(int formatVersion, String nodeId, NodeConfig config, String origin) {
        this(formatVersion, nodeId, config, origin, false);
    }

    /** A header in the current format version. */
    public static JournalHeader of(String nodeId, NodeConfig config, String origin) {
        return new JournalHeader(JournalFormat.FORMAT_VERSION, nodeId, config, origin);
    }

    /**
     * The header of a proxy's journal: {@code kv_role} {@code "proxy"}; the node fields keep their
     * defaults and mean nothing, except {@code transfer_mode} (the mode the proxy was started with,
     * WRITE when it latches the first registrant's).
     */
    public static JournalHeader proxy(String proxyId, TransferMode mode, String origin) {
        return new JournalHeader(JournalFormat.FORMAT_VERSION, proxyId,
                NodeConfig.builder(Role.CONSUMER, mode).build(), origin, true);
    }

    public Role role() {
        return config.role();
    }

    public TransferMode mode() {
        return config.mode();
    }

    /** The behaviour profile name ("seed", "newest", or "newest+custom" ...). */
    String profile() {
        return config.behaviour().profile();
    }

    /** This header with another format version (the writer stamps the version it writes). */
    public JournalHeader withFormatVersion(int v) {
        return new JournalHeader(v, nodeId, config, origin, proxy, vllmVersion, vllmCommit, innerConnector);
    }

    /** This header with another origin. */
    public JournalHeader withOrigin(String o) {
        return new JournalHeader(formatVersion, nodeId, config, o, proxy, vllmVersion, vllmCommit, innerConnector);
    }

    /** This header saying which vLLM and inner connector the recording came from (each may be null). */
    JournalHeader withVllm(String version, String commit, String inner) {
        return new JournalHeader(formatVersion, nodeId, config, origin, proxy, version, commit, inner);
    }

    /** One line: "P0 kv_producer WRITE 10.0.0.1 dp0/1(local 1) tp0/1 profile=newest format=1". */
    public String describe() {
        if (proxy) {
            return nodeId + " proxy " + config.mode() + " format=" + formatVersion
                    + (origin.isEmpty() ? "" : " origin=\"" + origin + "\"");
        }
        return nodeId + " " + kvRole(config.role()) + " " + config.mode() + " " + config.hostIp()
                + " dp" + config.dpRank() + "/" + config.dpSize() + "(local " + config.dpSizeLocal() + ")"
                + " tp" + config.tpRank() + "/" + config.tpSize() + " profile=" + profile()
                + " format=" + formatVersion + (origin.isEmpty() ? "" : " origin=\"" + origin + "\"")
                + (vllmVersion == null ? "" : " vllm=" + vllmVersion)
                + (vllmCommit == null ? "" : " vllm_commit=" + vllmCommit)
                + (innerConnector == null ? "" : " inner=" + innerConnector);
    }

    // ------------------------------------------------------------------ map form

    /** Header keys, in the order they are written. */
    static final List<String> KEYS = List.of("magic", "format_version", "node_id", "origin", "vllm_version",
            "vllm_commit", "inner_connector", "kv_role",
            "transfer_mode", "host_ip", "handshake_port", "notify_port", "dp_rank", "dp_size", "dp_size_local",
            "tp_rank", "tp_size", "cache_block_size", "groups", "layer_names", "hma_enabled", "full_cudagraph",
            "lookahead_tokens", "speculative_tokens", "speculative_method", "defer_timeout_ns",
            "transfer_timeout_ns", "recv_abort_timeout_ns", "unmapped_ack_ttl_ns", "unmapped_ack_cap", "profile",
            "switches", "awaits_tp_vote");

    /** The keys that say which node this is; they must match when a writer appends. */
    static final Set<String> NOT_COMPARED = Set.of("magic", "format_version", "origin");

    /** The header as an ordered map of Python values (what is written). */
    public Map<String, Object> toMap() {
        NodeConfig c = config;
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("magic", JournalFormat.MAGIC);
        m.put("format_version", (long) formatVersion);
        m.put("node_id", nodeId);
        m.put("origin", origin);
        // written only when known: the headers of other journals stay as they were
        if (vllmVersion != null) {
            m.put("vllm_version", vllmVersion);
        }
        if (vllmCommit != null) {
            m.put("vllm_commit", vllmCommit);
        }
        if (innerConnector != null) {
            m.put("inner_connector", innerConnector);
        }
        m.put("kv_role", proxy ? PROXY_ROLE : kvRole(c.role()));
        m.put("transfer_mode", c.mode().name());
        m.put("host_ip", c.hostIp());
        m.put("handshake_port", PyJson.toJson(c.handshakePort()));
        m.put("notify_port", PyJson.toJson(c.notifyPort()));
        m.put("dp_rank", (long) c.dpRank());
        m.put("dp_size", (long) c.dpSize());
        m.put("dp_size_local", (long) c.dpSizeLocal());
        m.put("tp_rank", (long) c.tpRank());
        m.put("tp_size", (long) c.tpSize());
        m.put("cache_block_size", (long) c.cacheBlockSize());
        List<Object> groups = new ArrayList<>();
        for (KvGroupSpec g : c.groups()) {
            LinkedHashMap<String, Object> gm = new LinkedHashMap<>();
            gm.put("kind", g.kind().name());
            gm.put("block_size_tokens", (long) g.blockSizeTokens());
            gm.put("sliding_window_tokens", (long) g.slidingWindowTokens());
            gm.put("enable_kv_transfer", g.enableKvTransfer());
            gm.put("mamba_states", (long) g.mambaStates());
            groups.add(gm);
        }
        m.put("groups", groups);
        m.put("layer_names", new ArrayList<Object>(c.layerNames()));
        m.put("hma_enabled", c.hmaEnabled());
        m.put("full_cudagraph", c.fullCudagraph());
        m.put("lookahead_tokens", (long) c.lookaheadTokens());
        m.put("speculative_tokens", (long) c.speculativeTokens());
        m.put("speculative_method", c.speculativeMethod());
        m.put("defer_timeout_ns", c.deferTimeoutNs());
        m.put("transfer_timeout_ns", c.transferTimeoutNs());
        m.put("recv_abort_timeout_ns", c.recvAbortTimeoutNs());
        m.put("unmapped_ack_ttl_ns", c.unmappedAckTtlNs());
        m.put("unmapped_ack_cap", (long) c.unmappedAckCap());
        m.put("profile", c.behaviour().profile());
        List<Object> switches = new ArrayList<>();
        for (Switch s : Switch.values()) {
            if (c.behaviour().on(s)) {
                switches.add(s.key());
            }
        }
        m.put("switches", switches);
        if (c.awaitsTpVote()) {
            m.put("awaits_tp_vote", true); // written only when set: headers of other journals stay as they were
        }
        return m;
    }

    /**
     * Reads a header map.
     *
     * @param strict   true for user input (JSON import): unknown keys, unknown switches and a
     *                 missing {@code node_id}, {@code kv_role} or {@code transfer_mode} are errors;
     *                 false for journals: unknown keys and switches become warnings
     * @param warnings receives the warnings (may be {@code null} when strict)
     * @throws IllegalArgumentException naming the key whose value is wrong
     */
    public static JournalHeader fromMap(Map<?, ?> m, boolean strict, List<String> warnings) {
        Reader r = new Reader(m, strict, warnings);
        for (Object k : m.keySet()) {
            if (!KEYS.contains(String.valueOf(k))) {
                r.complain("unknown header key \"" + k + "\"");
            }
        }
        Object magic = m.get("magic");
        if (magic != null && !JournalFormat.MAGIC.equals(magic)) {
            throw new IllegalArgumentException("magic is \"" + magic + "\", not \"" + JournalFormat.MAGIC + "\"");
        }
        int version = r.has("format_version") ? r.i32("format_version") : JournalFormat.FORMAT_VERSION;
        String nodeId = r.required("node_id") ? r.str("node_id") : "unknown";
        Role role = Role.CONSUMER;
        boolean proxy = false;
        if (r.required("kv_role")) {
            String kvRole = r.str("kv_role");
            role = switch (kvRole) {
                case "kv_producer" -> Role.PRODUCER;
                case "kv_consumer" -> Role.CONSUMER;
                case "kv_both" -> Role.BOTH;
                case PROXY_ROLE -> {
                    if (strict) {
                        throw new IllegalArgumentException("kv_role must be kv_producer or kv_consumer, found \"proxy\" "
                                + "(a proxy's journal is written by kvledger proxy only, never imported)");
                    }
                    yield Role.CONSUMER;
                }
                default -> throw new IllegalArgumentException(
                        "kv_role must be kv_producer, kv_consumer or kv_both, found \"" + kvRole + "\"");
            };
            proxy = PROXY_ROLE.equals(kvRole);
        }
        TransferMode mode = TransferMode.WRITE;
        if (r.required("transfer_mode")) {
            String tm = r.str("transfer_mode");
            mode = switch (tm) {
                case "READ" -> TransferMode.READ;
                case "WRITE" -> TransferMode.WRITE;
                default -> throw new IllegalArgumentException("transfer_mode must be READ or WRITE, found \"" + tm + "\"");
            };
        }
        NodeConfig defaults = NodeConfig.builder(role, mode).build();
        NodeConfig.Builder b = NodeConfig.builder(role, mode);
        b.hostIp(r.has("host_ip") ? r.str("host_ip") : defaults.hostIp());
        b.handshakePort(r.has("handshake_port") ? PyJson.fromJson(m.get("handshake_port")) : null);
        b.notifyPort(r.has("notify_port") ? PyJson.fromJson(m.get("notify_port")) : null);
        b.dp(r.i32("dp_rank", defaults.dpRank()), r.i32("dp_size", defaults.dpSize()),
                r.i32("dp_size_local", defaults.dpSizeLocal()));
        b.tp(r.i32("tp_rank", defaults.tpRank()), r.i32("tp_size", defaults.tpSize()));
        int blockSize = r.i32("cache_block_size", defaults.cacheBlockSize());
        b.cacheBlockSize(blockSize);
        if (r.has("groups")) {
            List<KvGroupSpec> groups = new ArrayList<>();
            List<?> gl = r.list("groups");
            for (int i = 0; i < gl.size(); i++) {
                if (!(gl.get(i) instanceof Map<?, ?> gm)) {
                    throw new IllegalArgumentException("groups[" + i + "] must be an object");
                }
                Reader g = new Reader(gm, strict, warnings);
                String kind = g.str("kind");
                GroupKind gk;
                try {
                    gk = GroupKind.valueOf(kind);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("groups[" + i + "].kind \"" + kind + "\" is not one of "
                            + java.util.Arrays.toString(GroupKind.values()));
                }
                groups.add(new KvGroupSpec(gk, g.i32("block_size_tokens", blockSize),
                        g.i32("sliding_window_tokens", 0), g.bool("enable_kv_transfer", true),
                        g.i32("mamba_states", gk == GroupKind.MAMBA ? 2 : 0)));
            }
            b.groups(groups);
        }
        if (r.has("layer_names")) {
            List<String> names = new ArrayList<>();
            for (Object o : r.list("layer_names")) {
                if (!(o instanceof String s)) {
                    throw new IllegalArgumentException("layer_names must hold strings");
                }
                names.add(s);
            }
            b.layerNames(names);
        }
        b.hmaEnabled(r.bool("hma_enabled", defaults.hmaEnabled()));
        b.fullCudagraph(r.bool("full_cudagraph", defaults.fullCudagraph()));
        b.lookaheadTokens(r.i32("lookahead_tokens", defaults.lookaheadTokens()));
        b.speculative(r.has("speculative_method") ? r.strOrNull("speculative_method") : null,
                r.i32("speculative_tokens", defaults.speculativeTokens()));
        b.deferTimeoutNs(r.i64("defer_timeout_ns", defaults.deferTimeoutNs()));
        b.transferTimeoutNs(r.i64("transfer_timeout_ns", defaults.transferTimeoutNs()));
        b.recvAbortTimeoutNs(r.i64("recv_abort_timeout_ns", defaults.recvAbortTimeoutNs()));
        b.unmappedAckBounds(r.i64("unmapped_ack_ttl_ns", defaults.unmappedAckTtlNs()),
                r.i32("unmapped_ack_cap", defaults.unmappedAckCap()));
        b.behaviour(behaviour(r, strict, warnings));
        b.awaitsTpVote(r.bool("awaits_tp_vote", false));
        String origin = r.has("origin") ? r.strOrNull("origin") : "";
        return new JournalHeader(version, nodeId, b.build(), origin, proxy, r.strOrNull("vllm_version"),
                r.strOrNull("vllm_commit"), r.strOrNull("inner_connector"));
    }

    /**
     * The header's behaviour: its {@code profile} and {@code switches}; a header without a profile
     * that names its vLLM ({@code vllm_version}, {@code vllm_commit}, {@code inner_connector}, as a
     * vLLM bridge recording does) gets the profile {@link UpstreamVersions} maps that vLLM to, and
     * newest, with a warning, when the table has no row for it; a header naming neither, newest.
     */
    private static Behaviour behaviour(Reader r, boolean strict, List<String> warnings) {
        String profile;
        if (r.has("profile")) {
            profile = r.str("profile");
        } else {
            String version = r.strOrNull("vllm_version");
            String commit = r.strOrNull("vllm_commit");
            String inner = r.strOrNull("inner_connector");
            String fromTable = UpstreamVersions.profileFor(version, commit, inner);
            profile = fromTable != null ? fromTable : "newest";
            if (fromTable == null && (version != null || commit != null) && warnings != null) {
                warnings.add("no behaviour profile for vLLM " + (version == null ? "" : version)
                        + (commit == null ? "" : " (commit " + commit + ")") + (inner == null ? "" : " with " + inner)
                        + " in kvledger's table of upstream versions; newest assumed (pass --profile to choose)");
            }
        }
        String base = profile.endsWith("+custom") ? profile.substring(0, profile.length() - "+custom".length()) : profile;
        Behaviour b = Behaviour.preset(base);
        if (b == null) {
            r.complain("unknown behaviour profile \"" + profile + "\" (known: " + String.join(", ", Behaviour.PRESETS)
                    + "); newest assumed");
            b = Behaviour.newest();
        }
        if (!r.has("switches")) {
            return b;
        }
        EnumSet<Switch> on = EnumSet.noneOf(Switch.class);
        for (Object o : r.list("switches")) {
            Switch s = o instanceof String key ? Switch.byKey(key) : null;
            if (s == null) {
                r.complain("unknown switch " + Json.write(PyJson.toJson(o)) + " ignored");
            } else {
                on.add(s);
            }
        }
        for (Switch s : Switch.values()) {
            if (b.on(s) != on.contains(s)) {
                b = b.with(s, on.contains(s));
            }
        }
        return b;
    }

    /**
     * What differs between this header and {@code other}, key by key (format version and origin
     * are not compared); empty when they describe the same node with the same configuration.
     */
    public List<String> differences(JournalHeader other) {
        Map<String, Object> a = toMap();
        Map<String, Object> b = other.toMap();
        List<String> out = new ArrayList<>();
        for (String k : KEYS) {
            if (NOT_COMPARED.contains(k)) {
                continue;
            }
            String va = Json.write(a.get(k));
            String vb = Json.write(b.get(k));
            if (!va.equals(vb)) {
                out.add(k + ": " + va + " vs " + vb);
            }
        }
        return out;
    }

    static String kvRole(Role r) {
        return r.kvRole();
    }

    /** Typed access to a header map with error messages that name the key. */
    private record Reader(Map<?, ?> m, boolean strict, List<String> warnings) {

        boolean has(String k) {
            return m.containsKey(k) && m.get(k) != null;
        }

        boolean required(String k) {
            if (has(k)) {
                return true;
            }
            if (strict) {
                throw new IllegalArgumentException("the header needs \"" + k + "\"");
            }
            complain("the header has no " + k);
            return false;
        }

        void complain(String msg) {
            if (strict) {
                throw new IllegalArgumentException(msg);
            }
            if (warnings != null) {
                warnings.add(msg);
            }
        }

        String str(String k) {
            Object v = m.get(k);
            if (v instanceof String s) {
                return s;
            }
            throw new IllegalArgumentException(k + " must be a string, found " + Json.write(PyJson.toJson(v)));
        }

        String strOrNull(String k) {
            return m.get(k) == null ? null : str(k);
        }

        long i64(String k, long fallback) {
            if (!has(k)) {
                return fallback;
            }
            Object v = m.get(k);
            if (v instanceof Long || v instanceof Integer) {
                return ((Number) v).longValue();
            }
            throw new IllegalArgumentException(k + " must be an integer, found " + Json.write(PyJson.toJson(v)));
        }

        int i32(String k, int fallback) {
            long v = i64(k, fallback);
            if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(k + " " + v + " does not fit in 32 bits");
            }
            return (int) v;
        }

        int i32(String k) {
            return i32(k, 0);
        }

        boolean bool(String k, boolean fallback) {
            if (!has(k)) {
                return fallback;
            }
            if (m.get(k) instanceof Boolean b) {
                return b;
            }
            throw new IllegalArgumentException(k + " must be true or false");
        }

        List<?> list(String k) {
            if (m.get(k) instanceof List<?> l) {
                return l;
            }
            throw new IllegalArgumentException(k + " must be a list");
        }
    }
}

package io.kvledger.ledger.replay;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Switch;
import io.kvledger.ledger.text.Seconds;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a replay changes in the configuration each journal's header recorded: another behaviour
 * preset ({@code --profile vllm-239b5ff30|seed|newest}), then single switches and configuration values
 * ({@code --set KEY=VALUE}). Without overrides a replay runs with exactly the header's
 * {@link NodeConfig}.
 *
 * <p>Keys of {@code --set}: every {@link Switch#key()} with {@code true}/{@code false} (also
 * {@code on}/{@code off}); {@code defer_timeout}, {@code transfer_timeout},
 * {@code recv_abort_timeout} and {@code unmapped_ack_ttl} in seconds (decimals allowed, as in
 * {@code kv_connector_extra_config}); {@code unmapped_ack_cap} as a count. The preset applies
 * first, the switches on top of it, whatever their order on the command line. Immutable.
 */
public final class ConfigOverrides {

    /** The configuration values {@code --set} accepts besides switches, with what they mean. */
    static final Map<String, String> VALUE_KEYS = valueKeys();

    private static final ConfigOverrides NONE = new ConfigOverrides(null, new LinkedHashMap<>(), new LinkedHashMap<>());

    private final String profile;
    private final LinkedHashMap<Switch, Boolean> switches;
    private final LinkedHashMap<String, Number> values;

    private ConfigOverrides(String profile, LinkedHashMap<Switch, Boolean> switches, LinkedHashMap<String, Number> values) {
        this.profile = profile;
        this.switches = switches;
        this.values = values;
    }

    private static Map<String, String> valueKeys() {
        LinkedHashMap<String, String> m = new LinkedHashMap<>();
        m.put("defer_timeout", "seconds");
        m.put("transfer_timeout", "seconds");
        m.put("recv_abort_timeout", "seconds");
        m.put("unmapped_ack_ttl", "seconds");
        m.put("unmapped_ack_cap", "count");
        return java.util.Collections.unmodifiableMap(m);
    }

    /** Replays with the journals' own configurations. */
    public static ConfigOverrides none() {
        return NONE;
    }

    /**
     * Reads {@code --profile} and {@code --set} values.
     *
     * @param profile a preset name ({@link Behaviour#PRESETS}), or {@code null} to keep each journal's
     * @param sets    {@code KEY=VALUE} strings; a key given twice keeps the last value
     * @throws IllegalArgumentException naming the bad profile, key or value, with the valid ones
     */
    public static ConfigOverrides parse(String profile, List<String> sets) {
        if (profile != null && Behaviour.preset(profile) == null) {
            throw new IllegalArgumentException("unknown profile '" + profile + "': use one of " + String.join(", ", Behaviour.PRESETS));
        }
        LinkedHashMap<Switch, Boolean> sw = new LinkedHashMap<>();
        LinkedHashMap<String, Number> vals = new LinkedHashMap<>();
        for (String set : sets == null ? List.<String>of() : sets) {
            int eq = set.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("--set takes KEY=VALUE, got '" + set + "'. " + validKeys());
            }
            String key = set.substring(0, eq).strip();
            String value = set.substring(eq + 1).strip();
            Switch s = Switch.byKey(key);
            if (s != null) {
                sw.remove(s);
                sw.put(s, bool(key, value));
            } else if (VALUE_KEYS.containsKey(key)) {
                vals.remove(key);
                vals.put(key, number(key, value));
            } else {
                throw new IllegalArgumentException("unknown --set key '" + key + "'. " + validKeys());
            }
        }
        if (profile == null && sw.isEmpty() && vals.isEmpty()) {
            return NONE;
        }
        return new ConfigOverrides(profile, sw, vals);
    }

    private static boolean bool(String key, String v) {
        return switch (v.toLowerCase(Locale.ROOT)) {
            case "true", "on", "1", "yes" -> true;
            case "false", "off", "0", "no" -> false;
            default -> throw new IllegalArgumentException("switch " + key + " takes true or false, got '" + v + "'");
        };
    }

    private static Number number(String key, String v) {
        if (key.equals("unmapped_ack_cap")) {
            try {
                int n = Integer.parseInt(v);
                if (n < 0) {
                    throw new NumberFormatException();
                }
                return n;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(key + " takes a non-negative whole number, got '" + v + "'");
            }
        }
        double d;
        try {
            d = Double.parseDouble(v);
        } catch (NumberFormatException e) {
            d = Double.NaN;
        }
        if (!(d > 0) || Double.isInfinite(d) || d > 1e9) {
            throw new IllegalArgumentException(key + " takes a positive number of seconds, got '" + v + "'");
        }
        return d;
    }

    /** One sentence listing every key {@code --set} accepts. */
    static String validKeys() {
        List<String> sw = new ArrayList<>();
        for (Switch s : Switch.values()) {
            sw.add(s.key());
        }
        List<String> vals = new ArrayList<>();
        VALUE_KEYS.forEach((k, unit) -> vals.add(k + " (" + unit + ")"));
        return "Valid keys: " + String.join(", ", vals) + "; switches (true/false): " + String.join(", ", sw) + ".";
    }

    public boolean isEmpty() {
        return this == NONE;
    }

    /** The preset given with {@code --profile}, or {@code null}. */
    public String profile() {
        return profile;
    }

    /** The configuration a journal's node replays with. */
    public NodeConfig apply(NodeConfig recorded) {
        if (isEmpty()) {
            return recorded;
        }
        Behaviour b = profile == null ? recorded.behaviour() : Behaviour.preset(profile);
        for (Map.Entry<Switch, Boolean> e : switches.entrySet()) {
            b = b.with(e.getKey(), e.getValue());
        }
        NodeConfig.Builder c = recorded.toBuilder().behaviour(b);
        for (Map.Entry<String, Number> e : values.entrySet()) {
            switch (e.getKey()) {
                case "defer_timeout" -> c.deferTimeoutNs(NodeConfig.seconds(e.getValue().doubleValue()));
                case "transfer_timeout" -> c.transferTimeoutNs(NodeConfig.seconds(e.getValue().doubleValue()));
                case "recv_abort_timeout" -> c.recvAbortTimeoutNs(NodeConfig.seconds(e.getValue().doubleValue()));
                case "unmapped_ack_ttl" -> c.unmappedAckBounds(NodeConfig.seconds(e.getValue().doubleValue()),
                        recorded.unmappedAckCap());
                case "unmapped_ack_cap" -> c.unmappedAckBounds(ttl(recorded), e.getValue().intValue());
                default -> throw new AssertionError(e.getKey());
            }
        }
        return c.build();
    }

    private long ttl(NodeConfig recorded) {
        Number ttl = values.get("unmapped_ack_ttl");
        return ttl == null ? recorded.unmappedAckTtlNs() : NodeConfig.seconds(ttl.doubleValue());
    }

    /**
     * What a node replays with, in one line: the profile (and the journal's, when it differs), the
     * switches that differ from the profile's preset, and the timeouts, each marked when it differs
     * from what the journal recorded. Deterministic. Example: {@code profile seed+custom (journal:
     * newest), switches map-first-owner-wins=true, defer_timeout 300 s (journal: 60 s),
     * transfer_timeout 30 s, recv_abort_timeout 120 s}.
     */
    public static String describe(NodeConfig recorded, NodeConfig effective) {
        List<String> parts = new ArrayList<>();
        String p = effective.behaviour().profile();
        String rp = recorded.behaviour().profile();
        boolean sameSwitches = effective.behaviour().equals(recorded.behaviour());
        parts.add("profile " + p + (p.equals(rp) && sameSwitches ? "" : " (journal: " + rp + ")"));
        List<String> custom = customSwitches(effective.behaviour());
        if (!custom.isEmpty()) {
            parts.add("switches " + String.join(", ", custom));
        }
        parts.add(value("defer_timeout", recorded.deferTimeoutNs(), effective.deferTimeoutNs()));
        parts.add(value("transfer_timeout", recorded.transferTimeoutNs(), effective.transferTimeoutNs()));
        parts.add(value("recv_abort_timeout", recorded.recvAbortTimeoutNs(), effective.recvAbortTimeoutNs()));
        if (recorded.unmappedAckTtlNs() != effective.unmappedAckTtlNs()) {
            parts.add(value("unmapped_ack_ttl", recorded.unmappedAckTtlNs(), effective.unmappedAckTtlNs()));
        }
        if (recorded.unmappedAckCap() != effective.unmappedAckCap()) {
            parts.add("unmapped_ack_cap " + effective.unmappedAckCap() + " (journal: " + recorded.unmappedAckCap() + ")");
        }
        return String.join(", ", parts);
    }

    /** The switches of {@code b} that differ from its preset ("key=true"), in switch order. */
    static List<String> customSwitches(Behaviour b) {
        String name = b.profile();
        String base = name.endsWith("+custom") ? name.substring(0, name.length() - "+custom".length()) : name;
        Behaviour preset = Behaviour.preset(base);
        List<String> out = new ArrayList<>();
        if (preset == null) {
            return out;
        }
        for (Switch s : Switch.values()) {
            if (b.on(s) != preset.on(s)) {
                out.add(s.key() + "=" + b.on(s));
            }
        }
        return out;
    }

    private static String value(String key, long recordedNs, long effectiveNs) {
        return key + " " + Seconds.exact(effectiveNs, 0) + (recordedNs == effectiveNs ? "" : " (journal: " + Seconds.exact(recordedNs, 0) + ")");
    }


}

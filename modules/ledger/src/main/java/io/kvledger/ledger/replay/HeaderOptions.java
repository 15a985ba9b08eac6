package io.kvledger.ledger.replay;

import io.kvledger.core.config.Behaviour;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.json.Json;
import io.kvledger.journal.json.JsonException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The header fields {@code journal import}'s options replace in a JSON-lines file's header, or
 * the header they make for a file that has none ({@code node}, {@code role} and {@code mode} are
 * then required). Each field is null when its option was not given.
 *
 * @param dp   {@code RANK/SIZE[/LOCAL]}
 * @param tp   {@code RANK/SIZE}
 * @param sets {@code KEY=VALUE}, VALUE as JSON or a bare string (null or empty: none)
 */
public record HeaderOptions(String node, String role, String mode, String host, String dp, String tp, String profile,
                            List<String> sets, String origin) {

    /** Whether any option was given. */
    public boolean any() {
        return node != null || role != null || mode != null || host != null || dp != null || tp != null || profile != null
                || (sets != null && !sets.isEmpty()) || origin != null;
    }

    /**
     * The header the options describe for {@code file}, or null to take the file's as it is.
     *
     * @throws JournalImport.Refused naming the option that is wrong
     */
    public JournalHeader header(Path file) {
        if (!any()) {
            return null;
        }
        JournalHeader base = fileHeader(file);
        Map<String, Object> m;
        if (base != null) {
            m = base.toMap();
            m.remove("magic");
        } else {
            if (node == null || role == null || mode == null) {
                throw refused(file + " has no header line: give at least --node, --role and --mode");
            }
            m = new LinkedHashMap<>();
        }
        if (node != null) {
            if (node.isBlank()) {
                throw refused("--node must not be empty");
            }
            m.put("node_id", node);
        }
        if (role != null) {
            m.put("kv_role", switch (role.toLowerCase(Locale.ROOT)) {
                case "prefill", "producer", "kv_producer" -> "kv_producer";
                case "decode", "consumer", "kv_consumer" -> "kv_consumer";
                case "both", "kv_both" -> "kv_both";
                default -> throw refused("--role must be prefill (kv_producer), decode (kv_consumer) or kv_both, got '" + role + "'");
            });
        }
        if (mode != null) {
            String mm = mode.toUpperCase(Locale.ROOT);
            if (!mm.equals("READ") && !mm.equals("WRITE")) {
                throw refused("--mode must be read or write, got '" + mode + "'");
            }
            m.put("transfer_mode", mm);
        }
        if (host != null) {
            m.put("host_ip", host);
        }
        if (dp != null) {
            long[] v = ranks("--dp", dp, 2, 3);
            m.put("dp_rank", v[0]);
            m.put("dp_size", v[1]);
            m.put("dp_size_local", v.length > 2 ? v[2] : v[1]);
        }
        if (tp != null) {
            long[] v = ranks("--tp", tp, 2, 2);
            m.put("tp_rank", v[0]);
            m.put("tp_size", v[1]);
        }
        if (profile != null) {
            if (Behaviour.preset(profile) == null) {
                throw refused("--profile must be one of " + String.join(", ", Behaviour.PRESETS) + ", got '" + profile + "'");
            }
            m.put("profile", profile);
            m.remove("switches"); // the preset's switches
        }
        if (sets != null) {
            for (String s : sets) {
                int eq = s.indexOf('=');
                if (eq <= 0) {
                    throw refused("--set takes KEY=VALUE, got '" + s + "'");
                }
                String key = s.substring(0, eq).strip();
                String text = s.substring(eq + 1);
                Object value;
                try {
                    value = Json.parse(text);
                } catch (JsonException e) {
                    value = text; // a bare string
                }
                m.put(key, value);
            }
        }
        m.put("origin", origin != null ? origin : base != null && !base.origin().isEmpty() ? base.origin()
                : "import " + file.getFileName());
        try {
            return JournalHeader.fromMap(m, true, null);
        } catch (IllegalArgumentException e) {
            throw refused("bad header option: " + e.getMessage());
        }
    }

    private static long[] ranks(String option, String text, int min, int max) {
        String[] parts = text.split("/");
        if (parts.length < min || parts.length > max) {
            throw refused(option + " takes " + (max == 2 ? "RANK/SIZE" : "RANK/SIZE[/LOCAL]") + ", got '" + text + "'");
        }
        long[] v = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            try {
                v[i] = Long.parseLong(parts[i].strip());
            } catch (NumberFormatException e) {
                throw refused(option + ": '" + parts[i] + "' is not a number");
            }
            if (v[i] < 0) {
                throw refused(option + ": " + v[i] + " is negative");
            }
        }
        if (v[0] >= v[1]) {
            throw refused(option + ": rank " + v[0] + " is not below size " + v[1]);
        }
        return v;
    }

    /** The file's header line, or null when its first non-blank line is not a valid header. */
    private static JournalHeader fileHeader(Path file) {
        try (JsonLines.LineReader r = new JsonLines.LineReader(file)) {
            String line;
            while ((line = r.next()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                try {
                    JsonLines.Line l = JsonLines.parseLine(line);
                    return l.kind() == EntryKind.HEADER ? (JournalHeader) l.record() : null;
                } catch (RuntimeException e) {
                    return null; // the import reports the bad line with its number
                }
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }

    private static JournalImport.Refused refused(String message) {
        return new JournalImport.Refused(message);
    }
}

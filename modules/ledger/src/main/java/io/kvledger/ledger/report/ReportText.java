package io.kvledger.ledger.report;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.text.Seconds;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Text the journal reports share: abbreviated request ids, relative times, node lines, aligned
 * columns, the list of replayed nodes. Everything here is a pure function of its arguments, so
 * report output is deterministic.
 */
public final class ReportText {

    private ReportText() {}

    /** The embedded addresses of a proxy request id, up to the underscore before its uuid hex. */
    private static final Pattern PROXY_ADDRESSES =
            Pattern.compile("___prefill_addr_\\S*?___decode_addr_\\S*?_(?=[0-9a-f]{32}(?![0-9a-f]))");

    /** The 32-hex uuid of a proxy request id. */
    private static final Pattern PROXY_UUID =
            Pattern.compile("___decode_addr_\\S*?_([0-9a-f]{32})(?![0-9a-f])");

    /**
     * {@code text} with every proxy request id shortened to {@code cmpl-..._<uuid hex>-...}, or
     * unchanged when {@code full}.
     */
    static String ids(String text, boolean full) {
        if (full || text == null || text.indexOf("___prefill_addr_") < 0) {
            return text;
        }
        return PROXY_ADDRESSES.matcher(text).replaceAll("..._");
    }

    /** The uuid hex of a proxy request id, or {@code null} when the id has none. */
    public static String uuidOf(String requestId) {
        if (requestId == null) {
            return null;
        }
        Matcher m = PROXY_UUID.matcher(requestId);
        return m.find() ? m.group(1) : null;
    }

    /** A time relative to the start of a journal set: {@code t+12.345678 s} ({@link Seconds#offset}). */
    static String rel(long ns) {
        return Seconds.offset(ns);
    }

    /** A journal time as absolute seconds with nine decimals ("12.000000042"), as {@code dump --absolute} prints it. */
    static String time(long atNs) {
        long s = Math.floorDiv(atNs, 1_000_000_000L);
        long ns = Math.floorMod(atNs, 1_000_000_000L);
        return String.format(Locale.ROOT, "%d.%09d", s, ns);
    }

    /** Nanoseconds as a JSON-friendly double of seconds. */
    static double secondsDouble(long ns) {
        return ns / 1e9; // a JSON number, not text
    }

    /** "kv_producer WRITE 10.0.0.1 dp0/1 tp0/1". */
    static String node(NodeConfig c) {
        return c.role().kvRole() + " " + c.mode() + " " + c.hostIp()
                + " dp" + c.dpRank() + "/" + c.dpSize() + " tp" + c.tpRank() + "/" + c.tpSize();
    }

    /**
     * Rows of cells as aligned lines: two spaces of indent, two between columns, the first column
     * left-aligned, the others right-aligned when {@code rightAfterFirst} (left-aligned otherwise),
     * trailing blanks stripped. Every row has as many cells as the first.
     */
    public static List<String> columns(List<String[]> rows, boolean rightAfterFirst) {
        int cols = rows.get(0).length;
        int[] width = new int[cols];
        for (String[] row : rows) {
            for (int i = 0; i < cols; i++) {
                width[i] = Math.max(width[i], row[i].length());
            }
        }
        List<String> lines = new ArrayList<>(rows.size());
        for (String[] row : rows) {
            StringBuilder b = new StringBuilder("  ");
            for (int i = 0; i < cols; i++) {
                String pad = " ".repeat(width[i] - row[i].length());
                if (i > 0) {
                    b.append("  ");
                }
                if (rightAfterFirst && i > 0) {
                    b.append(pad).append(row[i]);
                } else {
                    b.append(row[i]).append(pad);
                }
            }
            lines.add(b.toString().stripTrailing());
        }
        return lines;
    }

    /** "P0, D0": the replayed nodes, each with its journal's name when that differs. */
    public static String names(List<Replayer.Node> nodes) {
        StringBuilder b = new StringBuilder();
        for (Replayer.Node n : nodes) {
            b.append(b.isEmpty() ? "" : ", ").append(n.name());
            if (!n.name().equals(n.journal().name())) {
                b.append(" (").append(n.journal().name()).append(')');
            }
        }
        return b.toString();
    }
}

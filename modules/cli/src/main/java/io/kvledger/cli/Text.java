package io.kvledger.cli;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.ledger.text.Seconds;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Text shared by the journal commands: abbreviated request ids, relative times, node lines and
 * the titles of the bug classes of moriio-protocol.md section 7. Everything here is a pure
 * function of its arguments, so command output is deterministic.
 */
final class Text {

    private Text() {}

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
    static String uuidOf(String requestId) {
        if (requestId == null) {
            return null;
        }
        Matcher m = PROXY_UUID.matcher(requestId);
        return m.find() ? m.group(1) : null;
    }

    /** A time relative to the start of a journal set: {@code t+12.345678} (seconds, 6 decimals). */
    static String rel(long ns) {
        return "t+" + Seconds.cutValue(ns, 6);
    }

    /** Nanoseconds as milliseconds with 3 decimals. */
    static String millis3(long ns) {
        long a = Math.abs(ns);
        return (ns < 0 ? "-" : "") + (a / 1_000_000L) + "." + String.format(Locale.ROOT, "%03d", (a % 1_000_000L) / 1_000L);
    }

    /** Nanoseconds as a JSON-friendly double of seconds. */
    static double secondsDouble(long ns) {
        return ns / 1e9;
    }

    /** "kv_producer WRITE 10.0.0.1 dp0/1 tp0/1". */
    static String node(NodeConfig c) {
        return c.role().kvRole() + " " + c.mode() + " " + c.hostIp()
                + " dp" + c.dpRank() + "/" + c.dpSize() + " tp" + c.tpRank() + "/" + c.tpSize();
    }

    /** The title of bug class {@code n} of moriio-protocol.md section 7, or "" when unknown. */
    static String bugClass(int n) {
        return BUG_CLASSES.getOrDefault(n, "");
    }

    private static final Map<Integer, String> BUG_CLASSES = Map.ofEntries(
            Map.entry(1, "completion id mismatch (scheduler assertion)"),
            Map.entry(2, "failed RDMA statuses ignored"),
            Map.entry(3, "last-status-only completion"),
            Map.entry(4, "busy-spin without deadline"),
            Map.entry(5, "transfer wait aborts on the first error"),
            Map.entry(6, "WRITE completion race / sealing"),
            Map.entry(7, "KV block leak when an ACK is lost (reaping)"),
            Map.entry(8, "reaping is a use-after-free"),
            Map.entry(9, "RDMA notification poisoning"),
            Map.entry(10, "READ treated as async"),
            Map.entry(11, "early ACK before request_finished"),
            Map.entry(12, "ACK before the worker mapping exists"),
            Map.entry(13, "unmap miss after request-id mutation"),
            Map.entry(14, "kv_transfer_params mutated or cleared between alloc and meta build"),
            Map.entry(15, "backend block-size override assertion"),
            Map.entry(16, "missing MoRIIO-specific keys from external coordinators"),
            Map.entry(17, "engine_id collision in multi-node DP"),
            Map.entry(18, "wide-EP multi-pod routing"),
            Map.entry(19, "non-disagg request in WRITE pending-save"),
            Map.entry(20, "hard-coded DP0 read target"),
            Map.entry(21, "lazy handshake divergence (NCCL hang)"),
            Map.entry(22, "heterogeneous TP"),
            Map.entry(23, "port-offset inconsistency with DP > 1 and TP > 1"),
            Map.entry(24, "transient RDMA SQ-full treated as failure"),
            Map.entry(25, "forward consumed unfinished READs"),
            Map.entry(26, "lost RDMA completion hangs the decode worker"),
            Map.entry(27, "WRITE requests stranded in WAITING_FOR_REMOTE_KVS"),
            Map.entry(28, "empty remote_blocks rejected; listener thread death"),
            Map.entry(29, "n > 1 / best_of_n siblings share a transfer_id"),
            Map.entry(30, "toy-proxy DP aliasing and burst resets"),
            Map.entry(31, "vllm-router breaks READ ordering"),
            Map.entry(32, "WRITE multi-pod host race"),
            Map.entry(33, "READ-mode WideEP partial completions"),
            Map.entry(34, "hybrid (mamba/KDA) failures fail closed"),
            Map.entry(35, "mapping and reqs_to_send leaks on the producer"),
            Map.entry(36, "kv_role asymmetry"),
            Map.entry(37, "READ eager handshake is not pod-aware"));

    /**
     * Rows of cells as aligned lines: two spaces of indent, two between columns, the first column
     * left-aligned, the others right-aligned when {@code rightAfterFirst} (left-aligned otherwise),
     * trailing blanks stripped. Every row has as many cells as the first.
     */
    static List<String> columns(List<String[]> rows, boolean rightAfterFirst) {
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
}

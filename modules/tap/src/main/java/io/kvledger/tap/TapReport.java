package io.kvledger.tap;

import io.kvledger.core.config.Role;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.text.Seconds;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The cross-node view of a tap's journals alone (no engine journal): for every transfer id seen
 * on the notify path, which of its frames crossed to which rank, and which expected frame never
 * did.
 *
 * <p>What is expected, from the frames that did cross (protocol spec 3.3 and 5):
 * <ul>
 *   <li>WRITE (a transfer with a {@code remote_blocks} or a {@code write_done}): every prefill rank
 *       the decode scheduler reaches for other transfers of the same {@code decode_rank} gets a
 *       {@code remote_blocks} (it loops over its TP ranks); every prefill rank told where to write
 *       sends one {@code write_done}, to the decode rank where the {@code write_done}s of that
 *       {@code decode_rank} land. A {@code release} instead means the decode side aborted before
 *       allocating: no {@code write_done} is then expected.</li>
 *   <li>READ (only {@code release}s): each of the {@code consumer_tp_size} decode TP ranks sends
 *       one {@code release}.</li>
 *   <li>A raw completion id counts as a {@code release} at a prefill rank and as a
 *       {@code write_done} at a decode rank, as the Python listeners treat it.</li>
 * </ul>
 * A transfer none of whose frames crossed is not seen at all. A frame still missing when the
 * journals end may also be late rather than lost: each line says how long before the last tapped
 * frame the transfer's last frame crossed.
 *
 * <p>Ranks are named by role and tapped notify port, with the port offset from the lowest port
 * tapped for that role on that host ({@code P+1 10.0.0.1:61006}: with the two-argument port form,
 * {@code dp_local + tp_rank} when the lowest tapped port is the rank-0 port).
 *
 * <p>Pure over the entries it is given: {@link #of} does no I/O; {@link #read} opens the journals.
 */
public final class TapReport {

    /** A tapped rank: a target's journal. */
    record Rank(Role role, String host, int port, int offset) {
        String label() {
            return (role == Role.PRODUCER ? "P" : "D") + "+" + offset + " " + (host.indexOf(':') >= 0 ? "[" + host + "]" : host)
                    + ":" + port;
        }
    }

    /** One target's journal: who it was, and its input entries in order. */
    record TapJournal(Role role, String host, int port, List<NodeEvent> events) {
        public TapJournal {
            events = List.copyOf(events);
        }
    }

    /** One frame that crossed. */
    record Crossing(Rank to, long atNs, String type, Integer decodeRank, Integer consumerTpSize, boolean emptyBlocks,
                           boolean raw) {}

    /** A frame the tap forwarded although it did not decode. */
    record Rejected(Rank to, long atNs, String reason, boolean wouldKillPythonListener, int framesAfter) {}

    /** A frame the tap could not forward. */
    record ForwardFailed(Rank to, long atNs, String type, String transferId, String reason) {}

    /** What crossed for one transfer, and what did not. */
    record Transfer(String transferId, String mode, List<Crossing> crossed, List<String> missing, long lastNs) {
        boolean complete() {
            return missing.isEmpty();
        }
    }

    private final List<Rank> ranks;
    private final List<Transfer> transfers;
    private final List<Rejected> rejected;
    private final List<ForwardFailed> forwardFailed;
    private final long frames;
    private final long firstNs;
    private final long lastNs;

    private TapReport(List<Rank> ranks, List<Transfer> transfers, List<Rejected> rejected, List<ForwardFailed> forwardFailed,
                      long frames, long firstNs, long lastNs) {
        this.ranks = ranks;
        this.transfers = transfers;
        this.rejected = rejected;
        this.forwardFailed = forwardFailed;
        this.frames = frames;
        this.firstNs = firstNs;
        this.lastNs = lastNs;
    }

    /** Reads the tap journals (as {@code kvledger tap --journal DIR} writes them) and builds the view. */
    public static TapReport read(List<NodeJournal> journals) {
        List<TapJournal> in = new ArrayList<>();
        for (NodeJournal j : journals) {
            try (JournalReader r = j.open()) {
                List<NodeEvent> events = new ArrayList<>();
                for (JournalEntry e : r) {
                    if (e instanceof JournalEntry.Input i) {
                        events.add(i.event());
                    }
                }
                in.add(new TapJournal(r.header().role(), r.header().config().hostIp(), r.header().config().notifyPortBase(),
                        events));
            }
        }
        return of(in);
    }

    /** Builds the view from the journals' contents. */
    static TapReport of(List<TapJournal> given) {
        // prefill ranks first, then decode ranks, each by host and port
        List<TapJournal> journals = given.stream().sorted(Comparator.comparing((TapJournal j) -> j.role() == Role.PRODUCER ? 0 : 1)
                .thenComparing(TapJournal::host).thenComparingInt(TapJournal::port)).toList();
        List<Rank> ranks = new ArrayList<>();
        for (TapJournal j : journals) {
            int lowest = journals.stream().filter(o -> o.role() == j.role() && o.host().equals(j.host()))
                    .mapToInt(TapJournal::port).min().orElse(j.port());
            ranks.add(new Rank(j.role(), j.host(), j.port(), j.port() - lowest));
        }
        Map<String, List<Crossing>> byTid = new TreeMap<>();
        List<Rejected> rejected = new ArrayList<>();
        List<ForwardFailed> failed = new ArrayList<>();
        long frames = 0;
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;
        for (int i = 0; i < journals.size(); i++) {
            Rank rank = ranks.get(i);
            List<NodeEvent> events = journals.get(i).events();
            for (int k = 0; k < events.size(); k++) {
                NodeEvent e = events.get(k);
                if (!(e instanceof NodeEvent.NotifySendFailed)) {
                    frames++;
                    first = Math.min(first, e.atNs());
                    last = Math.max(last, e.atNs());
                }
                boolean atP = rank.role() == Role.PRODUCER;
                switch (e) {
                    case NodeEvent.RemoteBlocksReceived rb -> add(byTid, rb.transferId(), new Crossing(rank, rb.atNs(),
                            "remote_blocks", rb.decodeRank(), null, rb.blockNotifyList().isEmpty(), false));
                    case NodeEvent.WriteDoneReceived wd -> add(byTid, wd.transferId(), new Crossing(rank, wd.atNs(),
                            "write_done", null, null, false, false));
                    case NodeEvent.ReleaseReceived r -> add(byTid, r.transferId(), new Crossing(rank, r.atNs(), "release",
                            null, r.consumerTpSize(), false, false));
                    case NodeEvent.RawCompletionReceived c -> add(byTid, c.completionId(), new Crossing(rank, c.atNs(),
                            atP ? "release" : "write_done", null, atP ? 1 : null, false, true));
                    case NodeEvent.FrameRejected fr -> {
                        int after = 0;
                        for (int m = k + 1; m < events.size(); m++) {
                            if (!(events.get(m) instanceof NodeEvent.NotifySendFailed)) {
                                after++;
                            }
                        }
                        rejected.add(new Rejected(rank, fr.atNs(), fr.reason(), fr.wouldKillPythonListener(), after));
                    }
                    case NodeEvent.NotifySendFailed f -> failed.add(new ForwardFailed(rank, f.atNs(), f.messageType(),
                            f.transferId(), f.reason()));
                    case NodeEvent.RequestAdmitted _, NodeEvent.MatchedTokensQueried _, NodeEvent.BlocksAllocated _,
                            NodeEvent.StepScheduled _, NodeEvent.RequestFinished _, NodeEvent.ConnectorOutputReceived _,
                            NodeEvent.LoadStarted _, NodeEvent.LayerSaved _, NodeEvent.SaveWaited _, NodeEvent.FinishedPolled _,
                            NodeEvent.HandshakeCompleted _, NodeEvent.HandshakeFailed _, NodeEvent.HandshakeVoted _, NodeEvent.TransferCompleted _,
                            NodeEvent.Tick _, NodeEvent.ShutDown _, NodeEvent.KvCachesRegistered _, NodeEvent.ForwardDone _ -> { }
                }
            }
        }
        // what each decode rank's transfers usually reach: the largest set of prefill ranks its
        // remote_blocks went to, and the decode ranks its write_dones landed on
        Map<Integer, Set<Rank>> rbReach = new TreeMap<>();
        Map<Integer, Set<Rank>> wdLands = new TreeMap<>();
        for (List<Crossing> cs : byTid.values()) {
            Integer d = decodeRank(cs);
            if (d == null) {
                continue;
            }
            Set<Rank> reached = ranksOf(cs, "remote_blocks");
            rbReach.merge(d, reached, (a, b) -> b.size() > a.size() ? b : a);
            wdLands.computeIfAbsent(d, x -> new LinkedHashSet<>()).addAll(ranksOf(cs, "write_done"));
        }
        List<Transfer> transfers = new ArrayList<>();
        for (Map.Entry<String, List<Crossing>> en : byTid.entrySet()) {
            List<Crossing> cs = en.getValue();
            cs.sort(Comparator.comparingLong(Crossing::atNs));
            transfers.add(judge(en.getKey(), cs, rbReach, wdLands));
        }
        return new TapReport(List.copyOf(ranks), List.copyOf(transfers), List.copyOf(rejected), List.copyOf(failed), frames,
                frames == 0 ? 0 : first, frames == 0 ? 0 : last);
    }

    private static void add(Map<String, List<Crossing>> byTid, String tid, Crossing c) {
        byTid.computeIfAbsent(tid, x -> new ArrayList<>()).add(c);
    }

    private static Integer decodeRank(List<Crossing> cs) {
        for (Crossing c : cs) {
            if (c.decodeRank() != null) {
                return c.decodeRank();
            }
        }
        return null;
    }

    private static Set<Rank> ranksOf(List<Crossing> cs, String type) {
        Set<Rank> out = new LinkedHashSet<>();
        for (Crossing c : cs) {
            if (c.type().equals(type)) {
                out.add(c.to());
            }
        }
        return out;
    }

    private static long count(List<Crossing> cs, String type) {
        return cs.stream().filter(c -> c.type().equals(type)).count();
    }

    private static Transfer judge(String tid, List<Crossing> cs, Map<Integer, Set<Rank>> rbReach,
                                  Map<Integer, Set<Rank>> wdLands) {
        long last = cs.getLast().atNs();
        List<String> missing = new ArrayList<>();
        long rb = count(cs, "remote_blocks");
        long wd = count(cs, "write_done");
        long rel = count(cs, "release");
        Integer d = decodeRank(cs);
        if (rb > 0 || wd > 0) {
            Set<Rank> told = ranksOf(cs, "remote_blocks");
            if (rb == 0) {
                missing.add("remote_blocks never crossed to any tapped prefill rank (yet write_done did: D's notify went "
                        + "to a port the tap does not cover)");
            } else {
                Set<Rank> usual = new LinkedHashSet<>(rbReach.getOrDefault(d, Set.of()));
                usual.removeAll(told);
                if (!usual.isEmpty()) {
                    missing.add("remote_blocks never crossed to " + labels(usual) + " (decode_rank " + d
                            + "'s other transfers reach it)");
                }
            }
            for (Crossing c : cs) {
                if (c.type().equals("remote_blocks") && c.emptyBlocks()) {
                    missing.add("remote_blocks to " + c.to().label() + " had an empty block_notify_list: the Python prefill "
                            + "handler raises on it, and that rank's notify listener dies");
                }
            }
            if (rel == 0) {
                long expected = Math.max(told.size(), 1);
                if (wd < expected) {
                    Set<Rank> where = wdLands.getOrDefault(d, Set.of());
                    missing.add((expected - wd) + " write_done never crossed"
                            + (where.isEmpty() ? (d == null ? "" : " to decode_rank " + d)
                                    : " to " + labels(where) + (d == null ? "" : " (decode_rank " + d + ")"))
                            + ": " + wd + " of " + expected + " from the prefill rank(s) told where to write ("
                            + (told.isEmpty() ? "none seen" : labels(told)) + ")");
                }
            }
            return new Transfer(tid, "WRITE", List.copyOf(cs), List.copyOf(missing), last);
        }
        int expected = 1;
        for (Crossing c : cs) {
            if (c.consumerTpSize() != null) {
                expected = Math.max(expected, c.consumerTpSize());
            }
        }
        if (rel < expected) {
            missing.add((expected - rel) + " release never crossed: " + rel + " of consumer_tp_size " + expected
                    + " (to " + labels(ranksOf(cs, "release")) + " so far)");
        }
        return new Transfer(tid, "READ", List.copyOf(cs), List.copyOf(missing), last);
    }

    private static String labels(Set<Rank> ranks) {
        return String.join(", ", ranks.stream().map(Rank::label).toList());
    }

    List<Rank> ranks() {
        return ranks;
    }

    List<Transfer> transfers() {
        return transfers;
    }

    List<Rejected> rejected() {
        return rejected;
    }

    List<ForwardFailed> forwardFailed() {
        return forwardFailed;
    }

    /** Whether something expected never crossed, or a frame could not be forwarded or would kill a listener. */
    public boolean hasFindings() {
        return transfers.stream().anyMatch(t -> !t.complete()) || !forwardFailed.isEmpty()
                || rejected.stream().anyMatch(Rejected::wouldKillPythonListener);
    }

    /**
     * The report: a summary line, one line per transfer with something missing ({@code all}: per
     * transfer), the rejected frames and the frames that could not be forwarded.
     */
    public List<String> render(boolean all) {
        List<String> out = new ArrayList<>();
        long incomplete = transfers.stream().filter(t -> !t.complete()).count();
        out.add("tap-report: " + ranks.size() + " rank(s) tapped (" + String.join(", ", ranks.stream().map(Rank::label).toList())
                + "); " + frames + " frame(s) over " + Seconds.duration(lastNs - firstNs) + "; " + transfers.size() + " transfer(s), "
                + incomplete + " with a frame that never crossed; " + rejected.size() + " rejected frame(s); "
                + forwardFailed.size() + " not forwarded");
        for (Transfer t : transfers) {
            if (!all && t.complete()) {
                continue;
            }
            StringBuilder b = new StringBuilder();
            b.append(t.transferId()).append(' ').append(t.mode()).append(": ");
            List<String> crossed = new ArrayList<>();
            for (Crossing c : t.crossed()) {
                crossed.add(c.type() + (c.raw() ? " (raw id)" : "") + " -> " + c.to().label() + " at " + at(c.atNs())
                        + (c.decodeRank() != null ? " (decode_rank " + c.decodeRank() + ")" : "")
                        + (c.consumerTpSize() != null && !c.raw() ? " (consumer_tp_size " + c.consumerTpSize() + ")" : ""));
            }
            b.append("crossed ").append(String.join("; ", crossed));
            if (t.complete()) {
                b.append("; complete");
            } else {
                b.append("; MISSING: ").append(String.join("; ", t.missing()))
                        .append("; last frame ").append(Seconds.duration(lastNs - t.lastNs())).append(" before the end of the journals");
            }
            out.add(b.toString());
        }
        for (Rejected r : rejected) {
            out.add("rejected frame -> " + r.to().label() + " at " + at(r.atNs()) + ": " + r.reason()
                    + (r.wouldKillPythonListener() ? "; it would kill the Python notify listener of that rank, so the "
                            + r.framesAfter() + " frame(s) forwarded to it afterwards were not processed there" : "")
                    + " (forwarded unchanged)");
        }
        for (ForwardFailed f : forwardFailed) {
            out.add("not forwarded -> " + f.to().label() + " at " + at(f.atNs()) + ": " + f.type()
                    + (f.transferId() == null ? "" : " " + f.transferId()) + ": " + f.reason());
        }
        return out;
    }

    private String at(long ns) {
        return Seconds.offset(ns - firstNs);
    }


    /** The notify type of a journaled frame event, as reports and forward failures name it. */
    static String messageType(NodeEvent e) {
        return switch (e) {
            case NodeEvent.RemoteBlocksReceived _ -> "remote_blocks";
            case NodeEvent.WriteDoneReceived _ -> "write_done";
            case NodeEvent.ReleaseReceived _ -> "release";
            case NodeEvent.RawCompletionReceived _ -> "completion";
            case NodeEvent.FrameRejected _ -> "rejected";
            case NodeEvent.NotifySendFailed f -> f.messageType();
            case NodeEvent.RequestAdmitted _, NodeEvent.MatchedTokensQueried _, NodeEvent.BlocksAllocated _,
                    NodeEvent.StepScheduled _, NodeEvent.RequestFinished _, NodeEvent.ConnectorOutputReceived _,
                    NodeEvent.LoadStarted _, NodeEvent.LayerSaved _, NodeEvent.SaveWaited _, NodeEvent.FinishedPolled _,
                    NodeEvent.HandshakeCompleted _, NodeEvent.HandshakeFailed _, NodeEvent.HandshakeVoted _, NodeEvent.TransferCompleted _,
                    NodeEvent.Tick _, NodeEvent.ShutDown _, NodeEvent.KvCachesRegistered _, NodeEvent.ForwardDone _ -> "other";
        };
    }

    /** The transfer id a journaled frame event names, or {@code null}. */
    static String transferId(NodeEvent e) {
        return switch (e) {
            case NodeEvent.RemoteBlocksReceived r -> r.transferId();
            case NodeEvent.WriteDoneReceived w -> w.transferId();
            case NodeEvent.ReleaseReceived r -> r.transferId();
            case NodeEvent.RawCompletionReceived c -> c.completionId();
            case NodeEvent.NotifySendFailed f -> f.transferId();
            case NodeEvent.FrameRejected _, NodeEvent.RequestAdmitted _, NodeEvent.MatchedTokensQueried _,
                    NodeEvent.BlocksAllocated _, NodeEvent.StepScheduled _, NodeEvent.RequestFinished _,
                    NodeEvent.ConnectorOutputReceived _, NodeEvent.LoadStarted _, NodeEvent.LayerSaved _,
                    NodeEvent.SaveWaited _, NodeEvent.FinishedPolled _, NodeEvent.HandshakeCompleted _,
                    NodeEvent.HandshakeFailed _, NodeEvent.HandshakeVoted _, NodeEvent.TransferCompleted _, NodeEvent.Tick _, NodeEvent.ShutDown _, NodeEvent.KvCachesRegistered _, NodeEvent.ForwardDone _ -> null;
        };
    }
}

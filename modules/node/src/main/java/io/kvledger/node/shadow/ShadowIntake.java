package io.kvledger.node.shadow;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEvents;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.json.Json;
import io.kvledger.node.loop.Inbox;
import io.kvledger.zmq.ShadowStreamServer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Turns the recorder's stream messages into observed inputs of the node loop (the socket thread
 * of a {@link ShadowStreamServer} calls it, one message at a time).
 *
 * <p>Each line is parsed by {@link JsonLines#parseLine}, the parser of {@code kvledger journal
 * import}: an input line becomes the {@link NodeEvent} the reducer takes, and the derived lines
 * after it (the real connector's answers) go with it to {@link Inbox#observe}. An input's time is
 * its recorded time moved onto the node's clock (the offset taken at the stream's first input, never
 * ahead of the arrival), so intervals between hook calls are the engine's.
 *
 * <p>Only scheduler streams whose header names this node's role, mode, DP rank and behaviour
 * profile (the one it names, or the one kvledger's table of upstream versions gives its vLLM) are
 * shadowed (kvledger's reducer models a rank's scheduler and worker together, and what a real
 * worker sees happens inside the connector, unrecorded); other streams are counted and refused,
 * with one log line and one journaled {@code frame_rejected} each. A node started without
 * {@code --profile} takes the profile of the first scheduler stream of its role, mode and DP rank
 * ({@link Profiles}), unless it has applied that engine's calls under another one already. Gaps in a stream's line numbers (ZMQ's queue
 * overflowed in the engine, the node started late or restarted), unreadable lines and lines a full
 * inbox refused are counted and journaled as a {@code frame_rejected} input whose reason starts
 * with {@value #REASON_PREFIX}, so the journal says where it is incomplete.
 */
public final class ShadowIntake implements ShadowStreamServer.Handler {

    private static final System.Logger LOG = System.getLogger("io.kvledger.node.shadow");

    /** The start of the reason of every {@code frame_rejected} the intake journals. */
    static final String REASON_PREFIX = "kvledger shadow: ";

    /** What the node knows of one stream. */
    static final class StreamInfo {
        final String id;
        final String role;
        final String nodeId;
        final String origin;
        final long firstSeenNs;
        final String refused;
        final AtomicLong messages = new AtomicLong();
        final AtomicLong lines = new AtomicLong();
        final AtomicLong lost = new AtomicLong();
        volatile boolean ended;
        volatile long lastNs;
        // socket thread only
        long next = 1;
        long offsetNs = Long.MIN_VALUE;
        /** Unfolds the recorder's repeat lines; forgets what it read when lines are lost or unreadable. */
        final JsonLines.Parser parser = new JsonLines.Parser();

        StreamInfo(String id, String role, String nodeId, String origin, long firstSeenNs, String refused) {
            this.id = id;
            this.role = role;
            this.nodeId = nodeId;
            this.origin = origin;
            this.firstSeenNs = firstSeenNs;
            this.refused = refused;
        }

        Map<String, Object> toJson() {
            LinkedHashMap<String, Object> m = new LinkedHashMap<>();
            m.put("stream", id);
            m.put("role", role);
            m.put("node_id", nodeId);
            m.put("origin", origin);
            m.put("shadowed", refused == null);
            m.put("refused", refused);
            m.put("messages", messages.get());
            m.put("lines", lines.get());
            m.put("lines_lost", lost.get());
            m.put("ended", ended);
            m.put("first_seen_ns", firstSeenNs);
            m.put("last_message_ns", lastNs);
            return m;
        }
    }

    /**
     * The behaviour profile the node runs, and whether it takes a stream's: a node started without
     * {@code --profile} takes the one kvledger's table gives its first scheduler stream's vLLM.
     */
    public interface Profiles {
        /** The node's behaviour now. */
        Behaviour current();

        /**
         * Makes the node run {@code wanted} (the stream's, from {@code source}); {@code null} when it
         * does now, else the end of the refusal's line: the node's profile and, in parentheses, what
         * to do.
         */
        String take(Behaviour wanted, String source);
    }

    private final Inbox inbox;
    private final NodeConfig config;
    private final Profiles profiles;
    private final ShadowMonitor monitor;
    private final long waitNs;
    private final AtomicLong malformed = new AtomicLong();
    private String current;
    private boolean inboxFull;

    /**
     * @param waitNs how long one observed input may wait for room in a full inbox (the socket
     *               thread waits; meanwhile ZMQ's queues fill, and the recorder drops and counts)
     */
    public ShadowIntake(Inbox inbox, NodeConfig config, ShadowMonitor monitor, long waitNs) {
        this(inbox, config, monitor, waitNs, fixed(config));
    }

    /** @param profiles the node's profile, and whether it takes a stream's */
    public ShadowIntake(Inbox inbox, NodeConfig config, ShadowMonitor monitor, long waitNs, Profiles profiles) {
        this.inbox = inbox;
        this.config = config;
        this.monitor = monitor;
        this.waitNs = waitNs;
        this.profiles = profiles;
    }

    /** The profile of {@code config}, whatever the streams' vLLM (a node started with {@code --profile}). */
    static Profiles fixed(NodeConfig config) {
        return new Profiles() {
            @Override
            public Behaviour current() {
                return config.behaviour();
            }

            @Override
            public String take(Behaviour wanted, String source) {
                return wanted.equals(config.behaviour()) ? null
                        : config.behaviour().profile() + " (start the node with --profile " + wanted.profile() + ")";
            }
        };
    }

    /** Messages that could not be read at all (wrong frames or envelope). */
    public long malformed() {
        return malformed.get();
    }

    @Override
    public void onMalformed(long atNs, String reason) {
        if (malformed.incrementAndGet() == 1) {
            LOG.log(System.Logger.Level.WARNING, "shadow: " + reason + "; further malformed messages are counted");
        }
        note(atNs, "unreadable message: " + reason);
    }

    @Override
    public void onMessage(long atNs, byte[] envelope, byte[] header, byte[] batch) {
        Map<?, ?> env;
        try {
            env = Json.parse(new String(envelope, StandardCharsets.UTF_8)) instanceof Map<?, ?> m ? m : null;
        } catch (RuntimeException e) {
            env = null;
        }
        if (env == null || !(env.get("stream") instanceof String id) || !(env.get("role") instanceof String role)
                || !(env.get("first") instanceof Long first) || !(env.get("count") instanceof Long count)
                || !Long.valueOf(1).equals(env.get("v"))) {
            onMalformed(atNs, "the envelope is not {\"v\": 1, \"stream\", \"role\", \"first\", \"count\", ...}");
            return;
        }
        StreamInfo s = monitor.streams.get(id);
        if (s == null) {
            s = open(atNs, id, role, header);
            monitor.streams.put(id, s);
        }
        s.messages.incrementAndGet();
        s.lastNs = atNs;
        if (Boolean.TRUE.equals(env.get("end"))) {
            s.ended = true;
        }
        if (s.refused != null) {
            s.lines.addAndGet(count);
            return;
        }
        if (current != null && !current.equals(id)) {
            LOG.log(System.Logger.Level.INFO, "shadow: a new scheduler stream " + id + " replaces " + current
                    + " (the engine restarted?)");
        }
        current = id;
        if (first > s.next) {
            long lost = first - s.next;
            s.lost.addAndGet(lost);
            note(atNs, "stream " + id + " lost lines " + s.next + ".." + (first - 1) + " (" + lost + " line(s): "
                    + (s.next == 1 ? "the node started after them, or " : "") + "the recorder's ZMQ queue was full)");
            s.next = first;
            s.parser.reset();
        }
        if (count == 0) {
            return;
        }
        String[] texts = new String(batch, StandardCharsets.UTF_8).split("\n", -1);
        inboxFull = false;
        NodeEvent pending = null;
        List<Effect> recorded = new ArrayList<>();
        boolean skipDerived = false;
        for (int k = 0; k < texts.length; k++) {
            long lineNo = first + k;
            if (lineNo < s.next || texts[k].isBlank()) {
                continue; // seen already
            }
            s.lines.incrementAndGet();
            List<JsonLines.Line> parsed;
            try {
                parsed = s.parser.parse(texts[k]);
            } catch (RuntimeException e) {
                s.parser.reset();
                s.lost.incrementAndGet();
                note(atNs, "stream " + id + " line " + lineNo + " is unreadable (" + e.getMessage() + ")");
                if (pending != null) {
                    observe(s, pending, recorded, atNs);
                    pending = null;
                }
                skipDerived = true;
                continue;
            }
            for (JsonLines.Line line : parsed) {
                switch (line.kind()) {
                    case HEADER -> { }
                    case INPUT -> {
                        if (pending != null) {
                            observe(s, pending, recorded, atNs);
                        }
                        pending = restamp(s, (NodeEvent) line.record(), atNs);
                        recorded = new ArrayList<>();
                        skipDerived = false;
                    }
                    case DERIVED -> {
                        if (pending != null) {
                            recorded.add((Effect) line.record());
                        } else if (!skipDerived) {
                            s.lost.incrementAndGet();
                            note(atNs, "stream " + id + " line " + lineNo + " is an answer without its hook call");
                        }
                    }
                }
            }
        }
        if (pending != null) {
            observe(s, pending, recorded, atNs);
        }
        s.next = Math.max(s.next, first + count);
    }

    private StreamInfo open(long atNs, String id, String role, byte[] header) {
        JournalHeader h = null;
        String problem = null;
        try {
            if (JsonLines.parseLine(new String(header, StandardCharsets.UTF_8)).record() instanceof JournalHeader jh) {
                h = jh;
            } else {
                problem = "its header frame is not a header line";
            }
        } catch (RuntimeException e) {
            problem = "its header line is unreadable (" + e.getMessage() + ")";
        }
        if (problem == null && !"scheduler".equals(role)) {
            problem = "a " + role + " stream: a shadow node follows the scheduler of its rank (record workers to a file)";
        }
        if (problem == null) {
            NodeConfig c = h.config();
            List<String> diff = new ArrayList<>();
            if (c.role() != config.role()) {
                diff.add("role " + c.role().name().toLowerCase(Locale.ROOT) + " != " + config.role().name().toLowerCase(Locale.ROOT));
            }
            if (c.mode() != config.mode()) {
                diff.add("mode " + c.mode() + " != " + config.mode());
            }
            if (c.dpRank() != config.dpRank()) {
                diff.add("dp_rank " + c.dpRank() + " != " + config.dpRank());
            }
            // the recording's vLLM behaves otherwise than this node's model: every answer could
            // differ. Only a stream of this node's engine may give the node its profile.
            String mine = !diff.isEmpty() ? (c.behaviour().equals(profiles.current()) ? null
                    : profiles.current().profile() + " (start the node with --profile " + c.behaviour().profile() + ")")
                    : profiles.take(c.behaviour(), "stream " + id + " of " + h.nodeId()
                            + (h.vllmVersion() == null ? "" : " (vLLM " + h.vllmVersion() + ")"));
            if (mine != null) {
                diff.add("profile " + c.behaviour().profile() + " (the recorded vLLM's"
                        + (h.vllmVersion() == null ? "" : ", " + h.vllmVersion()) + ") != " + mine);
            }
            if (!diff.isEmpty()) {
                problem = "not this node's engine: " + String.join(", ", diff);
            }
        }
        StreamInfo s = new StreamInfo(id, role, h == null ? null : h.nodeId(), h == null ? null : h.origin(), atNs, problem);
        if (problem != null) {
            LOG.log(System.Logger.Level.WARNING, "shadow: stream " + id + " refused: " + problem);
            note(atNs, "stream " + id + " (" + role + (h == null ? "" : " " + h.nodeId()) + ") refused: " + problem);
        } else {
            LOG.log(System.Logger.Level.INFO, "shadow: following stream " + id + " of " + h.nodeId() + " (" + h.origin() + ")");
        }
        return s;
    }

    private NodeEvent restamp(StreamInfo s, NodeEvent e, long arrivalNs) {
        if (s.offsetNs == Long.MIN_VALUE) {
            s.offsetNs = arrivalNs - e.atNs();
        }
        long t = Math.min(arrivalNs, e.atNs() + s.offsetNs);
        return t == e.atNs() ? e : NodeEvents.at(e, t);
    }

    private void observe(StreamInfo s, NodeEvent e, List<Effect> recorded, long atNs) {
        // Once the inbox stayed full for waitNs, the rest of the message is not waited for.
        if (!inbox.observe(e, recorded, inboxFull ? 0 : waitNs)) {
            inboxFull = true;
            s.lost.incrementAndGet();
            note(atNs, "the node's inbox was full: a " + e.getClass().getSimpleName() + " of stream " + s.id
                    + " and its recorded answers are lost");
        }
    }

    /** Journals a note (a {@code frame_rejected} input); dropped when the inbox is full. */
    private void note(long atNs, String what) {
        inbox.offer(new NodeEvent.FrameRejected(atNs, REASON_PREFIX + what, new byte[0], false));
    }
}

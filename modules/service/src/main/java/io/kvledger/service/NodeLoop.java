package io.kvledger.service;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEvents;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The single thread that owns a node's {@link NodeState}. For each event it takes from the
 * {@link Inbox}, in this order: append the input to the journal, {@link NodeReducer#applyInto},
 * append the derived entries with the input's seq, tell the listeners, hand the effects to the
 * {@link EffectRouter}, and complete the hook call waiting for them. Journal before apply: a
 * crash never loses an event whose effects left the node.
 *
 * <p>Timers: after each event the loop asks the state for its next deadline
 * ({@link NodeState#nextDeadlineAfter}) and waits on the inbox until then at most; when the wait
 * ends empty it journals and applies a {@code Tick} at the current time. A node with no deadline
 * blocks on the inbox and does not spin.
 *
 * <p>Observed inputs ({@link Inbox#observe}, a shadow node) are journaled and applied the same
 * way, but the derived entries journaled for them are what the {@link Observer} decides from the
 * reducer's effects and the answers recorded by the observed process.
 *
 * <p>Nothing that happens while handling one item stops the loop: an event the journal refuses
 * is not applied (its caller gets the error), an exception from a router or listener is counted
 * and the loop goes on.
 */
public final class NodeLoop implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("io.kvledger.service");

    /** Called on the loop thread after each applied event; must not block. */
    public interface Listener {
        void onApplied(long seq, NodeEvent event, List<Effect> effects);
    }

    /**
     * Decides what a shadow node journals for an observed input (loop thread, must not block):
     * given the reducer's effects and the answers the observed process recorded, the derived
     * entries to journal, in order.
     */
    public interface Observer {
        List<Effect> derived(long seq, NodeEvent event, List<Effect> reducer, List<Effect> recorded);
    }

    private final NodeState state;
    private final JournalWriter journal;
    private final EffectRouter router;
    private final ServiceClock clock;
    private final Inbox inbox;
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private final Thread thread;
    private final List<Effect> effects = new ArrayList<>(16);

    private final AtomicLong applied = new AtomicLong();
    private final AtomicLong ticks = new AtomicLong();
    private final AtomicLong journalErrors = new AtomicLong();
    private final AtomicLong loopErrors = new AtomicLong();
    private volatile long lastSeq;
    private volatile long lastAtNs = Long.MIN_VALUE;
    private volatile long lastAppliedWallNs;
    private long lastTickNs = Long.MIN_VALUE;
    private long unjournaledSeq;
    private volatile boolean running;
    private volatile Observer observer;

    /**
     * @param journal the node's journal, or {@code null} to run without one (benchmarks only:
     *                replay and recovery need it)
     * @param lastSeq the seq of the last journaled entry, when the state was recovered from the
     *                journal (0 for a fresh node)
     */
    public NodeLoop(String name, NodeState state, JournalWriter journal, EffectRouter router, ServiceClock clock,
                    Inbox inbox, long lastSeq) {
        this.state = Objects.requireNonNull(state, "state");
        this.journal = journal;
        this.router = Objects.requireNonNull(router, "router");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.inbox = Objects.requireNonNull(inbox, "inbox");
        this.lastSeq = lastSeq;
        this.unjournaledSeq = lastSeq;
        this.thread = new Thread(this::run, "kvledger-node-loop-" + name);
        this.thread.setDaemon(false);
    }

    public void addListener(Listener l) {
        listeners.add(l);
    }

    /** Sets the observer of {@link Inbox#observe observed} inputs (before {@link #start}). */
    public void observeWith(Observer o) {
        this.observer = o;
    }

    public void start() {
        running = true;
        thread.start();
    }

    /** Asks the loop to stop after what is already in the inbox and waits for it (bounded). */
    @Override
    public void close() {
        if (!thread.isAlive()) {
            return;
        }
        inbox.stop();
        try {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            LOG.log(System.Logger.Level.WARNING, "node loop did not stop within 10 s; interrupting it");
            thread.interrupt();
        }
    }

    private void run() {
        while (running) {
            try {
                long deadline = state.nextDeadlineAfter(lastTickNs);
                long wait = deadline == Long.MAX_VALUE ? Long.MAX_VALUE : Math.max(0, deadline - clock.getAsLong());
                Inbox.Item item = inbox.take(wait);
                if (item == null) {
                    long now = clock.getAsLong();
                    lastTickNs = now;
                    ticks.incrementAndGet();
                    handle(new NodeEvent.Tick(now), null, null);
                    continue;
                }
                switch (item) {
                    case Inbox.Item.Input in -> handle(in.event(), null, null);
                    case Inbox.Item.Call call -> handle(call.event(), call, null);
                    case Inbox.Item.Observed o -> handle(o.event(), null, o.recorded());
                    case Inbox.Item.Query<?> q -> runQuery(q);
                    case Inbox.Item.Stop s -> running = false;
                }
            } catch (InterruptedException e) {
                running = false;
            } catch (RuntimeException | Error e) {
                loopErrors.incrementAndGet();
                LOG.log(System.Logger.Level.ERROR, "node loop: " + e, e);
            }
        }
        drainAfterStop();
    }

    private <T> void runQuery(Inbox.Item.Query<T> q) {
        try {
            q.result().complete(q.read().apply(state));
        } catch (RuntimeException e) {
            q.result().completeExceptionally(e);
        }
    }

    /**
     * @param recorded for an observed input, the answers its process recorded (the observer then
     *                 decides what is journaled); {@code null} otherwise
     */
    private void handle(NodeEvent event, Inbox.Item.Call call, List<Effect> recorded) {
        if (event.atNs() < lastAtNs) {
            event = NodeEvents.at(event, lastAtNs);
        }
        long seq;
        try {
            seq = journal == null ? ++unjournaledSeq : journal.appendInput(event);
        } catch (RuntimeException e) {
            journalErrors.incrementAndGet();
            LOG.log(System.Logger.Level.ERROR, "journal refused " + event.getClass().getSimpleName() + ": " + e);
            if (call != null) {
                call.reply().completeExceptionally(e);
            }
            return;
        }
        lastAtNs = event.atNs();
        effects.clear();
        NodeReducer.applyInto(state, event, effects);
        Observer obs = observer;
        List<Effect> derived = effects;
        if (recorded != null && obs != null) {
            derived = obs.derived(seq, event, List.copyOf(effects), recorded);
        }
        if (journal != null) {
            for (Effect e : derived) {
                try {
                    journal.appendDerived(seq, e);
                } catch (RuntimeException ex) {
                    journalErrors.incrementAndGet();
                    LOG.log(System.Logger.Level.ERROR, "journal refused a derived " + e.getClass().getSimpleName()
                            + ": " + ex);
                }
            }
        }
        lastSeq = journal == null ? seq : journal.nextSeq() - 1;
        applied.incrementAndGet();
        lastAppliedWallNs = System.nanoTime();
        List<Effect> out = derived.isEmpty() ? List.of() : List.copyOf(derived);
        for (Listener l : listeners) {
            try {
                l.onApplied(seq, event, out);
            } catch (RuntimeException ex) {
                loopErrors.incrementAndGet();
                LOG.log(System.Logger.Level.WARNING, "node loop listener failed: " + ex, ex);
            }
        }
        for (Effect e : out) {
            try {
                router.route(e);
            } catch (RuntimeException ex) {
                loopErrors.incrementAndGet();
                LOG.log(System.Logger.Level.WARNING, "routing " + e.getClass().getSimpleName() + " failed: " + ex, ex);
            }
        }
        if (call != null) {
            call.reply().complete(out);
        }
    }

    private void drainAfterStop() {
        Inbox.Item item;
        try {
            while ((item = inbox.take(0)) != null) {
                if (item instanceof Inbox.Item.Call c) {
                    c.reply().completeExceptionally(new IllegalStateException("the node stopped"));
                } else if (item instanceof Inbox.Item.Query<?> q) {
                    q.result().completeExceptionally(new IllegalStateException("the node stopped"));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (journal != null) {
            try {
                journal.flush();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "journal flush failed: " + e);
            }
        }
    }

    public boolean isRunning() {
        return thread.isAlive();
    }

    /** Events applied since start. */
    public long applied() {
        return applied.get();
    }

    /** Ticks fired by deadlines since start. */
    public long ticks() {
        return ticks.get();
    }

    /** Events the journal refused (not applied). */
    public long journalErrors() {
        return journalErrors.get();
    }

    /** Exceptions from routers and listeners (the loop went on). */
    public long loopErrors() {
        return loopErrors.get();
    }

    /** The seq of the last journaled entry. */
    public long lastSeq() {
        return lastSeq;
    }

    /** The time of the last applied event (node time base). */
    public long lastEventAtNs() {
        return lastAtNs;
    }
}

package io.kvledger.node.loop;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEvents;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.ServiceClock;
import io.kvledger.journal.JournalWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The single thread that owns a node's {@link NodeState}. For each event it takes from the
 * {@link Inbox}: {@link NodeReducer#applyInto}, then hand the event and the entries it derives to
 * the {@link Journaller} (a thread of its own that appends the input and then its derived entries
 * with the input's seq, in order, in groups). Once the journaller says an input is journaled, the
 * loop tells the listeners, hands the I/O commands to the {@link EffectRouter} and completes the hook
 * call waiting for the effects. Nothing leaves the node before its entries are in the journal, so a
 * crash loses only inputs whose effects never escaped (as a crash before the append would). While
 * the journaller is behind, the loop goes on applying what the inbox holds (up to the journaller's
 * ring, {@value Journaller#DEFAULT_CAPACITY} inputs; then it waits): the journal's cost overlaps
 * the reducer's instead of adding to it. When the inbox is empty and the journaller idle, the loop
 * appends what it published itself ({@link Journaller#appendInline}): one awaited call at a time
 * then crosses no thread between its apply and its reply.
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
 * <p>State queries ({@link Inbox#query}) wait until everything applied before them is journaled
 * and routed, so no reader sees a state the journal does not hold yet.
 *
 * <p>Nothing that happens while handling one item stops the loop but a failing journal: an input
 * whose values the journal would refuse is refused before it is applied (its caller gets the
 * error; the error is counted and logged), an exception from a router or listener is counted and
 * the loop goes on. If the journal fails on an input already applied, that input's effects and
 * all that follow are withheld and the loop stops, so the node never runs ahead of its journal. Without a journal (benchmarks) the
 * loop routes each event's effects right after applying it.
 *
 * <p>How the loop ended is told by {@link #stopped()}: a stop asked for by {@link #close} is
 * {@link Stopped#requested() requested}; a loop that stopped by itself (the journal refused an
 * applied input, the journaller thread died, the loop thread was interrupted or died of an error)
 * carries the cause, so the node's owner can end the process instead of leaving its adapters
 * bound around a dead loop.
 */
public final class NodeLoop implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("io.kvledger.node");

    /**
     * How the loop ended.
     *
     * @param requested whether {@link #close} asked for it (a clean stop)
     * @param cause     when the loop stopped by itself, why, in one line; {@code null} when requested
     */
    public record Stopped(boolean requested, String cause) {
        static final Stopped REQUESTED = new Stopped(true, null);
    }

    /**
     * Called on the loop thread after each applied event; must not block. The decision records
     * of an input go to the listeners: {@link #onApplied} sees the input with all its effects
     * (traces follow whole inputs), then {@link #onDecision} gets each decision in order (what
     * metrics count).
     */
    public interface Listener {
        void onApplied(long seq, NodeEvent event, List<Effect> effects);

        /** Each decision record of the input just told to {@link #onApplied}, in order. */
        default void onDecision(long seq, NodeEvent event, Effect.Decision decision) {}
    }

    /**
     * Decides what a shadow node journals for an observed input (loop thread, must not block):
     * given the reducer's effects and the answers the observed process recorded, the derived
     * entries to journal, in order.
     */
    public interface Observer {
        List<Effect> derived(long seq, NodeEvent event, List<Effect> reducer, List<Effect> recorded);
    }

    /** Replaced only by {@link #rebase}, on the loop thread, before any input is applied. */
    private NodeState state;
    /** The reducer of {@link #state} (one context reused from input to input). */
    private NodeReducer.Bound reducer;
    private final EffectRouter router;
    private final ServiceClock clock;
    private final Inbox inbox;
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private final Thread thread;
    private final List<Effect> effects = new ArrayList<>(16);
    private volatile Journaller journaller;
    private final String name;
    private final int ringCapacity;
    private final Runnable routeJournaled = this::routeJournaled;
    private final java.util.function.BooleanSupplier inboxHasItems;

    private final AtomicLong applied = new AtomicLong();
    private final AtomicLong ticks = new AtomicLong();
    private final AtomicLong journalErrors = new AtomicLong();
    private final AtomicLong loopErrors = new AtomicLong();
    private final AtomicLong unansweredReplies = new AtomicLong();
    /** Set on the loop thread when the journal refused an applied input: the loop stops. */
    private boolean journalFailed;
    private volatile long lastSeq;
    private volatile long lastAtNs = Long.MIN_VALUE;
    private volatile long lastAppliedWallNs;
    private long lastTickNs = Long.MIN_VALUE;
    private long unjournaledSeq;
    /** The seq the next input gets if the journal takes every entry (an observer's seq). */
    private long predictedSeq;
    private volatile boolean running;
    private volatile Observer observer;
    /** Builds the status snapshot (loop thread, or the starting thread before the loop runs). */
    private java.util.function.Supplier<NodeStatus> statusSource;
    /** The last snapshot published; {@code null} without a status source. */
    private volatile NodeStatus status;
    /** Items handled since the last snapshot (loop thread). */
    private long sincePublished;
    /** An input was emitted (counted as applied) since the last snapshot: its journaling may end after the batch did. */
    private boolean emittedSincePublished;
    /** Set by {@link #close} before it asks the loop to stop. */
    private volatile boolean stopRequested;
    /** Why the loop stopped by itself (loop thread; the first cause wins). */
    private String failure;
    private final java.util.concurrent.CompletableFuture<Stopped> stopped = new java.util.concurrent.CompletableFuture<>();

    /**
     * @param journal the node's journal, or {@code null} to run without one (benchmarks only:
     *                replay and recovery need it)
     * @param lastSeq the seq of the last journaled entry, when the state was recovered from the
     *                journal (0 for a fresh node)
     */
    public NodeLoop(String name, NodeState state, JournalWriter journal, EffectRouter router, ServiceClock clock,
                    Inbox inbox, long lastSeq) {
        this(name, state, journal, router, clock, inbox, lastSeq, Journaller.DEFAULT_CAPACITY);
    }

    /**
     * @param ringCapacity the journaller's ring, in inputs (a power of two): how far the loop may
     *                     run ahead of the journal
     */
    public NodeLoop(String name, NodeState state, JournalWriter journal, EffectRouter router, ServiceClock clock,
             Inbox inbox, long lastSeq, int ringCapacity) {
        this.state = Objects.requireNonNull(state, "state");
        this.reducer = NodeReducer.bind(state);
        this.name = name;
        this.ringCapacity = ringCapacity;
        this.router = Objects.requireNonNull(router, "router");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.inbox = Objects.requireNonNull(inbox, "inbox");
        this.lastSeq = lastSeq;
        this.unjournaledSeq = lastSeq;
        this.predictedSeq = lastSeq + 1;
        this.inboxHasItems = () -> inbox.depth() > 0;
        this.thread = new Thread(this::run, "kvledger-node-loop-" + name);
        this.thread.setDaemon(false);
        // a journaller that dies while the loop idles on the inbox: a query wakes the loop, which
        // then finds the journaller gone and stops
        this.journaller = journal == null ? null : new Journaller(name, journal, journalErrors, ringCapacity, thread,
                () -> inbox.query(s -> null));
    }

    public void addListener(Listener l) {
        listeners.add(l);
    }

    /** Sets the observer of {@link Inbox#observe observed} inputs (before {@link #start}). */
    public void observeWith(Observer o) {
        this.observer = o;
    }

    /**
     * Completes once the loop thread has ended (after the journaller drained and flushed what it
     * could): {@link Stopped#requested()} for a stop asked for by {@link #close}, else the cause.
     * Never completes exceptionally.
     */
    public java.util.concurrent.CompletableFuture<Stopped> stopped() {
        return stopped.copy();
    }

    /**
     * Sets what builds the node's status snapshot (before {@link #start}): the loop publishes one
     * when it starts, after each batch (when it finds the inbox empty, or after
     * {@value #STATUS_EVERY} items in a row) and on {@link #freshStatus} requests.
     */
    public void publishStatusWith(java.util.function.Supplier<NodeStatus> source) {
        this.statusSource = source;
    }

    /** Items the loop handles at most between two status snapshots while the inbox never empties. */
    static final int STATUS_EVERY = 1024;

    /** The last status snapshot the loop published, or {@code null} without a status source. */
    public NodeStatus status() {
        return status;
    }

    /**
     * A snapshot published for this request, once the loop has handled what came before it (so it
     * counts what those items did); the last one published, marked not running, when the loop has
     * stopped or does not answer within {@code timeout}.
     */
    public NodeStatus freshStatus(java.time.Duration timeout) {
        if (isRunning()) {
            try {
                NodeStatus s = inbox.query(st -> publishStatus()).get(timeout.toNanos(), TimeUnit.NANOSECONDS);
                if (s != null) {
                    return s;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                // stopped or stalled: the last one says what was last known
            }
        }
        NodeStatus last = status;
        return last == null || isRunning() ? last : last.notRunning();
    }

    /** Builds and publishes a snapshot (loop thread); returns it, or {@code null} without a source. */
    private NodeStatus publishStatus() {
        sincePublished = 0;
        emittedSincePublished = false;
        java.util.function.Supplier<NodeStatus> source = statusSource;
        if (source == null) {
            return null;
        }
        try {
            NodeStatus s = source.get();
            status = s;
            return s;
        } catch (RuntimeException e) {
            loopErrors.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "node loop: building the status snapshot failed: " + e, e);
            return status;
        }
    }

    public void start() {
        running = true;
        publishStatus();
        if (journaller != null) {
            journaller.start();
        }
        thread.start();
    }

    /** Asks the loop to stop after what is already in the inbox and waits for it (bounded). */
    @Override
    public void close() {
        if (!thread.isAlive()) {
            return;
        }
        stopRequested = true;
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
        Throwable died = null;
        try {
            loop();
            drainAfterStop();
        } catch (RuntimeException | Error e) {
            died = e;
            LOG.log(System.Logger.Level.ERROR, "node loop: the loop thread died: " + e, e);
        } finally {
            if (died != null && failure == null) {
                failure = "the loop thread died: " + died;
            }
            if (failure == null && !stopRequested) {
                failure = "the loop ended without being asked to stop";
            }
            try {
                publishStatus(); // the last counts, for the readers of a stopped node
            } catch (RuntimeException | Error e) {
                LOG.log(System.Logger.Level.WARNING, "node loop: the last status snapshot: " + e, e);
            }
            stopped.complete(failure == null ? Stopped.REQUESTED : new Stopped(false, failure));
        }
    }

    /** Records why the loop stops by itself (the first cause wins). */
    private void fail(String cause) {
        if (failure == null) {
            failure = cause;
        }
        running = false;
    }

    private void loop() {
        while (running) {
            try {
                Inbox.Item item;
                if (journaller != null && journaller.gone()) {
                    // the journaller died while the loop idled: nothing more can be journaled
                    throw new Journaller.Gone();
                }
                if (journaller != null && journaller.pending()) {
                    routeJournaled();
                    if (!journaller.pending()) {
                        continue;
                    }
                    // Effects wait for the journaller: apply what else is there meanwhile.
                    item = inbox.take(0);
                    if (item == null) {
                        // nothing else to apply: append on this thread rather than wake the
                        // journaller and wait to be woken (the reply leaves before the snapshot)
                        if (journaller.appendInline()) {
                            continue;
                        }
                        batchEnded();
                        // until the journaller publishes, or the inbox has more to apply meanwhile
                        journaller.awaitNext(inboxHasItems);
                        continue;
                    }
                    // more to apply: the journaller appends what is published meanwhile
                    journaller.wake();
                } else {
                    item = inbox.take(0);
                    if (item == null) {
                        batchEnded();
                        long deadline = state.nextDeadlineAfter(lastTickNs);
                        long wait = deadline == Long.MAX_VALUE ? Long.MAX_VALUE : Math.max(0, deadline - clock.getAsLong());
                        item = inbox.take(wait);
                    }
                    if (item == null) {
                        long now = clock.getAsLong();
                        lastTickNs = now;
                        ticks.incrementAndGet();
                        handle(new NodeEvent.Tick(now), null, null);
                        continue;
                    }
                }
                if (++sincePublished >= STATUS_EVERY) {
                    publishStatus();
                }
                switch (item) {
                    case Inbox.Item.Input in -> handle(in.event(), null, null);
                    case Inbox.Item.Call call -> handle(call.event(), call, null);
                    case Inbox.Item.Observed o -> handle(o.event(), null, o.recorded());
                    case Inbox.Item.Query<?> q -> runQuery(q);
                    case Inbox.Item.Stop s -> running = false;
                }
            } catch (InterruptedException e) {
                if (!stopRequested) {
                    fail("the loop thread was interrupted");
                }
                running = false;
            } catch (Journaller.Gone e) {
                // nothing more can be journaled, so nothing more may leave: the node stops
                loopErrors.incrementAndGet();
                LOG.log(System.Logger.Level.ERROR, "node loop: the journaller ended; the loop stops with "
                        + journaller.unjournaled() + " inputs unjournaled (their effects never left)");
                fail(journaller.deathCause() + " (" + journaller.unjournaled() + " applied inputs unjournaled,"
                        + " their effects withheld)");
            } catch (RuntimeException | Error e) {
                loopErrors.incrementAndGet();
                LOG.log(System.Logger.Level.ERROR, "node loop: " + e, e);
            }
        }
        drainAfterStop();
    }

    /** The inbox is empty: what the batch did goes into a new status snapshot (loop thread). */
    private void batchEnded() {
        if (sincePublished > 0 || emittedSincePublished) {
            publishStatus();
        }
    }

    /** Routes every journaled input's effects, in order (loop thread). */
    private void routeJournaled() {
        Journaller.Slot s;
        while ((s = journaller.nextJournaled()) != null) {
            try {
                if (s.refused != null) {
                    if (s.call != null) {
                        s.call.reply().completeExceptionally(s.refused);
                    }
                    // The values were checked before apply, so this is the journal failing (a
                    // full disk, a closed queue): the state now holds an input the journal does
                    // not. Nothing of it left; the node stops rather than run ahead of its journal.
                    if (!journalFailed) {
                        LOG.log(System.Logger.Level.ERROR, "node loop: the journal refused an applied input ("
                                + s.refused + "); the node stops and withholds the effects of what follows");
                        fail("the journal refused an applied input (" + s.event.getClass().getSimpleName() + ", "
                                + s.refused.getMessage() + "); its effects and those of what follows were withheld");
                    }
                    journalFailed = true;
                    running = false;
                } else if (journalFailed) {
                    // applied on a state its journal does not hold: nothing of it leaves
                    if (s.call != null) {
                        s.call.reply().completeExceptionally(new IllegalStateException("the node stopped: its journal failed"));
                    }
                } else {
                    lastSeq = s.lastSeq;
                    emit(s.seq, s.event, s.derived, s.call);
                }
            } finally {
                journaller.release(s);
            }
        }
    }

    private <T> void runQuery(Inbox.Item.Query<T> q) {
        if (journaller != null) {
            // a query sees only what the journal holds
            journaller.awaitAll();
            routeJournaled();
        }
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
        if (journaller == null) {
            long seq = ++unjournaledSeq;
            lastAtNs = event.atNs();
            effects.clear();
            reducer.applyInto(event, effects);
            List<Effect> derived = observed(seq, event, effects, recorded);
            lastSeq = seq;
            emit(seq, event, derived, call);
            return;
        }
        String why = JournalWriter.refusal(event);
        if (why != null) {
            // refused before it is applied, as the journal would refuse it: the state never holds
            // an input its journal does not
            journalErrors.incrementAndGet();
            LOG.log(System.Logger.Level.ERROR, "journal refused " + event.getClass().getSimpleName() + ": " + why
                    + " (not applied)");
            if (call != null) {
                call.reply().completeExceptionally(new io.kvledger.journal.JournalException(
                        "journal refused " + event.getClass().getSimpleName() + ": " + why));
            }
            return;
        }
        Journaller.Slot slot = journaller.claim(routeJournaled);
        lastAtNs = event.atNs();
        reducer.applyInto(event, slot.effects);
        // the seq the journaller will give the input (off by the entries of a refused input or
        // derived entry before it, if any: an observer's seq is informational)
        List<Effect> derived = observed(predictedSeq, event, slot.effects, recorded);
        predictedSeq += 1 + derived.size();
        slot.event = event;
        slot.derived = derived;
        slot.call = call;
        journaller.publish();
    }

    private List<Effect> observed(long seq, NodeEvent event, List<Effect> effects, List<Effect> recorded) {
        Observer obs = observer;
        if (recorded != null && obs != null) {
            return obs.derived(seq, event, List.copyOf(effects), recorded);
        }
        return effects;
    }

    /**
     * Tells the listeners, routes the effects and answers the call of an input (journaled, if
     * journaling). Each effect family goes to its one owner: an I/O command to the publisher of
     * its sub-family (through the router), a decision record to the listeners
     * ({@link Listener#onDecision}; the journal holds it already), a hook reply to the hook's
     * caller, whom the loop answers itself with the input's effects (the caller also reads which
     * I/O its hook started). A hook reply with nobody to answer (the input was offered, not
     * called, and no observer compares it) is counted and logged, never dropped quietly.
     */
    private void emit(long seq, NodeEvent event, List<Effect> derived, Inbox.Item.Call call) {
        applied.incrementAndGet();
        emittedSincePublished = true;
        lastAppliedWallNs = System.nanoTime();
        List<Effect> out = derived.isEmpty() ? List.of() : List.copyOf(derived);
        for (Listener l : listeners) {
            try {
                l.onApplied(seq, event, out);
            } catch (RuntimeException ex) {
                listenerFailed(ex);
            }
        }
        for (Effect e : out) {
            switch (e) {
                case Effect.IoCommand c -> execute(c);
                case Effect.Decision d -> decided(seq, event, d);
                case Effect.HookReply r -> {
                    if (call == null && observer == null) {
                        unanswered(event, r);
                    }
                }
            }
        }
        if (call != null) {
            call.reply().complete(out);
        }
    }

    private void decided(long seq, NodeEvent event, Effect.Decision d) {
        for (Listener l : listeners) {
            try {
                l.onDecision(seq, event, d);
            } catch (RuntimeException ex) {
                listenerFailed(ex);
            }
        }
    }

    private void listenerFailed(RuntimeException ex) {
        loopErrors.incrementAndGet();
        LOG.log(System.Logger.Level.WARNING, "node loop listener failed: " + ex, ex);
    }

    private void unanswered(NodeEvent event, Effect.HookReply r) {
        long n = unansweredReplies.incrementAndGet();
        if (n % 100 == 1) {
            LOG.log(System.Logger.Level.WARNING, "node loop: " + r.getClass().getSimpleName() + " of "
                    + event.getClass().getSimpleName() + " has no caller to answer (the input was offered, not "
                    + "called; " + n + " such replies so far)");
        }
    }

    /** Hook replies of inputs that were offered rather than called, with no observer to compare them. */
    long unansweredReplies() {
        return unansweredReplies.get();
    }

    private void execute(Effect.IoCommand c) {
        try {
            router.execute(c);
        } catch (RuntimeException ex) {
            loopErrors.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "routing " + c.getClass().getSimpleName() + " failed: " + ex, ex);
        }
    }

    private void drainAfterStop() {
        if (journaller != null) {
            // what was applied goes to the journal, then out (SIGTERM, close)
            try {
                journaller.awaitAll();
                routeJournaled();
            } catch (Journaller.Gone e) {
                LOG.log(System.Logger.Level.WARNING, "node loop: stopping with " + journaller.unjournaled()
                        + " inputs the journaller did not append (their effects never left)");
            } catch (RuntimeException e) {
                loopErrors.incrementAndGet();
                LOG.log(System.Logger.Level.ERROR, "node loop: draining the journaller: " + e, e);
            }
            journaller.close();
        }
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
    }

    /**
     * Starts the loop over with {@code fresh} as its state and the journal {@code reopen} returns
     * (a passive node that takes its behaviour profile from the engine's first message: the journal
     * it opened at start names another profile). Runs on the loop thread between two items: the
     * journaller drains and ends, then {@code reopen} is called with the old writer and the fresh
     * state; it either closes the old journal and returns a new one (having applied to the fresh
     * state whatever of the old journal it carries over, and journaled it), which a new journaller
     * then appends to, or returns {@code null} when the old journal holds what cannot be carried
     * over, and the loop goes on as before. Completes with whether the loop started over
     * ({@code false} without a journal); exceptionally, with the loop stopping, when {@code reopen} failed.
     */
    public java.util.concurrent.CompletableFuture<Boolean> rebase(NodeState fresh,
            java.util.function.BiFunction<JournalWriter, NodeState, JournalWriter> reopen) {
        Objects.requireNonNull(fresh, "fresh");
        java.util.function.Function<NodeState, Boolean> startOver = ignored -> {
            Journaller old = journaller;
            if (old == null) {
                return Boolean.FALSE;
            }
            old.close();
            JournalWriter next;
            try {
                next = reopen.apply(old.journalWriter(), fresh);
            } catch (RuntimeException e) {
                fail("could not start over with a new journal: " + e);
                throw e;
            }
            boolean over = next != null;
            if (over) {
                state = fresh;
                reducer = NodeReducer.bind(fresh);
                lastSeq = next.nextSeq() - 1;
                unjournaledSeq = lastSeq;
                predictedSeq = lastSeq + 1;
            }
            Journaller j = new Journaller(name, over ? next : old.journalWriter(), journalErrors, ringCapacity, thread,
                    () -> inbox.query(s -> null));
            journaller = j;
            j.start();
            return over;
        };
        if (Thread.currentThread() == thread) {
            // asked on the loop thread itself, while it serves its inbox's Idle (a hello read from
            // the engine bridge's socket): it is between two items already, so it starts over now
            // rather than queue a query it would wait for
            java.util.concurrent.CompletableFuture<Boolean> done = new java.util.concurrent.CompletableFuture<>();
            runQuery(new Inbox.Item.Query<>(startOver, done));
            return done;
        }
        return inbox.query(startOver);
    }

    /** Test hook: holds ({@code true}) or lets go the journaller's appends, as a stalled disk would. */
    void holdJournal(boolean hold) {
        journaller.hold(hold);
    }

    /** Test hook: the journaller thread dies of {@code e}, as of an error from the JVM. */
    void killJournaller(Error e) {
        journaller.kill(e);
    }

    /**
     * Test hook: ends the journaller without appending what it still holds, as a process killed now
     * would leave the journal (the loop then fails on its next wait for it).
     */
    void abandonJournal() {
        journaller.abandon();
    }

    /**
     * A named fault for tests of the node's owner ({@code kvledger node --fail-journal-after N}):
     * after {@code inputs} more inputs the journal refuses every input, as a full disk would, and
     * the loop stops as it does when its journal fails.
     *
     * @throws IllegalStateException without a journal
     */
    public void failJournalAfter(long inputs, String why) {
        if (journaller == null) {
            throw new IllegalStateException("the node keeps no journal");
        }
        journaller.refuseAfter(inputs, why);
    }

    /** Inputs applied and not yet journaled (0 without a journal). */
    public long unjournaled() {
        return journaller == null ? 0 : journaller.unjournaled();
    }

    /** Whether the loop runs: its thread is alive and has not said it stopped ({@link #stopped}). */
    public boolean isRunning() {
        // the thread completes {@code stopped} just before it ends: from then on it is not running
        return thread.isAlive() && !stopped.isDone();
    }

    /** Events applied, journaled (when journaling) and routed since start. */
    public long applied() {
        return applied.get();
    }

    /** Journal groups the loop appended on its own thread ({@link Journaller#appendInline}). */
    long inlineGroups() {
        Journaller j = journaller;
        return j == null ? 0 : j.inlineGroups();
    }

    /** Ticks fired by deadlines since start. */
    public long ticks() {
        return ticks.get();
    }

    /** Entries the journal refused (a refused input's effects were withheld). */
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

package io.kvledger.node.loop;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The node loop's journal writer thread (LMAX style, group commit). The loop applies an event, puts
 * the event and the entries it derives into the next {@link Slot} of a bounded ring and
 * {@link #publish publishes} it; this thread appends the slots in order (the input, then its derived
 * entries with the input's seq), all the slots it finds published in one group excerpt
 * ({@link JournalWriter#beginGroup}: Chronicle's cost per excerpt paid once per group), and
 * publishes how many it has {@link #journaled journaled}. The loop
 * routes a slot's effects only once it is journaled, then {@link #release releases} it: nothing
 * leaves the node before its entries are in the journal.
 *
 * <p>One producer (the loop thread) and one consumer (this thread); a full ring makes the loop wait,
 * nothing is dropped. Slots and their effect lists are reused, so a hand-off allocates nothing.
 * Either side parks when it has nothing to do and the other unparks it (a bounded park, so a missed
 * wake-up costs at most a millisecond, 50 ms once this thread has idled for 100 ms).
 *
 * <p>The loop may also append on its own thread ({@link #appendInline}): when it has published an
 * input and has nothing else to apply (one awaited hook call at a time), it takes the writer for
 * the group itself instead of waking this thread and waiting to be woken in turn, two thread
 * hand-offs on the path of every such reply (benchmarks/README.md, "Drive round trip"). Whoever
 * appends holds {@link #appending} for the group; the writer follows the thread that holds it. A
 * {@link #publish published} input wakes this thread only when the loop goes on without appending
 * it ({@link #wake}: it takes another item, or waits).
 *
 * <p>An input the journal refuses ({@link JournalWriter#appendInput} throws) has no seq: its slot
 * carries the error and the loop withholds its effects and stops (values were checked before the
 * input was applied, so this is the journal failing); a refused derived entry is counted and
 * logged and the others go on. The writer belongs to this thread from {@link #start} until
 * {@link #close} returns. An error that ends this thread runs the {@code onDeath} callback (the loop
 * wakes, finds the journaller {@link #gone} and stops, with {@link #deathCause} as its cause).
 */
final class Journaller implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("io.kvledger.node");

    /** Default ring size (inputs). */
    static final int DEFAULT_CAPACITY = 1024;

    private static final int SPINS = 100;

    /**
     * A group excerpt takes inputs until it holds this many bytes (an input's entries always go
     * into one group, whatever their size).
     */
    static final int GROUP_BYTES = 64 * 1024;

    /** One applied input on its way to the journal and then to the router. */
    static final class Slot {
        NodeEvent event;
        /** The reducer's effects (the loop applies into it). */
        final ArrayList<Effect> effects = new ArrayList<>();
        /** What is journaled and routed: {@link #effects}, or what an observer decided. */
        List<Effect> derived;
        Inbox.Item.Call call;
        /** Set by the journaller: the input's seq, and the seq of its last entry. */
        long seq;
        long lastSeq;
        /** Set by the journaller when the input was refused. */
        RuntimeException refused;

        void clear() {
            event = null;
            derived = null;
            call = null;
            refused = null;
            effects.clear();
        }
    }

    private final JournalWriter journal;
    private final AtomicLong journalErrors;
    private final Slot[] slots;
    private final int mask;
    private final Thread thread;
    private final Thread loopThread;

    /** Held by the thread that appends a group (this one, or the loop in {@link #appendInline}). */
    private final java.util.concurrent.atomic.AtomicBoolean appending = new java.util.concurrent.atomic.AtomicBoolean();
    /** The thread the writer was last handed to (read and written only while holding {@link #appending}). */
    private Thread writerThread;
    /** Groups the loop appended on its own thread (tests, status). */
    private final AtomicLong inlineGroups = new AtomicLong();

    /** Slots published by the loop (written by the loop only). */
    private volatile long head;
    /** Slots appended to the journal (written by the journaller only). */
    private volatile long journaled;
    /** Slots the loop routed and handed back (loop only). */
    private long released;
    private volatile boolean journallerParked;
    private volatile boolean loopParked;
    /** While the loop is parked: how many slots it waits to see journaled. */
    private volatile long loopWants;
    private volatile boolean stopping;
    /** Test hook: while set, the journaller appends nothing (a stalled disk). */
    private volatile boolean held;
    /** Test hook: the journaller ends without appending anything more (a killed process). */
    private volatile boolean abandoned;
    /** Test hook: an error the thread throws at its next turn (as one from the JVM would end it). */
    private volatile Error poison;
    /** Set when the thread ends (before {@link #onDeath} runs, so the woken loop sees it). */
    private volatile boolean ended;
    /** What ended the thread, when an error did ({@code null} otherwise). */
    private volatile Throwable died;
    /** Called (on the dying thread) when an error ends it, so an idle loop learns it at once. */
    private final Runnable onDeath;
    /** Inputs appended so far (journaller thread writes). */
    private volatile long appendedInputs;
    /** The injected fault ({@link #refuseAfter}): inputs from this count on are refused. */
    private volatile long refuseFrom = Long.MAX_VALUE;
    private volatile String refuseWhy;

    Journaller(String name, JournalWriter journal, AtomicLong journalErrors, int capacity, Thread loopThread) {
        this(name, journal, journalErrors, capacity, loopThread, () -> { });
    }

    /** @param onDeath run on the journaller thread when an error ends it (must not block) */
    Journaller(String name, JournalWriter journal, AtomicLong journalErrors, int capacity, Thread loopThread,
               Runnable onDeath) {
        this.onDeath = onDeath;
        if (Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("the journal ring's capacity must be a power of two, got " + capacity);
        }
        this.journal = journal;
        this.journalErrors = journalErrors;
        this.slots = new Slot[capacity];
        for (int i = 0; i < capacity; i++) {
            slots[i] = new Slot();
        }
        this.mask = capacity - 1;
        this.loopThread = loopThread;
        this.thread = new Thread(this::run, "kvledger-journaller-" + name);
        this.thread.setDaemon(false);
    }

    /** The writer this journaller appends to. */
    JournalWriter journalWriter() {
        return journal;
    }

    void start() {
        journal.pretouch();
        thread.start();
    }

    // ------------------------------------------------------------------ loop side

    /** The slot the loop fills next, waiting (and routing through {@code drain}) while the ring is full. */
    Slot claim(Runnable drain) {
        while (head - released >= slots.length) {
            // wait for half the ring rather than one slot: fewer wake-ups, and the journaller still
            // has half a ring of work while the woken loop waits for a CPU
            awaitJournaled(released + Math.max(1, slots.length / 2));
            drain.run();
        }
        return slots[(int) (head & mask)];
    }

    /**
     * Hands the claimed slot to the journaller. Does not wake it: the loop either appends the slot
     * itself ({@link #appendInline}) or wakes it ({@link #wake}) before it goes on or waits.
     */
    void publish() {
        head = head + 1;
    }

    /** Wakes the journaller if it is parked with published slots to append. */
    void wake() {
        if (journallerParked && journaled < head) {
            LockSupport.unpark(thread);
        }
    }

    /**
     * Appends, on the calling thread (the loop), every slot published and not yet journaled, as one
     * group, when the journaller is not appending right now and appends are not held; returns
     * whether it did (the slots are then journaled, or refused as the journaller would refuse them).
     */
    boolean appendInline() {
        if (held || abandoned || stopping || ended || poison != null || journaled >= head) {
            return false;
        }
        if (!appending.compareAndSet(false, true)) {
            return false;
        }
        try {
            long first = journaled;
            long h = head;
            if (first >= h || held) {
                return first >= h;
            }
            appendGroups(first, h);
            inlineGroups.incrementAndGet();
            return true;
        } finally {
            appending.set(false);
        }
    }

    /** Groups the loop appended on its own thread. */
    long inlineGroups() {
        return inlineGroups.get();
    }

    /** Slots published and not yet released. */
    boolean pending() {
        return released < head;
    }

    /** Slots published and not yet journaled. */
    long unjournaled() {
        return head - journaled;
    }

    /** The next slot in order if it is journaled, else {@code null}. */
    Slot nextJournaled() {
        return released < journaled ? slots[(int) (released & mask)] : null;
    }

    /** Hands back the slot {@link #nextJournaled} returned, once routed. */
    void release(Slot s) {
        s.clear();
        released++;
    }

    /** Waits until at least {@code target} slots are journaled (or the journaller is gone). */
    void awaitJournaled(long target) {
        awaitJournaled(target, null);
    }

    /**
     * Waits until at least {@code target} slots are journaled, or until {@code orElse} says there is
     * something else to do (checked after the spins and after each bounded park: within a
     * millisecond), or the journaller is gone.
     */
    void awaitJournaled(long target, java.util.function.BooleanSupplier orElse) {
        wake();
        int spins = 0;
        while (journaled < target) {
            if (!thread.isAlive()) {
                throw new Gone();
            }
            if (spins++ < SPINS) {
                Thread.onSpinWait();
                continue;
            }
            if (orElse != null && orElse.getAsBoolean()) {
                return;
            }
            loopWants = target;
            loopParked = true;
            if (journaled < target) {
                LockSupport.parkNanos(this, 1_000_000);
            }
            loopParked = false;
        }
    }

    /** Waits until the next slot to release is journaled, or {@code orElse} says there is other work. */
    void awaitNext(java.util.function.BooleanSupplier orElse) {
        awaitJournaled(released + 1, orElse);
    }

    /** Waits until everything published is journaled. */
    void awaitAll() {
        awaitJournaled(head);
    }

    /** Whether the thread has ended (it ends only in {@link #close}, or when abandoned or killed by an error). */
    boolean gone() {
        return ended && !stopping;
    }

    /** Why the thread ended: the error that killed it, or that it was abandoned. */
    String deathCause() {
        Throwable e = died;
        return e != null ? "the journaller thread died: " + e : "the journaller thread ended";
    }

    /** The journaller thread ended while the loop waited for it (abandoned, or killed by an error). */
    static final class Gone extends IllegalStateException {
        Gone() {
            super("the journaller thread is gone");
        }
    }

    // ------------------------------------------------------------------ journaller side

    private void run() {
        try {
            // the node's start may have appended on its own thread (recovery's missing derived
            // entries); from here on this thread appends, or the loop while it holds the writer
            takeWriter();
            try {
                journal.handOverToCurrentThread();
                writerThread = Thread.currentThread();
            } finally {
                appending.set(false);
            }
            appendAll();
        } catch (RuntimeException | Error e) {
            died = e;
            ended = true;
            LOG.log(System.Logger.Level.ERROR, "the journaller died: " + e + " (the node stops: nothing is routed"
                    + " that is not journaled)", e);
            wakeLoop();
            try {
                onDeath.run();
            } catch (RuntimeException ignored) {
                // the loop still finds the thread gone on its next wait
            }
        } finally {
            ended = true;
        }
    }

    private void appendAll() {
        int contended = 0;
        while (!abandoned) {
            Error p = poison;
            if (p != null) {
                throw p;
            }
            long next = journaled;
            long h = head;
            if (next == h || held) {
                if (next == h && stopping && head == next) {
                    break;
                }
                idle(next);
                continue;
            }
            idleParks = 0;
            if (!appending.compareAndSet(false, true)) {
                // the loop appends inline (one group): wait for it rather than park
                if (++contended % 64 == 0) {
                    Thread.yield();
                } else {
                    Thread.onSpinWait();
                }
                continue;
            }
            try {
                next = journaled;
                h = head;
                if (next < h && !held) {
                    appendGroups(next, h);
                }
            } finally {
                appending.set(false);
            }
        }
        if (abandoned) {
            return;
        }
        takeWriter();
        try {
            if (writerThread != Thread.currentThread()) {
                journal.handOverToCurrentThread();
                writerThread = Thread.currentThread();
            }
            journal.flush();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "journal flush failed: " + e);
        } finally {
            appending.set(false);
        }
    }

    /** Takes {@link #appending} (the loop holds it at most for one inline group). */
    private void takeWriter() {
        int spins = 0;
        while (!appending.compareAndSet(false, true)) {
            if (++spins % 64 == 0) {
                Thread.yield();
            } else {
                Thread.onSpinWait();
            }
        }
    }

    /**
     * Appends slots {@code [from, to)} in group excerpts (what the loop published so far goes into
     * one excerpt, up to {@link #GROUP_BYTES}) and publishes each group as journaled. The caller
     * holds {@link #appending}.
     */
    private void appendGroups(long from, long to) {
        Thread me = Thread.currentThread();
        if (writerThread != me) {
            journal.handOverToCurrentThread();
            writerThread = me;
        }
        long next = from;
        while (next < to && !held) {
            long first = next;
            journal.beginGroup();
            for (; next < to && !held && (next == first || journal.groupBytes() < GROUP_BYTES); next++) {
                append(slots[(int) (next & mask)]);
            }
            try {
                journal.endGroup();
            } catch (RuntimeException e) {
                refuseGroup(first, next, e);
            }
            journaled = next;
            if (loopParked && next >= loopWants) {
                LockSupport.unpark(loopThread);
            }
        }
    }

    /**
     * Parks of an idle spell so far (journaller thread only): the first {@link #SHORT_PARKS} are
     * {@link #SHORT_PARK_NS} each, later ones {@link #LONG_PARK_NS}. Every publish is followed by an
     * inline append or a {@link #wake} (and every stop, hold or test hook unparks), so the bound
     * only limits a wake-up that went astray; an idle node wakes this thread 20 times a second
     * instead of 1,000 (it was 3 % of a core with nothing to do).
     */
    private int idleParks;
    private static final int SHORT_PARKS = 100;
    private static final long SHORT_PARK_NS = 1_000_000;
    private static final long LONG_PARK_NS = 50_000_000;

    private void idle(long next) {
        for (int i = 0; i < SPINS; i++) {
            if (head != next && !held) {
                return;
            }
            Thread.onSpinWait();
        }
        journallerParked = true;
        if ((head == next || held) && !(stopping && head == next)) {
            LockSupport.parkNanos(this, idleParks < SHORT_PARKS ? SHORT_PARK_NS : LONG_PARK_NS);
            if (idleParks < SHORT_PARKS) {
                idleParks++;
            }
        }
        journallerParked = false;
    }

    private void wakeLoop() {
        LockSupport.unpark(loopThread);
    }

    /** The group's excerpt could not be written: none of its inputs is journaled. */
    private void refuseGroup(long from, long to, RuntimeException e) {
        journalErrors.incrementAndGet();
        LOG.log(System.Logger.Level.ERROR, "journal refused a group of " + (to - from) + " inputs: " + e
                + " (the node applied them: their effects are withheld and the node stops)");
        for (long i = from; i < to; i++) {
            Slot s = slots[(int) (i & mask)];
            if (s.refused == null) {
                s.refused = e;
            }
        }
    }

    private void append(Slot s) {
        try {
            if (appendedInputs >= refuseFrom) {
                throw new io.kvledger.journal.JournalException(refuseWhy);
            }
            s.seq = journal.appendInput(s.event);
            appendedInputs = appendedInputs + 1;
        } catch (RuntimeException e) {
            journalErrors.incrementAndGet();
            LOG.log(System.Logger.Level.ERROR, "journal refused " + s.event.getClass().getSimpleName() + ": " + e
                    + " (the node applied it: its effects are withheld and the node stops)");
            s.refused = e;
            return;
        }
        for (Effect e : s.derived) {
            try {
                journal.appendDerived(s.seq, e);
            } catch (RuntimeException ex) {
                journalErrors.incrementAndGet();
                LOG.log(System.Logger.Level.ERROR, "journal refused a derived " + e.getClass().getSimpleName() + ": "
                        + ex);
            }
        }
        s.lastSeq = journal.nextSeq() - 1;
    }

    // ------------------------------------------------------------------ control

    /**
     * An injected fault ({@code kvledger node --fail-journal-after N}): after {@code inputs} more
     * inputs, the journal refuses every input, as a full disk or a failing volume would (nothing
     * more is written). The loop then stops as it does when the journal itself fails.
     */
    void refuseAfter(long inputs, String why) {
        refuseWhy = why;
        refuseFrom = appendedInputs + inputs;
    }

    /** Test hook: stops appending (as a stalled disk would) until {@code false}. */
    void hold(boolean h) {
        held = h;
        if (!h) {
            LockSupport.unpark(thread);
        }
    }

    /** Test hook: the thread dies of {@code e} at its next turn (within a millisecond when idle). */
    void kill(Error e) {
        poison = e;
        LockSupport.unpark(thread);
    }

    /**
     * Test hook: ends the thread without appending what is still published, as a process killed
     * now would leave the journal.
     */
    void abandon() {
        abandoned = true;
        LockSupport.unpark(thread);
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Appends what is published, flushes and ends the thread (bounded wait). */
    @Override
    public void close() {
        stopping = true;
        LockSupport.unpark(thread);
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            LOG.log(System.Logger.Level.WARNING, "the journaller did not drain within 10 s ("
                    + (head - journaled) + " inputs left)");
        }
    }
}

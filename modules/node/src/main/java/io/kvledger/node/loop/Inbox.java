package io.kvledger.node.loop;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeState;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * The node loop's one bounded inbox. Every adapter hands it what it observed as a
 * {@link NodeEvent} through {@link #offer}, which never blocks: when the inbox is full the offer
 * is refused and counted ({@link #refused()}), and the adapter decides what that means for its
 * socket (back off and retry, or journal the loss once there is room). Engine hook calls
 * ({@link #call}) wait for room for a bounded time, since the engine is waiting for the reply
 * anyway; state queries ({@link #query}) are small tasks that run on the loop thread.
 *
 * <p>Thread-safe, any number of producers, one consumer (the loop).
 */
public final class Inbox {

    /** What the loop takes from the inbox. */
    sealed interface Item {
        /** An input event with no one waiting for its effects. */
        record Input(NodeEvent event) implements Item {}

        /** A hook call: the engine waits for the effects of its event. */
        record Call(NodeEvent event, CompletableFuture<List<Effect>> reply) implements Item {}

        /**
         * An input observed in another process's stream together with the answers that process
         * gave to it (a shadow node: {@link NodeLoop.Observer} compares and journals them).
         */
        record Observed(NodeEvent event, List<Effect> recorded) implements Item {}

        /** A read of the state, run on the loop thread between events. */
        record Query<T>(Function<NodeState, T> read, CompletableFuture<T> result) implements Item {}

        /** Asks the loop to stop after the items before it. */
        record Stop() implements Item {}
    }

    /**
     * What the loop may do instead of parking while the inbox is empty: serve a socket whose
     * messages it then takes on its own thread (the engine bridge over a Unix socket), with no
     * hand-off from a socket thread. The inbox wakes it when another thread adds an item.
     */
    public interface Idle {
        /**
         * Serves for up to {@code waitNs} (0: only what is there now); items it adds on the loop's
         * thread are taken next. False when it no longer serves (the loop then parks as without it).
         */
        boolean serve(long waitNs);

        /** Ends a {@link #serve} that waits (any thread). */
        void wake();
    }

    private volatile Idle idle;
    /** The loop's thread while it is in {@link Idle#serve} (producers on other threads wake it), else null. */
    private volatile Thread serving;

    private final ArrayBlockingQueue<Item> queue;
    private final int capacity;
    private final LongAdder offered = new LongAdder();
    private final LongAdder refused = new LongAdder();

    public Inbox(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("inbox capacity must be at least 1, got " + capacity);
        }
        this.capacity = capacity;
        // One slot more than the capacity for the stop item, so stopping never fails.
        this.queue = new ArrayBlockingQueue<>(capacity + 1);
    }

    /** Offers an input event; {@code false} (and counted) when the inbox is full. Never blocks. */
    public boolean offer(NodeEvent event) {
        Objects.requireNonNull(event, "event");
        offered.increment();
        if (queue.size() >= capacity || !queue.offer(new Item.Input(event))) {
            refused.increment();
            return false;
        }
        added();
        return true;
    }

    /**
     * Lets the loop {@link Idle#serve serve} {@code idle} while the inbox is empty instead of
     * parking ({@code null}: park). Any thread; the loop's wait under way ends.
     */
    public void idleWith(Idle idle) {
        this.idle = idle;
        // a loop parked already (no deadline: no bound) takes this and serves from its next wait
        query(s -> null);
    }

    /** After an item went in: wakes the loop if it serves its {@link Idle} (unless the item is its own). */
    private void added() {
        Thread t = serving;
        Idle i = idle;
        if (t != null && i != null && t != Thread.currentThread()) {
            i.wake();
        }
    }

    /**
     * Offers an observed input and the answers recorded for it (shadow nodes); waits at most
     * {@code waitNs} for room. {@code false} (and counted) when the inbox stayed full.
     */
    public boolean observe(NodeEvent event, List<Effect> recorded, long waitNs) {
        Objects.requireNonNull(event, "event");
        offered.increment();
        try {
            if (queue.size() < capacity && queue.offer(new Item.Observed(event, List.copyOf(recorded)), waitNs,
                    TimeUnit.NANOSECONDS)) {
                added();
                return true;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        refused.increment();
        return false;
    }

    /**
     * Submits a hook call; the future completes with the reducer's effects for it once it has been
     * journaled and applied, or exceptionally when the inbox stayed full for {@code waitNs} or
     * the node stopped.
     */
    public CompletableFuture<List<Effect>> call(NodeEvent event, long waitNs) {
        CompletableFuture<List<Effect>> reply = new CompletableFuture<>();
        offered.increment();
        try {
            if (!queue.offer(new Item.Call(event, reply), waitNs, TimeUnit.NANOSECONDS)) {
                refused.increment();
                reply.completeExceptionally(new InboxFullException(capacity));
            } else {
                added();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            reply.completeExceptionally(e);
        }
        return reply;
    }

    /** Reads the state on the loop thread (the result must not keep references into the state). */
    public <T> CompletableFuture<T> query(Function<NodeState, T> read) {
        CompletableFuture<T> result = new CompletableFuture<>();
        if (!queue.offer(new Item.Query<>(read, result))) {
            result.completeExceptionally(new InboxFullException(capacity));
        } else {
            added();
        }
        return result;
    }

    void stop() {
        queue.offer(new Item.Stop());
        added();
    }

    /**
     * How long {@link #take} polls after its first look before it parks, by default: none. A spin
     * catches a call that comes within it without a wake-up, but on this project's measurements
     * (benchmarks/README.md, issue 34) a 20 µs spin cost more than it caught: awaited calls and
     * the default drive-mode steps were faster without it, tcp calls slower with it (the spinning
     * loop likely takes the core the socket's I/O thread or the caller needs), and calls a
     * millisecond apart paid it in CPU; only a stream of unawaited calls may gain from one.
     */
    static final long DEFAULT_SPIN_NS = 0;

    /** The system property that sets the spin in nanoseconds (read once, when this class loads). */
    static final String SPIN_PROPERTY = "kvledger.loop.spinNs";

    /** The spin of every inbox in this JVM: {@link #SPIN_PROPERTY}, else {@link #DEFAULT_SPIN_NS}. */
    static final long SPIN_NS = spinNs(System.getProperty(SPIN_PROPERTY));

    /** The spin a value of {@link #SPIN_PROPERTY} asks for (absent or blank: the default); 0 or more. */
    static long spinNs(String value) {
        if (value == null || value.isBlank()) {
            return DEFAULT_SPIN_NS;
        }
        long ns;
        try {
            ns = Long.parseLong(value.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(SPIN_PROPERTY + " must be a number of nanoseconds, got " + value, e);
        }
        if (ns < 0) {
            throw new IllegalArgumentException(SPIN_PROPERTY + " must be 0 or more, got " + value);
        }
        return ns;
    }

    /**
     * Takes the next item, waiting at most {@code timeoutNs} ({@code Long.MAX_VALUE}: no bound):
     * looks once (with an {@link Idle}, also at its socket without waiting), polls for
     * {@link #SPIN_NS} (none by default), then serves the {@link Idle} until an item is there or the
     * time is up, or parks.
     */
    Item take(long timeoutNs) throws InterruptedException {
        if (timeoutNs <= 0) {
            return queue.poll();
        }
        long start = System.nanoTime();
        boolean serves = idle != null;
        Item first = look(serves);
        if (first != null) {
            return first;
        }
        serves = serves && stillServing;
        long spinFor = Math.min(SPIN_NS, timeoutNs);
        while (System.nanoTime() - start < spinFor) {
            Thread.onSpinWait();
            Item i = look(serves);
            if (i != null) {
                return i;
            }
            serves = serves && stillServing;
        }
        while (serves) {
            long left = timeoutNs == Long.MAX_VALUE ? Long.MAX_VALUE : timeoutNs - (System.nanoTime() - start);
            if (left <= 0) {
                return queue.poll();
            }
            Item i = serveIdle(left);
            if (i != null) {
                return i;
            }
            serves = stillServing;
        }
        if (timeoutNs == Long.MAX_VALUE) {
            return queue.take();
        }
        long left = timeoutNs - (System.nanoTime() - start);
        return left <= 0 ? queue.poll() : queue.poll(left, TimeUnit.NANOSECONDS);
    }

    /** The next item now, from the queue or (when {@code serves}) the {@link Idle} served without waiting. */
    private Item look(boolean serves) {
        Item i = queue.poll();
        if (i != null || !serves) {
            stillServing = serves;
            return i;
        }
        return serveIdle(0);
    }

    /** Whether the last {@link #serveIdle} found its {@link Idle} still serving. Loop thread only. */
    private boolean stillServing;

    /** One {@link Idle#serve} of up to {@code waitNs}, announced to producers; the item it led to, if any. */
    private Item serveIdle(long waitNs) {
        Idle i = idle;
        if (i == null) {
            stillServing = false;
            return null;
        }
        serving = Thread.currentThread();
        try {
            // after announcing: an item added before it was seen here, one added after wakes the serve
            Item item = queue.poll();
            if (item != null) {
                stillServing = true;
                return item;
            }
            stillServing = i.serve(waitNs);
            return queue.poll();
        } finally {
            serving = null;
        }
    }

    /** Items waiting now. */
    public int depth() {
        return queue.size();
    }

    public int capacity() {
        return capacity;
    }

    /** Offers and calls made so far. */
    long offered() {
        return offered.sum();
    }

    /** Offers and calls refused because the inbox was full. */
    public long refused() {
        return refused.sum();
    }

    /** The inbox stayed full for longer than a hook call may wait. */
    public static final class InboxFullException extends RuntimeException {
        InboxFullException(int capacity) {
            super("the node's inbox is full (" + capacity + " items)");
        }
    }
}

package io.kvledger.sim;

import java.util.PriorityQueue;

/**
 * The simulation's agenda: actions ordered by virtual time, ties broken by insertion order, so a
 * run never depends on anything but the order in which actions were scheduled. Owns the virtual
 * clock: {@link #now()} is the time of the action being run.
 */
final class EventQueue {

    private record Entry(long atNs, long seq, Runnable action) implements Comparable<Entry> {
        @Override
        public int compareTo(Entry o) {
            int c = Long.compare(atNs, o.atNs);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    private final PriorityQueue<Entry> queue = new PriorityQueue<>();
    private long nextSeq;
    private long nowNs;

    long now() {
        return nowNs;
    }

    /** Runs {@code action} at {@code atNs}, or now if that is in the past. */
    void at(long atNs, Runnable action) {
        queue.add(new Entry(Math.max(atNs, nowNs), nextSeq++, action));
    }

    boolean isEmpty() {
        return queue.isEmpty();
    }

    /** The time of the next action; only when not {@link #isEmpty()}. */
    long peekTime() {
        return queue.peek().atNs();
    }

    /** Advances the clock to the next action and runs it. */
    void runNext() {
        Entry e = queue.poll();
        nowNs = e.atNs();
        e.action().run();
    }

    /** Moves the clock forward to {@code atNs} without running anything (never backwards). */
    void advanceTo(long atNs) {
        nowNs = Math.max(nowNs, atNs);
    }
}

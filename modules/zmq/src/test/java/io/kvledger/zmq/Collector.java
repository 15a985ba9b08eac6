package io.kvledger.zmq;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Predicate;

/** A thread-safe sink that keeps everything, with a bounded wait for a count. */
final class Collector<T> implements EventSink<T> {

    private final ConcurrentLinkedQueue<T> items = new ConcurrentLinkedQueue<>();

    @Override
    public boolean offer(T event) {
        items.add(event);
        return true;
    }

    List<T> items() {
        return new ArrayList<>(items);
    }

    int size() {
        return items.size();
    }

    /** Waits (up to {@code seconds}) until {@code n} items arrived; returns them. Fails with what did arrive. */
    List<T> await(int n, int seconds) {
        return awaitMatching(x -> true, n, seconds);
    }

    <S extends T> List<S> awaitMatching(Predicate<? super T> p, int n, int seconds) {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (true) {
            List<S> got = matching(p);
            if (got.size() >= n) {
                return got;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("waited " + seconds + " s for " + n + " items, got " + got.size() + ": " + items());
            }
            sleep(2);
        }
    }

    @SuppressWarnings("unchecked")
    <S extends T> List<S> matching(Predicate<? super T> p) {
        List<S> out = new ArrayList<>();
        for (T t : items) {
            if (p.test(t)) {
                out.add((S) t);
            }
        }
        return out;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}

package io.kvledger.zmq;

import java.util.Set;
import java.util.TreeSet;

/** Live kvledger threads (adapters and their JeroMQ contexts), and a bounded wait for them to end. */
final class Threads {

    private Threads() {}

    static Set<String> kvledger() {
        Set<String> names = new TreeSet<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith("kvledger-")) {
                names.add(t.getName() + "#" + t.threadId());
            }
        }
        return names;
    }

    /** Fails unless every kvledger thread not in {@code before} has ended within 120 s. */
    static void assertNoneLeftBeyond(Set<String> before) {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (true) {
            Set<String> now = kvledger();
            now.removeAll(before);
            if (now.isEmpty()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("threads left after close: " + now);
            }
            Collector.sleep(10);
        }
    }
}

package io.kvledger.node.loop;

import io.kvledger.core.event.NodeEvent;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * How an adapter thread hands an event to a full inbox: retry with a growing pause for at most
 * {@code boundNs}, then give up and count it as lost. An adapter thread therefore never waits
 * forever, and a loss is never silent: it is counted here and logged once per hundred losses.
 */
public final class Delivery implements io.kvledger.core.event.NodeEventSink {

    private static final System.Logger LOG = System.getLogger("io.kvledger.node");

    private final Inbox inbox;
    private final long boundNs;
    private final LongAdder lost = new LongAdder();

    public Delivery(Inbox inbox, long boundNs) {
        this.inbox = inbox;
        this.boundNs = boundNs;
    }

    @Override
    public boolean offer(NodeEvent event) {
        return deliver(event);
    }

    /** Offers {@code event}, retrying while the inbox is full; {@code false} when it was lost. */
    public boolean deliver(NodeEvent event) {
        if (inbox.offer(event)) {
            return true;
        }
        long deadline = System.nanoTime() + boundNs;
        long pause = 10_000;
        while (System.nanoTime() < deadline) {
            LockSupport.parkNanos(pause);
            pause = Math.min(pause * 2, 5_000_000);
            if (inbox.offer(event)) {
                return true;
            }
        }
        lost.increment();
        if (lost.sum() % 100 == 1) {
            LOG.log(System.Logger.Level.WARNING, "inbox full for " + (boundNs / 1_000_000) + " ms: lost "
                    + event.getClass().getSimpleName() + " (" + lost.sum() + " lost so far)");
        }
        return false;
    }

    /** Events lost to a full inbox. */
    public long lost() {
        return lost.sum();
    }
}

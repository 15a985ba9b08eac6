package io.kvledger.node.loop;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.event.NodeEvent;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The loop's idle wait with an {@link Inbox.Idle} (the engine bridge's Unix socket): the loop serves
 * it instead of parking, takes what the serve added on its own thread, and is woken out of it by an
 * item another thread adds; an Idle that stops serving leaves the loop parking as before.
 */
class InboxIdleTest {

    /** Serves by waiting for {@link #wake} (or its wait), then adding what {@link #next} holds, on the serving thread. */
    static final class TestIdle implements Inbox.Idle {
        final Semaphore woken = new Semaphore(0);
        final AtomicInteger serves = new AtomicInteger();
        final AtomicInteger wakes = new AtomicInteger();
        volatile Inbox inbox;
        volatile NodeEvent next;
        volatile boolean serving = true;
        volatile Thread servedOn;
        /** Set once a serve waits without bound (the loop past its spin). */
        volatile boolean blocking;

        @Override
        public boolean serve(long waitNs) {
            serves.incrementAndGet();
            servedOn = Thread.currentThread();
            NodeEvent e = next;
            if (e != null) {
                next = null;
                // as the bridge hands a call to the inbox from the loop's own thread
                inbox.call(e, 0);
                return serving;
            }
            try {
                if (waitNs == Long.MAX_VALUE) {
                    blocking = true;
                    woken.acquire();
                } else {
                    woken.tryAcquire(waitNs, TimeUnit.NANOSECONDS);
                }
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
            return serving;
        }

        @Override
        public void wake() {
            wakes.incrementAndGet();
            woken.release();
        }
    }

    private static NodeEvent tick(long at) {
        return new NodeEvent.Tick(at);
    }

    @Test
    void whatTheServeAddsOnTheLoopsThreadIsTakenWithoutAWakeUp() throws Exception {
        Inbox inbox = new Inbox(16);
        TestIdle idle = new TestIdle();
        idle.inbox = inbox;
        idle.next = tick(7);
        inbox.idleWith(idle);
        assertThat(inbox.take(0)).as("the item that ends a wait under way").isInstanceOf(Inbox.Item.Query.class);
        Inbox.Item item = inbox.take(Long.MAX_VALUE);
        assertThat(item).isInstanceOf(Inbox.Item.Call.class);
        assertThat(((Inbox.Item.Call) item).event().atNs()).isEqualTo(7);
        assertThat(idle.servedOn).isSameAs(Thread.currentThread());
        assertThat(idle.wakes.get()).as("its own item wakes nothing").isZero();
    }

    @Test
    void anItemFromAnotherThreadWakesTheServe() throws Exception {
        Inbox inbox = new Inbox(16);
        TestIdle idle = new TestIdle();
        idle.inbox = inbox;
        inbox.idleWith(idle);
        assertThat(inbox.take(0)).as("the item that ends a wait under way").isInstanceOf(Inbox.Item.Query.class);
        Thread producer = new Thread(() -> {
            // once the loop serves without bound (past its spin), only the offer's wake-up ends it
            while (!idle.blocking) {
                Thread.onSpinWait();
            }
            inbox.offer(tick(9));
        });
        producer.start();
        Inbox.Item item = inbox.take(Long.MAX_VALUE);
        producer.join();
        assertThat(item).isInstanceOf(Inbox.Item.Input.class);
        assertThat(((Inbox.Item.Input) item).event().atNs()).isEqualTo(9);
        assertThat(idle.wakes.get()).isPositive();
    }

    @Test
    void aServeThatReturnsEmptyDoesNotEndTheWaitBeforeItsTime() throws Exception {
        Inbox inbox = new Inbox(16);
        TestIdle idle = new TestIdle();
        idle.inbox = inbox;
        inbox.idleWith(idle);
        assertThat(inbox.take(0)).as("the item that ends a wait under way").isInstanceOf(Inbox.Item.Query.class);
        // wake-ups with nothing added (a ping the server answered itself): the loop serves again
        for (int i = 0; i < 3; i++) {
            idle.woken.release();
        }
        long timeoutNs = TimeUnit.MILLISECONDS.toNanos(50);
        long start = System.nanoTime();
        assertThat(inbox.take(timeoutNs)).isNull();
        assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(timeoutNs);
        assertThat(idle.serves.get()).isGreaterThan(3);
    }

    @Test
    void anIdleThatStopsServingLeavesTheLoopParking() throws Exception {
        Inbox inbox = new Inbox(16);
        TestIdle idle = new TestIdle();
        idle.inbox = inbox;
        idle.serving = false;
        inbox.idleWith(idle);
        assertThat(inbox.take(0)).as("the item that ends a wait under way").isInstanceOf(Inbox.Item.Query.class);
        Thread producer = new Thread(() -> {
            while (idle.serves.get() < 1) {
                Thread.onSpinWait();
            }
            inbox.offer(tick(11));
        });
        producer.start();
        Inbox.Item item = inbox.take(Long.MAX_VALUE);
        producer.join();
        assertThat(((Inbox.Item.Input) item).event().atNs()).isEqualTo(11);
        assertThat(idle.serves.get()).as("asked once, then parked").isEqualTo(1);
    }
}

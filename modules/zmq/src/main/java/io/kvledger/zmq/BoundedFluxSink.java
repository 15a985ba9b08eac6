package io.kvledger.zmq;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;

/**
 * A bounded, serialized, multi-producer {@link EventSink} whose events come out of one
 * {@link Flux} (a single subscriber). Up to {@code capacity} events wait for demand; beyond that
 * {@link #offer} returns {@code false}, and adapters back off on their own threads.
 *
 * <p>Serialization: producers on different threads never call the subscriber concurrently
 * (Reactor's serialized sink; a contended offer just reports "retry"). The subscriber's
 * {@code onNext} runs on whichever producer thread delivered, so a consumer that owns state
 * should {@code publishOn} its own single thread.
 *
 * <p>After the subscriber cancels, or after {@link #close()}, events are dropped and counted
 * ({@link #dropped()}); {@link #offer} then returns {@code true} so producers do not spin.
 *
 * @param <T> the event type
 */
public final class BoundedFluxSink<T> implements EventSink<T>, AutoCloseable {

    private final Sinks.Many<T> sink;
    private final int capacity;
    private final AtomicLong delivered = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private volatile boolean closed;

    public BoundedFluxSink(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be positive: " + capacity);
        }
        this.capacity = capacity;
        this.sink = Sinks.many().unicast().onBackpressureBuffer(new ArrayBlockingQueue<>(capacity));
    }

    /** The events, for one subscriber. Completes when the sink is closed. */
    public Flux<T> flux() {
        return sink.asFlux();
    }

    int capacity() {
        return capacity;
    }

    @Override
    public boolean offer(T event) {
        if (closed) {
            dropped.incrementAndGet();
            return true;
        }
        Sinks.EmitResult r = sink.tryEmitNext(event);
        switch (r) {
            case OK -> {
                delivered.incrementAndGet();
                return true;
            }
            case FAIL_OVERFLOW, FAIL_ZERO_SUBSCRIBER, FAIL_NON_SERIALIZED -> {
                return false;
            }
            default -> {
                dropped.incrementAndGet();
                return true;
            }
        }
    }

    /** Events accepted into the sink. */
    long delivered() {
        return delivered.get();
    }

    /** Events dropped because the subscriber had gone or the sink was closed. */
    long dropped() {
        return dropped.get();
    }

    /** Completes the flux after the events already accepted. Idempotent. */
    @Override
    public void close() {
        closed = true;
        for (int i = 0; i < 10_000; i++) {
            Sinks.EmitResult r = sink.tryEmitComplete();
            if (r != Sinks.EmitResult.FAIL_NON_SERIALIZED) {
                return;
            }
            LockSupport.parkNanos(10_000);
        }
    }
}

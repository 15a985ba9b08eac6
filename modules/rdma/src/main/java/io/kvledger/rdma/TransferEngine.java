package io.kvledger.rdma;

import java.util.UUID;
import reactor.core.publisher.Flux;

/**
 * The transfer-engine port, in the shape of MoRIIO's mori {@code IOEngine}: register memory and
 * hand its descriptor to peers, open sessions to peers' regions, post batches of reads or
 * writes with a transfer id, and receive their completions as a {@link Flux} of
 * {@link TransferEvent}s.
 *
 * <p>Failures are data: every refusal is a {@link Result.Err} and every accepted batch gets
 * exactly one event, a {@link TransferEvent.Failed} for an unreachable peer, a bad remote key,
 * a closed endpoint or a transfer past {@link EngineOptions#transferTimeout()}.
 *
 * <p>Threading: all methods are thread-safe. {@link Session#post} never waits; an engine may
 * copy a small batch inside it ({@link EngineOptions#inlineCopyMaxBytes}, at most about 0.1 ms
 * here: the in-JVM engine, and UCX to a peer region mapped into this process) and then completes
 * the batch before {@code post} returns.
 * {@link #register} and {@link #close} may wait (bounded by the transfer timeout) for the
 * engine's own thread and belong in setup and shutdown code, not on a Reactor thread.
 */
public interface TransferEngine extends AutoCloseable {

    /** {@code "ucx"} or {@code "in-jvm"}; also the descriptor's engine kind. */
    String kind();

    UUID id();

    EngineOptions options();

    /**
     * Allocates {@code lengthBytes} of zeroed, page-aligned off-heap memory owned by this engine
     * and registers it for remote access.
     */
    Result<MemoryRegion> register(String name, long lengthBytes);

    /** Opens a session from a local region of this engine to a peer's region. */
    Result<Session> openSession(MemoryRegion local, RegionDescriptor remote);

    /**
     * As {@link #openSession(MemoryRegion, RegionDescriptor)}, refusing with
     * {@link FailureCode#WRONG_REGION} a descriptor whose region name is not
     * {@code expectedRegionName} (the name the handshake promised).
     */
    default Result<Session> openSession(MemoryRegion local, RegionDescriptor remote, String expectedRegionName) {
        if (remote != null && expectedRegionName != null && !expectedRegionName.equals(remote.name())) {
            return Result.err(FailureCode.WRONG_REGION, "descriptor is for region '" + remote.name() + "' (id "
                    + remote.regionId() + " of engine " + remote.engineId() + "), expected '" + expectedRegionName
                    + "'");
        }
        return openSession(local, remote);
    }

    /**
     * Completions of every batch posted on this engine, hot: events are buffered until the first
     * subscriber arrives, later subscribers see only later events. The flux completes when the
     * engine closes. Events are emitted from the engine's thread, or, for a batch an engine
     * completed inline, from the posting thread inside {@code post}; do not block in a subscriber.
     */
    Flux<TransferEvent> completions();

    EngineStats stats();

    /**
     * Fails the batches still in flight with {@link FailureCode#CANCELED}, closes endpoints,
     * unregisters and frees every region, and stops the engine's thread. Idempotent.
     */
    @Override
    void close();
}

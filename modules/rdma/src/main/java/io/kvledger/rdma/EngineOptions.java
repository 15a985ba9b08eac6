package io.kvledger.rdma;

import java.time.Duration;
import java.util.Objects;

/**
 * Engine settings.
 *
 * @param transferTimeout bound on every batch and on every blocking setup call (MoRIIO's
 *                        {@code transfer_timeout}, default 30 s)
 * @param errorHandling   UCX only: how endpoints handle peer failure (see {@link ErrorHandling})
 * @param netDevices      UCX only: the {@code NET_DEVICES} setting, which network devices UCX's
 *                        tcp may use ({@code "lo"} by default, so that tests never leave the host)
 * @param name            a name for threads and log lines
 * @param inlineCopyMaxBytes a batch of at most this many bytes, posted while nothing of its session
 *                        waits on the engine thread, is copied and completed on the posting thread
 *                        before {@code post} returns (its completion event is emitted on that
 *                        thread too): always by the in-JVM engine, and by the UCX engine when UCX
 *                        maps the peer's region into this process (shared memory without peer
 *                        error handling); {@code 0} sends every batch to the engine thread.
 *                        Default {@link #DEFAULT_INLINE_COPY_MAX_BYTES}.
 */
public record EngineOptions(Duration transferTimeout, ErrorHandling errorHandling, String netDevices, String name,
                            long inlineCopyMaxBytes) {

    /** MoRIIO's {@code DEFAULT_TRANSFER_TIMEOUT}. */
    static final Duration DEFAULT_TRANSFER_TIMEOUT = Duration.ofSeconds(30);

    /**
     * 1 MiB: such a copy takes about 0.1 ms here, and below it a hand-off to the engine thread and
     * back costs a measurable share of the bandwidth on a small machine (benchmarks/README.md,
     * TransferBandwidthRunner); larger batches go to the engine thread so that a poster is never
     * held for milliseconds.
     */
    public static final long DEFAULT_INLINE_COPY_MAX_BYTES = 1 << 20;

    /**
     * UCX endpoint error handling, chosen per peer endpoint.
     *
     * <p>{@link #PEER} ({@code UCP_ERR_HANDLING_MODE_PEER}) makes UCX report a failed peer on
     * every request (an endpoint error handler) and allows force-closing an endpoint. Between
     * processes of one host the UCX engine runs it over posix shared memory (UCX's sysv transport
     * has no peer-failure support, and tcp would emulate RMA with active messages, which UCX 1.13
     * aborts the target over when its initiator dies mid-transfer); to other hosts without RDMA
     * devices it runs over tcp.
     *
     * <p>{@link #NONE} lets UCX use shared memory. A failed peer is then noticed only by
     * {@code transfer_timeout}, after which its endpoint is force-closed.
     *
     * <p>{@link #AUTO} (the default) uses {@code NONE} for a peer whose descriptor names this
     * host ({@link RegionDescriptor#isOnThisHost()}) and {@code PEER} for any other.
     */
    public enum ErrorHandling { AUTO, PEER, NONE }

    public EngineOptions {
        Objects.requireNonNull(transferTimeout, "transferTimeout");
        Objects.requireNonNull(errorHandling, "errorHandling");
        Objects.requireNonNull(netDevices, "netDevices");
        Objects.requireNonNull(name, "name");
        if (transferTimeout.isNegative() || transferTimeout.isZero()) {
            throw new IllegalArgumentException("transferTimeout must be positive, got " + transferTimeout);
        }
        if (inlineCopyMaxBytes < 0) {
            throw new IllegalArgumentException("inlineCopyMaxBytes must not be negative, got " + inlineCopyMaxBytes);
        }
    }

    /** 30 s timeout, automatic error handling, tcp on lo, small in-JVM batches copied inline. */
    public static EngineOptions defaults() {
        return new EngineOptions(DEFAULT_TRANSFER_TIMEOUT, ErrorHandling.AUTO, "lo", "kvledger",
                DEFAULT_INLINE_COPY_MAX_BYTES);
    }

    public EngineOptions withTransferTimeout(Duration d) {
        return new EngineOptions(d, errorHandling, netDevices, name, inlineCopyMaxBytes);
    }

    public EngineOptions withErrorHandling(ErrorHandling e) {
        return new EngineOptions(transferTimeout, e, netDevices, name, inlineCopyMaxBytes);
    }

    EngineOptions withNetDevices(String devices) {
        return new EngineOptions(transferTimeout, errorHandling, devices, name, inlineCopyMaxBytes);
    }

    public EngineOptions withName(String n) {
        return new EngineOptions(transferTimeout, errorHandling, netDevices, n, inlineCopyMaxBytes);
    }

    public EngineOptions withInlineCopyMaxBytes(long bytes) {
        return new EngineOptions(transferTimeout, errorHandling, netDevices, name, bytes);
    }
}

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
 */
public record EngineOptions(Duration transferTimeout, ErrorHandling errorHandling, String netDevices, String name) {

    /** MoRIIO's {@code DEFAULT_TRANSFER_TIMEOUT}. */
    public static final Duration DEFAULT_TRANSFER_TIMEOUT = Duration.ofSeconds(30);

    /**
     * UCX endpoint error handling, chosen per peer endpoint.
     *
     * <p>{@link #PEER} ({@code UCP_ERR_HANDLING_MODE_PEER}) makes UCX report a failed peer on
     * every request (an endpoint error handler) and allows force-closing an endpoint. UCX 1.13's
     * shared-memory transports have no peer-failure support, so between processes of one host
     * without RDMA devices this mode runs over tcp, at about a quarter of the shared-memory
     * bandwidth here.
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
    }

    /** 30 s timeout, automatic error handling, tcp on lo. */
    public static EngineOptions defaults() {
        return new EngineOptions(DEFAULT_TRANSFER_TIMEOUT, ErrorHandling.AUTO, "lo", "kvledger");
    }

    public EngineOptions withTransferTimeout(Duration d) {
        return new EngineOptions(d, errorHandling, netDevices, name);
    }

    public EngineOptions withErrorHandling(ErrorHandling e) {
        return new EngineOptions(transferTimeout, e, netDevices, name);
    }

    public EngineOptions withNetDevices(String devices) {
        return new EngineOptions(transferTimeout, errorHandling, devices, name);
    }

    public EngineOptions withName(String n) {
        return new EngineOptions(transferTimeout, errorHandling, netDevices, n);
    }
}

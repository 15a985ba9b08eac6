package io.kvledger.rdma.spi;

import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.RegionDescriptor;
import io.kvledger.rdma.TransferError;

/** The checks every engine makes before opening a session, in the order they are reported. */
public final class SessionRules {

    private SessionRules() {}

    /**
     * The first reason to refuse a session from {@code local} to {@code remote}, or {@code null}.
     *
     * @param accepting  whether the engine still opens sessions
     * @param engine     the engine's label, for messages
     * @param ownedHere  whether {@code local} was registered by this engine
     * @param kind       the descriptor engine kind this engine imports
     * @param kindName   how messages name that kind ("UCX", "the in-JVM engine")
     */
    public static TransferError check(MemoryRegion local, RegionDescriptor remote, boolean accepting, String engine,
                                      boolean ownedHere, String kind, String kindName) {
        if (local == null || remote == null) {
            return new TransferError(FailureCode.INVALID_ARGUMENT, "local region and remote descriptor must not be null");
        }
        if (!accepting) {
            return new TransferError(FailureCode.ENGINE_CLOSED, engine + " is closed");
        }
        if (!ownedHere) {
            return new TransferError(FailureCode.INVALID_ARGUMENT, "region '" + local.name() + "' was not registered by " + engine);
        }
        if (!local.isOpen()) {
            return new TransferError(FailureCode.REGION_CLOSED, "local region '" + local.name() + "' is closed");
        }
        if (!kind.equals(remote.engineKind())) {
            return new TransferError(FailureCode.FOREIGN_ENGINE, "descriptor of region '" + remote.name() + "' comes from a '"
                    + remote.engineKind() + "' engine, not " + kindName);
        }
        return null;
    }
}

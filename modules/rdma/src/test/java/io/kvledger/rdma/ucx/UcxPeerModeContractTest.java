package io.kvledger.rdma.ucx;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.rdma.EngineContract;
import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.TransferEngine;

/** The engine contract over UCX with peer error handling (tcp on lo on hosts without RDMA devices). */
class UcxPeerModeContractTest extends EngineContract {

    @Override
    protected TransferEngine open(EngineOptions options) {
        Ucx.Availability a = Ucx.load();
        assumeTrue(a.loaded(), () -> "UCX not available here: " + a.detail());
        return UcxTransferEngine.open(options.withErrorHandling(EngineOptions.ErrorHandling.PEER)).orElseThrow();
    }

    @Override
    protected String threadPrefix() {
        return "kvledger-ucx-";
    }
}

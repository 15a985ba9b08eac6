package io.kvledger.rdma.jvm;

import io.kvledger.rdma.EngineContract;
import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.TransferEngine;

/**
 * The engine contract over {@link InJvmTransferEngine} with inline copies turned off
 * ({@code inlineCopyMaxBytes = 0}): every batch runs and completes on the engine thread.
 */
class InJvmQueuedEngineContractTest extends EngineContract {

    @Override
    protected EngineOptions options(String name) {
        return super.options(name).withInlineCopyMaxBytes(0);
    }

    @Override
    protected TransferEngine open(EngineOptions options) {
        return InJvmTransferEngine.open(options);
    }

    @Override
    protected String threadPrefix() {
        return "kvledger-injvm-";
    }
}

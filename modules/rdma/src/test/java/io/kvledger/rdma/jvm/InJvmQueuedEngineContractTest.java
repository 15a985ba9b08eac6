package io.kvledger.rdma.jvm;

import io.kvledger.rdma.EngineOptions;

/**
 * The engine contract over {@link InJvmTransferEngine} with inline copies turned off
 * ({@code inlineCopyMaxBytes = 0}): every batch runs and completes on the engine thread.
 */
class InJvmQueuedEngineContractTest extends InJvmEngineContractTest {

    @Override
    protected EngineOptions options(String name) {
        return super.options(name).withInlineCopyMaxBytes(0);
    }

    @Override
    protected boolean mayCompleteOnPostingThread() {
        return false;
    }
}

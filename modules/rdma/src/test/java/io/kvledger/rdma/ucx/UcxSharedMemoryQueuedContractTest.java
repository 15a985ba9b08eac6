package io.kvledger.rdma.ucx;

import io.kvledger.rdma.EngineOptions;

/**
 * The engine contract over UCX shared memory with direct copies turned off
 * ({@code inlineCopyMaxBytes = 0}): every batch is a put or get on the progress thread.
 */
class UcxSharedMemoryQueuedContractTest extends UcxSharedMemoryContractTest {

    @Override
    protected EngineOptions options(String name) {
        return super.options(name).withInlineCopyMaxBytes(0);
    }

    @Override
    protected boolean mayCompleteOnPostingThread() {
        return false;
    }
}

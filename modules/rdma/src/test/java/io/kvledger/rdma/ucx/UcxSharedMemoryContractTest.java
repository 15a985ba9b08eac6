package io.kvledger.rdma.ucx;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.rdma.EngineContract;
import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.TransferEngine;

/**
 * The engine contract over UCX without peer error handling (shared memory on one host), with the
 * default options: batches up to {@link EngineOptions#DEFAULT_INLINE_COPY_MAX_BYTES} are copied
 * directly into the peer's mapped region.
 */
class UcxSharedMemoryContractTest extends EngineContract {

    @Override
    protected TransferEngine open(EngineOptions options) {
        Ucx.Availability a = Ucx.load();
        assumeTrue(a.loaded(), () -> "UCX not available here: " + a.detail());
        return UcxTransferEngine.open(options.withErrorHandling(EngineOptions.ErrorHandling.NONE)).orElseThrow();
    }

    @Override
    protected String threadPrefix() {
        return "kvledger-ucx-";
    }

    /** Small batches are copied into the peer's region, mapped here, by the posting thread. */
    @Override
    protected boolean mayCompleteOnPostingThread() {
        return true;
    }
}

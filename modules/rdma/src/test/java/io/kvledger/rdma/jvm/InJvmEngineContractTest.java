package io.kvledger.rdma.jvm;

import io.kvledger.rdma.EngineContract;
import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.TransferEngine;

/**
 * The engine contract over {@link InJvmTransferEngine} with its default options: batches up to
 * {@link EngineOptions#DEFAULT_INLINE_COPY_MAX_BYTES} complete on the posting thread.
 */
class InJvmEngineContractTest extends EngineContract {

    @Override
    protected TransferEngine open(EngineOptions options) {
        return InJvmTransferEngine.open(options);
    }

    @Override
    protected String threadPrefix() {
        return "kvledger-injvm-";
    }

    @Override
    protected boolean mayCompleteOnPostingThread() {
        return true;
    }
}

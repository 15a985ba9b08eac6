package io.kvledger.rdma.jvm;

import io.kvledger.rdma.EngineContract;
import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.TransferEngine;

/** The engine contract over {@link InJvmTransferEngine}. */
class InJvmEngineContractTest extends EngineContract {

    @Override
    protected TransferEngine open(EngineOptions options) {
        return InJvmTransferEngine.open(options);
    }

    @Override
    protected String threadPrefix() {
        return "kvledger-injvm-";
    }
}

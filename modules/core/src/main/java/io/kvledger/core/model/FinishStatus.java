package io.kvledger.core.model;

/** vLLM's {@code RequestStatus} values a request can finish with. */
public enum FinishStatus {
    FINISHED_STOPPED,
    FINISHED_LENGTH_CAPPED,
    FINISHED_ABORTED,
    FINISHED_IGNORED,
    FINISHED_ERROR
}

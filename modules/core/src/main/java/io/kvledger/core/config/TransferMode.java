package io.kvledger.core.config;

import io.kvledger.core.moriio.ExtraConfig;

/** WRITE: the producer pushes KV into decode blocks. READ: the consumer pulls from prefill blocks. */
public enum TransferMode {
    READ,
    WRITE;

    /** {@code get_moriio_mode}: {@code str(read_mode).lower().strip()} in {"true", "1"} gives READ. */
    public static TransferMode fromReadMode(Object readMode) {
        return ExtraConfig.parseReadMode(readMode) ? READ : WRITE;
    }
}

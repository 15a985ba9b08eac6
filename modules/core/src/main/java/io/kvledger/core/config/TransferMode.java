package io.kvledger.core.config;

import io.kvledger.core.moriio.ExtraConfig;

/** WRITE: the producer pushes KV into decode blocks. READ: the consumer pulls from prefill blocks. */
public enum TransferMode {
    READ,
    WRITE;

    /** {@code get_moriio_mode}: {@code str(read_mode).lower().strip()} in {"true", "1"} gives READ. */
    static TransferMode fromReadMode(Object readMode) {
        return ExtraConfig.parseReadMode(readMode) ? READ : WRITE;
    }

    /**
     * vLLM 239b5ff30's {@code get_moriio_mode()}: {@code envs.VLLM_MORIIO_CONNECTOR_READ_MODE}, which
     * vLLM parses as {@code os.getenv(name, "False").lower() in ("true", "1")} (no stripping).
     *
     * @param env the variable's value, or {@code null} when unset
     */
    static TransferMode fromEnvReadMode(String env) {
        String s = (env == null ? "False" : env).toLowerCase(java.util.Locale.ROOT);
        return s.equals("true") || s.equals("1") ? READ : WRITE;
    }
}

package io.kvledger.core.config;

/** The kind of a KV-cache group, as far as the connector's scheduler side cares. */
public enum GroupKind {
    FULL_ATTENTION,
    SLIDING_WINDOW,
    MAMBA,
    /** Any other spec (for example chunked local attention): refused under HMA by the newest init. */
    OTHER
}

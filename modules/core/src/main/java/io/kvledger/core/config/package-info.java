/**
 * Node configuration as data: role, mode, ranks, KV-cache groups, timeouts, and the behaviour
 * {@link io.kvledger.core.config.Switch switches} with their {@code seed} and {@code newest}
 * presets. Depends on the JDK and {@code io.kvledger.core.moriio} only.
 */
package io.kvledger.core.config;

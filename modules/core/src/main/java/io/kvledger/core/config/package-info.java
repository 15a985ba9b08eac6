/**
 * Node configuration as data: role, mode, ranks, KV-cache groups, timeouts, and the behaviour
 * {@link io.kvledger.core.config.Switch switches} with their presets ({@code vllm-239b5ff30},
 * {@code seed}, {@code newest}) and {@link io.kvledger.core.config.UpstreamVersions}, the table from
 * vLLM versions and commits to presets. Depends on the JDK and {@code io.kvledger.core.moriio} only.
 */
package io.kvledger.core.config;

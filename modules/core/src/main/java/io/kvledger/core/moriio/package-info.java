/**
 * MoRIIO helpers, exact to the Python vLLM MoRIIO connector: addressing ({@link
 * io.kvledger.core.moriio.ZmqAddress}, the peer addresses embedded in request ids in {@link
 * io.kvledger.core.moriio.RequestIds}), port and rank arithmetic ({@link
 * io.kvledger.core.moriio.PortMath}), identities ({@code engine_id}, synthesized transfer ids)
 * and {@code kv_connector_extra_config} semantics ({@link io.kvledger.core.moriio.ExtraConfig}).
 *
 * <p>Every function is pure and deterministic. Where the Python code raises {@code ValueError},
 * the Java function returns a failed {@link io.kvledger.core.moriio.Checked} carrying the Python
 * message instead of throwing, so a reducer can journal the failure as an anomaly.
 *
 * <p>This package depends on the JDK only: no libraries, and no clocks, randomness, threads or
 * I/O.
 */
package io.kvledger.core.moriio;

/**
 * Routing requests over live nodes as vLLM's MoRIIO toy proxy does, for {@code kvledger cluster}
 * and tests: {@code LiveRouter} sends each client request over the legs the simulator's
 * {@code io.kvledger.sim.ToyRouter} picks, with the request ids and each leg's
 * {@code kv_transfer_params} it makes (the one toy-proxy router of the project), a {@code Leg} sends one leg to a
 * node ({@code LocalLeg} in-process, {@code HttpLeg} over the node's HTTP API), and
 * {@code LoopbackPorts} hands out distinct loopback ports (and runs of consecutive ones, an
 * instance's base port + {@code dp + tp}) below the ephemeral range for the nodes of one run. With
 * DP above 1 each DP rank is one leg, listed in the toy proxy's flat interleaved order.
 *
 * <p>{@code LiveCluster} is {@code kvledger cluster}'s work: it lays out and starts the node
 * processes ({@code NodeLauncher}: a JVM on this one's class path running the caller's main class,
 * since this module does not depend on the CLI), waits for them ({@code NodeHealth}), routes the
 * requests, stops the nodes and summarises their status files; the command keeps its options and
 * the {@code hangs} report. It lives in this module because it starts and reads live nodes and
 * uses the router, which all live here; the CLI only depends on it.
 *
 * <p>May depend on kvledger-core, kvledger-sim (the router, fault specs), kvledger-journal (JSON), the ledger's
 * {@code text} and {@code otlp} packages (durations, the OTLP endpoint check), the node package and its
 * {@code engine} package, and the JDK's HTTP client.
 */
package io.kvledger.node.cluster;

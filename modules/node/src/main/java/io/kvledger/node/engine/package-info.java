/**
 * What stands in the engine's place beside a node: {@code HookPort}, the node's side of the
 * connector hooks (a hook call goes into the inbox and its reply comes back when the loop has
 * journaled and applied it), {@code SimulatedEngine}, the built-in engine: the simulator's
 * {@code io.kvledger.sim.EngineModel} (vLLM's scheduler: admission, chunked prefill, finishes,
 * polls) driven by a thread over the hook port, adding the forward's waits, the TP vote and KV
 * blocks in the node's region, and {@code Completion}, how a request ended in the simulated
 * engine (what a vLLM response would carry, plus the KV bytes the data plane verified). With TP
 * above 1, {@code TpWorkers} carries the engine's hook calls to the nodes of its other TP ranks
 * (over their engine bridges) and {@code SimulatedWorker} is such a rank's model runner: it fills
 * and checks that rank's KV region from the hook calls it sees.
 *
 * <p>May depend on kvledger-core, kvledger-sim (the engine model), kvledger-wire's bridge codec, kvledger-zmq's
 * {@code EngineBridgeClient} and the node's {@code data} package. The node assembly and
 * the {@code cluster} package depend on it.
 */
package io.kvledger.node.engine;

/**
 * The node lifecycle reducer: {@code (NodeState, NodeEvent) -> (NodeState, List<Effect>)} for one
 * engine rank, reproducing the MoRIIO connector's scheduler side and worker side.
 *
 * <p>Shape: {@link io.kvledger.core.node.NodeState} is a mutable aggregate updated in place by
 * {@link io.kvledger.core.node.NodeReducer#apply} rather than a persistent value, because the
 * throughput budget (2 M events/s, at most 500 bytes allocated per event) rules out copying maps
 * per event. Determinism is kept by the rules of this package: no clock, no randomness, no
 * threads, no I/O, and only insertion-ordered collections (Python dicts are insertion-ordered, so
 * this also reproduces the connector's iteration order).
 *
 * <p>{@link io.kvledger.core.node.NodeState} composes the engine's view of the requests (their
 * records and phases, changed through the reducer's context) with two parts of its own type: the
 * scheduler side's tables in {@link io.kvledger.core.node.SchedulerSide} and the worker side's in
 * {@link io.kvledger.core.node.WorkerSide}, each private to the class whose hooks write them, so
 * that one side changes the other's tables only through the other's methods (the step's metadata
 * reaches the worker by {@code bindMetadata}, as {@code bind_connector_metadata} does). What a
 * side hands its readers (the state's renderings, the invariants, the other side) is read-only:
 * a request-keyed table as {@code RequestSlots.View}, a collection as an unmodifiable view made
 * once, so the compiler keeps readers from writing without a copy per read. A request's params
 * are read through {@link io.kvledger.core.model.KvTransferParams}, parsed once at admission; the
 * connector's writes to them go through it too. The reducer's context (the state, the event's
 * time, the effect sink) lives for one event, outside the state.
 *
 * <p>Hot tables keep that order in intrusive lists with a hash index that is only looked up, never
 * iterated: {@link io.kvledger.core.node.RequestSlots} (one record per request id for the nine
 * request-id tables of the scheduler side, so a hook looks its request up once),
 * {@link io.kvledger.core.node.PhaseTable} (a ring of entries in insertion order with an
 * open-addressing index), and {@link io.kvledger.core.node.MappingSnapshot} (the
 * worker's copy of the transfer-id map). Each behaves as the {@code LinkedHashMap} it replaced and
 * has a test against it.
 *
 * <p>{@link io.kvledger.core.node.Invariants} writes down what every reachable state holds
 * ({@link io.kvledger.core.node.NodeState#checkInvariants()}): the simulator, the property tests
 * and {@code replay --verify} check it after every event; the last through
 * {@link io.kvledger.core.node.NodeState#checkInvariantsSinceLastCheck()}, which checks only what
 * the event changed (the request slots it touched), so that it costs what the event did.
 *
 * <p>May depend on the JDK and the other {@code io.kvledger.core} packages only.
 */
package io.kvledger.core.node;

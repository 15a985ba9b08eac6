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
 * <p>May depend on the JDK and the other {@code io.kvledger.core} packages only.
 */
package io.kvledger.core.node;

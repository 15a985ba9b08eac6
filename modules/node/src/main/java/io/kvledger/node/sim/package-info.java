/**
 * Simulations journaled and reported: {@link io.kvledger.node.sim.SimJournalRecorder} is the
 * simulator's {@link io.kvledger.sim.Recorder} that writes one journal per simulated node, for
 * {@code kvledger simulate}, the demo, the benchmarks' big journals and tests;
 * {@link io.kvledger.node.sim.DemoReport} prints a run for people ({@code kvledger demo}) and
 * {@link io.kvledger.node.sim.SimulateReport} the summary of a journaled one ({@code kvledger simulate}). They
 * live here because this module depends on both the simulator and the journal and ledger, which
 * do not depend on the simulator.
 *
 * <p>Depends on {@code io.kvledger.journal}, {@code io.kvledger.sim}, {@code io.kvledger.core} and
 * the ledger's {@code text} and {@code report} packages only; no other package of this module.
 */
package io.kvledger.node.sim;

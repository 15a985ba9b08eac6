/**
 * The replay library: reading node journals back and re-running their reducers, shared by the
 * CLI's journal commands and by the live node (crash recovery, HTTP API).
 * <ul>
 *   <li>{@link io.kvledger.ledger.replay.JournalInputs} turns DIR arguments into node journals (a
 *       directory with queue files, or its journal subdirectories);</li>
 *   <li>{@link io.kvledger.ledger.replay.Replayer} replays several of them merged by event time
 *       through fresh node reducers and hands each input, its recomputed effects and its recorded
 *       derived entries to a listener; {@link io.kvledger.ledger.replay.ConfigOverrides} holds
 *       {@code --profile}/{@code --set};</li>
 *   <li>{@link io.kvledger.ledger.replay.NodeRebuild} rebuilds one node's state from its journal
 *       (state, last seq, last input time) for crash recovery;</li>
 *   <li>{@link io.kvledger.ledger.replay.Timeline} computes the timeline of one request or
 *       transfer ({@code inspect}), {@link io.kvledger.ledger.replay.Hangs} runs the hang
 *       detectors over a replay ({@code hangs}), both as data;</li>
 *   <li>{@link io.kvledger.ledger.replay.TimeMerge} streams several journals' entries in event-time
 *       order, {@link io.kvledger.ledger.replay.TransferIndex} correlates them by transfer id
 *       ({@code merge}), and {@link io.kvledger.ledger.replay.Mentions} names the request and
 *       transfer ids in an event or effect;</li>
 *   <li>{@link io.kvledger.ledger.replay.JournalMerge} writes several nodes' journals into one
 *       directory in event-time order with their transfer index ({@code merge}),
 *       {@link io.kvledger.ledger.replay.JournalVerify} checks journals' format and integrity
 *       ({@code verify}), {@link io.kvledger.ledger.replay.JournalImport} checks a JSON-lines file
 *       and the directory it goes to, imports it and rebuilds a node's derived entries from its
 *       inputs ({@code journal import}, {@code --derive}), under the header
 *       {@link io.kvledger.ledger.replay.HeaderOptions} make, and
 *       {@link io.kvledger.ledger.replay.JournalExport} writes a journal's JSON lines to a file
 *       ({@code journal export});</li>
 *   <li>{@link io.kvledger.ledger.replay.JsonLinesInputs} finds the node files of JSON lines in the
 *       layouts they come in (export trees, journal/fixtures, the vLLM bridge recorder's
 *       directory) and reads them through temporary journals, for the reading commands;</li>
 *   <li>{@link io.kvledger.ledger.replay.JournalTail} gives the last entries of a journal and
 *       follows it while its writer appends ({@code tail [-f]});</li>
 *   <li>{@link io.kvledger.ledger.replay.ProxyLedger} folds a proxy journal into one record per
 *       client request (both legs, their ids, status and timing) for {@code inspect} and
 *       {@code hangs}.</li>
 * </ul>
 *
 * <p>No output formatting and no picocli here: results are values, errors are exceptions with
 * messages a user can act on ({@link io.kvledger.ledger.replay.JournalInputs.InputException},
 * {@link io.kvledger.journal.JournalException}, {@link IllegalArgumentException} for bad
 * overrides or queries); callers print them.
 *
 * <p>May depend on kvledger-core, {@code io.kvledger.ledger.diagnosis}, kvledger-journal and
 * the JDK; the CLI and the live modules depend on it.
 */
package io.kvledger.ledger.replay;

/**
 * The {@code kvledger} command line (picocli): {@link io.kvledger.cli.Main} holds the table of
 * named commands and the exit-code contract (0 ok, 2 usage error or unusable input, 1 failure)
 * with one-line errors naming the command (a run that names its command registers only that one,
 * for a shorter start; {@code AotTraining} is the launcher's training run of the JVM's class archive); each command is a class of its own ({@code DemoCommand} runs the seeded cluster
 * simulation and prints it with {@code DemoReport}). Commands write only to the streams of their
 * {@code CommandLine}, so tests run them in-process on captured output. The journal-file
 * commands ({@code dump}, {@code tail}, {@code verify}, {@code merge}, {@code simulate},
 * {@code journal export|import}) share {@code JournalDirs} (DIR arguments, through
 * the journal module's {@code io.kvledger.ledger.replay.JournalInputs}) and the ledger's
 * {@code EntryText} (one line per entry) and {@code TypeFilter} ({@code --type}). The replaying
 * commands ({@code replay}, {@code inspect}, {@code hangs}, {@code stats}, and the demo's hangs
 * report) re-run the reducers through the replay library ({@code io.kvledger.ledger.replay}:
 * {@code Replayer}, {@code Timeline} for {@code inspect}, {@code Hangs} for {@code hangs}) and the
 * ledger's reports ({@code io.kvledger.ledger.report}: {@code ReplayReport} for {@code replay},
 * {@code StatsReport} for {@code stats}, {@code HangsReport} for {@code hangs} and the demo,
 * {@code InspectReport}, {@code VerifyReport}, {@code MergeReport}, {@code DumpReport});
 * {@code tail} reads through the library's {@code JournalTail}. The commands keep option parsing
 * and printing, and share {@code ReplayOptions} ({@code --profile}/{@code --set}) and
 * {@code Journals} (with {@code JsonLinesTrees}: a directory of JSON lines is read through
 * temporary journals): their human output is deterministic, with no absolute time and no path but
 * the journals' names. {@code serve} and
 * {@code inspect --html} show the ledger's web timeline ({@code io.kvledger.ledger.web}), whose
 * {@code TimelineJson} also writes {@code inspect --json} and the findings of {@code hangs --json}.
 * {@code export} sends
 * the journals' request lifecycles to an OTLP receiver through the ledger's
 * {@code io.kvledger.ledger.otlp} ({@code JournalTraces}, {@code OtlpSender}); {@code node --otlp}
 * attaches its {@code LiveTraces}. {@code demo --live} ({@code LiveDemo}) opens the proxy module's router
 * and tap in-process in front of the node module's {@code io.kvledger.node.demo.LiveDeployment}
 * ({@code node} processes of this jar and the vLLM bridge's Python fake engines, found through the
 * {@code kvledger.home} system property the launcher sets), then prints {@code tap-report} and
 * {@code hangs} over their journals. {@code cluster} is the options of the node module's
 * {@code io.kvledger.node.cluster.LiveCluster} and its {@code hangs} report.
 * {@code simulate} and the demo journal their simulations through the node module's
 * {@code io.kvledger.node.sim.SimJournalRecorder}.
 *
 * <p>May depend on every other kvledger module and picocli; no module depends on it.
 */
package io.kvledger.cli;

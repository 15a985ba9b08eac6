/**
 * Reading node journals back for the journal commands of the CLI: {@link
 * io.kvledger.cli.replay.JournalInputs} turns DIR arguments into node journals (a directory with
 * queue files, or its journal subdirectories), {@link io.kvledger.cli.replay.Replayer} replays
 * several of them merged by event time through fresh node reducers and hands each input, its
 * recomputed effects and its recorded derived entries to a listener, {@link
 * io.kvledger.cli.replay.ConfigOverrides} holds {@code --profile}/{@code --set}, and {@link
 * io.kvledger.cli.replay.Mentions} names the request and transfer ids in an event or effect.
 *
 * <p>A small, stable API shared by {@code replay}, {@code inspect}, {@code hangs}, {@code stats},
 * {@code dump}, {@code verify} and {@code merge}. No output formatting and no picocli here: errors
 * are exceptions with messages a user can act on, the commands print them.
 *
 * <p>May depend on kvledger-core and kvledger-journal (and the JDK); nothing outside the cli
 * module depends on it.
 */
package io.kvledger.cli.replay;

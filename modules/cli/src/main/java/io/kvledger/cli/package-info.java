/**
 * The {@code kvledger} command line (picocli): {@link io.kvledger.cli.Main} holds the table of
 * named commands and the exit-code contract (0 ok, 2 usage error with the command's usage, 1
 * failure); each command is a class of its own ({@code DemoCommand} runs the seeded cluster
 * simulation and prints it with {@code DemoReport}). Commands write only to the streams of their
 * {@code CommandLine}, so tests run them in-process on captured output.
 *
 * <p>May depend on every other kvledger module and picocli; nothing depends on it.
 */
package io.kvledger.cli;

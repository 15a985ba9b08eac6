/**
 * The live demo's deployment, for {@code kvledger demo --live}: {@code LiveDeployment} starts one
 * prefill and one decode node process ({@code --engine bridge}) with a Python fake engine each,
 * behind a front (the proxy and the tap) that the caller opens once the ports are known, sends the
 * completions, kills and restarts the decode's engine part-way, stops everything and returns what
 * the clients saw and the nodes' status files. The command prints it and runs the reports.
 *
 * <p>The front is an interface here because the proxy and tap modules sit beside this one, not
 * below it (their tests use the node); the CLI, which depends on all three, opens them.
 *
 * <p>May depend on kvledger-core, kvledger-sim (fault specs), kvledger-journal (JSON), the ledger's
 * {@code text} package, this module's {@code cluster} package (ports, node processes, health), and
 * the JDK's HTTP client.
 */
package io.kvledger.node.demo;

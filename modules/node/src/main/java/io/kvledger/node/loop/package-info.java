/**
 * The node's single loop and what it is made of: {@link io.kvledger.node.loop.NodeLoop} (the one
 * thread that owns the {@code NodeState}), its bounded {@link io.kvledger.node.loop.Inbox} (whose
 * {@link io.kvledger.node.loop.Inbox.Idle} lets the loop read a socket itself while idle), the
 * journaller thread that appends what the loop applied, {@link io.kvledger.node.loop.Delivery}
 * (bounded retry for the adapters), the {@link io.kvledger.node.loop.EffectRouter} the loop hands
 * its I/O commands to, the {@link io.kvledger.journal.ServiceClock}, and the
 * {@link io.kvledger.node.loop.NodeStatus} snapshot the loop publishes after each batch for the
 * node's readers (HTTP, metrics, the CLI's status file).
 *
 * <p>The bottom of the node module: it may depend on kvledger-core and kvledger-journal only; the
 * node service, HTTP, metrics, tracing and the shadow depend on it, not the other way round.
 */
package io.kvledger.node.loop;

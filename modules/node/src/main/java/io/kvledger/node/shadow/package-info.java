/**
 * The shadow node ({@code kvledger node --engine shadow}): a kvledger node that observes a real
 * vLLM connector instead of driving one. {@link io.kvledger.node.shadow.ShadowIntake} reads the
 * streams the vLLM bridge's recorder pushes ({@code record_to: tcp://...}, modules/vllm-bridge)
 * off a {@link io.kvledger.zmq.ShadowStreamServer}, parses their lines with the journal's JSON-lines
 * import ({@link io.kvledger.journal.JsonLines#parseLine}) and hands each hook call, with the real
 * connector's recorded answers, to the node loop; {@link io.kvledger.node.shadow.ShadowMonitor}
 * (the loop's {@link io.kvledger.node.loop.NodeLoop.Observer}) compares the reducer's answers with
 * those ({@link io.kvledger.ledger.replay.BridgeReplies}, as {@code replay --verify} does) and
 * keeps the divergences for the HTTP API and the metrics.
 *
 * <p>May depend on kvledger-core, -journal, -zmq, kvledger-ledger (replay) and the node's {@code loop}
 * package; the node service and the HTTP package read it, the metrics through the status snapshot.
 */
package io.kvledger.node.shadow;

/**
 * A live node's data plane: {@code DataPlane} owns the node's one KV region and its transfer
 * engine (UCX between processes when libucp loads, else the in-JVM engine), binds a session to
 * each peer region before the reducer hears that the handshake completed, posts the reducer's
 * writes and reads and hands their completions back as {@code TransferCompleted}; {@code KvLayout}
 * maps block ids and layers to byte ranges of the region, and {@code KvPattern} fills and checks
 * blocks with a pattern derived from the request, so every transferred byte can be verified.
 *
 * <p>May depend on kvledger-core (effects and events), kvledger-rdma (engines, the completion
 * adapter, the KV layout), kvledger-wire and kvledger-zmq (the handshake's agent metadata).
 * The node assembly ({@code NodeService}) and the simulated engine depend on it.
 */
package io.kvledger.node.data;

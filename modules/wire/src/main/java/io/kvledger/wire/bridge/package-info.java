/**
 * The engine bridge protocol: how an engine's KV-connector hook calls (vLLM's scheduler and
 * worker connector methods, forwarded by a thin Python connector) reach a kvledger node over a
 * local ZMQ socket, and how the node's reducer answers them. The protocol itself, with one
 * example per hook, is documented in {@code docs/bridge-protocol.md}.
 *
 * <ul>
 *   <li>{@link io.kvledger.wire.bridge.BridgeCodec}: request decoding into
 *       {@link io.kvledger.wire.bridge.BridgeRequest}s (never throws; bounded; rejections name the
 *       field), reply encoding from the effects of one reducer transition, and the engine-side
 *       direction (request encoding, reply decoding) for Java clients and tests.</li>
 *   <li>{@link io.kvledger.wire.bridge.HookCall}: the decoded arguments, one record per hook; the
 *       engine hooks turn into {@code NodeEvent}s at a time the receiving adapter stamps (the
 *       engine sends no clock).</li>
 *   <li>{@link io.kvledger.wire.bridge.BridgeNodeInfo}: what {@code hello} reports and checks.</li>
 *   <li>{@link io.kvledger.wire.bridge.BridgeSession}: what the node remembers of one connection
 *       between frames (the last step read, for {@code steady} steps); nothing else carries over.</li>
 * </ul>
 *
 * <p>Values cross as Python's {@code msgpack} 1.0 writes and reads them
 * ({@code use_bin_type=True}, {@code raw=False}), through {@link io.kvledger.wire.PyMsgpack}.
 *
 * <p>Depends on {@code io.kvledger.core} (events, effects, model), {@code io.kvledger.wire}
 * ({@code PyMsgpack}, rejections, limits); no threads, clocks or I/O.
 */
package io.kvledger.wire.bridge;

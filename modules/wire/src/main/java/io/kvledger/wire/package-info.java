/**
 * The MoRIIO control-plane wire format: a msgpack codec for every message vLLM's MoRIIO peers
 * exchange over ZMQ (protocol spec sections 2 and 3), byte-compatible with Python's
 * {@code msgpack} 1.0 ({@code use_bin_type=True}, {@code raw=False}) and with the msgspec map
 * form of {@code MoRIIOAgentMetadata}.
 *
 * <h2>What is here</h2>
 * <ul>
 *   <li>Notify frames ({@link io.kvledger.wire.NotifyMessage}: {@code remote_blocks} and its
 *       legacy form without {@code type}, {@code write_done}, {@code release} with and without
 *       {@code consumer_tp_size}, raw UTF-8 completion ids): {@link io.kvledger.wire.NotifyDecoder},
 *       {@link io.kvledger.wire.NotifyEncoder}, their mapping onto the core's
 *       {@code NodeEvent}s and from its send {@code Effect}s ({@link io.kvledger.wire.NotifyEvents},
 *       {@link io.kvledger.wire.EffectFrames}), and {@link io.kvledger.wire.PythonNotifyListener},
 *       a model of what the Python listener thread does with the same bytes.</li>
 *   <li>Proxy registration ({@link io.kvledger.wire.Registration}), the handshake request
 *       ({@link io.kvledger.wire.HandshakeRequest}), the agent metadata
 *       ({@link io.kvledger.wire.AgentMetadata}) and the layer-to-descriptors map
 *       ({@link io.kvledger.wire.LayerMap}), with their codecs. Opaque mori blobs are carried as
 *       {@link io.kvledger.wire.OpaqueBytes} and passed through untouched.</li>
 *   <li>{@link io.kvledger.wire.PyMsgpack}: whole frames as generic Python values, strict and
 *       bounded, for dict-shaped protocols; the engine bridge protocol built on it lives in
 *       {@code io.kvledger.wire.bridge}.</li>
 *   <li>The one Python-value codec, {@link io.kvledger.wire.PyValues}, which the journal uses
 *       too (params, transfer ids, its header): how Python values pack, and how the journal reads
 *       its own bytes back; {@link io.kvledger.wire.MsgpackWriter} writes msgpack in place into a
 *       {@link io.kvledger.wire.GrowableBytes} (the wire's encoders' buffer, the journal writer's
 *       group buffer), behind the {@link io.kvledger.wire.MsgOut} interface that msgpack-java's
 *       packer also fits. The sealed form of a Python value is the core's
 *       {@link io.kvledger.core.model.PyValue} (so the reducer's params can use it too):
 *       {@link io.kvledger.wire.PyValues#value} converts the plain-Java form to it, the codec packs
 *       it and {@link io.kvledger.wire.PyMsgpack#decodeValue} reads it.</li>
 * </ul>
 *
 * <h2>Contracts</h2>
 * <ul>
 *   <li><b>Encoding</b> packs keys in the order Python builds its dicts and uses the same
 *       (smallest) msgpack formats Python does, so the bytes equal Python's for the same key
 *       order. Keys and strings are always msgpack {@code str}, never {@code bin}, in what goes
 *       to a peer (the journal keeps any key it is given).</li>
 *   <li><b>Decoding never throws</b> and never allocates by a frame's claims: every header's
 *       claimed count or length is checked against the bytes actually left before anything is
 *       sized by it, and frames over {@link io.kvledger.wire.WireLimits#maxFrameBytes()} are
 *       rejected unread. A bad frame yields a {@link io.kvledger.wire.DecodeResult.Rejected} with
 *       a {@link io.kvledger.wire.RejectReason} (a stable code), a detail text, and a flag saying
 *       whether the same frame would have killed the Python listener thread.</li>
 *   <li>Codec instances ({@code NotifyDecoder}, {@code NotifyEncoder}, ...) reuse buffers and
 *       are <b>not thread-safe</b>: give each thread its own. The static one-shot methods
 *       create a fresh instance per call. Values (records) are immutable.</li>
 * </ul>
 *
 * <p>Why the decoder streams with msgpack-core's {@code MessageUnpacker} primitives instead of
 * {@code unpackValue()}: the value API sizes arrays by the header's claim (an array32 header
 * claiming 2^31 items allocates before reading one), and reads {@code bin} as a string unless
 * told not to. Streaming with explicit bound checks keeps the decoder strict, bounded and fast.
 *
 * <p>Depends on {@code io.kvledger.core} (events, effects) and {@code org.msgpack:msgpack-core};
 * no threads, clocks or I/O.
 */
package io.kvledger.wire;

/**
 * Reactive JeroMQ adapters for the MoRIIO control plane (protocol spec sections 2 and 3):
 * {@link io.kvledger.zmq.NotifyListenerAdapter} (notify ROUTER to events),
 * {@link io.kvledger.zmq.NotifyPublisher} (send effects to single frames on cached DEALERs),
 * {@link io.kvledger.zmq.NotifyRelay} (a tap's ROUTER that forwards every message unchanged to
 * the real notify port and reports what it decoded to),
 * {@link io.kvledger.zmq.HandshakeServer} and {@link io.kvledger.zmq.HandshakeClient}, and
 * {@link io.kvledger.zmq.RegistrationHeartbeat} to a proxy, and
 * {@link io.kvledger.zmq.EngineBridgeServer}, the loopback ROUTER (ZMTP 3.1 spoken by
 * {@code ZmtpBridgeTransport} itself, over {@code tcp://} or, as libzmq's {@code ipc://}, a Unix
 * socket whose file {@code SocketFile} keeps; or JeroMQ's on request), or, for an engine on the same
 * host, the Unix domain socket of {@code UnixBridgeTransport}, where an engine's connector sends
 * its hook calls ({@code io.kvledger.wire.bridge}) and a {@link io.kvledger.zmq.HookHandler}
 * answers each {@link io.kvledger.zmq.BridgeCall} from any thread (over JeroMQ answers are queued to
 * the socket thread, which a pipe in its poller wakes; over the bridge's own transports the answering thread
 * writes its answer itself while the socket thread waits, and a server opened with
 * {@code openServedByCaller}, over either transport, is read and answered by the node loop itself
 * while it idles: no hand-off), and its Java engine side
 * {@link io.kvledger.zmq.EngineBridgeClient} (a simulated engine driving the nodes of its other TP
 * ranks), and
 * {@link io.kvledger.zmq.ShadowStreamServer}, the loopback PULL where the vLLM bridge's recorder
 * pushes its streams to a shadow node (raw frames to a handler, in arrival order).
 *
 * <h2>Threading</h2>
 * <ul>
 *   <li>JeroMQ sockets are not thread-safe. Every socket is created, used and closed by exactly
 *       one thread that the adapter owns (named {@code kvledger-...}); each adapter owns one
 *       {@code ZMQ.Context} whose I/O and reaper threads are named {@code kvledger-zmq-...}.</li>
 *   <li>Adapters hand what they observe to an {@link io.kvledger.zmq.EventSink}: a non-blocking
 *       {@code offer}. When the sink is full the adapter's own thread backs off and retries, so
 *       nothing is lost and the pressure travels back to ZMQ (which stops reading the socket)
 *       instead of into a Reactor or Netty thread. {@link io.kvledger.zmq.BoundedFluxSink} is the
 *       bounded, serialized, multi-producer sink that exposes the events as a {@code Flux}; a
 *       journal can be plugged in as any other {@code EventSink}.</li>
 *   <li>For a node's loop, the listener, the publisher and the handshake client have
 *       {@code openForNode} factories taking the core's
 *       {@link io.kvledger.core.event.NodeEventSink} (the loop's bounded inbox): they offer
 *       {@code NodeEvent}s (decoded notifies and {@code FrameRejected}, {@code NotifySendFailed},
 *       {@code HandshakeCompleted}/{@code HandshakeFailed}). On a refusal the adapter's own thread
 *       retries with a bounded backoff (default 1 s), then drops the event and counts it in
 *       {@code refused()} and logs it; an event found on a caller's thread (which may be the
 *       loop itself) is offered once.</li>
 *   <li>No public method blocks on I/O except {@code open}/{@code close}, which bind or tear
 *       down sockets and wait for the owner thread: call them from a thread that may block
 *       ({@code closeAsync} and the {@code Flux} factories never block the caller).</li>
 *   <li>Closing an adapter closes every socket it opened, terminates its context and ends every
 *       thread it started. {@link io.kvledger.zmq.CloseOnce} runs each adapter's close once;
 *       {@link io.kvledger.zmq.SocketThread} is the bind-then-loop thread of the adapters that
 *       own one socket.</li>
 *   <li>Nothing that arrives on a socket can end an adapter thread: malformed frames become
 *       {@code FrameRejected} events (with whether the Python listener would have died on them),
 *       failures of the adapter's own work become {@link io.kvledger.zmq.AdapterEvent}s.</li>
 *   <li>JeroMQ keeps a reference to the {@code byte[]} it sends: every frame sent is a fresh
 *       array or a private copy, never reused.</li>
 * </ul>
 *
 * <p>Depends on {@code io.kvledger.core} (events, effects, port arithmetic),
 * {@code io.kvledger.wire} (codecs), JeroMQ and reactor-core.
 */
package io.kvledger.zmq;

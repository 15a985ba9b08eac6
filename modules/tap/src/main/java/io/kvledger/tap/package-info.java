/**
 * The tap: a transparent interposer on the MoRIIO notify path, and the cross-node view of what it
 * saw.
 *
 * <p>The proxy composes request ids whose embedded peer addresses name the engines' notify ports
 * plus a fixed shift; the engines' port arithmetic adds each rank's offset to the embedded base
 * port, so every notify lands on {@code real rank port + shift}, where {@link
 * io.kvledger.tap.Tap} listens (one {@code io.kvledger.zmq.NotifyRelay} per rank). Each
 * message is forwarded unchanged to the real port, decoded or not, and journaled (one journal per
 * rank, decoded frames and {@code FrameRejected}s, as {@code kvledger listen} journals them, through
 * {@link io.kvledger.tap.FrameJournal}). The data plane (RDMA) never passes through it.
 *
 * <p>Coverage. The tap sees a frame only when the sender resolved the peer from the request id:
 * the newest connectors (request-id-first resolution in {@code add_new_req} and in the decode
 * scheduler's notify target, protocol spec 2.3) for {@code remote_blocks}, {@code write_done},
 * the READ {@code release} and the WRITE-abort {@code release}. Connectors of the #39565 era,
 * where explicit {@code remote_notify_port} parameters win, send to the real ports and bypass the
 * tap. It cannot see the handshakes (their ports are not shifted), the registrations to the proxy,
 * the HTTP legs, the RDMA reads and writes, anything a rank does not send (a frame never sent and
 * a frame sent to an untapped port look the same), nor, in READ mode, a transfer none of whose
 * releases was sent.
 *
 * <p>{@link io.kvledger.tap.Listener} is {@code kvledger listen}: one notify ROUTER whose frames
 * are journaled the same way, with no forwarding.
 *
 * <p>{@link io.kvledger.tap.TapMetrics} serves the tap's counters per rank in Prometheus text
 * ({@code kvledger tap --metrics HOST:PORT}, {@code GET /metrics}), named as the node's and the
 * proxy's are, on the JDK's HTTP server.
 *
 * <p>{@link io.kvledger.tap.TapReport} joins the per-rank journals into one view per
 * transfer id: which of {@code remote_blocks}, {@code write_done} and {@code release} crossed to
 * which rank, and which never did.
 *
 * <p>May depend on core, wire, journal, kvledger-ledger (replay, metrics), zmq and Micrometer's
 * Prometheus registry; the CLI depends on it.
 */
package io.kvledger.tap;

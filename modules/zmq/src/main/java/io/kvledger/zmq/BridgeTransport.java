package io.kvledger.zmq;

import java.util.List;

/**
 * What an {@link EngineBridgeServer} reads its calls from and sends its replies on: a ROUTER over
 * {@code tcp://} speaking ZMTP itself ({@link ZmtpBridgeTransport}, the default) or JeroMQ's
 * ({@link ZmqBridgeTransport}), or a Unix domain socket ({@link UnixBridgeTransport},
 * {@code unix://}). Used by the server's socket thread only, except {@link #wake}, and
 * {@link #send} when {@link #answersDirectly}.
 */
interface BridgeTransport {

    /**
     * One message read: the caller's identity, how many frames followed it, and up to three of
     * them; or, with {@code closed} set, word that the transport closed a caller's connection for
     * what it sent (the reason; no frames).
     */
    record Message(byte[] identity, int parts, List<byte[]> frames, String closed) {

        Message(byte[] identity, int parts, List<byte[]> frames) {
            this(identity, parts, frames, null);
        }

        /** A connection closed for {@code reason}. */
        static Message closed(byte[] identity, String reason) {
            return new Message(identity, 0, List.of(), reason);
        }
    }

    /** What one non-blocking send did. */
    enum Send {
        /** Taken (it leaves in order, without blocking the server). */
        SENT,
        /** The caller's queue is full: hold it and try again later. */
        FULL,
        /** No such caller any more. */
        GONE
    }

    /** Binds (on the socket thread); returns the endpoint as callers reach it. */
    String bind();

    /** Waits until a message may be read, {@link #wake} was called, or {@code waitMs} passed (0: looks without waiting). */
    void await(long waitMs);

    /** Wakes {@link #await} (any thread). */
    void wake();

    /** The next whole message, or {@code null} when none is waiting. */
    Message receive();

    /** Sends one reply without blocking. */
    Send send(byte[] identity, boolean reqFraming, byte[] frame);

    /** Closes the socket, giving the last replies up to a second to leave. Socket thread. */
    void close();

    /** Releases what outlives the socket thread (a ZMQ context, the wake-up channel); after {@link #close}. */
    void release();

    /**
     * Whether another thread may {@link #send} (always under the server's lock, never while the
     * socket thread works): true when the transport has no I/O threads of its own and its socket
     * may be written from any thread while the socket thread waits in {@link #await}.
     */
    boolean answersDirectly();

    /** Whether the wake-up channel is still open. */
    boolean wakeUpOpen();
}

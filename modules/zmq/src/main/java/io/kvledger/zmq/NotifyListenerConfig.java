package io.kvledger.zmq;

import io.kvledger.core.moriio.PortMath;
import io.kvledger.wire.WireLimits;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Where and how a notify listener binds.
 *
 * @param bindEndpoint  the ZMQ bind endpoint, e.g. {@code tcp://*:61006}; port {@code *} or 0
 *                      binds an ephemeral port (see {@link NotifyListenerAdapter#endpoint()})
 * @param limits        the decoder's limits
 * @param maxMessageBytes ZMQ's own cap ({@code ZMQ_MAXMSGSIZE}): a peer sending a larger message
 *                      is disconnected by ZMQ before the message is read into memory. Above
 *                      {@link WireLimits#maxFrameBytes()} so frames between the two are still
 *                      received and rejected as {@code FRAME_TOO_LARGE}
 * @param receiveHwm    ZMQ's receive high-water mark per peer; when reached ZMQ stops reading that
 *                      peer's TCP stream (backpressure, nothing dropped)
 * @param clock         monotonic nanoseconds, stamped on every event
 */
public record NotifyListenerConfig(String bindEndpoint, WireLimits limits, long maxMessageBytes, int receiveHwm,
                                   LongSupplier clock) {

    public NotifyListenerConfig {
        Objects.requireNonNull(bindEndpoint, "bindEndpoint");
        Objects.requireNonNull(limits, "limits");
        Objects.requireNonNull(clock, "clock");
        if (maxMessageBytes < limits.maxFrameBytes()) {
            throw new IllegalArgumentException("maxMessageBytes " + maxMessageBytes + " is below the decoder limit "
                    + limits.maxFrameBytes());
        }
    }

    /** Binds {@code endpoint} as given ({@code tcp://HOST:PORT}, the CLI's {@code --bind}). */
    public static NotifyListenerConfig forEndpoint(String endpoint) {
        return new NotifyListenerConfig(endpoint, WireLimits.DEFAULT, 4L * WireLimits.DEFAULT.maxFrameBytes(), 1000, System::nanoTime);
    }

    /**
     * The listener of one worker rank, as the Python connector binds it:
     * {@code tcp://{bindHost}:{notifyPortBase + get_port_offset(dpLocal, tpRank)}}, the
     * two-argument offset {@code dp + tp} (protocol spec 2.1).
     */
    public static NotifyListenerConfig forRank(String bindHost, int notifyPortBase, int dpLocal, int tpRank) {
        return forEndpoint("tcp://" + bindHost + ":" + (notifyPortBase + PortMath.portOffset(dpLocal, tpRank)));
    }

    NotifyListenerConfig withLimits(WireLimits l) {
        return new NotifyListenerConfig(bindEndpoint, l, Math.max(maxMessageBytes, l.maxFrameBytes()), receiveHwm, clock);
    }

    /** The same with ZMQ's receive high-water mark per peer at {@code hwm} messages. */
    public NotifyListenerConfig withReceiveHwm(int hwm) {
        if (hwm < 1) {
            throw new IllegalArgumentException("receiveHwm must be positive: " + hwm);
        }
        return new NotifyListenerConfig(bindEndpoint, limits, maxMessageBytes, hwm, clock);
    }

    public NotifyListenerConfig withClock(LongSupplier c) {
        return new NotifyListenerConfig(bindEndpoint, limits, maxMessageBytes, receiveHwm, c);
    }
}

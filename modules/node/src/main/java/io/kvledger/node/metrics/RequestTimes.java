package io.kvledger.node.metrics;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * When each request was admitted and entered its current phase, in node time, and the transfer
 * id it was admitted with, as the loop applied them (the node state keeps phases, and forgets a
 * finished request's transfer id). Bounded like the state's memory of finished requests: the
 * oldest entries go first past {@value #MAX} requests. Requests admitted before a restart have
 * no entry.
 *
 * <p>Not thread-safe: written by the loop thread, read inside an {@code Inbox.query}.
 */
public final class RequestTimes {

    static final int MAX = 1 << 16;

    private static final class Times {
        long admittedAtNs = Long.MIN_VALUE;
        long phaseSinceNs = Long.MIN_VALUE;
        String transferId;
    }

    private final LinkedHashMap<String, Times> times = new LinkedHashMap<>(256, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Times> eldest) {
            return size() > MAX;
        }
    };

    private Times entry(String requestId) {
        Times e = times.get(requestId);
        if (e == null) {
            e = new Times();
            times.put(requestId, e);
        }
        return e;
    }

    void admitted(String requestId, String transferId) {
        if (requestId != null && transferId != null) {
            entry(requestId).transferId = transferId;
        }
    }

    void phaseChanged(String requestId, boolean admitted, long atNs) {
        if (requestId == null) {
            return;
        }
        Times e = entry(requestId);
        if (admitted && e.admittedAtNs == Long.MIN_VALUE) {
            e.admittedAtNs = atNs;
        }
        e.phaseSinceNs = atNs;
    }

    /** When the request was admitted, or {@code Long.MIN_VALUE} when unknown. */
    public long admittedAtNs(String requestId) {
        Times e = times.get(requestId);
        return e == null ? Long.MIN_VALUE : e.admittedAtNs;
    }

    /** When the request entered its current phase, or {@code Long.MIN_VALUE} when unknown. */
    public long phaseSinceNs(String requestId) {
        Times e = times.get(requestId);
        return e == null ? Long.MIN_VALUE : e.phaseSinceNs;
    }

    /** The transfer id the request was admitted with, or {@code null}. */
    public String transferId(String requestId) {
        Times e = times.get(requestId);
        return e == null ? null : e.transferId;
    }
}

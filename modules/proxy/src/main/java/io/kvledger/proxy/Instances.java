package io.kvledger.proxy;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.moriio.Checked;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.wire.Registration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The registered engine instances (protocol 3.1): keyed by {@code http_address}, a
 * re-registration updates in place; an instance with no heartbeat for the time to live expires
 * (the toy proxy never expires one). The transfer mode is the proxy's, or latched from the first
 * registrant; a registration of the other mode is rejected, as the toy proxy does. Instances are
 * picked round robin in registration order from the proxy's request count ({@link #pick}).
 * Thread-safe (one lock).
 */
final class Instances {

    /**
     * One registered instance.
     *
     * @param role        {@code "P"} or {@code "D"}
     * @param zmq         its {@code zmq_address}, parsed
     * @param lastSeenNs  when its last registration arrived
     */
    record Instance(String role, String httpAddress, String zmqAddress, ZmqAddress zmq, int dpSize, int tpSize,
                    String transferMode, long lastSeenNs) {

        /** {@code "http://{http_address}/v1"}, as the toy proxy derives it. */
        String requestAddress() {
            return "http://" + httpAddress + "/v1";
        }
    }

    /** What a registration did: an event to journal (null for a plain heartbeat), or a rejection. */
    record Outcome(ProxyEvent event, String rejection) {}

    private final Map<String, Instance> byAddress = new LinkedHashMap<>();
    private final long ttlNs;
    private TransferMode mode;

    Instances(TransferMode mode, long ttlNs) {
        this.mode = mode;
        this.ttlNs = ttlNs;
    }

    /** The transfer mode: the proxy's, or latched from the first registrant; null before that. */
    synchronized TransferMode mode() {
        return mode;
    }

    /** Applies one decoded registration (not HELLO) at {@code nowNs}. */
    synchronized Outcome register(Registration r, long nowNs) {
        Checked<ZmqAddress> zmq = ZmqAddress.parse(r.zmqAddress());
        if (!zmq.isOk()) {
            return new Outcome(null, zmq.error());
        }
        if (!validHttpAddress(r.httpAddress())) {
            return new Outcome(null, "http_address '" + r.httpAddress() + "' is not HOST:PORT");
        }
        if (r.dpSize() < 1 || r.tpSize() < 1) {
            return new Outcome(null, "dp_size and tp_size must be at least 1, got " + r.dpSize() + " and " + r.tpSize());
        }
        TransferMode m;
        try {
            m = TransferMode.valueOf(r.transferMode());
        } catch (IllegalArgumentException e) {
            return new Outcome(null, "transfer_mode '" + r.transferMode() + "' is not READ or WRITE");
        }
        if (mode == null) {
            mode = m;
        } else if (mode != m) {
            return new Outcome(null, "transfer_mode " + m + " of " + r.httpAddress() + " does not match the proxy's "
                    + mode);
        }
        Instance now = new Instance(r.type(), r.httpAddress(), r.zmqAddress(), zmq.value(), r.dpSize(), r.tpSize(),
                m.name(), nowNs);
        Instance before = byAddress.put(r.httpAddress(), now);
        if (before != null && before.role().equals(now.role()) && before.zmqAddress().equals(now.zmqAddress())
                && before.dpSize() == now.dpSize() && before.tpSize() == now.tpSize()) {
            return new Outcome(null, null);
        }
        return new Outcome(new ProxyEvent.InstanceRegistered(nowNs, now.role(), now.httpAddress(), now.zmqAddress(),
                now.dpSize(), now.tpSize(), now.transferMode(), before == null ? "new" : "updated"), null);
    }

    /** Removes the instances whose last heartbeat is older than the time to live; returns their events. */
    synchronized List<ProxyEvent> expire(long nowNs) {
        List<ProxyEvent> out = new ArrayList<>();
        var it = byAddress.values().iterator();
        while (it.hasNext()) {
            Instance i = it.next();
            if (nowNs - i.lastSeenNs() > ttlNs) {
                it.remove();
                out.add(new ProxyEvent.InstanceExpired(nowNs, i.role(), i.httpAddress(), i.lastSeenNs()));
            }
        }
        return out;
    }

    /**
     * A prefill and a decode instance for one request, with each one's DP rank when its DP size is
     * above 1 (else null).
     */
    record Pair(Instance prefill, Integer prefillDpRank, Instance decode, Integer decodeDpRank) {}

    /**
     * The instances for the {@code requestNumber}-th completion request (counted from 1, every
     * request the proxy took, as the toy proxy's {@code request_nums}): prefill
     * {@code n mod |P|} and decode {@code n mod |D|} in registration order, both from one count
     * as the toy proxy picks them; null when a role has no instance.
     *
     * <p>An instance of DP size above 1 gets rank {@code (n div |role|) mod dp_size}: its own
     * turns go round its ranks. That is what the toy proxy's call
     * {@code example_round_robin_dp_loader(request_nums // len(...), dp_size)} means, but its
     * loader returns {@code request_nums mod dp_size}, which aliases with the instance choice
     * (vLLM #46115: of two prefills of DP 2, the first only ever gets rank 0, the second rank 1).
     */
    synchronized Pair pick(long requestNumber) {
        List<Instance> p = of(Registration.PRODUCER);
        List<Instance> d = of(Registration.CONSUMER);
        if (p.isEmpty() || d.isEmpty()) {
            return null;
        }
        Instance pi = p.get((int) Math.floorMod(requestNumber, (long) p.size()));
        Instance di = d.get((int) Math.floorMod(requestNumber, (long) d.size()));
        return new Pair(pi, dpRank(requestNumber, p.size(), pi.dpSize()), di,
                dpRank(requestNumber, d.size(), di.dpSize()));
    }

    private static Integer dpRank(long requestNumber, int instances, int dpSize) {
        return dpSize > 1 ? (int) Math.floorMod(Math.floorDiv(requestNumber, (long) instances), (long) dpSize) : null;
    }

    /** The live instances of {@code role}, in registration order. */
    synchronized List<Instance> of(String role) {
        List<Instance> out = new ArrayList<>();
        for (Instance i : byAddress.values()) {
            if (i.role().equals(role)) {
                out.add(i);
            }
        }
        return out;
    }

    synchronized List<Instance> all() {
        return List.copyOf(byAddress.values());
    }

    private static boolean validHttpAddress(String a) {
        int colon = a.lastIndexOf(':');
        if (colon <= 0 || colon == a.length() - 1) {
            return false;
        }
        try {
            int port = Integer.parseInt(a.substring(colon + 1));
            return port > 0 && port <= 65535;
        } catch (NumberFormatException e) {
            return false;
        }
    }
}

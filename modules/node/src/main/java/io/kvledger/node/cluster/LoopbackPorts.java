package io.kvledger.node.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Free TCP ports on loopback for nodes started on this machine ({@code kvledger cluster}, tests,
 * benchmarks). Ports come from {@value #LOW} to {@value #HIGH}, below Linux's ephemeral range, so
 * the outgoing connections of running nodes never take them; every port handed out was bound
 * (and, for a set, held until the whole set was found, so two callers of one set never get the
 * same port). A port can still be taken between this check and the node's bind: the node then
 * fails to start with a clear error, never silently.
 */
public final class LoopbackPorts {

    static final int LOW = 20_000;
    static final int HIGH = 32_000;

    private LoopbackPorts() {}

    /** One free port. */
    public static int free() {
        return distinct(1)[0];
    }

    /** {@code n} distinct free ports. */
    public static int[] distinct(int n) {
        List<ServerSocket> held = new ArrayList<>();
        try {
            for (int attempt = 0; attempt < 1000 && held.size() < n; attempt++) {
                ServerSocket s = tryBind(ThreadLocalRandom.current().nextInt(LOW, HIGH));
                if (s != null) {
                    held.add(s);
                }
            }
            if (held.size() < n) {
                throw new IllegalStateException("found only " + held.size() + " of " + n + " free ports from " + LOW
                        + " to " + HIGH);
            }
            int[] ports = new int[n];
            for (int i = 0; i < n; i++) {
                ports[i] = held.get(i).getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket s : held) {
                try {
                    s.close();
                } catch (IOException e) {
                    // released either way
                }
            }
        }
    }

    /** A base port with {@code span} consecutive free ports from it (a rank binds base + dp + tp). */
    public static int freeRange(int span) {
        for (int attempt = 0; attempt < 200; attempt++) {
            int base = ThreadLocalRandom.current().nextInt(LOW, HIGH - span);
            List<ServerSocket> held = new ArrayList<>();
            try {
                for (int p = base; p < base + span; p++) {
                    ServerSocket s = tryBind(p);
                    if (s == null) {
                        break;
                    }
                    held.add(s);
                }
                if (held.size() == span) {
                    return base;
                }
            } finally {
                for (ServerSocket s : held) {
                    try {
                        s.close();
                    } catch (IOException e) {
                        // released either way
                    }
                }
            }
        }
        throw new IllegalStateException("no run of " + span + " free ports found from " + LOW + " to " + HIGH);
    }

    /**
     * For each {@code spans[i]}, a base port with that many consecutive free ports from it (1: a
     * single port); no two runs share a port (every port is held until all runs were found).
     */
    static int[] runs(int... spans) {
        List<ServerSocket> held = new ArrayList<>();
        try {
            int[] bases = new int[spans.length];
            for (int i = 0; i < spans.length; i++) {
                int span = spans[i];
                if (span < 1) {
                    throw new IllegalArgumentException("a run needs at least one port, got " + span);
                }
                boolean found = false;
                for (int attempt = 0; attempt < 500 && !found; attempt++) {
                    int base = ThreadLocalRandom.current().nextInt(LOW, HIGH - span);
                    List<ServerSocket> run = new ArrayList<>();
                    for (int p = base; p < base + span; p++) {
                        ServerSocket sock = tryBind(p);
                        if (sock == null) {
                            break;
                        }
                        run.add(sock);
                    }
                    held.addAll(run);
                    if (run.size() == span) {
                        bases[i] = base;
                        found = true;
                    }
                }
                if (!found) {
                    throw new IllegalStateException("no run of " + span + " free ports found from " + LOW + " to " + HIGH);
                }
            }
            return bases;
        } finally {
            for (ServerSocket sock : held) {
                try {
                    sock.close();
                } catch (IOException e) {
                    // released either way
                }
            }
        }
    }

    private static ServerSocket tryBind(int port) {
        try {
            ServerSocket s = new ServerSocket();
            s.setReuseAddress(false);
            try {
                s.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                return s;
            } catch (IOException e) {
                s.close();
                return null;
            }
        } catch (IOException e) {
            return null;
        }
    }
}

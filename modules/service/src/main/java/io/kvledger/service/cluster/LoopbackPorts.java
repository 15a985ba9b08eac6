package io.kvledger.service.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;

/**
 * Free TCP ports on this machine for nodes started on loopback ({@code kvledger cluster}, tests,
 * benchmarks). A port found free can be taken by someone else before it is bound: callers bind
 * at once, and a clash is a clear start-up error, never a silent one.
 */
public final class LoopbackPorts {

    private LoopbackPorts() {}

    /** A port the OS reports free now. */
    public static int free() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port: " + e.getMessage(), e);
        }
    }

    /**
     * A base port with {@code span} free ports from it (a rank binds base + dp + tp, so a node
     * needs a run of ports), each checked by binding it.
     */
    public static int freeRange(int span) {
        for (int attempt = 0; attempt < 50; attempt++) {
            int base = free();
            if (base + span > 65_000) {
                continue;
            }
            boolean ok = true;
            for (int p = base; p < base + span && ok; p++) {
                try (ServerSocket s = new ServerSocket(p)) {
                    s.setReuseAddress(true);
                } catch (IOException e) {
                    ok = false;
                }
            }
            if (ok) {
                return base;
            }
        }
        throw new IllegalStateException("no run of " + span + " free ports found in 50 attempts");
    }
}

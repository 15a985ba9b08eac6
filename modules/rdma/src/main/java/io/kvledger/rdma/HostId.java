package io.kvledger.rdma;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * Which host (and boot) a process runs on, carried in descriptors so that an engine can tell a
 * peer on the same host (shared memory reachable) from a remote one. On Linux it is the kernel's
 * host name and boot id; where those cannot be read it is a random id, which makes every peer
 * look remote (the safe answer).
 */
final class HostId {

    private static final String CURRENT = compute();

    private HostId() {}

    /** This process's host id. */
    static String current() {
        return CURRENT;
    }

    private static String compute() {
        try {
            String host = Files.readString(Path.of("/proc/sys/kernel/hostname"), StandardCharsets.UTF_8).strip();
            String boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id"), StandardCharsets.UTF_8).strip();
            if (!host.isEmpty() && !boot.isEmpty()) {
                String id = host + "/" + boot;
                return id.length() > 200 ? id.substring(0, 200) : id;
            }
        } catch (IOException | SecurityException | UnsupportedOperationException e) {
            // not Linux, or not readable: fall through
        }
        return "unknown/" + UUID.randomUUID();
    }
}

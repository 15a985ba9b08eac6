package io.kvledger.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where the calling thread runs, from Linux's {@code /proc/thread-self}: the CPU it last ran on
 * (field 39 of {@code stat}) and how often the scheduler has moved it to another CPU
 * ({@code se.nr_migrations} in {@code sched}). A benchmark prints both around each round: on a VM
 * whose virtual CPUs the host runs on cores of different speed at different moments, a round that
 * changed CPU can run at another speed than the rounds before it.
 */
final class ThreadPlacement {

    private ThreadPlacement() {}

    /** {cpu, migrations}, each -1 when it cannot be read. */
    static long[] read() {
        return new long[] {cpu(), migrations()};
    }

    /** "cpu 1, 0 migrations", "cpu 0 -> 1, 2 migrations", or "cpu unknown". */
    static String describe(long[] from, long[] to) {
        if (to[0] < 0) {
            return "cpu unknown";
        }
        String cpus = from[0] == to[0] ? "cpu " + to[0] : "cpu " + from[0] + " -> " + to[0];
        return from[1] < 0 || to[1] < 0 ? cpus : cpus + ", " + (to[1] - from[1]) + " migrations";
    }

    private static long cpu() {
        try {
            String stat = Files.readString(Path.of("/proc/thread-self/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(f[36]); // field 39, counted from field 3 after the command name
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static long migrations() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/thread-self/sched"))) {
                if (line.startsWith("se.nr_migrations")) {
                    return Long.parseLong(line.substring(line.indexOf(':') + 1).strip());
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or no scheduler statistics in this kernel
        }
        return -1;
    }
}

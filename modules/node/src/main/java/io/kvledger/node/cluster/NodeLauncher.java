package io.kvledger.node.cluster;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Starting and stopping {@code kvledger node} processes for {@code cluster} and {@code demo --live}:
 * a new JVM on this one's class path, with this JVM's module, Chronicle, kvledger and heap flags,
 * running the command's main class (the caller names it: this module does not depend on the CLI).
 */
public final class NodeLauncher {

    private NodeLauncher() {}

    /**
     * {@code java}, this JVM's flags that a node needs too, {@code jvmFlags}, the class path and
     * {@code mainClass}: the start of a node process's command line, to which the caller adds
     * {@code node} and its options.
     */
    public static List<String> javaCommand(String mainClass, List<String> jvmFlags) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (a.startsWith("--") || a.startsWith("-Dchronicle") || a.startsWith("-Dkvledger") || a.startsWith("-Xmx")) {
                cmd.add(a);
            }
        }
        cmd.addAll(jvmFlags);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        return cmd;
    }

    /** Starts {@code cmd} with its standard output and error going to {@code log}. */
    public static Process start(List<String> cmd, Path log) throws IOException {
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    /**
     * SIGTERM to every live process, in order, waiting up to 20 s for each (then kill -9) before
     * the next: the order in which they are given is the order in which they stop.
     */
    public static void stopInOrder(List<Process> processes) throws InterruptedException {
        for (Process p : processes) {
            if (p.isAlive()) {
                p.destroy();
                if (!p.waitFor(20, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            }
        }
    }

    /** SIGTERM to every live process at once, then waits up to 20 s for each (then kill -9). */
    static void stopAll(List<Process> processes) throws InterruptedException {
        for (Process p : processes) {
            if (p.isAlive()) {
                p.destroy();
            }
        }
        for (Process p : processes) {
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(5, TimeUnit.SECONDS);
            }
        }
    }

    /** The last 30 lines of a process's log, for an error message. */
    public static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }
}

package io.kvledger.rdma;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * When a process on this host started, counted from the host's boot: field 22 of Linux's
 * {@code /proc/PID/stat}, in clock ticks. With the {@link HostId} (host name and boot id) and the
 * pid it names one process exactly, so a peer that has exited and a process that later took its
 * pid are told apart.
 *
 * <p>Not the JDK's {@code ProcessHandle.Info.startInstant()}: that is a wall-clock time, the start
 * in ticks plus a boot time each JVM reads once from {@code /proc/stat} ({@code btime}, whole
 * seconds, itself derived from the wall clock). A step of the wall clock (an NTP or chrony step,
 * a VM restored from a snapshot, {@code date -s}) between two JVMs' starts gives them boot times
 * seconds apart, and one then sees the other's start seconds away from what that process says of
 * itself: a live peer looked dead.
 */
final class ProcessStart {

    /** What {@link #of} returns when the start cannot be read (not Linux, no such process, hidden). */
    static final long UNKNOWN = 0;
    /** What {@link #of} returns for a process that has exited but not been waited for (a zombie). */
    static final long EXITED = -1;

    /** This process's start: it does not change, so it is read once (as {@link HostId} is). */
    private static final long SELF = of(ProcessHandle.current().pid());

    private ProcessStart() {}

    /** This process's start, in clock ticks since boot, or {@link #UNKNOWN}. */
    static long ofSelf() {
        return SELF;
    }

    /**
     * The start of process {@code pid}, in clock ticks since boot; {@link #UNKNOWN} when it cannot
     * be read; {@link #EXITED} when the process has exited but not been waited for (a zombie: its
     * memory is gone).
     */
    static long of(long pid) {
        String stat;
        try {
            stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
        } catch (IOException | SecurityException | UnsupportedOperationException e) {
            return UNKNOWN;
        }
        return parse(stat);
    }

    /**
     * Parses one {@code /proc/PID/stat} line. The command name (field 2) is in parentheses and may
     * itself hold spaces and parentheses, so fields are counted from the last {@code ')'}: after
     * it come the state (field 3) and, 19 fields on, the start time (field 22).
     */
    static long parse(String stat) {
        int close = stat.lastIndexOf(')');
        if (close < 0) {
            return UNKNOWN;
        }
        String[] rest = stat.substring(close + 1).strip().split(" +");
        if (rest.length < 20) {
            return UNKNOWN;
        }
        if (rest[0].equals("Z") || rest[0].equals("X") || rest[0].equals("x")) {
            return EXITED;
        }
        try {
            long ticks = Long.parseLong(rest[19]);
            return ticks > 0 ? ticks : UNKNOWN;
        } catch (NumberFormatException e) {
            return UNKNOWN;
        }
    }
}

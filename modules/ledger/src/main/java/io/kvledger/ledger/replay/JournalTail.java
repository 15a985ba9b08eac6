package io.kvledger.ledger.replay;

import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalTailer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;

/**
 * The last entries of one journal, and the entries appended after them while its writer (a live
 * node, a simulation, an import in another process) appends ({@code kvledger tail [-f]}). Only
 * the entries a filter accepts count. Following waits for a journal that does not exist yet and
 * runs on the caller's thread until a stop flag is raised or enough entries were handed over.
 */
public final class JournalTail {

    private static final Duration POLL = Duration.ofMillis(200);

    private JournalTail() {}

    /**
     * The last entries of a journal, from one pass over it.
     *
     * @param entries  the last ones the filter accepted, oldest first
     * @param warnings what the reader skipped or doubted
     * @param damaged  whether the pass met damage (the entries lack what it held)
     */
    public record Last(List<JournalEntry> entries, List<String> warnings, boolean damaged) {}

    /** The last {@code n} entries that {@code accepts}, from one pass of {@code r} (left open). */
    public static Last last(JournalReader r, int n, Predicate<JournalEntry> accepts) {
        ArrayDeque<JournalEntry> ring = new ArrayDeque<>();
        for (JournalEntry e : r) {
            keep(ring, e, n, accepts);
        }
        return new Last(List.copyOf(ring), r.warnings(), !r.clean());
    }

    private static void keep(ArrayDeque<JournalEntry> ring, JournalEntry e, int n, Predicate<JournalEntry> accepts) {
        if (n == 0 || !accepts.test(e)) {
            return;
        }
        if (ring.size() == n) {
            ring.removeFirst();
        }
        ring.addLast(e);
    }

    /** Where a followed journal's entries and news go (the caller's thread). */
    public interface Follower {

        /** One entry the filter accepted. */
        void entry(JournalEntry e);

        /** The entries written before the tail looked are all handed over. */
        void caughtUp();

        /** A poll found nothing new; returns whether to go on (false: the output is gone). */
        boolean idle();

        /** Once, when there is no journal yet to follow. */
        void waiting();

        /** After {@link #waiting}: the journal appeared; {@code describe} is its header's description. */
        void following(String describe);

        /** The journal is there but not readable yet, for a reason not told before. */
        void notReadable(String reason);
    }

    /**
     * How a follow ended.
     *
     * @param opened   whether the journal was ever opened (false: stopped while waiting for it)
     * @param handed   entries handed to the follower
     * @param warnings what the tailer skipped or doubted
     */
    public record Followed(boolean opened, long handed, List<String> warnings) {}

    /**
     * Waits for the journal in {@code dir} (looking every {@code retry}), hands over its last
     * {@code n} accepted entries (every accepted one when the writer started while waiting: all are
     * new), then every accepted entry appended, until {@code stop} says so, {@code max} entries
     * were handed over ({@code null}: no limit), or the follower's output is gone.
     */
    public static Followed follow(Path dir, int n, Long max, Duration retry, Predicate<JournalEntry> accepts,
                                  BooleanSupplier stop, Follower f) {
        long handed = 0;
        JournalTailer t = null;
        String lastProblem = null;
        try {
            boolean waited = false;
            while (!stop.getAsBoolean()) {
                if (JournalInputs.holdsQueueFiles(dir)) {
                    try {
                        t = JournalTailer.open(dir, true);
                        break;
                    } catch (JournalException e) {
                        // usually: the writer has created the queue but not yet appended the
                        // header; say once why, in case it is something that will not go away
                        if (!e.getMessage().equals(lastProblem)) {
                            lastProblem = e.getMessage();
                            f.notReadable(e.getMessage());
                        }
                    }
                }
                if (!waited) {
                    f.waiting();
                    waited = true;
                }
                LockSupport.parkNanos(retry.toNanos());
            }
            if (t == null) {
                return new Followed(false, 0, List.of());
            }
            if (waited) {
                f.following(t.header().describe());
            }
            ArrayDeque<JournalEntry> ring = new ArrayDeque<>();
            JournalEntry e;
            while ((e = t.poll(Duration.ZERO)) != null) {
                if (waited) {
                    if (accepts.test(e)) {
                        f.entry(e);
                        handed++;
                        if (max != null && handed >= max) {
                            break;
                        }
                    }
                } else {
                    keep(ring, e, n, accepts);
                }
            }
            for (JournalEntry r : ring) {
                if (max != null && handed >= max) {
                    break;
                }
                f.entry(r);
                handed++;
            }
            f.caughtUp();
            while (!stop.getAsBoolean() && (max == null || handed < max)) {
                e = t.poll(POLL);
                if (e != null && accepts.test(e)) {
                    f.entry(e);
                    handed++;
                } else if (e == null && !f.idle()) {
                    break;
                }
            }
            return new Followed(true, handed, t.warnings());
        } finally {
            if (t != null) {
                t.close();
            }
        }
    }
}

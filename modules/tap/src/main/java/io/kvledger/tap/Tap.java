package io.kvledger.tap;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.wire.OutboundFrame;
import io.kvledger.zmq.NotifyListenerConfig;
import io.kvledger.zmq.NotifyRelay;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * A running tap: one {@link NotifyRelay} per target (a ROUTER on the target's port plus the
 * shift, forwarding every message unchanged to the target's real notify ROUTER) and one journal
 * per target ({@code DIR/P-HOST-PORT}, {@code DIR/D-HOST-PORT}) holding every frame that crossed,
 * decoded or rejected, and, after a frame that could not be forwarded, a
 * {@code NotifySendFailed} naming the target. All targets are stamped by one monotonic clock, so
 * the journals order against each other ({@code kvledger tap-report} joins them).
 *
 * <p>Threads: each relay's socket thread receives, forwards and offers to one bounded queue; one
 * thread ({@code kvledger-tap-journal}) is the single writer of every journal.
 */
public final class Tap implements AutoCloseable {

    /**
     * What to run.
     *
     * @param targets  the ranks to stand in front of (at least one, distinct tap ports)
     * @param bindHost where the tap's ROUTERs bind ({@code 0.0.0.0}, or the engines' host)
     * @param journal  the directory of the per-target journals (created, or appended to)
     * @param mode     the transfer mode written to the journal headers (the tap does not see it)
     * @param origin   the command line, for the headers
     * @param clock    monotonic nanoseconds, stamped on every frame
     */
    public record Config(List<TapTarget> targets, String bindHost, Path journal, TransferMode mode, String origin,
                         LongSupplier clock) {
        public Config {
            targets = List.copyOf(targets);
            if (targets.isEmpty()) {
                throw new IllegalArgumentException("no target: give at least one --prefill or --decode HOST:PORT");
            }
            Map<Integer, TapTarget> byTapPort = new LinkedHashMap<>();
            for (TapTarget t : targets) {
                TapTarget other = byTapPort.putIfAbsent(t.tapPort(), t);
                if (other != null) {
                    throw new IllegalArgumentException(other.label() + " and " + t.label() + " would both be tapped on port "
                            + t.tapPort());
                }
            }
            for (TapTarget t : targets) {
                if (byTapPort.containsKey(t.port()) && isLocal(bindHost, t.host())) {
                    throw new IllegalArgumentException("the tap port " + t.port() + " of " + byTapPort.get(t.port()).label()
                            + " is the notify port of " + t.label() + ": choose another shift");
                }
            }
            Objects.requireNonNull(bindHost, "bindHost");
            Objects.requireNonNull(journal, "journal");
            Objects.requireNonNull(mode, "mode");
            Objects.requireNonNull(origin, "origin");
            Objects.requireNonNull(clock, "clock");
        }

        private static boolean isLocal(String bindHost, String host) {
            return bindHost.equals("0.0.0.0") || bindHost.equals("*") || bindHost.equals(host);
        }
    }

    /** Counts for one target. */
    public static final class TargetTally extends FrameJournal.Tally {
        public long forwardFailed;
    }

    private record Item(int target, NotifyRelay.Relayed relayed) {}

    private final Config config;
    private final List<NotifyRelay> relays = new ArrayList<>();
    private final List<JournalWriter> writers = new ArrayList<>();
    private final List<TargetTally> tallies = new ArrayList<>();
    private final ArrayBlockingQueue<Item> queue = new ArrayBlockingQueue<>(65_536);
    private final PrintWriter err;
    private final Thread writer;
    private final AtomicBoolean closeStarted = new AtomicBoolean();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private volatile boolean stopping;

    private Tap(Config config, PrintWriter err) {
        this.config = config;
        this.err = err;
        this.writer = new Thread(this::drain, "kvledger-tap-journal");
        this.writer.setDaemon(true);
    }

    /**
     * Binds every tap port, then opens every journal, then starts relaying. A failure leaves
     * nothing open.
     *
     * @throws IllegalStateException when a tap port cannot be bound
     * @throws io.kvledger.journal.JournalException when a journal cannot be opened
     */
    public static Tap open(Config config, PrintWriter err) {
        Tap tap = new Tap(config, err);
        try {
            for (int i = 0; i < config.targets().size(); i++) {
                TapTarget t = config.targets().get(i);
                int index = i;
                NotifyListenerConfig listen = NotifyListenerConfig.forEndpoint(OutboundFrame.tcpEndpoint(config.bindHost(),
                        t.tapPort())).withClock(config.clock());
                // the journal queue fills only if the disk stalls: the relay then backs off, and
                // ZMQ stops reading the senders (nothing is lost)
                tap.relays.add(NotifyRelay.open(listen, t.endpoint(), 1024, r -> tap.queue.offer(new Item(index, r))));
            }
            for (TapTarget t : config.targets()) {
                NodeConfig header = NodeConfig.builder(t.role(), config.mode()).hostIp(t.host()).notifyPort(t.port())
                        .behaviour(Behaviour.newest()).build();
                tap.writers.add(JournalWriter.open(config.journal().resolve(t.journalName()),
                        JournalHeader.of("tap " + t.label(), header, config.origin() + " [" + OutboundFrame.tcpEndpoint(
                                config.bindHost(), t.tapPort()) + " -> " + t.endpoint() + "]")));
                tap.tallies.add(new TargetTally());
            }
        } catch (RuntimeException e) {
            tap.closeAll();
            throw e;
        }
        tap.writer.start();
        return tap;
    }

    Config config() {
        return config;
    }

    /** The tap endpoints actually bound, in target order. */
    public List<String> endpoints() {
        return relays.stream().map(NotifyRelay::endpoint).toList();
    }

    /** Frames journaled so far, over all targets. */
    public long framesJournaled() {
        long n = 0;
        synchronized (tallies) {
            for (TargetTally t : tallies) {
                n += t.frames;
            }
        }
        return n;
    }

    /** A snapshot of the per-target counts, in target order. */
    public List<TargetTally> tallies() {
        synchronized (tallies) {
            List<TargetTally> out = new ArrayList<>();
            for (TargetTally t : tallies) {
                TargetTally c = new TargetTally();
                c.frames = t.frames;
                c.rejected = t.rejected;
                c.substituted = t.substituted;
                c.lost = t.lost;
                c.forwardFailed = t.forwardFailed;
                out.add(c);
            }
            return out;
        }
    }

    /** Messages forwarded to target {@code index} (in target order). */
    long forwarded(int index) {
        return relays.get(index).forwarded();
    }

    /** Frames waiting for the journal writer. */
    int queued() {
        return queue.size();
    }

    /** Messages forwarded to the targets, over all relays. */
    public long forwarded() {
        return relays.stream().mapToLong(NotifyRelay::forwarded).sum();
    }

    private void drain() {
        List<Item> batch = new ArrayList<>(256);
        while (true) {
            Item first;
            try {
                first = queue.poll(50, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                continue;
            }
            if (first == null) {
                if (stopping) {
                    break;
                }
                continue;
            }
            batch.clear();
            batch.add(first);
            queue.drainTo(batch, 255);
            synchronized (tallies) {
                for (Item it : batch) {
                    journal(it);
                }
            }
            for (JournalWriter w : writers) {
                w.flush();
            }
        }
    }

    private void journal(Item it) {
        JournalWriter w = writers.get(it.target());
        TargetTally tally = tallies.get(it.target());
        NotifyRelay.Relayed r = it.relayed();
        NodeEvent event = r.frame().event();
        FrameJournal.append(w, event, tally, err, "tap");
        if (!r.forwarded()) {
            tally.forwardFailed++;
            NodeEvent failed = new NodeEvent.NotifySendFailed(event.atNs(), r.target(), TapReport.messageType(event),
                    TapReport.transferId(event), "the tap could not forward the frame: " + r.forwardFailure(), r.frame().payload());
            FrameJournal.append(w, failed, new FrameJournal.Tally(), err, "tap");
        }
    }

    /**
     * Stops the relays (each first forwards what it received), journals what they handed over,
     * flushes and closes the journals; idempotent; blocks until done.
     */
    @Override
    public void close() {
        if (!closeStarted.compareAndSet(false, true)) {
            closed.join();
            return;
        }
        try {
            closeAll();
        } finally {
            closed.complete(null);
        }
    }

    private void closeAll() {
        for (NotifyRelay r : relays) {
            r.close();
        }
        stopping = true;
        if (writer.isAlive()) {
            boolean interrupted = false;
            while (writer.isAlive()) {
                try {
                    writer.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        for (JournalWriter w : writers) {
            try {
                w.close();
            } catch (RuntimeException e) {
                err.println("tap: closing the journal " + w.dir().getFileName() + ": " + e.getMessage());
            }
        }
    }
}

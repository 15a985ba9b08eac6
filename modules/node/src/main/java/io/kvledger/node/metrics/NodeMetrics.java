package io.kvledger.node.metrics;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.node.NodeState;
import io.kvledger.ledger.metrics.RuntimeMetrics;
import io.kvledger.ledger.metrics.ShipSeries;
import io.kvledger.node.data.DataPlane;
import io.kvledger.node.loop.Inbox;
import io.kvledger.node.loop.NodeLoop;
import io.kvledger.node.loop.NodeStatus;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;

/**
 * A live node's metrics in Prometheus text format ({@code GET /metrics}), through Micrometer.
 *
 * <p>Names follow Prometheus's conventions ({@code promtool check metrics} passes with no
 * warning): a {@code kvledger_} prefix, base units as suffixes, {@code _total} on counters. The
 * transfer metrics carry the names of vLLM's NIXL connector metrics ({@code vllm:nixl_*}, the
 * colon being vLLM's) after that prefix, and each one's HELP names its vLLM counterpart:
 * <ul>
 *   <li>{@code kvledger_nixl_xfer_time_seconds} (histogram) mirrors {@code vllm:nixl_xfer_time_seconds}:
 *       from a {@code PostWrite}/{@code PostRead} to the {@code TransferCompleted} of its status id,
 *       in node time (the events' {@code atNs});</li>
 *   <li>{@code kvledger_nixl_post_time_seconds} (histogram) mirrors {@code vllm:nixl_post_time_seconds}:
 *       wall time the data plane spent handing one post to the transfer engine;</li>
 *   <li>{@code kvledger_nixl_transfer_size_bytes} (histogram) mirrors {@code vllm:nixl_bytes_transferred}:
 *       bytes of one successful post, its block count times the layout's bytes per block of one
 *       layer (K and V entries);</li>
 *   <li>{@code kvledger_nixl_num_failed_transfers_total} mirrors {@code vllm:nixl_num_failed_transfers}:
 *       {@code TransferCompleted} events that did not succeed;</li>
 *   <li>{@code kvledger_nixl_num_failed_notifications_total} mirrors
 *       {@code vllm:nixl_num_failed_notifications}: journaled {@code NotifySendFailed} events;</li>
 *   <li>{@code kvledger_nixl_num_kv_expired_reqs_total} mirrors {@code vllm:nixl_num_kv_expired_reqs}
 *       (a prefill-side count): requests force-freed after defer_timeout without an ACK (phase
 *       {@code REAPED}).</li>
 * </ul>
 * One kvledger "transfer" is one layer's batch (one status id), where vLLM's NIXL connector
 * counts one handle per request; counts are therefore per layer.
 *
 * <p>Node metrics: {@code kvledger_requests{phase}} (a gauge: requests in each live phase now),
 * {@code kvledger_requests_ended_total{phase}} (a counter: requests that ended in each terminal
 * phase since start), {@code kvledger_anomalies_total{kind,severity}} (one series per anomaly
 * kind, from 0), {@code kvledger_inbox_depth}, {@code kvledger_inbox_capacity},
 * {@code kvledger_inbox_refused_total}, {@code kvledger_events_lost_total},
 * {@code kvledger_events_applied_total}, {@code kvledger_ticks_total},
 * {@code kvledger_journal_last_seq}, {@code kvledger_journal_errors_total},
 * {@code kvledger_loop_errors_total}, {@code kvledger_journal_lag_seconds} (with items waiting in
 * the inbox: node time since the last journaled and applied event; 0 when the inbox is empty, so a
 * value that grows means a stalled loop), {@code kvledger_transfers_pending},
 * {@code kvledger_notifies_sent_total}, {@code kvledger_frames_received_total},
 * {@code kvledger_frames_rejected_total}; with an engine bridge,
 * {@code kvledger_bridge_calls_received_total}, {@code kvledger_bridge_calls_busy_total},
 * {@code kvledger_bridge_replies_held}, {@code kvledger_bridge_replies_undeliverable_total} and
 * {@code kvledger_bridge_replies_undeliverable_applied_total}; the {@code kvledger_ship_*} series of
 * {@link ShipSeries} (a journal shipper's, {@link #shipping}; 0 without one); the process's and the JVM's ({@link RuntimeMetrics}). Every series carries the tags
 * {@code node} and {@code role}, and every one is exported from the first scrape (at 0).
 *
 * <p>Threading: {@link #onApplied} and {@link #onDecision} run on the loop thread and only update counters and
 * primitive arrays (no allocation per event); scraping
 * reads atomics and may run on any thread.
 */
public final class NodeMetrics implements NodeLoop.Listener, AutoCloseable {

    /** Pending posts tracked for timing: a ring indexed by status id (status ids count up from 1). */
    private static final int SLOTS = 1 << 14;

    private final PrometheusMeterRegistry registry;
    private final Tags tags;
    /** The process and JVM meters (held: Micrometer holds what they read weakly). */
    private final RuntimeMetrics runtime;
    private final long bytesPerBlock;
    private final RequestTimes times;

    /** Requests in each phase now (live phases only are exported). */
    private final AtomicLongArray byPhase = new AtomicLongArray(RequestPhase.values().length);
    /** Requests that entered each terminal phase since start (only increases). */
    private final AtomicLongArray ended = new AtomicLongArray(RequestPhase.values().length);
    private final Counter[] anomalies = new Counter[AnomalyKind.values().length];
    private final Timer xferTime;
    private final Timer postTime;
    private final DistributionSummary bytes;
    private final Counter failedTransfers;
    private final Counter failedNotifications;
    private final Counter expired;
    private final Counter untracked;

    // loop thread only
    private final long[] slotStatus = new long[SLOTS];
    private final long[] slotAtNs = new long[SLOTS];
    private final long[] slotBytes = new long[SLOTS];

    private final NodeLoop loop;

    /** A journal shipper's counters ({@link #shipping}); 0 without one. */
    private volatile ShipSeries.Counters ship = ShipSeries.NONE;

    private NodeMetrics(NodeLoop loop, Inbox inbox, LongSupplier clock, DataPlane dataPlane, NodeStatus first) {
        this.loop = loop;
        this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        this.tags = Tags.of("node", first.node(), "role", first.role());
        // A PostWrite/PostRead moves one layer: per block, its K entry and its V entry (KvLayout).
        this.bytesPerBlock = 2L * dataPlane.layout().blockLenBytes();
        this.times = new RequestTimes();

        xferTime = Timer.builder("kvledger_nixl_xfer_time")
                .description("Transfer duration: from the post of a layer batch to its completion (node time); "
                        + "mirrors vllm:nixl_xfer_time_seconds")
                .tags(tags)
                .serviceLevelObjectives(ms(1), ms(5), ms(10), ms(25), ms(50), ms(100), ms(250), ms(500), ms(1000),
                        ms(2500), ms(5000), ms(10_000))
                .register(registry);
        postTime = Timer.builder("kvledger_nixl_post_time")
                .description("Time to hand one post to the transfer engine (wall time); "
                        + "mirrors vllm:nixl_post_time_seconds")
                .tags(tags)
                .serviceLevelObjectives(us(10), us(50), us(100), us(250), us(500), ms(1), ms(5), ms(10), ms(50))
                .register(registry);
        bytes = DistributionSummary.builder("kvledger_nixl_transfer_size")
                .description("Bytes of one successful layer batch; mirrors vllm:nixl_bytes_transferred")
                .baseUnit("bytes")
                .tags(tags)
                .serviceLevelObjectives(1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26,
                        1 << 28, 1 << 30)
                .register(registry);
        failedTransfers = Counter.builder("kvledger_nixl_num_failed_transfers")
                .description("Transfers that completed with a failure; mirrors vllm:nixl_num_failed_transfers")
                .tags(tags).register(registry);
        failedNotifications = Counter.builder("kvledger_nixl_num_failed_notifications")
                .description("Notifies the publisher could not send; mirrors vllm:nixl_num_failed_notifications")
                .tags(tags).register(registry);
        expired = Counter.builder("kvledger_nixl_num_kv_expired_reqs")
                .description("Requests force-freed after defer_timeout without an ACK (prefill side); "
                        + "mirrors vllm:nixl_num_kv_expired_reqs")
                .tags(tags).register(registry);
        untracked = Counter.builder("kvledger_transfer_completions_untracked")
                .description("Transfer completions whose post this process did not see (posted before a restart, "
                        + "or more than " + SLOTS + " posts in flight): not timed")
                .tags(tags).register(registry);

        for (RequestPhase p : RequestPhase.values()) {
            int i = p.ordinal();
            if (p.terminal()) {
                FunctionCounter.builder("kvledger_requests_ended", ended, a -> a.get(i))
                        .description("Requests that ended in each terminal phase since start")
                        .tags(tags).tag("phase", p.name())
                        .register(registry);
            } else {
                Gauge.builder("kvledger_requests", byPhase, a -> a.get(i))
                        .description("Requests in each live (not terminal) phase now")
                        .tags(tags).tag("phase", p.name())
                        .register(registry);
            }
        }
        for (AnomalyKind k : AnomalyKind.values()) {
            anomalies[k.ordinal()] = Counter.builder("kvledger_anomalies")
                    .description("Anomalies the reducer recorded, by kind")
                    .tags(tags).tag("kind", k.name()).tag("severity", k.severity().name())
                    .register(registry);
        }
        runtime = new RuntimeMetrics(tags);
        runtime.bindTo(registry);

        // The counters come from the loop's status snapshot (a scrape asks for a fresh one first);
        // the inbox's depth is read live, so that a stalled loop shows in the depth and the lag.
        Gauge.builder("kvledger_inbox_depth", inbox, i -> i.depth())
                .description("Items waiting in the loop's inbox").tags(tags).register(registry);
        Gauge.builder("kvledger_inbox_capacity", this, m -> m.status().inboxCapacity())
                .description("Bound of the loop's inbox").tags(tags).register(registry);
        FunctionCounter.builder("kvledger_inbox_refused", this, m -> m.status().inboxRefused())
                .description("Offers and hook calls the full inbox refused").tags(tags).register(registry);
        FunctionCounter.builder("kvledger_events_lost", this, m -> m.status().eventsLost())
                .description("Adapter events lost after retrying a full inbox").tags(tags).register(registry);
        FunctionCounter.builder("kvledger_events_applied", this, m -> m.status().eventsApplied())
                .description("Events journaled and applied since start").tags(tags).register(registry);
        FunctionCounter.builder("kvledger_ticks", this, m -> m.status().ticks())
                .description("Ticks fired by deadlines since start").tags(tags).register(registry);
        Gauge.builder("kvledger_journal_last_seq", this, m -> m.status().lastSeq())
                .description("Seq of the last journaled entry").tags(tags).register(registry);
        FunctionCounter.builder("kvledger_journal_errors", this, m -> m.status().journalErrors())
                .description("Events the journal refused (not applied)").tags(tags).register(registry);
        FunctionCounter.builder("kvledger_loop_errors", this, m -> m.status().loopErrors())
                .description("Exceptions from routers and listeners (the loop went on)").tags(tags).register(registry);
        Gauge.builder("kvledger_journal_lag_seconds", this, m -> {
                    long last = m.status().lastEventAtNs();
                    if (inbox.depth() == 0 || last == Long.MIN_VALUE) {
                        return 0.0;
                    }
                    return Math.max(0, clock.getAsLong() - last) / 1e9;
                })
                .description("With items waiting in the inbox, node time since the last applied event (0 when the "
                        + "inbox is empty)")
                .tags(tags).register(registry);
        Gauge.builder("kvledger_transfers_pending", this, m -> m.status().transfersPending())
                .description("Posts whose completion has not come back").tags(tags).register(registry);
        FunctionCounter.builder("kvledger_notifies_sent", this, m -> m.status().notifiesSent())
                .description("Notify frames sent").tags(tags).register(registry);
        FunctionCounter.builder("kvledger_frames_received", this, m -> m.status().framesReceived())
                .description("Notify frames received").tags(tags).register(registry);
        // present on every scrape from the start, at 0 until a shipper's counters are given (shipping)
        ShipSeries.register(registry, tags, this, m -> m.ship);
        FunctionCounter.builder("kvledger_frames_rejected", this, m -> m.status().framesRejected())
                .description("Notify frames rejected").tags(tags).register(registry);
        if (first.bridge() != null) {
            FunctionCounter.builder("kvledger_bridge_calls_received", this, m -> bridge(m).callsReceived())
                    .description("Messages read on the engine bridge").tags(tags).register(registry);
            FunctionCounter.builder("kvledger_bridge_calls_busy", this, m -> bridge(m).callsBusy())
                    .description("Engine hook calls refused busy (too many in flight, or their caller had replies "
                            + "unread), not applied").tags(tags).register(registry);
            Gauge.builder("kvledger_bridge_replies_held", this, m -> bridge(m).repliesHeld())
                    .description("Engine bridge replies waiting for their caller to read those the socket queued")
                    .tags(tags).register(registry);
            FunctionCounter.builder("kvledger_bridge_replies_undeliverable", this, m -> bridge(m).repliesUndeliverable())
                    .description("Engine bridge replies dropped: the caller had disconnected (or, for a call not "
                            + "applied, had too many replies unread)").tags(tags).register(registry);
            FunctionCounter.builder("kvledger_bridge_replies_undeliverable_applied", this,
                            m -> bridge(m).repliesUndeliverableApplied())
                    .description("Replies to applied engine hook calls dropped because their caller had disconnected")
                    .tags(tags).register(registry);
        }
        if (first.shadow() != null) {
            for (String hook : first.shadow().divergencesByHook().keySet()) {
                FunctionCounter.builder("kvledger_shadow_divergences", this,
                                m -> shadow(m).divergencesByHook().getOrDefault(hook, 0L))
                        .description("Hook calls the real connector answered otherwise than kvledger's reducer (shadow node)")
                        .tags(tags).tag("hook", hook).register(registry);
            }
            FunctionCounter.builder("kvledger_shadow_inputs", this, m -> shadow(m).inputs())
                    .description("Hook calls observed in the scheduler stream, applied and compared")
                    .tags(tags).register(registry);
            FunctionCounter.builder("kvledger_shadow_replies_compared", this, m -> shadow(m).compared())
                    .description("Recorded connector replies compared with the reducer's").tags(tags).register(registry);
            FunctionCounter.builder("kvledger_shadow_lines_lost", this, m -> shadow(m).linesLost())
                    .description("Stream lines lost: gaps (the recorder's ZMQ queue was full), unreadable lines, "
                            + "lines a full inbox refused").tags(tags).register(registry);
        }
    }

    /** The loop's last status snapshot. */
    private NodeStatus status() {
        return loop.status();
    }

    private static NodeStatus.Bridge bridge(NodeMetrics m) {
        return m.status().bridge();
    }

    private static NodeStatus.Shadow shadow(NodeMetrics m) {
        return m.status().shadow();
    }

    private static Duration ms(long v) {
        return Duration.ofMillis(v);
    }

    private static Duration us(long v) {
        return Duration.ofNanos(v * 1000);
    }

    /**
     * Creates the metrics of {@code node} and registers them as a listener of its loop. The
     * registration runs on the loop thread between two events, after the counts of requests by
     * phase are seeded from the state (a recovered node starts with its recovered requests), so
     * no event is counted twice or missed. Waits for the loop at most 10 s.
     *
     * @param loop      the node's loop: its listener, and its status snapshots (which the meters read)
     * @param inbox     the loop's inbox, whose depth is read live
     * @param clock     the node's clock (the journal lag)
     * @param dataPlane the data plane, whose layout sizes the posts and which reports each post's time
     */
    public static NodeMetrics attach(NodeLoop loop, Inbox inbox, LongSupplier clock, DataPlane dataPlane) {
        NodeStatus first = loop.freshStatus(Duration.ofSeconds(10));
        if (first == null) {
            throw new IllegalStateException("cannot attach the metrics: the node loop publishes no status");
        }
        NodeMetrics m = new NodeMetrics(loop, inbox, clock, dataPlane, first);
        try {
            inbox.query(s -> {
                m.seed(s);
                loop.addListener(m);
                return Boolean.TRUE;
            }).get(10, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("cannot attach the metrics to the node loop: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while attaching the metrics", e);
        }
        dataPlane.onPostTimed(m::postTimed);
        return m;
    }

    private void seed(NodeState s) {
        for (RequestPhase p : s.phases().values()) {
            byPhase.incrementAndGet(p.ordinal());
            if (p.terminal()) {
                ended.incrementAndGet(p.ordinal());
            }
        }
    }

    /** Per-request admission and phase times (loop thread only: read them inside an inbox query). */
    public RequestTimes times() {
        return times;
    }

    /** The scrape, in the Prometheus text format (version 0.0.4). */
    public String scrape() {
        return registry.scrape();
    }

    PrometheusMeterRegistry registry() {
        return registry;
    }

    /**
     * Gives the meters the counters of a shipper of the node's own journal ({@code kvledger node
     * --ship}): the {@link ShipSeries} ({@code kvledger_ship_backlog_entries}: entries read from the
     * journal and handed to the producer, not yet acknowledged by Kafka, what waits in memory;
     * {@code kvledger_ship_acknowledged_total}, {@code _sent_total}, {@code _buffer_full} ...). The
     * meters exist from the start at 0 and read these live at each scrape (any thread).
     */
    public void shipping(ShipSeries.Counters counters) {
        ship = counters;
    }

    private void postTimed(long wallNs) {
        postTime.record(wallNs, TimeUnit.NANOSECONDS);
    }

    @Override
    public void onApplied(long seq, NodeEvent event, List<Effect> effects) {
        long at = event.atNs();
        if (event instanceof NodeEvent.TransferCompleted t) {
            completed(t, at);
        } else if (event instanceof NodeEvent.NotifySendFailed) {
            failedNotifications.increment();
        } else if (event instanceof NodeEvent.RequestAdmitted a && a.params() != null
                && a.params().get("transfer_id") instanceof String tid && !tid.isEmpty()) {
            times.admitted(a.requestId(), tid);
        }
        for (int i = 0, n = effects.size(); i < n; i++) {
            Effect e = effects.get(i);
            if (e instanceof Effect.PostWrite w) {
                posted(w.statusId(), at, w.localBlockIds().length);
            } else if (e instanceof Effect.PostRead r) {
                posted(r.statusId(), at, r.localBlockIds().length);
            }
        }
    }

    /** Phase gauges and anomaly counters, from the decision records the loop hands over. */
    @Override
    public void onDecision(long seq, NodeEvent event, Effect.Decision decision) {
        if (decision instanceof Effect.PhaseChanged p) {
            phase(p, event.atNs());
        } else if (decision instanceof Effect.Anomaly a) {
            anomaly(a.kind());
        }
    }

    private void posted(long statusId, long at, int blocks) {
        int slot = (int) (statusId & (SLOTS - 1));
        slotStatus[slot] = statusId;
        slotAtNs[slot] = at;
        slotBytes[slot] = blocks * bytesPerBlock;
    }

    private void completed(NodeEvent.TransferCompleted t, long at) {
        if (!t.succeeded()) {
            failedTransfers.increment();
        }
        int slot = (int) (t.statusId() & (SLOTS - 1));
        if (slotStatus[slot] != t.statusId() || t.statusId() == 0) {
            untracked.increment();
            return;
        }
        slotStatus[slot] = 0;
        xferTime.record(Math.max(0, at - slotAtNs[slot]), TimeUnit.NANOSECONDS);
        if (t.succeeded()) {
            bytes.record(slotBytes[slot]);
        }
    }

    private void phase(Effect.PhaseChanged p, long at) {
        if (p.from() != null) {
            byPhase.decrementAndGet(p.from().ordinal());
        }
        byPhase.incrementAndGet(p.to().ordinal());
        if (p.to().terminal()) {
            ended.incrementAndGet(p.to().ordinal());
        }
        if (p.to() == RequestPhase.REAPED) {
            expired.increment();
        }
        times.phaseChanged(p.requestId(), p.from() == null, at);
    }

    private void anomaly(AnomalyKind k) {
        anomalies[k.ordinal()].increment();
    }

    @Override
    public void close() {
        registry.close();
    }
}

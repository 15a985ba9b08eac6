package io.kvledger.bench;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.rdma.engine.TransferEngines;
import io.kvledger.node.loop.NodeLoop;
import io.kvledger.node.NodeOptions;
import io.kvledger.node.NodeService;
import io.kvledger.node.cluster.LocalLeg;
import io.kvledger.node.cluster.LiveRouter;
import io.kvledger.node.engine.SimulatedEngine;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * Question: how many requests per second does a live 1P1D pair serve, with journals and without,
 * and how long does a prefill node take from a {@code remote_blocks} frame's arrival to the
 * transfer it posts? A measured runner, not JMH: every round starts two fresh {@link NodeService}s
 * in this JVM (real ZMQ on loopback, the in-JVM transfer engine, the simulated engines), sends
 * {@code --requests} requests through the {@link LiveRouter} with at most {@code --window} in flight,
 * and stops both nodes.
 *
 * <p>Rounds alternate journal on and off (which goes first alternating), after one warm-up round
 * with journals; the summary gives the median requests/s of each and their ratio.
 *
 * <p>Latency: a {@link NodeLoop.Listener} on the prefill node remembers the {@code atNs} of every
 * {@code RemoteBlocksReceived} (the listener thread stamps it when the frame arrives) and, at the
 * first {@code PostWrite} of the same transfer id, reads the node clock (the listener runs right
 * before the loop routes the effect). Posts made by the frame's own event (the request's KV was
 * saved already) measure the control plane: inbox wait, journal, reducer. Posts made later waited
 * for the prefill's forward; they are reported apart.
 *
 * <p>Usage: {@code java <project JVM flags> -cp benchmarks/target/benchmarks.jar
 * io.kvledger.bench.LiveNodeRunner [--requests K] [--window W] [--rounds R] [--mode WRITE|READ]
 * [--step-pause-us N] [--idle-step-us N]} (defaults: 2000, 32, 3 rounds of each, WRITE, 0, 500).
 */
public final class LiveNodeRunner {

    private LiveNodeRunner() {}

    record Round(boolean journaled, int requests, int failed, double seconds, long pEvents, long dEvents,
                 long[] ownEventNs, long[] laterNs) {
        double rps() {
            return requests / seconds;
        }
    }

    /** The prefill's remote_blocks to PostWrite latencies (loop thread only). */
    static final class PostLatency implements NodeLoop.Listener {
        private final NodeService node;
        private final Map<String, Long> arrivals = new HashMap<>();
        final List<Long> ownEvent = new ArrayList<>();
        final List<Long> later = new ArrayList<>();

        PostLatency(NodeService node) {
            this.node = node;
        }

        @Override
        public void onApplied(long seq, NodeEvent event, List<Effect> effects) {
            boolean own = false;
            if (event instanceof NodeEvent.RemoteBlocksReceived rb && rb.transferId() != null) {
                arrivals.putIfAbsent(rb.transferId(), rb.atNs());
                own = true;
            }
            for (Effect e : effects) {
                if (e instanceof Effect.PostWrite pw) {
                    Long at = arrivals.remove(pw.transferId());
                    if (at != null) {
                        long ns = node.clock().getAsLong() - at;
                        (own ? ownEvent : later).add(ns);
                    }
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int requests = 2000;
        int window = 32;
        int rounds = 3;
        TransferMode mode = TransferMode.WRITE;
        long stepPauseUs = 0;
        long idleStepUs = 500;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(args[i] + " needs a value");
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--requests" -> requests = Integer.parseInt(v);
                case "--window" -> window = Integer.parseInt(v);
                case "--rounds" -> rounds = Integer.parseInt(v);
                case "--mode" -> mode = TransferMode.valueOf(v.toUpperCase(Locale.ROOT));
                case "--step-pause-us" -> stepPauseUs = Long.parseLong(v);
                case "--idle-step-us" -> idleStepUs = Long.parseLong(v);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        SimulatedEngine.Options engine = new SimulatedEngine.Options(512, stepPauseUs * 1000, idleStepUs * 1000);
        System.out.printf(Locale.ROOT, "1P1D %s, %d requests per round, window %d, engine step pause %d us, idle step "
                + "%d us, %d available processors%n", mode, requests, window, stepPauseUs, idleStepUs,
                Runtime.getRuntime().availableProcessors());
        Round warm = round(true, mode, requests, window, engine);
        print("warm-up", warm);
        List<Round> on = new ArrayList<>();
        List<Round> off = new ArrayList<>();
        List<Double> ratios = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            for (boolean journaled : r % 2 == 0 ? new boolean[] {true, false} : new boolean[] {false, true}) {
                Round x = round(journaled, mode, requests, window, engine);
                print("round " + (r + 1), x);
                (journaled ? on : off).add(x);
            }
            ratios.add(on.getLast().rps() / off.getLast().rps());
        }
        double rpsOn = median(on.stream().mapToDouble(Round::rps).toArray());
        double rpsOff = median(off.stream().mapToDouble(Round::rps).toArray());
        System.out.printf(Locale.ROOT, "median requests/s: journal on %.0f, off %.0f; on/off %.3f (journal cost %.1f %%)%n",
                rpsOn, rpsOff, rpsOn / rpsOff, 100 * (1 - rpsOn / rpsOff));
        double ratio = median(ratios.stream().mapToDouble(Double::doubleValue).toArray());
        System.out.printf(Locale.ROOT, "on/off, median of %d per-round ratios: %.3f (journal cost %.1f %%); per-round %s%n",
                ratios.size(), ratio, 100 * (1 - ratio),
                ratios.stream().map(x -> String.format(Locale.ROOT, "%.2f", x)).toList());
        for (List<Round> set : List.of(on, off)) {
            long[] own = set.stream().flatMapToLong(x -> Arrays.stream(x.ownEventNs())).sorted().toArray();
            long[] later = set.stream().flatMapToLong(x -> Arrays.stream(x.laterNs())).sorted().toArray();
            System.out.printf(Locale.ROOT, "journal %s, all rounds: remote_blocks -> PostWrite, posted by the frame's "
                    + "event: n=%d p50 %s p99 %s; posted after the save: n=%d p50 %s p99 %s%n",
                    set == on ? "on" : "off", own.length, us(pct(own, 50)), us(pct(own, 99)), later.length,
                    us(pct(later, 50)), us(pct(later, 99)));
        }
    }

    static void print(String label, Round x) {
        long[] own = x.ownEventNs();
        long[] later = x.laterNs();
        System.out.printf(Locale.ROOT, "%s journal %s: %d requests (%d failed) in %.2f s = %.0f req/s; loop events/s "
                        + "P %.0f, D %.0f; remote_blocks->PostWrite own event n=%d p50 %s p99 %s, after save n=%d "
                        + "p50 %s p99 %s%n",
                label, x.journaled() ? "on " : "off", x.requests(), x.failed(), x.seconds(), x.rps(),
                x.pEvents() / x.seconds(), x.dEvents() / x.seconds(), own.length, us(pct(own, 50)), us(pct(own, 99)),
                later.length, us(pct(later, 50)), us(pct(later, 99)));
    }

    static Round round(boolean journaled, TransferMode mode, int requests, int window, SimulatedEngine.Options engine)
            throws Exception {
        Path dir = Files.createTempDirectory("kvledger-live-bench");
        int base = io.kvledger.node.cluster.LoopbackPorts.freeRange(4);
        NodeService p = null;
        NodeService d = null;
        try {
            NodeOptions po = options("P0", config(Role.PRODUCER, mode, base, base + 1), dir.resolve("P0"), engine);
            NodeOptions dopt = options("D0", config(Role.CONSUMER, mode, base + 2, base + 3), dir.resolve("D0"), engine);
            p = journaled ? NodeService.start(po) : NodeService.startWithoutJournal(po);
            d = journaled ? NodeService.start(dopt) : NodeService.startWithoutJournal(dopt);
            PostLatency lat = new PostLatency(p);
            p.loop().addListener(lat);
            LiveRouter router = new LiveRouter(List.of(new LocalLeg(p)), List.of(new LocalLeg(d)), mode, 7);
            Semaphore inFlight = new Semaphore(window);
            AtomicLong failed = new AtomicLong();
            List<CompletableFuture<LiveRouter.Outcome>> all = new ArrayList<>(requests);
            long p0 = p.loop().applied();
            long d0 = d.loop().applied();
            long t0 = System.nanoTime();
            for (int i = 0; i < requests; i++) {
                inFlight.acquire();
                CompletableFuture<LiveRouter.Outcome> f = router.send(20 + (i * 37) % 300, 1 + i % 5);
                f.whenComplete((o, e) -> {
                    if (e != null || !o.ok()) {
                        failed.incrementAndGet();
                    }
                    inFlight.release();
                });
                all.add(f);
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(10, TimeUnit.MINUTES);
            double s = (System.nanoTime() - t0) / 1e9;
            long pe = p.loop().applied() - p0;
            long de = d.loop().applied() - d0;
            // The latency lists are filled on P's loop thread: read them there.
            long[][] lists = p.inbox().query(st -> new long[][] {
                    lat.ownEvent.stream().mapToLong(Long::longValue).sorted().toArray(),
                    lat.later.stream().mapToLong(Long::longValue).sorted().toArray()}).get(10, TimeUnit.SECONDS);
            return new Round(journaled, requests, (int) failed.get(), s, pe, de, lists[0], lists[1]);
        } finally {
            if (d != null) {
                d.close();
            }
            if (p != null) {
                p.close();
            }
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(f);
                }
            }
        }
    }

    static NodeConfig config(Role role, TransferMode mode, int handshakePort, int notifyPort) {
        return NodeConfig.builder(role, mode)
                .hostIp("127.0.0.1")
                .handshakePort(handshakePort)
                .notifyPort(notifyPort)
                .deferTimeoutNs(NodeConfig.seconds(20))
                .transferTimeoutNs(NodeConfig.seconds(10))
                .build();
    }

    static NodeOptions options(String id, NodeConfig config, Path journal, SimulatedEngine.Options engine) {
        return NodeOptions.defaults(id, config, journal)
                .withTransferEngine(TransferEngines.Choice.IN_JVM)
                .withHandshakeTimeout(Duration.ofSeconds(3))
                .withEngineOptions(engine);
    }

    static long pct(long[] sorted, double p) {
        if (sorted.length == 0) {
            return -1;
        }
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }

    static String us(long ns) {
        return ns < 0 ? "-" : String.format(Locale.ROOT, "%.1f us", ns / 1e3);
    }

    static double median(double[] v) {
        if (v.length == 0) {
            return Double.NaN;
        }
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}

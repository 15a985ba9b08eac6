package io.kvledger.cli;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.report.HangsReport;
import io.kvledger.ledger.report.ReportText;
import io.kvledger.node.demo.LiveDeployment;
import io.kvledger.proxy.ProxyOptions;
import io.kvledger.proxy.ProxyService;
import io.kvledger.tap.Tap;
import io.kvledger.tap.TapReport;
import io.kvledger.tap.TapTarget;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code kvledger demo --live}: prints what {@link LiveDeployment} does (a real deployment on
 * loopback: one prefill and one decode {@code kvledger node --engine bridge} with a Python fake
 * engine each) with the proxy and the tap opened here in front of it, then the tap's report, the
 * merged {@code hangs} report over the nodes', the proxy's and the tap's journals, an
 * {@code inspect} command line and the verdict. Paths are printed as {@code --out} was given (so a
 * relative one stays relative to the current directory), as {@code demo} does.
 */
final class LiveDemo {

    private final LiveDeployment.Options o;
    private final double stuckAfterS;
    private final boolean fullIds;
    private final PrintWriter out;
    private final PrintWriter err;
    private final long t0 = System.nanoTime();

    LiveDemo(LiveDeployment.Options o, double stuckAfterS, boolean fullIds, PrintWriter out, PrintWriter err) {
        this.o = o;
        this.stuckAfterS = stuckAfterS;
        this.fullIds = fullIds;
        this.out = out;
        this.err = err;
    }

    int run() throws Exception {
        Path src = LiveDeployment.pythonSources();
        if (src == null) {
            err.println("kvledger demo: --live needs the Python fake engines (modules/vllm-bridge/src/kvledger_vllm/"
                    + "fake_engine.py) of a kvledger checkout: run it through the ./kvledger launcher of the checkout, or "
                    + "give -Dkvledger.home=CHECKOUT");
            err.flush();
            return 2;
        }
        String pyProblem = LiveDeployment.pythonProblem();
        if (pyProblem != null) {
            err.println("kvledger demo: --live needs " + LiveDeployment.PYTHON + " with pyzmq and msgpack (apt-get install "
                    + "python3-zmq python3-msgpack): " + pyProblem);
            err.flush();
            return 2;
        }
        out.println("demo --live: " + o.mode() + ", 1 prefill + 1 decode (a Python fake engine driving a kvledger node "
                + "each), proxy and tap in this process; " + o.requests() + " requests, " + o.concurrency()
                + " in flight; faults: " + (o.faults().isNone() ? "none" : o.faults().format() + " in the nodes")
                + (o.killAt() > 0 ? ", kill -9 of the decode engine after " + o.killAt() + " requests" : ""));
        out.println("journals: " + o.dir());
        out.flush();
        LiveDeployment deployment = new LiveDeployment(o, src, Main.class.getName(), out, err, t0);
        StringWriter tapErrors = new StringWriter();
        LiveDeployment.Result run = deployment.run((shift, pn, dn) -> front(deployment, shift, pn, dn, tapErrors));
        if (run.notStarted()) {
            return 2;
        }
        String tapErr = tapErrors.toString().trim();
        Path nodesDir = o.dir().resolve("nodes");
        TapReport tapReport = TapReport.read(JournalInputs.resolve(List.of(o.dir().resolve("tap"))));
        long injected = run.injected();
        for (Map.Entry<String, Map<?, ?>> e : run.status().entrySet()) {
            Map<?, ?> st = e.getValue();
            out.println("  " + e.getKey() + ": " + st.get("events_applied") + " events, " + st.get("notifies_sent")
                    + " notifies sent, " + st.get("frames_received") + " frames received, " + st.get("faults_injected")
                    + " faults injected, transfer engine " + st.get("transfer_engine"));
        }
        for (String f : run.failures()) {
            out.println("  e.g. " + f);
        }
        out.println();
        out.println("== " + DemoCommand.launcher() + " tap-report " + DemoCommand.shellQuote(o.dir().resolve("tap").toString()) + " ==");
        for (String line : tapReport.render(false)) {
            out.println(line);
        }
        if (!tapErr.isEmpty()) {
            out.println("tap: " + tapErr);
        }
        out.println();
        Path proxyDir = o.dir().resolve("proxy");
        Path tapDir = o.dir().resolve("tap");
        // with the tap's journals, a notify sent to the tap's port is followed through it to the node behind
        out.println("== " + DemoCommand.launcher() + " hangs --stuck-after " + stuckAfterS + " " + DemoCommand.shellQuote(nodesDir.toString())
                + " " + DemoCommand.shellQuote(proxyDir.toString()) + " " + DemoCommand.shellQuote(tapDir.toString()) + " ==");
        Hangs.Result res;
        try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(nodesDir, proxyDir, tapDir)), ConfigOverrides.none())) {
            res = Hangs.analyse(r.recorded(false), new Bounds(NodeConfig.seconds(stuckAfterS)));
        }
        HangsReport.print(out, res, fullIds);
        out.println();
        Finding example = HangsReport.exampleHung(res.findings());
        if (example == null) {
            out.println("no hung request; follow any request with " + DemoCommand.launcher() + " inspect " + DemoCommand.shellQuote(nodesDir.toString())
                    + " " + DemoCommand.shellQuote(proxyDir.toString()) + " --request <uuid>");
        } else {
            String uuid = ReportText.uuidOf(example.requestId());
            out.println("inspect a hung request (" + example.node() + ", " + example.detector() + "):");
            out.println("  " + DemoCommand.launcher() + " inspect " + DemoCommand.shellQuote(nodesDir.toString()) + " "
                    + DemoCommand.shellQuote(proxyDir.toString()) + " --request "
                    + (uuid != null ? uuid : DemoCommand.shellQuote(example.requestId())));
        }
        int ok = run.statuses().getOrDefault("200", 0);
        boolean faultsActed = injected > 0 || run.killed();
        boolean allAnswered = run.unanswered() == 0 && run.sent() == o.requests();
        boolean expected;
        String verdict;
        if (!faultsActed) {
            expected = allAnswered && ok == run.sent() && run.shortAnswers() == 0 && res.findings().isEmpty();
            verdict = expected ? "clean run: every request answered 200, hangs found nothing"
                    : "UNEXPECTED for a run without faults: " + (run.sent() - ok) + " request(s) not answered 200, "
                    + res.findings().size() + " hangs finding(s)";
        } else {
            expected = allAnswered && !res.findings().isEmpty();
            verdict = (expected ? "as expected for the injected faults" : "UNEXPECTED for the injected faults") + ": "
                    + (allAnswered ? "every request answered" : run.unanswered() + " request(s) got no answer") + " (" + ok
                    + " with 200: " + run.statuses() + "), " + injected + " fault(s) injected in the nodes" + (run.killed() ? ", the decode engine killed once" : "")
                    + "; hangs found " + res.findings().size() + " finding(s)" + detectors(res.findings());
        }
        out.println();
        out.println("demo --live: " + verdict + "; " + (System.nanoTime() - t0) / 1_000_000 + " ms in all");
        out.flush();
        return expected ? 0 : 1;
    }

    private static String detectors(List<Finding> findings) {
        if (findings.isEmpty()) {
            return "";
        }
        Map<String, Integer> by = new TreeMap<>();
        for (Finding f : findings) {
            by.merge(f.detector(), 1, Integer::sum);
        }
        return " " + by;
    }

    /** The proxy, then the tap relaying the shifted notify ports to the nodes; closed in the other order. */
    private LiveDeployment.Front front(LiveDeployment deployment, int shift, int pn, int dn, StringWriter tapErrors)
            throws Exception {
        ProxyOptions po = ProxyOptions.loopback().withMode(o.mode()).withPorts(0, 0)
                .withRegistrationTtl(Duration.ofSeconds(5)).withTimeouts(Duration.ofSeconds(10), Duration.ofSeconds(10))
                .withNotifyPortShift(shift).withJournal(o.dir().resolve("proxy"));
        ProxyService proxy = ProxyService.start(po, "kvledger demo --live");
        Tap tap;
        try {
            deployment.phase("proxy up: http 127.0.0.1:" + proxy.httpPort() + ", registrations on 127.0.0.1:"
                    + proxy.pingPort() + ", notify ports in request ids shifted by " + shift);
            tap = Tap.open(new Tap.Config(List.of(new TapTarget(Role.PRODUCER, "127.0.0.1", pn, shift),
                    new TapTarget(Role.CONSUMER, "127.0.0.1", dn, shift)), "127.0.0.1", o.dir().resolve("tap"), o.mode(),
                    "kvledger demo --live", System::nanoTime), new PrintWriter(tapErrors, true));
        } catch (Exception | Error e) {
            proxy.close();
            throw e;
        }
        deployment.phase("tap up: 127.0.0.1:" + (pn + shift) + " -> P0 127.0.0.1:" + pn + ", 127.0.0.1:" + (dn + shift)
                + " -> D0 127.0.0.1:" + dn);
        return new LiveDeployment.Front() {
            @Override
            public int httpPort() {
                return proxy.httpPort();
            }

            @Override
            public int pingPort() {
                return proxy.pingPort();
            }

            @Override
            public int producers() {
                return proxy.producers();
            }

            @Override
            public int consumers() {
                return proxy.consumers();
            }

            @Override
            public long framesJournaled() {
                return tap.framesJournaled();
            }

            @Override
            public void close() throws Exception {
                try (proxy) {
                    tap.close();
                }
            }
        };
    }
}

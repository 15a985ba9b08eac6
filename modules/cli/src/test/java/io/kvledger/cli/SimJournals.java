package io.kvledger.cli;

import io.kvledger.core.config.TransferMode;
import io.kvledger.node.sim.SimJournalRecorder;
import io.kvledger.sim.SimOptions;
import io.kvledger.sim.Simulation;
import io.kvledger.sim.SimulationResult;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;

/** Journals for the command tests, written by the simulator (one journal per node under a directory). */
final class SimJournals {

    private SimJournals() {}

    /** The demo's default faults: WRITE seed 42 leaves requests stuck in WAITING_FOR_REMOTE_KVS. */
    static final String FAULTS = "drop=0.01,dup=0.01,delay=0.02,fail=0.005,abort=0.01";

    static SimulationResult write(Path dir, long seed, TransferMode mode, int requests, String faults) {
        SimOptions o = SimOptions.builder(seed, mode).requests(requests).faults(faults).keepLog(false).build();
        try (SimJournalRecorder rec = new SimJournalRecorder(dir, "test seed=" + seed + " " + mode)) {
            return Simulation.run(o, rec);
        }
    }

    /**
     * Journals that stop at {@code cutNs} while the run goes on, as when a deployment's recording
     * ends with work in flight: every event after the cut is left out.
     */
    static SimulationResult writeUntil(Path dir, SimOptions o, long cutNs) {
        try (SimJournalRecorder rec = new SimJournalRecorder(dir, "test seed=" + o.seed() + " cut")) {
            return Simulation.run(o, new io.kvledger.sim.Recorder() {
                @Override
                public void nodeStarted(String node, io.kvledger.core.config.NodeConfig config,
                                        java.util.List<io.kvledger.core.effect.Effect> startupEffects) {
                    rec.nodeStarted(node, config, startupEffects);
                }

                @Override
                public void applied(String node, long seq, io.kvledger.core.event.NodeEvent event,
                                    java.util.List<io.kvledger.core.effect.Effect> effects) {
                    if (event.atNs() <= cutNs) {
                        rec.applied(node, seq, event, effects);
                    }
                }
            });
        }
    }

    /** One command's exit code and captured streams. */
    record Outcome(int code, String out, String err) {}

    static Outcome run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(out), new PrintWriter(err), args);
        return new Outcome(code, out.toString(), err.toString());
    }
}

package io.kvledger.sim;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.moriio.Checked;
import java.util.List;
import java.util.Locale;

/**
 * The options of {@code kvledger simulate} as they were typed: {@link #options()} checks them into
 * {@link SimOptions} (or the usage error naming the first one refused) and {@link #rerun()} writes
 * the command line that reproduces the run (journaled as each header's {@code origin}). Optional
 * values are {@code null} when not given (the simulator's defaults apply).
 */
public record SimCommandLine(long seed, int requests, FaultSpec faults, String mode, String profile, int prefill,
                             int decode, int prefillTp, int decodeTp, int prefillDp, int decodeDp, boolean multiPod,
                             boolean unboundedReadWait, List<String> sets,
                             Double deferTimeoutS, Double timeLimitS, Double idleStepMs, Double tickMs) {

    public SimCommandLine {
        sets = List.copyOf(sets);
    }

    /** A refused option: its message, as the command prints it. */
    private static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String message) {
            super(message, null, false, false);
        }
    }

    /** The simulator's options, or the usage error naming the first option refused, in the order they are checked. */
    public Checked<SimOptions> options() {
        try {
            return Checked.ok(check());
        } catch (Refused e) {
            return Checked.fail(e.getMessage());
        }
    }

    private SimOptions check() throws Refused {
        if (requests < 1) {
            throw new Refused("--requests must be at least 1, got " + requests);
        }
        if (prefill < 1 || decode < 1) {
            throw new Refused("--prefill and --decode must be at least 1");
        }
        if (prefillTp < 1 || decodeTp < 1) {
            throw new Refused("--prefill-tp and --decode-tp must be at least 1");
        }
        TransferMode m = transferMode();
        if (m == null) {
            throw new Refused("--mode must be read or write, got '" + mode + "'");
        }
        Behaviour behaviour = Behaviour.preset(profile);
        if (behaviour == null) {
            throw new Refused("--profile must be one of " + String.join(", ", Behaviour.PRESETS) + ", got '" + profile + "'");
        }
        for (String set : sets) {
            behaviour = behaviour.with(switchOf(set), switchValue(set));
        }
        SimOptions.Builder b = SimOptions.builder(seed, m).requests(requests).nodes(prefill, decode).tp(prefillTp, decodeTp)
                .prefillDp(prefillDp).decodeDp(decodeDp).faults(faults).unboundedReadWait(unboundedReadWait).multiPod(multiPod).behaviour(behaviour).keepLog(false);
        if (deferTimeoutS != null) {
            b.deferTimeoutNs(positiveNs("--defer-timeout-s", deferTimeoutS, 1e9));
        }
        if (timeLimitS != null) {
            b.timeLimitNs(positiveNs("--time-limit-s", timeLimitS, 1e9));
        }
        if (idleStepMs != null) {
            b.idleStepNs(positiveNs("--idle-step-ms", idleStepMs, 1e6));
        }
        if (tickMs != null) {
            b.backgroundTickNs(positiveNs("--tick-ms", tickMs, 1e6));
        }
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new Refused(e.getMessage());
        }
    }

    /** {@code read} or {@code write} in any case, else {@code null}. */
    private TransferMode transferMode() {
        return switch (mode.toLowerCase(Locale.ROOT)) {
            case "read" -> TransferMode.READ;
            case "write" -> TransferMode.WRITE;
            default -> null;
        };
    }

    private static Switch switchOf(String set) throws Refused {
        int eq = set.indexOf('=');
        Switch s = eq < 0 ? null : Switch.byKey(set.substring(0, eq));
        if (s == null) {
            throw new Refused("--set takes SWITCH=true|false with a reducer switch's key, got '" + set + "'");
        }
        return s;
    }

    private static boolean switchValue(String set) throws Refused {
        String v = set.substring(set.indexOf('=') + 1);
        return switch (v) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new Refused("--set " + set + ": the value must be true or false");
        };
    }

    private static long positiveNs(String option, double v, double scale) throws Refused {
        if (!(v > 0) || Double.isInfinite(v)) {
            throw new Refused(option + " must be positive, got " + v);
        }
        return Math.round(v * scale);
    }

    /**
     * The command line that reruns these options: every option that changes the run, defaults
     * left out where the command leaves them out. Meant for options that {@link #options()} accepted.
     */
    public String rerun() {
        StringBuilder b = new StringBuilder("kvledger simulate --seed ").append(seed).append(" --requests ").append(requests)
                .append(" --faults ").append(faults.format()).append(" --mode ").append(mode.toLowerCase(Locale.ROOT))
                .append(" --profile ").append(profile);
        if (prefill != 1 || decode != 1) {
            b.append(" --prefill ").append(prefill).append(" --decode ").append(decode);
        }
        if (prefillTp != 1 || decodeTp != 1) {
            b.append(" --prefill-tp ").append(prefillTp).append(" --decode-tp ").append(decodeTp);
        }
        if (prefillDp != 1) {
            b.append(" --prefill-dp ").append(prefillDp);
        }
        if (decodeDp != 1) {
            b.append(" --decode-dp ").append(decodeDp);
        }
        if (multiPod) {
            b.append(" --multi-pod");
        }
        if (unboundedReadWait) {
            b.append(" --unbounded-read-wait");
        }
        for (String set : sets) {
            b.append(" --set ").append(set);
        }
        if (deferTimeoutS != null) {
            b.append(" --defer-timeout-s ").append(num(deferTimeoutS));
        }
        if (timeLimitS != null) {
            b.append(" --time-limit-s ").append(num(timeLimitS));
        }
        if (idleStepMs != null) {
            b.append(" --idle-step-ms ").append(num(idleStepMs));
        }
        if (tickMs != null) {
            b.append(" --tick-ms ").append(num(tickMs));
        }
        return b.toString();
    }

    private static String num(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }
}

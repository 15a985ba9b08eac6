package io.kvledger.rdma.engine;

import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.TransferEngine;
import io.kvledger.rdma.jvm.InJvmTransferEngine;
import io.kvledger.rdma.ucx.UcxTransferEngine;
import java.util.Locale;

/**
 * Chooses and opens an engine, and says in one log line which one runs and why.
 *
 * <p>The choice comes from the argument or, for {@link Choice#AUTO}, from the system property
 * {@value #PROPERTY} ({@code auto}, {@code ucx} or {@code in-jvm}); {@code auto} takes UCX when
 * libucp loads and initialises, the in-JVM engine otherwise.
 */
public final class TransferEngines {

    /** System property that overrides {@link Choice#AUTO}. */
    static final String PROPERTY = "kvledger.rdma.engine";
    private static final System.Logger LOG = System.getLogger("io.kvledger.rdma");

    /** Which engine to run. */
    public enum Choice { AUTO, UCX, IN_JVM }

    /**
     * An engine and the sentence saying why it was chosen.
     *
     * @param engine the open engine
     * @param reason the log line
     */
    public record Opened(TransferEngine engine, String reason) {}

    private TransferEngines() {}

    /** Opens the engine the property asks for (default auto) and logs the choice. Never throws. */
    static Result<Opened> open(EngineOptions options) {
        String p = System.getProperty(PROPERTY, "auto").trim().toLowerCase(Locale.ROOT);
        Choice c = switch (p) {
            case "ucx" -> Choice.UCX;
            case "in-jvm", "injvm", "jvm" -> Choice.IN_JVM;
            case "auto", "" -> Choice.AUTO;
            default -> null;
        };
        if (c == null) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "-D" + PROPERTY + "=" + p
                    + " is not one of auto, ucx, in-jvm");
        }
        return open(c, options);
    }

    /** Opens the engine asked for and logs one line saying which runs and why. Never throws. */
    public static Result<Opened> open(Choice choice, EngineOptions options) {
        Result<Opened> r = switch (choice) {
            case IN_JVM -> Result.ok(new Opened(InJvmTransferEngine.open(options),
                    "engine in-jvm (asked for; MemorySegment.copy between engines of this JVM)"));
            case UCX -> UcxTransferEngine.open(options).map(e -> new Opened(e, "engine ucx (asked for; "
                    + e.describe() + ")"));
            case AUTO -> {
                Result<UcxTransferEngine> u = UcxTransferEngine.open(options);
                if (u.valueOrNull() instanceof UcxTransferEngine e) {
                    yield Result.ok(new Opened(e, "engine ucx (auto: " + e.describe() + ")"));
                }
                yield Result.ok(new Opened(InJvmTransferEngine.open(options), "engine in-jvm (auto: "
                        + u.errorOrNull().message() + "; peers must live in this JVM)"));
            }
        };
        if (r.valueOrNull() instanceof Opened o) {
            LOG.log(System.Logger.Level.INFO, "kvledger rdma: " + o.reason());
        } else {
            LOG.log(System.Logger.Level.WARNING, "kvledger rdma: no engine: " + r.errorOrNull());
        }
        return r;
    }
}

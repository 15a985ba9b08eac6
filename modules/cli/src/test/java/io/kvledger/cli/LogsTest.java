package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * kvledger's own {@code System.Logger} lines and java.util.logging's come out of logback as one
 * line each, at the level {@code --log-level} sets, with a stack trace at debug only.
 */
@Isolated
class LogsTest {

    @AfterEach
    void backToTheDefault() {
        Logs.apply(Logs.defaultLevel());
    }

    /** What logging wrote on standard error while {@code body} ran at {@code level}. */
    private static String stderrOf(Logs.Level level, Runnable body) {
        PrintStream saved = System.err;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            Logs.apply(level);
            body.run();
        } finally {
            System.setErr(saved);
        }
        return buf.toString(StandardCharsets.UTF_8);
    }

    private static final Runnable LOG_SOME = () -> {
        System.Logger own = System.getLogger("io.kvledger.node.loop.NodeLoop");
        own.log(System.Logger.Level.WARNING, "routing SendNotify failed: java.io.IOException: gone",
                new java.io.IOException("gone"));
        own.log(System.Logger.Level.INFO, "kvledger rdma: engine in-jvm");
        own.log(System.Logger.Level.DEBUG, "a detail");
        java.util.logging.Logger.getLogger("io.opentelemetry.exporter.Http").warning("batch refused");
        java.util.logging.Logger.getLogger("io.opentelemetry.exporter.Http").info("library chatter");
    };

    @Test
    void oneLinePerEventAndNoStackTraceAtInfo() {
        String err = stderrOf(Logs.Level.info, LOG_SOME);
        assertThat(err.lines().toList()).containsExactly(
                "WARN i.k.n.loop.NodeLoop: routing SendNotify failed: java.io.IOException: gone",
                "INFO i.k.n.loop.NodeLoop: kvledger rdma: engine in-jvm",
                "WARN i.o.exporter.Http: batch refused");
    }

    @Test
    void debugAddsDetailsAndStackTraces() {
        String err = stderrOf(Logs.Level.debug, LOG_SOME);
        assertThat(err).contains("DEBUG i.k.n.loop.NodeLoop: a detail")
                .containsPattern("(?m)^java\\.io\\.IOException: gone$")
                .containsPattern("(?m)^\\s+at io\\.kvledger\\.cli\\.LogsTest")
                .doesNotContain("library chatter");
    }

    @Test
    void warnAndErrorLeaveOutTheLowerLevels() {
        assertThat(stderrOf(Logs.Level.warn, LOG_SOME).lines().toList()).containsExactly(
                "WARN i.k.n.loop.NodeLoop: routing SendNotify failed: java.io.IOException: gone",
                "WARN i.o.exporter.Http: batch refused");
        assertThat(stderrOf(Logs.Level.error, LOG_SOME)).isEmpty();
    }

    @Test
    void theOptionTakesTheFourLevelsBeforeOrAfterTheCommand() {
        Consumer<String[]> ok = args -> {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            assertThat(Main.run(new PrintWriter(out), new PrintWriter(err), args)).as("%s", String.join(" ", args))
                    .isZero();
        };
        ok.accept(new String[] {"--log-level", "warn", "completion", "bash"});
        assertThat(Logs.level()).isEqualTo(Logs.Level.warn);
        ok.accept(new String[] {"completion", "--log-level=DEBUG", "bash"});
        assertThat(Logs.level()).isEqualTo(Logs.Level.debug);
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(new StringWriter()), new PrintWriter(err), "completion", "--log-level", "loud", "bash");
        assertThat(code).isEqualTo(2);
        assertThat(err.toString()).contains("'loud' is not a log level: error, warn, info or debug")
                .contains("see 'kvledger help completion'");
    }
}

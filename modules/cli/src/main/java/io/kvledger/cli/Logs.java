package io.kvledger.cli;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.OutputStreamAppender;
import java.util.Iterator;
import java.util.Locale;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.SimpleFormatter;
import org.slf4j.LoggerFactory;

/**
 * One logging backend for the whole command: logback (configured in logback.xml) writes every log
 * line, one line per event on standard error. kvledger's own {@code System.Logger} lines and the
 * libraries that log through java.util.logging (the OpenTelemetry SDK) reach it through a handler
 * on java.util.logging's root logger ({@link Forward}); the libraries that use SLF4J reach it
 * directly.
 *
 * <p>{@code --log-level} ({@link Level}) sets kvledger's own loggers; libraries say only warnings
 * and errors (only errors at {@code error}). A logged exception is its message in the line; its
 * stack trace is printed at {@code debug} only.
 */
final class Logs {

    /** The levels of {@code --log-level}. */
    enum Level {
        error, warn, info, debug;

        static Level parse(String s) {
            for (Level l : values()) {
                if (l.name().equals(s.toLowerCase(Locale.ROOT))) {
                    return l;
                }
            }
            throw new IllegalArgumentException("'" + s + "' is not a log level: error, warn, info or debug");
        }
    }

    /** The converter of {@code --log-level}: a bad level is a usage error of the command it was given to. */
    static final class LevelOption implements picocli.CommandLine.ITypeConverter<Level> {
        @Override
        public Level convert(String value) {
            try {
                return Level.parse(value);
            } catch (IllegalArgumentException e) {
                throw new picocli.CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /** The level without {@code --log-level}: debug when KVLEDGER_DEBUG is set, else info. */
    static Level defaultLevel() {
        return Main.debugFromEnvironment() ? Level.debug : Level.info;
    }

    private static volatile Level level = Level.info;
    /** java.util.logging holds its loggers weakly: this one's level must outlive a collection. */
    private static final java.util.logging.Logger OWN_JUL = java.util.logging.Logger.getLogger("io.kvledger");

    private Logs() {}

    /** The level in force. */
    static Level level() {
        return level;
    }

    /** Whether logback runs in this JVM as far as this class knows (it started it, or configured it). */
    private static boolean backendStarted;

    /**
     * Routes java.util.logging to logback and sets the levels and the line format for {@code l}.
     * Logback itself (some 500 classes, half a second of CPU) starts only when something logs:
     * until then the levels wait in system properties that logback.xml reads.
     */
    static synchronized void apply(Level l) {
        level = l;
        System.setProperty("kvledger.log.level", logback(l).toString());
        System.setProperty("kvledger.log.libraries", l == Level.error ? "ERROR" : "WARN");
        System.setProperty("kvledger.log.exception", l == Level.debug ? "%ex" : "%nopex");
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        for (Handler h : root.getHandlers()) {
            if (!(h instanceof Forward)) {
                root.removeHandler(h);
            }
        }
        if (root.getHandlers().length == 0) {
            root.addHandler(new Forward());
        }
        root.setLevel(jul(l));
        OWN_JUL.setLevel(jul(l));
        if (backendStarted) {
            configureBackend();
        }
    }

    /** Starts logback if it is not running yet and gives it the level in force (idempotent). */
    static synchronized void configureBackend() {
        backendStarted = true;
        Level l = level;
        if (LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx) {
            ctx.getLogger("io.kvledger").setLevel(logback(l));
            ch.qos.logback.classic.Logger rootLogger = ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
            rootLogger.setLevel(l == Level.error ? ch.qos.logback.classic.Level.ERROR : ch.qos.logback.classic.Level.WARN);
            for (Iterator<Appender<ILoggingEvent>> it = rootLogger.iteratorForAppenders(); it.hasNext(); ) {
                if (it.next() instanceof OutputStreamAppender<ILoggingEvent> out) {
                    PatternLayoutEncoder enc = new PatternLayoutEncoder();
                    enc.setContext(ctx);
                    // one line per event; the stack trace, on the lines after, at debug only
                    enc.setPattern(l == Level.debug ? "%level %logger{20}: %msg%n%ex" : "%level %logger{20}: %msg%n%nopex");
                    enc.start();
                    out.setEncoder(enc);
                }
            }
        }
    }

    private static java.util.logging.Level jul(Level l) {
        return switch (l) {
            case error -> java.util.logging.Level.SEVERE;
            case warn -> java.util.logging.Level.WARNING;
            case info -> java.util.logging.Level.INFO;
            case debug -> java.util.logging.Level.FINE;
        };
    }

    private static ch.qos.logback.classic.Level logback(Level l) {
        return switch (l) {
            case error -> ch.qos.logback.classic.Level.ERROR;
            case warn -> ch.qos.logback.classic.Level.WARN;
            case info -> ch.qos.logback.classic.Level.INFO;
            case debug -> ch.qos.logback.classic.Level.DEBUG;
        };
    }

    /** java.util.logging's records (System.Logger's among them) handed to SLF4J, the logger name kept. */
    static final class Forward extends Handler {

        private final SimpleFormatter formatter = new SimpleFormatter();

        @Override
        public void publish(LogRecord r) {
            if (r == null || !isLoggable(r)) {
                return;
            }
            if (!backendStarted) {
                configureBackend();
            }
            org.slf4j.Logger to = LoggerFactory.getLogger(r.getLoggerName() == null ? "" : r.getLoggerName());
            int v = r.getLevel().intValue();
            org.slf4j.event.Level at = v >= java.util.logging.Level.SEVERE.intValue() ? org.slf4j.event.Level.ERROR
                    : v >= java.util.logging.Level.WARNING.intValue() ? org.slf4j.event.Level.WARN
                    : v >= java.util.logging.Level.INFO.intValue() ? org.slf4j.event.Level.INFO
                    : v >= java.util.logging.Level.FINE.intValue() ? org.slf4j.event.Level.DEBUG
                    : org.slf4j.event.Level.TRACE;
            if (!to.isEnabledForLevel(at)) {
                return;
            }
            to.atLevel(at).setCause(r.getThrown()).log(formatter.formatMessage(r));
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    }
}

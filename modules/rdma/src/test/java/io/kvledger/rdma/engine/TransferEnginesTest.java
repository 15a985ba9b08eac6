package io.kvledger.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.ucx.Ucx;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The factory picks an engine and says which one runs and why, in one line. */
class TransferEnginesTest {

    final List<String> lines = new CopyOnWriteArrayList<>();
    final Logger jul = Logger.getLogger("io.kvledger.rdma");
    final Handler capture = new Handler() {
        @Override public void publish(LogRecord r) {
            if (r.getMessage().startsWith("kvledger rdma:")) {
                lines.add(r.getLevel() + " " + r.getMessage());
            }
        }
        @Override public void flush() {}
        @Override public void close() {}
    };

    @BeforeEach
    void listen() {
        jul.addHandler(capture);
        jul.setLevel(Level.ALL);
    }

    @AfterEach
    void stop() {
        jul.removeHandler(capture);
        System.clearProperty(TransferEngines.PROPERTY);
    }

    @Test
    void autoTakesUcxWhenItLoadsAndSaysSo() {
        Result<TransferEngines.Opened> r = TransferEngines.open(TransferEngines.Choice.AUTO, EngineOptions.defaults());
        try (var e = r.orElseThrow().engine()) {
            if (Ucx.load().loaded()) {
                assertThat(e.kind()).isEqualTo("ucx");
                assertThat(r.orElseThrow().reason()).startsWith("engine ucx (auto: libucp 1.").contains("error handling auto",
                        "NET_DEVICES=lo");
            } else {
                assertThat(e.kind()).isEqualTo("in-jvm");
                assertThat(r.orElseThrow().reason()).contains("UCX unavailable");
            }
        }
        assertThat(lines).hasSize(1);
        assertThat(lines.get(0)).startsWith("INFO kvledger rdma: engine ");
    }

    @Test
    void thePropertyCanAskForTheInJvmEngine() {
        System.setProperty(TransferEngines.PROPERTY, "in-jvm");
        try (var e = TransferEngines.open(EngineOptions.defaults()).orElseThrow().engine()) {
            assertThat(e.kind()).isEqualTo("in-jvm");
        }
        assertThat(lines).containsExactly("INFO kvledger rdma: engine in-jvm (asked for; MemorySegment.copy between "
                + "engines of this JVM)");
    }

    @Test
    void aBadPropertyValueIsAClearError() {
        System.setProperty(TransferEngines.PROPERTY, "rdma-please");
        var r = TransferEngines.open(EngineOptions.defaults());
        assertThat(r.errorOrNull().code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(r.errorOrNull().message()).contains("rdma-please", "auto, ucx, in-jvm");
    }
}

package io.kvledger.rdma.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.rdma.testing.ChildJvm;
import io.kvledger.rdma.testing.NullCheckChild;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The UCX signal-handler trap (stack notes): libucs installs a SIGSEGV handler when it loads,
 * and the JVM's implicit null checks are SIGSEGVs. Each case runs in a child JVM (same flags and
 * classpath, {@code -Xbatch} so the null-checked method is compiled before it is called with
 * null), since the failure mode is the death of the JVM.
 */
class UcxSignalTrapTest {

    @TempDir
    Path dir;

    record Outcome(int exit, String output, boolean hsErr) {}

    Outcome child(String how) throws Exception {
        List<String> cmd = ChildJvm.command(List.of("-Xbatch", "-XX:ErrorFile=" + dir.resolve("hs_err_%p.log")),
                NullCheckChild.class, how);
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true);
        // this JVM has cleared it already and a child would inherit that: each child must stand alone
        pb.environment().remove("UCX_ERROR_SIGNALS");
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("child finished").isTrue();
        try (Stream<Path> files = Files.list(dir)) {
            boolean hs = files.anyMatch(f -> f.getFileName().toString().startsWith("hs_err"));
            return new Outcome(p.exitValue(), new String(out, StandardCharsets.UTF_8), hs);
        }
    }

    @Test
    void theJvmSurvivesImplicitNullChecksAfterTheEngineLoadedUcx() throws Exception {
        assumeTrue(Ucx.load().loaded(), () -> "UCX not available here: " + Ucx.load().detail());
        Outcome o = child("engine");
        assertThat(o.output()).as("child output").contains("UCX_ERROR_SIGNALS=''").contains("SURVIVED 100 null checks")
                .doesNotContain("Caught signal");
        assertThat(o.exit()).as("child exit status; output:\n%s", o.output()).isZero();
        assertThat(o.hsErr()).as("no JVM crash log").isFalse();
    }

    @Test
    void withoutClearingUcxErrorSignalsUcxTakesTheJvmsSignals() throws Exception {
        assumeTrue(Ucx.load().loaded(), () -> "UCX not available here: " + Ucx.load().detail());
        Outcome o = child("raw");
        // UCX's handler takes the JVM's SIGSEGV; it then re-raises it (the JVM dies: "sent by kill")
        // or, depending on timing, hands it back: either way the signal went through UCX
        boolean tookIt = o.output().contains("Caught signal 11") || o.exit() != 0;
        assertThat(tookIt).as("the trap is real; child output:\n%s", o.output()).isTrue();
    }

    @Test
    void thisJvmHasUcxErrorSignalsCleared() {
        assumeTrue(Ucx.load().loaded(), () -> "UCX not available here: " + Ucx.load().detail());
        assertThat(Ucx.Libc.getenv("UCX_ERROR_SIGNALS")).isEmpty();
    }
}

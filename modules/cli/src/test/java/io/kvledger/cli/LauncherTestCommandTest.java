package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./kvledger test}: runs the vLLM bridge's pytest suite and {@code mvn verify}; Maven's exit
 * status wins when Maven fails, a pytest failure (or a pytest run that collected no tests) fails
 * the command otherwise. The script runs in a scratch checkout with a stand-in {@code mvn} first on
 * the PATH (it records its arguments and exits with a chosen status) and a small pytest suite.
 */
class LauncherTestCommandTest {

    @TempDir
    Path tmp;

    private Path checkout;
    private Path bin;

    @BeforeAll
    static void pytest() throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", "-m", "pytest", "--version").redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        assumeTrue(p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0,
                "skipped: Debian's python3-pytest is missing (./kvledger test installs it)");
    }

    @BeforeEach
    void scratchCheckout() throws IOException {
        Path script = Path.of(System.getProperty("kvledger.launcher", "../../kvledger"));
        checkout = tmp.resolve("checkout");
        Files.createDirectories(checkout.resolve("modules/vllm-bridge/tests"));
        Files.copy(script, checkout.resolve("kvledger"));
        bin = tmp.resolve("bin");
        Files.createDirectories(bin);
        Path mvn = bin.resolve("mvn");
        Files.writeString(mvn, "#!/usr/bin/env bash\nprintf '%s\\n' \"$*\" > \"" + tmp.resolve("mvn.args") + "\"\n"
                + "exit \"${FAKE_MVN_RC:-0}\"\n");
        Files.setPosixFilePermissions(mvn, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    private void pythonTest(String name, String body) throws IOException {
        Files.writeString(checkout.resolve("modules/vllm-bridge/tests").resolve(name), body);
    }

    private record Ran(int code, String err, String mvnArgs) {}

    private Ran test(int mvnRc) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(List.of("bash", checkout.resolve("kvledger").toString(), "test", "-Dsome.flag=1"))
                .directory(tmp.toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("PATH", bin + ":" + System.getenv("PATH"));
        pb.environment().put("FAKE_MVN_RC", Integer.toString(mvnRc));
        Path out = tmp.resolve("launch.out");
        Path err = tmp.resolve("launch.err");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile());
        Process p = pb.start();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("the launcher ends").isTrue();
        Path args = tmp.resolve("mvn.args");
        String mvnArgs = Files.exists(args) ? Files.readString(args, StandardCharsets.UTF_8).strip() : null;
        return new Ran(p.exitValue(), Files.readString(err, StandardCharsets.UTF_8), mvnArgs);
    }

    @Test
    void passing_pytest_and_maven_pass() throws Exception {
        pythonTest("test_ok.py", "def test_ok():\n    assert 1 + 1 == 2\n");
        Ran r = test(0);
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.err()).contains("running the Python tests of modules/vllm-bridge");
        assertThat(r.mvnArgs()).isEqualTo("-B verify -Dsome.flag=1");
    }

    @Test
    void a_failing_python_test_fails_the_command_after_maven_ran() throws Exception {
        pythonTest("test_bad.py", "def test_bad():\n    assert 1 + 1 == 3\n");
        Ran r = test(0);
        assertThat(r.code()).as(r.err()).isEqualTo(1);
        assertThat(r.err()).contains("the Python tests of modules/vllm-bridge failed (pytest exit 1)");
        assertThat(r.mvnArgs()).as("Maven still runs").isEqualTo("-B verify -Dsome.flag=1");
    }

    @Test
    void no_python_tests_collected_is_a_failure() throws Exception {
        pythonTest("helpers.py", "X = 1\n");
        Ran r = test(0);
        assertThat(r.code()).as(r.err()).isEqualTo(1);
        assertThat(r.err()).contains("pytest collected no tests").contains("exit 5");
    }

    @Test
    void maven_exit_status_is_kept_when_maven_fails() throws Exception {
        pythonTest("test_ok.py", "def test_ok():\n    assert True\n");
        Ran r = test(3);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        pythonTest("test_bad.py", "def test_bad():\n    assert False\n");
        Ran both = test(2);
        assertThat(both.code()).as(both.err()).isEqualTo(2);
    }
}

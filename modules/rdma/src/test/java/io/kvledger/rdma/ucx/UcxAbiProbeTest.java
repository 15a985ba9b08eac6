package io.kvledger.rdma.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Guards the hand-written layouts: runs {@code native/abi_probe}, compiled by the build against
 * the installed {@code <ucp/api/ucp.h>}, and compares every size, field offset and constant.
 */
class UcxAbiProbeTest {

    static Path probe() {
        Path bin = Path.of(System.getProperty("kvledger.native.bin", "target/native"));
        Path p = bin.resolve("abi_probe");
        assumeTrue(Files.isExecutable(p), () -> "ABI probe not built at " + p
                + " (no gcc or no UCX headers: see the [native] line of the build log)");
        return p;
    }

    static List<String> run(Path probe) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(probe.toString()).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("abi_probe exit status").isZero();
        return new String(out, StandardCharsets.UTF_8).lines().toList();
    }

    @Test
    void javaLayoutsAndConstantsMatchTheInstalledHeaders() throws Exception {
        List<String> lines = run(probe());
        assertThat(lines).as("probe output").anyMatch(l -> l.startsWith("size ucp_params_t "));
        List<String> bad = AbiCheck.mismatches(lines, UcxAbi.STRUCTS, UcxAbi.CONSTANTS);
        assertThat(bad).as("UCX ABI mismatch between io.kvledger.rdma.ucx.UcxAbi and the installed ucp.h "
                + "(UCX upgraded?); fix the layouts before using the engine").isEmpty();
    }

    @Test
    void theSizesStackNotesRecordForUcx1131AreWhatTheLayoutsSay() {
        assertThat(UcxAbi.UCP_PARAMS.byteSize()).isEqualTo(80);
        assertThat(UcxAbi.UCP_WORKER_PARAMS.byteSize()).isEqualTo(200);
        assertThat(UcxAbi.UCP_EP_PARAMS.byteSize()).isEqualTo(104);
        assertThat(UcxAbi.UCP_MEM_MAP_PARAMS.byteSize()).isEqualTo(40);
        assertThat(UcxAbi.UCP_REQUEST_PARAM.byteSize()).isEqualTo(72);
    }

    @Test
    void aMismatchNamesTheStructTheFieldAndBothValues() throws Exception {
        List<String> lines = new ArrayList<>(run(probe()));
        lines.replaceAll(l -> l.equals("offset ucp_ep_params_t err_mode 16") ? "offset ucp_ep_params_t err_mode 20" : l);
        lines.replaceAll(l -> l.startsWith("size ucp_request_param_t ") ? "size ucp_request_param_t 80" : l);
        lines.add("const UCP_FEATURE_RMA 4");
        lines.add("size ucp_new_thing_t 8");
        List<String> bad = AbiCheck.mismatches(lines, UcxAbi.STRUCTS, UcxAbi.CONSTANTS);
        assertThat(bad).contains(
                "ucp_ep_params_t.err_mode: offsetof is 20 in C, the Java layout puts it at 16",
                "ucp_request_param_t: sizeof is 80 bytes in C, the Java layout has 72",
                "UCP_FEATURE_RMA is 4 in C, 2 in UcxAbi",
                "ucp_new_thing_t: the probe prints it but UcxAbi has no layout for it");
    }
}

package io.kvledger.tap;

import static io.kvledger.node.FakeEngineProcess.decodeLeg;
import static io.kvledger.node.FakeEngineProcess.post;
import static io.kvledger.node.FakeEngineProcess.prefillLeg;
import static io.kvledger.node.FakeEngineProcess.requestId;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.node.cluster.LoopbackPorts;
import io.kvledger.node.FakeEngineProcess;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tap in front of real Python MoRIIO peers: the fake engines of modules/vllm-bridge
 * ({@code python3 -m kvledger_vllm.fake_engine}, pyzmq), one prefill and one decode in WRITE mode,
 * driven with request ids whose notify ports carry the shift, as the proxy composes them. A
 * transfer whose frames all crossed is complete in the report; after the prefill process is
 * killed, the next transfer's write_done never crosses, and the report says so from the tap's
 * journals alone.
 */
class TapPythonEnginesTest {

    @TempDir
    Path dir;

    @Test
    void python_moriio_peers_talk_through_the_tap_and_the_report_names_the_write_done_a_dead_prefill_never_sent()
            throws Exception {
        FakeEngineProcess.assumePython();
        int base = LoopbackPorts.freeRange(2);
        int shift = LoopbackPorts.freeRange(2) - base;
        int[] http = LoopbackPorts.distinct(2);
        List<TapTarget> targets = List.of(new TapTarget(Role.PRODUCER, "127.0.0.1", base, shift),
                new TapTarget(Role.CONSUMER, "127.0.0.1", base + 1, shift));
        String prefillAddr = "host:127.0.0.1,handshake:6301,notify:" + (base + shift);
        String decodeAddr = "host:127.0.0.1,handshake:7301,notify:" + (base + 1 + shift);
        StringWriter err = new StringWriter();
        HttpClient client = HttpClient.newHttpClient();
        TapReport report;
        try (Tap tap = Tap.open(new Tap.Config(targets, "127.0.0.1", dir, TransferMode.WRITE, "test", System::nanoTime),
                new PrintWriter(err));
            FakeEngineProcess prefill = FakeEngineProcess.start("prefill", "write", http[0], 6301, base);
            FakeEngineProcess decode = FakeEngineProcess.start("decode", "write", http[1], 7301, base + 1)) {
            // as the proxy: both legs at once, the same request id, the shifted notify ports in it
            String rid1 = requestId(prefillAddr, decodeAddr);
            var p1 = post(client, http[0], rid1, prefillLeg("tx-1"));
            var d1 = post(client, http[1], rid1, decodeLeg("tx-1"));
            assertThat(p1.get(120, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            assertThat(p1.get().body()).contains("\"do_remote_prefill\": true").contains("\"transfer_id\": \"tx-1\"");
            HttpResponse<String> answer = d1.get(120, TimeUnit.SECONDS);
            assertThat(answer.statusCode()).isEqualTo(200);
            assertThat(answer.body()).contains("\"text\": \" tok1 tok2\"");

            String rid2 = requestId(prefillAddr, decodeAddr);
            assertThat(post(client, http[0], rid2, prefillLeg("tx-2")).get(120, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            prefill.kill();
            var d2 = post(client, http[1], rid2, decodeLeg("tx-2"));
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (tap.framesJournaled() < 3 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(tap.framesJournaled()).as("remote_blocks and write_done of tx-1, remote_blocks of tx-2").isEqualTo(3);
            assertThat(d2).as("the decode waits for a write_done that never comes").isNotDone();
            d2.cancel(true);
        }
        report = TapReport.read(JournalInputs.resolve(List.of(dir)));
        assertThat(report.transfers()).extracting(TapReport.Transfer::transferId).containsExactly("tx-1", "tx-2");
        assertThat(report.transfers().get(0).complete()).isTrue();
        assertThat(report.transfers().get(0).crossed()).extracting(c -> c.type() + "->" + c.to().label())
                .containsExactly("remote_blocks->P+0 127.0.0.1:" + base, "write_done->D+0 127.0.0.1:" + (base + 1));
        assertThat(report.transfers().get(1).missing()).singleElement().asString()
                .startsWith("1 write_done never crossed to D+0 127.0.0.1:" + (base + 1) + " (decode_rank 0)");
        assertThat(err.toString()).isEmpty();
    }

    /** What the Java proxy will read: the fake engine's heartbeat, received by a JeroMQ ROUTER, decodes with the registration codec. */
    @Test
    void the_fake_engine_registration_decodes_with_the_java_codec() throws Exception {
        FakeEngineProcess.assumePython();
        int[] ports = LoopbackPorts.distinct(2);
        try (org.zeromq.ZContext ctx = new org.zeromq.ZContext()) {
            org.zeromq.ZMQ.Socket ping = ctx.createSocket(org.zeromq.SocketType.ROUTER);
            ping.setReceiveTimeOut(15_000);
            int pingPort = ping.bindToRandomPort("tcp://127.0.0.1");
            try (FakeEngineProcess e = FakeEngineProcess.start("prefill", "read", ports[0], 6301, ports[1], "--proxy",
                    "tcp://127.0.0.1:" + pingPort)) {
                byte[] identity = ping.recv(0);
                assertThat(identity).as("a registration within 15 s").isNotNull();
                assertThat(ping.hasReceiveMore()).isTrue();
                byte[] frame = ping.recv(0);
                assertThat(ping.hasReceiveMore()).as("one frame, no empty delimiter").isFalse();
                io.kvledger.wire.Registration r = new io.kvledger.wire.RegistrationCodec().decode(frame).valueOrNull();
                assertThat(r).isEqualTo(new io.kvledger.wire.Registration("P", "127.0.0.1:" + ports[0],
                        io.kvledger.wire.Registration.zmqAddress("127.0.0.1", 6301, ports[1]), 1, 1, "READ"));
            }
        }
    }
}

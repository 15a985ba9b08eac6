package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.wire.DecodeResult;
import io.kvledger.wire.Registration;
import io.kvledger.wire.RegistrationCodec;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.zeromq.ZMQ;

class RegistrationHeartbeatTest {

    static final Registration PREFILL = new Registration("P", "10.0.0.1:8100", "host:10.0.0.1,handshake:6301,notify:61005", 2, 4, "WRITE");

    @Test
    void sendsTheRegistrationMapRepeatedly() {
        Set<String> before = Threads.kvledger();
        Collector<AdapterEvent> events = new Collector<>();
        try (TestPeers peers = new TestPeers()) {
            ZMQ.Socket proxy = peers.router("tcp://127.0.0.1:*");
            try (RegistrationHeartbeat hb = RegistrationHeartbeat.start("tcp://127.0.0.1:" + TestPeers.port(proxy), PREFILL,
                    Duration.ofMillis(20), events, System::nanoTime)) {
                byte[] identity = null;
                for (int i = 0; i < 3; i++) {
                    List<byte[]> msg = NotifyPublisherTest.recv(proxy);
                    assertThat(msg).hasSize(2);
                    identity = identity == null ? msg.get(0) : identity;
                    assertThat(msg.get(0)).as("one DEALER for the heartbeat's life").isEqualTo(identity);
                    assertThat(HexFormat.of().formatHex(msg.get(1))).as("the register_prefill vector").isEqualTo(
                            "86a474797065a150ac687474705f61646472657373ad31302e302e302e313a38313030ab7a6d715f61646472657373d929686f73743a31302e302e302e312c68616e647368616b653a363330312c6e6f746966793a3631303035a764705f73697a6502a774705f73697a6504ad7472616e736665725f6d6f6465a55752495445");
                    assertThat(new RegistrationCodec().decode(msg.get(1))).isEqualTo(new DecodeResult.Ok<>(PREFILL));
                }
                long deadline = System.nanoTime() + 120_000_000_000L;
                while (hb.sent() < 3 && System.nanoTime() < deadline) {
                    Collector.sleep(1);
                }
                assertThat(hb.sent()).as("counted after each send returns").isGreaterThanOrEqualTo(3);
            }
        }
        assertThat(events.items()).isEmpty();
        assertThat(RegistrationHeartbeat.PING_INTERVAL).isEqualTo(Duration.ofSeconds(3));
        Threads.assertNoneLeftBeyond(before);
    }

    @Test
    void anUnresolvableProxyBecomesHeartbeatFailedAndTheHeartbeatGoesOn() {
        Collector<AdapterEvent> events = new Collector<>();
        try (RegistrationHeartbeat hb = RegistrationHeartbeat.start("tcp://no-such-host.invalid:36367", PREFILL,
                Duration.ofMillis(20), events, System::nanoTime)) {
            List<AdapterEvent.HeartbeatFailed> failed = events.awaitMatching(e -> e instanceof AdapterEvent.HeartbeatFailed, 2, 10);
            assertThat(failed.get(0).endpoint()).isEqualTo("tcp://no-such-host.invalid:36367");
            assertThat(failed.get(0).reason()).contains("no-such-host.invalid");
            assertThat(hb.failed()).isGreaterThanOrEqualTo(2);
        }
    }
}

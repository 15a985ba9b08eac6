package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/** The shadow socket: a PULL on loopback handing each three-frame message to its handler, in order. */
class ShadowStreamServerTest {

    @Test
    void messagesReachTheHandlerInOrderAndOtherShapesAreCountedNotFatal() throws Exception {
        List<String> seen = new CopyOnWriteArrayList<>();
        ShadowStreamServer.Handler h = new ShadowStreamServer.Handler() {
            @Override
            public void onMessage(long atNs, byte[] envelope, byte[] header, byte[] batch) {
                seen.add(new String(envelope, StandardCharsets.UTF_8) + "|" + new String(header, StandardCharsets.UTF_8)
                        + "|" + new String(batch, StandardCharsets.UTF_8));
            }

            @Override
            public void onMalformed(long atNs, String reason) {
                seen.add("malformed: " + reason);
            }
        };
        try (ShadowStreamServer s = ShadowStreamServer.open("tcp://127.0.0.1:0", System::nanoTime, h)) {
            assertThat(s.endpoint()).startsWith("tcp://127.0.0.1:");
            ZMQ.Context ctx = ZMQ.context(1);
            try (StallKicker kicker = new StallKicker(ctx)) {
                ZMQ.Socket push = ctx.socket(SocketType.PUSH);
                push.setLinger(0);
                push.connect(s.endpoint());
                kicker.connected(System.nanoTime());
                push.sendMore("e1");
                push.send("only two frames");
                push.sendMore("e2");
                push.sendMore("h");
                push.send("l1\nl2");
                push.send("one");
                long end = System.nanoTime() + 120_000_000_000L;
                while (seen.size() < 3 && System.nanoTime() < end) {
                    kicker.maybeKick(System.nanoTime());
                    Thread.sleep(10);
                }
                push.close();
            } finally {
                ctx.term();
            }
            assertThat(seen).containsExactly(
                    "malformed: a message of 2 frame(s) (a stream message has 3: envelope, header, lines)",
                    "e2|h|l1\nl2",
                    "malformed: a message of 1 frame(s) (a stream message has 3: envelope, header, lines)");
            assertThat(s.messages()).isEqualTo(3);
            assertThat(s.malformed()).isEqualTo(2);
        }
    }

    @Test
    void onlyLoopbackTcpIsBound() {
        ShadowStreamServer.Handler none = new ShadowStreamServer.Handler() {
            @Override
            public void onMessage(long atNs, byte[] envelope, byte[] header, byte[] batch) { }

            @Override
            public void onMalformed(long atNs, String reason) { }
        };
        assertThatThrownBy(() -> ShadowStreamServer.open("tcp://0.0.0.0:0", System::nanoTime, none))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the shadow socket takes unauthenticated streams and binds only loopback");
        assertThatThrownBy(() -> ShadowStreamServer.open("ipc://shadow.sock", System::nanoTime, none))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ipc:// is not supported");
    }
}

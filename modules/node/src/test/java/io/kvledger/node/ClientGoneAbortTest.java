package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.node.cluster.LocalLeg;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node's built-in engine aborts a request whose HTTP client went away, as vLLM's API server
 * does: a decode waiting for KV that never comes, asked for a billion tokens, is not left holding
 * its blocks after its caller gave up.
 */
class ClientGoneAbortTest {

    @TempDir
    Path dir;

    @Test
    void aRequestWhoseClientDisconnectsIsAborted() throws Exception {
        int base = TestNodes.freePortBase(4);
        int dead = TestNodes.freePortBase(2);
        NodeService d = NodeService.start(TestNodes.options("D0",
                TestNodes.config(Role.CONSUMER, TransferMode.WRITE, base, base + 1), dir.resolve("D0"))
                .withHttp("127.0.0.1", 0, null));
        String xrid;
        try {
            ZmqAddress nobody = new ZmqAddress("127.0.0.1", dead, dead + 1);
            xrid = RequestIds.proxyRequestId(nobody, new LocalLeg(d).zmqAddress(), "0123456789abcdef0123456789abcdef");
            String body = "{\"prompt_tokens\":64,\"max_tokens\":1000000000,\"kv_transfer_params\":{"
                    + "\"do_remote_decode\":false,\"do_remote_prefill\":true,\"remote_engine_id\":null,"
                    + "\"remote_block_ids\":null,\"transfer_id\":\"tx-client-gone\",\"remote_dp_size\":1,"
                    + "\"remote_tp_size\":1}}";
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            try (Socket client = new Socket("127.0.0.1", d.http().port())) {
                OutputStream out = client.getOutputStream();
                out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        + "X-Request-Id: " + xrid + "\r\nContent-Length: " + bytes.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(bytes);
                out.flush();
                assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> d.engine().heldRequests() == 1))
                        .as("the decode request is admitted and waits for its KV").isTrue();
            }
            // the client gave up: the engine aborts its request and frees what it held
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> d.engine().heldRequests() == 0))
                    .as("the request of a client that went away is aborted (held %d)", d.engine().heldRequests()).isTrue();
            assertThat(d.engine().failed()).isEqualTo(1);
            assertThat(d.engine().freeBlocks()).isEqualTo(d.options().layout().numBlocks());
        } finally {
            d.close();
        }
        List<FinishStatus> finished = new ArrayList<>();
        try (JournalReader r = JournalReader.open(dir.resolve("D0"))) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Input in && in.event() instanceof NodeEvent.RequestFinished f
                        && f.requestId().contains(xrid)) {
                    finished.add(f.status());
                }
            }
        }
        assertThat(finished).as("journaled as the engine's abort").containsExactly(FinishStatus.FINISHED_ABORTED);
    }
}

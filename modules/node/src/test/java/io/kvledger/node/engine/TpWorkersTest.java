package io.kvledger.node.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.model.PyValue;
import io.kvledger.wire.PyMsgpack;
import io.kvledger.wire.PyValues;
import io.kvledger.wire.bridge.BridgeCodec;
import io.kvledger.wire.bridge.BridgeReply;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TpWorkersTest {

    /** A get_finished reply as a worker rank's bridge sends it, decoded as the engine decodes it. */
    private static BridgeReply reply(long id, Map<String, Object> result) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("v", 1L);
        m.put("id", id);
        m.put("ok", true);
        m.put("result", result);
        return BridgeCodec.decodeReply(PyMsgpack.encode(m)).valueOrNull();
    }

    @Test
    void get_finished_replies_read_as_request_ids_and_block_ids() {
        Map<String, Object> full = new LinkedHashMap<>();
        full.put("finished_sending", List.of("p1", "p2"));
        full.put("finished_recving", null);
        full.put("load_error_blocks", Arrays.asList(3L, 4.9, true, "5", null));
        Map<String, Object> odd = new LinkedHashMap<>();
        odd.put("finished_sending", "p3");
        odd.put("finished_recving", List.of(7L));
        BridgeReply error = BridgeCodec.decodeReply(BridgeCodec.encodeError(9L, "boom")).valueOrNull();

        List<TpWorkers.Polled> polled = TpWorkers.polled(List.of(reply(1, full), reply(2, odd), error));

        assertThat(polled.get(0)).isEqualTo(new TpWorkers.Polled(List.of("p1", "p2"), List.of(), List.of(3, 4)));
        assertThat(polled.get(1)).as("a str is no list; an int id reads as its text")
                .isEqualTo(new TpWorkers.Polled(List.of(), List.of("7"), List.of()));
        assertThat(polled.get(2)).as("an error reply finished nothing").isEqualTo(new TpWorkers.Polled(List.of(), List.of(), List.of()));
    }

    @Test
    void the_failed_handshakes_list_reads_as_text() {
        assertThat(TpWorkers.strings(PyValues.value(List.of("e1:6301", 2L)))).containsExactly("e1:6301", "2");
        assertThat(TpWorkers.strings(null)).isEmpty();
        assertThat(TpWorkers.strings(PyValue.NONE)).isEmpty();
    }
}

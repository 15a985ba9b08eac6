package io.kvledger.wire;

import static io.kvledger.wire.Frames2.concat;
import static io.kvledger.wire.Frames2.hex;
import static io.kvledger.wire.Frames2.map;
import static io.kvledger.wire.Frames2.py;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.wire.PythonNotifyListener.Outcome;
import java.math.BigInteger;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The model of the Python listener (cross-checked against real Python in the zmq module's interop tests). */
class PythonNotifyListenerTest {

    private static Outcome outcome(byte[] f) {
        return PythonNotifyListener.verdict(f).outcome();
    }

    @Test
    void dispatchFollowsTheStockListener() {
        assertThat(outcome(py(map("type", "release", "transfer_id", "t")))).isEqualTo(Outcome.RELEASE);
        assertThat(outcome(py(map("req_id", "r", "transfer_id", "t", "block_notify_list", List.of(1))))).isEqualTo(Outcome.REMOTE_BLOCKS);
        assertThat(outcome(py(map("type", null, "req_id", "r", "transfer_id", "t", "block_notify_list", List.of(1)))))
                .as("type None with req_id").isEqualTo(Outcome.REMOTE_BLOCKS);
        assertThat(outcome(py(map("type", "remote_blocks", "transfer_id", List.of(1), "block_notify_list", List.of(1)))))
                .as("an unhashable transfer id").isEqualTo(Outcome.RAISES);
        assertThat(outcome(py(map("type", "remote_blocks", "transfer_id", "t", "block_notify_list", 5))))
                .as("a truthy non-list is stored").isEqualTo(Outcome.REMOTE_BLOCKS);
        assertThat(outcome(py(map("type", "remote_blocks", "transfer_id", "t", "block_notify_list", map())))).isEqualTo(Outcome.RAISES);
        assertThat(outcome(py(map("type", "write_done", "transfer_id", List.of())))).as("appended, never hashed").isEqualTo(Outcome.WRITE_DONE);
        assertThat(outcome(py(map("type", "ping")))).isEqualTo(Outcome.RAISES);
        assertThat(outcome(py(List.of(1)))).as("non-dict, then not UTF-8").isEqualTo(Outcome.RAISES);
        assertThat(outcome("x".getBytes(java.nio.charset.StandardCharsets.UTF_8))).isEqualTo(Outcome.COMPLETION);
        assertThat(outcome(new byte[0])).isEqualTo(Outcome.RAISES);
        assertThat(outcome(null)).isEqualTo(Outcome.RAISES);
    }

    @Test
    void consumerTpSizeGoesThroughPythonInt() {
        assertThat(tp("8")).isEqualTo(Outcome.RELEASE);
        assertThat(tp(" +1_0 ")).isEqualTo(Outcome.RELEASE);
        assertThat(tp("٣")).as("Unicode decimal digits").isEqualTo(Outcome.RELEASE);
        assertThat(tp("1__0")).isEqualTo(Outcome.RAISES);
        assertThat(tp("_1")).isEqualTo(Outcome.RAISES);
        assertThat(tp("0")).isEqualTo(Outcome.RAISES);
        assertThat(tp("x")).isEqualTo(Outcome.RAISES);
        assertThat(tp(new byte[] {'4'})).isEqualTo(Outcome.RELEASE);
        assertThat(tp(2.9)).isEqualTo(Outcome.RELEASE);
        assertThat(tp(0.5)).as("int(0.5) == 0").isEqualTo(Outcome.RAISES);
        assertThat(tp(Double.NaN)).isEqualTo(Outcome.RAISES);
        assertThat(tp(true)).isEqualTo(Outcome.RELEASE);
        assertThat(tp(false)).isEqualTo(Outcome.RAISES);
        assertThat(tp(null)).isEqualTo(Outcome.RAISES);
        assertThat(tp(List.of(1))).isEqualTo(Outcome.RAISES);
        assertThat(tp(new BigInteger("18446744073709551615"))).isEqualTo(Outcome.RELEASE);
    }

    private static Outcome tp(Object v) {
        return outcome(py(map("type", "release", "transfer_id", "t", "consumer_tp_size", v)));
    }

    @Test
    void loadsFailuresFallBackToUtf8() {
        assertThat(outcome(hex("82a474797065a772656c65617365ab7472616e736665725f6964a474"))).isEqualTo(Outcome.RAISES);
        byte[] intKey = concat(hex("81"), py(1), py(2));
        assertThat(outcome(intKey)).as("strict_map_key, then 0x81 is not UTF-8").isEqualTo(Outcome.RAISES);
        byte[] binKeys = concat(hex("82c404"), "type".getBytes(java.nio.charset.StandardCharsets.US_ASCII), py("release"),
                py("transfer_id"), py("t"));
        assertThat(PythonNotifyListener.verdict(binKeys).detail()).contains("Unhandled structured message type: None");
        Object deep = 1;
        for (int i = 0; i < 1100; i++) {
            deep = List.of(deep);
        }
        assertThat(outcome(py(map("type", "write_done", "transfer_id", "t", "x", deep)))).as("over the 1024 stack").isEqualTo(Outcome.RAISES);
        Object ok = 1;
        for (int i = 0; i < 1000; i++) {
            ok = List.of(ok);
        }
        assertThat(outcome(py(map("type", "write_done", "transfer_id", "t", "x", ok)))).isEqualTo(Outcome.WRITE_DONE);
    }
}

package io.kvledger.wire;

import io.kvledger.core.model.TransferId;
import static io.kvledger.wire.Frames2.hex;
import static io.kvledger.wire.Frames2.map;
import static io.kvledger.wire.Frames2.py;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Encoding follows Python msgpack's format choices; effects encode to Python's frames. */
class EncoderTest {

    @Test
    void integersUseTheSmallestFormatPythonUses() {
        assertThat(hex(py(0))).isEqualTo("00");
        assertThat(hex(py(127))).isEqualTo("7f");
        assertThat(hex(py(128))).isEqualTo("cc80");
        assertThat(hex(py(255))).isEqualTo("ccff");
        assertThat(hex(py(256))).isEqualTo("cd0100");
        assertThat(hex(py(65535))).isEqualTo("cdffff");
        assertThat(hex(py(65536))).isEqualTo("ce00010000");
        assertThat(hex(py(4294967295L))).isEqualTo("ceffffffff");
        assertThat(hex(py(4294967296L))).isEqualTo("cf0000000100000000");
        assertThat(hex(py(-1))).isEqualTo("ff");
        assertThat(hex(py(-32))).isEqualTo("e0");
        assertThat(hex(py(-33))).isEqualTo("d0df");
        assertThat(hex(py(-128))).isEqualTo("d080");
        assertThat(hex(py(-129))).isEqualTo("d1ff7f");
        assertThat(hex(py(-32768))).isEqualTo("d18000");
        assertThat(hex(py(-32769))).isEqualTo("d2ffff7fff");
        assertThat(hex(py(-2147483648L))).isEqualTo("d280000000");
        assertThat(hex(py(-2147483649L))).isEqualTo("d3ffffffff7fffffff");
        assertThat(hex(py(new BigInteger("18446744073709551615")))).isEqualTo("cfffffffffffffffff");
        assertThatThrownBy(() -> py(BigInteger.ONE.shiftLeft(64))).isInstanceOf(WireEncodingException.class);
        assertThatThrownBy(() -> py(BigInteger.ONE.shiftLeft(63).negate().subtract(BigInteger.ONE))).isInstanceOf(WireEncodingException.class);
    }

    @Test
    void stringsUseFixstrStr8Str16Str32ByUtf8Length() {
        assertThat(hex(py(""))).isEqualTo("a0");
        assertThat(hex(py("a".repeat(31)))).startsWith("bf");
        assertThat(hex(py("a".repeat(32)))).startsWith("d920");
        assertThat(hex(py("a".repeat(255)))).startsWith("d9ff");
        assertThat(hex(py("a".repeat(256)))).startsWith("da0100");
        assertThat(hex(py("a".repeat(65535)))).startsWith("daffff");
        assertThat(hex(py("a".repeat(65536)))).startsWith("db00010000");
        assertThat(hex(py("é".repeat(16)))).as("16 chars, 32 UTF-8 bytes").startsWith("d920");
        assertThat(hex(py("é".repeat(200)))).as("200 chars, 400 UTF-8 bytes").startsWith("da0190");
        assertThat(hex(py("😀"))).isEqualTo("a4f09f9880");
        assertThatThrownBy(() -> py("bad\uD800")).isInstanceOf(WireEncodingException.class).hasMessageContaining("surrogate");
    }

    @Test
    void containersBinFloatsBoolsAndNil() {
        assertThat(hex(py(Collections.nCopies(15, 0)))).startsWith("9f");
        assertThat(hex(py(Collections.nCopies(16, 0)))).startsWith("dc0010");
        List<Object> kv = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            kv.add("k" + i);
            kv.add(i);
        }
        assertThat(hex(py(map(kv.toArray())))).startsWith("de0010");
        assertThat(hex(py(new byte[] {1, 2}))).isEqualTo("c4020102");
        assertThat(hex(py(new byte[300]))).startsWith("c5012c");
        assertThat(hex(py(1.5))).isEqualTo("cb3ff8000000000000");
        assertThat(hex(py(1.5f))).as("Python floats are doubles").isEqualTo("cb3ff8000000000000");
        assertThat(hex(py(true))).isEqualTo("c3");
        assertThat(hex(py(false))).isEqualTo("c2");
        assertThat(hex(py(Arrays.asList((Object) null)))).isEqualTo("91c0");
        assertThatThrownBy(() -> py(new Object())).isInstanceOf(WireEncodingException.class);
        assertThatThrownBy(() -> py(java.util.Map.of(1, 2))).isInstanceOf(WireEncodingException.class).hasMessageContaining("not a str");
    }

    @Test
    void everyEncodeReturnsAFreshArray() {
        NotifyEncoder e = new NotifyEncoder();
        byte[] a = e.writeDone("t");
        byte[] b = e.writeDone("t");
        assertThat(a).isEqualTo(b).isNotSameAs(b);
        byte[] c = e.release("u", 2);
        assertThat(a).as("the first array is untouched by later encodes").isEqualTo(b);
        assertThat(c).isNotEqualTo(a);
    }

    @Test
    void sendEffectsEncodeToPythonsFrames() {
        EffectFrames frames = new EffectFrames();
        String tid = "tx-2f1c9a4e-7b3d-4c1e-9f00-3a5b6c7d8e9f";
        String rid = "cmpl-___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005___decode_addr_host:10.0.0.2,handshake:6301,"
                + "notify:61005_0123456789abcdef0123456789abcdef-0-1a2b3c4d";
        OutboundFrame rb = frames.encode(new Effect.SendRemoteBlocks("10.0.0.1", 61006, rid, TransferId.of(tid), List.of(0, 1, 2, 127, 128, 65535, 65536), 3));
        assertThat(rb.endpoint()).isEqualTo("tcp://10.0.0.1:61006");
        assertThat(rb.messageType()).isEqualTo("remote_blocks");
        assertThat(rb.frame()).isEqualTo(vector("remote_blocks"));
        OutboundFrame rel = frames.encode(new Effect.SendRelease(Effect.Sender.WORKER, "10.0.0.1", 61005, TransferId.of(tid), 8));
        assertThat(rel.frame()).isEqualTo(vector("release"));
        OutboundFrame rel2 = frames.encode(new Effect.SendRelease(Effect.Sender.SCHEDULER, "10.0.0.1", 61005, TransferId.of(tid), 8));
        assertThat(rel2.frame()).as("scheduler and worker build the same dict").isEqualTo(vector("release"));
        assertThat(frames.encode(new Effect.SendWriteDone("10.0.0.2", 61005, tid)).frame()).isEqualTo(vector("write_done"));
        OutboundFrame empty = frames.encode(new Effect.SendRemoteBlocks("h", 1, "d-1", TransferId.of("tx-empty"), null, 0));
        assertThat(empty.frame()).as("None is sent as [] (`or []`)").isEqualTo(vector("remote_blocks_empty"));
        OutboundFrame wf = frames.encode(new Effect.SendWriteFailed("h", 1, "t", "deferred write expired"));
        assertThat(new NotifyDecoder().decode(wf.frame()).rejectionOrNull().reason()).isEqualTo(RejectReason.UNKNOWN_TYPE);
        assertThat(List.of(rb, rel, wf).stream().map(OutboundFrame::messageType))
                .containsExactly("remote_blocks", "release", "write_failed");
        assertThat(frames.encode(new Effect.SendRelease(Effect.Sender.WORKER, "h", 1, TransferId.of(17L), 8)).transferId())
                .as("a Python int id as text").isEqualTo("17");
    }

    @Test
    void pythonValuedTransferIdsArePackedAsPythonWould() {
        EffectFrames frames = new EffectFrames();
        byte[] f = frames.encode(new Effect.SendRelease(Effect.Sender.SCHEDULER, "h", 1, TransferId.of(17L), 1)).frame();
        assertThat(hex(f)).isEqualTo("83a474797065a772656c65617365ab7472616e736665725f696411b0636f6e73756d65725f74705f73697a6501");
        byte[] n = frames.encode(new Effect.SendRelease(Effect.Sender.SCHEDULER, "h", 1, TransferId.NONE, 1)).frame();
        assertThat(hex(n)).contains("ab7472616e736665725f6964c0");
        assertThatThrownBy(() -> frames.encode(new Effect.SendRelease(Effect.Sender.SCHEDULER, "h", 1, TransferId.of(new Object()), 1)))
                .isInstanceOf(WireEncodingException.class);
        assertThat(OutboundFrame.tcpEndpoint("::1", 5)).isEqualTo("tcp://[::1]:5");
    }

    @Test
    void decodedMessagesReencodeToTheSameBytes() {
        NotifyDecoder d = new NotifyDecoder();
        NotifyEncoder e = new NotifyEncoder();
        for (WireVectors.Vector v : WireVectors.all()) {
            if (v.file().equals("notify.json") && !v.group().equals("malformed")) {
                NotifyMessage m = d.decode(v.bytes()).valueOrNull();
                assertThat(e.encode(m)).as("%s", v).isEqualTo(v.bytes());
            }
        }
    }

    @Test
    void decodedFramesBecomeNodeEvents() {
        NotifyEvents ev = new NotifyEvents();
        assertThat(ev.toEvent(vector("remote_blocks_legacy_no_type"), 7))
                .isEqualTo(new NodeEvent.RemoteBlocksReceived(7, "d-2", "tx-legacy", List.of(5, 6), 0, true));
        assertThat(ev.toEvent(vector("write_done"), 8)).isEqualTo(new NodeEvent.WriteDoneReceived(8, "tx-2f1c9a4e-7b3d-4c1e-9f00-3a5b6c7d8e9f"));
        assertThat(ev.toEvent(vector("release_no_tp"), 9)).isEqualTo(new NodeEvent.ReleaseReceived(9, "tx-old", null));
        assertThat(ev.toEvent(vector("release"), 9)).isEqualTo(new NodeEvent.ReleaseReceived(9, "tx-2f1c9a4e-7b3d-4c1e-9f00-3a5b6c7d8e9f", 8));
        assertThat(ev.toEvent("tx-legacy-raw".getBytes(java.nio.charset.StandardCharsets.UTF_8), 10))
                .isEqualTo(new NodeEvent.RawCompletionReceived(10, "tx-legacy-raw"));
        byte[] bad = vector("unknown_type");
        NodeEvent.FrameRejected fr = (NodeEvent.FrameRejected) ev.toEvent(bad, 11);
        assertThat(fr.reason()).startsWith("UNKNOWN_TYPE: type 'explode'");
        assertThat(fr.frame()).isEqualTo(bad).isNotSameAs(bad);
        assertThat(fr.wouldKillPythonListener()).isTrue();
    }

    static byte[] vector(String name) {
        for (WireVectors.Vector v : WireVectors.all()) {
            if (v.name().equals(name)) {
                return v.bytes();
            }
        }
        throw new AssertionError("no vector " + name);
    }
}

package io.kvledger.wire;

import static io.kvledger.wire.Frames2.concat;
import static io.kvledger.wire.Frames2.hex;
import static io.kvledger.wire.Frames2.map;
import static io.kvledger.wire.Frames2.py;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.event.NodeEvent;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class NotifyDecoderTest {

    private final NotifyDecoder decoder = new NotifyDecoder();

    private Rejection rejected(byte[] frame) {
        DecodeResult<NotifyMessage> r = decoder.decode(frame);
        assertThat(r).as("frame %s must be rejected", hex(frame)).isInstanceOf(DecodeResult.Rejected.class);
        return r.rejectionOrNull();
    }

    private NotifyMessage ok(byte[] frame) {
        DecodeResult<NotifyMessage> r = decoder.decode(frame);
        assertThat(r).as("frame %s must decode, got %s", hex(frame), r).isInstanceOf(DecodeResult.Ok.class);
        return r.valueOrNull();
    }

    @Test
    void legacyRemoteBlocksWithDecodeRankAndUnknownKeysDecode() {
        NotifyMessage m = ok(py(map("req_id", "r", "transfer_id", "t", "block_notify_list", List.of(1, 2), "decode_rank", 4,
                "extra", map("nested", java.util.Arrays.asList(1, "x", new byte[] {1}, null, true, 1.5)))));
        assertThat(m).isEqualTo(new NotifyMessage.RemoteBlocks("r", "t", BlockIdList.of(1, 2), 4, true));
    }

    @Test
    void typedRemoteBlocksWithoutReqIdOrDecodeRankDecodesWithPythonDefaults() {
        NotifyMessage m = ok(py(map("type", "remote_blocks", "transfer_id", "t", "block_notify_list", List.of(7))));
        assertThat(m).isEqualTo(new NotifyMessage.RemoteBlocks(null, "t", BlockIdList.of(7), 0, false));
    }

    @Test
    void blockIdsUseEveryIntegerWidthUpToInt32() {
        List<Object> ids = List.of(0, 127, 128, 255, 256, 65535, 65536, Integer.MAX_VALUE, -1, -33, -129, Integer.MIN_VALUE);
        NotifyMessage m = ok(py(map("type", "remote_blocks", "transfer_id", "t", "block_notify_list", ids)));
        assertThat(((NotifyMessage.RemoteBlocks) m).blockNotifyList())
                .containsExactly(0, 127, 128, 255, 256, 65535, 65536, Integer.MAX_VALUE, -1, -33, -129, Integer.MIN_VALUE);
    }

    @Test
    void nonAsciiIdsDecodeAsUtf8() {
        assertThat(ok(py(map("type", "write_done", "transfer_id", "tx-é-日本-😀"))))
                .isEqualTo(new NotifyMessage.WriteDone("tx-é-日本-😀"));
        assertThat(ok(NotifyEncoder.completion("tx-日本"))).isEqualTo(new NotifyMessage.RawCompletion("tx-日本"));
    }

    @Test
    void duplicateKnownKeyIsRejectedThoughPythonKeepsTheLast() {
        byte[] f = concat(hex("83"), py("type"), py("release"), py("transfer_id"), py("a"), py("transfer_id"), py("b"));
        Rejection r = rejected(f);
        assertThat(r.reason()).isEqualTo(RejectReason.DUPLICATE_KEY);
        assertThat(r.wouldKillPythonListener()).isFalse();
    }

    @Test
    void trailingBytesAreRejectedAndKillPython() {
        Rejection r = rejected(concat(py(map("type", "write_done", "transfer_id", "t")), hex("00")));
        assertThat(r.reason()).isEqualTo(RejectReason.TRAILING_BYTES);
        assertThat(r.wouldKillPythonListener()).as("ExtraData, then the map header is not UTF-8").isTrue();
    }

    @Test
    void typeMustBeAKnownString() {
        assertThat(rejected(py(map("type", 5, "transfer_id", "t"))).reason()).isEqualTo(RejectReason.WRONG_FIELD_TYPE);
        assertThat(rejected(py(map("type", 5, "transfer_id", "t"))).wouldKillPythonListener()).isTrue();
        Rejection nil = rejected(py(map("type", null, "req_id", "r", "transfer_id", "t", "block_notify_list", List.of(1))));
        assertThat(nil.reason()).isEqualTo(RejectReason.WRONG_FIELD_TYPE);
        assertThat(nil.wouldKillPythonListener()).as("Python treats type=None with req_id as remote_blocks").isFalse();
        Rejection unknown = rejected(py(map("type", "write_failed", "transfer_id", "t", "reason", "x")));
        assertThat(unknown.reason()).isEqualTo(RejectReason.UNKNOWN_TYPE);
        assertThat(unknown.wouldKillPythonListener()).as("stock listeners do not know write_failed (#57705)").isTrue();
    }

    @Test
    void missingTypeAndReqIdOrRequiredFields() {
        assertThat(rejected(py(map("transfer_id", "t"))).reason()).isEqualTo(RejectReason.MISSING_TYPE);
        assertThat(rejected(py(map("transfer_id", "t"))).wouldKillPythonListener()).isTrue();
        Rejection noTid = rejected(py(map("type", "release")));
        assertThat(noTid.reason()).isEqualTo(RejectReason.MISSING_FIELD);
        assertThat(noTid.detail()).contains("transfer_id");
        assertThat(noTid.wouldKillPythonListener()).as("KeyError").isTrue();
        Rejection noBlocks = rejected(py(map("type", "remote_blocks", "transfer_id", "t")));
        assertThat(noBlocks.reason()).isEqualTo(RejectReason.MISSING_FIELD);
        assertThat(noBlocks.wouldKillPythonListener()).as("get(..., []) is falsy: MoRIIOError").isTrue();
        assertThat(rejected(py(map("type", "write_done"))).reason()).isEqualTo(RejectReason.MISSING_FIELD);
    }

    @Test
    void fieldTypesAreChecked() {
        Rejection boolRank = rejected(py(map("type", "remote_blocks", "transfer_id", "t", "block_notify_list", List.of(1), "decode_rank", true)));
        assertThat(boolRank.reason()).isEqualTo(RejectReason.WRONG_FIELD_TYPE);
        assertThat(boolRank.wouldKillPythonListener()).isFalse();
        assertThat(rejected(py(map("type", "remote_blocks", "transfer_id", "t", "block_notify_list", "abc"))).reason())
                .isEqualTo(RejectReason.WRONG_FIELD_TYPE);
        assertThat(rejected(py(map("type", "remote_blocks", "transfer_id", "t", "block_notify_list", List.of("1")))).reason())
                .isEqualTo(RejectReason.WRONG_FIELD_TYPE);
        Rejection binTid = rejected(py(map("type", "write_done", "transfer_id", new byte[] {'t'})));
        assertThat(binTid.reason()).isEqualTo(RejectReason.WRONG_FIELD_TYPE);
        assertThat(binTid.detail()).contains("transfer_id must be str, got bin");
        Rejection tpStr = rejected(py(map("type", "release", "transfer_id", "t", "consumer_tp_size", "x")));
        assertThat(tpStr.wouldKillPythonListener()).as("int('x') raises").isTrue();
    }

    @Test
    void integersOutOfInt32RangeAreRejected() {
        Rejection r = rejected(py(map("type", "remote_blocks", "transfer_id", "t", "block_notify_list", List.of(1L << 31))));
        assertThat(r.reason()).isEqualTo(RejectReason.INTEGER_OUT_OF_RANGE);
        assertThat(r.detail()).contains("block_notify_list[0]");
        Rejection u64 = rejected(py(map("type", "release", "transfer_id", "t", "consumer_tp_size", new java.math.BigInteger("18446744073709551615"))));
        assertThat(u64.reason()).isEqualTo(RejectReason.INTEGER_OUT_OF_RANGE);
        assertThat(u64.wouldKillPythonListener()).isFalse();
    }

    @Test
    void negativeConsumerTpSizeIsInvalid() {
        Rejection r = rejected(py(map("type", "release", "transfer_id", "t", "consumer_tp_size", -2)));
        assertThat(r.reason()).isEqualTo(RejectReason.INVALID_VALUE);
        assertThat(r.wouldKillPythonListener()).isTrue();
    }

    @Test
    void invalidUtf8InsideStringsAndKeysIsRejected() {
        byte[] badStr = concat(hex("82"), py("type"), py("write_done"), py("transfer_id"), hex("a2 c3 28"));
        assertThat(rejected(badStr).reason()).isEqualTo(RejectReason.NOT_UTF8);
        assertThat(rejected(badStr).wouldKillPythonListener()).isTrue();
        byte[] badKey = concat(hex("83"), py("type"), py("write_done"), py("transfer_id"), py("t"), hex("a2 ed a0"), hex("01"));
        assertThat(rejected(badKey).reason()).as("an encoded surrogate is not UTF-8").isIn(RejectReason.NOT_UTF8, RejectReason.TRUNCATED);
        byte[] surrogateKey = concat(hex("83"), py("type"), py("write_done"), py("transfer_id"), py("t"), hex("a3 ed a0 80"), hex("01"));
        assertThat(rejected(surrogateKey).reason()).isEqualTo(RejectReason.NOT_UTF8);
        assertThat(rejected(hex("ff fe 80 81")).reason()).isEqualTo(RejectReason.NOT_UTF8);
        assertThat(rejected(hex("c3 28")).reason()).as("raw id that is not UTF-8").isEqualTo(RejectReason.NOT_UTF8);
    }

    @Test
    void nonMapMsgpackValuesAreRawIdsOnlyWhenTheyAreUtf8() {
        assertThat(ok(hex("35"))).isEqualTo(new NotifyMessage.RawCompletion("5"));
        Rejection arr = rejected(py(List.of(1, 2)));
        assertThat(arr.reason()).isEqualTo(RejectReason.NOT_UTF8);
        assertThat(arr.wouldKillPythonListener()).isTrue();
        Rejection str = rejected(py("tx-1"));
        assertThat(str.reason()).as("a msgpack str is not a raw id: its header byte is not UTF-8").isEqualTo(RejectReason.NOT_UTF8);
    }

    @Test
    void oversizeFramesAreRejectedUnreadAndKeptAsAPrefix() {
        NotifyEvents events = new NotifyEvents(new WireLimits(64, 8, 16));
        byte[] big = py(map("type", "write_done", "transfer_id", "x".repeat(100)));
        NodeEvent e = events.toEvent(big, 42);
        assertThat(e).isInstanceOf(NodeEvent.FrameRejected.class);
        NodeEvent.FrameRejected fr = (NodeEvent.FrameRejected) e;
        assertThat(fr.atNs()).isEqualTo(42);
        assertThat(fr.reason()).startsWith("FRAME_TOO_LARGE: frame of " + big.length + " bytes exceeds the limit of 64 bytes")
                .endsWith("(first 16 of " + big.length + " bytes kept)");
        assertThat(fr.frame()).hasSize(16).isEqualTo(java.util.Arrays.copyOf(big, 16));
        assertThat(fr.wouldKillPythonListener()).as("Python has no size limit").isFalse();
    }

    @Test
    void nestingInUnknownFieldsIsBounded() {
        Object deep = 1;
        for (int i = 0; i < 40; i++) {
            deep = List.of(deep);
        }
        Rejection r = rejected(py(map("type", "write_done", "transfer_id", "t", "x", deep)));
        assertThat(r.reason()).isEqualTo(RejectReason.NESTING_TOO_DEEP);
        assertThat(r.wouldKillPythonListener()).isFalse();
        Object ok = 1;
        for (int i = 0; i < 30; i++) {
            ok = List.of(ok);
        }
        assertThat(ok(py(map("type", "write_done", "transfer_id", "t", "x", ok)))).isEqualTo(new NotifyMessage.WriteDone("t"));
    }

    @Test
    void reservedByteAndBadTimestampsAreInvalidFormats() {
        assertThat(rejected(concat(hex("83"), py("type"), py("write_done"), py("transfer_id"), py("t"), py("x"), hex("c1"))).reason())
                .isEqualTo(RejectReason.INVALID_FORMAT);
        byte[] badTs = concat(hex("83"), py("type"), py("write_done"), py("transfer_id"), py("t"), py("x"), hex("d6ff 0000"));
        assertThat(rejected(badTs).reason()).isEqualTo(RejectReason.TRUNCATED);
        byte[] badTsLen = concat(hex("83"), py("type"), py("write_done"), py("transfer_id"), py("t"), py("x"), hex("c7 03 ff 010203"));
        assertThat(rejected(badTsLen).reason()).isEqualTo(RejectReason.INVALID_FORMAT);
        byte[] goodTs = concat(hex("83"), py("type"), py("write_done"), py("transfer_id"), py("t"), py("x"), hex("d6ff 00000001"));
        assertThat(ok(goodTs)).isEqualTo(new NotifyMessage.WriteDone("t"));
        byte[] ext = concat(hex("83"), py("type"), py("write_done"), py("transfer_id"), py("t"), py("x"), hex("d5 05 0102"));
        assertThat(ok(ext)).as("ExtType values are legal in Python").isEqualTo(new NotifyMessage.WriteDone("t"));
        byte[] reservedExt = concat(hex("83"), py("type"), py("write_done"), py("transfer_id"), py("t"), py("x"), hex("d6 fe 00000001"));
        assertThat(rejected(reservedExt).reason()).as("Python: code must be 0~127").isEqualTo(RejectReason.INVALID_FORMAT);
        assertThat(rejected(reservedExt).wouldKillPythonListener()).isTrue();
    }

    @Test
    void hugeClaimsAreRejectedWithoutAllocatingByThem() {
        List<byte[]> frames = new ArrayList<>();
        frames.add(hex("85a474797065ad72656d6f74655f626c6f636b73b1626c6f636b5f6e6f746966795f6c697374dd7fffffff"));
        frames.add(hex("df7fffffff"));
        frames.add(hex("dfffffffff"));
        frames.add(concat(hex("81"), py("transfer_id"), hex("dbffffffff")));
        frames.add(concat(hex("81"), py("transfer_id"), hex("db7fffffff 61")));
        frames.add(concat(hex("82"), py("transfer_id"), py("t"), py("x"), hex("c6 7fffffff")));
        frames.add(concat(hex("82"), py("transfer_id"), py("t"), py("x"), hex("dd 7fffffff dd 7fffffff")));
        frames.add(concat(hex("82"), py("transfer_id"), py("t"), py("x"), hex("c9 7fffffff 01")));
        for (byte[] f : frames) {
            decoder.decode(f);
            long bytes = Frames2.allocatedBy(() -> decoder.decode(f));
            Rejection r = rejected(f);
            assertThat(r.reason()).as("%s: %s", hex(f), r.detail())
                    .isIn(RejectReason.LENGTH_CLAIM_EXCEEDS_FRAME, RejectReason.TRUNCATED);
            assertThat(bytes).as("bytes allocated decoding %s", hex(f)).isLessThan(64 * 1024);
        }
    }

    @Test
    void decoderInstancesAreReusableAcrossGoodAndBadFrames() {
        byte[] good = py(map("type", "release", "transfer_id", "t", "consumer_tp_size", 2));
        byte[] bad = hex("82a474797065a772656c65617365ab7472616e736665725f6964a474");
        for (int i = 0; i < 50; i++) {
            assertThat(decoder.decode(good)).isEqualTo(new DecodeResult.Ok<>(new NotifyMessage.Release("t", 2)));
            assertThat(decoder.decode(bad).isOk()).isFalse();
            assertThat(decoder.decode(new byte[0]).rejectionOrNull().reason()).isEqualTo(RejectReason.EMPTY_FRAME);
            assertThat(decoder.decode(null).rejectionOrNull().reason()).isEqualTo(RejectReason.EMPTY_FRAME);
        }
    }

    @Test
    void map16AndMap32HeadersAreMaps() {
        byte[] m16 = concat(hex("de0002"), py("type"), py("write_done"), py("transfer_id"), py("t"));
        assertThat(ok(m16)).isEqualTo(new NotifyMessage.WriteDone("t"));
        byte[] m32 = concat(hex("df00000002"), py("type"), py("write_done"), py("transfer_id"), py("t"));
        assertThat(ok(m32)).isEqualTo(new NotifyMessage.WriteDone("t"));
        Rejection brokenM16 = rejected(hex("de0002a1"));
        assertThat(brokenM16.reason()).isEqualTo(RejectReason.LENGTH_CLAIM_EXCEEDS_FRAME);
    }
}

package io.kvledger.journal.format;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.journal.Samples;
import io.kvledger.journal.json.Json;
import java.io.IOException;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;

/**
 * The fast payload reader against the generic one ({@link EntryType#read}): whatever it accepts it
 * must read to the same record, and it must accept the common well-formed payloads (else it is
 * not used and replay is slow).
 */
class FastPayloadReaderTest {

    /** The input types the reader must take on the fast path (every one). */
    private static final Set<String> FAST_INPUTS = Set.of("request_admitted", "matched_tokens_queried", "blocks_allocated", "step_scheduled",
            "request_finished", "connector_output_received", "load_started", "layer_saved", "save_waited",
            "finished_polled", "handshake_completed", "handshake_failed", "transfer_completed",
            "remote_blocks_received", "write_done_received", "release_received", "raw_completion_received",
            "frame_rejected", "tick", "notify_send_failed", "shut_down");

    private static byte[] payload(EntryType t, Object record) throws IOException {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            t.write(p, record);
            p.flush();
            return p.toByteArray();
        }
    }

    private static EntryType typeOf(Object r) {
        return switch (r) {
            case NodeEvent e -> EntryType.of(e);
            case Effect e -> EntryType.of(e);
            case io.kvledger.journal.proxy.ProxyEvent e -> EntryType.of(e);
            default -> throw new IllegalArgumentException(String.valueOf(r));
        };
    }

    /** The generic reading: the record, or the exception's class and message. */
    private static Object generic(EntryType t, byte[] b, int from, int to, long atNs) {
        MessageUnpacker u = MessagePack.newDefaultUnpacker(b, from, to - from);
        try {
            return t.read(u, atNs);
        } catch (IOException | RuntimeException e) {
            return e;
        }
    }

    /** A record as text that sees into arrays: its dissection and its JSON fields. */
    private static String text(EntryType t, Object r) {
        return t.dissect(r) + " " + Json.write(t.toJson(r));
    }

    private static long atNs(Object r) {
        return r instanceof NodeEvent e ? e.atNs() : r instanceof io.kvledger.journal.proxy.ProxyEvent p ? p.atNs() : 0;
    }

    @Test
    void every_sample_reads_back_the_same_and_the_common_inputs_take_the_fast_path() throws IOException {
        FastPayloadReader fast = new FastPayloadReader();
        for (Object r : Samples.all()) {
            EntryType t = typeOf(r);
            byte[] b = payload(t, r);
            Object g = generic(t, b, 0, b.length, atNs(r));
            Object f = fast.read(t, b, 0, b.length, atNs(r));
            assertThat(g).as(t.typeName()).isNotInstanceOf(Exception.class);
            if (FAST_INPUTS.contains(t.typeName())) {
                assertThat(f).as("%s takes the fast path", t.typeName()).isNotNull();
            }
            if (f != null) {
                assertThat(text(t, f)).as(t.typeName()).isEqualTo(text(t, g));
                assertThat(f.getClass()).isEqualTo(g.getClass());
            }
        }
    }

    /**
     * One reader fills the same field arrays for every payload (one per nesting depth): records
     * read earlier stay as they were read while later payloads, nested ones (a step's cached
     * requests) and payloads it gives up on half-way (cut short) go through it, and a payload
     * read after a given-up one reads whole.
     */
    @Test
    void records_read_earlier_through_the_same_reader_are_unchanged_by_later_reads() throws IOException {
        FastPayloadReader fast = new FastPayloadReader();
        List<Object> kept = new java.util.ArrayList<>();
        List<String> expected = new java.util.ArrayList<>();
        int nested = 0;
        for (int round = 0; round < 2; round++) {
            for (Object r : Samples.all()) {
                EntryType t = typeOf(r);
                byte[] b = payload(t, r);
                if (b.length > 2) {
                    fast.read(t, b, 0, b.length - 1, atNs(r)); // given up on or read short: either way, not kept
                }
                Object f = fast.read(t, b, 0, b.length, atNs(r));
                if (f == null) {
                    continue;
                }
                if (f instanceof NodeEvent.StepScheduled s && !s.cachedRequests().isEmpty()) {
                    nested++;
                }
                kept.add(f);
                expected.add(text(t, generic(t, b, 0, b.length, atNs(r))));
            }
        }
        assertThat(nested).as("samples with nested records").isPositive();
        for (int i = 0; i < kept.size(); i++) {
            Object f = kept.get(i);
            assertThat(text(typeOf(f), f)).as("record %d", i).isEqualTo(expected.get(i));
        }
    }

    @Test
    void the_payload_may_sit_anywhere_in_a_larger_array() throws IOException {
        FastPayloadReader fast = new FastPayloadReader();
        NodeEvent e = new NodeEvent.LayerSaved(42, "model.layers.7.self_attn.attn");
        byte[] p = payload(EntryType.LAYER_SAVED, e);
        byte[] b = new byte[p.length + 40];
        java.util.Arrays.fill(b, (byte) 0xc1);
        System.arraycopy(p, 0, b, 17, p.length);
        assertThat(fast.read(EntryType.LAYER_SAVED, b, 17, 17 + p.length, 42)).isEqualTo(e);
    }

    @Test
    void strings_decode_as_the_generic_reader_decodes_them() throws IOException {
        FastPayloadReader fast = new FastPayloadReader();
        NodeEvent e = new NodeEvent.WriteDoneReceived(3, "tx-\u00e9\u4e2d-" + Samples.TID);
        byte[] b = payload(EntryType.WRITE_DONE_RECEIVED, e);
        assertThat(fast.read(EntryType.WRITE_DONE_RECEIVED, b, 0, b.length, 3)).isEqualTo(e);
        // bytes that are not valid UTF-8 decode as the generic reader decodes them (replacement characters)
        byte[] bad = {(byte) 0x91, (byte) 0xa3, 'a', (byte) 0xff, 'b'};
        Object g = generic(EntryType.LAYER_SAVED, bad, 0, bad.length, 1);
        assertThat(fast.read(EntryType.LAYER_SAVED, bad, 0, bad.length, 1)).isEqualTo(g);
        assertThat(((NodeEvent.LayerSaved) g).layerName()).isEqualTo("a\ufffdb");
    }

    @Test
    void other_integer_widths_read_the_same_and_out_of_range_ones_are_left_to_the_generic_reader() {
        FastPayloadReader fast = new FastPayloadReader();
        // transfer_completed [status_id, succeeded, code, message]
        byte[][] payloads = {
            {(byte) 0x94, (byte) 0xcf, 0, 0, 0, 0, 0, 0, 1, 0, (byte) 0xc3, (byte) 0xd3, -1, -1, -1, -1, -1, -1, -1, -3,
                (byte) 0xc0},
            {(byte) 0x94, (byte) 0xce, 0, 1, 0, 0, (byte) 0xc2, (byte) 0xd0, (byte) 0x80, (byte) 0xa2, 'o', 'k'},
            {(byte) 0x94, (byte) 0xcd, 1, 0, (byte) 0xc2, (byte) 0xd1, (byte) 0x80, 0, (byte) 0xc0},
            {(byte) 0x93, (byte) 0xcc, (byte) 0xff, (byte) 0xc3, (byte) 0xe0},
            {(byte) 0x92, 5, (byte) 0xc3},
        };
        for (byte[] p : payloads) {
            Object g = generic(EntryType.TRANSFER_COMPLETED, p, 0, p.length, 9);
            assertThat(g).isInstanceOf(NodeEvent.TransferCompleted.class);
            assertThat(fast.read(EntryType.TRANSFER_COMPLETED, p, 0, p.length, 9)).isEqualTo(g);
        }
        byte[][] refused = {
            // status id above Long.MAX_VALUE
            {(byte) 0x94, (byte) 0xcf, (byte) 0x80, 0, 0, 0, 0, 0, 0, 0, (byte) 0xc3, 0, (byte) 0xc0},
            // code beyond 32 bits
            {(byte) 0x94, 1, (byte) 0xc3, (byte) 0xd3, 0, 0, 0, 1, 0, 0, 0, 0, (byte) 0xc0},
            // nil for a bool
            {(byte) 0x94, 1, (byte) 0xc0, 0, (byte) 0xc0},
            // a field more than this version knows
            {(byte) 0x95, 1, (byte) 0xc3, 0, (byte) 0xc0, 7},
            // a map instead of the field array
            {(byte) 0x80},
        };
        for (byte[] p : refused) {
            assertThat(fast.read(EntryType.TRANSFER_COMPLETED, p, 0, p.length, 9)).isNull();
        }
    }

    /**
     * Cut and bit-flipped payloads of every sample: the fast reader either declines or reads what
     * the generic reader reads, never something else.
     */
    @Test
    void damaged_payloads_are_declined_or_read_exactly_as_the_generic_reader_reads_them() throws IOException {
        FastPayloadReader fast = new FastPayloadReader();
        Random rnd = new Random(20261203);
        int accepted = 0;
        int declined = 0;
        List<Object> all = Samples.all();
        for (Object r : all) {
            EntryType t = typeOf(r);
            byte[] whole = payload(t, r);
            for (int cut = 0; cut < whole.length; cut++) {
                Object f = fast.read(t, whole, 0, cut, atNs(r));
                Object g = generic(t, whole, 0, cut, atNs(r));
                if (f == null) {
                    declined++;
                } else {
                    accepted++;
                    assertThat(g).as("%s cut at %d", t.typeName(), cut).isNotInstanceOf(Exception.class);
                    assertThat(text(t, f)).isEqualTo(text(t, g));
                }
            }
            for (int k = 0; k < 200; k++) {
                byte[] b = whole.clone();
                int flips = 1 + rnd.nextInt(3);
                for (int i = 0; i < flips; i++) {
                    b[rnd.nextInt(b.length)] ^= (byte) (1 << rnd.nextInt(8));
                }
                Object f = fast.read(t, b, 0, b.length, atNs(r));
                Object g = generic(t, b, 0, b.length, atNs(r));
                if (f == null) {
                    declined++;
                } else {
                    accepted++;
                    assertThat(g).as("%s flipped %s", t.typeName(), java.util.HexFormat.of().formatHex(b))
                            .isNotInstanceOf(Exception.class);
                    assertThat(text(t, f)).isEqualTo(text(t, g));
                }
            }
        }
        // both happen: the test exercises both branches
        assertThat(accepted).isPositive();
        assertThat(declined).isPositive();
    }

    /** A request_admitted payload around the msgpack bytes of a params map (given as hex). */
    private static byte[] admitted(String paramsHex) {
        byte[] head = HexFormat.of().parseHex("94" + "a3726964" + "30" + "30");
        byte[] map = HexFormat.of().parseHex(paramsHex);
        byte[] b = java.util.Arrays.copyOf(head, head.length + map.length);
        System.arraycopy(map, 0, b, head.length, map.length);
        return b;
    }

    @Test
    void params_maps_read_as_the_generic_reader_reads_them_or_are_left_to_it() {
        FastPayloadReader fast = new FastPayloadReader();
        String[] taken = {
            "80", // {}
            // {"a": 1, "b": "x"} twice (the second shares the first's keys), then other keys
            "82a16101a162a178", "82a16102a162a179", "82a16101a163c0", "81a16101",
            // None, bools, negative and wide ints, uint64 below 2^63, float64, bytes
            "88a161c0a162c2a163c3a164d3fffffffffffffffea165cf7fffffffffffffffa166cb3ff8000000000000a167c40201ffa168e0",
            // nested list and dict (a dict with int and repeated keys, as Python's dict reads them), unicode key
            "83a16c9301a1749190a164830102a17803a178c0a2c3a9cd0016",
        };
        for (String hex : taken) {
            byte[] b = admitted(hex);
            Object g = generic(EntryType.REQUEST_ADMITTED, b, 0, b.length, 5);
            Object f = fast.read(EntryType.REQUEST_ADMITTED, b, 0, b.length, 5);
            assertThat(g).as(hex).isInstanceOf(NodeEvent.RequestAdmitted.class);
            assertThat(f).as(hex).isNotNull();
            assertThat(text(EntryType.REQUEST_ADMITTED, f)).as(hex).isEqualTo(text(EntryType.REQUEST_ADMITTED, g));
            // the same Java types too (Long, Double, byte[], ArrayList, LinkedHashMap), key by key
            KvParams fp = ((NodeEvent.RequestAdmitted) f).params();
            KvParams gp = ((NodeEvent.RequestAdmitted) g).params();
            assertThat(fp.asMap().keySet()).as(hex).containsExactlyElementsOf(gp.asMap().keySet());
            for (String k : gp.asMap().keySet()) {
                Object gv = gp.get(k);
                assertThat(fp.get(k) == null ? null : fp.get(k).getClass()).as("%s %s", hex, k)
                        .isEqualTo(gv == null ? null : gv.getClass());
            }
        }
        String[] declined = {
            "82a16101a16102", // a repeated key: the generic path keeps the last value, as a dict does
            "810101", // a key that is not a string: the generic path's error
            "81a161cf8000000000000000", // above Long.MAX_VALUE: a BigInteger on the generic path
            "81a161ca3fc00000", // float32
            "81a161d40100", // an extension type: the generic path's error
            "92a16101", // not a map
            "83a16101a16202", // fewer entries than the header says
        };
        for (String hex : declined) {
            byte[] b = admitted(hex);
            assertThat(fast.read(EntryType.REQUEST_ADMITTED, b, 0, b.length, 5)).as(hex).isNull();
        }
        Object big = generic(EntryType.REQUEST_ADMITTED, admitted("81a161cf8000000000000000"), 0, 19, 5);
        assertThat(((NodeEvent.RequestAdmitted) big).params().get("a")).isInstanceOf(java.math.BigInteger.class);
    }

    @Test
    void params_read_with_shared_keys_are_still_each_their_own() {
        FastPayloadReader fast = new FastPayloadReader();
        byte[] one = admitted("82a16101a162a178");
        byte[] two = admitted("82a16102a162a179");
        KvParams p1 = ((NodeEvent.RequestAdmitted) fast.read(EntryType.REQUEST_ADMITTED, one, 0, one.length, 1))
                .params();
        KvParams p2 = ((NodeEvent.RequestAdmitted) fast.read(EntryType.REQUEST_ADMITTED, two, 0, two.length, 2))
                .params();
        p1.put("a", 7L);
        p1.put("c", "new");
        p2.put("b", "changed");
        assertThat(p1.asMap()).containsExactly(java.util.Map.entry("a", 7L), java.util.Map.entry("b", "x"),
                java.util.Map.entry("c", "new"));
        assertThat(p2.asMap()).containsExactly(java.util.Map.entry("a", 2L), java.util.Map.entry("b", "changed"));
        KvParams p3 = ((NodeEvent.RequestAdmitted) fast.read(EntryType.REQUEST_ADMITTED, one, 0, one.length, 3))
                .params();
        assertThat(p3.asMap()).containsExactly(java.util.Map.entry("a", 1L), java.util.Map.entry("b", "x"));
    }

    @Test
    void recurring_layer_names_read_as_the_generic_reader_reads_them_one_instance_each() throws IOException {
        FastPayloadReader fast = new FastPayloadReader();
        List<String> names = new java.util.ArrayList<>();
        for (int i = 0; i < 300; i++) {
            names.add("model.layers." + i + ".self_attn.attn");
        }
        names.add("x".repeat(40)); // a str 8
        names.add("");
        java.util.Map<String, String> first = new java.util.HashMap<>();
        Random rnd = new Random(3);
        for (int round = 0; round < 4; round++) {
            // in order for a few layers, in order over more names than the reader keeps, then at random
            int span = round == 0 ? 8 : round == 1 ? names.size() : 40;
            for (int k = 0; k < 3 * span; k++) {
                String name = round == 3 ? names.get(rnd.nextInt(names.size())) : names.get(k % span);
                NodeEvent e = new NodeEvent.LayerSaved(k, name);
                byte[] b = payload(EntryType.LAYER_SAVED, e);
                Object f = fast.read(EntryType.LAYER_SAVED, b, 0, b.length, k);
                assertThat(f).isEqualTo(generic(EntryType.LAYER_SAVED, b, 0, b.length, k)).isEqualTo(e);
                String got = ((NodeEvent.LayerSaved) f).layerName();
                if (round == 0) {
                    assertThat(got).isSameAs(first.computeIfAbsent(name, x -> got));
                }
            }
        }
        // bytes that are not UTF-8, again and again: the generic reader's replacement characters each time
        byte[] bad = {(byte) 0x91, (byte) 0xa3, 'a', (byte) 0xff, 'b'};
        for (int i = 0; i < 3; i++) {
            assertThat(fast.read(EntryType.LAYER_SAVED, bad, 0, bad.length, 1))
                    .isEqualTo(generic(EntryType.LAYER_SAVED, bad, 0, bad.length, 1));
        }
        // a cut name is left to the generic reader
        byte[] whole = payload(EntryType.LAYER_SAVED, new NodeEvent.LayerSaved(1, names.get(0)));
        assertThat(fast.read(EntryType.LAYER_SAVED, whole, 0, whole.length - 1, 1)).isNull();
    }

    @Test
    void block_ids_of_every_width_read_as_the_generic_reader_reads_them() throws IOException {
        FastPayloadReader fast = new FastPayloadReader();
        NodeEvent e = new NodeEvent.BlocksAllocated(5, "r", io.kvledger.core.model.BlockGroups.of(new int[][] {
            {0, 1, 127, 128, 255, 256, 65_535, 65_536, Integer.MAX_VALUE}, {}, {-1, -32, -33, -129, Integer.MIN_VALUE}}), 3);
        byte[] b = payload(EntryType.BLOCKS_ALLOCATED, e);
        assertThat(fast.read(EntryType.BLOCKS_ALLOCATED, b, 0, b.length, 5))
                .isEqualTo(generic(EntryType.BLOCKS_ALLOCATED, b, 0, b.length, 5)).isEqualTo(e);
        // a uint 16 cut after its first byte, and an id beyond 32 bits: left to the generic reader
        byte[] cut = HexFormat.of().parseHex("94a1729191cd01");
        assertThat(fast.read(EntryType.BLOCKS_ALLOCATED, cut, 0, cut.length, 5)).isNull();
        byte[] wide = HexFormat.of().parseHex("94a1729191cf000000010000000003");
        assertThat(fast.read(EntryType.BLOCKS_ALLOCATED, wide, 0, wide.length, 5)).isNull();
    }
}

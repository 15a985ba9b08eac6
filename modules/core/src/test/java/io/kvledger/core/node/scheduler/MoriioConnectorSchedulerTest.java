package io.kvledger.core.node.scheduler;

import io.kvledger.core.model.TransferId;
import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.moriio.RequestIds;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** moriio-protocol.md 8.1 ({@code test_moriio_connector.py}), scheduler half, newest preset. */
class MoriioConnectorSchedulerTest {

    private static final int BLOCK = 16;

    /** What the proxy hands the prefill leg (protocol 4.2). */
    private static KvParams prefillLeg(String tid) {
        return params("remote_dp_size", 1, "remote_tp_size", 1, "transfer_id", tid, "do_remote_decode", true,
                "do_remote_prefill", false, "remote_engine_id", null, "remote_block_ids", null);
    }

    @Test
    void test_write_mode_saves_local_block_ids() {
        Node p = new Node(producer(TransferMode.WRITE).cacheBlockSize(BLOCK));
        String rid = proxyRid("write-save");
        int promptTokens = BLOCK * 5 / 2; // 2.5 blocks
        p.admit(rid, promptTokens, prefillLeg("tx-save"));
        assertThat(p.matched(rid, 0)).isEqualTo(new Effect.MatchedTokens(rid, 0, false));
        BlockGroups allocated = one(3, 4, 5);
        p.alloc(rid, allocated, 0);

        Effect.MetadataBuilt meta = p.meta();

        assertThat(meta.reqsToSave()).hasSize(1);
        assertThat(meta.reqsToRecv()).isEmpty();
        assertThat(meta.reqsToSend()).isEmpty();
        ReqMeta save = meta.reqsToSave().get(0);
        assertThat(save.requestId()).isEqualTo(rid);
        assertThat(save.localBlockIds()).isEqualTo(allocated);
        assertThat(save.localBlockIds().first()).containsExactly(3, 4, 5);
        assertThat(save.writeMode()).isTrue();
        // write_mode resolves the decode half of the request id
        assertThat(save.remoteHost()).isEqualTo(DECODE.host());
        assertThat(save.remoteHandshakePort()).isEqualTo(DECODE.handshakePort());
        assertThat(save.transferId()).isEqualTo(TransferId.of("tx-save"));
    }

    @Test
    void test_write_mode_with_chunked_prefill_saves_local_block_ids() {
        // max_num_batched_tokens = 64, prompt 160 tokens, block size 16: chunks of 4, 4 and 2 blocks.
        Node p = new Node(producer(TransferMode.WRITE).cacheBlockSize(BLOCK));
        String rid = proxyRid("chunked");
        p.admit(rid, 160, prefillLeg("tx-chunked"));
        p.alloc(rid, one(range(0, 4)), 0);

        List<int[]> counts = new ArrayList<>();
        Effect.MetadataBuilt m1 = p.meta();
        counts.add(counts(m1));
        Effect.MetadataBuilt m2 = p.meta(cached(rid, one(range(4, 8))));
        counts.add(counts(m2));
        Effect.MetadataBuilt m3 = p.meta(cached(rid, one(range(8, 10))));
        counts.add(counts(m3));

        assertThat(counts).containsExactly(new int[] {0, 0, 0}, new int[] {0, 0, 0}, new int[] {1, 0, 0});
        ReqMeta save = m3.reqsToSave().get(0);
        assertThat(save.requestId()).isEqualTo(rid);
        assertThat(save.localBlockIds()).isEqualTo(one(range(0, 10)));
        assertThat(p.state.pendingSaves()).isEmpty();
    }

    @Test
    void test_read_mode_loads_remote_block_ids() {
        Node d = new Node(consumer(TransferMode.READ).cacheBlockSize(BLOCK));
        String rid = RequestIds.proxyRequestId(PREFILL, DECODE, "0123456789abcdef0123456789abcdef");
        BlockGroups allocated = one(7, 8, 9);
        KvParams kv = params("do_remote_decode", false, "do_remote_prefill", true,
                "remote_engine_id", "10.0.0.1:6301", "remote_block_ids", grouped(a(7, 8, 9)),
                "transfer_id", "0");
        d.admit(rid, 40, kv);
        assertThat(d.matched(rid, 0)).isEqualTo(new Effect.MatchedTokens(rid, 39, false));
        d.alloc(rid, allocated, 39);

        Effect.MetadataBuilt meta = d.meta();

        assertThat(meta.reqsToRecv()).hasSize(1);
        assertThat(meta.reqsToSave()).isEmpty();
        assertThat(meta.reqsToSend()).isEmpty();
        ReqMeta recv = meta.reqsToRecv().get(0);
        assertThat(recv.requestId()).isEqualTo(rid);
        assertThat(recv.localBlockIds()).isEqualTo(allocated);
        assertThat(recv.transferId()).isEqualTo(TransferId.of("0"));
        // the recv side resolves the prefill half of the request id
        assertThat(recv.remoteHost()).isEqualTo(PREFILL.host());
        assertThat(recv.remoteNotifyPort()).isEqualTo(PREFILL.notifyPort());
    }

    private static int[] counts(Effect.MetadataBuilt m) {
        return new int[] {m.reqsToSave().size(), m.reqsToRecv().size(), m.reqsToSend().size()};
    }
}

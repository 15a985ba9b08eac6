package io.kvledger.journal.format;

import static io.kvledger.journal.format.Field.nul;
import static io.kvledger.journal.format.Field.opt;
import static io.kvledger.journal.format.Field.req;
import static io.kvledger.journal.format.FieldType.BLOCKS;
import static io.kvledger.journal.format.FieldType.BOOL;
import static io.kvledger.journal.format.FieldType.I32;
import static io.kvledger.journal.format.FieldType.I32_OR_NONE;
import static io.kvledger.journal.format.FieldType.INT_LIST;
import static io.kvledger.journal.format.FieldType.PARAMS;
import static io.kvledger.journal.format.FieldType.TRANSFER_ID;
import static io.kvledger.journal.format.FieldType.STR;
import static io.kvledger.journal.format.FieldType.STR_LIST;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.ReqMeta;
import java.util.List;

/** Schemas of the records nested inside payloads. */
final class Nested {

    private Nested() {}

    /** One entry of {@code scheduled_cached_reqs}. */
    static final Schema<NodeEvent.CachedRequest> CACHED_REQUEST = Schema.of(NodeEvent.CachedRequest.class,
            r -> new Object[] {r.requestId(), r.newBlockIds()},
            (at, v) -> new NodeEvent.CachedRequest(v.s(0), v.o(1)),
            r -> r.requestId() + (r.newBlockIds() == null ? "" : "+" + r.newBlockIds().totalBlocks()),
            req("request_id", STR), nul("new_block_ids", BLOCKS));

    /** One entry of {@code tensors} ({@code kv_caches_registered}). */
    static final Schema<NodeEvent.KvCacheTensor> KV_CACHE_TENSOR = Schema.of(NodeEvent.KvCacheTensor.class,
            t -> new Object[] {t.layerName(), t.shape(), t.dtype()},
            (at, v) -> new NodeEvent.KvCacheTensor(v.s(0), v.<List<Integer>>o(1), v.s(2)),
            t -> t.layerName() + " " + t.shape() + (t.dtype() == null ? "" : " " + t.dtype()),
            req("layer_name", STR), req("shape", INT_LIST), nul("dtype", STR));

    /** One entry of {@code scheduled_new_reqs}. */
    static final Schema<NodeEvent.NewRequest> NEW_REQUEST = Schema.of(NodeEvent.NewRequest.class,
            r -> new Object[] {r.requestId(), r.blockIds(), r.numComputedTokens(), r.params()},
            (at, v) -> new NodeEvent.NewRequest(v.s(0), v.o(1), v.i(2), v.o(3)),
            r -> r.requestId() + " blocks=" + Render.blocks(r.blockIds()) + " computed=" + r.numComputedTokens()
                    + (r.params() == null ? "" : " params=" + Render.py(r.params())),
            req("request_id", STR), req("block_ids", BLOCKS), req("num_computed_tokens", I32),
            nul("kv_transfer_params", PARAMS));

    /** The answer vLLM acted on in a {@code matched_tokens_queried} answered from the inner connector. */
    static final Schema<NodeEvent.MatchedAnswer> MATCHED_ANSWER = Schema.of(NodeEvent.MatchedAnswer.class,
            a -> new Object[] {a.numTokens(), a.loadAsync()},
            (at, v) -> new NodeEvent.MatchedAnswer(v.o(0), v.b(1)),
            a -> "(" + (a.numTokens() == null ? "None" : a.numTokens()) + ", " + (a.loadAsync() ? "True" : "False") + ")",
            nul("num_tokens", I32_OR_NONE), req("load_async", BOOL));

    /** The answer vLLM acted on in a {@code request_finished} answered from the inner connector. */
    static final Schema<NodeEvent.FinishAnswer> FINISH_ANSWER = Schema.of(NodeEvent.FinishAnswer.class,
            a -> new Object[] {a.delayFree(), a.params()},
            (at, v) -> new NodeEvent.FinishAnswer(v.b(0), v.o(1)),
            a -> "delay_free=" + a.delayFree() + " params=" + Render.py(a.params()),
            req("delay_free", BOOL), nul("kv_transfer_params", PARAMS));

    /** The {@code finished_sending} vLLM acted on in a {@code connector_output_received} answered from the inner connector. */
    static final Schema<NodeEvent.FreedAnswer> FREED_ANSWER = Schema.of(NodeEvent.FreedAnswer.class,
            a -> new Object[] {a.finishedSending()},
            (at, v) -> new NodeEvent.FreedAnswer(v.o(0)),
            a -> "finished_sending=" + Render.strs(a.finishedSending()),
            nul("finished_sending", STR_LIST));

    /** One entry of {@code reqs_to_recv} / {@code reqs_to_save}. */
    static final Schema<ReqMeta> REQ_META = Schema.of(ReqMeta.class,
            m -> new Object[] {m.requestId(), m.localBlockIds(), m.remoteBlockIds(), m.remoteEngineId(),
                    m.remoteHost(), m.remoteHandshakePort(), m.remoteNotifyPort(), m.remoteDpRank(),
                    m.remoteDpSize(), m.remoteDpSizeLocal(), m.remoteTpSize(), FieldType.field(m.transferId()),
                    m.multiPodHosts(), m.writeMode()},
            (at, v) -> new ReqMeta(v.s(0), v.o(1), v.o(2), v.s(3), v.s(4), v.i(5), v.i(6), v.i(7), v.i(8), v.i(9),
                    v.i(10), FieldType.transferId(v.o(11)), v.<List<String>>o(12), v.b(13)),
            m -> m.requestId() + " tid=" + Render.py(m.transferId()) + " -> " + Render.s(m.remoteHost()) + ":"
                    + m.remoteNotifyPort() + " dp" + m.remoteDpRank() + " local=" + Render.blocks(m.localBlockIds())
                    + " remote=" + Render.blocks(m.remoteBlockIds()),
            req("request_id", STR), nul("local_block_ids", BLOCKS), nul("remote_block_ids", BLOCKS),
            nul("remote_engine_id", STR), nul("remote_host", STR), req("remote_handshake_port", I32),
            req("remote_notify_port", I32), req("remote_dp_rank", I32), req("remote_dp_size", I32),
            req("remote_dp_size_local", I32), req("remote_tp_size", I32), nul("transfer_id", TRANSFER_ID),
            nul("multi_pod_hosts", STR_LIST), opt("write_mode", BOOL));
}

package io.kvledger.journal.format;

import static io.kvledger.journal.format.Field.later;
import static io.kvledger.journal.format.Field.nul;
import static io.kvledger.journal.format.Field.opt;
import static io.kvledger.journal.format.Field.req;
import static io.kvledger.journal.format.FieldType.BLOCKS;
import static io.kvledger.journal.format.FieldType.BOOL;
import static io.kvledger.journal.format.FieldType.BYTES;
import static io.kvledger.journal.format.FieldType.I32;
import static io.kvledger.journal.format.FieldType.I32_OR_NONE;
import static io.kvledger.journal.format.FieldType.I64;
import static io.kvledger.journal.format.FieldType.INT_ARRAY;
import static io.kvledger.journal.format.FieldType.INT_LIST;
import static io.kvledger.journal.format.FieldType.LENGTH_OR_NONE;
import static io.kvledger.journal.format.FieldType.PARAMS;
import static io.kvledger.journal.format.FieldType.PHASE;
import static io.kvledger.journal.format.FieldType.TRANSFER_ID;
import static io.kvledger.journal.format.FieldType.RECURRING_STR;
import static io.kvledger.journal.format.FieldType.STR;
import static io.kvledger.journal.format.FieldType.STR_LIST;
import static io.kvledger.journal.format.FieldType.listOf;
import static io.kvledger.journal.format.FieldType.named;
import static io.kvledger.journal.format.FieldType.one;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.journal.proxy.ProxyEvent;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.msgpack.core.MessagePacker;
import org.msgpack.core.MessageUnpacker;

/**
 * The registry of entry types: every {@link NodeEvent} and {@link Effect} record with its
 * permanent numeric type id, its snake_case name (the {@code "type"} of a JSON line), its kind, its
 * payload {@link Schema} and its one-line text dissector.
 *
 * <p>Ids are permanent: a type keeps its id forever, a removed type's id is never reused, and a
 * new record type takes a new id (the exhaustive switches in {@link #of(NodeEvent)} and
 * {@link #of(Effect)} stop the build until it has one). Ranges: 0 header; 1-99 input events;
 * 100-119 hook replies; 120-139 I/O commands; 140-199 decision records; 200-239 proxy records
 * ({@link ProxyEvent}, kind {@link EntryKind#PROXY}).
 */
public enum EntryType {

    /** The journal header (its payload is a msgpack map, see {@code JournalHeader}). */
    HEADER(0, EntryKind.HEADER, "header", null),

    // ---------------------------------------------------------------- inputs: scheduler side

    REQUEST_ADMITTED(1, EntryKind.INPUT, "request_admitted", Schema.of(NodeEvent.RequestAdmitted.class,
            e -> new Object[] {e.requestId(), e.numPromptTokens(), e.promptTokenIds(), e.params()},
            (at, v) -> new NodeEvent.RequestAdmitted(at, v.s(0), v.i(1), v.o(2) == null ? -1 : v.i(2), v.o(3)),
            e -> "rid=" + e.requestId() + " prompt=" + e.numPromptTokens() + " ids="
                    + (e.promptTokenIds() < 0 ? "None" : e.promptTokenIds()) + " params=" + Render.py(e.params()),
            req("request_id", STR), req("num_prompt_tokens", I32), nul("prompt_token_ids_len", LENGTH_OR_NONE),
            nul("kv_transfer_params", PARAMS))),

    MATCHED_TOKENS_QUERIED(2, EntryKind.INPUT, "matched_tokens_queried", Schema.of(NodeEvent.MatchedTokensQueried.class,
            e -> new Object[] {e.requestId(), e.numComputedTokens(), e.acted()},
            (at, v) -> new NodeEvent.MatchedTokensQueried(at, v.s(0), v.i(1), v.o(2)),
            e -> "rid=" + e.requestId() + " computed=" + e.numComputedTokens()
                    + (e.acted() == null ? "" : " acted=" + Nested.MATCHED_ANSWER.dissect(e.acted())),
            req("request_id", STR), req("num_computed_tokens", I32), later("acted", one(Nested.MATCHED_ANSWER)))),

    BLOCKS_ALLOCATED(3, EntryKind.INPUT, "blocks_allocated", Schema.of(NodeEvent.BlocksAllocated.class,
            e -> new Object[] {e.requestId(), e.blocks(), e.numExternalTokens()},
            (at, v) -> new NodeEvent.BlocksAllocated(at, v.s(0), v.o(1), v.i(2)),
            e -> "rid=" + e.requestId() + " blocks=" + Render.blocks(e.blocks()) + " external=" + e.numExternalTokens(),
            req("request_id", STR), req("blocks", BLOCKS), req("num_external_tokens", I32))),

    STEP_SCHEDULED(4, EntryKind.INPUT, "step_scheduled", Schema.of(NodeEvent.StepScheduled.class,
            e -> new Object[] {e.step(), e.cachedRequests(), e.scheduledNewReqs(), e.preemptedReqIds()},
            (at, v) -> new NodeEvent.StepScheduled(at, v.l(0), v.o(1), v.o(2), v.<List<String>>o(3)),
            e -> "step=" + e.step() + " cached=" + Render.list(e.cachedRequests(), Nested.CACHED_REQUEST::dissect)
                    + (e.scheduledNewReqs() == null ? "" : " new=" + Render.list(e.scheduledNewReqs(), Nested.NEW_REQUEST::dissect))
                    + (e.preemptedReqIds() == null ? "" : " preempted=" + e.preemptedReqIds()),
            req("step", I64), req("scheduled_cached_reqs", listOf(Nested.CACHED_REQUEST)),
            later("scheduled_new_reqs", listOf(Nested.NEW_REQUEST)), later("preempted_req_ids", STR_LIST))),

    REQUEST_FINISHED(5, EntryKind.INPUT, "request_finished", Schema.of(NodeEvent.RequestFinished.class,
            e -> new Object[] {e.requestId(), e.status(), e.blockIds(), e.admittedRequestId(), e.acted()},
            (at, v) -> new NodeEvent.RequestFinished(at, v.s(0), v.o(1), v.o(2), v.s(3), v.o(4)),
            e -> "rid=" + e.requestId() + " " + e.status() + " blocks=" + Render.blocks(e.blockIds())
                    + (e.admittedRequestId() == null ? "" : " admitted_as=" + e.admittedRequestId())
                    + (e.acted() == null ? "" : " acted=" + Nested.FINISH_ANSWER.dissect(e.acted())),
            req("request_id", STR), req("status", named(FinishStatus.class)), req("block_ids", BLOCKS),
            later("admitted_request_id", STR), later("acted", one(Nested.FINISH_ANSWER)))),

    CONNECTOR_OUTPUT_RECEIVED(6, EntryKind.INPUT, "connector_output_received",
            Schema.of(NodeEvent.ConnectorOutputReceived.class,
                    e -> new Object[] {e.finishedSending(), e.finishedRecving(), e.acted()},
                    (at, v) -> new NodeEvent.ConnectorOutputReceived(at, v.o(0), v.o(1), v.o(2)),
                    e -> "finished_sending=" + Render.strs(e.finishedSending())
                            + " finished_recving=" + Render.strs(e.finishedRecving())
                            + (e.acted() == null ? "" : " acted=" + Nested.FREED_ANSWER.dissect(e.acted())),
                    nul("finished_sending", STR_LIST), nul("finished_recving", STR_LIST),
                    later("acted", one(Nested.FREED_ANSWER)))),

    // ---------------------------------------------------------------- inputs: worker side

    LOAD_STARTED(7, EntryKind.INPUT, "load_started", Schema.of(NodeEvent.LoadStarted.class,
            e -> new Object[0], (at, v) -> new NodeEvent.LoadStarted(at), e -> "")),

    LAYER_SAVED(8, EntryKind.INPUT, "layer_saved", Schema.of(NodeEvent.LayerSaved.class,
            e -> new Object[] {e.layerName()},
            (at, v) -> new NodeEvent.LayerSaved(at, v.s(0)),
            e -> "layer=" + e.layerName(),
            req("layer_name", RECURRING_STR))),

    SAVE_WAITED(9, EntryKind.INPUT, "save_waited", Schema.of(NodeEvent.SaveWaited.class,
            e -> new Object[0], (at, v) -> new NodeEvent.SaveWaited(at), e -> "")),

    FINISHED_POLLED(10, EntryKind.INPUT, "finished_polled", Schema.of(NodeEvent.FinishedPolled.class,
            e -> new Object[0], (at, v) -> new NodeEvent.FinishedPolled(at), e -> "")),

    HANDSHAKE_COMPLETED(11, EntryKind.INPUT, "handshake_completed", Schema.of(NodeEvent.HandshakeCompleted.class,
            e -> new Object[] {e.key()},
            (at, v) -> new NodeEvent.HandshakeCompleted(at, v.s(0)),
            e -> "key=" + e.key(),
            req("key", STR))),

    HANDSHAKE_FAILED(12, EntryKind.INPUT, "handshake_failed", Schema.of(NodeEvent.HandshakeFailed.class,
            e -> new Object[] {e.key(), e.reason()},
            (at, v) -> new NodeEvent.HandshakeFailed(at, v.s(0), v.s(1)),
            e -> "key=" + e.key() + " reason=" + Render.s(e.reason()),
            req("key", STR), nul("reason", STR))),

    TRANSFER_COMPLETED(13, EntryKind.INPUT, "transfer_completed", Schema.of(NodeEvent.TransferCompleted.class,
            e -> new Object[] {e.statusId(), e.succeeded(), e.code(), e.message()},
            (at, v) -> new NodeEvent.TransferCompleted(at, v.l(0), v.b(1), v.i(2), v.s(3)),
            e -> "status=" + e.statusId() + (e.succeeded() ? " ok" : " FAILED") + " code=" + e.code()
                    + (e.message() == null ? "" : " message=" + e.message()),
            req("status_id", I64), req("succeeded", BOOL), opt("code", I32), nul("message", STR))),

    // ---------------------------------------------------------------- inputs: notify listener

    REMOTE_BLOCKS_RECEIVED(14, EntryKind.INPUT, "remote_blocks_received",
            Schema.of(NodeEvent.RemoteBlocksReceived.class,
                    e -> new Object[] {e.reqId(), e.transferId(), e.blockNotifyList(), e.decodeRank(),
                            e.legacyWithoutType()},
                    (at, v) -> new NodeEvent.RemoteBlocksReceived(at, v.s(0), v.s(1), v.o(2), v.i(3), v.b(4)),
                    e -> "tid=" + e.transferId() + " req_id=" + Render.s(e.reqId()) + " blocks="
                            + Render.intList(e.blockNotifyList()) + " decode_rank=" + e.decodeRank()
                            + (e.legacyWithoutType() ? " (legacy, no type)" : ""),
                    nul("req_id", STR), req("transfer_id", STR), req("block_notify_list", INT_LIST),
                    req("decode_rank", I32), opt("legacy_without_type", BOOL))),

    WRITE_DONE_RECEIVED(15, EntryKind.INPUT, "write_done_received", Schema.of(NodeEvent.WriteDoneReceived.class,
            e -> new Object[] {e.transferId()},
            (at, v) -> new NodeEvent.WriteDoneReceived(at, v.s(0)),
            e -> "tid=" + e.transferId(),
            req("transfer_id", STR))),

    RELEASE_RECEIVED(16, EntryKind.INPUT, "release_received", Schema.of(NodeEvent.ReleaseReceived.class,
            e -> new Object[] {e.transferId(), e.consumerTpSize()},
            (at, v) -> new NodeEvent.ReleaseReceived(at, v.s(0), v.o(1)),
            e -> "tid=" + e.transferId() + " consumer_tp_size="
                    + (e.consumerTpSize() == null ? "absent" : e.consumerTpSize()),
            req("transfer_id", STR), nul("consumer_tp_size", I32_OR_NONE))),

    RAW_COMPLETION_RECEIVED(17, EntryKind.INPUT, "raw_completion_received",
            Schema.of(NodeEvent.RawCompletionReceived.class,
                    e -> new Object[] {e.completionId()},
                    (at, v) -> new NodeEvent.RawCompletionReceived(at, v.s(0)),
                    e -> "completion_id=" + e.completionId(),
                    req("completion_id", STR))),

    FRAME_REJECTED(18, EntryKind.INPUT, "frame_rejected", Schema.of(NodeEvent.FrameRejected.class,
            e -> new Object[] {e.reason(), e.frame(), e.wouldKillPythonListener()},
            (at, v) -> new NodeEvent.FrameRejected(at, v.s(0), v.o(1), v.b(2)),
            e -> "frame=" + Render.hex(e.frame(), 24) + " reason=" + Render.s(e.reason())
                    + (e.wouldKillPythonListener() ? " (kills the Python listener)" : ""),
            nul("reason", STR), req("frame", BYTES), opt("would_kill_python_listener", BOOL))),

    // ---------------------------------------------------------------- inputs: time

    TICK(19, EntryKind.INPUT, "tick", Schema.of(NodeEvent.Tick.class,
            e -> new Object[0], (at, v) -> new NodeEvent.Tick(at), e -> "")),

    // ---------------------------------------------------------------- inputs: notify publisher

    NOTIFY_SEND_FAILED(20, EntryKind.INPUT, "notify_send_failed", Schema.of(NodeEvent.NotifySendFailed.class,
            e -> new Object[] {e.endpoint(), e.messageType(), e.transferId(), e.reason(), e.frame()},
            (at, v) -> new NodeEvent.NotifySendFailed(at, v.s(0), v.s(1), v.s(2), v.s(3), v.o(4)),
            e -> Render.s(e.messageType()) + " to " + Render.s(e.endpoint()) + " tid=" + Render.s(e.transferId())
                    + " reason=" + Render.s(e.reason()) + " frame=" + Render.hex(e.frame(), 24),
            nul("endpoint", STR), nul("message_type", STR), nul("transfer_id", STR), nul("reason", STR),
            req("frame", BYTES))),

    // ---------------------------------------------------------------- inputs: connector lifecycle

    SHUT_DOWN(21, EntryKind.INPUT, "shut_down", Schema.of(NodeEvent.ShutDown.class,
            e -> new Object[] {e.closeFailures()},
            (at, v) -> new NodeEvent.ShutDown(at, v.o(0)),
            e -> "close_failures=" + Render.strs(e.closeFailures()),
            nul("close_failures", STR_LIST))),

    HANDSHAKE_VOTED(22, EntryKind.INPUT, "handshake_voted", Schema.of(NodeEvent.HandshakeVoted.class,
            e -> new Object[] {e.remoteEngineId(), e.vote(), e.failedTpRanks()},
            (at, v) -> new NodeEvent.HandshakeVoted(at, v.s(0), v.i(1), v.o(2)),
            e -> "engine=" + e.remoteEngineId() + " vote=" + e.vote() + (e.passed() ? " passed" : " FAILED")
                    + (e.failedTpRanks() == null ? "" : " failed_tp_ranks=" + e.failedTpRanks()),
            req("remote_engine_id", STR), req("vote", I32), nul("failed_tp_ranks", INT_LIST))),

    KV_CACHES_REGISTERED(23, EntryKind.INPUT, "kv_caches_registered", Schema.of(NodeEvent.KvCachesRegistered.class,
            e -> new Object[] {e.configBlockSize(), e.attnBackend(), e.tensors()},
            (at, v) -> new NodeEvent.KvCachesRegistered(at, v.i(0), v.s(1), v.o(2)),
            e -> "config_block_size=" + e.configBlockSize() + (e.attnBackend() == null ? "" : " backend=" + e.attnBackend())
                    + " tensors=" + Render.list(e.tensors(), Nested.KV_CACHE_TENSOR::dissect),
            req("config_block_size", I32), nul("attn_backend", STR), req("tensors", listOf(Nested.KV_CACHE_TENSOR)))),

    FORWARD_DONE(24, EntryKind.INPUT, "forward_done", Schema.of(NodeEvent.ForwardDone.class,
            e -> new Object[] {e.readsPosted(), e.layerWaits(), e.layerWaitNs(), e.lastLayerWaitBeforeNs()},
            (at, v) -> new NodeEvent.ForwardDone(at, v.<List<String>>o(0), v.i(1), v.l(2), v.l(3)),
            e -> "reads_posted=" + e.readsPosted() + " layer_waits=" + e.layerWaits() + " waited_ns=" + e.layerWaitNs()
                    + " last_wait_before_ns=" + e.lastLayerWaitBeforeNs(),
            req("reads_posted", STR_LIST), req("layer_waits", I32), req("layer_wait_ns", I64),
            req("last_layer_wait_before_ns", I64))),

    // ---------------------------------------------------------------- derived: hook replies

    MATCHED_TOKENS(100, EntryKind.DERIVED, "matched_tokens", Schema.of(Effect.MatchedTokens.class,
            e -> new Object[] {e.requestId(), e.count(), e.loadAsync()},
            (at, v) -> new Effect.MatchedTokens(v.s(0), v.i(1), v.b(2)),
            e -> "rid=" + e.requestId() + " count=" + e.count() + " load_async=" + e.loadAsync(),
            nul("request_id", STR), req("count", I32), req("load_async", BOOL))),

    METADATA_BUILT(101, EntryKind.DERIVED, "metadata_built", Schema.of(Effect.MetadataBuilt.class,
            e -> new Object[] {e.step(), e.reqsToRecv(), e.reqsToSave(), e.reqsToSend(), e.mappingSize()},
            (at, v) -> new Effect.MetadataBuilt(v.l(0), v.o(1), v.o(2), v.o(3), v.i(4)),
            e -> "step=" + e.step() + " recv=" + rids(e.reqsToRecv()) + " save=" + rids(e.reqsToSave())
                    + " send=" + Render.strs(e.reqsToSend()) + " mapping=" + e.mappingSize(),
            req("step", I64), nul("reqs_to_recv", listOf(Nested.REQ_META)),
            nul("reqs_to_save", listOf(Nested.REQ_META)), nul("reqs_to_send", STR_LIST), req("mapping_size", I32))),

    FINISH_DECISION(102, EntryKind.DERIVED, "finish_decision", Schema.of(Effect.FinishDecision.class,
            e -> new Object[] {e.requestId(), e.delayFree(), e.params()},
            (at, v) -> new Effect.FinishDecision(v.s(0), v.b(1), v.o(2)),
            e -> "rid=" + e.requestId() + " delay_free=" + e.delayFree() + " params=" + Render.py(e.params()),
            nul("request_id", STR), req("delay_free", BOOL), nul("kv_transfer_params", PARAMS))),

    FINISHED_REPORTED(103, EntryKind.DERIVED, "finished_reported", Schema.of(Effect.FinishedReported.class,
            e -> new Object[] {e.doneSending(), e.doneRecving(), e.loadErrorBlocks()},
            (at, v) -> new Effect.FinishedReported(v.o(0), v.o(1), v.o(2)),
            e -> "done_sending=" + Render.strs(e.doneSending()) + " done_recving=" + Render.strs(e.doneRecving())
                    + " load_error_blocks=" + Render.intList(e.loadErrorBlocks()),
            nul("done_sending", STR_LIST), nul("done_recving", STR_LIST), nul("load_error_blocks", INT_LIST))),

    FINISHED_SENDING_REWRITTEN(104, EntryKind.DERIVED, "finished_sending_rewritten",
            Schema.of(Effect.FinishedSendingRewritten.class,
                    e -> new Object[] {e.safe()},
                    (at, v) -> new Effect.FinishedSendingRewritten(v.o(0)),
                    e -> "safe=" + Render.strs(e.safe()),
                    nul("safe", STR_LIST))),

    // ---------------------------------------------------------------- derived: I/O commands

    SEND_REMOTE_BLOCKS(120, EntryKind.DERIVED, "send_remote_blocks", Schema.of(Effect.SendRemoteBlocks.class,
            e -> new Object[] {e.host(), e.port(), e.reqId(), FieldType.field(e.transferId()), e.blockNotifyList(), e.decodeRank()},
            (at, v) -> new Effect.SendRemoteBlocks(v.s(0), v.i(1), v.s(2), FieldType.transferId(v.o(3)), v.o(4), v.i(5)),
            e -> "-> " + Render.s(e.host()) + ":" + e.port() + " tid=" + Render.py(e.transferId()) + " req_id="
                    + Render.s(e.reqId()) + " blocks=" + Render.intList(e.blockNotifyList())
                    + " decode_rank=" + e.decodeRank(),
            nul("host", STR), req("port", I32), nul("req_id", STR), nul("transfer_id", TRANSFER_ID),
            nul("block_notify_list", INT_LIST), req("decode_rank", I32))),

    SEND_RELEASE(121, EntryKind.DERIVED, "send_release", Schema.of(Effect.SendRelease.class,
            e -> new Object[] {e.sender(), e.host(), e.port(), FieldType.field(e.transferId()), e.consumerTpSize()},
            (at, v) -> new Effect.SendRelease(v.o(0), v.s(1), v.i(2), FieldType.transferId(v.o(3)), v.i(4)),
            e -> e.sender() + " -> " + Render.s(e.host()) + ":" + e.port() + " tid=" + Render.py(e.transferId())
                    + " consumer_tp_size=" + e.consumerTpSize(),
            req("sender", named(Effect.Sender.class)), nul("host", STR), req("port", I32), nul("transfer_id", TRANSFER_ID),
            req("consumer_tp_size", I32))),

    SEND_WRITE_DONE(122, EntryKind.DERIVED, "send_write_done", Schema.of(Effect.SendWriteDone.class,
            e -> new Object[] {e.host(), e.port(), e.transferId()},
            (at, v) -> new Effect.SendWriteDone(v.s(0), v.i(1), v.s(2)),
            e -> "-> " + Render.s(e.host()) + ":" + e.port() + " tid=" + Render.s(e.transferId()),
            nul("host", STR), req("port", I32), nul("transfer_id", STR))),

    SEND_WRITE_FAILED(123, EntryKind.DERIVED, "send_write_failed", Schema.of(Effect.SendWriteFailed.class,
            e -> new Object[] {e.host(), e.port(), e.transferId(), e.reason()},
            (at, v) -> new Effect.SendWriteFailed(v.s(0), v.i(1), v.s(2), v.s(3)),
            e -> "-> " + Render.s(e.host()) + ":" + e.port() + " tid=" + Render.s(e.transferId())
                    + " reason=" + Render.s(e.reason()),
            nul("host", STR), req("port", I32), nul("transfer_id", STR), nul("reason", STR))),

    START_HANDSHAKE(124, EntryKind.DERIVED, "start_handshake", Schema.of(Effect.StartHandshake.class,
            e -> new Object[] {e.key(), e.host(), e.port(), e.remoteEngineId(), e.remoteDpRank()},
            (at, v) -> new Effect.StartHandshake(v.s(0), v.s(1), v.i(2), v.s(3), v.i(4)),
            e -> "key=" + Render.s(e.key()) + " -> " + Render.s(e.host()) + ":" + e.port() + " engine="
                    + Render.s(e.remoteEngineId()) + " dp" + e.remoteDpRank(),
            nul("key", STR), nul("host", STR), req("port", I32), nul("remote_engine_id", STR),
            req("remote_dp_rank", I32))),

    POST_WRITE(125, EntryKind.DERIVED, "post_write", Schema.of(Effect.PostWrite.class,
            e -> new Object[] {e.statusId(), e.transferId(), e.layerName(), e.sessionKey(), e.localBlockIds(),
                    e.remoteBlockIds()},
            (at, v) -> new Effect.PostWrite(v.l(0), v.s(1), v.s(2), v.s(3), v.o(4), v.o(5)),
            e -> "status=" + e.statusId() + " tid=" + Render.s(e.transferId()) + " layer=" + Render.s(e.layerName())
                    + " session=" + Render.s(e.sessionKey()) + " local=" + Render.ints(e.localBlockIds())
                    + " remote=" + Render.ints(e.remoteBlockIds()),
            req("status_id", I64), nul("transfer_id", STR), nul("layer_name", STR), nul("session_key", STR),
            nul("local_block_ids", INT_ARRAY), nul("remote_block_ids", INT_ARRAY))),

    POST_READ(126, EntryKind.DERIVED, "post_read", Schema.of(Effect.PostRead.class,
            e -> new Object[] {e.statusId(), e.requestId(), e.transferId(), e.layerName(), e.sessionKey(),
                    e.localBlockIds(), e.remoteBlockIds()},
            (at, v) -> new Effect.PostRead(v.l(0), v.s(1), v.s(2), v.s(3), v.s(4), v.o(5), v.o(6)),
            e -> "status=" + e.statusId() + " rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId())
                    + " layer=" + Render.s(e.layerName()) + " session=" + Render.s(e.sessionKey())
                    + " local=" + Render.ints(e.localBlockIds()) + " remote=" + Render.ints(e.remoteBlockIds()),
            req("status_id", I64), nul("request_id", STR), nul("transfer_id", STR), nul("layer_name", STR),
            nul("session_key", STR), nul("local_block_ids", INT_ARRAY), nul("remote_block_ids", INT_ARRAY))),

    // ---------------------------------------------------------------- derived: decision records

    PHASE_CHANGED(140, EntryKind.DERIVED, "phase_changed", Schema.of(Effect.PhaseChanged.class,
            e -> new Object[] {e.requestId(), e.from(), e.to(), e.reason()},
            (at, v) -> new Effect.PhaseChanged(v.s(0), v.o(1), v.o(2), v.s(3)),
            e -> "rid=" + Render.s(e.requestId()) + " " + (e.from() == null ? "-" : e.from()) + " -> "
                    + (e.to() == null ? "-" : e.to()) + " (" + Render.s(e.reason()) + ")",
            nul("request_id", STR), nul("from", PHASE), nul("to", PHASE), nul("reason", STR))),

    DEFERRAL_STARTED(141, EntryKind.DERIVED, "deferral_started", Schema.of(Effect.DeferralStarted.class,
            e -> new Object[] {e.requestId(), e.transferId(), e.deadlineNs()},
            (at, v) -> new Effect.DeferralStarted(v.s(0), v.s(1), v.l(2)),
            e -> "rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId()) + " deadline_ns=" + e.deadlineNs(),
            nul("request_id", STR), nul("transfer_id", STR), req("deadline_ns", I64))),

    ACK_PARKED(142, EntryKind.DERIVED, "ack_parked", Schema.of(Effect.AckParked.class,
            e -> new Object[] {e.requestId(), e.deadlineNs()},
            (at, v) -> new Effect.AckParked(v.s(0), v.l(1)),
            e -> "rid=" + Render.s(e.requestId()) + " deadline_ns=" + e.deadlineNs(),
            nul("request_id", STR), req("deadline_ns", I64))),

    ACK_SURFACED(143, EntryKind.DERIVED, "ack_surfaced", Schema.of(Effect.AckSurfaced.class,
            e -> new Object[] {e.requestId(), e.transferId(), e.reason()},
            (at, v) -> new Effect.AckSurfaced(v.s(0), v.s(1), v.o(2)),
            e -> "rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId()) + " " + e.reason(),
            nul("request_id", STR), nul("transfer_id", STR), nul("reason", named(Effect.SurfaceReason.class)))),

    STALE_ACK_DROPPED(144, EntryKind.DERIVED, "stale_ack_dropped", Schema.of(Effect.StaleAckDropped.class,
            e -> new Object[] {e.requestId()},
            (at, v) -> new Effect.StaleAckDropped(v.s(0)),
            e -> "rid=" + Render.s(e.requestId()),
            nul("request_id", STR))),

    UNMAPPED(145, EntryKind.DERIVED, "unmapped", Schema.of(Effect.Unmapped.class,
            e -> new Object[] {e.requestId(), e.transferId(), e.removedRequestId(), e.kind()},
            (at, v) -> new Effect.Unmapped(v.s(0), v.s(1), v.s(2), v.o(3)),
            e -> e.kind() + " rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId())
                    + " removed=" + Render.s(e.removedRequestId()),
            nul("request_id", STR), nul("transfer_id", STR), nul("removed_request_id", STR),
            nul("unmap_kind", named(Effect.UnmapKind.class)))),

    ANOMALY(146, EntryKind.DERIVED, "anomaly", Schema.of(Effect.Anomaly.class,
            e -> new Object[] {e.kind(), e.requestId(), e.transferId(), e.detail()},
            (at, v) -> new Effect.Anomaly(v.o(0), v.s(1), v.s(2), v.s(3)),
            e -> (e.kind() == null ? "None" : e.kind() + " [" + e.kind().label()
                    + (e.kind().bugClass() > 0 ? ", bug class " + e.kind().bugClass() : "") + "]")
                    + " rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId())
                    + ": " + Render.s(e.detail()),
            req("anomaly", FieldType.ANOMALY), nul("request_id", STR), nul("transfer_id", STR), nul("detail", STR))),

    // ---------------------------------------------------------------- proxy records (kvledger proxy)

    PROXY_STARTED(200, EntryKind.PROXY, "proxy_started", Schema.of(ProxyEvent.ProxyStarted.class,
            e -> new Object[] {e.httpAddress(), e.pingPort(), e.mode(), e.notifyPortShift()},
            (at, v) -> new ProxyEvent.ProxyStarted(at, v.s(0), v.i(1), v.s(2), v.i(3)),
            e -> "http=" + Render.s(e.httpAddress()) + " ping_port=" + e.pingPort() + " mode="
                    + (e.mode() == null ? "first-registrant" : e.mode()) + " notify_port_shift=" + e.notifyPortShift(),
            nul("http_address", STR), req("ping_port", I32), nul("mode", STR), opt("notify_port_shift", I32))),

    INSTANCE_REGISTERED(201, EntryKind.PROXY, "instance_registered", Schema.of(ProxyEvent.InstanceRegistered.class,
            e -> new Object[] {e.role(), e.httpAddress(), e.zmqAddress(), e.dpSize(), e.tpSize(), e.transferMode(),
                    e.change()},
            (at, v) -> new ProxyEvent.InstanceRegistered(at, v.s(0), v.s(1), v.s(2), v.i(3), v.i(4), v.s(5), v.s(6)),
            e -> e.change() + " " + Render.s(e.role()) + " " + Render.s(e.httpAddress()) + " zmq=" + Render.s(e.zmqAddress())
                    + " dp_size=" + e.dpSize() + " tp_size=" + e.tpSize() + " " + Render.s(e.transferMode()),
            nul("role", STR), nul("http_address", STR), nul("zmq_address", STR), req("dp_size", I32),
            req("tp_size", I32), nul("transfer_mode", STR), nul("change", STR))),

    INSTANCE_EXPIRED(202, EntryKind.PROXY, "instance_expired", Schema.of(ProxyEvent.InstanceExpired.class,
            e -> new Object[] {e.role(), e.httpAddress(), e.lastSeenNs()},
            (at, v) -> new ProxyEvent.InstanceExpired(at, v.s(0), v.s(1), v.l(2)),
            e -> Render.s(e.role()) + " " + Render.s(e.httpAddress()) + " last_seen_ns=" + e.lastSeenNs(),
            nul("role", STR), nul("http_address", STR), req("last_seen_ns", I64))),

    REGISTRATION_REJECTED(203, EntryKind.PROXY, "registration_rejected",
            Schema.of(ProxyEvent.RegistrationRejected.class,
                    e -> new Object[] {e.reason(), e.frame()},
                    (at, v) -> new ProxyEvent.RegistrationRejected(at, v.s(0), v.o(1)),
                    e -> "reason=" + Render.s(e.reason()) + " frame=" + Render.hex(e.frame(), 24),
                    nul("reason", STR), req("frame", BYTES))),

    REQUEST_REJECTED(204, EntryKind.PROXY, "request_rejected", Schema.of(ProxyEvent.RequestRejected.class,
            e -> new Object[] {e.api(), e.clientRequestId(), e.status(), e.reason()},
            (at, v) -> new ProxyEvent.RequestRejected(at, v.s(0), v.s(1), v.i(2), v.s(3)),
            e -> Render.s(e.api()) + " status=" + e.status() + " client_request_id=" + Render.s(e.clientRequestId())
                    + " reason=" + Render.s(e.reason()),
            nul("api", STR), nul("client_request_id", STR), req("status", I32), nul("reason", STR))),

    REQUEST_ROUTED(205, EntryKind.PROXY, "request_routed", Schema.of(ProxyEvent.RequestRouted.class,
            e -> new Object[] {e.requestId(), e.transferId(), e.api(), e.stream(), e.clientRequestId(), e.mode(),
                    e.prefill(), e.prefillDpRank(), e.decode(), e.decodeDpRank()},
            (at, v) -> new ProxyEvent.RequestRouted(at, v.s(0), v.s(1), v.s(2), v.b(3), v.s(4), v.s(5), v.s(6),
                    v.o(7), v.s(8), v.o(9)),
            e -> "rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId()) + " " + Render.s(e.api())
                    + (e.stream() ? " stream" : "") + " " + Render.s(e.mode()) + " prefill=" + Render.s(e.prefill())
                    + (e.prefillDpRank() == null ? "" : " dp" + e.prefillDpRank()) + " decode=" + Render.s(e.decode())
                    + (e.decodeDpRank() == null ? "" : " dp" + e.decodeDpRank())
                    + (e.clientRequestId() == null ? "" : " client_request_id=" + e.clientRequestId()),
            nul("request_id", STR), nul("transfer_id", STR), nul("api", STR), opt("stream", BOOL),
            nul("client_request_id", STR), nul("mode", STR), nul("prefill", STR), nul("prefill_dp_rank", I32_OR_NONE),
            nul("decode", STR), nul("decode_dp_rank", I32_OR_NONE))),

    LEG_SENT(206, EntryKind.PROXY, "leg_sent", Schema.of(ProxyEvent.LegSent.class,
            e -> new Object[] {e.requestId(), e.transferId(), e.leg(), e.instance(), e.kvTransferParams()},
            (at, v) -> new ProxyEvent.LegSent(at, v.s(0), v.s(1), v.s(2), v.s(3), v.o(4)),
            e -> e.leg() + " rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId()) + " to "
                    + Render.s(e.instance()) + " params=" + Render.py(e.kvTransferParams()),
            nul("request_id", STR), nul("transfer_id", STR), nul("leg", STR), nul("instance", STR),
            nul("kv_transfer_params", PARAMS))),

    LEG_ANSWERED(207, EntryKind.PROXY, "leg_answered", Schema.of(ProxyEvent.LegAnswered.class,
            e -> new Object[] {e.requestId(), e.transferId(), e.leg(), e.httpStatus(), e.elapsedNs(), e.finishReason(),
                    e.kvTransferParams()},
            (at, v) -> new ProxyEvent.LegAnswered(at, v.s(0), v.s(1), v.s(2), v.i(3), v.l(4), v.s(5), v.o(6)),
            e -> e.leg() + " rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId()) + " status="
                    + e.httpStatus() + " after " + millis(e.elapsedNs()) + " finish=" + Render.s(e.finishReason())
                    + " params=" + Render.py(e.kvTransferParams()),
            nul("request_id", STR), nul("transfer_id", STR), nul("leg", STR), req("http_status", I32),
            req("elapsed_ns", I64), nul("finish_reason", STR), nul("kv_transfer_params", PARAMS))),

    LEG_FAILED(208, EntryKind.PROXY, "leg_failed", Schema.of(ProxyEvent.LegFailed.class,
            e -> new Object[] {e.requestId(), e.transferId(), e.leg(), e.httpStatus(), e.elapsedNs(), e.reason()},
            (at, v) -> new ProxyEvent.LegFailed(at, v.s(0), v.s(1), v.s(2), v.o(3), v.l(4), v.s(5)),
            e -> e.leg() + " rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId()) + " status="
                    + (e.httpStatus() == null ? "none" : e.httpStatus()) + " after " + millis(e.elapsedNs())
                    + " reason=" + Render.s(e.reason()),
            nul("request_id", STR), nul("transfer_id", STR), nul("leg", STR), nul("http_status", I32_OR_NONE),
            req("elapsed_ns", I64), nul("reason", STR))),

    LEG_CANCELLED(209, EntryKind.PROXY, "leg_cancelled", Schema.of(ProxyEvent.LegCancelled.class,
            e -> new Object[] {e.requestId(), e.transferId(), e.leg(), e.elapsedNs(), e.reason()},
            (at, v) -> new ProxyEvent.LegCancelled(at, v.s(0), v.s(1), v.s(2), v.l(3), v.s(4)),
            e -> e.leg() + " rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId()) + " after "
                    + millis(e.elapsedNs()) + " reason=" + Render.s(e.reason()),
            nul("request_id", STR), nul("transfer_id", STR), nul("leg", STR), req("elapsed_ns", I64),
            nul("reason", STR))),

    REQUEST_COMPLETED(210, EntryKind.PROXY, "request_completed", Schema.of(ProxyEvent.RequestCompleted.class,
            e -> new Object[] {e.requestId(), e.transferId(), e.httpStatus(), e.elapsedNs()},
            (at, v) -> new ProxyEvent.RequestCompleted(at, v.s(0), v.s(1), v.i(2), v.l(3)),
            e -> "rid=" + Render.s(e.requestId()) + " tid=" + Render.s(e.transferId()) + " status=" + e.httpStatus()
                    + " after " + millis(e.elapsedNs()),
            nul("request_id", STR), nul("transfer_id", STR), req("http_status", I32), req("elapsed_ns", I64))),

    RECORDS_DROPPED(211, EntryKind.PROXY, "records_dropped", Schema.of(ProxyEvent.RecordsDropped.class,
            e -> new Object[] {e.total()},
            (at, v) -> new ProxyEvent.RecordsDropped(at, v.l(0)),
            e -> "total=" + e.total() + " (the journal has a gap)",
            req("total", I64)));

    private final int id;
    private final EntryKind kind;
    private final String typeName;
    private final Schema<?> schema;

    EntryType(int id, EntryKind kind, String typeName, Schema<?> schema) {
        this.id = id;
        this.kind = kind;
        this.typeName = typeName;
        this.schema = schema;
    }

    /** The permanent numeric type id stored in every entry. */
    public int id() {
        return id;
    }

    public EntryKind kind() {
        return kind;
    }

    /** The snake_case name: the {@code "type"} of a JSON line, and what the CLI prints. */
    public String typeName() {
        return typeName;
    }

    /** The payload schema; {@code null} for {@link #HEADER}. */
    Schema<?> schema() {
        return schema;
    }

    /** The record class of this type; {@code null} for {@link #HEADER}. */
    Class<?> recordClass() {
        return schema == null ? null : schema.type();
    }

    // ---------------------------------------------------------------- lookups

    private static final EntryType[] BY_ID;
    private static final Map<String, EntryType> BY_NAME = new HashMap<>();

    static {
        int max = 0;
        for (EntryType t : values()) {
            max = Math.max(max, t.id);
        }
        BY_ID = new EntryType[max + 1];
        for (EntryType t : values()) {
            if (BY_ID[t.id] != null) {
                throw new ExceptionInInitializerError("type id " + t.id + " used twice");
            }
            BY_ID[t.id] = t;
            BY_NAME.put(t.typeName, t);
        }
    }

    /** The type with this id, or {@code null} when this version does not know it. */
    public static EntryType byId(int id) {
        return id >= 0 && id < BY_ID.length ? BY_ID[id] : null;
    }

    /** The type with this snake_case name, or {@code null}. */
    public static EntryType byName(String name) {
        return BY_NAME.get(name);
    }

    /** The type of an input event. */
    /** The type of a record class, for writers that look it up per entry ({@link #ofClass}). */
    private static final ClassValue<EntryType> BY_CLASS = new ClassValue<>() {
        @Override
        protected EntryType computeValue(Class<?> c) {
            for (EntryType t : values()) {
                if (t.recordClass() == c) {
                    return t;
                }
            }
            return null;
        }
    };

    /**
     * The type whose records are of class {@code c} (null for none): the same answer as the
     * {@code of} methods, from a per-class cache instead of a switch over every type.
     */
    public static EntryType ofClass(Class<?> c) {
        return BY_CLASS.get(c);
    }

    public static EntryType of(NodeEvent e) {
        return switch (e) {
            case NodeEvent.RequestAdmitted x -> REQUEST_ADMITTED;
            case NodeEvent.MatchedTokensQueried x -> MATCHED_TOKENS_QUERIED;
            case NodeEvent.BlocksAllocated x -> BLOCKS_ALLOCATED;
            case NodeEvent.StepScheduled x -> STEP_SCHEDULED;
            case NodeEvent.RequestFinished x -> REQUEST_FINISHED;
            case NodeEvent.ConnectorOutputReceived x -> CONNECTOR_OUTPUT_RECEIVED;
            case NodeEvent.LoadStarted x -> LOAD_STARTED;
            case NodeEvent.LayerSaved x -> LAYER_SAVED;
            case NodeEvent.SaveWaited x -> SAVE_WAITED;
            case NodeEvent.FinishedPolled x -> FINISHED_POLLED;
            case NodeEvent.HandshakeCompleted x -> HANDSHAKE_COMPLETED;
            case NodeEvent.HandshakeFailed x -> HANDSHAKE_FAILED;
            case NodeEvent.TransferCompleted x -> TRANSFER_COMPLETED;
            case NodeEvent.RemoteBlocksReceived x -> REMOTE_BLOCKS_RECEIVED;
            case NodeEvent.WriteDoneReceived x -> WRITE_DONE_RECEIVED;
            case NodeEvent.ReleaseReceived x -> RELEASE_RECEIVED;
            case NodeEvent.RawCompletionReceived x -> RAW_COMPLETION_RECEIVED;
            case NodeEvent.FrameRejected x -> FRAME_REJECTED;
            case NodeEvent.Tick x -> TICK;
            case NodeEvent.NotifySendFailed x -> NOTIFY_SEND_FAILED;
            case NodeEvent.ShutDown x -> SHUT_DOWN;
            case NodeEvent.HandshakeVoted x -> HANDSHAKE_VOTED;
            case NodeEvent.KvCachesRegistered x -> KV_CACHES_REGISTERED;
            case NodeEvent.ForwardDone x -> FORWARD_DONE;
        };
    }

    /** The type of an effect. */
    public static EntryType of(Effect e) {
        return switch (e) {
            case Effect.MatchedTokens x -> MATCHED_TOKENS;
            case Effect.MetadataBuilt x -> METADATA_BUILT;
            case Effect.FinishDecision x -> FINISH_DECISION;
            case Effect.FinishedReported x -> FINISHED_REPORTED;
            case Effect.FinishedSendingRewritten x -> FINISHED_SENDING_REWRITTEN;
            case Effect.SendRemoteBlocks x -> SEND_REMOTE_BLOCKS;
            case Effect.SendRelease x -> SEND_RELEASE;
            case Effect.SendWriteDone x -> SEND_WRITE_DONE;
            case Effect.SendWriteFailed x -> SEND_WRITE_FAILED;
            case Effect.StartHandshake x -> START_HANDSHAKE;
            case Effect.PostWrite x -> POST_WRITE;
            case Effect.PostRead x -> POST_READ;
            case Effect.PhaseChanged x -> PHASE_CHANGED;
            case Effect.DeferralStarted x -> DEFERRAL_STARTED;
            case Effect.AckParked x -> ACK_PARKED;
            case Effect.AckSurfaced x -> ACK_SURFACED;
            case Effect.StaleAckDropped x -> STALE_ACK_DROPPED;
            case Effect.Unmapped x -> UNMAPPED;
            case Effect.Anomaly x -> ANOMALY;
        };
    }

    /** The type of a proxy record. */
    public static EntryType of(ProxyEvent e) {
        return switch (e) {
            case ProxyEvent.ProxyStarted x -> PROXY_STARTED;
            case ProxyEvent.InstanceRegistered x -> INSTANCE_REGISTERED;
            case ProxyEvent.InstanceExpired x -> INSTANCE_EXPIRED;
            case ProxyEvent.RegistrationRejected x -> REGISTRATION_REJECTED;
            case ProxyEvent.RequestRejected x -> REQUEST_REJECTED;
            case ProxyEvent.RequestRouted x -> REQUEST_ROUTED;
            case ProxyEvent.LegSent x -> LEG_SENT;
            case ProxyEvent.LegAnswered x -> LEG_ANSWERED;
            case ProxyEvent.LegFailed x -> LEG_FAILED;
            case ProxyEvent.LegCancelled x -> LEG_CANCELLED;
            case ProxyEvent.RequestCompleted x -> REQUEST_COMPLETED;
            case ProxyEvent.RecordsDropped x -> RECORDS_DROPPED;
        };
    }

    private static String millis(long ns) {
        return String.format(java.util.Locale.ROOT, "%.1fms", ns / 1e6);
    }

    // ---------------------------------------------------------------- payloads

    /** Writes a record of this type as its msgpack payload. */
    @SuppressWarnings("unchecked")
    public void write(MessagePacker p, Object record) throws IOException {
        ((Schema<Object>) requireSchema()).write(p, record);
    }

    /**
     * Reads a payload of this type.
     *
     * @param atNs the entry's timestamp (inputs carry it in the envelope, not in the payload)
     * @throws PayloadException when the payload does not match the schema
     */
    public Object read(MessageUnpacker u, long atNs) throws IOException {
        return requireSchema().read(u, atNs);
    }

    /** The payload fields of a record of this type as a JSON object (snake_case keys). */
    @SuppressWarnings("unchecked")
    public Map<String, Object> toJson(Object record) {
        return ((Schema<Object>) requireSchema()).toJson(record);
    }

    /**
     * Builds a record of this type from a JSON object.
     *
     * @param ignored envelope keys ({@code seq}, {@code kind}, {@code type}, ...) to skip
     * @throws PayloadException naming the field that is missing, unknown or of the wrong type
     */
    public Object fromJson(Map<String, Object> fields, long atNs, Set<String> ignored) {
        Schema<?> s = requireSchema();
        if (this == REQUEST_ADMITTED && fields.containsKey("prompt_token_ids")
                && !fields.containsKey("prompt_token_ids_len")) {
            // A patched engine may log the token ids themselves: the journal keeps their count.
            java.util.LinkedHashMap<String, Object> m = new java.util.LinkedHashMap<>(fields);
            Object ids = m.remove("prompt_token_ids");
            if (ids != null && !(ids instanceof List<?>)) {
                throw new PayloadException("prompt_token_ids: expected a list or null, found " + io.kvledger.wire.PyValues.describe(ids));
            }
            m.put("prompt_token_ids_len", ids == null ? null : (long) ((List<?>) ids).size());
            return s.fromJson(m, atNs, ignored);
        }
        return s.fromJson(fields, atNs, ignored);
    }

    /** The one-line dissection of a record of this type: its name, then its fields. */
    @SuppressWarnings("unchecked")
    public String dissect(Object record) {
        String details = ((Schema<Object>) requireSchema()).dissect(record);
        return details.isEmpty() ? typeName : typeName + " " + details;
    }

    private Schema<?> requireSchema() {
        if (schema == null) {
            throw new IllegalStateException("the header has no record schema");
        }
        return schema;
    }

    private static String rids(List<ReqMeta> metas) {
        if (metas == null) {
            return "None";
        }
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < metas.size(); i++) {
            b.append(i == 0 ? "" : ",").append(metas.get(i).requestId());
        }
        return b.append(']').toString();
    }
}

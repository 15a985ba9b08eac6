package io.kvledger.wire;

import java.util.List;
import java.util.Objects;

/**
 * A decoded notify-channel frame (protocol spec 3.3): what a MoRIIO notify ROUTER receives from
 * peer DEALERs.
 */
public sealed interface NotifyMessage {

    /** The {@code type} value on the wire, or {@code "completion"} for the raw id. */
    String wireType();

    /**
     * {@code remote_blocks}: the decode scheduler tells a prefill rank where to write (WRITE mode).
     *
     * @param reqId             D's scheduler request id, or {@code null} when the frame has no
     *                          {@code req_id} (the Python handler reads it with {@code get})
     * @param blockNotifyList   D's block ids of KV group 0; may be empty (the Python prefill
     *                          handler raises on an empty list: the reducer flags it)
     * @param decodeRank        {@code decode_rank}, 0 when absent (Python's default)
     * @param legacyWithoutType the frame had no {@code type} key and was recognised by its
     *                          {@code req_id}
     */
    record RemoteBlocks(String reqId, String transferId, BlockIdList blockNotifyList, int decodeRank,
                        boolean legacyWithoutType) implements NotifyMessage {
        public RemoteBlocks {
            Objects.requireNonNull(transferId, "transferId");
            Objects.requireNonNull(blockNotifyList, "blockNotifyList");
        }

        RemoteBlocks(String reqId, String transferId, List<Integer> blocks, int decodeRank) {
            this(reqId, transferId, BlockIdList.copyOf(blocks), decodeRank, false);
        }

        @Override
        public String wireType() {
            return "remote_blocks";
        }
    }

    /** {@code write_done}: every scheduled layer write of a transfer completed (WRITE, P to D). */
    record WriteDone(String transferId) implements NotifyMessage {
        public WriteDone {
            Objects.requireNonNull(transferId, "transferId");
        }

        @Override
        public String wireType() {
            return "write_done";
        }
    }

    /**
     * {@code release}: D tells P it may free a transfer's blocks (READ completion, success or
     * failure, or WRITE abort-before-alloc).
     *
     * @param consumerTpSize {@code consumer_tp_size} (always positive), or {@code null} when the
     *                       frame has none (older peers: counts as 1)
     */
    record Release(String transferId, Integer consumerTpSize) implements NotifyMessage {
        public Release {
            Objects.requireNonNull(transferId, "transferId");
        }

        @Override
        public String wireType() {
            return "release";
        }
    }

    /** A raw UTF-8 completion id (a frame that is not a msgpack map). */
    record RawCompletion(String completionId) implements NotifyMessage {
        public RawCompletion {
            Objects.requireNonNull(completionId, "completionId");
        }

        @Override
        public String wireType() {
            return "completion";
        }
    }
}

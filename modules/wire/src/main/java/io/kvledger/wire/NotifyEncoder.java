package io.kvledger.wire;

import io.kvledger.core.model.TransferId;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Encodes notify-channel frames byte for byte as the Python peers build them.
 *
 * <p>Key orders (Python dict insertion order):
 * <ul>
 *   <li>remote_blocks: {@code req_id, transfer_id, block_notify_list, decode_rank, type} (the
 *       decode scheduler's {@code send_notify_block});</li>
 *   <li>legacy remote_blocks: {@code req_id, transfer_id, block_notify_list} (and
 *       {@code decode_rank} when not 0);</li>
 *   <li>write_done: {@code type, transfer_id};</li>
 *   <li>release: {@code type, transfer_id[, consumer_tp_size]} (the scheduler's
 *       {@code _send_transfer_release} and the worker's {@code send_notify} with
 *       {@code message_fields});</li>
 *   <li>write_failed (open PR #57705, not upstream; its exact fields are not public): the
 *       worker {@code send_notify} shape, {@code type, transfer_id, reason}.</li>
 * </ul>
 * A raw completion is the id's UTF-8 bytes.
 *
 * <p>Every returned array is fresh (ZMQ keeps a reference to what it sends). Where the core
 * carries a transfer id as the params gave it ({@link TransferId}), its raw Python value is
 * written as it came ({@link PyPacker#transferId}: a switch over its forms, {@code None} as nil);
 * a {@code String} id is written as a str, {@code null} as nil. Throws {@link WireEncodingException} for values Python
 * could not pack either. Reusable and not thread-safe.
 */
public final class NotifyEncoder {

    private final PyPacker p = new PyPacker();

    /** {@code remote_blocks}; a {@code null} list is sent as {@code []} (Python's {@code or []}). */
    byte[] remoteBlocks(String reqId, TransferId transferId, List<Integer> blockNotifyList, int decodeRank) {
        p.reset().mapHeader(5).str("req_id").strOrNil(reqId).str("transfer_id").transferId(transferId);
        return remoteBlocksTail(blockNotifyList, decodeRank);
    }

    /** {@code remote_blocks} with a string transfer id. */
    public byte[] remoteBlocks(String reqId, String transferId, List<Integer> blockNotifyList, int decodeRank) {
        p.reset().mapHeader(5).str("req_id").strOrNil(reqId).str("transfer_id").strOrNil(transferId);
        return remoteBlocksTail(blockNotifyList, decodeRank);
    }

    private byte[] remoteBlocksTail(List<Integer> blockNotifyList, int decodeRank) {
        blocks(blockNotifyList);
        p.str("decode_rank").integer(decodeRank).str("type").str("remote_blocks");
        return p.toByteArray();
    }

    /** The legacy {@code remote_blocks} without {@code type} or {@code decode_rank}. */
    public byte[] remoteBlocksLegacy(String reqId, String transferId, List<Integer> blockNotifyList) {
        return remoteBlocksLegacy(reqId, transferId, blockNotifyList, 0);
    }

    /** The legacy {@code remote_blocks} without {@code type}; {@code decode_rank} last, only when not 0. */
    byte[] remoteBlocksLegacy(String reqId, String transferId, List<Integer> blockNotifyList, int decodeRank) {
        p.reset().mapHeader(decodeRank == 0 ? 3 : 4).str("req_id").strOrNil(reqId).str("transfer_id").strOrNil(transferId);
        blocks(blockNotifyList);
        if (decodeRank != 0) {
            p.str("decode_rank").integer(decodeRank);
        }
        return p.toByteArray();
    }

    private void blocks(List<Integer> list) {
        p.str("block_notify_list");
        if (list == null) {
            p.arrayHeader(0);
            return;
        }
        p.arrayHeader(list.size());
        if (list instanceof BlockIdList b) {
            for (int i = 0; i < b.size(); i++) {
                p.integer(b.getInt(i));
            }
        } else {
            for (Integer id : list) {
                if (id == null) {
                    p.nil();
                } else {
                    p.integer(id);
                }
            }
        }
    }

    public byte[] writeDone(String transferId) {
        p.reset().mapHeader(2).str("type").str("write_done").str("transfer_id").strOrNil(transferId);
        return p.toByteArray();
    }

    /** {@code release}; {@code consumerTpSize == null} gives the older form without it. */
    byte[] release(TransferId transferId, Integer consumerTpSize) {
        p.reset().mapHeader(consumerTpSize == null ? 2 : 3).str("type").str("release").str("transfer_id").transferId(transferId);
        return releaseTail(consumerTpSize);
    }

    /** {@code release} with a string transfer id. */
    public byte[] release(String transferId, Integer consumerTpSize) {
        p.reset().mapHeader(consumerTpSize == null ? 2 : 3).str("type").str("release").str("transfer_id").strOrNil(transferId);
        return releaseTail(consumerTpSize);
    }

    private byte[] releaseTail(Integer consumerTpSize) {
        if (consumerTpSize != null) {
            p.str("consumer_tp_size").integer(consumerTpSize);
        }
        return p.toByteArray();
    }

    /** {@code write_failed} (open PR #57705; field set assumed, see the class comment). */
    byte[] writeFailed(String transferId, String reason) {
        p.reset().mapHeader(3).str("type").str("write_failed").str("transfer_id").strOrNil(transferId).str("reason").strOrNil(reason);
        return p.toByteArray();
    }

    /** A raw completion id: its UTF-8 bytes ({@code req_id.encode("utf-8")}). */
    static byte[] completion(String id) {
        try {
            var bb = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(java.nio.CharBuffer.wrap(id));
            byte[] b = new byte[bb.remaining()];
            bb.get(b);
            return b;
        } catch (CharacterCodingException e) {
            throw new WireEncodingException("completion id is not encodable as UTF-8: " + NotifyDecoder.clip(id));
        }
    }

    /** Any decoded message, in the form it was decoded from (legacy stays legacy). */
    byte[] encode(NotifyMessage m) {
        return switch (m) {
            case NotifyMessage.RemoteBlocks rb -> rb.legacyWithoutType()
                    ? remoteBlocksLegacy(rb.reqId(), rb.transferId(), rb.blockNotifyList(), rb.decodeRank())
                    : remoteBlocks(rb.reqId(), rb.transferId(), rb.blockNotifyList(), rb.decodeRank());
            case NotifyMessage.WriteDone wd -> writeDone(wd.transferId());
            case NotifyMessage.Release r -> release(r.transferId(), r.consumerTpSize());
            case NotifyMessage.RawCompletion c -> completion(c.completionId());
        };
    }
}

"""A MoRIIO peer that sends notify frames to a listener, building them the way vLLM does:
msgpack.dumps of dicts in the connector's key order, one frame per DEALER send.

usage: notify_sender.py ENDPOINT [COUNT]
Without COUNT: sends the fixed script below and prints one JSON line per frame sent.
With COUNT: sends COUNT remote_blocks frames with transfer ids tx-burst-<i>, in order.
"""
import sys

import msgpack
import zmq

from common import emit, notify_dealer


def script():
    frames = []
    # decode scheduler send_notify_block: the dict construction order of the connector
    data = {
        "req_id": "cmpl-py-1-0-1a2b3c4d",
        "transfer_id": "tx-py-1",
        "block_notify_list": [0, 1, 127, 128, 65535, 65536] or [],
        "decode_rank": 3,
        "type": "remote_blocks",
    }
    frames.append(("remote_blocks", msgpack.dumps(data)))
    # worker send_notify with message_type and message_fields (typed release)
    payload = {"type": "release", "transfer_id": "tx-py-1"}
    payload.update({"consumer_tp_size": 8})
    frames.append(("release", msgpack.dumps(payload)))
    # scheduler _send_transfer_release
    frames.append(("release_scheduler", msgpack.dumps({"type": "release", "transfer_id": "tx-py-2", "consumer_tp_size": 1})))
    # older peers: release without consumer_tp_size
    frames.append(("release_no_tp", msgpack.dumps({"type": "release", "transfer_id": "tx-py-old"})))
    # P worker write_done
    frames.append(("write_done", msgpack.dumps({"type": "write_done", "transfer_id": "tx-py-3"})))
    # legacy raw completion id
    frames.append(("completion", "tx-py-raw".encode("utf-8")))
    # legacy remote_blocks without type
    frames.append(("legacy", msgpack.dumps({"req_id": "d-py", "transfer_id": "tx-py-legacy", "block_notify_list": [5, 6]})))
    # a full prefix hit: empty list (the Python prefill handler raises on it)
    frames.append(("remote_blocks_empty", msgpack.dumps({"req_id": "d-e", "transfer_id": "tx-py-empty", "block_notify_list": [],
                                                         "decode_rank": 0, "type": "remote_blocks"})))
    # frames that end a Python listener: non-UTF-8 bytes, an unknown type, bytes keys
    frames.append(("non_utf8", b"\xff\xfe\x80\x81"))
    frames.append(("unknown_type", msgpack.dumps({"type": "explode", "transfer_id": "tx-1"})))
    frames.append(("bin_keys", msgpack.dumps({b"type": b"release", b"transfer_id": b"tx-1"})))
    frames.append(("after_bad_frames", msgpack.dumps({"type": "write_done", "transfer_id": "tx-py-last"})))
    return frames


def main():
    endpoint = sys.argv[1]
    ctx = zmq.Context.instance()
    sock = notify_dealer(ctx, zmq, endpoint)
    if len(sys.argv) > 2:
        for i in range(int(sys.argv[2])):
            sock.send(msgpack.dumps({"req_id": "d-%d" % i, "transfer_id": "tx-burst-%d" % i, "block_notify_list": [i],
                                     "decode_rank": 0, "type": "remote_blocks"}))
        emit({"sent": int(sys.argv[2])})
    else:
        for name, frame in script():
            sock.send(frame)
            emit({"name": name, "hex": frame.hex()})
    # linger so every queued frame reaches the listener before the process exits
    sock.close(linger=10000)
    ctx.term()


if __name__ == "__main__":
    main()

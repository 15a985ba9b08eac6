"""An engine driving a kvledger node's engine bridge the way a vLLM connector shim would:
pyzmq DEALER (and one REQ), msgpack requests {"v": 1, "id", "hook", "args"}, Python-native
argument shapes (block ids as tuples of lists, sets turned into lists).

usage: bridge_engine.py ENDPOINT REQUEST_ID
Prints one JSON line per call: {"hook", "reply", "canonical"}, where canonical says whether
msgpack.packb(msgpack.unpackb(raw)) == raw (the node packed the reply exactly as Python would).
Gives up on a reply after 20 s.
"""
import json
import sys

import msgpack
import zmq


def main():
    endpoint, rid = sys.argv[1], sys.argv[2]
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 20000)
    sock.connect(endpoint)
    next_id = [100]

    def emit(hook, raw):
        reply = msgpack.unpackb(raw)
        canonical = msgpack.packb(reply) == raw
        sys.stdout.write(json.dumps({"hook": hook, "reply": reply, "canonical": canonical}) + "\n")
        sys.stdout.flush()
        return reply

    def call(hook, args=None):
        next_id[0] += 1
        req = {"v": 1, "id": next_id[0], "hook": hook}
        if args is not None:
            req["args"] = args
        sock.send(msgpack.packb(req))
        reply = emit(hook, sock.recv())
        if reply["id"] != next_id[0]:
            raise AssertionError("reply id %r for request %r" % (reply["id"], next_id[0]))
        return reply

    params = {
        "remote_dp_size": 1, "remote_tp_size": 1, "transfer_id": "tx-py-7f3a",
        "do_remote_decode": True, "do_remote_prefill": False,
        "remote_engine_id": None, "remote_block_ids": None,
        "ratio": 0.25, "tags": ["é", "日本"], "nested": {"a": [1, -1, 2 ** 40]},
    }
    blocks = ([1, 2],)  # KVCacheBlocks.get_block_ids(): one list per group, as a tuple
    call("hello", {"kv_role": "kv_producer", "mode": "write", "dp_rank": 0, "tp_rank": 0, "connector_role": "scheduler"})
    call("ping")
    call("add_request", {"request_id": rid, "num_prompt_tokens": 32, "prompt_token_ids_len": 32,
                         "kv_transfer_params": params})
    call("get_num_new_matched_tokens", {"request_id": rid, "num_computed_tokens": 0})
    call("update_state_after_alloc", {"request_id": rid, "block_ids": blocks, "num_external_tokens": 0})
    call("build_connector_meta", {"step": 1, "cached_req_ids": [], "cached_new_block_ids": []})
    call("request_finished", {"request_id": rid, "status": "FINISHED_LENGTH_CAPPED", "block_ids": blocks})
    call("get_finished", {"finished_req_ids": list({rid})})
    call("update_connector_output", {"finished_sending": list({rid}), "finished_recving": None})
    call("save_kv_layer", {"layer_name": "model.layers.0.self_attn.attn"})
    call("wait_for_save", {})
    # what a buggy shim might send
    call("get_num_new_matched_tokens", {"request_id": rid, "num_computed_tokens": "0"})
    call("getfinished")
    sock.send(b"\xc1")
    emit("raw-c1", sock.recv())
    # a REQ socket works too
    req_sock = ctx.socket(zmq.REQ)
    req_sock.setsockopt(zmq.LINGER, 0)
    req_sock.setsockopt(zmq.RCVTIMEO, 20000)
    req_sock.connect(endpoint)
    req_sock.send(msgpack.packb({"v": 1, "id": 9000, "hook": "ping", "args": {}}))
    emit("req-ping", req_sock.recv())
    req_sock.close()
    sock.close()
    ctx.term()


if __name__ == "__main__":
    main()

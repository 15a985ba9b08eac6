"""Drive mode: the scheduler connector returns a kvledger node's answers (the engine bridge protocol).

The node here is a ROUTER of the test's own that answers as scripted; VllmBridgeDriveTest (modules/cli)
runs the real ``kvledger node --engine drive``.
"""

import json
import logging
import socket
import threading

import msgpack
import zmq

from driver import Driver, make_config, producer_requests
from kvledger_vllm import KvledgerRecorderConnector
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
from vllm.v1.core.kv_cache_manager import KVCacheBlocks


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ScriptedNode:
    """A ROUTER answering bridge calls: ``answers[hook]`` is the result, or an exception text for ok False."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []
        self.port = free_port()
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(f"tcp://127.0.0.1:{self.port}")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            if not self.sock.poll(50):
                continue
            ident, frame = self.sock.recv_multipart()
            req = msgpack.unpackb(frame)
            self.calls.append((req["hook"], req.get("args") or {}))
            a = self.answers.get(req["hook"], {})
            reply = {"v": 1, "id": req["id"], "ok": not isinstance(a, str)}
            reply["error" if isinstance(a, str) else "result"] = a
            self.sock.send_multipart([ident, msgpack.packb(reply)])

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()
        self.ctx.term()


def scheduler(tmp_path, node_port, **more):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl"), "drive_node": f"tcp://127.0.0.1:{node_port}",
             "drive_timeout_ms": 2000, **more}
    return KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)


PARAMS = {"do_remote_prefill": True, "transfer_id": "tx-0001", "remote_host": "10.0.0.1"}


def test_vllm_gets_the_nodes_answers_and_the_recording_keeps_the_connectors(tmp_path):
    node = ScriptedNode({"get_num_new_matched_tokens": {"num_tokens": 7, "load_async": True},
                         "request_finished": {"delay_free": True, "kv_transfer_params": PARAMS},
                         "update_connector_output": {"finished_sending": ["r-x"]}})
    try:
        s = scheduler(tmp_path, node.port)
        assert s.driving
        req = producer_requests(1)[0]
        s.on_new_request(req)
        assert s.get_num_new_matched_tokens(req, 0) == (7, True)  # the inner says (0, False)
        s.update_state_after_alloc(req, KVCacheBlocks([[1, 2]]), 0)
        s.build_connector_meta(__import__("vllm.v1.core.sched.output", fromlist=["SchedulerOutput"]).SchedulerOutput())
        from vllm.v1.outputs import KVConnectorOutput
        out = KVConnectorOutput(finished_sending={"r-y"})
        s.update_connector_output(out)
        assert out.finished_sending == {"r-x"}  # the node's rewrite
        from vllm.v1.request import RequestStatus
        req.status = RequestStatus.FINISHED_LENGTH_CAPPED
        assert s.request_finished(req, [1, 2]) == (True, PARAMS)
        s.shutdown()
        hooks = [h for h, _ in node.calls]
        assert hooks == ["hello", "add_request", "get_num_new_matched_tokens", "update_state_after_alloc",
                         "build_connector_meta", "update_connector_output", "request_finished"]
        args = dict(node.calls)
        assert args["hello"] == {"kv_role": "kv_producer", "mode": "write", "dp_rank": 0, "connector_role": "scheduler"}
        assert args["add_request"]["request_id"] == req.request_id and args["add_request"]["num_prompt_tokens"] == 40
        assert args["update_state_after_alloc"] == {"request_id": req.request_id, "block_ids": [[1, 2]],
                                                    "num_external_tokens": 0}
        assert args["update_connector_output"] == {"finished_sending": ["r-y"], "finished_recving": None}
        assert args["request_finished"] == {"request_id": req.request_id, "status": "FINISHED_LENGTH_CAPPED",
                                            "block_ids": [[1, 2]]}
        # the recording holds what the real connector answered, for replay --verify against kvledger
        with open(tmp_path / "scheduler.jsonl", encoding="utf-8") as f:
            lines = [json.loads(x) for x in f]
        matched = [x for x in lines if x["type"] == "matched_tokens"]
        assert matched[0]["count"] == 0 and matched[0]["load_async"] is False
        # the connector's own rewrite of finished_sending (it knows no r-y: none safe), not the node's
        # (which vLLM got)
        rewritten = [x for x in lines if x["type"] == "finished_sending_rewritten"]
        assert rewritten == [{"kind": "derived", "type": "finished_sending_rewritten", "safe": []}]
    finally:
        node.close()


def test_a_refusing_node_leaves_the_inners_answer_and_is_logged_once(tmp_path, caplog):
    node = ScriptedNode({"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
                         "request_finished": "node busy: the node's inbox is full (1 items)"})
    try:
        s = scheduler(tmp_path, node.port)
        w = KvledgerRecorderConnector(make_config("kv_producer", {"inner_connector": "ScriptedConnector",
                                                                  "inner_connector_module_path": "fakes"}),
                                      KVConnectorRole.WORKER, None)
        assert not w.driving  # the worker side always stays the inner connector
        with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
            d = Driver(s, w)
            for r in producer_requests(3):
                d.add(r)
            d.run(6)
        assert [df for _, df in d.finished] == [True, True, True]  # the inner's (MoRIIO's) answers
        assert s.drive_fallbacks == 3
        assert caplog.text.count("drive mode: no answer from the node for request_finished") == 1
        assert "node busy" in caplog.text
        s.shutdown()
        w.shutdown()
    finally:
        node.close()


def test_no_node_means_no_drive_mode_and_the_engine_runs_on(tmp_path, caplog):
    with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
        s = scheduler(tmp_path, free_port(), drive_timeout_ms=200)
    assert not s.driving
    assert "drive mode is off" in caplog.text
    req = producer_requests(1)[0]
    assert s.get_num_new_matched_tokens(req, 0) == (0, False)
    s.shutdown()

"""Drive mode: the scheduler connector returns a kvledger node's answers (the engine bridge protocol).

The node here is a ROUTER of the test's own that answers as scripted; VllmBridgeDriveTest (modules/cli)
runs the real ``kvledger node --engine drive``.
"""

import itertools
import json
import logging
import socket
import threading

import msgpack
import pytest
import zmq

from driver import Driver, make_config, producer_requests
from kvledger_vllm import KvledgerRecorderConnector
from kvledger_vllm.drive import NodeBridge, agrees, long_form, long_forms
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
from vllm.v1.core.kv_cache_manager import KVCacheBlocks



@pytest.fixture(autouse=True)
def _quiet_calls_wait_for_the_test(monkeypatch):
    """Quiet calls wait for a later frame for at most NodeBridge.max_hold_ns (250 ms): longer here, so
    that the frames a test expects do not depend on how fast a loaded machine runs it (a test that
    asks for the limit sets it on its bridge)."""
    monkeypatch.setattr(NodeBridge, "max_hold_ns", 3_600 * 10**9)

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ScriptedNode:
    """A ROUTER answering bridge calls: ``answers[hook]`` is the result, or an exception text for ok False."""

    def __init__(self, answers, port=None, endpoint=None):
        self.answers = answers
        self.calls = []
        self.port = None if endpoint else port or free_port()
        self.endpoint = endpoint or f"tcp://127.0.0.1:{self.port}"
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(self.endpoint)
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
            self.send_reply(ident, reply)

    def send_reply(self, ident, reply):
        self.sock.send_multipart([ident, msgpack.packb(reply)])

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()
        self.ctx.term()


DEFAULT = object()  # drive_matched_from_inner=DEFAULT (or finished): the option left out of the config


def scheduler(tmp_path, node_port, **more):
    """A recording scheduler connector driven by the node at ``node_port`` (or the endpoint given as it);
    vLLM awaits its matched tokens and its finishes (the tests written before those defaults changed)
    unless ``drive_matched_from_inner`` / ``drive_finished_from_inner`` say otherwise (``DEFAULT``: the
    option left out)."""
    where = node_port if isinstance(node_port, str) else f"tcp://127.0.0.1:{node_port}"
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl"), "drive_node": where,
             "drive_timeout_ms": 2000, "drive_matched_from_inner": False, "drive_finished_from_inner": False, **more}
    for key in ("drive_matched_from_inner", "drive_finished_from_inner"):
        if extra[key] is DEFAULT:
            del extra[key]
    return KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)


PARAMS = {"do_remote_prefill": True, "transfer_id": "tx-0001", "remote_host": "10.0.0.1"}


def test_vllm_gets_the_nodes_answers_and_the_recording_keeps_the_connectors(tmp_path, caplog):
    node = ScriptedNode({"hello": {"protocol": 1, "profile": "seed"},
                         "get_num_new_matched_tokens": {"num_tokens": 7, "load_async": True},
                         "request_finished": {"delay_free": True, "kv_transfer_params": PARAMS},
                         "update_connector_output": {"finished_sending": ["r-x"]}})
    try:
        with caplog.at_level(logging.WARNING, logger="vllm.kvledger_vllm"):
            s = scheduler(tmp_path, node.port)
        assert s.driving
        assert "DRIVE MODE" in caplog.text and "(profile seed;" in caplog.text  # the profile the node runs
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
        # the install as the recording's header names it (the stand-in vLLM has no version)
        assert args["hello"] == {"kv_role": "kv_producer", "mode": "write", "dp_rank": 0, "connector_role": "scheduler",
                                 "inner_connector": "fakes.ScriptedConnector"}
        # an empty step: no new requests, and vLLM's None for no preemption is sent as []
        assert args["build_connector_meta"] == {"step": 1, "cached_req_ids": [], "cached_new_block_ids": [],
                                                "scheduled_new_reqs": [], "preempted_req_ids": []}
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


def test_drive_node_takes_ipc_as_a_dealer_over_a_unix_socket(tmp_path):
    # ipc:// is ZMQ over a Unix socket (the node serves it with its own ZMTP: ZmtpBridgeTransportTest,
    # VllmBridgeShadowTest.driveModeOverIpc); the client is the same DEALER as for tcp://
    endpoint = "ipc://" + str(tmp_path / "node.ipc")
    node = ScriptedNode({"hello": {"protocol": 1},
                         "get_num_new_matched_tokens": {"num_tokens": 5, "load_async": False}}, endpoint=endpoint)
    try:
        bridge = NodeBridge(endpoint, timeout_ms=5000)
        try:
            assert bridge.call("hello", kv_role="kv_producer") == {"protocol": 1}
            assert bridge.call("get_num_new_matched_tokens", request_id="r-1", num_computed_tokens=0) == {
                "num_tokens": 5, "load_async": False}
            assert bridge.reconnected() is False  # its first connection, watched as over tcp://
        finally:
            bridge.close()
        s = scheduler(tmp_path, endpoint)
        assert s.driving
        req = producer_requests(1)[0]
        s.on_new_request(req)
        assert s.get_num_new_matched_tokens(req, 0) == (5, False)  # the node's answer, not the inner's
        s.shutdown()
        assert [h for h, _ in node.calls] == ["hello", "get_num_new_matched_tokens", "hello", "add_request",
                                              "get_num_new_matched_tokens"]
    finally:
        node.close()


def test_a_refusing_node_leaves_the_inners_answer_and_is_logged_once(tmp_path, caplog):
    node = ScriptedNode({"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
                         "request_finished": "node busy: the node's inbox is full (1 items)"})
    try:
        s = scheduler(tmp_path, node.port)
        w = scripted_worker()
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


def test_the_node_learns_the_steps_new_and_preempted_requests(tmp_path):
    """build_connector_meta carries scheduled_new_reqs (params as the request had them before the inner
    ran) and preempted_req_ids; an older vLLM whose scheduler output lacks them sends neither."""
    from vllm.v1.core.sched.output import CachedRequestData, NewRequestData, SchedulerOutput
    from types import SimpleNamespace
    meta = {"step": 1, "reqs_to_recv": {"n1": {"local_block_ids": [[4, 5]]}}, "reqs_to_save": {}, "reqs_to_send": [],
            "mapping_size": 0}
    node = ScriptedNode({"build_connector_meta": meta})
    try:
        s = scheduler(tmp_path, node.port)
        params = {"do_remote_prefill": True, "transfer_id": "tx-9", "remote_block_ids": [1, 2]}
        new = [NewRequestData("n1", [1, 2], SimpleNamespace(extra_args={"kv_transfer_params": params}), ([4, 5], [6]), 0),
               NewRequestData("n2", [3], SimpleNamespace(extra_args=None), ([7],), 16)]
        out = SchedulerOutput(scheduled_new_reqs=new,
                              scheduled_cached_reqs=CachedRequestData(req_ids=["c1"], new_block_ids=[([9],)]),
                              preempted_req_ids={"p2", "p1"})
        s.build_connector_meta(out)
        assert s.drive_metadata == meta  # the node's answer, kept for inspection
        old = SimpleNamespace(scheduled_cached_reqs=CachedRequestData())  # a vLLM without both fields
        s.build_connector_meta(old)
        s.shutdown()
        steps = [a for h, a in node.calls if h == "build_connector_meta"]
        assert steps[0] == {"step": 1, "cached_req_ids": ["c1"], "cached_new_block_ids": [[[9]]],
                            "scheduled_new_reqs": [
                                {"request_id": "n1", "block_ids": [[4, 5], [6]], "num_computed_tokens": 0,
                                 "kv_transfer_params": params},
                                {"request_id": "n2", "block_ids": [[7]], "num_computed_tokens": 16,
                                 "kv_transfer_params": None}],
                            "preempted_req_ids": ["p1", "p2"]}
        assert steps[1] == {"step": 2, "cached_req_ids": [], "cached_new_block_ids": []}
    finally:
        node.close()


def test_a_node_refusing_the_engines_install_leaves_drive_mode_off(tmp_path, caplog, monkeypatch):
    """hello names the install as the recording's header does; a node of another profile refuses it,
    and the engine runs on with the inner connector's answers."""
    import vllm
    monkeypatch.setattr(vllm, "__version__", "0.11.1.dev5+g239b5ff30.d20260518", raising=False)
    refusal = ("this node is not the caller's: the engine's vLLM 0.11.1.dev5+g239b5ff30.d20260518 (commit 239b5ff30) "
               "with ScriptedConnector is modelled by profile vllm-239b5ff30, this node runs newest "
               "(start it with --profile vllm-239b5ff30)")
    node = ScriptedNode({"hello": refusal})
    try:
        with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
            s = scheduler(tmp_path, node.port)
        assert not s.driving
        assert caplog.text.count("drive mode is off") == 1 and "start it with --profile vllm-239b5ff30" in caplog.text
        assert node.calls == [("hello", {"kv_role": "kv_producer", "mode": "write", "dp_rank": 0,
                                         "connector_role": "scheduler",
                                         "vllm_version": "0.11.1.dev5+g239b5ff30.d20260518", "vllm_commit": "239b5ff30",
                                         "inner_connector": "fakes.ScriptedConnector"})]
        req = producer_requests(1)[0]
        assert s.get_num_new_matched_tokens(req, 0) == (0, False)  # the inner's answer; the node is not asked
        assert len(node.calls) == 1
        s.shutdown()
    finally:
        node.close()


class HoldingNode(ScriptedNode):
    """Answers a call whose hook is in ``held`` only when the next call not in ``held`` arrives (then
    the held replies first, in order): a client that waited for one would time out."""

    def __init__(self, answers, held):
        self.held_hooks = set(held)
        self.holding = []
        super().__init__(answers)

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
            if req["hook"] in self.held_hooks:
                self.holding.append(msgpack.packb(reply))
                continue
            for r in self.holding:
                self.sock.send_multipart([ident, r])
            self.holding = []
            self.sock.send_multipart([ident, msgpack.packb(reply)])


UNAWAITED = ("add_request", "update_state_after_alloc", "build_connector_meta")


def test_the_hooks_whose_answer_vllm_ignores_are_not_awaited(tmp_path):
    """add_request, update_state_after_alloc and build_connector_meta go out without waiting, in vLLM's
    order with the awaited ones; their replies are read on the way to the next awaited answer."""
    meta = {"step": 1, "reqs_to_recv": {}, "reqs_to_save": {}, "reqs_to_send": [], "mapping_size": 0}
    node = HoldingNode({"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
                        "request_finished": {"delay_free": True, "kv_transfer_params": PARAMS},
                        "build_connector_meta": meta}, UNAWAITED)
    try:
        # a client waiting for a held reply would give up after 300 ms and count a fallback
        s = scheduler(tmp_path, node.port, drive_timeout_ms=300)
        w = scripted_worker()
        d = Driver(s, w)
        for r in producer_requests(3):
            d.add(r)
        d.run(6)
        assert s.drive_fallbacks == 0
        assert [df for _, df in d.finished] == [True, True, True]
        assert s._drive.sent > 0 and s._drive.failures == 0
        assert s.drive_metadata == meta  # the last step's answer (reading it reads what was sent before)
        assert s._drive.unread == 0
        hooks = [h for h, _ in node.calls]
        # vLLM's order: each request's admission before its query, its allocation after
        first = hooks.index("get_num_new_matched_tokens")
        assert hooks[1:first + 3] == ["add_request", "add_request", "add_request", "get_num_new_matched_tokens",
                                      "update_state_after_alloc", "get_num_new_matched_tokens"]
        assert hooks.count("build_connector_meta") == 6 and hooks.count("update_connector_output") == 6
        s.shutdown()
        w.shutdown()
    finally:
        node.close()


def test_a_refused_unawaited_call_is_counted_when_its_reply_is_read(tmp_path, caplog):
    node = ScriptedNode({"update_state_after_alloc": "node busy: the node's inbox is full (1 items)"})
    try:
        s = scheduler(tmp_path, node.port)
        req = producer_requests(1)[0]
        with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
            s.on_new_request(req)
            s.get_num_new_matched_tokens(req, 0)
            s.update_state_after_alloc(req, KVCacheBlocks([[1, 2]]), 0)
            s.update_state_after_alloc(req, KVCacheBlocks([[3]]), 0)
            s.shutdown()  # reads the last replies
        assert s.drive_fallbacks == 2
        assert caplog.text.count("drive mode: no answer from the node for update_state_after_alloc") == 1
        assert "node busy" in caplog.text
    finally:
        node.close()


def test_an_unawaited_call_never_answered_is_given_up_and_counted(tmp_path):
    node = HoldingNode({}, UNAWAITED)  # holds them for good: no awaited call follows
    try:
        s = scheduler(tmp_path, node.port)
        req = producer_requests(1)[0]
        s.on_new_request(req)
        assert s._drive.unread == 1
        assert s._drive.flush(100) == 1
        assert s.drive_fallbacks == 1 and s._drive.unread == 0
        s.shutdown()
    finally:
        node.close()


def test_without_pipelining_every_call_is_awaited_and_the_answers_are_the_same(tmp_path):
    answers = {"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
               "request_finished": {"delay_free": True, "kv_transfer_params": PARAMS},
               "update_connector_output": {"finished_sending": None}}
    seen = []
    for pipeline in (True, False):
        node = HoldingNode(answers, UNAWAITED if pipeline else ())
        try:
            (tmp_path / str(pipeline)).mkdir()
            s = scheduler(tmp_path / str(pipeline), node.port, drive_pipeline=pipeline)
            bridge = s._drive
            d = play_producer(s)
            assert s.drive_fallbacks == 0
            assert (bridge.sent > 0) == pipeline and bridge.unread == 0
            seen.append((d.finished, node.calls))
        finally:
            node.close()
    assert seen[0] == seen[1]


class BatchingNode(ScriptedNode):
    """A node that takes batches (its hello lists ``batch``): each call of one answered as if alone,
    the answers in one reply frame. ``calls`` lists every call, a batch's in order; ``frames`` counts
    the frames read."""

    def __init__(self, answers, compact=False, derived=False, steady=False, port=None, agreed=False, brief=False):
        answers = dict(answers)
        answers.setdefault("hello", {"protocol": 1, "hooks": ["add_request", "get_num_new_matched_tokens", "batch"]
                                     + (["compact"] if compact else []) + (["derived"] if derived else [])
                                     + (["steady"] if steady else []) + (["agreed"] if agreed else [])
                                     + (["brief"] if brief else [])})
        self.brief = brief
        self.brief_asked = 0  # batches asking for the brief form
        self.brief_left_out = 0  # build_connector_meta answers (metadata) it left out
        self.sessions = {}  # (steady) per connection (ROUTER identity): the last compact step read
        self.markers = 0  # compact build_connector_meta calls whose ids came as a step's number
        self.sparse = 0  # and whose new block ids came as {at, blocks}
        self.refused = []  # the reasons of the steady calls refused
        self.agreed = agreed
        self.left_out = 0  # answers an agreed-form reply left out: empty ones
        self.agreeing = 0  # and those equal to the call's acted
        self.agreeing_hooks = []
        self.acted_batched = 0  # calls carrying acted that came in a batch (not alone)
        self.mixed = 0
        self.listed = 0  # the answers agreed-form replies listed
        self.frames = 0
        self.raw = []  # the frames read, as their bytes
        self.derived_reqs = 0  # new requests of a compact build_connector_meta sent as [id, computed tokens]
        self.batches = []
        self.compact_calls = 0  # batched calls that came in the compact form (arrays)
        super().__init__(answers, port)

    def answer(self, req):
        if "refused" in req:  # a steady call that could not be read: refused as the node does
            self.refused.append(req["refused"])
            return {"v": 1, "id": req["id"], "ok": False, "error": "INVALID_VALUE: " + req["refused"]}
        self.calls.append((req["hook"], req.get("args") or {}))
        a = self.answers.get(req["hook"], {})
        if callable(a):
            a = a(req.get("args") or {})
        reply = {"v": 1, "id": req["id"], "ok": not isinstance(a, str)}
        reply["error" if isinstance(a, str) else "result"] = a
        return reply

    def run(self):
        while not self.stop.is_set():
            if not self.sock.poll(50):
                continue
            ident, frame = self.sock.recv_multipart()
            self.frames += 1
            self.raw.append(frame)
            req = msgpack.unpackb(frame)
            if req["hook"] == "batch":
                members = req["args"]["calls"]
                self.compact_calls += sum(isinstance(m, list) for m in members)
                compact = any(isinstance(m, list) for m in members)
                self.derived_reqs += sum(len(r) == 2 for m in members if isinstance(m, list)
                                         and m[1] == "build_connector_meta" and len(m) > 5 and m[5] for r in m[5])
                steps = [m for m in members if isinstance(m, list) and m[1] == "build_connector_meta"]
                self.markers += sum(type(m[3]) is int for m in steps)
                self.sparse += sum(type(m[4]) is dict for m in steps)
                members = long_forms(members, self.sessions.setdefault(ident, {}))
                self.acted_batched += sum(1 for m in members if "acted" in m.get("args", {}))
                self.batches.append([m["hook"] for m in members])
                replies = [self.answer(m) for m in members]
                if self.agreed and req["args"].get("agreed") is True:
                    # as the node answers a batch asking for the agreed form: each empty answer and each
                    # equal to its call's acted left out (and, asked for the brief form, the metadata)
                    brief = self.brief and req["args"].get("brief") is True
                    self.brief_asked += brief
                    kept = []
                    for m, r in zip(members, replies):
                        if brief and r.get("ok") and m["hook"] == "build_connector_meta":
                            self.brief_left_out += 1
                        elif r.get("ok") and r.get("result") == {} and "acted" not in m["args"]:
                            self.left_out += 1
                        elif r.get("ok") and agrees(m, r["result"]):
                            self.agreeing += 1
                            self.agreeing_hooks.append(m["hook"])
                        else:
                            kept.append(r)
                    self.listed += len(kept)
                    if len(kept) < len(members) and any("acted" in m["args"] and r in kept
                                                        for m, r in zip(members, replies)):
                        self.mixed += 1  # some left out, some carrying acted listed
                    replies = kept
                elif compact:  # as the node answers: an empty answer as the call's id alone
                    replies = [r["id"] if r.get("ok") and r.get("result") == {} else r for r in replies]
                reply = {"v": 1, "id": req["id"], "ok": True, "result": {"replies": replies}}
            else:
                reply = self.answer(req)
            self.sock.send_multipart([ident, msgpack.packb(reply)])


def test_a_node_that_takes_batches_gets_a_steps_unawaited_calls_in_one_frame(tmp_path):
    """The unawaited calls wait for the next awaited call (or the step's build_connector_meta) and go
    out with it as one batch; the node sees the same calls in the same order, and vLLM the same answers,
    as without pipelining."""
    answers = {"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
               "request_finished": {"delay_free": True, "kv_transfer_params": PARAMS},
               "update_connector_output": {"finished_sending": None},
               "update_state_after_alloc": "node busy: the node's inbox is full (1 items)"}
    seen = []
    for mode in ("batched", "awaited"):
        node = BatchingNode(answers)
        try:
            (tmp_path / mode).mkdir()
            s = scheduler(tmp_path / mode, node.port, drive_pipeline=mode == "batched")
            bridge = s._drive
            assert bridge.batching == (mode == "batched")
            d = play_producer(s)
            # the refused update_state_after_alloc calls count as fallbacks either way
            assert s.drive_fallbacks == 3 and bridge.unread == 0
            seen.append((d.acted, node.calls))
            if mode == "batched":
                # three admissions, then each query with what waited before it
                assert node.batches[0] == ["add_request", "add_request", "add_request", "get_num_new_matched_tokens"]
                assert node.batches[1] == ["update_state_after_alloc", "get_num_new_matched_tokens"]
                assert ["update_state_after_alloc", "build_connector_meta"] in node.batches
                assert node.frames < len(node.calls)
            else:
                assert node.batches == [] and node.frames == len(node.calls)
        finally:
            node.close()
    assert seen[0] == seen[1]


def scripted_worker():
    """A worker connector of the scripted MoRIIO-like inner (a producer's)."""
    return KvledgerRecorderConnector(make_config("kv_producer", {"inner_connector": "ScriptedConnector",
                                                                 "inner_connector_module_path": "fakes"}),
                                     KVConnectorRole.WORKER, None)


def play_producer(s, requests=3, steps=6):
    """``requests`` producer requests played for ``steps`` steps over the scheduler connector ``s``
    and a worker connector of the scripted MoRIIO-like inner, both shut down after; returns the driver."""
    w = scripted_worker()
    d = Driver(s, w)
    for r in producer_requests(requests):
        d.add(r)
    d.run(steps)
    s.shutdown()
    w.shutdown()
    return d


def run_three(tmp_path, node, name, max_batch=None, **more):
    """Three producer requests for 6 steps over ``node``; returns (scheduler, driver, bridge)."""
    (tmp_path / name).mkdir()
    s = scheduler(tmp_path / name, node.port, **more)
    bridge = s._drive
    if max_batch is not None:
        bridge.max_batch = max_batch
    d = play_producer(s)
    return s, d, bridge


def test_matched_tokens_from_the_inner_go_unawaited_in_the_steps_batch_and_are_checked(tmp_path):
    """drive_matched_from_inner: vLLM acts on the inner's get_num_new_matched_tokens at once; the node
    gets the same calls in the same order (so its decisions are the same), a step's calls travel in
    one batch at build_connector_meta, and the node's answers, read later, agree: no divergence."""
    answers = {"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},  # the inner's too
               "request_finished": {"delay_free": True, "kv_transfer_params": PARAMS},
               "update_connector_output": {"finished_sending": None}}
    seen = []
    for mode in ("from_inner", "awaited"):
        node = BatchingNode(answers)
        try:
            s, d, bridge = run_three(tmp_path, node, mode, drive_matched_from_inner=mode == "from_inner")
            assert s.drive_fallbacks == 0 and s.drive_divergences == 0 and bridge.unread == 0
            # the same calls; from the inner, each query carries the answer vLLM acted on
            seen.append((d.acted, without_acted(node.calls)))
            matched_alone = [h for h in node.calls if h[0] == "get_num_new_matched_tokens"]
            assert len(matched_alone) == 3
            assert [a.get("acted") for _, a in matched_alone] == (
                [{"num_tokens": 0, "load_async": False}] * 3 if mode == "from_inner" else [None] * 3)
            if mode == "from_inner":
                # the admitting step: three admissions, queries and allocations, and the step, one frame
                assert node.batches[0] == ["add_request"] * 3 + ["get_num_new_matched_tokens",
                                                                 "update_state_after_alloc"] * 3 + [
                    "build_connector_meta"]
                assert not any("get_num_new_matched_tokens" in b and b[-1] == "get_num_new_matched_tokens"
                               for b in node.batches)  # never a frame the client waited on
            else:
                assert node.batches[0][-1] == "get_num_new_matched_tokens"
        finally:
            node.close()
    assert seen[0] == seen[1]


def test_a_node_answering_otherwise_than_the_inner_is_a_counted_logged_divergence(tmp_path, caplog):
    node = BatchingNode({"get_num_new_matched_tokens": {"num_tokens": 7, "load_async": True},
                         "request_finished": {"delay_free": False, "kv_transfer_params": None}})
    try:
        with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
            s, d, _ = run_three(tmp_path, node, "diverging", drive_matched_from_inner="always")
        # vLLM acted on the inner's (0, False); every node answer read differs, none silently
        assert [a[2:] for a in d.acted if a[0] == "matched"] == [[0, False]] * 3
        assert s.drive_divergences == 3 and s.drive_fallbacks == 3
        assert s.drive_divergence_last == ("get_num_new_matched_tokens", (0, False), (7, True))
        assert caplog.text.count("DIVERGED on get_num_new_matched_tokens: vLLM acted on (0, False) without "
                                 "waiting, the node answers (7, True)") == 1
    finally:
        node.close()


def differing_once(tmp_path, name, matched, compact, differ):
    """Three producer requests admitted in one step, a fourth the step after, over a node that answers
    get_num_new_matched_tokens (16, False) for the requests in ``differ`` (the scripted inner answers
    (0, False) for each) and as the inner for the others. Between the steps the test reads
    ``drive_metadata``, which waits for every reply due (no timing). Returns (scheduler, driver, node,
    the late request's id, the matched calls as the node read them as (request id, acted or None), the
    batches closed by a matched call: those vLLM waited for)."""
    reqs = producer_requests(4)
    late = reqs[3].request_id
    ids = [r.request_id for r in reqs]
    differ = {ids[i] if i >= 0 else late for i in differ}
    node = BatchingNode({"get_num_new_matched_tokens": lambda a: {"num_tokens": 16 if a["request_id"] in differ else 0,
                                                                  "load_async": False},
                         "request_finished": {"delay_free": False, "kv_transfer_params": None}},
                        compact=compact, derived=compact, steady=compact, agreed=compact)
    try:
        (tmp_path / name).mkdir()
        s = scheduler(tmp_path / name, node.port, drive_matched_from_inner=matched)
        assert s.driving and (s._drive_sender is not None) == (compact and matched not in (False, "false"))
        w = scripted_worker()
        d = Driver(s, w)
        for r in reqs[:3]:
            d.add(r)
        d.step()
        assert s.drive_metadata is not None  # every reply due read (and checked)
        d.add(reqs[3])
        d.run(5)
        s.shutdown()
        w.shutdown()
    finally:
        node.close()
    matched = [(args["request_id"], args.get("acted")) for hook, args in node.calls
               if hook == "get_num_new_matched_tokens"]
    # the frames vLLM waited for a matched answer in: a batch closed by that call
    awaited = [b for b in node.batches if b[-1] == "get_num_new_matched_tokens"]
    return s, d, node, late, matched, awaited


INNER = {"num_tokens": 0, "load_async": False}


@pytest.mark.parametrize("compact", (False, True), ids=("long-form", "compact-sender-thread"))
def test_by_default_vllm_acts_on_the_inners_matched_tokens_unawaited_while_the_node_agrees(tmp_path, compact):
    s, d, node, late, matched, awaited = differing_once(tmp_path, "agreeing", DEFAULT, compact, differ=())
    # vLLM got the inner's answer for all four, none awaited, each call carrying it; nothing diverged
    assert [a[2:] for a in d.acted if a[0] == "matched"] == [[0, False]] * 4
    assert [acted for _, acted in matched] == [INNER] * 4 and awaited == []
    assert s.drive_divergences == 0 and s.drive_fallbacks == 0 and not s.drive_matched_awaited


@pytest.mark.parametrize("compact", (False, True), ids=("long-form", "compact-sender-thread"))
def test_from_the_first_matched_divergence_on_vllm_waits_for_the_nodes_answer(tmp_path, caplog, compact):
    """The node answers the first request otherwise than the inner: vLLM acted on the inner's answer
    (counted, logged, journaled by the node as acted); the next get_num_new_matched_tokens is awaited
    and vLLM acts on the node's answer, and so is every later one."""
    with caplog.at_level(logging.WARNING, logger="vllm.kvledger_vllm"):
        s, d, node, late, matched, awaited = differing_once(tmp_path, "diverging", DEFAULT, compact, differ=(0, -1))
    acted = [a[1:] for a in d.acted if a[0] == "matched"]
    assert [a[1:] for a in acted[:3]] == [[0, False]] * 3  # the admitting step: the inner's answers
    assert acted[3] == [late, 16, False]  # the node's: vLLM waited for it
    assert [a for _, a in matched] == [INNER] * 3 + [None]  # the late call carries no acted
    assert len(awaited) == 1 and s.drive_matched_awaited
    assert s.drive_divergences == 1 and s.drive_fallbacks == 1
    assert s.drive_divergence_last == ("get_num_new_matched_tokens", (0, False), (16, False))
    assert caplog.text.count("from now on vLLM waits for the node's answer") == 1


def test_a_divergence_the_sender_thread_handed_back_makes_the_next_query_awaited(tmp_path):
    """A divergence the sender thread read is handed to the scheduler thread (``later``); the next
    get_num_new_matched_tokens takes it before it captures: that call is awaited, vLLM gets the node's
    answer. (The hand-back is made here as the sender makes it, so it is there when the query comes.)"""
    reqs = producer_requests(4)
    late = reqs[3].request_id
    node = BatchingNode({"get_num_new_matched_tokens": lambda a: {"num_tokens": 16 if a["request_id"] == late else 0,
                                                                  "load_async": False}},
                        compact=True, derived=True, steady=True, agreed=True)
    try:
        s = scheduler(tmp_path, node.port, drive_matched_from_inner=DEFAULT)
        assert s._drive_sender is not None and not s.drive_matched_awaited
        w = scripted_worker()
        d = Driver(s, w)
        for r in reqs[:3]:
            d.add(r)
        d.step()
        s._drive.later(s._drive_diverged, "get_num_new_matched_tokens", (0, False), (16, False))
        d.add(reqs[3])
        d.run(3)
        s.shutdown()
        w.shutdown()
    finally:
        node.close()
    assert [a[1:] for a in d.acted if a[0] == "matched"][3] == [late, 16, False]
    assert s.drive_divergences == 1 and s.drive_matched_awaited
    assert [b for b in node.batches if b[-1] == "get_num_new_matched_tokens"] != []
    assert [a.get("acted") for h, a in node.calls if h == "get_num_new_matched_tokens"] == [INNER] * 3 + [None]


@pytest.mark.parametrize("compact", (False, True), ids=("long-form", "compact-sender-thread"))
def test_matched_from_inner_always_never_switches_and_false_awaits_from_the_start(tmp_path, compact):
    s, d, node, late, matched, awaited = differing_once(tmp_path, "always", "always", compact, differ=(0, -1))
    assert [a[2:] for a in d.acted if a[0] == "matched"] == [[0, False]] * 4
    assert [a for _, a in matched] == [INNER] * 4 and awaited == []
    assert s.drive_divergences == 2 and not s.drive_matched_awaited
    for spelled in (False, "false"):
        s, d, node, late, matched, awaited = differing_once(tmp_path, f"awaited-{spelled}", spelled, compact,
                                                            differ=(0, -1))
        assert [a[2:] for a in d.acted if a[0] == "matched"] == [[16, False], [0, False], [0, False], [16, False]]
        assert [a for _, a in matched] == [None] * 4 and len(awaited) == 4
        assert s.drive_divergences == 0 and s.drive_matched_awaited
    # a true flag as a config spells it is the default
    s, d, node, late, matched, awaited = differing_once(tmp_path, "true", "true", compact, differ=(0, -1))
    assert s.drive_divergences == 1 and s.drive_matched_awaited and len(awaited) == 1


def test_an_empty_update_connector_output_is_awaited_only_while_a_deferred_free_is_pending(tmp_path):
    """A producer's update_connector_output without finished ids is not awaited while the node holds no
    deferred free (its answer can only be "none"); after a request_finished the node answered
    delay_free=True it is awaited until the node surfaces that request; an answer read later that is
    not "none" is a divergence."""
    from vllm.v1.outputs import KVConnectorOutput
    from vllm.v1.request import RequestStatus
    node = HoldingNode({"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
                        "request_finished": {"delay_free": True, "kv_transfer_params": PARAMS},
                        "update_connector_output": {"finished_sending": None}}, ("update_connector_output",))
    try:
        # a held reply the client waited for would time out (a fallback)
        s = scheduler(tmp_path, node.port, drive_timeout_ms=300)
        s.update_connector_output(KVConnectorOutput())
        assert s.drive_fallbacks == 0 and s._drive.unread == 1  # sent, not awaited
        req = producer_requests(1)[0]
        s.on_new_request(req)
        s.get_num_new_matched_tokens(req, 0)  # an awaited call: the held reply comes before its own
        assert s._drive.unread == 0
        req.status = RequestStatus.FINISHED_LENGTH_CAPPED
        assert s.request_finished(req, [1, 2]) == (True, PARAMS)
        s.update_connector_output(KVConnectorOutput())
        assert s.drive_fallbacks == 1  # now awaited: the held reply never came in time
        node.held_hooks.clear()
        node.answers["update_connector_output"] = {"finished_sending": [req.request_id]}
        out = KVConnectorOutput(finished_sending=set())
        s.update_connector_output(out)
        assert out.finished_sending == {req.request_id}
        # one failed awaited answer: the client no longer knows what the node defers, so it keeps waiting
        assert not s._drive_deferred_known
        s.shutdown()
    finally:
        node.close()
    node = ScriptedNode({"update_connector_output": {"finished_sending": ["r-x"]}})
    try:
        s = scheduler(tmp_path, node.port)
        out = KVConnectorOutput()
        s.update_connector_output(out)
        assert not out.finished_sending  # not awaited: vLLM kept its own (nothing)
        s.shutdown()
        assert s.drive_divergences == 1 and s.drive_fallbacks == 1
        s2 = scheduler(tmp_path, node.port)
        req = producer_requests(1)[0]
        s2.on_new_request(req)
        req.status = RequestStatus.FINISHED_LENGTH_CAPPED
        node.answers["request_finished"] = {"delay_free": True, "kv_transfer_params": PARAMS}
        s2.request_finished(req, [1, 2])
        out = KVConnectorOutput()
        s2.update_connector_output(out)
        assert out.finished_sending == {"r-x"}  # awaited: the node's rewrite
        assert s2._drive_deferred == {req.request_id}  # r-x is not it: still pending
        s2.shutdown()
        assert s2.drive_divergences == 0
    finally:
        node.close()


def test_an_idle_step_sends_no_frame_and_a_long_batch_is_cut(tmp_path):
    """A producer's idle step (nothing scheduled, nothing finished, nothing deferred) tells the node
    nothing new: its build_connector_meta and update_connector_output wait, in order, for the next
    frame (no frame, no awaited call); a step that schedules something, or one after a call that is
    not quiet, sends what waits; a buffer of max_batch calls goes out without waiting for the step's end."""
    from vllm.v1.core.sched.output import SchedulerOutput
    from vllm.v1.outputs import KVConnectorOutput
    node = BatchingNode({"update_connector_output": {"finished_sending": None},
                         "get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
                         "build_connector_meta": {"step": 1}})
    try:
        s = scheduler(tmp_path, node.port, drive_matched_from_inner="always")
        bridge = s._drive
        for _ in range(3):
            s.build_connector_meta(SchedulerOutput())
            s.update_connector_output(KVConnectorOutput())
        assert bridge.calls == 1 and bridge.unread == 6  # the hello only: nothing awaited, nothing sent
        req = producer_requests(1)[0]
        s.on_new_request(req)  # not quiet: the next step's end sends it, an empty step too
        s.build_connector_meta(SchedulerOutput())
        s.update_connector_output(KVConnectorOutput())
        s.build_connector_meta(SchedulerOutput())  # quiet again: waits
        s.shutdown()  # reads every reply, and sends what waits first
        idle = ["build_connector_meta", "update_connector_output"]
        assert [h for h, _ in node.calls] == ["hello"] + idle * 3 + ["add_request"] + idle + ["build_connector_meta"]
        assert [a["step"] for h, a in node.calls if h == "build_connector_meta"] == [1, 2, 3, 4, 5]
        # hello, the three idle steps with the admission and the next step, the rest at the end
        assert node.batches == [idle * 3 + ["add_request", "build_connector_meta"],
                                ["update_connector_output", "build_connector_meta"]]
        assert node.frames == 3 and s.drive_fallbacks == 0 and s.drive_divergences == 0
        # quiet calls wait at most max_hold_ns: at 0, each step's end sends what waits, as before
        s = scheduler(tmp_path, node.port, drive_matched_from_inner="always")
        s._drive.max_hold_ns = 0
        before, calls = len(node.batches), len(node.calls)
        for _ in range(3):
            s.build_connector_meta(SchedulerOutput())
            s.update_connector_output(KVConnectorOutput())
        s.shutdown()
        # (the last output, which waited unpacked, goes at the shutdown as a call of its own)
        assert node.batches[before:] == [["update_connector_output", "build_connector_meta"]] * 2
        assert [h for h, _ in node.calls[calls:]] == ["build_connector_meta"] + [
            "update_connector_output", "build_connector_meta"] * 2 + ["update_connector_output"]
        s = scheduler(tmp_path, node.port, drive_matched_from_inner="always")
        s._drive.max_batch = 5
        reqs = producer_requests(3)
        before = node.frames
        for r in reqs:
            s.on_new_request(r)
            s.get_num_new_matched_tokens(r, 0)
        s._drive.flush(2000)
        # five calls went out as one batch as soon as they were five; the sixth alone at the flush
        assert node.frames - before == 2 and node.batches[-1] == ["add_request", "get_num_new_matched_tokens"] * 2 + [
            "add_request"]
        s.shutdown()
        assert s.drive_fallbacks == 0
    finally:
        node.close()


def without_acted(calls):
    """The node's calls with the ``acted`` argument left out (what the node applies is the same)."""
    return [(h, {k: v for k, v in a.items() if k != "acted"}) for h, a in calls]


class InnerLikeNode(BatchingNode):
    """A node whose request_finished answers are what the scripted MoRIIO-like connector answers for
    the driver's producer requests (delay_free with their blocks, its params for a length-capped
    finish): an agreeing node."""

    def __init__(self, answers, compact=False, derived=False, agreed=False, steady=False, brief=False):
        self.tids = {}
        self.deferred = set()
        answers = dict(answers)
        answers["add_request"] = self.admit
        answers["request_finished"] = self.finish
        answers["update_connector_output"] = self.output
        super().__init__(answers, compact, derived, steady=steady, agreed=agreed, brief=brief)

    def output(self, args):
        # as the connector: the ACKs of deferred frees surface (None when there are none)
        safe = sorted(set(args.get("finished_sending") or ()) & self.deferred)
        self.deferred.difference_update(safe)
        return {"finished_sending": safe or None}

    def admit(self, args):
        self.tids[args["request_id"]] = (args.get("kv_transfer_params") or {}).get("transfer_id")
        return {}

    def finish(self, args):
        if args["status"] != "FINISHED_LENGTH_CAPPED":
            return {"delay_free": False, "kv_transfer_params": None}
        if any(args["block_ids"]):
            self.deferred.add(args["request_id"])
        return {"delay_free": any(args["block_ids"]), "kv_transfer_params": {
            "do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": args["block_ids"],
            "remote_engine_id": "10.0.0.1:6301", "remote_host": "10.0.0.1", "remote_handshake_port": "6301",
            "remote_notify_port": "61005", "remote_dp_rank": 0, "remote_dp_rank_override": True,
            "remote_dp_size": 1, "remote_dp_size_local": 1, "tp_size": 1,
            "transfer_id": self.tids[args["request_id"]]}}


def test_finishes_from_the_inner_go_unawaited_and_agreeing_answers_give_the_same_calls(tmp_path):
    """drive_finished_from_inner: vLLM acts on the inner's request_finished at once; the node gets the
    same calls in the same order as when vLLM waits for each answer (each carrying the answer acted on),
    no request_finished is ever a call the client waited on, and agreeing answers count nothing."""
    answers = {"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
               "update_connector_output": {"finished_sending": None}}
    seen = []
    for mode in ("from_inner", "awaited"):
        node = InnerLikeNode(answers)
        try:
            inner = mode == "from_inner"
            s, d, bridge = run_three(tmp_path, node, mode, drive_matched_from_inner=inner,
                                     drive_finished_from_inner=inner)
            assert s.drive_fallbacks == 0 and s.drive_divergences == 0 and bridge.unread == 0
            finished = [a for h, a in node.calls if h == "request_finished"]
            assert len(finished) == 3
            seen.append((d.acted, without_acted(node.calls)))
            if inner:
                # every finish carried the answer vLLM acted on: the inner's
                acted = {a["request_id"]: a["acted"] for a in finished}
                assert [acted[x[1]] for x in d.acted if x[0] == "finished"] == [
                    {"delay_free": x[2], "kv_transfer_params": x[3]} for x in d.acted if x[0] == "finished"]
                assert all(a["acted"]["delay_free"] is True for a in finished)
                assert not any(b[-1] == "request_finished" for b in node.batches)  # never awaited
                # nor an update_connector_output (drive_freed_from_inner, on with it): nothing was awaited
                assert bridge.calls == 1  # the hello
                outputs = [a for h, a in node.calls if h == "update_connector_output"]
                assert [o["acted"]["finished_sending"] for o in outputs] == [x[1] or None for x in d.acted
                                                                            if x[0] == "freed"]
                assert any(o["acted"]["finished_sending"] for o in outputs)
                assert not s._drive_deferred  # the node surfaced each
                assert not s._drive_finish_unread
            else:
                assert all("acted" not in a for a in finished)
        finally:
            node.close()
    assert seen[0] == seen[1]


def test_a_node_finishing_otherwise_than_the_inner_is_a_counted_logged_divergence(tmp_path, caplog):
    """The node answers delay_free=False where the inner (vLLM) deferred: each is a divergence, counted
    and logged once; the record of what the node defers follows the node, not the inner."""
    node = BatchingNode({"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
                         "request_finished": {"delay_free": False, "kv_transfer_params": None},
                         "update_connector_output": {"finished_sending": None}})
    try:
        with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
            # (drive_freed_from_inner off: the inner's frees of those deferrals would diverge too)
            s, d, _ = run_three(tmp_path, node, "diverging", drive_finished_from_inner="always",
                                drive_freed_from_inner=False)
        finished = [x for x in d.acted if x[0] == "finished"]
        assert [x[2] for x in finished] == [True] * 3  # vLLM acted on the inner's deferrals
        assert s.drive_divergences == 3 and s.drive_fallbacks == 3
        hook, acted, answered = s.drive_divergence_last
        assert hook == "request_finished" and acted[0] is True and answered == (False, None)
        assert acted[1]["transfer_id"] == finished[-1][3]["transfer_id"]
        assert caplog.text.count("DIVERGED on request_finished: vLLM acted on (True, {") == 1
        assert caplog.text.count("the node answers (False, None)") == 1
        assert not s._drive_deferred and not s._drive_finish_unread
    finally:
        node.close()


def test_the_empty_output_shortcut_waits_for_a_finish_the_node_may_still_defer(tmp_path):
    """With drive_finished_from_inner, a producer's request_finished vLLM acted on as delay_free=False
    whose node answer is not read yet leaves the node free to have deferred it: the next empty
    update_connector_output is awaited (and so reads that answer); once it is read and says False,
    the shortcut holds again. A refused request_finished makes the client wait from then on."""
    from vllm.v1.outputs import KVConnectorOutput
    from vllm.v1.request import RequestStatus
    node = BatchingNode({"request_finished": {"delay_free": False, "kv_transfer_params": None},
                         "update_connector_output": {"finished_sending": None}})
    try:
        s = scheduler(tmp_path, node.port, drive_finished_from_inner="always", drive_freed_from_inner=False)
        req = producer_requests(1)[0]
        s.on_new_request(req)
        req.status = RequestStatus.FINISHED_ABORTED  # the inner frees it now
        assert s.request_finished(req, [1, 2]) == (False, None)
        assert s._drive_finish_unread == {req.request_id} and s._drive.calls == 1  # hello only
        s.update_connector_output(KVConnectorOutput())
        assert s._drive.calls == 2 and not s._drive_finish_unread  # awaited: the answer is read
        s.update_connector_output(KVConnectorOutput())
        assert s._drive.calls == 2  # the shortcut again
        node.answers["request_finished"] = "node busy: the node's inbox is full (1 items)"
        req2 = producer_requests(2)[1]
        s.on_new_request(req2)
        req2.status = RequestStatus.FINISHED_ABORTED
        s.request_finished(req2, [3])
        s._drive.flush(2000)
        assert s.drive_fallbacks == 1 and not s._drive_deferred_known
        s.update_connector_output(KVConnectorOutput())
        assert s._drive.calls == 3  # awaited from now on
        s.shutdown()
        assert s.drive_divergences == 0
    finally:
        node.close()


def test_freed_from_the_inner_is_never_awaited_and_a_node_rewriting_otherwise_is_a_counted_divergence(
        tmp_path, caplog):
    """drive_freed_from_inner (on with drive_finished_from_inner): after finishes vLLM keeps the inner's
    rewrite of finished_sending at once; the update_connector_output call goes to the node unawaited
    (a reply the node holds back would time out an awaited call), carrying that set as acted; a node
    rewrite with other requests (as a set: order does not matter) is counted and logged once."""
    from vllm.v1.outputs import KVConnectorOutput
    from vllm.v1.request import RequestStatus
    reqs = producer_requests(2)
    ids = sorted(r.request_id for r in reqs)
    node = HoldingNode({"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
                        "request_finished": {"delay_free": True, "kv_transfer_params": PARAMS},
                        "update_connector_output": {"finished_sending": list(reversed(ids))}},
                       ("update_connector_output", "request_finished", "add_request"))
    try:
        with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
            # ("always": the scripted params differ from the inner's, and the default would switch)
            s = scheduler(tmp_path, node.port, drive_timeout_ms=300, drive_finished_from_inner="always",
                          drive_batch=False)
            assert s._drive_freed_from_inner

            def freed_divergences():  # (the scripted request_finished params differ from the inner's)
                return s._errors.get("drive divergence update_connector_output", 0)
            for r in reqs:
                s.on_new_request(r)
                r.status = RequestStatus.FINISHED_LENGTH_CAPPED
                assert s.request_finished(r, [1, 2])[0] is True  # the inner's: it defers
            out = KVConnectorOutput(finished_sending=set(ids + ["cmpl-unknown"]))
            s.update_connector_output(out)
            assert out.finished_sending == set(ids)  # the inner's rewrite, at once
            assert s._drive.calls == 1 and s.drive_fallbacks == 0  # the hello only: nothing awaited
            # the node surfaces the same two (in another order): agreeing
            s.get_num_new_matched_tokens(producer_requests(3)[2], 0)  # awaited: reads the held replies
            assert freed_divergences() == 0 and not s._drive_deferred
            sent = [a for h, a in node.calls if h == "update_connector_output"]
            assert sent == [{"finished_sending": ids + ["cmpl-unknown"], "finished_recving": None,
                             "acted": {"finished_sending": ids}}]
            # the inner surfaces nothing more; the node frees both again: one divergence, both named
            out = KVConnectorOutput(finished_sending=set(ids))
            s.update_connector_output(out)
            assert not out.finished_sending
            s.get_num_new_matched_tokens(producer_requests(3)[2], 0)  # reads the held reply
            s.shutdown()
        assert node.calls[-2] == ("update_connector_output", {"finished_sending": ids, "finished_recving": None,
                                                             "acted": {"finished_sending": None}})
        assert freed_divergences() == 1 and s.drive_divergences == 3 and s.drive_fallbacks == 3
        assert s.drive_divergence_last == ("update_connector_output", None, ids)
        assert caplog.text.count("DIVERGED on update_connector_output: vLLM acted on None without waiting, "
                                 f"the node answers {ids!r}") == 1
    finally:
        node.close()


def test_an_idle_step_with_a_deferred_free_pending_is_not_held(tmp_path):
    """With drive_freed_from_inner, an idle step's update_connector_output waits for a later frame only
    while no deferred free is pending: the node stamps a call when it reads it, and a held call's later
    stamp could pass a deferral's deadline the inner had not reached. So with one pending each idle
    step goes out at its end; once none is pending they wait again."""
    from vllm.v1.core.sched.output import SchedulerOutput
    from vllm.v1.outputs import KVConnectorOutput
    from vllm.v1.request import RequestStatus
    node = BatchingNode({"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
                         "request_finished": {"delay_free": True, "kv_transfer_params": PARAMS},
                         "update_connector_output": {"finished_sending": None},
                         "build_connector_meta": {"step": 1}})
    try:
        s = scheduler(tmp_path, node.port, drive_finished_from_inner="always")  # (the params differ)
        assert s._drive_freed_from_inner
        req = producer_requests(1)[0]
        s.on_new_request(req)
        req.status = RequestStatus.FINISHED_LENGTH_CAPPED
        assert s.request_finished(req, [1, 2])[0] is True  # the inner's: it defers
        s.build_connector_meta(SchedulerOutput())  # the finish goes out with this step
        assert s._drive_inner_deferred == {req.request_id}
        for _ in range(2):  # pending: each idle step goes out at its end
            s.update_connector_output(KVConnectorOutput())
            s.build_connector_meta(SchedulerOutput())
        out = KVConnectorOutput(finished_sending={req.request_id})
        s.update_connector_output(out)  # its ACK: the inner frees it (not quiet: an id came)
        assert out.finished_sending == {req.request_id} and not s._drive_inner_deferred
        s.build_connector_meta(SchedulerOutput())
        for _ in range(2):  # none pending: they wait
            s.update_connector_output(KVConnectorOutput())
            s.build_connector_meta(SchedulerOutput())
        s.shutdown()
        idle = ["update_connector_output", "build_connector_meta"]
        # (the ACK's output went out at once, alone; the steps after it waited for the shutdown)
        assert [h for h, _ in node.calls].count("update_connector_output") == 5
        assert node.batches == [["add_request", "request_finished", "build_connector_meta"], idle, idle,
                                ["build_connector_meta"] + idle * 2]
    finally:
        node.close()


def test_freed_from_inner_follows_finished_from_inner_and_can_be_turned_off(tmp_path):
    """drive_freed_from_inner is on exactly when drive_finished_from_inner is, unless set false; alone it
    does nothing (vLLM would free by the inner's deferrals while deferring by the node's)."""
    node = ScriptedNode({})
    try:
        for more, on in (({}, False), ({"drive_finished_from_inner": True}, True),
                         ({"drive_finished_from_inner": DEFAULT}, True),
                         ({"drive_finished_from_inner": "always"}, True),
                         ({"drive_finished_from_inner": True, "drive_freed_from_inner": "false"}, False),
                         ({"drive_freed_from_inner": True}, False)):
            s = scheduler(tmp_path, node.port, **more)
            assert s._drive is not None and s._drive_freed_from_inner is on, more
            s.shutdown()
    finally:
        node.close()


class FinishingOnceNode(InnerLikeNode):
    """An agreeing node but for the requests in ``differ``: it answers their request_finished
    delay_free=False (where the inner defers them), and for ``late``: it surfaces their ACKs one
    update_connector_output after the inner does."""

    def __init__(self, differ=(), late=(), **kw):
        super().__init__({"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False}}, **kw)
        self.differ, self.late, self.held = set(differ), set(late), set()

    def finish(self, args):
        if args["request_id"] in self.differ:
            return {"delay_free": False, "kv_transfer_params": None}
        return super().finish(args)

    def output(self, args):
        held, self.held = self.held, set()
        safe = set(super().output(args)["finished_sending"] or ())
        self.held = safe & self.late
        self.late -= self.held
        safe = (safe - self.held) | held
        return {"finished_sending": sorted(safe) or None}


def finishing_once(tmp_path, name, finished, compact, differ=(), late=(), gap=1, before=None):
    """Four producer requests over a ``FinishingOnceNode`` (``differ``, ``late``: indexes, -1 the fourth),
    the inner deferring each: three admitted at once, the fourth ``gap`` steps later, so that it
    finishes that many steps after them. Before each step the test reads ``drive_metadata`` (every
    reply due read and checked: no timing). Returns (scheduler, driver, node, request ids, the
    request_finished calls as the node read them as (request id, acted or None), every request vLLM
    freed in order, the hooks of the calls vLLM waited for). ``before(scheduler, step)`` runs before each
    step (counted from 0) after the replies are read."""
    reqs = producer_requests(4)
    ids = [r.request_id for r in reqs]
    node = FinishingOnceNode({ids[i] for i in differ}, {ids[i] for i in late}, compact=compact, derived=compact,
                             steady=compact, agreed=compact)
    try:
        (tmp_path / name).mkdir()
        s = scheduler(tmp_path / name, node.port, drive_matched_from_inner=DEFAULT, drive_finished_from_inner=finished)
        assert s.driving and (s._drive_sender is not None) == compact
        awaited, call = [], s._drive.call
        s._drive.call = lambda hook, **args: (awaited.append(hook), call(hook, **args))[1]
        w = scripted_worker()
        d = Driver(s, w)
        steps = itertools.count()
        d.before_step = lambda: (s.drive_metadata, before and before(s, next(steps)))
        for r in reqs[:3]:
            d.add(r)
        d.run(gap)
        d.add(reqs[3])
        d.run(8)
        s.shutdown()
        w.shutdown()
    finally:
        node.close()
    finished = [(a["request_id"], a.get("acted")) for h, a in node.calls if h == "request_finished"]
    freed = [rid for x in d.acted if x[0] == "freed" for rid in x[1]]
    return s, d, node, ids, finished, freed, awaited


def acted_finishes(d):
    return {x[1]: x[2] for x in d.acted if x[0] == "finished"}


@pytest.mark.parametrize("compact", (False, True), ids=("long-form", "compact-sender-thread"))
def test_by_default_vllm_acts_on_the_inners_finishes_and_frees_unawaited_while_the_node_agrees(tmp_path, compact):
    s, d, node, ids, finished, freed, awaited = finishing_once(tmp_path, "agreeing", DEFAULT, compact)
    assert acted_finishes(d) == dict.fromkeys(ids, True)  # the inner's: each deferred
    assert [rid for rid, _ in finished] == ids and all(a is not None for _, a in finished)  # each carries it
    assert awaited == [] and [h for h, _ in node.calls if h == "update_connector_output"]  # none awaited
    assert sorted(freed) == sorted(ids)  # each freed once
    assert s.drive_divergences == 0 and not s.drive_finished_awaited and s._drive_freed_from_inner


@pytest.mark.parametrize("compact", (False, True), ids=("long-form", "compact-sender-thread"))
def test_from_the_first_finish_divergence_on_vllm_waits_for_the_nodes_finishes_and_frees(tmp_path, caplog, compact):
    """The node answers the first request's finish delay_free=False where the inner defers it: vLLM
    acted on the inner's (counted, logged once, journaled as acted); the fourth request, finishing
    after that answer was read, is awaited and vLLM acts on the node's answer (False: freed at once,
    though the inner defers it). Each request vLLM deferred is freed once: the first three by the
    inner's rewrite (it deferred them), the node's surfacing of the two it deferred too left out."""
    with caplog.at_level(logging.WARNING, logger="vllm.kvledger_vllm"):
        s, d, node, ids, finished, freed, awaited = finishing_once(tmp_path, "diverging", DEFAULT, compact, differ=(0, -1))
    assert acted_finishes(d) == {ids[0]: True, ids[1]: True, ids[2]: True, ids[3]: False}
    assert [rid for rid, _ in finished] == ids
    assert [a is not None for _, a in finished] == [True, True, True, False]  # the late call carries no acted
    assert awaited.count("request_finished") == 1 and "update_connector_output" in awaited
    assert sorted(freed) == sorted(ids[:3])  # once each; never the fourth (vLLM freed it at once)
    assert s.drive_finished_awaited and not s._drive_finished_from_inner and not s._drive_freed_from_inner
    assert not s.drive_matched_awaited  # the queries' switch is their own
    assert s.drive_divergences == 1 and s.drive_fallbacks == 1
    hook, acted, answered = s.drive_divergence_last
    assert hook == "request_finished" and acted[0] is True and answered == (False, None)
    assert caplog.text.count("waits for the node's answer to request_finished and update_connector_output") == 1
    assert not s._drive_inner_deferred and not s._drive_legacy  # nothing left pending


@pytest.mark.parametrize("compact", (False, True), ids=("long-form", "compact-sender-thread"))
def test_a_freed_divergence_switches_the_finishes_too_and_a_free_the_inner_ended_is_not_repeated(
        tmp_path, caplog, compact):
    """The node agrees on every finish but surfaces the first request's ACK one call after the inner
    freed it: a divergence of the frees (vLLM kept the inner's rewrite), which switches the finishes
    and the frees to the node's answers. The node's late surfacing of that request is left out: vLLM
    freed it already. The fourth request's finish is awaited."""
    with caplog.at_level(logging.WARNING, logger="vllm.kvledger_vllm"):
        s, d, node, ids, finished, freed, awaited = finishing_once(tmp_path, "late", DEFAULT, compact, late=(0,),
                                                                   gap=2)
    assert acted_finishes(d) == dict.fromkeys(ids, True)
    assert [a is not None for _, a in finished] == [True, True, True, False]
    assert awaited.count("request_finished") == 1
    assert sorted(freed) == sorted(ids)  # each once
    assert s.drive_divergence_last[0] == "update_connector_output" and s.drive_divergences == 1
    assert s.drive_finished_awaited and not s._drive_freed_from_inner
    assert caplog.text.count("waits for the node's answer to request_finished and update_connector_output") == 1
    assert not s._drive_inner_deferred and not s._drive_legacy


def test_a_finish_divergence_the_sender_thread_handed_back_makes_the_next_finish_awaited(tmp_path):
    """A divergence the sender thread read is handed to the scheduler thread (``later``); the next
    request_finished takes it before it decides: that call is awaited. (The hand-back is made here as
    the sender makes it, after the three finishes, so it is there when the fourth comes.) The frees:
    the three by the inner's rewrite, the fourth by the node's, each once."""
    def hand_back(s, step):
        if step == 3:  # the three finished in the step before
            s._drive.later(s._drive_diverged, "request_finished", (True, None), (False, None))
    s, d, node, ids, finished, freed, awaited = finishing_once(tmp_path, "handed-back", DEFAULT, True, before=hand_back)
    assert [a is not None for _, a in finished] == [True, True, True, False]
    assert awaited.count("request_finished") == 1 and s.drive_finished_awaited
    assert acted_finishes(d) == dict.fromkeys(ids, True) and sorted(freed) == sorted(ids)
    assert s.drive_divergences == 1 and not s._drive_inner_deferred and not s._drive_legacy


@pytest.mark.parametrize("compact", (False, True), ids=("long-form", "compact-sender-thread"))
def test_finished_from_inner_always_never_switches_and_false_awaits_from_the_start(tmp_path, compact):
    s, d, node, ids, finished, freed, awaited = finishing_once(tmp_path, "always", "always", compact, differ=(0, -1))
    assert acted_finishes(d) == dict.fromkeys(ids, True)
    assert all(a is not None for _, a in finished) and awaited == []
    assert sorted(freed) == sorted(ids)
    # two finishes, and the frees of those two by the inner's rewrite (the node never surfaces them)
    assert s.drive_divergences == 4 and not s.drive_finished_awaited and s._drive_freed_from_inner
    for spelled in (False, "false"):
        s, d, node, ids, finished, freed, awaited = finishing_once(tmp_path, f"awaited-{spelled}", spelled, compact,
                                                          differ=(0, -1))
        assert acted_finishes(d) == {ids[0]: False, ids[1]: True, ids[2]: True, ids[3]: False}  # the node's
        assert all(a is None for _, a in finished)
        assert awaited.count("request_finished") == 4
        assert sorted(freed) == sorted(ids[1:3])
        assert s.drive_divergences == 0 and s.drive_finished_awaited and not s._drive_freed_from_inner
    # a true flag as a config spells it is the default
    s, d, node, ids, finished, freed, awaited = finishing_once(tmp_path, "true", "true", compact, differ=(0, -1))
    assert s.drive_divergences == 1 and s.drive_finished_awaited and sorted(freed) == sorted(ids[:3])


class RowsBridge:
    """A bridge that keeps the compact rows the hooks hand it (hook, row), packed as they would be."""

    derived = True

    def __init__(self):
        self.rows, self.admitted, self.allocated = [], {}, {}

    def send_row(self, hook, row, on_result=None, flush=False, quiet=False):
        self.rows.append(msgpack.packb([hook, *row]))

    def add_row(self, entry, *row):
        assert entry[1] is None
        self.rows.append(msgpack.packb([entry[0], *row]))

    def send_args(self, hook, args, on_result=None, flush=False, quiet=False):
        self.rows.append(("long", hook, args))


@pytest.mark.parametrize("record", (False, True))
def test_the_per_request_hooks_fast_paths_build_the_rows_the_general_path_builds(tmp_path, record):
    """on_new_request, get_num_new_matched_tokens and update_state_after_alloc take vLLM's own types
    as they are; anything else (an id that is not a str, params a tuple or bytes or non-str keys can
    not be packed as they are, a prompt length that is not an int, an answer that is a list or holds
    a bool for a count, block ids that are tuples or bools) gives the row the conversions give: the
    same bytes as _admission, _params_packable, _blocks_packable and int()/bool() make. Recording
    too, the allocation's block ids taken once."""
    from types import SimpleNamespace

    from kvledger_vllm import recorder
    from vllm.v1.request import Request

    class Odd(Request):
        pass

    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"}
    if record:
        extra["record_to"] = str(tmp_path / "{role}.jsonl")
    s = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    bridge = s._drive = RowsBridge()
    s._drive_compact = s._drive_from_inner = s._drive_pipeline = True
    answers = iter([(0, False), [3, 1], (True, False), (None, False), (2, True), (0, 0), (1, False), (0, False)])
    s._inner.get_num_new_matched_tokens = lambda request, n: next(answers)
    reqs = [Request("a", range(4), {"do_remote_decode": True, "transfer_id": "t", "n": None, "f": 1.5}),
            Request("b", range(3)),
            Request("c", range(2), {"t": (1, 2), 3: "k"}),
            Request("d", range(2), {"b": b"\x00"}),
            Request("e", range(5), {"x": {"y": 1}})]
    e = Odd("e2", range(5), {"x": 1})
    e.request_id = 7  # not a str: str() of it
    g = Request("g", range(6))
    g.num_prompt_tokens = True  # not an int: the ids' length
    f = SimpleNamespace(request_id="f", kv_transfer_params=None)  # no ids, no prompt length
    reqs += [e, f, g]
    blocks = [KVCacheBlocks([[1, 2]]), KVCacheBlocks([[3], [4, 5]]), None, SimpleNamespace(get_block_ids=lambda: [6, 7]),
              SimpleNamespace(get_block_ids=lambda: ((8, 9),)), SimpleNamespace(get_block_ids=lambda: ([True, 2],)),
              KVCacheBlocks([[]]), KVCacheBlocks([[10]])]
    expected = []
    answers_seen = iter([(0, False), [3, 1], (True, False), (None, False), (2, True), (0, 0), (1, False), (0, False)])
    for r, b, n in zip(reqs, blocks, (0, 1, 2, True, 2, 0, 0, 0)):
        s.on_new_request(r)
        result = s.get_num_new_matched_tokens(r, n)
        s.update_state_after_alloc(r, b, n)
        a = recorder._admission(r)
        acted = next(answers_seen)
        assert result == acted  # vLLM gets the inner's answer
        expected += [msgpack.packb(["add_request", a["request_id"], a["num_prompt_tokens"], a["prompt_token_ids_len"],
                                    recorder._params_packable(getattr(r, "kv_transfer_params", None))]),
                     msgpack.packb(["get_num_new_matched_tokens", str(r.request_id), int(n),
                                    [None if acted[0] is None else int(acted[0]), bool(acted[1])]]),
                     msgpack.packb(["update_state_after_alloc", str(r.request_id),
                                    recorder._block_groups(None if b is None else b.get_block_ids()), int(n)])]
    assert bridge.rows == expected
    assert list(bridge.admitted) == ["a", "b", "c", "d", "e", "7", "f", "g"] == list(bridge.allocated)
    s._drive = None
    s.shutdown()


def recorded(path):
    """A recording's entries without what differs from run to run (times, sequence numbers, process ids)."""
    out = []
    for line in path.read_text().splitlines():
        e = json.loads(line)
        for k in ("at_ns", "seq", "pid", "wall_ns", "started_at", "mono_ns"):
            e.pop(k, None)
        out.append(e)
    return out


def test_a_node_that_takes_the_compact_form_gets_the_same_calls_in_the_same_order(tmp_path):
    """A node whose hello lists "compact" gets the admitting hooks' calls as arrays (by position) in its
    batches; expanded, they are the long form's calls, the same in the same order (so the node applies
    the same reducer inputs), vLLM gets the same answers, and the recording is the same."""
    import hashlib
    answers = {"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
               "update_connector_output": {"finished_sending": None}}
    seen = []
    for compact in (True, False):
        node = InnerLikeNode(answers, compact=compact)
        name = "compact" if compact else "long"
        try:
            s, d, bridge = run_three(tmp_path, node, name, drive_matched_from_inner="always",
                                     drive_finished_from_inner="always")
            assert bridge.compact == compact and s._drive_compact is False  # off again after shutdown
            assert s.drive_fallbacks == 0 and s.drive_divergences == 0 and bridge.unread == 0
            if compact:
                # each admission, query, allocation and step went as an array
                kinds = [h for h, _ in node.calls]
                assert node.compact_calls == sum(kinds.count(h) for h in (
                    "add_request", "get_num_new_matched_tokens", "update_state_after_alloc", "build_connector_meta"))
                assert node.compact_calls > 0
            else:
                assert node.compact_calls == 0
            digest = hashlib.sha256()
            for h, a in node.calls:
                digest.update(msgpack.packb([h, a]))
            seen.append((d.acted, node.calls, digest.hexdigest(), node.batches,
                         recorded(tmp_path / name / "scheduler.jsonl")))
        finally:
            node.close()
    assert seen[0][1] == seen[1][1] and seen[0][2] == seen[1][2]
    # the same frames (a compact call alone would go as a batch of one); the idle steps at the end
    # waited for one frame, at the shutdown
    assert seen[0][0] == seen[1][0] and [b for b in seen[0][3] if len(b) > 1] == seen[1][3]
    assert seen[0][3][-1] == ["build_connector_meta", "update_connector_output"] * 2
    assert seen[0][4] == seen[1][4] and len(seen[0][4]) > 10


def test_compact_values_the_connector_changes_later_or_plain_cannot_take_as_they_are(tmp_path):
    """What the compact form packs later is what the hook saw: params copied (a connector sets keys
    afterwards), and params or block ids that are not plain (tuples, sets, non-str keys, a flat list)
    converted as the long form converts them."""
    from kvledger_vllm import recorder
    p = {"a": 1, "b": None, "c": "x"}
    q = recorder._params_packable(p)
    p["a"] = 2
    assert q == {"a": 1, "b": None, "c": "x"}
    odd = {"t": (1, 2), 3: "k", "s": {2, 1}}
    assert recorder._params_packable(odd) == recorder.plain(odd)
    assert recorder._params_packable(None) is None
    assert recorder._blocks_packable(([1, 2], [3])) == ([1, 2], [3])
    assert recorder._blocks_packable([1, 2]) == [[1, 2]] == recorder._block_groups([1, 2])
    assert recorder._blocks_packable(None) == []
    assert recorder._blocks_packable([[1, True]]) == [[1, 1]]
    assert msgpack.packb(recorder._blocks_packable(([1, 2], [3]))) == msgpack.packb(recorder._block_groups(([1, 2], [3])))


def test_a_node_that_takes_derived_new_requests_gets_the_same_calls_in_the_same_order(tmp_path):
    """A node whose hello lists "derived" gets a step's new requests whose block ids and params are
    those of their allocation and admission in the same batch as [request_id, num_computed_tokens]
    (recording or not); expanded from the batch
    (long_forms), the calls are the compact and long forms' ones, in the same order and with the
    same digest, and vLLM gets the same answers; the recording is the same with it as without."""
    import hashlib
    answers = {"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
               "update_connector_output": {"finished_sending": None}}
    seen, recordings = [], []
    for name, compact, derived, record in (("derived", True, True, False), ("compact", True, False, False),
                                           ("long", False, False, False), ("derived-rec", True, True, True),
                                           ("long-rec", False, False, True), ("derived-4", True, True, False)):
        node = InnerLikeNode(answers, compact=compact, derived=derived)
        try:
            more = {} if record else {"record_to": None}
            # derived-4: a frame goes out every 4 calls, so a step's new requests find their admission
            # in an earlier frame than theirs, and go in full
            s, d, bridge = run_three(tmp_path, node, name, max_batch=4 if name == "derived-4" else None,
                                     drive_matched_from_inner="always", drive_finished_from_inner="always", **more)
            assert bridge.derived == derived and s.drive_fallbacks == 0 and s.drive_divergences == 0
            # the three admitted in the first step went derived; none otherwise
            assert node.derived_reqs == (3 if derived and name != "derived-4" else 0)
            assert not bridge.allocated and not bridge.admitted  # emptied when the last frame went out
            digest = hashlib.sha256()
            for h, a in node.calls:
                digest.update(msgpack.packb([h, a]))
            seen.append((d.acted, node.calls, digest.hexdigest()))
            if record:
                recordings.append(recorded(tmp_path / name / "scheduler.jsonl"))
        finally:
            node.close()
    assert all(x == seen[0] for x in seen)
    assert any(a.get("scheduled_new_reqs") for h, a in seen[0][1] if h == "build_connector_meta")
    assert recordings[0] == recordings[1] and len(recordings[0]) > 10


def test_a_derived_new_request_goes_in_full_unless_its_blocks_and_params_are_provably_those_sent():
    """_new_request_rows_derived: [id, computed tokens] only when the block ids equal (same container
    type) those of the batch's allocation row and the params are the admission row's copy key for key,
    in order, each value the same object; a changed, re-ordered or re-made (equal but another object:
    True for 1) value, other blocks, or a request not admitted or allocated in the batch goes in full,
    as _new_request_rows_now gives it."""
    from types import SimpleNamespace

    from kvledger_vllm import recorder

    def new(rid, blocks, params, n=5):
        return SimpleNamespace(req_id=rid, num_computed_tokens=n, block_ids=blocks,
                               sampling_params=SimpleNamespace(extra_args={"kv_transfer_params": params}))
    p = {"do_remote_decode": True, "transfer_id": "tx-1", "n": 1}
    admitted = {"a": recorder._params_packable(p), "b": None, "c": recorder._params_packable(p)}
    allocated = {"a": ([1, 2],), "b": ([3],), "c": ([4],)}
    reqs = [new("a", ([1, 2],), p), new("b", ([3],), None), new("c", [[4]], p), new("z", ([9],), p)]
    rows = recorder._new_request_rows_derived(reqs, admitted, allocated)
    assert rows[:2] == [("a", 5), ("b", 5)]
    assert rows[2:] == recorder._new_request_rows_now(reqs)[2:]  # c: a list where a tuple was; z: not in the batch
    for change in (lambda q: q.__setitem__("n", True), lambda q: q.__setitem__("x", 1),
                   lambda q: q.update({"transfer_id": "".join(["tx-", "1"])}), lambda q: q.pop("do_remote_decode") and q.update(do_remote_decode=True)):
        q = dict(p)
        change(q)
        r = new("a", ([1, 2],), q)
        assert recorder._new_request_rows_derived([r], admitted, allocated) == recorder._new_request_rows_now([r])
    r = new("a", ([1, 3],), p)
    assert recorder._new_request_rows_derived([r], admitted, allocated) == recorder._new_request_rows_now([r])
    # a whole step qualifying (proven for all at once), and the same step with one changed: that one in full
    admitted2 = {"a": admitted["a"], "d": recorder._params_packable(p)}
    allocated2 = {"a": ([1, 2],), "d": ([5],)}
    both = [new("a", ([1, 2],), p), new("d", ([5],), p, n=0)]
    assert recorder._new_request_rows_derived(both, admitted2, allocated2) == [("a", 5), ("d", 0)]
    q = dict(p)
    q["n"] = True
    mixed = [new("a", ([1, 2],), p), new("d", ([5],), q)]
    assert recorder._new_request_rows_derived(mixed, admitted2, allocated2) == [
        ("a", 5)] + recorder._new_request_rows_now(mixed[1:])
    # not vLLM's new request data: each in full, as before
    odd = [SimpleNamespace(req_id="a", block_ids=([1, 2],))]
    assert recorder._new_request_rows_derived(odd, admitted, allocated) == recorder._new_request_rows_now(odd) == [
        ("a", [[1, 2]], 0, None)]


STEADY_STEPS = [  # (cached ids, their new block ids): a decode engine's steps, some steady
    (["a", "b", "c"], [([1],), None, None]),
    (["a", "b", "c"], [None, None, None]),  # the same ids, no new blocks: quiet
    (["a", "b", "c"], [None, None, ([7, 8],)]),  # the same ids, new blocks for one: quiet too
    (["b", "a", "c"], [None, None, None]),  # re-ordered
    (["b", "a"], [None, ([9],)]),  # c left
    (["b", "a", "d"], [None, None, None]),  # d joined
    (["b", "a", "d"], [None, None, None]),
    ([], []),  # idle
    (["b", "a", "d"], [None, None, None]),  # in full after an idle step
    (["b", "a", "d"], [([3], [4]), None, ()]),
]


def steady_run(s, steps=STEADY_STEPS, between=None):
    """Runs ``steps`` through the scheduler connector ``s``, each as a new scheduler output with new
    lists of the same str objects (as vLLM's); ``between(i)`` after step i."""
    from vllm.v1.core.sched.output import CachedRequestData, SchedulerOutput
    from vllm.v1.outputs import KVConnectorOutput
    for i, (ids, blocks) in enumerate(steps):
        s.build_connector_meta(SchedulerOutput(scheduled_cached_reqs=CachedRequestData(
            req_ids=list(ids), new_block_ids=[None if b is None else tuple(map(list, b)) for b in blocks])))
        s.update_connector_output(KVConnectorOutput())
        if between is not None:
            between(i)


def test_a_node_that_takes_steady_steps_gets_the_same_calls_with_repeated_ids_as_a_number(tmp_path):
    """A node whose hello lists "steady" gets a step's cached ids as the previous step's number when
    they are its ids, and the new block ids by index ({"at", "blocks"}: None ones left out); expanded with
    what the connection remembers (long_forms' session), the calls are those a compact node and a
    long-form node get, in the same order and with the same digest. Ids changed, re-ordered, a
    request leaving or joining, or the step after an idle one go in full; a steady step (the same
    ids, with or without new blocks) waits quietly for the next frame."""
    import hashlib
    seen = []
    for name, compact, steady in (("steady", True, True), ("compact", True, False), ("long", False, False)):
        node = BatchingNode({"update_connector_output": {"finished_sending": None}}, compact=compact, steady=steady)
        try:
            (tmp_path / name).mkdir()
            s = scheduler(tmp_path / name, node.port, drive_matched_from_inner="always")
            bridge = s._drive
            assert bridge.steady == steady
            frames = []
            steady_run(s, between=lambda i: frames.append(bridge.batches))
            s.shutdown()
            assert s.drive_fallbacks == 0 and not node.refused
            if steady:
                # steps 2, 3, 7 and 10 repeat the ids of the step before; each step's blocks a map
                assert node.markers == 4 and node.sparse == 9
                # steps 2, 3, 7 and 10 (the same ids, with or without new blocks), and 8 (idle), waited
                # for the next frame (10's: for the shutdown's)
                assert [f - frames[0] for f in frames[1:]] == [0, 0, 1, 2, 3, 3, 3, 4, 4]
            else:  # only the idle step 8 waits
                assert [f - frames[0] for f in frames[1:]] == [1, 2, 3, 4, 5, 6, 6, 7, 8]
                assert node.markers == 0 and node.sparse == 0
            steps = [a for h, a in node.calls if h == "build_connector_meta"]
            assert [a["step"] for a in steps] == list(range(1, 11))
            digest = hashlib.sha256()
            for h, a in node.calls:
                digest.update(msgpack.packb([h, a]))
            seen.append((node.calls, digest.hexdigest()))
        finally:
            node.close()
    assert seen[0] == seen[1] == seen[2]
    steps = [a for h, a in seen[0][0] if h == "build_connector_meta"]
    assert steps[2]["cached_req_ids"] == ["a", "b", "c"] and steps[2]["cached_new_block_ids"] == [None, None, [[7, 8]]]
    assert steps[9]["cached_new_block_ids"] == [[[3], [4]], None, []]
    assert steps[7]["cached_req_ids"] == [] and steps[8]["cached_req_ids"] == ["b", "a", "d"]


def test_a_steady_step_the_node_cannot_place_is_refused_and_the_next_goes_in_full(tmp_path):
    """A node that forgot the connection's last step (a new connection, a restart) refuses a step
    whose ids came as a number, naming why; the client counts the failure and sends the next step's
    ids in full, and steady steps follow again. A number naming another step than the last one read
    is refused too (long_forms), as is a block index past the ids."""
    node = BatchingNode({"update_connector_output": {"finished_sending": None}}, compact=True, steady=True)
    try:
        s = scheduler(tmp_path, node.port, drive_matched_from_inner="always")
        steps = [(["a", "b"], [None, ([1],)])] * 5

        def between(i):
            if i == 1:
                s._drive_settled()  # what was sent is read: the node forgets
                node.sessions.clear()
            elif i == 2:
                s._drive_settled()  # the refusal is read before the next step
        steady_run(s, steps, between)
        s.shutdown()
        assert len(node.refused) == 1 and "the last step read on this connection was None" in node.refused[0]
        assert s.drive_fallbacks == 1
        # steps 2 and 5 as numbers (step 3's refused), step 4 in full
        assert node.markers == 3
        assert [a["step"] for h, a in node.calls if h == "build_connector_meta"] == [1, 2, 4, 5]
        assert all(a["cached_req_ids"] == ["a", "b"] for h, a in node.calls if h == "build_connector_meta")
    finally:
        node.close()
    session = {}
    ok = long_forms([[1, "build_connector_meta", 7, ["x"], {}]], session)
    assert ok[0]["args"]["cached_new_block_ids"] == [None] and session == {"step": 7, "ids": ["x"]}
    assert "refused" in long_forms([[2, "build_connector_meta", 8, 6, {}]], session)[0] and session == {}
    session.update(step=8, ids=["x"])
    bad = long_forms([[3, "build_connector_meta", 9, 8, {"at": [1], "blocks": [[[2]]]}]], session)[0]
    assert "index 1 is not one of the 1 cached requests" in bad["refused"] and session == {}


def test_steady_fields_convert_with_c_level_passes():
    """_steady_fields: the same ids (equal lists) as the last step's number, else as strs remembered;
    the blocks by index, None ones left out (an empty one kept), more blocks than ids cut; steady
    whenever the ids went as a number; a failure forgets the ids."""
    from types import SimpleNamespace

    from kvledger_vllm import recorder
    from kvledger_vllm.drive import NodeBridge
    b = SimpleNamespace(steady_ids=None, steady_step=None, steady_numbers=0)
    assert recorder._steady_fields(b, 1, ["a", "b"], [None, ([1],)]) == (["a", "b"], {"at": [1], "blocks": [([1],)]}, False)
    assert recorder._steady_fields(b, 2, ["a", "b"], [None, None]) == (1, {}, True)
    assert recorder._steady_fields(b, 3, ["a", "b"], [[1, 2], None, ([5],)]) == (2, {"at": [0], "blocks": [[[1, 2]]]}, True)
    assert recorder._steady_fields(b, 4, ["b", "a"], ()) == (["b", "a"], {}, False)
    assert recorder._steady_fields(b, 5, [7], None) == (["7"], {}, False) and b.steady_ids == ["7"]
    # block ids that are not lists of int lists: converted as the long form converts them
    assert recorder._steady_fields(b, 6, ["7"], [[3, True]]) == (5, {"at": [0], "blocks": [[[3, 1]]]}, True)
    assert recorder._steady_fields(b, 7, ["7"], [([3], [True])]) == (6, {"at": [0], "blocks": [[[3], [1]]]}, True)
    # an empty entry (not None) is kept, by index
    assert recorder._steady_fields(b, 7, ["7", "8"], [(), None]) == (["7", "8"], {"at": [0], "blocks": [()]}, False)
    assert recorder._steady_fields(b, 8, ["7", "8"], [None, []]) == (7, {"at": [1], "blocks": [[]]}, True)
    kept = ([4, 5], [6])
    assert recorder._steady_fields(b, 9, ["7"], [kept])[1]["blocks"][0] is kept
    nb = NodeBridge.__new__(NodeBridge)
    nb.failures, nb._on_failure, nb.steady_ids = 0, None, ["x"]
    nb._failed("build_connector_meta", "refused")
    assert nb.steady_ids is None


def test_after_the_dealer_reconnects_the_next_steady_step_goes_in_full(tmp_path):
    """A node restarted on the same port: the DEALER connects again on its own, a new caller to the
    node (which remembers nothing of it); the client sees the new connection and sends the next
    step's ids in full, so the node refuses nothing, and numbers follow again."""
    import time
    answers = {"update_connector_output": {"finished_sending": None}}
    node = BatchingNode(answers, compact=True, steady=True)
    again = None
    try:
        s = scheduler(tmp_path, node.port, drive_matched_from_inner="always")
        bridge = s._drive
        steps = [(["a", "b"], [None, ([1],)])] * 3
        steady_run(s, steps)
        s._drive_settled()
        assert node.markers == 2 and not bridge.reconnected()
        node.close()
        again = BatchingNode(answers, compact=True, steady=True, port=node.port)
        deadline = time.monotonic() + 30
        while not bridge._monitor.poll(100) and time.monotonic() < deadline:
            pass  # libzmq reconnects after its interval (100 ms by default)
        steady_run(s, steps)
        s.shutdown()
        assert not again.refused and s.drive_fallbacks == 0
        assert again.markers == 2  # the first step after the reconnect in full
        assert [a["cached_req_ids"] for h, a in again.calls if h == "build_connector_meta"] == [["a", "b"]] * 3
    finally:
        if again is not None:
            again.close()


def run_counting_checks(tmp_path, node, name, monkeypatch, **more):
    """``run_three`` (with 6 requests) counting the client's checks of answers acted on (each
    ``_drive_checked`` check and ``_matched_check`` called); returns (scheduler, driver, bridge, checks)."""
    import kvledger_vllm.recorder as rec
    checks = []
    matched = rec._matched_check

    def counted_matched(*a):
        checks.append("get_num_new_matched_tokens")
        return matched(*a)
    monkeypatch.setattr(rec, "_matched_check", counted_matched)
    checked = KvledgerRecorderConnector._drive_checked

    def counted_checked(self, hook, acted, answer_of):
        check = checked(self, hook, acted, answer_of)

        def counted(result):
            checks.append(hook)
            check(result)
        return counted
    monkeypatch.setattr(KvledgerRecorderConnector, "_drive_checked", counted_checked)
    finish = KvledgerRecorderConnector._drive_finish_result

    def counted_finish(self, rid_acted, r):
        checks.append("request_finished")
        return finish(self, rid_acted, r)
    monkeypatch.setattr(KvledgerRecorderConnector, "_drive_finish_result", counted_finish)
    (tmp_path / name).mkdir()
    s = scheduler(tmp_path / name, node.port, **more)
    bridge = s._drive
    d = play_producer(s, 6, 8)
    monkeypatch.undo()
    return s, d, bridge, checks


SWITCHES = [dict(drive_matched_from_inner=m, drive_finished_from_inner=f, drive_freed_from_inner=fr, drive_compact=c)
            for m in (False, True) for f in (False, True) for fr in ((True, False) if f else (True,))
            for c in (True, False)]


@pytest.mark.parametrize("switches", SWITCHES, ids=lambda sw: "-".join(k[6:] for k, v in sw.items() if v) or "none")
def test_a_node_that_agrees_leaves_its_answers_out_and_the_client_settles_the_same(tmp_path, monkeypatch, switches):
    """A node whose hello lists "agreed" answers a batch asking for it without the empty answers and those
    equal to the acted their calls carry: the client checks none of those one by one, and the calls, frames,
    answers acted on and the record of what the node defers are those an older node (without "agreed",
    every answer in full and checked) gives, for every combination of the from-inner switches."""
    answers = {"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False}}
    seen = []
    for agreed in (True, False):
        node = InnerLikeNode(answers, compact=True, agreed=agreed)
        try:
            name = "agreed" if agreed else "older"
            s, d, bridge, checks = run_counting_checks(tmp_path, node, name, monkeypatch, **switches)
            assert bridge.agreed == agreed and bridge.unread == 0
            assert s.drive_fallbacks == 0 and s.drive_divergences == 0
            acted_calls = sum(1 for _, a in node.calls if "acted" in a)
            assert acted_calls > 0 or not (switches["drive_matched_from_inner"] or switches["drive_finished_from_inner"])
            # (the empty-output shortcut's check is of a call without acted: answered in full either way)
            checks = [c for c in checks if c != "update_connector_output"]
            if agreed:
                # every call carrying acted that came in a batch agreed and was left out: none of them
                # checked one by one (alone, such a call goes as a batch of one)
                assert node.agreeing == node.acted_batched and (node.agreeing > 0 or acted_calls == 0)
                assert len(checks) == sum(1 for h, a in node.calls if "acted" in a and h != "update_connector_output") \
                    - sum(1 for h in node.agreeing_hooks if h != "update_connector_output")
                assert node.left_out > 0 and node.listed < node.left_out
            else:
                assert node.agreeing == 0 and len(checks) == sum(
                    1 for h, a in node.calls if "acted" in a and h != "update_connector_output")
            # (a lone call carrying acted goes to an agreeing node as a batch of one, whose answer it may
            # leave out; to an older one as itself: one frame either way)
            seen.append((d.acted, node.calls, [b for b in node.batches if len(b) > 1], node.frames, bridge.calls,
                         sorted(s._drive_deferred), sorted(s._drive_finish_unread)))
        finally:
            node.close()
    assert seen[0] == seen[1]



def test_a_node_listing_brief_leaves_its_metadata_out_and_the_client_drives_the_same(tmp_path, monkeypatch):
    """A node whose hello lists "brief" (with "agreed") is asked for it: its metadata for the worker, each
    build_connector_meta's answer, is left out of the batch replies (vLLM's worker gets the inner's), and
    the calls, frames' calls and answers acted on are those with the metadata; ``drive_metadata`` is then
    None, and ``drive_brief`` false asks for it again."""
    meta = {"step": 1, "reqs_to_recv": {}, "reqs_to_save": {"r": {"local_block_ids": [[1]]}}, "reqs_to_send": [],
            "mapping_size": 1}
    answers = {"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False}, "build_connector_meta": meta}
    seen = []
    for brief, asked in ((True, True), (True, False), (False, False)):
        node = InnerLikeNode(answers, compact=True, agreed=True, brief=brief)
        try:
            more = {} if asked or not brief else {"drive_brief": False}
            s, d, bridge, _ = run_counting_checks(tmp_path, node, f"brief-{brief}-{asked}", monkeypatch,
                                                  drive_matched_from_inner="always", **more)
            assert bridge.brief == asked and s.drive_fallbacks == 0 and s.drive_divergences == 0
            steps = sum(1 for h, _ in node.calls if h == "build_connector_meta")
            if asked:
                assert node.brief_asked > 0 and node.brief_left_out == steps > 0
                assert all(b"\xa5brief\xc3" in f for f in node.raw if b"\xa6agreed\xc3" in f)
                assert s.drive_metadata is None
            else:
                assert node.brief_asked == 0 and node.brief_left_out == 0
                assert not any(b"\xa5brief" in f for f in node.raw)
                assert s.drive_metadata == meta
            seen.append((d.acted, node.calls, node.batches, sorted(s._drive_deferred)))
        finally:
            node.close()
    assert seen[0] == seen[1] == seen[2]

class SplitNode(InnerLikeNode):
    """An agreeing node but for the requests named in ``differ``: its request_finished answers
    delay_free=False for them, and its get_num_new_matched_tokens answers 8 tokens for those in ``more``."""

    def __init__(self, answers, differ=(), more=(), **kw):
        self.differ, self.more = set(differ), set(more)
        answers = dict(answers)
        super().__init__(answers, **kw)
        agreeing_finish = self.answers["request_finished"]

        def finish(args):
            r = agreeing_finish(args)
            if args["request_id"] in self.differ:
                self.deferred.discard(args["request_id"])
                return {"delay_free": False, "kv_transfer_params": None}
            return r
        self.answers["request_finished"] = finish
        self.answers["get_num_new_matched_tokens"] = lambda args: (
            {"num_tokens": 8 if args["request_id"] in self.more else 0, "load_async": False})


@pytest.mark.parametrize("freed", (True, False))
def test_a_divergence_in_an_agreeing_batch_is_counted_logged_and_carries_the_nodes_answer(
        tmp_path, caplog, monkeypatch, freed):
    """A batch of the agreed form with some answers left out and others differing (two finishes the node
    does not defer, one query it answers otherwise): each difference is counted and logged with the node's
    answer, the agreeing calls of the batch settle as agreeing, and the client ends as with an older node."""
    reqs = sorted(r.request_id for r in producer_requests(6))
    seen = []
    for agreed in (True, False):
        node = SplitNode({}, differ=reqs[1:3], more=reqs[4:5], compact=True, agreed=agreed)
        try:
            caplog.clear()
            with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
                s, d, bridge, checks = run_counting_checks(
                    tmp_path, node, f"split-{agreed}", monkeypatch, drive_matched_from_inner="always",
                    drive_finished_from_inner="always", drive_freed_from_inner=freed)
            finished = {x[1]: x[2] for x in d.acted if x[0] == "finished"}
            deferred_by_inner = [r for r in reqs[1:3] if finished.get(r)]
            assert deferred_by_inner  # the inner deferred them: the node's False differs
            queried = sum(1 for x in d.acted if x[0] == "matched" and x[1] == reqs[4])
            assert s.drive_divergences >= len(deferred_by_inner) + queried
            assert s._errors.get("drive divergence request_finished") == len(deferred_by_inner)
            assert s._errors.get("drive divergence get_num_new_matched_tokens") == queried
            assert caplog.text.count("DIVERGED on request_finished") == 1
            assert caplog.text.count("DIVERGED on get_num_new_matched_tokens: vLLM acted on (0, False) without "
                                     "waiting, the node answers (8, False)") == 1
            if agreed:
                assert node.agreeing > 0 and 0 < len(checks) < sum(1 for _, a in node.calls if "acted" in a)
                assert node.mixed > 0
            # (a lone call carrying acted: a batch of one to an agreeing node, itself to an older one)
            seen.append((d.acted, node.calls, [b for b in node.batches if len(b) > 1], node.frames,
                         s.drive_divergences, s.drive_fallbacks,
                         s.drive_divergence_last, sorted(s._drive_deferred), sorted(s._drive_finish_unread),
                         dict(s._errors)))
        finally:
            node.close()
    assert seen[0] == seen[1]


def test_an_agreed_batch_with_a_call_given_up_or_unpackable_settles_call_by_call():
    """NodeBridge._settle_agreed: the runs of a batch go to their on_agreed at once only when every call
    is still unread and none failed on the way; a call given up earlier is not settled as agreeing."""
    b = NodeBridge.__new__(NodeBridge)
    b._unread, b._failures = {}, []
    b.failures = 0
    b._on_failure = lambda hook, e: b._failures.append(hook)
    got = []
    seen = []
    sink = got.extend
    b._unread = {1: ("request_finished", (seen.append, sink, "a")), 2: ("add_request", None),
                 3: ("request_finished", (seen.append, sink, "b")), 4: ("build_connector_meta", seen.append)}
    runs, cbs = [(sink, ["a", "b"])], [(4, seen.append)]
    mine = b._settle_agreed([1, 2, 3, 4, 5], [{"id": 4, "ok": True, "result": {"step": 1}}], 5, (runs, cbs, False))
    assert mine == {"id": 5, "ok": True, "result": {}} and got == ["a", "b"] and seen == [{"step": 1}]
    assert b._unread == {}
    # call 1 given up: its item does not count; call 3 diverges: its on_result gets the answer
    got.clear(), seen.clear()
    b._unread = {2: ("add_request", None), 3: ("request_finished", (seen.append, sink, "b")),
                 4: ("build_connector_meta", seen.append)}
    b._settle_agreed([1, 2, 3, 4], [], None, (runs, cbs, False))
    assert got == ["b"] and seen == [{}] and b._unread == {}
    b._unread = {3: ("request_finished", (seen.append, sink, "b"))}
    got.clear(), seen.clear()
    b._settle_agreed([3], [{"id": 3, "ok": True, "result": {"delay_free": False}}, 9], None, ([(sink, ["b"])], [], False))
    assert got == [] and seen == [{"delay_free": False}]
    # an error of a call listed: a failure, its item not agreeing
    b._unread = {1: ("request_finished", (seen.append, sink, "a")), 2: ("add_request", None)}
    got.clear(), seen.clear()
    b._settle_agreed([1, 2], [{"id": 2, "ok": False, "error": "busy"}], None, ([(sink, ["a"])], [], False))
    assert got == ["a"] and b._failures == ["add_request"] and b._unread == {}
    # a call that failed on the way (dirty): call by call, its item not counted
    b._unread = {2: ("request_finished", (seen.append, sink, "b"))}
    got.clear()
    b._settle_agreed([2], [], None, ([(sink, ["a", "b"])], [], True))
    assert got == ["b"] and b._unread == {}


def test_an_agreed_batch_whole_in_unread_is_cut_out_at_once_and_anything_else_is_popped():
    """NodeBridge._cut_batch: a batch whose unread calls are all there, and the oldest ones, leaves
    ``_unread`` in one step (the calls after it kept, in order, in a new dict); a batch with an older call
    still unread, one of its calls given up, or more later calls than it may copy is not cut (the
    settling pops call by call), and either way the same calls stay unread."""
    def bridge(unread):
        b = NodeBridge.__new__(NodeBridge)
        b._unread = dict(unread)
        return b
    calls = {rid: ("request_finished", None) for rid in range(10, 20)}
    later = {rid: ("update_connector_output", None) for rid in (21, 23)}
    b = bridge({**calls, **later})
    old = b._unread
    # ids 10..19 and the awaited call 20 (never unread); 21, 23 sent after
    assert b._cut_batch(list(range(10, 21)), 20) is old
    assert list(b._unread) == [21, 23] and b._unread[21] == later[21]
    for case, members, awaited in (
            ("an older call unread", {9: ("add_request", None)} | calls | later, None),
            ("a call given up", {rid: calls[rid] for rid in range(11, 20)} | later, None)):
        b = bridge(members)
        before = dict(b._unread)
        assert b._cut_batch(list(range(10, 20)), awaited) is None, case
        assert b._unread == before
        b._settle_agreed(list(range(10, 20)), [], None, ([], [], False))
        assert list(b._unread) == [rid for rid in before if rid not in calls], case
    many = {rid: ("update_connector_output", None) for rid in range(20, 20 + 64 + 1)}
    b = bridge({**calls, **many})
    assert b._cut_batch(list(range(10, 20)), None) is None and len(b._unread) == 75
    b = bridge({**calls, **dict(list(many.items())[:64])})
    assert b._cut_batch(list(range(10, 20)), None) is not None and list(b._unread) == list(range(20, 84))


def test_the_entries_of_a_cut_batch_are_freed_by_the_sender_thread_while_it_naps():
    """NodeBridge._discard: with the sender thread napping, a settled batch's entries are left to it, and
    it frees them between its naps, a few at a time; without it, at once."""
    import time as _time
    b = NodeBridge("tcp://127.0.0.1:9", timeout_ms=200)
    try:
        freed = threading.Event()

        class Entry:
            def __del__(self):
                freed.set()
        b._discard({1: ("request_finished", Entry())})
        assert freed.is_set()  # no sender thread: at once
        freed.clear()
        b.nap_for_ns = 60 * 10 ** 9  # (the sender naps for a minute after its work: a loaded machine's stall
        b.start_sender()             # between the hand-off and the discard leaves it napping)
        b.reclaim = False  # (the sender runs the hand-off, not this thread)
        b.captured.append((list,))  # a hand-off: the sender naps after it
        b.hand_off()
        b.sync()
        assert b._awake_until > _time.monotonic_ns()
        garbage = {rid: ("request_finished", Entry() if rid == 0 else None) for rid in range(40)}  # (freed last)
        b._discard(garbage)
        assert len(b._garbage) == 1 or not garbage  # left to the sender (unless it already freed them)
        assert freed.wait(30) and not garbage
    finally:
        b.close()


def test_a_node_rewriting_nothing_lists_an_empty_answer_that_differs_from_acted(tmp_path):
    """A node answering update_connector_output with {} (it rewrites nothing: the set as it came) where
    vLLM kept the inner's rewrite (without an id the inner does not know): that empty answer differs
    from acted and is still listed in the agreed form (left out, it would read as agreeing), so the
    divergence is counted and carries the node's set, as with an older node."""
    from vllm.v1.outputs import KVConnectorOutput
    from vllm.v1.request import RequestStatus
    seen = []
    for agreed in (True, False):
        node = BatchingNode({"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False},
                             "request_finished": {"delay_free": True, "kv_transfer_params": PARAMS},
                             "update_connector_output": {}}, compact=True, agreed=agreed)
        try:
            (tmp_path / str(agreed)).mkdir()
            s = scheduler(tmp_path / str(agreed), node.port, drive_finished_from_inner=True)
            assert s._drive_freed_from_inner and s._drive.agreed == agreed
            reqs = producer_requests(2)
            ids = sorted(r.request_id for r in reqs)
            for r in reqs:
                s.on_new_request(r)
                r.status = RequestStatus.FINISHED_LENGTH_CAPPED
                assert s.request_finished(r, [1, 2])[0] is True
            out = KVConnectorOutput(finished_sending=set(ids + ["cmpl-unknown"]))
            s.update_connector_output(out)  # ids came: the batch goes out
            assert out.finished_sending == set(ids)
            s.shutdown()
            assert s._errors.get("drive divergence update_connector_output") == 1
            assert s.drive_divergence_last == ("update_connector_output", ids, ids + ["cmpl-unknown"])
            if agreed:
                assert node.listed >= 1 and node.left_out >= 2  # the admissions' empty answers
            seen.append((node.calls, node.batches, s.drive_divergences, s.drive_divergence_last,
                         sorted(s._drive_deferred), sorted(s._drive_finish_unread)))
        finally:
            node.close()
    assert seen[0] == seen[1]


@pytest.mark.parametrize("record", (False, True))
def test_the_finishing_call_packs_what_the_general_path_packs_and_what_the_hook_saw(tmp_path, record):
    """request_finished with drive_finished_from_inner: the call (packed when its batch goes out, maybe
    at the step's end) gives the bytes _block_groups and plain give at the hook, for vLLM's types (a
    flat int list, a tuple of int lists, MoRIIO's params holding the very list of block ids) and for odd
    values (tuples, bools and an int enum among ids, nested params, non-str keys, sets, bytes, None),
    whatever vLLM or the inner changes in those lists and dicts after the hook returns."""
    import enum

    from kvledger_vllm import recorder
    from vllm.v1.request import Request, RequestStatus

    class Seven(enum.IntEnum):
        SEVEN = 7

    class Calls(RowsBridge):
        def send_args(self, hook, args, on_result=None, flush=False, quiet=False):
            self.rows.append((hook, args))  # kept as it is: packed below, after the changes

    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"}
    if record:
        extra["record_to"] = str(tmp_path / "{role}.jsonl")
    s = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    bridge = s._drive = Calls()
    s._drive_compact = s._drive_from_inner = s._drive_pipeline = s._drive_finished_from_inner = True
    flat = list(range(128))
    groups = ([5, 6, 7], [8])
    bools = [4, True]
    cases = [
        (flat, (True, {"do_remote_prefill": True, "remote_block_ids": flat, "remote_engine_id": "e", "tp_size": 1,
                       "transfer_id": "t"})),
        (groups, (True, {"remote_block_ids": list(groups), "f": 1.5, "n": None, "b": False})),
        ([[1, 2], (3,)], (False, {"t": (1, 2), "g": ((1,), [2, True]), "m": [1.5, None, "x", True]})),
        (((1, 2), (3,)), (0, None)),
        ([1, True, 2], (1, {"ids": [1, True]})),
        ([Seven.SEVEN, 8], (False, {"x": {"y": [1]}})),
        ([[1, Seven.SEVEN]], (False, {3: "k", "a": [1]})),
        ([], (False, {"s": {2, 1}})),
        (None, (False, {"b": b"\x00", "l": [[1], 2]})),
        ([[]], (False, {"l": [{"a": 1}]})),
        ((), (False, ("not", "a", "dict"))),
        (groups, (True, {"r": groups, "g": groups[1], "i": 3})),  # the very lists vLLM passed, as MoRIIO does
        (bools, (True, {"r": bools, "o": [bools, [2]]})),  # a bool among them: converted, the params not
    ]
    expected = []
    for i, (blocks, answer) in enumerate(cases):
        r = Request(f"r{i}", range(4))
        r.status = RequestStatus.FINISHED_LENGTH_CAPPED if i % 2 else RequestStatus.FINISHED_STOPPED
        s.on_new_request(r)
        s._inner.request_finished = lambda request, block_ids, answer=answer: answer
        assert s.request_finished(r, blocks) is answer  # vLLM gets the inner's answer
        expected.append(msgpack.packb({"request_id": r.request_id, "status": recorder._status_name(r),
                                       "block_ids": recorder._block_groups(blocks), "acted": {
                                           "delay_free": bool(answer[0]), "kv_transfer_params": recorder.plain(answer[1])}}))
        # what vLLM or the inner may do to its lists and dicts once the hook returned
        for g in (blocks if isinstance(blocks, (list, tuple)) else ()):
            if type(g) is list:
                g.append(99)
        if type(blocks) is list:
            blocks.append(100)
        if type(answer[1]) is dict:
            for v in answer[1].values():
                if type(v) is list:
                    v.append(101)
            answer[1]["late"] = 1
    calls = [c[1] for c in bridge.rows if type(c) is tuple and c[0] == "request_finished"]
    assert len(calls) == len(cases)
    assert [msgpack.packb(a) for a in calls] == expected
    # the odd values went through the conversions (same bytes); vLLM's own ones as plain lists
    assert calls[0]["block_ids"] == [list(range(128))] and calls[0]["acted"]["kv_transfer_params"]["remote_block_ids"] \
        == list(range(128))
    assert calls[4]["block_ids"] == [[1, 1, 2]] and calls[4]["acted"]["kv_transfer_params"]["ids"] == [1, True]
    assert calls[7]["acted"]["kv_transfer_params"] == {"s": [1, 2]}
    assert s.drive_fallbacks == 0
    s._drive = None
    s.shutdown()


def test_finishing_values_sent_later_are_the_general_conversions():
    """_blocks_sent_later and _params_sent_later give what _block_groups and plain give (equal, same
    bytes, fresh lists), and raise where _block_groups raises."""
    from kvledger_vllm import recorder
    for b in ([1, 2], (1, 2), [], (), None, [[1], [2, 3]], ([1], (2,)), ((), ()), [[True]], [1, True], [[1], []]):
        got, checked = recorder._blocks_sent_later(b)
        assert got == recorder._block_groups(b) and msgpack.packb(got) == msgpack.packb(recorder._block_groups(b))
        assert all(type(g) is list for g in got)
        if isinstance(b, (list, tuple)):
            assert not any(g is x for g in got for x in b) and got is not b
    for bad in ([[1], 2], [1, [2]], [["a"]]):
        with pytest.raises((TypeError, ValueError)):
            recorder._block_groups(bad)
        with pytest.raises((TypeError, ValueError)):
            recorder._blocks_sent_later(bad)[0]
    for p in ({"a": 1}, {"a": [1, 2], "b": ([1], (2, None))}, {"a": (1.5, "x")}, {1: 2}, {"a": {1}}, {"a": [[1], 2]},
              {"a": [{"b": 1}]}, {"a": b"x"}, None, [1, 2], {"a": [[[1]]]}, {}):
        got = recorder._params_sent_later(p)
        assert got == recorder.plain(p) and msgpack.packb(got) == msgpack.packb(recorder.plain(p))
    p = {"l": [1], "g": [[2]]}
    q = recorder._params_sent_later(p)
    p["l"].append(3)
    p["g"][0].append(4)
    assert q == {"l": [1], "g": [[2]]}
    # lists _blocks_sent_later took as they were are not checked again, and copied all the same
    b = ([1, 2], [3])
    got, checked = recorder._blocks_sent_later(b)
    assert checked == b and all(x is y for x, y in zip(checked, b))
    p = {"r": b, "g": b[0], "l": [b[1], [True]]}
    q = recorder._params_sent_later(p, checked)
    assert q == recorder.plain(p) and msgpack.packb(q) == msgpack.packb(recorder.plain(p))
    assert q["g"] is not b[0] and q["r"][0] is not b[0] and q["l"][0] is not b[1]
    assert recorder._blocks_sent_later([1, True])[1] == () and recorder._blocks_sent_later([[1], (2.0,)])[1] == ()

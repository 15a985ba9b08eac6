"""The fake engines on real sockets (pyzmq on loopback, the stdlib HTTP server), with no proxy and no node.

The test plays the peers itself: a ROUTER for the proxy's ping port, a ROUTER and a DEALER for a
peer rank's notify port, a ROUTER answering the engine bridge as a kvledger node would.
"""

import http.client
import json
import socket
import threading
import time
import uuid

import msgpack
import pytest
import zmq

from kvledger_vllm import fake_engine as fe


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, timeout=120.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def post(port, path, body, headers=None, timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request("POST", path, body=json.dumps(body) if not isinstance(body, bytes) else body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.getheader("Content-Type"), data


@pytest.fixture
def ctx():
    c = zmq.Context()
    yield c
    c.destroy(linger=0)


@pytest.fixture
def apps():
    made = []
    yield made
    for a in made:
        a.close()


def router(ctx, port=None):
    s = ctx.socket(zmq.ROUTER)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVTIMEO, 120000)
    if port is None:
        port = s.bind_to_random_port("tcp://127.0.0.1")
    else:
        s.bind("tcp://127.0.0.1:%d" % port)
    return s, port


def dealer(ctx, port):
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 1000)
    s.connect("tcp://127.0.0.1:%d" % port)
    return s


def prefill_leg_params(tid):
    return {"remote_dp_size": 1, "remote_tp_size": 1, "transfer_id": tid, "do_remote_decode": True,
            "do_remote_prefill": False, "remote_engine_id": None, "remote_block_ids": None}


def decode_leg_params(tid):
    return {"do_remote_decode": False, "do_remote_prefill": True, "remote_engine_id": None, "remote_block_ids": None,
            "transfer_id": tid, "remote_dp_size": 1, "remote_tp_size": 1}


def test_request_id_addresses_round_trip_as_the_connector_parses_them():
    p = fe.zmq_address("10.0.0.1", 6301, 61005)
    d = fe.zmq_address("10.0.0.2", 7301, 62005)
    rid = "cmpl-" + fe.compose_request_id(p, d) + "-0-1a2b3c4d"
    assert fe.peer_from_request_id(rid, is_producer=False) == ("10.0.0.1", 6301, 61005)
    assert fe.peer_from_request_id(rid, is_producer=True) == ("10.0.0.2", 7301, 62005)
    assert fe.peer_from_request_id("cmpl-plain-0-1a2b3c4d", is_producer=True) is None
    assert fe.parse_zmq_address("host:::1,handshake:1,notify:2") == ("::1", 1, 2)
    with pytest.raises(ValueError, match="Malformed zmq_address"):
        fe.parse_zmq_address("host:10.0.0.1,handshake:x,notify:2")
    assert fe.port_offset(1, 1) == 2 and fe.port_offset(1, 1, 4) == 5 and fe.fold_local_rank(5, 4) == 1


def test_registration_is_one_msgpack_frame_every_heartbeat(ctx, apps):
    ping, port = router(ctx)
    app = fe.FakeEngineApp("decode", "read", host="127.0.0.1", http_port=0, handshake_port=7301,
                           notify_port=free_port(), proxy="tcp://127.0.0.1:%d" % port, heartbeat_s=0.2,
                           bind_host="127.0.0.1")
    apps.append(app)
    first = ping.recv_multipart()
    second = ping.recv_multipart()
    for parts in (first, second):
        assert len(parts) == 2, "a DEALER sends one frame, no empty delimiter"
        assert msgpack.unpackb(parts[1]) == {
            "type": "D", "http_address": "127.0.0.1:%d" % app.http_port,
            "zmq_address": "host:127.0.0.1,handshake:7301,notify:%d" % app.connector.notify_port,
            "dp_size": 1, "tp_size": 1, "transfer_mode": "READ"}
    assert first[0] == second[0], "one registration socket"


def test_a_write_prefill_answers_with_kv_transfer_params_then_writes_when_told_where(ctx, apps):
    p_notify, hs = free_port(), 6301
    app = fe.FakeEngineApp("prefill", "write", http_port=0, handshake_port=hs, notify_port=p_notify, bind_host="127.0.0.1")
    apps.append(app)
    d_router, d_notify = router(ctx)
    tid = "tx-" + uuid.uuid4().hex
    rid = fe.compose_request_id(app.zmq_address, fe.zmq_address("127.0.0.1", 7301, d_notify))
    status, ctype, data = post(app.http_port, "/v1/completions",
                               {"model": "m", "prompt": "one two three four five", "max_tokens": 1, "stream": False,
                                "kv_transfer_params": prefill_leg_params(tid)}, {"X-Request-Id": rid})
    assert status == 200 and ctype == "application/json"
    body = json.loads(data)
    assert body["id"] == "cmpl-" + rid and body["object"] == "text_completion"
    assert body["choices"][0]["finish_reason"] == "length" and body["choices"][0]["text"] == " tok1"
    assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    kv = body["kv_transfer_params"]
    assert kv["do_remote_prefill"] is True and kv["do_remote_decode"] is False
    assert kv["transfer_id"] == tid and kv["remote_engine_id"] == "127.0.0.1:%d" % hs
    assert kv["remote_host"] == "127.0.0.1" and kv["remote_notify_port"] == p_notify and kv["remote_handshake_port"] == hs
    assert kv["remote_dp_rank"] == 0 and kv["remote_dp_rank_override"] is True and kv["tp_size"] == 1
    assert len(kv["remote_block_ids"]) == 1 and len(kv["remote_block_ids"][0]) == 1
    # the blocks stay held until D says where to write and the write is done
    time.sleep(0.1)
    assert app.engine.held() == 1
    tell = dealer(ctx, p_notify)
    tell.send(msgpack.packb({"req_id": "cmpl-d", "transfer_id": tid, "block_notify_list": [7], "decode_rank": 0,
                             "type": "remote_blocks"}))
    parts = d_router.recv_multipart()
    assert len(parts) == 2
    assert msgpack.unpackb(parts[1]) == {"type": "write_done", "transfer_id": tid}
    assert wait_for(lambda: app.engine.held() == 0), "the self-ACK frees the prefill's blocks"
    tell.close()


def test_a_write_decode_sends_remote_blocks_and_streams_after_write_done(ctx, apps):
    d_notify = free_port()
    app = fe.FakeEngineApp("decode", "write", http_port=0, handshake_port=7301, notify_port=d_notify, bind_host="127.0.0.1")
    apps.append(app)
    p_router, p_notify = router(ctx)
    tid = "tx-" + uuid.uuid4().hex
    rid = fe.compose_request_id(fe.zmq_address("127.0.0.1", 6301, p_notify), app.zmq_address)
    result = {}

    def leg():
        result["r"] = post(app.http_port, "/v1/completions",
                           {"model": "m", "prompt": "a b c d e f g h i j k l m n o p q r", "max_tokens": 3, "stream": True,
                            "kv_transfer_params": decode_leg_params(tid)}, {"X-Request-Id": rid})

    t = threading.Thread(target=leg)
    t.start()
    parts = p_router.recv_multipart()
    assert len(parts) == 2
    msg = msgpack.unpackb(parts[1])
    assert list(msg) == ["type", "req_id", "transfer_id", "block_notify_list", "decode_rank"]
    assert msg["type"] == "remote_blocks" and msg["transfer_id"] == tid and msg["decode_rank"] == 0
    assert rid in msg["req_id"] and len(msg["block_notify_list"]) == 2  # 18 tokens in blocks of 16
    time.sleep(0.1)
    assert t.is_alive(), "the decode waits for write_done (there is no D-side timeout in WRITE)"
    done = dealer(ctx, d_notify)
    done.send(msgpack.packb({"type": "write_done", "transfer_id": tid}))
    t.join(120)
    status, ctype, data = result["r"]
    assert status == 200 and ctype == "text/event-stream"
    events = [line[len("data: "):] for line in data.decode().split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks) == " tok1 tok2 tok3"
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert all(c["id"] == "cmpl-" + rid for c in chunks)
    done.close()


@pytest.mark.parametrize("mode", ["write", "read"])
def test_a_prefill_and_a_decode_complete_a_request_over_moriio_frames(apps, mode):
    p = fe.FakeEngineApp("prefill", mode, http_port=0, handshake_port=6301, notify_port=free_port(), bind_host="127.0.0.1")
    apps.append(p)
    d = fe.FakeEngineApp("decode", mode, http_port=0, handshake_port=7301, notify_port=free_port(), bind_host="127.0.0.1")
    apps.append(d)
    tid = "tx-" + uuid.uuid4().hex
    rid = fe.compose_request_id(p.zmq_address, d.zmq_address)
    body = {"model": "m", "messages": [{"role": "user", "content": "hello there fake engines"}], "max_tokens": 4}
    if mode == "write":
        # the proxy dispatches both legs at once
        out = {}
        t = threading.Thread(target=lambda: out.update(p=post(p.http_port, "/v1/chat/completions",
                                                             dict(body, max_tokens=1, kv_transfer_params=prefill_leg_params(tid)),
                                                             {"X-Request-Id": rid})))
        t.start()
        dstatus, _, ddata = post(d.http_port, "/v1/chat/completions",
                                 dict(body, max_tokens=3, kv_transfer_params=decode_leg_params(tid)), {"X-Request-Id": rid})
        t.join(120)
        assert out["p"][0] == 200
    else:
        # the proxy awaits the prefill, then copies remote_engine_id, remote_block_ids and transfer_id
        pstatus, _, pdata = post(p.http_port, "/v1/chat/completions",
                                 dict(body, max_tokens=1, kv_transfer_params=prefill_leg_params(tid)), {"X-Request-Id": rid})
        assert pstatus == 200
        kv = json.loads(pdata)["kv_transfer_params"]
        dparams = dict(decode_leg_params(tid), remote_engine_id=kv["remote_engine_id"],
                       remote_block_ids=kv["remote_block_ids"], transfer_id=kv["transfer_id"])
        dstatus, _, ddata = post(d.http_port, "/v1/chat/completions", dict(body, max_tokens=3, kv_transfer_params=dparams),
                                 {"X-Request-Id": rid})
    assert dstatus == 200
    answer = json.loads(ddata)
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": " tok1 tok2 tok3"}
    assert wait_for(lambda: p.engine.held() == 0 and d.engine.held() == 0), "both sides freed the request"
    sent_by_d = [m["type"] for _, m in d.connector.frames_sent]
    assert sent_by_d == (["remote_blocks"] if mode == "write" else ["release"])
    assert [m["type"] for m in p.connector.frames_received] == sent_by_d
    if mode == "write":
        assert [m["type"] for _, m in p.connector.frames_sent] == ["write_done"]
        assert [m["type"] for m in d.connector.frames_received] == ["write_done"]


def test_hooks_reach_the_node_bridge_in_vllm_order(ctx, apps):
    node, port = router(ctx)
    hooks = []
    tid = "tx-bridge"
    finished = {"p": None}
    canned = {"do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": [[0]],
              "remote_engine_id": "127.0.0.1:6301", "transfer_id": tid}
    stop = threading.Event()

    def answer():
        node.setsockopt(zmq.RCVTIMEO, 100)
        while not stop.is_set():
            try:
                ident, frame = node.recv_multipart()
            except zmq.Again:
                continue
            req = msgpack.unpackb(frame)
            h = req["hook"]
            hooks.append(h)
            args = req.get("args") or {}
            result = {}
            if h == "hello":
                result = {"protocol": 1, "kv_role": args["kv_role"], "mode": args["mode"]}
            elif h == "get_num_new_matched_tokens":
                result = {"num_tokens": 0, "load_async": False}
            elif h == "request_finished":
                finished["p"] = args["request_id"]
                result = {"delay_free": True, "kv_transfer_params": canned}
            elif h == "get_finished":
                result = {"finished_sending": [finished["p"]] if finished["p"] else None, "finished_recving": None,
                          "load_error_blocks": []}
            elif h == "update_connector_output":
                result = {"finished_sending": args["finished_sending"]}
            node.send_multipart([ident, msgpack.packb({"v": 1, "id": req["id"], "ok": True, "result": result})])

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        app = fe.FakeEngineApp("prefill", "write", http_port=0, bridge="tcp://127.0.0.1:%d" % port, bind_host="127.0.0.1")
        apps.append(app)
        status, _, data = post(app.http_port, "/v1/completions",
                               {"prompt": "x y z", "max_tokens": 1, "kv_transfer_params": prefill_leg_params(tid)})
        assert status == 200
        assert json.loads(data)["kv_transfer_params"] == canned
        assert wait_for(lambda: app.engine.held() == 0)
    finally:
        stop.set()
        t.join(5)
    assert hooks[:12] == ["hello", "add_request", "get_num_new_matched_tokens", "update_state_after_alloc",
                          "build_connector_meta", "start_load_kv", "save_kv_layer", "save_kv_layer", "wait_for_save",
                          "get_finished", "request_finished", "update_connector_output"]


def test_bad_requests_get_clear_http_errors(apps):
    app = fe.FakeEngineApp("decode", "write", http_port=0, notify_port=free_port(), bind_host="127.0.0.1")
    apps.append(app)
    status, _, data = post(app.http_port, "/v1/completions", b"{not json")
    assert status == 400 and "bad JSON body" in json.loads(data)["error"]["message"]
    status, _, data = post(app.http_port, "/v1/completions", {"prompt": "x", "max_tokens": 0})
    assert status == 400
    status, _, _ = post(app.http_port, "/v1/nothing", {})
    assert status == 404
    c = http.client.HTTPConnection("127.0.0.1", app.http_port, timeout=30)
    c.request("GET", "/health")
    assert c.getresponse().status == 200
    c.close()
    # a plain (non-disaggregated) request still completes
    status, _, data = post(app.http_port, "/v1/completions", {"prompt": "x", "max_tokens": 2})
    assert status == 200 and json.loads(data)["kv_transfer_params"] is None


def test_the_module_runs_as_a_command_and_stops_on_sigterm(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    env = dict(os.environ, PYTHONPATH=os.path.normpath(src))
    proc = subprocess.Popen([sys.executable, "-m", "kvledger_vllm.fake_engine", "--role", "prefill", "--http-port",
                             str(free_port()), "--notify-port", str(free_port()), "--bind-host", "127.0.0.1"],
                            env=env, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path))
    try:
        line = proc.stderr.readline()
        assert "fake_engine: prefill WRITE ready: http://127.0.0.1:" in line
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    bad = subprocess.run([sys.executable, "-m", "kvledger_vllm.fake_engine", "--role", "nobody"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--role" in bad.stderr


def test_a_chunked_request_body_is_read_whole(apps):
    # kvledger proxy sends its legs' bodies chunked; vLLM's uvicorn takes them
    app = fe.FakeEngineApp("decode", "write", http_port=0, notify_port=free_port(), bind_host="127.0.0.1")
    apps.append(app)
    raw = json.dumps({"prompt": "one two three four", "max_tokens": 3}).encode()
    c = http.client.HTTPConnection("127.0.0.1", app.http_port, timeout=30)
    c.request("POST", "/v1/completions", body=iter([raw[:7], raw[7:]]),
              headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"}, encode_chunked=True)
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    assert r.status == 200
    assert body["usage"]["prompt_tokens"] == 4 and body["choices"][0]["text"] == " tok1 tok2 tok3"


def test_dp_ranks_need_one_bridge_each_and_requests_name_their_rank(apps):
    with pytest.raises(ValueError, match="one --bridge per DP rank"):
        fe.FakeEngineApp("decode", "write", http_port=0, notify_port=free_port(), bind_host="127.0.0.1", dp_size=2)
    app = fe.FakeEngineApp("decode", "write", http_port=0, notify_port=free_port(), bind_host="127.0.0.1")
    apps.append(app)
    assert app.engine_for(None) is app.engines[0] and app.engine_for("0") is app.engines[0]
    status, _, data = post(app.http_port, "/v1/completions", {"prompt": "x", "max_tokens": 1},
                           {"X-data-parallel-rank": "1"})
    assert status == 400 and "not a rank of this engine (DP size 1)" in json.loads(data)["error"]["message"]


def _send_raw(port, body, headers=None):
    """Opens a connection, sends one POST and returns the socket (the test closes it: the client gives up)."""
    data = json.dumps(body).encode()
    h = {"Host": "127.0.0.1", "Content-Type": "application/json", "Content-Length": str(len(data))}
    h.update(headers or {})
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(("POST /v1/completions HTTP/1.1\r\n" + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n").encode()
              + data)
    return s


def test_a_decode_whose_client_gives_up_is_aborted(ctx, apps):
    # a WRITE decode waits for write_done with no timeout of its own: a billion tokens asked, and a caller that left
    app = fe.FakeEngineApp("decode", "write", http_port=0, handshake_port=7301, notify_port=free_port(),
                           bind_host="127.0.0.1")
    apps.append(app)
    p_router, p_notify = router(ctx)
    tid = "tx-" + uuid.uuid4().hex
    rid = fe.compose_request_id(fe.zmq_address("127.0.0.1", 6301, p_notify), app.zmq_address)
    s = _send_raw(app.http_port, {"model": "m", "prompt": "a b c", "max_tokens": 10 ** 9,
                                  "kv_transfer_params": decode_leg_params(tid)}, {"X-Request-Id": rid})
    assert msgpack.unpackb(p_router.recv_multipart()[1])["type"] == "remote_blocks"
    assert app.engine.held() == 1
    s.close()
    assert wait_for(lambda: app.engine.held() == 0), "the request of a client that went away is aborted"
    assert app.engine.aborted == 1
    assert len(app.engine.free) == 1024, "its blocks are free again"
    # the engine serves the next request
    status, _, _ = post(app.http_port, "/v1/completions", {"model": "m", "prompt": "x", "max_tokens": 2})
    assert status == 200


def test_a_stream_whose_client_gives_up_is_aborted(apps):
    app = fe.FakeEngineApp("decode", "write", http_port=0, handshake_port=7301, notify_port=free_port(),
                           bind_host="127.0.0.1")
    apps.append(app)
    s = _send_raw(app.http_port, {"model": "m", "prompt": "a b c", "max_tokens": 10 ** 9, "stream": True})
    got = b""
    while got.count(b"data: ") < 3:
        more = s.recv(4096)
        assert more, "the stream ended early: %r" % got
        got += more
    assert app.engine.held() == 1
    s.close()
    assert wait_for(lambda: app.engine.held() == 0), "the stream of a client that went away is aborted"
    assert app.engine.aborted == 1
    assert len(app.engine.free) == 1024


def test_a_write_decode_over_the_bridge_sends_its_new_requests_as_vllms_scheduler_builds_them(ctx, apps):
    # vLLM 239b5ff30's WRITE consumer builds reqs_to_recv from scheduled_new_reqs: the request comes
    # back WAITING once its KV arrived and is scheduled as new then, with all its blocks and the
    # tokens it received (all but the last: a full hit recomputes it); preempted_req_ids is a set
    node, port = router(ctx)
    calls = []
    tid = "tx-new-reqs"
    recv = {"rid": None, "told": False}
    stop = threading.Event()

    def answer():
        node.setsockopt(zmq.RCVTIMEO, 100)
        while not stop.is_set():
            try:
                ident, frame = node.recv_multipart()
            except zmq.Again:
                continue
            req = msgpack.unpackb(frame)
            h, args = req["hook"], req.get("args") or {}
            calls.append((h, args))
            result = {}
            if h == "hello":
                result = {"protocol": 1, "kv_role": args["kv_role"], "mode": args["mode"]}
            elif h == "get_num_new_matched_tokens":
                result = {"num_tokens": 18, "load_async": True}
            elif h == "update_state_after_alloc" and args["num_external_tokens"] > 0:
                recv["rid"] = args["request_id"]
            elif h == "get_finished":
                done = [recv["rid"]] if recv["rid"] and not recv["told"] else None
                recv["told"] = recv["told"] or bool(done)
                result = {"finished_sending": None, "finished_recving": done, "load_error_blocks": []}
            elif h == "request_finished":
                result = {"delay_free": False, "kv_transfer_params": None}
            node.send_multipart([ident, msgpack.packb({"v": 1, "id": req["id"], "ok": True, "result": result})])

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        app = fe.FakeEngineApp("decode", "write", http_port=0, bridge="tcp://127.0.0.1:%d" % port, bind_host="127.0.0.1")
        apps.append(app)
        rid = fe.compose_request_id(fe.zmq_address("127.0.0.1", 6301, 61005), app.zmq_address)
        status, _, _ = post(app.http_port, "/v1/completions",
                            {"prompt": "a b c d e f g h i j k l m n o p q r", "max_tokens": 2,
                             "kv_transfer_params": decode_leg_params(tid)}, {"X-Request-Id": rid})
        assert status == 200
        assert wait_for(lambda: app.engine.held() == 0)
    finally:
        stop.set()
        t.join(5)
    allocs = [a for h, a in calls if h == "update_state_after_alloc"]
    metas = [a for h, a in calls if h == "build_connector_meta"]
    # allocated for the load (18 external tokens), then again, with none, when scheduled after it
    assert [a["num_external_tokens"] for a in allocs] == [18, 0]
    assert allocs[0]["block_ids"] == allocs[1]["block_ids"] and len(allocs[0]["block_ids"][0]) == 2
    assert all(m["preempted_req_ids"] == [] for m in metas)
    new = [m["scheduled_new_reqs"] for m in metas if m["scheduled_new_reqs"]]
    assert len(new) == 1 and len(new[0]) == 1, metas
    n = new[0][0]
    assert n["request_id"].endswith(rid) or n["request_id"] == recv["rid"]
    assert n["block_ids"] == allocs[0]["block_ids"]
    assert n["num_computed_tokens"] == 17
    assert n["kv_transfer_params"]["transfer_id"] == tid
    # scheduled while it waited for its KV: not a new request then
    first = next(i for i, m in enumerate(metas) if m["scheduled_new_reqs"])
    assert first > 0 and all(m["scheduled_new_reqs"] == [] for m in metas[:first])


class _Stub:
    """A connector that answers like a bare engine (nothing external) and records each step."""

    def __init__(self):
        self.steps = []
        self.queries = []

    def add_request(self, req):
        pass

    def get_num_new_matched_tokens(self, req, num_computed):
        self.queries.append(req.id)
        return 0, False

    def update_state_after_alloc(self, req, blocks, num_external):
        pass

    def build_connector_meta(self, step, cached, new_reqs=None, preempted=None):
        self.steps.append({"cached": [(rid, list(b)) for rid, b in cached],
                           "new": [(r.id, list(b), n) for r, b, n in new_reqs], "preempted": list(preempted)})

    def forward(self):
        pass

    def get_finished(self):
        return [], []

    def request_finished(self, req, status, blocks):
        return False, None

    def update_connector_output(self, sending, recving):
        return None


def test_a_full_block_pool_preempts_the_last_running_request_as_vllm_does():
    # 4 blocks of 16 tokens, two prompts of 32 tokens: the first one's third token of output needs a
    # third block, so the last running request is preempted (its blocks freed, its progress lost) and
    # comes back later as a resumed request (in the cached requests, all its blocks), asked again
    c = _Stub()
    e = fe.FakeEngine(c, num_blocks=4, block_size=16)
    a = e.submit(fe.Req("a", 32, 3, None))
    b = e.submit(fe.Req("b", 32, 3, None))
    for _ in range(8):
        e._step()
    assert c.steps[0]["new"] == [("a", [0, 1], 0), ("b", [2, 3], 0)] and c.steps[0]["preempted"] == []
    assert c.steps[1]["preempted"] == ["b"] and c.steps[1]["new"] == []
    assert c.steps[1]["cached"] == [("a", [2])]
    resumed = [i for i, s in enumerate(c.steps) if any(rid == "b" for rid, _ in s["cached"])]
    assert resumed, c.steps
    s = c.steps[resumed[0]]
    assert s["new"] == [] and len(dict(s["cached"])["b"]) == 2
    assert c.queries == ["a", "b", "b"]
    assert e.preempted == 1 and a.done.is_set() and b.done.is_set() and a.output == 3 and b.output == 3

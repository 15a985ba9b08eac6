"""The drive client over a Unix domain socket (``drive_node: unix:///PATH``): the same maps, each frame
preceded by its length. The node here is a socket of the test's own; UnixBridgeTransportTest and
PythonBridgeInteropTest (modules/zmq) run the real engine bridge against this client."""

import socket
import struct
import threading

import msgpack
import pytest
import zmq

from kvledger_vllm.drive import DriveError, NodeBridge, long_form


class UnixNode:
    """Answers each frame as ``answer(request)`` says (a reply, a list of replies, or None: no answer),
    each written whole or, with ``split``, a byte at a time."""

    def __init__(self, path, answer, split=False):
        self.path = path
        self.answer = answer
        self.split = split
        self.calls = []
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(1)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            c, _ = self.srv.accept()
        except OSError:
            return
        buf = bytearray()
        with c:
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    return
                buf += chunk
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">I", buf)[0]:
                    n = struct.unpack_from(">I", buf)[0]
                    req = msgpack.unpackb(bytes(buf[4:4 + n]))
                    del buf[:4 + n]
                    self.calls.append(req["hook"])
                    replies = self.answer(req)
                    if replies is None:
                        continue
                    for reply in replies if isinstance(replies, list) else [replies]:
                        out = msgpack.packb(reply)
                        framed = struct.pack(">I", len(out)) + out
                        if self.split:  # a frame that arrives in pieces is read whole
                            for i in range(len(framed)):
                                c.sendall(framed[i:i + 1])
                        else:
                            c.sendall(framed)

    def close(self):
        self.srv.close()


def ok(req):
    return {"v": 1, "id": req["id"], "ok": True, "result": {"hook": req["hook"]}}


@pytest.mark.parametrize("split", [False, True])
def test_calls_are_answered_over_a_unix_socket(tmp_path, split):
    path = str(tmp_path / "node.sock")
    node = UnixNode(path, ok, split)
    bridge = NodeBridge("unix://" + path, timeout_ms=5000)
    try:
        assert bridge.call("ping") == {"hook": "ping"}
        for _ in range(20):
            assert bridge.call("get_finished") == {"hook": "get_finished"}
        assert node.calls == ["ping"] + ["get_finished"] * 20
    finally:
        bridge.close()
        node.close()


def test_an_error_answer_a_timeout_and_a_late_answer(tmp_path):
    path = str(tmp_path / "node.sock")
    answers = iter([
        lambda r: {"v": 1, "id": r["id"], "ok": False, "error": "node busy"},
        lambda r: None,  # no answer: the call times out
        # the late answer to the call that timed out comes first, then this call's
        lambda r: [{"v": 1, "id": r["id"] - 1, "ok": True, "result": {"late": True}}, ok(r)],
    ])
    node = UnixNode(path, lambda r: next(answers)(r))
    bridge = NodeBridge("unix://" + path, timeout_ms=300)
    try:
        with pytest.raises(DriveError, match="node busy"):
            bridge.call("request_finished")
        with pytest.raises(DriveError, match="did not answer"):
            bridge.call("get_finished")
        assert bridge.call("get_finished") == {"hook": "get_finished"}  # the late answer skipped
    finally:
        bridge.close()
        node.close()


def test_no_node_at_the_path_is_a_drive_error(tmp_path):
    bridge = NodeBridge("unix://" + str(tmp_path / "absent.sock"), timeout_ms=300)
    try:
        with pytest.raises(DriveError, match="cannot reach the kvledger node"):
            bridge.call("hello")
    finally:
        bridge.close()


class SlowNode(UnixNode):
    """Reads nothing until ``go`` is set (a node busy elsewhere): the socket's buffers fill up."""

    def __init__(self, path, answer):
        self.go = threading.Event()
        super().__init__(path, answer)

    def run(self):
        self.go.wait(30)
        super().run()


def test_unawaited_calls_to_a_node_that_does_not_read_wait_in_order_and_are_neither_blocked_nor_dropped(tmp_path):
    """Calls sent without waiting, several times what the socket's buffers hold, while the node reads
    nothing: each send returns at once (nothing is refused or counted), the frames wait in the
    client's buffer, and once the node reads, every call arrives, in order, and is answered."""
    path = str(tmp_path / "node.sock")
    node = SlowNode(path, ok)
    bridge = NodeBridge("unix://" + path, timeout_ms=5000)
    seen = []
    try:
        n = 3000
        pad = "x" * 2000  # about 6 MB in all
        for i in range(n):
            bridge.send("add_request", on_result=lambda r, i=i: seen.append(i), request_id=f"r-{i}", pad=pad)
        assert bridge.failures == 0 and bridge.unread == n
        assert bridge._sock.pending_out() > 0  # the kernel took only part of it
        node.go.set()
        assert bridge.flush(10000) == 0
        assert bridge.failures == 0 and seen == list(range(n))
        assert node.calls == ["add_request"] * n
        assert bridge.call("get_finished") == {"hook": "get_finished"}
    finally:
        node.go.set()
        bridge.close()
        node.close()


class FrameLog:
    """Takes the frames a NodeBridge sends (nothing answers)."""

    def __init__(self):
        self.frames = []

    def send(self, frame, flags=0):
        self.frames.append(bytes(frame))

    def recv(self, flags=0):
        raise zmq.Again()

    def close(self):
        pass


def logged_bridge(on_failure=None, compact=False):
    """A batching NodeBridge whose frames go to a FrameLog instead of a socket."""
    bridge = NodeBridge("unix:///nowhere", 1000, on_failure=on_failure)
    bridge._sock.close()
    bridge._sock = log = FrameLog()
    bridge.batching = True
    bridge.compact = compact
    return bridge, log


def test_a_batch_and_a_lone_call_are_the_bytes_of_their_whole_maps_packed_at_once():
    """The buffered calls are packed a few dozen at a time, not as they come; the frames are still byte for byte
    what packing each whole map gives (the node reads the same calls, ids and order)."""
    bridge, log = logged_bridge()
    params = {"transfer_id": "tx-1", "remote_block_ids": [[1, 2]], "x": None, "f": 0.5, "b": True}
    bridge.send("add_request", request_id="r-1", kv_transfer_params=params)
    bridge.send("update_state_after_alloc", request_id="r-1", block_ids=[[3, 4]], num_external_tokens=0)
    bridge.send("build_connector_meta", flush=True, step=1, cached_req_ids=[])
    bridge.send("update_connector_output", flush=True, finished_sending=None)
    assert log.frames == [
        msgpack.packb({"v": 1, "id": 4, "hook": "batch", "args": {"calls": [
            {"id": 1, "hook": "add_request", "args": {"request_id": "r-1", "kv_transfer_params": params}},
            {"id": 2, "hook": "update_state_after_alloc",
             "args": {"request_id": "r-1", "block_ids": [[3, 4]], "num_external_tokens": 0}},
            {"id": 3, "hook": "build_connector_meta", "args": {"step": 1, "cached_req_ids": []}}]}}),
        msgpack.packb({"v": 1, "id": 5, "hook": "update_connector_output", "args": {"finished_sending": None}})]
    assert bridge.batches == 1 and bridge.unread == 4


def test_compact_rows_go_into_the_batch_as_arrays_in_call_order_among_long_form_calls():
    """Compact calls (``send_row``) are packed together when the batch goes out or a long-form call
    follows them; the frame is still byte for byte the whole batch map packed at once, each compact
    call an array ``[id, hook, *fields]`` in its place; a compact call alone goes as a batch of one;
    ``max_batch`` counts both kinds."""
    bridge, log = logged_bridge(compact=True)
    params = {"transfer_id": "tx-1", "x": None, "f": 0.5, "b": True}
    rows = [("r-%d" % i, 64, 64, params) for i in range(20)]  # more than a fixarray's 15
    for r in rows:
        bridge.send_row("add_request", r)
    bridge.send("request_finished", request_id="r-0", status="FINISHED_ABORTED", block_ids=[])
    bridge.send_row("update_state_after_alloc", ("r-1", ([3, 4],), 0))
    bridge.send_row("build_connector_meta", (1, [], [], [("r-1", ([3, 4],), 0, None)], None), flush=True)
    bridge.send_row("build_connector_meta", (2, [], []), flush=True)
    calls = [[i + 1, "add_request", *r] for i, r in enumerate(rows)]
    calls.append({"id": 21, "hook": "request_finished",
                  "args": {"request_id": "r-0", "status": "FINISHED_ABORTED", "block_ids": []}})
    calls += [[22, "update_state_after_alloc", "r-1", [[3, 4]], 0],
              [23, "build_connector_meta", 1, [], [], [["r-1", [[3, 4]], 0, None]], None]]
    assert log.frames == [
        msgpack.packb({"v": 1, "id": 24, "hook": "batch", "args": {"calls": calls}}),
        msgpack.packb({"v": 1, "id": 26, "hook": "batch", "args": {"calls": [[25, "build_connector_meta", 2, [], []]]}})]
    assert bridge.batches == 2 and bridge.unread == 24
    # a full buffer goes out at once, whatever its calls' forms
    bridge.max_batch = 3
    bridge.send("update_connector_output", finished_sending=None)
    bridge.send_row("add_request", rows[0])
    assert len(log.frames) == 2
    bridge.send_row("add_request", rows[1])
    assert len(log.frames) == 3 and [long_form(c)["hook"] for c in msgpack.unpackb(log.frames[2])["args"]["calls"]] == [
        "update_connector_output", "add_request", "add_request"]


def test_a_compact_batchs_empty_answers_may_be_ids_alone_in_order_or_not():
    """The node answers an empty result of a compact batch's call with the call's id alone: settled
    as ``{}`` (on_result called with it), in order or, past a reply out of order, by id; a missing
    answer is still a failure."""
    failures, got = [], []
    bridge = NodeBridge("unix:///nowhere", 1000, on_failure=lambda h, e: failures.append(h))
    for ordered in (True, False):
        failures.clear()
        got.clear()
        bridge._unread = {i: ("h%d" % i, got.append) for i in (1, 2, 3, 4)}
        bridge._batches = {9: [1, 2, 3, 4]}
        replies = [1, {"v": 1, "id": 2, "ok": True, "result": {"n": 1}}, 3]
        if not ordered:
            replies = [replies[1], 3, 1]
        bridge._settle(9, {"v": 1, "id": 9, "ok": True, "result": {"replies": replies}})
        assert sorted(map(len, got)) == [0, 0, 1] and {"n": 1} in got
        assert failures == ["h4"] and bridge.unread == 0
    # an awaited call answered by its id alone gets an empty result
    bridge._unread = {5: ("h5", None)}
    bridge._batches = {10: [5, 6]}
    mine = bridge._settle_batch(10, {"v": 1, "id": 10, "ok": True, "result": {"replies": [5, 6]}}, 6)
    assert mine["ok"] and mine["result"] == {} and bridge.unread == 0


def test_a_compact_call_msgpack_cannot_pack_fails_alone():
    """An int past 64 bits in one row: that call fails (on_failure), the calls before and after it go
    out in one valid batch, in order."""
    failures = []
    bridge, log = logged_bridge(on_failure=lambda h, e: failures.append((h, str(e))), compact=True)
    bridge.send("update_connector_output", finished_sending=None)
    bridge.send_row("add_request", ("r-1", 1, 1, None))
    bridge.send_row("add_request", ("r-2", 1, 1, {"big": 2 ** 70}))
    bridge.send_row("add_request", ("r-3", 1, 1, None), flush=True)
    assert len(failures) == 1 and failures[0][0] == "add_request" and "cannot pack" in failures[0][1]
    calls = msgpack.unpackb(log.frames[0])["args"]["calls"]
    assert [long_form(c)["hook"] for c in calls] == ["update_connector_output", "add_request", "add_request"]
    assert [c[2] for c in calls[1:]] == ["r-1", "r-3"] and bridge.unread == 3


def test_a_long_form_call_msgpack_cannot_pack_fails_alone():
    """A batched long-form call with an int past 64 bits, or a value msgpack has no form for: that call
    fails (on_failure, once each), every other buffered call (long-form and compact, before and after
    it) goes out in the batch, in order."""
    failures = []
    bridge, log = logged_bridge(on_failure=lambda h, e: failures.append((h, str(e))), compact=True)
    bridge.send("update_connector_output", finished_sending=None)
    bridge.send("request_finished", request_id="r-0", block_ids=[1])
    bridge.send("request_finished", request_id="r-big", block_ids=[2 ** 70])
    bridge.send_row("add_request", ("r-1", 1, 1, None))
    bridge.send("request_finished", request_id="r-obj", block_ids=[object()])  # alone between rows
    bridge.send_row("add_request", ("r-2", 1, 1, None))
    bridge.send("update_connector_output", finished_sending=None)
    bridge.send("request_finished", request_id="r-big", block_ids=[2 ** 64])
    bridge.send("request_finished", request_id="r-3", block_ids=[3], flush=True)
    assert [h for h, _ in failures] == ["request_finished"] * 3
    assert all("cannot pack" in e for _, e in failures)
    assert len(log.frames) == 1
    calls = [long_form(c) for c in msgpack.unpackb(log.frames[0])["args"]["calls"]]
    assert [c["id"] for c in calls] == [1, 2, 4, 6, 7, 9]
    assert [c["args"].get("request_id") for c in calls] == [None, "r-0", "r-1", "r-2", None, "r-3"]
    assert bridge.unread == 6 and bridge.failures == 3


def test_a_lone_long_form_call_msgpack_cannot_pack_fails_and_the_next_goes_out():
    failures = []
    bridge, log = logged_bridge(on_failure=lambda h, e: failures.append(h))
    bridge.send("request_finished", request_id="r-big", block_ids=[2 ** 70], flush=True)
    assert failures == ["request_finished"] and log.frames == [] and bridge.unread == 0
    bridge.send("request_finished", request_id="r-1", block_ids=[1], flush=True)
    assert [msgpack.unpackb(f)["args"]["request_id"] for f in log.frames] == ["r-1"]


def test_an_awaited_call_msgpack_cannot_pack_raises_and_the_buffered_calls_stay():
    """``call`` with an unpackable argument raises DriveError; the calls buffered before it are not
    lost: they go out with the next call."""
    bridge, log = logged_bridge()
    bridge.send("update_connector_output", finished_sending=None)
    with pytest.raises(DriveError, match="cannot pack"):
        bridge.call("get_num_new_matched_tokens", request_id="r-big", num_computed_tokens=2 ** 70)
    assert log.frames == []
    bridge.send("request_finished", request_id="r-1", block_ids=[1], flush=True)
    calls = msgpack.unpackb(log.frames[0])["args"]["calls"]
    assert [c["hook"] for c in calls] == ["update_connector_output", "request_finished"]

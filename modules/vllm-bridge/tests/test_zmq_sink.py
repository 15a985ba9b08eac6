"""The ZMQ sink (``record_to: tcp://...``): the same stream as the file sink, and it never blocks."""

import json
import socket
import threading
import time

import zmq

import driver
from driver import Driver, make_config, producer_requests
from kvledger_vllm import KvledgerRecorderConnector
from kvledger_vllm.stream import unfold
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Pull:
    """A PULL socket standing in for the shadow node: collects messages per stream."""

    def __init__(self, port):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.PULL)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(f"tcp://127.0.0.1:{port}")
        self.messages = []

    def collect(self, until, timeout_s=120.0):
        deadline = time.monotonic() + timeout_s
        while not until(self.messages) and time.monotonic() < deadline:
            if self.sock.poll(100):
                env, header, batch = self.sock.recv_multipart()
                self.messages.append((json.loads(env), json.loads(header), batch.decode("utf-8")))
        return self.messages

    def close(self):
        self.sock.close()
        self.ctx.term()


def ended(n):
    return lambda msgs: sum(1 for m in msgs if m[0]["end"]) >= n


def lines_of(msgs, role):
    out = []
    for env, _, batch in msgs:
        if env["role"] == role and batch:
            out.extend(json.loads(x) for x in batch.split("\n"))
    return unfold(out)


def test_the_node_receives_the_file_sinks_lines_numbered_with_the_header_in_every_message(tmp_path):
    port = free_port()
    pull = Pull(port)
    try:
        driver.play(str(tmp_path), "healthy", "producer", record_to=f"tcp://127.0.0.1:{port}")
        msgs = pull.collect(ended(2))
    finally:
        pull.close()
    assert sum(1 for m in msgs if m[0]["end"]) == 2
    by_stream = {}
    for env, header, _ in msgs:
        by_stream.setdefault((env["stream"], env["role"]), []).append(env)
        assert header["kind"] == "header" and header["node_id"] == ("P0-10.0.0.1-6301" if env["role"] == "scheduler" else "P0-tp0-10.0.0.1-6301")
        assert env["v"] == 1 and env["dp"] == 0 and env["tp"] == 0 and env["dropped"] == 0
    assert sorted(r for _, r in by_stream) == ["scheduler", "worker"]
    for envs in by_stream.values():  # consecutive line numbers, the header being line 0
        expect = 1
        for e in envs:
            assert e["first"] == expect
            expect += e["count"]
    # the same entries, in the same order, as the file sink writes for the same run
    sched_file, worker_file = driver.play(str(tmp_path / "files"), "healthy", "producer")
    for role, path in (("scheduler", sched_file), ("worker", worker_file)):
        with open(path, encoding="utf-8") as f:
            from_file = unfold([json.loads(x) for x in f.read().splitlines()[1:]])
        over_zmq = lines_of(msgs, role)
        strip = lambda ls: [{k: v for k, v in x.items() if k != "at_ns"} for x in ls]  # noqa: E731
        assert strip(over_zmq) == strip(from_file)


def test_nobody_listening_never_blocks_the_engine_and_the_drops_are_counted(tmp_path):
    port = free_port()  # nothing binds it
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": f"tcp://127.0.0.1:{port}", "record_layers": True, "record_zmq_hwm": 2}
    cfg = make_config("kv_producer", extra)
    sched = KvledgerRecorderConnector(cfg, KVConnectorRole.SCHEDULER, None)
    worker = KvledgerRecorderConnector(cfg, KVConnectorRole.WORKER, None)
    done = threading.Event()

    flushed = []

    def run():
        d = Driver(sched, worker)
        for r in producer_requests(n=20):
            d.add(r)
        for _ in range(40):
            d.step()
            # each step's lines are their own writer batch, so the ZMQ queue of 2 messages overflows
            # whatever the machine's load; a sink that blocked on the full queue would hold this flush
            flushed.append(sched.recording_stream.flush(120))
        done.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(120)
    assert done.is_set(), "the driver did not finish: the recorder blocked it"
    assert flushed == [True] * 40, flushed
    sink = sched.recording_stream._sink
    assert sched.recording_stream.flush(120)
    assert sink.sent_messages == 2  # what ZMQ queues for a peer that may come
    # every batch beyond those two is dropped and counted, none waited for: one a step at least
    assert sink.dropped_messages >= 38 and sink.dropped_lines >= 38
    assert sink.sent_lines + sink.dropped_lines == sched.recording_stream.written  # every line sent or counted
    assert sched.recording_stream.dropped == 0 and sched.recording_stream.write_errors == 0
    closer = threading.Thread(target=lambda: (sched.shutdown(), worker.shutdown()), daemon=True)
    closer.start()
    closer.join(120)
    assert not closer.is_alive(), "shutdown blocked on a node that never came"


def test_the_sink_reaches_a_node_that_comes_late_and_one_that_restarts(tmp_path):
    port = free_port()
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": f"tcp://127.0.0.1:{port}"}
    sched = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    reqs = producer_requests(n=3)
    sched.on_new_request(reqs[0])  # nobody listens yet: ZMQ keeps the message
    assert sched.recording_stream.flush(120)
    pull = Pull(port)
    try:
        first = pull.collect(lambda m: len(m) >= 1)
        assert lines_of(first, "scheduler")[0]["request_id"] == reqs[0].request_id
        pull.close()
        # the node restarts: the sink reconnects by itself; the next messages carry the header again
        pull = Pull(port)
        deadline = time.monotonic() + 120
        got = []
        while not got and time.monotonic() < deadline:
            sched.on_new_request(reqs[1])  # a message lost while reconnecting shows as a gap
            assert sched.recording_stream.flush(120)
            got = pull.collect(lambda m: len(m) >= 1, timeout_s=0.5)
        assert got, "the sink did not reconnect"
        env, header, batch = got[0]
        assert header["node_id"] == "P0-10.0.0.1-6301" and env["first"] > 1 and json.loads(batch)["type"] == "request_admitted"
    finally:
        sched.shutdown()
        pull.close()

"""The recorder never breaks or blocks the engine."""

import json
import logging
import threading

import pytest

import driver
import fakes
from driver import Driver, make_config, producer_requests
from kvledger_vllm import KvledgerRecorderConnector, recorder_class_for
from kvledger_vllm.stream import DROP_REASON_PREFIX, Stream
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
from vllm.v1.request import Request


def _rec(tmp_path, inner="ScriptedConnector", role=KVConnectorRole.SCHEDULER, **more):
    extra = {"inner_connector": inner, "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}-dp{dp}-tp{tp}.jsonl"), **more}
    return recorder_class_for(getattr(fakes, inner))(make_config("kv_producer", extra), role, None)


class BadBlocks:
    def get_block_ids(self):
        raise RuntimeError("recorder-side failure")


def test_recorder_errors_never_escape_and_are_logged_once(tmp_path, caplog):
    rec = _rec(tmp_path)
    # no do_remote_decode: the inner stages no save and never reads the blocks (which would raise in it)
    req = Request("r1", [1, 2, 3], {"transfer_id": "tx-1"})
    with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
        for _ in range(3):
            assert rec.update_state_after_alloc(req, BadBlocks(), 0) is None
    assert [c[0] for c in rec.inner.calls].count("update_state_after_alloc") == 3  # delegated every time
    errors = [r for r in caplog.records if "recording update_state_after_alloc failed" in r.getMessage()]
    assert len(errors) == 1
    assert rec._errors["update_state_after_alloc"] == 3
    rec.shutdown()


def test_odd_inner_replies_do_not_make_the_recorder_raise(tmp_path):
    # The echo inner answers sentinels where tuples are expected: recording them fails, quietly.
    rec = _rec(tmp_path, inner="EchoConnector")
    req = Request("r1", [1, 2, 3])
    assert isinstance(rec.get_num_new_matched_tokens(req, 0), fakes.Sentinel)
    assert isinstance(rec.request_finished(req, [1]), fakes.Sentinel)
    assert isinstance(rec.get_finished(set()), fakes.Sentinel)
    assert set(rec._errors) == {"get_num_new_matched_tokens", "request_finished", "get_finished"}
    rec.shutdown()


def test_a_request_object_missing_fields_does_not_break_the_call(tmp_path):
    class Bare:
        request_id = "bare"
    rec = _rec(tmp_path, inner="EchoConnector")
    assert isinstance(rec.on_new_request(Bare()), fakes.Sentinel)
    rec.shutdown()


def test_inner_exceptions_reach_vllm_unchanged(tmp_path):
    rec = _rec(tmp_path, inner="RaisingConnector")
    req = Request("r1", [1, 2, 3], {"do_remote_decode": True})
    with pytest.raises(fakes.RaisingConnector.Boom) as e:
        rec.request_finished(req, [1])
    assert str(e.value) == "inner failed"


def test_an_unwritable_path_leaves_the_engine_running(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
        rec = KvledgerRecorderConnector(make_config("kv_producer", {
            "inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
            "record_to": str(blocker / "sub" / "{role}.jsonl")}), KVConnectorRole.SCHEDULER, None)
    assert rec.recording_stream is None and "recording is off" in caplog.text
    assert rec.get_num_new_matched_tokens(Request("r", [1]), 0) == (0, False)


class StalledSink:
    """A sink whose writes block until released (a full disk, a stuck NFS mount)."""

    def __init__(self):
        self.release = threading.Event()
        self.entered = threading.Event()
        self.lines = []

    def write_lines(self, lines):
        self.entered.set()
        self.release.wait()
        self.lines.extend(lines)

    def close(self):
        pass


def test_a_stalled_writer_never_blocks_the_driver(tmp_path):
    sched = _rec(tmp_path)
    worker = _rec(tmp_path, role=KVConnectorRole.WORKER, record_layers=True)
    for r in (sched, worker):
        r.recording_stream.close()
    sinks = []
    for r in (sched, worker):
        sink = StalledSink()
        sinks.append(sink)
        r._stream = Stream({"kind": "header", "type": "header", "node_id": "P0", "kv_role": "kv_producer",
                            "transfer_mode": "WRITE"}, sink, maxsize=16)
    for s in sinks:
        assert s.entered.wait(30)  # the writer thread is inside a write that does not return
    d = Driver(sched, worker, producer=True)
    reqs = producer_requests(n=50)
    done = threading.Event()

    def play():
        for q in reqs:
            d.add(q)
        d.run(100)
        done.set()

    t = threading.Thread(target=play, daemon=True)
    t.start()
    t.join(60)  # a safety net for a broken recorder, not a timing assertion
    # The driver finished every call while both writers were still blocked in their first write.
    assert done.is_set()
    assert not any(s.release.is_set() for s in sinks) and all(s.lines == [] for s in sinks)
    st = sched.recording_stream
    # far more hook calls than the queue holds went through while nothing could be written
    assert d.calls > 500 and st.captured > 10 * 16
    assert st.dropped > 0 and st.captured > st.dropped
    # Released, the writers catch up, and the stream says how much is missing.
    for s in sinks:
        s.release.set()
    for r in (sched, worker):
        r.recording_stream.close()
    sl = [json.loads(x) for x in sinks[0].lines]
    drops = [e for e in sl if e["type"] == "frame_rejected"]
    assert len(drops) >= 1 and drops[0]["reason"].startswith(DROP_REASON_PREFIX)
    n_dropped = sum(int(e["reason"][len(DROP_REASON_PREFIX):].split()[0]) for e in drops)
    assert n_dropped == st.dropped
    recorded = [e for e in sl[1:] if e["kind"] == "input" and e["type"] != "frame_rejected"]
    assert len(recorded) + st.dropped == st.captured


def test_inputs_never_go_backwards_in_the_file(tmp_path):
    st = Stream({"kind": "header", "type": "header", "node_id": "P0", "kv_role": "kv_producer",
                 "transfer_mode": "WRITE"}, StalledSink(), maxsize=16)
    st._sink.release.set()
    st._q.offer(("tick", 200, {}, None, None))
    st._q.offer(("tick", 100, {}, None, None))
    st.close()
    # written on the epoch axis: the capture's monotonic time plus the stream's anchor
    ticks = [json.loads(x)["at_ns"] - st._epoch_offset_ns for x in st._sink.lines[1:]]
    assert ticks == [200, 200]


def test_a_metadata_reply_that_cannot_be_converted_leaves_the_step_recorded(tmp_path):
    from kvledger_vllm.stream import FileSink

    def broken():
        raise ValueError("not block ids")

    path = tmp_path / "s.jsonl"
    s = Stream({"kind": "header", "type": "header", "format_version": 1, "node_id": "P0"}, FileSink(str(path)))
    s.put("step_scheduled", {"step": 1, "scheduled_cached_reqs": []}, "metadata_built", broken)
    s.put("step_scheduled", {"step": 2, "scheduled_cached_reqs": []}, "metadata_built",
          lambda: {"step": 2, "reqs_to_recv": [], "reqs_to_save": [], "reqs_to_send": [], "mapping_size": 0})
    s.close()
    types = [(e["type"], e.get("step")) for e in map(json.loads, path.read_text().splitlines()[1:])]
    assert types == [("step_scheduled", 1), ("step_scheduled", 2), ("metadata_built", 2)]
    assert s.write_errors == 1

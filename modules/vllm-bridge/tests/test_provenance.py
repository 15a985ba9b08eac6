"""What a recording says of where it came from (the header) and what each step scheduled."""

import enum
import json
import sys
import types

import pytest

import driver
import fakes
from driver import make_config
from kvledger_vllm import KvledgerRecorderConnector, recorder
from kvledger_vllm.stream import Stream, _CaptureQueue, unfold
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole


def lines(path):
    with open(path, encoding="utf-8") as f:
        return unfold([json.loads(line) for line in f if line.strip()])


def _header(tmp_path, role=KVConnectorRole.SCHEDULER, kv_role="kv_producer", inner="ScriptedConnector", **extra):
    extra = dict({"inner_connector": inner, "inner_connector_module_path": "fakes",
                  "record_to": str(tmp_path / "{role}.jsonl")}, **extra)
    rec = KvledgerRecorderConnector(make_config(kv_role, extra), role, None)
    rec.shutdown()
    return lines(tmp_path / ("scheduler.jsonl" if role == KVConnectorRole.SCHEDULER else "worker.jsonl"))[0]


@pytest.fixture
def vllm_version(monkeypatch):
    import vllm

    def set_version(version, commit_module=None):
        monkeypatch.setattr(vllm, "__version__", version, raising=False)
        if commit_module is not None:
            monkeypatch.setitem(sys.modules, "vllm._version", commit_module)
        else:
            monkeypatch.delitem(sys.modules, "vllm._version", raising=False)
    return set_version


def test_the_header_names_the_vllm_version_its_commit_and_the_inner_connector(tmp_path, vllm_version):
    vllm_version("0.11.1.dev1234+g239b5ff30.d20260518")
    h = _header(tmp_path)
    assert h["vllm_version"] == "0.11.1.dev1234+g239b5ff30.d20260518"
    assert h["vllm_commit"] == "239b5ff30"
    assert h["inner_connector"] == "fakes.ScriptedConnector"
    assert "profile" not in h  # kvledger picks it from the version; the recorder does not guess


def test_the_commit_comes_from_vllms_version_module_first(tmp_path, vllm_version):
    vllm_version("0.12.0", types.SimpleNamespace(__commit_id__="g3c201bf24f9a"))
    h = _header(tmp_path)
    assert (h["vllm_version"], h["vllm_commit"]) == ("0.12.0", "3c201bf24f9a")


def test_a_release_without_a_commit_leaves_the_key_out(tmp_path, vllm_version):
    vllm_version("0.11.0")
    h = _header(tmp_path)
    assert h["vllm_version"] == "0.11.0" and "vllm_commit" not in h


def test_an_unknown_version_leaves_both_keys_out(tmp_path, monkeypatch):
    import vllm
    monkeypatch.delattr(vllm, "__version__", raising=False)
    monkeypatch.delitem(sys.modules, "vllm._version", raising=False)
    h = _header(tmp_path)
    assert "vllm_version" not in h and "vllm_commit" not in h


class _Mode(enum.Enum):
    READ = "read"
    WRITE = "write"


def test_the_mode_is_the_one_the_inner_resolved(tmp_path, monkeypatch):
    # the inner says READ (as MoRIIO at 239b5ff30 does from VLLM_MORIIO_CONNECTOR_READ_MODE) while
    # the extra config says nothing: the header follows the inner
    monkeypatch.setattr(fakes.ScriptedConnector, "mode", _Mode.READ, raising=False)
    assert _header(tmp_path)["transfer_mode"] == "READ"
    monkeypatch.setattr(fakes.ScriptedConnector, "mode", _Mode.WRITE, raising=False)
    assert _header(tmp_path, read_mode="true")["transfer_mode"] == "WRITE"


@pytest.mark.parametrize("value,mode", [("1", "READ"), ("True", "READ"), ("TRUE", "READ"), ("true", "READ"),
                                        ("0", "WRITE"), ("yes", "WRITE"), (" true", "WRITE"), (None, "WRITE")])
def test_without_the_inners_word_the_environment_decides_as_vllm_parses_it(tmp_path, monkeypatch, value, mode):
    if value is None:
        monkeypatch.delenv("VLLM_MORIIO_CONNECTOR_READ_MODE", raising=False)
    else:
        monkeypatch.setenv("VLLM_MORIIO_CONNECTOR_READ_MODE", value)
    assert recorder.resolve_mode(None, {}) == mode


def test_the_inners_module_get_moriio_mode_is_asked_before_the_extra_config(monkeypatch):
    module = types.ModuleType("moriio_like")

    class Inner:
        pass
    Inner.__module__ = "moriio_like"
    module.get_moriio_mode = lambda: _Mode.READ  # 239b5ff30: no arguments, the environment
    monkeypatch.setitem(sys.modules, "moriio_like", module)
    assert recorder.resolve_mode(Inner(), {"read_mode": "false"}) == "READ"
    module.get_moriio_mode = lambda ktc: _Mode.WRITE if ktc == "ktc" else _Mode.READ  # later: the config
    assert recorder.resolve_mode(Inner(), {}, "ktc") == "WRITE"
    assert recorder.resolve_mode(object(), {"read_mode": "True"}) == "READ"


def test_the_host_is_the_one_the_inner_resolved_else_vllms_get_ip(tmp_path, monkeypatch):
    sched = types.SimpleNamespace(host_ip="10.9.8.7")
    assert recorder.resolve_host(types.SimpleNamespace(connector_scheduler=sched), {"host_ip": "1.1.1.1"}) == "10.9.8.7"
    worker = types.SimpleNamespace(moriio_config=types.SimpleNamespace(local_ip="10.9.8.6"))
    assert recorder.resolve_host(types.SimpleNamespace(connector_worker=worker), {}) == "10.9.8.6"
    assert recorder.resolve_host(types.SimpleNamespace(engine_id="10.9.8.5:6301"), {}) == "10.9.8.5"
    assert recorder.resolve_host(object(), {"host_ip": "10.9.8.4"}) == "10.9.8.4"
    utils = types.ModuleType("vllm.utils.network_utils")
    utils.get_ip = lambda: "10.9.8.3"
    monkeypatch.setitem(sys.modules, "vllm.utils", types.ModuleType("vllm.utils"))
    monkeypatch.setitem(sys.modules, "vllm.utils.network_utils", utils)
    assert recorder.resolve_host(object(), {}) == "10.9.8.3"
    # a recording always carries it, also without a host_ip in the extra config
    h = _header(tmp_path, host_ip=None)
    assert h["host_ip"] == "10.9.8.3"


def test_node_ids_tell_instances_apart_and_are_valid_kvledger_node_ids():
    import re
    ids = {recorder.node_id_for("kv_producer", True, 0, 0, "10.0.0.1", "6301"),
           recorder.node_id_for("kv_producer", True, 0, 0, "10.0.0.1", "6401"),
           recorder.node_id_for("kv_producer", True, 0, 0, "10.0.0.2", "6301"),
           recorder.node_id_for("kv_producer", False, 0, 1, "10.0.0.1", "6301"),
           recorder.node_id_for("kv_consumer", True, 1, 0, "10.0.0.1", "6301")}
    assert ids == {"P0-10.0.0.1-6301", "P0-10.0.0.1-6401", "P0-10.0.0.2-6301", "P0-tp1-10.0.0.1-6301",
                   "D1-10.0.0.1-6301"}
    v6 = recorder.node_id_for("kv_both", True, 0, 0, "fe80::1", 6301)
    assert v6 == "B0-fe80..1-6301" and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", v6)


def test_two_prefill_instances_record_under_different_node_ids(tmp_path):
    a = _header(tmp_path / "a", host_ip="10.0.0.1", handshake_port="6301")
    b = _header(tmp_path / "b", host_ip="10.0.0.1", handshake_port="6401")
    assert a["node_id"] != b["node_id"]


def test_each_step_records_its_new_and_preempted_requests(tmp_path):
    sched_path, _ = driver.play(str(tmp_path), "healthy", "consumer")
    steps = [e for e in lines(sched_path) if e["type"] == "step_scheduled"]
    first = steps[0]
    rids = [driver.request_id(i, "b") for i in (1, 2, 3)]
    # each request is new in exactly one step, the first it was scheduled in
    assert sorted(r["request_id"] for s in steps for r in s["scheduled_new_reqs"]) == sorted(rids)
    assert first["scheduled_new_reqs"][0]["request_id"] == rids[0]
    r1 = first["scheduled_new_reqs"][0]
    assert r1["num_computed_tokens"] == 0 and r1["block_ids"] == [[1, 2, 3]]
    # the params as the inner saw them at build_connector_meta: update_state_after_alloc had already
    # set do_remote_prefill to False in the request's own dict
    assert r1["kv_transfer_params"]["transfer_id"] == "tx-0001"
    assert r1["kv_transfer_params"]["do_remote_prefill"] is False
    assert all(s["preempted_req_ids"] == [] for s in steps)


class _Req:
    def __init__(self, rid, params):
        self.req_id = rid
        self.sampling_params = types.SimpleNamespace(extra_args=None if params is None else {"kv_transfer_params": params})
        self.block_ids = ([4, 5], [9])
        self.num_computed_tokens = 16


def test_new_requests_params_are_copied_when_the_step_is_built_and_preemptions_sorted():
    params = {"do_remote_prefill": True, "remote_block_ids": [1, 2]}
    out = types.SimpleNamespace(scheduled_new_reqs=[_Req("r1", params), _Req("r2", None)],
                                preempted_req_ids={"z", "a"})
    got = recorder._new_requests(out)
    params["do_remote_prefill"] = False  # the connector changes the dict afterwards
    assert got == [{"request_id": "r1", "block_ids": [[4, 5], [9]], "num_computed_tokens": 16,
                    "kv_transfer_params": {"do_remote_prefill": True, "remote_block_ids": [1, 2]}},
                   {"request_id": "r2", "block_ids": [[4, 5], [9]], "num_computed_tokens": 16,
                    "kv_transfer_params": None}]
    assert recorder._preempted(out) == ["a", "z"]
    assert recorder._preempted(types.SimpleNamespace(preempted_req_ids=None)) == []


def test_a_scheduler_output_without_the_fields_leaves_them_out_of_the_step(tmp_path):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl")}
    rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    from vllm.v1.core.sched.output import CachedRequestData
    rec.build_connector_meta(types.SimpleNamespace(scheduled_cached_reqs=CachedRequestData(), finished_req_ids=set()))
    rec.shutdown()
    step = [e for e in lines(tmp_path / "scheduler.jsonl") if e["type"] == "step_scheduled"][0]
    assert "scheduled_new_reqs" not in step and "preempted_req_ids" not in step


def test_block_lists_a_model_runner_extends_later_are_recorded_as_they_were_at_the_step(tmp_path):
    # With vLLM's single-process executor the model runner keeps a new request's block id lists
    # (and a resumed request's new ones) as its own and extends them in place at the next chunk,
    # before the recorder's writer thread may have converted the step: they are kept with their
    # lengths at the call and cut to them when converted.
    from vllm.v1.core.sched.output import CachedRequestData
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl")}
    rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    new = _Req("r1", {"transfer_id": "tx-1"})
    resumed = ([7, 8],)
    cached = CachedRequestData(req_ids=["r0"], resumed_from_preemption=[True], new_block_ids=[resumed])
    gate = __import__("threading").Event()
    sink = rec.recording_stream._sink
    write = sink.write_lines
    sink.write_lines = lambda batch: (gate.wait(), write(batch))  # the writer waits until the lists grew
    rec.build_connector_meta(types.SimpleNamespace(scheduled_new_reqs=[new], scheduled_cached_reqs=cached,
                                                   preempted_req_ids=set(), finished_req_ids=set()))
    new.block_ids[0].extend([6, 7])
    resumed[0].append(9)
    gate.set()
    rec.shutdown()
    step = [e for e in lines(tmp_path / "scheduler.jsonl") if e["type"] == "step_scheduled"][0]
    assert step["scheduled_new_reqs"][0]["block_ids"] == [[4, 5], [9]]
    assert step["scheduled_cached_reqs"] == [{"request_id": "r0", "new_block_ids": [[7, 8]]}]


def test_new_request_block_lists_are_kept_with_their_lengths_and_converted_as_they_were():
    # The calling thread keeps vLLM's lists and their lengths (the model runner only extends them
    # in place); the writer thread takes the prefixes. Params are copied: connectors change them.
    a, b = _Req("r1", {"transfer_id": "tx-1"}), _Req("r2", {"transfer_id": "tx-2"})
    b.block_ids = ([1], [2, 3], [])  # three groups, one empty
    snap = recorder._new_requests_snapshot(types.SimpleNamespace(scheduled_new_reqs=[a, b]))
    assert snap[2][0] is a.block_ids and snap[2][1] is b.block_ids  # kept, not copied
    a.block_ids[0].extend([6, 7])
    a.block_ids[1].append(10)
    b.block_ids[2].append(4)
    a.sampling_params.extra_args["kv_transfer_params"]["do_remote_prefill"] = False
    assert recorder._new_requests_fields(snap) == [
        {"request_id": "r1", "block_ids": [[4, 5], [9]], "num_computed_tokens": 16,
         "kv_transfer_params": {"transfer_id": "tx-1"}},
        {"request_id": "r2", "block_ids": [[1], [2, 3], []], "num_computed_tokens": 16,
         "kv_transfer_params": {"transfer_id": "tx-2"}}]
    # a step with a request without params takes every request's lists as copies, as they were
    c = _Req("r3", None)
    snap = recorder._new_requests_snapshot(types.SimpleNamespace(scheduled_new_reqs=[c, _Req("r4", {"x": 1})]))
    c.block_ids[0].append(6)
    assert [r["block_ids"] for r in recorder._new_requests_fields(snap)] == [[[4, 5], [9]], [[4, 5], [9]]]
    assert [r["kv_transfer_params"] for r in recorder._new_requests_fields(snap)] == [None, {"x": 1}]


def test_a_resumed_request_s_new_block_lists_are_converted_as_they_were_at_the_step():
    from vllm.v1.core.sched.output import CachedRequestData
    # (the step's fields as the recorder hands them to its stream, converted after the lists grew)
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"}
    resumed, running = ([7, 8], [1]), ([3],)
    cached = CachedRequestData(req_ids=["r0", "r1", "r2"], resumed_from_preemption=[True, False, False],
                               new_block_ids=[resumed, None, running])
    captured = []

    class _Capture:
        """A stream that keeps what the hook queues (a flat entry or put's) unconverted."""
        def __init__(self):
            self._q = _CaptureQueue(100)
            self.dropped = 0

        def put(self, type_name, fields, reply_type=None, reply_fields=None):
            self._q.offer((type_name, 0, fields, reply_type, reply_fields))
    rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    rec._stream = _Capture()
    rec.build_connector_meta(types.SimpleNamespace(scheduled_new_reqs=[], scheduled_cached_reqs=cached,
                                                   preempted_req_ids=set(), finished_req_ids=set()))
    resumed[0].append(9)
    resumed[1].extend([2, 3])
    captured.extend(Stream.entry_parts(item)[2] for item in rec._stream._q.take(10))
    (fields,) = captured
    step = fields[0](*fields[1:])
    assert step["scheduled_cached_reqs"] == [{"request_id": "r0", "new_block_ids": [[7, 8], [1]]},
                                             {"request_id": "r1", "new_block_ids": None},
                                             {"request_id": "r2", "new_block_ids": [[3]]}]

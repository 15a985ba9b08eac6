"""What the recorder writes: a header from vLLM's config, then the hooks as kvledger JSON lines."""

import json
import logging

import driver
import fakes
from driver import make_config
from kvledger_vllm import KvledgerRecorderConnector, __version__
from kvledger_vllm.stream import epoch_offset_ns, unfold
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole


def lines(path):
    """The recording's lines, its repeated steps unfolded (as kvledger's import reads them)."""
    with open(path, encoding="utf-8") as f:
        return unfold([json.loads(line) for line in f if line.strip()])


def test_producer_streams_have_headers_from_the_vllm_config(tmp_path):
    sched_path, worker_path = driver.play(str(tmp_path), "healthy", "producer")
    assert sched_path == str(tmp_path / "scheduler-dp0-tp0.jsonl")
    s = lines(sched_path)
    w = lines(worker_path)
    hs, hw = s[0], w[0]
    assert hs["kind"] == "header" and hs["node_id"] == "P0-10.0.0.1-6301" and hs["kv_role"] == "kv_producer"
    assert hs["transfer_mode"] == "WRITE" and hs["host_ip"] == "10.0.0.1"
    assert hs["handshake_port"] == "6301" and hs["notify_port"] == "61005"  # the connector's string defaults
    assert (hs["dp_rank"], hs["dp_size"], hs["tp_rank"], hs["tp_size"], hs["cache_block_size"]) == (0, 1, 0, 1, 16)
    assert hs["origin"].startswith(f"vllm-bridge {__version__} recorder scheduler")
    assert hw["node_id"] == "P0-tp0-10.0.0.1-6301" and hw["origin"].startswith(f"vllm-bridge {__version__} recorder worker")
    # no header anywhere else; inputs carry increasing times
    assert all(e["kind"] != "header" for e in s[1:] + w[1:])
    times = [e["at_ns"] for e in s if e["kind"] == "input"]
    assert times == sorted(times)


def test_a_request_lifecycle_is_recorded_with_the_inner_replies(tmp_path):
    sched_path, _ = driver.play(str(tmp_path), "healthy", "producer")
    s = lines(sched_path)
    rid = driver.request_id(1, "a")
    mine = [(e["kind"], e["type"]) for e in s if e.get("request_id") == rid]
    assert mine == [("input", "request_admitted"), ("input", "matched_tokens_queried"), ("derived", "matched_tokens"),
                    ("input", "blocks_allocated"), ("input", "request_finished"), ("derived", "finish_decision")]
    by_type = {e["type"]: e for e in s if e.get("request_id") == rid}
    assert by_type["request_admitted"]["num_prompt_tokens"] == 40
    assert by_type["request_admitted"]["kv_transfer_params"]["transfer_id"] == "tx-0001"
    assert by_type["matched_tokens"] == {"kind": "derived", "type": "matched_tokens", "request_id": rid,
                                         "count": 0, "load_async": False}
    assert by_type["blocks_allocated"]["blocks"] == [[1]]
    assert by_type["request_finished"]["status"] == "FINISHED_LENGTH_CAPPED"
    assert by_type["request_finished"]["block_ids"] == [[1, 4, 6]]
    fd = by_type["finish_decision"]
    assert fd["delay_free"] is True and fd["kv_transfer_params"]["remote_block_ids"] == [[1, 4, 6]]
    # chunked prefill: the later chunks arrive as cached requests with new blocks
    steps = [e for e in s if e["type"] == "step_scheduled"]
    assert [e["step"] for e in steps] == list(range(1, len(steps) + 1))
    assert {"request_id": rid, "new_block_ids": [[4]]} in steps[1]["scheduled_cached_reqs"]
    # the ACK comes back through update_connector_output, and the inner's rewrite as its reply
    outs = [(e, s[i + 1]) for i, e in enumerate(s) if e["type"] == "connector_output_received"]
    acked = [(o, r) for o, r in outs if o["finished_sending"] == [rid]]
    assert len(acked) == 1 and acked[0][1] == {"kind": "derived", "type": "finished_sending_rewritten", "safe": [rid]}


def test_aborted_request_and_admission_snapshot(tmp_path):
    sched_path, _ = driver.play(str(tmp_path), "healthy", "consumer")
    s = lines(sched_path)
    assert s[0]["kv_role"] == "kv_consumer" and s[0]["node_id"] == "D0-10.0.1.1-6301"
    rid = driver.request_id(1, "b")
    adm = [e for e in s if e["type"] == "request_admitted" and e["request_id"] == rid]
    assert len(adm) == 1  # one admission per request, however often it is seen
    # the params as they were at admission: the inner connector cleared do_remote_prefill later
    assert adm[0]["kv_transfer_params"]["do_remote_prefill"] is True
    mt = [e for e in s if e["type"] == "matched_tokens" and e["request_id"] == rid]
    assert mt == [{"kind": "derived", "type": "matched_tokens", "request_id": rid, "count": 40, "load_async": True}]


def test_worker_stream_records_forward_passes_and_get_finished(tmp_path):
    _, worker_path = driver.play(str(tmp_path), "healthy", "producer")
    w = lines(worker_path)
    types = [e["type"] for e in w[1:]]
    per_step = ["load_started", "layer_saved", "layer_saved", "save_waited", "finished_polled", "finished_reported"]
    assert types == per_step * 6 + ["shut_down"]
    assert w[-1] == {"kind": "input", "type": "shut_down", "at_ns": w[-1]["at_ns"], "close_failures": []}
    reported = [e for e in w if e["type"] == "finished_reported"]
    assert reported[3]["done_sending"] == [driver.request_id(1, "a")]
    assert [e["layer_name"] for e in w if e["type"] == "layer_saved"][:2] == list(driver.LAYERS)


def test_per_layer_hooks_can_be_left_out(tmp_path):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl"), "record_layers": False}
    rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.WORKER, None)
    rec.start_load_kv(None)
    for layer in driver.LAYERS:
        rec.save_kv_layer(layer, None, None)
    rec.wait_for_save()
    rec.shutdown()
    assert [e["type"] for e in lines(tmp_path / "worker.jsonl")[1:]] == ["load_started", "save_waited", "shut_down"]
    assert [c[0] for c in rec.inner.calls].count("save_kv_layer") == 2  # still delegated


def test_announces_itself_once_with_version_and_path(tmp_path, caplog):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}-dp{dp}-tp{tp}.jsonl")}
    with caplog.at_level(logging.INFO, logger="vllm.kvledger_vllm"):
        rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    msgs = [r.getMessage() for r in caplog.records if r.name == "vllm.kvledger_vllm"]
    assert len(msgs) == 1
    assert f"kvledger-vllm {__version__}" in msgs[0] and str(tmp_path / "scheduler-dp0-tp0.jsonl") in msgs[0]
    rec.shutdown()


def test_without_record_to_it_only_delegates(caplog):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"}
    with caplog.at_level(logging.INFO, logger="vllm.kvledger_vllm"):
        rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    assert rec.recording_stream is None
    assert "not recording" in caplog.text
    from vllm.v1.request import Request
    assert rec.get_num_new_matched_tokens(Request("r", [1, 2]), 0) == (0, False)


def test_an_unknown_sink_scheme_is_refused_and_the_engine_runs_on(caplog):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": "ipc://kvledger.sock"}
    with caplog.at_level(logging.INFO, logger="vllm.kvledger_vllm"):
        rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    assert rec.recording_stream is None
    assert "give a file path template or tcp://HOST:PORT" in caplog.text
    assert isinstance(rec.inner, fakes.ScriptedConnector)


def test_kv_both_is_recorded_as_it_is(tmp_path):
    # kvledger replays kv_both as MoRIIO runs it (a consumer scheduler, a producer worker)
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl"), "read_mode": "True"}
    for role in (KVConnectorRole.SCHEDULER, KVConnectorRole.WORKER):
        KvledgerRecorderConnector(make_config("kv_both", extra), role, None).shutdown()
    assert lines(tmp_path / "scheduler.jsonl")[0]["kv_role"] == "kv_both"
    assert lines(tmp_path / "scheduler.jsonl")[0]["node_id"] == "B0-10.0.1.1-6301"
    assert lines(tmp_path / "worker.jsonl")[0]["kv_role"] == "kv_both"
    assert lines(tmp_path / "worker.jsonl")[0]["transfer_mode"] == "READ"


def test_a_finish_under_the_suffixed_id_names_the_admitted_one(tmp_path):
    from vllm.v1.request import Request, RequestStatus
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl")}
    rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    req = Request("cmpl-abc-0", list(range(20)), {"do_remote_decode": True, "transfer_id": "tx-r"}, max_tokens=1)
    rec.get_num_new_matched_tokens(req, 0)
    req.request_id = "cmpl-abc-0-956053a4"  # vLLM's input processor appended its suffix
    req.status = RequestStatus.FINISHED_LENGTH_CAPPED
    rec.request_finished(req, [1, 2])
    other = Request("cmpl-xyz-0-956053a4", list(range(4)), None, max_tokens=1)  # a suffix, but no admitted base
    other.status = RequestStatus.FINISHED_STOPPED
    rec.request_finished(other, [])
    rec.shutdown()
    s = lines(tmp_path / "scheduler.jsonl")
    assert [e["request_id"] for e in s if e["type"] == "request_admitted"] == ["cmpl-abc-0", "cmpl-xyz-0-956053a4"]
    fin = [e for e in s if e["type"] == "request_finished"]
    assert fin[0]["request_id"] == "cmpl-abc-0-956053a4" and fin[0]["admitted_request_id"] == "cmpl-abc-0"
    assert "admitted_request_id" not in fin[1]


def test_shutdown_is_recorded_with_the_socket_close_failures_moriio_logs(tmp_path):
    extra = {"inner_connector": "ClosingConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl")}
    rec = KvledgerRecorderConnector(make_config("kv_consumer", extra), KVConnectorRole.SCHEDULER, None)
    rec.shutdown()
    s = lines(tmp_path / "scheduler.jsonl")
    assert s[-1]["type"] == "shut_down"
    assert s[-1]["close_failures"] == ["tcp://10.0.0.1:61005: Socket operation on non-socket"]
    assert rec.inner.closed


def test_hma_finish_records_block_ids_per_group(tmp_path):
    from kvledger_vllm import KvledgerRecorderConnectorHMA
    from vllm.v1.request import Request, RequestStatus
    extra = {"inner_connector": "ScriptedHMAConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl")}
    rec = KvledgerRecorderConnectorHMA(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    req = Request("r-hma", list(range(20)), {"do_remote_decode": True, "transfer_id": "tx-h"}, max_tokens=1)
    req.status = RequestStatus.FINISHED_LENGTH_CAPPED
    delay, params = rec.request_finished_all_groups(req, ([1, 2], [7]))
    rec.shutdown()
    assert delay is True and params["remote_block_ids"] == [[1, 2], [7]]
    s = lines(tmp_path / "scheduler.jsonl")
    fin = [e for e in s if e["type"] == "request_finished"]
    assert fin[0]["block_ids"] == [[1, 2], [7]] and fin[0]["status"] == "FINISHED_LENGTH_CAPPED"
    assert s[-2]["type"] == "finish_decision" and s[-2]["delay_free"] is True and s[-1]["type"] == "shut_down"


def test_a_missing_inner_connector_is_named(tmp_path):
    import pytest
    from kvledger_vllm.recorder import resolve_inner_class
    with pytest.raises(ImportError, match="cannot find the inner connector 'MoRIIOConnector'"):
        resolve_inner_class({})
    with pytest.raises(AttributeError):
        resolve_inner_class({"inner_connector": "NoSuchConnector", "inner_connector_module_path": "fakes"})


# ---------------------------------------------------------------------- the connector metadata

def _without_times(entries):
    return [{k: v for k, v in e.items() if k != "at_ns"} for e in entries]


def test_connector_metadata_is_recorded_as_the_metadata_built_reply(tmp_path):
    sched_path, _ = driver.play(str(tmp_path), "healthy", "producer")
    s = lines(sched_path)
    steps = [(e, s[i + 1]) for i, e in enumerate(s) if e["type"] == "step_scheduled"]
    assert len(steps) == 6
    for step, meta in steps:  # one reply per build_connector_meta, right after it
        assert meta["kind"] == "derived" and meta["type"] == "metadata_built" and meta["step"] == step["step"]
    metas = [m for _, m in steps]
    rid1, rid3 = driver.request_id(1, "a"), driver.request_id(3, "a")
    # the first request's prompt (40 tokens, 16 per block) is covered at step 3: its save ships then
    assert [[r["request_id"] for r in m["reqs_to_save"]] for m in metas] == [[], [], [rid1], [rid3], [], []]
    save = metas[2]["reqs_to_save"][0]
    assert save == {"request_id": rid1, "local_block_ids": [[1, 4, 6]], "remote_block_ids": None,
                    "remote_engine_id": None, "remote_host": "10.0.1.1",  # the decode part of the request id
                    "remote_handshake_port": 6301, "remote_notify_port": 61005, "remote_dp_rank": 0,
                    "remote_dp_size": 1, "remote_dp_size_local": 1, "remote_tp_size": 0, "transfer_id": "tx-0001",
                    "multi_pod_hosts": ["10.0.1.1"], "write_mode": True}
    # a deferred free ships in reqs_to_send the step after request_finished
    assert [m["reqs_to_send"] for m in metas][3:5] == [[rid1], [rid3]]
    # the transfer map: three mapped, the first unmapped once its ACK is safe
    assert [m["mapping_size"] for m in metas] == [2, 3, 3, 3, 2, 1]
    assert all(m["reqs_to_recv"] == [] for m in metas)


def test_a_wrong_block_id_in_the_metadata_is_the_one_difference(tmp_path):
    healthy, _ = driver.play(str(tmp_path / "h"), "healthy", "producer")
    wrong, _ = driver.play(str(tmp_path / "w"), "meta-diverge", "producer")
    a, b = _without_times(lines(healthy)), _without_times(lines(wrong))
    assert len(a) == len(b)
    diff = [(x, y) for x, y in zip(a[1:], b[1:]) if x != y]
    assert len(diff) == 1
    x, y = diff[0]
    assert x["type"] == "metadata_built" and x["step"] == 3
    assert x["reqs_to_save"][0]["local_block_ids"] == [[1, 4, 6]]
    assert y["reqs_to_save"][0]["local_block_ids"] == [[1, 4, 106]]
    assert {k: v for k, v in y["reqs_to_save"][0].items() if k != "local_block_ids"} == \
        {k: v for k, v in x["reqs_to_save"][0].items() if k != "local_block_ids"}


def test_fields_an_older_reqmeta_lacks_are_written_as_not_compared():
    from kvledger_vllm.recorder import metadata_reply

    class OldReqMeta:  # MoRIIO of the #39565 era: no transfer_id, remote_dp_rank, remote_hosts, dp_size_local
        local_block_ids = [5, 6]
        remote_block_ids = [7, 8]
        remote_host = "10.0.0.1"
        remote_port = 6301
        remote_handshake_port = 6301
        remote_notify_port = 61005
        remote_engine_id = "10.0.0.1:6301"
        tp_size = 2
        remote_dp_size = 1

    class OldMeta:
        def __init__(self):
            self.reqs_to_recv = {"r1": OldReqMeta()}
            self.reqs_to_save = {}
            self.reqs_to_send = {}

    reply = metadata_reply(7, OldMeta())
    assert reply["step"] == 7 and reply["mapping_size"] == -1 and reply["reqs_to_send"] == []
    r = reply["reqs_to_recv"][0]
    assert r["request_id"] == "r1" and r["local_block_ids"] == [[5, 6]] and r["remote_block_ids"] == [[7, 8]]
    assert (r["remote_dp_rank"], r["remote_dp_size_local"], r["remote_tp_size"]) == (-1, -1, 2)
    assert r["transfer_id"] is None and r["multi_pod_hosts"] is None and r["write_mode"] is False
    assert metadata_reply(1, object()) is None  # not MoRIIO-shaped: nothing to compare is recorded


def test_a_metadata_object_of_another_shape_records_the_step_alone(tmp_path):
    from vllm.v1.core.sched.output import SchedulerOutput
    from kvledger_vllm import KvledgerRecorderConnectorHMA
    extra = {"inner_connector": "EchoConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl")}
    rec = KvledgerRecorderConnectorHMA(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    assert isinstance(rec.build_connector_meta(SchedulerOutput()), fakes.Sentinel)
    rec.shutdown()
    assert [e["type"] for e in lines(tmp_path / "scheduler.jsonl")[1:]] == ["step_scheduled", "shut_down"]


def test_a_restarted_engine_keeps_the_recordings_of_its_earlier_runs(tmp_path):
    # the first run's recording is what an SRE needs after the engine hung and was restarted
    first, _ = driver.play(str(tmp_path), "healthy", "producer")
    first_lines = lines(first)
    second, _ = driver.play(str(tmp_path), "healthy", "producer")
    assert second == first
    kept = tmp_path / "scheduler-dp0-tp0.1.jsonl"
    assert lines(str(kept)) == first_lines
    assert lines(second)[0]["kind"] == "header" and len(lines(second)) == len(first_lines)
    assert (tmp_path / "worker-dp0-tp0.1.jsonl").exists()


def test_previous_recordings_shift_up_and_the_oldest_past_keep_goes(tmp_path):
    from kvledger_vllm.stream import FileSink

    path = str(tmp_path / "rec" / "scheduler-dp0-tp0.jsonl")
    for run in range(4):
        sink = FileSink(path, keep=2)
        sink.write_lines([json.dumps({"run": run})])
        sink.close()
    assert lines(path) == [{"run": 3}]
    assert lines(str(tmp_path / "rec" / "scheduler-dp0-tp0.1.jsonl")) == [{"run": 2}]
    assert lines(str(tmp_path / "rec" / "scheduler-dp0-tp0.2.jsonl")) == [{"run": 1}]
    assert not (tmp_path / "rec" / "scheduler-dp0-tp0.3.jsonl").exists()
    # keep 0 overwrites, as before; an empty file is not kept
    sink = FileSink(path, keep=0)
    sink.close()
    assert lines(path) == [] and lines(str(tmp_path / "rec" / "scheduler-dp0-tp0.1.jsonl")) == [{"run": 2}]
    sink = FileSink(path, keep=2)
    sink.close()
    assert lines(str(tmp_path / "rec" / "scheduler-dp0-tp0.1.jsonl")) == [{"run": 2}]


def test_times_are_epoch_nanoseconds_so_hosts_recordings_line_up(tmp_path):
    # time.monotonic_ns() starts at boot: a prefill's and a decode's recordings from two hosts
    # would not line up; the live nodes journal epoch nanoseconds, and so does the recorder
    import time

    before = time.time_ns()
    sched, worker = driver.play(str(tmp_path), "healthy", "producer")
    after = time.time_ns()
    times = [e["at_ns"] for e in lines(sched) + lines(worker) if e["kind"] == "input"]
    assert times
    assert before - 1_000_000_000 <= min(times) <= max(times) <= after + 1_000_000_000


def test_a_template_that_does_not_tell_the_processes_apart_gets_the_missing_parts(tmp_path, caplog):
    from kvledger_vllm.recorder import per_process_template

    assert per_process_template("/var/log/prefill.jsonl") == "/var/log/prefill-{role}.jsonl"
    assert per_process_template("/var/log/prefill.jsonl", 2, 8) == "/var/log/prefill-{role}-dp{dp}-tp{tp}.jsonl"
    assert per_process_template("/var/log/{role}.jsonl", 1, 8) == "/var/log/{role}-tp{tp}.jsonl"
    assert per_process_template("/var/log/{role}.jsonl", 4, 1) == "/var/log/{role}-dp{dp}.jsonl"
    assert per_process_template("/var/log/{role}.jsonl") == "/var/log/{role}.jsonl"
    assert per_process_template("/r/{role}-{dp}-{tp}.jsonl", 2, 2) == "/r/{role}-{dp}-{tp}.jsonl"
    # a scheduler and a worker given one file each write their own, and say where
    with caplog.at_level(logging.WARNING, logger="vllm.kvledger_vllm"):
        sched, worker = driver.play(str(tmp_path), "healthy", "producer",
                                    record_to=str(tmp_path / "prefill.jsonl"))
    assert (tmp_path / "prefill-scheduler.jsonl").exists()
    assert (tmp_path / "prefill-worker.jsonl").exists()
    assert not (tmp_path / "prefill.jsonl").exists()
    assert lines(str(tmp_path / "prefill-scheduler.jsonl"))[0]["node_id"] == "P0-10.0.0.1-6301"
    assert lines(str(tmp_path / "prefill-worker.jsonl"))[0]["node_id"] == "P0-tp0-10.0.0.1-6301"
    assert "does not tell the engine's processes apart" in caplog.text


def test_the_blocks_that_failed_to_load_ride_on_the_finished_reply(tmp_path):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl")}
    rec = KvledgerRecorderConnector(make_config("kv_consumer", extra), KVConnectorRole.WORKER, None)
    rec.inner.get_block_ids_with_load_errors = lambda: {9, 3}
    rec.get_finished(set())
    assert rec.get_block_ids_with_load_errors() == {9, 3}  # the inner's answer, unchanged
    rec.clear_connector_metadata()
    rec.get_finished(set())  # not asked for load errors this time: the reply says null
    rec.clear_connector_metadata()
    rec.shutdown()
    replies = [e for e in lines(tmp_path / "worker.jsonl") if e["type"] == "finished_reported"]
    assert [r["load_error_blocks"] for r in replies] == [[3, 9], None]
    polled = [e for e in lines(tmp_path / "worker.jsonl") if e["type"] == "finished_polled"]
    assert len(polled) == 2 and polled[0]["at_ns"] <= polled[1]["at_ns"]


def test_newer_vllms_transfer_results_are_recorded_as_the_finished_reply(tmp_path):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl")}
    rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.WORKER, None)
    rec.inner.get_finished = lambda ids: ({"r2", "r1"}, None)
    result = rec.get_transfer_results({"r1"})
    assert result.finished_sending == {"r1", "r2"}
    rec.get_block_ids_with_load_errors()
    rec.shutdown()
    reply = [e for e in lines(tmp_path / "worker.jsonl") if e["type"] == "finished_reported"]
    assert reply == [{"kind": "derived", "type": "finished_reported", "done_sending": ["r1", "r2"],
                      "done_recving": [], "load_error_blocks": []}]


def test_the_epoch_anchor_keeps_the_narrowest_bracket():
    # the first bracket is preempted for 5 ms between its reads; the second is 80 ns wide: its
    # midpoint anchors the axis, whatever the wide one says
    mono = iter([1_000, 5_001_000, 6_000_000, 6_000_080, 7_000_000, 7_000_500])
    wall = iter([10**18 + 3_000_000, 10**18 + 5_000_030, 10**18 + 6_000_100])
    offset = epoch_offset_ns(tries=3, monotonic=lambda: next(mono), wall=lambda: next(wall))
    assert offset == 10**18 + 5_000_030 - 6_000_040
    # the real clocks: the offset puts the monotonic clock on the wall clock (a second of slack: a
    # busy machine may preempt this thread between the reads)
    import time
    assert abs(time.monotonic_ns() + epoch_offset_ns() - time.time_ns()) < 1_000_000_000

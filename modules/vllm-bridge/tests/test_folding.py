"""Repeated steps: an engine stepping while a request waits is written as repeat lines, losslessly."""

import json
import os

import driver
from kvledger_vllm import KvledgerRecorderConnector
from kvledger_vllm import stream as st
from kvledger_vllm.stream import REPEAT, StepFolder, unfold
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole


def idle_step(step, at):
    return [{"kind": "input", "type": "step_scheduled", "at_ns": at, "step": step, "scheduled_cached_reqs": []},
            {"kind": "derived", "type": "metadata_built", "step": step, "reqs_to_recv": [], "reqs_to_save": [],
             "reqs_to_send": [], "mapping_size": 1},
            {"kind": "input", "type": "connector_output_received", "at_ns": at + 40_000, "finished_sending": None,
             "finished_recving": None}]


def fold(entries, starts=("step_scheduled",)):
    f = StepFolder(starts)
    out = []
    for e in entries:
        f.add(e, out)
    f.close(out)
    return f, out


def test_a_run_of_idle_steps_is_one_repeat_line_and_unfolds_to_every_line():
    entries = [{"kind": "input", "type": "request_admitted", "at_ns": 10, "request_id": "r1"}]
    at = 1_000_000
    for step in range(1, 1001):
        entries += idle_step(step, at)
        at += 1_000_000 + step % 7  # vLLM sleeps 1 ms between steps that run no model
    f, out = fold(entries)
    assert unfold(out) == entries
    # the admission, the first step as it is, then the 999 steps that repeat it
    assert [e["kind"] for e in out] == ["input", "input", "derived", "input", REPEAT]
    assert out[-1]["lines"] == 3 and out[-1]["times"] == 999 and len(out[-1]["at_ns_deltas"]) == 2 * 999
    assert f.folded == 999
    unfolded_bytes = sum(len(st.encode_line(e)) + 1 for e in entries)
    folded_bytes = sum(len(st.encode_line(e)) + 1 for e in out)
    assert folded_bytes * 10 < unfolded_bytes


def test_a_step_that_differs_is_written_and_the_run_goes_on_after_it():
    entries = []
    for step in range(1, 6):
        entries += idle_step(step, step * 1_000_000)
    changed = idle_step(6, 6_000_000)
    changed[2] = dict(changed[2], finished_recving=["r1"])  # the transfer completes
    entries += changed
    for step in range(7, 12):
        entries += idle_step(step, step * 1_000_000)
    entries.append({"kind": "input", "type": "shut_down", "at_ns": 99_000_000, "close_failures": []})
    _, out = fold(entries)
    assert unfold(out) == entries
    kinds = [e["kind"] for e in out]
    assert kinds.count(REPEAT) == 2
    # steps 2 to 5 repeat step 1; 6 and 7 differ from the step before; 8 to 10 repeat 7; 11 has the shutdown
    assert [e["times"] for e in out if e["kind"] == REPEAT] == [4, 3]


def test_what_does_not_repeat_exactly_is_written_as_it_is():
    a = idle_step(1, 1_000)
    same_step_number = idle_step(1, 2_000)        # step not one more
    other_field = idle_step(2, 3_000)
    other_field[1] = dict(other_field[1], mapping_size=2)
    other_type = idle_step(3, 4_000)
    other_type[1] = dict(other_type[1], mapping_size=2.0)  # 2.0 == 2 in Python, not in the journal
    extra_line = idle_step(4, 5_000) + [{"kind": "input", "type": "finished_polled", "at_ns": 5_500}]
    entries = a + same_step_number + other_field + other_type + extra_line
    _, out = fold(entries)
    assert out == entries


def test_a_step_longer_than_the_fold_limit_is_written_as_it_is():
    big = lambda step, at: [{"kind": "input", "type": "step_scheduled", "at_ns": at, "step": step}] + [  # noqa: E731
        {"kind": "input", "type": "finished_polled", "at_ns": at + i} for i in range(1, st.MAX_REPEAT_LINES + 1)]
    entries = big(1, 1_000) + big(2, 2_000) + big(3, 3_000)
    _, out = fold(entries)
    assert out == entries


def test_a_long_run_is_written_every_flush_interval_and_still_unfolds(monkeypatch):
    monkeypatch.setattr(st, "FOLD_FLUSH_S", 0.0)
    f = StepFolder(("step_scheduled",))
    entries, out = [], []
    for step in range(1, 8):
        e = idle_step(step, step * 1_000_000)
        entries += e
        for x in e:
            f.add(x, out)
        f.tick(out, 0.0)
    f.close(out)
    assert unfold(out) == entries
    assert [e["times"] for e in out if e["kind"] == REPEAT] == [1] * 6  # steps 2 to 7, each on its own


def test_the_step_in_progress_is_written_once_no_hook_call_comes():
    """An engine stuck inside a hook: its last calls reach the file without a next step."""
    f = StepFolder(("step_scheduled",))
    out = []
    for e in idle_step(1, 1_000) + idle_step(2, 2_000)[:1]:
        f.add(e, out)
    assert [e["type"] for e in out] == ["step_scheduled", "metadata_built", "connector_output_received"]
    f.tick(out, st.FOLD_IDLE_S / 2)
    assert len(out) == 3 and f.holding()
    f.tick(out, st.FOLD_IDLE_S)
    assert [e.get("step") for e in out] == [1, 1, None, 2] and not f.holding()
    # the step's remaining lines follow as they come; the next step is compared with nothing
    for e in idle_step(2, 2_000)[1:] + idle_step(3, 3_000) + idle_step(4, 4_000):
        f.add(e, out)
    f.close(out)
    assert unfold(out) == idle_step(1, 1_000) + idle_step(2, 2_000) + idle_step(3, 3_000) + idle_step(4, 4_000)
    assert out[-1]["kind"] == REPEAT and out[-1]["times"] == 1


def run_idle_engine(tmp_path, name, fold, steps=400):
    template = str(tmp_path / name / "{role}-dp{dp}-tp{tp}.jsonl")
    d = driver.recorded_consumer(template, record_fold_steps=fold)
    d.run(steps)
    d.sched.shutdown()
    d.worker.shutdown()
    out = {}
    for role in ("scheduler", "worker"):
        with open(template.format(role=role, dp=0, tp=0), encoding="utf-8") as fh:
            text = fh.read()
        out[role] = (len(text), [json.loads(x) for x in text.splitlines()])
    return out


def test_a_recorded_engine_stepping_idle_writes_a_fraction_and_the_same_lines_unfolded(tmp_path):
    folded = run_idle_engine(tmp_path, "folded", True)
    plain = run_idle_engine(tmp_path, "plain", "false")
    for role in ("scheduler", "worker"):
        (fsize, flines), (psize, plines) = folded[role], plain[role]
        assert all(e["kind"] != REPEAT for e in plines)
        assert any(e["kind"] == REPEAT for e in flines)
        assert fsize * 5 < psize, (role, fsize, psize)
        strip = lambda ls: [{k: v for k, v in e.items() if k not in ("at_ns", "origin", "started_at")}  # noqa: E731
                            for e in ls]
        unfolded = unfold(flines)
        assert strip(unfolded[1:]) == strip(plines[1:])
        times = [e["at_ns"] for e in unfolded if e["kind"] == "input"]
        assert times == sorted(times)


def test_flush_writes_what_the_folder_holds(tmp_path):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl")}
    rec = KvledgerRecorderConnector(driver.make_config("kv_producer", extra), KVConnectorRole.WORKER, None)
    rec.start_load_kv(None)
    # it returns True once the writer wrote it (no timing target: a loaded machine may take long)
    assert rec.recording_stream.flush(timeout=120)
    with open(os.path.join(tmp_path, "worker.jsonl"), encoding="utf-8") as fh:
        assert [json.loads(x)["type"] for x in fh.read().splitlines()[1:]] == ["load_started"]
    rec.shutdown()

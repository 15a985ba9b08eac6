"""forward_done: a worker step whose metadata posts reads gets one record at the end of its forward
(which requests, how many wait_for_layer_load calls returned, how long they blocked): bug class
25's evidence. A step without reads gets none."""

import json
import threading
import time

import fakes
from driver import make_config
from kvledger_vllm import KvledgerRecorderConnector
from kvledger_vllm.stream import unfold
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole

LAYERS = ("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn")


class BarrierConnector(fakes.ScriptedConnector):
    """A worker whose wait_for_layer_load blocks until the test lets the layer through (as the
    newest MoRIIO's per-layer READ barrier does until the layer's reads land)."""

    gate = None
    entered = None

    def wait_for_layer_load(self, layer_name):
        super().wait_for_layer_load(layer_name)
        if self.gate is not None:
            self.entered.set()
            assert self.gate.wait(60)


def _worker(tmp_path, inner="ScriptedConnector", module="fakes"):
    extra = {"inner_connector": inner, "inner_connector_module_path": module,
             "record_to": str(tmp_path / "{role}.jsonl"), "record_fold_steps": "false"}
    return KvledgerRecorderConnector(make_config("kv_consumer", extra), KVConnectorRole.WORKER, None)


def _lines(tmp_path):
    with open(tmp_path / "worker.jsonl", encoding="utf-8") as f:
        return unfold([json.loads(line) for line in f if line.strip()])


def _meta(*rids):
    m = fakes.FakeMeta()
    for r in rids:
        m.reqs_to_recv[r] = object()
    return m


def _step(rec, meta, layers=LAYERS):
    rec.bind_connector_metadata(meta)
    rec.start_load_kv(None)
    for layer in layers:
        rec.wait_for_layer_load(layer)
        rec.save_kv_layer(layer, None, None)
    rec.wait_for_save()
    rec.get_finished(set())
    rec.get_block_ids_with_load_errors()
    rec.clear_connector_metadata()


def test_a_step_that_posts_reads_gets_one_forward_done_and_a_step_without_none(tmp_path):
    rec = _worker(tmp_path)
    _step(rec, _meta())
    _step(rec, _meta("req-a", "req-b"))
    _step(rec, _meta())
    rec.shutdown()
    entries = _lines(tmp_path)[1:]
    assert [e["type"] for e in entries if e["kind"] == "input"] == [
        "load_started", "save_waited", "finished_polled",
        "load_started", "save_waited", "forward_done", "finished_polled",
        "load_started", "save_waited", "finished_polled", "shut_down"]
    (f,) = [e for e in entries if e["type"] == "forward_done"]
    assert f["reads_posted"] == ["req-a", "req-b"]
    assert f["layer_waits"] == 2
    assert 0 <= f["layer_wait_ns"] and 0 <= f["last_layer_wait_before_ns"]
    # every layer wait went to the inner connector
    assert [c for c in rec.inner.calls if c[0] == "wait_for_layer_load"] == [("wait_for_layer_load", l)
                                                                             for l in LAYERS * 3]


def test_the_time_blocked_in_the_layer_waits_is_counted(tmp_path):
    rec = _worker(tmp_path, "BarrierConnector", "test_forward")
    gate = threading.Event()
    rec.inner.gate, rec.inner.entered = gate, threading.Event()
    t = threading.Thread(target=_step, args=(rec, _meta("req-a")))
    t.start()
    assert rec.inner.entered.wait(60)
    time.sleep(0.05)  # the forward is held in the first layer's wait at least this long (a lower bound)
    gate.set()
    t.join(60)
    assert not t.is_alive()
    rec.shutdown()
    (f,) = [e for e in _lines(tmp_path) if e.get("type") == "forward_done"]
    assert f["layer_waits"] == 2
    assert f["layer_wait_ns"] >= 50_000_000


def test_a_forward_without_layer_waits_says_so(tmp_path):
    # vLLM calls wait_for_layer_load only for layers through the attention KV-transfer decorator
    rec = _worker(tmp_path)
    _step(rec, _meta("req-a"), layers=())
    rec.shutdown()
    (f,) = [e for e in _lines(tmp_path) if e.get("type") == "forward_done"]
    assert (f["layer_waits"], f["layer_wait_ns"], f["last_layer_wait_before_ns"]) == (0, 0, -1)


def test_without_record_to_nothing_is_measured(tmp_path):
    rec = KvledgerRecorderConnector(make_config("kv_consumer", {"inner_connector": "ScriptedConnector",
                                                               "inner_connector_module_path": "fakes"}),
                                    KVConnectorRole.WORKER, None)
    _step(rec, _meta("req-a"))
    assert rec._fwd is None
    assert [c[0] for c in rec.inner.calls].count("wait_for_layer_load") == 2
    rec.shutdown()

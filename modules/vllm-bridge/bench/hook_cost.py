"""What the recorder adds per hook call, measured with the stand-in vLLM and the scripted inner connector.

    cd modules/vllm-bridge && PYTHONPATH=src:tests/standin:tests python3 bench/hook_cost.py [NAME...]

(NAME: only the rows whose name contains it, e.g. ``"worker step"``.)

Prints nanoseconds per call (per worker step for the two step rows: bind, start_load_kv, a
wait_for_layer_load per layer of a 32-layer model, wait_for_save) for the inner connector alone, through the recorder with its writer
parked (the capture on the calling thread alone), and through the recorder writing to a file in a
temporary directory while the calls go on (the writer thread then competes for the GIL); per-layer
hooks with record_layers off and on. A measurement, not a test: nothing is asserted.
"""

import os
import sys
import tempfile
import threading
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
for p in ("src", "tests/standin", "tests"):
    sys.path.insert(0, os.path.join(HERE, "..", p))

import fakes  # noqa: E402
from driver import make_config  # noqa: E402
from kvledger_vllm import KvledgerRecorderConnector  # noqa: E402
from kvledger_vllm.stream import Stream  # noqa: E402
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole  # noqa: E402
from vllm.v1.core.kv_cache_manager import KVCacheBlocks  # noqa: E402
from vllm.v1.request import Request  # noqa: E402

N = 200_000


def per_call(stmt, number=N):
    best = min(timeit.repeat(stmt, number=number, repeat=5))
    return best / number * 1e9


class ParkedSink:
    """Blocks the writer in its first write (the header) until released: capture cost alone."""

    def __init__(self):
        self.release = threading.Event()

    def write_lines(self, lines):
        self.release.wait()

    def close(self):
        pass


STEP_LAYERS = 32
LAYER_NAMES = [f"model.layers.{i}.self_attn.attn" for i in range(STEP_LAYERS)]


def step(c, meta):
    """One worker step's hooks around the forward (the READ evidence forward_done is written in a step
    whose metadata posts reads)."""
    def run():
        c.bind_connector_metadata(meta)
        c.start_load_kv(None)
        for layer in LAYER_NAMES:
            c.wait_for_layer_load(layer)
        c.wait_for_save()
        c.calls.clear() if hasattr(c, "calls") else c.inner.calls.clear()
    return run


def parked(rec):
    rec.recording_stream.close()
    sink = ParkedSink()
    rec._stream = Stream({"kind": "header"}, sink, maxsize=1 << 22)
    return sink


def main():
    with tempfile.TemporaryDirectory() as d:
        base = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"}
        cfg = make_config("kv_producer", base)
        inner_s = fakes.ScriptedConnector(cfg, KVConnectorRole.SCHEDULER)
        inner_w = fakes.ScriptedConnector(cfg, KVConnectorRole.WORKER)
        rec_cfg = dict(base, record_to=os.path.join(d, "{role}-{dp}-{tp}.jsonl"), record_queue_size=1 << 20)
        rec_s = KvledgerRecorderConnector(make_config("kv_producer", rec_cfg), KVConnectorRole.SCHEDULER, None)
        rec_w = KvledgerRecorderConnector(make_config("kv_producer", rec_cfg), KVConnectorRole.WORKER, None)
        rec_wl = KvledgerRecorderConnector(make_config("kv_producer", dict(rec_cfg, record_layers=True)),
                                           KVConnectorRole.WORKER, None)
        req = Request("cmpl-x", list(range(64)), {"do_remote_decode": True, "transfer_id": "tx-1"})
        no_reads = fakes.FakeMeta()
        reads = fakes.FakeMeta()
        for i in range(4):
            reads.reqs_to_recv[f"cmpl-r{i}"] = object()
        blocks = KVCacheBlocks([[1, 2, 3, 4]])
        rows = [
            ("get_num_new_matched_tokens", lambda c: (lambda: c.get_num_new_matched_tokens(req, 0)), inner_s, rec_s),
            ("update_state_after_alloc", lambda c: (lambda: c.update_state_after_alloc(req, blocks, 0)), inner_s, rec_s),
            ("save_kv_layer (record_layers off)", lambda c: (lambda: c.save_kv_layer("l0", None, None)), inner_w, rec_w),
            ("save_kv_layer (record_layers on)", lambda c: (lambda: c.save_kv_layer("l0", None, None)), inner_w, rec_wl),
            ("wait_for_save", lambda c: (lambda: c.wait_for_save()), inner_w, rec_w),
            ("wait_for_layer_load (no reads posted)", lambda c: (lambda: c.wait_for_layer_load("l0")), inner_w, rec_w),
            # one worker step of a 32-layer model: bind, start_load_kv, a layer wait per layer, wait_for_save
            (f"worker step, no reads ({STEP_LAYERS} layers)", lambda c: step(c, no_reads), inner_w, rec_w),
            (f"worker step posting 4 reads ({STEP_LAYERS} layers)", lambda c: step(c, reads), inner_w, rec_w),
        ]
        print(f"{'hook':36} {'inner ns':>9} {'+capture ns':>12} {'+capture+writer ns':>18}")
        only = [a for a in sys.argv[1:] if not a.startswith("-")]
        for name, mk, inner, rec in rows:
            if only and not any(o in name for o in only):
                continue
            n = N // STEP_LAYERS if name.startswith("worker step") else N
            inner.calls = []
            a = per_call(mk(inner), n)
            inner.calls = []
            rec.inner.calls = []
            b = per_call(mk(rec), n)
            rec.inner.calls = []
            live = rec._stream
            sink = parked(rec)
            c = per_call(mk(rec), n)
            rec.inner.calls = []
            sink.release.set()
            rec._stream.close(0)
            rec._stream = live
            print(f"{name:36} {a:9.0f} {c - a:12.0f} {b - a:18.0f}")
            for r in (rec_s, rec_w, rec_wl):
                r.recording_stream.flush(60)
        for r in (rec_s, rec_w, rec_wl):
            print(f"{r.recording_stream._thread.name}: captured {r.recording_stream.captured}, "
                  f"dropped {r.recording_stream.dropped}")
            r.shutdown()


if __name__ == "__main__":
    main()

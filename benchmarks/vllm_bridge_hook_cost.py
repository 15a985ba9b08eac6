"""Per-hook cost of the vLLM bridge's recorder, measured with the stand-in driver.

    python3 benchmarks/vllm_bridge_hook_cost.py [--requests 4096] [--repeat 5]
    python3 benchmarks/vllm_bridge_hook_cost.py --paired [--requests 4096]

(Debian's python3 with python3-zmq; run from the repository root.) The stand-in driver of
modules/vllm-bridge/tests plays vLLM's scheduler loop (admission, chunked prefill, the worker's
forward pass with two layers, finishes) over one scheduler and one worker connector, in these
configurations:

- ``inner``: the scripted MoRIIO-like connector alone (no recorder);
- ``off``: ``KvledgerRecorderConnector`` without ``record_to`` (delegation only);
- ``file``: recording to files (``record_to: DIR/{role}-dp{dp}-tp{tp}.jsonl``);
- ``unfolded``: the same with ``record_fold_steps`` false (every step written, none folded);
- ``zmq``: recording to ``tcp://127.0.0.1:PORT``, a PULL socket in another process draining it
  (what a shadow node does);

per-layer hooks not recorded (``record_layers`` false, the default). Every hook method of both
connectors is wrapped in a timer (``time.perf_counter_ns`` around the call, the same wrapper in
every configuration); the table gives the mean nanoseconds per call of each hook in ``inner`` and
what each other configuration adds to it, best of ``--repeat`` runs. The writer thread of the
recorder runs in the same process during the calls, as it does in vLLM's engine-core and worker
processes. A measurement, not a test: nothing is asserted.

``--paired``: the recorder's added time per scheduler hook as a ratio in one run. Two engines play
the same workload side by side in one process, step for step (which of the two steps first
alternates): the scripted connector alone, and the recorder recording to files over the same
connector. Each scheduler hook call of both is timed by the same wrapper, so the machine's load
falls on both alike; the table gives each hook's median and p99 alone and through the recorder,
what the recorder adds (median minus median, p99 minus p99) and the ratio of the medians. The two
engines make the same calls in the same order, so the last column pairs them: the median and p99 of
each call's own difference (recorded minus alone). Where one hook's calls differ much in size (a
``build_connector_meta`` of an empty step, of a step of 16 new requests, of one that saves 16),
median minus median can set one kind of step against another; the paired difference does not,
and a second table gives ``build_connector_meta`` by kind of step.
"""

import argparse
import collections
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRIDGE = os.path.join(ROOT, "modules", "vllm-bridge")
for p in ("src", "tests/standin", "tests"):
    sys.path.insert(0, os.path.join(BRIDGE, p))

import fakes  # noqa: E402
from driver import Driver, make_config, request_id  # noqa: E402
from kvledger_vllm import KvledgerRecorderConnector  # noqa: E402
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole  # noqa: E402
from vllm.v1.request import Request  # noqa: E402

SCHED_HOOKS = ("on_new_request", "get_num_new_matched_tokens", "update_state_after_alloc", "build_connector_meta",
               "update_connector_output", "request_finished")
WORKER_HOOKS = ("bind_connector_metadata", "start_load_kv", "wait_for_layer_load", "save_kv_layer", "wait_for_save",
                "get_finished", "clear_connector_metadata")
PER_LAYER = ("wait_for_layer_load", "save_kv_layer")
# --paired: the five steps each 16 requests take (admitted with their first 16-token chunk, two more
# chunks, the last of which ends the prompt and saves it, the finished requests' sends, nothing)
STEP_KINDS = ("16 new requests", "16 second chunks", "16 last chunks, 16 saves", "16 sends", "empty")

DRAIN = """
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PULL)
s.bind(sys.argv[1])
print("ready", flush=True)
n = 0
while True:
    s.recv_multipart()
    n += 1
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(obj, names, samples):
    for name in names:
        f = getattr(obj, name)
        out = samples[name]

        def wrapper(*a, _f=f, _out=out, **k):
            t = time.perf_counter_ns()
            r = _f(*a, **k)
            _out.append(time.perf_counter_ns() - t)
            return r
        setattr(obj, name, wrapper)


def requests(n, prompt=48):
    return [Request(request_id(i + 1, "a"), list(range(prompt)),
                    {"do_remote_decode": True, "do_remote_prefill": False, "transfer_id": f"tx-{i + 1:06d}",
                     "remote_engine_id": None, "remote_block_ids": None}, max_tokens=1) for i in range(n)]


def run(mode, n_requests, where):
    """One driver run; returns ({hook: (mean ns, median ns)}, {hook: calls}, recorder counters)."""
    base = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"}
    if mode in ("file", "unfolded"):
        base["record_to"] = os.path.join(where, "{role}-dp{dp}-tp{tp}.jsonl")
        base["record_fold_steps"] = mode == "file"
    elif mode == "zmq":
        base["record_to"] = where
    cfg = make_config("kv_producer", base)
    if mode == "inner":
        sched = fakes.ScriptedConnector(cfg, KVConnectorRole.SCHEDULER)
        worker = fakes.ScriptedConnector(cfg, KVConnectorRole.WORKER)
    else:
        sched = KvledgerRecorderConnector(cfg, KVConnectorRole.SCHEDULER, None)
        worker = KvledgerRecorderConnector(cfg, KVConnectorRole.WORKER, None)
    samples = collections.defaultdict(list)
    timed(sched, SCHED_HOOKS, samples)
    timed(worker, WORKER_HOOKS, samples)
    d = Driver(sched, worker, producer=True)
    reqs = requests(n_requests)
    for i in range(0, len(reqs), 16):
        for r in reqs[i:i + 16]:
            d.add(r)
        d.run(5)
    counters = {}
    if mode in ("file", "unfolded", "zmq"):
        for name, c in (("scheduler", sched), ("worker", worker)):
            s = c.recording_stream
            s.flush(120)
            sink = s._sink
            counters[name] = (s.captured, s.dropped, getattr(sink, "dropped_lines", 0))
    for c in (sched, worker):
        if hasattr(c, "shutdown"):
            c.shutdown()
    stats = {h: (sum(v) / len(v), statistics.median(v)) for h, v in samples.items() if v}
    return stats, {h: len(v) for h, v in samples.items()}, counters


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def paired(n_requests, where):
    """Both engines in one run; returns ({hook: bare samples}, {hook: recorded samples}, counters)."""
    bare_cfg = make_config("kv_producer", {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"})
    rec_cfg = make_config("kv_producer", {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
                                          "record_to": os.path.join(where, "{role}-dp{dp}-tp{tp}.jsonl")})
    engines = []
    for mode in ("bare", "recorded"):
        if mode == "bare":
            sched = fakes.ScriptedConnector(bare_cfg, KVConnectorRole.SCHEDULER)
            worker = fakes.ScriptedConnector(bare_cfg, KVConnectorRole.WORKER)
        else:
            sched = KvledgerRecorderConnector(rec_cfg, KVConnectorRole.SCHEDULER, None)
            worker = KvledgerRecorderConnector(rec_cfg, KVConnectorRole.WORKER, None)
        samples = collections.defaultdict(list)
        timed(sched, SCHED_HOOKS, samples)
        engines.append((Driver(sched, worker, producer=True), requests(n_requests), samples, sched, worker))
    step = 0
    for i in range(0, n_requests, 16):
        for d, reqs, _, _, _ in engines:
            for r in reqs[i:i + 16]:
                d.add(r)
        for _ in range(5):
            order = engines if step % 2 == 0 else engines[::-1]
            for d, _, _, _, _ in order:
                d.step()
            step += 1
    rec_sched, rec_worker = engines[1][3], engines[1][4]
    counters = {}
    for name, c in (("scheduler", rec_sched), ("worker", rec_worker)):
        s = c.recording_stream
        s.flush(120)
        counters[name] = (s.captured, s.dropped)
    for _, _, _, sched, worker in engines:
        for c in (sched, worker):
            c.shutdown()
    return engines[0][2], engines[1][2], counters


def paired_differences(hook, bare, rec):
    """Each call's recorded time minus the same call's time alone (both engines make the same calls)."""
    if len(bare) != len(rec):
        sys.exit(f"vllm_bridge_hook_cost: {hook} was called {len(bare)} times alone and {len(rec)} times "
                 f"through the recorder; the calls cannot be paired")
    return [r - b for b, r in zip(bare, rec)]


def main_paired(a):
    with tempfile.TemporaryDirectory() as tmp:
        paired(min(a.requests, 512), os.path.join(tmp, "warm-up"))
        bare, rec, counters = paired(a.requests, os.path.join(tmp, "run"))
    print(f"{a.requests} requests (48-token prompts in 16-token chunks), the scripted connector alone and the "
          f"recorder recording to files over it, step for step in one run; ns per call")
    print()
    print("| scheduler hook | calls | alone median / p99 | recorded median / p99 | added median / p99 | "
          "ratio of medians | added per call, paired: median / p99 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    tot_calls = 0
    tot_added = 0.0
    for h in SCHED_HOOKS:
        b, r = bare[h], rec[h]
        bm, bp, rm, rp = statistics.median(b), pct(b, 0.99), statistics.median(r), pct(r, 0.99)
        tot_calls += len(r)
        tot_added += (rm - bm) * len(r)
        diff = paired_differences(h, b, r)
        print(f"| `{h}` | {len(r):,} | {bm:,.0f} / {bp:,.0f} | {rm:,.0f} / {rp:,.0f} | {rm - bm:+,.0f} / {rp - bp:+,.0f} "
              f"| {rm / bm:.2f} | {statistics.median(diff):+,.0f} / {pct(diff, 0.99):+,.0f} |")
    allb = [x for h in SCHED_HOOKS for x in bare[h]]
    allr = [x for h in SCHED_HOOKS for x in rec[h]]
    alld = [x for h in SCHED_HOOKS for x in paired_differences(h, bare[h], rec[h])]
    print(f"| all scheduler hooks | {len(allr):,} | {statistics.median(allb):,.0f} / {pct(allb, 0.99):,.0f} | "
          f"{statistics.median(allr):,.0f} / {pct(allr, 0.99):,.0f} | "
          f"{statistics.median(allr) - statistics.median(allb):+,.0f} / {pct(allr, 0.99) - pct(allb, 0.99):+,.0f} | "
          f"{statistics.median(allr) / statistics.median(allb):.2f} | "
          f"{statistics.median(alld):+,.0f} / {pct(alld, 0.99):+,.0f} |")
    print()
    print("`build_connector_meta` by kind of step (each 16 requests take five steps, in this order):")
    print()
    print("| step | calls | alone median | recorded median | added per call, paired: median / p99 |")
    print("|---|---:|---:|---:|---:|")
    h = "build_connector_meta"
    for k, kind in enumerate(STEP_KINDS):
        b, r = bare[h][k::5], rec[h][k::5]
        diff = paired_differences(h, b, r)
        print(f"| {kind} | {len(r):,} | {statistics.median(b):,.0f} | {statistics.median(r):,.0f} | "
              f"{statistics.median(diff):+,.0f} / {pct(diff, 0.99):+,.0f} |")
    print()
    print(f"added median per call, weighted by calls: {tot_added / tot_calls:+,.0f} ns (target: at most +2,000)")
    for name, (captured, dropped) in counters.items():
        print(f"{name}: {captured:,} entries captured, {dropped} dropped by the capture queue")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--paired", action="store_true", help="the scheduler hooks' added time as a ratio in one run")
    a = ap.parse_args(argv)
    if a.paired:
        main_paired(a)
        return
    port = free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    drain = subprocess.Popen([sys.executable, "-c", DRAIN, endpoint], stdout=subprocess.PIPE, text=True)
    try:
        assert drain.stdout.readline().strip() == "ready"
        best = {}
        calls = {}
        counters = {}
        with tempfile.TemporaryDirectory() as tmp:
            for rep in range(a.repeat + 1):  # the first round warms up and is not counted
                for mode in ("inner", "off", "file", "unfolded", "zmq"):
                    where = endpoint if mode == "zmq" else os.path.join(tmp, f"{mode}-{rep}")
                    stats, c, ctr = run(mode, a.requests, where)
                    if rep == 0:
                        continue
                    calls[mode] = c
                    counters[mode] = ctr
                    prev = best.setdefault(mode, {})
                    for h, (mean, med) in stats.items():
                        pm, pd = prev.get(h, (mean, med))
                        prev[h] = (min(pm, mean), min(pd, med))
        hooks = [h for h in SCHED_HOOKS + WORKER_HOOKS if h in best["inner"]]
        print(f"{a.requests} requests (48-token prompts in 16-token chunks, 2 layers), best of {a.repeat} runs; "
              f"ns per call, median / mean; the recorder columns are what it adds to the inner connector alone")
        print()
        print("| hook | calls per run | inner alone | + recorder, not recording | + recording to files | "
              "+ to files, steps not folded | + recording over ZMQ |")
        print("|---|---:|---:|---:|---:|---:|---:|")

        def cell(mode, h):
            (m, d), (im, idd) = best[mode][h], best["inner"][h]
            return f"{d - idd:+,.0f} / {m - im:+,.0f}"
        for h in hooks:
            im, idd = best["inner"][h]
            label = h + (" (per layer, not recorded)" if h in PER_LAYER else "")
            print(f"| `{label}` | {calls['inner'][h]:,} | {idd:,.0f} / {im:,.0f} | {cell('off', h)} | {cell('file', h)} | "
                  f"{cell('unfolded', h)} | {cell('zmq', h)} |")
        n = sum(calls["inner"][h] for h in hooks)
        total = {m: sum(best[m][h][0] * calls[m][h] for h in hooks) / n for m in best}
        print(f"| all hooks, mean per call | {n:,} | {total['inner']:,.0f} | {total['off'] - total['inner']:+,.0f} | "
              f"{total['file'] - total['inner']:+,.0f} | {total['unfolded'] - total['inner']:+,.0f} | "
              f"{total['zmq'] - total['inner']:+,.0f} |")
        print()
        for mode in ("file", "unfolded", "zmq"):
            for name, (captured, dropped, lost) in counters[mode].items():
                print(f"{mode} {name}: {captured:,} entries captured, {dropped} dropped by the capture queue, "
                      f"{lost} lines dropped by the sink (last run)")
    finally:
        drain.kill()
        drain.wait()


if __name__ == "__main__":
    main()

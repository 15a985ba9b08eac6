"""Bytes the vLLM bridge's recorder writes per engine step while nothing is scheduled.

    python3 benchmarks/vllm_bridge_idle_steps.py [--steps 3000] [--sleep-ms 1]

(Debian's python3; any directory.) While a request waits for its KV cache, vLLM's engine steps
without running the model, sleeping 1 ms between such steps (newer vLLM; older ones do not
sleep). The stand-in driver of modules/vllm-bridge/tests plays that: a consumer's three requests,
then ``--steps`` steps with nothing to schedule, ``--sleep-ms`` apart, recorded to files by one
scheduler and one worker connector (per-layer hooks not recorded, the default), once with
``record_fold_steps`` on (the default) and once off. It prints the steps per second and the bytes
per step each file grew by during the idle steps. A measurement, not a test: nothing is asserted.
"""

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRIDGE = os.path.join(ROOT, "modules", "vllm-bridge")
for p in ("src", "tests/standin", "tests"):
    sys.path.insert(0, os.path.join(BRIDGE, p))

import driver  # noqa: E402


def run(out_dir, fold, steps, sleep_s):
    template = os.path.join(out_dir, "{role}-dp{dp}-tp{tp}.jsonl")
    d = driver.recorded_consumer(template, record_fold_steps=fold)
    sched, worker = d.sched, d.worker
    d.run(10)  # the requests' own steps
    paths = [template.format(role=role, dp=0, tp=0) for role in ("scheduler", "worker")]
    for rec in (sched, worker):
        rec.recording_stream.flush(timeout=5)
    before = [os.path.getsize(p) for p in paths]
    t = time.perf_counter()
    for _ in range(steps):
        d.step()
        if sleep_s:
            time.sleep(sleep_s)
    elapsed = time.perf_counter() - t
    for rec in (sched, worker):
        rec.recording_stream.flush(timeout=5)
    after = [os.path.getsize(p) for p in paths]
    sched.shutdown()
    worker.shutdown()
    return steps / elapsed, [(b - a) / steps for a, b in zip(before, after)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--sleep-ms", type=float, default=1.0)
    a = ap.parse_args(argv)
    print("| record_fold_steps | steps/s | scheduler B/step | worker B/step | MB per hour at that rate |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for fold in (True, False):
            out = os.path.join(tmp, "fold" if fold else "plain")
            os.makedirs(out)
            rate, per_step = run(out, fold, a.steps, a.sleep_ms / 1000)
            hourly = rate * sum(per_step) * 3600 / 1e6
            print(f"| {str(fold).lower()} | {rate:,.0f} | {per_step[0]:.1f} | {per_step[1]:.1f} | {hourly:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

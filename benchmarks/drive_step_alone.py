"""One drive-mode engine alone in its process: its scheduler steps' time by kind, to compare two builds
of the drive client (kvledger_vllm) run one after the other in separate processes.

``drive_step_cost.py`` plays drive off and each driven engine in one process, paired step by step: good
against the machine's noise, but a sender thread's work (building frames, freeing settled calls between
its naps) can then fall in another engine's hooks. This plays one engine with ``drive_step_cost``'s
driver and cycles (admit N, 2 steady steps, ``--decode`` decode steps, N finish, ``--idle`` idle steps)
and prints each kind of step's wall and CPU time (p50 / p90 / p99 / max, µs). ``--off`` plays it with
drive mode off, in its own process: the baseline a driven engine's figures are compared with (the added
time is then a difference between runs, not paired step by step). ``--src DIR`` takes the kvledger_vllm package from DIR (another checkout's
``modules/vllm-bridge/src``) instead of this one's; everything else (driver, cycles, timing) is this
checkout's, so two runs differ only by the client::

    JAVA_HOME=... python3 benchmarks/drive_step_alone.py --jar modules/cli/target/kvledger.jar
    JAVA_HOME=... python3 benchmarks/drive_step_alone.py --jar modules/cli/target/kvledger.jar --src OLD/modules/vllm-bridge/src
    JAVA_HOME=... python3 benchmarks/drive_step_alone.py --jar modules/cli/target/kvledger.jar --off
"""

import argparse
import gc
import importlib
import os
import sys
import tempfile


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jar", required=True, help="the kvledger.jar the drive node runs from")
    ap.add_argument("--src", help="a directory holding the kvledger_vllm package to drive with (default: this checkout's)")
    ap.add_argument("--java", default=os.path.join(os.environ.get("JAVA_HOME", ""), "bin", "java"))
    ap.add_argument("--concurrency", default="64,256")
    ap.add_argument("--cycles", type=int, default=12)
    ap.add_argument("--idle", type=int, default=40)
    ap.add_argument("--decode", type=int, default=16)
    ap.add_argument("--gpu-ms", type=float, default=20)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--off", action="store_true",
                    help="play the engine with drive mode off (the recorder over the same inner connector): the baseline")
    a = ap.parse_args(argv)
    if not os.path.isfile(a.jar):
        sys.exit(f"drive_step_alone: no jar at {a.jar}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    d = importlib.import_module("drive_step_cost")  # (puts this checkout's package and tests on the path)
    if a.src:
        for name in [m for m in sys.modules if m == "kvledger_vllm" or m.startswith("kvledger_vllm.")]:
            del sys.modules[name]
        sys.path.insert(0, os.path.abspath(a.src))
        package = importlib.import_module("kvledger_vllm")
        d.KvledgerRecorderConnector = package.KvledgerRecorderConnector
    import kvledger_vllm
    print(f"drive client: {os.path.dirname(kvledger_vllm.__file__)}{' (drive mode off)' if a.off else ''}; "
          f"load average at the start: {d.load()}")
    tmp = tempfile.mkdtemp(prefix="drive-step-alone-")
    node = d.Node(a.java, os.path.abspath(a.jar), tmp, "alone", "unix")
    engine = d.Engine("alone", None if a.off else node.endpoint)
    echo = d.Echo("unix", tmp)
    try:
        d.play([engine], echo, 64, a.warmup, 2, 1, False, gpu_ms=a.gpu_ms)
        gc.collect()
        gc.freeze()
        first = a.warmup * 64 + 1
        print("| N | step | steps | wall p50 / p90 / p99 / max | CPU p50 / p99 |")
        print("|---:|---|---:|---:|---:|")
        for n in (int(x) for x in a.concurrency.split(",")):
            steps, cpu = d.play([engine], echo, n, a.cycles, a.idle, first, True, a.decode, True, a.gpu_ms)
            first += a.cycles * n
            for kind in d.KINDS:
                wall, used = steps["alone"][kind], cpu["alone"][kind]
                if wall:
                    print(f"| {n} | {d.KIND_TEXT[kind]} | {len(wall)} | {d.us(d.pct(wall, 0.5))} / "
                          f"{d.us(d.pct(wall, 0.9))} / {d.us(d.pct(wall, 0.99))} / {d.us(max(wall))} | "
                          f"{d.us(d.pct(used, 0.5))} / {d.us(d.pct(used, 0.99))} |")
        print(f"fallbacks {engine.fallbacks()}, divergences {engine.divergences()}; load average at the end: {d.load()}")
    finally:
        engine.close()
        node.close()
        echo.close()


if __name__ == "__main__":
    main()

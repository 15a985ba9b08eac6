"""The drive client's own Python per scheduler step (issue 34), against a stand-in node.

    python3 benchmarks/drive_client_cost.py [--base REV] [--concurrency 256] [--cycles 20] [--prompt 64] [--profile]

The scheduler thread's CPU time (``time.thread_time_ns``) in the scheduler hooks of each step, for
the recorder with drive mode off and with drive mode on and ``drive_matched_from_inner`` and
``drive_finished_from_inner`` (nothing awaited in an admitting or finishing step), played by the
stand-in driver of modules/vllm-bridge/tests in vLLM's call order, as drive_step_cost.py does.
``--prompt TOKENS``: each request's prompt (64 by default), prefilled in four chunks (the first in
the admitting step; ``--chunk TOKENS`` for another size), blocks of 16; the stand-in vLLM's ``KVCacheBlocks`` holds block objects and
builds ``get_block_ids()``'s lists from their ids, as vLLM's does (a 2,048-token prompt: 32 blocks
allocated per request in the admitting step, and 32 new blocks in each of the next three).
The node is a stand-in in another process (``unix_frames.py standin``: a Unix socket, length-prefixed msgpack frames, batches
answered call by call, compact calls taken and answered as the node does, each answer the one vLLM
acted on, and a digest of the calls it applied
printed at the end: the same for every engine, as they make the same calls): what is timed is the client's work
(building each call, packing, sending, reading and checking the replies), not a node's. With
``--base REV`` the package as it is at that git revision plays too, in the same run (loaded from
``git show`` under another name), each with a stand-in of its own; engines alternate step by step.
Medians per kind of step, and what drive mode adds over ``off`` (median and mean: the two idle steps
after the finishes alternate between one that reads the finishes' replies and one that does not),
with the thread's minor page faults in those hooks; then the admitting steps' CPU per hook (means). ``--gpu-ms MS``: the driver
sleeps MS ms after each step's ``build_connector_meta`` that scheduled something (the GIL released), as vLLM waits
for the GPU; each kind of
step then also gets the scheduler thread's wall time in its hooks (a wait for the drive sender thread
included) and the sender thread's CPU. ``--sender both`` (default) plays this checkout's drive engine with
``drive_sender_thread`` on (head) and off (head-inthread). ``--profile [HOOK]`` prints
a cProfile (thread CPU time; each call's timer inflates small functions) of this checkout's drive
engine over the admitting steps (``--profile-kind KIND``: another kind of step), or that hook alone; ``--no-gc`` turns the collector off. A
measurement, nothing is asserted: on a shared machine only ratios within one run mean much.
"""

import argparse
import collections
import cProfile
import importlib
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRIDGE = os.path.join(ROOT, "modules", "vllm-bridge")
for p in ("src", "tests/standin", "tests"):
    sys.path.insert(0, os.path.join(BRIDGE, p))

from driver import Driver, make_config  # noqa: E402
import unix_frames  # noqa: E402
from drive_step_cost import SCHED_HOOKS, load, make_requests, pct  # noqa: E402
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole  # noqa: E402

def base_package(rev, where):
    """This checkout's kvledger_vllm as it is at ``rev``, importable as ``kvledger_vllm_base``."""
    pkg = os.path.join(where, "kvledger_vllm_base")
    os.makedirs(pkg)
    src = "modules/vllm-bridge/src/kvledger_vllm/"
    names = subprocess.run(["git", "-C", ROOT, "ls-tree", "--name-only", rev, src], check=True,
                           capture_output=True, text=True).stdout.split()
    for name in names:
        if name.endswith(".py"):
            body = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:{name}"], check=True,
                                  capture_output=True).stdout
            with open(os.path.join(pkg, os.path.basename(name)), "wb") as f:
                f.write(body)
    sys.path.insert(0, where)
    return importlib.import_module("kvledger_vllm_base")


class Engine:
    def __init__(self, label, package, drive=None, sender=None):
        self.label = label
        extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"}
        if drive is not None:
            extra.update(drive_node=drive, drive_timeout_ms=30000, drive_matched_from_inner=True,
                         drive_finished_from_inner=True)
        if sender is not None:
            extra["drive_sender_thread"] = sender
        cfg = make_config("kv_producer", extra)
        self.sched = package.KvledgerRecorderConnector(cfg, KVConnectorRole.SCHEDULER, None)
        self.worker = package.KvledgerRecorderConnector(cfg, KVConnectorRole.WORKER, None)
        if drive is not None and not self.sched.driving:
            sys.exit(f"drive_client_cost: engine {label} is not driving")
        self.cpu = 0
        self.wall = 0  # the scheduler thread's wall time in the same hooks (a wait for the sender included)
        self.faults = 0  # the scheduler thread's minor page faults in the same hooks
        self.by_hook = collections.Counter()  # CPU ns per hook over the recorded admitting steps
        self.keep = False
        self.prof = None  # (profile, hook): that hook is profiled
        for name in SCHED_HOOKS:
            self._time(name)
        self.driver = Driver(self.sched, self.worker, producer=True)

    def _time(self, name):
        f = getattr(self.sched, name)

        def wrapper(*a, **k):
            p = self.prof
            if p is not None and p[1] in (name, ""):
                p[0].enable()
            m = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
            w = time.monotonic_ns()
            c = time.thread_time_ns()
            r = f(*a, **k)
            if p is not None and p[1] in (name, ""):
                p[0].disable()
            took = time.thread_time_ns() - c
            self.wall += time.monotonic_ns() - w
            self.faults += resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - m
            self.cpu += took
            if self.keep:
                self.by_hook[name] += took
            return r
        setattr(self.sched, name, wrapper)

    def sender_ns(self):
        """The drive sender thread's CPU so far (0: none)."""
        d = getattr(self.sched, "_drive", None)
        return getattr(d, "sender_cpu_ns", 0) if d is not None else 0

    def close(self):
        self.sched.shutdown()
        self.worker.shutdown()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="a git revision whose package plays too")
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--prompt", type=int, default=64, help="prompt tokens per request (four chunks)")
    ap.add_argument("--chunk", type=int, help="prefill tokens per step (default: a quarter of the prompt)")
    ap.add_argument("--decode", type=int, default=0,
                    help="decode steps per request after its prompt (one token each, a new block every 16)")
    ap.add_argument("--stagger", action="store_true",
                    help="with --decode: each request starts its new blocks at a token of its own (about N/16 of "
                         "them get one in each decode step) instead of all at the same step")
    ap.add_argument("--profile", nargs="?", const="", metavar="HOOK",
                    help="profile this checkout's drive engine over the admitting steps (or that hook alone)")
    ap.add_argument("--profile-kind", choices=("burst", "steady", "decode", "finish", "idle"), default="burst",
                    help="with --profile: the kind of step profiled (as the table names them; decode: the steps "
                         "with no new or finished request once every prompt is in)")
    ap.add_argument("--no-gc", action="store_true", help="with the garbage collector off (what it costs)")
    ap.add_argument("--gpu-ms", type=float, default=0,
                    help="after each step's build_connector_meta the driver waits MS ms (time.sleep, the GIL "
                         "released), as vLLM's scheduler thread waits for the GPU")
    ap.add_argument("--sender", choices=("both", "on", "off"), default="both",
                    help="this checkout's drive engine with drive_sender_thread on and off (both: two engines, "
                         "head and head-inthread), or one of them as head")
    a = ap.parse_args(argv)
    if a.no_gc:
        import gc
        gc.disable()
    tmp = tempfile.mkdtemp(prefix="drive-client-cost-")
    procs = []

    def standin(label):
        path = os.path.join(tmp, label + ".sock")
        p = unix_frames.start("standin", path)
        procs.append((label, p))
        return "unix://" + path

    head = importlib.import_module("kvledger_vllm")
    engines = [Engine("off", head), Engine("head", head, standin("head"), a.sender != "off")]
    if a.sender == "both":
        engines.append(Engine("head-inthread", head, standin("head-inthread"), False))
    if a.base:
        engines.append(Engine("base", base_package(a.base, tmp), standin("base")))
    for e in engines:
        e.driver.decode = a.decode
        e.driver.stagger = a.stagger
        e.driver.chunk = a.chunk or max(1, -(-a.prompt // 4))
        e.driver.gpu_ms = a.gpu_ms
    print(f"load average at the start: {load()}")
    cpu = {e.label: collections.defaultdict(list) for e in engines}
    wall = {e.label: collections.defaultdict(list) for e in engines}
    sender = {e.label: collections.defaultdict(list) for e in engines}
    faults = {e.label: collections.defaultdict(list) for e in engines}
    prof = a.profile  # (None: no profile) cProfile per step of the kind profiled, its hooks only, summed in stats
    stats = None
    n, first = a.concurrency, 1
    try:
        for c in range(a.cycles + 2):  # the first two: warm-up
            for e in engines:
                e.cpu = e.faults = e.wall = 0  # on_new_request, the admission, counts in the admitting step
                e.keep = c >= 2
                for r in make_requests(first, n, a.prompt):
                    e.driver.add(r)
            first += n
            for i in range(6 + a.decode):
                kinds = set()
                k = c + i  # which engine steps first rotates step by step, and cycle by cycle
                order = engines[k % len(engines):] + engines[:k % len(engines)]
                for e in order:
                    d = e.driver
                    before = (len(d.waiting), len(d.running), len(d.finished))
                    decoding = before[1] and all(
                        r.num_computed_tokens >= r.num_prompt_tokens for r in d.running.values())
                    if not before[0]:
                        e.cpu = e.faults = e.wall = 0
                    sent_before = e.sender_ns()
                    e.keep = c >= 2 and bool(before[0])
                    profiling = prof is not None and e.label == "head" and c >= 2
                    if profiling:  # this step's hooks alone, kept when the step is of the kind profiled
                        step_prof = cProfile.Profile(time.thread_time_ns, 1e-9)
                        e.prof = step_prof, a.profile
                    d.step()
                    e.prof = None
                    kind = ("burst" if before[0] else "finish" if len(d.finished) > before[2]
                            else "decode" if decoding else "steady" if before[1] else "idle")
                    kinds.add(kind)
                    if profiling and kind == a.profile_kind:
                        step_prof.create_stats()
                        if not step_prof.stats:
                            pass  # the hook profiled was not called in this step
                        elif stats is None:
                            stats = pstats.Stats(step_prof)
                        else:
                            stats.add(step_prof)
                    if c >= 2:
                        cpu[e.label][kind].append(e.cpu)
                        wall[e.label][kind].append(e.wall)
                        sender[e.label][kind].append(e.sender_ns() - sent_before)
                        faults[e.label][kind].append(e.faults)
                if len(kinds) != 1:
                    sys.exit(f"drive_client_cost: the engines disagree on a step's kind: {kinds}")
        for e in engines:
            if e.label != "off":
                e.sched._drive_settled()
                print(f"{e.label}: fallbacks {e.sched.drive_fallbacks}, divergences {e.sched.drive_divergences}")
    finally:
        for e in engines:
            e.close()
        for label, p in procs:
            # the calls the stand-in applied, in order (hook and arguments): the same for every engine
            print(f"{label}: calls applied by the stand-in, and their digest: {p.stdout.readline().strip()}")
            p.kill()
            p.wait()
    print(f"load average at the end: {load()}")
    import gc
    print("Python's collections by generation in the run (all engines): "
          + ", ".join(str(g["collections"]) for g in gc.get_stats()))
    print(f"scheduler-thread CPU per step, N={n}, {a.cycles} cycles, prompts of {a.prompt} tokens in chunks of {a.chunk or max(1, -(-a.prompt // 4))}, GPU wait {a.gpu_ms:g} ms: median µs (added over off; per request); then the scheduler thread's wall time in the hooks, added over off (median, p90), and the drive sender thread's CPU per step (median)")
    for kind in ("burst", "steady", "decode", "finish", "idle"):
        off = cpu["off"][kind]
        if not off:
            continue
        cells = [f"off {pct(off, 0.5) / 1000:,.0f} ({pct(faults['off'][kind], 0.5):,} page faults)"]
        for e in engines[1:]:
            on = cpu[e.label][kind]
            added = [x - y for x, y in zip(on, off)]
            m = pct(added, 0.5)
            cells.append(f"{e.label} {pct(on, 0.5) / 1000:,.0f} (+{m / 1000:,.0f}; {m / n / 1000:.1f}/req; "
                         f"mean +{sum(added) / max(1, len(added)) / 1000:,.0f}; "
                         f"{pct(faults[e.label][kind], 0.5):,} page faults)")
        print(f"  {kind:7s} " + " | ".join(cells))
        w_off = wall["off"][kind]
        cells = [f"off {pct(w_off, 0.5) / 1000:,.0f}"]
        for e in engines[1:]:
            added = [x - y for x, y in zip(wall[e.label][kind], w_off)]
            cells.append(f"{e.label} +{pct(added, 0.5) / 1000:,.0f} (p90 +{pct(added, 0.9) / 1000:,.0f}); sender "
                         f"thread CPU {pct(sender[e.label][kind], 0.5) / 1000:,.0f}")
        print(f"  {'':7s} wall " + " | ".join(cells))
    print(f"  admitting steps by hook, CPU µs per request: " + " | ".join(
        e.label + " " + ", ".join(f"{h} {e.by_hook[h] / (n * a.cycles) / 1000:.1f}" for h in SCHED_HOOKS)
        for e in engines))
    if stats is not None:
        stats.sort_stats("tottime").print_stats(30)
    elif prof is not None:
        print(f"no {a.profile_kind} step called {prof or 'a scheduler hook'}: nothing to profile")


if __name__ == "__main__":
    main()

"""What drive mode adds to vLLM's scheduler steps, measured over the recorder with real kvledger nodes.

    benchmarks/drive-step-cost.sh [--jar LABEL=PATH ...] [--concurrency 16,64,256] [--cycles 6]

(the wrapper finds a JDK 25 and the CLI jar and runs this script with Debian's python3 and
python3-zmq; run directly it needs ``--java`` and ``--jar``.) One process plays the same workload
on several engines side by side, step for step (which engine steps first rotates each step): the
stand-in driver of modules/vllm-bridge/tests, which calls the scheduler connector's hooks in vLLM's
per-step order (``on_new_request`` at admission, then per step ``get_num_new_matched_tokens`` and
``update_state_after_alloc`` for each request it schedules for the first time,
``build_connector_meta``, the worker's forward pass, ``update_connector_output`` and
``request_finished`` for each request that finished), over ``KvledgerRecorderConnector`` with the
scripted MoRIIO-like connector inside:

- ``off``: the recorder without drive mode (the inner connector answers);
- one engine per ``--jar LABEL=PATH``: drive mode on with the default switches (vLLM takes the
  inner's ``get_num_new_matched_tokens``, ``request_finished`` and a producer's rewrite of
  ``finished_sending`` in ``update_connector_output`` while the node agrees: nothing awaited),
  answered by its own ``kvledger node --engine drive --bridge tcp://127.0.0.1:PORT`` started from
  that jar, journaling to a temporary directory as in production (``--journal``, the node's
  defaults otherwise);
- with ``--unpipelined LABEL``, that node's engine once more with ``drive_pipeline`` false (every
  call awaited, as before pipelining; it gets a node of its own from the same jar); with
  ``--unbatched LABEL``, once more with ``drive_batch`` false (unawaited calls sent each on its
  own frame); with ``--finished-awaited LABEL``, once more with ``drive_finished_from_inner`` false
  (every ``request_finished`` awaited, and a producer's ``update_connector_output`` while a free the
  node deferred is pending: the earlier default); with ``--from-inner LABEL``, with
  ``drive_freed_from_inner`` false (``request_finished`` from the inner, a producer's
  ``update_connector_output`` after finishes awaits the node's rewrite); with ``--freed-from-inner
  LABEL``, with ``drive_matched_from_inner`` and ``drive_finished_from_inner`` ``always`` (the inner's
  answers for good: the same calls as the default while the node agrees); with ``--matched-awaited LABEL``,
  with ``drive_matched_from_inner`` false (every ``get_num_new_matched_tokens`` awaited, the earlier
  default); with ``--matched-from-inner LABEL``, with it ``always``; with ``--idle-frames LABEL``, as ``--from-inner`` but every
  call sent as if not ``quiet`` (``NodeBridge.send_args``): a step with nothing scheduled sends its
  frame at its end, as before idle steps waited for a later frame; with ``--unsteady LABEL``, with
  ``drive_steady`` false (each step's cached ids and new block ids in full); with ``--inthread LABEL``,
  with ``drive_sender_thread`` false (every call built, packed and sent on the
  scheduler thread; the sender thread's CPU per step has a table of its own); with ``--unreclaimed LABEL``,
  with ``NodeBridge.reclaim`` false (a hand-off the sender has not started is
  waited for, not run by the scheduler thread); with ``--unnapped LABEL``, with ``drive_sender_nap_ms`` 0 (the
  sender thread waits in its queue: each hand-off wakes it); with ``--unbrief LABEL``, with ``drive_brief``
  false (the node's metadata for the worker in its replies, unpacked on the scheduler thread).

``--gpu-ms MS``: after each step's ``build_connector_meta`` that scheduled something (an empty step runs no
forward pass) the driver sleeps MS ms (the GIL released),
as vLLM's scheduler thread waits for the GPU before the step's ``update_connector_output`` and
``request_finished``; the sender thread works meanwhile (0, the default: it works while the next hook waits).

After the warm-up the process collects and freezes its heap (``gc.freeze``), as vLLM's engine core does at
the end of its start-up (``freeze_gc_heap``): a later full collection scans only what came after;
``--unfrozen`` leaves it as it is (collections then scan every engine's and node handle's state).

``--transport unix`` (the default) serves each node's bridge on ``unix:///TMP/node-LABEL.sock`` and
times the echo over a Unix socket too; ``--transport tcp`` uses ``tcp://127.0.0.1:PORT``.

Each cycle admits ``N`` requests at once (64-token prompts in 16-token chunks: the admitting step,
two steady steps, a step whose last chunks finish every request; with ``--decode D`` D decode steps
before it, the same requests one token each, a new block every 16th, all at once or with
``--stagger`` about N/16 of them in each step: "decoding") and then steps ``--idle`` times
with nothing scheduled, the first of which ("their deferred frees end") gets the finished requests'
ACKs in ``update_connector_output``. The scheduler hooks of every engine are timed by the same wrapper
(``time.perf_counter_ns``); a step's time is the sum of its scheduler hooks. The tables give, per
kind of step, the step's time with drive mode off and on (p50 / p99, µs) and what drive mode adds:
each step's time on minus the same step's time off (paired: the engines make the same calls), its
p50 and p99, then the scheduler thread's CPU time in the same hooks (the client's own work, which
load on the machine does not inflate as much as wall time), and Python's collector on the scheduler thread inside
those hooks (collections per step, their CPU). Then per node the awaited calls (each ``NodeBridge.call``: a send and the wait for its
reply, replies of unawaited calls read on the way included), p50 and p99, against the floor: a bare
echo in another process over the same transport (a pyzmq ROUTER, or length-prefixed frames over a Unix
socket), one call at a
time with a frame of the size of a ``get_num_new_matched_tokens`` call, four round trips after
every step, so that load falls on both alike; the first of each four is also shown apart (the echo's
peer slept while the step ran and is woken, as the node is for most awaited calls: between two
``request_finished`` the scheduler works for tens of µs and the node's thread parks). A measurement, not a test: nothing is asserted. The
machine's load average is printed at the start and the end: on a shared machine only the ratios
within one run mean much.
"""

import argparse
import collections
import gc
import http.client
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRIDGE = os.path.join(ROOT, "modules", "vllm-bridge")
for p in ("src", "tests/standin", "tests"):
    sys.path.insert(0, os.path.join(BRIDGE, p))

import msgpack  # noqa: E402
import zmq  # noqa: E402

import unix_frames  # noqa: E402
from driver import Driver, make_config, request_id  # noqa: E402
from kvledger_vllm import KvledgerRecorderConnector  # noqa: E402
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole  # noqa: E402
from vllm.v1.request import Request  # noqa: E402

SCHED_HOOKS = ("on_new_request", "get_num_new_matched_tokens", "update_state_after_alloc", "build_connector_meta",
               "update_connector_output", "request_finished")
KINDS = ("burst", "steady", "decode", "finish", "freeing", "idle")
KIND_TEXT = {"burst": "admits N requests", "steady": "N running, none new or finished",
             "decode": "N decoding, none new or finished",
             "finish": "N finish", "freeing": "the next: their deferred frees end",
             "idle": "nothing scheduled"}
# the launcher's JVM flags for the CLI, and a live node's collector; a smaller fixed heap (two or
# three nodes run at once)
JVM_FLAGS = ["--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
             "-Dchronicle.analytics.disable=true", "-Dchronicle.announcer.disable=true",
             "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
             "--add-exports=java.base/jdk.internal.util=ALL-UNNAMED", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
             "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED", "--add-opens=java.base/java.io=ALL-UNNAMED",
             "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
             "--add-opens=java.base/java.util=ALL-UNNAMED", "-XX:+UseParallelGC", "-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"]
KV_CONFIG = json.dumps({"kv_role": "kv_producer", "kv_connector_extra_config": {
    "host_ip": "10.0.0.1", "proxy_ip": "127.0.0.1", "proxy_ping_port": 1}})

ECHO = """
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.ROUTER)
s.setsockopt(zmq.LINGER, 0)
port = s.bind_to_random_port("tcp://127.0.0.1")
print(port, flush=True)
while True:
    s.send_multipart(s.recv_multipart())
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def us(ns):
    return f"{ns / 1000:,.0f}" if ns == ns else "-"


def load():
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])


class Node:
    """One ``kvledger node --engine drive`` from a jar, journaling to ``where``."""

    def __init__(self, java, jar, where, label, transport="tcp", flags=()):
        self.port = free_port()
        self.sock_path = os.path.join(where, "node-" + label.replace(" ", "-") + ".sock")
        self.transport = transport
        self.http = free_port()
        self.journal = os.path.join(where, "journal-" + label)
        self.log_path = os.path.join(where, "node-" + label + ".log")
        cmd = [java, *JVM_FLAGS, *flags, "-jar", jar, "node", "--engine", "drive", "--bridge", self.endpoint,
               "--kv-transfer-config", KV_CONFIG, "--http", f"127.0.0.1:{self.http}", "--journal", self.journal]
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 180
        while time.monotonic() < end and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/healthz", timeout=5) as r:
                    if r.status == 200:
                        return
            except (OSError, http.client.HTTPException):  # not up yet (or another process's port)
                time.sleep(0.1)
        self.close()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            sys.exit(f"drive_step_cost: the node from {jar} did not come up:\n{f.read()}")

    @property
    def endpoint(self):
        if self.transport == "unix":
            return "unix://" + self.sock_path
        return f"tcp://127.0.0.1:{self.port}"

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Engine:
    """One scheduler + worker recorder over the scripted connector, its hooks timed per step."""

    def __init__(self, label, drive=None, pipeline=True, batch=True, from_inner=None, finished_from_inner=None,
                 freed_from_inner=None, idle_frames=False, steady=True, sender=None, brief=True):
        self.label = label
        extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"}
        if drive is not None:
            extra.update(drive_node=drive, drive_timeout_ms=30000)
            if not pipeline:
                extra["drive_pipeline"] = False
            if not batch:
                extra["drive_batch"] = False
            if not steady:
                extra["drive_steady"] = False
            if not brief:
                extra["drive_brief"] = False
            if sender is not None:
                extra["drive_sender_thread"] = sender
            if from_inner is not None:  # else the default (the inner's answer while the node agrees)
                extra["drive_matched_from_inner"] = from_inner
            if finished_from_inner is not None:  # else the default (the inner's while the node agrees)
                extra["drive_finished_from_inner"] = finished_from_inner
            if freed_from_inner is not None:  # else the default (with drive_finished_from_inner)
                extra["drive_freed_from_inner"] = freed_from_inner
        cfg = make_config("kv_producer", extra)
        self.sched = KvledgerRecorderConnector(cfg, KVConnectorRole.SCHEDULER, None)
        self.worker = KvledgerRecorderConnector(cfg, KVConnectorRole.WORKER, None)
        if drive is not None and not self.sched.driving:
            sys.exit(f"drive_step_cost: engine {label} is not driving (see the log above)")
        self.step_ns = 0
        self.step_cpu_ns = 0  # the scheduler thread's CPU time in the step's hooks
        self.hook_ns = {}  # this step's hooks: name -> [wall ns, CPU ns]
        self.gc_ns = 0  # Python's collector, inside this step's hooks
        self.hook_gc = [0, 0]  # this step: the collections on the scheduler thread inside its hooks, their CPU ns
        self.idle_hooks = collections.defaultdict(list)  # idle steps: (name, "wall"|"cpu") -> [ns]
        self.idle_gc = []  # idle steps: the collector's ns in each
        self.idle_framed = []  # idle steps that sent a batch frame: their step ns
        self.awaited = []  # ns per awaited NodeBridge.call (only while recording)
        self.recording = False
        self.inner_ns = 0  # this step: the inner connector's wall time inside the scheduler hooks
        for name in SCHED_HOOKS:
            self._time_hook(name)
            self._time_inner(name)
        bridge = getattr(self.sched, "_drive", None)
        if bridge is not None:
            self._time_awaited(bridge)
            if idle_frames:
                self._loud(bridge)
        self.driver = Driver(self.sched, self.worker, producer=True)

    def _time_hook(self, name):
        f = getattr(self.sched, name)

        def wrapper(*a, **k):
            t = time.perf_counter_ns()
            c = time.thread_time_ns()
            _IN_HOOK[0] = True
            try:
                r = f(*a, **k)
            finally:
                _IN_HOOK[0] = False
            c = time.thread_time_ns() - c
            t = time.perf_counter_ns() - t
            self.step_cpu_ns += c
            self.step_ns += t
            h = self.hook_ns.setdefault(name, [0, 0])
            h[0] += t
            h[1] += c
            return r
        setattr(self.sched, name, wrapper)

    def _time_inner(self, name):
        """The inner connector's own time in the recorder's hook ``name`` (the scheduler thread's, inside a timed
        hook): the step's time less this is what the recorder and drive mode cost, without the inner's noise."""
        inner = self.sched._inner
        f = getattr(inner, name, None)
        if f is None:
            return

        def wrapper(*a, **k):
            if not (_IN_HOOK[0] and threading.get_ident() == _MAIN):
                return f(*a, **k)
            t = time.perf_counter_ns()
            try:
                return f(*a, **k)
            finally:
                self.inner_ns += time.perf_counter_ns() - t
        setattr(inner, name, wrapper)

    def _time_awaited(self, bridge):
        f = bridge.call

        def call(*a, **k):
            t = time.perf_counter_ns()
            r = f(*a, **k)
            if self.recording:
                self.awaited.append(time.perf_counter_ns() - t)
            return r
        bridge.call = call

    @staticmethod
    def _loud(bridge):
        row, args = bridge.send_row, bridge.send_args

        def send_row(hook, r, on_result=None, flush=False, quiet=False):
            row(hook, r, on_result, flush)

        def send_args(hook, a, on_result=None, flush=False, quiet=False):
            args(hook, a, on_result, flush)
        bridge.send_row, bridge.send_args = send_row, send_args

    def sender_ns(self):
        """The drive sender thread's CPU so far (None: no sender thread)."""
        d = getattr(self.sched, "_drive", None)
        return getattr(d, "sender_cpu_ns", None) if d is not None else None

    def fallbacks(self):
        return getattr(self.sched, "drive_fallbacks", 0)

    def divergences(self):
        return getattr(self.sched, "drive_divergences", 0)

    def close(self):
        self.sched.shutdown()
        self.worker.shutdown()


def make_requests(first, n, prompt=64):
    return [Request(request_id(first + i, "a"), list(range(prompt)),
                    {"do_remote_decode": True, "do_remote_prefill": False, "transfer_id": f"tx-{first + i:06d}",
                     "remote_engine_id": None, "remote_block_ids": None}, max_tokens=1) for i in range(n)]


class Echo:
    def __init__(self, transport="tcp", where=None):
        self.ctx = None
        if transport == "unix":
            from kvledger_vllm.drive import _UnixFrames
            path = os.path.join(where, "echo.sock")
            self.proc = unix_frames.start("echo", path)
            self.sock = _UnixFrames(path, 30000, zmq.Again, zmq.DONTWAIT)
        else:
            self.proc = subprocess.Popen([sys.executable, "-c", ECHO], stdout=subprocess.PIPE, text=True)
            port = int(self.proc.stdout.readline())
            self.ctx = zmq.Context(1)
            self.sock = self.ctx.socket(zmq.DEALER)
            self.sock.setsockopt(zmq.LINGER, 0)
            self.sock.connect(f"tcp://127.0.0.1:{port}")
        self.frame = msgpack.packb({"v": 1, "id": 123456, "hook": "get_num_new_matched_tokens",
                                    "args": {"request_id": request_id(1, "a"), "num_computed_tokens": 0}})
        self.samples = []
        self.first_samples = []
        for _ in range(200):
            self.once(False)

    def once(self, keep=True, first=False):
        """One round trip; ``first``: the first after a step (its peer idle while the step ran, as a
        node is between two awaited calls), kept in ``first_samples`` too."""
        t = time.perf_counter_ns()
        self.sock.send(self.frame)
        msgpack.unpackb(self.sock.recv())
        if keep:
            took = time.perf_counter_ns() - t
            self.samples.append(took)
            if first:
                self.first_samples.append(took)

    def close(self):
        self.sock.close()
        if self.ctx is not None:
            self.ctx.term()
        self.proc.kill()
        self.proc.wait()


_STEPPING = [None]  # the engine whose step runs (Python's collector's time is counted to it)
_GC_START = [0, 0]
_IN_HOOK = [False]  # the scheduler thread is in a scheduler hook
_MAIN = threading.get_ident()


def _gc_timer(phase, info):
    e = _STEPPING[0]
    if e is None:
        return
    if phase == "start":
        _GC_START[0] = time.perf_counter_ns()
        _GC_START[1] = time.thread_time_ns()
    else:
        e.gc_ns += time.perf_counter_ns() - _GC_START[0]
        if _IN_HOOK[0] and threading.get_ident() == _MAIN:  # (not the sender thread's)
            e.hook_gc[0] += 1
            e.hook_gc[1] += time.thread_time_ns() - _GC_START[1]


def play(engines, echo, n, cycles, idle, first, record, decode=0, stagger=False, gpu_ms=0, sender=None, gcs=None,
         own=None):
    """``cycles`` cycles of N requests on every engine; returns {label: {kind: [step ns]}}, the same of
    the steps' CPU, and fills ``sender`` ({label: {kind: [ns]}}) with the sender thread's CPU per step,
    ``gcs`` ({label: {kind: [(collections, CPU ns)]}}) with Python's collector on the scheduler thread
    inside the step's hooks and ``own`` ({label: {kind: [ns]}}) with the step's time less its inner
    connector's."""
    steps = {e.label: collections.defaultdict(list) for e in engines}
    cpu = {e.label: collections.defaultdict(list) for e in engines}
    k = 0
    for c in range(cycles):
        reqs = {e.label: make_requests(first + c * n, n) for e in engines}
        for e in engines:
            e.recording = record
            e.driver.decode = decode
            e.driver.stagger = stagger
            e.driver.gpu_ms = gpu_ms
            for r in reqs[e.label]:
                e.driver.add(r)
        # on_new_request (the admission) is timed into the admitting step
        previous = None
        for i in range(4 + decode + idle):
            kinds = set()
            order = engines[k % len(engines):] + engines[:k % len(engines)]
            k += 1
            for e in order:
                d = e.driver
                before = (len(d.waiting), len(d.running), len(d.finished))
                decoding = before[1] and all(r.num_computed_tokens >= r.num_prompt_tokens for r in d.running.values())
                _STEPPING[0] = e
                bridge = getattr(e.sched, "_drive", None)
                frames = bridge.batches if bridge is not None else 0
                sent_before = e.sender_ns()
                d.step()
                _STEPPING[0] = None
                if before[0]:
                    kind = "burst"
                elif len(d.finished) > before[2]:
                    kind = "finish"
                elif previous == "finish":
                    kind = "freeing"  # nothing scheduled: update_connector_output surfaces the ACKs
                elif before[1]:
                    kind = "decode" if decoding else "steady"
                else:
                    kind = "idle"
                kinds.add(kind)
                took = e.step_ns
                e.step_ns = 0
                took_cpu = e.step_cpu_ns
                e.step_cpu_ns = 0
                inner = e.inner_ns
                e.inner_ns = 0
                if record:
                    if own is not None:
                        own.setdefault(e.label, collections.defaultdict(list))[kind].append(took - inner)
                    if gcs is not None:
                        gcs.setdefault(e.label, collections.defaultdict(list))[kind].append(tuple(e.hook_gc))
                    steps[e.label][kind].append(took)
                    cpu[e.label][kind].append(took_cpu)
                    if sent_before is not None and sender is not None:
                        sender.setdefault(e.label, collections.defaultdict(list))[kind].append(
                            e.sender_ns() - sent_before)
                    if kind == "idle":
                        for name, (wall, used) in e.hook_ns.items():
                            e.idle_hooks[name, "wall"].append(wall)
                            e.idle_hooks[name, "cpu"].append(used)
                        e.idle_gc.append(e.gc_ns)
                        if bridge is not None and bridge.batches != frames:
                            e.idle_framed.append(took)
                e.hook_ns = {}
                e.gc_ns = 0
                e.hook_gc = [0, 0]
            if len(kinds) != 1:
                sys.exit(f"drive_step_cost: the engines disagree on the kind of step {i} of cycle {c}: {kinds}")
            previous = next(iter(kinds))
            for j in range(4):
                echo.once(record, j == 0)
    return steps, cpu


# The engines a jar's LABEL gets besides its default one, in this order: (the option naming the LABEL,
# its node's name suffix, the engine's label suffix, the Engine's arguments, the bridge's attributes set,
# what the option's help says the engine drives with)
VARIANTS = (
    ("matched_from_inner", "matched-from-inner", "matched from inner", dict(from_inner="always"), {},
     'drive_matched_from_inner "always"'),
    ("matched_awaited", "matched-awaited", "matched awaited", dict(from_inner=False), {},
     "drive_matched_from_inner false (every get_num_new_matched_tokens awaited)"),
    ("finished_awaited", "finished-awaited", "finished awaited", dict(finished_from_inner=False), {},
     "drive_finished_from_inner false (every request_finished awaited, the earlier default)"),
    ("from_inner", "from-inner", "frees awaited", dict(freed_from_inner=False), {},
     "drive_freed_from_inner false (the frees after finishes awaited)"),
    ("idle_frames", "idle-frames", "frees awaited, idle frames", dict(freed_from_inner=False, idle_frames=True), {},
     "drive_freed_from_inner false and a frame sent at the end of every step"),
    ("freed_from_inner", "freed-from-inner", "from inner always",
     dict(from_inner="always", finished_from_inner="always"), {},
     'drive_matched_from_inner and drive_finished_from_inner "always"'),
    ("inthread", "inthread", "in-thread", dict(sender=False), {},
     "drive_sender_thread false (each call built, packed and sent on the scheduler thread)"),
    ("unreclaimed", "unreclaimed", "unreclaimed", {}, {"reclaim": False},
     "NodeBridge.reclaim false (the scheduler thread always waits for the sender thread, even for a "
     "hand-off it has not started)"),
    ("unbrief", "unbrief", "unbrief", dict(brief=False), {},
     "drive_brief false (the node's metadata in its replies, unpacked by the scheduler thread)"),
    ("unnapped", "unnapped", "unnapped", {}, {"nap_s": 0},
     "drive_sender_nap_ms 0 (each hand-off wakes the sender thread waiting in its queue)"),
    ("unpipelined", "unpipelined", "unpipelined", dict(pipeline=False), {}, "drive_pipeline false"),
    ("unbatched", "unbatched", "unbatched", dict(batch=False), {}, "drive_batch false"),
    ("unsteady", "unsteady", "unsteady", dict(steady=False), {},
     "drive_steady false (each step's cached ids in full)"),
)

def print_added(title, per_n, levels, driven, what, with_on=False):
    """A table of ``per_n`` ({N: {label: {kind: [ns]}}}): off's p50 / p99 per step kind, and each driven
    label's paired difference to it (``with_on``: the number of steps, and each label's own p50 / p99 too)."""
    print()
    print(title)
    print()
    print("| N | step |" + (" steps |" if with_on else "") + " off p50 / p99 |" + "".join(
        (f" {label}: on p50 / p99 |" if with_on else "") + f" {label}: {what} p50 / p99 |" for label in driven))
    print("|---:|---|" + ("---:|" if with_on else "") + "---:|" + ("---:|---:|" if with_on else "---:|") * len(driven))
    for n in levels:
        for kind in KINDS:
            off = per_n[n]["off"][kind]
            if not off:
                continue
            row = f"| {n} | {KIND_TEXT[kind]} |" + (f" {len(off)} |" if with_on else "") + \
                f" {us(pct(off, 0.5))} / {us(pct(off, 0.99))} |"
            for label in driven:
                on = per_n[n][label][kind]
                if with_on:
                    row += f" {us(pct(on, 0.5))} / {us(pct(on, 0.99))} |"
                added = [x - y for x, y in zip(on, off)]
                row += f" {us(pct(added, 0.5))} / {us(pct(added, 0.99))} |"
            print(row)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--java", default=os.path.join(os.environ.get("JAVA_HOME", ""), "bin", "java")
                    if os.environ.get("JAVA_HOME") else shutil.which("java"))
    ap.add_argument("--jar", action="append", required=True, metavar="LABEL=PATH[:FLAGS]",
                    help="a kvledger.jar to start a drive node from, with extra JVM flags (space-separated) after a "
                         "colon, e.g. -Dkvledger.loop.spinNs=0 (repeatable)")
    for dest, _, _, _, _, what in VARIANTS:
        ap.add_argument("--" + dest.replace("_", "-"), action="append", default=[], metavar="LABEL",
                        help=f"also drive with {what}, a node of its own from that jar")
    ap.add_argument("--gpu-ms", type=float, default=0,
                    help="after each step's build_connector_meta the driver waits MS ms (time.sleep, the GIL "
                         "released), as vLLM's scheduler thread waits for the GPU before the step's last hooks")
    ap.add_argument("--transport", choices=["unix", "tcp"], default="unix",
                    help="the nodes' bridge and the echo: a Unix socket (default) or loopback ZMQ over TCP")
    ap.add_argument("--concurrency", default="16,64,256")
    ap.add_argument("--cycles", type=int, default=6, help="cycles per concurrency (each admits N requests)")
    ap.add_argument("--idle", type=int, default=6, help="idle steps after each cycle")
    ap.add_argument("--warmup", type=int, default=200,
                    help="cycles of 64 requests played first and not counted (the nodes' JIT compiles meanwhile)")
    ap.add_argument("--unfrozen", action="store_true",
                    help="leave the heap unfrozen after the warm-up (vLLM's engine core freezes its own at start-up)")
    ap.add_argument("--decode", type=int, default=0,
                    help="decode steps per request after its prompt (one token each, a new block every 16)")
    ap.add_argument("--stagger", action="store_true",
                    help="with --decode: each request starts its new blocks at a token of its own (about N/16 of "
                         "them get one in each decode step) instead of all at the same step")
    a = ap.parse_args(argv)
    jars = []
    for spec in a.jar:
        label, sep, path = spec.partition("=")
        if not sep:
            label, path = os.path.basename(spec), spec
        path, sep, flags = path.partition(":-")
        if not os.path.isfile(path):
            sys.exit(f"drive_step_cost: no jar at {path}")
        jars.append((label, os.path.abspath(path), shlex.split("-" + flags) if sep else []))
    levels = [int(x) for x in a.concurrency.split(",")]
    print(f"load average at the start: {load()}")
    tmp = tempfile.mkdtemp(prefix="drive-step-cost-")
    nodes, engines = [], []
    echo = Echo(a.transport, tmp)
    try:
        engines.append(Engine("off"))
        for label, jar, flags in jars:
            node = Node(a.java, jar, tmp, label, a.transport, flags)
            nodes.append(node)
            engines.append(Engine(label, node.endpoint))
            for dest, suffix, name, kwargs, attrs, _ in VARIANTS:
                if label in getattr(a, dest):
                    node = Node(a.java, jar, tmp, label + "-" + suffix, a.transport, flags)
                    nodes.append(node)
                    engines.append(Engine(label + " " + name, node.endpoint, **kwargs))
                    for attr, value in attrs.items():  # the bridge's, read by the sender before each look
                        setattr(engines[-1].sched._drive, attr, value)
        gc.callbacks.append(_gc_timer)
        first = 1
        # warm-up (the nodes' JIT): not counted
        play(engines, echo, 64, a.warmup, 2, first, False, gpu_ms=a.gpu_ms)
        first += a.warmup * 64
        if not a.unfrozen:
            # as vLLM's engine core freezes its heap at the end of its start-up (freeze_gc_heap): what
            # lives then is left out of every later collection
            gc.collect()
            gc.freeze()
            print(f"heap frozen after the warm-up: {gc.get_freeze_count():,} objects", flush=True)
        results = {}
        cpu_results = {}
        sender_results = {}
        gc_results = {}
        own_results = {}
        awaited = {}
        for n in levels:
            for e in engines:
                e.awaited = []
            echo.samples = []
            echo.first_samples = []
            sender_results[n] = {}
            gc_results[n] = {}
            own_results[n] = {}
            results[n], cpu_results[n] = play(engines, echo, n, a.cycles, a.idle, first, True, a.decode, a.stagger,
                                              a.gpu_ms, sender_results[n], gc_results[n], own_results[n])
            first += a.cycles * n
            awaited[n] = ({e.label: list(e.awaited) for e in engines if e.label != "off"}, list(echo.samples),
                          list(echo.first_samples))
        fallbacks = {e.label: e.fallbacks() for e in engines}
        divergences = {e.label: e.divergences() for e in engines}
        for e in engines:
            e.close()
    finally:
        echo.close()
        for node in nodes:
            node.close()
    driven = [e.label for e in engines if e.label != "off"]
    print(f"load average at the end: {load()}")
    print_added(f"scheduler steps, µs per step (sum of its scheduler hooks' wall time, a wait for the drive sender "
                f"thread included; GPU wait {a.gpu_ms:g} ms after build_connector_meta); {a.cycles} cycles per N "
                f"(admit N, 2 steady steps, {a.decode} decode steps, N finish, {a.idle} idle steps); added = the same "
                f"step on minus off, paired", results, levels, driven, "added", with_on=True)
    print_added("the same steps without the inner connector's time in them (its hooks timed inside the recorder's: "
                "what the recorder and drive mode cost the step, the inner's own variation left out), µs, added = on "
                "minus off, paired", own_results, levels, driven, "added")
    print_added("the scheduler thread's CPU time in the same steps (time.thread_time_ns: the client's own work, "
                "without waiting for the node or for a core), µs, added = on minus off, paired", cpu_results, levels,
                driven, "added CPU")
    threaded = [label for label in driven if any(sender_results[n].get(label) for n in levels)]
    if threaded:
        print()
        print("the drive sender thread's CPU time per step (drive_sender_thread: what the scheduler thread no longer "
              "does), µs, p50 / p99")
        print()
        print("| N | step | " + " | ".join(threaded) + " |")
        print("|---:|---|" + "---:|" * len(threaded))
        for n in levels:
            for kind in KINDS:
                if not cpu_results[n]["off"][kind]:
                    continue
                cells = [sender_results[n].get(label, {}).get(kind) or [0] for label in threaded]
                print(f"| {n} | {KIND_TEXT[kind]} | " + " | ".join(
                    f"{us(pct(v, 0.5))} / {us(pct(v, 0.99))}" for v in cells) + " |")
    print()
    print("Python's collector on the scheduler thread inside the step's hooks (counted in the CPU above): "
          "collections per step p50 / max, their CPU µs per step p50 / p99")
    print()
    print("| N | step | " + " | ".join(["off", *driven]) + " |")
    print("|---:|---|" + "---:|" * (1 + len(driven)))
    for n in levels:
        for kind in KINDS:
            if not cpu_results[n]["off"][kind]:
                continue
            cells = [gc_results[n].get(label, {}).get(kind) or [(0, 0)] for label in ["off", *driven]]
            print(f"| {n} | {KIND_TEXT[kind]} | " + " | ".join(
                f"{pct([c for c, _ in v], 0.5)} / {max(c for c, _ in v)}, {us(pct([t for _, t in v], 0.5))} / "
                f"{us(pct([t for _, t in v], 0.99))}" for v in cells) + " |")
    print()
    print("steps with nothing scheduled, by hook (all N): the hook's wall / CPU time, µs, p50 / p99; GC: "
          "Python's collector during the step (steps with one, p99 of its time in them)")
    print()
    print("| engine | hook | wall p50 / p99 | CPU p50 / p99 |")
    print("|---|---|---:|---:|")
    for e in engines:
        for name in SCHED_HOOKS:
            wall, used = e.idle_hooks.get((name, "wall")), e.idle_hooks.get((name, "cpu"))
            if wall:
                print(f"| {e.label} | {name} | {us(pct(wall, 0.5))} / {us(pct(wall, 0.99))} |"
                      f" {us(pct(used, 0.5))} / {us(pct(used, 0.99))} |")
        ran = [x for x in e.idle_gc if x]
        print(f"| {e.label} | GC in {len(ran)} of {len(e.idle_gc)} steps | p99 {us(pct(ran, 0.99))} | |")
        if e.label != "off":
            framed = e.idle_framed
            print(f"| {e.label} | a frame sent in {len(framed)} steps | p50 / p99 of those "
                  f"{us(pct(framed, 0.5))} / {us(pct(framed, 0.99))} | |")
    print()
    print(f"awaited node calls (NodeBridge.call), µs, against a bare echo over {a.transport} in the same run; "
          "\"first after a step\": the first of the echo's four round trips after each step (its peer idle "
          "meanwhile, as the node is between two awaited calls while the scheduler works: a wake-up each)")
    print()
    print("| N | caller | calls | p50 | p99 | p50 / echo p50 | p50 / first-after-a-step p50 |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n in levels:
        per, floor, cold = awaited[n]
        f50 = pct(floor, 0.5)
        c50 = pct(cold, 0.5)
        print(f"| {n} | bare echo | {len(floor):,} | {us(f50)} | {us(pct(floor, 0.99))} | 1.00 | {f50 / c50:.2f} |")
        print(f"| {n} | bare echo, first after a step | {len(cold):,} | {us(c50)} | {us(pct(cold, 0.99))} "
              f"| {c50 / f50:.2f} | 1.00 |")
        for label in driven:
            v = per[label]
            print(f"| {n} | {label} | {len(v):,} | {us(pct(v, 0.5))} | {us(pct(v, 0.99))} | {pct(v, 0.5) / f50:.2f} "
                  f"| {pct(v, 0.5) / c50:.2f} |")
    print()
    print("fallbacks (calls the node refused or did not answer): "
          + ", ".join(f"{label} {fallbacks[label]}" for label in driven))
    print("divergences (answers vLLM did not wait for that the node gave otherwise): "
          + ", ".join(f"{label} {divergences[label]}" for label in driven))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

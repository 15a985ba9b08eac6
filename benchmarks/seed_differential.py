#!/usr/bin/python3
"""kvledger against the seed scheduler's own Python code, call by call (the differential harness).

The seed's ``MoRIIOConnectorScheduler`` is not part of this repository: it is read at run time
from the seed document (default ``<repo>/../shared/seeds/000_8224966d3c25bc2c.txt``, or
``--seed-file``) and executed under the stubs of ``seed_hook_mix.py`` (the upstream helpers:
request-id address parsing, ``add_new_req``/``ReqMeta``, ports), with a fake clock and a ZMQ stub
that keeps the notify frames instead of sending them.

Each scenario is one engine rank's scheduler (producer or consumer, READ or WRITE, a DP/TP
shape), driven by a generated hook sequence: admissions, prefix hits, chunked prefill, preemption
and re-admission, aborts before and after allocation, renames at finish (vLLM's ``-<8 hex>``
suffix), transfer-id collisions, missing and synthesized transfer ids, early, late, duplicate and
lost ACKs, clock jumps past ``defer_timeout`` (reaps and stale parks). The seed scheduler runs
inside the vLLM bridge's own recorder (``kvledger_vllm.KvledgerRecorderConnector`` over the
stand-in vLLM of modules/vllm-bridge/tests/standin), so every scenario is a real recording: the
JSON-lines stream ``kvledger journal import`` reads and ``kvledger replay --verify`` compares hook
by hook with the connector's answers (``BridgeReplies``). A hook that raises in the seed (an engine
core that would die) ends its scenario there; the recording holds everything before it.

Then it imports all recordings in one ``journal import`` (a tree, one node per scenario), replays
them with ``kvledger replay --verify --json --profile seed`` in batches, and prints the agreement:
hook calls compared, agreeing and diverging, per hook, and the divergences grouped by kind.

Usage: seed_differential.py [--seed-file PATH] [--scenarios N] [--seed S] [--out DIR]
                            [--kvledger PATH] [--only-record] [--json]
"""

import argparse
import collections
import json
import os
import random
import shutil
import sys
import tempfile
import time as real_time
import types
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BRIDGE = os.path.join(REPO, "modules", "vllm-bridge")
for p in (os.path.join(BRIDGE, "src"), os.path.join(BRIDGE, "tests", "standin"), HERE):
    if p not in sys.path:
        sys.path.insert(0, p)

import differential  # noqa: E402  (what this harness shares with upstream_differential.py)
import seed_hook_mix as shm  # noqa: E402  (the stubs of the seed's imports)
from differential import Died, frames_dir, zmq_addr  # noqa: E402
from kvledger_vllm import stream as kv_stream  # noqa: E402
from kvledger_vllm import KvledgerRecorderConnector  # noqa: E402
from vllm.config import CacheConfig, KVTransferConfig, ParallelConfig, VllmConfig  # noqa: E402
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorBase_V1, KVConnectorRole  # noqa: E402
from vllm.v1.core.kv_cache_manager import KVCacheBlocks  # noqa: E402
from vllm.v1.core.sched.output import CachedRequestData, SchedulerOutput  # noqa: E402
from vllm.v1.outputs import KVConnectorOutput  # noqa: E402
from vllm.v1.request import Request, RequestStatus  # noqa: E402

BLOCK = 16
# One tick of the fake clock: 1/512 s is exact both as a float of seconds (what the seed's
# time.monotonic() deadlines add up) and as integer nanoseconds (the recording's at_ns), so a
# deadline compares the same on both sides.
TICK_NS = 1_953_125
TICK_S = 1 / 512
LATE = 1 << 30  # the step key of ACKs reported only after the tail's deadlines passed


SIDE = differential.Side("seed_differential.py", who="the seed", tag="seed", raiser="the seed",
                         other_fields=("transfer_id", "consumer_tp_size"))
fail, frame_of, kvledger_frame = SIDE.fail, SIDE.frame_of, SIDE.kvledger_frame
compare_frames = SIDE.compare_frames


# ---------------------------------------------------------------------------- the clock and ZMQ

class Clock:
    """The scenario's time: the seed's ``time`` module and the recorder's stamps read it."""

    def __init__(self, start_ticks):
        self.ticks = start_ticks

    def advance(self, ticks):
        self.ticks += ticks

    # the seed's ``time`` (monotonic deadlines, perf_counter for reqs_to_send)
    def monotonic(self):
        return self.ticks * TICK_S

    def perf_counter(self):
        return self.ticks * TICK_S

    def time(self):
        return self.ticks * TICK_S


class _StreamTime:
    """``kvledger_vllm.stream``'s ``time``: stamps from the scenario's clock, the rest real."""

    clock = None

    def monotonic_ns(self):
        return self.clock.ticks * TICK_NS

    def time_ns(self):
        # the same clock, so that the stream's epoch anchor is 0 and the times are the ticks
        return self.monotonic_ns()

    def __getattr__(self, name):
        return getattr(real_time, name)


class FakeSocket:
    def __init__(self, path, sent):
        self.path = path
        self.sent = sent

    def send(self, data):
        self.sent.append((self.path, data))

    def close(self, linger=0):
        pass


def fake_zmq():
    ctx = types.SimpleNamespace()
    return types.SimpleNamespace(DEALER="DEALER", Context=types.SimpleNamespace(instance=lambda: ctx), Socket=object)


# ---------------------------------------------------------------------------- the seed as a connector

def load_seed(seed_file):
    """The seed's scheduler class in a fresh namespace, with its clock and frame list (per scenario:
    the seed keeps its role in a module global, one per engine process)."""
    src = shm.load_scheduler_source(seed_file)
    ns = shm.namespace()
    clock = Clock(0)
    sent = []
    role = [shm.ROLE.NOTINIT]
    ns.update(time=clock, zmq=fake_zmq(), RequestStatus=RequestStatus,
              make_zmq_socket=lambda ctx=None, path=None, socket_type=None, bind=False, **kw: FakeSocket(path, sent),
              set_role=lambda r: role.__setitem__(0, r), get_role=lambda: role[0])
    import __future__
    exec(compile(src, seed_file, "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True), ns)
    return ns["MoRIIOConnectorScheduler"], clock, sent


class SeedConnector(KVConnectorBase_V1):
    """The connector shell around the seed's scheduler (scheduler role only): the port defaults and
    engine id the seed's ``MoRIIOConnector`` computes, and its scheduler hooks delegated."""

    scheduler_class = None  # set per scenario

    def __init__(self, vllm_config, role, kv_cache_config=None):
        super().__init__(vllm_config, role, kv_cache_config)
        extra = vllm_config.kv_transfer_config.kv_connector_extra_config
        for key, default in (("handshake_port", shm.MoRIIOConstants.DEFAULT_HANDSHAKE_PORT),
                             ("notify_port", shm.MoRIIOConstants.DEFAULT_NOTIFY_PORT)):
            if key not in extra or not extra[key]:
                extra[key] = default
        engine_id = f"{shm.resolve_host_ip(extra)}:{extra['handshake_port']}"
        assert role == KVConnectorRole.SCHEDULER
        self.scheduler = type(self).scheduler_class(vllm_config, engine_id)

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        return self.scheduler.get_num_new_matched_tokens(request, num_computed_tokens)

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        return self.scheduler.update_state_after_alloc(request, blocks, num_external_tokens, None)

    def build_connector_meta(self, scheduler_output):
        return self.scheduler.build_connector_meta(scheduler_output)

    def request_finished(self, request, block_ids):
        return self.scheduler.request_finished(request, block_ids)

    def update_connector_output(self, connector_output):
        self.scheduler.update_connector_output(connector_output)

    def shutdown(self):
        self.scheduler.shutdown()

    # the worker side is not played (a scheduler-role connector only)
    def start_load_kv(self, forward_context, **kwargs):
        raise NotImplementedError

    def wait_for_layer_load(self, layer_name):
        raise NotImplementedError

    def save_kv_layer(self, layer_name, kv_layer, attn_metadata, **kwargs):
        raise NotImplementedError

    def wait_for_save(self):
        raise NotImplementedError


# ---------------------------------------------------------------------------- scenarios

P_HOSTS = ("10.0.0.1", "10.0.0.2")
D_HOSTS = ("10.0.1.1", "10.0.1.2")


class Shape:
    """One engine rank: role, mode, parallel shape and timeouts, drawn from ``rnd``."""

    def __init__(self, rnd, index):
        self.producer = rnd.random() < 0.5
        # kv_both: MoRIIO's scheduler runs it as a consumer (kv_role == "kv_producer" is false)
        self.both = not self.producer and rnd.random() < 0.15
        self.read = rnd.random() < 0.5
        self.dp_size = rnd.choice((1, 1, 2, 4))
        self.dp_rank = rnd.randrange(self.dp_size)
        self.dp_local = rnd.choice((self.dp_size, self.dp_size, 1 if self.dp_size > 1 else self.dp_size, 0))
        self.tp_size = rnd.choice((1, 1, 2))
        self.defer_timeout = rnd.choice((1, 2, 5, 60, 0.5, 1.5))
        self.host = (P_HOSTS if self.producer else D_HOSTS)[0] if rnd.random() < 0.9 else None
        # the ports as configured: strings (the usual JSON), ints, other ports, or falsy (defaulted)
        self.ports = rnd.choice((("6301", "61005"),) * 4 + ((6301, 61005), ("7301", "62005"), (0, ""), None))
        self.name = (f"s{index:04d}-{'P' if self.producer else 'B' if self.both else 'D'}-{'read' if self.read else 'write'}"
                     f"-dp{self.dp_rank}of{self.dp_size}")

    def config(self, record_to):
        extra = {"inner_connector": "SeedConnector", "inner_connector_module_path": __name__,
                 "record_to": record_to, "read_mode": "true" if self.read else "false",
                 "defer_timeout": self.defer_timeout}
        if self.host is not None:
            extra["host_ip"] = self.host
        if self.ports is not None:
            extra.update(handshake_port=self.ports[0], notify_port=self.ports[1])
        return VllmConfig(
            kv_transfer_config=KVTransferConfig(kv_connector="KvledgerRecorderConnector",
                                                kv_role="kv_producer" if self.producer else "kv_both" if self.both else "kv_consumer",
                                                kv_connector_module_path="kvledger_vllm",
                                                kv_connector_extra_config=extra),
            parallel_config=ParallelConfig(data_parallel_rank=self.dp_rank, data_parallel_size=self.dp_size,
                                           data_parallel_size_local=self.dp_local, tensor_parallel_size=self.tp_size),
            cache_config=CacheConfig(block_size=BLOCK))


class Req:
    """One generated request and its plan."""

    def __init__(self, rnd, shape, i, tids):
        self.i = i
        self.prompt = rnd.choice((1, 5, 15, 16, 17, 31, 32, 33, 40, 47, 64, 80, 100, 130, 200))
        self.arrive = rnd.randrange(0, 6)
        self.chunk = rnd.choice((BLOCK, 2 * BLOCK, 3 * BLOCK, 10_000, 10_000))
        self.prefix_hit = rnd.choice((0, 0, 0, BLOCK, 2 * BLOCK))
        addressed = rnd.random() < 0.85
        uid = f"{rnd.getrandbits(128):032x}"
        if addressed:
            p = zmq_addr(P_HOSTS[rnd.randrange(2)])
            d = zmq_addr(D_HOSTS[rnd.randrange(2)])
            self.rid = f"cmpl-___prefill_addr_{p}___decode_addr_{d}_{uid}-0"
        else:
            self.rid = f"cmpl-{uid}-0"
        # transfer id: fresh, reused (a collision), absent (synthesized), or empty
        r = rnd.random()
        if r < 0.12 and tids:
            tid = rnd.choice(tids)
        elif r < 0.17:
            tid = None  # key absent
        elif r < 0.20:
            tid = ""
        elif r < 0.22:
            tid = "None"  # key present, value None
        else:
            tid = f"tx-{uuid.UUID(int=rnd.getrandbits(128), version=4)}"
        if tid and tid != "None":
            tids.append(tid)
        self.params = self._params(rnd, shape, tid, addressed)
        self.rename = rnd.random() < 0.15
        self.preempt = rnd.random() < 0.15
        # how it ends: normal, aborted while waiting (before allocation), aborted while running
        self.end = rnd.choices(("normal", "abort-waiting", "abort-running", "never"), (0.72, 0.1, 0.13, 0.05))[0]
        self.status_normal = (rnd.choice((RequestStatus.FINISHED_LENGTH_CAPPED,) * 5 + (RequestStatus.FINISHED_STOPPED,))
                              if shape.producer else
                              rnd.choice((RequestStatus.FINISHED_STOPPED, RequestStatus.FINISHED_LENGTH_CAPPED)))
        self.decode_steps = rnd.randrange(0, 3)
        # producer ACK: steps after its finish (negative: early, before it), None: never, duplicate
        self.ack = rnd.choices((1, 2, 3, -1, -2, None, "late"), (0.4, 0.15, 0.1, 0.1, 0.05, 0.1, 0.1))[0]
        self.ack_renamed = rnd.random() < 0.3
        self.dup_ack = rnd.random() < 0.08
        # consumer WRITE: steps until finished_recving, and whether it re-asks afterwards
        self.recv_after = rnd.randrange(1, 4)
        self.reask = rnd.random() < 0.5
        self.empty_finish_blocks = rnd.random() < 0.05
        self.embeds = rnd.random() < 0.04  # prompt embeds: no prompt_token_ids, num_prompt_tokens set
        self.no_params = None

    def _params(self, rnd, shape, tid, addressed):
        r = rnd.random()
        if r < 0.04:
            self.no_params = "none"
            return None
        if r < 0.07:
            return {}
        if shape.producer or (shape.both and rnd.random() < 0.4):
            p = {"do_remote_decode": rnd.random() < 0.95, "do_remote_prefill": False,
                 "remote_engine_id": None, "remote_block_ids": None}
            if rnd.random() < 0.7:
                p["remote_dp_size"] = shape.dp_size
            if rnd.random() < 0.5:
                p["remote_tp_size"] = rnd.choice((1, 2))
            if rnd.random() < 0.05:
                p[rnd.choice(("remote_dp_size", "remote_tp_size"))] = rnd.choice(("2", 1.0, None, True, "x"))
            if not addressed or rnd.random() < 0.2:
                p.update(remote_host=D_HOSTS[0], remote_handshake_port=6301, remote_notify_port=61005)
        else:
            p_dp_size = rnd.choice((1, 1, 2, 4))
            nblocks = -(-self.prompt // BLOCK)
            start = rnd.randrange(1, 5000)
            remote = list(range(start, start + nblocks))
            if rnd.random() < 0.05:
                remote = []
            elif rnd.random() < 0.03:
                remote = [remote]  # a newest prefill's grouped ids (seed-vs-newest #24, wire-incompatible)
            p = {"do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": remote,
                 "remote_engine_id": "10.0.0.1:6301", "remote_host": P_HOSTS[0],
                 "remote_handshake_port": rnd.choice((6301, "6301")), "remote_notify_port": rnd.choice((61005, "61005")),
                 "remote_dp_rank": rnd.randrange(p_dp_size), "remote_dp_rank_override": rnd.random() < 0.7,
                 "remote_dp_size": p_dp_size, "remote_dp_size_local": rnd.choice((p_dp_size, 1, 0)),
                 "tp_size": rnd.choice((1, 2))}
            if rnd.random() < 0.05:
                del p["remote_engine_id"]
            if rnd.random() < 0.1:
                del p["remote_dp_rank"]
            if rnd.random() < 0.1:
                p["is_request_leader"] = rnd.random() < 0.5
            if rnd.random() < 0.1:
                p["remote_hosts"] = list(P_HOSTS)
            if not addressed and rnd.random() < 0.1:
                del p["remote_host"]  # no address at all: the seed raises where it needs one
            if rnd.random() < 0.08:
                # a proxy's odd JSON: a number as a string, a float, a bool, junk or None
                key = rnd.choice(("remote_dp_rank", "remote_dp_size", "remote_dp_size_local", "tp_size",
                                  "remote_notify_port", "remote_handshake_port", "is_request_leader",
                                  "remote_dp_rank_override"))
                p[key] = rnd.choice(("1", "2", 1.0, True, False, "x", None, 0))
        if shape.producer and rnd.random() < 0.03:
            # kv_both-like params on a producer: also a remote prefill to read
            p.update(do_remote_prefill=True, remote_block_ids=[7, 8, 9], remote_engine_id="10.0.1.1:6301")
        if not shape.producer and rnd.random() < 0.03:
            p["do_remote_decode"] = True  # a consumer asked to save as well
        if tid == "None":
            p["transfer_id"] = None
        elif tid is not None:
            p["transfer_id"] = tid
        return p


class Engine:
    """Plays vLLM's scheduler loop for one scenario over the recorder connector ``c``."""

    def __init__(self, rnd, shape, c, clock, sent):
        self.rnd, self.shape, self.c, self.clock, self.sent = rnd, shape, c, clock, sent
        self.next_block = 1
        self.calls = collections.Counter()
        self.died = None

    def call(self, hook, *args):
        self.calls[hook] += 1
        mark = len(self.sent)
        try:
            return getattr(self.c, hook)(*args)
        except Exception as e:  # noqa: BLE001 - the engine core would die here
            # the recorder wrote nothing for this call: its frames are not compared either
            del self.sent[mark:]
            raise Died(f"{hook}: {type(e).__name__}: {e}") from None

    def alloc(self, tokens):
        n = -(-tokens // BLOCK) if tokens > 0 else 0
        ids = list(range(self.next_block, self.next_block + n))
        self.next_block += n
        return ids

    def run(self, reqs):
        sh, rnd = self.shape, self.rnd
        waiting, running, finished = [], {}, []
        st = {}  # rid -> dict(req, r, blocks, computed, admitted, step_alloc, done_step, recv_at, ...)
        acks = collections.defaultdict(set)  # step -> request ids in finished_sending
        recvs = collections.defaultdict(set)
        steps = max(r.arrive for r in reqs) + 14
        for step in range(steps):
            # time passes: mostly a few ticks, sometimes past the defer timeout
            if rnd.random() < 0.1:
                self.clock.advance(int((sh.defer_timeout + rnd.choice((0, 0.5, 1))) * 512))
            else:
                self.clock.advance(rnd.randrange(1, 40))
            for r in reqs:
                if r.arrive == step:
                    req = Request(r.rid, list(range(r.prompt)), r.params, max_tokens=1 if sh.producer else 8)
                    if r.embeds:
                        req.prompt_token_ids = None
                    self.call("on_new_request", req)
                    s = st[r.rid] = {"r": r, "req": req, "blocks": [], "computed": 0, "state": "waiting"}
                    waiting.append(r.rid)
            # aborts of waiting requests (before allocation)
            for rid in list(waiting):
                s = st[rid]
                if s["r"].end == "abort-waiting" and rnd.random() < 0.5:
                    waiting.remove(rid)
                    self.finish(s, RequestStatus.FINISHED_ABORTED, step, acks)
            # scheduling of waiting requests
            new_ids = set()
            for rid in list(waiting):
                s = st[rid]
                r, req = s["r"], s["req"]
                if s["state"] == "remote-kv":
                    continue
                hit = min(r.prefix_hit, (r.prompt // BLOCK) * BLOCK)
                count, load_async = self.call("get_num_new_matched_tokens", req, hit)
                if count is None:
                    continue
                ext = max(int(count), 0)
                if sh.producer or ext == 0:
                    first = min(r.chunk, max(r.prompt - hit, 0))
                    ids = self.alloc(hit + first)
                    computed = hit + first
                else:
                    ids = self.alloc(hit + ext)
                    computed = hit + ext
                s["blocks"] = list(ids)
                blocks = KVCacheBlocks([ids])
                if rnd.random() < 0.05 and not sh.producer and ext > 0:
                    # only the blocks beyond the prefix hit (unhashed)
                    blocks = KVCacheBlocks([ids[hit // BLOCK:]])
                self.call("update_state_after_alloc", req, blocks, ext)
                waiting.remove(rid)
                new_ids.add(rid)
                s["computed"] = min(computed, r.prompt)
                if load_async and ext > 0:
                    s["state"] = "remote-kv"
                    s["recv_at"] = step + r.recv_after
                    req.status = RequestStatus.WAITING_FOR_REMOTE_KVS
                else:
                    s["state"] = "running"
                    req.status = RequestStatus.RUNNING
                running[rid] = s
                if sh.producer and isinstance(r.ack, int) and r.ack < 0 and not s.get("early_acked"):
                    # an early ACK: the worker reports the send before request_finished ran
                    s["early_acked"] = True
                    acks[step - r.ack].add(r.rid)
            # WRITE consumers whose KV arrived: reported now, maybe asked again
            for rid, s in list(running.items()):
                if s["state"] == "remote-kv" and step >= s["recv_at"]:
                    recvs[step].add(rid)
                    s["state"] = "running"
                    s["req"].status = RequestStatus.RUNNING
                    s["computed"] = s["r"].prompt
            # chunked prefill: cached requests with new blocks
            cached = CachedRequestData()
            for rid, s in running.items():
                if rid in new_ids or s["state"] != "running":
                    continue
                r = s["r"]
                if s["computed"] < r.prompt:
                    n = min(r.chunk, r.prompt - s["computed"])
                    ids = self.alloc_more(s, n)
                    s["computed"] += n
                    cached.req_ids.append(rid)
                    cached.new_block_ids.append((ids,) if ids or rnd.random() < 0.5 else None)
                elif rnd.random() < 0.3:
                    cached.req_ids.append(rid)
                    cached.new_block_ids.append(None if rnd.random() < 0.5 else ([],))
            if rnd.random() < 0.15:  # a request the connector never saw (no kv_transfer_params)
                cached.req_ids.append(f"cmpl-plain-{step}")
                cached.new_block_ids.append(([self.alloc(BLOCK)[0]],))
            self.call("build_connector_meta", SchedulerOutput(scheduled_cached_reqs=cached))
            # the worker's report of this step and the finishes, in either order (vLLM's
            # update_from_output frees finished requests and applies the connector output)
            if rnd.random() < 0.7:
                self.report(step, acks, recvs, st, running)
                self.preempt_and_finish(step, acks, running, waiting)
            else:
                self.preempt_and_finish(step, acks, running, waiting)
                self.report(step, acks, recvs, st, running)
        # the tail: let deadlines pass (reaps, stale parks), then the late ACKs of reaped frees
        for t in range(3):
            self.clock.advance(int((self.shape.defer_timeout + 1) * 512))
            late = set()
            for k in sorted(acks):
                if (k < LATE) == (t == 0):
                    late |= acks.pop(k)
            self.call("build_connector_meta", SchedulerOutput())
            self.call("update_connector_output", KVConnectorOutput(finished_sending=late or None))

    def report(self, step, acks, recvs, st, running):
        sh, rnd = self.shape, self.rnd
        sending = set(acks.pop(step, set()))
        if sh.producer and rnd.random() < 0.03:
            sending.add(f"cmpl-unknown-{step}-0")  # an ACK for a request this engine never had
        recving = set(recvs.pop(step, set()))
        self.call("update_connector_output", KVConnectorOutput(finished_sending=sending or None,
                                                               finished_recving=recving or None))
        # WRITE consumers asked again after their KV arrived (#57705): the answer is compared
        for rid in sorted(recving):
            s = st[rid]
            if s["r"].reask and rid in running:
                self.call("get_num_new_matched_tokens", s["req"], max(s["r"].prompt - 1, 0))

    def preempt_and_finish(self, step, acks, running, waiting):
        sh, rnd = self.shape, self.rnd
        # preemption: back to waiting, blocks gone, asked again later
        for rid, s in list(running.items()):
            if s["r"].preempt and s["state"] == "running" and not s.get("preempted") and rnd.random() < 0.4:
                s["preempted"] = True
                s["state"] = "waiting"
                s["computed"] = 0
                s["blocks"] = []
                s["req"].status = RequestStatus.PREEMPTED
                del running[rid]
                waiting.append(rid)
        # finishes (an abort also reaches a request still waiting for its remote KV)
        for rid, s in list(running.items()):
            r = s["r"]
            if r.end == "abort-running" and s["state"] == "remote-kv" and rnd.random() < 0.3:
                del running[rid]
                self.finish(s, RequestStatus.FINISHED_ABORTED, step, acks)
                continue
            if s["state"] != "running" or r.end == "never":
                continue
            if r.end == "abort-running" and rnd.random() < 0.35:
                del running[rid]
                self.finish(s, RequestStatus.FINISHED_ABORTED, step, acks)
                continue
            if s["computed"] >= r.prompt:
                s["decoded"] = s.get("decoded", 0) + 1
                if sh.producer or s["decoded"] > r.decode_steps:
                    del running[rid]
                    self.finish(s, r.status_normal, step, acks)

    def alloc_more(self, s, n_tokens):
        have = len(s["blocks"])
        need = -(-(s["computed"] + n_tokens) // BLOCK)
        ids = list(range(self.next_block, self.next_block + max(need - have, 0)))
        self.next_block += len(ids)
        s["blocks"].extend(ids)
        return ids

    def finish(self, s, status, step, acks):
        r, req = s["r"], s["req"]
        req.status = status
        admitted = req.request_id
        if r.rename:
            req.request_id = f"{admitted}-{self.rnd.getrandbits(32):08x}"
        blocks = [] if r.empty_finish_blocks else list(s["blocks"])
        delay, _params = self.call("request_finished", req, blocks)
        if self.shape.producer and r.ack is not None:
            # the worker names the request as its transfer map holds it: the admitted id, unless
            # the ACK is drawn with the id request_finished saw
            ack_id = req.request_id if (r.ack_renamed or not r.rename) else admitted
            if r.ack == "late":
                acks[LATE].add(ack_id)
            elif r.ack > 0:
                acks[step + r.ack].add(ack_id)
            if r.dup_ack:
                acks[step + 4].add(ack_id)


# ---------------------------------------------------------------------------- recording

def record(seed_file, index, base_seed, tree):
    """Runs scenario ``index`` and writes its recording as ``tree/<name>/journal.jsonl``.
    Returns (name, the hook calls made (a Counter by hook), how the engine died or None, notify
    frames sent)."""
    rnd = random.Random(base_seed * 1_000_003 + index)
    shape = Shape(rnd, index)
    cls, clock, sent = load_seed(seed_file)
    clock.ticks = rnd.randrange(512, 512 * 1000)
    _StreamTime.clock = clock
    saved_time, kv_stream.time = kv_stream.time, _StreamTime()
    try:
        return _record(rnd, shape, cls, clock, sent, tree)
    finally:
        kv_stream.time = saved_time


def _record(rnd, shape, cls, clock, sent, tree):
    SeedConnector.scheduler_class = cls
    tmp = os.path.join(tree, ".rec-" + shape.name)
    os.makedirs(tmp, exist_ok=True)
    c = KvledgerRecorderConnector(shape.config(os.path.join(tmp, "{role}-dp{dp}-tp{tp}.jsonl")), KVConnectorRole.SCHEDULER,
                                  None)
    tids = []
    reqs = [Req(rnd, shape, i, tids) for i in range(rnd.randrange(1, 13))]
    # an early ACK needs its request's id before it finishes: early ACK steps are placed at finish
    e = Engine(rnd, shape, c, clock, sent)
    died = None
    try:
        e.run(reqs)
    except Died as d:
        died = str(d)
    try:
        c.shutdown()
    except Exception as ex:  # noqa: BLE001
        died = died or f"shutdown: {ex}"
    path = os.path.join(tmp, f"scheduler-dp{shape.dp_rank}-tp0.jsonl")
    node_dir = os.path.join(tree, shape.name)
    os.makedirs(node_dir, exist_ok=True)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    header = json.loads(lines[0])
    header["node_id"] = shape.name  # one node per scenario (journal import --node, for a tree)
    header["profile"] = "seed"  # the seed's behaviour (journal import --profile seed)
    with open(os.path.join(node_dir, "journal.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps(header, separators=(",", ":")) + "\n")
        for line in lines[1:]:
            f.write(line + "\n")
    shutil.rmtree(tmp)
    with open(os.path.join(frames_dir(tree), shape.name + ".json"), "w", encoding="utf-8") as f:
        json.dump([frame_of(path, data) for path, data in sent], f)
    return shape.name, e.calls, died, len(sent)


# ---------------------------------------------------------------------------- comparing

def summarize(nodes, recorded, frames, args):
    t = SIDE.tally(nodes, recorded)
    total, agree = t.total, t.total - t.diverging
    result = dict({"scenarios": len(nodes), "seed": args.seed, "hook_calls": total, "agreeing": agree,
                   "diverging": total - agree, "agreement": (agree / total) if total else None},
                  **SIDE.result_tail(t, frames))
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    print(f"seed differential: {len(nodes)} scenarios (seed {args.seed}), {total} hook calls compared: "
          f"{agree} agree, {total - agree} diverge ({100.0 * agree / total if total else 0:.2f} % agreement); "
          f"{t.diverging_scenarios} scenario(s) with a divergence")
    SIDE.print_details(t, frames, "notify frames the scheduler sends (remote_blocks, release; compared in order, "
                                  "per scenario)")
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed-file", default=os.path.join(REPO, "..", "shared", "seeds", "000_8224966d3c25bc2c.txt"),
                    help="the seed document (default: <repo>/../shared/seeds/000_8224966d3c25bc2c.txt)")
    ap.add_argument("--scenarios", type=int, default=300, help="how many scenarios (default 300)")
    ap.add_argument("--seed", type=int, default=1, help="the generator's seed (default 1); a scenario is rerun from it")
    ap.add_argument("--out", help="keep the recordings (DIR/recordings/<scenario>/journal.jsonl) and journals "
                                  "(DIR/journals) there (default: a temporary directory, removed)")
    ap.add_argument("--kvledger", default=os.path.join(REPO, "kvledger"), help="the kvledger launcher")
    ap.add_argument("--batch", type=int, default=100, help="scenarios per replay --verify run (default 100)")
    ap.add_argument("--only-record", action="store_true", help="write the recordings, compare nothing")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    a = ap.parse_args(argv)
    if a.scenarios < 1 or a.batch < 1:
        ap.error("--scenarios and --batch must be at least 1")
    seed_file = os.path.normpath(os.path.abspath(a.seed_file))
    if not os.path.isfile(seed_file):
        fail(f"the seed document is not at {seed_file} (pass --seed-file PATH to the seed's 000_8224966d3c25bc2c.txt)")
    if not a.only_record and not os.access(a.kvledger, os.X_OK):
        fail(f"no kvledger launcher at {a.kvledger} (pass --kvledger PATH)")
    out = os.path.abspath(a.out) if a.out else tempfile.mkdtemp(prefix="seed-differential-")
    tree = os.path.join(out, "recordings")
    journals = os.path.join(out, "journals")
    for d in (tree, journals):
        if os.path.exists(d):
            shutil.rmtree(d)
    os.makedirs(tree)
    recorded = [record(seed_file, i, a.seed, tree) for i in range(a.scenarios)]
    if not a.json:
        print(f"recorded {len(recorded)} scenarios, {sum(sum(r[1].values()) for r in recorded)} hook calls made "
              f"({sum(r[3] for r in recorded)} notify frames the seed sent) in {tree}", flush=True)
    try:
        if a.only_record:
            return 0
        names = [r[0] for r in recorded]
        nodes, kv_frames = SIDE.compare(a.kvledger, tree, journals, names, a.batch, profile="seed")
        summarize(nodes, recorded, compare_frames(tree, names, kv_frames), a)
        return 0
    finally:
        if not a.out:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

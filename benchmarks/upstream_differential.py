#!/usr/bin/python3
"""kvledger against an upstream vLLM version's own MoRIIO connector, call by call.

The connector is not part of this repository: ``upstream_vllm.load`` imports the version's real
files at run time from ``<repo>/../shared/upstream/vllm-<commit>`` (or ``--upstream DIR``) under
the project's stubs. Each scenario is one engine rank's scheduler: vLLM's own factory
(``KVConnectorFactory.create_connector``) builds the vLLM bridge's recorder
(``kvledger_vllm.KvledgerRecorderConnector``) over the version's ``MoRIIOConnector`` (scheduler
role), and a small engine plays vLLM's scheduler loop over it with vLLM's own ``Request``,
``SchedulerOutput``/``NewRequestData``/``CachedRequestData`` and ``KVConnectorOutput`` in the
order ``scheduler.py`` calls the hooks (``on_new_request`` at admission; per step
``get_num_new_matched_tokens`` for a waiting request with no computed tokens, then
``update_state_after_alloc`` with all its blocks, again without the match once its remote KV
arrived; ``build_connector_meta``; then, in ``update_from_output``, ``request_finished`` of the
requests that stopped before ``update_connector_output``) or, with async scheduling
(``async_scheduler.py``), with ``build_connector_meta`` of step N+1 before the output of step N.
The mode comes from the environment (``VLLM_MORIIO_CONNECTOR_READ_MODE``), as 239b5ff30 reads it,
and from the extra config's ``read_mode`` for newer versions.

A version whose connector is ``SupportsHMA`` (3c201bf2) gets the engine's ``kv_cache_config``
(one full-attention group, or sliding-window and mamba groups beside it under the hybrid KV-cache
manager in READ mode), one block list per group in every hook, ``request_finished_all_groups`` at
finish (as scheduler.py calls it for such a connector), lookahead slots, grouped
``remote_block_ids``, multi-pod routing params, and its routing test's cases
(tests/v1/kv_connector/unit/test_moriio_routing.py) as scenarios.

Scenarios: the cases of upstream's own unit tests (tests/v1/kv_connector/unit/
test_moriio_connector.py, ported as scenarios: a WRITE producer's save, the same under chunked
prefill, a READ consumer's load), then generated ones (producer, consumer and kv_both; READ and
WRITE; DP and TP above 1; chunked prefill, prefix hits, preemption and resumption, aborts before
and after allocation, ACKs early, late and never). A hook that raises in the connector (an engine
core that would die) ends its scenario there; the recording holds everything before it.

Then one ``kvledger journal import`` of every recording and ``kvledger replay --verify --effects
--json`` in batches, with no ``--profile``: the profile is the one the recording's header names
(vLLM version and commit, inner connector). It prints the hook calls compared, agreeing and
diverging per hook, the divergences by kind, and the notify frames the connector sent against
kvledger's, in order.

Usage: upstream_differential.py [--upstream DIR] [--scenarios N] [--seed S] [--out DIR]
                                [--kvledger PATH] [--only-record] [--json]
"""

import argparse
import collections
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import uuid

import differential  # what this harness shares with seed_differential.py
from differential import Died, frames_dir, zmq_addr

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BRIDGE_SRC = os.path.join(REPO, "modules", "vllm-bridge", "src")
DEFAULT_UPSTREAM = os.path.join(REPO, "..", "shared", "upstream", "vllm-239b5ff30")
BLOCK = 16
SWA_WINDOW = 32  # tokens of a sliding-window group: ceil(32 / 16) + 1 = 3 blocks kept
P_HOSTS = ("10.0.0.1", "10.0.0.2")
D_HOSTS = ("10.0.1.1", "10.0.1.2")
POD_HOSTS = ("10.0.2.1", "10.0.2.2")


SIDE = differential.Side("upstream_differential.py", who="upstream", tag="upstream", raiser="the connector",
                         other_fields=differential.REMOTE_BLOCKS_FIELDS)
fail, frame_of = SIDE.fail, SIDE.frame_of


def addressed_id(rnd, p_host, d_host, p_notify=61005, d_notify=61005):
    uid = f"{rnd.getrandbits(128):032x}"
    return f"___prefill_addr_{zmq_addr(p_host, notify=p_notify)}___decode_addr_{zmq_addr(d_host, notify=d_notify)}_{uid}"


# ---------------------------------------------------------------------------- the engine

class Plan:
    """One request's plan: what the engine does with it. ``finish_empty``: the scheduler hands
    request_finished no block ids (as upstream's routing test calls it)."""

    def __init__(self, rid, prompt, params, arrive=0, max_tokens=8, chunk=10_000, prefix_hit=0, end="normal",
                 status=None, ack=1, recv_after=1, preempt_at=None, abort_at=None, finish_empty=False):
        self.rid, self.prompt, self.params, self.arrive = rid, prompt, params, arrive
        self.max_tokens, self.chunk, self.prefix_hit, self.end = max_tokens, chunk, prefix_hit, end
        self.status, self.ack, self.recv_after = status, ack, recv_after
        self.preempt_at, self.abort_at = preempt_at, abort_at
        self.finish_empty = finish_empty


def upstream_supports_hma(connector):
    """Whether vLLM's scheduler sees a SupportsHMA connector (it then calls request_finished_all_groups)."""
    from vllm.distributed.kv_transfer.kv_connector.v1 import base
    return hasattr(base, "SupportsHMA") and isinstance(connector, base.SupportsHMA)


class Engine:
    """vLLM's scheduler loop (scheduler.py / async_scheduler.py), reduced to what the connector sees."""

    def __init__(self, up, connector, producer, async_sched, rnd, groups=("full",)):
        self.up, self.c, self.producer, self.async_sched, self.rnd = up, connector, producer, async_sched, rnd
        self.next_block = 1
        # the KV-cache groups (scheduler's kv_cache_config order): "full", "swa" or "mamba"; the
        # engine keeps one block list per group (a mamba group holds one state block per request)
        self.groups = tuple(groups)
        self.hma = upstream_supports_hma(connector)
        self.lookahead = 0  # vLLM's num_lookahead_tokens: allocate_slots reserves them in attention groups
        self.calls = collections.Counter()
        self.requests = {}    # rid -> Request (vLLM's self.requests: until its blocks are freed)
        self.blocks = {}      # rid -> block ids
        self.plans = {}
        self.waiting = []
        self.running = []
        self.finished_recving = set()   # vLLM's finished_recving_kv_req_ids
        self.acks = collections.defaultdict(set)   # step -> finished_sending
        self.recvs = collections.defaultdict(set)  # step -> finished_recving
        self.output_tokens = collections.Counter()
        self.scheduled_before = set()

    def call(self, hook, *args):
        self.calls[hook] += 1
        mark = len(self.up.SENT)
        try:
            return getattr(self.c, hook)(*args)
        except Exception as e:  # noqa: BLE001 - the engine core would die here
            del self.up.SENT[mark:]  # the recorder wrote nothing for this call
            raise Died(f"{hook}: {type(e).__name__}: {e}") from None

    def alloc(self, rid, tokens):
        """Allocates up to ``tokens``; returns the new block ids, one list per group."""
        need = -(-tokens // BLOCK) if tokens > 0 else 0
        ahead = -(-(tokens + self.lookahead) // BLOCK) if tokens > 0 else 0
        have = self.blocks.setdefault(rid, [[] for _ in self.groups])
        out = []
        for g, kind in enumerate(self.groups):
            want = min(need, 1) if kind == "mamba" else ahead
            new = list(range(self.next_block, self.next_block + max(want - len(have[g]), 0)))
            self.next_block += len(new)
            have[g].extend(new)
            out.append(new)
        return out

    def group_ids(self, rid):
        return [list(g) for g in self.blocks.get(rid, [[] for _ in self.groups])]

    def kv_blocks(self, rid):
        return self.up.KVCacheBlocks.of_ids(*self.group_ids(rid))

    def admit(self, plan):
        from vllm.v1.request import Request
        from vllm.sampling_params import SamplingParams
        extra = None if plan.params is None else {"kv_transfer_params": plan.params}
        req = Request(plan.rid, list(range(plan.prompt)), SamplingParams(max_tokens=plan.max_tokens, extra_args=extra),
                      None, arrival_time=0.0)
        self.requests[plan.rid] = req
        self.plans[plan.rid] = plan
        self.waiting.append(req)
        self.call("on_new_request", req)

    def finish(self, req, status):
        """_free_request: the connector's request_finished, then the blocks freed unless delayed."""
        req.status = status
        rid = req.request_id
        if req in self.running:
            self.running.remove(req)
        if req in self.waiting:
            self.waiting.remove(req)
        # scheduler.py's _connector_finished: request_finished_all_groups with every group's ids for
        # a SupportsHMA connector, else request_finished with group 0
        if self.hma:
            groups = tuple([] for _ in self.groups) if self.plans[rid].finish_empty else tuple(self.group_ids(rid))
            delay, _params = self.call("request_finished_all_groups", req, groups)
        else:
            delay, _params = self.call("request_finished", req, self.group_ids(rid)[0])
        plan = self.plans[rid]
        if not delay:
            self.free(rid)
        if self.producer and plan.ack is not None and plan.ack != "early":
            self.acks[self.step + plan.ack].add(rid)

    def free(self, rid):
        self.requests.pop(rid, None)
        self.blocks.pop(rid, None)

    def schedule(self, step):
        from vllm.v1.core.sched.output import CachedRequestData, NewRequestData, SchedulerOutput
        from vllm.v1.request import RequestStatus
        new_reqs, cached, resumed, preempted = [], CachedRequestData.make_empty(), [], set()
        num_scheduled = {}
        # running requests: chunks of a prefill, decode steps
        for req in list(self.running):
            plan = self.plans[req.request_id]
            if (self.async_sched and req.num_output_placeholders > 0
                    and req.num_computed_tokens + 2 - req.num_output_placeholders >= req.num_prompt_tokens + req.max_tokens):
                continue  # async scheduling: the step in flight reaches max_tokens, no extra step
            if plan.preempt_at == step and not preempted:
                # _preempt_request: back to waiting, its blocks freed, computed tokens reset
                self.running.remove(req)
                req.status = RequestStatus.PREEMPTED
                req.num_computed_tokens = 0
                req.num_preemptions += 1
                self.blocks.pop(req.request_id, None)
                self.waiting.insert(0, req)
                preempted.add(req.request_id)
                continue
            rid = req.request_id
            todo = req.num_tokens - req.num_computed_tokens
            n = min(todo, plan.chunk) if todo > 0 else 1
            new = self.alloc(rid, req.num_computed_tokens + n)
            num_scheduled[rid] = n
            cached.req_ids.append(rid)
            cached.new_block_ids.append(tuple(new) if any(new) else None)
            cached.num_computed_tokens.append(req.num_computed_tokens)
            cached.num_output_tokens.append(len(req.output_token_ids))
        # waiting requests (none in a step that preempted, as vLLM)
        if not preempted:
            for req in list(self.waiting):
                rid = req.request_id
                plan = self.plans[rid]
                if req.status == RequestStatus.WAITING_FOR_REMOTE_KVS:
                    if rid not in self.finished_recving:
                        continue
                    self.finished_recving.discard(rid)
                    if req.num_computed_tokens == req.num_tokens:
                        req.num_computed_tokens = req.num_tokens - 1
                    req.status = RequestStatus.PREEMPTED if req.num_preemptions else RequestStatus.WAITING
                ext, load_async = 0, False
                if req.num_computed_tokens == 0:
                    local = min(plan.prefix_hit, (req.num_tokens - 1) // BLOCK * BLOCK)
                    ext, load_async = self.call("get_num_new_matched_tokens", req, local)
                    if ext is None:
                        continue
                    computed = local + ext
                    if computed > req.num_tokens:
                        raise Died(f"scheduler: assert num_computed_tokens <= request.num_tokens ({computed} > "
                                   f"{req.num_tokens})")
                else:
                    computed = req.num_computed_tokens
                if load_async:
                    n = 0
                    if ext <= 0:
                        raise Died("scheduler: assert num_external_computed_tokens > 0")
                else:
                    n = min(req.num_tokens - computed, plan.chunk)
                    if n <= 0:
                        raise Died("scheduler: assert num_new_tokens > 0")
                self.alloc(rid, computed + n)
                self.call("update_state_after_alloc", req, self.kv_blocks(rid), ext)
                self.waiting.remove(req)
                if load_async:
                    req.status = RequestStatus.WAITING_FOR_REMOTE_KVS
                    req.num_computed_tokens = computed
                    self.waiting.append(req)
                    if not self.producer:
                        self.recvs[step + plan.recv_after].add(rid)
                    continue
                req.num_computed_tokens = computed
                self.running.append(req)
                num_scheduled[rid] = n
                if req.status == RequestStatus.WAITING:
                    new_reqs.append(NewRequestData.from_request(req, self.kv_blocks(rid).get_block_ids()))
                else:  # PREEMPTED: resumed
                    cached.req_ids.append(rid)
                    cached.resumed_req_ids.add(rid)
                    cached.new_block_ids.append(self.kv_blocks(rid).get_block_ids())
                    cached.num_computed_tokens.append(req.num_computed_tokens)
                    cached.num_output_tokens.append(len(req.output_token_ids))
                req.status = RequestStatus.RUNNING
                if self.producer and plan.ack == "early":
                    self.acks[step + 1].add(rid)
        out = SchedulerOutput(scheduled_new_reqs=new_reqs, scheduled_cached_reqs=cached,
                              num_scheduled_tokens=num_scheduled, total_num_scheduled_tokens=sum(num_scheduled.values()),
                              scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
                              num_common_prefix_blocks=[0], preempted_req_ids=preempted, finished_req_ids=set(),
                              free_encoder_mm_hashes=[])
        self.call("build_connector_meta", out)
        # _update_after_schedule: the scheduled tokens are computed; with async scheduling a step
        # that samples a token leaves a placeholder for it (async_scheduler.py)
        for rid, n in num_scheduled.items():
            req = self.requests.get(rid)
            if req is not None:
                req.num_computed_tokens += n
                req.is_prefill_chunk = req.num_computed_tokens < req.num_tokens
                if self.async_sched and not req.is_prefill_chunk:
                    req.num_output_placeholders += 1
        return out

    def update_from_output(self, out, step):
        from vllm.v1.outputs import KVConnectorOutput
        from vllm.v1.request import RequestStatus
        # requests that produced their last token stop (prefill done: a token is sampled)
        for rid in list(out.num_scheduled_tokens):
            req = self.requests.get(rid)
            if req is None or req.is_finished() or req not in self.running:
                continue
            if not req.is_prefill_chunk:
                req.append_output_token_ids(1)
                if self.async_sched:
                    req.num_output_placeholders -= 1
                plan = self.plans[rid]
                if len(req.output_token_ids) >= plan.max_tokens:
                    self.finish(req, plan.status or RequestStatus.FINISHED_LENGTH_CAPPED)
        sending = self.acks.pop(step, set())
        recving = self.recvs.pop(step, set())
        sending = {r for r in sending if r in self.requests}
        kco = KVConnectorOutput(finished_sending=sending or None, finished_recving=recving or None)
        self.call("update_connector_output", kco)
        for rid in kco.finished_recving or ():
            req = self.requests.get(rid)
            if req is not None and req.status == RequestStatus.WAITING_FOR_REMOTE_KVS:
                self.finished_recving.add(rid)
        for rid in kco.finished_sending or ():
            req = self.requests.get(rid)
            self.free(rid)
            if req is not None and not req.is_finished():
                # vLLM frees the blocks of a request that is still running: its state is corrupt from here
                raise Died("scheduler: finished_sending freed the blocks of a live request")

    def run(self, plans, steps):
        from vllm.v1.request import RequestStatus
        pending = []
        for step in range(steps):
            self.step = step
            for p in plans:
                if p.arrive == step:
                    self.admit(p)
            # aborts from the front end, between steps (finish_requests)
            for p in plans:
                if p.abort_at == step and p.rid in self.requests:
                    req = self.requests[p.rid]
                    if not req.is_finished():
                        self.finish(req, RequestStatus.FINISHED_ABORTED)
            out = self.schedule(step)
            if self.async_sched:
                # async_scheduler.py: the next step is scheduled before this one's output is processed
                pending.append((out, step))
                if len(pending) > 1:
                    o, s = pending.pop(0)
                    self.update_from_output(o, s)
            else:
                self.update_from_output(out, step)
        for o, s in pending:
            self.update_from_output(o, s)


# ---------------------------------------------------------------------------- scenarios

class Scenario:
    """One engine rank. ``groups``: the KV-cache groups ("full", "swa", "mamba"), given to the
    connector as its kv_cache_config (versions that take one; None: the connector gets none);
    ``hma``: vLLM runs the hybrid KV-cache manager (disable_hybrid_kv_cache_manager False);
    ``dp_local``: data_parallel_size_local (default: dp_size, one pod)."""

    def __init__(self, name, role, read, dp_rank=0, dp_size=1, tp_size=1, async_sched=False, host=None,
                 groups=None, hma=False, dp_local=None):
        self.name, self.role, self.read = name, role, read
        self.dp_rank, self.dp_size, self.tp_size = dp_rank, dp_size, tp_size
        self.async_sched, self.host = async_sched, host
        self.groups, self.hma = groups, hma
        self.lookahead = 0
        self.dp_local = dp_size if dp_local is None else dp_local
        self.plans = []
        self.steps = 12

    @property
    def producer(self):
        return self.role == "kv_producer"


def unit_test_scenarios():
    """upstream's tests/v1/kv_connector/unit/test_moriio_connector.py, as scenarios: a request id
    embedding both zmq addresses (127.0.0.1:4789), transfer id "0", remote engine "test_engine"."""
    rnd = random.Random(0)
    out = []

    def params(do_remote_decode, do_remote_prefill):
        return {"do_remote_decode": do_remote_decode, "do_remote_prefill": do_remote_prefill, "transfer_id": "0",
                "remote_notify_port": 4789, "remote_block_ids": None, "remote_host": "127.0.0.1",
                "remote_port": 4789, "remote_handshake_port": 4789, "remote_engine_id": "test_engine"}

    def rid():
        z = "host:127.0.0.1,handshake:4789,notify:4789"
        return f"___prefill_addr_{z}___decode_addr_{z}_{rnd.getrandbits(128):032x}"

    s = Scenario("u-write-saves-local-block-ids", "kv_producer", False)
    s.plans.append(Plan(rid(), int(BLOCK * 2.5), params(True, False), max_tokens=1))
    out.append(s)
    s = Scenario("u-write-chunked-prefill-saves", "kv_producer", False)
    s.plans.append(Plan(rid(), 64 * 2 + 32, params(True, False), max_tokens=1, chunk=64))
    out.append(s)
    s = Scenario("u-read-loads-remote-block-ids", "kv_consumer", True)
    p = params(False, True)
    p["remote_block_ids"] = [1, 2, 3]  # the request's own blocks, as the test sets them
    s.plans.append(Plan(rid(), int(BLOCK * 2.5), p))
    out.append(s)
    return out


def generated(rnd, index):
    role = rnd.choice(("kv_producer", "kv_producer", "kv_consumer", "kv_consumer", "kv_both"))
    read = rnd.random() < 0.5
    dp_size = rnd.choice((1, 1, 2, 4))
    tp_size = rnd.choice((1, 1, 2, 4))
    s = Scenario(f"g{index:04d}-{role[3]}-{'read' if read else 'write'}-dp{0}of{dp_size}-tp{tp_size}", role, read,
                 dp_rank=rnd.randrange(dp_size), dp_size=dp_size, tp_size=tp_size, async_sched=rnd.random() < 0.3,
                 host=rnd.choice((None, "10.0.0.1", "10.0.1.1")))
    s.name = f"g{index:04d}-{role[3]}-{'read' if read else 'write'}-dp{s.dp_rank}of{dp_size}-tp{tp_size}" + (
        "-async" if s.async_sched else "")
    n = rnd.randrange(1, 9)
    for i in range(n):
        prompt = rnd.choice((5, 15, 16, 17, 32, 40, 64, 100, 130))
        p_host, d_host = rnd.choice(P_HOSTS), rnd.choice(D_HOSTS)
        tid = f"tx-{uuid.UUID(int=rnd.getrandbits(128), version=4)}"
        prefill_leg = s.producer or (role == "kv_both" and rnd.random() < 0.4)
        if rnd.random() < 0.05:
            params = None
        elif prefill_leg:
            # the toy proxy's prefill request
            params = {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
                      "remote_block_ids": None, "remote_dp_size": rnd.choice((1, 2)), "remote_tp_size": rnd.choice((1, 2)),
                      "transfer_id": tid}
        else:
            params = {"do_remote_decode": False, "do_remote_prefill": True, "remote_engine_id": None,
                      "remote_block_ids": None, "transfer_id": tid, "remote_dp_size": rnd.choice((1, 2)),
                      "remote_tp_size": rnd.choice((1, 2, 4))}
            if read:
                nb = -(-prompt // BLOCK)
                start = rnd.randrange(1, 5000)
                params["remote_block_ids"] = list(range(start, start + nb))
                params["remote_engine_id"] = f"{p_host}:6301"
                if rnd.random() < 0.05:
                    params["remote_block_ids"] = []
            if rnd.random() < 0.5:
                params["remote_dp_rank"] = rnd.randrange(params["remote_dp_size"])
        rid = addressed_id(rnd, p_host, d_host)
        if rnd.random() < 0.05 and (params is None or not params.get("do_remote_prefill")):
            rid = f"cmpl-{rnd.getrandbits(128):032x}-0"  # no embedded address
        end = rnd.choices(("normal", "abort-waiting", "abort-later"), (0.8, 0.1, 0.1))[0]
        arrive = rnd.randrange(0, 4)
        plan = Plan(rid, prompt, params, arrive=arrive,
                    max_tokens=1 if prefill_leg else rnd.randrange(1, 4),
                    chunk=rnd.choice((BLOCK, 2 * BLOCK, 10_000, 10_000)),
                    prefix_hit=rnd.choice((0, 0, 0, BLOCK)),
                    status=None if prefill_leg or rnd.random() < 0.5 else rnd.choice(("STOPPED", "LENGTH")),
                    ack=rnd.choices((1, 2, 3, None, "early"), (0.5, 0.2, 0.1, 0.15, 0.05))[0],
                    recv_after=rnd.randrange(1, 4),
                    preempt_at=arrive + rnd.randrange(1, 4) if rnd.random() < 0.15 else None,
                    abort_at=arrive if end == "abort-waiting" else arrive + rnd.randrange(1, 5) if end == "abort-later"
                    else None)
        s.plans.append(plan)
    return s


def grouped_scenarios(scenarios, seed):
    """The same scenarios for a version whose connector is SupportsHMA and takes a kv_cache_config
    (3c201bf2): one full-attention group by default; READ scenarios also run with a sliding-window
    group beside it under the hybrid KV-cache manager (MoRIIO refuses hybrid groups in WRITE mode at
    construction); the remote_block_ids a READ decode receives are one list per group, as such a
    producer returns them (the sliding-window group clipped to what it keeps), now and then an older
    producer's flat list; now and then a second full-attention group that opts out of KV transfer;
    routing params of multi-pod deployments (remote_dp_size_local,
    remote_hosts, remote_dp_rank_override, is_request_leader) and engines on a second pod
    (data_parallel_size_local below data_parallel_size)."""
    out = []
    for i, s in enumerate(scenarios):
        rnd = random.Random(seed * 7_000_003 + i)
        s.groups = ("full",)
        s.hma = rnd.random() < 0.3
        if s.read and rnd.random() < 0.4:
            s.groups = rnd.choice((("full", "swa"), ("swa", "full"), ("full", "swa", "swa"), ("full", "mamba"),
                                   ("mamba", "full", "mamba")))
            s.hma = True
        other = random.Random(seed * 11_000_003 + i)
        if s.groups == ("full",) and other.random() < 0.1:
            # a group that opts out of KV transfer (enable_kv_transfer False): the connector sees only
            # the transfer groups in what it exchanges, every group in what it stages for a save
            s.groups = other.choice((("full", "full-x"), ("full-x", "full")))
        if s.dp_size == 4 and rnd.random() < 0.5:
            s.dp_local = 2
        if rnd.random() < 0.15:
            s.lookahead = 16  # speculative lookahead: the decode tail tolerance is cdiv(1 + 16, 16) = 2 blocks
        if s.groups != ("full",) or s.hma or s.dp_local != s.dp_size:
            s.name += "-" + "+".join(s.groups) + ("-hma" if s.hma else "") + (
                f"-local{s.dp_local}" if s.dp_local != s.dp_size else "")
        if s.lookahead:
            s.name += f"-ahead{s.lookahead}"
        keep = [0 if g == "full" else 1 if g == "mamba" else -(-SWA_WINDOW // BLOCK) + 1 for g in s.groups
                if g != "full-x"]
        if "mamba" in s.groups:
            # a hybrid producer returns [attention, *mamba groups]
            keep = [0] + [1 for g in s.groups if g == "mamba"]
        for p in s.plans:
            params = p.params
            if not params:
                continue
            if params.get("do_remote_prefill") and isinstance(params.get("remote_block_ids"), list) \
                    and rnd.random() > 0.05:
                flat = params["remote_block_ids"]
                params["remote_block_ids"] = [
                    list(flat) if k == 0 or not flat else
                    [b + 10_000 * (g + 1) for b in flat[-k:]] for g, k in enumerate(keep)]
            if rnd.random() < 0.3:
                size = params.get("remote_dp_size", 1)
                params["remote_dp_size"] = size = rnd.choice((size, 2, 4))
                params["remote_dp_size_local"] = rnd.choice((size, 1, 2, 0))
                if rnd.random() < 0.6:
                    params["remote_hosts"] = list(POD_HOSTS)  # per-pod prefill IPs, none the request id names
                params["remote_dp_rank"] = rnd.randrange(size)
            r = rnd.random()
            if r < 0.15:
                params["remote_dp_rank_override"] = True
            elif r < 0.25:
                params["is_request_leader"] = rnd.random() < 0.5
        out.append(s)
    return out


def routing_scenarios():
    """upstream's tests/v1/kv_connector/unit/test_moriio_routing.py at 3c201bf2, as scenarios: a
    prefill on global DP rank 11 of 16 with 8 ranks per pod, one on rank 4 of 8, and a request with
    no kv_transfer_params; each finished length-capped with no block ids (the test's call) and with
    its blocks."""
    rnd = random.Random(11)
    out = []
    for rank, size, local in ((11, 16, 8), (4, 8, 8), (0, 16, 8)):
        for empty in (True, False):
            # READ: the producer stages no save (the test's params have no remote_block_ids, which a
            # WRITE producer's add_new_req reads by key), so the request reaches request_finished
            s = Scenario(f"r-finish-rank{rank}of{size}-local{local}" + ("-no-blocks" if empty else ""), "kv_producer",
                         True, dp_rank=rank, dp_size=size, dp_local=local, groups=("full",), hma=not empty)
            s.plans.append(Plan(addressed_id(rnd, P_HOSTS[0], D_HOSTS[0]), 40,
                                {"do_remote_decode": True, "transfer_id": f"t-{rank}-{int(empty)}"},
                                max_tokens=1, finish_empty=empty))
            s.plans.append(Plan(addressed_id(rnd, P_HOSTS[0], D_HOSTS[0]), 20, None, max_tokens=1, finish_empty=empty))
            out.append(s)
    return out


# ---------------------------------------------------------------------------- recording

def record(up, scenario, tree, rnd):
    """Runs one scenario; writes tree/<name>/journal.jsonl. Returns (name, calls, died, frames)."""
    from vllm.config import CacheConfig, KVTransferConfig, ParallelConfig, SchedulerConfig, VllmConfig
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
    from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
    from vllm.v1.request import RequestStatus
    for p in scenario.plans:
        if isinstance(p.status, str):
            p.status = RequestStatus.FINISHED_STOPPED if p.status == "STOPPED" else RequestStatus.FINISHED_LENGTH_CAPPED
    tmp = os.path.join(tree, ".rec-" + scenario.name)
    os.makedirs(tmp, exist_ok=True)
    # the mode as 239b5ff30 reads it: the environment, not the extra config
    os.environ["VLLM_MORIIO_CONNECTOR_READ_MODE"] = "1" if scenario.read else "false"
    if scenario.host:
        os.environ["VLLM_HOST_IP"] = scenario.host
    else:
        os.environ.pop("VLLM_HOST_IP", None)
    extra = {"inner_connector": "MoRIIOConnector", "record_to": os.path.join(tmp, "{role}-dp{dp}-tp{tp}.jsonl"),
             "handshake_port": "6301", "notify_port": "61005"}
    kv_cache_config = None
    if scenario.groups is not None:
        # newer versions: the mode is the extra config's read_mode, and the connector reads its
        # kv_cache_config (the groups)
        extra["read_mode"] = "true" if scenario.read else "false"
        kv_cache_config = up.KVCacheConfig([
            up.KVCacheGroupSpec([f"layer.{i}"], up.FullAttentionSpec(BLOCK) if kind in ("full", "full-x")
                                else up.SlidingWindowSpec(BLOCK, SWA_WINDOW) if kind == "swa" else up.MambaSpec(BLOCK),
                                enable_kv_transfer=kind != "full-x")
            for i, kind in enumerate(scenario.groups)])
    config = VllmConfig(
        kv_transfer_config=KVTransferConfig(kv_connector="KvledgerRecorderConnector", kv_role=scenario.role,
                                            kv_connector_module_path="kvledger_vllm", kv_connector_extra_config=extra),
        parallel_config=ParallelConfig(data_parallel_rank=scenario.dp_rank, data_parallel_size=scenario.dp_size,
                                       data_parallel_size_local=scenario.dp_local, tensor_parallel_size=scenario.tp_size),
        cache_config=CacheConfig(block_size=BLOCK),
        scheduler_config=SchedulerConfig(disable_hybrid_kv_cache_manager=not scenario.hma,
                                         async_scheduling=scenario.async_sched),
        num_lookahead_tokens=scenario.lookahead)
    del up.SENT[:]
    died = None
    c = KVConnectorFactory.create_connector(config, KVConnectorRole.SCHEDULER, kv_cache_config)
    e = Engine(up, c, scenario.producer, scenario.async_sched, rnd, scenario.groups or ("full",))
    e.lookahead = scenario.lookahead
    try:
        e.run(scenario.plans, scenario.steps)
    except Died as d:
        died = str(d)
    try:
        c.shutdown()
    except Exception as ex:  # noqa: BLE001
        died = died or f"shutdown: {ex}"
    path = os.path.join(tmp, f"scheduler-dp{scenario.dp_rank}-tp0.jsonl")
    node_dir = os.path.join(tree, scenario.name)
    os.makedirs(node_dir, exist_ok=True)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    header = json.loads(lines[0])
    header["node_id"] = scenario.name  # one node per scenario in the tree
    with open(os.path.join(node_dir, "journal.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps(header, separators=(",", ":")) + "\n")
        for line in lines[1:]:
            f.write(line + "\n")
    shutil.rmtree(tmp)
    frames = [frame_of(p, d) for p, d in up.SENT]
    with open(os.path.join(frames_dir(tree), scenario.name + ".json"), "w", encoding="utf-8") as f:
        json.dump(frames, f)
    return scenario.name, e.calls, died, len(frames)


# ---------------------------------------------------------------------------- comparing

def summarize(nodes, recorded, frames, args, label):
    t = SIDE.tally(nodes, recorded)
    total, diverging = t.total, t.diverging
    result = dict({"upstream": label, "scenarios": len(nodes), "seed": args.seed, "profiles": dict(t.profiles),
                   "hook_calls": total, "agreeing": total - diverging, "diverging": diverging},
                  **SIDE.result_tail(t, frames))
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    print(f"upstream differential ({label}): {len(nodes)} scenarios (seed {args.seed}), profiles "
          f"{dict(t.profiles)}; {total} hook calls compared: {total - diverging} agree, {diverging} diverge; "
          f"{t.diverging_scenarios} scenario(s) with a divergence")
    SIDE.print_details(t, frames, "notify frames the scheduler sent")
    return result


def takes_kv_cache_config(root):
    """Whether this version's connector is built with the groups (SupportsHMA, after 239b5ff30)."""
    import re
    path = os.path.join(root, "vllm", "distributed", "kv_transfer", "kv_connector", "v1", "moriio", "moriio_connector.py")
    with open(path, encoding="utf-8") as f:
        return re.search(r"class MoRIIOConnector\([^)]*SupportsHMA", f.read()) is not None


def main(argv=None):
    global SIDE, fail, frame_of
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", default=DEFAULT_UPSTREAM,
                    help="the upstream tree (default: <repo>/../shared/upstream/vllm-239b5ff30)")
    ap.add_argument("--scenarios", type=int, default=300, help="generated scenarios besides the unit-test ones (default 300)")
    ap.add_argument("--seed", type=int, default=1, help="the generator's seed (default 1)")
    ap.add_argument("--out", help="keep recordings, frames and journals there (default: a temporary directory, removed)")
    ap.add_argument("--kvledger", default=os.path.join(REPO, "kvledger"), help="the kvledger launcher")
    ap.add_argument("--batch", type=int, default=100, help="scenarios per replay --verify run (default 100)")
    ap.add_argument("--profile", help="replay with this profile instead of the one each recording names")
    ap.add_argument("--only-record", action="store_true", help="write the recordings, compare nothing")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    a = ap.parse_args(argv)
    if a.scenarios < 0 or a.batch < 1:
        ap.error("--scenarios must be at least 0 and --batch at least 1")
    root = os.path.normpath(os.path.abspath(a.upstream))
    if not os.path.isdir(os.path.join(root, "vllm")):
        fail(f"no upstream vLLM tree at {root} (pass --upstream DIR, a vllm-<commit> directory)")
    if not a.only_record and not os.access(a.kvledger, os.X_OK):
        fail(f"no kvledger launcher at {a.kvledger} (pass --kvledger PATH)")
    sys.path.insert(0, HERE)
    sys.path.insert(0, BRIDGE_SRC)
    # the connector's own log lines (a warning per unmap miss, "MoRIIO is not available") are not
    # this harness's output
    quiet = logging.getLogger("vllm")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    import upstream_vllm as up
    up.load(root)
    if takes_kv_cache_config(root):
        # release frames of newer versions carry consumer_tp_size (as the seed's)
        SIDE = differential.Side("upstream_differential.py", who="upstream", tag="upstream", raiser="the connector",
                                 other_fields=("transfer_id", "consumer_tp_size"))
        fail, frame_of = SIDE.fail, SIDE.frame_of
    out = os.path.abspath(a.out) if a.out else tempfile.mkdtemp(prefix="upstream-differential-")
    tree, journals = os.path.join(out, "recordings"), os.path.join(out, "journals")
    for d in (tree, journals, os.path.join(out, "frames")):
        if os.path.exists(d):
            shutil.rmtree(d)
    os.makedirs(tree)
    scenarios = unit_test_scenarios() + [generated(random.Random(a.seed * 1_000_003 + i), i) for i in range(a.scenarios)]
    if takes_kv_cache_config(root):
        scenarios = grouped_scenarios(scenarios, a.seed) + routing_scenarios()
    recorded = [record(up, s, tree, random.Random(a.seed * 7 + i)) for i, s in enumerate(scenarios)]
    if not a.json:
        print(f"recorded {len(recorded)} scenarios, {sum(sum(r[1].values()) for r in recorded)} hook calls made "
              f"({sum(r[3] for r in recorded)} notify frames sent) in {tree}", flush=True)
    try:
        if a.only_record:
            return 0
        names = [r[0] for r in recorded]
        nodes, kv_frames = SIDE.compare(a.kvledger, tree, journals, names, a.batch, a.profile)
        r = summarize(nodes, recorded, SIDE.compare_frames(tree, names, kv_frames), a, os.path.basename(root))
        return 0 if r["diverging"] == 0 and r["frames"]["compared"] == r["frames"]["agreeing"] else 1
    finally:
        if not a.out:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

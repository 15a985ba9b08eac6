#!/usr/bin/python3
"""The seed scheduler's side of SeedHookMixBenchmark: the same per-request hook mix, run through
the seed's own ``MoRIIOConnectorScheduler`` class, timed in rounds.

The class is not part of this repository: it is read at run time from the seed document
(default ``<repo>/../shared/seeds/000_8224966d3c25bc2c.txt``, or ``--seed-file``), from the line
``class MoRIIOConnectorScheduler:`` to the end of the class, and executed under the stubs below
for what it imports. The stubs of ``MoRIIOConnectorMetadata.add_new_req`` and ``ReqMeta`` do the
work upstream's do (the peer address parsed out of the request id by the upstream regexes, every
ReqMeta field read from the params); the others are plain holders. ``KVCacheBlocks.get_block_ids``
returns prebuilt lists (upstream rebuilds them from block objects on each call, so the stub
flatters Python).

Per request, six hook calls are timed (see SeedHookMix.java for the Java side):
  write-producer: get_num_new_matched_tokens, update_state_after_alloc, build_connector_meta,
                  request_finished (FINISHED_LENGTH_CAPPED), update_connector_output with the
                  request's ACK in finished_sending, an empty update_connector_output;
  read-consumer:  get_num_new_matched_tokens, update_state_after_alloc, build_connector_meta,
                  an empty update_connector_output, request_finished (FINISHED_STOPPED), an empty
                  update_connector_output.
Request objects, blocks, scheduler outputs and connector outputs are built before the clock
starts, afresh for every round (the hooks mutate them). One scheduler instance lives through all
rounds, as on a live engine.

Output: one line per round, then a summary line; with --json, one JSON object per mix on stdout.
"""

import __future__
import argparse
import enum
import gc
import json
import logging
import os
import random
import re
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

CLASS_LINE = "class MoRIIOConnectorScheduler:"
BLOCK_SIZE = 16
HOOKS_PER_REQUEST = 6


def fail(msg):
    print(f"seed_hook_mix.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load_scheduler_source(path):
    if not os.path.isfile(path):
        fail(f"the seed document is not at {path} (pass --seed-file PATH to the seed's "
             f"000_8224966d3c25bc2c.txt)")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.rstrip() == CLASS_LINE)
    except StopIteration:
        fail(f"{path} has no line '{CLASS_LINE}': not the seed document?")
    end = len(lines)
    for i in range(start + 1, len(lines)):
        l = lines[i]
        if l.strip() and not l[0].isspace():
            end = i
            break
    return "\n".join(lines[start:end]) + "\n"


# ---------------------------------------------------------------------------- stubs

logger = logging.getLogger("moriio_seed")
logger.setLevel(logging.INFO)  # vLLM's default: debug calls are checked and skipped
logger.addHandler(logging.NullHandler())
logger.propagate = False

ReqId = str
TransferId = str
EngineId = str


class MoRIIOMode(enum.Enum):
    READ = "read"
    WRITE = "write"


class ROLE(enum.Enum):
    PRODUCER = "producer"
    CONSUMER = "consumer"
    NOTINIT = "notinit"


_role = [ROLE.NOTINIT]


def set_role(role):
    _role[0] = role


def get_role():
    return _role[0]


class MoRIIOConstants:
    DEFAULT_HANDSHAKE_PORT = "6301"
    DEFAULT_NOTIFY_PORT = "61005"
    VLLM_MORI_READ_ABORT_REQUEST_TIMEOUT = 3600
    DEFAULT_TRANSFER_TIMEOUT = 30.0
    DEFAULT_DEFER_TIMEOUT = 60.0


def get_moriio_mode(kv_transfer_config):
    v = str(kv_transfer_config.kv_connector_extra_config.get("read_mode", False)).lower().strip()
    return MoRIIOMode.READ if v in ("true", "1") else MoRIIOMode.WRITE


def resolve_host_ip(extra):
    return extra.get("host_ip") or "127.0.0.1"


# The port and pod arithmetic (moriio-protocol.md 2.1). fold_local_rank and pod_index are not in
# any stored common; both the seed and vLLM 3c201bf2 call them with (global rank,
# data_parallel_size_local) and say what they do: the pod-local rank for port offsets and the pod
# a rank lives on, with data_parallel_size_local == 0 (external DP) a single pod that must not
# divide by zero ("fold_local_rank handles the external-DP sentinel (dp_local==0)"; "guarding via
# pod_index keeps _is_kv_master True for the external-DP sentinel"). get_port_offset is the public
# common's (028a39c2, 42fa4c09).
def fold_local_rank(g, local):
    return g % local if local else g


def pod_index(g, local):
    return g // local if local else 0


def get_port_offset(dp_rank, tp_rank, tp_size=1):
    return dp_rank * tp_size + tp_rank


def make_zmq_path(scheme, host, port):
    return f"{scheme}://{host}:{port}"


def make_zmq_socket(**kwargs):
    raise RuntimeError("the hook mix sends no notify")


_PREFILL_ZMQ_RE = re.compile(r"___prefill_addr_(.+?)___decode_addr_")
_DECODE_ZMQ_RE = re.compile(r"___decode_addr_(.+)_[0-9a-f]{32}(?:-.*)?$")


def get_peer_zmq_from_request_id(request_id, is_producer):
    m = (_DECODE_ZMQ_RE if is_producer else _PREFILL_ZMQ_RE).search(request_id)
    return m.group(1) if m else None


def parse_moriio_zmq_address(s):
    parts = {}
    for seg in s.split(","):
        k, _, v = seg.partition(":")
        parts[k.strip()] = v.strip()
    try:
        return parts["host"], int(parts["handshake"]), int(parts["notify"])
    except (KeyError, ValueError):
        raise ValueError(f"Malformed zmq_address {s!r}") from None


# ReqMeta's fields as the newest worker reads them (3c201bf2: meta.remote_dp_rank,
# remote_dp_size_local, tp_size, multi_pod_hosts, ...)
@dataclass
class ReqMeta:
    local_block_ids: list
    remote_block_ids: Any
    remote_host: str
    remote_handshake_port: int
    remote_notify_port: int
    remote_engine_id: Any
    tp_size: int
    remote_dp_rank: int
    remote_dp_size: int
    remote_dp_size_local: int
    transfer_id: str
    multi_pod_hosts: list = field(default_factory=list)


class KVConnectorMetadata:
    pass


class MoRIIOConnectorMetadata(KVConnectorMetadata):
    def __init__(self):
        self.reqs_to_recv = {}
        self.reqs_to_save = {}
        self.reqs_to_send = {}
        self.transfer_id_to_request_id = {}

    def add_new_req(self, request_id, local_block_ids, kv_transfer_params, write_mode=False):
        # Resolution order of the newest common (moriio-protocol.md 2.3): the request-id address
        # (decode part on P, prefill part on D), then the explicit params.
        transfer_id = kv_transfer_params["transfer_id"]
        peer = get_peer_zmq_from_request_id(request_id, is_producer=write_mode)
        if peer is not None:
            host, hs_port, notify_port = parse_moriio_zmq_address(peer)
        else:
            host = kv_transfer_params.get("remote_host")
            hs_port = kv_transfer_params.get("remote_handshake_port")
            notify_port = kv_transfer_params.get("remote_notify_port")
            if not host or hs_port is None or notify_port is None:
                raise ValueError(f"no peer address for request {request_id!r}")
            hs_port, notify_port = int(hs_port), int(notify_port)
        remote_hosts = kv_transfer_params.get("remote_hosts")
        dp_size = kv_transfer_params.get("remote_dp_size", 1)
        meta = ReqMeta(
            local_block_ids=local_block_ids,
            remote_block_ids=kv_transfer_params["remote_block_ids"],
            remote_host=host,
            remote_handshake_port=hs_port,
            remote_notify_port=notify_port,
            remote_engine_id=kv_transfer_params.get("remote_engine_id"),
            tp_size=int(kv_transfer_params.get("remote_tp_size")
                        or kv_transfer_params.get("tp_size") or 0),
            remote_dp_rank=kv_transfer_params.get("remote_dp_rank", 0),
            remote_dp_size=dp_size,
            remote_dp_size_local=int(kv_transfer_params.get("remote_dp_size_local", dp_size)),
            transfer_id=transfer_id,
            multi_pod_hosts=list(remote_hosts) if remote_hosts else [host],
        )
        if write_mode:
            self.reqs_to_save[request_id] = meta
        else:
            self.reqs_to_recv[request_id] = meta


class RequestStatus(enum.IntEnum):
    WAITING = enum.auto()
    WAITING_FOR_REMOTE_KVS = enum.auto()
    RUNNING = enum.auto()
    FINISHED_STOPPED = enum.auto()
    FINISHED_LENGTH_CAPPED = enum.auto()
    FINISHED_ABORTED = enum.auto()


class Request:
    __slots__ = ("request_id", "prompt_token_ids", "num_prompt_tokens", "kv_transfer_params", "status")

    def __init__(self, request_id, prompt_token_ids, kv_transfer_params):
        self.request_id = request_id
        self.prompt_token_ids = prompt_token_ids
        self.num_prompt_tokens = len(prompt_token_ids)
        self.kv_transfer_params = kv_transfer_params
        self.status = RequestStatus.WAITING


class KVCacheBlocks:
    __slots__ = ("_ids",)

    def __init__(self, *groups):
        self._ids = tuple(groups)

    def get_block_ids(self):
        return self._ids


class KVConnectorOutput:
    __slots__ = ("finished_sending", "finished_recving")

    def __init__(self, finished_sending=None, finished_recving=None):
        self.finished_sending = finished_sending
        self.finished_recving = finished_recving


class CachedRequestData:
    __slots__ = ("req_ids", "new_block_ids")

    def __init__(self):
        self.req_ids = []
        self.new_block_ids = []


class SchedulerOutput:
    __slots__ = ("scheduled_cached_reqs",)

    def __init__(self):
        self.scheduled_cached_reqs = CachedRequestData()


def namespace():
    import time as time_module
    try:
        import msgpack
    except ImportError:  # never called by the mix
        msgpack = None
    try:
        import zmq
    except ImportError:
        zmq = None
    ns = dict(
        __name__="seed_moriio_scheduler", Any=Any, time=time_module, msgpack=msgpack, zmq=zmq,
        logger=logger, ReqId=ReqId, TransferId=TransferId, EngineId=EngineId, MoRIIOMode=MoRIIOMode,
        ROLE=ROLE, set_role=set_role, get_role=get_role, MoRIIOConstants=MoRIIOConstants,
        get_moriio_mode=get_moriio_mode, resolve_host_ip=resolve_host_ip,
        fold_local_rank=fold_local_rank, pod_index=pod_index, get_port_offset=get_port_offset,
        make_zmq_path=make_zmq_path, make_zmq_socket=make_zmq_socket,
        get_peer_zmq_from_request_id=get_peer_zmq_from_request_id,
        parse_moriio_zmq_address=parse_moriio_zmq_address, ReqMeta=ReqMeta,
        KVConnectorMetadata=KVConnectorMetadata, MoRIIOConnectorMetadata=MoRIIOConnectorMetadata,
        RequestStatus=RequestStatus, Request=Request, KVCacheBlocks=KVCacheBlocks,
        KVConnectorOutput=KVConnectorOutput, SchedulerOutput=SchedulerOutput,
        VllmConfig=object,
    )
    return ns


def load_scheduler_class(seed_file):
    src = load_scheduler_source(seed_file)
    ns = namespace()
    code = compile(src, seed_file, "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True)
    exec(code, ns)
    return ns["MoRIIOConnectorScheduler"]


def vllm_config(producer, read_mode, host):
    extra = {"handshake_port": "6301", "notify_port": "61005", "host_ip": host,
             "read_mode": "true" if read_mode else "false"}
    return SimpleNamespace(
        kv_transfer_config=SimpleNamespace(
            kv_role="kv_producer" if producer else "kv_consumer",
            is_kv_consumer=not producer, is_kv_producer=producer,
            kv_connector_extra_config=extra),
        cache_config=SimpleNamespace(block_size=BLOCK_SIZE),
        parallel_config=SimpleNamespace(tensor_parallel_size=1, data_parallel_rank=0,
                                        data_parallel_size=1, data_parallel_size_local=1))


# ---------------------------------------------------------------------------- the mix

PREFILL = "host:10.0.1.1,handshake:6301,notify:61005"
DECODE = "host:10.0.1.2,handshake:6301,notify:61005"


def prompt_tokens(i):
    return 256 + (i * 37) % 769


_TOKENS = {}


class Inputs:
    """One round's inputs, built before the clock starts."""

    def __init__(self, mix, requests, rnd):
        self.reqs, self.blocks, self.flat, self.outs = [], [], [], []
        self.sched_out = []
        next_block = 1
        for i in range(requests):
            rid = (f"___prefill_addr_{PREFILL}___decode_addr_{DECODE}_{rnd.getrandbits(128):032x}"
                   f"-{rnd.getrandbits(32):08x}")
            tid = f"tx-{uuid.UUID(int=rnd.getrandbits(128), version=4)}"
            tokens = prompt_tokens(i)
            n = (tokens + BLOCK_SIZE - 1) // BLOCK_SIZE
            ids = []
            for _ in range(n):
                ids.append(next_block)
                next_block = 1 if next_block == 40_000 else next_block + 1
            if mix == "write-producer":
                params = {"remote_dp_size": 1, "remote_tp_size": 1, "transfer_id": tid,
                          "do_remote_decode": True, "do_remote_prefill": False,
                          "remote_engine_id": None, "remote_block_ids": None}
                self.outs.append((KVConnectorOutput(finished_sending={rid}), KVConnectorOutput()))
            else:
                params = {"do_remote_decode": False, "do_remote_prefill": True,
                          "remote_engine_id": "10.0.1.1:6301",
                          "remote_block_ids": [100_000 + b for b in ids], "transfer_id": tid,
                          "remote_dp_size": 1, "remote_tp_size": 1}
                self.outs.append((KVConnectorOutput(), KVConnectorOutput()))
            # The scheduler only takes len(prompt_token_ids): requests of one length share a list.
            token_ids = _TOKENS.get(tokens)
            if token_ids is None:
                token_ids = _TOKENS[tokens] = list(range(tokens))
            req = Request(rid, token_ids, params)
            self.reqs.append(req)
            self.blocks.append(KVCacheBlocks(ids))
            self.flat.append(ids)
            self.sched_out.append(SchedulerOutput())


def run_write_producer(s, inp):
    LC = RequestStatus.FINISHED_LENGTH_CAPPED
    t0 = time.perf_counter()
    for req, blocks, flat, so, (ack, empty) in zip(inp.reqs, inp.blocks, inp.flat, inp.sched_out, inp.outs):
        s.get_num_new_matched_tokens(req, 0)
        s.update_state_after_alloc(req, blocks, 0)
        s.build_connector_meta(so)
        req.status = LC
        s.request_finished(req, flat)
        s.update_connector_output(ack)
        s.update_connector_output(empty)
    return time.perf_counter() - t0


def run_read_consumer(s, inp):
    ST = RequestStatus.FINISHED_STOPPED
    t0 = time.perf_counter()
    for req, blocks, flat, so, (out1, out2) in zip(inp.reqs, inp.blocks, inp.flat, inp.sched_out, inp.outs):
        n = req.num_prompt_tokens
        s.get_num_new_matched_tokens(req, 0)
        s.update_state_after_alloc(req, blocks, n - 1)
        s.build_connector_meta(so)
        s.update_connector_output(out1)
        req.status = ST
        s.request_finished(req, flat)
        s.update_connector_output(out2)
    return time.perf_counter() - t0


def check_clean(s, mix):
    left = {k: len(v) for k, v in vars(s).items()
            if (k.startswith("_reqs") and k != "_reqs_need_send") or k in ("_req_kv_params", "_deferred_send_deadlines",
                                              "_pending_sent_acks", "transfer_id_to_request_id",
                                              "request_id_to_transfer_id")}
    left = {k: n for k, n in left.items() if n}
    if left:
        fail(f"{mix}: the scheduler holds state after the round: {left}")


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed-file", default=os.path.join(repo, "..", "shared", "seeds", "000_8224966d3c25bc2c.txt"),
                    help="the seed document (default: <repo>/../shared/seeds/000_8224966d3c25bc2c.txt)")
    ap.add_argument("--mix", choices=["write-producer", "read-consumer", "both"], default="both")
    ap.add_argument("--requests", type=int, default=100_000, help="requests per round (6 hook calls each)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    ap.add_argument("--json", action="store_true", help="print one JSON object per mix on stdout")
    a = ap.parse_args()
    if a.requests < 1 or a.rounds < 1 or a.warmup < 0:
        ap.error("--requests and --rounds must be at least 1, --warmup at least 0")
    cls = load_scheduler_class(os.path.normpath(a.seed_file))
    mixes = ["write-producer", "read-consumer"] if a.mix == "both" else [a.mix]
    for mix in mixes:
        producer = mix == "write-producer"
        s = cls(vllm_config(producer, not producer, "10.0.1.1" if producer else "10.0.1.2"),
                "10.0.1.1:6301" if producer else "10.0.1.2:6301")
        run = run_write_producer if producer else run_read_consumer
        rnd = random.Random(0x5EED)
        rates = []
        for r in range(a.warmup + a.rounds):
            inp = Inputs(mix, a.requests, rnd)
            gc.collect()
            dt = run(s, inp)
            check_clean(s, mix)
            calls = a.requests * HOOKS_PER_REQUEST
            if r >= a.warmup:
                rates.append(calls / dt)
                if not a.json:
                    print(f"python {mix} round {r - a.warmup + 1}: {calls} calls in {dt:.3f} s = "
                          f"{calls / dt / 1e6:.3f} M calls/s", flush=True)
        med = statistics.median(rates)
        if a.json:
            print(json.dumps({"mix": mix, "calls_per_round": a.requests * HOOKS_PER_REQUEST,
                              "rounds": rates, "median": med}), flush=True)
        else:
            print(f"python {mix}: median {med / 1e6:.3f} M calls/s, min {min(rates) / 1e6:.3f}, "
                  f"max {max(rates) / 1e6:.3f} ({len(rates)} rounds of {a.requests * HOOKS_PER_REQUEST} calls)",
                  flush=True)


if __name__ == "__main__":
    main()

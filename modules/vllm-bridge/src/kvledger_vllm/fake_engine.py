"""Fake MoRIIO engines for kvledger's live demo, written from the protocol (docs: moriio-protocol.md).

A fake engine is one engine rank (DP 0, TP 0) without a model or KV memory that behaves, on every
wire a MoRIIO deployment uses, as a vLLM instance running the MoRIIO connector does:

- it registers with the proxy: a msgpack map (``type`` P or D, ``http_address``, ``zmq_address``,
  ``dp_size``, ``tp_size``, ``transfer_mode``) on a DEALER to the proxy's ping port, every 3 s
  (protocol 3.1);
- it serves the OpenAI endpoints ``/v1/completions`` and ``/v1/chat/completions`` (streaming and
  not), plus ``/health`` and ``/v1/models``; a prefill leg answers with the ``kv_transfer_params``
  a MoRIIO prefill returns (protocol 4.3);
- it runs vLLM's scheduler loop (admit, match, allocate, schedule, forward, poll, finish, free;
  a full block pool preempts the last running request, which resumes later) and calls the KV
  connector's hooks in vLLM's order, each step's ``build_connector_meta`` with the
  ``scheduled_new_reqs`` and ``preempted_req_ids`` vLLM's ``SchedulerOutput`` holds (a request
  whose remote KV arrived is scheduled as a new one then), on one of two connectors:

  * ``--bridge tcp://127.0.0.1:PORT``: the hooks go to a live ``kvledger node --engine bridge``
    over its engine bridge (docs/bridge-protocol.md); the node is
    then the rank's MoRIIO control plane (it binds the notify and handshake ports and sends and
    receives the MoRIIO frames), and the engine registers the node's ports;
  * no ``--bridge``: the fake engine is its own MoRIIO control plane. It binds the notify ROUTER
    and sends real notify frames on DEALERs, resolving peers from the request id first (newest
    connectors, protocol 2.3): in WRITE the decode side sends ``remote_blocks`` to every prefill
    TP port and the prefill side answers with ``write_done`` once its (pretend) writes are done;
    in READ the decode side sends ``release`` after its (pretend) reads. No KV bytes move and no
    handshake is served: there is no data plane.

Run: ``python3 -m kvledger_vllm.fake_engine --role prefill --mode write --http-port 8100
--notify-port 61005 --proxy tcp://127.0.0.1:36367``. Dependencies: the standard library, pyzmq
and msgpack.
"""

import argparse
import itertools
import json
import logging
import queue
import re
import select
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import msgpack
import zmq

LOG = logging.getLogger("kvledger_vllm.fake_engine")

HEARTBEAT_S = 3.0
CLIENT_CHECK_S = 0.2  # how often a waiting HTTP handler looks whether its client went away
DEFAULT_LAYERS = ("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn")

# ---------------------------------------------------------------- protocol helpers (section 2)

_PREFILL_RE = re.compile(r"___prefill_addr_(.+?)___decode_addr_")
_DECODE_RE = re.compile(r"___decode_addr_(.+)_[0-9a-f]{32}(?:-.*)?$")


def port_offset(dp_rank, tp_rank, tp_size=1):
    """``get_port_offset``: ``dp * tp_size + tp`` (the 2-argument form has ``tp_size`` 1)."""
    return dp_rank * tp_size + tp_rank


def fold_local_rank(rank, size_local):
    return rank % size_local if size_local else rank


def zmq_address(host, handshake_port, notify_port):
    """The MoRIIO ``zmq_address`` string a rank registers and the proxy embeds in request ids."""
    return "host:%s,handshake:%d,notify:%d" % (host, handshake_port, notify_port)


def parse_zmq_address(s):
    """``parse_moriio_zmq_address``: ``(host, handshake_port, notify_port)``; ValueError when malformed."""
    fields = {}
    for seg in s.split(","):
        k, _, v = seg.partition(":")
        fields[k.strip()] = v.strip()
    try:
        return fields["host"], int(fields["handshake"]), int(fields["notify"])
    except (KeyError, ValueError):
        raise ValueError("Malformed zmq_address %r" % s) from None


def peer_from_request_id(request_id, is_producer):
    """``get_peer_zmq_from_request_id``: the peer's (host, handshake, notify), or None."""
    m = (_DECODE_RE if is_producer else _PREFILL_RE).search(request_id)
    return parse_zmq_address(m.group(1)) if m else None


def compose_request_id(prefill_zmq, decode_zmq):
    """The request id the toy proxy builds (protocol 2.3)."""
    return "___prefill_addr_%s___decode_addr_%s_%s" % (prefill_zmq, decode_zmq, uuid.uuid4().hex)


def registration(kind, http_address, zmq_addr, dp_size, tp_size, mode):
    """The registration map a rank sends to the proxy (protocol 3.1)."""
    return {"type": kind, "http_address": http_address, "zmq_address": zmq_addr,
            "dp_size": dp_size, "tp_size": tp_size, "transfer_mode": mode.upper()}


class Heartbeat:
    """Registration every ``interval_s`` on a DEALER to the proxy's ping port, as MoRIIO's world rank 0 does."""

    def __init__(self, endpoint, payload, interval_s=HEARTBEAT_S, ctx=None):
        self._ctx = ctx or zmq.Context.instance()
        self._endpoint = endpoint
        self._frame = msgpack.packb(payload)
        self._interval = interval_s
        self._stop = threading.Event()
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name="fake-engine-heartbeat", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        sock = self._ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDTIMEO, 1000)
        sock.connect(self._endpoint)
        try:
            while not self._stop.is_set():
                try:
                    sock.send(self._frame)
                    self.sent += 1
                except zmq.Again:
                    pass
                self._stop.wait(self._interval)
        finally:
            sock.close()

    def close(self):
        self._stop.set()
        self._thread.join(5)


# ---------------------------------------------------------------- connectors


class BridgeError(RuntimeError):
    pass


class BridgeConnector:
    """The connector's hooks as calls on a kvledger node's engine bridge (one DEALER, synchronous)."""

    def __init__(self, endpoint, kv_role, mode, layers=DEFAULT_LAYERS, timeout_ms=15000, ctx=None):
        self._sock = (ctx or zmq.Context.instance()).socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.RCVTIMEO, timeout_ms)
        self._sock.connect(endpoint)
        self._ids = itertools.count(1)
        self.layers = list(layers)
        self.is_producer = kv_role == "kv_producer"
        self.info = self.call("hello", kv_role=kv_role, mode=mode.lower())

    def call(self, hook, **args):
        rid = next(self._ids)
        self._sock.send(msgpack.packb({"v": 1, "id": rid, "hook": hook, "args": args}))
        while True:
            try:
                reply = msgpack.unpackb(self._sock.recv())
            except zmq.Again:
                raise BridgeError("kvledger node did not answer %s" % hook) from None
            if reply.get("id") == rid:
                break
        if not reply.get("ok"):
            raise BridgeError("kvledger %s: %s" % (hook, reply.get("error")))
        return reply.get("result") or {}

    def add_request(self, req):
        self.call("add_request", request_id=req.id, num_prompt_tokens=req.prompt_tokens,
                  prompt_token_ids_len=req.prompt_tokens, kv_transfer_params=req.params)

    def get_num_new_matched_tokens(self, req, num_computed):
        r = self.call("get_num_new_matched_tokens", request_id=req.id, num_computed_tokens=num_computed)
        return r.get("num_tokens") or 0, bool(r.get("load_async"))

    def update_state_after_alloc(self, req, blocks, num_external):
        self.call("update_state_after_alloc", request_id=req.id, block_ids=[list(blocks)],
                  num_external_tokens=num_external)

    def build_connector_meta(self, step, cached, new_reqs=None, preempted=None):
        """One step: ``cached`` the (id, new blocks) of cached requests, ``new_reqs`` the (request, all its
        blocks, tokens computed before the step) scheduled for the first time, ``preempted`` the ids this
        step preempted (None: not sent)."""
        args = {"step": step}
        if cached:
            args["cached_req_ids"] = [rid for rid, _ in cached]
            args["cached_new_block_ids"] = [[list(b)] for _, b in cached]
        if new_reqs is not None:
            args["scheduled_new_reqs"] = [
                {"request_id": r.id, "block_ids": [list(blocks)], "num_computed_tokens": int(n),
                 "kv_transfer_params": dict(r.params) if r.params is not None else None}
                for r, blocks, n in new_reqs]
        if preempted is not None:
            args["preempted_req_ids"] = sorted(preempted)
        self.call("build_connector_meta", **args)

    def forward(self):
        self.call("start_load_kv")
        for layer in self.layers:
            self.call("save_kv_layer", layer_name=layer)
        self.call("wait_for_save")

    def get_finished(self):
        r = self.call("get_finished")
        return list(r.get("finished_sending") or []), list(r.get("finished_recving") or [])

    def request_finished(self, req, status, blocks):
        r = self.call("request_finished", request_id=req.id, status=status, block_ids=[list(blocks)])
        return bool(r.get("delay_free")), r.get("kv_transfer_params")

    def update_connector_output(self, sending, recving):
        r = self.call("update_connector_output", finished_sending=sending or None, finished_recving=recving or None)
        if "finished_sending" in r:
            return list(r["finished_sending"] or [])
        return None

    def close(self):
        self._sock.close()


class MoriioConnector:
    """A MoRIIO control plane in Python (newest semantics, one rank, no data plane): notify frames only."""

    def __init__(self, kv_role, mode, host, handshake_port, notify_port, bind_host="0.0.0.0", tp_size=1, ctx=None):
        self.is_producer = kv_role == "kv_producer"
        self.write = mode.upper() == "WRITE"
        self.host = host
        self.handshake_port = handshake_port
        self.notify_port = notify_port
        self.tp_rank = 0
        self.dp_rank = 0
        self.tp_size = tp_size
        self.layers = []
        self._ctx = ctx or zmq.Context.instance()
        self._inbox = queue.Queue()
        self._stop = threading.Event()
        self._dealers = {}
        self._router = self._ctx.socket(zmq.ROUTER)
        self._router.setsockopt(zmq.LINGER, 0)
        self._router.setsockopt(zmq.RCVTIMEO, 100)
        self._router.bind("tcp://%s:%d" % (bind_host, notify_port + port_offset(self.dp_rank, self.tp_rank)))
        self._listener = threading.Thread(target=self._listen, name="fake-engine-notify", daemon=True)
        self._listener.start()
        self.tid_to_rid = {}
        self.reqs = {}
        self._staged_saves = {}  # tid -> req (P, WRITE)
        self._remote_allocs = {}  # tid -> (blocks, decode_rank) (P, WRITE)
        self._written = set()  # tids whose prefill forward ran (P, WRITE)
        self._pending_releases = []  # (req) reads done, release due (D, READ)
        self._finished_sending = []
        self._finished_recving = []
        self.frames_received = []  # decoded notifies, for tests and logs
        self.frames_sent = []  # (endpoint, message)

    # -- the notify listener thread (S5)

    def _listen(self):
        while not self._stop.is_set():
            try:
                parts = self._router.recv_multipart()
            except zmq.Again:
                continue
            except zmq.ZMQError:
                break
            if len(parts) != 2:
                LOG.warning("notify %d: a message of %d frames after the identity; Python's listener dies on it",
                            self.notify_port, len(parts) - 1)
                continue
            self._inbox.put(parts[1])

    def _decode(self, payload):
        """The listener's dispatch (protocol 3.3): a typed map, or a raw completion id; None when dropped."""
        try:
            msg = msgpack.unpackb(payload)
        except Exception:
            msg = None
        if isinstance(msg, dict):
            kind = msg.get("type")
            if kind is None and "req_id" in msg:
                kind = "remote_blocks"
            if kind not in ("remote_blocks", "write_done", "release"):
                LOG.error("notify %d: unknown message type %r (MoRIIO's listener would die here)", self.notify_port, kind)
                return None
            return dict(msg, type=kind)
        try:
            return {"type": "completion", "transfer_id": payload.decode("utf-8")}
        except UnicodeDecodeError:
            LOG.error("notify %d: a frame that is neither a msgpack map nor UTF-8: dropped", self.notify_port)
            return None

    def _drain(self):
        while True:
            try:
                payload = self._inbox.get_nowait()
            except queue.Empty:
                return
            msg = self._decode(payload)
            if msg is None:
                continue
            self.frames_received.append(msg)
            tid = msg.get("transfer_id")
            kind = msg["type"]
            if self.is_producer and kind == "remote_blocks":
                if not msg.get("block_notify_list"):
                    LOG.error("remote_blocks for %s with an empty block_notify_list (MoRIIO raises here)", tid)
                    continue
                self._remote_allocs[tid] = (list(msg["block_notify_list"]), int(msg.get("decode_rank", 0)))
            elif self.is_producer and kind in ("release", "completion"):
                self._remote_allocs.pop(tid, None)
                rid = self.tid_to_rid.get(tid)
                if rid is not None and rid not in self._finished_sending:
                    self._finished_sending.append(rid)
            elif not self.is_producer and kind in ("write_done", "completion"):
                rid = self.tid_to_rid.get(tid)
                if rid is not None:
                    self._finished_recving.append(rid)
            else:
                LOG.warning("notify %d: %s is not for a %s rank", self.notify_port, kind,
                            "prefill" if self.is_producer else "decode")

    # -- senders (S6/S7): one cached DEALER per endpoint, used only on the engine thread

    def _send(self, host, port, msg):
        endpoint = "tcp://[%s]:%d" % (host, port) if ":" in host else "tcp://%s:%d" % (host, port)
        s = self._dealers.get(endpoint)
        if s is None:
            s = self._ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.setsockopt(zmq.SNDHWM, 0)
            s.connect(endpoint)
            self._dealers[endpoint] = s
        s.send(msgpack.packb(msg))
        self.frames_sent.append((endpoint, msg))

    def _peer(self, req, is_producer):
        """The peer's (host, notify base): the request id first, then the explicit params (newest)."""
        p = peer_from_request_id(req.id, is_producer)
        if p is not None:
            return p[0], p[2]
        params = req.params or {}
        if params.get("remote_host") and params.get("remote_notify_port") is not None:
            return params["remote_host"], int(params["remote_notify_port"])
        raise ValueError("request %s: no peer address in its id nor in kv_transfer_params" % req.id)

    # -- the hooks

    def add_request(self, req):
        self.reqs[req.id] = req
        if req.transfer_id:
            self.tid_to_rid[req.transfer_id] = req.id

    def get_num_new_matched_tokens(self, req, num_computed):
        p = req.params or {}
        if self.is_producer or not p.get("do_remote_prefill"):
            return 0, False
        if self.write:
            return req.prompt_tokens - num_computed, True
        return max(req.prompt_tokens - num_computed - 1, 0), False

    def update_state_after_alloc(self, req, blocks, num_external):
        p = req.params
        if p is None or not req.transfer_id:
            return
        if self.is_producer:
            if self.write and p.get("do_remote_decode"):
                self._staged_saves[req.transfer_id] = req
            return
        if not p.get("do_remote_prefill"):
            return
        host, notify = self._peer(req, is_producer=False)
        dp = int(p.get("remote_dp_rank", 0) or 0)
        if self.write:
            size_local = p.get("remote_dp_size_local", 0) or 0
            for tp_index in range(self.tp_size):
                self._send(host, notify + port_offset(fold_local_rank(dp, int(size_local)), tp_index),
                           {"type": "remote_blocks", "req_id": req.id, "transfer_id": req.transfer_id,
                            "block_notify_list": list(blocks) if num_external > 0 else [],
                            "decode_rank": self.dp_rank})
        else:
            # the (pretend) reads are done by the end of this step's forward: release then
            self._pending_releases.append(req)
        p["do_remote_prefill"] = False

    def build_connector_meta(self, step, cached, new_reqs=None, preempted=None):
        pass

    def forward(self):
        pass

    def computed(self, req):
        """The engine computed this request's prompt (its KV exists): a WRITE prefill may write it."""
        if self.is_producer and req.transfer_id in self._staged_saves:
            self._written.add(req.transfer_id)

    def get_finished(self):
        self._drain()
        if self.is_producer and self.write:
            for tid in list(self._written):
                alloc = self._remote_allocs.get(tid)
                if alloc is None:
                    continue  # deferred: D has not said where to write yet
                req = self._staged_saves.pop(tid)
                self._written.discard(tid)
                self._remote_allocs.pop(tid, None)
                host, notify = self._peer(req, is_producer=True)
                self._send(host, notify + port_offset(alloc[1], self.tp_rank), {"type": "write_done", "transfer_id": tid})
                self._finished_sending.append(req.id)  # the WRITE self-ACK
        for req in self._pending_releases:
            p = req.params or {}
            host, notify = self._peer(req, is_producer=False)
            remote_tp = int(p.get("remote_tp_size") or p.get("tp_size") or 1)
            self._send(host, notify + port_offset(int(p.get("remote_dp_rank", 0) or 0), 0, remote_tp),
                       {"type": "release", "transfer_id": req.transfer_id, "consumer_tp_size": self.tp_size})
        self._pending_releases = []
        sending, self._finished_sending = self._finished_sending, []
        recving, self._finished_recving = self._finished_recving, []
        return sending, recving

    def request_finished(self, req, status, blocks):
        p = req.params or {}
        if self.is_producer:
            if not p.get("do_remote_decode") or status != "FINISHED_LENGTH_CAPPED":
                return False, None
            params = {"do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": [list(blocks)],
                      "remote_engine_id": "%s:%d" % (self.host, self.handshake_port), "remote_host": self.host,
                      "remote_handshake_port": self.handshake_port, "remote_notify_port": self.notify_port,
                      "remote_dp_rank": self.dp_rank, "remote_dp_rank_override": True, "remote_dp_size": 1,
                      "remote_dp_size_local": 1, "tp_size": self.tp_size, "transfer_id": req.transfer_id}
            return bool(blocks), params
        if p.get("do_remote_prefill") and self.write:
            # aborted before allocation: let P free its blocks
            try:
                host, notify = self._peer(req, is_producer=False)
                for tp_index in range(self.tp_size):
                    self._send(host, notify + port_offset(int(p.get("remote_dp_rank", 0) or 0), tp_index),
                               {"type": "release", "transfer_id": req.transfer_id, "consumer_tp_size": self.tp_size})
            except ValueError:
                pass
        self.tid_to_rid.pop(req.transfer_id, None)
        return False, None

    def update_connector_output(self, sending, recving):
        if not self.is_producer:
            return None
        for rid in sending:
            req = self.reqs.pop(rid, None)
            if req is not None:
                self.tid_to_rid.pop(req.transfer_id, None)
        return list(sending)

    def close(self):
        self._stop.set()
        self._listener.join(2)
        self._router.close()
        for s in self._dealers.values():
            s.close()


# ---------------------------------------------------------------- the engine


class Req:
    def __init__(self, rid, prompt_tokens, max_tokens, params):
        self.id = rid
        self.prompt_tokens = max(1, prompt_tokens)
        self.max_tokens = max(1, max_tokens)
        self.params = dict(params) if isinstance(params, dict) else None
        tid = self.params.get("transfer_id") if self.params else None
        self.transfer_id = tid if isinstance(tid, str) else None
        self.status = "WAITING"
        self.blocks = []
        self.computed = 0
        self.output = 0
        self.external = 0
        self.recv_done = False
        self.preemptions = 0
        self.tokens = queue.Queue()  # generated token texts, then None
        self.done = threading.Event()
        self.finish_reason = None
        self.kv_transfer_params = None
        self.error = None


class FakeEngine:
    """vLLM's scheduler loop on one thread, calling the connector's hooks in vLLM's order each step."""

    def __init__(self, connector, num_blocks=1024, block_size=16, token_budget=512, step_s=0.002, idle_s=0.005):
        self.connector = connector
        self.block_size = block_size
        self.token_budget = token_budget
        self.step_s = step_s
        self.idle_s = idle_s
        self.free = list(range(num_blocks))
        self.requests = {}
        # vLLM's two queues (engine thread only): running in the order scheduled (a preemption takes
        # the last), waiting in the order to schedule (a preempted request goes back to the front)
        self.running = []
        self.waiting = []
        self.preempted = 0
        self.inbox = queue.Queue()
        self._aborts = queue.Queue()  # ids of requests whose client went away
        self.aborted = 0
        self._arrived = []  # taken from the inbox, admitted at the next step (engine thread only)
        self.step_no = 0
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-engine-loop", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def submit(self, req):
        self.inbox.put(req)
        return req

    def held(self):
        return len(self.requests)

    def abort(self, req):
        """The client of ``req`` went away (or its answer's bound passed): the engine thread aborts it
        at its next step, as vLLM's API server aborts a request whose client disconnected."""
        self._aborts.put(req.id)

    def close(self):
        self._stop.set()
        self._thread.join(5)
        while True:
            try:
                self._arrived.append(self.inbox.get_nowait())
            except queue.Empty:
                break
        for r in list(self.requests.values()) + self._arrived:
            if not r.done.is_set():
                r.error = "engine stopped"
                r.tokens.put(None)
                r.done.set()

    def _run(self):
        while not self._stop.is_set():
            if not self.requests and not self._arrived and self._aborts.empty():
                try:
                    self._arrived.append(self.inbox.get(timeout=0.1))
                except queue.Empty:
                    continue
            try:
                self._step()
            except Exception as e:  # a hook failed: say so, fail what it touched, go on
                LOG.exception("engine step failed")
                self.errors.append(str(e))
                for r in list(self.requests.values()):
                    if not r.done.is_set():
                        self._fail(r, "engine step failed: %s" % e)
            busy = any(r.status in ("RUNNING", "WAITING", "PREEMPTED") or r.recv_done for r in self.requests.values())
            time.sleep(self.step_s if busy else self.idle_s)

    def _fail(self, r, why):
        r.error = why
        r.tokens.put(None)
        r.done.set()
        self.free.extend(r.blocks)
        r.blocks = []
        self._forget(r)

    def _forget(self, r):
        self.requests.pop(r.id, None)
        if r in self.running:
            self.running.remove(r)
        if r in self.waiting:
            self.waiting.remove(r)

    def _preempt(self, r):
        """vLLM's ``_preempt_request``: the request's blocks are freed, its computed tokens forgotten, and
        it goes back to the front of the waiting queue (PREEMPTED)."""
        self.free.extend(r.blocks)
        r.blocks = []
        r.status = "PREEMPTED"
        r.computed = 0
        r.preemptions += 1
        self.preempted += 1
        self.waiting.insert(0, r)

    def _grow(self, r, tokens):
        need = -(-tokens // self.block_size) - len(r.blocks)
        if need <= 0:
            return []
        if len(self.free) < need:
            return None
        fresh = [self.free.pop(0) for _ in range(need)]
        r.blocks.extend(fresh)
        return fresh

    def _step(self):
        c = self.connector
        self.step_no += 1
        while True:
            try:
                self._arrived.append(self.inbox.get_nowait())
            except queue.Empty:
                break
        self._abort_requests()
        arrived, self._arrived = self._arrived, []
        for r in arrived:
            if r.id in self.requests:
                r.error = "request %s is already running" % r.id
                r.tokens.put(None)
                r.done.set()
                continue
            self.requests[r.id] = r
            self.waiting.append(r)
            c.add_request(r)
        cached, computed = [], []
        new_reqs, resumed, preempted = [], [], []
        budget = self.token_budget
        # the running requests first (vLLM's scheduler.py): each gets its next chunk or token; when
        # the pool has no block for it, the last running request is preempted (FCFS), until it fits
        # or the request itself was preempted
        i = 0
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            tokens = min(r.prompt_tokens - r.computed, budget) if r.computed < r.prompt_tokens else 1
            while True:
                fresh = self._grow(r, r.computed + tokens)
                if fresh is not None:
                    break
                victim = self.running.pop()
                self._preempt(victim)
                preempted.append(victim)
                if victim is r:
                    break
            if fresh is None:
                break
            if fresh:
                cached.append((r.id, fresh))
            budget -= tokens
            r.computed += tokens
            computed.append(r)
            i += 1
        # then the waiting ones, unless this step preempted: a request whose remote KV arrived comes
        # back WAITING with the tokens it received computed (all but the last on a full hit); a new or
        # preempted one asks the connector first
        for r in list(self.waiting) if not preempted else ():
            if budget <= 0:
                break
            if r.status == "WAITING_FOR_REMOTE_KVS":
                if not r.recv_done:
                    continue
                r.recv_done = False
                r.computed = min(r.external, r.prompt_tokens)
                if r.computed == r.prompt_tokens:
                    r.computed = r.prompt_tokens - 1
                r.status = "PREEMPTED" if r.preemptions else "WAITING"
            ext, load_async = 0, False
            if r.computed == 0:
                if len(self.free) < -(-r.prompt_tokens // self.block_size):
                    break
                ext, load_async = c.get_num_new_matched_tokens(r, 0)
                ext = max(0, ext or 0)
            if load_async and ext > 0:
                r.external = ext
                self._grow(r, r.prompt_tokens)
                c.update_state_after_alloc(r, list(r.blocks), ext)
                r.status = "WAITING_FOR_REMOTE_KVS"
                continue
            before = r.computed if r.computed else ext
            tokens = min(r.prompt_tokens, before + max(1, min(r.prompt_tokens - before, budget)))
            if self._grow(r, r.prompt_tokens) is None:
                break
            if r.computed == 0:
                r.external = ext
            c.update_state_after_alloc(r, list(r.blocks), ext)
            self.waiting.remove(r)
            self.running.append(r)
            if r.status == "PREEMPTED":
                resumed.append((r.id, list(r.blocks)))
            else:
                new_reqs.append((r, list(r.blocks), before))
            r.status = "RUNNING"
            budget -= tokens - before
            r.computed = tokens
            computed.append(r)
        # SchedulerOutput: scheduled_new_reqs as NewRequestData.from_request builds them (all the
        # request's blocks, the tokens computed before this step, its kv_transfer_params); the resumed
        # ones among the cached requests with all their blocks; the preempted ids (a set, never None)
        c.build_connector_meta(self.step_no, cached + resumed, new_reqs=new_reqs,
                               preempted=[r.id for r in preempted])
        c.forward()
        for r in computed:
            if r.computed >= r.prompt_tokens and hasattr(c, "computed"):
                c.computed(r)
        sending, recving = c.get_finished()
        for rid in recving:
            r = self.requests.get(rid)
            if r is not None and r.status == "WAITING_FOR_REMOTE_KVS":
                r.recv_done = True
        for r in computed:
            if r.computed >= r.prompt_tokens and r.status == "RUNNING":
                r.output += 1
                r.tokens.put(" tok%d" % r.output)
                if r.output >= r.max_tokens:
                    self._finish(r, "FINISHED_LENGTH_CAPPED")
        safe = c.update_connector_output(sending, recving)
        for rid in safe or []:
            r = self.requests.get(rid)
            if r is not None and r.status == "HELD":
                self._release(r)

    def _abort_requests(self):
        """Aborts the requests whose client went away: one not admitted yet is dropped; an admitted
        one finishes FINISHED_ABORTED through the connector (its blocks freed, or held while the
        connector defers their free); one already finished is left alone."""
        while True:
            try:
                rid = self._aborts.get_nowait()
            except queue.Empty:
                return
            for r in self._arrived:
                if r.id == rid and not r.done.is_set():
                    self._arrived.remove(r)
                    self.aborted += 1
                    r.error = "aborted: the client went away"
                    r.tokens.put(None)
                    r.done.set()
                    break
            r = self.requests.get(rid)
            if r is not None and not r.done.is_set() and r.status != "HELD":
                self.aborted += 1
                r.error = "aborted: the client went away"
                self._finish(r, "FINISHED_ABORTED")

    def _finish(self, r, status):
        delay_free, params = self.connector.request_finished(r, status, r.blocks)
        if r in self.running:
            self.running.remove(r)
        if r in self.waiting:
            self.waiting.remove(r)
        r.kv_transfer_params = params
        r.finish_reason = "abort" if status == "FINISHED_ABORTED" else "length"
        if delay_free:
            r.status = "HELD"
        else:
            self._release(r)
        r.tokens.put(None)
        r.done.set()

    def _release(self, r):
        self.free.extend(r.blocks)
        r.blocks = []
        self._forget(r)


# ---------------------------------------------------------------- HTTP (OpenAI endpoints)


def _prompt_tokens(body, chat):
    if chat:
        text = " ".join(str(m.get("content", "")) for m in body.get("messages") or [] if isinstance(m, dict))
    else:
        p = body.get("prompt", "")
        if isinstance(p, list):
            if p and all(isinstance(x, int) for x in p):
                return len(p)
            p = " ".join(str(x) for x in p)
        text = str(p)
    return max(1, len(text.split()))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kvledger-fake-engine"

    def log_message(self, fmt, *args):
        LOG.debug("http: " + fmt, *args)

    def _json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code, message):
        self._json(code, {"error": {"message": message, "type": "BadRequestError" if code == 400 else "ServerError",
                                    "code": code}})

    def do_GET(self):
        app = self.server.app
        if self.path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": app.model, "object": "model", "owned_by": "kvledger"}]})
        else:
            self._error(404, "no route %s" % self.path)

    def do_POST(self):
        app = self.server.app
        path = self.path.split("?", 1)[0]
        if path not in ("/v1/completions", "/v1/chat/completions"):
            self._read_body()
            if path in ("/start_profile", "/stop_profile"):
                self._json(200, {})
            else:
                self._error(404, "no route %s" % path)
            return
        chat = path == "/v1/chat/completions"
        try:
            body = json.loads(self._read_body() or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as e:
            self._error(400, "bad JSON body: %s" % e)
            return
        max_tokens = body.get("max_completion_tokens")
        if max_tokens is None:
            max_tokens = body.get("max_tokens", 16)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            self._error(400, "max_tokens must be a positive integer")
            return
        params = body.get("kv_transfer_params")
        if params is not None and not isinstance(params, dict):
            self._error(400, "kv_transfer_params must be an object")
            return
        external_id = self.headers.get("X-Request-Id") or uuid.uuid4().hex
        prefix = "chatcmpl-" if chat else "cmpl-"
        # vLLM wraps the client's id: prefix, then "-0-" and 8 hex of its own
        req = Req("%s%s-0-%s" % (prefix, external_id, uuid.uuid4().hex[:8]), _prompt_tokens(body, chat), max_tokens, params)
        try:
            engine = app.engine_for(self.headers.get("X-data-parallel-rank"))
        except ValueError as e:
            self._error(400, str(e))
            return
        engine.submit(req)
        created = int(time.time())
        rid = prefix + external_id
        if body.get("stream"):
            try:
                self._stream(app, engine, req, rid, created, chat)
            except (BrokenPipeError, ConnectionResetError):
                # the client went away mid-stream: abort its request
                engine.abort(req)
                self.close_connection = True
            return
        outcome = self._await_done(engine, req, app.request_timeout_s)
        if outcome == "gone":
            return
        if outcome == "late":
            self._error(504, "the engine did not finish %s within %s s (aborted)" % (req.id, app.request_timeout_s))
            return
        if req.error:
            self._error(500, req.error)
            return
        text = "".join(self._all_tokens(req))
        usage = {"prompt_tokens": req.prompt_tokens, "completion_tokens": req.output,
                 "total_tokens": req.prompt_tokens + req.output}
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": req.finish_reason}
            obj = {"id": rid, "object": "chat.completion", "created": created, "model": app.model, "choices": [choice]}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": req.finish_reason}
            obj = {"id": rid, "object": "text_completion", "created": created, "model": app.model, "choices": [choice]}
        obj["usage"] = usage
        obj["kv_transfer_params"] = req.kv_transfer_params
        self._json(200, obj)

    def _client_gone(self):
        """Whether the client closed its connection (a readable socket with nothing to read: EOF)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _await_done(self, engine, req, timeout_s):
        """Waits for ``req`` to finish; "done", or "gone" / "late" (the client went away, the bound
        passed), in which cases the request is aborted in the engine."""
        deadline = time.monotonic() + timeout_s
        while not req.done.wait(min(CLIENT_CHECK_S, max(0.0, deadline - time.monotonic()))):
            if self._client_gone():
                engine.abort(req)
                self.close_connection = True
                return "gone"
            if time.monotonic() >= deadline:
                engine.abort(req)
                return "late"
        return "done"

    def _read_body(self):
        """The request body, by Content-Length or chunked (as uvicorn takes both; a proxy may stream it)."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    @staticmethod
    def _all_tokens(req):
        out = []
        while True:
            t = req.tokens.get()
            if t is None:
                return out
            out.append(t)

    def _stream(self, app, engine, req, rid, created, chat):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        kind = "chat.completion.chunk" if chat else "text_completion"

        def chunk(obj):
            data = ("data: %s\n\n" % json.dumps(obj)).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        deadline = time.monotonic() + app.request_timeout_s
        first = True
        while True:
            try:
                t = req.tokens.get(timeout=max(0.01, min(CLIENT_CHECK_S, deadline - time.monotonic())))
            except queue.Empty:
                if self._client_gone():
                    engine.abort(req)
                    self.close_connection = True
                    return
                if time.monotonic() < deadline:
                    continue
                engine.abort(req)
                chunk({"error": {"message": "the engine did not finish %s in time (aborted)" % req.id, "code": 504}})
                break
            if t is None:
                if req.error:
                    chunk({"error": {"message": req.error, "code": 500}})
                else:
                    end = {"index": 0, "finish_reason": req.finish_reason}
                    if chat:
                        end["delta"] = {}
                    else:
                        end.update(text="", logprobs=None)
                    chunk({"id": rid, "object": kind, "created": created, "model": app.model, "choices": [end]})
                break
            if chat:
                delta = {"content": t}
                if first:
                    delta["role"] = "assistant"
                choice = {"index": 0, "delta": delta, "finish_reason": None}
            else:
                choice = {"index": 0, "text": t, "logprobs": None, "finish_reason": None}
            first = False
            chunk({"id": rid, "object": kind, "created": created, "model": app.model, "choices": [choice]})
        data = b"data: [DONE]\n\n"
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
        self.wfile.flush()


class FakeEngineApp:
    """One fake engine: connector, scheduler loop, HTTP server and (optionally) registration heartbeats."""

    def __init__(self, role, mode, host="127.0.0.1", http_port=0, handshake_port=6301, notify_port=61005,
                 proxy=None, bridge=None, bind_host="0.0.0.0", model="kvledger-fake", heartbeat_s=HEARTBEAT_S,
                 layers=DEFAULT_LAYERS, request_timeout_s=120.0, tp_size=1, dp_size=1):
        if role not in ("prefill", "decode"):
            raise ValueError("role must be prefill or decode, got %r" % role)
        if mode.upper() not in ("READ", "WRITE"):
            raise ValueError("mode must be read or write, got %r" % mode)
        self.role = role
        self.mode = mode.upper()
        self.model = model
        self.request_timeout_s = request_timeout_s
        kv_role = "kv_producer" if role == "prefill" else "kv_consumer"
        bridges = [b for b in (bridge if isinstance(bridge, (list, tuple)) else [bridge] if bridge else []) if b]
        if dp_size < 1:
            raise ValueError("dp_size must be at least 1, got %r" % dp_size)
        if dp_size > 1 and len(bridges) != dp_size:
            raise ValueError("--dp-size %d needs one --bridge per DP rank (one kvledger node --dp R/%d each), got %d"
                             % (dp_size, dp_size, len(bridges)))
        if dp_size == 1 and len(bridges) > 1:
            raise ValueError("%d bridges for one DP rank: give --dp-size" % len(bridges))
        self.dp_size = dp_size
        # DP ranks behind one API server, as vLLM runs them: one engine (and connector) per rank; the
        # proxy names the rank of a request in X-data-parallel-rank; only rank 0 registers
        if bridges:
            self.connectors = [BridgeConnector(b, kv_role, self.mode, layers) for b in bridges]
        else:
            self.connectors = [MoriioConnector(kv_role, self.mode, host, handshake_port, notify_port, bind_host, tp_size)]
        self.connector = self.connectors[0]
        self.engines = [FakeEngine(c).start() for c in self.connectors]
        self.engine = self.engines[0]
        self.http = ThreadingHTTPServer((bind_host if bind_host != "0.0.0.0" else "", http_port), _Handler)
        self.http.daemon_threads = True
        self.http.app = self
        self.http_port = self.http.server_address[1]
        self.http_address = "%s:%d" % (host, self.http_port)
        self.zmq_address = zmq_address(host, handshake_port, notify_port)
        self._http_thread = threading.Thread(target=self.http.serve_forever, name="fake-engine-http", daemon=True)
        self._http_thread.start()
        self.heartbeat = None
        if proxy:
            self.heartbeat = Heartbeat(proxy, registration("P" if role == "prefill" else "D", self.http_address,
                                                           self.zmq_address, dp_size, tp_size, self.mode),
                                       heartbeat_s).start()

    def close(self):
        if self.heartbeat:
            self.heartbeat.close()
        self.http.shutdown()
        self.http.server_close()
        for e in self.engines:
            e.close()
        for c in self.connectors:
            c.close()

    def engine_for(self, dp_header):
        """The engine of the DP rank a request names (X-data-parallel-rank), rank 0 when it names none."""
        if dp_header is None or dp_header == "":
            return self.engines[0]
        try:
            rank = int(dp_header)
        except ValueError:
            raise ValueError("X-data-parallel-rank must be an integer, got %r" % dp_header) from None
        if not 0 <= rank < len(self.engines):
            raise ValueError("X-data-parallel-rank %d is not a rank of this engine (DP size %d)" % (rank, len(self.engines)))
        return self.engines[rank]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m kvledger_vllm.fake_engine",
                                 description="A fake vLLM MoRIIO engine rank for kvledger's live demo.")
    ap.add_argument("--role", required=True, choices=["prefill", "decode"])
    ap.add_argument("--mode", default="write", choices=["read", "write"])
    ap.add_argument("--host", default="127.0.0.1", help="the IP this rank advertises (default %(default)s)")
    ap.add_argument("--bind-host", default="0.0.0.0", help="where HTTP and the notify ROUTER bind (default %(default)s)")
    ap.add_argument("--http-port", type=int, default=8100)
    ap.add_argument("--handshake-port", type=int, default=6301, help="registered handshake base port")
    ap.add_argument("--notify-port", type=int, default=61005, help="notify base port (bound unless --bridge)")
    ap.add_argument("--proxy", metavar="tcp://HOST:PORT", help="register with this proxy ping ROUTER every 3 s")
    ap.add_argument("--bridge", metavar="tcp://127.0.0.1:PORT", action="append",
                    help="call the hooks on this kvledger node's engine bridge (the node then owns the MoRIIO ports)")
    ap.add_argument("--dp-size", type=int, default=1,
                    help="DP ranks behind this API server (default 1); each needs its --bridge, in rank order, to a "
                         "kvledger node --dp R/SIZE; requests go to the rank in X-data-parallel-rank; rank 0 registers")
    ap.add_argument("--model", default="kvledger-fake")
    ap.add_argument("--layers", default=",".join(DEFAULT_LAYERS), help="layer names of save_kv_layer (bridge)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if a.verbose else logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        app = FakeEngineApp(a.role, a.mode, a.host, a.http_port, a.handshake_port, a.notify_port, a.proxy, a.bridge,
                            a.bind_host, a.model, layers=[x for x in a.layers.split(",") if x], dp_size=a.dp_size)
    except (OSError, zmq.ZMQError, BridgeError, ValueError) as e:
        print("fake_engine: cannot start: %s" % e, file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print("fake_engine: %s %s ready: http://%s zmq_address %s%s%s" % (
        a.role, app.mode, app.http_address, app.zmq_address,
        "; hooks to the node(s) at " + ", ".join(a.bridge) if a.bridge else "; notify ROUTER bound",
        "; registering with " + a.proxy if a.proxy else ""), file=sys.stderr, flush=True)
    stop.wait()
    app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The drive mode's client: scheduler hook calls answered by a kvledger node over the engine bridge.

``kvledger node --engine drive --bridge tcp://127.0.0.1:PORT`` serves the engine bridge protocol
(docs/bridge-protocol.md): one msgpack map per frame on a DEALER,
``{"v": 1, "id", "hook", "args"}`` answered ``{"v": 1, "id", "ok", "result"|"error"}``. This module
holds the client the recorder's scheduler connector uses when ``drive_node`` is set: ``call`` waits
for the node's answer (the hooks whose answer vLLM acts on), ``send`` does not (the hooks whose
answer vLLM ignores). Both go out in call order on the one DEALER, so the node applies them in the
order vLLM made them; the replies of sent calls are read later, on the way to a ``call``'s own
reply, or when ``send`` finds them already there, or at ``flush``. With ``batching`` (a node whose
``hello`` lists ``batch``), sent calls wait in a buffer and go out as one ``batch`` frame together
with the next awaited call, or when a send says ``flush`` (the end of a scheduler pass) and a call
that is not ``quiet`` waits (a ``quiet`` one, e.g. a step with nothing scheduled, may wait for a later
frame, for at most ``max_hold_ns``: an idle step then sends nothing and wakes no one. The node stamps
a call when it reads it: a held call's stamp is at most that much later, as a batch's calls'); the node still applies and journals each call on its own, in order. With ``compact`` (a node whose ``hello``
also lists ``compact``), a batch's admissions, queries, allocations and steps go as arrays by
position (``send_row``, ``COMPACT``), and its empty answers come back as ids alone. With ``derived``
(a node whose ``hello`` lists ``derived``) a step's new request may go as ``[request_id,
num_computed_tokens]`` when its block ids and params are those of its allocation and admission
earlier in the same batch (``allocated``, ``admitted``; ``long_forms``). pyzmq and
msgpack are imported when it is built. ``unix:///PATH`` (``--bridge unix:///PATH`` on the node) speaks the same maps over a Unix domain socket, each frame preceded by its length
(4 bytes, big-endian): one thread fewer each way than ZMQ over loopback TCP. ``ipc:///PATH``
(``--bridge ipc:///PATH``) is the DEALER of ``tcp://`` over a Unix socket (libzmq's ipc).
"""

from __future__ import annotations

import collections
import gc
import itertools
import operator
import queue
import select
import socket
import struct
import sys
import threading
import time


class DriveError(RuntimeError):
    """The node answered ``ok: False``, or did not answer in time."""


_THREE = object()  # NodeBridge.add_row: a row of three fields


class NodeBridge:
    """One DEALER to a kvledger node's engine bridge, used from one thread (the scheduler's).

    ``on_failure(hook, error)`` is called for a sent (unawaited) call the node answered
    ``ok: False``, that could not be sent, or whose reply never came (given up at ``flush`` or when
    more than ``max_unread`` wait); ``call`` raises ``DriveError`` instead.
    """

    #: how long quiet calls may wait for a later frame (an instance may set its own; 0: never)
    max_hold_ns = 250_000_000
    # the sender thread (``start_sender``): off until started
    _threaded = False
    sender_ident = None
    #: with ``agreed``, ask for the brief form too (the node lists ``brief``): its metadata for the
    #: worker, ``build_connector_meta``'s answer, left out (set by the connector, ``drive_brief``)
    brief = False
    #: a hand-off the sender thread has not started by the scheduler thread's next use of the bridge is
    #: run by the scheduler thread (False: it always waits for the sender)
    reclaim = True
    _reclaiming = False
    #: the sender thread's naps between looks for a hand-off, for ``nap_for_ns`` after its last work
    #: (``_sender_loop``; 0: it always waits in the queue, and each hand-off wakes it). Napping costs the
    #: sender ~3 % of a core (1 ms naps, measured on a 2-core VM) while steps come; none after a pause
    nap_s = 0.001
    nap_for_ns = 200_000_000
    #: in its naps, the sender thread runs Python's young collection once half due (``gc.get_count()`` at
    #: half the first threshold; never with the collector disabled), while vLLM's scheduler thread waits
    #: (the GPU, its worker): left to the allocations, it lands in whatever step crosses the threshold,
    #: a step with nothing scheduled too, and a burst's young objects make it 200-700 us
    collect_young = True
    captured = None

    def __init__(self, endpoint, timeout_ms=5000, on_failure=None, max_unread=4096):
        import msgpack
        import zmq
        self._zmq = zmq
        self._msgpack = msgpack
        # one packer for every frame: its buffer is kept from frame to frame (``packb`` makes a new
        # one each time, whose pages a batch of hundreds of calls faults in anew); the same bytes
        packer = msgpack.Packer()
        self._packb = packer.pack
        self._array_header = packer.pack_array_header
        self.endpoint = endpoint
        self._timeout_ms = int(timeout_ms)
        # a DEALER reconnects on its own: its connections counted (``reconnected``); a Unix socket never does
        self._monitor = None
        self._connects = 0
        if endpoint.startswith("unix://"):
            self._ctx = None
            self._sock = _UnixFrames(endpoint[len("unix://"):], timeout_ms, zmq.Again, zmq.DONTWAIT)
        else:
            self._ctx = zmq.Context(1)
            s = self._ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.setsockopt(zmq.RCVTIMEO, self._timeout_ms)
            s.setsockopt(zmq.SNDTIMEO, self._timeout_ms)
            try:
                self._monitor = s.get_monitor_socket(zmq.EVENT_CONNECTED)
                self._monitor.setsockopt(zmq.LINGER, 0)
            except zmq.ZMQError:
                self._monitor = None
            s.connect(endpoint)
            self._sock = s
        self._ids = itertools.count(1)
        # sent calls whose reply has not been read: id -> (hook, on_result), in send order
        self._unread = {}
        # batches sent whose reply has not been read: batch id -> the ids of its calls
        self._batches = {}
        # calls not sent yet (batching): (id, hook), in order, those of _longs included (a batch
        # frame's ``calls`` are the bytes of _chunks: nothing of a packed call is kept but its id and hook)
        self._buffer = []
        # long-form calls not packed yet: ``{"id", "hook", "args"}``, the last ones in _buffer; packed
        # together (``_pack_longs``) a few dozen at a time, when a compact call follows them or the
        # batch goes out (not one by one into a shared packer: msgpack empties its whole buffer when
        # a pack fails, and the calls packed before would be lost)
        self._longs = []
        # compact calls not packed yet (``send_row``): ``(id, hook, *fields)``, after those in _buffer;
        # packed as one array when the batch goes out or a long-form call follows them
        self._rows = []
        # the batch's bytes so far, in order: arrays of packed calls without their headers, or one
        # call's map (a long-form call alone between compact ones, or an awaited call)
        self._chunks = []
        self.batching = False
        # a call not sent ``quiet`` waits in the buffer: a flush sends it (else quiet calls alone wait,
        # since _held_at on the monotonic clock, for at most max_hold_ns)
        self._loud = False
        self._held_at = None
        # batched calls of the hooks in COMPACT may go as arrays (``send_row``): a node whose hello lists "compact"
        self.compact = False
        # a step's new requests may name their allocation and admission in the same batch (``derived``):
        # request id -> the block ids / params of its compact update_state_after_alloc / add_request
        # row in the batch being built (the objects in those rows); emptied when a frame goes out
        self.derived = False
        self.allocated = {}
        self.admitted = {}
        # a step's cached ids may go as the number of the previous step when they are its ids, and its
        # new block ids by index (``steady``: a node whose hello lists it). What the node remembers of
        # this connection: the ids of the last step sent and its number (``steady_ids`` None: the next
        # step's go in full; set so after any failure, a refused call or one not sent)
        self.steady = False
        self.steady_ids = None
        self.steady_step = None
        self.steady_numbers = 0  # steps whose ids went as the previous step's number
        # ``agreed`` (a node whose hello lists it, batching): a batch asks the node to leave out of its
        # reply each call's answer that is empty, or equal to the ``acted`` the call carries. A call
        # carrying ``acted`` is sent with ``on_result`` a triple ``(on_result, on_agreed, item)``:
        # ``on_result`` takes the node's answer when it comes in full (a divergence, an older node);
        # when the node leaves it out, ``on_agreed(items)`` is called once for a run of such calls of
        # the batch (the ``item`` of each, in order; ``on_agreed`` None: nothing to do). Per batch being
        # built: the runs ``[(on_agreed, [item, ...]), ...]``, the ids of calls without ``acted`` that
        # have an ``on_result`` (called with ``{}`` when their empty answer is left out), and whether
        # a call failed on the way (then the batch is settled call by call). A call carrying ``acted``
        # may also be sent (agreed or not) with ``on_result`` a quadruple ``(check, on_agreed, item,
        # arg)``: its answer in full goes to ``check(arg, result)`` (no function object made per call)
        self.agreed = False
        self.left_out = 0  # answers agreed-form replies left out (empty, or the ones acted on)
        self._runs = []
        self._cbs = []
        self._dirty = False
        # batches sent asking for the agreed form: batch id -> (runs, cbs, dirty)
        self._agreeing = {}
        self.batches = 0
        # a batch holds at most this many calls (each counts against the node's 4096 in flight)
        self.max_batch = 1024
        self._max_unread = int(max_unread)
        self._on_failure = on_failure
        self.calls = 0
        self.sent = 0
        self.failures = 0

    def _pack(self, rid, hook, args):
        return self._packb({"v": 1, "id": rid, "hook": hook, "args": args})

    def call(self, hook, **args):
        """Sends one hook call and returns the node's ``result``; raises DriveError otherwise.

        Replies to earlier sent calls read on the way are settled (``on_result``, ``on_failure``)."""
        return self.call_args(hook, args)

    def call_args(self, hook, args):
        """``call`` with the arguments as one dict (sent as it is: the caller does not change it later)."""
        if self._threaded:
            self._scheduler_side()
        rid = next(self._ids)
        self.calls += 1
        wait_for = rid
        try:
            if self._buffer or self._rows:
                try:
                    packed = self._packb({"id": rid, "hook": hook, "args": args})
                except (TypeError, ValueError, OverflowError) as e:
                    # the buffered calls stay: they go out with the next call
                    raise DriveError(f"kvledger node {hook}: cannot pack the call: {e}") from e
                if self._rows:
                    self._pack_rows()
                elif self._longs:
                    self._pack_longs()
                self._chunks.append(packed)
                self._buffer.append((rid, hook))
                wait_for = self._send_buffer(0)
            else:
                self._sent_frame()
                self._sock.send(self._pack(rid, hook, args))
            while True:
                reply = self._msgpack.unpackb(self._sock.recv())
                if not isinstance(reply, dict):
                    continue
                got = reply.get("id")
                if got != wait_for:
                    self._settle(got, reply)  # a sent call's reply, or a late one to a call that timed out
                    continue
                if wait_for != rid:
                    reply = self._settle_batch(got, reply, rid)
                if not reply.get("ok"):
                    raise DriveError(f"kvledger node {hook}: {reply.get('error')}")
                return reply.get("result") or {}
        except self._zmq.Again as e:
            raise DriveError(f"kvledger node at {self.endpoint} did not answer {hook} in time") from e

    def send(self, hook, on_result=None, flush=False, **args):
        """Sends one hook call without waiting for its answer; ``on_result(result)`` when it is read.

        With ``batching`` the call waits in the buffer for the next awaited call, or goes out now
        with the buffer when ``flush`` (or when ``max_batch`` calls wait in it)."""
        self.send_args(hook, args, on_result, flush)

    def send_args(self, hook, args, on_result=None, flush=False, quiet=False):
        """``send`` with the arguments as one dict, kept as it is until it is packed (at the latest
        when the batch goes out): the caller does not change it later. No copy per call.

        ``quiet`` (with ``batching``): the call may wait past a ``flush`` for a later frame; a
        ``flush`` then sends the buffer only when a call sent without ``quiet`` waits in it."""
        if self._threaded:
            self._scheduler_side()
        rid = next(self._ids)
        self.sent += 1
        self._unread[rid] = (hook, on_result)
        if self.batching:
            if not quiet:
                self._loud = True
            if on_result is not None and self.agreed:
                if type(on_result) is not tuple:
                    self._cbs.append((rid, on_result))
                elif on_result[1] is not None:
                    self._agreeing_call(on_result)
            if self._rows:
                self._pack_rows()
            self._buffer.append((rid, hook))
            longs = self._longs
            longs.append({"id": rid, "hook": hook, "args": args})
            if len(longs) >= _ROWS_PACKED_AT:
                self._pack_longs()
            if not (flush and (self._loud or self._held_long())) and len(self._buffer) < self.max_batch:
                # (a quiet call waits unpacked, as one call: the next row packs it, on the sender thread
                # when the next step is handed off, or the frame does; at most _ROWS_PACKED_AT of them)
                if flush:  # held (quiet calls alone): the replies already here of the calls sent before
                    self._poll_sent()
                return  # nothing went out
            try:
                self._send_buffer(self._zmq.DONTWAIT)
            except self._zmq.Again:
                pass  # each call counted as a failure
        else:
            try:
                self._sock.send(self._pack(rid, hook, args), self._zmq.DONTWAIT)
            except self._zmq.Again:
                del self._unread[rid]
                self._failed(hook, "the node's queue is full: the call was not sent")
                return
        if len(self._unread) > self._max_unread:
            old = next(iter(self._unread))
            self._failed(self._unread.pop(old)[0], f"no answer among the last {self._max_unread} calls sent")
        self.poll()

    def add_row(self, entry, a, b, c, d=_THREE):
        """``send_row(hook, (a, b, c[, d]), on_result)`` for ``entry = (hook, on_result)`` (kept as it is
        until the reply is read: a constant where there is no ``on_result``), not ``flush``, not
        ``quiet``: the per-request hooks' path, the call's array made at once (no tuple of the fields
        first: fewer objects for Python's collector), with nothing to decide but the batch's size."""
        rid = next(self._ids)
        self.sent += 1
        self._unread[rid] = entry
        self._loud = True
        if self._longs:
            self._pack_longs()
        rows = self._rows
        rows.append((rid, entry[0], a, b, c) if d is _THREE else (rid, entry[0], a, b, c, d))
        if len(rows) >= _ROWS_PACKED_AT:
            self._pack_rows()
        if len(self._rows) + len(self._buffer) >= self.max_batch:
            self._send_rows()

    def _send_rows(self):
        """``send_row``'s batch going out (``max_batch`` calls wait, or the end of a step)."""
        try:
            self._send_buffer(self._zmq.DONTWAIT)
        except self._zmq.Again:
            pass  # each call counted as a failure
        if len(self._unread) > self._max_unread:
            old = next(iter(self._unread))
            self._failed(self._unread.pop(old)[0], f"no answer among the last {self._max_unread} calls sent")
        self.poll()

    def send_row(self, hook, row, on_result=None, flush=False, quiet=False):
        """``send_args`` in the compact form (``compact``: a node whose ``hello`` lists it, batching):
        the call goes into the batch as the array ``[id, hook, *row]``, ``row`` holding the hook's
        arguments by position (``COMPACT``). No dict per call, no key strings, and no packing per
        call: the rows are packed together when the batch goes out (or a long-form call follows
        them), so ``row`` must hold nothing the caller changes later (the caller copies what might be).
        ``quiet`` as for ``send_args``."""
        if self._threaded:
            self._scheduler_side()
        rid = next(self._ids)
        self.sent += 1
        self._unread[rid] = (hook, on_result)
        if not quiet:
            self._loud = True
        if on_result is not None and self.agreed:  # (a call carrying acted with nothing to do if agreeing: nothing)
            if type(on_result) is not tuple:
                self._cbs.append((rid, on_result))
            elif on_result[1] is not None:
                self._agreeing_call(on_result)
        if self._longs:
            self._pack_longs()
        rows = self._rows
        rows.append((rid, hook, *row))
        if len(rows) >= _ROWS_PACKED_AT:
            # packed a few dozen at a time: few objects outlive their hook (the collector's young
            # generation would otherwise fill with a burst's rows and scan them again and again)
            self._pack_rows()
        if not flush:  # a call in the middle of a step: out only when max_batch calls wait
            if len(self._rows) + len(self._buffer) >= self.max_batch:
                self._send_rows()
        elif self._loud or self._held_long() or len(self._rows) + len(self._buffer) >= self.max_batch:
            self._send_rows()
        else:  # held (quiet calls alone): the replies already here of the calls sent before
            self._poll_sent()

    def _agreeing_call(self, on_result):
        """A batched call carrying ``acted`` whose agreement has something to do (``agreed``): its item
        joins the batch's last run when that run's ``on_agreed`` is its own, else starts a run."""
        on_agreed = on_result[1]
        runs = self._runs
        if runs and runs[-1][0] is on_agreed:
            runs[-1][1].append(on_result[2])
        else:
            runs.append((on_agreed, [on_result[2]]))

    def _pack_rows(self):
        """Packs the waiting compact rows as one array (its header left out of the frame) after the
        long-form calls packed so far. A row msgpack cannot pack (an int past 64 bits) fails alone."""
        rows, self._rows = self._rows, []
        try:
            packed = self._packb(rows)
        except (TypeError, ValueError, OverflowError):
            packed, rows = self._pack_alone(rows, _ID_AND_HOOK)
        if not rows:
            return
        n = len(rows)
        self._chunks.append(memoryview(packed)[1 if n < 16 else 3 if n < 0x10000 else 5:])
        self._buffer.extend(map(_ID_AND_HOOK, rows))

    def _pack_alone(self, calls, id_and_hook):
        """Packs each call on its own after msgpack refused them together: one it cannot pack fails
        alone (counted as its hook's failure). Gives the others as one array and the calls in it."""
        packed, good = [], []
        for call in calls:
            try:
                packed.append(self._packb(call))
                good.append(call)
            except (TypeError, ValueError, OverflowError) as e:
                rid, hook = id_and_hook(call)
                self._dirty = True  # its run item stays: the batch is settled call by call
                if self._unread.pop(rid, None) is not None:
                    self._failed(hook, f"cannot pack the call: {e}")
        return self._array_header(len(good)) + b"".join(packed), good

    def _pack_longs(self):
        """Packs the waiting long-form calls as one array (its header left out of the frame) after the
        calls packed so far. A call msgpack cannot pack (an int past 64 bits, an object it has no form
        for) fails alone; the others go out in order."""
        longs, self._longs = self._longs, []
        try:
            if len(longs) == 1:  # one between compact calls: its map alone
                self._chunks.append(self._packb(longs[0]))
                return
            packed = self._packb(longs)
        except (TypeError, ValueError, OverflowError):
            packed, good = self._pack_alone(longs, _CALL_ID_AND_HOOK)
            self._buffer[len(self._buffer) - len(longs):] = map(_CALL_ID_AND_HOOK, good)
            longs = good
        if not longs:
            return
        n = len(longs)
        self._chunks.append(memoryview(packed)[1 if n < 16 else 3 if n < 0x10000 else 5:])

    def _send_buffer(self, flags):
        """Sends the buffered calls: one alone as itself, more as one batch. Returns the id to wait for
        (None: nothing went out, each call failed)."""
        wait_for = None
        runs, cbs, dirty = self._runs, self._cbs, self._dirty
        if runs or cbs or dirty:
            self._runs, self._cbs, self._dirty = [], [], False
        if self._rows:
            self._pack_rows()
            dirty |= self._dirty
        elif len(self._longs) == 1 and not self._chunks and not (runs or cbs):
            # the call as itself: {"v": 1, "id", "hook", "args"}, its packed map with "v" first (one whose
            # answer may be left out, ``agreed``, goes as a batch of one: a node answers a lone call in full,
            # e.g. the 256 ids of a burst's update_connector_output, unpacked and compared for nothing)
            (call,), self._longs = self._longs, []
            buf, self._buffer = self._buffer, []
            wait_for = call["id"]
            try:
                packed = self._packb(call)
            except (TypeError, ValueError, OverflowError) as e:
                if self._unread.pop(wait_for, None) is not None:
                    self._failed(call["hook"], f"cannot pack the call: {e}")
                return None
            frame = b"".join((_ONE_CALL, memoryview(packed)[1:]))
        elif self._longs:
            self._pack_longs()
        if wait_for is None:
            buf, self._buffer = self._buffer, []
            chunks, self._chunks = self._chunks, []
            if not buf:
                return None  # each call failed (could not be packed)
            # {"v": 1, "id", "hook": "batch", "args": {"calls": [...]}}: the list's header, then the
            # calls as packed (what packing the whole map at once gives, byte for byte), without
            # the headers of the arrays they were packed in (a compact call alone goes as a batch of one)
            wait_for = next(self._ids)
            if self.agreed:  # ("calls" last: the packed empty list is the last byte)
                head = self._packb({"v": 1, "id": wait_for, "hook": "batch", "args": (
                    {"agreed": True, "brief": True, "calls": []} if self.brief else {"agreed": True, "calls": []})})[:-1]
                self._agreeing[wait_for] = (runs, cbs, dirty or self._dirty)
                self._dirty = False
            else:
                head = self._packb({"v": 1, "id": wait_for, "hook": "batch", "args": {"calls": []}})[:-1]
            frame = b"".join((head, self._array_header(len(buf)), *chunks))
            self._batches[wait_for] = list(map(_FIRST, buf))
            self.batches += 1
        self._sent_frame()
        try:
            self._sock.send(frame, flags)
        except self._zmq.Again:
            self._batches.pop(wait_for, None)
            self._agreeing.pop(wait_for, None)
            for rid, hook in buf:
                if self._unread.pop(rid, None) is not None:
                    self._failed(hook, "the node's queue is full: the call was not sent")
            raise
        return wait_for

    def _sent_frame(self):
        """A frame goes out: what the next batch's new requests may name starts empty again, and the
        buffer holds no call that is not quiet."""
        self._loud = False
        self._held_at = None
        if self.allocated:
            self.allocated.clear()
        if self.admitted:
            self.admitted.clear()

    @property
    def unread(self):
        """Sent (or buffered) calls whose reply has not been read yet (captured ones too, with the sender thread)."""
        if self._threaded:
            self._scheduler_side()
        return len(self._unread)

    def poll(self):
        """Reads the replies already here, without waiting."""
        if self._threaded:
            self._scheduler_side()
        zmq = self._zmq
        while self._unread:
            try:
                raw = self._sock.recv(zmq.DONTWAIT)
            except zmq.Again:
                return
            reply = self._msgpack.unpackb(raw)
            if isinstance(reply, dict):
                self._settle(reply.get("id"), reply)

    def _held_long(self):
        """At a quiet flush: whether quiet calls have waited ``max_hold_ns`` (then they go out)."""
        now = time.monotonic_ns()
        if self._held_at is None:
            self._held_at = now
        return now - self._held_at >= self.max_hold_ns

    def holding_due(self):
        """Whether quiet calls have waited in the buffer ``max_hold_ns``: the next flush sends them."""
        return self._held_at is not None and time.monotonic_ns() - self._held_at >= self.max_hold_ns

    def _sent_unread(self):
        """Whether a call sent (not one in the buffer) is unread."""
        return len(self._unread) > len(self._buffer) + len(self._rows)

    def _sender_naps_on(self):
        """Whether the sender thread naps for at least ``_AWAKE_MARGIN_NS`` more (it frees and reads in its naps)."""
        return time.monotonic_ns() < self._awake_until - _AWAKE_MARGIN_NS

    def _poll_sent(self):
        """``poll`` when a call sent (not one in the buffer) is unread: no system call otherwise. Left to a
        napping sender thread on the scheduler thread (it reads them in its naps: ``_read_while_free``)."""
        if self._sent_unread():
            if self._threaded and self._sender_naps_on() and threading.get_ident() != self.sender_ident:
                return
            self.poll()

    def flush(self, timeout_ms=None):
        """Reads the replies of every sent call, waiting up to ``timeout_ms`` (default: the call
        timeout) for each; what does not come is given up (``on_failure``). Returns how many were given up."""
        if self._threaded:
            self._scheduler_side()
        zmq = self._zmq
        wait = self._timeout_ms if timeout_ms is None else int(timeout_ms)
        if self._buffer or self._rows:
            try:
                self._send_buffer(zmq.DONTWAIT)
            except zmq.Again:
                pass  # counted as failures
        while self._unread:
            if not self._sock.poll(wait, zmq.POLLIN):
                lost = list(self._unread.values())
                self._unread.clear()
                for hook, _ in lost:
                    self._failed(hook, f"no answer within {wait} ms")
                return len(lost)
            reply = self._msgpack.unpackb(self._sock.recv())
            if isinstance(reply, dict):
                self._settle(reply.get("id"), reply)
        return 0

    def _settle(self, rid, reply):
        if rid in self._batches:
            self._settle_batch(rid, reply, None)
            return
        entry = self._unread.pop(rid, None) if rid is not None else None
        if entry is None:
            return  # a late answer to a call that timed out earlier, or given up
        hook, on_result = entry
        if not reply.get("ok"):
            self._failed(hook, str(reply.get("error")))
        elif on_result is not None:
            _full(on_result, reply.get("result") or {})

    def _settle_batch(self, bid, reply, awaited):
        """Settles the calls of one batch from its reply; returns the reply of ``awaited`` (one of them).

        The node answers a batch's calls in their order: while the replies' ids follow the calls'
        ones, each is settled as it comes (``_settle``'s work inline); from the first that does
        not, the rest are looked up by id (a missing answer is a failure). In the reply to a batch
        with compact calls an empty answer may be the call's id alone (an int)."""
        members = self._batches.pop(bid, ())
        agreeing = self._agreeing.pop(bid, None) if self._agreeing else None
        mine = None
        replies = (reply.get("result") or {}).get("replies") if reply.get("ok") else None
        if agreeing is not None and type(replies) is list and len(replies) != len(members):
            self.left_out += len(members) - len(replies)
            return self._settle_agreed(members, replies, awaited, agreeing)
        i = 0
        if type(replies) is list:
            unread = self._unread
            for rid, r in zip(members, replies):
                if type(r) is int:
                    if r != rid:
                        break
                    i += 1
                    if rid == awaited:
                        mine = {"id": rid, "ok": True, "result": {}}
                        continue
                    entry = unread.pop(rid, None)
                    if entry is not None and entry[1] is not None:
                        _full(entry[1], {})
                    continue
                if type(r) is not dict or r.get("id") != rid:
                    break
                i += 1
                if rid == awaited:
                    mine = r
                    continue
                entry = unread.pop(rid, None)
                if entry is None:
                    continue  # given up earlier
                if not r.get("ok"):
                    self._failed(entry[0], str(r.get("error")))
                elif entry[1] is not None:
                    _full(entry[1], r.get("result") or {})
            if i == len(members):
                return mine if mine is not None else {"ok": False, "error": "the batch's reply has no answer for it"}
            members = members[i:]
        by_id = {}
        if isinstance(replies, list):
            for r in replies:
                if isinstance(r, dict):
                    by_id[r.get("id")] = r
                elif type(r) is int:
                    by_id[r] = {"id": r, "ok": True, "result": {}}
        for rid in members:
            r = by_id.get(rid)
            if r is None:
                r = {"id": rid, "ok": False,
                     "error": reply.get("error") if not reply.get("ok") else "the batch's reply has no answer for it"}
            if rid == awaited:
                mine = r
            else:
                self._settle(rid, r)
        return mine if mine is not None else {"ok": False, "error": "the batch's reply has no answer for it"}

    def reconnected(self):
        """Whether the DEALER connected again since the last look (a new connection is a new caller
        to the node, which remembers nothing of the old one: ``steady_ids`` is then forgotten). One
        ``getsockopt`` when nothing happened."""
        if self._threaded:
            self._scheduler_side()
        m = self._monitor
        if m is None or not m.getsockopt(self._zmq.EVENTS) & self._zmq.POLLIN:
            return False
        before = self._connects
        while True:
            try:
                m.recv_multipart(self._zmq.NOBLOCK)
            except self._zmq.Again:
                break
            self._connects += 1
        if before == 0 and self._connects == 1:
            return False  # the first connection
        self.steady_ids = None
        return True
    def _settle_agreed(self, members, replies, awaited, agreeing):
        """Settles a batch whose reply is in the agreed form: ``replies`` holds, in order, the answers
        the node did not leave out; a call left out was answered ok, with an empty answer or (a call
        carrying ``acted``) with the answer acted on. The batch's calls leave the unread ones in one
        C-level pass. When no call carrying ``acted`` and no error is among those listed, and none was
        given up or failed on the way, the agreeing calls cost no Python call each: each run's
        ``on_agreed`` is called once, and the calls without ``acted`` that take their answer are
        given it; otherwise call by call, in order. Returns the reply of ``awaited``."""
        runs, cbs, dirty = agreeing
        unread = self._unread
        listed = {}
        for r in replies:
            if type(r) is dict:
                listed[r.get("id")] = r
            elif type(r) is int:
                listed[r] = {"id": r, "ok": True, "result": {}}
        fast = not dirty
        if fast:
            for rid, r in listed.items():
                e = unread.get(rid)
                if e is not None and (type(e[1]) is tuple or not r.get("ok")):
                    fast = False  # a divergence of a call carrying acted, or an error: in order
                    break
        cut = self._cut_batch(members, awaited) if fast else None
        if cut is None:
            entries = list(map(unread.pop, members, _NONE))
            if fast and entries.count(None) != (awaited is not None):
                fast = False  # one was given up: its run item must not count
        mine = listed.get(awaited) if awaited is not None else None
        if fast:
            for rid, on_result in cbs:
                r = listed.get(rid)
                on_result({} if r is None else r.get("result") or {})
            for on_agreed, items in runs:
                on_agreed(items)
            if cut is not None:
                self._discard(cut)
        else:
            for rid, entry in zip(members, entries):
                if entry is None:
                    continue  # the awaited call, or one given up earlier
                r = listed.get(rid)
                f = entry[1]
                if r is None:
                    if type(f) is tuple:
                        if f[1] is not None:
                            f[1]([f[2]])
                    elif f is not None:
                        f({})
                elif not r.get("ok"):
                    self._failed(entry[0], str(r.get("error")))
                elif f is not None:
                    _full(f, r.get("result") or {})
        if mine is None and awaited is not None:
            mine = {"id": awaited, "ok": True, "result": {}}
        return mine

    def _cut_batch(self, members, awaited):
        """The entries of a batch's calls taken out of ``_unread`` at once, without a lookup each (a
        burst's hundreds of entries, cold in memory by the time its reply comes, cost a cache miss or
        more each to pop): when the batch's unread calls are the first ones of ``_unread``, ``_unread``
        becomes a new dict of the calls after them (at most ``_CUT_KEEPS``, or four times the batch's)
        and the old one is given, holding the batch's entries (and the same entries of the later calls).
        None when they are not (one was given up or failed on the way; too many calls follow): nothing
        changed.

        Sound because ``_unread`` is in id order and ids are taken in order: the unread calls with
        ids from the batch's first to its last are the batch's own (the ids between them that are not
        its calls are ids of batch frames and awaited calls, never in ``_unread``); a call leaves
        ``_unread`` unanswered only when given up, the oldest first (``max_unread``) or all at once
        (``flush``), so when one of the batch's left, no older call is unread: the calls up to the
        batch's last are then fewer than the batch's. So they are as many only when they are the
        batch's, whole. (No ``next(iter(_unread))``: it walks the slots the pops left, thousands.)"""
        unread = self._unread
        expected = len(members) - (awaited is not None)
        if expected <= 0 or len(unread) < expected:
            return None
        if (members[0] if members[0] != awaited else members[1]) not in unread:
            return None
        last = members[-1]
        later = []
        keeps = max(_CUT_KEEPS, 4 * expected)  # (the later calls are recent: warm in memory)
        for rid in reversed(unread):
            if rid <= last:
                break
            if len(later) == keeps:
                return None
            later.append(rid)
        if len(unread) - len(later) != expected:
            return None
        self._unread = {rid: unread[rid] for rid in reversed(later)}
        return unread

    def _discard(self, garbage):
        """Settled calls' entries (a dict): freed by the sender thread after its work or in its naps, a
        few at a time, while it is awake (freeing a burst's entries, cold in memory, costs about a
        microsecond each: 300 us for 256 finishes, on vLLM's scheduler thread); here otherwise."""
        if self._threaded and (threading.get_ident() == self.sender_ident or self._sender_naps_on()):
            self._garbage.append(garbage)
        else:
            garbage.clear()

    def _free_garbage(self):
        """On the sender thread, between two naps: 16 (``_FREED_AT_ONCE_RANGE``) of the entries ``_discard``
        left, freed (a scheduler thread wanting the GIL meanwhile waits for those few frees at most; the
        sender does not take it back before its next nap is over: ``sleep(0)`` would let it take it back
        at once, and a scheduler thread would wait for the switch interval, 5 ms)."""
        garbage = self._garbage
        d = garbage[0]
        popitem = d.popitem
        for _ in _FREED_AT_ONCE_RANGE:
            if not d:
                garbage.popleft()
                break
            popitem()

    def _failed(self, hook, error):
        self.failures += 1
        self.steady_ids = None  # the node may have refused a step or never read it: the next one in full
        if self._on_failure is not None:
            if self._threaded and threading.get_ident() == self.sender_ident:
                self._later.append((self._on_failure, hook, DriveError(f"kvledger node {hook}: {error}")))
            else:
                self._on_failure(hook, DriveError(f"kvledger node {hook}: {error}"))

    # ------------------------------------------------------------------ the sender thread
    # With ``start_sender`` the scheduler thread's hooks only capture what their calls need, as
    # ``(fn, *args)`` in ``captured`` (a list kept for good: its ``append`` may be bound once); at the
    # step's end ``hand_off`` gives the step's captures to the sender thread, which runs each
    # ``fn(*args)`` in order (building the calls, packing, sending, reading the replies there are)
    # while vLLM's scheduler thread waits for the GPU. The scheduler thread's next use of the bridge
    # (any public method here, or ``sync``) first waits until the sender is done with what it was
    # handed (or, with ``reclaim``, runs it itself when the sender has not taken it yet), runs what the
    # sender handed back (``later``: failures, divergences), then the captures not handed off, in order:
    # the socket has one user at any instant, and the calls go out in the order the hooks were called.

    def start_sender(self, chunk=64, users=()):
        """Starts the sender thread (once; before any capture). ``chunk``: the captured calls it runs
        between two releases of the GIL (``time.sleep(0)``), so that a scheduler thread back from
        its wait waits at most about one chunk. ``users``: the modules besides this one whose code
        uses the bridge or looks at what its replies change (the connector's): while a thread other
        than the sender runs their code, the sender reads no reply in its naps (``_read_while_free``)."""
        if self._threaded:
            return
        # the ids of their globals (a module's dict lives as long as the module; ``in`` on the dicts would
        # compare them by value)
        self._users = frozenset(map(id, (globals(), *(vars(m) for m in users))))
        self.naps = 0
        self.nap_reads = 0  # naps in which the sender thread read the replies there were
        self.nap_yields = 0  # naps in which replies may have waited but another thread was in the users' code
        self.young_collections = 0  # naps in which the sender thread ran Python's young collection
        self.captured = []
        self._later = []
        # a hand-off's captures go to the sender through a SimpleQueue: its put wakes the sender in one C
        # call (a Condition's notify runs Python's threading code: about 25 us more per step on vLLM's
        # scheduler thread, whose caches the GPU wait left cold), or, while the sender naps (``nap_s``), wakes
        # no one: an append; None stops it
        self._queue = queue.SimpleQueue()
        self._busy = False
        self._cond = threading.Condition()  # the sender's end of a hand-off, for a scheduler thread waiting on it
        self._chunk = max(1, int(chunk))
        self._garbage = collections.deque()  # settled calls' entries the sender frees (``_discard``)
        self._awake_until = 0  # the monotonic ns until which the sender naps and looks (then: the queue)
        self.sender_cpu_ns = 0  # the sender thread's CPU time (time.thread_time_ns), summed
        self.handoffs = 0
        self.sender_waits = 0  # times the scheduler thread found the sender still at work
        self.reclaimed = 0  # hand-offs the scheduler thread ran itself (``reclaim``: the sender had not started them)
        self.started = 0  # hand-offs the sender thread took
        t = threading.Thread(target=self._sender_loop, name="kvledger-drive-sender", daemon=True)
        t.start()
        self._sender = t
        self.sender_ident = t.ident
        self._threaded = True

    def later(self, fn, *args):
        """On the sender thread: ``fn(*args)`` is run on the scheduler thread at its next use of the bridge."""
        self._later.append((fn, *args))

    def on_sender(self):
        """Whether the calling thread is the sender thread."""
        return self._threaded and threading.get_ident() == self.sender_ident

    def hand_off(self):
        """The step's end, on the scheduler thread: the captured calls go to the sender thread."""
        if not self._threaded:
            return
        if self._busy or self._later:
            self._scheduler_side(False)  # (the captures wait for the sender: they are the ones handed off)
        cap = self.captured
        if not cap:
            return
        work = cap[:]
        cap.clear()
        self._busy = True  # (the sender is idle: nothing else sets it; the GIL orders it before the put)
        self.handoffs += 1
        self._queue.put(work)

    def sync(self):
        """The scheduler thread's way in (see above); nothing to do without the sender thread, or with the
        sender idle and nothing captured or handed back (attribute reads alone: once per request_finished)."""
        if self._threaded and (self._busy or self._later or self.captured):
            self._scheduler_side()

    def _scheduler_side(self, captured=True):
        if not (self._busy or self._later or (captured and self.captured)):
            return  # nothing to wait for or run (the sender's own uses are while _busy)
        if self._reclaiming or threading.get_ident() == self.sender_ident:
            return  # the sender's own use (or the scheduler thread's in its stead)
        if self._busy:
            work = None
            if self.reclaim:
                try:
                    # the sender has not started it (no GPU wait let it run, e.g. the next hook came
                    # at once): the scheduler thread runs it itself rather than wait for the sender
                    # to wake and take the GIL from it (whichever thread takes it from the queue runs it)
                    work = self._queue.get_nowait()
                except queue.Empty:
                    pass
            if work is None:
                with self._cond:
                    self.sender_waits += 1
                    while self._busy:
                        self._cond.wait()
            else:
                self._busy = False
                self.reclaimed += 1
                self._reclaiming = True  # (the calls' own uses of the bridge: as the sender's, nothing to wait
                try:                     # for, and captures made since wait until the hand-off's calls are out)
                    for item in work:
                        item[0](*item[1:])
                except Exception as e:  # noqa: BLE001 - as on the sender thread: counted, logged, the rest dropped
                    self._sender_failed(e)
                finally:
                    self._reclaiming = False
                work = item = None
        while self._later or (captured and self.captured):
            later, self._later = self._later, []
            for item in later:
                item[0](*item[1:])
            cap = self.captured
            if cap and captured:
                work = cap[:]
                cap.clear()
                for item in work:
                    item[0](*item[1:])

    def _sender_loop(self):
        cond = self._cond
        chunk = self._chunk
        q = self._queue
        get_nowait, empty, sleep, now = q.get_nowait, queue.Empty, time.sleep, time.monotonic_ns
        active_until = 0
        while True:
            # Within ``nap_for_ns`` of its last work the sender naps (``nap_s``) and looks, rather than
            # wait in the queue: a put into a queue nobody waits on is an append, where waking a waiting
            # thread is a system call (and, in a VM, an interrupt to the other core) on vLLM's scheduler
            # thread, in its build_connector_meta. The sender wakes on its own timer and takes the GIL when
            # the scheduler thread lets it go (its GPU wait); after a longer pause it waits in the queue.
            if self.nap_s and now() < active_until:
                try:
                    work = get_nowait()  # taken: the scheduler thread no longer can
                except empty:
                    self.naps += 1
                    if self._sent_unread():
                        self._read_while_free()
                    if self._garbage:
                        self._free_garbage()
                    elif self.collect_young and _young_half_due():
                        _gc_collect(0)
                        self.young_collections += 1
                    sleep(self.nap_s)
                    continue
            else:
                while self._garbage:  # (none left to a sender done napping: _discard's margin)
                    self._free_garbage()
                work = q.get()
            if work is None:
                return
            self.started += 1
            began = time.thread_time_ns()
            try:
                for i, item in enumerate(work, 1):
                    item[0](*item[1:])
                    if not i % chunk:
                        time.sleep(0)  # the GIL released: a scheduler thread back from its wait goes on
                if self._rows:
                    # the rows a step left waiting (a quiet one: held for a later frame) packed here, not by
                    # the scheduler thread's next call: the same bytes (a frame is its calls' arrays, headers
                    # left out, however they were cut), while vLLM still waits for the GPU
                    self._pack_rows()
            except BaseException as e:  # noqa: BLE001 - handed back, never lost
                self._later.append((self._sender_failed, e))
            finally:
                # the captures freed here, now, not when the next step's are handed over: alive, each
                # is one more young object for Python's collector to walk (in the scheduler thread's
                # hooks: the finishing steps' request_finished), and survivors move to older generations
                work = item = None
                self.sender_cpu_ns += time.thread_time_ns() - began
                active_until = now() + self.nap_for_ns
                if self.nap_s:
                    self._awake_until = active_until  # (before the scheduler thread may go on: _discard)
                with cond:
                    self._busy = False
                    cond.notify_all()

    def _read_while_free(self):
        """In a nap, on the sender thread: the replies already here of the calls sent, read and settled
        while no other thread is in the code of the bridge's ``users`` (this module, the connector's),
        so that the scheduler thread's next step finds them settled (a burst's, or held calls', reply
        read there costs 100-300 us of vLLM's scheduler thread, its caches cold after the GPU wait).

        The sender claims the bridge as a hand-off does (``_busy``: the scheduler thread's next use of
        it, and the connector's hooks that look at what replies change, wait for ``sync``), then looks:
        a hand-off put since, or another thread inside those modules (it may have looked at ``_busy``
        before the claim, and be using the bridge or deciding on what the replies change), and it lets
        go without reading. The claim comes before the look: a thread that enters after it finds the
        bridge claimed, one that entered before is still inside when the sender looks."""
        if self._busy:
            return
        self._busy = True
        try:
            if self._queue.empty():  # (else a hand-off put since: the sender takes it next)
                if self._others_inside():
                    self.nap_yields += 1
                else:
                    self.nap_reads += 1
                    self.poll()
        except BaseException as e:  # noqa: BLE001 - handed back, never lost
            self._later.append((self._sender_failed, e))
        finally:
            with self._cond:
                if self._queue.empty():  # (else a hand-off put since: the sender's run of it lets go)
                    self._busy = False
                self._cond.notify_all()

    def _others_inside(self):
        """Whether a thread other than this one runs code of a module in ``users`` (its globals)."""
        me = threading.get_ident()
        users = self._users
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            while frame is not None:
                if id(frame.f_globals) in users:
                    return True
                frame = frame.f_back
        return False

    def _sender_failed(self, e):
        self.failures += 1
        self.steady_ids = None
        if self._on_failure is not None:
            self._on_failure("sender", DriveError(f"kvledger drive sender thread: {e!r}"))

    def close(self):
        if self._threaded:
            try:
                self._scheduler_side()
            finally:
                self._queue.put(None)
                self._sender.join(5)
                self._threaded = False
        try:
            if self._monitor is not None:
                try:
                    self._sock.disable_monitor()
                finally:
                    self._monitor.close()
            self._sock.close()
        finally:
            if self._ctx is not None:
                self._ctx.term()


_NONE = itertools.repeat(None)
_gc_collect = gc.collect


def _young_half_due(count=gc.get_count, threshold=gc.get_threshold, enabled=gc.isenabled):
    """Whether Python's collector is on and its young generation is at least half way to its threshold."""
    first = threshold()[0]
    return first > 0 and count()[0] * 2 >= first and enabled()


def _full(on_result, result):
    """Gives a call's answer in full to its ``on_result``: a callable, or a triple or quadruple of a
    call carrying ``acted`` (``NodeBridge.agreed``)."""
    if type(on_result) is not tuple:
        on_result(result)
    elif len(on_result) == 3:
        on_result[0](result)
    else:
        on_result[0](on_result[3], result)


# The compact form of a batched call (docs/bridge-protocol.md, "compact"): ``[id, hook, *fields]``,
# the hook's arguments by position, in this order; a field past the array's end, or None where
# marked optional below, is one the long form leaves out.
COMPACT = {
    "add_request": ("request_id", "num_prompt_tokens", "prompt_token_ids_len", "kv_transfer_params"),
    "get_num_new_matched_tokens": ("request_id", "num_computed_tokens", "acted"),
    "update_state_after_alloc": ("request_id", "block_ids", "num_external_tokens"),
    "build_connector_meta": ("step", "cached_req_ids", "cached_new_block_ids", "scheduled_new_reqs",
                             "preempted_req_ids"),
}
# fields left out of the long form when None in the compact one
_COMPACT_OPTIONAL = frozenset(("acted", "scheduled_new_reqs", "preempted_req_ids"))
_NEW_REQUEST = ("request_id", "block_ids", "num_computed_tokens", "kv_transfer_params")


def agrees(call, result):
    """Whether a node's answer ``result`` to ``call`` (long form) is the ``acted`` the call carries, as
    the node decides it for an ``agreed`` batch reply (BridgeCodec.agrees): such an answer is left
    out. For stand-in nodes and tests."""
    acted, hook = call["args"].get("acted"), call["hook"]
    if acted is None:
        return False
    if hook == "get_num_new_matched_tokens":
        return (acted["num_tokens"] is not None and result.get("num_tokens") == acted["num_tokens"]
                and bool(result.get("load_async")) == acted["load_async"])
    if hook == "request_finished":
        return (bool(result.get("delay_free")) == acted["delay_free"]
                and result.get("kv_transfer_params") == acted["kv_transfer_params"])
    if hook == "update_connector_output":
        safe = result["finished_sending"] if "finished_sending" in result else call["args"].get("finished_sending")
        return set(safe or ()) == set(acted["finished_sending"] or ())
    return False


def long_forms(calls, session=None):
    """A batch's calls as ``long_form`` gives them, in order, a ``derived`` new request
    ``[request_id, num_computed_tokens]`` of a compact ``build_connector_meta`` given the block ids
    of the last compact ``update_state_after_alloc`` and the params of the last compact
    ``add_request`` of that request before it in the batch (``KeyError`` when there is none), as
    the node reads them. ``session`` (``steady``): a dict the caller keeps for one connection, the
    number and cached ids of the last compact ``build_connector_meta`` read on it; a compact one's
    ids given as a step's number are that step's when it is the one remembered, its new block ids
    given as ``{"at": indexes, "blocks": groups}`` are the long form's list (None elsewhere). One that cannot be
    read so (no such step remembered, an index out of range) comes as ``{"id", "hook", "refused":
    why}`` and empties the session. For stand-in nodes and tests."""
    allocated, admitted, out = {}, {}, []
    for call in calls:
        if isinstance(call, (list, tuple)) and len(call) > 2:
            if call[1] == "update_state_after_alloc" and len(call) > 3:
                allocated[call[2]] = call[3]
            elif call[1] == "add_request":
                admitted[call[2]] = call[5] if len(call) > 5 else None
            elif call[1] == "build_connector_meta":
                call, refused = _steady_call(call, session)
                if refused is not None:
                    out.append({"id": call[0], "hook": call[1], "refused": refused})
                    continue
                if len(call) > 5 and call[5]:
                    call = list(call)
                    call[5] = [[r[0], allocated[r[0]], r[1], admitted[r[0]]] if len(r) == 2 else r for r in call[5]]
        out.append(long_form(call))
    return out


def _steady_call(call, session):
    """A compact ``build_connector_meta`` with its ``steady`` fields in the long form (``long_forms``):
    ``(call, None)``, or ``(call, why)`` when it cannot be read."""
    call = list(call)
    ids = call[3] if len(call) > 3 else None
    blocks = call[4] if len(call) > 4 else None
    if type(ids) is int:
        if session is None or session.get("step") != ids:
            why = (f"cached_req_ids {ids}: the ids of step {ids}, but the last step read on this connection was "
                   f"{session.get('step') if session else None} (send them in full)")
            if session is not None:
                session.clear()
            return call, why
        ids = call[3] = session["ids"]
    if type(blocks) is dict:
        n = len(ids or ())
        full = [None] * n
        at, groups = blocks.get("at") or [], blocks.get("blocks") or []
        why = next((f"cached_new_block_ids: index {i!r} is not one of the {n} cached requests"
                    for i in at if type(i) is not int or not 0 <= i < n), None)
        if len(at) != len(groups):
            why = f"cached_new_block_ids: {len(at)} indexes (at) but {len(groups)} block ids (blocks)"
        elif why is None and len(set(at)) != len(at):
            why = "cached_new_block_ids: an index names a cached request twice"
        if why is not None:
            if session is not None:
                session.clear()
            return call, why
        for i, g in zip(at, groups):
            full[i] = g
        call[4] = full
    if session is not None:
        session["step"], session["ids"] = call[2], ids
    return call, None


def long_form(call):
    """A batched call as the long form's map ``{"id", "hook", "args"}``: a compact one (an array)
    expanded as the node reads it (``get_num_new_matched_tokens``' ``acted`` ``[num_tokens,
    load_async]``, each of ``scheduled_new_reqs`` ``[request_id, block_ids, num_computed_tokens,
    kv_transfer_params]``), a map as it is. For stand-in nodes and tests."""
    if not isinstance(call, (list, tuple)):
        return call
    rid, hook, fields = call[0], call[1], call[2:]
    args = {}
    for name, v in zip(COMPACT[hook], fields):
        if v is None and name in _COMPACT_OPTIONAL:
            continue
        if name == "acted":
            v = {"num_tokens": v[0], "load_async": v[1]}
        elif name == "scheduled_new_reqs":
            v = [dict(zip(_NEW_REQUEST, r)) for r in v]
        args[name] = v
    return {"id": rid, "hook": hook, "args": args}


_ID_AND_HOOK = operator.itemgetter(0, 1)
_FIRST = operator.itemgetter(0)
_CALL_ID_AND_HOOK = operator.itemgetter("id", "hook")
_ROWS_PACKED_AT = 48
# calls after a batch's that ``_cut_batch`` copies into a new ``_unread`` at least (more, and more than four
# times the batch's: the batch's popped one by one)
_CUT_KEEPS = 64
# settled entries the sender thread frees between two releases of the GIL
_FREED_AT_ONCE_RANGE = range(16)
# ``_discard`` leaves entries to the sender thread only when it naps for at least this much longer
_AWAKE_MARGIN_NS = 20_000_000
_LENGTH = struct.Struct(">I")
# a lone call's frame begins {"v": 1, then its call map's entries (a map of 4, where a call's has 3)
_ONE_CALL = b"\x84\xa1v\x01"


class _UnixFrames:
    """A Unix domain stream socket that sends and receives whole frames, each preceded by its length
    (4 bytes, big-endian), as the node's ``unix://`` engine bridge does; a timeout raises ``again``
    (what a DEALER raises), and a frame cut by a timeout is completed by the next ``recv``. It
    connects at the first send, as a DEALER's call finds an absent node at its first call. It takes
    the DEALER calls the client makes: ``send``/``recv`` with ``dontwait`` and ``poll``.

    The socket is non-blocking; what the kernel does not take at once waits in an output buffer, in
    order, and goes out at the next ``send``, ``recv`` or ``poll`` (as a DEALER queues a message
    for its I/O thread). So a ``send`` with ``dontwait`` never blocks the scheduler and never drops
    a frame because a slow node left the socket's buffer full; one without waits until its frame is
    written (up to the timeout: then ``again``, and the frame still goes out later, in order). A
    ``recv`` that waits for a reply writes what is buffered meanwhile (the reply may depend on it)."""

    def __init__(self, path, timeout_ms, again, dontwait):
        self._again = again
        self._dontwait = dontwait
        self._path = path
        self._timeout = timeout_ms / 1000.0
        self._s = None
        self._buf = bytearray()
        self._out = bytearray()

    def _connected(self):
        if self._s is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self._timeout)
            try:
                s.connect(self._path)
            except OSError as e:
                s.close()
                raise DriveError(f"cannot reach the kvledger node at unix://{self._path}: {e}") from e
            s.setblocking(False)
            self._s = s
        return self._s

    def _broken(self, e):
        return DriveError(f"the kvledger node at unix://{self._path}: {e}")

    def _pump(self):
        """Writes what the socket takes now; True when nothing is left to write."""
        out = self._out
        while out:
            try:
                n = self._s.send(out)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError as e:
                raise self._broken(e) from e
            del out[:n]
        return True

    def pending_out(self):
        """Bytes written by ``send`` that the socket has not taken yet."""
        return len(self._out)

    def send(self, frame, flags=0):
        s = self._connected()
        head = _LENGTH.pack(len(frame))
        if not self._out:
            # nothing waits: straight to the socket, the frame not copied (what it leaves waits)
            try:
                n = s.sendmsg((head, frame))
            except (BlockingIOError, InterruptedError):
                n = 0
            except OSError as e:
                raise self._broken(e) from e
            if n == 4 + len(frame):
                return
            if n < 4:
                self._out += head[n:]
                n = 4
            self._out += memoryview(frame)[n - 4:]
        else:
            self._out += head
            self._out += frame
        if self._pump() or flags & self._dontwait:
            return
        deadline = time.monotonic() + self._timeout
        while not self._pump():
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [s], [], left)[1]:
                raise self._again()

    def _frame(self):
        if len(self._buf) >= 4:
            n = _LENGTH.unpack_from(self._buf)[0]
            if len(self._buf) >= 4 + n:
                with memoryview(self._buf) as view:
                    frame = bytes(view[4:4 + n])  # one copy (a bytearray's slice would be a second)
                del self._buf[:4 + n]
                return frame
        return None

    def _read(self):
        """Reads what is there; False when nothing was."""
        try:
            chunk = self._s.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as e:
            raise self._broken(e) from e
        if not chunk:
            raise DriveError(f"the kvledger node at unix://{self._path} closed the connection")
        self._buf += chunk
        return True

    def _wait(self, wait):
        """Waits up to ``wait`` seconds (None: for good) for bytes to read, writing what is buffered
        meanwhile; True when there are bytes to read."""
        s = self._s
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            r, w, _ = select.select([s], [s] if self._out else [], [], left)
            if w:
                self._pump()
            if r:
                return True
            if not w and (left == 0.0 or (deadline is not None and time.monotonic() >= deadline)):
                return False

    def recv(self, flags=0):
        self._connected()
        frame = self._frame()
        if frame is not None:
            return frame
        self._pump()
        while True:
            if self._read():
                frame = self._frame()
                if frame is not None:
                    return frame
                continue
            if flags & self._dontwait or not self._wait(self._timeout):
                raise self._again()

    def poll(self, timeout_ms, _events=None):
        """True when a whole frame can be read now, or bytes arrive within ``timeout_ms``."""
        if len(self._buf) >= 4 and len(self._buf) >= 4 + struct.unpack_from(">I", self._buf)[0]:
            return True
        self._connected()
        self._pump()
        wait = None if timeout_ms is None or timeout_ms < 0 else timeout_ms / 1000.0
        return self._wait(wait)

    def close(self):
        if self._s is not None:
            self._s.close()

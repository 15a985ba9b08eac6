"""The recording stream: hook calls captured on vLLM's threads, written as kvledger JSON lines elsewhere.

Capture (``Stream.put``) is one ``time.monotonic_ns()`` and one ``deque.append`` of a small tuple
on the calling thread, one per hook call (no lock: the writer polls, so there is no waiter to
wake); it never blocks and never raises. A full queue drops the entry and counts it. A daemon thread (``Stream`` starts it) polls the queue every
few milliseconds and turns entries into JSON lines
(journal/FORMAT.md, "JSON lines") and appends them to the file; a run of engine steps that repeat
the step before them (an engine stepping while a request waits) is written as one ``repeat`` line
(``StepFolder``; FORMAT.md, "Repeated steps"). Dropped entries are written into
the stream as soon as the writer catches up, as a ``frame_rejected`` input whose reason says how
many hook calls were lost (the format has no entry type of its own for this yet).

The file sink uses only the standard library; the ZMQ sink (``ZmqSink``) needs pyzmq, imported
when it is configured.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections import deque
import time
import uuid

log = logging.getLogger("vllm.kvledger_vllm")

# Put on the queue by Stream.flush: the writer writes what its folder holds when it gets there.
_FLUSH = object()

# An entry on the queue: (type, at_ns, fields, reply_type, reply_fields): one input and, when the
# hook has a reply in the format, the derived entry written right after it (the import takes the
# nearest input above a derived line as its cause).
INPUT = "input"
DERIVED = "derived"

# How long the writer sleeps when the queue is empty (the delay of a line reaching the file).
POLL_S = 0.005

DROP_REASON_PREFIX = "kvledger-vllm recorder: "

# A line that stands for repeats of the step written above it (journal/FORMAT.md, "Repeated steps").
REPEAT = "repeat"
# The longest step that is folded (lines); a longer one is written as it is.
MAX_REPEAT_LINES = 64
# A run of repeated steps is written at least this often: a process killed during a long run loses
# at most this much of its steps (the steps, not the lines before them).
FOLD_FLUSH_S = 1.0
# With no new hook call for this long, the step in progress is written without waiting for the next
# one to start: an engine stuck inside a hook leaves its last calls in the file.
FOLD_IDLE_S = 0.05


def _input_at(e):
    """The ``at_ns`` of an input entry, or None (a derived entry, which takes its cause's time)."""
    return e.get("at_ns") if e.get("kind") == INPUT else None


def _same_step_again(before, after):
    """Whether the step ``after`` repeats the step ``before``: the same lines with the same fields and
    values, except ``at_ns`` (any) and ``step`` (one more)."""
    if len(before) != len(after):
        return False
    for a, b in zip(before, after):
        if a.keys() != b.keys():
            return False
        for k, v in a.items():
            if k == "at_ns":
                continue
            w = b[k]
            if k == "step":
                if type(v) is not int or type(w) is not int or w != v + 1:
                    return False
            elif v != w or type(v) is not type(w):
                return False
    return True


def unfold(entries):
    """The lines a recording stands for: its entries (dicts) with each ``repeat`` line replaced by the
    steps it folded, as kvledger's import reads it. A repeated step is the ``lines`` entries above,
    with ``step`` one more each time and each input's ``at_ns`` the input's before it plus the next
    of ``at_ns_deltas``."""
    out = []
    last_at = None
    for e in entries:
        if e.get("kind") != REPEAT:
            out.append(e)
            if _input_at(e) is not None:
                last_at = e["at_ns"]
            continue
        deltas = iter(e["at_ns_deltas"])
        step = out[-e["lines"]:]
        for _ in range(e["times"]):
            again = []
            for line in step:
                c = dict(line)
                if "step" in c:
                    c["step"] += 1
                if _input_at(c) is not None:
                    last_at += next(deltas)
                    c["at_ns"] = last_at
                again.append(c)
            out.extend(again)
            step = again
    return out


class StepFolder:
    """Writes a run of steps that repeat the step before them as one ``repeat`` line.

    While a request waits (WAITING_FOR_REMOTE_KVS, the usual hang), vLLM's engine loop steps about
    a thousand times a second without running the model, and every step calls the same hooks with
    the same arguments: a few hundred bytes per step and process, gigabytes in an hour's hang. Such
    a step is folded into the ``repeat`` line after the step it repeats, which keeps each folded
    line's ``at_ns`` (as the difference to the input before it), so the import rebuilds exactly the
    lines an unfolded recording holds.

    A step is the lines from one entry whose type is in ``starts`` (``step_scheduled`` for a
    scheduler, ``load_started`` for a worker) to the next. It repeats the one before when the two
    have the same lines with the same fields, ``at_ns`` aside and ``step`` one more. Lines before the
    first step, and every line of a step that differs, are written as they are. A step is written
    once the next one starts; the run of folded steps at the latest every ``FOLD_FLUSH_S``, and the
    step in progress once no entry came for ``FOLD_IDLE_S``.
    """

    def __init__(self, starts):
        self.starts = frozenset(starts)
        self._step = []        # the step in progress, not yet written
        self._last = None      # the last step written or folded (what the next one may repeat)
        self._times = 0        # steps folded and not yet written
        self._deltas = []      # their inputs' at_ns, each less the input's before it
        self._last_at = None   # at_ns of the last input written or folded
        self._run_since = None
        self.folded = 0        # steps folded in all

    def _track(self, entries):
        for e in entries:
            if _input_at(e) is not None:
                self._last_at = e["at_ns"]

    def _write(self, entries, out):
        self.flush_run(out)
        out.extend(entries)
        self._track(entries)

    def add(self, entry, out):
        """Takes one entry (a dict) in the stream's order; appends the dicts to write to ``out``."""
        if entry.get("kind") == INPUT and entry.get("type") in self.starts:
            if self._step:
                self._close_step(out)
            self._step = [entry]
        elif self._step:
            self._step.append(entry)
            if len(self._step) > MAX_REPEAT_LINES:
                self._write(self._step, out)
                self._step = []
                self._last = None
        else:
            self._write([entry], out)
            self._last = None

    def _close_step(self, out):
        step, self._step = self._step, []
        if self._last is not None and self._last_at is not None and _same_step_again(self._last, step):
            prev = self._last_at
            for e in step:
                at = _input_at(e)
                if at is not None:
                    self._deltas.append(at - prev)
                    prev = at
            self._last_at = prev
            self._times += 1
            self.folded += 1
            if self._run_since is None:
                self._run_since = time.monotonic()
        else:
            self._write(step, out)
        self._last = step

    def release(self, out):
        """Writes everything held back now (a flush): the folded steps, and the step in progress as
        far as it has come; the next step is then compared with nothing."""
        self._write(self._step, out)
        self._step = []
        self._last = None

    def holding(self):
        """Whether lines are held back (a step in progress, or folded steps not yet written)."""
        return bool(self._step) or self._times > 0

    def flush_run(self, out):
        """Writes the folded steps not yet written as one ``repeat`` line."""
        if self._times:
            out.append({"kind": REPEAT, "lines": len(self._last), "times": self._times,
                        "at_ns_deltas": self._deltas})
            self._times = 0
            self._deltas = []
            self._run_since = None

    def tick(self, out, idle_s):
        """Called by the writer between batches: ``idle_s`` since the last entry came."""
        if self._times and time.monotonic() - self._run_since >= FOLD_FLUSH_S:
            self.flush_run(out)
        if idle_s >= FOLD_IDLE_S and self._step:
            self.release(out)

    def close(self, out):
        """Writes everything held back (the stream ends: the step in progress is whole)."""
        if self._step:
            self._close_step(out)
        self.flush_run(out)


_SCALARS = frozenset((str, int, float, bool))


def plain(value, depth=0):
    """A copy of ``value`` made of JSON-representable Python values (dict keys as str).

    Taken on the calling thread for values the connector may mutate later (kv_transfer_params).
    Sets become sorted lists; tuples lists; anything else its ``str``.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 32:
        return str(value)
    # a str key, and a value of exactly str, int, float or bool or None (most of a kv_transfer_params
    # dict, a block id list), are taken as they are: what the call for each would give, without it
    if isinstance(value, dict):
        return {(k if type(k) is str else str(k)): (v if v is None or type(v) in _SCALARS else plain(v, depth + 1))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [v if v is None or type(v) in _SCALARS else plain(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [plain(v, depth + 1) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": __import__("base64").b64encode(bytes(value)).decode("ascii")}
    return str(value)


def _json_value(v):
    """Applies the format's tags for values JSON cannot hold (NaN/inf floats, huge ints)."""
    if isinstance(v, float):
        if math.isnan(v):
            return {"$float": "nan"}
        if math.isinf(v):
            return {"$float": "inf" if v > 0 else "-inf"}
        return v
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        if -(2 ** 63) <= v < 2 ** 63:
            return v
        return {"$int": str(v)}
    if isinstance(v, dict):
        if len(v) == 1 and next(iter(v)) == "$bytes":
            return v
        return {k: _json_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    return v


def encode_line(obj):
    return json.dumps(_json_value(obj), separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def previous_name(path, k):
    """The name of the k-th previous recording of ``path``: ``x.jsonl`` -> ``x.1.jsonl``, ``x.2.jsonl``..."""
    stem, ext = os.path.splitext(path)
    return f"{stem}.{k}{ext}"


def keep_previous(path, keep):
    """Moves a recording already at ``path`` aside before a new one starts there.

    An engine restarted after a hang (by hand, or by its pod's liveness probe) would otherwise
    truncate the recording of the run that hung. The newest previous recording becomes
    ``previous_name(path, 1)``, older ones move up by one, and the one past ``keep`` is removed, so
    a crash loop cannot fill the disk. ``keep`` 0 keeps none (the file is truncated). Returns the
    name the previous recording now has, or None (none there, or it could not be moved: logged,
    and the new recording starts over it as before).
    """
    if keep <= 0 or not os.path.isfile(path) or os.path.getsize(path) == 0:
        return None
    try:
        oldest = previous_name(path, keep)
        if os.path.exists(oldest):
            os.remove(oldest)
        for k in range(keep - 1, 0, -1):
            if os.path.exists(previous_name(path, k)):
                os.replace(previous_name(path, k), previous_name(path, k + 1))
        os.replace(path, previous_name(path, 1))
        return previous_name(path, 1)
    except OSError as e:
        log.warning("kvledger-vllm: could not keep the previous recording %s (%s); it is overwritten", path, e)
        return None


class FileSink:
    """Appends lines to one file, created with its directory.

    A recording already there (an earlier run of the engine) is kept as ``NAME.1.jsonl``, up to
    ``keep`` earlier runs (``keep_previous``).
    """

    def __init__(self, path, keep=5):
        self.path = path
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        self.kept = keep_previous(path, keep)
        if self.kept:
            log.info("kvledger-vllm: the previous recording at %s is kept as %s", path, self.kept)
        self._f = open(path, "w", encoding="utf-8")

    def write_lines(self, lines):
        self._f.write("".join(line + "\n" for line in lines))
        self._f.flush()

    def close(self):
        try:
            self._f.close()
        except OSError:
            pass


STREAM_PROTOCOL = 1


class ZmqSink:
    """Sends the stream to a kvledger node (``kvledger node --engine shadow --shadow ENDPOINT``).

    A PUSH socket of its own context connects to ``endpoint`` (ZMQ connects and reconnects in the
    background: every 100 ms at first, backing off to 2 s). Each ``write_lines`` batch is one
    message of three frames, sent without blocking:

    1. the envelope, a JSON object: ``{"v": 1, "stream": <hex id of this process's stream>,
       "role": "scheduler"|"worker", "dp": <int>, "tp": <int>, "first": <number of the batch's
       first line, the header being line 0>, "count": <lines in the batch>, "end": <bool>,
       "dropped": <lines this sink dropped so far>}``;
    2. the header line (the same in every message, so a node that starts or restarts mid-stream
       still knows whose stream it reads);
    3. the batch: the JSON lines the file sink would write, joined by ``\n`` (UTF-8), empty in
       the ``end`` message ``close`` sends.

    Messages wait in ZMQ's queue of ``hwm`` messages while the node is away (and reach it when it
    comes); when that queue is full a batch is dropped and counted (``dropped_lines``), never
    waited for. The node sees the gap in the line numbers and journals it. Only an error other
    than a full queue (a closed context) raises, which stops the recording like a failing disk.
    """

    def __init__(self, endpoint, role, dp, tp, hwm=1000, linger_ms=1000):
        import zmq  # pyzmq: only needed for this sink
        self._zmq = zmq
        self.endpoint = endpoint
        self._ctx = zmq.Context(1)
        s = self._ctx.socket(zmq.PUSH)
        s.setsockopt(zmq.SNDHWM, int(hwm))
        s.setsockopt(zmq.LINGER, int(linger_ms))
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, 2000)
        s.connect(endpoint)
        self._sock = s
        self.stream_id = uuid.uuid4().hex
        self._envelope = {"v": STREAM_PROTOCOL, "stream": self.stream_id, "role": role, "dp": int(dp),
                          "tp": int(tp)}
        self._header = b""
        self._next = 1
        self.sent_messages = 0
        self.sent_lines = 0
        self.dropped_messages = 0
        self.dropped_lines = 0
        self._closed = False

    def write_header(self, line):
        """Keeps the header line; it travels in every message."""
        self._header = line.encode("utf-8")

    def _send(self, lines, end=False):
        env = dict(self._envelope, first=self._next, count=len(lines), end=end, dropped=self.dropped_lines)
        frames = [json.dumps(env, separators=(",", ":")).encode("utf-8"), self._header,
                  "\n".join(lines).encode("utf-8")]
        self._next += len(lines)
        try:
            self._sock.send_multipart(frames, flags=self._zmq.NOBLOCK, copy=True)
        except self._zmq.Again:
            self.dropped_messages += 1
            self.dropped_lines += len(lines)
            if self.dropped_messages == 1:
                log.warning("kvledger recorder: the node at %s takes no more (its queue of messages is full); "
                            "lines are dropped and counted until it does", self.endpoint)
            return False
        self.sent_messages += 1
        self.sent_lines += len(lines)
        return True

    def write_lines(self, lines):
        if lines:
            self._send(list(lines))

    def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            self._send([], end=True)
        except Exception:  # noqa: BLE001
            pass
        try:
            self._sock.close()  # waits up to linger_ms for queued messages to leave
        finally:
            self._ctx.term()


class _CaptureQueue:
    """A bounded FIFO for one writer thread and the engine's threads, without locks: ``deque``'s
    append and popleft are atomic under the GIL. ``len`` bounds it approximately (a race lets a few
    entries past ``maxsize``, never a block). ``unfinished`` counts entries offered and not yet
    handled (``done``), for ``Stream.flush``."""

    __slots__ = ("_d", "maxsize", "added", "handled", "controls")

    def __init__(self, maxsize):
        self._d = deque()
        self.maxsize = maxsize
        self.added = 0    # written by the calling threads only
        self.handled = 0  # written by the writer thread only
        self.controls = 0  # flush and stop markers among ``added``

    def offer(self, item):
        if len(self._d) >= self.maxsize:
            return False
        self._d.append(item)
        self.added += 1
        return True

    def control(self, item):
        """A flush mark or the stop marker: always taken (one beyond the bound at most)."""
        self._d.append(item)
        self.added += 1
        self.controls += 1

    def take(self, n):
        out = []
        pop = self._d.popleft
        try:
            while len(out) < n:
                out.append(pop())
        except IndexError:
            pass
        return out

    def done(self, n):
        self.handled += n

    @property
    def unfinished(self):
        return self.added - self.handled



def epoch_offset_ns(tries=16, monotonic=None, wall=None):
    """The wall clock minus the monotonic clock, in ns: the wall clock read between two monotonic
    reads, ``tries`` times, the narrowest bracket kept and its midpoint taken (as the live node's
    clock anchors itself), so that a thread preempted between two reads does not put the axis off
    by milliseconds against a node of the same host. The clocks are this module's ``time``'s at the
    call unless given (a test's scenario clock replaces it)."""
    monotonic = monotonic or time.monotonic_ns
    wall = wall or time.time_ns
    best = None
    for _ in range(tries):
        before = monotonic()
        w = wall()
        after = monotonic()
        if best is None or after - before < best[0]:
            best = (after - before, w - (before + (after - before) // 2))
    return best[1]

class Stream:
    """A bounded capture queue and the background writer that drains it into a sink.

    ``header`` is the header line's dict (written first). ``sink`` has ``write_lines(list)`` and
    ``close()``. ``maxsize`` bounds the queue (entries, not bytes). ``fold_starts``: the entry types
    that start a step, to fold repeated steps (``StepFolder``); None writes every line.
    """

    def __init__(self, header, sink, maxsize=65536, name="kvledger-recorder", fold_starts=None):
        self._q = _CaptureQueue(maxsize)
        # repeated steps folded into repeat lines (StepFolder), or every line written (None)
        self.folder = StepFolder(fold_starts) if fold_starts else None
        self._sink = sink
        self._header = header
        self.dropped = 0          # entries dropped because the queue was full (calling threads)
        self._dropped_written = 0  # the part of ``dropped`` already written into the stream
        self.written = 0
        self.write_errors = 0
        self._last_at_ns = None
        # Times are written as nanoseconds since the Unix epoch, read from the monotonic clock
        # (captured as time.monotonic_ns(), anchored here once): the axis kvledger's live nodes
        # journal on, so that recordings of a prefill and a decode on different hosts line up as
        # far as their clocks agree. time.monotonic_ns() alone starts anywhere (at boot on Linux).
        self._epoch_offset_ns = epoch_offset_ns()
        self._closed = False
        self._failed = False  # a write failed: the recording stops, the engine runs on
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ calling threads

    @property
    def captured(self):
        """Entries offered by calling threads (taken by the queue + dropped)."""
        q = self._q
        return q.added - q.controls + self.dropped

    @staticmethod
    def clock():
        """The capture clock (``at_ns`` of a ``put`` without one)."""
        return time.monotonic_ns()

    def put(self, type_name, fields, reply_type=None, reply_fields=None, at_ns=None):
        """Captures one input entry and, optionally, the derived entry that answers it (the inner
        connector's return value); never blocks, never raises. Returns False when it was dropped.
        ``fields`` and ``reply_fields`` may be functions of no arguments returning the fields, or a
        tuple ``(function, *args)`` (cheaper to build than a closure): the writer thread calls them
        (a snapshot taken on the calling thread, converted off it). ``at_ns``: the time
        the hook was called, read earlier with ``clock()`` (default: now).

        A hook called once per engine step may append a flat entry to the queue itself instead
        (``(converter, at_ns, *snapshot)``, one tuple where ``put`` builds three): the writer
        thread calls ``converter(*snapshot)`` for ``(type_name, fields, reply_type, reply_fields)``,
        which are then taken as ``put``'s."""
        try:
            q = self._q  # _CaptureQueue.offer, inlined: this runs once per hook call
            d = q._d
            if len(d) < q.maxsize:
                d.append((type_name, time.monotonic_ns() if at_ns is None else at_ns, fields, reply_type, reply_fields))
                q.added += 1
                return True
            self.dropped += 1  # racy across threads by a few counts at worst; never blocks
            return False
        except Exception:  # noqa: BLE001 - the engine must never see the recorder fail
            self.dropped += 1
            return False

    # ------------------------------------------------------------------ writer thread

    def _run(self):
        try:
            header_line = encode_line(self._header)
            write_header = getattr(self._sink, "write_header", None)
            if write_header is not None:
                write_header(header_line)
            else:
                self._sink.write_lines([header_line])
        except Exception as e:  # noqa: BLE001
            self.write_errors += 1
            log.error("kvledger recorder: cannot write the journal header (%s); recording stops", e)
            self._drain_forever()
            return
        last_entry = time.monotonic()
        while True:
            # Polled, not blocked in get(): a put then finds no waiter to wake, so the engine's
            # threads and this one do not hand the GIL back and forth once per hook call.
            batch = self._q.take(4096)
            if not batch:
                if self.folder is not None:
                    held = []
                    self.folder.tick(held, time.monotonic() - last_entry)
                    self._write(held)
                time.sleep(POLL_S)
                continue
            last_entry = time.monotonic()
            stop = False
            out = []  # the entries to write, in order
            for b in batch:
                if b is None:
                    stop = True
                    continue
                if b is _FLUSH:
                    if self.folder is not None:
                        self.folder.release(out)
                    continue
                try:
                    entries = self._entries(b)
                except Exception as e:  # noqa: BLE001
                    self.write_errors += 1
                    if self.write_errors == 1:
                        log.error("kvledger recorder: cannot encode a %s entry (%s); it is skipped", b[0], e)
                    continue
                self._take(entries, out)
            drops = self.dropped - self._dropped_written
            if drops > 0:
                at = self._last_at_ns
                if at is None:
                    at = time.monotonic_ns() + self._epoch_offset_ns
                self._last_at_ns = at
                self._take([{
                    "kind": INPUT, "type": "frame_rejected", "at_ns": at,
                    "reason": DROP_REASON_PREFIX + str(drops) + " hook call(s) dropped (queue full); "
                              + str(self.dropped) + " in all; the journal is incomplete here",
                    "frame": "", "would_kill_python_listener": False}], out)
                self._dropped_written += drops
            if self.folder is not None:
                self.folder.tick(out, 0.0)
                if stop:
                    self.folder.close(out)
            self._write(out)
            self._q.done(len(batch))
            if stop:
                self._sink.close()
                return

    def _take(self, entries, out):
        if self.folder is None:
            out.extend(entries)
        else:
            for e in entries:
                self.folder.add(e, out)

    def _write(self, entries):
        if self._failed or not entries:
            return
        lines = []
        for e in entries:
            try:
                lines.append(encode_line(e))
            except Exception as ex:  # noqa: BLE001
                self.write_errors += 1
                if self.write_errors == 1:
                    log.error("kvledger recorder: cannot encode a %s entry (%s); it is skipped", e.get("type"), ex)
        try:
            self._sink.write_lines(lines)
            self.written += len(lines)
        except Exception as ex:  # noqa: BLE001
            self._failed = True
            self.write_errors += 1
            log.error("kvledger recorder: writing the journal failed (%s); recording stops, the engine runs on", ex)

    @staticmethod
    def entry_parts(item):
        """``(type_name, at_ns, fields, reply_type, reply_fields)`` of a queued entry, ``put``'s or a
        flat one (whose converter runs here)."""
        if type(item[0]) is str:
            return item
        type_name, fields, reply_type, reply_fields = item[0](*item[2:])
        return type_name, item[1], fields, reply_type, reply_fields

    def _entries(self, item):
        try:
            type_name, at_ns, fields, reply_type, reply_fields = self.entry_parts(item)
        except Exception as e:  # noqa: BLE001 - a flat entry's converter failed: the entry is lost, and counted
            self.write_errors += 1
            if self.write_errors == 1:
                log.error("kvledger recorder: cannot convert a %s entry (%s); it is skipped",
                          getattr(item[0], "__name__", item[0]), e)
            return []
        at_ns += self._epoch_offset_ns
        # Inputs must not go backwards in time; entries captured on two threads may.
        if self._last_at_ns is not None and at_ns < self._last_at_ns:
            at_ns = self._last_at_ns
        self._last_at_ns = at_ns
        obj = {"kind": INPUT, "type": type_name, "at_ns": at_ns}
        if type(fields) is tuple or callable(fields):
            # an input captured as a snapshot on the calling thread, converted here
            try:
                fields = fields[0](*fields[1:]) if type(fields) is tuple else fields()
            except Exception as e:  # noqa: BLE001 - the entry is lost, and counted
                self.write_errors += 1
                if self.write_errors == 1:
                    log.error("kvledger recorder: cannot convert a %s entry (%s); it is skipped", type_name, e)
                return []
        obj.update(fields)
        if reply_type is None:
            return [obj]
        if type(reply_fields) is tuple or callable(reply_fields):
            # a reply captured as a snapshot on the calling thread, converted here (off the engine's thread)
            try:
                reply_fields = reply_fields[0](*reply_fields[1:]) if type(reply_fields) is tuple else reply_fields()
            except Exception as e:  # noqa: BLE001 - the input is still written, without its reply
                self.write_errors += 1
                if self.write_errors == 1:
                    log.error("kvledger recorder: cannot convert the %s reply of a %s entry (%s); the entry is "
                              "written without it", reply_type, type_name, e)
                return [obj]
        reply = {"kind": DERIVED, "type": reply_type}
        reply.update(reply_fields)
        return [obj, reply]

    def _drain_forever(self):
        while True:
            items = self._q.take(4096)
            if not items:
                time.sleep(POLL_S)
                continue
            self._q.done(len(items))
            if any(item is None for item in items):
                return

    # ------------------------------------------------------------------ shutdown

    def flush(self, timeout=None):
        """Waits until everything captured so far is written (tests, shutdown)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self.folder is not None and not self._closed:
            # the writer writes what the folder holds when it reaches this mark
            self._q.control(_FLUSH)
        while self._q.unfinished:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True

    def close(self, timeout=5.0):
        """Writes what is queued and stops the writer (bounded wait; the thread is a daemon)."""
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + timeout
        self._q.control(None)
        self._thread.join(max(0.0, deadline - time.monotonic()))

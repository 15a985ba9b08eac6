"""``KvledgerRecorderConnector``: wraps vLLM's MoRIIO connector (or another) and records its hooks.

vLLM loads it by configuration only::

    --kv-transfer-config '{"kv_connector": "KvledgerRecorderConnector",
                           "kv_connector_module_path": "kvledger_vllm",
                           "kv_role": "kv_producer",
                           "kv_connector_extra_config": {"record_to": "/var/log/kvledger/{role}-dp{dp}-tp{tp}.jsonl",
                                                         ...the inner connector's own keys...}}'

``KvledgerRecorderConnector`` is resolved per configuration (``configured_class``): the class vLLM
gets declares ``SupportsHMA`` exactly when the inner does, and a class whose HMA-ness and the
inner's disagree refuses at construction (``RecorderConfigError``, one line). Every method and
property of the newest ``KVConnectorBase_V1`` is delegated explicitly to the inner connector and
returns exactly what the inner returned; an exception of the inner connector propagates unchanged (the
engine sees what it would have seen without the recorder). The recorder's own work is wrapped so
that an error in it is logged once per hook and never reaches vLLM.

Extra config keys read here (all others are the inner connector's):

``inner_connector``             class name of the wrapped connector, default ``MoRIIOConnector``
``inner_connector_module_path`` module holding it (default: vLLM's registry, then MoRIIO's module)
``record_to``                   a path template with ``{role}``, ``{dp}``, ``{tp}`` (the parts needed to tell
                                the processes apart are added when missing: ``per_process_template``), or
                                ``tcp://HOST:PORT`` of a ``kvledger node --engine shadow`` (stream.ZmqSink);
                                absent: no recording
``record_layers``               also record ``save_kv_layer`` per layer (default false: per-layer
                                hooks cost one attribute test when off)
``record_keep``                 earlier recordings kept when a process starts where one already is
                                (``NAME.1.jsonl`` the newest, up to this many), default 5; 0 overwrites
``record_fold_steps``           write a run of steps that repeat the one before them (an engine stepping
                                while a request waits) as one ``repeat`` line with every step's time,
                                default true (stream.StepFolder; false writes every line)
``record_queue_size``           capture queue bound in entries, default 65536 (a full queue drops
                                and counts; the count is written into the stream)
``record_zmq_hwm``              with ``tcp://``: messages (batches) ZMQ queues while the node is away,
                                default 1000 (beyond: dropped and counted)
``drive_node``                  drive mode (off by default): ``unix:///PATH`` (same host: the fastest;
                                a node started without ``--bridge`` listens on its journal
                                directory's ``bridge.sock``), ``ipc:///PATH`` (ZMQ on a Unix socket,
                                a node's ``--bridge ipc:///PATH``) or ``tcp://127.0.0.1:PORT`` of a
                                ``kvledger node --engine drive``; the scheduler connector returns the
                                node's answers to vLLM (the inner still runs and its worker does the
                                transfers); see docs/vllm.md, "Drive mode"
``drive_timeout_ms``            how long one drive call waits for the node, default 5000
``drive_pipeline``              send the hooks whose answer vLLM does not use without waiting for the
                                node (in order with the others; replies read later), default true
``drive_batch``                 with ``drive_pipeline``: those calls travel as one ``batch`` frame with
                                the next awaited call or at the end of the scheduler's pass (a pass
                                with nothing scheduled waits for a later frame, up to 250 ms), when the
                                node lists ``batch`` in its hello, default true
``drive_compact``               with ``drive_batch``: a batch's admissions, queries, allocations and steps
                                go as arrays by position (docs/bridge-protocol.md, ``compact``) when the
                                node lists ``compact`` in its hello, default true
``drive_derived``               with ``drive_compact``: a step's new request whose block ids and params are
                                those its allocation and admission sent in the same batch goes as its id
                                and computed tokens (``derived``, when the node lists it), default true
``drive_steady``                with ``drive_compact``: a step's cached ids go as the previous step's number
                                when they are its ids, and its new block ids by index, the None ones left
                                out (``steady``, when the node lists it), default true
``drive_agreed``                with ``drive_batch``: a batch's reply leaves out the empty answers and those
                                equal to the ``acted`` their call carries (``agreed``, when the node lists
                                it; a divergence still comes in full), default true
``drive_brief``                 with ``drive_agreed``: a batch's reply leaves out the node's metadata for the
                                worker too (``build_connector_meta``'s answer, when the node lists
                                ``brief``): vLLM's worker gets the inner's, and unpacking the node's (150 KB
                                for a step of 256 requests to save) cost vLLM's scheduler thread
                                milliseconds; ``drive_metadata`` is then None. Default true
``drive_matched_from_inner``    with ``drive_pipeline``: vLLM gets the inner connector's answer to
                                ``get_num_new_matched_tokens`` at once; the call still goes to the node
                                (unawaited, in order) and the node's answer is checked when it is read: a
                                different one counts as a drive divergence and a fallback, and is logged.
                                The call carries the answer vLLM acted on (``acted``): the node journals it
                                and names a different answer of its own (``drive_answer_diverged``).
                                Default true: the inner's answer while the node agrees; from the first
                                divergence read on, vLLM waits for the node's answer to every later call
                                (logged once; ``drive_matched_awaited`` turns true). ``always``: the
                                inner's answer always, only checked; false: vLLM always waits for the node's answer
``drive_finished_from_inner``   with ``drive_pipeline``: the same for ``request_finished``: vLLM gets the
                                inner's ``(delay_free, kv_transfer_params)`` at once; the node's answer is
                                the same when its ``delay_free`` and its params, key for key (a tuple as
                                the list msgpack makes of it), are. Default true: while the node agrees;
                                from the first divergence read of ``request_finished`` or of a producer's
                                freed rewrite (below) on, vLLM waits for the node's answer to every later
                                ``request_finished`` and ``update_connector_output`` (logged once;
                                ``drive_finished_awaited`` turns true). ``always``: the inner's for good;
                                false: always awaited (the default before)
``drive_freed_from_inner``      with ``drive_finished_from_inner`` (and only then): the same for a producer's
                                ``update_connector_output``: vLLM keeps the inner's rewrite of
                                ``finished_sending`` (which requests' blocks it frees now) and nothing
                                waits; the call carries that set as ``acted``; the node's rewrite is the
                                same when it holds the same requests (in any order). Default true: the
                                inner that decided which frees to defer also decides when they end (the
                                node's rewrite would free by another's deferrals), and it switches with
                                ``drive_finished_from_inner``; false awaits the node's rewrite after a
                                finish

The switches from the inner's answer to the node's go by group, each on its own divergence: the
queries (``get_num_new_matched_tokens``) and the finishes (``request_finished`` with the frees of
their deferrals). A query's answer and a finish's share no state in vLLM or in the recorder, and a
difference in how the node models prefix hits says nothing of its finish decisions: each group keeps
the cheap path while its own answers agree (every divergence is still counted, logged and journaled).
A finish and the frees it defers switch together, because vLLM frees a request by the rewrite of the
side whose ``delay_free`` it acted on: the node's rewrite knows only the node's deferrals, the inner's
only the inner's. Across the switch each request is freed once: the deferrals vLLM took from the inner
before it end by the inner's rewrite, the later ones by the node's, and the node's rewrite loses the
requests whose finish vLLM took from the inner (``_drive_finish_switch``).
"""

from __future__ import annotations

import functools
import importlib
import itertools
import logging
import operator
import os
import sys
import threading

from . import __version__
from . import stream as _stream_module
from .stream import FileSink, Stream, ZmqSink, plain

from vllm.distributed.kv_transfer.kv_connector.v1.base import (  # noqa: E402  (needs vLLM)
    KVConnectorBase_V1,
    KVConnectorRole,
)

try:  # SupportsHMA arrived in newer vLLM versions
    from vllm.distributed.kv_transfer.kv_connector.v1.base import SupportsHMA
except ImportError:  # pragma: no cover - older vLLM
    SupportsHMA = None

log = logging.getLogger("vllm.kvledger_vllm")

DEFAULT_INNER = "MoRIIOConnector"
# Where MoRIIO lives when vLLM's registry cannot be asked (module paths of the newest tree first).
_KNOWN_MODULES = {
    "MoRIIOConnector": (
        "vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector",
        "vllm.distributed.kv_transfer.kv_connector.v1.moriio_connector",
    ),
    "NixlConnector": (
        "vllm.distributed.kv_transfer.kv_connector.v1.nixl_connector",
        "vllm.distributed.kv_transfer.kv_connector.v1.nixl.connector",
    ),
}

_LOWER_HEX = frozenset("0123456789abcdef")

_FINISH_STATUSES = ("FINISHED_STOPPED", "FINISHED_LENGTH_CAPPED", "FINISHED_ABORTED", "FINISHED_IGNORED",
                    "FINISHED_ERROR")


# ---------------------------------------------------------------------- resolving the inner class

def _extra_config(vllm_config):
    try:
        ktc = vllm_config.kv_transfer_config
        extra = getattr(ktc, "kv_connector_extra_config", None)
        return extra if isinstance(extra, dict) else {}
    except Exception:  # noqa: BLE001
        return {}


def resolve_inner_class(extra):
    """The inner connector class named by ``extra`` (``inner_connector``, ``inner_connector_module_path``)."""
    name = extra.get("inner_connector") or DEFAULT_INNER
    module_path = extra.get("inner_connector_module_path")
    if module_path:
        return getattr(importlib.import_module(module_path), name)
    try:
        from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
        registry = getattr(KVConnectorFactory, "_registry", {})
        if name in registry:
            return registry[name]()
    except ImportError:
        pass
    errors = []
    for mod in _KNOWN_MODULES.get(name, ()):
        try:
            return getattr(importlib.import_module(mod), name)
        except (ImportError, AttributeError) as e:
            errors.append(f"{mod}: {e}")
    raise ImportError(f"kvledger recorder: cannot find the inner connector {name!r} "
                      f"(set inner_connector_module_path); tried {errors or 'vLLM registry'}")


def _names_inner(extra):
    return bool(extra) and bool(extra.get("inner_connector") or extra.get("inner_connector_module_path"))


def _current_config_extra(name=None):
    """The extra config of vLLM's current config (``get_current_vllm_config_or_none``) when it
    configures a kvledger recorder (``name``, if given, as its ``kv_connector``), else None."""
    try:
        from vllm.config import get_current_vllm_config_or_none
        cfg = get_current_vllm_config_or_none()
    except Exception:  # noqa: BLE001 - an older vLLM, or none
        return None
    ktc = getattr(cfg, "kv_transfer_config", None)
    if ktc is None or getattr(ktc, "kv_connector_module_path", None) != "kvledger_vllm":
        return None
    if name is not None and getattr(ktc, "kv_connector", None) != name:
        return None
    extra = getattr(ktc, "kv_connector_extra_config", None)
    return extra if isinstance(extra, dict) else {}


def _class_for_classmethod(cls, extra):
    """The inner class a class method asks, the configured one in every process: the config the
    call passes (``vllm_config``, ``extra_config``) when it names an inner connector; else the inner
    the class was resolved for (``configured_class``: vLLM's factory handed the config over); else
    vLLM's current config; else the inner built in this process; else the default inner."""
    if _names_inner(extra):
        return resolve_inner_class(extra)
    configured = getattr(cls, "_configured_inner", None)
    if configured is not None:
        return configured
    current = _current_config_extra()
    if _names_inner(current):
        return resolve_inner_class(current)
    seen = getattr(cls, "_inner_class_seen", None)
    if seen is not None:
        return seen
    return resolve_inner_class(extra or {})


# ---------------------------------------------------------------------- helpers on the calling thread

def _request_id(request):
    return str(request.request_id)


def _block_groups(value):
    """Block ids as a list of int lists (per KV-cache group), from a list, tuple of lists, or None."""
    if value is None:
        return []
    value = list(value)
    if value and not isinstance(value[0], (list, tuple)):
        return [list(map(int, value))]
    return [list(map(int, g)) for g in value]


def _status_name(request):
    """The request's finish status by name. A status the journal format does not know (a newer
    vLLM's) is written as FINISHED_ABORTED: MoRIIO only tells FINISHED_LENGTH_CAPPED from the
    rest, and an unknown name would make the whole file fail to import."""
    st = getattr(request, "status", None)
    name = (getattr(st, "name", None) or str(st)).rsplit(".", 1)[-1]
    return name if name in _FINISH_STATUSES else "FINISHED_ABORTED"


def _admission(request):
    """A request's admission fields (``request_admitted``, the bridge's ``add_request``), params copied."""
    ids = getattr(request, "prompt_token_ids", None)
    n = getattr(request, "num_prompt_tokens", None)
    if not isinstance(n, int):
        n = len(ids) if ids is not None else 0
    params = getattr(request, "kv_transfer_params", None)
    return {"request_id": _request_id(request), "num_prompt_tokens": n,
            "prompt_token_ids_len": len(ids) if ids is not None else None,
            "kv_transfer_params": plain(params) if params is not None else None}


# the compact form (drive mode, a node that takes it): values packed at once as they are when they
# are what ``plain`` and ``_block_groups`` would give anyway (same msgpack bytes), else converted
_STR_TYPE = frozenset((str,))
_PLAIN_TYPES = frozenset((str, int, float, bool, type(None)))
_INT_TYPE = frozenset((int,))
_SEQ_TYPES = frozenset((list, tuple))


def _params_packable(params):
    """``plain(params)`` for the compact form, packed later (``NodeBridge.send_row``): a dict of str
    keys and plain scalars copied shallowly (the connector may set its keys later), anything else
    converted."""
    if type(params) is dict and _STR_TYPE.issuperset(map(type, params)) and _PLAIN_TYPES.issuperset(
            map(type, params.values())):
        return params.copy()
    return None if params is None else plain(params)


_compress = itertools.compress
# update_connector_output's quiet call's args when no ids came (_id_list's: None, or [] for an empty set),
# by (finished_sending is None, finished_recving is None): shared, packed as they are, never changed
_EMPTY_IDS = frozenset((set, frozenset, list, tuple))
_NO_IDS = {(a, b): {"finished_sending": None if a else [], "finished_recving": None if b else []}
           for a in (True, False) for b in (True, False)}
# the same with drive_freed_from_inner when the inner freed none: the call carries what vLLM acted on
_NO_IDS_ACTED = {k: dict(v, acted={"finished_sending": None}) for k, v in _NO_IDS.items()}
_NO_BLOCKS = {}  # never changed: packed as an empty map (no request with new blocks)


def _steady_fields(bridge, step, ids, nbs):
    """A step's cached ids and new block ids for a node that takes ``steady`` (docs/bridge-protocol.md):
    the ids as the previous step's number when they are the ids sent then (one C-level ``==``: vLLM's
    ids are the same str objects step to step), else as strs (remembered with this step); the new
    block ids as ``{"at": indexes, "blocks": groups}``, the None ones left out (C-level passes; a
    Python call per request with new blocks only when they are not vLLM's lists of int lists). ``bridge.steady_ids``/``steady_step``: what the node remembers of
    the connection; None after any failure (``NodeBridge._failed``), so that the next step goes in
    full. Gives ``(ids, blocks, steady)``, ``steady`` when the ids went as a number (whether or not
    some request has new blocks: a decode step's usual news, which the node reads whenever)."""
    last = bridge.steady_ids
    if last is not None and ids == last:
        ids = bridge.steady_step
        bridge.steady_numbers += 1
    else:
        ids = bridge.steady_ids = list(map(str, ids))
        last = ids
    bridge.steady_step = step
    nbs = nbs or []
    if type(nbs) is not list and type(nbs) is not tuple:
        nbs = list(nbs)
    if len(nbs) > len(last):
        nbs = nbs[:len(last)]
    nones = nbs.count(None)  # (list.count: C-level, by identity first)
    if nones == len(nbs):
        return ids, _NO_BLOCKS, type(ids) is int
    blocks = list(_compress(nbs, nbs))  # the entries that are not None when none of them is empty
    if len(blocks) + nones == len(nbs):
        has = nbs
    else:  # an empty entry (not None): kept, by identity
        has = list(map(operator.is_not, nbs, itertools.repeat(None)))
        blocks = list(_compress(nbs, has))
    # as they are when each is a list or tuple of int lists (vLLM's: packed before the hook returns),
    # checked by type in three C-level passes; else each as _blocks_packable gives it
    if not (_SEQ_TYPES.issuperset(map(type, blocks)) and _SEQ_TYPES.issuperset(map(type, _chain(blocks)))
            and _INT_TYPE.issuperset(map(type, _chain(_chain(blocks))))):
        blocks = list(map(_blocks_packable, blocks))
    return ids, {"at": list(_compress(range(len(nbs)), has)), "blocks": blocks}, type(ids) is int


def _blocks_packable(value):
    """``_block_groups(value)`` for the compact form: a list or tuple of int lists as it is (vLLM
    builds them afresh for the hook, and they are packed before it returns), anything else converted."""
    t = type(value)
    if t is tuple or t is list:
        for g in value:
            t = type(g)
            if (t is not list and t is not tuple) or not _INT_TYPE.issuperset(map(type, g)):
                return _block_groups(value)
        return value
    return _block_groups(value)


def _blocks_sent_later(value):
    """``_block_groups(value)`` for a call that may wait in the batch until the step's end
    (``request_finished``): a list or tuple of int lists, or a flat list or tuple of ints (a connector
    without HMA gets one group), checked by type in C-level passes and copied with one C-level
    ``list(g)`` per group (the inner's answer may hand the same lists on: MoRIIO's
    ``remote_block_ids`` is the list vLLM passed); anything else converted as ``_block_groups`` does.
    Gives ``(groups, checked)``: ``checked`` the int lists taken as they were (none when converted)."""
    t = type(value)
    if t is list or t is tuple:
        types = set(map(type, value))
        if types <= _INT_TYPE:
            return ([list(value)], (value,)) if value else ([], ())
        if types <= _SEQ_TYPES:
            for g in value:
                if not set(map(type, g)) <= _INT_TYPE:
                    return _block_groups(value), ()
            return list(map(list, value)), tuple(value)
    return _block_groups(value), ()


def _is_checked(v, checked):
    for c in checked:
        if v is c:
            return True
    return False


def _plain_list(v, checked=()):
    """``plain(v)`` for a list or tuple ``v`` of plain scalars or of lists or tuples of them, as fresh
    lists; None for anything else. ``checked``: the int lists ``_blocks_sent_later`` took as they were
    (MoRIIO's ``remote_block_ids`` is the list vLLM passed), which need no second check."""
    if checked and _is_checked(v, checked):
        return list(v)
    types = set(map(type, v))
    if types <= _PLAIN_TYPES:
        return list(v)
    if types <= _SEQ_TYPES:
        for g in v:
            if not (checked and _is_checked(g, checked)) and not set(map(type, g)) <= _PLAIN_TYPES:
                return None
        return list(map(list, v))
    return None


def _params_sent_later(params, checked=()):
    """``plain(params)`` for a call that may wait in the batch until the step's end (the ``acted``
    params of ``request_finished``): a dict of str keys whose values are plain scalars, lists or tuples
    of plain scalars, or lists or tuples of such lists, copied shallowly and per list (as lists: what
    ``plain`` gives and msgpack packs alike), with C-level checks; anything else ``plain``'s.
    ``checked``: as for ``_plain_list``."""
    if type(params) is not dict or not _STR_TYPE.issuperset(map(type, params)):
        return None if params is None else plain(params)
    out = params.copy()
    if _PLAIN_TYPES.issuperset(map(type, params.values())):
        return out
    for k, v in params.items():
        t = type(v)
        if t in _PLAIN_TYPES:
            continue
        if t is not list and t is not tuple:
            return plain(params)
        v = _plain_list(v, checked)
        if v is None:
            return plain(params)
        out[k] = v
    return out


def _params_copy(params):
    """What the calling thread keeps of a ``kv_transfer_params`` dict the connector may change later:
    a shallow copy (connectors set and replace its keys; ``plain`` converts it on the writer thread)."""
    if params is None:
        return None
    return dict(params) if isinstance(params, dict) else params


def _admission_fields(rid, n, ids_len, params):
    """``request_admitted``'s fields, on the writer thread, from what the calling thread read
    (``_admission_later``)."""
    return {"request_id": rid, "num_prompt_tokens": n if isinstance(n, int) else (ids_len or 0),
            "prompt_token_ids_len": ids_len, "kv_transfer_params": plain(params) if params is not None else None}


def _admission_later(request, rid):
    """``_admission``'s fields as a deferred tuple for the writer thread (``Stream.put``): the
    attributes read now, the params copied shallowly now and converted there."""
    ids = getattr(request, "prompt_token_ids", None)
    p = getattr(request, "kv_transfer_params", None)
    return (_admission_fields, rid, getattr(request, "num_prompt_tokens", None), None if ids is None else len(ids),
            p.copy() if type(p) is dict else _params_copy(p))


def _flag(value):
    """A boolean option as a config may spell it (``false``, ``0``, ``no``, ``off`` are false)."""
    return value if isinstance(value, bool) else str(value).lower() not in ("false", "0", "no", "off")


def _matched_mode(value):
    """``drive_matched_from_inner`` as a config may spell it: ``"always"`` (the inner's answer always),
    a true flag (the inner's answer until the node first answers otherwise) or a false one (never)."""
    if isinstance(value, str) and value.strip().lower() == "always":
        return "always"
    return "until_diverged" if _flag(value) else None


def _matched_answer(result):
    """The node's answer to ``get_num_new_matched_tokens`` as vLLM would take it."""
    return result.get("num_tokens"), bool(result.get("load_async"))


def _matched_check(recorder, acted, result):
    """``_drive_checked("get_num_new_matched_tokens", acted, _matched_answer)``'s check, as one
    function (bound per call with ``functools.partial``: no closure, one call less per answer)."""
    node = result.get("num_tokens"), bool(result.get("load_async"))
    if node != acted:
        recorder._drive_diverged("get_num_new_matched_tokens", acted, node)


_partial = functools.partial
_get_ident = threading.get_ident
# the (hook, on_result) pairs of the compact rows whose reply needs no check (``NodeBridge.add_row``)
_ADD_REQUEST = ("add_request", None)
_ALLOCATED = ("update_state_after_alloc", None)


def _finish_answer(result):
    """The node's answer to ``request_finished`` as vLLM would take it (params as msgpack made them)."""
    return bool(result.get("delay_free")), result.get("kv_transfer_params")


def _output_sending(result):
    return result.get("finished_sending") or None


def _full(on_result, result):
    from .drive import _full as full
    full(on_result, result)


def _cached_captured(crd):
    """A step's cached requests as the sender thread takes them (``_drive_step_later``): their ids
    copied, their new block ids by reference (vLLM builds them afresh each step) but a resumed
    request's, which become the model runner's and grow in place: kept with their lengths
    (``_grown_blocks``). ``(ids, new block ids)``; ``(None, ())`` when none."""
    ids = getattr(crd, "req_ids", None) if crd is not None else None
    nbs = ()
    if ids:
        ids = list(ids)
        nbs = getattr(crd, "new_block_ids", ())
        if nbs and (getattr(crd, "resumed_req_ids", None) or any(getattr(crd, "resumed_from_preemption", ()))):
            nbs = list(nbs)
            nbs = (_GROWN, nbs, list(map(len, _chain(filter(None, nbs)))))
    return ids, nbs


def _id_list(value):
    """The ids as a sorted list of str (None for None); an empty set or list without a Python loop
    (a decode step's usual ``KVConnectorOutput`` carries none)."""
    if value is None:
        return None
    t = type(value)
    if (t is set or t is frozenset or t is list or t is tuple) and not value:
        return []
    return sorted(map(str, value))


# ---------------------------------------------------------------------- the connector metadata

_ABSENT = object()


def _meta_groups(value):
    """Block ids of a ReqMeta as groups: None stays None (as kvledger's ReqMeta has it), ``[]`` is
    one empty group, a value that is not block ids is None."""
    if value is None:
        return None
    try:
        value = list(value)
        if not value:
            return [[]]
        return _block_groups(value)
    except (TypeError, ValueError):
        return None


def _meta_int(value):
    """An int field of a ReqMeta; -1 when this connector's ReqMeta has no such field (or a non-int)."""
    if value is _ABSENT or value is None or isinstance(value, bool):
        return -1
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _req_meta(request_id, m, write_mode):
    """One ReqMeta of the connector's metadata in the journal's ``ReqMeta`` shape (journal/FORMAT.md).

    MoRIIO's ReqMeta keeps the request id as its dict key and write mode as the dict it is in
    (``reqs_to_save``); ``tp_size`` is kvledger's ``remote_tp_size``; ``multi_pod_hosts`` (the
    newest ReqMeta's name, which its worker reads) or else ``remote_hosts`` its ``multi_pod_hosts``. A field this version's ReqMeta lacks is written as -1 (ints), null
    (``transfer_id``) or an empty list (``multi_pod_hosts``): ``replay --verify`` does not compare it.
    """
    if isinstance(m, dict):
        def g(name):
            return m.get(name, _ABSENT)
    else:
        def g(name):
            return getattr(m, name, _ABSENT)

    eid = g("remote_engine_id")
    host = g("remote_host")
    tid = g("transfer_id")
    hosts = g("multi_pod_hosts")
    if hosts is _ABSENT:
        hosts = g("remote_hosts")
    return {"request_id": str(request_id),
            "local_block_ids": _meta_groups(g("local_block_ids") if g("local_block_ids") is not _ABSENT else None),
            "remote_block_ids": _meta_groups(None if g("remote_block_ids") is _ABSENT else g("remote_block_ids")),
            "remote_engine_id": None if eid is _ABSENT or eid is None else str(eid),
            "remote_host": None if host is _ABSENT or host is None else str(host),
            "remote_handshake_port": _meta_int(g("remote_handshake_port")),
            "remote_notify_port": _meta_int(g("remote_notify_port")),
            "remote_dp_rank": _meta_int(g("remote_dp_rank")),
            "remote_dp_size": _meta_int(g("remote_dp_size")),
            "remote_dp_size_local": _meta_int(g("remote_dp_size_local")),
            "remote_tp_size": _meta_int(g("tp_size")),
            "transfer_id": None if tid is _ABSENT else plain(tid),
            "multi_pod_hosts": [str(h) for h in hosts] if isinstance(hosts, (list, tuple)) else None,
            "write_mode": bool(write_mode)}


_REQ_META_FIELDS = ("local_block_ids", "remote_block_ids", "remote_engine_id", "remote_host",
                    "remote_handshake_port", "remote_notify_port", "remote_dp_rank", "remote_dp_size",
                    "remote_dp_size_local", "tp_size", "transfer_id", "multi_pod_hosts", "remote_hosts")


class _LaterBlocks:
    """Block ids handed to a hook, kept as they were (a shallow copy) and converted to groups on
    the writer thread (``_later``)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = tuple(value) if isinstance(value, (list, tuple)) else value

    def convert(self):
        return _block_groups(self.value)


class _LaterIds:
    """A set of request ids (or None), copied now, sorted on the writer thread."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = None if value is None else tuple(value)

    def convert(self):
        return _id_list(self.value)


class _LaterStatus:
    """A request's status, named on the writer thread (``_status_name``)."""

    __slots__ = ("status",)

    def __init__(self, request):
        self.status = getattr(request, "status", None)

    @staticmethod
    def of(status):
        """A holder of ``status`` itself (``_status_name`` reads a ``status`` attribute)."""
        h = _LaterStatus.__new__(_LaterStatus)
        h.status = status
        return h

    def convert(self):
        return _status_name(self)


_LATER = (_LaterBlocks, _LaterIds, _LaterStatus)


# Deferred converters: the hooks hand ``Stream.put`` a tuple ``(converter, *snapshot)``, built on
# the calling thread from what it read (cheaper than a closure or wrapper objects), and the writer
# thread calls the converter.

def _queried_fields(rid, num_computed_tokens):
    return {"request_id": rid, "num_computed_tokens": int(num_computed_tokens)}


def _matched_fields(rid, count, load_async):
    return {"request_id": rid, "count": int(count), "load_async": bool(load_async)}


def _blocks_allocated_fields(rid, block_ids, num_external_tokens):
    return {"request_id": rid, "blocks": _block_groups(block_ids), "num_external_tokens": int(num_external_tokens)}


def _output_fields(sending, recving):
    return {"finished_sending": _id_list(sending), "finished_recving": _id_list(recving)}


def _safe_fields(kept):
    return {"safe": _id_list(kept) or []}


def _finished_fields(rid, status, block_ids, admitted):
    out = {"request_id": rid, "status": _status_name(_LaterStatus.of(status)), "block_ids": _block_groups(block_ids)}
    if admitted is not None:
        out["admitted_request_id"] = admitted
    return out


def _decision_fields(rid, delay_free, params):
    return {"request_id": rid, "delay_free": delay_free, "kv_transfer_params": plain(params)}


def _step_fields(step, ids, new_blocks, new_reqs, preempted):
    # vLLM builds these lists afresh each step and hands them over (a resumed request's: see _grown_blocks)
    if type(new_blocks) is tuple and new_blocks and new_blocks[0] is _GROWN:
        new_blocks = _grown_blocks(new_blocks[1], new_blocks[2])
    cached = []
    for i, r in enumerate(ids):
        nb = new_blocks[i] if i < len(new_blocks) else None
        cached.append({"request_id": str(r), "new_block_ids": None if nb is None else _block_groups(nb)})
    out = {"step": step, "scheduled_cached_reqs": cached}
    if new_reqs is not _ABSENT:
        out["scheduled_new_reqs"] = _new_requests_fields(new_reqs)
    if preempted is not _ABSENT:
        out["preempted_req_ids"] = sorted(str(x) for x in preempted)
    return out


def _step_entry(step, cached, new_reqs, preempted, recv, save, send, size):
    """The flat entry ``build_connector_meta`` captures (``Stream.put``): ``step_scheduled`` and its
    ``metadata_built`` reply (none when ``recv`` is ``_ABSENT``), converted as two deferred tuples.
    ``cached``: vLLM's ``scheduled_cached_reqs`` itself, or ``(ids, new block ids)`` as the hook
    kept them (a resumed request's), or None."""
    if cached is None:
        ids = new_blocks = ()
    elif type(cached) is tuple:
        ids, new_blocks = cached
    else:
        ids, new_blocks = _CACHED_FIELDS(cached)
        ids = ids or ()
        new_blocks = new_blocks or ()
    fields = (_step_fields, step, ids, new_blocks, new_reqs, preempted)
    if recv is _ABSENT:
        return "step_scheduled", fields, None, None
    return "step_scheduled", fields, "metadata_built", (_metadata_fields, step, recv, save, send, size)


def _later(fields):
    """``fields`` as a function for the writer thread, which converts its ``_Later*`` values."""
    def convert():
        return {k: (v.convert() if isinstance(v, _LATER) else v) for k, v in fields.items()}
    return convert


def _Fields(m):
    """A ReqMeta's attributes as they were when captured (read now, converted later), as a dict."""
    d = getattr(m, "__dict__", None)
    if type(d) is dict and "remote_block_ids" in d and "local_block_ids" in d:
        return d.copy()  # a plain (data)class instance: its attributes in one copy
    out = {}
    for name in _REQ_META_FIELDS:
        v = getattr(m, name, _ABSENT)
        if v is not _ABSENT:
            out[name] = v
    return out


def metadata_snapshot(step, meta):
    """What the ``metadata_built`` reply needs of ``build_connector_meta``'s result, taken on the
    calling thread: the entries of ``reqs_to_recv`` and ``reqs_to_save`` (each ReqMeta's attributes
    copied shallowly: MoRIIO builds fresh ones each step and hands its block id lists over for
    good), the ids of ``reqs_to_send`` and the size of ``transfer_id_to_request_id`` (MoRIIO hands
    the worker its live map, so its size is taken now). Returns a function giving the reply fields
    (a deferred tuple ``(converter, *snapshot)`` for ``Stream.put``: the writer thread converts the
    block ids), or None when the object holds
    neither ``reqs_to_recv`` nor ``reqs_to_save`` as a dict (not a MoRIIO-like connector's metadata:
    nothing kvledger could compare is recorded).
    """
    try:  # MoRIIO's metadata: all four attributes
        recv, save, send, mapping = _META_FIELDS(meta)
    except AttributeError:
        recv = getattr(meta, "reqs_to_recv", None)
        save = getattr(meta, "reqs_to_save", None)
        send = getattr(meta, "reqs_to_send", None)
        mapping = getattr(meta, "transfer_id_to_request_id", None)
    if not isinstance(recv, dict) and not isinstance(save, dict):
        return None
    return (_metadata_fields, step, _metas(recv) if recv else (), _metas(save) if save else (),
            None if send is None else list(send) if send else [], len(mapping) if mapping is not None else -1)


_META_FIELDS = operator.attrgetter("reqs_to_recv", "reqs_to_save", "reqs_to_send", "transfer_id_to_request_id")
_CACHED_FIELDS = operator.attrgetter("req_ids", "new_block_ids")


def _metas(d):
    """The (request id, attributes) of a ``reqs_to_*`` dict's ReqMetas, copied shallowly now (a
    worker in the same process sets some, ``remote_engine_id`` for one, after this step)."""
    try:
        out = [(r, m.__dict__.copy()) for r, m in d.items()]
        f = out[0][1] if out else None
        if f is not None and ("remote_block_ids" not in f or "local_block_ids" not in f):
            raise AttributeError  # not a plain (data)class instance (one class per dict)
        return out
    except AttributeError:
        return [(r, _Fields(m)) for r, m in d.items()]


def _metadata_fields(step, recv, save, send, size):
    return {"step": int(step),
            "reqs_to_recv": [_req_meta(r, m, False) for r, m in recv],
            "reqs_to_save": [_req_meta(r, m, True) for r, m in save],
            "reqs_to_send": None if send is None else [str(r) for r in send],
            "mapping_size": size}


def metadata_reply(step, meta):
    """The ``metadata_built`` reply fields for ``build_connector_meta``'s result (None: not MoRIIO-like)."""
    f = metadata_snapshot(step, meta)
    return None if f is None else f[0](*f[1:])


_NEW_REQ_FIELDS = operator.attrgetter("req_id", "block_ids", "num_computed_tokens", "sampling_params")
_ID_AND_COMPUTED = operator.attrgetter("req_id", "num_computed_tokens")
_BLOCK_IDS = operator.attrgetter("block_ids")
_EXTRA_ARGS = operator.attrgetter("sampling_params.extra_args")
_KV_PARAMS = operator.itemgetter("kv_transfer_params")
_is = operator.is_
_repeat = itertools.repeat
_REQ_ID = operator.attrgetter("req_id")
_COMPUTED = operator.attrgetter("num_computed_tokens")
_DICT_TYPE = frozenset((dict,))
_chain = itertools.chain.from_iterable
# the first item of a snapshot whose block id lists are kept with their lengths (``_grown_blocks``)
_GROWN = object()


def _grown_blocks(blocks, lengths):
    """Block id groups as they were when ``lengths`` was taken (one length per group, in order).

    vLLM hands the scheduler's fresh block id lists to the model runner, which in the engine-core
    process may be the same process: a new request's lists (``NewRequestData.block_ids``) become
    its ``CachedRequestState.block_ids``, a resumed request's ``new_block_ids`` replace it, and from
    then on ``_update_states`` only ever extends them in place (``block_ids.extend(new_ids)``; vLLM
    239b5ff30's ``gpu_model_runner`` and main's alike, the scheduler keeps none of them, model runner
    v2 copies them into its block table). So the calling thread keeps each list and its length, and
    the writer thread takes the prefix, which is the list as it was at the hook. A runner that
    rewrote ids in place would break this; vLLM's does not."""
    it = iter(lengths)
    return [None if b is None else tuple(g[:next(it)] for g in b) for b in blocks]


_SO_FIELDS = operator.attrgetter("scheduled_new_reqs", "preempted_req_ids", "scheduled_cached_reqs")


def _new_requests_snapshot(scheduler_output):
    """What ``scheduled_new_reqs`` holds, read on the calling thread, or ``_ABSENT`` when this
    vLLM's scheduler output has no such field; ``_new_requests_fields`` converts it.

    For vLLM's ``NewRequestData`` (a block id tuple of lists, params in ``sampling_params.extra_args``):
    ``(_GROWN, [(id, num_computed_tokens)], [block_ids], [length of each list], [params])``, the block
    id lists kept with their lengths (``_grown_blocks``) and each ``kv_transfer_params`` dict copied
    shallowly (it is the request's own dict, which connectors change: MoRIIO sets
    ``do_remote_prefill``, a 3c201bf2 producer ``_p_side_truncated``). Otherwise a list of
    ``(id, block groups, num_computed_tokens, params)``, lists and params copied."""
    reqs = getattr(scheduler_output, "scheduled_new_reqs", _ABSENT)
    if reqs is _ABSENT:
        return _ABSENT
    return _new_requests_snapshot_of(reqs) if reqs else []


def _new_requests_snapshot_of(reqs):
    """``_new_requests_snapshot`` of a non-empty ``scheduled_new_reqs``."""
    try:
        blocks = list(map(_BLOCK_IDS, reqs))
        return (_GROWN, list(map(_ID_AND_COMPUTED, reqs)), blocks, list(map(len, _chain(blocks))),
                list(map(dict.copy, map(_KV_PARAMS, map(_EXTRA_ARGS, reqs)))))
    except (AttributeError, TypeError, KeyError):
        pass  # a request without params (or not vLLM's NewRequestData): each one as it comes
    out = []
    for r in reqs or ():
        sp = getattr(r, "sampling_params", None)
        extra_args = getattr(sp, "extra_args", None)
        params = extra_args.get("kv_transfer_params") if isinstance(extra_args, dict) else None
        blocks = getattr(r, "block_ids", None)
        try:
            blocks = None if blocks is None else tuple(list(g) if isinstance(g, (list, tuple)) else g for g in blocks)
        except TypeError:
            pass
        out.append((r.req_id, blocks, getattr(r, "num_computed_tokens", 0), _params_copy(params)))
    return out


def _new_requests_rows(snapshot):
    """A ``_new_requests_snapshot`` as ``(id, block groups, num_computed_tokens, params)`` rows."""
    if type(snapshot) is not tuple or not snapshot or snapshot[0] is not _GROWN:
        return snapshot
    _, ids, blocks, lengths, params = snapshot
    return [(rid, b, n, p) for (rid, n), b, p in zip(ids, _grown_blocks(blocks, lengths), params)]


def _new_requests_fields(snapshot):
    """The journal's ``NewRequest`` entries of a ``_new_requests_snapshot``."""
    return [{"request_id": str(rid), "block_ids": _block_groups(blocks), "num_computed_tokens": int(n or 0),
             "kv_transfer_params": plain(params) if params is not None else None}
            for rid, blocks, n, params in _new_requests_rows(snapshot)]


def _new_requests_now(reqs):
    """``_new_requests_fields`` of a non-empty ``scheduled_new_reqs`` taken at once, in one pass
    (drive mode without recording: nothing is converted later, so nothing is kept to convert)."""
    try:
        return [{"request_id": str(rid), "block_ids": _block_groups(blocks), "num_computed_tokens": int(n or 0),
                 "kv_transfer_params": plain(params)}
                for (rid, n), blocks, params in zip(map(_ID_AND_COMPUTED, reqs), map(_BLOCK_IDS, reqs),
                                                    map(_KV_PARAMS, map(_EXTRA_ARGS, reqs)))]
    except (AttributeError, TypeError, KeyError):
        return _new_requests_fields(_new_requests_snapshot_of(reqs))


def _new_request_rows_now(reqs):
    """``_new_requests_now`` by position (the compact ``build_connector_meta``'s ``scheduled_new_reqs``)."""
    try:
        return [(str(rid), _blocks_packable(blocks), int(n or 0), _params_packable(params))
                for (rid, n), blocks, params in zip(map(_ID_AND_COMPUTED, reqs), map(_BLOCK_IDS, reqs),
                                                    map(_KV_PARAMS, map(_EXTRA_ARGS, reqs)))]
    except (AttributeError, TypeError, KeyError):
        return [(f["request_id"], f["block_ids"], f["num_computed_tokens"], f["kv_transfer_params"])
                for f in _new_requests_fields(_new_requests_snapshot_of(reqs))]


def _new_request_rows_derived(reqs, admitted, allocated):
    """``_new_request_rows_now`` where a request may go as ``(request_id, num_computed_tokens)``
    (``derived``): when its block ids equal those its ``update_state_after_alloc`` row put in this
    batch (``allocated``: equal ints pack, or ``_block_groups`` converts, to the same) and its params
    are that ``add_request`` row's (``admitted``): in order, each key and value the same object (the
    row holds a shallow copy of plain scalars), or both None. Anything else goes in full. When every
    request of the step qualifies with params (a P/D burst), proven for all at once in C-level passes."""
    try:
        rids = list(map(_REQ_ID, reqs))
        params = list(map(_KV_PARAMS, map(_EXTRA_ARGS, reqs)))
        sent = list(map(admitted.get, rids, _repeat(_ABSENT)))
        if (_STR_TYPE.issuperset(map(type, rids)) and _DICT_TYPE.issuperset(map(type, params))
                and _DICT_TYPE.issuperset(map(type, sent))
                and list(map(allocated.get, rids, _repeat(_ABSENT))) == list(map(_BLOCK_IDS, reqs))
                and list(map(len, params)) == list(map(len, sent))
                and all(map(_is, _chain(params), _chain(sent)))
                and all(map(_is, _chain(map(dict.values, params)), _chain(map(dict.values, sent))))):
            ns = list(map(_COMPUTED, reqs))
            if _INT_TYPE.issuperset(map(type, ns)):
                return list(zip(rids, ns))
    except Exception:  # noqa: BLE001 - each one on its own below
        pass
    try:
        rows = [(rid, blocks, n, params) for (rid, n), blocks, params in zip(
            map(_ID_AND_COMPUTED, reqs), map(_BLOCK_IDS, reqs), map(_KV_PARAMS, map(_EXTRA_ARGS, reqs)))]
    except Exception:  # noqa: BLE001 - not vLLM's NewRequestData: each one in full
        return _new_request_rows_now(reqs)
    return _new_request_rows_derived_of(rows, admitted, allocated)


def _new_request_rows_of(rows):
    """``_new_request_rows_now`` of ``_new_requests_rows``' rows (the drive sender thread's, from the
    scheduler thread's ``_new_requests_snapshot``: params copied shallowly, block ids as they were)."""
    try:
        return [(str(rid), _blocks_packable(blocks), int(n or 0), _params_packable(params))
                for rid, blocks, n, params in rows]
    except Exception:  # noqa: BLE001 - odd values: as the journal's entries
        return [(f["request_id"], f["block_ids"], f["num_computed_tokens"], f["kv_transfer_params"])
                for f in _new_requests_fields(rows)]


def _new_request_rows_derived_of(rows, admitted, allocated):
    """``_new_request_rows_derived`` of ``_new_requests_rows``' rows (the same rows: a shallow copy of
    params holds the same keys and values, by identity, as the dict it was copied from)."""
    try:
        out = []
        for rid, blocks, n, params in rows:
            p = admitted.get(rid, _ABSENT) if type(rid) is str else _ABSENT
            if p is not _ABSENT and (p is params is None or (
                    type(params) is dict and type(p) is dict and len(p) == len(params)
                    and all(map(_is, _chain(p.items()), _chain(params.items()))))):
                b = allocated.get(rid, _ABSENT)
                if b is not _ABSENT and type(b) is type(blocks) and (b == blocks) is True:
                    out.append((rid, int(n or 0)))
                    continue
            out.append((str(rid), _blocks_packable(blocks), int(n or 0), _params_packable(params)))
        return out
    except Exception:  # noqa: BLE001 - odd values: each one in full
        return _new_request_rows_of(rows)


# vLLM's KVCacheBlocks (``get_block_ids()``: a tuple of fresh lists of each block object's ``block_id``):
# the drive's scheduler thread copies its lists of block objects (C-level), the sender thread reads the ids
_KV_BLOCKS_QUALNAME = ("vllm.v1.core.kv_cache_manager", "KVCacheBlocks")
_KV_BLOCKS_TYPES = {}


def _is_kv_blocks(t):
    """Whether ``t`` is vLLM's KVCacheBlocks as 239b5ff30 and main have it: its one field ``blocks`` (a
    fork's with more fields, e.g. block id overrides, gives its ids by ``get_block_ids()``)."""
    known = _KV_BLOCKS_TYPES.get(t)
    if known is None:
        fields = getattr(t, "__dataclass_fields__", None)
        known = _KV_BLOCKS_TYPES[t] = (getattr(t, "__module__", None), getattr(t, "__qualname__", None)) == \
            _KV_BLOCKS_QUALNAME and (fields is None or list(fields) == ["blocks"])
    return known


def _block_ids_of(objs):
    """``KVCacheBlocks.get_block_ids()`` of the block object lists copied at the hook."""
    return tuple([b.block_id for b in g] for g in objs)


class _Cached:
    """What the drive's scheduler thread captured of a step's ``scheduled_cached_reqs``."""

    __slots__ = ("req_ids", "new_block_ids")

    def __init__(self, req_ids, new_block_ids):
        self.req_ids = req_ids
        self.new_block_ids = new_block_ids


def _new_requests(scheduler_output):
    """``scheduled_new_reqs`` as the journal's ``NewRequest`` entries, or ``_ABSENT``."""
    snap = _new_requests_snapshot(scheduler_output)
    return snap if snap is _ABSENT else _new_requests_fields(snap)


def _preempted_snapshot(scheduler_output):
    ids = getattr(scheduler_output, "preempted_req_ids", _ABSENT)
    if ids is _ABSENT:
        return _ABSENT
    return list(ids) if ids else []


def _preempted(scheduler_output):
    """``preempted_req_ids`` sorted (None: none preempted, ``[]``), or ``_ABSENT`` when this vLLM's
    scheduler output has no such field."""
    ids = _preempted_snapshot(scheduler_output)
    return ids if ids is _ABSENT else sorted(str(x) for x in ids)


class RecorderConfigError(ValueError):
    """The recorder refuses its configuration at construction (one line: what and what to do)."""


def _is_hma(cls):
    return SupportsHMA is not None and isinstance(cls, type) and issubclass(cls, SupportsHMA)


def _hma_refusal(recorder_cls, inner_cls):
    """The one-line refusal when ``recorder_cls`` declares ``SupportsHMA`` and ``inner_cls`` does not
    (or the reverse), else None."""
    if _is_hma(recorder_cls) == _is_hma(inner_cls):
        return None
    inner = f"{inner_cls.__name__} ({inner_cls.__module__})"
    if _is_hma(recorder_cls):
        return (f"kvledger recorder: kv_connector {recorder_cls.__name__} declares SupportsHMA but the inner {inner} "
                f"does not (vLLM would call request_finished_all_groups on it and stop the engine at the first "
                f"finished request); configure kv_connector KvledgerRecorderConnector, which takes the inner's side")
    return (f"kvledger recorder: the inner {inner} is SupportsHMA but kv_connector {recorder_cls.__name__} does not "
            f"declare it (vLLM would pass it group 0 alone); configure kv_connector KvledgerRecorderConnectorHMA")


class KvledgerRecorderConnector(KVConnectorBase_V1):
    """Delegates every ``KVConnectorBase_V1`` method to the inner connector and records the hooks."""

    _inner_class_seen = None  # the inner class this process built (for class methods without config)
    _configured_inner = None  # the inner class this class was resolved for (configured_class)

    def __init__(self, vllm_config, role, kv_cache_config=None):
        # The base constructor only stores the config; it is called so that attributes vLLM code
        # reads directly (_vllm_config, _role, ...) exist on the wrapper too.
        try:
            super().__init__(vllm_config, role, kv_cache_config)
        except TypeError:  # older base classes take (vllm_config, role)
            super().__init__(vllm_config, role)
        extra = _extra_config(vllm_config)
        inner_cls = resolve_inner_class(extra)
        refusal = _hma_refusal(type(self), inner_cls)
        if refusal is not None:
            # before the inner is built: the engine does not start, and says why in one line
            log.error("%s", refusal)
            raise RecorderConfigError(refusal)
        type(self)._inner_class_seen = inner_cls
        KvledgerRecorderConnector._inner_class_seen = inner_cls
        try:
            self._inner = inner_cls(vllm_config, role, kv_cache_config)
        except TypeError:
            self._inner = inner_cls(vllm_config, role)
        self._pending_finished = None
        self._errors = {}
        self._seen = set()
        self._step = 0
        self._stream = None
        self._record_layers = False
        # this worker step's forward when its metadata posts reads: [request ids, layer waits,
        # ns blocked in them, when the last returned (-1)] (forward_done), else None
        self._fwd = None
        self._is_scheduler = role == KVConnectorRole.SCHEDULER
        self._producer_scheduler = False
        self._drive = None
        # with the sender thread (drive_sender_thread): the bridge's captured list's append, and the thread's id
        self._drive_capture = None
        self._drive_sender = None
        # whether the last step's call was handed off to the sender thread (else built in-thread)
        self._drive_handed = False
        # the sender thread standing aside (_drive_stand_aside): steps left that build in-thread, and the
        # bridge's count of reclaimed hand-offs last seen
        self._drive_aside = 0
        self._drive_reclaimed = 0
        self._drive_seen = set()
        self._drive_step = 0
        self.drive_fallbacks = 0
        self._drive_pipeline = True
        self._drive_producer = False
        # vLLM takes the inner's get_num_new_matched_tokens answer now (drive_matched_from_inner); and
        # whether the first divergence on it turns that off (for good: vLLM then waits for the node's)
        self._drive_from_inner = False
        self._drive_matched_until_diverged = False
        self.drive_matched_awaited = False
        # the same for request_finished (drive_finished_from_inner) and a producer's frees after it
        # (drive_freed_from_inner): they switch together, on a divergence of either
        self._drive_finished_from_inner = False
        self._drive_finished_until_diverged = False
        self.drive_finished_awaited = False
        self._drive_freed_from_inner = False
        # from the switch on: the requests whose request_finished vLLM took from the inner and that the
        # node may still surface in its rewrite (vLLM freed them, or frees them by the inner's): left out
        self._drive_legacy = set()
        # the node takes the compact form of a batched call (its hello lists "compact")
        self._drive_compact = False
        # a producer's request_finished sent without waiting whose answer vLLM acted on said
        # delay_free=False and whose node answer is not read yet: the node may still defer it
        self._drive_finish_unread = set()
        # the answers of the node vLLM did not wait for that differed from the inner's it acted on
        self.drive_divergences = 0
        self.drive_divergence_last = None
        # a producer's requests the node answered delay_free=True and has not surfaced yet in an
        # update_connector_output: while none is left (and none is unknown), an update_connector_output
        # without finished ids surfaces nothing in the reducer, so it is not awaited
        self._drive_deferred = set()
        # the requests whose frees the inner deferred and has not freed yet (drive_freed_from_inner):
        # its own answers alone, so what waits for a later frame does not hang on when replies come
        self._drive_inner_deferred = set()
        self._drive_deferred_known = True
        self._kv_cache_config = kv_cache_config
        # what kv_caches_registered carries beside the tensors (register_kv_caches)
        self._config_block_size = _config_block_size(vllm_config)
        self._attn_backend = _attn_backend(vllm_config)
        # the node's answer to the last build_connector_meta (``drive_metadata``)
        self._drive_metadata = None
        # made once, not per call: an idle step's calls may wait in the buffer for many steps, and
        # what they hold counts toward Python's collector (a new bound method or closure per call would)
        self._drive_meta_cb = self._drive_meta_result
        self._drive_none_check = self._drive_checked("update_connector_output", None, _output_sending)
        # what a node's agreement with the answers acted on does (NodeBridge.agreed), once per run of calls
        self._drive_agreed_kept_cb = self._drive_agreed_kept
        self._drive_agreed_deferred_cb = self._drive_agreed_deferred
        self._drive_agreed_freed_cb = self._drive_agreed_freed
        # and what checks their answers in full (one object each, not one per call)
        self._drive_matched_cb = _partial(_matched_check, self)
        self._drive_finish_cb = self._drive_finish_result
        self._drive_freed_cb = self._drive_freed_result
        # a producer's quiet update_connector_output with drive_freed_from_inner (the inner freed none), by
        # whether finished_sending was None: what _drive_free_from_inner would give it, made once
        self._drive_freed_quiet = {a: (self._drive_freed_cb, self._drive_agreed_freed_cb, frozenset(),
                                       (frozenset(), _NO_IDS[a, a]["finished_sending"])) for a in (True, False)}
        try:
            self._start_recording(vllm_config, role, extra, inner_cls)
        except Exception as e:  # noqa: BLE001 - recording is optional, the engine is not
            self._stream = None
            log.error("kvledger recorder: recording is off: %s", e, exc_info=True)
        if extra.get("drive_node") and self._is_scheduler:
            self._start_driving(vllm_config, extra)

    def _start_driving(self, vllm_config, extra):
        """Connects to the node and checks it is this engine's; on any problem drive mode stays off."""
        from .drive import NodeBridge
        where = str(extra["drive_node"])
        try:
            ktc = vllm_config.kv_transfer_config
            role = str(getattr(ktc, "kv_role", "") or "")
            if role == "kv_both":
                role = "kv_consumer"
            read_mode = resolve_mode(self._inner, extra, ktc) == "READ"
            dp = _ranks(vllm_config, True)[0]
            hello = {"kv_role": role, "mode": "read" if read_mode else "write", "dp_rank": dp,
                     "connector_role": "scheduler"}
            # what the recording's header says of the install: the node checks its profile against it
            version, commit = vllm_version_and_commit()
            if version:
                hello["vllm_version"] = version
            if commit:
                hello["vllm_commit"] = commit
            inner_cls = type(self._inner)
            hello["inner_connector"] = f"{inner_cls.__module__}.{inner_cls.__qualname__}"
            pipeline = extra.get("drive_pipeline", True)
            self._drive_pipeline = pipeline if isinstance(pipeline, bool) else str(pipeline).lower() not in (
                "false", "0", "no", "off")
            # the sender thread's naps between looks for a hand-off (NodeBridge.nap_s; 0: a hand-off wakes it)
            nap = float(extra.get("drive_sender_nap_ms", 1))
            if not 0 <= nap <= 1000:
                raise ValueError(f"drive_sender_nap_ms {nap}: give 0 (the sender waits in its queue) to 1000")
            bridge = NodeBridge(where, int(extra.get("drive_timeout_ms", 5000)), on_failure=self._drive_failed)
            try:
                node = bridge.call("hello", **hello)
            except Exception:
                bridge.close()
                raise
            batch = _flag(extra.get("drive_batch", True))
            matched = _matched_mode(extra.get("drive_matched_from_inner", True)) if self._drive_pipeline else None
            self._drive_from_inner = matched is not None
            self._drive_matched_until_diverged = matched == "until_diverged"
            self.drive_matched_awaited = matched is None
            finished = _matched_mode(extra.get("drive_finished_from_inner", True)) if self._drive_pipeline else None
            self._drive_finished_from_inner = finished is not None
            self._drive_finished_until_diverged = finished == "until_diverged"
            self.drive_finished_awaited = finished is None
            self._drive_freed_from_inner = self._drive_finished_from_inner and _flag(
                extra.get("drive_freed_from_inner", True))
            # a node that takes batches lists them (older nodes do not: each call then goes alone)
            bridge.batching = self._drive_pipeline and batch and "batch" in (node.get("hooks") or ())
            # and compact calls in a batch (older nodes take the long form alone)
            bridge.compact = self._drive_compact = bridge.batching and _flag(
                extra.get("drive_compact", True)) and "compact" in (node.get("hooks") or ())
            # and a step's new requests naming their allocation and admission in the same batch
            bridge.derived = bridge.compact and _flag(extra.get("drive_derived", True)) and "derived" in (
                node.get("hooks") or ())
            # and a steady step's cached ids as the previous step's number, its new block ids sparse
            bridge.steady = bridge.compact and _flag(extra.get("drive_steady", True)) and "steady" in (
                node.get("hooks") or ())
            # and replies leaving out the answers that are empty or the ones vLLM acted on (calls carrying acted)
            bridge.agreed = bridge.batching and _flag(extra.get("drive_agreed", True)) and "agreed" in (
                node.get("hooks") or ())
            # and without the node's metadata for the worker (vLLM's worker gets the inner's)
            bridge.brief = bridge.agreed and _flag(extra.get("drive_brief", True)) and "brief" in (
                node.get("hooks") or ())
            # the per-request hooks and the step's call only captured on the scheduler thread, built,
            # packed and sent on a sender thread while vLLM waits for the GPU (compact calls only)
            # (by default only where no admitting call is awaited: an awaited call waits for the sender anyway)
            if bridge.compact and _flag(extra.get("drive_sender_thread", self._drive_from_inner)):
                bridge.nap_s = nap / 1000
                bridge.start_sender(users=(sys.modules[__name__],))
                self._drive_sender = bridge.sender_ident
                self._drive_capture = bridge.captured.append
                # bound once: a bound method made per capture would be one more object per call for
                # Python's collector while the step's captures wait
                self._drive_admit_cap = self._drive_admit_later
                self._drive_matched_cap = self._drive_matched_later
                self._drive_alloc_cap = self._drive_alloc_later
                self._drive_step_cap = self._drive_step_later
                self._drive_output_cap = self._drive_output_later
            self._drive = bridge
            self._drive_producer = role == "kv_producer"
            log.warning("kvledger-vllm %s: DRIVE MODE: the scheduler hooks are answered by the kvledger node at %s "
                        "(profile %s; %s's own answers are recorded, not returned)", __version__, where,
                        node.get("profile") or "not named", type(self._inner).__name__)
        except Exception as e:  # noqa: BLE001 - the engine runs on with its own connector
            self._drive = None
            self._drive_capture = self._drive_sender = None
            log.error("kvledger recorder: drive mode is off, %s answers the hooks: %s", type(self._inner).__name__, e)

    def _drive_call(self, hook, **args):
        """The node's answer to one hook, or None (then the inner's answer stands; counted, logged once).

        Waits for it: for the hooks whose answer vLLM acts on."""
        try:
            return self._drive.call(hook, **args)
        except Exception as e:  # noqa: BLE001
            self._drive_failed(hook, e)
            return None

    def _drive_send(self, hook, on_result=None, flush=False, **args):
        """One hook call whose answer vLLM does not use: sent without waiting (``drive_pipeline``, the
        default), in order with the awaited ones; its reply is read later, a refusal counted as a fallback."""
        self._drive_send_args(hook, args, on_result, flush)

    def _drive_send_args(self, hook, args, on_result=None, flush=False, quiet=False):
        """``_drive_send`` with the arguments as one dict (a fresh one: it is packed later, as it is).
        ``quiet``: a call that tells the node nothing happened (an empty step, an output without ids)
        may wait for a later frame (``NodeBridge.send_args``)."""
        if not self._drive_pipeline:
            r = self._drive_call(hook, **args)
            if r is not None and on_result is not None:
                _full(on_result, r)
            return
        try:
            self._drive.send_args(hook, args, on_result, flush, quiet)
        except Exception as e:  # noqa: BLE001
            self._drive_failed(hook, e)

    def _drive_checked(self, hook, acted, answer_of):
        """An ``on_result`` that compares the node's answer (``answer_of(result)``) with ``acted``, the
        answer vLLM acted on without waiting: a difference is a divergence, counted and logged."""
        def check(result):
            node = answer_of(result)
            if node != acted:
                self._drive_diverged(hook, acted, node)
        return check

    def _drive_diverged(self, hook, acted, node):
        """A divergence counts as a drive fallback (vLLM acted on the inner's answer) and is logged."""
        if self._drive_sender is not None and _get_ident() == self._drive_sender:
            self._drive.later(self._drive_diverged, hook, acted, node)  # handled on the scheduler thread
            return
        self.drive_divergences += 1
        self.drive_fallbacks += 1
        self.drive_divergence_last = (hook, acted, node)
        where = "drive divergence " + hook
        n = self._errors.get(where, 0)
        self._errors[where] = n + 1
        if n == 0:
            log.error("kvledger recorder: drive mode: DIVERGED on %s: vLLM acted on %r without waiting, the node "
                      "answers %r. Further divergences of %s are counted (drive_divergences), not logged.",
                      hook, acted, node, hook)
        if hook == "get_num_new_matched_tokens" and self._drive_matched_until_diverged:
            # the node models the inner's version (its profile is the one the install maps to): a different
            # answer is a modelling difference, and from now on vLLM acts on kvledger's (drive mode's promise)
            self._drive_matched_until_diverged = self._drive_from_inner = False
            self.drive_matched_awaited = True
            log.warning("kvledger recorder: drive mode: the node answered get_num_new_matched_tokens otherwise than "
                        "%s; from now on vLLM waits for the node's answer to it (drive_matched_from_inner: "
                        "\"always\" keeps the inner's)", type(self._inner).__name__)
        elif hook in ("request_finished", "update_connector_output") and self._drive_finished_until_diverged:
            self._drive_finish_switch(hook)

    def _drive_finish_switch(self, hook):
        """From the first divergence of a finish or of a producer's freed rewrite on, vLLM waits for the
        node's answer to every later ``request_finished`` and (a producer's) ``update_connector_output``.
        The deferrals vLLM took from the inner before (``_drive_inner_deferred``) still end by the inner's
        rewrite; the requests the node may still surface whose finish vLLM took from the inner (those
        it holds deferred or has not answered yet: ``_drive_legacy``) are left out of the node's."""
        self._drive_finished_until_diverged = self._drive_finished_from_inner = False
        self.drive_finished_awaited = True
        if self._drive_freed_from_inner:
            self._drive_freed_from_inner = False
            self._drive_legacy = self._drive_deferred | self._drive_finish_unread
        log.warning("kvledger recorder: drive mode: the node answered %s otherwise than %s; from now on vLLM "
                    "waits for the node's answer to request_finished and update_connector_output "
                    "(drive_finished_from_inner: \"always\" keeps the inner's)", hook, type(self._inner).__name__)

    # What each on_result of a call carrying acted does when the node's answer is the one acted on,
    # for a run of such calls at once (the node left their answers out: NodeBridge.agreed)

    def _drive_agreed_kept(self, rids):
        """request_finished answered delay_free=False, as vLLM acted: the node will not surface them."""
        self._drive_finish_unread.difference_update(rids)
        self._drive_deferred.difference_update(rids)
        if self._drive_legacy:
            self._drive_legacy.difference_update(rids)

    def _drive_agreed_deferred(self, rids):
        """request_finished answered delay_free=True, as vLLM acted: the node surfaces them later."""
        self._drive_finish_unread.difference_update(rids)
        self._drive_deferred.update(rids)

    def _drive_agreed_freed(self, sets):
        """update_connector_output whose rewrite is the inner's (``acted``, a frozenset each)."""
        deferred = self._drive_deferred
        legacy = self._drive_legacy
        for safe in sets:
            deferred.difference_update(safe)
            if legacy:
                legacy.difference_update(safe)

    def _drive_failed(self, hook, e):
        if self._drive_sender is not None and _get_ident() == self._drive_sender:
            self._drive.later(self._drive_failed, hook, e)  # handled on the scheduler thread
            return
        self.drive_fallbacks += 1
        if hook in ("request_finished", "update_connector_output"):
            self._drive_deferred_known = False  # the node may have deferred or surfaced some: always wait
        where = "drive " + hook
        n = self._errors.get(where, 0)
        self._errors[where] = n + 1
        if n == 0:
            log.error("kvledger recorder: drive mode: no answer from the node for %s (%s); %s's answer stands. "
                      "Further failures of %s are counted, not logged.", hook, e, type(self._inner).__name__, hook)

    def _drive_settled(self, timeout_ms=None):
        """Reads the replies of the calls sent without waiting (their failures are then counted)."""
        d = self._drive
        if d is not None and d.unread:
            try:
                d.flush(timeout_ms)
            except Exception as e:  # noqa: BLE001
                self._failed("drive flush", e)

    @property
    def drive_metadata(self):
        """The node's answer to the last ``build_connector_meta`` (None: none yet, it did not answer, or
        it leaves it out: ``drive_brief``); for inspection only: vLLM's worker gets the inner's
        metadata. Reading it waits for the replies of the calls sent before."""
        self._drive_settled()
        return self._drive_metadata

    def _drive_meta_result(self, result):
        self._drive_metadata = result

    def _drive_row_failed(self, hook, rid, e):
        """A compact ``add_request`` or ``update_state_after_alloc`` row that could not be added: the
        step's new request must not name it (``derived``), so it goes in full; then ``_drive_failed``."""
        d = self._drive
        if d is not None:
            (d.admitted if hook == "add_request" else d.allocated).pop(rid, None)
        self._drive_failed(hook, e)

    def _drive_admit(self, request):
        if self._drive_sender is not None:
            self._drive.sync()
        rid = str(request.request_id)
        if rid in self._drive_seen:
            return rid
        self._drive_seen.add(rid)
        if self._drive_compact:
            try:
                # _admission's fields by position
                ids = getattr(request, "prompt_token_ids", None)
                n = getattr(request, "num_prompt_tokens", None)
                if type(n) is not int and not isinstance(n, int):
                    n = len(ids) if ids is not None else 0
                params = _params_packable(getattr(request, "kv_transfer_params", None))
                d = self._drive
                if d.derived:  # what this batch's new requests may name (before the row: a frame it sends empties it)
                    d.admitted[rid] = params
                d.send_row("add_request", (rid, n, None if ids is None else len(ids), params))
            except Exception as e:  # noqa: BLE001
                self._drive_row_failed("add_request", rid, e)
        else:
            self._drive_send_args("add_request", _admission(request))
        return rid

    def _drive_admit_later(self, rid, n, ids_len, p):
        """On the sender thread: ``on_new_request``'s compact row from what it captured."""
        try:
            if p is not None and not (_STR_TYPE.issuperset(map(type, p)) and _PLAIN_TYPES.issuperset(
                    map(type, p.values()))):
                p = plain(p)
            d = self._drive
            if d.derived:  # before the row: a frame it sends empties it
                d.admitted[rid] = p
            d.add_row(_ADD_REQUEST, rid, n, ids_len, p)
        except Exception as e:  # noqa: BLE001
            self._drive_row_failed("add_request", rid, e)

    def _drive_admit_captured(self, request):
        """``_drive_admit`` with the sender thread: captured when it can be (vLLM's Request), else in
        this thread after the sender is done. Returns the request's id as sent."""
        rid = request.request_id
        if type(rid) is str and (rid in self._drive_seen or self._drive_admission_captured(request, rid)):
            return rid
        if self._drive_sender is not None:
            self._drive.sync()
        return self._drive_admit(request)

    def _drive_admission_captured(self, request, rid):
        """Captures ``request``'s admission for the sender thread when it is vLLM's Request (an int
        prompt length, params a dict or None): what the row needs, by value (params copied shallowly:
        the inner may rewrite them, #51052; ``_drive_admit_cap`` builds the row). Whether it did."""
        try:
            ids = request.prompt_token_ids
            n = request.num_prompt_tokens
            p = request.kv_transfer_params
        except AttributeError:
            return False
        if type(n) is not int or (p is not None and type(p) is not dict):
            return False
        self._drive_seen.add(rid)
        self._drive_capture((self._drive_admit_cap, rid, n, None if ids is None else len(ids),
                             None if p is None else p.copy()))
        return True

    @property
    def driving(self):
        """Whether a kvledger node answers this scheduler connector's hooks (drive mode)."""
        return self._drive is not None

    # ------------------------------------------------------------------ recording set-up

    def _start_recording(self, vllm_config, role, extra, inner_cls):
        where = extra.get("record_to")
        role_name = "scheduler" if self._is_scheduler else "worker"
        dp, dp_size, dp_local, tp, tp_size = _ranks(vllm_config, self._is_scheduler)
        if not where:
            log.info("kvledger-vllm %s: %s %s over %s, not recording (no record_to)", __version__,
                     type(self).__name__, role_name, inner_cls.__name__)
            return
        where = str(where)
        if "://" in where and not where.startswith("tcp://"):
            raise ValueError(f"record_to {where!r}: give a file path template or tcp://HOST:PORT "
                             f"(a kvledger node started with --engine shadow)")
        if not where.startswith("tcp://"):
            where = per_process_template(where, dp_size, tp_size)
        path = where.format(role=role_name, dp=dp, tp=tp)
        self._record_layers = str(extra.get("record_layers", "false")).strip().lower() in ("1", "true", "yes")
        qsize = int(extra.get("record_queue_size", 65536))
        header = build_header(vllm_config, self._is_scheduler, extra, inner_cls, (dp, dp_size, dp_local, tp, tp_size),
                              self._inner, getattr(self, "_kv_cache_config", None))
        self._producer_scheduler = self._is_scheduler and header["kv_role"] == "kv_producer"
        if path.startswith("tcp://"):
            sink = ZmqSink(path, role_name, dp, tp, hwm=int(extra.get("record_zmq_hwm", 1000)))
        else:
            sink = FileSink(path, keep=int(extra.get("record_keep", 5)))
        fold = str(extra.get("record_fold_steps", "true")).strip().lower() not in ("0", "false", "no")
        self._stream = Stream(header, sink, maxsize=qsize,
                              name=f"kvledger-recorder-{role_name}-dp{dp}-tp{tp}",
                              fold_starts=(("step_scheduled",) if self._is_scheduler else ("load_started",)) if fold else None)
        log.info("kvledger-vllm %s: %s %s over %s, recording to %s (per-layer hooks %s)", __version__,
                 type(self).__name__, role_name, inner_cls.__name__, path,
                 "recorded" if self._record_layers else "not recorded")

    @property
    def inner(self):
        """The wrapped connector."""
        return self._inner

    @property
    def recording_stream(self):
        """The capture stream, or None when not recording."""
        return self._stream

    def _failed(self, where, e):
        if self._drive_sender is not None and _get_ident() == self._drive_sender:
            self._drive.later(self._failed, where, e)  # handled on the scheduler thread
            return
        n = self._errors.get(where, 0)
        self._errors[where] = n + 1
        if n == 0:
            log.error("kvledger recorder: recording %s failed (%r); the call itself went through. "
                      "Further errors in %s are counted, not logged.", where, e, where, exc_info=e)

    def _put(self, type_name, fields, reply_type=None, reply_fields=None):
        s = self._stream
        if s is not None:
            s.put(type_name, fields, reply_type, reply_fields)

    def _renamed_from(self, rid):
        """The id a request was admitted under when it now carries it plus vLLM's ``-<8 hex>``, else None."""
        if rid in self._seen or len(rid) < 10 or rid[-9] != "-":
            return None
        tail = rid[-8:]
        if any(c not in _LOWER_HEX for c in tail):
            return None
        base = rid[:-9]
        return base if base in self._seen else None

    def _admit(self, request):
        rid = request.request_id
        if type(rid) is not str:
            rid = str(rid)
        seen = self._seen
        if rid in seen:
            return rid
        seen.add(rid)
        s = self._stream
        if s is not None:
            try:  # _admission_later, inlined for vLLM's Request (once per request)
                ids = request.prompt_token_ids
                p = request.kv_transfer_params
                s.put("request_admitted", (_admission_fields, rid, request.num_prompt_tokens,
                                           None if ids is None else len(ids),
                                           p.copy() if type(p) is dict else _params_copy(p)))
            except AttributeError:
                s.put("request_admitted", _admission_later(request, rid))
        return rid

    # ================================================================== worker side

    # Properties and methods of newer base classes are forwarded as well: an older vLLM never asks
    # for them, and a newer one gets the inner's own answer (its override, or its base's default).

    @property
    def prefer_cross_layer_blocks(self):
        return self._inner.prefer_cross_layer_blocks

    @property
    def supports_eagle_prefix_cache_hashing(self):
        return self._inner.supports_eagle_prefix_cache_hashing

    @property
    def requires_kv_delivery(self):
        return self._inner.requires_kv_delivery

    @property
    def supports_divergent_local_hybrid_hits(self):
        return self._inner.supports_divergent_local_hybrid_hits

    @property
    def requires_full_step_completion(self):
        return self._inner.requires_full_step_completion

    def set_eagle_prefix_cache_hashing(self, enabled):
        result = self._inner.set_eagle_prefix_cache_hashing(enabled)
        # the base keeps the choice as an attribute vLLM may read off the connector it holds
        self.use_eagle_prefix_cache_hashing = getattr(self._inner, "use_eagle_prefix_cache_hashing", enabled)
        return result

    def get_mem_pool_context(self):
        return self._inner.get_mem_pool_context()

    def bind_connector_metadata(self, connector_metadata):
        super().bind_connector_metadata(connector_metadata)
        return self._inner.bind_connector_metadata(connector_metadata)

    def clear_connector_metadata(self):
        if self._pending_finished is not None:
            self._flush_finished(None)
        super().clear_connector_metadata()
        return self._inner.clear_connector_metadata()

    def finish_forward(self):
        return self._inner.finish_forward()

    def reset_capture_state(self):
        return self._inner.reset_capture_state()

    def has_connector_metadata(self):
        return self._inner.has_connector_metadata()

    def register_kv_caches(self, kv_caches):
        s = self._stream
        if s is None:
            return self._inner.register_kv_caches(kv_caches)
        try:  # before the inner sees them: a connector that refuses the shapes raises (class 15)
            s.put("kv_caches_registered", (_registration_fields, self._config_block_size, self._attn_backend,
                                           _tensors_snapshot(kv_caches)))
        except Exception as e:  # noqa: BLE001
            self._failed("register_kv_caches", e)
        try:
            return self._inner.register_kv_caches(kv_caches)
        except BaseException:
            # the worker is about to die of it: the registration reaches the file first (bounded wait)
            try:
                s.flush(_REGISTRATION_FLUSH_S)
            except Exception as e:  # noqa: BLE001
                self._failed("register_kv_caches", e)
            raise

    def register_cross_layers_kv_cache(self, kv_cache, attn_backend):
        return self._inner.register_cross_layers_kv_cache(kv_cache, attn_backend)

    def set_host_xfer_buffer_ops(self, copy_operation):
        return self._inner.set_host_xfer_buffer_ops(copy_operation)

    def handle_preemptions(self, kv_connector_metadata):
        return self._inner.handle_preemptions(kv_connector_metadata)

    def start_load_kv(self, forward_context, **kwargs):
        if self._pending_finished is not None:
            self._flush_finished(None)
        self._fwd = None
        if self._stream is not None:
            try:  # the requests this step's forward was promised (the metadata's reqs_to_recv; usually none)
                recv = getattr(getattr(self, "_connector_metadata", None), "reqs_to_recv", None)
                if recv:
                    self._fwd = [list(recv), 0, 0, -1]
            except Exception as e:  # noqa: BLE001
                self._failed("start_load_kv reads", e)
        result = self._inner.start_load_kv(forward_context, **kwargs)
        if self._stream is not None:
            try:
                self._put("load_started", {})
            except Exception as e:  # noqa: BLE001
                self._failed("start_load_kv", e)
        return result

    def wait_for_layer_load(self, layer_name):
        fwd = self._fwd
        if fwd is None:  # no reads posted this step (or not recording): one attribute test
            return self._inner.wait_for_layer_load(layer_name)
        clock = _stream_module.time.monotonic_ns  # the stream's clock, as put reads it
        t0 = clock()
        result = self._inner.wait_for_layer_load(layer_name)  # one that raises fails the forward: not counted
        t1 = clock()
        fwd[1] += 1
        fwd[2] += t1 - t0
        fwd[3] = t1
        return result

    def save_kv_layer(self, layer_name, kv_layer, attn_metadata, **kwargs):
        result = self._inner.save_kv_layer(layer_name, kv_layer, attn_metadata, **kwargs)
        if self._record_layers:
            try:
                self._put("layer_saved", {"layer_name": str(layer_name)})
            except Exception as e:  # noqa: BLE001
                self._failed("save_kv_layer", e)
        return result

    def wait_for_save(self):
        result = self._inner.wait_for_save()
        if self._stream is not None:
            try:
                self._put("save_waited", {})
                fwd = self._fwd
                if fwd is not None:
                    # the forward that posted reads ended: one forward_done per such step
                    self._fwd = None
                    now = Stream.clock()
                    self._stream.put("forward_done", (_forward_fields, fwd[0], fwd[1], fwd[2],
                                                      -1 if fwd[3] < 0 else now - fwd[3]), at_ns=now)
            except Exception as e:  # noqa: BLE001
                self._failed("wait_for_save", e)
        return result

    def get_finished(self, finished_req_ids):
        result = self._inner.get_finished(finished_req_ids)
        if self._stream is not None:
            try:
                sending, recving = result
                self._hold_finished(sending, recving)
            except Exception as e:  # noqa: BLE001
                self._failed("get_finished", e)
        return result

    def get_transfer_results(self, finished_req_ids):
        # Newer vLLM asks this instead of get_finished; the inner's base answers from its own
        # get_finished, which the recorder would not see: recorded here.
        result = self._inner.get_transfer_results(finished_req_ids)
        if self._stream is not None:
            try:
                self._hold_finished(getattr(result, "finished_sending", None), getattr(result, "finished_recving", None))
            except Exception as e:  # noqa: BLE001
                self._failed("get_transfer_results", e)
        return result

    def get_block_ids_with_load_errors(self):
        result = self._inner.get_block_ids_with_load_errors()
        if self._pending_finished is not None:
            try:
                self._flush_finished(sorted(int(b) for b in (result or ())))
            except Exception as e:  # noqa: BLE001
                self._pending_finished = None
                self._failed("get_block_ids_with_load_errors", e)
        return result

    def _hold_finished(self, sending, recving):
        """The ``finished_polled`` input of this forward pass and its ``finished_reported`` reply,
        held until vLLM asks for the blocks that failed to load (right after, in the same pass),
        which the reply carries; written without them (null) at the next worker hook otherwise."""
        if self._pending_finished is not None:
            self._flush_finished(None)
        self._pending_finished = (Stream.clock(), {"done_sending": _id_list(sending), "done_recving": _id_list(recving)})

    def _flush_finished(self, load_error_blocks):
        at, reply = self._pending_finished
        self._pending_finished = None
        reply["load_error_blocks"] = load_error_blocks
        s = self._stream
        if s is not None:
            s.put("finished_polled", {}, "finished_reported", reply, at_ns=at)

    def shutdown(self):
        if self._pending_finished is not None:
            try:
                self._flush_finished(None)
            except Exception as e:  # noqa: BLE001
                self._failed("shutdown", e)
        failures = _CloseFailures() if self._stream is not None else None
        try:
            if failures is not None:
                failures.attach()
            return self._inner.shutdown()
        finally:
            d = self._drive
            if d is not None:
                # the replies of the last calls sent: their failures are counted before the socket goes
                self._drive_settled(min(1000, d._timeout_ms))
                self._drive = None
                self._drive_compact = False
                self._drive_capture = self._drive_sender = None
                try:
                    d.close()
                except Exception as e:  # noqa: BLE001
                    self._failed("shutdown", e)
            if failures is not None:
                failures.detach()
                try:
                    self._put("shut_down", {"close_failures": failures.seen})
                except Exception as e:  # noqa: BLE001
                    self._failed("shutdown", e)
            s = self._stream
            if s is not None:
                try:
                    s.close()
                except Exception as e:  # noqa: BLE001
                    self._failed("shutdown", e)

    def get_kv_connector_stats(self):
        return self._inner.get_kv_connector_stats()

    def get_kv_connector_kv_cache_events(self):
        return self._inner.get_kv_connector_kv_cache_events()

    def get_handshake_metadata(self):
        return self._inner.get_handshake_metadata()

    def build_connector_worker_meta(self):
        return self._inner.build_connector_worker_meta()

    # ================================================================== scheduler side

    def bind_gpu_block_pool(self, gpu_block_pool):
        return self._inner.bind_gpu_block_pool(gpu_block_pool)

    def bind_kv_cache_manager(self, kv_cache_manager):
        return self._inner.bind_kv_cache_manager(kv_cache_manager)

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        rid = None
        if self._stream is not None:
            try:
                rid = self._admit(request)
            except Exception as e:  # noqa: BLE001
                self._failed("get_num_new_matched_tokens", e)
        capture = self._drive_capture if self._drive_from_inner else None
        if capture is not None and self._drive._later:
            # the sender read answers vLLM acted on: a divergence among them turns this call awaited
            self._drive.sync()
            capture = self._drive_capture if self._drive_from_inner else None
        if self._drive is not None:
            drive_rid = request.request_id  # admitted already (on_new_request), as a rule
            if type(drive_rid) is not str or drive_rid not in self._drive_seen:
                drive_rid = self._drive_admit(request) if capture is None else self._drive_admit_captured(request)
        result = self._inner.get_num_new_matched_tokens(request, num_computed_tokens)
        if rid is not None:
            try:
                count, load_async = result
                # None means "ask again": the format has no reply for it
                if count is None:
                    self._stream.put("matched_tokens_queried", (_queried_fields, rid, num_computed_tokens))
                else:
                    self._stream.put("matched_tokens_queried", (_queried_fields, rid, num_computed_tokens),
                                     "matched_tokens", (_matched_fields, rid, count, load_async))
            except Exception as e:  # noqa: BLE001
                self._failed("get_num_new_matched_tokens", e)
        if capture is not None:  # the sender thread's: _drive_matched_later
            capture((self._drive_matched_cap, drive_rid, num_computed_tokens, result))
            return result
        if self._drive_sender is not None:
            self._drive.sync()
        return self._drive_matched(drive_rid if self._drive is not None else None, num_computed_tokens, result,
                                   request, self._drive_from_inner)

    def _drive_matched_later(self, drive_rid, num_computed_tokens, result):
        """On the sender thread (or the scheduler's, at a sync): ``get_num_new_matched_tokens``' call from
        what it captured, with the inner's answer vLLM acted on (even if a divergence read since turned
        that off for the later calls)."""
        self._drive_matched(drive_rid, num_computed_tokens, result, None, True)

    def _drive_matched(self, drive_rid, num_computed_tokens, result, request, from_inner):
        """``get_num_new_matched_tokens``' call to the node; returns what vLLM gets (``from_inner``: the
        inner's answer, the call sent unawaited; ``request`` None: captured, ``drive_rid`` names it)."""
        if self._drive_compact and from_inner:
            # vLLM's own types (a tuple of an int or None and a bool, an int count) as they are
            if (type(result) is tuple and len(result) == 2 and type(result[1]) is bool
                    and (type(result[0]) is int or result[0] is None) and type(num_computed_tokens) is int):
                acted = result
                row = (drive_rid, num_computed_tokens, result)
            else:
                try:
                    acted = (None if result[0] is None else int(result[0]), bool(result[1]))
                    row = (drive_rid, int(num_computed_tokens), acted)
                except Exception:  # noqa: BLE001 - not a pair: the long form below says so
                    row = None
            if row is not None:
                try:
                    self._drive.send_row("get_num_new_matched_tokens", row, (self._drive_matched_cb, None, None, acted))
                except Exception as e:  # noqa: BLE001
                    self._drive_failed("get_num_new_matched_tokens", e)
                return result
        if self._drive is not None and from_inner:
            # vLLM acts on the inner's answer now; the node's, read later, must be the same. The call
            # carries it, so that the node journals the answer vLLM acted on and names a divergence
            args = {"request_id": drive_rid if request is None else _request_id(request),
                    "num_computed_tokens": int(num_computed_tokens)}
            try:
                acted = (None if result[0] is None else int(result[0]), bool(result[1]))
                args["acted"] = {"num_tokens": acted[0], "load_async": acted[1]}
            except Exception as e:  # noqa: BLE001 - not a pair: nothing the node could agree with
                acted = ("not a pair", repr(result))
                self._failed("drive get_num_new_matched_tokens", e)
            # carrying acted: a node that agrees may leave its answer out (nothing to do then)
            self._drive_send_args("get_num_new_matched_tokens", args, (self._drive_matched_cb, None, None, acted)
                                  if "acted" in args else self._drive_checked("get_num_new_matched_tokens", acted,
                                                                              _matched_answer))
        elif self._drive is not None:
            r = self._drive_call("get_num_new_matched_tokens", request_id=_request_id(request),
                                 num_computed_tokens=int(num_computed_tokens))
            if r is not None:
                return r.get("num_tokens"), bool(r.get("load_async"))
        return result

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        rid = groups = None
        if self._stream is not None:
            try:
                rid = self._admit(request)
                # KVCacheBlocks.get_block_ids() builds fresh lists: kept as they are, converted later
                groups = blocks.get_block_ids() if blocks is not None else None
            except Exception as e:  # noqa: BLE001
                rid = groups = None
                self._failed("update_state_after_alloc", e)
        result = self._inner.update_state_after_alloc(request, blocks, num_external_tokens)
        if rid is not None:
            try:
                self._stream.put("blocks_allocated", (_blocks_allocated_fields, rid, groups, num_external_tokens))
            except Exception as e:  # noqa: BLE001
                self._failed("update_state_after_alloc", e)
        capture = self._drive_capture
        if capture is not None:
            # the sender thread's (_drive_alloc_later): the lists the recording took, when it did; else
            # vLLM's lists of block objects copied (the manager's own, extended or changed in later
            # steps; a block's id never changes), their ids read there; anything else's ids now
            objs = None
            try:
                if groups is None and blocks is not None:
                    if _is_kv_blocks(type(blocks)):
                        objs = tuple(map(list, blocks.blocks))
                    else:
                        groups = blocks.get_block_ids()
            except Exception as e:  # noqa: BLE001
                self._failed("drive update_state_after_alloc", e)
                return result
            capture((self._drive_alloc_cap, request.request_id, groups, objs, num_external_tokens))
            return result
        if self._drive_sender is not None:
            self._drive.sync()
        self._drive_alloc(request.request_id if self._drive is not None else None, blocks, groups, None,
                          num_external_tokens)
        return result

    def _drive_alloc_later(self, drive_rid, groups, objs, num_external_tokens):
        """On the sender thread: ``update_state_after_alloc``'s call from what it captured."""
        self._drive_alloc(drive_rid, None, groups, objs, num_external_tokens)

    def _drive_alloc(self, drive_rid, blocks, groups, objs, num_external_tokens):
        """``update_state_after_alloc``'s call to the node: the block ids of ``groups`` (the recording's
        lists), else of ``objs`` (block object lists), else ``blocks.get_block_ids()``."""
        if self._drive_compact:
            try:
                if type(drive_rid) is not str:
                    drive_rid = str(drive_rid)
                # the lists the recording took, when it did (read by both, changed by neither), else fresh
                # ones; vLLM's (a tuple of int lists) as they are, anything else as _block_groups makes it
                if objs is not None:
                    groups = _block_ids_of(objs)
                elif groups is None:
                    groups = blocks.get_block_ids() if blocks is not None else None
                if type(groups) is tuple:
                    for g in groups:
                        if type(g) is not list or not _INT_TYPE.issuperset(map(type, g)):
                            groups = _block_groups(groups)
                            break
                else:
                    groups = _blocks_packable(groups)
                ext = num_external_tokens if type(num_external_tokens) is int else int(num_external_tokens)
            except Exception as e:  # noqa: BLE001
                drive_rid = None
                self._failed("drive update_state_after_alloc", e)
            if drive_rid is not None:
                try:
                    d = self._drive
                    if d.derived:
                        d.allocated[drive_rid] = groups
                    d.add_row(_ALLOCATED, drive_rid, groups, ext)
                except Exception as e:  # noqa: BLE001
                    self._drive_row_failed("update_state_after_alloc", drive_rid, e)
        elif self._drive is not None:
            try:
                block_ids = _block_groups(blocks.get_block_ids() if blocks is not None else None)
            except Exception as e:  # noqa: BLE001
                block_ids = None
                self._failed("drive update_state_after_alloc", e)
            if block_ids is not None:
                self._drive_send_args("update_state_after_alloc", {
                    "request_id": str(drive_rid), "block_ids": block_ids,
                    "num_external_tokens": int(num_external_tokens)})

    def build_connector_meta(self, scheduler_output):
        s = self._stream
        if s is None or self._drive is not None:
            if s is None and self._drive is None:
                return self._inner.build_connector_meta(scheduler_output)
            capture = self._drive_capture
            if capture is None or s is not None or self._drive.reclaimed != self._drive_reclaimed:
                return self._build_connector_meta_general(scheduler_output)
            # Driving with the sender thread, not recording (capture set: not standing aside, and
            # _drive_stand_aside would do nothing), for vLLM's scheduler output with no new request and
            # none preempted (a decode or prefill-chunk step, an empty one; else the general path):
            # _build_connector_meta_general's work in fewer steps, what it captures the same
            try:
                new_reqs, preempted, crd = _SO_FIELDS(scheduler_output)
            except Exception:  # noqa: BLE001 - an older vLLM's output (or not vLLM's): the general path
                return self._build_connector_meta_general(scheduler_output)
            if new_reqs or preempted:
                return self._build_connector_meta_general(scheduler_output)
            result = self._inner.build_connector_meta(scheduler_output)
            try:
                ids, nbs = _cached_captured(crd)
            except Exception as e:  # noqa: BLE001
                self._drive_step_failed(e)
                return result
            self._drive_step_out(capture, (), ids, nbs, ())
            return result
        # Recording, not driving: ``_build_connector_meta_general``'s work in fewer steps, for vLLM's
        # scheduler output (the three fields at once; anything else takes the general path), captured
        # as one flat entry (``Stream.put``) converted by ``_step_entry``.
        try:
            new_reqs, preempted, crd = _SO_FIELDS(scheduler_output)
        except Exception:  # noqa: BLE001 - an older vLLM's output (or not vLLM's): the general path
            return self._build_connector_meta_general(scheduler_output)
        # before the inner runs: the params it reads are the request's own dict, changed later.
        # () for none: no allocation (the writer thread reads it as the empty list it stands for)
        if new_reqs or preempted:
            try:
                new_reqs = _new_requests_snapshot_of(new_reqs) if new_reqs else ()
                preempted = list(preempted) if preempted else ()
            except Exception as e:  # noqa: BLE001
                new_reqs = preempted = _ABSENT
                self._failed("build_connector_meta new requests", e)
        else:
            new_reqs = preempted = ()
        result = self._inner.build_connector_meta(scheduler_output)
        try:
            self._step = step = self._step + 1
            if crd is not None and crd.new_block_ids:  # a resumed request has new blocks
                resumed = getattr(crd, "resumed_req_ids", _ABSENT)
                if resumed is _ABSENT:  # before vLLM kept them as a set
                    resumed = any(getattr(crd, "resumed_from_preemption", ()))
                if resumed:
                    # a resumed request's lists become the model runner's, which extends them in
                    # place later: kept with their lengths (``_grown_blocks``)
                    ids, new_blocks = _CACHED_FIELDS(crd)
                    new_blocks = list(new_blocks) if new_blocks else ()
                    crd = (list(ids) if ids else (),
                           (_GROWN, new_blocks, list(map(len, _chain(filter(None, new_blocks))))))
                # else by reference: vLLM builds its lists afresh each step and only reads them after
            try:
                recv, save, send, size = _META_FIELDS(result)
                if recv or save or type(recv) is not dict or type(save) is not dict:
                    reply = metadata_snapshot(step, result)
                    if reply is None:
                        recv = _ABSENT
                    else:
                        recv, save, send, size = reply[2:]
                else:  # nothing to receive or save this step (metadata_snapshot's result, sooner)
                    # reqs_to_send by reference: the connector hands the dict over (MoRIIO makes a new
                    # one for the next step, its worker only reads it)
                    recv = save = ()
                    size = len(size) if size is not None else -1
            except AttributeError:
                reply = metadata_snapshot(step, result)
                if reply is None:
                    recv = save = send = size = _ABSENT
                else:
                    recv, save, send, size = reply[2:]
            except Exception as e:  # noqa: BLE001 - the step is recorded, its metadata not
                recv = save = send = size = _ABSENT
                self._failed("build_connector_meta metadata", e)
            # Stream.put, inlined (once per engine step; the stream module's clock, as put reads it)
            q = s._q
            d = q._d
            if len(d) < q.maxsize:
                d.append((_step_entry, _stream_module.time.monotonic_ns(), step, crd, new_reqs, preempted,
                          recv, save, send, size))
                q.added += 1
            else:
                s.dropped += 1
        except Exception as e:  # noqa: BLE001
            self._failed("build_connector_meta", e)
        return result

    def _build_connector_meta_general(self, scheduler_output):
        """``build_connector_meta`` for any scheduler output, recording or driving (or both)."""
        s = self._stream
        # before the inner runs: the params it reads are the request's own dict, changed later
        new_fields = None  # driving alone: the node's entries, made now (no snapshot to convert later)
        if self._drive_sender is not None:
            self._drive_stand_aside()
        capture = self._drive_capture
        snap = _ABSENT  # (capture) the new requests for the sender thread, as the recording keeps them
        try:
            new_reqs = getattr(scheduler_output, "scheduled_new_reqs", _ABSENT)
            d = self._drive
            if capture is not None:
                if new_reqs is not _ABSENT:
                    snap = _new_requests_snapshot_of(new_reqs) if new_reqs else ()
                    if s is not None:
                        new_reqs = _new_requests_snapshot(scheduler_output) if new_reqs else []
            elif new_reqs is not _ABSENT and d is not None and d.derived:
                # the node's rows by position, derived where they can be (recording too: the
                # recording's snapshot below, as without)
                new_fields = _new_request_rows_derived(new_reqs, d.admitted, d.allocated) if new_reqs else ()
                if s is not None:
                    new_reqs = _new_requests_snapshot(scheduler_output) if new_reqs else []
            elif new_reqs is not _ABSENT and s is None:
                new_fields = ((_new_request_rows_now(new_reqs) if self._drive_compact else _new_requests_now(new_reqs))
                              if new_reqs else ())
            elif new_reqs is not _ABSENT:
                new_reqs = _new_requests_snapshot(scheduler_output) if new_reqs else []
            ids = getattr(scheduler_output, "preempted_req_ids", _ABSENT)
            preempted = ids if ids is _ABSENT else list(ids) if ids else []
        except Exception as e:  # noqa: BLE001
            new_reqs = preempted = _ABSENT
            self._failed("build_connector_meta new requests", e)
        result = self._inner.build_connector_meta(scheduler_output)
        if s is not None:
            try:
                self._step = step = self._step + 1
                crd = getattr(scheduler_output, "scheduled_cached_reqs", None)
                if crd is None:
                    ids = new_blocks = ()
                else:
                    ids = crd.req_ids
                    ids = list(ids) if ids else ()
                    new_blocks = crd.new_block_ids
                    new_blocks = list(new_blocks) if new_blocks else ()
                    if new_blocks and (getattr(crd, "resumed_req_ids", None)
                                       or any(getattr(crd, "resumed_from_preemption", ()))):
                        # a resumed request's lists become the model runner's, which extends them in
                        # place later: kept with their lengths (``_grown_blocks``)
                        new_blocks = (_GROWN, new_blocks, list(map(len, _chain(filter(None, new_blocks)))))
                try:
                    recv, save, send, mapping = _META_FIELDS(result)
                    if recv or save or type(recv) is not dict or type(save) is not dict:
                        reply = metadata_snapshot(step, result)
                    else:  # nothing to receive or save this step (metadata_snapshot's result, sooner)
                        reply = (_metadata_fields, step, (), (), None if send is None else list(send) if send else [],
                                 len(mapping) if mapping is not None else -1)
                except AttributeError:
                    reply = metadata_snapshot(step, result)
                except Exception as e:  # noqa: BLE001 - the step is recorded, its metadata not
                    reply = None
                    self._failed("build_connector_meta metadata", e)
                s.put("step_scheduled", (_step_fields, step, ids, new_blocks, new_reqs, preempted),
                      None if reply is None else "metadata_built", reply)
            except Exception as e:  # noqa: BLE001
                self._failed("build_connector_meta", e)
        if capture is not None:
            # the sender thread's (_drive_step_later)
            try:
                ids, nbs = _cached_captured(getattr(scheduler_output, "scheduled_cached_reqs", None))
            except Exception as e:  # noqa: BLE001
                self._drive_step_failed(e)
                return result
            self._drive_step_out(capture, snap, ids, nbs, preempted)
            return result
        if self._drive is not None:
            if self._drive_sender is not None:
                self._drive.sync()
            crd = getattr(scheduler_output, "scheduled_cached_reqs", None)
            self._drive_step_call(new_fields, new_reqs, crd, preempted)
        return result

    def _drive_step_out(self, capture, snap, ids, nbs, preempted):
        """The step's call captured and handed off to the sender thread; or, when nothing is scheduled and
        nothing but a quiet ``update_connector_output`` was captured, built here: it costs less than
        waking the sender thread for it (the same calls, in the same order), unless quiet calls held for a
        later frame are due to go out with it: then the sender thread sends them and reads their reply in
        its naps, not vLLM's scheduler thread at its next step."""
        d = self._drive
        cap = d.captured
        if (ids or snap or preempted or (cap and (len(cap) > 1 or cap[0][0] is not self._drive_output_cap))
                or d.holding_due()):
            capture((self._drive_step_cap, snap, ids, nbs, preempted))
            d.hand_off()
            self._drive_handed = True
        else:
            d.sync()
            self._drive_step_later(snap, ids, nbs, preempted)
            self._drive_handed = False

    #: steps built on the scheduler thread after a hand-off the sender thread had not started by the
    #: scheduler thread's next use of the bridge (no GPU wait between them: the sender only adds work)
    DRIVE_ASIDE_STEPS = 16

    def _drive_step_failed(self, e):
        """A step's call that could not be captured: counted, not sent (as without the sender thread)."""
        self._drive.sync()  # (the sender done: the step count and steady_ids are this thread's again)
        self._drive_step += 1
        self._drive.steady_ids = None
        self._failed("drive build_connector_meta", e)

    def _drive_stand_aside(self):
        """At a step's call, before it looks at ``_drive_capture``: when the scheduler thread ran a hand-off
        itself since the last look (``NodeBridge.reclaim``: no GPU wait let the sender start), this step's
        call and the next ``DRIVE_ASIDE_STEPS`` steps build, pack and send in-thread (no captures, no
        hand-off; what was captured before runs first, in order: the same bytes), then the sender thread
        is tried again."""
        d = self._drive
        if d.reclaimed != self._drive_reclaimed:
            self._drive_reclaimed = d.reclaimed
            self._drive_aside = self.DRIVE_ASIDE_STEPS
            self._drive_capture = None
            d.sync()  # this step's captures built now: its new requests may name their rows (derived)
        elif self._drive_aside:
            self._drive_aside -= 1
            if not self._drive_aside:
                self._drive_capture = d.captured.append

    def _drive_step_later(self, snap, ids, nbs, preempted):
        """On the sender thread: ``build_connector_meta``'s call from what it captured (on the scheduler
        thread for a step with nothing scheduled or captured: ``_build_connector_meta_general``)."""
        new_fields = None
        try:
            if snap is not _ABSENT:
                d = self._drive
                rows = _new_requests_rows(snap) if snap else ()
                new_fields = (() if not rows else _new_request_rows_derived_of(rows, d.admitted, d.allocated)
                              if d.derived else _new_request_rows_of(rows))
        except Exception as e:  # noqa: BLE001
            snap = preempted = _ABSENT
            self._failed("build_connector_meta new requests", e)
        if type(nbs) is tuple and nbs and nbs[0] is _GROWN:
            nbs = _grown_blocks(nbs[1], nbs[2])
        self._drive_step_call(new_fields, snap, _Cached(ids, nbs), preempted)

    def _drive_step_call(self, new_fields, new_reqs, crd, preempted):
        """``build_connector_meta``'s call to the node (``crd``: the scheduler output's
        ``scheduled_cached_reqs``, or what was captured of it)."""
        # The node learns the step; vLLM gets the inner's metadata, which its worker reads.
        self._drive_step += 1
        try:
            ids = getattr(crd, "req_ids", None) if crd is not None else None
            steady = False
            if ids and self._drive.steady:
                self._drive.reconnected()  # (a new connection: the ids in full)
                ids, nbs, steady = _steady_fields(self._drive, self._drive_step, ids,
                                                  getattr(crd, "new_block_ids", ()))
            elif ids:
                ids = [str(r) for r in ids]
                nbs = list(getattr(crd, "new_block_ids", ()) or ())
                nbs = [None if nb is None else _block_groups(nb) for nb in nbs[:len(ids)]]
                nbs += [None] * (len(ids) - len(nbs))
            else:  # packed as [] too; shared, no object per step (an idle step's may wait a while)
                ids = nbs = ()
                self._drive.steady_ids = None  # (steady) the next step's ids go in full
            args = {"step": self._drive_step, "cached_req_ids": ids, "cached_new_block_ids": nbs}
            # left out when this vLLM has no such field (the node then knows they were not sent)
            if new_fields is not None:
                args["scheduled_new_reqs"] = new_fields
            elif new_reqs is not _ABSENT:
                args["scheduled_new_reqs"] = _new_requests_fields(new_reqs)
            if preempted is not _ABSENT:
                args["preempted_req_ids"] = sorted(str(x) for x in preempted) if preempted else ()
        except Exception as e:  # noqa: BLE001
            args = None
            self._drive.steady_ids = None  # not sent: the next step's ids go in full
            self._failed("drive build_connector_meta", e)
        # a step with nothing scheduled tells the node nothing new: it waits for a later frame
        # unless calls that do wait with it (an idle step then sends nothing)
        # (``steady``: as is a step whose ids are the previous step's, with or without new blocks:
        # build_connector_meta reads no time, and what it reads besides the step (pending saves,
        # staged receives and saves) only calls on this connection change, which stay behind it in
        # order; vLLM acts on none of its answer. So its answer and every later one are the same
        # whenever it is read: core SteadyStepTest)
        quiet = (args is not None and (steady or not args["cached_req_ids"]) and not args.get("scheduled_new_reqs")
                 and not args.get("preempted_req_ids"))
        if args is not None and self._drive_compact:
            self._drive_metadata = None
            new = args.get("scheduled_new_reqs")
            if new is not None and new_fields is None:  # recording too: the journal's entries, by position
                new = [(f["request_id"], f["block_ids"], f["num_computed_tokens"], f["kv_transfer_params"])
                       for f in new]
            try:
                self._drive.send_row("build_connector_meta", (
                    args["step"], args["cached_req_ids"], args["cached_new_block_ids"], new,
                    args.get("preempted_req_ids")), None if self._drive.brief else self._drive_meta_cb, True, quiet)
            except Exception as e:  # noqa: BLE001
                self._drive.steady_ids = None
                self._drive_failed("build_connector_meta", e)
        elif args is not None:
            self._drive_metadata = None
            # the end of the scheduler's pass: what waits in the batch goes out with it
            self._drive_send_args("build_connector_meta", args, None if self._drive.brief else self._drive_meta_cb, True, quiet)

    def on_new_request(self, request):
        if self._stream is not None:
            try:  # before the inner sees it: on_new_request may rewrite the params (#51052)
                self._admit(request)
            except Exception as e:  # noqa: BLE001
                self._failed("on_new_request", e)
        d = self._drive
        if d is not None:
            # _drive_admit's compact row, inlined for vLLM's Request (an int prompt length, params a
            # dict of str keys and plain scalars, or None); anything else, or a second call, there
            rid = request.request_id
            seen = self._drive_seen
            capture = self._drive_capture
            if (capture is not None and type(rid) is str and rid not in seen
                    and self._drive_admission_captured(request, rid)):  # the sender thread builds the row
                return self._inner.on_new_request(request)
            if self._drive_sender is not None:
                d.sync()
            if type(rid) is str and rid not in seen and self._drive_compact:
                try:
                    ids = request.prompt_token_ids
                    n = request.num_prompt_tokens
                    p = request.kv_transfer_params
                except AttributeError:
                    n = None
                if type(n) is int and (p is None or (type(p) is dict and _STR_TYPE.issuperset(map(type, p))
                                                     and _PLAIN_TYPES.issuperset(map(type, p.values())))):
                    seen.add(rid)
                    if p is not None:
                        p = p.copy()  # the connector may set its keys later
                    if d.derived:  # before the row: a frame it sends empties it
                        d.admitted[rid] = p
                    try:
                        d.add_row(_ADD_REQUEST, rid, n, None if ids is None else len(ids), p)
                    except Exception as e:  # noqa: BLE001
                        self._drive_row_failed("add_request", rid, e)
                    return self._inner.on_new_request(request)
            self._drive_admit(request)
        return self._inner.on_new_request(request)

    def _drive_output_later(self, args, on_result):
        """On the sender thread (or the scheduler thread's next use of the bridge): the quiet
        ``update_connector_output`` call ``update_connector_output`` captured."""
        self._drive_send_args("update_connector_output", args, on_result, False, True)

    def update_connector_output(self, connector_output):
        d = self._drive
        if d is not None and self._drive_capture is not None and self._stream is None:
            # Driving with the sender thread, not recording: an output that carries no ids whose call waits
            # in the batch for a later frame (quiet) is only captured: the sender thread sends it at the
            # next hand-off (or the scheduler thread's next use of the bridge does), before what follows
            # it: the same call, in the same order. Which call it is is decided as below after sync(), on the
            # same state: here the sender is idle and nothing waits to run (the bridge's sync() would do
            # nothing; else that way). The off and recording-only paths do not come here.
            try:
                fs = connector_output.finished_sending
                fr = connector_output.finished_recving
            except AttributeError:
                fs = fr = _ABSENT
            if (not fs and not fr and (fs is None or type(fs) in _EMPTY_IDS) and (fr is None or type(fr) in _EMPTY_IDS)
                    and not (d._busy or d._later or d.captured)):
                args = _NO_IDS[fs is None, fr is None]
                if not self._drive_producer:
                    on_result = None
                elif self._drive_freed_from_inner:
                    # quiet when the inner frees none and none of its deferred frees is pending (as
                    # _drive_free_from_inner decides): known only after the inner ran
                    on_result = _ABSENT if self._drive_inner_deferred else self._drive_freed_quiet
                elif (self._drive_deferred_known and not self._drive_deferred and not self._drive_finish_unread
                      and self._drive_pipeline):
                    on_result = self._drive_none_check
                else:
                    on_result = _ABSENT  # awaited: that way
                if on_result is not _ABSENT:
                    result = self._inner.update_connector_output(connector_output)
                    if on_result is self._drive_freed_quiet:
                        if connector_output.finished_sending:  # the inner freed some: not quiet
                            self._drive_free_from_inner(connector_output, dict(args), False)
                            return result
                        on_result = on_result[fs is None]
                        args = _NO_IDS_ACTED[fs is None, fr is None]
                    # (_id_list's args: None stays None, an empty set is []; one dict each, never changed)
                    if self._drive_handed:
                        self._drive_capture((self._drive_output_cap, args, on_result))
                    else:  # after a step built in-thread (nothing scheduled): sent here, as the next step's will be
                        self._drive_send_args("update_connector_output", args, on_result, False, True)
                    return result
        fields = None
        before = None
        if d is not None:
            if self._drive_sender is not None:  # the sender thread done with the last step (its replies settled)
                self._drive.sync()
            try:
                before = {"finished_sending": _id_list(getattr(connector_output, "finished_sending", None)),
                          "finished_recving": _id_list(getattr(connector_output, "finished_recving", None))}
            except Exception as e:  # noqa: BLE001
                self._failed("drive update_connector_output", e)
        if self._stream is not None:
            try:
                # copied before the inner runs: it may change the sets in place
                fs = getattr(connector_output, "finished_sending", None)
                fr = getattr(connector_output, "finished_recving", None)
                fields = (_output_fields, None if fs is None else tuple(fs), None if fr is None else tuple(fr))
            except Exception as e:  # noqa: BLE001
                self._failed("update_connector_output", e)
        result = self._inner.update_connector_output(connector_output)
        if fields is not None:
            try:
                if self._producer_scheduler:
                    kept = getattr(connector_output, "finished_sending", None)
                    self._stream.put("connector_output_received", fields, "finished_sending_rewritten",
                                     (_safe_fields, None if kept is None else tuple(kept)))
                else:
                    self._stream.put("connector_output_received", fields)
            except Exception as e:  # noqa: BLE001
                self._failed("update_connector_output", e)
        carries = before is not None and bool(before["finished_sending"] or before["finished_recving"])
        if before is not None and not self._drive_producer:
            # a consumer's node leaves the sets as they are: nothing to wait for. One that carries no
            # ids waits in the batch for a later frame (quiet)
            self._drive_send_args("update_connector_output", before, None, carries, not carries)
        elif before is not None and self._drive_freed_from_inner:
            self._drive_free_from_inner(connector_output, before, carries)
        elif (before is not None and self._drive_pipeline and self._drive_deferred_known and not self._drive_deferred
              and not self._drive_finish_unread and not carries and not self._drive_inner_deferred):
            # Nothing came and no deferred free is pending: the reducer surfaces a request only from
            # the ids it gets, a parked ACK meeting a deferral, or a deferral past its deadline, so
            # its answer is "none". Sent without waiting; the answer is checked when read. (With
            # drive_finished_from_inner, a request the node's unread answer may still defer counts
            # as pending.)
            self._drive_send_args("update_connector_output", before, self._drive_none_check, False, True)
        elif before is not None:
            r = self._drive_call("update_connector_output", **before)
            if r is None:
                self._drive_deferred_known = False  # the node may have surfaced some: always wait from now on
                if self._drive_inner_deferred:  # the inner's rewrite stands: what it frees is no longer pending
                    self._drive_inner_deferred.difference_update(
                        getattr(connector_output, "finished_sending", None) or ())
            elif "finished_sending" in r:
                # the node's rewrite: the requests whose blocks vLLM frees now (None when none)
                safe = r["finished_sending"]
                if safe:
                    self._drive_deferred.difference_update(safe)
                if self._drive_legacy or self._drive_inner_deferred:
                    safe = self._drive_freed_across(connector_output, safe)
                connector_output.finished_sending = set(safe) if safe else None
        return result

    def _drive_freed_across(self, connector_output, safe):
        """The requests vLLM frees after a switch to the node's answers (``_drive_finish_switch``) while
        deferrals from before it are pending: those of the inner's rewrite (``connector_output``'s
        ``finished_sending``, as the inner left it) that vLLM deferred on the inner's word, and those of
        the node's rewrite ``safe`` whose finish vLLM took from the node."""
        pending = self._drive_inner_deferred
        legacy = self._drive_legacy
        kept = getattr(connector_output, "finished_sending", None)
        freed = pending.intersection(kept) if kept else set()
        pending.difference_update(freed)
        for rid in safe or ():
            if rid in legacy:
                legacy.discard(rid)  # the node surfaces it once: never again
            else:
                freed.add(rid)
        return sorted(freed)

    def _drive_free_from_inner(self, connector_output, args, carries):
        """A producer's ``update_connector_output`` with ``drive_freed_from_inner``: vLLM keeps the
        inner's rewrite of ``finished_sending``; the call, carrying it as ``acted``, goes to the node
        without waiting (with the batch at once when ids came) and the node's rewrite is checked
        when read, as a set. The record of what the node defers (``_drive_deferred``) loses what
        the node surfaces."""
        try:
            kept = getattr(connector_output, "finished_sending", None)
            acted = _id_list(kept) or None
            args["acted"] = {"finished_sending": acted}
            acted = frozenset(acted or ())
        except Exception as e:  # noqa: BLE001 - not a set of ids: nothing the node could agree with
            acted = ("not a set", repr(getattr(connector_output, "finished_sending", None)))
            self._failed("drive update_connector_output", e)
        pending = self._drive_inner_deferred
        if pending and type(acted) is frozenset:
            pending.difference_update(acted)
        # quiet (may wait for a later frame) when no ids came, the inner freed none and none of its
        # deferred frees is pending: the node stamps a call when it reads it, and a held call's later
        # stamp could pass a deferral's deadline the inner had not reached (a divergence of ours)
        self._drive_send_args("update_connector_output", args,
                              (self._drive_freed_cb, self._drive_agreed_freed_cb, acted, (acted, args["finished_sending"]))
                              if type(acted) is frozenset else _partial(self._drive_freed_cb, (acted, args["finished_sending"])),
                              carries, not carries and acted == frozenset() and not pending)

    def _drive_freed_result(self, acted_sent, r):
        """The node's answer in full to an ``update_connector_output`` carrying ``acted`` (the inner's
        rewrite vLLM kept, and the set sent): the requests it frees leave ``_drive_deferred``; another set
        than ``acted`` is a divergence."""
        acted, sent = acted_sent
        safe = r["finished_sending"] if "finished_sending" in r else sent
        if safe:
            self._drive_deferred.difference_update(safe)
            if self._drive_legacy:
                self._drive_legacy.difference_update(safe)
        node = frozenset(safe or ())
        if node != acted:  # named as sorted lists (None: none), as vLLM would free them
            self._drive_diverged("update_connector_output", sorted(acted) or None if isinstance(
                acted, frozenset) else acted, sorted(node) or None)

    def request_finished(self, request, block_ids):
        s = self._stream
        if self._drive_sender is not None:
            self._drive.sync()
        if s is None or self._drive is not None:
            return self._finished("request_finished", request, block_ids,
                                  lambda: self._inner.request_finished(request, block_ids))
        # _finished without drive mode, inlined (once per request, on the scheduler's thread)
        rid = None
        try:
            rid = request.request_id
            if type(rid) is not str:
                rid = str(rid)
            admitted = None if rid in self._seen else self._renamed_from(rid)
            if admitted is None:
                self._admit(request)
            status = getattr(request, "status", None)
            blocks = tuple(block_ids) if type(block_ids) is list else block_ids
        except Exception as e:  # noqa: BLE001
            rid = None
            self._failed("request_finished", e)
        result = self._inner.request_finished(request, block_ids)
        if rid is not None:
            try:
                seen = self._seen
                seen.discard(rid)
                if admitted is not None:
                    seen.discard(admitted)
                delay_free, params = result
                s.put("request_finished", (_finished_fields, rid, status, blocks, admitted), "finish_decision",
                      (_decision_fields, rid, bool(delay_free), params.copy() if type(params) is dict
                       else _params_copy(params)))
            except Exception as e:  # noqa: BLE001
                self._failed("request_finished", e)
        return result

    def _finished(self, where, request, block_ids, call):
        rid = None
        admitted = None
        if self._stream is not None:
            try:
                admitted = self._renamed_from(_request_id(request))
                rid = _request_id(request) if admitted is not None else self._admit(request)
                fields = {"request_id": rid, "status": _LaterStatus(request), "block_ids": _LaterBlocks(block_ids)}
                if admitted is not None:
                    # the same request, admitted before vLLM appended its suffix: not a new one
                    fields["admitted_request_id"] = admitted
            except Exception as e:  # noqa: BLE001
                rid = None
                self._failed(where, e)
        result = call()
        if rid is not None:
            try:
                self._seen.discard(rid)
                if admitted is not None:
                    self._seen.discard(admitted)
                delay_free, params = result
                params = _params_copy(params)
                delay_free = bool(delay_free)
                self._put("request_finished", _later(fields), "finish_decision",
                          lambda rid=rid, d=delay_free, p=params: {"request_id": rid, "delay_free": d,
                                                                   "kv_transfer_params": plain(p)})
            except Exception as e:  # noqa: BLE001
                self._failed(where, e)
        if self._drive is not None:
            rid = _request_id(request)
            self._drive_seen.discard(rid)
            try:
                blocks, checked = _blocks_sent_later(block_ids)
                args = {"request_id": rid, "status": _status_name(request), "block_ids": blocks}
            except Exception as e:  # noqa: BLE001
                args = None
                self._failed("drive " + where, e)
            if args is not None and self._drive_finished_from_inner:
                self._drive_finish_from_inner(rid, args, result, checked)
                return result
            r = self._drive_call("request_finished", **args) if args is not None else None
            if r is not None:
                if r.get("delay_free"):
                    self._drive_deferred.add(rid)
                return bool(r.get("delay_free")), r.get("kv_transfer_params")
            self._drive_deferred_known = False  # the node may have deferred it: always wait from now on
        return result

    def _drive_finish_from_inner(self, rid, args, result, checked=()):
        """``request_finished`` with ``drive_finished_from_inner``: vLLM acts on the inner's
        ``result`` now; the call, carrying it as ``acted``, goes to the node without waiting and the
        node's answer is checked when read. The producer's record of what the node defers
        (``_drive_deferred``) takes the answer acted on at once and the node's when it is read."""
        try:
            delay_free, params = result
            acted = (bool(delay_free), _params_sent_later(params, checked))
            args["acted"] = {"delay_free": acted[0], "kv_transfer_params": acted[1]}
        except Exception as e:  # noqa: BLE001 - not a pair: nothing the node could agree with
            acted = ("not a pair", repr(result))
            self._failed("drive request_finished", e)
        if acted[0] is True:
            self._drive_deferred.add(rid)
            if self._drive_freed_from_inner:  # else the node's rewrite frees it
                self._drive_inner_deferred.add(rid)
        else:
            self._drive_finish_unread.add(rid)
        # carrying acted: a node that agrees leaves its answer out, and the run's rids are settled at once
        self._drive_send_args("request_finished", args, (
            self._drive_finish_cb, self._drive_agreed_deferred_cb if acted[0] is True else self._drive_agreed_kept_cb,
            rid, (rid, acted)) if "acted" in args else _partial(self._drive_finish_cb, (rid, acted)))

    def _drive_finish_result(self, rid_acted, r):
        """The node's answer in full to a ``request_finished`` vLLM acted on without waiting: the record
        of what the node defers follows the node's answer; another answer than ``acted`` is a divergence."""
        rid, acted = rid_acted
        self._drive_finish_unread.discard(rid)
        if r.get("delay_free"):
            self._drive_deferred.add(rid)
        else:
            self._drive_deferred.discard(rid)  # the node will never surface it
            if self._drive_legacy:
                self._drive_legacy.discard(rid)
        node = _finish_answer(r)
        if node != acted:
            self._drive_diverged("request_finished", acted, node)

    def register_finished_partial_tail(self, request, block_ids, partial_tail_offloads):
        return self._inner.register_finished_partial_tail(request, block_ids, partial_tail_offloads)

    def take_events(self):
        return self._inner.take_events()

    def has_pending_block_frees(self):
        return self._inner.has_pending_block_frees()

    def get_finished_count(self):
        return self._inner.get_finished_count()

    def set_xfer_handshake_metadata(self, metadata):
        return self._inner.set_xfer_handshake_metadata(metadata)

    def set_xfer_handshake_metadata_pp_aware(self, metadata):
        return self._inner.set_xfer_handshake_metadata_pp_aware(metadata)

    def reset_cache(self):
        return self._inner.reset_cache()

    def has_pending_push_work(self):
        return self._inner.has_pending_push_work()

    # ================================================================== class methods

    @classmethod
    def get_required_kvcache_layout(cls, vllm_config):
        return _class_for_classmethod(cls, _extra_config(vllm_config)).get_required_kvcache_layout(vllm_config)

    @classmethod
    def requires_piecewise_for_cudagraph(cls, extra_config):
        return _class_for_classmethod(cls, extra_config).requires_piecewise_for_cudagraph(extra_config)

    @classmethod
    def build_kv_connector_stats(cls, data=None):
        # Called in the API-server process with no config: the inner this class was resolved for
        # by vLLM's factory (configured_class), which had the config.
        return _class_for_classmethod(cls, None).build_kv_connector_stats(data)

    @classmethod
    def build_prom_metrics(cls, vllm_config, metric_types, labelnames, per_engine_labelvalues):
        return _class_for_classmethod(cls, _extra_config(vllm_config)).build_prom_metrics(
            vllm_config, metric_types, labelnames, per_engine_labelvalues)


if SupportsHMA is not None:
    class KvledgerRecorderConnectorHMA(KvledgerRecorderConnector, SupportsHMA):
        """The recorder for an inner connector that is ``SupportsHMA`` (declares it too)."""

        def request_finished_all_groups(self, request, block_ids):
            return self._finished("request_finished_all_groups", request, block_ids,
                                  lambda: self._inner.request_finished_all_groups(request, block_ids))
else:  # pragma: no cover
    KvledgerRecorderConnectorHMA = None


def recorder_class_for(inner_cls):
    """The recorder class for ``inner_cls``: declares SupportsHMA exactly when it does."""
    if _is_hma(inner_cls):
        return KvledgerRecorderConnectorHMA
    return KvledgerRecorderConnector


_CONFIGURED = {}


def configured_class(name, kv_transfer_config=None):
    """The class vLLM gets for ``kv_connector`` ``name`` (``kvledger_vllm``'s module ``__getattr__``).

    ``KvledgerRecorderConnector`` takes the inner connector's side: the class declares
    ``SupportsHMA`` exactly when the inner does (vLLM's scheduler calls ``request_finished_all_groups``
    on any connector that declares it); ``KvledgerRecorderConnectorHMA`` always declares it (and
    refuses a non-HMA inner at construction). The inner is the one ``kv_transfer_config`` (the
    factory's, when the caller could find it) or vLLM's current config names, else the default
    (MoRIIO); the class returned remembers it, so that its class methods ask that inner in every
    process (the API server's ``build_kv_connector_stats``). When the inner cannot be imported here,
    the plain class is returned and its construction names the problem.
    """
    hma_name = name == "KvledgerRecorderConnectorHMA"
    if hma_name and KvledgerRecorderConnectorHMA is None:
        raise AttributeError("kvledger_vllm: this vLLM has no SupportsHMA; configure KvledgerRecorderConnector")
    extra = None
    if kv_transfer_config is not None:
        extra = getattr(kv_transfer_config, "kv_connector_extra_config", None)
        extra = extra if isinstance(extra, dict) else {}
    if extra is None:
        extra = _current_config_extra(name) or {}
    try:
        inner_cls = resolve_inner_class(extra)
    except Exception as e:  # noqa: BLE001 - the constructor reports it with the engine's config
        log.debug("kvledger recorder: %s resolved without its inner connector (%s)", name, e)
        return KvledgerRecorderConnectorHMA if hma_name else KvledgerRecorderConnector
    base = KvledgerRecorderConnectorHMA if hma_name else recorder_class_for(inner_cls)
    key = (base, inner_cls)
    cls = _CONFIGURED.get(key)
    if cls is None:
        cls = type(base.__name__, (base,), {"__module__": base.__module__, "__qualname__": base.__qualname__,
                                            "__doc__": base.__doc__, "_configured_inner": inner_cls})
        _CONFIGURED[key] = cls
    return cls


class _CloseFailures(logging.Handler):
    """Collects, while the inner connector shuts down, the warnings MoRIIO's scheduler logs for
    each notify socket whose close raised ("Error closing ZMQ socket for path %s: %s")."""

    PREFIX = "Error closing ZMQ socket for path"

    def __init__(self):
        super().__init__(logging.WARNING)
        self.seen = []
        self._logger = logging.getLogger("vllm")

    def attach(self):
        self._logger.addHandler(self)

    def detach(self):
        self._logger.removeHandler(self)

    def emit(self, record):
        try:
            if isinstance(record.msg, str) and record.msg.startswith(self.PREFIX):
                args = record.args if isinstance(record.args, tuple) else ()
                if len(args) >= 2:
                    self.seen.append(f"{args[0]}: {args[1]}")
                else:
                    self.seen.append(record.getMessage()[len(self.PREFIX):].strip())
        except Exception:  # noqa: BLE001  (a logging handler must never raise)
            pass


# ---------------------------------------------------------------------- a forward that posted reads

def _forward_fields(reads, waits, wait_ns, last_before_ns):
    return {"reads_posted": [str(r) for r in reads], "layer_waits": int(waits), "layer_wait_ns": int(wait_ns),
            "last_layer_wait_before_ns": int(last_before_ns)}


# ---------------------------------------------------------------------- register_kv_caches

# How long a worker whose inner connector refused its KV caches waits for the registration to be written.
_REGISTRATION_FLUSH_S = 2.0


def _config_block_size(vllm_config):
    """``cache_config.block_size``: the block size the connector is configured with (-1: unknown)."""
    block = getattr(getattr(vllm_config, "cache_config", None), "block_size", None)
    return block if isinstance(block, int) and not isinstance(block, bool) else -1


def _attn_backend(vllm_config):
    """The attention backend the engine was configured with (``attention_config.backend``, else the
    environment's ``VLLM_ATTENTION_BACKEND``), by name; None when neither names one (vLLM picks it)."""
    backend = getattr(getattr(vllm_config, "attention_config", None), "backend", None)
    if backend is None:
        backend = os.environ.get("VLLM_ATTENTION_BACKEND") or None
    if backend is None:
        return None
    return str(getattr(backend, "name", None) or backend)


def _tensor_row(name, t):
    shape = getattr(t, "shape", None)
    try:
        shape = tuple(int(x) for x in shape) if shape is not None else ()
    except (TypeError, ValueError):
        shape = ()
    dtype = getattr(t, "dtype", None)
    return name, shape, None if dtype is None else str(dtype)


def _tensors_snapshot(kv_caches):
    """``(layer name, shape, dtype)`` of every tensor ``register_kv_caches`` is handed, in order, read
    on the calling thread (a shape is a few ints; nothing is copied). A layer holding several tensors
    (a tuple or list, as mamba's states) gives one row per tensor, named ``<layer>[i]``."""
    rows = []
    items = kv_caches.items() if hasattr(kv_caches, "items") else enumerate(kv_caches or ())
    for name, value in items:
        name = str(name)
        if isinstance(value, (tuple, list)):
            rows.extend(_tensor_row(f"{name}[{i}]", t) for i, t in enumerate(value))
        else:
            rows.append(_tensor_row(name, value))
    return rows


def _registration_fields(config_block_size, attn_backend, rows):
    return {"config_block_size": int(config_block_size), "attn_backend": attn_backend,
            "tensors": [{"layer_name": n, "shape": list(shape), "dtype": dtype} for n, shape, dtype in rows]}


# ---------------------------------------------------------------------- the journal header

def _ranks(vllm_config, is_scheduler):
    pc = getattr(vllm_config, "parallel_config", None)
    dp = int(getattr(pc, "data_parallel_rank", 0) or 0)
    dp_size = int(getattr(pc, "data_parallel_size", 1) or 1)
    dp_local = getattr(pc, "data_parallel_size_local", None)
    dp_local = dp_size if dp_local is None else int(dp_local)
    tp_size = int(getattr(pc, "tensor_parallel_size", 1) or 1)
    tp = 0
    if not is_scheduler:
        try:
            from vllm.distributed.parallel_state import get_tensor_model_parallel_rank
            tp = int(get_tensor_model_parallel_rank())
        except Exception:  # noqa: BLE001
            tp = int(getattr(pc, "rank", 0) or 0) % tp_size
    return dp, dp_size, dp_local, tp, tp_size


def per_process_template(template, dp_size=1, tp_size=1):
    """A file template that names each process of the engine apart.

    Every process (the scheduler of each DP rank, the worker of each TP rank) writes its own file:
    processes sharing one would write over each other's lines, and each start would move the
    others' files aside as an earlier run's. A template without ``{role}`` (always needed: a
    scheduler and a worker), ``{dp}`` (with more than one DP rank) or ``{tp}`` (with more than one
    TP rank) gets the missing ones before its extension (``/var/log/prefill.jsonl`` ->
    ``/var/log/prefill-{role}.jsonl``), with a warning naming the template to give.
    """
    needed = (("{role}", "-{role}", True), ("{dp}", "-dp{dp}", dp_size > 1), ("{tp}", "-tp{tp}", tp_size > 1))
    missing = [part for key, part, need in needed if need and key not in template]
    if not missing:
        return template
    stem, ext = os.path.splitext(template)
    fixed = stem + "".join(missing) + ext
    log.warning("kvledger-vllm: record_to %r does not tell the engine's processes apart (it needs {role}, and {dp} "
                "and {tp} with more than one DP or TP rank); recording to %r instead", template, fixed)
    return fixed


_READ_MODE_ENV = "VLLM_MORIIO_CONNECTOR_READ_MODE"


def _truthy(value):
    return str(value).strip().lower() in ("true", "1")


def resolve_mode(inner, extra, kv_transfer_config=None):
    """``"READ"`` or ``"WRITE"``: the transfer mode as the inner connector resolved it.

    The inner's own ``mode`` (MoRIIO sets it at construction: at vLLM 239b5ff30 from the
    environment variable ``VLLM_MORIIO_CONNECTOR_READ_MODE``, later from the extra config's
    ``read_mode``); else its module's ``get_moriio_mode``; else the extra config's ``read_mode``;
    else the environment variable as vLLM's ``envs`` parses it (``"true"`` or ``"1"``, any case).
    """
    for holder in (inner, getattr(inner, "connector_scheduler", None), getattr(inner, "connector_worker", None)):
        name = getattr(getattr(holder, "mode", None), "name", None)
        if name in ("READ", "WRITE"):
            return name
    if inner is not None:
        import sys
        module = sys.modules.get(type(inner).__module__)
        f = getattr(module, "get_moriio_mode", None)
        if callable(f):
            for args in ((), (kv_transfer_config,)):
                try:
                    name = getattr(f(*args), "name", None)
                except TypeError:
                    continue
                except Exception:  # noqa: BLE001 - the module's own resolution failed: fall through
                    break
                if name in ("READ", "WRITE"):
                    return name
    if extra.get("read_mode") is not None:
        return "READ" if _truthy(extra["read_mode"]) else "WRITE"
    # vLLM's envs: os.getenv(name, "False").lower() in ("true", "1") (no stripping)
    return "READ" if os.environ.get(_READ_MODE_ENV, "False").lower() in ("true", "1") else "WRITE"


def resolve_host(inner, extra):
    """The IP this engine advertises, as the inner connector resolved it.

    MoRIIO's scheduler keeps it as ``host_ip`` (vLLM's ``get_ip()`` at 239b5ff30; the extra config's
    ``host_ip`` first in later versions), its worker in ``moriio_config.local_ip``, and both connectors
    put it in ``engine_id`` (``IP:PORT``). Else the extra config's ``host_ip``, else vLLM's
    ``get_ip()``, else ``VLLM_HOST_IP``, else 127.0.0.1 (logged).
    """
    candidates = []
    for holder in (getattr(inner, "connector_scheduler", None), getattr(inner, "connector_worker", None), inner):
        candidates.append(getattr(holder, "host_ip", None))
        candidates.append(getattr(getattr(holder, "moriio_config", None), "local_ip", None))
    for c in candidates:
        if isinstance(c, str) and c:
            return c
    eid = getattr(inner, "engine_id", None)
    if isinstance(eid, str) and ":" in eid:
        return eid.rsplit(":", 1)[0]
    if extra.get("host_ip"):
        return str(extra["host_ip"])
    for module in ("vllm.utils.network_utils", "vllm.utils"):
        try:
            f = getattr(importlib.import_module(module), "get_ip", None)
        except Exception:  # noqa: BLE001
            continue
        if callable(f):
            try:
                return str(f())
            except Exception:  # noqa: BLE001
                break
    if os.environ.get("VLLM_HOST_IP"):
        return os.environ["VLLM_HOST_IP"]
    log.warning("kvledger recorder: cannot tell this engine's IP (no host_ip, no vLLM get_ip); recording 127.0.0.1")
    return "127.0.0.1"


def vllm_version_and_commit():
    """``(vllm.__version__, commit)`` of the installed vLLM; each None when unknown.

    The commit is vLLM's ``_version`` module's commit id when it has one, else the hash of a
    development version's ``+g<hash>`` local part.
    """
    try:
        import vllm
    except Exception:  # noqa: BLE001
        return None, None
    version = getattr(vllm, "__version__", None)
    version = str(version) if version else None
    commit = None
    try:
        vmod = importlib.import_module("vllm._version")
        for name in ("__commit_id__", "commit_id"):
            c = getattr(vmod, name, None)
            if isinstance(c, str) and c:
                commit = c
                break
    except Exception:  # noqa: BLE001
        pass
    if commit is None and version:
        import re
        m = re.search(r"\+g([0-9a-f]{7,40})(?![0-9a-f])", version)
        if m:
            commit = m.group(1)
    if commit is not None and len(commit) > 7 and commit[0] == "g" and all(ch in _LOWER_HEX for ch in commit[1:]):
        commit = commit[1:]
    return version, commit


def node_id_for(role, is_scheduler, dp, tp, host, handshake_port):
    """A kvledger node id that tells this engine process apart from every other of the fleet:
    ``<P|D|B><dp>[-tp<tp>]-<host>-<handshake port>`` (``P0-10.0.0.7-6301``, ``D1-tp1-10.0.1.2-6401``).
    Characters a node id cannot hold (an IPv6 address's ``:``) become ``.``."""
    import re
    side = {"kv_producer": "P", "kv_consumer": "D", "kv_both": "B"}[role]
    rank = f"{side}{dp}" if is_scheduler else f"{side}{dp}-tp{tp}"
    return re.sub(r"[^A-Za-z0-9._-]", ".", f"{rank}-{host}-{handshake_port}")


def _group_kind(spec):
    """kvledger's GroupKind of a vLLM KV-cache spec, by its class (and vLLM's own
    ``is_full_attention_spec`` where the install has it)."""
    names = [c.__name__ for c in type(spec).__mro__]
    if "MambaSpec" in names:
        return "MAMBA"
    if "SlidingWindowSpec" in names:
        return "SLIDING_WINDOW"
    try:
        from vllm.v1.kv_cache_interface import is_full_attention_spec
        if is_full_attention_spec(spec):
            return "FULL_ATTENTION"
    except Exception:  # noqa: BLE001 - an older vLLM: by class name
        if "FullAttentionSpec" in names:
            return "FULL_ATTENTION"
    return "OTHER"


def kv_groups(kv_cache_config):
    """The KV-cache groups of the engine's ``KVCacheConfig`` in the header's shape (kind, block
    size, sliding window, whether the group takes part in KV transfer), or None without one."""
    groups = getattr(kv_cache_config, "kv_cache_groups", None)
    if not groups:
        return None
    out = []
    for g in groups:
        spec = getattr(g, "kv_cache_spec", None)
        kind = _group_kind(spec)
        entry = {"kind": kind}
        block = getattr(spec, "block_size", None)
        if isinstance(block, int):
            entry["block_size_tokens"] = block
        window = getattr(spec, "sliding_window", None)
        if kind == "SLIDING_WINDOW" and isinstance(window, int):
            entry["sliding_window_tokens"] = window
        entry["enable_kv_transfer"] = bool(getattr(g, "enable_kv_transfer", True))
        if kind == "MAMBA":
            shapes = getattr(spec, "shapes", None)
            entry["mamba_states"] = len(shapes) if isinstance(shapes, (list, tuple)) else 2
        out.append(entry)
    return out


def build_header(vllm_config, is_scheduler, extra, inner_cls, ranks, inner=None, kv_cache_config=None):
    """The kvledger journal header (journal/FORMAT.md, "Header") for this process.

    ``inner``: the constructed inner connector, asked for the mode and host it resolved;
    ``kv_cache_config``: the engine's, whose groups (and whether vLLM runs the hybrid KV-cache
    manager over them, and its lookahead) the header carries when there is one.
    """
    dp, dp_size, dp_local, tp, tp_size = ranks
    ktc = vllm_config.kv_transfer_config
    role = str(getattr(ktc, "kv_role", "") or "")
    # kv_both is written as it is: kvledger replays it as MoRIIO runs it (the scheduler tests
    # kv_role == "kv_producer" and acts as a consumer; the worker uses is_kv_producer).
    if role not in ("kv_producer", "kv_consumer", "kv_both"):
        raise ValueError(f"kv_role {role!r}: kvledger records kv_producer, kv_consumer and kv_both connectors")
    mode = resolve_mode(inner, extra, ktc)
    host = resolve_host(inner, extra)
    handshake_port = extra.get("handshake_port") or "6301"
    inner_name = f"{inner_cls.__module__}.{inner_cls.__qualname__}"
    version, commit = vllm_version_and_commit()
    header = {
        "kind": "header", "type": "header", "format_version": 1,
        "node_id": node_id_for(role, is_scheduler, dp, tp, host, handshake_port),
        "origin": f"vllm-bridge {__version__} recorder {'scheduler' if is_scheduler else 'worker'} "
                  f"dp{dp} tp{tp} inner={inner_name}",
    }
    if version:
        header["vllm_version"] = version
    if commit:
        header["vllm_commit"] = commit
    header["inner_connector"] = inner_name
    header["kv_role"] = role
    header["transfer_mode"] = mode
    header["host_ip"] = str(host)
    header["handshake_port"] = handshake_port
    header["notify_port"] = extra.get("notify_port") or "61005"
    header.update({"dp_rank": dp, "dp_size": dp_size, "dp_size_local": dp_local, "tp_rank": tp, "tp_size": tp_size})
    block = getattr(getattr(vllm_config, "cache_config", None), "block_size", None)
    if isinstance(block, int):
        header["cache_block_size"] = block
    groups = kv_groups(kv_cache_config)
    if groups is not None:
        header["groups"] = groups
        sc = getattr(vllm_config, "scheduler_config", None)
        header["hma_enabled"] = not bool(getattr(sc, "disable_hybrid_kv_cache_manager", True))
        lookahead = getattr(vllm_config, "num_lookahead_tokens", None)
        if isinstance(lookahead, int):
            header["lookahead_tokens"] = lookahead
    for key, field in (("defer_timeout", "defer_timeout_ns"), ("transfer_timeout", "transfer_timeout_ns"),
                       ("recv_abort_timeout", "recv_abort_timeout_ns")):
        if extra.get(key) is not None:
            header[field] = int(float(extra[key]) * 1_000_000_000)
    return header

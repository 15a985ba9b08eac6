"""``KvledgerRecorderConnector``: wraps vLLM's MoRIIO connector (or another) and records its hooks.

vLLM loads it by configuration only::

    --kv-transfer-config '{"kv_connector": "KvledgerRecorderConnector",
                           "kv_connector_module_path": "kvledger_vllm",
                           "kv_role": "kv_producer",
                           "kv_connector_extra_config": {"record_to": "/var/log/kvledger/{role}-dp{dp}-tp{tp}.jsonl",
                                                         ...the inner connector's own keys...}}'

Every method of ``KVConnectorBase_V1`` is delegated explicitly to the inner connector and returns
exactly what the inner returned; an exception of the inner connector propagates unchanged (the
engine sees what it would have seen without the recorder). The recorder's own work is wrapped so
that an error in it is logged once per hook and never reaches vLLM.

Extra config keys read here (all others are the inner connector's):

``inner_connector``             class name of the wrapped connector, default ``MoRIIOConnector``
``inner_connector_module_path`` module holding it (default: vLLM's registry, then MoRIIO's module)
``record_to``                   a path template with ``{role}``, ``{dp}``, ``{tp}``; absent: no recording
``record_layers``               also record ``save_kv_layer`` per layer (default false: per-layer
                                hooks cost one attribute test when off)
``record_queue_size``           capture queue bound in entries, default 65536 (a full queue drops
                                and counts; the count is written into the stream)
"""

from __future__ import annotations

import importlib
import logging
import os

from . import __version__
from .stream import FileSink, Stream, plain

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


def _class_for_classmethod(cls, extra):
    """The inner class for a class method: the one built in this process, else resolved now."""
    inner = getattr(cls, "_inner_class_seen", None)
    if inner is not None and not extra:
        return inner
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
        return [[int(b) for b in value]]
    return [[int(b) for b in g] for g in value]


def _status_name(request):
    """The request's finish status by name. A status the journal format does not know (a newer
    vLLM's) is written as FINISHED_ABORTED: MoRIIO only tells FINISHED_LENGTH_CAPPED from the
    rest, and an unknown name would make the whole file fail to import."""
    st = getattr(request, "status", None)
    name = (getattr(st, "name", None) or str(st)).rsplit(".", 1)[-1]
    return name if name in _FINISH_STATUSES else "FINISHED_ABORTED"


def _id_list(value):
    if value is None:
        return None
    return sorted(str(x) for x in value)


class KvledgerRecorderConnector(KVConnectorBase_V1):
    """Delegates every ``KVConnectorBase_V1`` method to the inner connector and records the hooks."""

    _inner_class_seen = None  # the inner class this process built (for class methods without config)

    def __init__(self, vllm_config, role, kv_cache_config=None):
        # The base constructor only stores the config; it is called so that attributes vLLM code
        # reads directly (_vllm_config, _role, ...) exist on the wrapper too.
        try:
            super().__init__(vllm_config, role, kv_cache_config)
        except TypeError:  # older base classes take (vllm_config, role)
            super().__init__(vllm_config, role)
        extra = _extra_config(vllm_config)
        inner_cls = resolve_inner_class(extra)
        type(self)._inner_class_seen = inner_cls
        KvledgerRecorderConnector._inner_class_seen = inner_cls
        try:
            self._inner = inner_cls(vllm_config, role, kv_cache_config)
        except TypeError:
            self._inner = inner_cls(vllm_config, role)
        self._errors = {}
        self._seen = set()
        self._step = 0
        self._stream = None
        self._record_layers = False
        self._is_scheduler = role == KVConnectorRole.SCHEDULER
        self._producer_scheduler = False
        if SupportsHMA is not None and issubclass(inner_cls, SupportsHMA) != issubclass(type(self), SupportsHMA):
            log.warning("kvledger recorder: %s %s SupportsHMA but %s %s; use kv_connector %s",
                        inner_cls.__name__, "is" if issubclass(inner_cls, SupportsHMA) else "is not",
                        type(self).__name__, "is" if issubclass(type(self), SupportsHMA) else "is not",
                        recorder_class_for(inner_cls).__name__)
        try:
            self._start_recording(vllm_config, role, extra, inner_cls)
        except Exception as e:  # noqa: BLE001 - recording is optional, the engine is not
            self._stream = None
            log.error("kvledger recorder: recording is off: %s", e, exc_info=True)

    # ------------------------------------------------------------------ recording set-up

    def _start_recording(self, vllm_config, role, extra, inner_cls):
        where = extra.get("record_to")
        role_name = "scheduler" if self._is_scheduler else "worker"
        dp, dp_size, dp_local, tp, tp_size = _ranks(vllm_config, self._is_scheduler)
        if not where:
            log.info("kvledger-vllm %s: %s %s over %s, not recording (no record_to)", __version__,
                     type(self).__name__, role_name, inner_cls.__name__)
            return
        if "://" in str(where):
            raise ValueError(f"record_to {where!r}: only a file path is supported in this version "
                             f"(the ZMQ sink to a kvledger node is not built yet)")
        path = str(where).format(role=role_name, dp=dp, tp=tp)
        self._record_layers = str(extra.get("record_layers", "false")).strip().lower() in ("1", "true", "yes")
        qsize = int(extra.get("record_queue_size", 65536))
        header = build_header(vllm_config, self._is_scheduler, extra, inner_cls, (dp, dp_size, dp_local, tp, tp_size))
        self._producer_scheduler = self._is_scheduler and header["kv_role"] == "kv_producer"
        self._stream = Stream(header, FileSink(path), maxsize=qsize,
                              name=f"kvledger-recorder-{role_name}-dp{dp}-tp{tp}")
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
        n = self._errors.get(where, 0)
        self._errors[where] = n + 1
        if n == 0:
            log.error("kvledger recorder: recording %s failed (%r); the call itself went through. "
                      "Further errors in %s are counted, not logged.", where, e, where, exc_info=True)

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
        rid = _request_id(request)
        if rid in self._seen:
            return rid
        self._seen.add(rid)
        ids = getattr(request, "prompt_token_ids", None)
        n = getattr(request, "num_prompt_tokens", None)
        if not isinstance(n, int):
            n = len(ids) if ids is not None else 0
        params = getattr(request, "kv_transfer_params", None)
        self._put("request_admitted", {
            "request_id": rid,
            "num_prompt_tokens": n,
            "prompt_token_ids_len": len(ids) if ids is not None else None,
            "kv_transfer_params": plain(params) if params is not None else None,
        })
        return rid

    # ================================================================== worker side

    @property
    def prefer_cross_layer_blocks(self):
        return self._inner.prefer_cross_layer_blocks

    def bind_connector_metadata(self, connector_metadata):
        super().bind_connector_metadata(connector_metadata)
        return self._inner.bind_connector_metadata(connector_metadata)

    def clear_connector_metadata(self):
        super().clear_connector_metadata()
        return self._inner.clear_connector_metadata()

    def has_connector_metadata(self):
        return self._inner.has_connector_metadata()

    def register_kv_caches(self, kv_caches):
        return self._inner.register_kv_caches(kv_caches)

    def register_cross_layers_kv_cache(self, kv_cache, attn_backend):
        return self._inner.register_cross_layers_kv_cache(kv_cache, attn_backend)

    def set_host_xfer_buffer_ops(self, copy_operation):
        return self._inner.set_host_xfer_buffer_ops(copy_operation)

    def handle_preemptions(self, kv_connector_metadata):
        return self._inner.handle_preemptions(kv_connector_metadata)

    def start_load_kv(self, forward_context, **kwargs):
        result = self._inner.start_load_kv(forward_context, **kwargs)
        if self._stream is not None:
            try:
                self._put("load_started", {})
            except Exception as e:  # noqa: BLE001
                self._failed("start_load_kv", e)
        return result

    def wait_for_layer_load(self, layer_name):
        return self._inner.wait_for_layer_load(layer_name)

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
            except Exception as e:  # noqa: BLE001
                self._failed("wait_for_save", e)
        return result

    def get_finished(self, finished_req_ids):
        result = self._inner.get_finished(finished_req_ids)
        if self._stream is not None:
            try:
                sending, recving = result
                self._put("finished_polled", {}, "finished_reported", {
                    "done_sending": _id_list(sending), "done_recving": _id_list(recving),
                    "load_error_blocks": None})
            except Exception as e:  # noqa: BLE001
                self._failed("get_finished", e)
        return result

    def get_block_ids_with_load_errors(self):
        return self._inner.get_block_ids_with_load_errors()

    def shutdown(self):
        failures = _CloseFailures() if self._stream is not None else None
        try:
            if failures is not None:
                failures.attach()
            return self._inner.shutdown()
        finally:
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

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        rid = None
        if self._stream is not None:
            try:
                rid = self._admit(request)
            except Exception as e:  # noqa: BLE001
                self._failed("get_num_new_matched_tokens", e)
        result = self._inner.get_num_new_matched_tokens(request, num_computed_tokens)
        if self._stream is not None and rid is not None:
            try:
                count, load_async = result
                # None means "ask again": the format has no reply for it
                self._put("matched_tokens_queried", {"request_id": rid, "num_computed_tokens": int(num_computed_tokens)},
                          None if count is None else "matched_tokens",
                          None if count is None else {"request_id": rid, "count": int(count),
                                                      "load_async": bool(load_async)})
            except Exception as e:  # noqa: BLE001
                self._failed("get_num_new_matched_tokens", e)
        return result

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        rid = None
        if self._stream is not None:
            try:
                rid = self._admit(request)
                groups = _block_groups(blocks.get_block_ids() if blocks is not None else None)
            except Exception as e:  # noqa: BLE001
                rid = None
                self._failed("update_state_after_alloc", e)
        result = self._inner.update_state_after_alloc(request, blocks, num_external_tokens)
        if rid is not None:
            try:
                self._put("blocks_allocated", {"request_id": rid, "blocks": groups,
                                                      "num_external_tokens": int(num_external_tokens)})
            except Exception as e:  # noqa: BLE001
                self._failed("update_state_after_alloc", e)
        return result

    def build_connector_meta(self, scheduler_output):
        result = self._inner.build_connector_meta(scheduler_output)
        if self._stream is not None:
            try:
                self._step += 1
                cached = []
                crd = getattr(scheduler_output, "scheduled_cached_reqs", None)
                if crd is not None:
                    ids = list(getattr(crd, "req_ids", ()) or ())
                    new_blocks = list(getattr(crd, "new_block_ids", ()) or ())
                    for i, r in enumerate(ids):
                        nb = new_blocks[i] if i < len(new_blocks) else None
                        cached.append({"request_id": str(r),
                                       "new_block_ids": None if nb is None else _block_groups(nb)})
                self._put("step_scheduled", {"step": self._step, "scheduled_cached_reqs": cached})
            except Exception as e:  # noqa: BLE001
                self._failed("build_connector_meta", e)
        return result

    def on_new_request(self, request):
        if self._stream is not None:
            try:  # before the inner sees it: on_new_request may rewrite the params (#51052)
                self._admit(request)
            except Exception as e:  # noqa: BLE001
                self._failed("on_new_request", e)
        return self._inner.on_new_request(request)

    def update_connector_output(self, connector_output):
        fields = None
        if self._stream is not None:
            try:
                fields = {"finished_sending": _id_list(getattr(connector_output, "finished_sending", None)),
                          "finished_recving": _id_list(getattr(connector_output, "finished_recving", None))}
            except Exception as e:  # noqa: BLE001
                self._failed("update_connector_output", e)
        result = self._inner.update_connector_output(connector_output)
        if fields is not None:
            try:
                if self._producer_scheduler:
                    safe = getattr(connector_output, "finished_sending", None)
                    self._put("connector_output_received", fields, "finished_sending_rewritten",
                              {"safe": _id_list(safe) or []})
                else:
                    self._put("connector_output_received", fields)
            except Exception as e:  # noqa: BLE001
                self._failed("update_connector_output", e)
        return result

    def request_finished(self, request, block_ids):
        return self._finished("request_finished", request, block_ids,
                              lambda: self._inner.request_finished(request, block_ids))

    def _finished(self, where, request, block_ids, call):
        rid = None
        admitted = None
        if self._stream is not None:
            try:
                admitted = self._renamed_from(_request_id(request))
                rid = _request_id(request) if admitted is not None else self._admit(request)
                fields = {"request_id": rid, "status": _status_name(request), "block_ids": _block_groups(block_ids)}
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
                self._put("request_finished", fields, "finish_decision",
                          {"request_id": rid, "delay_free": bool(delay_free), "kv_transfer_params": plain(params)})
            except Exception as e:  # noqa: BLE001
                self._failed(where, e)
        return result

    def take_events(self):
        return self._inner.take_events()

    def get_finished_count(self):
        return self._inner.get_finished_count()

    def set_xfer_handshake_metadata(self, metadata):
        return self._inner.set_xfer_handshake_metadata(metadata)

    def reset_cache(self):
        return self._inner.reset_cache()

    def has_pending_push_work(self):
        # Newer base classes only; an inner without it answers like the base would.
        f = getattr(self._inner, "has_pending_push_work", None)
        return f() if f is not None else False

    # ================================================================== class methods

    @classmethod
    def get_required_kvcache_layout(cls, vllm_config):
        return _class_for_classmethod(cls, _extra_config(vllm_config)).get_required_kvcache_layout(vllm_config)

    @classmethod
    def requires_piecewise_for_cudagraph(cls, extra_config):
        return _class_for_classmethod(cls, extra_config).requires_piecewise_for_cudagraph(extra_config)

    @classmethod
    def build_kv_connector_stats(cls, data=None):
        # Called in the API-server process with no config: the class built in this process, else
        # the default inner connector.
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
    """The recorder class to configure for ``inner_cls``: declares SupportsHMA exactly when it does."""
    if SupportsHMA is not None and isinstance(inner_cls, type) and issubclass(inner_cls, SupportsHMA):
        return KvledgerRecorderConnectorHMA
    return KvledgerRecorderConnector


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


def build_header(vllm_config, is_scheduler, extra, inner_cls, ranks):
    """The kvledger journal header (journal/FORMAT.md, "Header") for this process."""
    dp, dp_size, dp_local, tp, tp_size = ranks
    ktc = vllm_config.kv_transfer_config
    role = str(getattr(ktc, "kv_role", "") or "")
    # kv_both is written as it is: kvledger replays it as MoRIIO runs it (the scheduler tests
    # kv_role == "kv_producer" and acts as a consumer; the worker uses is_kv_producer).
    if role not in ("kv_producer", "kv_consumer", "kv_both"):
        raise ValueError(f"kv_role {role!r}: kvledger records kv_producer, kv_consumer and kv_both connectors")
    read_mode = str(extra.get("read_mode", "false")).strip().lower() in ("true", "1")
    side = {"kv_producer": "P", "kv_consumer": "D", "kv_both": "B"}[role]
    node_id = f"{side}{dp}" if is_scheduler else f"{side}{dp}-tp{tp}"
    header = {
        "kind": "header", "type": "header", "format_version": 1,
        "node_id": node_id,
        "origin": f"vllm-bridge {__version__} recorder {'scheduler' if is_scheduler else 'worker'} "
                  f"dp{dp} tp{tp} inner={inner_cls.__module__}.{inner_cls.__qualname__}",
        "kv_role": role,
        "transfer_mode": "READ" if read_mode else "WRITE",
    }
    host = extra.get("host_ip") or os.environ.get("VLLM_HOST_IP")
    if host:
        header["host_ip"] = str(host)
    header["handshake_port"] = extra.get("handshake_port") or "6301"
    header["notify_port"] = extra.get("notify_port") or "61005"
    header.update({"dp_rank": dp, "dp_size": dp_size, "dp_size_local": dp_local, "tp_rank": tp, "tp_size": tp_size})
    block = getattr(getattr(vllm_config, "cache_config", None), "block_size", None)
    if isinstance(block, int):
        header["cache_block_size"] = block
    for key, field in (("defer_timeout", "defer_timeout_ns"), ("transfer_timeout", "transfer_timeout_ns"),
                       ("recv_abort_timeout", "recv_abort_timeout_ns")):
        if extra.get(key) is not None:
            header[field] = int(float(extra[key]) * 1_000_000_000)
    return header

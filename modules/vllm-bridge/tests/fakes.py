"""Inner connectors for the tests: a scripted MoRIIO-like one, an echo one, and failing ones.

``ScriptedConnector`` answers the hooks the way the newest MoRIIO connector does for the paths the
driver plays (WRITE mode; producer and consumer), so that kvledger's reducer, replaying the
recording, must decide exactly the same; ``script`` bends single answers to make it diverge.
"""

import itertools
import logging
import re
import time
from dataclasses import dataclass, field

from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1,
    KVConnectorMetadata,
    KVConnectorRole,
    SupportsHMA,
)
from vllm.v1.request import RequestStatus


_DECODE_ZMQ_RE = re.compile(r"___decode_addr_(.+)_[0-9a-f]{32}(?:-.*)?$")
_PREFILL_ZMQ_RE = re.compile(r"___prefill_addr_(.+?)___decode_addr_")


@dataclass
class ReqMeta:
    """MoRIIO's ReqMeta (newest fields, plus C-fold's ``remote_dp_rank``)."""

    transfer_id: object
    local_block_ids: list
    remote_block_ids: object
    remote_host: str
    remote_port: int
    remote_handshake_port: int
    remote_notify_port: int
    remote_engine_id: object
    tp_size: int
    remote_dp_size: int
    remote_dp_rank: int = 0
    remote_hosts: list = field(default_factory=list)
    remote_dp_size_local: int = 0


class FakeMeta(KVConnectorMetadata):
    """MoRIIOConnectorMetadata's shape: what the scheduler hands the worker each step."""

    def __init__(self):
        self.reqs_to_recv = {}
        self.reqs_to_save = {}
        self.reqs_to_send = {}
        self.transfer_id_to_request_id = {}

    def add_new_req(self, request_id, local_block_ids, kv_transfer_params, write_mode=False):
        p = kv_transfer_params
        m = (_DECODE_ZMQ_RE if write_mode else _PREFILL_ZMQ_RE).search(request_id)
        if m is not None:
            parts = dict(seg.partition(":")[::2] for seg in m.group(1).split(","))
            host, hs, notify = parts["host"].strip(), int(parts["handshake"]), int(parts["notify"])
        else:
            host, hs, notify = p["remote_host"], int(p["remote_handshake_port"]), int(p["remote_notify_port"])
        hosts = p.get("remote_hosts") or [host]
        meta = ReqMeta(transfer_id=p["transfer_id"], local_block_ids=local_block_ids,
                       remote_block_ids=p["remote_block_ids"], remote_host=host, remote_port=hs,
                       remote_handshake_port=hs, remote_notify_port=notify,
                       remote_engine_id=p["remote_engine_id"],
                       tp_size=int(p.get("remote_tp_size") or p.get("tp_size") or 0),
                       remote_dp_size=p.get("remote_dp_size", 1), remote_dp_rank=p.get("remote_dp_rank", 0),
                       remote_hosts=[str(h) for h in hosts],
                       remote_dp_size_local=int(p.get("remote_dp_size_local", p.get("remote_dp_size", 1))))
        (self.reqs_to_save if write_mode else self.reqs_to_recv)[request_id] = meta


class ScriptedConnector(KVConnectorBase_V1):
    """MoRIIO-like answers (WRITE mode) with a script of deviations.

    script keys: ``delay_free_override`` {request_id: bool} replaces request_finished's delay_free;
    ``meta_wrong_block`` {request_id: n} adds n to the last local block id of that request's
    ``ReqMeta`` in the connector metadata (a wrong block id handed to the worker).

    The scheduler side keeps MoRIIO's tables (``transfer_id_to_request_id``, the saves staged at
    allocation, chunked prefill's pending saves, ``_reqs_need_send``) and builds its metadata as
    ``build_connector_meta`` does (WRITE mode).
    """

    script = {}

    def __init__(self, vllm_config, role, kv_cache_config=None):
        super().__init__(vllm_config, role, kv_cache_config)
        extra = vllm_config.kv_transfer_config.kv_connector_extra_config
        self.producer = vllm_config.kv_transfer_config.kv_role == "kv_producer"
        self.host = extra.get("host_ip", "127.0.0.1")
        self.hs_port = extra.get("handshake_port") or "6301"
        self.notify_port = extra.get("notify_port") or "61005"
        pc = vllm_config.parallel_config
        self.dp, self.dp_size, self.dp_local = pc.data_parallel_rank, pc.data_parallel_size, pc.data_parallel_size_local
        self.tp_size = pc.tensor_parallel_size
        self.params = {}
        self.deferred = set()
        self.block_size = vllm_config.cache_config.block_size
        self.transfer_id_to_request_id = {}
        self.request_id_to_transfer_id = {}
        self._reqs_need_recv = {}
        self._reqs_need_save = {}
        self._reqs_need_pending_save = {}
        self._req_kv_params = {}
        self._reqs_need_send = {}
        self.step = 0
        self.calls = []
        # worker side
        self.sending_seen = []

    # scheduler side
    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        self.calls.append(("get_num_new_matched_tokens", request.request_id))
        self.params.setdefault(request.request_id, request.kv_transfer_params)
        if self.producer:
            return 0, False
        return max(request.num_prompt_tokens - num_computed_tokens, 0), True

    def _map(self, rid, tid):
        if tid is None or self.transfer_id_to_request_id.get(tid, rid) != rid:
            return False
        self.transfer_id_to_request_id[tid] = rid
        self.request_id_to_transfer_id[rid] = tid
        return True

    def _unmap(self, rid):
        tid = self.request_id_to_transfer_id.pop(rid, None)
        if tid is not None and self.transfer_id_to_request_id.get(tid) == rid:
            del self.transfer_id_to_request_id[tid]

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        self.calls.append(("update_state_after_alloc", request.request_id))
        p = request.kv_transfer_params
        if not p:
            return
        rid = request.request_id
        mapped = self._map(rid, p.get("transfer_id"))
        if self.producer and p.get("do_remote_decode") and mapped:
            groups = [list(g) for g in blocks.get_block_ids()]
            self._reqs_need_save[rid] = (request, groups)
            self._req_kv_params[rid] = dict(p)
        if p.get("do_remote_prefill"):
            p["do_remote_prefill"] = False

    def build_connector_meta(self, scheduler_output):
        self.step += 1
        meta = FakeMeta()
        meta.transfer_id_to_request_id = self.transfer_id_to_request_id
        if self.producer:
            crd = scheduler_output.scheduled_cached_reqs
            for i, rid in enumerate(crd.req_ids):
                new = crd.new_block_ids[i]
                if new is None or rid not in self._reqs_need_pending_save:
                    continue
                req, existing = self._reqs_need_pending_save[rid]
                updated = [list(g) + list(n) for g, n in zip(existing, new)]
                self._reqs_need_pending_save[rid] = (req, updated)
                if len(updated[0]) * self.block_size >= req.num_prompt_tokens:
                    kv = self._req_kv_params.pop(rid, req.kv_transfer_params or {})
                    meta.add_new_req(rid, updated, kv, write_mode=True)
                    del self._reqs_need_pending_save[rid]
        for rid, (req, groups) in self._reqs_need_recv.items():
            meta.add_new_req(rid, groups, self._req_kv_params.get(rid, req.kv_transfer_params or {}))
        for rid, (req, groups) in self._reqs_need_save.items():
            kv = self._req_kv_params.get(rid, req.kv_transfer_params or {})
            if req.num_prompt_tokens > len(groups[0]) * self.block_size:
                self._reqs_need_pending_save[rid] = (req, groups)
                continue
            meta.add_new_req(rid, groups, kv, write_mode=True)
        meta.reqs_to_send = self._reqs_need_send
        for rid in self._reqs_need_recv:
            self._req_kv_params.pop(rid, None)
        for rid in self._reqs_need_save:
            if rid not in self._reqs_need_pending_save:
                self._req_kv_params.pop(rid, None)
        self._reqs_need_recv.clear()
        self._reqs_need_save.clear()
        self._reqs_need_send = {}
        for rid, n in self.script.get("meta_wrong_block", {}).items():
            m = meta.reqs_to_save.get(rid) or meta.reqs_to_recv.get(rid)
            if m is not None:
                m.local_block_ids = [list(g) for g in m.local_block_ids]
                m.local_block_ids[0][-1] += n
        return meta

    def update_connector_output(self, connector_output):
        if not self.producer:
            return
        incoming = set(connector_output.finished_sending or ())
        safe = {r for r in incoming if r in self.deferred}
        self.deferred -= safe
        for r in safe:
            self._unmap(r)
        connector_output.finished_sending = safe

    def request_finished(self, request, block_ids):
        rid = request.request_id
        p = request.kv_transfer_params
        if not self.producer:
            self._unmap(rid)
        if not p:
            return False, None
        if p.get("do_remote_prefill"):
            p["do_remote_prefill"] = False
            return False, None
        if not p.get("do_remote_decode") or request.status != RequestStatus.FINISHED_LENGTH_CAPPED:
            return False, None
        groups = [list(block_ids)] if block_ids and not isinstance(block_ids[0], (list, tuple)) else [list(g) for g in block_ids]
        delay = any(len(g) > 0 for g in groups)
        delay = self.script.get("delay_free_override", {}).get(rid, delay)
        if delay:
            self.deferred.add(rid)
            self._reqs_need_send[rid] = time.perf_counter() + 3600
        out = {
            "do_remote_prefill": True,
            "do_remote_decode": False,
            "remote_block_ids": groups,
            "remote_engine_id": f"{self.host}:{self.hs_port}",
            "remote_host": self.host,
            "remote_handshake_port": self.hs_port,
            "remote_notify_port": self.notify_port,
            "remote_dp_rank": self.dp,
            "remote_dp_rank_override": True,
            "remote_dp_size": self.dp_size,
            "remote_dp_size_local": self.dp_local,
            "tp_size": self.tp_size,
            "transfer_id": p.get("transfer_id"),
        }
        return delay, out

    # worker side
    def start_load_kv(self, forward_context, **kwargs):
        self.calls.append(("start_load_kv",))

    def wait_for_layer_load(self, layer_name):
        self.calls.append(("wait_for_layer_load", layer_name))

    def save_kv_layer(self, layer_name, kv_layer, attn_metadata, **kwargs):
        self.calls.append(("save_kv_layer", layer_name))

    def wait_for_save(self):
        self.calls.append(("wait_for_save",))

    def bind_connector_metadata(self, connector_metadata):
        super().bind_connector_metadata(connector_metadata)
        self.sending_seen.extend(getattr(connector_metadata, "reqs_to_send", ()))

    def get_finished(self, finished_req_ids):
        # The push to decode finished for every request the scheduler shipped in an earlier step.
        done = set(self.sending_seen)
        self.sending_seen.clear()
        return (done or None), None


class ClosingConnector(ScriptedConnector):
    """Shuts down as MoRIIO's scheduler does: each cached notify socket closed, a failure logged."""

    def shutdown(self):
        log = logging.getLogger("vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector")
        for path in ("tcp://10.0.0.1:61005", "tcp://10.0.0.2:61005"):
            if path.endswith("1:61005"):
                log.warning("Error closing ZMQ socket for path %s: %s", path, "Socket operation on non-socket")
            else:
                log.debug("Closed ZMQ socket for path: %s", path)
        self.closed = True


class ScriptedHMAConnector(ScriptedConnector, SupportsHMA):
    def request_finished_all_groups(self, request, block_ids):
        return self.request_finished(request, block_ids)


# ---------------------------------------------------------------------- echo: every method answers a sentinel

class Sentinel:
    _ids = itertools.count()

    def __init__(self, name):
        self.name = name
        self.n = next(self._ids)

    def __repr__(self):
        return f"<sentinel {self.name} #{self.n}>"


class EchoConnector(KVConnectorBase_V1, SupportsHMA):
    """Records every call and returns a fresh sentinel from every method (class methods too)."""

    last = None

    def __init__(self, vllm_config, role, kv_cache_config=None):
        super().__init__(vllm_config, role, kv_cache_config)
        self.calls = []
        self.returned = {}
        EchoConnector.last = self

    def _answer(self, name, *args, **kwargs):
        self.calls.append((name, args, kwargs))
        s = Sentinel(name)
        self.returned[name] = s
        return s

    @property
    def prefer_cross_layer_blocks(self):
        return self._answer("prefer_cross_layer_blocks")

    @property
    def supports_eagle_prefix_cache_hashing(self):
        return self._answer("supports_eagle_prefix_cache_hashing")

    @property
    def requires_kv_delivery(self):
        return self._answer("requires_kv_delivery")

    @property
    def supports_divergent_local_hybrid_hits(self):
        return self._answer("supports_divergent_local_hybrid_hits")

    @property
    def requires_full_step_completion(self):
        return self._answer("requires_full_step_completion")

    class_returned = {}

    @classmethod
    def _class_answer(cls, name, *args):
        s = Sentinel(name)
        cls.class_returned[name] = (s, args)
        return s

    @classmethod
    def get_required_kvcache_layout(cls, vllm_config):
        return cls._class_answer("get_required_kvcache_layout", vllm_config)

    @classmethod
    def requires_piecewise_for_cudagraph(cls, extra_config):
        return cls._class_answer("requires_piecewise_for_cudagraph", extra_config)

    @classmethod
    def build_kv_connector_stats(cls, data=None):
        return cls._class_answer("build_kv_connector_stats", data)

    @classmethod
    def build_prom_metrics(cls, vllm_config, metric_types, labelnames, per_engine_labelvalues):
        return cls._class_answer("build_prom_metrics", vllm_config, metric_types, labelnames, per_engine_labelvalues)


def _make_echo(name):
    def method(self, *args, **kwargs):
        return self._answer(name, *args, **kwargs)
    method.__name__ = name
    return method


ECHO_INSTANCE_METHODS = [
    "bind_connector_metadata", "clear_connector_metadata", "has_connector_metadata", "register_kv_caches",
    "register_cross_layers_kv_cache", "set_host_xfer_buffer_ops", "handle_preemptions", "start_load_kv",
    "wait_for_layer_load", "save_kv_layer", "wait_for_save", "get_finished", "get_block_ids_with_load_errors",
    "shutdown", "get_kv_connector_stats", "get_kv_connector_kv_cache_events", "get_handshake_metadata",
    "build_connector_worker_meta", "bind_gpu_block_pool", "get_num_new_matched_tokens", "update_state_after_alloc",
    "build_connector_meta", "on_new_request", "update_connector_output", "request_finished", "take_events",
    "get_finished_count", "set_xfer_handshake_metadata", "reset_cache", "has_pending_push_work",
    "request_finished_all_groups", "set_eagle_prefix_cache_hashing", "get_mem_pool_context", "finish_forward",
    "reset_capture_state", "get_transfer_results", "bind_kv_cache_manager", "register_finished_partial_tail",
    "has_pending_block_frees", "set_xfer_handshake_metadata_pp_aware",
]
for _n in ECHO_INSTANCE_METHODS:
    setattr(EchoConnector, _n, _make_echo(_n))
EchoConnector.__abstractmethods__ = frozenset()


class RaisingConnector(ScriptedConnector):
    """Raises its own error from request_finished (the engine must see exactly it)."""

    class Boom(RuntimeError):
        pass

    def request_finished(self, request, block_ids):
        raise RaisingConnector.Boom("inner failed")


ROLES = (KVConnectorRole.SCHEDULER, KVConnectorRole.WORKER)

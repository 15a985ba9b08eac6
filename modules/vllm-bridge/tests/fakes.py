"""Inner connectors for the tests: a scripted MoRIIO-like one, an echo one, and failing ones.

``ScriptedConnector`` answers the hooks the way the newest MoRIIO connector does for the paths the
driver plays (WRITE mode; producer and consumer), so that kvledger's reducer, replaying the
recording, must decide exactly the same; ``script`` bends single answers to make it diverge.
"""

import itertools
import logging

from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1,
    KVConnectorMetadata,
    KVConnectorRole,
    SupportsHMA,
)
from vllm.v1.request import RequestStatus


class FakeMeta(KVConnectorMetadata):
    def __init__(self, step, reqs_to_save, reqs_to_send):
        self.step = step
        self.reqs_to_save = reqs_to_save
        self.reqs_to_send = reqs_to_send


class ScriptedConnector(KVConnectorBase_V1):
    """MoRIIO-like answers (WRITE mode) with a script of deviations.

    script keys: ``delay_free_override`` {request_id: bool} replaces request_finished's delay_free.
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
        self.to_send = []
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

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        self.calls.append(("update_state_after_alloc", request.request_id))
        p = request.kv_transfer_params
        if p and p.get("do_remote_prefill"):
            p["do_remote_prefill"] = False

    def build_connector_meta(self, scheduler_output):
        self.step += 1
        meta = FakeMeta(self.step, [], list(self.to_send))
        self.to_send.clear()
        return meta

    def update_connector_output(self, connector_output):
        if not self.producer:
            return
        incoming = set(connector_output.finished_sending or ())
        safe = {r for r in incoming if r in self.deferred}
        self.deferred -= safe
        connector_output.finished_sending = safe

    def request_finished(self, request, block_ids):
        rid = request.request_id
        p = request.kv_transfer_params
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
            self.to_send.append(rid)
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
    "request_finished_all_groups",
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

"""The recorder delegates every method of the base class and returns exactly what the inner returned."""

import inspect
import logging

import pytest

import fakes
from driver import make_config
from kvledger_vllm import KvledgerRecorderConnector, KvledgerRecorderConnectorHMA, recorder_class_for
from vllm.distributed.kv_transfer.kv_connector.v1 import base
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorBase_V1, KVConnectorRole, SupportsHMA

# Every public method or property of the base class, and the HMA entry point.
BASE_NAMES = sorted(n for n in vars(KVConnectorBase_V1) if not n.startswith("_")) + ["request_finished_all_groups"]
CLASS_METHODS = sorted(n for n, v in vars(KVConnectorBase_V1).items() if isinstance(v, classmethod))

# Arguments for each instance method, in the shapes vLLM passes.
ARGS = {
    "bind_connector_metadata": ("META",),
    "register_kv_caches": ({"layer": "tensor"},),
    "register_cross_layers_kv_cache": ("tensor", "backend"),
    "set_host_xfer_buffer_ops": ("copy-op",),
    "handle_preemptions": ("META",),
    "start_load_kv": ("forward-context",),
    "wait_for_layer_load": ("model.layers.0.self_attn.attn",),
    "save_kv_layer": ("model.layers.0.self_attn.attn", "kv", "attn-meta"),
    "get_finished": ({"r1"},),
    "bind_gpu_block_pool": ("pool",),
    "get_num_new_matched_tokens": ("REQ", 0),
    "update_state_after_alloc": ("REQ", "BLOCKS", 0),
    "build_connector_meta": ("SCHED_OUT",),
    "on_new_request": ("REQ",),
    "update_connector_output": ("CONN_OUT",),
    "request_finished": ("REQ", [1, 2]),
    "request_finished_all_groups": ("REQ", ([1, 2],)),
    "set_xfer_handshake_metadata": ({0: "hs"},),
}


def _echo_recorder(tmp_path, cls=KvledgerRecorderConnectorHMA, role=KVConnectorRole.SCHEDULER):
    extra = {"inner_connector": "EchoConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}-dp{dp}-tp{tp}.jsonl"), "record_layers": True}
    return cls(make_config("kv_producer", extra), role, None)


def test_every_base_method_is_overridden_by_the_recorder_itself():
    # Not inherited and not reached through __getattr__: the base's no-ops would shadow the inner.
    own = set(vars(KvledgerRecorderConnector)) | set(vars(KvledgerRecorderConnectorHMA))
    missing = [n for n in BASE_NAMES if n not in own and n != "role"]
    assert missing == []
    assert not hasattr(KvledgerRecorderConnector, "__getattr__")


@pytest.mark.parametrize("name", [n for n in BASE_NAMES if n not in CLASS_METHODS and n not in ("role",)])
def test_instance_method_returns_exactly_the_inner_value(tmp_path, name, request_obj=None):
    from vllm.v1.request import Request
    rec = _echo_recorder(tmp_path)
    inner = rec.inner
    req = Request("r1", [1, 2, 3], {"do_remote_decode": True})
    args = tuple(req if a == "REQ" else a for a in ARGS.get(name, ()))
    attr = inspect.getattr_static(type(rec), name)
    if isinstance(attr, property):
        result = getattr(rec, name)
    else:
        result = getattr(rec, name)(*args)
    assert isinstance(result, fakes.Sentinel), f"{name} returned {result!r}, not the inner's value"
    assert result is inner.returned[name]
    called = [c for c in inner.calls if c[0] == name]
    assert len(called) == 1
    if not isinstance(attr, property):
        assert called[0][1] == args
    rec.recording_stream.close()


@pytest.mark.parametrize("name", CLASS_METHODS)
def test_class_method_returns_exactly_the_inner_value(tmp_path, name):
    rec = _echo_recorder(tmp_path)  # builds the echo inner: the class methods find it
    cfg = rec._vllm_config
    extra = cfg.kv_transfer_config.kv_connector_extra_config
    args = {"get_required_kvcache_layout": (cfg,), "requires_piecewise_for_cudagraph": (extra,),
            "build_kv_connector_stats": ({"k": 1},),
            "build_prom_metrics": (cfg, {}, ["model_name"], {0: ["m"]})}[name]
    result = getattr(type(rec), name)(*args)
    sentinel, passed = fakes.EchoConnector.class_returned[name]
    assert result is sentinel
    assert passed == args
    rec.recording_stream.close()


def test_metadata_is_bound_into_the_inner(tmp_path):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"}
    rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.WORKER, None)
    meta = fakes.FakeMeta()
    meta.reqs_to_send = {"r9": 0.0}
    rec.bind_connector_metadata(meta)
    assert rec.inner._get_connector_metadata() is meta
    assert rec.has_connector_metadata() is True
    rec.clear_connector_metadata()
    assert rec.inner.has_connector_metadata() is False


def test_supports_hma_exactly_when_the_inner_does():
    assert recorder_class_for(fakes.ScriptedHMAConnector) is KvledgerRecorderConnectorHMA
    assert base.supports_hma(recorder_class_for(fakes.ScriptedHMAConnector))
    assert recorder_class_for(fakes.ScriptedConnector) is KvledgerRecorderConnector
    assert not base.supports_hma(recorder_class_for(fakes.ScriptedConnector))
    assert not issubclass(KvledgerRecorderConnector, SupportsHMA)


def test_class_names_differ_from_the_inner_connectors():
    # Older factories look registered names up first: a wrapper named MoRIIOConnector is ignored.
    for cls in (KvledgerRecorderConnector, KvledgerRecorderConnectorHMA):
        assert cls.__name__ not in ("MoRIIOConnector", "NixlConnector", "MultiConnector")


def test_mismatched_hma_declaration_is_named_in_the_log(tmp_path, caplog):
    extra = {"inner_connector": "ScriptedHMAConnector", "inner_connector_module_path": "fakes"}
    with caplog.at_level(logging.WARNING, logger="vllm.kvledger_vllm"):
        KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    assert "use kv_connector KvledgerRecorderConnectorHMA" in caplog.text

"""The recorder delegates every method of the base class and returns exactly what the inner returned."""

import inspect
import logging

import pytest

import fakes
from driver import make_config
from kvledger_vllm import KvledgerRecorderConnector, KvledgerRecorderConnectorHMA, recorder, recorder_class_for
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
    "set_xfer_handshake_metadata_pp_aware": ({(0, 0): "hs"},),
    "set_eagle_prefix_cache_hashing": (True,),
    "get_transfer_results": ({"r1"},),
    "bind_kv_cache_manager": ("kv-cache-manager",),
    "register_finished_partial_tail": ("REQ", ([1, 2],), [(0, 1, 2)]),
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


def test_an_hma_recorder_over_an_inner_without_hma_refuses_to_start_in_one_line(tmp_path, caplog):
    # The README's configuration of before over MoRIIO at vLLM 239b5ff30: vLLM's scheduler would call
    # request_finished_all_groups on the recorder, whose inner has none, at the first finished request.
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": str(tmp_path / "{role}.jsonl")}
    fakes.ScriptedConnector.built = 0
    with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
        with pytest.raises(recorder.RecorderConfigError) as e:
            KvledgerRecorderConnectorHMA(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("kvledger recorder: kv_connector KvledgerRecorderConnectorHMA declares SupportsHMA but the "
                          "inner ScriptedConnector (fakes) does not")
    assert msg.endswith("configure kv_connector KvledgerRecorderConnector, which takes the inner's side")
    assert [r.getMessage() for r in caplog.records] == [msg]
    assert not (tmp_path / "scheduler.jsonl").exists()  # nothing built, nothing recorded


def test_a_plain_recorder_over_an_hma_inner_refuses_to_start_in_one_line():
    extra = {"inner_connector": "ScriptedHMAConnector", "inner_connector_module_path": "fakes"}
    with pytest.raises(recorder.RecorderConfigError, match="^kvledger recorder: the inner ScriptedHMAConnector "
                       r"\(fakes\) is SupportsHMA but kv_connector KvledgerRecorderConnector does not declare it .*"
                       "configure kv_connector KvledgerRecorderConnectorHMA$"):
        recorder.KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)


def _factory_get_connector_class(kv_transfer_config):
    """What vLLM's KVConnectorFactory.get_connector_class does with a module path (its locals included)."""
    import importlib
    connector_module = importlib.import_module(kv_transfer_config.kv_connector_module_path)
    return getattr(connector_module, kv_transfer_config.kv_connector)


@pytest.mark.parametrize("inner,hma", [("ScriptedConnector", False), ("ScriptedHMAConnector", True),
                                       ("EchoConnector", True)])
def test_one_configuration_name_takes_the_inners_side(inner, hma):
    cfg = make_config("kv_producer", {"inner_connector": inner, "inner_connector_module_path": "fakes"})
    cls = _factory_get_connector_class(cfg.kv_transfer_config)
    assert base.supports_hma(cls) is hma
    assert cls._configured_inner is getattr(fakes, inner)
    rec = cls(cfg, KVConnectorRole.SCHEDULER, None)  # no refusal: the class and the inner agree
    assert base.supports_hma(rec) is hma
    assert cls is _factory_get_connector_class(cfg.kv_transfer_config)  # one class per inner


def test_the_resolving_name_without_a_config_is_the_default_inners_side():
    import kvledger_vllm
    # the stand-in vLLM has no MoRIIO: the plain class, whose construction names the missing inner
    assert kvledger_vllm.KvledgerRecorderConnector is recorder.KvledgerRecorderConnector


def test_the_resolving_name_reads_vllms_current_config_when_the_caller_has_none(monkeypatch):
    import kvledger_vllm
    import vllm.config
    cfg = make_config("kv_producer", {"inner_connector": "ScriptedHMAConnector", "inner_connector_module_path": "fakes"})
    monkeypatch.setattr(vllm.config, "get_current_vllm_config_or_none", lambda: cfg, raising=False)
    cls = kvledger_vllm.KvledgerRecorderConnector
    assert cls._configured_inner is fakes.ScriptedHMAConnector and base.supports_hma(cls)


def test_class_methods_ask_the_configured_inner_in_a_process_that_built_none(monkeypatch):
    # the API server: vLLM's KVConnectorLogging gets the class from the factory (with the config)
    # and later calls build_kv_connector_stats(data) on it, in a process where no connector was built
    monkeypatch.setattr(recorder.KvledgerRecorderConnector, "_inner_class_seen", None)
    monkeypatch.setattr(recorder.KvledgerRecorderConnectorHMA, "_inner_class_seen", None)
    cfg = make_config("kv_producer", {"inner_connector": "EchoConnector", "inner_connector_module_path": "fakes"})
    cls = _factory_get_connector_class(cfg.kv_transfer_config)
    result = cls.build_kv_connector_stats({"k": 2})
    sentinel, passed = fakes.EchoConnector.class_returned["build_kv_connector_stats"]
    assert result is sentinel and passed == ({"k": 2},)
    # and not the default inner: the stand-in has no MoRIIO, which would raise
    with pytest.raises(ImportError):
        recorder.KvledgerRecorderConnector.build_kv_connector_stats({})


def test_eagle_hashing_choice_reaches_the_inner_and_shows_on_the_recorder(tmp_path):
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes"}
    rec = KvledgerRecorderConnector(make_config("kv_producer", extra), KVConnectorRole.SCHEDULER, None)
    rec.set_eagle_prefix_cache_hashing(True)
    assert rec.inner.use_eagle_prefix_cache_hashing is True and rec.use_eagle_prefix_cache_hashing is True
    assert rec.requires_kv_delivery is True  # the inner base's default: a producer hands KV off

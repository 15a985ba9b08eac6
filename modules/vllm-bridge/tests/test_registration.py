"""register_kv_caches: the worker's KV-cache tensors are recorded once (kv_caches_registered), before
the inner connector sees them, with the configured block size (bug class 15's evidence)."""

import json
import types

import pytest

import fakes
from driver import make_config
from kvledger_vllm import KvledgerRecorderConnector
from kvledger_vllm.stream import unfold
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole

MLA_LAYERS = ("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn")


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class Tensor:
    """What the recorder reads of a torch tensor (torch is not installed for these tests): its
    shape (a tuple of ints, as torch.Size is) and its dtype (printed ``torch.<name>``)."""

    def __init__(self, shape, dtype="bfloat16"):
        self.shape = tuple(shape)
        self.dtype = _Dtype(dtype)

    def dim(self):
        return len(self.shape)


def empty(shape, dtype="bfloat16"):
    return Tensor(shape, dtype)


class AssertingConnector(fakes.ScriptedConnector):
    """A worker whose registration takes the block size off the first tensor and asserts it is the
    configured one (as vLLM 239b5ff30's MoRIIO worker does), remembering what it was handed."""

    def register_kv_caches(self, kv_caches):
        self.registered = kv_caches
        first = next(iter(kv_caches.values()))
        block = first.shape[1] if first.dim() == 3 else first.shape[-3]
        assert block == self.block_size


def _worker(tmp_path, inner="AssertingConnector", **extra):
    extra = dict({"inner_connector": inner, "inner_connector_module_path": "test_registration",
                  "record_to": str(tmp_path / "{role}.jsonl")}, **extra)
    return KvledgerRecorderConnector(make_config("kv_consumer", extra), KVConnectorRole.WORKER, None)


def _lines(tmp_path):
    with open(tmp_path / "worker.jsonl", encoding="utf-8") as f:
        return unfold([json.loads(line) for line in f if line.strip()])


def _registrations(tmp_path):
    return [e for e in _lines(tmp_path) if e.get("type") == "kv_caches_registered"]


def test_every_tensor_is_recorded_with_its_shape_dtype_and_the_configured_block_size(tmp_path):
    rec = _worker(tmp_path)
    caches = {name: empty((2, 6, 16, 2, 8), dtype="bfloat16") for name in MLA_LAYERS}
    assert rec.register_kv_caches(caches) is None
    assert rec.inner.registered is caches  # handed over as it came
    rec.shutdown()
    (reg,) = _registrations(tmp_path)
    assert reg["kind"] == "input" and reg["config_block_size"] == 16 and reg["attn_backend"] is None
    assert reg["tensors"] == [{"layer_name": n, "shape": [2, 6, 16, 2, 8], "dtype": "torch.bfloat16"}
                              for n in MLA_LAYERS]
    # before the first step of the worker
    types_in_order = [e["type"] for e in _lines(tmp_path)[1:]]
    assert types_in_order == ["kv_caches_registered", "shut_down"]


def test_a_registration_the_inner_refuses_is_written_and_the_engine_sees_the_inner_s_exception(tmp_path):
    # FlashMLA allocated 64-token blocks while cache_config.block_size is 16: the inner asserts
    rec = _worker(tmp_path)
    caches = {name: empty((4, 64, 12), dtype="float16") for name in MLA_LAYERS}
    with pytest.raises(AssertionError):
        rec.register_kv_caches(caches)
    # written before the exception left the hook (the worker process dies of it in vLLM)
    (reg,) = _registrations(tmp_path)
    assert reg["config_block_size"] == 16
    assert [t["shape"] for t in reg["tensors"]] == [[4, 64, 12], [4, 64, 12]]
    assert reg["tensors"][0]["dtype"] == "torch.float16"
    rec.shutdown()


def test_the_backend_comes_from_the_attention_config_else_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_ATTENTION_BACKEND", "FLASHMLA")
    rec = _worker(tmp_path / "env")
    rec.register_kv_caches({MLA_LAYERS[0]: empty((4, 16, 12))})
    rec.shutdown()
    assert _registrations(tmp_path / "env")[0]["attn_backend"] == "FLASHMLA"

    class Backend:
        name = "TRITON_MLA"
    monkeypatch.delenv("VLLM_ATTENTION_BACKEND")
    cfg = make_config("kv_consumer", {"inner_connector": "AssertingConnector",
                                      "inner_connector_module_path": "test_registration",
                                      "record_to": str(tmp_path / "cfg" / "{role}.jsonl")})
    cfg.attention_config = types.SimpleNamespace(backend=Backend())
    rec = KvledgerRecorderConnector(cfg, KVConnectorRole.WORKER, None)
    rec.register_kv_caches({MLA_LAYERS[0]: empty((4, 16, 12))})
    rec.shutdown()
    assert _registrations(tmp_path / "cfg")[0]["attn_backend"] == "TRITON_MLA"


def test_a_layer_of_several_tensors_gives_one_row_each(tmp_path):
    rec = _worker(tmp_path, inner="ScriptedConnector", inner_connector_module_path="fakes")
    conv, ssm = empty((8, 3, 4)), empty((8, 4, 16))
    rec.register_kv_caches({"model.layers.0.mixer": (conv, ssm), MLA_LAYERS[1]: empty((2, 8, 16, 1, 4))})
    rec.shutdown()
    (reg,) = _registrations(tmp_path)
    assert [(t["layer_name"], t["shape"]) for t in reg["tensors"]] == [
        ("model.layers.0.mixer[0]", [8, 3, 4]), ("model.layers.0.mixer[1]", [8, 4, 16]),
        (MLA_LAYERS[1], [2, 8, 16, 1, 4])]


def test_without_record_to_the_call_is_only_delegated(tmp_path):
    rec = KvledgerRecorderConnector(make_config("kv_consumer", {"inner_connector": "AssertingConnector",
                                                               "inner_connector_module_path": "test_registration"}),
                                    KVConnectorRole.WORKER, None)
    caches = {MLA_LAYERS[0]: empty((4, 64, 12))}
    with pytest.raises(AssertionError):
        rec.register_kv_caches(caches)
    assert rec.inner.registered is caches
    assert rec.recording_stream is None
    rec.shutdown()
    assert not list(tmp_path.iterdir())

"""kvledger's vLLM bridge: a KV connector that wraps MoRIIO (or another) and records its hooks.

``kv_connector_module_path: "kvledger_vllm"`` with ``kv_connector: "KvledgerRecorderConnector"``
(or ``"KvledgerRecorderConnectorHMA"`` when the inner connector is ``SupportsHMA``). Importing the
connector classes needs vLLM; ``kvledger_vllm.stream`` does not, nor does
``kvledger_vllm.fake_engine`` (fake MoRIIO engine ranks for the live demo:
``python3 -m kvledger_vllm.fake_engine --help``).
"""

__version__ = "0.1.0"

__all__ = ["__version__", "KvledgerRecorderConnector", "KvledgerRecorderConnectorHMA", "recorder_class_for"]


def __getattr__(name):
    # Imported on first use so that `import kvledger_vllm.stream` works without vLLM.
    if name in ("KvledgerRecorderConnector", "KvledgerRecorderConnectorHMA", "recorder_class_for"):
        from . import recorder
        return getattr(recorder, name)
    raise AttributeError(f"module 'kvledger_vllm' has no attribute {name!r}")

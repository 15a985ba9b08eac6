"""kvledger's vLLM bridge: a KV connector that wraps MoRIIO (or another) and records its hooks.

``kv_connector_module_path: "kvledger_vllm"`` with ``kv_connector: "KvledgerRecorderConnector"``:
vLLM's factory gets the class with ``getattr`` on this module, and the name resolves to a class
that declares ``SupportsHMA`` exactly when the configured inner connector does (``recorder.
configured_class``). ``"KvledgerRecorderConnectorHMA"`` always declares it and refuses, at start,
an inner connector that does not. Importing the connector classes needs vLLM;
``kvledger_vllm.stream`` does not, nor does ``kvledger_vllm.fake_engine`` (fake MoRIIO engine ranks
for the live demo: ``python3 -m kvledger_vllm.fake_engine --help``).
"""

import sys

__version__ = "0.1.0"

__all__ = ["__version__", "KvledgerRecorderConnector", "KvledgerRecorderConnectorHMA", "recorder_class_for"]

_CONNECTOR_NAMES = ("KvledgerRecorderConnector", "KvledgerRecorderConnectorHMA")


def _factory_transfer_config(frame, name):
    """The ``kv_transfer_config`` of the vLLM code asking for connector ``name`` (its factory's
    ``get_connector_class(kv_transfer_config)`` or ``create_connector(config, ...)``), found among
    the locals of the few frames above; None when none names this connector."""
    for _ in range(4):
        if frame is None:
            return None
        local = frame.f_locals
        for key in ("kv_transfer_config", "config", "vllm_config"):
            v = local.get(key)
            ktc = v if key == "kv_transfer_config" else getattr(v, "kv_transfer_config", None)
            if (ktc is not None and getattr(ktc, "kv_connector", None) == name
                    and getattr(ktc, "kv_connector_module_path", None) == __name__):
                return ktc
        frame = frame.f_back
    return None


def __getattr__(name):
    # Imported on first use so that `import kvledger_vllm.stream` works without vLLM.
    if name in _CONNECTOR_NAMES:
        from . import recorder
        try:
            ktc = _factory_transfer_config(sys._getframe(1), name)
        except Exception:  # noqa: BLE001 - no frames to look at: vLLM's current config, else the default
            ktc = None
        return recorder.configured_class(name, ktc)
    if name == "recorder_class_for":
        from . import recorder
        return recorder.recorder_class_for
    raise AttributeError(f"module 'kvledger_vllm' has no attribute {name!r}")

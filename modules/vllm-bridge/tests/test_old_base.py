"""The recorder loads and records over an older vLLM's connector base (no SupportsHMA, none of the
later members), in a process of its own with tests/standin_old as vLLM."""

import json
import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))

SCRIPT = textwrap.dedent('''
    import json, sys, types
    import kvledger_vllm
    from kvledger_vllm import recorder
    from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorBase_V1, KVConnectorRole

    class OldInner(KVConnectorBase_V1):
        def __init__(self, vllm_config, role):  # an older connector: two arguments
            super().__init__(vllm_config, role)
        def start_load_kv(self, forward_context, **kwargs): pass
        def wait_for_layer_load(self, layer_name): pass
        def save_kv_layer(self, layer_name, kv_layer, attn_metadata, **kwargs): pass
        def wait_for_save(self): pass
        def get_num_new_matched_tokens(self, request, num_computed_tokens): return 0, False
        def update_state_after_alloc(self, request, blocks, num_external_tokens): pass
        def build_connector_meta(self, scheduler_output): return None
        def request_finished(self, request, block_ids): return True, {"k": 1}

    mod = types.ModuleType("old_inner"); mod.OldInner = OldInner; OldInner.__module__ = "old_inner"
    sys.modules["old_inner"] = mod
    out = sys.argv[1]
    extra = {"inner_connector": "OldInner", "inner_connector_module_path": "old_inner", "record_to": out,
             "host_ip": "10.0.0.3"}
    ktc = types.SimpleNamespace(kv_connector="KvledgerRecorderConnector", kv_connector_module_path="kvledger_vllm",
                                kv_role="kv_producer", kv_connector_extra_config=extra)
    cfg = types.SimpleNamespace(kv_transfer_config=ktc, parallel_config=None, cache_config=None)
    kv_transfer_config = ktc  # as the factory's get_connector_class has it
    cls = getattr(kvledger_vllm, "KvledgerRecorderConnector")
    assert cls.__name__ == "KvledgerRecorderConnector" and cls._configured_inner is OldInner
    try:
        kvledger_vllm.KvledgerRecorderConnectorHMA
        raise SystemExit("an HMA class without SupportsHMA")
    except AttributeError:
        pass
    rec = cls(cfg, KVConnectorRole.SCHEDULER, None)
    req = types.SimpleNamespace(request_id="r1", prompt_token_ids=[1, 2], kv_transfer_params=None,
                                status=types.SimpleNamespace(name="FINISHED_LENGTH_CAPPED"))
    assert rec.request_finished(req, [4, 5]) == (True, {"k": 1})
    rec.recording_stream.close()  # this base has no shutdown: vLLM never calls one
    print(json.dumps(sorted(n for n in vars(recorder.KvledgerRecorderConnector) if not n.startswith("_"))))
''')


def test_an_older_base_loads_and_records(tmp_path):
    out = tmp_path / "old-{role}.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(HERE, "..", "src"), os.path.join(HERE, "standin_old")]),
               PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    names = json.loads(p.stdout.strip().splitlines()[-1])
    assert "requires_kv_delivery" in names and "get_transfer_results" in names  # defined, never asked here
    with open(tmp_path / "old-scheduler.jsonl", encoding="utf-8") as f:
        lines = [json.loads(x) for x in f if x.strip()]
    assert lines[0]["inner_connector"] == "old_inner.OldInner" and lines[0]["node_id"] == "P0-10.0.0.3-6301"
    assert [e["type"] for e in lines[1:]] == ["request_admitted", "request_finished", "finish_decision"]

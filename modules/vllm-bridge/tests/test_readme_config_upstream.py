"""The READMEs' vLLM configuration, tested as written (issue 28 item 6).

Every ``--kv-transfer-config`` of docs/vllm.md (the recorder's reference) that names the
recorder is loaded through the factory of an upstream vLLM version (``../shared/upstream``, read at
run time, never copied here) over that version's real ``MoRIIOConnector``, scheduler role, and a
finished request goes through it the way vLLM's scheduler calls the hooks
(tests/readme_config_upstream.py, in a process of its own). The recorder must answer every hook as
the bare connector does, and send the same notify frames, byte for byte. At 239b5ff30 the name
resolves to the plain recorder and the finish goes through ``request_finished``; at 3c201bf2
(``SupportsHMA``; vLLM's request and output types and factory borrowed from 239b5ff30 by the loader)
it resolves to the HMA class, the connector is built with the engine's KV-cache groups, and the
finish goes through ``request_finished_all_groups``, with the README's command line (one group)
and under the hybrid KV-cache manager (a second group that opts out of KV transfer).
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
UPSTREAM = os.path.normpath(os.path.join(REPO, "..", "shared", "upstream"))
READMES = [os.path.join(REPO, "docs", "vllm.md")]
VERSIONS = ["vllm-239b5ff30", "vllm-3c201bf2"]


def _python_with_torch():
    for py in ("/usr/bin/python3", sys.executable):
        if os.access(py, os.X_OK) and subprocess.run([py, "-c", "import torch, zmq, msgpack"],
                                                     capture_output=True).returncode == 0:
            return py
    return None


@pytest.mark.parametrize("version", VERSIONS)
def test_the_readme_configuration_runs_a_finished_request_through_the_upstream_factory(version, tmp_path):
    root = os.path.join(UPSTREAM, version)
    if not os.path.isdir(os.path.join(root, "vllm")):
        pytest.skip(f"no upstream vLLM sources at {root} (../shared/upstream beside the checkout)")
    py = _python_with_torch()
    if py is None:
        pytest.skip("no python3 with torch, zmq and msgpack (Debian: python3-torch python3-zmq python3-msgpack)")
    p = subprocess.run([py, os.path.join(HERE, "readme_config_upstream.py"), root, str(tmp_path)] + READMES,
                       capture_output=True, text=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert p.returncode == 0, p.stderr[-4000:]
    results = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    hma = version != "vllm-239b5ff30"
    # the document's producer and consumer; an HMA version also under the hybrid manager
    assert sorted((r["readme"], r["kv_role"], r["hybrid_manager"], r["groups"]) for r in results) == sorted(
        (os.path.relpath(f, REPO), role, on, 2 if on else 1) for f in READMES for role in ("kv_consumer", "kv_producer")
        for on in ((False, True) if hma else (False,))), results
    for r in results:
        where = f"{r['readme']}:{r['line']} ({r['kv_connector']}, {r['kv_role']}, hybrid manager {r['hybrid_manager']})"
        rec, bare = r["recorder"], r["bare"]
        assert "error" not in bare, f"{where}: the bare MoRIIOConnector failed: {bare['error']}"
        assert "error" not in rec, f"{where} kills a {version} engine: {rec['error']}"
        for key in ("hma", "matched", "reqs_to_save", "finish_entry", "finished", "frames"):
            assert rec[key] == bare[key], f"{where}: {key}: recorder {rec[key]!r}, bare MoRIIO {bare[key]!r}"
        assert rec["class"] == ("KvledgerRecorderConnectorHMA" if hma else "KvledgerRecorderConnector"), where
        assert rec["hma"] is hma and rec["finish_entry"] == (
            "request_finished_all_groups" if hma else "request_finished"), where
        if r["kv_role"] == "kv_consumer":
            assert rec["frames"], f"{where}: the consumer sent no notify frame"  # something was compared
        if r["kv_role"] == "kv_producer" and not hma:
            # the six keys of this version's request_finished, delivered unchanged
            assert rec["finished"][0] is True and sorted(rec["finished"][1]) == sorted(
                ["do_remote_prefill", "do_remote_decode", "remote_block_ids", "remote_engine_id", "tp_size", "transfer_id"])
        # the recorder wrote its scheduler file where the configuration says (record_to moved under tmp)
        recorded = [f for d, _, fs in os.walk(tmp_path) for f in fs if f.endswith(".jsonl")]
        assert any("scheduler" in f for f in recorded), recorded

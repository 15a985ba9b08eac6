"""Upstream's own unit tests of a version whose tree lacks the connector's helper modules, run
unchanged over the project's stubs of them (benchmarks/upstream_vllm.py).

vLLM 3c201bf2's tests/v1/kv_connector/unit/test_moriio_routing.py (read at run time from
../shared/upstream, never copied here) pins what the stubs must decide as upstream does:
``MoRIIOConfig.from_vllm_config`` gives ``local_kv_port`` 0 for the rdma backend and a free port for
xgmi, and ``request_finished`` returns the prefill's own global DP rank, local DP size and transfer
id. It runs in a process of its own (the loader installs a ``vllm`` of its own), through
benchmarks/upstream_pytest_plugin.py.
"""

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
UPSTREAM = os.path.normpath(os.path.join(REPO, "..", "shared", "upstream"))
CASES = [("vllm-3c201bf2", "tests/v1/kv_connector/unit/test_moriio_routing.py", 5)]


def _python_with_torch():
    for py in ("/usr/bin/python3", sys.executable):
        if os.access(py, os.X_OK) and subprocess.run([py, "-c", "import torch, zmq, msgpack, pytest"],
                                                     capture_output=True).returncode == 0:
            return py
    return None


@pytest.mark.parametrize("version,test_file,expected", CASES)
def test_upstream_unit_tests_pass_over_the_project_stubs(version, test_file, expected, tmp_path):
    root = os.path.join(UPSTREAM, version)
    path = os.path.join(root, test_file)
    if not os.path.isfile(path):
        pytest.skip(f"no upstream test at {path} (../shared/upstream beside the checkout)")
    py = _python_with_torch()
    if py is None:
        pytest.skip("no python3 with torch, zmq, msgpack and pytest (Debian: python3-torch python3-zmq "
                    "python3-msgpack python3-pytest)")
    env = dict(os.environ, KVLEDGER_UPSTREAM_TREE=root, PYTHONPATH=os.path.join(REPO, "benchmarks"),
               PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "upstream_pytest_plugin",
                        "--rootdir", str(tmp_path), "-c", os.devnull, path],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    m = re.search(r"(\d+) passed", p.stdout)
    assert m and int(m.group(1)) == expected, p.stdout[-2000:]

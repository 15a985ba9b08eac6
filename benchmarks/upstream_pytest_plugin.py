"""A pytest plugin that installs upstream_vllm's loader before the tests are collected, so that an
upstream version's own unit tests run, unchanged and read from ../shared/upstream, over that
version's connector under the project's stubs (KVLEDGER_UPSTREAM_TREE names the vllm-<commit> tree).

    KVLEDGER_UPSTREAM_TREE=../shared/upstream/vllm-3c201bf2 PYTHONPATH=benchmarks \\
        /usr/bin/python3 -m pytest -p upstream_pytest_plugin ../shared/upstream/vllm-3c201bf2/tests/...
"""

import logging
import os


def pytest_configure(config):
    import upstream_vllm
    quiet = logging.getLogger("vllm")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    upstream_vllm.load(os.environ["KVLEDGER_UPSTREAM_TREE"])

"""Runs vLLM's MoRIIO toy proxy (read from an upstream checkout, never copied) on given ports.

Usage: run_toy_proxy.py TOY_PROXY_FILE HOST HTTP_PORT PING_PORT

The toy proxy imports vLLM for one constant (MoRIIOConstants.TRANSFER_PREFIX, "tx" in the
upstream moriio_common); vLLM cannot be installed here, so a stub package with that constant
stands in. Its own __main__ binds fixed ports; this harness calls its start_service_discovery
and app.run with the ports the test chose instead.
"""
import importlib.util
import logging
import os
import sys
import tempfile
import types


def stub_vllm():
    names = ["vllm", "vllm.distributed", "vllm.distributed.kv_transfer",
             "vllm.distributed.kv_transfer.kv_connector", "vllm.distributed.kv_transfer.kv_connector.v1",
             "vllm.distributed.kv_transfer.kv_connector.v1.moriio",
             "vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_common"]
    for n in names:
        sys.modules[n] = types.ModuleType(n)

    class MoRIIOConstants:
        TRANSFER_PREFIX = "tx"

    sys.modules[names[-1]].MoRIIOConstants = MoRIIOConstants


def main():
    path, host, http_port, ping_port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    logging.basicConfig(level=logging.INFO)
    stub_vllm()
    spec = importlib.util.spec_from_file_location("moriio_toy_proxy_server", path)
    toy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(toy)
    toy.start_service_discovery(host, ping_port)
    toy.app.config["BODY_TIMEOUT"] = 360000
    toy.app.config["RESPONSE_TIMEOUT"] = 360000
    print("toy proxy on", host, http_port, ping_port, flush=True)
    toy.app.run(host=host, port=http_port, use_reloader=False)


if __name__ == "__main__":
    main()

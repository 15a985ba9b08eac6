"""Drive mode against a real ``kvledger node --engine drive``: a WRITE consumer of vLLM 239b5ff30 (tests only).

Run by VllmBridgeShadowTest (modules/cli) with the node started as a WRITE consumer under
``--profile vllm-239b5ff30``: ``python3 drive_new_reqs.py --drive tcp://127.0.0.1:PORT``. The engine
claims to be vLLM 239b5ff30 with a MoRIIO connector (the scripted one, named so): the recorder's hello
names that install and the node accepts it. One request is scheduled for the first time; at 239b5ff30
the WRITE consumer's ``build_connector_meta`` takes its receives from ``scheduled_new_reqs``, which drive
mode now hands the node. Then a hello naming an install another profile models is refused by the node.
Prints one JSON line: ``driving``, the node's metadata for the step, and the refused hello's error.
"""

import argparse
import json
import sys

import vllm

import fakes
from driver import consumer_requests, make_config
from kvledger_vllm import KvledgerRecorderConnector
from kvledger_vllm.drive import DriveError, NodeBridge
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
from vllm.v1.core.kv_cache_manager import KVCacheBlocks
from vllm.v1.core.sched.output import NewRequestData, SchedulerOutput

V239 = "239b5ff30cf46f9196149c888a20be2096fdff03"


class MoRIIOConnector(fakes.ScriptedConnector):
    """The scripted connector under MoRIIO's class name (the profile table applies to MoRIIO only)."""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drive", required=True)
    a = ap.parse_args(argv)
    vllm.__version__ = "0.11.1.dev5+g239b5ff30.d20260518"
    fakes.ScriptedConnector.script = {}
    cfg = make_config("kv_consumer", {"inner_connector": "MoRIIOConnector", "inner_connector_module_path": "__main__",
                                      "drive_node": a.drive, "drive_timeout_ms": 30000,
                                      "drive_brief": False})  # the node's metadata, to check it
    s = KvledgerRecorderConnector(cfg, KVConnectorRole.SCHEDULER, None)
    out = {"driving": s.driving}
    req = consumer_requests(1)[0]
    s.get_num_new_matched_tokens(req, 0)
    s.update_state_after_alloc(req, KVCacheBlocks([[3, 4], [9]]), 0)
    new = NewRequestData(req.request_id, req.prompt_token_ids, req.sampling_params, ([3, 4], [9]), 0)
    s.build_connector_meta(SchedulerOutput(scheduled_new_reqs=[new]))
    out["metadata"] = s.drive_metadata
    out["fallbacks"] = s.drive_fallbacks
    s.shutdown()
    b = NodeBridge(a.drive, 30000)
    try:
        b.call("hello", kv_role="kv_consumer", vllm_commit="3c201bf24f9a5a2176b72c1c01d5645fdec8a7d0",
               inner_connector="vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector.MoRIIOConnector")
        out["refused"] = None
    except DriveError as e:
        out["refused"] = str(e)
    finally:
        b.close()
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""An engine's drive client over the engine bridge's Unix socket: the vLLM bridge's own NodeBridge
(modules/vllm-bridge, loaded from its source file) makes each call and prints one JSON line per call.

usage: bridge_unix_engine.py unix:///PATH|ipc:///PATH DRIVE_PY CALLS (ipc://: the same NodeBridge on a pyzmq DEALER)
"""

import importlib.util
import json
import sys

endpoint, drive_py, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = importlib.util.spec_from_file_location("kvledger_drive", drive_py)
drive = importlib.util.module_from_spec(spec)
spec.loader.exec_module(drive)

bridge = drive.NodeBridge(endpoint, timeout_ms=60000)


def out(hook, **fields):
    print(json.dumps({"hook": hook, **fields}), flush=True)


try:
    out("hello", result=bridge.call("hello", kv_role="kv_consumer", mode="write", dp_rank=0,
                                    connector_role="scheduler"))
    out("ping", result=bridge.call("ping"))
    for _ in range(calls):
        bridge.call("get_finished")
    out("get_finished", calls=calls)
    try:
        bridge.call("getfinished")
        out("getfinished", error=None)
    except drive.DriveError as e:
        out("getfinished", error=str(e))
    out("get_finished", result=bridge.call("get_finished"))
finally:
    bridge.close()

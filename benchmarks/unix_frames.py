"""Length-prefixed frames over a Unix stream socket (4 bytes, big-endian, then the frame), as the node's
``unix://`` engine bridge speaks them: the benchmarks' echo and stand-in node.

    python3 benchmarks/unix_frames.py echo PATH      # answers each frame with itself, one connection
    python3 benchmarks/unix_frames.py standin PATH   # answers as a drive node would (drive_client_cost.py)

Each prints PATH once it listens (``start`` waits for that line). The stand-in answers batches call by
call, takes compact calls as the node does, answers each hook with what vLLM acted on (a batch asking
for the agreed form without the empty answers and those equal to acted), and prints
how many calls it applied and their digest (hook and arguments, in order) when a connection ends.
"""

import os
import socket
import struct
import subprocess
import sys

_LENGTH = struct.Struct(">I")


def serve(conn, handle):
    """Reads frames from ``conn`` until the peer closes it; ``handle(frame)`` (bytes) returns the
    frame to send back (bytes), or None for no answer."""
    buf = bytearray()
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return
        buf += chunk
        while len(buf) >= 4:
            n = _LENGTH.unpack_from(buf)[0]
            if len(buf) < 4 + n:
                break
            out = handle(bytes(buf[4:4 + n]))
            del buf[:4 + n]
            if out is not None:
                conn.sendall(_LENGTH.pack(len(out)) + out)


def start(role, path):
    """``python3 unix_frames.py ROLE PATH`` in another process, returned once it listens (its stdout
    a text pipe, for what it prints later)."""
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), role, path], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    return p


def echo(frame):
    """The echo's answer: the frame itself."""
    return frame


class _StandIn:
    def __init__(self):
        import hashlib

        import msgpack
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                        "modules", "vllm-bridge", "src"))
        from kvledger_vllm.drive import agrees, long_forms
        self.msgpack, self.long_forms, self.agrees = msgpack, long_forms, agrees
        self.digest, self.calls = hashlib.sha256(), 0
        self.session = {}  # (steady) the last compact step read on the connection

    def answer(self, req):
        if "refused" in req:
            return {"v": 1, "id": req["id"], "ok": False, "error": "INVALID_VALUE: " + req["refused"]}
        h, a = req["hook"], req.get("args") or {}
        self.digest.update(self.msgpack.packb([h, a]))
        self.calls += 1
        if h == "hello":
            r = {"protocol": 1, "profile": "stand-in", "hooks": ["batch", "compact", "derived", "steady", "agreed"]}
        elif h == "get_num_new_matched_tokens" or h == "request_finished":
            r = a.get("acted") or {}
        elif h == "update_connector_output":
            r = {"finished_sending": a.get("finished_sending")}
        else:
            r = {}
        return {"v": 1, "id": req["id"], "ok": True, "result": r}

    def __call__(self, frame):
        req = self.msgpack.unpackb(frame)
        if req["hook"] == "batch":
            batch = req["args"]["calls"]
            calls = self.long_forms(batch, self.session)
            replies = [self.answer(m) for m in calls]
            if req["args"].get("agreed") is True:  # empty answers and those equal to acted left out
                replies = [r for m, r in zip(calls, replies) if not self.agrees(m, r["result"]) and (
                    r["result"] != {} or "acted" in m["args"])]
            elif any(isinstance(m, list) for m in batch):  # an empty answer as the call's id alone
                replies = [r["id"] if r["result"] == {} else r for r in replies]
            rep = {"v": 1, "id": req["id"], "ok": True, "result": {"replies": replies}}
        else:
            rep = self.answer(req)
        return self.msgpack.packb(rep)


def main(role, path):
    if role not in ("echo", "standin"):
        sys.exit(f"unix_frames: echo or standin, not {role!r}")
    handle = _StandIn() if role == "standin" else echo
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    print(path, flush=True)
    while True:
        c, _ = srv.accept()
        with c:
            if role == "standin":
                handle.session = {}  # nothing carries over from one connection to the next
            serve(c, handle)
        if role == "echo":
            return
        print(handle.calls, handle.digest.hexdigest(), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])

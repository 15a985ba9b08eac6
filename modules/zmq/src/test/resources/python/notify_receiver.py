"""A MoRIIO notify (or proxy) ROUTER that receives kvledger's frames and checks them as the
Python listener does: recv_multipart must give exactly (identity, msg), and msg must
msgpack.loads (or be a UTF-8 completion id).

usage: notify_receiver.py COUNT
Binds tcp://127.0.0.1:* and prints {"port": N}; then one JSON line per message received:
{"frames": n, "loads": <value> | null, "error": str | null, "keys": [...]}.
"""
import sys

import msgpack
import zmq

from common import emit, to_json


def main():
    count = int(sys.argv[1])
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.RCVTIMEO, 30000)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind("tcp://127.0.0.1:*")
    port = int(sock.getsockopt(zmq.LAST_ENDPOINT).decode().rsplit(":", 1)[1])
    emit({"port": port})
    for _ in range(count):
        try:
            frames = sock.recv_multipart()
        except zmq.Again:
            emit({"error": "timeout"})
            break
        out = {"frames": len(frames), "loads": None, "error": None, "keys": None}
        try:
            # the Python listener's exact unpack: a third frame raises here
            identity, msg = frames
            value = msgpack.loads(msg)
            out["loads"] = to_json(value)
            if isinstance(value, dict):
                out["keys"] = [k if isinstance(k, str) else repr(k) for k in value.keys()]
            out["hex"] = msg.hex()
        except Exception as e:  # reported to the Java test, which fails on it
            out["error"] = "%s: %s" % (type(e).__name__, e)
        emit(out)
    sock.close()
    ctx.term()


if __name__ == "__main__":
    main()

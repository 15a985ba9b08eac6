"""Helpers shared by the kvledger interop peers (run with Debian's /usr/bin/python3)."""
import json
import sys


def to_json(value):
    """Python values from msgpack.loads to JSON: bytes become {"$bin": hex}, dict key order kept."""
    if isinstance(value, bytes):
        return {"$bin": value.hex()}
    if isinstance(value, dict):
        return {"$map": [[to_json(k), to_json(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


def emit(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=False) + "\n")
    sys.stdout.flush()


def notify_dealer(ctx, zmq, endpoint):
    """A notify DEALER configured as the newest MoRIIO peers do (E-ack send_notify)."""
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.TCP_KEEPALIVE, 1)
    sock.setsockopt(zmq.TCP_KEEPALIVE_IDLE, 30)
    sock.setsockopt(zmq.TCP_KEEPALIVE_INTVL, 10)
    sock.setsockopt(zmq.TCP_KEEPALIVE_CNT, 3)
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.connect(endpoint)
    return sock

"""The drive mode's client: scheduler hook calls answered by a kvledger node over the engine bridge.

``kvledger node --engine drive --bridge tcp://127.0.0.1:PORT`` serves the engine bridge protocol
(docs/bridge-protocol.md): one msgpack map per frame on a DEALER,
``{"v": 1, "id", "hook", "args"}`` answered ``{"v": 1, "id", "ok", "result"|"error"}``. This module
holds the synchronous client the recorder's scheduler connector uses when ``drive_node`` is set.
pyzmq and msgpack are imported when it is built.
"""

from __future__ import annotations

import itertools


class DriveError(RuntimeError):
    """The node answered ``ok: False``, or did not answer in time."""


class NodeBridge:
    """One DEALER to a kvledger node's engine bridge; one call in flight at a time (the caller's thread)."""

    def __init__(self, endpoint, timeout_ms=5000):
        import msgpack
        import zmq
        self._zmq = zmq
        self._msgpack = msgpack
        self.endpoint = endpoint
        self._ctx = zmq.Context(1)
        s = self._ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RCVTIMEO, int(timeout_ms))
        s.setsockopt(zmq.SNDTIMEO, int(timeout_ms))
        s.connect(endpoint)
        self._sock = s
        self._ids = itertools.count(1)
        self.calls = 0

    def call(self, hook, **args):
        """Sends one hook call and returns the node's ``result``; raises DriveError otherwise."""
        rid = next(self._ids)
        self.calls += 1
        try:
            self._sock.send(self._msgpack.packb({"v": 1, "id": rid, "hook": hook, "args": args}))
            while True:
                reply = self._msgpack.unpackb(self._sock.recv())
                if not isinstance(reply, dict) or reply.get("id") != rid:
                    continue  # a late answer to a call that timed out earlier
                if not reply.get("ok"):
                    raise DriveError(f"kvledger node {hook}: {reply.get('error')}")
                return reply.get("result") or {}
        except self._zmq.Again as e:
            raise DriveError(f"kvledger node at {self.endpoint} did not answer {hook} in time") from e

    def close(self):
        try:
            self._sock.close()
        finally:
            self._ctx.term()

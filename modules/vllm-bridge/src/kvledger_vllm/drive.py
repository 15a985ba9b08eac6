"""The drive mode's client: scheduler hook calls answered by a kvledger node over the engine bridge.

``kvledger node --engine drive --bridge tcp://127.0.0.1:PORT`` serves the engine bridge protocol
(docs/bridge-protocol.md): one msgpack map per frame on a DEALER,
``{"v": 1, "id", "hook", "args"}`` answered ``{"v": 1, "id", "ok", "result"|"error"}``. This module
holds the synchronous client the recorder's scheduler connector uses when ``drive_node`` is set.
pyzmq and msgpack are imported when it is built. ``unix:///PATH`` (``--bridge unix:///PATH`` on
the node) speaks the same maps over a Unix domain socket, each frame preceded by its length
(4 bytes, big-endian): one thread fewer each way than ZMQ over loopback TCP.
"""

from __future__ import annotations

import itertools
import socket
import struct


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
        if endpoint.startswith("unix://"):
            self._ctx = None
            self._sock = _UnixFrames(endpoint[len("unix://"):], timeout_ms, zmq.Again)
        else:
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
            if self._ctx is not None:
                self._ctx.term()


class _UnixFrames:
    """A Unix domain stream socket that sends and receives whole frames, each preceded by its length
    (4 bytes, big-endian), as the node's ``unix://`` engine bridge does; a timeout raises ``again``
    (what a DEALER raises), and a frame cut by a timeout is completed by the next ``recv``. It
    connects at the first send, as a DEALER's call finds an absent node at its first call."""

    def __init__(self, path, timeout_ms, again):
        self._again = again
        self._path = path
        self._timeout = timeout_ms / 1000.0
        self._s = None
        self._buf = bytearray()

    def send(self, frame):
        if self._s is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self._timeout)
            try:
                s.connect(self._path)
            except OSError as e:
                s.close()
                raise DriveError(f"cannot reach the kvledger node at unix://{self._path}: {e}") from e
            self._s = s
        try:
            self._s.sendall(struct.pack(">I", len(frame)) + frame)
        except socket.timeout as e:
            raise self._again() from e
        except OSError as e:
            raise DriveError(f"the kvledger node at unix://{self._path}: {e}") from e

    def recv(self):
        while True:
            if len(self._buf) >= 4:
                n = struct.unpack_from(">I", self._buf)[0]
                if len(self._buf) >= 4 + n:
                    frame = bytes(self._buf[4:4 + n])
                    del self._buf[:4 + n]
                    return frame
            try:
                chunk = self._s.recv(1 << 16)
            except socket.timeout as e:
                raise self._again() from e
            except OSError as e:
                raise DriveError(f"the kvledger node at unix://{self._path}: {e}") from e
            if not chunk:
                raise DriveError(f"the kvledger node at unix://{self._path} closed the connection")
            self._buf += chunk

    def close(self):
        if self._s is not None:
            self._s.close()

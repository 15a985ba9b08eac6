"""A pyzmq (libzmq) caller of the engine bridge's own ZMTP ROUTER, for ZmtpBridgeTransportTest.

Usage: zmtp_caller.py ENDPOINT MODE. The Java side answers each message's frame F with b"re:" + F.
Prints one JSON line per caller, then exits 0; any missing or wrong reply raises (exit 1).

Modes:
  dealers    three DEALERs (the second with IDENTITY b"py-named"), five calls each sent interleaved
             (a0 b0 c0 a1 ...) before any reply is read; a 300-byte and a 70,000-byte call on the first
  req        a REQ: three calls, one after another
  heartbeat  a DEALER with HEARTBEAT_IVL 50 ms, HEARTBEAT_TIMEOUT 300 ms: a call, 1.5 s of heartbeats, a call
  reconnect  a DEALER: a call, then a line on stdin (the transport was restarted on the same port), a call
"""
import json
import sys

import zmq

TIMEOUT_MS = 20000


def call(sock, payload, req=False):
    sock.send(payload)
    return recv(sock)


def recv(sock):
    if not sock.poll(TIMEOUT_MS):
        raise SystemExit("no reply within %d ms" % TIMEOUT_MS)
    frames = sock.recv_multipart()
    if len(frames) != 1:
        raise SystemExit("a reply of %d frames" % len(frames))
    return frames[0]


def expect(reply, payload):
    if reply != b"re:" + payload:
        raise SystemExit("reply %r to %r" % (reply[:40], payload[:40]))


def main():
    endpoint, mode = sys.argv[1], sys.argv[2]
    ctx = zmq.Context()
    if mode == "dealers":
        socks = []
        for i in range(3):
            s = ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            if i == 1:
                s.setsockopt(zmq.IDENTITY, b"py-named")
            s.connect(endpoint)
            socks.append(s)
        for k in range(5):
            for i, s in enumerate(socks):
                s.send(b"c%d-%d" % (i, k))
        for i, s in enumerate(socks):
            replies = [recv(s) for _ in range(5)]
            for k, r in enumerate(replies):
                expect(r, b"c%d-%d" % (i, k))
            print(json.dumps({"caller": i, "replies": [r.decode() for r in replies]}), flush=True)
        for n in (300, 70000):
            payload = bytes((j * 7) % 251 for j in range(n))
            expect(call(socks[0], payload), payload)
        print(json.dumps({"long": True}), flush=True)
    elif mode == "req":
        s = ctx.socket(zmq.REQ)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(endpoint)
        replies = []
        for k in range(3):
            payload = b"r-%d" % k
            r = call(s, payload)
            expect(r, payload)
            replies.append(r.decode())
        print(json.dumps({"replies": replies}), flush=True)
    elif mode == "heartbeat":
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.HEARTBEAT_IVL, 50)
        s.setsockopt(zmq.HEARTBEAT_TIMEOUT, 300)
        s.setsockopt(zmq.HEARTBEAT_TTL, 1000)
        s.connect(endpoint)
        expect(call(s, b"h-0"), b"h-0")
        # no traffic but heartbeats: a PING every 50 ms, the connection dropped after 300 ms without a PONG
        if s.poll(1500):
            raise SystemExit("a message came unasked")
        expect(call(s, b"h-1"), b"h-1")
        print(json.dumps({"heartbeat": True}), flush=True)
    elif mode == "reconnect":
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RECONNECT_IVL, 20)
        s.setsockopt(zmq.IDENTITY, b"py-again")
        s.connect(endpoint)
        expect(call(s, b"x-0"), b"x-0")
        print(json.dumps({"first": True}), flush=True)
        sys.stdin.readline()
        expect(call(s, b"x-1"), b"x-1")
        print(json.dumps({"second": True}), flush=True)
    else:
        raise SystemExit("unknown mode " + mode)
    for s in list(locals().get("socks", [])):
        s.close(0)
    ctx.destroy(0)


if __name__ == "__main__":
    main()

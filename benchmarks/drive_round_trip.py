"""One awaited hook call at a time against `kvledger node --engine drive`, next to a bare echo.

Starts a drive node (journaling, as in production) on each transport asked for, makes N
`get_finished` calls one at a time and reports the round trip's p50, p99 and p99.9 in
microseconds, with a bare echo over the same transport measured in the same run (a pyzmq
ROUTER that sends each frame back, on loopback TCP or, for ipc://, on a Unix socket; for unix://,
a Python thread that reads a length-prefixed frame and writes it back). Rounds alternate node and echo so that load on a shared machine
falls on both. `--jar A --jar B` runs the same measurement against two builds of kvledger.jar
(before/after figures from one run), both nodes up at once, the rounds rotating among them and
the echo; the ratios are what to compare, not the absolute values. `--jar PATH:FLAGS` gives that
node extra JVM flags (space-separated, after the colon), so one jar can run under several settings
side by side, e.g. the loop's spin (`-Dkvledger.loop.spinNs=N`). `--idle-cpu SECONDS` then measures
what each node costs while nearly idle: one connected caller making a call every `--idle-every` ms
(0: none), the node process's CPU (utime + stime in /proc) per second of wall time.

    python3 benchmarks/drive_round_trip.py --jar modules/cli/target/kvledger.jar --calls 20000
    python3 benchmarks/drive_round_trip.py --transport tcp --transport unix --jar OLD.jar --jar NEW.jar
    python3 benchmarks/drive_round_trip.py --transport ipc --transport unix --transport tcp
    python3 benchmarks/drive_round_trip.py --transport unix --jar K.jar:-Dkvledger.loop.spinNs=0 --jar K.jar \
        --idle-cpu 30 --idle-every 1,10,0
"""

import argparse
import os
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import msgpack
import zmq

import unix_frames

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# the JVM flags the launcher (kvledger) gives the CLI
JVM_FLAGS = ["--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
             "-Dchronicle.analytics.disable=true", "-Dchronicle.announcer.disable=true",
             "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
             "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
             "--add-exports=java.base/jdk.internal.util=ALL-UNNAMED", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
             "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED", "--add-opens=java.base/java.io=ALL-UNNAMED",
             "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
             "--add-opens=java.base/java.util=ALL-UNNAMED"]


def java():
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "java") if home else "java"


# ------------------------------------------------------------------ clients


class ZmqClient:
    def __init__(self, endpoint):
        self.ctx = zmq.Context(1)
        self.s = self.ctx.socket(zmq.DEALER)
        self.s.setsockopt(zmq.LINGER, 0)
        self.s.setsockopt(zmq.RCVTIMEO, 10000)
        self.s.connect(endpoint)

    def send(self, frame):
        self.s.send(frame)

    def recv(self):
        return self.s.recv()

    def close(self):
        self.s.close()
        self.ctx.term()


class UnixClient:
    """Length-prefixed frames (4 bytes, big-endian) over a Unix domain stream socket."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(10)
        self.s.connect(path)
        self.buf = bytearray()

    def send(self, frame):
        self.s.sendall(struct.pack(">I", len(frame)) + frame)

    def recv(self):
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack_from(">I", self.buf)[0]
                if len(self.buf) >= 4 + n:
                    f = bytes(self.buf[4:4 + n])
                    del self.buf[:4 + n]
                    return f
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("the node closed the connection")
            self.buf += chunk

    def close(self):
        self.s.close()


def jar_spec(spec):
    """``PATH`` or ``PATH:FLAGS`` (JVM flags, space-separated, after the first colon followed by a dash)."""
    path, sep, rest = spec.partition(":-")
    return os.path.abspath(path), shlex.split("-" + rest) if sep else []


def cpu_ticks(pid):
    """The process's user + system CPU time so far, in clock ticks (fields 14 and 15 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def idle_cpu(live, seconds, every_ms, hook):
    """Each node's CPU in ms per s of wall time while its caller calls every ``every_ms`` (0: never)."""
    stop = threading.Event()

    def caller(c):
        rid = 10_000_000
        while not stop.is_set():
            rid += 1
            c.send(msgpack.packb({"v": 1, "id": rid, "hook": hook, "args": {}}))
            c.recv()
            stop.wait(every_ms / 1000.0)

    threads = [threading.Thread(target=caller, args=(c,), daemon=True) for _, c, _, _ in live] if every_ms else []
    for t in threads:
        t.start()
    time.sleep(1.0)  # the callers under way before measuring
    t0, before = time.monotonic(), [cpu_ticks(node.p.pid) for _, _, _, node in live]
    time.sleep(seconds)
    t1, after = time.monotonic(), [cpu_ticks(node.p.pid) for _, _, _, node in live]
    stop.set()
    for t in threads:
        t.join()
    hz = os.sysconf("SC_CLK_TCK")
    return [(b - a) * 1000.0 / hz / (t1 - t0) for a, b in zip(before, after)]


def client_for(endpoint):
    if endpoint.startswith("unix://"):
        return UnixClient(endpoint[len("unix://"):])
    return ZmqClient(endpoint)


# ------------------------------------------------------------------ echoes


class ZmqEcho:
    """A pyzmq ROUTER echo on loopback TCP, or on ``ipc://`` in ``directory`` when one is given."""

    def __init__(self, directory=None):
        self.ctx = zmq.Context(1)
        self.s = self.ctx.socket(zmq.ROUTER)
        self.s.setsockopt(zmq.LINGER, 0)
        if directory is None:
            port = self.s.bind_to_random_port("tcp://127.0.0.1")
            self.endpoint = f"tcp://127.0.0.1:{port}"
        else:
            self.endpoint = "ipc://" + os.path.join(directory, "echo.ipc")
            self.s.bind(self.endpoint)
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        p = zmq.Poller()
        p.register(self.s, zmq.POLLIN)
        while not self.stop:
            if p.poll(100):
                self.s.send_multipart(self.s.recv_multipart())

    def close(self):
        self.stop = True
        self.t.join()
        self.s.close()
        self.ctx.term()


class UnixEcho:
    def __init__(self, directory):
        self.path = os.path.join(directory, "echo.sock")
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.path)
        self.srv.listen(4)
        self.endpoint = "unix://" + self.path
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    @staticmethod
    def serve(c):
        with c:
            unix_frames.serve(c, unix_frames.echo)

    def close(self):
        self.srv.close()


# ------------------------------------------------------------------ node


class NodeDown(Exception):
    """The node ended before it answered (e.g. a build without the transport asked for)."""


class Node:
    def __init__(self, jar, endpoint, directory, java_opts):
        self.log = open(os.path.join(directory, "node.log"), "wb")
        cmd = [java(), *JVM_FLAGS, "-XX:+UseParallelGC", "-Xms512m", "-Xmx512m", "-XX:+AlwaysPreTouch", *java_opts,
               "-jar", jar, "node", "--engine", "drive", "--bridge", endpoint,
               "--kv-transfer-config",
               '{"kv_role":"kv_producer","kv_connector_extra_config":{"host_ip":"10.0.0.1",'
               '"proxy_ip":"127.0.0.1","proxy_ping_port":1}}',
               "--http", f"127.0.0.1:{free_port()}", "--journal", os.path.join(directory, "journal")]
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, cwd=directory)

    def close(self):
        self.p.terminate()
        try:
            self.p.wait(20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.log.close()


def connect_when_up(endpoint, node, deadline_s=120):
    """A client once the node answers a ping (it binds after its journal is open); an echo's
    answer is the ping itself."""
    end = time.monotonic() + deadline_s
    while True:
        if node is not None and node.p.poll() is not None:
            raise NodeDown(f"the node ended (exit {node.p.returncode}) before answering")
        try:
            c = client_for(endpoint)
            c.send(msgpack.packb({"v": 1, "id": 0, "hook": "ping"}))
            r = msgpack.unpackb(c.recv())
            if r.get("ok") or (node is None and r.get("hook") == "ping"):
                return c
            c.close()
        except (OSError, zmq.ZMQError, EOFError):
            pass
        if time.monotonic() > end:
            raise SystemExit(f"nothing answered at {endpoint} within {deadline_s} s")
        time.sleep(0.2)


# ------------------------------------------------------------------ measurement


def calls(client, n, first_id, hook, samples):
    frame_args = {}
    for i in range(n):
        rid = first_id + i
        frame = msgpack.packb({"v": 1, "id": rid, "hook": hook, "args": frame_args})
        t0 = time.perf_counter_ns()
        client.send(frame)
        raw = client.recv()
        samples.append(time.perf_counter_ns() - t0)
        r = msgpack.unpackb(raw)
        if r.get("id") != rid or r.get("ok") is False:
            raise SystemExit(f"unexpected reply to call {rid}: {r}")


def echo_calls(client, n, hook, samples):
    frame = msgpack.packb({"v": 1, "id": 1, "hook": hook, "args": {}})
    for _ in range(n):
        t0 = time.perf_counter_ns()
        client.send(frame)
        client.recv()
        samples.append(time.perf_counter_ns() - t0)


def pct(samples, q):
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))] / 1000.0


def summary(samples):
    return pct(samples, 0.50), pct(samples, 0.99), pct(samples, 0.999)


def label(jar, transport):
    path, _, flags = jar.partition(" ")
    return (f"node {os.path.basename(os.path.dirname(os.path.abspath(path))) or path}/"
            f"{os.path.basename(path)}{' ' + flags if flags else ''}, {transport}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jar", action="append", metavar="PATH[:FLAGS]",
                    help="kvledger.jar to run, with extra JVM flags after a colon (repeat to compare builds or "
                         "settings; default: modules/cli/target/kvledger.jar)")
    ap.add_argument("--transport", action="append", choices=["tcp", "ipc", "unix"],
                    help="tcp (loopback ZMQ), ipc (ZMQ on a Unix socket) or unix (the bridge's length-prefixed "
                         "frames on a Unix socket); repeat for several (default: tcp)")
    ap.add_argument("--calls", type=int, default=20000, help="measured calls per node (default 20000)")
    ap.add_argument("--warmup", type=int, default=20000, help="calls before measuring (default 20000)")
    ap.add_argument("--rounds", type=int, default=10, help="alternations of node and echo (default 10)")
    ap.add_argument("--hook", default="get_finished")
    ap.add_argument("--java-opt", action="append", default=[], help="extra JVM option for the node (e.g. JFR)")
    ap.add_argument("--idle-cpu", type=float, default=0, metavar="SECONDS",
                    help="after the rounds, each node's CPU per second over SECONDS with a caller per --idle-every")
    ap.add_argument("--idle-every", default="1,10,0", metavar="MS,...",
                    help="the idle callers' interval between calls in ms, 0: no calls (default 1,10,0)")
    ap.add_argument("--keep", action="store_true", help="keep the node's directory (log, journal)")
    ap.add_argument("--jeromq", action="store_true", help="over tcp, also run each jar's node with "
                    "-Dkvledger.bridge.zmq=jeromq (JeroMQ's ROUTER instead of the bridge's own ZMTP)")
    a = ap.parse_args()
    # the caller's relative paths, resolved here: each node runs in a directory of its own
    jars = [jar_spec(j) for j in a.jar] if a.jar else [(os.path.join(ROOT, "modules", "cli", "target", "kvledger.jar"), [])]
    transports = a.transport or ["tcp"]
    per_round = max(1, a.calls // a.rounds)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {a.rounds} rounds of {per_round} calls, "
          f"one at a time, hook {a.hook}")
    print(f"{'what':<44} {'p50 us':>8} {'p99 us':>8} {'p99.9 us':>9} {'p50/echo':>9}")
    for transport in transports:
        work = tempfile.mkdtemp(prefix="kvl-rt-")
        echo = ZmqEcho() if transport == "tcp" else ZmqEcho(work) if transport == "ipc" else UnixEcho(work)
        echo_client = connect_when_up(echo.endpoint, None)
        echo_samples = []
        echo_calls(echo_client, min(a.warmup, 5000), a.hook, [])
        # every build's node runs at once and the rounds rotate among them and the echo (the order
        # reversed every other round), so that load on a shared machine falls on all builds alike
        nodes = []
        try:
            builds = [(jar, flags) for jar, flags in jars]
            if a.jeromq and transport == "tcp":
                builds += [(jar, [*flags, "-Dkvledger.bridge.zmq=jeromq"]) for jar, flags in jars]
            for jar, flags in builds:
                d = tempfile.mkdtemp(prefix="node-", dir=work)
                endpoint = (f"tcp://127.0.0.1:{free_port()}" if transport == "tcp"
                            else f"{transport}://" + os.path.join(d, "node.sock"))
                node = Node(jar, endpoint, d, [*a.java_opt, *flags])
                jar = f"{jar} {' '.join(flags)}" if flags else jar
                nodes.append((jar, node, endpoint, d))
            live = []
            for jar, node, endpoint, d in nodes:
                try:
                    c = connect_when_up(endpoint, node)
                except NodeDown as e:
                    with open(os.path.join(d, "node.log"), errors="replace") as f:
                        why = [ln.strip() for ln in f if "Error" in ln or "error" in ln][-1:]
                    print(f"  {jar} over {transport}: {e}: {' '.join(why)[:200]}")
                    continue
                calls(c, a.warmup, 1, a.hook, [])
                live.append((jar, c, [], node))
            for r in range(a.rounds):
                for jar, c, samples, _ in (live if r % 2 == 0 else live[::-1]):
                    calls(c, per_round, 1_000_000 + r * per_round, a.hook, samples)
                    echo_calls(echo_client, per_round, a.hook, echo_samples)
            idle = [(ms, idle_cpu(live, a.idle_cpu, ms, a.hook), os.getloadavg()[0])
                    for ms in (float(x) for x in a.idle_every.split(","))] if a.idle_cpu > 0 and live else []
            for jar, c, samples, _ in live:
                c.close()
            results = [(jar, samples) for jar, c, samples, _ in live]
        finally:
            for jar, node, endpoint, d in nodes:
                node.close()
                if a.keep:
                    print(f"  node directory kept: {d}")
            echo_client.close()
            echo.close()
        if not results:
            print(f"  no node answered over {transport}: nothing to compare with its echo")
            shutil.rmtree(work, ignore_errors=True)
            continue
        e50, e99, e999 = summary(echo_samples)
        print(f"{'bare echo, ' + transport:<44} {e50:>8.1f} {e99:>8.1f} {e999:>9.1f} {1.0:>9.2f}")
        for jar, samples in results:
            n50, n99, n999 = summary(samples)
            print(f"{label(jar, transport)[-44:]:<44} {n50:>8.1f} {n99:>8.1f} {n999:>9.1f} {n50 / e50:>9.2f}")
        for ms, used, load in idle:
            every = f"a call every {ms:g} ms" if ms else "no calls"
            print(f"idle CPU over {a.idle_cpu:g} s, one caller, {every} (load {load:.2f}), ms per s:")
            for (jar, _), u in zip(results, used):
                print(f"  {label(jar, transport)[-44:]:<44} {u:>8.2f}")
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())

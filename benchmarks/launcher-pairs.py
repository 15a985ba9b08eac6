#!/usr/bin/env python3
"""Two kvledger launchers (or one with two JVM flag sets) timed in alternating pairs.

The machine these figures come from is a shared 2-core VM whose speed moves by half within
minutes, so a median taken minutes apart from another says more about the host than about the
code. This runs A and B one right after the other, N times, alternating which goes first, and
reports the median of the per-pair ratios B/A (wall time and the main thread's CPU), which the
host's drift mostly cancels out of. Each run also gets the host's steal time (/proc/stat), and
the outputs of A and B are compared (standard output and exit code).

Usage:
  benchmarks/launcher-pairs.py [--pairs N] [--a-flags F] [--b-flags F] A B -- COMMAND [ARGS...]

  A, B        checkouts of kvledger (their ./kvledger launcher runs the command); the same
              checkout twice with --a-flags/--b-flags compares JVM flags
  --a-flags   JAVA_TOOL_OPTIONS for A's runs (likewise --b-flags); default: none
  --pairs     pairs to run (default 10)

The command runs from the current directory, so relative paths in ARGS are the caller's. Run
each launcher once before: one whose jar is older than its sources rebuilds it, and one whose
class archive is older than its jar trains it again, in its first run. Linux only (it reads
/proc). Example:
  benchmarks/launcher-pairs.py --pairs 12 ../base . -- replay big
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time


def usage(code=2):
    """Prints the usage part of this file's docstring and exits with code."""
    text = __doc__[__doc__.index("Usage:"):]
    (sys.stdout if code == 0 else sys.stderr).write(text)
    sys.exit(code)


def parse(argv):
    opts = {"pairs": 10, "a_flags": "", "b_flags": ""}
    pos = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return opts, pos, argv[i + 1:]
        if a in ("-h", "--help"):
            usage(0)
        if a in ("--pairs", "--a-flags", "--b-flags"):
            if i + 1 >= len(argv):
                sys.stderr.write(f"launcher-pairs: {a} needs a value\n")
                usage()
            key = a[2:].replace("-", "_")
            if key == "pairs":
                try:
                    opts[key] = int(argv[i + 1])
                except ValueError:
                    opts[key] = 0
                if opts[key] <= 0:
                    sys.stderr.write("launcher-pairs: --pairs takes a positive integer\n")
                    usage()
            else:
                opts[key] = argv[i + 1]
            i += 2
            continue
        if a.startswith("-"):
            sys.stderr.write(f"launcher-pairs: unknown option {a}\n")
            usage()
        pos.append(a)
        i += 1
    sys.stderr.write("launcher-pairs: missing '--' before the command\n")
    usage()


def steal_ticks():
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def run(checkout, flags, command, out_path):
    """One run: wall seconds, the main thread's CPU seconds, steal ticks, exit code."""
    launcher = os.path.join(checkout, "kvledger")
    env = dict(os.environ)
    if flags:
        env["JAVA_TOOL_OPTIONS"] = flags
    else:
        env.pop("JAVA_TOOL_OPTIONS", None)
    tck = os.sysconf("SC_CLK_TCK")
    s0 = steal_ticks()
    t0 = time.monotonic()
    with open(out_path, "w") as out:
        p = subprocess.Popen([launcher] + command, stdout=out, stderr=subprocess.DEVNULL, env=env)
        main_cpu = 0.0
        while p.poll() is None:
            # the JVM's main thread is the one task named "java" (the launcher execs the JVM)
            try:
                for tid in os.listdir(f"/proc/{p.pid}/task"):
                    try:
                        with open(f"/proc/{p.pid}/task/{tid}/stat") as f:
                            s = f.read()
                    except OSError:
                        continue
                    name = s[s.index("(") + 1:s.rindex(")")]
                    if name == "java":
                        fields = s[s.rindex(")") + 2:].split()
                        main_cpu = max(main_cpu, (int(fields[11]) + int(fields[12])) / tck)
            except OSError:
                pass
            time.sleep(0.02)
    wall = time.monotonic() - t0
    return wall, main_cpu, steal_ticks() - s0, p.returncode


def main():
    opts, pos, command = parse(sys.argv[1:])
    if len(pos) != 2 or not command:
        sys.stderr.write("launcher-pairs: give two checkouts and, after '--', the command\n")
        usage()
    for c in pos:
        if not os.access(os.path.join(c, "kvledger"), os.X_OK):
            sys.stderr.write(f"launcher-pairs: {c} has no ./kvledger launcher\n")
            sys.exit(2)
    sides = {"A": (pos[0], opts["a_flags"]), "B": (pos[1], opts["b_flags"])}
    with tempfile.TemporaryDirectory() as tmp:
        walls = {"A": [], "B": []}
        wall_ratios, cpu_ratios = [], []
        differ = 0
        for i in range(opts["pairs"]):
            order = ("A", "B") if i % 2 == 0 else ("B", "A")
            res = {}
            for side in order:
                checkout, flags = sides[side]
                res[side] = run(checkout, flags, command, os.path.join(tmp, side + ".out"))
                wall, cpu, steal, rc = res[side]
                with open("/proc/loadavg") as f:
                    load = f.read().split()[0]
                print(f"pair {i + 1} {side} wall {wall:.2f} s main {cpu:.2f} s steal {steal} ticks "
                      f"exit {rc} load {load}", flush=True)
            with open(os.path.join(tmp, "A.out"), "rb") as fa, open(os.path.join(tmp, "B.out"), "rb") as fb:
                if fa.read() != fb.read() or res["A"][3] != res["B"][3]:
                    differ += 1
            walls["A"].append(res["A"][0])
            walls["B"].append(res["B"][0])
            wall_ratios.append(res["B"][0] / res["A"][0])
            if res["A"][1] > 0:
                cpu_ratios.append(res["B"][1] / res["A"][1])
    for side in ("A", "B"):
        print(f"{side}: wall median {statistics.median(walls[side]):.2f} s, min {min(walls[side]):.2f} s")
    print(f"B/A wall: median {statistics.median(wall_ratios):.3f} "
          f"(per pair {', '.join(f'{r:.2f}' for r in wall_ratios)})")
    if cpu_ratios:
        print(f"B/A main thread CPU: median {statistics.median(cpu_ratios):.3f} "
              f"(per pair {', '.join(f'{r:.2f}' for r in cpu_ratios)})")
    print("outputs: identical in every pair" if differ == 0 else f"outputs: differ in {differ} pair(s)")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

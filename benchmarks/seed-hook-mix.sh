#!/usr/bin/env bash
# The seed scheduler's hook mix, Python against Java, side by side in one run.
#
# Each round runs the seed's own MoRIIOConnectorScheduler (benchmarks/seed_hook_mix.py, Debian's
# python3) and SeedHookMixBenchmark (JMH, short: -wi 3 -w 1 -i 5 -r 1 -f 1 -prof gc) on both mixes,
# alternating which goes first, and prints both rates and their ratio; at the end the medians and
# the median of the per-round ratios. The load average is printed with every round: the machine
# is shared, so only ratios taken in the same round mean much.
#
# Usage: benchmarks/seed-hook-mix.sh [--rounds N] [--seed-file PATH] [--jar PATH]
#                                    [--baseline-jar PATH] [--gc G1|Parallel] [--out DIR] [--ab N]
#   --seed-file     the seed document (default: <repo>/../shared/seeds/000_8224966d3c25bc2c.txt)
#   --jar           the benchmarks jar (default: benchmarks/target/benchmarks.jar; build it with
#                   mvn -B -q -pl benchmarks -am package -DskipTests)
#   --baseline-jar  also run SeedHookMixBenchmark from this jar (an older build) in every round
#   --gc            run the JMH fork with -XX:+Use<gc>GC (default: Parallel, the collector a live
#                   node runs with; G1 is the JVM's default)
#   --out           keep the JMH JSON results and the Python output there (default: a temp dir)
#   --ab N          Java only, instead of the rounds: N one-fork runs of each jar per mix (needs
#                   --baseline-jar), interleaved baseline, new, new, baseline, ...; prints each
#                   fork's median, the median of the fork medians with their range, and the
#                   new/baseline ratios of the throughput and of the CPU time per call
#                   (CpuTimeProfiler: the JMH thread's CPU time, which the host's load moves less)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
rounds=3
seed_file="$repo/../shared/seeds/000_8224966d3c25bc2c.txt"
jar="$repo/benchmarks/target/benchmarks.jar"
baseline=""
gc="Parallel"
out=""
ab=""

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="${2:?}"; shift 2 ;;
    --seed-file) seed_file="${2:?}"; shift 2 ;;
    --jar) jar="${2:?}"; shift 2 ;;
    --baseline-jar) baseline="${2:?}"; shift 2 ;;
    --gc) gc="${2:?}"; shift 2 ;;
    --out) out="${2:?}"; shift 2 ;;
    --ab) ab="${2:?}"; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "seed-hook-mix.sh: unknown option $1" >&2; usage ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "seed-hook-mix.sh: --rounds takes a positive integer" >&2; exit 2 ;; esac
[ -f "$seed_file" ] || { echo "seed-hook-mix.sh: the seed document is not at $seed_file (pass --seed-file PATH)" >&2; exit 2; }
[ -f "$jar" ] || { echo "seed-hook-mix.sh: no benchmarks jar at $jar (build it: mvn -B -q -pl benchmarks -am package -DskipTests)" >&2; exit 2; }
[ -z "$baseline" ] || [ -f "$baseline" ] || { echo "seed-hook-mix.sh: no baseline jar at $baseline" >&2; exit 2; }
case "$ab" in '') ;; *[!0-9]*|0) echo "seed-hook-mix.sh: --ab takes a positive integer" >&2; exit 2 ;;
  *) [ -n "$baseline" ] || { echo "seed-hook-mix.sh: --ab needs --baseline-jar" >&2; exit 2; } ;; esac
py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3)"
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
if [ -z "$out" ]; then out="$(mktemp -d)"; else mkdir -p "$out"; fi
# the summary is appended to round by round: a directory used before starts it again
rm -f "$out/summary.tsv"
prepend=()
[ -z "$gc" ] || prepend=(-jvmArgsPrepend "-XX:+Use${gc}GC")

load() { cut -d' ' -f1-3 /proc/loadavg; }

run_python() { # round
  "$py" "$here/seed_hook_mix.py" --seed-file "$seed_file" --rounds 2 --warmup 1 --json > "$out/python-$1.json"
}
run_java() { # round tag jar
  "$java" -jar "$3" SeedHookMixBenchmark -wi 3 -w 1 -i 5 -r 1 -f 1 -prof gc "${prepend[@]}" \
    -rf json -rff "$out/$2-$1.json" > "$out/$2-$1.log" 2>&1 \
    || { echo "seed-hook-mix.sh: JMH failed, see $out/$2-$1.log" >&2; exit 1; }
}

if [ -n "$ab" ]; then
  # Each fork runs from its own jar; the profiler comes from the new jar (an older build may lack
  # it), after the jar's own classes, so that the benchmark and the reducer are the jar's own.
  run_fork() { # tag jar mix index
    "$java" -cp "$2:$jar" org.openjdk.jmh.Main SeedHookMixBenchmark -p mix="$3" -wi 3 -w 1 -i 5 -r 1 -f 1 \
      -prof io.kvledger.bench.CpuTimeProfiler "${prepend[@]}" -rf json -rff "$out/ab-$3-$1-$4.json" \
      > "$out/ab-$3-$1-$4.log" 2>&1 || { echo "seed-hook-mix.sh: JMH failed, see $out/ab-$3-$1-$4.log" >&2; exit 1; }
    echo "$3 $1 $4 $(load)" >> "$out/ab-load.txt"
  }
  echo "seed hook mix A/B: $ab forks of each jar per mix, interleaved; java: $("$java" -version 2>&1 | head -1); gc: ${gc}; results in $out"
  rm -f "$out/ab-load.txt"
  for mix in WRITE_PRODUCER READ_CONSUMER; do
    for i in $(seq 1 "$ab"); do
      if [ $((i % 2)) -eq 1 ]; then run_fork baseline "$baseline" "$mix" "$i"; run_fork new "$jar" "$mix" "$i"
      else run_fork new "$jar" "$mix" "$i"; run_fork baseline "$baseline" "$mix" "$i"; fi
    done
  done
  "$py" - "$out" "$ab" <<'EOF'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
loads = {}
for line in open(f"{out}/ab-load.txt"):
    mix, tag, i, l1, l5, l15 = line.split()
    loads[(mix, tag, i)] = float(l1)
def fork(mix, tag, i):
    b = json.load(open(f"{out}/ab-{mix}-{tag}-{i}.json"))[0]
    its = [x for f in b["primaryMetric"]["rawData"] for x in f]
    cpu = [x for f in b["secondaryMetrics"]["cpu.time.norm"]["rawData"] for x in f]
    return statistics.median(its), statistics.median(cpu), min(cpu)
for mix in ("WRITE_PRODUCER", "READ_CONSUMER"):
    res = {t: [fork(mix, t, i) for i in range(1, n + 1)] for t in ("baseline", "new")}
    print(f"{mix.lower().replace('_', '-')}:")
    for t in ("baseline", "new"):
        thr = [r[0] / 1e6 for r in res[t]]; cpu = [r[1] for r in res[t]]
        print(f"  {t:8s} fork medians {' '.join(f'{x:.2f}' for x in thr)} M calls/s; median {statistics.median(thr):.2f}"
              f" (range {min(thr):.2f}-{max(thr):.2f}); CPU ns/call fork medians {' '.join(f'{x:.0f}' for x in cpu)};"
              f" median {statistics.median(cpu):.1f}, best iteration median {statistics.median(r[2] for r in res[t]):.1f}")
    thr_ratio = statistics.median(r[0] for r in res["new"]) / statistics.median(r[0] for r in res["baseline"])
    cpu_ratio = statistics.median(r[1] for r in res["baseline"]) / statistics.median(r[1] for r in res["new"])
    best_ratio = statistics.median(r[2] for r in res["baseline"]) / statistics.median(r[2] for r in res["new"])
    pair = [b[1] / a[1] for a, b in zip(res["new"], res["baseline"])]
    ls = [loads[(mix, t, str(i))] for t in ("baseline", "new") for i in range(1, n + 1)]
    print(f"  new/baseline: throughput {thr_ratio:.3f}x, calls per CPU second {cpu_ratio:.3f}x (best iterations"
          f" {best_ratio:.3f}x; per adjacent pair: median {statistics.median(pair):.3f}x, range {min(pair):.3f}-{max(pair):.3f});"
          f" load average (1 min) {min(ls):.2f}-{max(ls):.2f}")
EOF
  exit 0
fi
echo "seed hook mix: $rounds rounds; python: $("$py" --version 2>&1); java: $("$java" -version 2>&1 | head -1); gc: ${gc}; results in $out"
for r in $(seq 1 "$rounds"); do
  l0="$(load)"
  if [ $((r % 2)) -eq 1 ]; then
    run_python "$r"; run_java "$r" java "$jar"; [ -z "$baseline" ] || run_java "$r" baseline "$baseline"
  else
    [ -z "$baseline" ] || run_java "$r" baseline "$baseline"; run_java "$r" java "$jar"; run_python "$r"
  fi
  echo "round $r: load average $l0 -> $(load)"
  "$py" - "$out" "$r" "${baseline:+baseline}" <<'EOF'
import json, statistics, sys
out, r, base = sys.argv[1], sys.argv[2], sys.argv[3]
py = {}
for line in open(f"{out}/python-{r}.json"):
    d = json.loads(line)
    py[d["mix"]] = d
def jmh(tag):
    res = {}
    for b in json.load(open(f"{out}/{tag}-{r}.json")):
        mix = b["params"]["mix"].lower().replace("_", "-")
        its = [x for fork in b["primaryMetric"]["rawData"] for x in fork]
        norm = b["secondaryMetrics"].get("gc.alloc.rate.norm", {}).get("score")
        res[mix] = (statistics.median(its), its, norm)
    return res
java = jmh("java")
basej = jmh("baseline") if base else {}
for mix in ("write-producer", "read-consumer"):
    p = py[mix]
    jm, its, norm = java[mix]
    line = (f"  {mix:15s} python {p['median']/1e6:6.3f} M calls/s (rounds {', '.join(f'{x/1e6:.3f}' for x in p['rounds'])})"
            f" | java {jm/1e6:6.3f} M calls/s (iterations {', '.join(f'{x/1e6:.2f}' for x in its)}; {norm:.0f} B/call)"
            f" | ratio {jm/p['median']:5.1f}x")
    if base:
        bm, bits, bnorm = basej[mix]
        line += f" | baseline java {bm/1e6:.3f} M calls/s ({bnorm:.0f} B/call), new/baseline {jm/bm:.2f}x"
    print(line)
    with open(f"{out}/summary.tsv", "a") as f:
        f.write(f"{r}\t{mix}\t{p['median']}\t{jm}\t{min(its)}\t{max(its)}\t{norm}\t"
                f"{basej[mix][0] if base else ''}\t{basej[mix][2] if base else ''}\n")
EOF
done
"$py" - "$out" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(f"{sys.argv[1]}/summary.tsv")]
for mix in ("write-producer", "read-consumer"):
    rs = [r for r in rows if r[1] == mix]
    py = [float(r[2]) for r in rs]; jv = [float(r[3]) for r in rs]
    spread = [(float(r[5]) - float(r[4])) / float(r[3]) for r in rs]
    line = (f"{mix:15s} median python {statistics.median(py)/1e6:.3f} M calls/s, median java {statistics.median(jv)/1e6:.3f} M calls/s, "
            f"median of per-round ratios {statistics.median(j / p for j, p in zip(jv, py)):.1f}x, "
            f"java B/call {statistics.median(float(r[6]) for r in rs):.0f}, "
            f"java iteration spread (max-min)/median per round: {', '.join(f'{s*100:.0f}%' for s in spread)}")
    if rs[0][7]:
        bj = [float(r[7]) for r in rs]
        line += (f"; baseline java median {statistics.median(bj)/1e6:.3f} M calls/s "
                 f"({statistics.median(float(r[8]) for r in rs):.0f} B/call), median new/baseline "
                 f"{statistics.median(j / b for j, b in zip(jv, bj)):.2f}x")
    print(line)
EOF

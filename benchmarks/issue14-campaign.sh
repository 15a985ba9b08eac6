#!/usr/bin/env bash
# Issue 14's items 1 to 3 in one campaign, each against its baseline in the same run.
#
# The host these figures come from moves by half within minutes, so a figure means something only
# next to its baseline measured in the same minutes. This runs, back to back:
#   A  benchmarks/seed-hook-mix.sh: the seed scheduler's hook mix, Java against the seed's own
#      Python scheduler, round by round (item 1: the ratio and bytes per call; item 2: the JMH
#      iterations' spread within each round)
#   B  SeedHookMixRounds, both mixes, 8 rounds of 600,000 calls on the node's heap flags, with the
#      host's CPU and memory controls after each round (item 2)
#   C  benchmarks/launcher-pairs.py: `replay` over the BigJournal set, this checkout against the
#      build the issue's "today about 1.6 M/s" describes (item 3; 3 M/s there is 0.533x its time)
#   D  `replay` and `hangs` of this checkout, alternating: input events/s, hangs / replay, and the
#      largest heap before a collection (-Xlog:gc)
#
# Usage: benchmarks/issue14-campaign.sh [--big DIR] [--baseline DIR|COMMIT] [--rounds N] [--pairs N]
#                                       [--runs N] [--out DIR] [--skip-hook-mix]
#   --big        the BigJournal set (default: benchmarks/target/bigjournal); made there when missing
#                (10.1 M input events, 1.5 GB, about 20 s)
#   --baseline   a kvledger checkout to compare `replay` with, or a commit of this repository to
#                clone and build (default: 9aeb52e, main when item 3's work began, measured then at
#                1.62 M input events/s)
#   --rounds     rounds of A (default 5); --pairs: pairs of C (default 10); --runs: runs of D (5)
#   --out        keep the logs there (default: a temporary directory)
#   --skip-hook-mix  only C and D
# Takes about 15 minutes (a first run also builds the baseline and makes the set). Run it on a
# machine doing nothing else; the benchmarks jar must be built (mvn -B -q -pl benchmarks -am package
# -DskipTests). Relative paths are the caller's.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
big=""
baseline="9aeb52e"
rounds=5
pairs=10
runs=5
out=""
hook_mix=true

usage() { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
abs() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
while [ $# -gt 0 ]; do
  case "$1" in
    --big) big="$(abs "${2:?}")"; shift 2 ;;
    --baseline) baseline="${2:?}"; shift 2 ;;
    --rounds) rounds="${2:?}"; shift 2 ;;
    --pairs) pairs="${2:?}"; shift 2 ;;
    --runs) runs="${2:?}"; shift 2 ;;
    --out) out="$(abs "${2:?}")"; shift 2 ;;
    --skip-hook-mix) hook_mix=false; shift ;;
    -h|--help) usage 0 ;;
    *) echo "issue14-campaign.sh: unknown option $1" >&2; usage ;;
  esac
done
for n in "$rounds" "$pairs" "$runs"; do
  case "$n" in ''|*[!0-9]*|0) echo "issue14-campaign.sh: --rounds, --pairs and --runs take a positive integer" >&2; exit 2 ;; esac
done

if [ -z "${JAVA_HOME:-}" ]; then
  for d in /usr/lib/jvm/temurin-25* /usr/lib/jvm/*25*; do [ -x "$d/bin/java" ] && { JAVA_HOME="$d"; break; }; done
fi
[ -n "${JAVA_HOME:-}" ] || { echo "issue14-campaign.sh: set JAVA_HOME to a JDK 25" >&2; exit 2; }
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
jar="$repo/benchmarks/target/benchmarks.jar"
[ -f "$jar" ] || { echo "issue14-campaign.sh: no benchmarks jar at $jar (build it: mvn -B -q -pl benchmarks -am package -DskipTests)" >&2; exit 2; }
read -r -a flags <<<"$(sed -n 's:.*<kvledger.jvm.flags>\(.*\)</kvledger.jvm.flags>.*:\1:p' "$repo/pom.xml")"
if [ -z "$out" ]; then out="$(mktemp -d)"; else mkdir -p "$out"; fi
[ -n "$big" ] || big="$repo/benchmarks/target/bigjournal"

stamp() { printf '%s UTC, load average %s' "$(date -u +%H:%M:%S)" "$(cut -d' ' -f1-3 /proc/loadavg)"; }
bigjournal() { # DIR EVENTS
  java "${flags[@]}" -cp "$jar" io.kvledger.bench.BigJournal "$1" --events "$2" > "$out/bigjournal-$(basename "$1").log" 2>&1 \
    || { echo "issue14-campaign.sh: BigJournal failed, see $out/bigjournal-$(basename "$1").log" >&2; exit 1; }
}

# the baseline checkout: a directory with a launcher, or a commit cloned and built here
if [ -x "$baseline/kvledger" ]; then
  base_dir="$(cd "$baseline" && pwd)"
else
  base_dir="$out/baseline"
  if [ ! -x "$base_dir/kvledger" ]; then
    git clone --quiet "$repo" "$base_dir"
    git -C "$base_dir" checkout --quiet "$baseline" \
      || { echo "issue14-campaign.sh: no commit $baseline in $repo" >&2; exit 2; }
  fi
fi

if [ ! -d "$big" ] || [ -z "$(find "$big" -name '*.cq4' -print -quit)" ]; then
  echo "making the BigJournal set in $big ($(stamp))"
  bigjournal "$big" 11500000
fi
# a small journal, to build each launcher's jar and train its class archive before anything is timed
[ -d "$out/small" ] || bigjournal "$out/small" 300
for d in "$base_dir" "$repo"; do
  for _ in 1 2; do "$d/kvledger" replay "$out/small" > /dev/null 2>> "$out/warmup.log" || true; done
done
# the journal in the page cache: a first read from disk would time the disk
find "$big" -name '*.cq4' -exec cat {} + > /dev/null

echo "issue 14 campaign: $(stamp); this checkout $(git -C "$repo" rev-parse --short HEAD), baseline $(git -C "$base_dir" rev-parse --short HEAD); logs in $out"

if $hook_mix; then
  echo "== A: items 1 and 2, benchmarks/seed-hook-mix.sh --rounds $rounds ($(stamp))"
  "$here/seed-hook-mix.sh" --rounds "$rounds" --jar "$jar" --out "$out/hook-mix" | tail -2
  echo "== B: item 2, SeedHookMixRounds <mix> 8 3 on the node's heap flags ($(stamp))"
  for mix in write-producer read-consumer; do
    java "${flags[@]}" -XX:+UseParallelGC -Xms2g -Xmx2g -XX:+AlwaysPreTouch -cp "$jar" \
      io.kvledger.bench.SeedHookMixRounds "$mix" 8 3 > "$out/rounds-$mix.log" 2>&1
    grep -E '^java .*: median|^(control|memory control)' "$out/rounds-$mix.log" | sed 's/^/  /'
  done
fi

echo "== C: item 3, replay: baseline (A) against this checkout (B), $pairs pairs ($(stamp))"
"$here/launcher-pairs.py" --pairs "$pairs" "$base_dir" "$repo" -- replay "$big" > "$out/pairs-replay.log" 2>&1
tail -5 "$out/pairs-replay.log" | sed 's/^/  /'

rm -f "$out/runs.tsv"
echo "== D: item 3, replay and hangs of this checkout, $runs runs each, alternating ($(stamp))"
"$repo/kvledger" replay "$big" > "$out/replay.txt"
inputs="$(sed -n 's/.* \([0-9][0-9]*\) inputs applied.*/\1/p' "$out/replay.txt" | head -1)"
for i in $(seq 1 "$runs"); do
  for c in replay hangs; do
    start="$(date +%s.%N)"
    JAVA_TOOL_OPTIONS="-Xlog:gc:file=$out/gc-$c-$i.txt" "$repo/kvledger" "$c" "$big" > "$out/$c-$i.txt" 2> /dev/null || true
    end="$(date +%s.%N)"
    peak="$(grep -o '[0-9]*M->' "$out/gc-$c-$i.txt" | tr -dc '0-9\n' | sort -n | tail -1)"
    printf '%s\t%s\t%s\t%s\t%s\n' "$c" "$i" "$start" "$end" "${peak:-0}" >> "$out/runs.tsv"
  done
done
python3 - "$out/runs.tsv" "$inputs" <<'EOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
inputs = int(sys.argv[2])
wall = {c: [float(r[3]) - float(r[2]) for r in rows if r[0] == c] for c in ("replay", "hangs")}
peak = {c: max(int(r[4]) for r in rows if r[0] == c) for c in ("replay", "hangs")}
rp, hg = statistics.median(wall["replay"]), statistics.median(wall["hangs"])
print(f"  replay: {', '.join(f'{w:.2f}' for w in wall['replay'])} s; median {rp:.2f} s = "
      f"{inputs / rp / 1e6:.2f} M input events/s ({inputs:,} inputs); largest heap before a collection {peak['replay']} MiB")
print(f"  hangs:  {', '.join(f'{w:.2f}' for w in wall['hangs'])} s; median {hg:.2f} s = {hg / rp:.2f}x replay; "
      f"largest heap before a collection {peak['hangs']} MiB")
EOF
echo "done ($(stamp))"

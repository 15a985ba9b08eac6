#!/usr/bin/env bash
# What drive mode adds to vLLM's scheduler steps: benchmarks/drive_step_cost.py against real
# `kvledger node --engine drive` processes, each journaling to a temporary directory.
#
# Usage: benchmarks/drive-step-cost.sh [--jar PATH] [ARGS of drive_step_cost.py...]
#   --jar PATH   also drive a node started from this kvledger.jar (an older build), labelled
#                "base", in the same run as this checkout's jar (labelled "head"); --jar LABEL=PATH[:FLAGS]
#                labels it, FLAGS (after a colon) are extra JVM flags for its nodes, e.g.
#                --jar "spin0=modules/cli/target/kvledger.jar:-Dkvledger.loop.spinNs=0"
#   other arguments go to drive_step_cost.py (--concurrency 16,64,256, --cycles 6, --idle 6,
#   --unpipelined head, --unbatched head, --finished-awaited head, --from-inner head, --freed-from-inner head,
#   --matched-awaited head, --matched-from-inner head, --idle-frames head, --unsteady head, --inthread head,
#   --unreclaimed head, --unnapped head, --unbrief head, --decode 16, --stagger, --warmup 200, --gpu-ms 20,
#   --transport unix|tcp (default unix))
# The JDK: JAVA_HOME when it is a JDK 25, else `java` on PATH. This checkout's jar
# (modules/cli/target/kvledger.jar) is built with Maven when it is missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
jar="$repo/modules/cli/target/kvledger.jar"
args=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --jar) case "${2:?}" in *=*) extra+=(--jar "$2") ;; *) extra+=(--jar "base=$2") ;; esac; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done

java="java"
if [ -n "${JAVA_HOME:-}" ]; then java="$JAVA_HOME/bin/java"; fi
v="$("$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)"
if [ -z "$v" ] || [ "$v" -lt 25 ]; then
  echo "drive-step-cost.sh: $java is not a JDK 25 (version ${v:-unknown}); set JAVA_HOME to one" >&2
  exit 2
fi
if [ ! -f "$jar" ]; then
  echo "drive-step-cost.sh: building $jar" >&2
  (cd "$repo" && mvn -B -q -DskipTests -pl modules/cli -am package) >&2
fi
py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3)"
exec "$py" "$here/drive_step_cost.py" --java "$java" --jar "head=$jar" "${extra[@]+"${extra[@]}"}" \
  "${args[@]+"${args[@]}"}"

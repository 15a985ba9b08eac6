#!/usr/bin/env bash
# kvledger against an upstream vLLM version's own MoRIIO connector, call by call.
#
# Runs benchmarks/upstream_differential.py (Debian's python3 with python3-torch, -zmq, -msgpack):
# the version's real files are imported at run time from <repo>/../shared/upstream/vllm-<commit>
# (never copied here) under the project's stubs (benchmarks/upstream_vllm.py); each scenario builds
# the bridge's recorder over that version's MoRIIOConnector through vLLM's own factory and drives
# it in vLLM's call order with vLLM's own request and scheduler-output types. Then one
# `kvledger journal import` of every recording and `kvledger replay --verify --effects --json` in
# batches, with the profile each recording's header names (no --profile), and prints the hook
# calls compared, agreeing and diverging per hook, the divergences by kind and the notify frames
# compared in order. Exit status 0 when nothing diverges, 1 otherwise. Without --upstream it runs
# every version there in turn (vllm-239b5ff30, vllm-3c201bf2); 3c201bf2's tree lacks the helper
# modules its connector imports: the loader stubs them (see upstream_vllm.py) and borrows vLLM's
# request and output types and factory from 239b5ff30.
#
# Usage: benchmarks/upstream-differential.sh [--upstream DIR] [--scenarios N] [--seed S] [--out DIR]
#                                            [--json]
#   --upstream   one upstream tree (default: each <repo>/../shared/upstream/vllm-*)
#   --scenarios  generated scenarios besides upstream's unit-test cases (default 300)
#   --seed       the generator's seed (default 1): the same seed makes the same recordings
#   --out        keep the recordings, frames and journals there, one subdirectory per version
#                without --upstream (default: a temp dir, removed)
#   --json       print the result as one JSON object
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
upstream=""
out=""
args=()
prog=upstream-differential.sh
# shellcheck source=differential-args.sh
. "$here/differential-args.sh"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --upstream) upstream="${2:?--upstream takes a directory}"; shift 2 ;;
    --out) out="$(cd "$(dirname "${2:?--out takes a directory}")" && pwd)/$(basename "$2")"; shift 2 ;;
    *) common_arg "$@"; shift "$shift_by" ;;
  esac
done
if [ -n "$upstream" ]; then
  trees=("$upstream")
else
  trees=()
  for t in "$repo/../shared/upstream"/vllm-*; do [ -d "$t/vllm" ] && trees+=("$t"); done
  [ ${#trees[@]} -gt 0 ] || trees=("$repo/../shared/upstream/vllm-239b5ff30")
fi
for t in "${trees[@]}"; do
  [ -d "$t/vllm" ] || { echo "upstream-differential.sh: no upstream vLLM sources at $t (pass --upstream DIR)" >&2; exit 2; }
done
py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3)"
"$py" -c 'import torch, zmq, msgpack' 2>/dev/null || { echo "upstream-differential.sh: $py lacks torch, zmq or msgpack (apt-get install python3-torch python3-zmq python3-msgpack)" >&2; exit 2; }
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"
status=0
for t in "${trees[@]}"; do
  where=()
  if [ -n "$out" ]; then
    if [ -n "$upstream" ]; then where=(--out "$out"); else where=(--out "$out/$(basename "$t")"); fi
  fi
  "$py" "$here/upstream_differential.py" --upstream "$t" --kvledger "$repo/kvledger" ${where[@]+"${where[@]}"} \
    ${args[@]+"${args[@]}"} || status=$?
done
exit "$status"

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
# compared in order. Exit status 0 when nothing diverges, 1 otherwise.
#
# Usage: benchmarks/upstream-differential.sh [--upstream DIR] [--scenarios N] [--seed S] [--out DIR]
#                                            [--json]
#   --upstream   the upstream tree (default: <repo>/../shared/upstream/vllm-239b5ff30)
#   --scenarios  generated scenarios besides upstream's unit-test cases (default 300)
#   --seed       the generator's seed (default 1): the same seed makes the same recordings
#   --out        keep the recordings, frames and journals there (default: a temp dir, removed)
#   --json       print the result as one JSON object
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
upstream="$repo/../shared/upstream/vllm-239b5ff30"
args=()
prog=upstream-differential.sh
# shellcheck source=differential-args.sh
. "$here/differential-args.sh"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --upstream) upstream="${2:?--upstream takes a directory}"; shift 2 ;;
    *) common_arg "$@"; shift "$shift_by" ;;
  esac
done
[ -d "$upstream/vllm" ] || { echo "upstream-differential.sh: no upstream vLLM sources at $upstream (pass --upstream DIR)" >&2; exit 2; }
py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3)"
"$py" -c 'import torch, zmq, msgpack' 2>/dev/null || { echo "upstream-differential.sh: $py lacks torch, zmq or msgpack (apt-get install python3-torch python3-zmq python3-msgpack)" >&2; exit 2; }
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"
exec "$py" "$here/upstream_differential.py" --upstream "$upstream" --kvledger "$repo/kvledger" "${args[@]}"

#!/usr/bin/env bash
# kvledger against the seed scheduler's own Python code, call by call, on generated scenarios.
#
# Runs benchmarks/seed_differential.py (Debian's python3, with msgpack): each scenario drives the
# seed's MoRIIOConnectorScheduler (read at run time from the seed document, never copied here)
# inside the vLLM bridge's recorder, so every scenario is a bridge recording; then one
# `kvledger journal import` of them all and `kvledger replay --verify --effects --json --profile seed`
# in batches, and prints the agreement: hook calls compared, agreeing and diverging per hook, the
# divergences grouped by kind, and the notify frames (remote_blocks, release) compared in order.
#
# Usage: benchmarks/seed-differential.sh [--seed-file PATH] [--scenarios N] [--seed S] [--out DIR]
#                                        [--json]
#   --seed-file  the seed document (default: <repo>/../shared/seeds/000_8224966d3c25bc2c.txt)
#   --scenarios  how many scenarios (default 300)
#   --seed       the generator's seed (default 1): the same seed makes the same recordings
#   --out        keep the recordings, frames and journals there (default: a temp dir, removed)
#   --json       print the result as one JSON object
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
seed_file="$repo/../shared/seeds/000_8224966d3c25bc2c.txt"
args=()
prog=seed-differential.sh
# shellcheck source=differential-args.sh
. "$here/differential-args.sh"

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --seed-file) seed_file="${2:?--seed-file takes a path}"; shift 2 ;;
    *) common_arg "$@"; shift "$shift_by" ;;
  esac
done
[ -f "$seed_file" ] || { echo "seed-differential.sh: the seed document is not at $seed_file (pass --seed-file PATH)" >&2; exit 2; }
py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3)"
"$py" -c 'import msgpack' 2>/dev/null || { echo "seed-differential.sh: $py has no msgpack (apt-get install python3-msgpack)" >&2; exit 2; }
# Python's set order (the seed iterates sets) follows the string hash: fixed, so a run repeats
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"
exec "$py" "$here/seed_differential.py" --seed-file "$seed_file" --kvledger "$repo/kvledger" "${args[@]}"

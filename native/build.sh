#!/usr/bin/env bash
# Builds the UCX ABI probe and the C benchmark baselines of native/ into OUT_DIR.
#
# usage: native/build.sh OUT_DIR
#
# Needs gcc and the UCX development headers (Debian: libucx-dev). When either is missing it prints
# one line saying what is missing and what is skipped, and exits 0: the Java tests that need the
# binaries then report themselves as skipped. Exit status 1 means a compiler error.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: native/build.sh OUT_DIR}"
mkdir -p "$out"
cc="${CC:-gcc}"
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "[native] skipped: no C compiler ('$cc' not on PATH); the ABI probe test and the C baselines will be skipped"
  exit 0
fi
# memcpy baseline needs no UCX
"$cc" -O2 -Wall -Wextra -o "$out/memcpy_bench" "$here/memcpy_bench.c"
if ! echo '#include <ucp/api/ucp.h>' | "$cc" -E -x c - >/dev/null 2>&1; then
  echo "[native] skipped UCX parts: <ucp/api/ucp.h> not found (install libucx-dev); built memcpy_bench only"
  exit 0
fi
"$cc" -O2 -Wall -Wextra -o "$out/abi_probe" "$here/abi_probe.c"
"$cc" -O2 -Wall -Wextra -o "$out/ucx_bench" "$here/ucx_bench.c" -lucp -lucs
echo "[native] built abi_probe, memcpy_bench, ucx_bench into $out"

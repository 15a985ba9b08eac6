# The options seed-differential.sh and upstream-differential.sh share, sourced by both.
#
# common_arg "$@": takes the option in $1 (--scenarios, --seed, --out, --json, -h/--help) into the
# caller's `args` array and sets `shift_by` to how many words it used; an unknown option ends the
# script. The caller defines `prog` (its name in messages) and `usage`.
common_arg() {
  case "$1" in
    --scenarios|--seed) case "${2:-}" in ''|*[!0-9]*) echo "$prog: $1 takes a non-negative integer" >&2; exit 2 ;; esac
                        args+=("$1" "$2"); shift_by=2 ;;
    --out) args+=(--out "$(cd "$(dirname "${2:?--out takes a directory}")" && pwd)/$(basename "$2")"); shift_by=2 ;;
    --json) args+=(--json); shift_by=1 ;;
    -h|--help) usage 0 ;;
    *) echo "$prog: unknown option $1" >&2; usage ;;
  esac
}

#!/usr/bin/env bash
# A soak for false alarms: every kernel x variant x --dist over many seeds of
# its built-in sweep shapes (a shape that names its own variant or dist keeps
# it), judged against the oracle. A correct shader must pass every case: any
# failing or erring case is a false alarm to investigate (or a shader bug),
# and is listed with the command that reproduces it.
#
# Usage: scripts/soak.sh [--seeds N|A..B] [--kernels "K1 K2 ..."] [--variants "V ..."]
#                        [--dists "D ..."] [--stress] [--kverify PATH] [--out DIR]
#                        [-- EXTRA KVERIFY FLAGS]
#   --seeds     seeds per shape [default: 1..300]
#   --kernels   the kernels to soak [default: every kernel of kverify list]
#   --variants, --dists  only these variants and distributions (of the kernels
#               that have them), to split a soak over several runs [default: all]
#   --stress    also the stress runs (1 and 3 workgroups, reversed subgroups):
#               about 4x the time [default: off]
#   --kverify   the binary [default: build/kverify]
#   --out DIR   keep each sweep's table there [default: a temporary folder]
# Exit: 0 when every judged case passed, 1 when one did not, 2 on bad usage,
# 77 when nothing was judged (no device, or every combination skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=1..300 kernels="" variants_only="" dists_only="" stress=--no-stress kv=build/kverify out="" extra=()
die() { echo "soak.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) [ $# -ge 2 ] || die "--seeds needs a value"; seeds=$2; shift 2 ;;
    --kernels) [ $# -ge 2 ] || die "--kernels needs a value"; kernels=$2; shift 2 ;;
    --variants) [ $# -ge 2 ] || die "--variants needs a value"; variants_only=$2; shift 2 ;;
    --dists) [ $# -ge 2 ] || die "--dists needs a value"; dists_only=$2; shift 2 ;;
    --stress) stress=--stress; shift ;;
    --kverify) [ $# -ge 2 ] || die "--kverify needs a value"; kv=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -x "$kv" ] || die "no kverify at '$kv' (build it, or give --kverify PATH)"
[[ "$seeds" =~ ^[0-9]+(\.\.[0-9]+)?$ ]] || die "--seeds: '$seeds' is not N or A..B"
[[ "$seeds" == *..* ]] || seeds="1..$seeds"
all=$("$kv" list | awk -F: '/^[a-z0-9-]+: / {print $1}')
[ -n "$kernels" ] || kernels=$all
for k in $kernels; do grep -qx -- "$k" <<<"$all" || die "no kernel '$k' (kverify list)"; done
if [ -z "$out" ]; then out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; else mkdir -p "$out"; fi

# The choices of a kernel's parameter (--dist, --variant) from its --help.
choices() { "$kv" "$1" --help | awk -v f="--$2" '$1 == f { print $2 }' | tr '|' ' '; }
# Whether word $1 is in the list $2 (an empty list holds every word).
wanted() { [ -z "$2" ] || [ "$1" = - ] || [[ " $2 " == *" $1 "* ]]; }

total=0 passed=0 failed=0 errors=0 skipped=0
: >"$out/bad.txt"
printf '%-12s %-14s %-10s %7s %7s %7s %7s %7s %6s\n' kernel variant dist cases passed failed errors skipped secs
for k in $kernels; do
  variants=$(choices "$k" variant); dists=$(choices "$k" dist)
  for v in ${variants:--}; do
    wanted "$v" "$variants_only" || continue
    for d in ${dists:--}; do
      wanted "$d" "$dists_only" || continue
      args=(--sweep --seeds "$seeds" "$stress")
      [ "$v" = - ] || args+=(--variant "$v")
      [ "$d" = - ] || args+=(--dist "$d")
      log="$out/$k.$v.$d.txt" t0=$SECONDS rc=0
      # the table, not a JSON report: thousands of cases' distributions are
      # hundreds of megabytes, and a failing case's name says how to rerun it
      "$kv" "$k" "${args[@]}" ${extra[@]+"${extra[@]}"} >"$log" 2>"$out/$k.$v.$d.err" || rc=$?
      line=$(tail -n 1 "$log")
      if [[ "$line" =~ ^([0-9]+)\ cases:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ errors,\ ([0-9]+)\ skipped ]]; then
        n=${BASH_REMATCH[1]} p=${BASH_REMATCH[2]} f=${BASH_REMATCH[3]} e=${BASH_REMATCH[4]} s=${BASH_REMATCH[5]}
      else
        n=0 p=0 f=0 e=1 s=0
        echo "soak.sh: $k --variant $v --dist $d: exit $rc, no summary: $(head -n 1 "$out/$k.$v.$d.err")" >&2
      fi
      total=$((total + n)) passed=$((passed + p)) failed=$((failed + f)) errors=$((errors + e)) skipped=$((skipped + s))
      printf '%-12s %-14s %-10s %7d %7d %7d %7d %7d %6d\n' "$k" "$v" "$d" "$n" "$p" "$f" "$e" "$s" $((SECONDS - t0))
      # KERNEL[a=1,b=x,seed=S]  fail|error  ->  kverify KERNEL --a 1 --b x --seed S (and the soak's flags)
      flags="${stress/--no-stress/}${extra[*]+ ${extra[*]}}"; flags=${flags# }
      { grep -E '^[a-z0-9-]+\[.*\]  (fail|error)$' "$log" || true; } | sed -E 's/  (fail|error)$//' | while IFS= read -r name; do
        params=$(sed -E 's/^[^[]*\[(.*)\]$/\1/; s/,/ --/g; s/=/ /g' <<<"$name")
        echo "  kverify $k --$params${flags:+ $flags}"
      done >>"$out/bad.txt"
    done
  done
done
echo "soak: $total cases: $passed passed, $failed failed, $errors errors, $skipped skipped (seeds $seeds)"
if [ -s "$out/bad.txt" ] || [ $((failed + errors)) -gt 0 ]; then
  echo "not passing (each with the command that reproduces it):"
  sort -u "$out/bad.txt" 2>/dev/null | head -n 50
  exit 1
fi
[ "$passed" -gt 0 ] || exit 77
exit 0

#!/usr/bin/env bash
# Median wall time of a kverify command over N runs (default: the main job),
# with the --verbose time split of the median run.
# Usage: scripts/bench.sh [N] [kverify args...]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-11}; shift || true
args=("$@"); [ ${#args[@]} -gt 0 ] || args=(rmsnorm-bwd --rows 512 --dim 4096)
kv=${KV:-build/kverify}
"$kv" "${args[@]}" >/dev/null 2>&1 || true   # warm the page cache and the pipeline cache
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$n"); do
  s=$(date +%s%N)
  "$kv" "${args[@]}" --verbose >/dev/null 2>"$tmp/split.$i" || true
  e=$(date +%s%N)
  echo "$(( (e - s) / 1000 )) $i" >> "$tmp/times"
done
sort -n "$tmp/times" > "$tmp/sorted"
mid=$(( (n + 1) / 2 ))
read -r us idx < <(sed -n "${mid}p" "$tmp/sorted")
awk -v n="$n" -v args="${args[*]}" -v med="$us" 'NR==1{min=$1} {max=$1}
  END {printf "kverify %s: median wall %.1f ms over %d runs (min %.1f ms, max %.1f ms)\n", args, med/1000, n, min/1000, max/1000}' "$tmp/sorted"
grep 'time:' "$tmp/split.$idx" || true

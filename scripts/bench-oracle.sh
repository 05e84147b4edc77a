#!/usr/bin/env bash
# gemm-bwd's float64 oracle (four dgemms: dA, dB and their condition scales)
# against numpy's float64 matmul, side by side: each round times the oracle
# (fastest of three in one process) and numpy right after (fastest of three),
# and the median of the per-round ratios is reported (the machine's speed
# drifts between rounds). numpy must use OpenBLAS
# (libopenblas0-pthread) or it measures the reference BLAS.
# Usage: scripts/bench-oracle.sh [SIZE] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1024}; rounds=${2:-5}
kv=${KV:-build/kverify}
tmp=$(mktemp); dir=$(mktemp -d); trap 'rm -rf "$tmp" "$dir"' EXIT
# One device run saves the case; the rounds then judge its device outputs as
# candidates (--no-device), three oracle runs in one process, warm like numpy's.
"$kv" gemm-bwd --m "$n" --n "$n" --k "$n" --save "$dir" >/dev/null
c=$(ls -d "$dir"/*/)
for i in $(seq "$rounds"); do
  ms=$("$kv" gemm-bwd --inputs "$c/inputs" --candidate dA="$c/device/dA.npy" --candidate dB="$c/device/dB.npy" \
       --no-device --seeds 3 --json - 2>/dev/null |
       python3 -c 'import json,sys; print(min(c["time_ms"]["oracle"] for c in json.load(sys.stdin)["cases"]))')
  /usr/bin/python3 - "$n" "$ms" >> "$tmp" <<'PY'
import sys, time
import numpy as np
n, kv_ms = int(sys.argv[1]), float(sys.argv[2])
rng = np.random.default_rng(0)
a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
a @ b
best = min((lambda t: (a @ b, time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(3))
np_gf, kv_gf = 2 * n**3 / best / 1e9, 8 * n**3 / (kv_ms / 1e3) / 1e9
print(f"{kv_gf / np_gf:.3f} {kv_gf:.1f} {np_gf:.1f} {kv_ms:.1f}")
PY
done
sort -n "$tmp" | awk -v n="$n" '{r[NR]=$1; k[NR]=$2; p[NR]=$3; t[NR]=$4} END {m=int((NR+1)/2);
  printf "size %d^3, %d rounds: kverify oracle (dA, dB and both condition scales) %.1f GFLOP/s (%.1f ms) vs numpy float64 matmul %.1f GFLOP/s in the median round: %.0f%% (rounds: %.0f%%..%.0f%%)\n",
  n, NR, k[m], t[m], p[m], 100*r[m], 100*r[1], 100*r[NR]}'

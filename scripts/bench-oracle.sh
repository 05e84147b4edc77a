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

# The elementwise and reduction oracles (rmsnorm-bwd 4096 x 8192, qdq-affine
# 262144 groups of 64) against a floor in the same round: numpy writing
# the same number of bytes into freshly allocated float64 arrays (the
# oracle's outputs: y and S per output element, the slacks and tie/flush
# codes of qdq) and reading the oracle's inputs once, with 4 KiB pages as
# the oracle's calloc gets them (numpy would ask for huge pages; the floor
# turns that off, so both pay the same page faults). A ratio near 1 means
# the oracle runs at the speed of the memory it must fill, not of its
# arithmetic. Output bytes per case, as the oracles allocate them:
#   rmsnorm-bwd: 16 per element of r, dx and dw
#   qdq-affine:  72 + 4 per weight (y, S of q and qdq; qdq's slack and
#                chained slack; the round trip's y, S and slack; two int16
#                codes), 104 per group (y, S and slack of s, b, ds, db; ds's
#                chained slack)
[ "${ELEMENTWISE:-1}" = 1 ] || exit 0
rows=4096 dim=8192 groups=262144 gs=64
for i in $(seq "$rounds"); do
  for k in rmsnorm qdq; do
    if [ $k = rmsnorm ]; then
      "$kv" rmsnorm-bwd --rows $rows --dim $dim --json "$dir/o.json" >/dev/null
      out=$((16 * (rows + rows * dim + dim))); in=$((4 * (2 * rows * dim + dim)))
    else
      "$kv" qdq-affine --groups $groups --group-size $gs --bits 4 --json "$dir/o.json" >/dev/null
      out=$((76 * groups * gs + 104 * groups)); in=$((8 * groups * gs))
    fi
    /usr/bin/python3 - "$k" "$dir/o.json" "$out" "$in" <<'PY'
import json, sys, time
import numpy as np
k, rep, out, inp = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ms = json.load(open(rep))["cases"][0]["time_ms"]["oracle"]
np.core.multiarray._set_madvise_hugepage(False)
src = np.ones(inp // 4, np.float32)
def floor():
    t = time.perf_counter()
    a = np.empty(out // 8)
    a.fill(0.5)
    src.sum()
    return (time.perf_counter() - t) * 1e3
f = min(floor() for _ in range(3))
print(f"{k}: oracle {ms:.0f} ms, floor {f:.0f} ms ({(out + inp) / 1e6:.0f} MB), ratio {ms / f:.2f}")
PY
  done
done

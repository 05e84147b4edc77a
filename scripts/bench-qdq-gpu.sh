#!/usr/bin/env bash
# On the GPU machine: qdq-affine's device time per stage at GROUPS x
# GROUP_SIZE elements (default 1M x 64 = 64M), as GB/s of the fewest bytes
# each stage must move, against the device's copy bandwidth (CEILING, GB/s;
# 2960 measured on the H100 with a Vulkan compute copy). Stage times are the
# fastest of the --repeat runs (timestamps).
# Usage: scripts/bench-qdq-gpu.sh [GROUPS] [GROUP_SIZE] [BITS] [CEILING] [KVERIFY] [extra flags...]
set -euo pipefail
g=${1:-1048576}; gs=${2:-64}; bits=${3:-4}; ceil=${4:-2960}; kv=${5:-build/kverify}
shift $(( $# < 5 ? $# : 5 ))
out=$("$kv" qdq-affine --groups "$g" --group-size "$gs" --bits "$bits" --repeat 7 --json - "$@" 2>/dev/null) || true
python3 - "$g" "$gs" "$ceil" "$out" <<'PY'
import json, sys
g, gs, ceil = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rep = json.loads(sys.argv[4]); case = rep["cases"][0]; n = g * gs
st = case["time_ms"]["stages_min"]  # the fastest run: later runs of a process measured up to 3x slower
bytes_ = {"init": 4 * n + n + 8 * g,           # w in; codes, scales, biases out
          "forward": n + 8 * g + 4 * n,        # codes, scales, biases in; qdq out
          "bwd-scales": n + 4 * n + 4 * g,     # codes, dy in; d_scales out
          "bwd-biases": 4 * n + 4 * g}         # dy in; d_biases out
print(f"device: {rep['device']['name']} ({rep['device']['driver']}); {g} x {gs} = {n} elements; "
      f"case status {case['status']}")
print(f"{'stage':12} {'ms':>9} {'MB moved':>9} {'GB/s':>8} {'of ceiling':>10}")
for s, b in bytes_.items():
    ms = st[s]; gbs = b / ms / 1e6
    print(f"{s:12} {ms:9.4f} {b / 1e6:9.1f} {gbs:8.1f} {100 * gbs / ceil:9.1f}%")
PY

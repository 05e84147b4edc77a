#!/usr/bin/env bash
# Variants of one stage's shader beside the built-in, in one run (for tuning on
# a GPU): each FILE (.comp or .spv) must first pass every CHECK case (with the
# stress runs: 1 and 3 workgroups, subgroups reversed where it is a .comp);
# then the built-in and every variant that passed are timed with --bench at
# the BENCH case, interleaved over ROUNDS rounds so that clock drift shows as
# spread, and one table is printed: each stage's fastest and median time and
# the driver's register count (a stage over the register budget of its
# occupancy shows there first).
# usage: scripts/bench-shaders.sh KERNEL STAGE 'BENCH ARGS' 'CHECK ARGS' [';' 'CHECK ARGS'...] -- FILE...
#   e.g. scripts/bench-shaders.sh gdn-wy-bwd wy_cm \
#          '--variant bf16-coopmat --batch 8 --seq 4096 --heads 16 --kv-heads 4 --sample 500' \
#          '--variant bf16-coopmat --seq 200 --heads 8 --kv-heads 2' -- try1.comp try2.comp
# env: KV (default build/kverify), RUNS (timed runs per bench, 20), ROUNDS (2),
#      SEEDS (seeds per check case, 2), KEEP (folder for the reports; default: a
#      temporary one, removed)
set -euo pipefail
[ $# -ge 5 ] || { sed -n '2,17p' "$0" >&2; exit 2; }
kernel=$1 stage=$2 big=$3
shift 3
checks=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  [ "$1" = ';' ] || checks+=("$1")
  shift
done
[ "${1:-}" = -- ] && [ $# -ge 2 ] || { echo "bench-shaders: give the variants after --" >&2; exit 2; }
shift
[ ${#checks[@]} -gt 0 ] || { echo "bench-shaders: give at least one CHECK case: a variant is timed only once it passes" >&2; exit 2; }
kv=${KV:-build/kverify}
[ -x "$kv" ] || { echo "bench-shaders: $kv is not an executable (set KV)" >&2; exit 2; }
seen=" built-in "
for f in "$@"; do
  [ -r "$f" ] || { echo "bench-shaders: $f: cannot read" >&2; exit 2; }
  n=$(basename "$f"); n=${n%.*}  # the variant's name in the table and its reports' file names
  case $seen in *" $n "*) echo "bench-shaders: $f: a second variant named '$n' (rename one)" >&2; exit 2 ;; esac
  seen="$seen$n "
done
out=${KEEP:-$(mktemp -d)}
[ -n "${KEEP:-}" ] || trap 'rm -rf "$out"' EXIT
mkdir -p "$out"
names=(built-in) files=("")
for f in "$@"; do
  n=$(basename "$f"); n=${n%.*}
  ok=1
  for c in "${checks[@]}"; do
    # shellcheck disable=SC2086  # the case's arguments are words
    if ! "$kv" "$kernel" $c --seeds "${SEEDS:-2}" --stress --shader "$stage=$f" > "$out/check-$n.txt" 2>&1; then
      echo "check $n: fails [$c]"; grep -E 'FAIL|error' "$out/check-$n.txt" | head -3; ok=0
    fi
  done
  [ $ok = 1 ] && { echo "check $n: ${#checks[@]} cases pass"; names+=("$n"); files+=("$f"); }
done
for r in $(seq "${ROUNDS:-2}"); do
  for i in "${!names[@]}"; do
    sh=(); [ -n "${files[$i]}" ] && sh=(--shader "$stage=${files[$i]}")
    # shellcheck disable=SC2086
    "$kv" "$kernel" $big --bench "${RUNS:-20}" --json "$out/bench-${names[$i]}-$r.json" "${sh[@]}" \
      > "$out/bench-${names[$i]}-$r.txt" 2>&1 || echo "bench ${names[$i]} round $r: exit $? ($out/bench-${names[$i]}-$r.txt)"
  done
done
python3 - "$out" "${ROUNDS:-2}" "${names[@]}" <<'PY'
import json, os, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print(f"{'variant':24} {'round':>5} {'status':7} stages: min ms / median ms / registers")
for n in names:
    for r in range(1, rounds + 1):
        path = os.path.join(out, f"bench-{n}-{r}.json")
        if not os.path.exists(path):  # its bench failed (said above)
            continue
        c = json.load(open(path))["cases"][0]
        cells = []
        for st, b in ((c.get("bench") or {}).get("stages") or {}).items():
            regs = next((f"{v:.0f}" for k, v in (b.get("compiler") or {}).items() if "register" in k.lower()), "-")
            cells.append(f"{st} {b['min_ms']:.4f} / {b['median_ms']:.4f} / {regs}")
        print(f"{n:24} {r:>5} {c['status']:7} " + "   ".join(cells))
PY

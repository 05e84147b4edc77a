#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for
# SECONDS (default 600), two at a time, starting from tests/fuzz/corpus/<f>.
# New inputs go to build-fuzz/corpus/<f>; crashes to build-fuzz/crashes/<f>
# (turn each into a corpus file and a fix). Prints executions and coverage.
# Usage: scripts/fuzz.sh [SECONDS] [npy npz json abi spec safetensors report]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}; shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(npy npz json abi spec safetensors report)
for p in clang libclang-rt-14-dev libomp-14-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || { sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo; $sudo apt-get install -y -qq "$p"; }
done
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DKV_FUZZ=ON -DKV_SANITIZE=ON -DKV_WERROR=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}"
run() {
  local f=$1 out=build-fuzz/corpus/$1 crashes=build-fuzz/crashes/$1
  mkdir -p "$out" "$crashes"
  ASAN_OPTIONS=detect_leaks=1 ./build-fuzz/tests/fuzz_"$f" "$out" tests/fuzz/corpus/"$f" \
    -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$crashes/" > "build-fuzz/fuzz_$f.log" 2>&1 || true
  echo "== $f: $(grep -E '^stat::number_of_executed_units' "build-fuzz/fuzz_$f.log" | awk '{print $2}') executions," \
       "$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "build-fuzz/fuzz_$f.log" | tail -1)," \
       "corpus $(ls "$out" | wc -l) files, crashes $(ls "$crashes" | wc -l)"
}
jobs=0
for f in "${targets[@]}"; do
  run "$f" &
  jobs=$((jobs + 1))
  if [ "$jobs" -ge 2 ]; then wait -n; jobs=$((jobs - 1)); fi
done
wait

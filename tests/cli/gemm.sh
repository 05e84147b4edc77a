# gemm-bwd: each variant, the sweep for 140 cases in total (20 shapes x 7),
# the f16 overflow regime of trueno#170 reported per oracle, golden fixtures,
# and bad input.
. "$(dirname "$0")/lib.bash"
J=(--json "$TMP/report.json")
# The user's choices below are the test's own: none from the environment (a machine may set
# OPENBLAS_CORETYPE for every process)
unset OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS GOTO_NUM_THREADS
for v in f32 accumulate f16; do
  expect_exit 0 "$KV" gemm-bwd --m 130 --n 77 --k 33 --variant "$v"
done
# OpenBLAS's generic kernels (as Debian 12's OpenBLAS picks on Cooper Lake; here a test
# switch names them) are replaced by ones the CPU runs: the process runs itself again with
# OPENBLAS_CORETYPE set, and the report names the kernels the products ran on; a user's
# OPENBLAS_CORETYPE stands.
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  KVERIFY_TEST_BLAS_CORE=Prescott expect_exit 0 "$KV" gemm-bwd --m 40 --n 30 --k 20 --json "$TMP/blas.json"
  python3 - "$TMP/blas.json" <<'PY' || fail "the generic BLAS kernels were not replaced"
import json, sys
assert json.load(open(sys.argv[1]))["kverify"]["blas"] in ("SkylakeX (in place of Prescott, OpenBLAS's choice)",
                                                         "Haswell (in place of Prescott, OpenBLAS's choice)")
PY
  KVERIFY_TEST_BLAS_CORE=Prescott OPENBLAS_CORETYPE=Haswell expect_exit 0 "$KV" gemm-bwd --m 40 --n 30 --k 20 --json "$TMP/blas.json"
  python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["kverify"]["blas"] == "Haswell"' "$TMP/blas.json" \
    || fail "OPENBLAS_CORETYPE not kept"
fi
# OpenBLAS's pthreads build (here a test switch names it) is asked for one thread a
# call: kverify calls dgemm from each thread of its own team. The process runs itself
# again with OPENBLAS_NUM_THREADS=1, together with the kernels where both change, and the
# report says so; a user's OPENBLAS_NUM_THREADS or GOTO_NUM_THREADS stands.
KVERIFY_TEST_BLAS_PARALLEL=1 expect_exit 0 "$KV" gemm-bwd --m 40 --n 30 --k 20 --json "$TMP/blas.json"
python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["kverify"]["blas"]; assert ", one thread a call (in place of its own " in b, b' \
  "$TMP/blas.json" || fail "the pthreads build's threads were not replaced"
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  KVERIFY_TEST_BLAS_PARALLEL=1 KVERIFY_TEST_BLAS_CORE=Prescott expect_exit 0 "$KV" gemm-bwd --m 40 --n 30 --k 20 --json "$TMP/blas.json"
  python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["kverify"]["blas"]; assert "(in place of Prescott, OpenBLAS'"'"'s choice), one thread a call (in place of its own " in b, b' \
    "$TMP/blas.json" || fail "the kernels and the threads were not replaced in one start"
fi
for v in OPENBLAS_NUM_THREADS GOTO_NUM_THREADS; do
  expect_exit 0 env "$v=3" KVERIFY_TEST_BLAS_PARALLEL=1 "$KV" gemm-bwd --m 40 --n 30 --k 20 --json "$TMP/blas.json"
  python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["kverify"]["blas"]; assert "thread" not in b, b' "$TMP/blas.json" \
    || fail "$v not kept"
done
KVERIFY_TEST_BLAS_PARALLEL=2 expect_exit 0 "$KV" gemm-bwd --m 40 --n 30 --k 20 --json "$TMP/blas.json"
python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["kverify"]["blas"]; assert "thread" not in b, b' "$TMP/blas.json" \
  || fail "the OpenMP build's threads replaced"
# The float64 products' values do not depend on the number of threads (dgemm in blocks
# of 96 rows, whatever the team): the same report on 1 and 3 threads, for gemm-bwd and
# for a spec's product of two inputs (the shapes' rows split across kernel tiles when
# the blocks followed the threads).
for k in "gemm-bwd --m 1000 --n 333 --k 77" "--kernels $KV_SRC/tests/specs gemm-bwd-spec --m 1000 --n 333 --k 77"; do
  for t in 1 3; do
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=$t expect_exit 0 "$KV" $k --no-sanitize --json "$TMP/threads$t.json"
  done
  python3 - "$TMP/threads1.json" "$TMP/threads3.json" <<'PY' || fail "$k: the report depends on the number of threads"
import json, sys
a, b = (json.load(open(f))["cases"] for f in sys.argv[1:])
for c in a + b:
    c.pop("time_ms", None)
assert a == b
PY
done
# The sanitized run is left to tests/cli/sanitize.sh and the smoke suite's gemm-bwd
# sweep (cli.suite), and the stress runs to the sweep at its own 3 seeds: this sweep is
# about the plain run's numerics, at 7 seeds (2 under the sanitizers: `seeds`).
n=$(seeds 7 2)
expect_exit 0 "$KV" gemm-bwd --sweep --seeds "$n" --no-sanitize --no-stress
grep -q "^$((20 * n)) cases: $((20 * n)) passed, 0 failed, 0 errors, 0 skipped" "$TMP/out" ||
  fail "sweep: expected $((20 * n)) passing cases"
expect_stressed_sweep 60 "$KV" gemm-bwd --sweep --no-sanitize
# f16-coopmat runs on devices with NV cooperative matrices (16x16x16 f16 into
# f32, 32-wide subgroups) and is skipped, exit 77 with the reason, elsewhere.
run "$KV" gemm-bwd --m 130 --n 72 --k 33 --variant f16-coopmat --seeds 2
if "$KV" devices | awk 'NR == 2' | grep -q llvmpipe; then
  [ "$RC" = 77 ] || fail "f16-coopmat on lavapipe: exit $RC, expected 77 (skipped)"
  grep -q 'skipped: gemm-bwd: stage dA16cm needs VK_NV_cooperative_matrix' "$TMP/out" || fail "no reason for the skip"
else
  [ "$RC" = 0 ] || [ "$RC" = 77 ] || fail "f16-coopmat: exit $RC"
fi

# --scale 1e5: the f16 cast overflows. The spec oracle casts too (NaN and Inf
# match, pass); the exact oracle's rows show the Inf/NaN mismatches, unjudged.
expect_exit 0 "$KV" gemm-bwd --m 64 --n 48 --k 32 --variant f16 --scale 1e5 --oracle both --json "$TMP/f16.json"
python3 - "$TMP/f16.json" <<'PY' || fail "f16 overflow report"
import json, sys
outs = {o["name"]: o for o in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
assert outs["dC16"]["inf_match"] > 0 and outs["dC16"]["pass"] and outs["dC16"]["judged"]
assert outs["dA"]["nan_match"] + outs["dA"]["inf_match"] > 0 and outs["dA"]["pass"]
ex = outs["dC16.exact"]
assert ex["oracle"] == "exact" and not ex["judged"] and ex["inf_mismatch"] > 0 and not ex["pass"]
assert outs["dA.exact"]["nan_mismatch"] + outs["dA.exact"]["inf_mismatch"] > 0
assert outs["dB"]["pass"] and outs["dB.exact"]["pass"]   # dB takes the f32 path
PY
expect_exit 1 "$KV" gemm-bwd --m 64 --n 48 --k 32 --variant f16 --scale 1e5 --oracle exact
grep -Eq '^  dC16 .* FAIL' "$TMP/out" || fail "--oracle exact: the overflow must fail"
# --sample checks fewer elements, says so, and still catches a tile-tail bug
# (the last row and column and the tile edges are always in the sample).
expect_exit 0 "$KV" gemm-bwd --m 1000 --n 333 --k 77 --sample 300 --json "$TMP/s.json"
grep -q 'elements sampled' "$TMP/out" || fail "--sample not reported"
python3 - "$TMP/s.json" <<'PY' || fail "--sample counts"
import json, sys
for o in json.load(open(sys.argv[1]))["cases"][0]["outputs"]:
    assert o["elements"] < o["elements_total"] and o["elements"] >= 300, o
PY
mkdir -p "$TMP/mut" && cp "$KV_SRC"/shaders/* "$TMP/mut/"
patch -s -p1 -d "$TMP/mut" < "$KV_SRC/tests/mutants/gemm-tile-tail-dropped.patch" || fail "patch"
expect_exit 1 "$KV" gemm-bwd --m 1000 --n 333 --k 77 --sample 50 --shader dA="$TMP/mut/gemm_bwd_dA.comp"
expect_error 2 "--sample: 0 is out of range" "$KV" gemm-bwd --sample 0 "${J[@]}"
# --sample: every output's oracle holds only its sampled elements (dC16's whole cast goes to
# dA16's isolated input), and the report is the one the whole oracle gives on the same sample.
for v in f32 accumulate f16; do
  expect_compact_oracle "$KV" gemm-bwd --m 100 --n 33 --k 40 --sample 50 --variant $v --dist special --oracle both
done
for f in "$KV_SRC"/fixtures/gemm-bwd/*.json; do expect_exit 0 "$KV" gemm-bwd --inputs "$f"; done

# Several cases in one process: the oracle's concurrent dgemms must not share
# state (a BLAS that is not thread-safe gave wrong products from the second case).
expect_exit 0 "$KV" gemm-bwd --m 256 --n 256 --k 256 --save "$TMP/g"
gc=$(ls -d "$TMP"/g/*/)
expect_exit 0 "$KV" gemm-bwd --inputs "${gc}inputs" --candidate dA="${gc}device/dA.npy" \
  --candidate dB="${gc}device/dB.npy" --no-device --seeds 4
grep -q '^4 cases: 4 passed' "$TMP/out" || fail "repeated oracle runs disagree"
# dC16's oracle is made block by block as it is judged (never held whole), from its
# isolated input: the same report as the whole oracle's, the cast's special values and
# the stress runs included, and 16 bytes an element less at the peak (1Mi elements:
# more than 12 MB less)
expect_whole_oracle_report "$KV" gemm-bwd --variant f16 --m 33 --n 40 --k 17 --dist special --stress
expect_lower_peak KVERIFY_TEST_FULL_ORACLE $((12 * 1024)) "$KV" gemm-bwd --variant f16 --m 1024 --n 1024 --k 16 --no-stress
expect_error 2 "--m: 0 is out of range" "$KV" gemm-bwd --m 0 "${J[@]}"
expect_error 2 "--k: -3 is out of range" "$KV" gemm-bwd --k -3 "${J[@]}"
expect_error 2 "--variant: 'bf16' is not one of f32\|accumulate\|f16\|f16-coopmat" "$KV" gemm-bwd --variant bf16 "${J[@]}"
# every tensor up to 2^32-1 elements (32-bit unsigned flat indices): dC at 2^32 is
# refused by kverify, at 2^32-1 (65537 x 65535, 16 GiB of f32) it meets the device's
# largest buffer (lavapipe's 4 GiB - 1) or the host's memory
expect_error 2 "--m 65536 --n 65536 --k 512: a tensor has more than 2\^32-1 elements" "$KV" gemm-bwd --m 65536 --n 65536 "${J[@]}"
expect_error 2 "a tensor has more than 2\^32-1 elements" "$KV" gemm-bwd --m 1 --n 65537 --k 65536 "${J[@]}"
for v in f32 f16; do
  KVERIFY_TEST_MEM_AVAILABLE=10000000 expect_error 2 \
    "needs a buffer of [0-9]+ bytes or more, more than this device's largest buffer|needs at least [0-9.]+ GB of host memory .*, more than the 0\.01 GB available" \
    "$KV" gemm-bwd --m 65537 --n 65535 --k 16 --variant $v --sample 1000 "${J[@]}"
done
# the oracle's widened operands count toward the host memory a case needs: 512^3
# unsampled holds 16 bytes an element of dC and B (8.39 MB) and, for dB, 96 columns
# of A a thread (0.79 MB each), beside 16.78 MB of tensors and y and S: 26.74 MB on
# two threads. Sampled, none of them: 8.42 MB
OMP_NUM_THREADS=2 KVERIFY_TEST_MEM_AVAILABLE=26500000 expect_error 2 \
  "needs at least 26\.74 MB of host memory \(its inputs, outputs and whole oracles\)" "$KV" gemm-bwd "${J[@]}"
OMP_NUM_THREADS=2 KVERIFY_TEST_MEM_AVAILABLE=27000000 expect_exit 0 "$KV" gemm-bwd "${J[@]}"
OMP_NUM_THREADS=2 KVERIFY_TEST_MEM_AVAILABLE=8600000 expect_exit 0 "$KV" gemm-bwd --sample 1000 "${J[@]}"
expect_error 2 "--n: '1e9' is not an integer" "$KV" gemm-bwd --n 1e9 "${J[@]}"
# an 8 GiB A and B: past a binding's range, so refused where the device has no addresses; on
# lavapipe, which binds it by address (guarded), past its largest buffer (4 GiB)
KVERIFY_TEST_NO_ADDR=1 expect_error 2 "tensor B needs [0-9]+ bytes, more than this device's maxStorageBufferRange .* nor by address: this device lacks bufferDeviceAddress" \
  "$KV" gemm-bwd --m 1 --n 1 --k 2147483647 "${J[@]}"
if "$KV" devices | awk 'NR == 2 {exit $0 !~ / cpu /}'; then
  expect_error 2 "tensor A needs a buffer of 8589934588 bytes or more, more than this device's largest buffer \(maxBufferSize" \
    "$KV" gemm-bwd --m 1 --n 1 --k 2147483647 "${J[@]}"
fi
expect_error 2 "--oracle: 'fast' is not one of spec\|exact\|both" "$KV" gemm-bwd --oracle fast "${J[@]}"
expect_error 2 "--oracle exact: rmsnorm-bwd rounds only at its outputs" "$KV" rmsnorm-bwd --oracle exact "${J[@]}"
exit 0

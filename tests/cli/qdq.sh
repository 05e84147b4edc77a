# qdq-affine: the sweep for 128 cases (8 seeds; 2 under the sanitizers: `seeds`) on
# both code paths, the documented NaN and Inf behaviour, a device that flushes subnormals (emulated by a shader),
# files in and out, and bad input.
. "$(dirname "$0")/lib.bash"
J=(--json "$TMP/report.json")
expect_exit 0 "$KV" qdq-affine --groups 64
n=$(seeds 8 2)
expect_exit 0 "$KV" qdq-affine --sweep --seeds "$n"
grep -q "^$((16 * n)) cases: $((16 * n)) passed, 0 failed, 0 errors, 0 skipped" "$TMP/out" ||
  fail "sweep: expected $((16 * n)) passing cases"
expect_exit 0 "$KV" qdq-affine --sweep --seeds 2 --no-8bit-storage
grep -q '^32 cases: 32 passed' "$TMP/out" || fail "packed-word sweep"

# Exact ties with bits=1 must round away from zero (no ambiguity); with bits=4
# they are within reach of the device's division error and are counted.
expect_exit 0 "$KV" qdq-affine --groups 16 --group-size 8 --bits 1 --dist ties --json "$TMP/t1.json"
expect_exit 0 "$KV" qdq-affine --groups 16 --group-size 8 --bits 4 --dist ties --json "$TMP/t4.json"
python3 - "$TMP/t1.json" "$TMP/t4.json" <<'PY' || fail "tie counts"
import json, sys
q1 = {o["name"]: o for o in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}["q"]["codes"]
q4 = {o["name"]: o for o in json.load(open(sys.argv[2]))["cases"][0]["outputs"]}["q"]["codes"]
assert q1["tie_ambiguous"] == 0 and q1["exact"] == 128, q1
assert q4["tie_ambiguous"] == 96 and q4["unexplained"] == 0, q4   # 6 of 8 per group are ties
PY

# NaN (any sign and payload) poisons its group (scale and bias NaN, codes 0,
# forward NaN), as does a range that overflows float32; infinities clip to
# the ends of the range.
expect_exit 0 "$KV" qdq-affine --groups 12 --group-size 8 --dist nonfinite --json "$TMP/nf.json"
python3 - "$TMP/nf.json" <<'PY' || fail "non-finite groups"
import json, sys
o = {o["name"]: o for o in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
# groups 0, 4 and 5 of every 7 (NaN, overflowing range, NaN of payload 1) are poisoned: 4 of 12,
# as group 11 (4 of its 7) is all FLT_MAX: a constant group, scale 1 and bias FLT_MAX
assert o["scales"]["nan_match"] == 4 and o["biases"]["nan_match"] == 4, o["scales"]
assert o["qdq"]["nan_match"] == 32 and o["q"]["codes"]["exact"] == 96
assert o["qdq.roundtrip"]["pass"] and o["qdq.chained"]["pass"]
PY

# A device that flushes every subnormal operand and result (emulated by an
# init shader that does so explicitly) passes, and the report says where.
sed -e 's|^#include "qdq_codes.glsl"|&\nfloat ftz(float x) { return abs(x) < uintBitsToFloat(0x00800000u) ? 0.0 : x; }|' \
    -e 's|else for (uint j = 0u; j < valid; j++) v\[j\] = w1\[e0 + j\];|&\n        for (uint j = 0u; j < 4u; j++) v[j] = ftz(v[j]);|' \
    -e 's|float r = hi\[h\] - lo\[h\];|float r = ftz(hi[h] - lo[h]);|' \
    -e 's|float sc = r / float(N);|float sc = ftz(r / float(N));|' \
    -e 's|float z = (v\[j\] - b\[h\]) / s\[h\];|float z = ftz(v[j] - b[h]) / s[h];|' \
    "$KV_SRC/shaders/qdq_affine_init.comp" > "$TMP/ftz_init.comp"
[ "$(grep -c ftz "$TMP/ftz_init.comp")" -ge 5 ] || fail "the flushing shader was not made"
cp "$KV_SRC"/shaders/qdq_codes.glsl "$TMP/"
expect_exit 0 "$KV" qdq-affine --groups 64 --group-size 32 --dist subnormal --seeds 3 --shader init="$TMP/ftz_init.comp" --json "$TMP/ftz.json"
python3 - "$TMP/ftz.json" <<'PY' || fail "flushed subnormals not reported"
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
flushed = sum({o["name"]: o for o in c["outputs"]}["q"]["codes"]["flush_explained"] for c in cases)
slack = sum({o["name"]: o for o in c["outputs"]}["biases"]["slack_used"] for c in cases)
assert flushed > 0 and slack > 0, (flushed, slack)
PY
# qdq's oracle is made block by block as it is judged (never held whole): the same report
# as the whole oracle's, its chained row passing by the flushed codes' allowance.
expect_whole_oracle_report "$KV" qdq-affine --groups 64 --group-size 32 --dist subnormal --shader init="$TMP/ftz_init.comp"
python3 - "$TMP/sc.json" <<'PY' || fail "qdq.chained: the flushed codes' allowance in blocks"
import json, sys
o = {o["name"]: o for o in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
assert o["qdq.chained"]["pass"] and o["qdq.chained"]["slack_used"] > 100, o["qdq.chained"]["slack_used"]
PY

# The round-trip check's reference is made block by block too (check_block), and so
# is q's (its codes held as bytes, the forward's isolated input, not as doubles): the
# same report as the whole references', poisoned groups and infinite elements included,
# and 24 bytes an element less at the peak, beside qdq's own 32 and q's 7 (here 512Ki
# elements: more than 28 MB less).
expect_lower_peak KVERIFY_TEST_FULL_ORACLE $((28 * 1024)) "$KV" qdq-affine --groups 8192 --group-size 64 --dist nonfinite --no-stress
python3 - "$TMP/sc.json" <<'PY' || fail "qdq.roundtrip: poisoned groups in blocks"
import json, sys
o = {o["name"]: o for o in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
assert o["qdq.roundtrip"]["nan_match"] > 0 and o["qdq.roundtrip"]["pass"], o["qdq.roundtrip"]
PY

# --save, then the saved inputs and device outputs as candidates, no device.
expect_exit 0 "$KV" qdq-affine --groups 6 --group-size 2 --bits 3 --seed 4 --save "$TMP/s"
d="$TMP/s/qdq-affine_groups=6,group-size=2,bits=3,dist=normal,seed=4_"
for f in inputs/w.npy inputs/dy.npy device/q.npy device/qdq.chained.npy oracle/q.npy report.json; do
  [ -f "$d/$f" ] || fail "--save did not write $f"
done
cands=()
for o in scales biases q qdq d_scales d_biases; do cands+=(--candidate "$o=$d/device/$o.npy"); done
expect_exit 0 "$KV" qdq-affine --inputs "$d/inputs" "${cands[@]}" --no-device
grep -q 'qdq.roundtrip .* pass  (candidate)' "$TMP/out" || fail "round trip not checked on a candidate"
# A code off by 2 is unexplained: exit 1, and the worst element is shown.
python3 - "$d/device/q.npy" "$TMP/q2.npy" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[-1] = (b[-1] + 2) % 256
open(sys.argv[2], "wb").write(b)
PY
expect_exit 1 "$KV" qdq-affine --inputs "$d/inputs" --candidate q="$TMP/q2.npy"
grep -Eq '^  q .*1 unexplained.*FAIL' "$TMP/out" || fail "an unexplained code must fail"
for f in "$KV_SRC"/fixtures/qdq-affine/*.json; do expect_exit 0 "$KV" qdq-affine --inputs "$f"; done

# --sample: q and qdq (1-D) are sampled like any output, their oracle (codes with tie and
# flush alternatives, the forward, the round trip) holds only the sampled elements, q's
# whole codes going to the forward's isolated input; the report is the whole oracle's on
# the same sample, and a forward that drops every fourth element's bias still fails qdq.
for dist in ties nonfinite subnormal; do
  expect_compact_oracle "$KV" qdq-affine --groups 300 --group-size 64 --bits 4 --dist $dist --sample 100
done
mkdir -p "$TMP/mutf" && cp "$KV_SRC"/shaders/* "$TMP/mutf/"
sed -i 's/float(q.w) \* s1 + b1)/float(q.w) * s1)/' "$TMP/mutf/qdq_affine_forward.comp"
grep -q 'float(q.w) \* s1)' "$TMP/mutf/qdq_affine_forward.comp" || fail "planting the forward bug"
expect_exit 1 "$KV" qdq-affine --groups 300 --group-size 64 --sample 100 --shader forward="$TMP/mutf/qdq_affine_forward.comp"
grep -Eq '^  qdq +.* FAIL  \([0-9]+ of 19200 elements sampled' "$TMP/out" || { cat "$TMP/out"; fail "--sample: the forward bug does not fail qdq"; }

# Bad input: one line, exit 2, nothing written.
expect_error 2 "--group-size 48 is not a power of two" "$KV" qdq-affine --group-size 48 "${J[@]}"
expect_error 2 "--group-size: 2048 is out of range" "$KV" qdq-affine --group-size 2048 "${J[@]}"
expect_error 2 "--group-size: 1 is out of range" "$KV" qdq-affine --group-size 1 "${J[@]}"
expect_error 2 "--bits: 0 is out of range" "$KV" qdq-affine --bits 0 "${J[@]}"
expect_error 2 "--bits: 9 is out of range" "$KV" qdq-affine --bits 9 "${J[@]}"
expect_error 2 "--dist: 'cauchy' is not one of" "$KV" qdq-affine --dist cauchy "${J[@]}"
# up to 2^32 - 1024 elements (the shaders' unsigned indices with a last tile's
# 1020 past the end): 2^32 and 2^32 - 1022 are refused; 2^31 and 2^32 - 1024 pass
# the size check and meet the next one (lavapipe's largest buffer is 4 GiB - 1)
expect_error 2 "--groups 4194304 x --group-size 1024 = 4294967296 elements, more than 2\^32-1024" \
  "$KV" qdq-affine --groups 4194304 --group-size 1024 "${J[@]}"
expect_error 2 "= 4294966274 elements, more than 2\^32-1024" "$KV" qdq-affine --groups 2147483137 --group-size 2 "${J[@]}"
for big in "--groups 33554432 --group-size 64" "--groups 4194303 --group-size 1024" "--groups 2147483136 --group-size 2"; do
  KVERIFY_TEST_MEM_AVAILABLE=10000000 expect_error 2 \
    "needs a buffer of [0-9]+ bytes or more, more than this device's largest buffer|needs at least [0-9.]+ GB of host memory .*, more than the 0\.01 GB available" \
    "$KV" qdq-affine $big "${J[@]}"
done
mkdir -p "$TMP/odd"
cp "$d/inputs/w.npy" "$d/inputs/dy.npy" "$TMP/odd/"   # 12 elements
expect_error 2 "w has 12 elements, not a multiple of --group-size 8" "$KV" qdq-affine --inputs "$TMP/odd" --group-size 8 "${J[@]}"
expect_exit 0 "$KV" qdq-affine --inputs "$TMP/odd" --group-size 4
grep -q 'groups=3,group-size=4' "$TMP/out" || fail "groups not inferred from w"

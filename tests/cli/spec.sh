# Spec kernels: softmax-bwd (shipped as a spec) end to end, a user's spec
# folder (--kernels, KVERIFY_KERNELS), and bad specs (one line, exit 3).
. "$(dirname "$0")/lib.bash"
S="$KV_SRC/shaders"

# Listed like a built-in, with its interface derived from the spec.
expect_exit 0 "$KV" list
grep -q '^softmax-bwd: softmax backward' "$TMP/out" || fail "list: no softmax-bwd"
expect_exit 0 "$KV" list --abi
grep -q '^  stage dx  (softmax_bwd.comp, workgroup 256x1x1)' "$TMP/out" || fail "list --abi: softmax-bwd's stage"
grep -q 'push constants (8 bytes): uint rows; uint dim;' "$TMP/out" || fail "list --abi: softmax-bwd's push constants"

# The sweep passes (its stress runs included); the fixtures pass, their
# expected outputs (numpy, scripts/gen-fixtures) judged beside.
expect_exit 0 "$KV" softmax-bwd --sweep --seeds 1
grep -q '^9 cases: 9 passed' "$TMP/out" || fail "softmax-bwd sweep"
for f in "$KV_SRC"/fixtures/softmax-bwd/*.json; do
  expect_exit 0 "$KV" softmax-bwd --inputs "$f"
  grep -Eq '^  dx\.expected .* pass  \(expected\)' "$TMP/out" || fail "$f: expected dx not judged"
done

# --save, then --inputs and --candidate on the saved case: the same verdict
# without a device.
expect_exit 0 "$KV" softmax-bwd --rows 5 --dim 33 --seed 4 --save "$TMP/saved"
d="$TMP/saved/softmax-bwd_rows=5,dim=33,seed=4_"
for f in inputs/y.npy inputs/dy.npy device/dx.npy oracle/dx.npy; do [ -f "$d/$f" ] || fail "--save: no $f"; done
expect_exit 0 "$KV" softmax-bwd --inputs "$d/inputs" --candidate dx="$d/device/dx.npy" --no-device
grep -Eq '^  dx .* pass  \(candidate\)' "$TMP/out" || fail "candidate round trip"

# A planted bug (the row sum drops its last term) fails, its worst element named.
cp "$S/softmax_bwd.comp" "$S/reduce.glsl" "$TMP/"
sed -i 's/for (uint i = gl_LocalInvocationID.x; i < p.dim; i += KV_WG) acc +=/for (uint i = gl_LocalInvocationID.x; i + 1u < p.dim; i += KV_WG) acc +=/' \
  "$TMP/softmax_bwd.comp"
grep -q 'i + 1u < p.dim' "$TMP/softmax_bwd.comp" || fail "the planted bug did not apply"
expect_exit 1 "$KV" softmax-bwd --rows 3 --dim 257 --shader dx="$TMP/softmax_bwd.comp"
grep -Eq '^  dx .*\[[0-9]+,[0-9]+\] .* FAIL' "$TMP/out" || fail "planted bug: no failing dx row with its worst element"

# A foreign shader's own interface (--abi) maps onto the spec's stage: its
# bindings swapped and its push block renamed; without the file it fails.
sed -e 's/binding = 0) readonly buffer Y/binding = 9) readonly buffer Y/' -e 's/binding = 1) readonly buffer DY/binding = 0) readonly buffer DY/' \
    -e 's/binding = 9) readonly buffer Y/binding = 1) readonly buffer Y/' \
    -e 's/uniform Push { uint rows; uint dim; } p;/uniform Push { uint cols; uint nrows; } q;/' \
    -e 's/p\.rows/q.nrows/g' -e 's/p\.dim/q.cols/g' "$S/softmax_bwd.comp" > "$TMP/foreign.comp"
cat > "$TMP/foreign.abi.json" <<'EOF'
{"stage": "dx",
 "bindings": [{"binding": 0, "tensor": "dy"}, {"binding": 1, "tensor": "y"}, {"binding": 2, "tensor": "dx"}],
 "push": [{"name": "cols", "type": "uint", "value": "dim"}, {"name": "nrows", "type": "uint", "value": "rows"}],
 "dispatch": ["min(rows, 65535)", "1", "1"]}
EOF
expect_exit 0 "$KV" softmax-bwd --rows 70 --dim 300 --shader dx="$TMP/foreign.comp" --abi "$TMP/foreign.abi.json"
expect_exit 1 "$KV" softmax-bwd --rows 70 --dim 300 --shader dx="$TMP/foreign.comp"

# --sample and --bench work as for a built-in; mutate kills every bound, step,
# index and dropped-term mutant of the shader on one seed of its sweep.
expect_exit 0 "$KV" softmax-bwd --rows 300 --dim 500 --sample 200
grep -Eq 'of 150000 elements sampled' "$TMP/out" || fail "--sample"
expect_exit 0 "$KV" softmax-bwd --rows 64 --dim 256 --bench 2 --bench-warmup 0
grep -Eq '^  bench dx +min' "$TMP/out" || fail "--bench"
expect_exit 0 "$KV" mutate softmax-bwd --operators bound,step,index,drop --seeds 1
grep -Eq '^mutation score 100.0%' "$TMP/out" || fail "mutate softmax-bwd"

# What a spec oracle holds. Intermediates computed where they are read (layernorm-bwd's
# xh and g, never stored) give the report that stored ones give, and keep a case to its
# outputs' arrays: 2 x 48 bytes an element less than stored (here 512Ki elements, so more
# than 35 MB less at the peak). With --sample, an output no statement reads holds and
# computes its sampled elements alone, and reports what the whole oracle reports on the
# same sample (dw and db are sampled too).
expect_lower_peak KVERIFY_TEST_STORE_TEMPS $((35 * 1024)) "$KV" layernorm-bwd --rows 128 --dim 4096 --no-stress
# gelu-bwd reads its temp t three times in gt, at the same elements (computed once per
# block of them): the same report as stored.
expect_same_report 0 KVERIFY_TEST_STORE_TEMPS "$KV" gelu-bwd --n 5000 --no-stress
expect_compact_oracle "$KV" layernorm-bwd --rows 300 --dim 1000 --sample 500
# A prepare statement is evaluated for its values alone (where() and && short of the
# part nothing needs): the inputs it makes are, byte for byte, those that every part's
# evaluation makes (KVERIFY_TEST_FULL_PREPARE=1). --no-device --save writes them (exit 77).
for k in "softmax-bwd --rows 33 --dim 1000" "layernorm-bwd --rows 9 --dim 333 --shift 1000" \
  "adamw-step --n 5000 --dist sparse" "cross-entropy-bwd --rows 40 --classes 300" "rope-bwd --seq 20 --heads 2 --half 16"; do
  rm -rf "$TMP/pv" "$TMP/pf"
  "$KV" $k --no-device --save "$TMP/pv" > /dev/null 2>&1
  [ $? = 77 ] || fail "$k --no-device --save: not exit 77"
  KVERIFY_TEST_FULL_PREPARE=1 "$KV" $k --no-device --save "$TMP/pf" > /dev/null 2>&1
  n=0
  for f in "$TMP"/pv/*/inputs/*.npy; do
    cmp -s "$f" "$TMP/pf/${f#"$TMP"/pv/}" || fail "$k: ${f##*/} differs from every part's evaluation"
    n=$((n + 1))
  done
  [ $n -ge 2 ] || fail "$k: $n inputs saved"
done
# The error parts the evaluator knows to be 0 before a block is evaluated (lam, chn:
# specs/ev_zero.c), which it leaves unwritten: with KVERIFY_TEST_EV_ZEROS=1 every part
# is written and each one known to be 0 is checked to be (abort otherwise), on every
# spec kernel's sweep; the reports are the same as with them left unwritten. Sanitized,
# four kernels that between them have every kind of read the rules tell apart (a sum's
# lam, stored and virtual temps, another stage's output read isolated, chained rows).
all=$("$KV" list | sed -n 's/^\([a-z0-9-]*\): .*a spec kernel)$/\1/p')
n=0
for k in $(seeds "$all" "cross-entropy-bwd layernorm-bwd-recompute adamw-step gelu-bwd"); do
  expect_same_report 0 KVERIFY_TEST_EV_ZEROS "$KV" "$k" --sweep --seeds 1 --no-stress --no-sanitize
  n=$((n + 1))
done
[ $n -ge "$(seeds 11 4)" ] || fail "the parts known to be 0 checked in $n spec kernels' sweeps"
# adamw-step's m_out and v_out, outputs that its p_out reads at the same elements (in
# their own stage), are computed where read and judged block by block as they are made:
# the report that stored ones give, and 2 x 48 bytes an element less (1Mi elements).
expect_lower_peak KVERIFY_TEST_STORE_TEMPS $((80 * 1024)) "$KV" adamw-step --no-stress
expect_same_report 0 KVERIFY_TEST_STORE_TEMPS "$KV" adamw-step --n 5000 --dist nonfinite --no-stress
expect_compact_oracle "$KV" adamw-step --n 20000 --sample 500 --dist sparse
# Unsampled, an output no statement reads is made block by block as it is judged, never
# held whole: the same report as the whole oracle's, its chained rows included (in
# layernorm-bwd-recompute dx, dw and db read the stats stage's mean and rstd), also with
# --dist nonfinite. (The stress runs' rows are judged through the same blocks.)
expect_whole_oracle_report "$KV" layernorm-bwd-recompute --rows 9 --dim 333 --dist nonfinite
# An output made in blocks with a chained row (cross-entropy-bwd's dlogits reads the count
# stage's valid; layernorm-bwd-recompute's dx, dw and db its mean and rstd) has both rows
# judged in one pass, each block made once: the same rows, in the same order, as judged
# one after the other (KVERIFY_TEST_NO_PAIR=1): one chunk (the exact p99), several chunks,
# and on 4 threads fewer chunks than threads (made whole first), with the stress runs.
expect_same_report 0 KVERIFY_TEST_NO_PAIR "$KV" layernorm-bwd-recompute --rows 9 --dim 333 --dist nonfinite
expect_same_report 0 KVERIFY_TEST_NO_PAIR "$KV" layernorm-bwd-recompute --rows 40 --dim 3000 --stress --no-sanitize
grep -q '"dx.chained"' "$TMP/sc.json" || fail "layernorm-bwd-recompute: no chained row for dx"
expect_same_report 0 KVERIFY_TEST_NO_PAIR "$KV" cross-entropy-bwd --rows 64 --classes 2000 --smoothing 0.1
OMP_NUM_THREADS=4 expect_same_report 0 KVERIFY_TEST_NO_PAIR "$KV" cross-entropy-bwd-bf16 --rows 64 --classes 2000
# A product of two inputs stays whole, made by BLAS (its sums in BLAS's order, not the
# lanes'): gemm-bwd written as a spec reports what the whole oracle reports.
expect_whole_oracle_report "$KV" --kernels "$KV_SRC/tests/specs" gemm-bwd-spec --m 40 --n 33 --k 300
# A stats stage whose rstd is off by 1.2e-5 relative, within its bound: the chained rows
# pass by the allowance for it (elements within bound by a legal upstream choice), made
# block by block as the whole oracle makes it.
cp "$S/reduce.glsl" "$TMP/"
sed 's|rstd\[row\] = inversesqrt(var + p.eps);|rstd[row] = inversesqrt(var + p.eps) * (1.0 + ((row \& 1u) == 0u ? 1.2e-5 : -1.2e-5));|' \
  "$S/layernorm_bwd_stats.comp" > "$TMP/stats.comp"
grep -q '1.2e-5' "$TMP/stats.comp" || fail "planting the rstd offset"
expect_whole_oracle_report "$KV" layernorm-bwd-recompute --rows 33 --dim 1000 --shader stats="$TMP/stats.comp"
python3 - "$TMP/sc.json" <<'PY' || fail "the chained allowance of a spec kernel's blocks"
import json, sys
o = {x["name"]: x for x in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
assert o["rstd"]["pass"] and o["rstd"]["max_bound_ratio"] > 0.5, o["rstd"]["max_bound_ratio"]
for n in ("dx.chained", "dw.chained"):
    assert o[n]["pass"] and o[n]["slack_used"] > 100, (n, o[n]["pass"], o[n]["slack_used"])
PY
# ... and judged in one pass with the isolated rows, the chained rows reading that allowance
# from the blocks beside the isolated rows' (70000 elements: several chunks on 2 threads;
# on 4, fewer chunks than threads, made whole first): the rows judged one after the other.
for th in 2 4; do
  OMP_NUM_THREADS=$th expect_same_report 0 KVERIFY_TEST_NO_PAIR "$KV" layernorm-bwd-recompute --rows 70 --dim 1000 \
    --shader stats="$TMP/stats.comp" --no-stress
  python3 - "$TMP/sc.json" <<'PY' || fail "paired rows on $th threads: the chained allowance"
import json, sys
o = {x["name"]: x for x in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
assert o["dx.chained"]["pass"] and o["dx.chained"]["slack_used"] > 100 and o["dx"]["slack_used"] == 0
PY
done
# Blocks carry the legal overflows (gelu-bwd's terms past f32's range) as the whole does.
expect_whole_oracle_report "$KV" gelu-bwd --scale 1e30 --n 1000 --no-stress
grep -q '"overflow_ok":.1000' "$TMP/sc.json" || fail "gelu-bwd --scale 1e30: no legal overflow"
expect_compact_oracle "$KV" layernorm-bwd --rows 300 --dim 1000 --sample 500 --dist nonfinite

# A user's folder: a spec and its shader, found with --kernels and with
# KVERIFY_KERNELS; a case's command repeats --kernels.
mkdir "$TMP/mine"
cp "$S/softmax_bwd.comp" "$S/reduce.glsl" "$TMP/mine/"
sed 's/"kernel": "softmax-bwd"/"kernel": "my-softmax"/' "$S/softmax_bwd.kernel.json" > "$TMP/mine/my.kernel.json"
expect_exit 0 "$KV" --kernels "$TMP/mine" my-softmax --rows 3 --dim 50 --json "$TMP/my.json"
grep -q '^1 cases: 1 passed' "$TMP/out" || fail "--kernels: my-softmax"
grep -q -- "--kernels $TMP/mine my-softmax" "$TMP/my.json" || fail "the case's command lacks --kernels"
KVERIFY_KERNELS="/nonexistent-but-optional:$TMP/mine" expect_error 2 'KVERIFY_KERNELS: /nonexistent' "$KV" list
KVERIFY_KERNELS="$TMP/mine" expect_exit 0 "$KV" my-softmax --rows 2 --dim 9
expect_error 2 '^kverify: --kernels /nonexistent: not a folder' "$KV" --kernels /nonexistent list
expect_error 2 '^kverify: --kernels needs a folder' "$KV" list --kernels

# Bad specs: one line naming the file and what is wrong, exit 3.
bad() { # bad NAME REGEX: the spec in $TMP/spec.json, in a folder of its own
  mkdir -p "$TMP/bad_$1"
  cp "$S/softmax_bwd.comp" "$S/reduce.glsl" "$TMP/bad_$1/"
  cp "$TMP/spec.json" "$TMP/bad_$1/b.kernel.json"
  expect_error 3 "^kverify: .*/bad_$1/b.kernel.json: (at the default parameters: )?$2" "$KV" --kernels "$TMP/bad_$1" list
}
spec() { # spec MATH [DTYPE]: softmax-bwd's spec named bad, its math replaced (and y's dtype)
  sed -e 's/"kernel": "softmax-bwd"/"kernel": "bad"/' \
      -e "s/{\"name\": \"y\", \"role\": \"input\", \"dtype\": \"f32\"/{\"name\": \"y\", \"role\": \"input\", \"dtype\": \"${2:-f32}\"/" \
    "$S/softmax_bwd.kernel.json" | awk -v math="$1" '
      /"math": \[/ { print "  \"math\": [" math "],"; skip = 1; next }
      skip && /\],/ { skip = 0; next }
      !skip { print }' > "$TMP/spec.json"
}
echo '{"kernel": "x", ' > "$TMP/spec.json"; bad json 'not valid JSON'
spec '"s[r] = sum(c in 0..dim, y[r, c] * dy[r, c])", "dx[r, c] = y[r, c] * (dy[r, c] - t[r])"'
bad unknown_name "math\[1\] column 34: unknown name 't'"
spec '"dx[r, c] = y[c, r] * dy[r, c]"'
bad shape "math\[0\] column 12: index r runs over 512, but y's index 2 has extent 4096"
spec '"dx[r, c] = y[r, c] * sum(k in 0..0, dy[r, k])"'
bad empty_sum 'math\[0\] column 22: a reduction over nothing \(0\.\.0\)'
spec '"dx[r, c] = y[r, c + 1] * dy[r, c]"'
bad oob 'math\[0\] column 12: index 2 of y runs over 1\.\.4096, outside \[0, 4096\)'
spec '"dx[r, c] = y[r, c] * dy[r, c]"' f64
bad dtype 'tensors\[0\]: unknown dtype "f64"'
spec '"a[r] = b[r] + y[r, 0]", "b[r] = a[r]", "dx[r, c] = a[r] * dy[r, c]"'
bad cycle 'math: a cycle between arrays: (a -> b -> a|b -> a -> b)'
spec '"dx[r, c] = y[r, c] * dy[r, c"'
bad syntax "math\[0\] column 29: expected ']'"
spec '"dx[r, c] = y[r, c] * dy[r, c]", "dx[r, c] = 1"'
bad twice 'math\[1\]: "dx" is defined twice'
spec '"dx[r, c] = y[r, c] * unknownfn(dy[r, c])"'
bad function "math\[0\] column 22: unknown function 'unknownfn'"
cp "$S/softmax_bwd.kernel.json" "$TMP/spec.json"; bad taken 'kernel "softmax-bwd" is already defined'
sed -e 's/"kernel": "softmax-bwd"/"kernel": "bad"/' -e 's/"stages": \[/"stagez": [/' "$S/softmax_bwd.kernel.json" > "$TMP/spec.json"
bad unknown_field 'stagez: unknown field'
sed -e 's/"kernel": "softmax-bwd"/"kernel": "bad"/' -e 's/"shader": "softmax_bwd.comp"/"shader": "missing.comp"/' \
  "$S/softmax_bwd.kernel.json" > "$TMP/spec.json"
bad shader 'stages\[0\]: shader: cannot read .*/missing.comp'

# A temp read twice at once in a block: at its own elements and at column 0 (the same
# first element where c = 0, others not); each read its own values, as stored.
spec '"t[r, c] = y[r, c] * dy[r, c]", "dx[r, c] = t[r, c] + 2 * t[r, min(c, 0)]"'
mkdir -p "$TMP/twice" && cp "$S/softmax_bwd.comp" "$S/reduce.glsl" "$TMP/twice/" && cp "$TMP/spec.json" "$TMP/twice/t.kernel.json"
expect_same_report 1 KVERIFY_TEST_STORE_TEMPS "$KV" --kernels "$TMP/twice" bad --rows 3 --dim 300 --no-stress
exit 0

# The training spec kernels (shaders/*.kernel.json): each one's sweep (one
# seed) and fixtures pass; a tensor past 2^32-1 elements is refused; a planted
# one-line bug in each one's shader fails with its worst element named; a case
# saved with --save is judged again from its files, the device's outputs given
# as candidates.
. "$(dirname "$0")/lib.bash"
S="$KV_SRC/shaders"
kernels="silu-bwd swiglu-bwd gelu-bwd cross-entropy-bwd cross-entropy-bwd-bf16 layernorm-bwd layernorm-bwd-recompute rope-bwd adamw-step adamw-step-bf16"
for k in $kernels; do
  expect_exit 0 "$KV" "$k" --sweep --seeds 1 --no-stress
  grep -Eq '^[0-9]+ cases: [0-9]+ passed, 0 failed, 0 errors' "$TMP/out" || fail "$k: sweep"
  for f in "$KV_SRC/fixtures/$k"/*.json; do
    [ -e "$f" ] || continue
    expect_exit 0 "$KV" "$k" --inputs "$f"
    grep -Eq '\.expected .* pass  \(expected\)' "$TMP/out" || fail "$f: expected outputs not judged"
  done
done

# sizes: a tensor holds up to 2^32-1 elements (the shaders' unsigned indices;
# their grid-stride step ends the loop where it would wrap past 2^32), one more
# is refused; 2^31 and 2^32-1 elements pass the size check and meet the next
# one: the device's largest buffer (lavapipe's is 4 GiB - 1), or where a device
# has larger ones, the memory check (the memory available replaced by the test hook)
J=(--json "$TMP/report.json")
expect_error 2 "cross-entropy-bwd-bf16: tensor logits has 4294967296 elements, more than 2\^32-1" \
  "$KV" cross-entropy-bwd-bf16 --rows 16384 --classes 262144 "${J[@]}"
expect_error 2 "--n: 4294967296 is out of range \[1, 4294967295\]" "$KV" gelu-bwd --n 4294967296 "${J[@]}"
for big in "cross-entropy-bwd-bf16 --rows 16384 --classes 131072" "gelu-bwd --n 4294967295" "swiglu-bwd --n 3000000000"; do
  KVERIFY_TEST_MEM_AVAILABLE=10000000 expect_error 2 \
    "needs a buffer of [0-9]+ bytes or more, more than this device's largest buffer|needs at least [0-9.]+ GB of host memory .*, more than the 0\.01 GB available" \
    "$KV" $big "${J[@]}"
done

# bug FILE SED KERNEL ARGS...: the shader FILE with one line changed by SED fails.
bug() {
  local file=$1 expr=$2 kernel=$3 stage=$4; shift 4
  cp -n "$S"/*.glsl "$TMP/"
  cp "$S/$file" "$TMP/"
  sed -i "$expr" "$TMP/$file"
  cmp -s "$S/$file" "$TMP/$file" && fail "$file: the planted bug did not apply"
  expect_exit 1 "$KV" "$kernel" "$@" --shader "$stage=$TMP/$file"
  grep -Eq '\[[0-9,]+\] .* FAIL' "$TMP/out" || fail "$kernel: planted bug, no failing row with its worst element"
}
bug silu_bwd.comp 's/(1.0 + v \* (1.0 - s))/(1.0 + v * (1.0 + s))/' silu-bwd dx --n 1000
bug swiglu_bwd.comp 's/dup\[i\] = d \* g \* s;/dup[i] = d * s;/' swiglu-bwd dgate_dup --n 1000
bug gelu_bwd.comp 's/(1.0 + 3.0 \* 0.044715 \* x2)/(1.0 + 0.044715 * x2)/' gelu-bwd dx --n 1000
cp "$S/cross_entropy_bwd.glsl" "$TMP/ce_bug.glsl" # the mean's division forgotten
sed -i 's|STORE(base + c, (exp(LOAD(base + c) - m) / z - target) / n);|STORE(base + c, exp(LOAD(base + c) - m) / z - target);|' "$TMP/ce_bug.glsl"
bug cross_entropy_bwd_dx.comp 's/#include "cross_entropy_bwd.glsl"/#include "ce_bug.glsl"/' cross-entropy-bwd dx --rows 6 --classes 100
bug layernorm_bwd_dx.comp 's/- mg - xh \* mgx)/- mg + xh * mgx)/' layernorm-bwd dx --rows 5 --dim 300
bug rope_bwd.comp 's/sgn = j < p.half_ ? 1.0 : -1.0;/sgn = j <= p.half_ ? 1.0 : -1.0;/' rope-bwd dx --seq 3 --heads 2 --half 8
# the variants: the bf16 cross-entropy with the same forgotten division; the
# recomputed layernorm's stats with the variance's division forgotten; the
# bf16-parameter AdamW with the weight decay applied twice
bug cross_entropy_bwd_bf16_dx.comp 's/#include "cross_entropy_bwd.glsl"/#include "ce_bug.glsl"/' cross-entropy-bwd-bf16 dx --rows 6 --classes 101
bug layernorm_bwd_stats.comp 's|const float var = kv_wg_sum(q) / float(p.dim);|const float var = kv_wg_sum(q);|' layernorm-bwd-recompute stats --rows 5 --dim 300
cp "$S/adamw_step.glsl" "$TMP/adamw_bug.glsl"
sed -i 's|const float pi = PLOAD(i) \* p.decay;|const float pi = PLOAD(i) * p.decay * p.decay;|' "$TMP/adamw_bug.glsl"
bug adamw_step_bf16.comp 's/#include "adamw_step.glsl"/#include "adamw_bug.glsl"/' adamw-step-bf16 step --n 3000 --lr 0.1 --weight-decay 0.1
cp "$S/adamw_step.comp" "$S/adamw_step.glsl" "$TMP/" && sed -i 's|(sqrt(vi) / p.bc2_sqrt + p.eps)));|(sqrt(vi) / p.bc2_sqrt)));|' "$TMP/adamw_step.glsl"
expect_exit 1 "$KV" adamw-step --n 3000 --dist sparse --gscale 1e-9 --shader step="$TMP/adamw_step.comp"
grep -Eq '^  p_out .*\[[0-9]+\] .* FAIL' "$TMP/out" || fail "adamw-step: the dropped eps not caught"

# --save, then the case again from its files with the device's outputs as
# candidates (integer labels; three outputs; a bf16 output).
for spec in "silu-bwd --n 300" "swiglu-bwd --n 300" "gelu-bwd --n 300 --approximate none" \
            "cross-entropy-bwd --rows 9 --classes 50 --smoothing 0.1" "cross-entropy-bwd-bf16 --rows 9 --classes 51" \
            "layernorm-bwd --rows 5 --dim 70" "layernorm-bwd-recompute --rows 5 --dim 70" \
            "rope-bwd --seq 3 --heads 2 --half 8 --layout interleaved" "adamw-step --n 300 --coefficients device" \
            "adamw-step-bf16 --n 301"; do
  set -- $spec
  k=$1
  rm -rf "$TMP/saved"
  expect_exit 0 "$KV" $spec --save "$TMP/saved"
  d=$(ls -d "$TMP/saved"/*/)
  cands=""
  for o in "$d"/device/*.npy; do
    n=$(basename "$o" .npy)
    case $n in *.chained) continue ;; esac
    cands="$cands --candidate $n=$o"
  done
  expect_exit 0 "$KV" "$k" --inputs "$d/inputs" $cands --no-device
  grep -Eq '\(candidate\)' "$TMP/out" || fail "$k: candidates not judged"
  grep -q ' FAIL' "$TMP/out" && fail "$k: a saved device output fails as a candidate"
done
exit 0

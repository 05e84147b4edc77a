# --shader replaces a stage: the built-in sources given as user files pass,
# as GLSL compiled at run time and as precompiled SPIR-V.
. "$(dirname "$0")/lib.bash"
cp "$KV_SRC"/shaders/* "$TMP/"
expect_exit 0 "$KV" rmsnorm-bwd --rows 7 --dim 300 --shader r="$TMP/rmsnorm_bwd_r.comp" \
  --shader dx="$TMP/rmsnorm_bwd_dx.comp" --shader dw="$TMP/rmsnorm_bwd_dw.comp"
expect_exit 0 "$KV" rmsnorm-bwd --rows 7 --dim 300 --no-subgroup --shader r="$TMP/rmsnorm_bwd_r.comp"
if command -v glslc >/dev/null; then
  glslc --target-env=vulkan1.2 -o "$TMP/dx.spv" "$TMP/rmsnorm_bwd_dx.comp" || fail "glslc"
  expect_exit 0 "$KV" rmsnorm-bwd --rows 7 --dim 300 --shader dx="$TMP/dx.spv"
  # glslc -Os drops the push-constant members a shader never reads (cast reads
  # m and n, not k; forward reads groups and group_size, not bits): a block
  # shorter than the stage's, which is valid Vulkan and must pass, sanitized too
  glslc --target-env=vulkan1.2 -Os -DKV_SUBGROUP=1 -o "$TMP/cast.spv" "$TMP/gemm_bwd_cast.comp" || fail "glslc"
  spirv-dis "$TMP/cast.spv" | grep -q 'OpMemberDecorate %[_a-z0-9]* 1 Offset 4' || fail "cast.spv: no push block"
  ! spirv-dis "$TMP/cast.spv" | grep -q 'OpMemberDecorate %[_a-z0-9]* 2 Offset 8' || fail "-Os kept cast's k"
  expect_exit 0 "$KV" gemm-bwd --m 33 --n 40 --k 17 --variant f16 --shader cast="$TMP/cast.spv" --sanitize
  glslc --target-env=vulkan1.2 -Os -DKV_SUBGROUP=1 -DKV_INT8=1 -o "$TMP/fwd.spv" "$TMP/qdq_affine_forward.comp" || fail "glslc"
  expect_exit 0 "$KV" qdq-affine --groups 33 --group-size 64 --bits 4 --shader forward="$TMP/fwd.spv" --stress
fi
# A variant's stage is built from its .comp with the variant's define (a-bf16:
# KV_ABF16, A read as bf16 words): given as a user file, the source is built the
# same way, in the plain run, the subgroups-reversed stress run and mutate alike
# (without the define it would read A as f32 and fail with NaNs).
expect_exit 0 "$KV" gdn-wy-bwd --variant a-bf16 --seq 70 --heads 2 --kv-heads 1 --dk 32 --dv 40 --stress \
  --shader wy_ab="$TMP/gdn_wy_bwd_wy.comp"
grep -q '^1 cases: 1 passed' "$TMP/out" || fail "gdn-wy-bwd a-bf16: the user's wy_ab did not pass"
expect_exit 0 "$KV" gdn-wu --variant a-bf16 --seq 70 --heads 2 --kv-heads 1 --dk 32 --dv 40 --stress \
  --shader u_ab="$TMP/gdn_wu_u.comp" --shader w_ab="$TMP/gdn_wu_w.comp"
grep -q '^1 cases: 1 passed' "$TMP/out" || fail "gdn-wu a-bf16: the user's u_ab, w_ab did not pass"
expect_exit 0 "$KV" mutate gdn-wy-bwd --variant a-bf16 --shader wy_ab="$TMP/gdn_wy_bwd_wy.comp" --stage wy_ab \
  --lines gdn_wy_bwd_wy.comp:140 --operators assign --seeds 1
grep -Eq '^  stage wy_ab .* [1-9][0-9]* mutants: [1-9][0-9]* killed' "$TMP/out" || fail "mutate: the user's wy_ab"
exit 0

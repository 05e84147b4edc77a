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
fi
exit 0

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
  # Vulkan 1.3's SPIR-V 1.6: glslc gives the workgroup size as LocalSizeId, which
  # needs maintenance4 (was: exit 3, "declares no workgroup size")
  glslc --target-env=vulkan1.3 -O -DKV_SUBGROUP=1 -o "$TMP/dx16.spv" "$TMP/rmsnorm_bwd_dx.comp" || fail "glslc"
  spirv-dis "$TMP/dx16.spv" | grep -q 'OpExecutionModeId %[a-z0-9_]* LocalSizeId' || fail "dx16.spv: no LocalSizeId"
  expect_exit 0 "$KV" rmsnorm-bwd --rows 7 --dim 300 --shader dx="$TMP/dx16.spv" --sanitize --stress
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
# A user's module may declare what the built-in shaders do not: doubles, float
# atomics, the Vulkan memory model. The device enables every such feature it
# has (without it, the module is invalid: CI's validation-layer run fails these
# with exit 4). r as a float64 sum, and as a shared float atomicAdd:
cat > "$TMP/r64.comp" <<'GLSL'
#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer XB { float X[]; };
layout(std430, set = 0, binding = 1) writeonly buffer RB { float R[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } p;
void main()
{
    for (uint row = gl_GlobalInvocationID.x; row < p.rows; row += gl_NumWorkGroups.x * 64u) {
        double acc = 0.0lf;
        for (uint i = 0u; i < p.dim; i++) acc += double(X[row * p.dim + i]) * double(X[row * p.dim + i]);
        R[row] = float(1.0lf / sqrt(acc / double(p.dim) + double(p.eps)));
    }
}
GLSL
expect_exit 0 "$KV" rmsnorm-bwd --rows 13 --dim 300 --shader r="$TMP/r64.comp" --sanitize
cat > "$TMP/ratomic.comp" <<'GLSL'
#version 450
#extension GL_EXT_shader_atomic_float : require
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer XB { float X[]; };
layout(std430, set = 0, binding = 1) writeonly buffer RB { float R[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } p;
shared float total;
void main()
{
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        if (gl_LocalInvocationID.x == 0u) total = 0.0;
        barrier();
        float acc = 0.0;
        for (uint i = gl_LocalInvocationID.x; i < p.dim; i += 64u) acc += X[row * p.dim + i] * X[row * p.dim + i];
        atomicAdd(total, acc);
        barrier();
        if (gl_LocalInvocationID.x == 0u) R[row] = inversesqrt(total / float(p.dim) + p.eps);
        barrier();
    }
}
GLSL
expect_exit 0 "$KV" rmsnorm-bwd --rows 13 --dim 300 --shader r="$TMP/ratomic.comp" --stress
if command -v glslc >/dev/null; then # dx's shared-memory build under the Vulkan memory model
  glslc --target-env=vulkan1.2 -O -o "$TMP/dx-sh.spv" "$TMP/rmsnorm_bwd_dx.comp" || fail "glslc"
  spirv-opt --target-env=vulkan1.2 --upgrade-memory-model "$TMP/dx-sh.spv" -o "$TMP/dx-vmm.spv" || fail "spirv-opt"
  spirv-dis "$TMP/dx-vmm.spv" | grep -q 'OpMemoryModel Logical Vulkan' || fail "dx-vmm.spv: not the Vulkan memory model"
  expect_exit 0 "$KV" rmsnorm-bwd --rows 13 --dim 300 --no-subgroup --shader dx="$TMP/dx-vmm.spv" --sanitize
fi
if command -v glslc >/dev/null; then # HLSL: an entry point not named main; r one thread a row
  cat > "$TMP/r.hlsl" <<'HLSL'
struct Push { uint rows; uint dim; float eps; };
[[vk::push_constant]] ConstantBuffer<Push> p;
[[vk::binding(0, 0)]] StructuredBuffer<float> X;
[[vk::binding(1, 0)]] RWStructuredBuffer<float> R;
[numthreads(64, 1, 1)]
void rownorm(uint3 id : SV_DispatchThreadID)
{
    for (uint row = id.x; row < p.rows; row += 64) {
        float acc = 0;
        for (uint i = 0; i < p.dim; i++) acc += X[row * p.dim + i] * X[row * p.dim + i];
        R[row] = rsqrt(acc / float(p.dim) + p.eps);
    }
}
HLSL
  glslc -fshader-stage=compute -x hlsl -fentry-point=rownorm --target-env=vulkan1.1 -O "$TMP/r.hlsl" -o "$TMP/rh.spv" || fail "glslc hlsl"
  expect_exit 0 "$KV" rmsnorm-bwd --rows 13 --dim 300 --shader r="$TMP/rh.spv" --sanitize --stress
  grep -q '^1 cases: 1 passed' "$TMP/out" || fail "the HLSL r did not pass"
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

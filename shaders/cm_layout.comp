#version 450
// The probe of the element layout of the device's 16 x 16 f32 cooperative-matrix
// accumulators (src/vk/cm_layout.c), built as the bf16 tensor-core stages are
// (KV_BF16CM: NV matrices rewritten as KHR ones). One subgroup loads ids[r * 16 + c]
// = r * 16 + c, passes it through a product of zero matrices (so that it is an
// accumulator), and writes its elements in order: out[0] = n = M.length(), then
// out[1 + lane * n + e] = M[e] for e < min(n, 64).
#ifdef KV_BF16CM
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) readonly buffer IDS { float ids[]; };
layout(std430, binding = 1) writeonly buffer OUT { float outv[]; };
shared uvec4 z_s[32]; // a 16 x 16 block of zeros (16-bit), 2 words a row

void main()
{
    z_s[gl_LocalInvocationID.x] = uvec4(0u);
    barrier();
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> m;
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> za, zb;
    coopMatLoadNV(m, ids, 0u, 16u, false);
    coopMatLoadNV(za, z_s, 0u, 2u, false);
    coopMatLoadNV(zb, z_s, 0u, 2u, true);
    m = coopMatMulAddNV(za, zb, m);
    const uint lane = gl_SubgroupInvocationID, n = uint(m.length());
    if (lane == 0u) outv[0] = float(n);
    for (uint e = 0u; e < min(n, 64u); e++) outv[1u + lane * n + e] = m[e];
}
#else
layout(local_size_x = 1) in;
void main() {}
#endif

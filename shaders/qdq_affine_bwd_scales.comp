#version 450
// qdq-affine backward, scales: d_scales[g] = sum over group g of q[i]*dy[i].
// A workgroup takes tiles of 4096 elements, 16 per invocation (one 128-bit
// load of codes, four vec4 loads of dy). Groups of 16 or more elements are
// folded over their group_size/16 invocations in shared memory; smaller
// groups are summed within the invocation.
layout(local_size_x = 256) in;

#define CODES_BINDING 0
#include "qdq_codes.glsl"
layout(std430, binding = 1) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 1) readonly buffer DY1 { float dy1[]; };
layout(std430, binding = 2) writeonly buffer DS { float d_scales[]; };
layout(push_constant) uniform Push { uint groups; uint group_size; uint bits; } p;

shared float part[256];

void main()
{
    uint n = p.groups * p.group_size, lid = gl_LocalInvocationID.x, gs = p.group_size;
    uint seg = max(gs / 16u, 1u), ntiles = (n + 4095u) / 4096u;
    for (uint tile = gl_WorkGroupID.x; tile < ntiles; tile += gl_NumWorkGroups.x) {
        uint c = tile * 256u + lid, e0 = 16u * c, valid = e0 < n ? min(n - e0, 16u) : 0u;
        uvec4 words = valid > 0u ? load_chunk(c, valid) : uvec4(0u);
        float t[16];
        for (uint k = 0u; k < 4u; k++) {
            vec4 d = vec4(0.0);
            uint e = e0 + 4u * k;
            if (e + 4u <= n) d = dy4[e / 4u];
            else if (e < n) d.xy = vec2(dy1[e], dy1[e + 1u]);
            vec4 q = vec4(unpack_codes(words[k]));
            t[4u * k] = q.x * d.x, t[4u * k + 1u] = q.y * d.y, t[4u * k + 2u] = q.z * d.z, t[4u * k + 3u] = q.w * d.w;
        }
        if (gs < 16u) {
            for (uint j = 0u; j < valid; j += gs) {
                float s = 0.0;
                for (uint i = 0u; i < gs; i++) s += t[j + i];
                d_scales[(e0 + j) / gs] = s;
            }
            continue;
        }
        float s = 0.0;
        for (uint i = 0u; i < 16u; i++) s += t[i];
        part[lid] = s;
        barrier();
        for (uint st = seg / 2u; st > 0u; st >>= 1u) {
            if ((lid & (seg - 1u)) < st) part[lid] += part[lid + st];
            barrier();
        }
        if ((lid & (seg - 1u)) == 0u && valid > 0u) d_scales[e0 / gs] = part[lid];
        barrier();
    }
}

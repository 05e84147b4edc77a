#version 450
// qdq-affine backward, biases: d_biases[g] = sum over group g of dy[i].
// Tiles of 4096 elements, 16 per invocation, folded as in bwd-scales.
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 0) readonly buffer DY1 { float dy1[]; };
layout(std430, binding = 1) writeonly buffer DB { float d_biases[]; };
layout(push_constant) uniform Push { uint groups; uint group_size; uint bits; } p;

shared float part[256];

void main()
{
    uint n = p.groups * p.group_size, lid = gl_LocalInvocationID.x, gs = p.group_size;
    uint seg = max(gs / 16u, 1u), ntiles = (n + 4095u) / 4096u;
    for (uint tile = gl_WorkGroupID.x; tile < ntiles; tile += gl_NumWorkGroups.x) {
        uint e0 = 16u * (tile * 256u + lid), valid = e0 < n ? min(n - e0, 16u) : 0u;
        float t[16];
        for (uint k = 0u; k < 4u; k++) {
            vec4 d = vec4(0.0);
            uint e = e0 + 4u * k;
            if (e + 4u <= n) d = dy4[e / 4u];
            else if (e < n) d.xy = vec2(dy1[e], dy1[e + 1u]);
            t[4u * k] = d.x, t[4u * k + 1u] = d.y, t[4u * k + 2u] = d.z, t[4u * k + 3u] = d.w;
        }
        if (gs < 16u) {
            for (uint j = 0u; j < valid; j += gs) {
                float s = 0.0;
                for (uint i = 0u; i < gs; i++) s += t[j + i];
                d_biases[(e0 + j) / gs] = s;
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
        if ((lid & (seg - 1u)) == 0u && valid > 0u) d_biases[e0 / gs] = part[lid];
        barrier();
    }
}

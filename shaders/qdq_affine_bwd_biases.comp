#version 450
// qdq-affine backward, biases: d_biases[g] = sum over group g of dy[i].
// Tiles of 1024 elements, 4 per invocation, folded as in bwd-scales.
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 0) readonly buffer DY1 { float dy1[]; };
layout(std430, binding = 1) writeonly buffer DB { float d_biases[]; };
layout(push_constant) uniform Push { uint groups; uint group_size; uint bits; } p;

shared float part[256];

void main()
{
    uint n = p.groups * p.group_size, lid = gl_LocalInvocationID.x, seg = max(p.group_size / 4u, 1u);
    uint ntiles = (n + 1023u) / 1024u;
    for (uint tile = gl_WorkGroupID.x; tile < ntiles; tile += gl_NumWorkGroups.x) {
        uint e0 = tile * 1024u + 4u * lid;
        vec4 d = vec4(0.0);
        if (e0 + 4u <= n) d = dy4[e0 / 4u];
        else if (e0 < n) d.xy = vec2(dy1[e0], dy1[e0 + 1u]);
        float lo = d.x + d.y, hi = d.z + d.w;
        if (p.group_size == 2u) {
            if (e0 < n) d_biases[e0 / 2u] = lo;
            if (e0 + 2u < n) d_biases[e0 / 2u + 1u] = hi;
            continue;
        }
        part[lid] = lo + hi;
        barrier();
        for (uint st = seg / 2u; st > 0u; st >>= 1u) {
            if ((lid & (seg - 1u)) < st) part[lid] += part[lid + st];
            barrier();
        }
        if ((lid & (seg - 1u)) == 0u && e0 < n) d_biases[e0 / p.group_size] = part[lid];
        barrier();
    }
}

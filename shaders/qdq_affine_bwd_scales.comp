#version 450
// qdq-affine backward, scales: d_scales[g] = sum over group g of q[i]*dy[i].
// Quads of 4 elements; a workgroup takes tiles of 1024 quads, 4 per
// invocation at a stride of 256 (contiguous loads across the workgroup). A
// group spans group_size/4 adjacent invocations of one stride: their quad
// sums are folded in shared memory, the four strides at once; groups of 2
// are summed within the quad.
layout(local_size_x = 256) in;

#ifdef KV_ADDR
#include "addr.glsl"
layout(push_constant) uniform Push { KvU32 q; KvF32 dy, ds; uint groups; uint group_size; uint bits; } p;
#include "qdq_codes.glsl"
#define dy4 KvVec4(p.dy).v
#define dy1 p.dy.v
#define d_scales p.ds.v
#else
#define CODES_BINDING 0
#include "qdq_codes.glsl"
layout(std430, binding = 1) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 1) readonly buffer DY1 { float dy1[]; };
layout(std430, binding = 2) writeonly buffer DS { float d_scales[]; };
layout(push_constant) uniform Push { uint groups; uint group_size; uint bits; } p;
#endif

shared float part[4][256];

void main()
{
    uint n = p.groups * p.group_size, lid = gl_LocalInvocationID.x, gs = p.group_size;
    uint seg = max(gs / 4u, 1u), quads = (n + 3u) / 4u;
    for (uint base = gl_WorkGroupID.x * 1024u; base < quads; base += gl_NumWorkGroups.x * 1024u) {
        vec2 h[4]; // the sums of elements 0-1 and 2-3 of each quad
        for (uint k = 0u; k < 4u; k++) {
            uint qi = base + 256u * k + lid, e = 4u * qi;
            vec4 d = vec4(0.0);
            if (e + 4u <= n) d = dy4[qi];
            else if (e < n) d.xy = vec2(dy1[e], dy1[e + 1u]);
            vec4 q = qi < quads ? vec4(unpack_codes(qw[qi])) : vec4(0.0);
            vec4 t = q * d;
            h[k] = vec2(t.x + t.y, t.z + t.w);
        }
        if (gs == 2u) {
            for (uint k = 0u; k < 4u; k++) {
                uint qi = base + 256u * k + lid, e = 4u * qi;
                if (e < n) d_scales[e / 2u] = h[k].x;
                if (e + 2u < n) d_scales[e / 2u + 1u] = h[k].y;
            }
            continue;
        }
        for (uint k = 0u; k < 4u; k++) part[k][lid] = h[k].x + h[k].y;
        barrier();
        for (uint st = seg / 2u; st > 0u; st >>= 1u) {
            if ((lid & (seg - 1u)) < st)
                for (uint k = 0u; k < 4u; k++) part[k][lid] += part[k][lid + st];
            barrier();
        }
        if ((lid & (seg - 1u)) == 0u)
            for (uint k = 0u; k < 4u; k++) {
                uint qi = base + 256u * k + lid;
                if (qi < quads) d_scales[4u * qi / gs] = part[k][lid];
            }
        barrier();
    }
}

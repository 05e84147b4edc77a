#version 450
// qdq-affine forward: qdq[i] = q[i] * s[g] + b[g], g = i / group_size.
// Quads of 4 elements (one word of codes, one vec4 of output). A workgroup
// takes tiles of 1024 quads, 4 per invocation at a stride of 256, so every
// load and store instruction is contiguous across the workgroup and each
// invocation has four loads in flight; grid-strided over tiles.
layout(local_size_x = 256) in;

#ifdef KV_ADDR
#include "addr.glsl"
layout(push_constant) uniform Push { KvU32 q; KvF32 s, b, o; uint groups; uint group_size; uint bits; } p;
#include "qdq_codes.glsl"
#define scales p.s.v
#define biases p.b.v
#define o4 KvVec4(p.o).v
#define o1 p.o.v
#else
#define CODES_BINDING 0
#include "qdq_codes.glsl"
layout(std430, binding = 1) readonly buffer S { float scales[]; };
layout(std430, binding = 2) readonly buffer B { float biases[]; };
layout(std430, binding = 3) writeonly buffer O4 { vec4 o4[]; };
layout(std430, binding = 3) writeonly buffer O1 { float o1[]; };
layout(push_constant) uniform Push { uint groups; uint group_size; uint bits; } p;
#endif

void main()
{
    uint n = p.groups * p.group_size, shift = uint(findLSB(p.group_size)), quads = (n + 3u) / 4u;
    uint lid = gl_LocalInvocationID.x;
    for (uint base = gl_WorkGroupID.x * 1024u; base < quads; base += gl_NumWorkGroups.x * 1024u) {
        uint words[4];
        for (uint k = 0u; k < 4u; k++) {
            uint qi = base + 256u * k + lid;
            words[k] = qi < quads ? qw[qi] : 0u;
        }
        for (uint k = 0u; k < 4u; k++) {
            uint qi = base + 256u * k + lid, e = 4u * qi;
            if (qi >= quads) break;
            uvec4 q = unpack_codes(words[k]);
            // Elements 0-1 and 2-3 of a quad are in one group unless group_size is 2.
            uint g0 = e >> shift, g1 = (e + 2u) >> shift;
            float s0 = scales[g0], b0 = biases[g0], s1 = s0, b1 = b0;
            if (g1 != g0 && e + 2u < n) s1 = scales[g1], b1 = biases[g1];
            vec4 r = vec4(float(q.x) * s0 + b0, float(q.y) * s0 + b0, float(q.z) * s1 + b1, float(q.w) * s1 + b1);
            if (e + 4u <= n) o4[qi] = r;
            else o1[e] = r.x, o1[e + 1u] = r.y; // n is even: a partial quad has 2 elements
        }
    }
}

#version 450
// qdq-affine forward: qdq[i] = q[i] * s[g] + b[g], g = i / group_size.
// Each invocation takes a chunk of 16 consecutive elements (one 128-bit load
// of codes, four vec4 stores), so many bytes are in flight; grid-strided.
layout(local_size_x = 256) in;

#define CODES_BINDING 0
#include "qdq_codes.glsl"
layout(std430, binding = 1) readonly buffer S { float scales[]; };
layout(std430, binding = 2) readonly buffer B { float biases[]; };
layout(std430, binding = 3) writeonly buffer O4 { vec4 o4[]; };
layout(std430, binding = 3) writeonly buffer O1 { float o1[]; };
layout(push_constant) uniform Push { uint groups; uint group_size; uint bits; } p;

void main()
{
    uint n = p.groups * p.group_size, shift = uint(findLSB(p.group_size)), chunks = (n + 15u) / 16u;
    for (uint c = gl_GlobalInvocationID.x; c < chunks; c += gl_NumWorkGroups.x * 256u) {
        uint e0 = 16u * c, valid = min(n - e0, 16u);
        uvec4 words = load_chunk(c, valid);
        for (uint k = 0u; k < 4u; k++) {
            uint e = e0 + 4u * k;
            if (e >= n) break;
            uvec4 q = unpack_codes(words[k]);
            // Elements 0-1 and 2-3 of a quad are in one group unless group_size is 2.
            uint g0 = e >> shift, g1 = (e + 2u) >> shift;
            float s0 = scales[g0], b0 = biases[g0], s1 = s0, b1 = b0;
            if (g1 != g0 && e + 2u < n) s1 = scales[g1], b1 = biases[g1];
            vec4 r = vec4(float(q.x) * s0 + b0, float(q.y) * s0 + b0, float(q.z) * s1 + b1, float(q.w) * s1 + b1);
            if (e + 4u <= n) o4[e / 4u] = r;
            else o1[e] = r.x, o1[e + 1u] = r.y; // n is even: a partial quad has 2 elements
        }
    }
}

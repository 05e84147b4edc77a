#version 450
// Built with and without KV_INT8 (8-bit storage): see qdq_codes.glsl.
// qdq-affine forward: qdq[i] = q[i] * s[g] + b[g], g = i / group_size.
// Each invocation takes 4 consecutive elements (one word of codes, one vec4
// of output); grid-strided.
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
    uint n = p.groups * p.group_size, shift = uint(findLSB(p.group_size)), quads = (n + 3u) / 4u;
    for (uint i = gl_GlobalInvocationID.x; i < quads; i += gl_NumWorkGroups.x * 256u) {
        uint e0 = 4u * i;
        uvec4 q = load_codes(i);
        uint g0 = e0 >> shift, g1 = (e0 + 2u) >> shift;
        float s0 = scales[g0], b0 = biases[g0], s1 = s0, b1 = b0;
        if (g1 != g0 && e0 + 2u < n) s1 = scales[g1], b1 = biases[g1];
        vec4 r = vec4(float(q.x) * s0 + b0, float(q.y) * s0 + b0, float(q.z) * s1 + b1, float(q.w) * s1 + b1);
        if (e0 + 4u <= n) o4[i] = r;
        else o1[e0] = r.x, o1[e0 + 1u] = r.y; // n is even: a partial quad has 2 elements
    }
}

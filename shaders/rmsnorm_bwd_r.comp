#version 450
// r[b] = 1 / sqrt(mean_j x[b,j]^2 + eps). One workgroup per row, grid-stride
// over rows so any row count fits the device's group-count limit.
#define KV_WG 256
layout(local_size_x = KV_WG) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer R { float r[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } p;

#include "reduce.glsl"

void main()
{
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint base = row * p.dim;
        float acc = 0.0;
        for (uint i = gl_LocalInvocationID.x; i < p.dim; i += KV_WG) {
            float v = x[base + i];
            acc += v * v;
        }
        float ss = kv_wg_sum(acc);
        if (gl_LocalInvocationID.x == 0u) r[row] = inversesqrt(ss / float(p.dim) + p.eps);
    }
}

#version 450
// r[b] = 1 / sqrt(mean_j x[b,j]^2 + eps). One workgroup per row, grid-stride
// over rows so any row count fits the device's group-count limit.
#define KV_WG 256
layout(local_size_x = KV_WG) in;

#ifdef KV_ADDR
#include "addr.glsl"
layout(push_constant) uniform Push { KvF32 x, r; uint rows; uint dim; float eps; } p;
#define X p.x.v
#define R p.r.v
#else
layout(std430, set = 0, binding = 0) readonly buffer XB { float X[]; };
layout(std430, set = 0, binding = 1) writeonly buffer RB { float R[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } p;
#endif

#include "reduce.glsl"

void main()
{
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint base = row * p.dim;
        float acc = 0.0;
        for (uint i = gl_LocalInvocationID.x; i < p.dim; i += KV_WG) {
            float v = X[base + i];
            acc += v * v;
        }
        float ss = kv_wg_sum(acc);
        if (gl_LocalInvocationID.x == 0u) R[row] = inversesqrt(ss / float(p.dim) + p.eps);
    }
}

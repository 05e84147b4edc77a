#version 450
// layernorm-bwd-recompute stage stats (layernorm_bwd_recompute.kernel.json):
// the statistics the forward saved, recomputed from x per row:
//   mean = sum(x) / dim,  rstd = inversesqrt(sum((x - mean)^2) / dim + eps).
// One workgroup per row, rows grid-strided; both sums through reduce.glsl.
#define KV_WG 256
layout(local_size_x = KV_WG) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer MEAN { float mean[]; };
layout(std430, set = 0, binding = 2) writeonly buffer RSTD { float rstd[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } p;

#include "reduce.glsl"

void main()
{
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        const uint base = row * p.dim;
        float s = 0.0;
        for (uint c = gl_LocalInvocationID.x; c < p.dim; c += KV_WG) s += x[base + c];
        const float mu = kv_wg_sum(s) / float(p.dim);
        float q = 0.0;
        for (uint c = gl_LocalInvocationID.x; c < p.dim; c += KV_WG) {
            const float d = x[base + c] - mu;
            q += d * d;
        }
        const float var = kv_wg_sum(q) / float(p.dim);
        if (gl_LocalInvocationID.x == 0u) {
            mean[row] = mu;
            rstd[row] = inversesqrt(var + p.eps);
        }
    }
}

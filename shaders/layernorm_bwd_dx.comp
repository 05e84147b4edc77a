#version 450
// layernorm-bwd stage dx (layernorm_bwd.kernel.json), per row r:
//   xh = (x - mean) * rstd,  g = dy * w,
//   dx = rstd * (g - sum(g) / dim - xh * sum(g * xh) / dim).
// One workgroup per row, rows grid-strided; both row sums through reduce.glsl.
#define KV_WG 256
layout(local_size_x = KV_WG) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) readonly buffer DY { float dy[]; };
layout(std430, set = 0, binding = 3) readonly buffer MEAN { float mean[]; };
layout(std430, set = 0, binding = 4) readonly buffer RSTD { float rstd[]; };
layout(std430, set = 0, binding = 5) writeonly buffer DX { float dx[]; };
layout(push_constant) uniform Push { uint rows; uint dim; } p;

#include "reduce.glsl"

void main()
{
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        const uint base = row * p.dim;
        const float mu = mean[row], rs = rstd[row];
        float sg = 0.0, sgx = 0.0;
        for (uint c = gl_LocalInvocationID.x; c < p.dim; c += KV_WG) {
            float g = dy[base + c] * w[c];
            sg += g;
            sgx += g * ((x[base + c] - mu) * rs);
        }
        const float mg = kv_wg_sum(sg) / float(p.dim), mgx = kv_wg_sum(sgx) / float(p.dim);
        for (uint c = gl_LocalInvocationID.x; c < p.dim; c += KV_WG) {
            float xh = (x[base + c] - mu) * rs;
            dx[base + c] = rs * (dy[base + c] * w[c] - mg - xh * mgx);
        }
    }
}

#version 450
// softmax-bwd (shaders/softmax_bwd.kernel.json): per row,
//   s = sum_c y[r,c] * dy[r,c],  dx[r,c] = y[r,c] * (dy[r,c] - s).
// One workgroup per row, grid-stride over rows so any row count fits the
// device's group-count limit; each invocation strides over the row's
// columns, the row sum goes through reduce.glsl.
#define KV_WG 256
layout(local_size_x = KV_WG) in;

layout(std430, set = 0, binding = 0) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, set = 0, binding = 2) writeonly buffer DX { float dx[]; };
layout(push_constant) uniform Push { uint rows; uint dim; } p;

#include "reduce.glsl"

void main()
{
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint base = row * p.dim;
        float acc = 0.0;
        for (uint i = gl_LocalInvocationID.x; i < p.dim; i += KV_WG) acc += y[base + i] * dy[base + i];
        float s = kv_wg_sum(acc);
        for (uint i = gl_LocalInvocationID.x; i < p.dim; i += KV_WG) dx[base + i] = y[base + i] * (dy[base + i] - s);
    }
}

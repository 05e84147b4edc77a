#version 450
// swiglu-bwd (swiglu_bwd.kernel.json): h = silu(gate) * up;
//   dgate = dy * up * s * (1 + gate * (1 - s)),  dup = dy * gate * s,  s = sigmoid(gate).
// Elementwise, grid-strided.
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer G { float gate[]; };
layout(std430, set = 0, binding = 1) readonly buffer U { float up[]; };
layout(std430, set = 0, binding = 2) readonly buffer DY { float dy[]; };
layout(std430, set = 0, binding = 3) writeonly buffer DG { float dgate[]; };
layout(std430, set = 0, binding = 4) writeonly buffer DU { float dup[]; };
#include "grid.glsl"

layout(push_constant) uniform Push { uint n; } p;

void main()
{
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i = kv_next(i, stride, p.n)) {
        float g = gate[i], d = dy[i];
        float s = 1.0 / (1.0 + exp(-g));
        dgate[i] = d * up[i] * s * (1.0 + g * (1.0 - s));
        dup[i] = d * g * s;
    }
}

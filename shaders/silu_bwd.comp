#version 450
// silu-bwd (silu_bwd.kernel.json): dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x),
// the gradient of x * sigmoid(x). Elementwise, grid-strided.
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, set = 0, binding = 2) writeonly buffer DX { float dx[]; };
#include "grid.glsl"

layout(push_constant) uniform Push { uint n; } p;

void main()
{
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i = kv_next(i, stride, p.n)) {
        float v = x[i];
        float s = 1.0 / (1.0 + exp(-v));
        dx[i] = dy[i] * s * (1.0 + v * (1.0 - s));
    }
}

#version 450
// gelu-bwd (gelu_bwd.kernel.json): dx = dy * gelu'(x), in PyTorch's two forms:
//   approximate = tanh (1): with t = tanh(b (x + k x^3)), b = sqrt(2/pi), k = 0.044715,
//     gelu' = 0.5 (1 + t) + 0.5 x (1 - t^2) b (1 + 3 k x^2);
//   approximate = none (0): gelu' = Phi(x) + x phi(x), Phi(x) = 0.5 (1 + erf(x / sqrt 2)).
// GLSL has no erf: Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
// Elementwise, grid-strided.
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, set = 0, binding = 2) writeonly buffer DX { float dx[]; };
#include "grid.glsl"

layout(push_constant) uniform Push { uint n; uint approximate; } p;

float erf_as(float v)
{
    float a = abs(v), t = 1.0 / (1.0 + 0.3275911 * a);
    float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    return sign(v) * (1.0 - poly * exp(-a * a));
}

void main()
{
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i = kv_next(i, stride, p.n)) {
        float v = x[i], g;
        if (p.approximate == 1u) {
            float x2 = v * v;
            float t = tanh(0.7978845608 * (v + 0.044715 * x2 * v));
            g = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * 0.7978845608 * (1.0 + 3.0 * 0.044715 * x2);
        } else {
            g = 0.5 * (1.0 + erf_as(v * 0.7071067812)) + v * exp(-0.5 * v * v) * 0.3989422804;
        }
        dx[i] = dy[i] * g;
    }
}

#version 450
// dC16 = f16(dC), round-to-nearest-even; two elements per invocation, packed
// into one word. Grid-strided: w + the step stays below 2^32 (words <= 2^31,
// the step at most ceil(words / 256) * 256).
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer DC { float dc[]; };
layout(std430, set = 0, binding = 1) writeonly buffer DC16 { uint dc16[]; };
layout(push_constant) uniform Push { uint m; uint n; uint k; } p;
#include "f16.glsl"
void main()
{
    // count + 1 would wrap at 2^32 - 1 elements (0 words)
    uint count = p.m * p.n, words = count / 2u + (count & 1u);
    for (uint w = gl_GlobalInvocationID.x; w < words; w += gl_NumWorkGroups.x * 256u) {
        uint lo = kv_f32_to_f16(dc[2u * w]);
        uint hi = 2u * w + 1u < count ? kv_f32_to_f16(dc[2u * w + 1u]) : 0u;
        dc16[w] = lo | (hi << 16);
    }
}

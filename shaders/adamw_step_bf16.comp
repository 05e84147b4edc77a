#version 450
// adamw-step-bf16 (adamw_step_bf16.kernel.json): bf16 parameters (two to a
// 32-bit word), f32 moments and math; the new parameters rounded to bf16,
// nearest even. Each invocation owns its 16-bit half of a word and sets only
// that half, with atomics. The update is adamw_step.glsl.
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer P { uint pw[]; };
layout(std430, set = 0, binding = 1) readonly buffer G { float g[]; };
layout(std430, set = 0, binding = 2) readonly buffer M { float m[]; };
layout(std430, set = 0, binding = 3) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 4) buffer PO { uint pow_[]; };
layout(std430, set = 0, binding = 5) writeonly buffer MO { float m_out[]; };
layout(std430, set = 0, binding = 6) writeonly buffer VO { float v_out[]; };
layout(push_constant) uniform Push {
    uint n; float lr; float beta1; float beta2; float eps; float weight_decay; uint step; uint coefficients;
    float decay; float omb1; float omb2; float step_size; float bc2_sqrt;
} p;

float bf16_load(uint i)
{
    return uintBitsToFloat((pw[i >> 1] >> (16u * (i & 1u))) << 16);
}

void bf16_store(uint i, float x)
{
    uint u = floatBitsToUint(x), b;
    if (isnan(x)) b = (u >> 16) | 0x40u; // a quiet NaN, sign kept
    else b = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; // nearest, ties to even; overflow rounds to Inf
    const uint shift = 16u * (i & 1u);
    atomicAnd(pow_[i >> 1], ~(0xffffu << shift));
    atomicOr(pow_[i >> 1], (b & 0xffffu) << shift);
}

#define PLOAD(i) bf16_load(i)
#define PSTORE(i, x) bf16_store(i, x)
#include "adamw_step.glsl"

void main() { adamw(); }

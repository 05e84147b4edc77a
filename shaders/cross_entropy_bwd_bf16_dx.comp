#version 450
// cross-entropy-bwd-bf16 stage dx (cross_entropy_bwd_bf16.kernel.json): bf16
// logits in (two to a 32-bit word), f32 math, bf16 dlogits out, rounded to
// nearest even. Each invocation owns its 16-bit half of a word: it clears and
// sets only that half, with atomics, so halves of one word written from two
// rows (odd class counts) do not race. The row kernel is cross_entropy_bwd.glsl.
#define KV_WG 256
layout(local_size_x = KV_WG) in;

layout(std430, set = 0, binding = 0) readonly buffer X { uint xw[]; };
layout(std430, set = 0, binding = 1) readonly buffer L { int labels[]; };
layout(std430, set = 0, binding = 2) readonly buffer N { float valid[]; };
layout(std430, set = 0, binding = 3) buffer DX { uint dxw[]; };
layout(push_constant) uniform Push { uint rows; uint classes; int ignore_index; float smoothing; } p;

float bf16_load(uint i)
{
    return uintBitsToFloat((xw[i >> 1] >> (16u * (i & 1u))) << 16);
}

void bf16_store(uint i, float v)
{
    uint u = floatBitsToUint(v), b;
    if (isnan(v)) b = (u >> 16) | 0x40u; // a quiet NaN, sign kept
    else b = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; // nearest, ties to even; overflow rounds to Inf
    const uint shift = 16u * (i & 1u);
    atomicAnd(dxw[i >> 1], ~(0xffffu << shift));
    atomicOr(dxw[i >> 1], (b & 0xffffu) << shift);
}

#define LOAD(i) bf16_load(i)
#define STORE(i, v) bf16_store(i, v)
#include "reduce.glsl"
#include "cross_entropy_bwd.glsl"

void main() { ce_rows(); }

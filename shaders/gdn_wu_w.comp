#version 450
// gdn-wu stage w: w = A @ bf16(k[kh] * beta * exp(g)), kh = h / (heads / kv_heads),
// per chunk and head (gdn_wu.glsl).
#extension GL_EXT_shader_16bit_storage : require
layout(std430, binding = 0) readonly buffer K { uint16_t k[]; };
layout(std430, binding = 1) readonly buffer BETA { float beta[]; };
layout(std430, binding = 2) readonly buffer G { float g[]; };
layout(std430, binding = 3) readonly buffer AA { float A[]; };
// KV_BF16CM: also built for bf16 cooperative matrices (gdn_wu_cm.glsl), which
// reads A and the input as 16-byte words.
layout(std430, binding = 3) readonly buffer AA4 { vec4 A4[]; };
layout(std430, binding = 0) readonly buffer IN8 { uvec4 k8[]; };
uvec4 staged8(uint b, uint t, uint h, uint col);
layout(std430, binding = 4) writeonly buffer W { uint16_t w[]; };
#define D p.dk
float staged(uint b, uint t, uint h, uint col);
void store_out(uint i, float x);
void store_out4(uint i, vec4 x);
// The output as 8-byte words: four bf16 per store where D % 4 == 0.
layout(std430, binding = 4) writeonly buffer W4 { uvec2 w4[]; };
#include "gdn_wu.glsl"

float staged(uint b, uint t, uint h, uint col)
{
    uint r = (b * p.seq + t) * p.heads + h, kh = h / (p.heads / p.kv_heads);
    float x = bf16_float(uint(k[((b * p.seq + t) * p.kv_heads + kh) * p.dk + col]));
    return bf16_round(x * beta[r] * exp(g[r]));
}
void store_out(uint i, float x) { w[i] = uint16_t(bf16_bits(x)); }
void store_out4(uint i, vec4 x) { w4[i / 4u] = bf16x4_words(x); }

// Eight staged values from one 16-byte load of k (col % 8 == 0, D % 8 == 0).
uvec4 staged8(uint b, uint t, uint h, uint col)
{
    uint r = (b * p.seq + t) * p.heads + h, kh = h / (p.heads / p.kv_heads);
    uvec4 x = k8[(((b * p.seq + t) * p.kv_heads + kh) * p.dk + col) / 8u], o;
    float be = beta[r], eg = exp(g[r]);
    for (uint q = 0u; q < 4u; q++)
        o[q] = bf16_bits(bf16_float(x[q] & 0xffffu) * be * eg) | (bf16_bits(bf16_float(x[q] >> 16) * be * eg) << 16);
    return o;
}

#version 450
// gdn-wu stage u: u = A @ bf16(v * beta), per chunk and head (gdn_wu.glsl).
#extension GL_EXT_shader_16bit_storage : require
layout(std430, binding = 0) readonly buffer V { uint16_t v[]; };
layout(std430, binding = 1) readonly buffer BETA { float beta[]; };
layout(std430, binding = 2) readonly buffer AA { float A[]; };
// KV_BF16CM: also built for bf16 cooperative matrices (gdn_wu_cm.glsl), which
// reads A and the input as 16-byte words.
layout(std430, binding = 2) readonly buffer AA4 { vec4 A4[]; };
layout(std430, binding = 0) readonly buffer IN8 { uvec4 v8[]; };
uvec4 staged8(uint b, uint t, uint h, uint col);
layout(std430, binding = 3) writeonly buffer U { uint16_t u[]; };
#define D p.dv
float staged(uint b, uint t, uint h, uint col);
void store_out(uint i, float x);
void store_out4(uint i, vec4 x);
// The output as 8-byte words: four bf16 per store where D % 4 == 0.
layout(std430, binding = 3) writeonly buffer U4 { uvec2 u4[]; };
#include "gdn_wu.glsl"

float staged(uint b, uint t, uint h, uint col)
{
    uint r = (b * p.seq + t) * p.heads + h;
    return bf16_round(bf16_float(uint(v[r * p.dv + col])) * beta[r]);
}
void store_out(uint i, float x) { u[i] = uint16_t(bf16_bits(x)); }
void store_out4(uint i, vec4 x) { u4[i / 4u] = bf16x4_words(x); }

// Eight staged values from one 16-byte load of v (col % 8 == 0, D % 8 == 0).
uvec4 staged8(uint b, uint t, uint h, uint col)
{
    uint r = (b * p.seq + t) * p.heads + h;
    uvec4 x = v8[(r * p.dv + col) / 8u], o;
    float be = beta[r];
    for (uint q = 0u; q < 4u; q++)
        o[q] = bf16_bits(bf16_float(x[q] & 0xffffu) * be) | (bf16_bits(bf16_float(x[q] >> 16) * be) << 16);
    return o;
}

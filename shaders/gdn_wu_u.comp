#version 450
// gdn-wu stage u: u = A @ bf16(v * beta), per chunk and head (gdn_wu.glsl).
#extension GL_EXT_shader_16bit_storage : require
layout(std430, binding = 0) readonly buffer V { uint16_t v[]; };
layout(std430, binding = 1) readonly buffer BETA { float beta[]; };
layout(std430, binding = 2) readonly buffer AA { float A[]; };
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

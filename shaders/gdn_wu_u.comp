#version 450
// gdn-wu stage u: u = A @ bf16(v * beta), per chunk and head (gdn_wu.glsl).
#extension GL_EXT_shader_16bit_storage : require
layout(std430, binding = 0) readonly buffer V { uint16_t v[]; };
layout(std430, binding = 1) readonly buffer BETA { float beta[]; };
#ifdef KV_ABF16 // --variant a-bf16: A in bf16, as FLA's pipeline keeps it
layout(std430, binding = 2) readonly buffer AA { uint16_t A16[]; };
#define A_AT(i) bf16_float(uint(A16[i]))
#else
layout(std430, binding = 2) readonly buffer AA { float A[]; };
#define A_AT(i) A[i]
#endif
// KV_BF16CM: also built for bf16 cooperative matrices (gdn_wu_cm.glsl), which
// reads A and the input as 16-byte words.
layout(std430, binding = 2) readonly buffer AA4 { vec4 A4[]; };
layout(std430, binding = 0) readonly buffer IN8 { uvec4 v8[]; };
uvec4 fetch8(uint b, uint t, uint h, uint col);
vec2 factors(uint b, uint t, uint h);
float scaled(float x, vec2 f);
layout(std430, binding = 3) writeonly buffer U { uint16_t u[]; };
#define D p.dv
float staged(uint b, uint t, uint h, uint col);
void store_out(uint i, float x);
void store_out4(uint i, vec4 x);
// The output as 8-byte words: four bf16 per store where D % 4 == 0.
layout(std430, binding = 3) writeonly buffer U4 { uvec2 u4[]; };
// And as 16-byte words: eight bf16 per store where D % 8 == 0.
layout(std430, binding = 3) writeonly buffer U8 { uvec4 u8[]; };
void store_out8(uint i, vec4 lo, vec4 hi);
#include "gdn_wu.glsl"

// v's row and beta's index for (b, t, h); the row's factors (beta, unused)
// and the staging's product x * beta, in f32.
uint v_row(uint b, uint t, uint h) { return (b * p.seq + t) * p.heads + h; }
vec2 factors(uint b, uint t, uint h) { return vec2(beta[v_row(b, t, h)], 0.0); }
float scaled(float x, vec2 f) { return x * f.x; }

float staged(uint b, uint t, uint h, uint col)
{
    return bf16_round(scaled(bf16_float(uint(v[v_row(b, t, h) * p.dv + col])), factors(b, t, h)));
}
void store_out(uint i, float x) { u[i] = uint16_t(bf16_bits(x)); }
void store_out4(uint i, vec4 x) { u4[i / 4u] = bf16x4_words(x); }
void store_out8(uint i, vec4 lo, vec4 hi) { u8[i / 8u] = uvec4(bf16x4_words(lo), bf16x4_words(hi)); }

// The 16-byte word of 8 inputs of v from col (col % 8 == 0, D % 8 == 0).
uvec4 fetch8(uint b, uint t, uint h, uint col) { return v8[(v_row(b, t, h) * p.dv + col) / 8u]; }

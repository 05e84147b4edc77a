#version 450
// gdn-wu stage w: w = A @ bf16(k[kh] * beta * exp(g)), kh = h / (heads / kv_heads),
// per chunk and head (gdn_wu.glsl).
#extension GL_EXT_shader_16bit_storage : require
layout(std430, binding = 0) readonly buffer K { uint16_t k[]; };
layout(std430, binding = 1) readonly buffer BETA { float beta[]; };
layout(std430, binding = 2) readonly buffer G { float g[]; };
#ifdef KV_ABF16 // --variant a-bf16: A in bf16, as FLA's pipeline keeps it
layout(std430, binding = 3) readonly buffer AA { uint16_t A16[]; };
#define A_AT(i) bf16_float(uint(A16[i]))
#else
layout(std430, binding = 3) readonly buffer AA { float A[]; };
#define A_AT(i) A[i]
#endif
// KV_BF16CM: also built for bf16 cooperative matrices (gdn_wu_cm.glsl), which
// reads A and the input as 16-byte words.
layout(std430, binding = 3) readonly buffer AA4 { vec4 A4[]; };
layout(std430, binding = 0) readonly buffer IN8 { uvec4 k8[]; };
uvec4 fetch8(uint b, uint t, uint h, uint col);
vec2 factors(uint b, uint t, uint h);
float scaled(float x, vec2 f);
layout(std430, binding = 4) writeonly buffer W { uint16_t w[]; };
#define D p.dk
float staged(uint b, uint t, uint h, uint col);
void store_out(uint i, float x);
void store_out4(uint i, vec4 x);
// The output as 8-byte words: four bf16 per store where D % 4 == 0.
layout(std430, binding = 4) writeonly buffer W4 { uvec2 w4[]; };
// And as 16-byte words: eight bf16 per store where D % 8 == 0.
layout(std430, binding = 4) writeonly buffer W8 { uvec4 w8[]; };
void store_out8(uint i, vec4 lo, vec4 hi);
#include "gdn_wu.glsl"

// k's row for (b, t, h): key head kh = h / (heads / kv_heads).
uint k_row(uint b, uint t, uint h) { return (b * p.seq + t) * p.kv_heads + h / (p.heads / p.kv_heads); }
// The row's factors (beta, g) and the staging's product x * beta * exp(g),
// in that order, in f32.
vec2 factors(uint b, uint t, uint h)
{
    uint r = (b * p.seq + t) * p.heads + h;
    return vec2(beta[r], g[r]);
}
float scaled(float x, vec2 f) { return x * f.x * exp(f.y); }

float staged(uint b, uint t, uint h, uint col)
{
    return bf16_round(scaled(bf16_float(uint(k[k_row(b, t, h) * p.dk + col])), factors(b, t, h)));
}
void store_out(uint i, float x) { w[i] = uint16_t(bf16_bits(x)); }
void store_out4(uint i, vec4 x) { w4[i / 4u] = bf16x4_words(x); }
void store_out8(uint i, vec4 lo, vec4 hi) { w8[i / 8u] = uvec4(bf16x4_words(lo), bf16x4_words(hi)); }

// The 16-byte word of 8 inputs of k from col (col % 8 == 0, D % 8 == 0).
uvec4 fetch8(uint b, uint t, uint h, uint col) { return k8[(k_row(b, t, h) * p.dk + col) / 8u]; }

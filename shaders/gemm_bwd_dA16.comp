#version 450
// dA[M,K] = f16(dC)[M,N] . B16[K,N]^T with f32 accumulation: both operands
// are f16 (packed two to a word); each product of two f16 values is exact in f32.
layout(std430, set = 0, binding = 0) readonly buffer DC16 { uint dc16[]; };
layout(std430, set = 0, binding = 1) readonly buffer B16 { uint b16[]; };
layout(std430, set = 0, binding = 2) writeonly buffer DA { float da[]; };
layout(push_constant) uniform Push { uint m; uint n; uint k; } p;
#define X_RED_CONTIG 1
#define Y_RED_CONTIG 1
#include "f16.glsl"
#define ROWS p.m
#define COLS p.k
#define RED p.n
#define KV_X(r, l) kv_f16_load(dc16[((r) * p.n + (l)) >> 1], (r) * p.n + (l))
#define KV_Y(l, c) kv_f16_load(b16[((c) * p.n + (l)) >> 1], (c) * p.n + (l))
#define KV_STORE(r, c, v) da[(r) * p.k + (c)] = (v)
#include "gemm_tile.glsl"
void main() { kv_gemm(); }

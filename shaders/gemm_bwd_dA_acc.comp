#version 450
// dA_out[M,K] = dA_in[M,K] + dC[M,N] . B[K,N]^T (beta = 1, the fused gate+up
// path): the product is rounded to f32, then the add.
#ifdef KV_ADDR
#include "addr.glsl"
layout(push_constant) uniform Push { KvF32 dc_, b_, da_in_, da_; uint m; uint n; uint k; } p;
#define dc p.dc_.v
#define b p.b_.v
#define da_in p.da_in_.v
#define da p.da_.v
#else
layout(std430, set = 0, binding = 0) readonly buffer DC { float dc[]; };
layout(std430, set = 0, binding = 1) readonly buffer Bm { float b[]; };
layout(std430, set = 0, binding = 2) readonly buffer DAI { float da_in[]; };
layout(std430, set = 0, binding = 3) writeonly buffer DA { float da[]; };
layout(push_constant) uniform Push { uint m; uint n; uint k; } p;
#endif
#define X_RED_CONTIG 1
#define Y_RED_CONTIG 1
#define ROWS p.m
#define COLS p.k
#define RED p.n
#define KV_X(r, l) dc[(r) * p.n + (l)]
#define KV_Y(l, c) b[(c) * p.n + (l)]
#define KV_STORE(r, c, v) da[(r) * p.k + (c)] = da_in[(r) * p.k + (c)] + (v)
#include "gemm_tile.glsl"
void main() { kv_gemm(); }

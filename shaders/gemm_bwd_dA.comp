#version 450
// dA[M,K] = dC[M,N] . B[K,N]^T: B is read transposed in place.
#ifdef KV_ADDR
#include "addr.glsl"
layout(push_constant) uniform Push { KvF32 dc_, b_, da_; uint m; uint n; uint k; } p;
#define dc p.dc_.v
#define b p.b_.v
#define dc4 KvVec4(p.dc_).v
#define b4 KvVec4(p.b_).v
#define da p.da_.v
#else
layout(std430, set = 0, binding = 0) readonly buffer DC { float dc[]; };
layout(std430, set = 0, binding = 1) readonly buffer Bm { float b[]; };
// The same two buffers as vec4s, for aligned loads when n is a multiple of 4.
layout(std430, set = 0, binding = 0) readonly buffer DC4 { vec4 dc4[]; };
layout(std430, set = 0, binding = 1) readonly buffer Bm4 { vec4 b4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer DA { float da[]; };
layout(push_constant) uniform Push { uint m; uint n; uint k; } p;
#endif
#define X_RED_CONTIG 1
#define Y_RED_CONTIG 1
#define ROWS p.m
#define COLS p.k
#define RED p.n
#define KV_X(r, l) dc[(r) * p.n + (l)]
#define KV_Y(l, c) b[(c) * p.n + (l)]
#define KV_VEC4_OK (p.n % 4u == 0u)
#define KV_X4(r, l) dc4[((r) * p.n + (l)) / 4u]
#define KV_Y4(l, c) b4[((c) * p.n + (l)) / 4u]
#define KV_STORE(r, c, v) da[(r) * p.k + (c)] = (v)
#include "gemm_tile.glsl"
void main() { kv_gemm(); }

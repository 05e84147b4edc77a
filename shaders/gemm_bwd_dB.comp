#version 450
// dB[K,N] = A[M,K]^T . dC[M,N]: A is read transposed in place.
#ifdef KV_ADDR
#include "addr.glsl"
layout(push_constant) uniform Push { KvF32 a_, dc_, db_; uint m; uint n; uint k; } p;
#define a p.a_.v
#define dc p.dc_.v
#define db p.db_.v
#else
layout(std430, set = 0, binding = 0) readonly buffer Am { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer DC { float dc[]; };
layout(std430, set = 0, binding = 2) writeonly buffer DB { float db[]; };
layout(push_constant) uniform Push { uint m; uint n; uint k; } p;
#endif
#define X_RED_CONTIG 0
#define Y_RED_CONTIG 0
#define ROWS p.k
#define COLS p.n
#define RED p.m
#define KV_X(r, l) a[(l) * p.k + (r)]
#define KV_Y(l, c) dc[(l) * p.n + (c)]
#define KV_STORE(r, c, v) db[(r) * p.n + (c)] = (v)
#include "gemm_tile.glsl"
void main() { kv_gemm(); }

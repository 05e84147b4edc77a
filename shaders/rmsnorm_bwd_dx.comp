#version 450
// dx[b,k] = r[b] * (dy[b,k]*w[k] - x[b,k] * s[b]*r[b]^2/D), s[b] = sum_i dy*x*w.
// One workgroup per row, grid-stride over rows. Rows of up to 4 * KV_WG * CAP
// values (a multiple of 4) are read once: each invocation keeps its CAP quads
// of x, dy and w in registers between the reduction and the output. Longer rows
// read x and dy twice (vec4 when dim % 4 == 0, else one value at a time).
#extension GL_EXT_control_flow_attributes : require
#define KV_WG 256
#define CAP 8u
layout(local_size_x = KV_WG) in;

#ifdef KV_ADDR
#include "addr.glsl"
layout(push_constant) uniform Push { KvF32 x, w, dy, r, dx; uint rows; uint dim; } p;
#define X p.x.v
#define W p.w.v
#define DY p.dy.v
#define R p.r.v
#define DX p.dx.v
#define X4 KvVec4(p.x).v
#define W4 KvVec4(p.w).v
#define DY4 KvVec4(p.dy).v
#define DX4 KvVec4(p.dx).v
#else
layout(std430, set = 0, binding = 0) readonly buffer XB { float X[]; };
layout(std430, set = 0, binding = 1) readonly buffer WB { float W[]; };
layout(std430, set = 0, binding = 2) readonly buffer DYB { float DY[]; };
layout(std430, set = 0, binding = 3) readonly buffer RB { float R[]; };
layout(std430, set = 0, binding = 4) writeonly buffer DXB { float DX[]; };
// The same buffers as vec4s: rows whose length is a multiple of 4 move 16 bytes per access.
layout(std430, set = 0, binding = 0) readonly buffer X4B { vec4 X4[]; };
layout(std430, set = 0, binding = 1) readonly buffer W4B { vec4 W4[]; };
layout(std430, set = 0, binding = 2) readonly buffer DY4B { vec4 DY4[]; };
layout(std430, set = 0, binding = 4) writeonly buffer DX4B { vec4 DX4[]; };
layout(push_constant) uniform Push { uint rows; uint dim; } p;
#endif

#include "reduce.glsl"

void main()
{
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint base = row * p.dim;
        float rb = R[row];
        float acc = 0.0;
        if (p.dim % 4u == 0u && p.dim / 4u <= KV_WG * CAP) {
            uint b4 = base / 4u, d4 = p.dim / 4u;
            vec4 xs[CAP], ds[CAP], ws[CAP];
            [[unroll]] for (uint c = 0u; c < CAP; c++) {
                uint i = gl_LocalInvocationID.x + c * KV_WG;
                xs[c] = i < d4 ? X4[b4 + i] : vec4(0.0);
                ds[c] = i < d4 ? DY4[b4 + i] : vec4(0.0);
                ws[c] = i < d4 ? W4[i] : vec4(0.0);
            }
            [[unroll]] for (uint c = 0u; c < CAP; c++) {
                uint i = gl_LocalInvocationID.x + c * KV_WG;
                if (i < d4) {
                    vec4 t = ds[c] * xs[c] * ws[c];
                    acc += (t.x + t.y) + (t.z + t.w);
                }
            }
            float s = kv_wg_sum(acc);
            float coeff = s * rb * rb / float(p.dim);
            [[unroll]] for (uint c = 0u; c < CAP; c++) {
                uint k = gl_LocalInvocationID.x + c * KV_WG;
                if (k < d4) DX4[b4 + k] = rb * (ds[c] * ws[c] - xs[c] * coeff);
            }
        } else if (p.dim % 4u == 0u) {
            uint b4 = base / 4u, d4 = p.dim / 4u;
            for (uint i = gl_LocalInvocationID.x; i < d4; i += KV_WG) {
                vec4 t = DY4[b4 + i] * X4[b4 + i] * W4[i];
                acc += (t.x + t.y) + (t.z + t.w);
            }
            float s = kv_wg_sum(acc);
            float coeff = s * rb * rb / float(p.dim);
            for (uint k = gl_LocalInvocationID.x; k < d4; k += KV_WG)
                DX4[b4 + k] = rb * (DY4[b4 + k] * W4[k] - X4[b4 + k] * coeff);
        } else {
            for (uint i = gl_LocalInvocationID.x; i < p.dim; i += KV_WG)
                acc += DY[base + i] * X[base + i] * W[i];
            float s = kv_wg_sum(acc);
            float coeff = s * rb * rb / float(p.dim);
            for (uint k = gl_LocalInvocationID.x; k < p.dim; k += KV_WG)
                DX[base + k] = rb * (DY[base + k] * W[k] - X[base + k] * coeff);
        }
    }
}

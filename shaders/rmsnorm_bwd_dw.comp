#version 450
// dw[i] = sum_b dy[b,i] * x[b,i] * r[b]. A workgroup owns WX adjacent columns
// (coalesced reads along a row); its WY rows of invocations split the row
// range, then fold their partial sums through shared memory. Grid-stride
// over column tiles.
#define WX 64
#define WY 16 // 1024 invocations: enough loads in flight when the columns are few
layout(local_size_x = WX, local_size_y = WY) in;

#ifdef KV_ADDR
#include "addr.glsl"
layout(push_constant) uniform Push { KvF32 x, dy, r, dw; uint rows; uint dim; } p;
#define X p.x.v
#define DY p.dy.v
#define R p.r.v
#define DW p.dw.v
#else
layout(std430, set = 0, binding = 0) readonly buffer XB { float X[]; };
layout(std430, set = 0, binding = 1) readonly buffer DYB { float DY[]; };
layout(std430, set = 0, binding = 2) readonly buffer RB { float R[]; };
layout(std430, set = 0, binding = 3) writeonly buffer DWB { float DW[]; };
layout(push_constant) uniform Push { uint rows; uint dim; } p;
#endif

shared float part[WY][WX];

void main()
{
    uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
    for (uint c0 = gl_WorkGroupID.x * WX; c0 < p.dim; c0 += gl_NumWorkGroups.x * WX) {
        uint col = c0 + lx;
        float acc = 0.0;
        if (col < p.dim)
            for (uint b = ly; b < p.rows; b += WY) {
                uint i = b * p.dim + col;
                acc += DY[i] * X[i] * R[b];
            }
        part[ly][lx] = acc;
        barrier();
        if (ly == 0u && col < p.dim) {
            float t = 0.0;
            for (uint k = 0u; k < WY; k++) t += part[k][lx];
            DW[col] = t;
        }
        barrier();
    }
}

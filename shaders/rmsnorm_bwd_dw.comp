#version 450
// dw[i] = sum_b dy[b,i] * x[b,i] * r[b]. A workgroup owns WX adjacent columns
// (coalesced reads along a row); its WY rows of invocations split the row
// range, then fold their partial sums through shared memory. Grid-stride
// over column tiles.
#define WX 64
#define WY 16 // 1024 invocations: enough loads in flight when the columns are few
layout(local_size_x = WX, local_size_y = WY) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, set = 0, binding = 2) readonly buffer R { float r[]; };
layout(std430, set = 0, binding = 3) writeonly buffer DW { float dw[]; };
layout(push_constant) uniform Push { uint rows; uint dim; } p;

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
                acc += dy[i] * x[i] * r[b];
            }
        part[ly][lx] = acc;
        barrier();
        if (ly == 0u && col < p.dim) {
            float t = 0.0;
            for (uint k = 0u; k < WY; k++) t += part[k][lx];
            dw[col] = t;
        }
        barrier();
    }
}

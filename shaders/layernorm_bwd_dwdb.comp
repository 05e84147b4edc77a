#version 450
// layernorm-bwd stage dwdb (layernorm_bwd.kernel.json), per column c:
//   dw[c] = sum_r dy[r,c] * (x[r,c] - mean[r]) * rstd[r],  db[c] = sum_r dy[r,c].
// A workgroup owns WX adjacent columns (coalesced reads along a row); its WY
// rows of invocations split the rows, then fold their partial sums through
// shared memory. Column tiles grid-strided.
#define WX 64
#define WY 16
layout(local_size_x = WX, local_size_y = WY) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, set = 0, binding = 2) readonly buffer MEAN { float mean[]; };
layout(std430, set = 0, binding = 3) readonly buffer RSTD { float rstd[]; };
layout(std430, set = 0, binding = 4) writeonly buffer DW { float dw[]; };
layout(std430, set = 0, binding = 5) writeonly buffer DB { float db[]; };
layout(push_constant) uniform Push { uint rows; uint dim; } p;

shared float pw[WY][WX], pb[WY][WX];

void main()
{
    const uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
    for (uint c0 = gl_WorkGroupID.x * WX; c0 < p.dim; c0 += gl_NumWorkGroups.x * WX) {
        const uint col = c0 + lx;
        float aw = 0.0, ab = 0.0;
        if (col < p.dim)
            for (uint r = ly; r < p.rows; r += WY) {
                const uint i = r * p.dim + col;
                aw += dy[i] * ((x[i] - mean[r]) * rstd[r]);
                ab += dy[i];
            }
        pw[ly][lx] = aw;
        pb[ly][lx] = ab;
        barrier();
        if (ly == 0u && col < p.dim) {
            float tw = 0.0, tb = 0.0;
            for (uint k = 0u; k < WY; k++) {
                tw += pw[k][lx];
                tb += pb[k][lx];
            }
            dw[col] = tw;
            db[col] = tb;
        }
        barrier();
    }
}

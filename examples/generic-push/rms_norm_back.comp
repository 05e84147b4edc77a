#version 450
// RMSNorm backward in the style of a generic operator library: the incoming
// gradient already multiplied by the weight (g = dy * w) in binding 0, x in
// binding 1, dx in binding 2; element types from -D A_TYPE/B_TYPE/D_TYPE;
// one workgroup per row, the row from the workgroup id as
// z * 262144 + y * 512 + x. It computes dx of x / rms(x) for g:
//   r = 1 / sqrt(sum(x^2) / KX + eps),  dx = r * g - x * r^3 * sum(x * g) / KX
// and has no r or dw output.
#include "common.glsl"

#define WG 128
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer Grad { A_TYPE g[]; };
layout(binding = 1) readonly buffer Src { B_TYPE xs[]; };
layout(binding = 2) writeonly buffer Dst { D_TYPE dst[]; };

shared FLOAT_TYPE part_xx[WG];
shared FLOAT_TYPE part_xg[WG];

void main() {
    const uint row = gl_WorkGroupID.z * 262144u + gl_WorkGroupID.y * 512u + gl_WorkGroupID.x;
    if (row >= p.KY) {
        return; // the whole workgroup: row is uniform in it
    }
    const uint t = gl_LocalInvocationID.x;
    const uint base = row * p.KX;
    FLOAT_TYPE sxx = FLOAT_TYPE(0.0), sxg = FLOAT_TYPE(0.0);
    for (uint c = t; c < p.KX; c += WG) {
        FLOAT_TYPE xi = FLOAT_TYPE(xs[base + c]);
        FLOAT_TYPE gi = FLOAT_TYPE(g[base + c]);
        sxx += xi * xi;
        sxg += xi * gi;
    }
    part_xx[t] = sxx;
    part_xg[t] = sxg;
    barrier();
    for (uint h = WG / 2; h > 0u; h >>= 1) {
        if (t < h) {
            part_xx[t] += part_xx[t + h];
            part_xg[t] += part_xg[t + h];
        }
        barrier();
    }
    const FLOAT_TYPE n = FLOAT_TYPE(p.KX);
    const FLOAT_TYPE r = FLOAT_TYPE(1.0) / sqrt(part_xx[0] / n + FLOAT_TYPE(p.param1));
    const FLOAT_TYPE coeff = r * r * r * part_xg[0] / n;
    for (uint c = t; c < p.KX; c += WG) {
        dst[base + c] = D_TYPE(r * FLOAT_TYPE(g[base + c]) - FLOAT_TYPE(xs[base + c]) * coeff);
    }
}

#version 450
// rope-bwd (rope_bwd.kernel.json): the rotary embedding's backward. The
// forward rotates pairs (a, b) of each head's vector by the angle of its
// position s and frequency i: (a cos - b sin, b cos + a sin); the backward
// rotates dy back: da = dy_a cos + dy_b sin, db = dy_b cos - dy_a sin.
// layout 0 (half-split, the Llama/NeoX way): a = j, b = j + half;
// layout 1 (interleaved, GPT-J's): a = 2i, b = 2i + 1.
// cos and sin come from the given tables, or (angles = computed) from
// s * base^(-i / half). Elementwise, grid-strided.
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, set = 0, binding = 1) readonly buffer C { float cosv[]; };
layout(std430, set = 0, binding = 2) readonly buffer S { float sinv[]; };
layout(std430, set = 0, binding = 3) writeonly buffer DX { float dx[]; };
#include "grid.glsl"

layout(push_constant) uniform Push { uint seq; uint heads; uint half_; uint layout_; uint angles; float base; } p;

void main()
{
    const uint d = 2u * p.half_, n = p.seq * p.heads * d;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint e = gl_GlobalInvocationID.x; e < n; e = kv_next(e, stride, n)) {
        const uint j = e % d, s = e / (p.heads * d), row = e - j;
        uint i, partner;
        float sgn;
        if (p.layout_ == 0u) {
            i = j % p.half_;
            partner = (j + p.half_) % d;
            sgn = j < p.half_ ? 1.0 : -1.0;
        } else {
            i = j / 2u;
            partner = j + 1u - 2u * (j % 2u);
            sgn = j % 2u == 0u ? 1.0 : -1.0;
        }
        float c, sn;
        if (p.angles == 0u) {
            c = cosv[s * p.half_ + i];
            sn = sinv[s * p.half_ + i];
        } else {
            const float th = float(s) * exp(-(float(i) / float(p.half_)) * log(p.base));
            c = cos(th);
            sn = sin(th);
        }
        dx[e] = dy[e] * c + sgn * dy[row + partner] * sn;
    }
}

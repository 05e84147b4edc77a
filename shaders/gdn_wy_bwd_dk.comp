#version 450
// gdn-wy-bwd stage dk: dk[b, t, kh, c] = bf16(sum over the heads / kv_heads value
// heads h = kh * ratio + r of dkh[b, t, h, c]), f32 accumulation in r order (as
// FLA's dk.view(B, T, Hg, ratio, K).sum(3) of its bf16 per-head dk).
// One invocation per element of dk, grid-strided.
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { uint batch; uint seq; uint heads; uint kv_heads; uint dk; uint dv; } p;
layout(std430, binding = 0) readonly buffer DKH { uint16_t dkh[]; };
layout(std430, binding = 1) writeonly buffer DK { uint16_t dko[]; };

uint bf16_bits(float f)
{
    uint u = floatBitsToUint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x40u;
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}
float bf16_float(uint h) { return uintBitsToFloat(h << 16); }

void main()
{
    const uint ratio = p.heads / p.kv_heads, n = p.batch * p.seq * p.kv_heads * p.dk;
    const uint stride = gl_NumWorkGroups.x * 256u;
    for (uint e = gl_GlobalInvocationID.x; e < n; e += stride) {
        uint col = e % p.dk, row = e / p.dk; // row = (b * seq + t) * kv_heads + kh
        uint first = ((row / p.kv_heads) * p.heads + (row % p.kv_heads) * ratio) * p.dk + col;
        float s = 0.0;
        for (uint r = 0u; r < ratio; r++) s += bf16_float(uint(dkh[first + r * p.dk]));
        dko[e] = uint16_t(bf16_bits(s));
    }
}

#version 450
// gdn-wy-bwd stage dk: dk[b, t, kh, c] = bf16(sum over the heads / kv_heads value
// heads h = kh * ratio + r of dkh[b, t, h, c]), f32 accumulation in r order (as
// FLA's dk.view(B, T, Hg, ratio, K).sum(3) of its bf16 per-head dk).
// One invocation per 8 columns where dk % 8 == 0 (16-byte reads and writes),
// per element otherwise; grid-strided.
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { uint batch; uint seq; uint heads; uint kv_heads; uint dk; uint dv; } p;
layout(std430, binding = 0) readonly buffer DKH { uint16_t dkh[]; };
layout(std430, binding = 1) writeonly buffer DK { uint16_t dko[]; };
layout(std430, binding = 0) readonly buffer DKH8 { uvec4 dkh8[]; };
layout(std430, binding = 1) writeonly buffer DK8 { uvec4 dko8[]; };

uint bf16_bits(float f)
{
    uint u = floatBitsToUint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x40u;
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}
float bf16_float(uint h) { return uintBitsToFloat(h << 16); }

void main()
{
    const uint ratio = p.heads / p.kv_heads, w = p.dk % 8u == 0u ? 8u : 1u, d = p.dk / w;
    const uint n = p.batch * p.seq * p.kv_heads * d, stride = gl_NumWorkGroups.x * 256u;
    for (uint e = gl_GlobalInvocationID.x; e < n; e += stride) {
        uint col = e % d, row = e / d; // row = (b * seq + t) * kv_heads + kh; col in units of w
        uint first = ((row / p.kv_heads) * p.heads + (row % p.kv_heads) * ratio) * d + col;
        if (w == 1u) {
            float s = 0.0;
            for (uint r = 0u; r < ratio; r++) s += bf16_float(uint(dkh[first + r * d]));
            dko[e] = uint16_t(bf16_bits(s));
            continue;
        }
        float s[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        for (uint r = 0u; r < ratio; r++) {
            uvec4 x = dkh8[first + r * d];
            for (uint c = 0u; c < 8u; c++) s[c] += bf16_float((x[c / 2u] >> (16u * (c % 2u))) & 0xffffu);
        }
        uvec4 o;
        for (uint c = 0u; c < 4u; c++) o[c] = bf16_bits(s[2u * c]) | (bf16_bits(s[2u * c + 1u]) << 16);
        dko8[e] = o;
    }
}

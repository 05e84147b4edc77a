// f16 values packed two to a uint (element e is the low half of word e/2 when
// e is even), so the f16 paths need no 16-bit storage or float16 arithmetic.
float kv_f16_load(uint word, uint e) { vec2 v = unpackHalf2x16(word); return (e & 1u) == 0u ? v.x : v.y; }

// f32 -> f16 bits with round-to-nearest-even, by integer operations: the
// conversion instructions' rounding mode is not fixed by Vulkan. NaN stays a
// quiet NaN; overflow gives +-Inf; underflow gives subnormals and signed zero.
uint kv_f32_to_f16(float f)
{
    uint x = floatBitsToUint(f);
    uint sign = (x >> 16) & 0x8000u;
    uint ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)
        return sign | 0x7c00u | (ax > 0x7f800000u ? (0x0200u | ((ax >> 13) & 0x3ffu)) : 0u);
    int e = int(ax >> 23) - 127;
    if (e > 15) return sign | 0x7c00u;
    uint mant = (ax & 0x7fffffu) | (ax >= 0x00800000u ? 0x800000u : 0u);
    int lsb_exp = (e < -14 ? -14 : e) - 10;
    int src_lsb = ax >= 0x00800000u ? e - 23 : -149;
    int shift = lsb_exp - src_lsb;
    if (shift > 31) return sign;
    uint q = mant >> uint(shift);
    uint rem = mant & ((1u << uint(shift)) - 1u);
    uint half_ = 1u << uint(shift - 1);
    if (rem > half_ || (rem == half_ && (q & 1u) != 0u)) q++;
    uint bits = e < -14 ? q : (uint(e + 15) << 10) + (q - 0x400u);
    if (bits >= 0x7c00u) return sign | 0x7c00u;
    return sign | bits;
}

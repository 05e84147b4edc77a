#include "core/dtype.h"

#include "core/clones.h"

#include <math.h>
#include <string.h>

static const struct kv_dtype_info infos[KV_DTYPE_COUNT] = {
    [KV_F32] = {"f32", 4, 1, 24, -126},
    [KV_F64] = {"f64", 8, 1, 53, -1022},
    [KV_F16] = {"f16", 2, 1, 11, -14},
    [KV_BF16] = {"bf16", 2, 1, KV_BF16_PRECISION, KV_BF16_EMIN},
    [KV_U8] = {"u8", 1, 0, 0, 0},
    [KV_I32] = {"i32", 4, 0, 0, 0},
    [KV_U16] = {"u16", 2, 0, 0, 0},
};

const struct kv_dtype_info *kv_dtype_info(enum kv_dtype t) { return &infos[t]; }

int kv_dtype_from_name(const char *name)
{
    for (int i = 0; i < KV_DTYPE_COUNT; i++)
        if (strcmp(infos[i].name, name) == 0) return i;
    return -1;
}

uint16_t kv_f32_to_f16(float f)
{
    uint32_t x = kv_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* Inf or NaN: keep NaN quiet and non-zero */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x0200u | ((ax >> 13) & 0x3ffu) : 0));
    int e = (int)(ax >> 23) - 127;  /* unbiased exponent */
    if (e > 15) return (uint16_t)(sign | 0x7c00u);
    uint32_t mant = (ax & 0x7fffffu) | (ax >= 0x00800000u ? 0x800000u : 0);
    /* The result's LSB sits at 2^(max(e,-14)-10); shift the 24-bit f32
     * significand (LSB 2^(e-23), or 2^-149 for subnormals) down to it. */
    int lsb_exp = (e < -14 ? -14 : e) - 10;
    int src_lsb = ax >= 0x00800000u ? e - 23 : -149;
    int shift = lsb_exp - src_lsb; /* >= 13 */
    if (shift > 31) return sign;   /* below half the smallest subnormal */
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    /* q is the significand at the result's LSB; a normal result carries the
     * implicit bit at 2^10, and a carry out of it bumps the exponent, which
     * the biased-exponent addition below does for free. */
    uint32_t bits;
    if (e < -14) bits = q; /* subnormal (or rounded up to the smallest normal) */
    else bits = ((uint32_t)(e + 15) << 10) + (q - 0x400u);
    if (bits >= 0x7c00u) return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | bits);
}

float kv_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return kv_f32_from_bits(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        /* subnormal: m * 2^-24, exact in f32 */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return kv_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

double kv_ulp(enum kv_dtype t, double y)
{
    if (!isfinite(y)) return NAN;
    return kv_ulp_finite(y, infos[t].emin, infos[t].precision);
}

double kv_load_f64(enum kv_dtype t, const void *data, size_t i)
{
    switch (t) {
    case KV_F32: return ((const float *)data)[i];
    case KV_F64: return ((const double *)data)[i];
    case KV_F16: return kv_f16_to_f32(((const uint16_t *)data)[i]);
    case KV_BF16: return kv_bf16_to_f32(((const uint16_t *)data)[i]);
    case KV_U8: return ((const uint8_t *)data)[i];
    case KV_I32: return ((const int32_t *)data)[i];
    case KV_U16: return ((const uint16_t *)data)[i];
    case KV_DTYPE_COUNT: break;
    }
    return NAN;
}

/* v within [lo, hi], NaN as 0: selects without a branch, so that the
 * integer codes' loop below vectorizes. */
static inline double clampd(double v, double lo, double hi)
{
    return v != v ? 0 : v < lo ? lo : v > hi ? hi : v;
}

void kv_store_f64(enum kv_dtype t, void *data, size_t i, double v)
{
    switch (t) {
    case KV_F32: ((float *)data)[i] = (float)v; break;
    case KV_F64: ((double *)data)[i] = v; break;
    /* f64 -> f32 -> f16 could round twice; callers that need a single RNE
     * rounding from f64 to a 16-bit type round to f32 first on purpose only
     * where the kernel does the same. */
    case KV_F16: ((uint16_t *)data)[i] = kv_f32_to_f16((float)v); break;
    case KV_BF16: ((uint16_t *)data)[i] = kv_f32_to_bf16((float)v); break;
    case KV_U8: ((uint8_t *)data)[i] = (uint8_t)nearbyint(clampd(v, 0, 255)); break;
    case KV_I32: ((int32_t *)data)[i] = (int32_t)nearbyint(clampd(v, -2147483648.0, 2147483647.0)); break;
    case KV_U16: ((uint16_t *)data)[i] = (uint16_t)nearbyint(clampd(v, 0, 65535)); break;
    case KV_DTYPE_COUNT: break;
    }
}

/* The integer codes' loop: clampd and nearbyint, as kv_store_f64 makes them. */
#define STORE_CODES(T, LO, HI)                                                                                       \
    for (size_t i = 0; i < n; i++) ((T *)data)[at + i] = (T)nearbyint(clampd(v[i], (LO), (HI)));

KV_CLONES void kv_store_f64_n(enum kv_dtype t, void *data, size_t at, const double *v, size_t n)
{
    switch (t) {
    case KV_F32:
        for (size_t i = 0; i < n; i++) ((float *)data)[at + i] = (float)v[i];
        break;
    case KV_F64: memcpy((double *)data + at, v, n * sizeof *v); break;
    case KV_BF16:
        for (size_t i = 0; i < n; i++) ((uint16_t *)data)[at + i] = kv_f32_to_bf16((float)v[i]);
        break;
    case KV_U8: STORE_CODES(uint8_t, 0, 255) break;
    case KV_U16: STORE_CODES(uint16_t, 0, 65535) break;
    case KV_I32: STORE_CODES(int32_t, -2147483648.0, 2147483647.0) break;
    default:
        for (size_t i = 0; i < n; i++) kv_store_f64(t, data, at + i, v[i]);
        break;
    }
}
#undef STORE_CODES

void kv_store_f64_all(enum kv_dtype t, void *data, const double *v, size_t n)
{
    enum { B = 1 << 14 };
#pragma omp parallel for schedule(static)
    for (size_t i0 = 0; i0 < n; i0 += B) kv_store_f64_n(t, data, i0, v + i0, n - i0 < B ? n - i0 : B);
}

KV_CLONES void kv_load_f64_n(enum kv_dtype t, const void *data, size_t at, double *v, size_t n)
{
    switch (t) {
    case KV_F32:
        for (size_t i = 0; i < n; i++) v[i] = ((const float *)data)[at + i];
        break;
    case KV_F64: memcpy(v, (const double *)data + at, n * sizeof *v); break;
    case KV_BF16:
        for (size_t i = 0; i < n; i++) v[i] = kv_bf16_to_f32(((const uint16_t *)data)[at + i]);
        break;
    default:
        for (size_t i = 0; i < n; i++) v[i] = kv_load_f64(t, data, at + i);
        break;
    }
}

/* Whether elements [i0, i0 + n) of a and b differ only where both are NaN
 * or both are zeros (floats). */
static int same_floats(enum kv_dtype t, const void *a, const void *b, size_t i0, size_t n)
{
    const size_t es = kv_dtype_info(t)->size;
    for (size_t i = i0; i < i0 + n; i++) {
        if (!memcmp((const char *)a + i * es, (const char *)b + i * es, es)) continue;
        double x = kv_load_f64(t, a, i), y = kv_load_f64(t, b, i);
        if (!((x != x && y != y) || (x == 0 && y == 0))) return 0;
    }
    return 1;
}

int kv_same_values(enum kv_dtype t, const void *a, const void *b, size_t n)
{
    enum { B = 1 << 18 }; /* elements a block: a thread's memcmp, the element walk only where it differs */
    const size_t es = kv_dtype_info(t)->size, nb = (n + B - 1) / B;
    const int fl = kv_dtype_info(t)->is_float;
    int same = 1;
#pragma omp parallel for schedule(static) reduction(&& : same) if (nb > 1)
    for (size_t k = 0; k < nb; k++) {
        const size_t i0 = k * B, m = n - i0 < B ? n - i0 : B;
        if (same && memcmp((const char *)a + i0 * es, (const char *)b + i0 * es, m * es))
            same = fl && same_floats(t, a, b, i0, m);
    }
    return same;
}

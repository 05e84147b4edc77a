/* Element types, their bit-exact conversions and unit-in-the-last-place. */
#ifndef KV_DTYPE_H
#define KV_DTYPE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* KV_U16 holds raw 16-bit words: how .npy files carry bf16 bit patterns. */
enum kv_dtype { KV_F32, KV_F64, KV_F16, KV_BF16, KV_U8, KV_I32, KV_U16, KV_DTYPE_COUNT };
/* bf16's significand bits and smallest normal exponent (kv_dtype_info). */
enum { KV_BF16_PRECISION = 8, KV_BF16_EMIN = -126 };

struct kv_dtype_info {
    const char *name;  /* "f32", as in reports and fixtures */
    size_t size;       /* bytes per element */
    int is_float;
    int precision;     /* significand bits including the implicit one */
    int emin;          /* exponent of the smallest normal */
};

const struct kv_dtype_info *kv_dtype_info(enum kv_dtype t);
/* Look up by name; returns -1 if unknown. */
int kv_dtype_from_name(const char *name);

/* Round-to-nearest-even conversions. NaN stays NaN (quiet), signs kept,
 * overflow goes to +-Inf, underflow to subnormals and signed zero. */
uint16_t kv_f32_to_f16(float f);
float kv_f16_to_f32(uint16_t h);
static inline float kv_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t kv_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
/* bf16: inline, for the loops over every element. */
static inline uint16_t kv_f32_to_bf16(float f)
{
    uint32_t x = kv_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign and payload top, force quiet */
        return (uint16_t)((x >> 16) | 0x0040u);
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb; /* overflow to Inf is the correct RNE result */
    return (uint16_t)(x >> 16);
}
static inline float kv_bf16_to_f32(uint16_t b) { return kv_f32_from_bits((uint32_t)b << 16); }
/* y, an f32 value: at a bf16 midpoint, the even neighbour (round to nearest
 * even), where that is finite; else y itself. */
static inline double kv_bf16_even_tie(double y)
{
    const float f = (float)y;
    if ((kv_f32_bits(f) & 0xffffu) != 0x8000u) return y;
    const double r = kv_bf16_to_f32(kv_f32_to_bf16(f));
    return isfinite(r) ? r : y;
}

/* Spacing of dtype t at y (metrics.md): 2^(max(floor(log2|y|), emin) - p + 1).
 * y = 0 uses the spacing at emin. Infinite or NaN y gives NaN. */
double kv_ulp(enum kv_dtype t, double y);
/* kv_ulp for finite y, from the dtype's emin and precision: inline, for the
 * loops over every element. */
static inline double kv_ulp_finite(double y, int emin, int precision)
{
    union { double d; uint64_t u; } v = {.d = y};
    int biased = (int)((v.u >> 52) & 0x7ff), e = biased - 1023;
    /* floor(log2|y|) is the unbiased exponent for normal doubles; zero and
     * double subnormals sit below every emin we use */
    if (biased == 0 || e < emin) e = emin;
    int ue = e - precision + 1; /* >= -1074 for every dtype here */
    v.u = ue >= -1022 ? (uint64_t)(ue + 1023) << 52 : 1ull << (ue + 1074);
    return v.d;
}
/* kv_ulp(KV_BF16, y), inline. */
static inline double kv_ulp_bf16(double y)
{
    return isfinite(y) ? kv_ulp_finite(y, KV_BF16_EMIN, KV_BF16_PRECISION) : NAN;
}

/* Whether two buffers of n elements of dtype t hold the same values: the
 * same bits, or for floats both NaN (any payload) or both zero (either sign). */
int kv_same_values(enum kv_dtype t, const void *a, const void *b, size_t n);

/* Read element i of a buffer of dtype t, widened to float64. */
double kv_load_f64(enum kv_dtype t, const void *data, size_t i);
/* kv_load_f64 for the loops over every element: f32, f64 and bf16 inline,
 * without a call (t a constant in the caller folds the switch away). */
static inline double kv_load_f64_fast(enum kv_dtype t, const void *data, size_t i)
{
    switch (t) {
    case KV_F32: return ((const float *)data)[i];
    case KV_F64: return ((const double *)data)[i];
    case KV_BF16: {
        union { uint32_t u; float f; } v = {.u = (uint32_t)((const uint16_t *)data)[i] << 16};
        return v.f;
    }
    default: return kv_load_f64(t, data, i);
    }
}

/* Store v into element i, rounding to t (RNE for floats; integers saturate,
 * NaN stores as 0). */
void kv_store_f64(enum kv_dtype t, void *data, size_t i, double v);
/* kv_store_f64 of v[0], ..., v[n-1] into elements at, ..., at + n - 1: the
 * same values, a loop per dtype that vectorizes. */
void kv_store_f64_n(enum kv_dtype t, void *data, size_t at, const double *v, size_t n);
/* kv_store_f64_n of all n values, in pieces on every thread (an
 * intermediate's rounded oracle, a prepared input): the same values. */
void kv_store_f64_all(enum kv_dtype t, void *data, const double *v, size_t n);
/* v[0], ..., v[n-1] = kv_load_f64 of elements at, ..., at + n - 1: the same
 * values, a loop per dtype that vectorizes. */
void kv_load_f64_n(enum kv_dtype t, const void *data, size_t at, double *v, size_t n);

#endif

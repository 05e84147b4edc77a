/* Conversions round to nearest even, exhaustively over every 16-bit pattern
 * and on every tie; ULP spacing at zero, subnormals, powers of two and the
 * largest finite value. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/dtype.h"
#include "core/rng.h"

static int is_nan16(uint16_t h, int bf) { return bf ? (h & 0x7f80) == 0x7f80 && (h & 0x7f) : (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

/* Independent reference: scale into an integer significand and use the FPU's
 * round-to-nearest-even (nearbyint), in double precision. */
static double ref_round(double x, int precision, int emin, double maxval)
{
    if (x == 0 || !isfinite(x)) return x;
    int e;
    frexp(x, &e);
    e -= 1;
    if (e < emin) e = emin;
    double q = ldexp(nearbyint(ldexp(x, precision - 1 - e)), e - precision + 1);
    double half_beyond = maxval + ldexp(1.0, (int)floor(log2(maxval)) - precision); /* max + ulp/2 */
    if (fabs(q) > maxval || fabs(x) >= half_beyond) return x > 0 ? INFINITY : -INFINITY;
    return q;
}

static void f16_roundtrip_all(void **s)
{
    (void)s;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = kv_f16_to_f32((uint16_t)h);
        uint16_t back = kv_f32_to_f16(f);
        if (is_nan16((uint16_t)h, 0)) {
            assert_true(isnan(f));
            assert_true(is_nan16(back, 0));
        } else {
            assert_int_equal(back, h);
            /* decode against ldexp */
            uint32_t e = (h >> 10) & 31, m = h & 1023;
            double v = e == 31 ? INFINITY : e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
            if (h & 0x8000) v = -v;
            assert_true((double)f == v);
        }
    }
}

static void bf16_roundtrip_all(void **s)
{
    (void)s;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = kv_bf16_to_f32((uint16_t)h);
        uint16_t back = kv_f32_to_bf16(f);
        if (is_nan16((uint16_t)h, 1)) {
            assert_true(isnan(f));
            assert_true(is_nan16(back, 1));
            assert_int_equal(back & 0x8000, h & 0x8000); /* sign kept */
        } else {
            assert_int_equal(back, h);
        }
    }
}

/* Every tie between adjacent finite values goes to the even one; a hair
 * either side goes to the nearer one. */
static void ties(void **s, int bf)
{
    (void)s;
    for (uint32_t h = 0; h < 0x7fff; h++) {
        uint16_t a = (uint16_t)h, b = (uint16_t)(h + 1);
        if (is_nan16(b, bf) || is_nan16(a, bf)) continue;
        float fa = bf ? kv_bf16_to_f32(a) : kv_f16_to_f32(a);
        float fb = bf ? kv_bf16_to_f32(b) : kv_f16_to_f32(b);
        if (isinf(fa)) continue;
        float mid = (float)(((double)fa + (double)fb) / 2); /* exact in f32 */
        if (isinf(fb)) mid = (float)((double)fa + ((double)fa - (double)(bf ? kv_bf16_to_f32(a - 1) : kv_f16_to_f32(a - 1))) / 2);
        uint16_t even = (a & 1) ? b : a;
        uint16_t got = bf ? kv_f32_to_bf16(mid) : kv_f32_to_f16(mid);
        assert_int_equal(got, even);
        uint16_t gotn = bf ? kv_f32_to_bf16(-mid) : kv_f32_to_f16(-mid);
        assert_int_equal(gotn, even | 0x8000);
        float below = nextafterf(mid, 0), above = nextafterf(mid, INFINITY);
        assert_int_equal(bf ? kv_f32_to_bf16(below) : kv_f32_to_f16(below), a);
        assert_int_equal(bf ? kv_f32_to_bf16(above) : kv_f32_to_f16(above), b);
    }
}
static void f16_ties(void **s) { ties(s, 0); }
static void bf16_ties(void **s) { ties(s, 1); }

/* A million f32 values across the whole exponent range against the reference. */
static void random_against_reference(void **s)
{
    (void)s;
    for (uint64_t i = 0; i < 1000000; i++) {
        uint32_t bits = (uint32_t)(kv_rng_uniform(7, 0, i) * 4294967296.0);
        float f = kv_f32_from_bits(bits);
        if (isnan(f)) continue;
        double r16 = ref_round(f, 11, -14, 65504.0);
        double r_bf = ref_round(f, 8, -126, (double)kv_bf16_to_f32(0x7f7f));
        assert_true((double)kv_f16_to_f32(kv_f32_to_f16(f)) == r16);
        assert_true((double)kv_bf16_to_f32(kv_f32_to_bf16(f)) == r_bf);
    }
}

static void overflow_and_underflow(void **s)
{
    (void)s;
    assert_int_equal(kv_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(kv_f32_to_f16(65519.99f), 0x7bff);
    assert_int_equal(kv_f32_to_f16(65520.0f), 0x7c00); /* the tie rounds to even: Inf */
    assert_int_equal(kv_f32_to_f16(-1e6f), 0xfc00);
    assert_int_equal(kv_f32_to_f16(0x1p-25f), 0x0000); /* tie with 0: even */
    assert_int_equal(kv_f32_to_f16(nextafterf(0x1p-25f, 1)), 0x0001);
    assert_int_equal(kv_f32_to_f16(0x1p-24f), 0x0001);
    assert_int_equal(kv_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(kv_f32_to_f16(FLT_MIN / 4), 0x0000);
    assert_int_equal(kv_f32_to_bf16(FLT_MAX), 0x7f80); /* rounds up to Inf */
    assert_int_equal(kv_f32_to_bf16(-INFINITY), 0xff80);
    assert_true(is_nan16(kv_f32_to_bf16(NAN), 1));
    assert_true(is_nan16(kv_f32_to_f16(NAN), 0));
}

static void ulp_values(void **s)
{
    (void)s;
    assert_true(kv_ulp(KV_F32, 1.0) == 0x1p-23);
    assert_true(kv_ulp(KV_F32, -1.0) == 0x1p-23);
    assert_true(kv_ulp(KV_F32, nextafter(1.0, 0)) == 0x1p-24);
    assert_true(kv_ulp(KV_F32, 0.0) == 0x1p-149);
    assert_true(kv_ulp(KV_F32, 0x1p-126) == 0x1p-149);
    assert_true(kv_ulp(KV_F32, 0x1p-140) == 0x1p-149); /* subnormal */
    assert_true(kv_ulp(KV_F32, 0x1p-1074) == 0x1p-149); /* double subnormal */
    assert_true(kv_ulp(KV_F32, FLT_MAX) == 0x1p104);
    assert_true(kv_ulp(KV_F32, 1024.0) == 0x1p-13);
    assert_true(kv_ulp(KV_F16, 1.0) == 0x1p-10);
    assert_true(kv_ulp(KV_F16, 0.0) == 0x1p-24);
    assert_true(kv_ulp(KV_F16, 0x1p-20) == 0x1p-24);
    assert_true(kv_ulp(KV_F16, 65504.0) == 32.0);
    assert_true(kv_ulp(KV_BF16, 1.0) == 0x1p-7);
    assert_true(kv_ulp(KV_BF16, 0.0) == 0x1p-133);
    assert_true(kv_ulp(KV_BF16, 3.0e38) == 0x1p120);
    assert_true(kv_ulp(KV_F64, 1.0) == 0x1p-52);
    assert_true(isnan(kv_ulp(KV_F32, INFINITY)));
    assert_true(isnan(kv_ulp(KV_F32, NAN)));
    for (int k = -126; k < 128; k++) assert_true(kv_ulp(KV_F32, ldexp(1.0, k)) == ldexp(1.0, k - 23));
    /* the inline bf16 ulp is kv_ulp's: powers of two, their neighbours, zero, subnormals, non-finite */
    for (int k = -140; k < 130; k++) {
        const double y = ldexp(1.0, k), v[] = {y, -y, nextafter(y, 0), 1.5 * y};
        for (int j = 0; j < 4; j++) assert_true(kv_ulp_bf16(v[j]) == kv_ulp(KV_BF16, v[j]));
    }
    assert_true(kv_ulp_bf16(0.0) == kv_ulp(KV_BF16, 0.0));
    assert_true(isnan(kv_ulp_bf16(INFINITY)) && isnan(kv_ulp_bf16(NAN)));
}

/* Same values: NaN payloads and zero signs aside, a bit differs. */
static void same_values(void **state)
{
    (void)state;
    float a[4] = {1.0f, 0.0f, 0.0f, 2.0f}, b[4];
    memcpy(b, a, sizeof a);
    assert_true(kv_same_values(KV_F32, a, b, 4));
    uint32_t qnan = 0x7fc00000u, other = 0xffc01234u;
    memcpy(&a[2], &qnan, 4), memcpy(&b[2], &other, 4);
    b[1] = -0.0f;
    assert_true(kv_same_values(KV_F32, a, b, 4));
    b[3] = nextafterf(2.0f, 3.0f);
    assert_false(kv_same_values(KV_F32, a, b, 4));
    uint16_t h[2] = {0x7fc0, 0x3f80}, g[2] = {0xffc1, 0x3f80};
    assert_true(kv_same_values(KV_BF16, h, g, 2));
    g[1] = 0x3f81;
    assert_false(kv_same_values(KV_BF16, h, g, 2));
    int32_t i[1] = {0}, j[1] = {(int32_t)0x80000000u};
    assert_false(kv_same_values(KV_I32, i, j, 1)); /* integers: bits */
    /* in blocks on every thread (2^18 elements a block): a difference in any
     * block, the last partial one too, is found; NaNs and zeros in several are not */
    const size_t n = 3 * ((size_t)1 << 18) + 5;
    float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    assert_true(x && y);
    for (size_t k = 0; k < n; k++) x[k] = y[k] = (float)k;
    memcpy(&x[7], &qnan, 4), memcpy(&y[7], &other, 4);
    x[0] = 0.0f, y[0] = -0.0f, x[n - 1] = y[n - 1] = 0.0f, y[n - 1] = -0.0f;
    memcpy(&x[(1 << 18) + 3], &qnan, 4), memcpy(&y[(1 << 18) + 3], &other, 4);
    assert_true(kv_same_values(KV_F32, x, y, n));
    const size_t at[3] = {(1 << 18) + 9, 2 * ((size_t)1 << 18), n - 2};
    for (int k = 0; k < 3; k++) {
        y[at[k]] = 0.5f;
        assert_false(kv_same_values(KV_F32, x, y, n));
        assert_true(kv_same_values(KV_F32, x, y, at[k])); /* the elements before it */
        y[at[k]] = x[at[k]];
    }
    free(x), free(y);
}

/* kv_store_f64_n (a loop per dtype, vectorized where the CPU can) stores
 * what kv_store_f64 does element by element: every dtype, NaN, infinities,
 * values past each integer type's range, ties of the integer rounding,
 * f32's rounding and subnormals, at an offset and over lengths that leave a
 * vector loop's remainder. */
static void store_block_is_store(void **state)
{
    (void)state;
    enum { N = 203, AT = 5 };
    double v[N];
    const double special[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, 254.5, 255.5,
                              255.49999999999997, 256.0, -1.0, 65534.5, 65535.5, 65536.0, 2147483646.5,
                              2147483647.5, 2147483648.0, -2147483648.5, -2147483649.0, 1e300, -1e300,
                              0x1.fffffep+127, 0x1.ffffffp+127, 0x1p-149, 0x1p-150, 0x1.8p-150, 0x1.000001p+0,
                              0x1.0000008p+0, 0x1.0000018p+0, 3.0000000000000004, 1e-310};
    const size_t n_special = sizeof special / sizeof *special;
    for (int i = 0; i < N; i++)
        v[i] = (size_t)i < n_special ? special[i] : kv_rng_normal(7, 1, (uint64_t)i) * (i % 3 ? 100.0 : 1e5);
    for (int t = 0; t < KV_DTYPE_COUNT; t++) {
        const size_t es = kv_dtype_info((enum kv_dtype)t)->size;
        for (size_t n = 0; n <= N; n += n < 40 ? 1 : 41) {
            unsigned char a[(N + AT) * 8], b[(N + AT) * 8];
            memset(a, 0xA5, sizeof a), memset(b, 0xA5, sizeof b);
            kv_store_f64_n((enum kv_dtype)t, a, AT, v, n);
            for (size_t i = 0; i < n; i++) kv_store_f64((enum kv_dtype)t, b, AT + i, v[i]);
            if (memcmp(a, b, (N + AT) * es)) fail_msg("%s, n = %zu: not what kv_store_f64 stores", kv_dtype_info((enum kv_dtype)t)->name, n);
        }
    }
}

/* kv_load_f64_n (a loop per dtype, vectorized where the CPU can) reads
 * what kv_load_f64 does element by element, bit for bit: every dtype, every
 * bit pattern of the 16-bit ones (NaN payloads, infinities, subnormals) and
 * a seeded spread of the wider ones, at an offset and over lengths that
 * leave a vector loop's remainder, writing no element past n. */
static void load_block_is_load(void **state)
{
    (void)state;
    enum { N = 65536 + 13, AT = 3 };
    unsigned char *src = malloc((N + AT) * 8);
    double *a = malloc((N + 1) * sizeof *a), *b = malloc(N * sizeof *b);
    assert_non_null(src), assert_non_null(a), assert_non_null(b);
    for (size_t i = 0; i < (N + AT) * 8; i++)
        src[i] = (unsigned char)(i < 2 * AT ? 0 : (uint64_t)(kv_rng_uniform(9, 2, i) * 256));
    for (size_t i = 0; i < 65536; i++) /* the 16-bit patterns in order (AT on) */
        src[2 * (AT + i)] = (unsigned char)i, src[2 * (AT + i) + 1] = (unsigned char)(i >> 8);
    for (int t = 0; t < KV_DTYPE_COUNT; t++)
        for (size_t n = 0; n <= N; n = n < 40 ? n + 1 : n < N - 1 ? N - 1 : n + 1) {
            a[n] = 12345.0; /* a sentinel past the end */
            kv_load_f64_n((enum kv_dtype)t, src, AT, a, n);
            for (size_t i = 0; i < n; i++) b[i] = kv_load_f64((enum kv_dtype)t, src, AT + i);
            if (memcmp(a, b, n * sizeof *a) || a[n] != 12345.0)
                fail_msg("%s, n = %zu: not what kv_load_f64 reads", kv_dtype_info((enum kv_dtype)t)->name, n);
        }
    free(src), free(a), free(b);
}

/* kv_bf16_even_tie: an f32 value at a bf16 midpoint becomes the neighbour
 * with an even last bit (below or above, either sign); any other value, and
 * the midpoint between bf16's largest finite value and Inf, stay. */
static void even_tie(void **state)
{
    (void)state;
    for (uint32_t hb = 0; hb < 0x7f7f; hb += 0x15) /* bf16 bits, positive finite, each with the next */
        for (int sign = 0; sign < 2; sign++) {
            const uint32_t lo = (hb << 16) | (uint32_t)sign << 31;
            float flo, fhi, fmid, fnear;
            const uint32_t hi = lo + 0x10000u, mid = lo + 0x8000u, near = lo + 0x8001u;
            memcpy(&flo, &lo, 4), memcpy(&fhi, &hi, 4), memcpy(&fmid, &mid, 4), memcpy(&fnear, &near, 4);
            const double want = (hb & 1) ? fhi : flo;
            assert_true(kv_bf16_even_tie(fmid) == want);
            assert_true(kv_bf16_even_tie(fnear) == (double)fnear && kv_bf16_even_tie(flo) == (double)flo);
        }
    const uint32_t top = 0x7f7f8000u; /* past it lies Inf */
    float ftop;
    memcpy(&ftop, &top, 4);
    assert_true(kv_bf16_even_tie(ftop) == (double)ftop && kv_bf16_even_tie(-(double)ftop) == -(double)ftop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_values),
        cmocka_unit_test(f16_roundtrip_all), cmocka_unit_test(bf16_roundtrip_all),
        cmocka_unit_test(f16_ties), cmocka_unit_test(bf16_ties),
        cmocka_unit_test(random_against_reference), cmocka_unit_test(overflow_and_underflow),
        cmocka_unit_test(ulp_values), cmocka_unit_test(store_block_is_store),
        cmocka_unit_test(load_block_is_load), cmocka_unit_test(even_tie),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

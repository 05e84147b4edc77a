/* The generator is Philox4x32-10 (known-answer vectors of Random123) and a
 * case's inputs are pinned: these values must never change. */
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

static void philox_known_answers(void **s)
{
    (void)s;
    uint32_t o[4];
    uint32_t c0[4] = {0, 0, 0, 0}, k0[2] = {0, 0};
    kv_philox4x32(c0, k0, o);
    assert_int_equal(o[0], 0x6627e8d5u);
    assert_int_equal(o[1], 0xe169c58du);
    assert_int_equal(o[2], 0xbc57ac4cu);
    assert_int_equal(o[3], 0x9b00dbd8u);
    uint32_t c1[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, k1[2] = {0xa4093822u, 0x299f31d0u};
    kv_philox4x32(c1, k1, o);
    assert_int_equal(o[0], 0xd16cfe09u);
    assert_int_equal(o[1], 0x94fdccebu);
    assert_int_equal(o[2], 0x5001e420u);
    assert_int_equal(o[3], 0x24126ea1u);
}

/* The vector block gives kv_rng_normal's values bit for bit: every lane,
 * the rejected ones (redrawn 32 at a time, in queue order) included, at any start and length;
 * with each level of lanes the CPU has (AVX-512, AVX2), down to the portable ones. */
static void block_is_the_scalar(void)
{
    enum { N = 20011 };
    double *v = malloc(N * sizeof *v);
    assert_non_null(v);
    const uint64_t seeds[] = {1, 7, 0xfedcba9876543210ull};
    const uint64_t starts[] = {0, 5, ((uint64_t)1 << 32) - 100, ((uint64_t)1 << 40) + 3};
    size_t rejected = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++) {
            size_t n = N - (size_t)(a * 7 + b);
            kv_rng_normal_block(seeds[a], (uint32_t)(a + 3 * b), starts[b], n, v);
            for (size_t k = 0; k < n; k++) {
                double w = kv_rng_normal(seeds[a], (uint32_t)(a + 3 * b), starts[b] + k);
                if (memcmp(&v[k], &w, sizeof w)) fail_msg("seed %d start %d element %zu: %a vs %a", a, b, k, v[k], w);
            }
            /* how many lanes took the rejection path: about 1 - pi/4 of them */
            for (size_t k = 0; k < 1000; k++) {
                uint32_t ctr[4] = {(uint32_t)(starts[b] + k), (uint32_t)((starts[b] + k) >> 32), (uint32_t)(a + 3 * b), 0};
                uint32_t key[2] = {(uint32_t)seeds[a], (uint32_t)(seeds[a] >> 32)}, o[4];
                kv_philox4x32(ctr, key, o);
                double u = 2.0 * ((double)(((uint64_t)(o[0] >> 11) << 32) | o[1]) * 0x1p-53) - 1.0;
                double w = 2.0 * ((double)(((uint64_t)(o[2] >> 11) << 32) | o[3]) * 0x1p-53) - 1.0;
                rejected += !(u * u + w * w < 1.0);
            }
        }
    assert_true(rejected > 2000 && rejected < 3200); /* 12000 lanes, 21.5% expected */
    kv_rng_normal_block(1, 0, 0, 0, v); /* nothing */
    free(v);
}

static void normal_block_is_the_scalar(void **s)
{
    (void)s;
    static const char *const name[] = {"portable", "AVX2", "AVX-512"};
    for (int level = kv_rng_lanes(-1);; level--) {
        print_message("the %s lanes\n", name[level]);
        block_is_the_scalar();
        if (level == 0) break;
        kv_rng_lanes(level - 1);
        assert_int_equal(kv_rng_lanes(-1), level - 1);
    }
}

/* The parallel fills: element i is the scalar draw of index i times mul,
 * rounded to f32 (then to bf16, nearest even), over lengths that end inside
 * a block and on its edge. */
static void fills_are_the_scalar(void **s)
{
    (void)s;
    const size_t lens[] = {0, 1, 4095, 4096, 3 * 4096 + 17};
    float *f = malloc(lens[4] * sizeof *f);
    uint16_t *h = malloc(lens[4] * sizeof *h);
    assert_non_null(f), assert_non_null(h);
    for (int q = 0; q < 5; q++) {
        const size_t n = lens[q];
        const double mul = q % 2 ? 0.25 : 3.0;
        memset(f, 0x55, lens[4] * sizeof *f), memset(h, 0x55, lens[4] * sizeof *h);
        kv_rng_normal_f32(11, 4, n, mul, f), kv_rng_normal_bf16(11, 5, n, mul, h);
        for (size_t i = 0; i < lens[4]; i++) {
            const float wf = (float)(kv_rng_normal(11, 4, i) * mul);
            const uint16_t wh = kv_f32_to_bf16((float)(kv_rng_normal(11, 5, i) * mul));
            const uint32_t untouched = 0x55555555u;
            if (i < n ? memcmp(&f[i], &wf, sizeof wf) || h[i] != wh : memcmp(&f[i], &untouched, 4) || h[i] != 0x5555)
                fail_msg("n = %zu, element %zu: not the scalar draw's (or written past n)", n, i);
        }
    }
    free(f), free(h);
}

static void pinned_samples(void **s)
{
    (void)s;
    /* (seed 1, stream 0): if these move, every case's inputs moved. */
    assert_true(kv_rng_normal(1, 0, 0) == 0x1.d99b772fd595ep-1);
    assert_true(kv_rng_normal(1, 0, 1) == 0x1.049a81cc4fb5dp+1);
    assert_true(kv_rng_normal(1, 0, 2) == -0x1.f791d927a500bp-1);
    assert_true(kv_rng_normal(1, 0, 3) == 0x1.acfbd22014edp-2);
    assert_true(kv_rng_uniform(1, 0, 0) == 0x1.c7d00e50a0ebcp-1);
    assert_true(kv_rng_uniform(1, 0, 3) == 0x1.83e79095aef64p-1);
}

static void counter_based(void **s)
{
    (void)s;
    /* Element i depends on (seed, stream, i) only: any order, same value. */
    double a = kv_rng_normal(9, 2, 123456789);
    for (uint64_t i = 0; i < 1000; i++) kv_rng_normal(9, 2, i);
    assert_true(kv_rng_normal(9, 2, 123456789) == a);
    assert_true(kv_rng_normal(10, 2, 123456789) != a);
    assert_true(kv_rng_normal(9, 3, 123456789) != a);
}

static void log_accuracy(void **s)
{
    (void)s;
    for (uint64_t i = 0; i < 200000; i++) {
        double x = ldexp(kv_rng_uniform(3, 0, i) + 0.5, (int)(i % 200) - 100);
        double ref = log(x), got = kv_rng_log(x);
        double ulp = nextafter(fabs(ref), INFINITY) - fabs(ref);
        assert_true(fabs(got - ref) <= 2 * ulp);
    }
    assert_true(kv_rng_log(1.0) == 0.0);
    assert_true(isinf(kv_rng_log(0.0)));
    assert_true(isnan(kv_rng_log(-1.0)));
}

static void normal_moments(void **s)
{
    (void)s;
    const int n = 200000;
    double sum = 0, sum2 = 0, sum4 = 0;
    for (int i = 0; i < n; i++) {
        double v = kv_rng_normal(5, 1, (uint64_t)i);
        sum += v, sum2 += v * v, sum4 += v * v * v * v;
    }
    double mean = sum / n, var = sum2 / n - mean * mean, kurt = sum4 / n;
    /* Standard errors: mean 1/sqrt(n) = 0.0022, var sqrt(2/n) = 0.0032, E[x^4] sqrt(96/n) = 0.022. */
    assert_true(fabs(mean) < 0.011);
    assert_true(fabs(var - 1) < 0.016);
    assert_true(fabs(kurt - 3) < 0.11);
    for (int i = 0; i < 10000; i++) {
        double u = kv_rng_uniform(5, 1, (uint64_t)i);
        assert_true(u >= 0 && u < 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(philox_known_answers), cmocka_unit_test(normal_block_is_the_scalar),
        cmocka_unit_test(fills_are_the_scalar),
        cmocka_unit_test(pinned_samples),
        cmocka_unit_test(counter_based), cmocka_unit_test(log_accuracy), cmocka_unit_test(normal_moments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

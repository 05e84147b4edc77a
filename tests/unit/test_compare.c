/* Metrics of metrics.md: ULP, relative error with its skip count, NMSE, the
 * bound ratio that decides pass/fail, and NaN/Inf matching. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <omp.h>

#include "core/judge.h"

static const struct kv_bound unit_bound = {.n = 16, .k_op = 1, .u_acc = 0x1p-24, .rho = 1};

static void run(const float *c, const double *y, const double *S, size_t n, struct kv_metrics *m)
{
    struct kv_criteria crit;
    kv_criteria_default(&crit);
    assert_int_equal(kv_compare(KV_F32, c, y, S, n, &unit_bound, NULL, &crit, m), KV_OK);
}

static void identical_passes(void **s)
{
    (void)s;
    float c[4] = {1, -2, 0.5f, 0};
    double y[4] = {1, -2, 0.5, 0}, S[4] = {1, 2, 0.5, 0};
    struct kv_metrics m;
    run(c, y, S, 4, &m);
    assert_true(m.pass);
    assert_true(m.max_ulp == 0 && m.max_abs == 0 && m.nmse == 0 && m.max_bound_ratio == 0);
    assert_int_equal(m.rel_skipped, 1); /* y = 0 is below the relative floor */
    assert_int_equal(m.compared, 4);
}

static void one_ulp(void **s)
{
    (void)s;
    float c[2] = {nextafterf(1.0f, 2.0f), 3};
    double y[2] = {1, 3}, S[2] = {1, 3};
    struct kv_metrics m;
    run(c, y, S, 2, &m);
    assert_true(m.max_ulp == 1.0);
    assert_true(m.mean_ulp == 0.5);
    assert_true(m.max_rel == 0x1p-23);
    assert_int_equal(m.worst_index, 0);
    assert_true(m.pass); /* 2^-23 < 8*4*2^-24 + 2^-24 + 2^-24 */
}

static void bound_decides(void **s)
{
    (void)s;
    /* allowed = 8*sqrt(16)*u*S + 1*u*S + 0.5*ulp(y) with y = 1, S = 1:
     * 33u + 0.5*2u = 34u = 34 * 2^-24. */
    double allowed = 34 * 0x1p-24;
    float c_ok[1] = {(float)(1 + 16 * 0x1p-23)}; /* 32u off: inside */
    float c_bad[1] = {(float)(1 + 20 * 0x1p-23)}; /* 40u off: outside */
    double y[1] = {1}, S[1] = {1};
    struct kv_metrics m;
    run(c_ok, y, S, 1, &m);
    assert_true(m.pass);
    assert_true(fabs(m.max_bound_ratio - 32 * 0x1p-24 / allowed) < 1e-12);
    run(c_bad, y, S, 1, &m);
    assert_false(m.pass);
    assert_true(fabs(m.max_bound_ratio - 40 * 0x1p-24 / allowed) < 1e-12);
}

static void nan_inf_matching(void **s)
{
    (void)s;
    float c[6] = {NAN, NAN, 1, INFINITY, -INFINITY, 2};
    double y[6] = {NAN, 1, NAN, INFINITY, INFINITY, INFINITY};
    double S[6] = {1, 1, 1, 1, 1, 1};
    struct kv_metrics m;
    run(c, y, S, 6, &m);
    assert_int_equal(m.nan_match, 1);
    assert_int_equal(m.inf_match, 1);
    assert_int_equal(m.nan_mismatch, 2); /* NaN vs 1, 1 vs NaN */
    assert_int_equal(m.inf_mismatch, 2); /* -Inf vs Inf, 2 vs Inf */
    assert_int_equal(m.compared, 0);
    assert_false(m.pass);
    assert_true(m.has_worst);
    assert_int_equal(m.worst_index, 1); /* the first mismatch */
}

static void nan_match_only_passes(void **s)
{
    (void)s;
    float c[2] = {NAN, 1};
    double y[2] = {NAN, 1}, S[2] = {1, 1};
    struct kv_metrics m;
    run(c, y, S, 2, &m);
    assert_true(m.pass);
    assert_int_equal(m.nan_match, 1);
}

static void nmse_and_rmse(void **s)
{
    (void)s;
    float c[2] = {1.5f, 2};
    double y[2] = {1, 2}, S[2] = {1, 2};
    struct kv_metrics m;
    run(c, y, S, 2, &m);
    assert_true(fabs(m.nmse - 0.25 / 5) < 1e-15);
    assert_true(fabs(m.rmse_ratio - sqrt(0.125) / sqrt(2.5)) < 1e-12);
}

static void overrides(void **s)
{
    (void)s;
    float c[1] = {(float)(1 + 20 * 0x1p-23)};
    double y[1] = {1}, S[1] = {1};
    struct kv_criteria crit;
    struct kv_metrics m;
    kv_criteria_default(&crit);
    crit.max_ulp = 25;
    assert_int_equal(kv_compare(KV_F32, c, y, S, 1, &unit_bound, NULL, &crit, &m), KV_OK);
    assert_true(m.pass);
    crit.max_ulp = 19;
    kv_compare(KV_F32, c, y, S, 1, &unit_bound, NULL, &crit, &m);
    assert_false(m.pass);
    kv_criteria_default(&crit);
    crit.rtol = 1e-5;
    kv_compare(KV_F32, c, y, S, 1, &unit_bound, NULL, &crit, &m);
    assert_true(m.pass);
    crit.rtol = 1e-6;
    kv_compare(KV_F32, c, y, S, 1, &unit_bound, NULL, &crit, &m);
    assert_false(m.pass);
}

static void quantile(void **s)
{
    (void)s;
    double v[100];
    for (int i = 0; i < 100; i++) v[i] = (double)((i * 37) % 100);
    assert_true(kv_quantile(v, 100, 0.99) == 98);
    assert_true(kv_quantile(v, 100, 0.5) == 49);
    double same[7] = {2, 2, 2, 2, 2, 2, 2};
    assert_true(kv_quantile(same, 7, 0.99) == 2);
    double one[1] = {5};
    assert_true(kv_quantile(one, 1, 0.99) == 5);
}

/* Large outputs are compared in parallel chunks: the worst element, the
 * first mismatch and the counts must be those of one sequential pass. */
static void across_chunks(void **s)
{
    (void)s;
    const size_t n = 200003;
    float *c = malloc(n * sizeof *c);
    double *y = malloc(n * sizeof *y), *S = malloc(n * sizeof *S);
    for (size_t i = 0; i < n; i++) c[i] = (float)(1 + (double)(i % 7)), y[i] = c[i], S[i] = y[i];
    c[150001] = nextafterf(nextafterf(c[150001], 100), 100);
    c[199999] = nextafterf(c[199999], 100);
    struct kv_metrics m;
    run(c, y, S, n, &m);
    assert_int_equal(m.compared, n);
    assert_int_equal(m.worst_index, 150001);
    assert_true(m.max_ulp == 2.0);
    assert_true(m.p99_ulp == 0.0);
    c[70000] = NAN;
    c[180000] = INFINITY;
    run(c, y, S, n, &m);
    assert_int_equal(m.compared, n - 2);
    assert_int_equal(m.nan_mismatch, 1);
    assert_int_equal(m.inf_mismatch, 1);
    assert_int_equal(m.worst_index, 70000);
    assert_false(m.pass);
    free(c), free(y), free(S);
}

/* Codes: exact, or the other side of a tie, or the flushed model's code;
 * anything else fails and is shown, and the counts say which was which. */
static void codes(void **s)
{
    (void)s;
    uint8_t c[6] = {3, 4, 7, 0, 9, 5};
    double y[6] = {3, 5, 7, 2, 9, 5}, S[6] = {0};
    int16_t tie[6] = {-1, 4, -1, 3, -1, 6}, flush[6] = {-1, -1, -1, 0, -1, -1};
    struct kv_allow a = {NULL, tie, flush, NULL, NULL, NULL, NULL};
    struct kv_criteria crit;
    struct kv_metrics m;
    kv_criteria_default(&crit);
    assert_int_equal(kv_compare(KV_U8, c, y, S, 6, &unit_bound, &a, &crit, &m), KV_OK);
    assert_true(m.integer && m.pass);
    assert_int_equal(m.exact, 4);
    assert_int_equal(m.ambiguous, 3);
    assert_int_equal(m.tie_explained, 1);
    assert_int_equal(m.flush_explained, 1);
    assert_int_equal(m.unexplained, 0);
    assert_true(m.max_abs == 2 && m.max_bound_ratio == 0);
    c[5] = 4; /* a tie allows 6, not 4 */
    kv_compare(KV_U8, c, y, S, 6, &unit_bound, &a, &crit, &m);
    assert_false(m.pass);
    assert_int_equal(m.unexplained, 1);
    assert_int_equal(m.worst_index, 5);
    assert_true(isinf(m.max_bound_ratio));
    kv_compare(KV_U8, c, y, S, 6, &unit_bound, NULL, &crit, &m); /* no allowances: three differ */
    assert_int_equal(m.unexplained, 3);
    assert_int_equal(m.worst_index, 1);
}

/* A flush entry flagged as a pair offers its code and the one above it (the
 * flushed model's own tie), and nothing below; one with a span of 3, its
 * code and the three above. */
static void flush_pairs(void **s)
{
    (void)s;
    uint8_t c[4] = {4, 5, 0, 3};
    double y[4] = {3, 3, 3, 3}, S[4] = {0};
    int16_t flush[4] = {4 | KV_FLUSH_PAIR, 4 | KV_FLUSH_PAIR, 0 | KV_FLUSH_PAIR, 2 | KV_FLUSH_PAIR};
    struct kv_allow a = {NULL, NULL, flush, NULL, NULL, NULL, NULL};
    struct kv_criteria crit;
    struct kv_metrics m;
    kv_criteria_default(&crit);
    kv_compare(KV_U8, c, y, S, 4, &unit_bound, &a, &crit, &m);
    assert_true(m.pass && m.flush_explained == 3 && m.exact == 1 && m.unexplained == 0);
    c[1] = 6, c[2] = 2; /* neither is two codes' */
    kv_compare(KV_U8, c, y, S, 4, &unit_bound, &a, &crit, &m);
    assert_false(m.pass);
    assert_int_equal(m.unexplained, 2);
    assert_int_equal(m.flush_explained, 1);
    assert_int_equal(m.worst_index, 1);
    /* a span of 3 (a device whose min and max alone flush): the code and the three above */
    const int16_t span = (int16_t)(2 | 3 * KV_FLUSH_PAIR);
    assert_true(kv_flush_code(span) == 2 && kv_flush_other(span) == 5);
    for (int k = 0; k < 8; k++) assert_int_equal(kv_flush_offers(span, k), k >= 2 && k <= 5);
}

/* A per-element slack widens only its own element and is counted. */
static void slack(void **s)
{
    (void)s;
    float c[2] = {1.5f, 2.5f};
    double y[2] = {1, 2}, S[2] = {1, 2}, sl[2] = {0.5, 0.25};
    struct kv_allow a = {sl, NULL, NULL, NULL, NULL, NULL, NULL};
    struct kv_criteria crit;
    struct kv_metrics m;
    kv_criteria_default(&crit);
    kv_compare(KV_F32, c, y, S, 2, &unit_bound, &a, &crit, &m);
    assert_false(m.pass); /* element 1 is 0.5 off with 0.25 allowed */
    sl[1] = 0.5;
    kv_compare(KV_F32, c, y, S, 2, &unit_bound, &a, &crit, &m);
    assert_true(m.pass);
    assert_int_equal(m.slack_used, 2);
}

/* A float output's second legal value is met only exactly, and counted. */
static void alternative(void **s)
{
    (void)s;
    float c[2] = {1.0f, 1.0f};
    double y[2] = {1e-38, 1e-38}, S[2] = {1e-38, 1e-38}, alt[2] = {1.0, NAN};
    struct kv_allow a = {NULL, NULL, NULL, alt, NULL, NULL, NULL};
    struct kv_criteria crit;
    struct kv_metrics m;
    kv_criteria_default(&crit);
    kv_compare(KV_F32, c, y, S, 2, &unit_bound, &a, &crit, &m);
    assert_false(m.pass); /* element 1 has no alternative */
    assert_int_equal(m.worst_index, 1);
    c[1] = 1e-38f, alt[0] = 0.5;
    kv_compare(KV_F32, c, y, S, 2, &unit_bound, &a, &crit, &m);
    assert_false(m.pass); /* 1 is not the alternative 0.5 */
    alt[0] = 1.0;
    kv_compare(KV_F32, c, y, S, 2, &unit_bound, &a, &crit, &m);
    assert_true(m.pass);
    assert_int_equal(m.slack_used, 1);
}

/* Inf where a finite y lies past the dtype's range (round to nearest
 * overflows), and Inf or NaN where the terms' magnitudes pass the f32
 * accumulator's range: legal; an Inf below the range, or of the other sign,
 * is a mismatch. */
static void overflow(void **s)
{
    (void)s;
    const struct kv_bound b32 = {.n = 4, .k_op = 1, .u_acc = 0x1p-24, .rho = 1};
    uint16_t c[3] = {0xFF80, 0x7FC0, 0x7F80}; /* bf16 -Inf, NaN, +Inf */
    /* -3.40e38: past bf16's largest (3.3895e38) plus half its ulp, within f32's */
    double y[3] = {-3.40e38, 2.0, 3.0e38}, S[3] = {3.40e38, 1e39, 3.0e38};
    struct kv_criteria crit;
    struct kv_metrics m;
    kv_criteria_default(&crit);
    kv_compare(KV_BF16, c, y, S, 2, &b32, NULL, &crit, &m);
    assert_true(m.pass);
    assert_int_equal(m.inf_match, 1);
    assert_int_equal(m.overflow_ok, 1); /* element 1's terms pass f32's range */
    kv_compare(KV_BF16, c, y, S, 3, &b32, NULL, &crit, &m);
    assert_false(m.pass); /* 3.0e38 rounds to a finite bf16, and its terms stay in range */
    assert_int_equal(m.inf_mismatch, 1);
    c[0] = 0x7F80; /* +Inf for -3.40e38 */
    kv_compare(KV_BF16, c, y, S, 2, &b32, NULL, &crit, &m);
    assert_false(m.pass);
    assert_int_equal(m.inf_mismatch, 1);
    assert_int_equal(m.worst_index, 0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Past KV_JUDGE_EXACT_P99 elements the p99 ULP comes from the histogram: at
 * most 2^-10 of the exact nearest-rank value below it, never above; at or
 * under it, exact. */
static void p99_within_its_stated_error(void **s)
{
    (void)s;
    const size_t sizes[] = {KV_JUDGE_EXACT_P99, 300007};
    for (int z = 0; z < 2; z++) {
        const size_t n = sizes[z];
        float *c = malloc(n * sizeof *c);
        double *y = malloc(n * sizeof *y), *S = malloc(n * sizeof *S), *d = malloc(n * sizeof *d);
        assert_true(c && y && S && d);
        for (size_t i = 0; i < n; i++) {
            /* ULP errors spread over 2^-3 .. 2^9: y = 1.5 + d ulp(1.5) */
            d[i] = ldexp(1.0 + (double)((i * 2654435761u) % 1000003) / 1000003.0, (int)(i % 13) - 3);
            c[i] = 1.5f, y[i] = 1.5 + d[i] * 0x1p-23, S[i] = 1e9;
        }
        struct kv_metrics m;
        run(c, y, S, n, &m);
        qsort(d, n, sizeof *d, cmp_double);
        double exact = d[(size_t)ceil(0.99 * (double)n) - 1];
        /* y was rounded to a double: the ULP errors are d's within 2^-40 */
        if (z == 0) assert_true(fabs(m.p99_ulp - exact) <= exact * 0x1p-40);
        else assert_true(m.p99_ulp <= exact * (1 + 0x1p-40) && m.p99_ulp >= exact * (1 - 0x1p-10));
        assert_true(m.pass);
        free(c), free(y), free(S), free(d);
    }
}

/* Every metric and the whole distribution are the same on 1, 2 or 5 threads. */
static void same_on_any_thread_count(void **s)
{
    (void)s;
    const size_t n = 5 * 65536 + 17;
    const int64_t shape[2] = {(int64_t)(n / 17), 17};
    float *c = malloc(n * sizeof *c);
    double *y = malloc(n * sizeof *y), *S = malloc(n * sizeof *S);
    assert_true(c && y && S);
    for (size_t i = 0; i < n; i++) {
        y[i] = sin((double)i) * 3, c[i] = (float)y[i], S[i] = fabs(y[i]) + 1;
        if (i % 9973 == 0) c[i] = nextafterf(c[i], 10.0f); /* equal ratios at many places: ties by index */
    }
    c[200001] = NAN, c[70001] = c[70001] * 1.01f, c[300001] = c[300001] * 1.001f;
    struct kv_criteria crit;
    kv_criteria_default(&crit);
    struct kv_metrics m[3];
    struct kv_error_dist *d = calloc(3, sizeof *d);
    const int threads[3] = {1, 2, 5};
    for (int k = 0; k < 3; k++) {
        omp_set_num_threads(threads[k]);
        assert_int_equal(kv_judge(KV_F32, c, y, S, n, NULL, 2, shape, &unit_bound, NULL, &crit, &m[k], &d[k]), KV_OK);
    }
    for (int k = 1; k < 3; k++) {
        assert_memory_equal(&m[0], &m[k], sizeof m[0]);
        assert_memory_equal(d[0].ulp, d[k].ulp, sizeof d[0].ulp);
        assert_memory_equal(d[0].ratio, d[k].ratio, sizeof d[0].ratio);
        assert_memory_equal(d[0].map, d[k].map, sizeof d[0].map);
        assert_memory_equal(d[0].bad, d[k].bad, sizeof d[0].bad);
        assert_int_equal(d[0].n_worst, d[k].n_worst);
        for (int w = 0; w < d[0].n_worst; w++) {
            assert_int_equal(d[0].worst[w].index, d[k].worst[w].index);
            assert_true(d[0].worst[w].ratio == d[k].worst[w].ratio);
        }
    }
    /* max_rel, which the pass divides for only where it can grow: that of every element */
    double max_rel = 0, max_ulp = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(c[i])) continue;
        double e = fabs((double)c[i] - y[i]), ulp = kv_ulp(KV_F32, y[i]);
        if (fabs(y[i]) >= 0x1p-126 && e / fabs(y[i]) > max_rel) max_rel = e / fabs(y[i]);
        if (e / ulp > max_ulp) max_ulp = e / ulp;
    }
    assert_true(m[0].max_rel == max_rel);
    assert_true(m[0].max_ulp == max_ulp);
    assert_false(m[0].pass);
    assert_int_equal(m[0].worst_index, 200001);       /* the mismatch is shown */
    assert_int_equal(d[0].worst[0].index, 200001);    /* mismatches first */
    assert_int_equal(d[0].worst[1].index, 70001);     /* then the larger ratio; equal ones by index */
    omp_set_num_threads(omp_get_num_procs());
    free(c), free(y), free(S), free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identical_passes), cmocka_unit_test(one_ulp), cmocka_unit_test(bound_decides),
        cmocka_unit_test(nan_inf_matching), cmocka_unit_test(nan_match_only_passes),
        cmocka_unit_test(nmse_and_rmse), cmocka_unit_test(overrides), cmocka_unit_test(quantile),
        cmocka_unit_test(across_chunks), cmocka_unit_test(codes), cmocka_unit_test(flush_pairs),
        cmocka_unit_test(slack),
        cmocka_unit_test(alternative), cmocka_unit_test(overflow), cmocka_unit_test(p99_within_its_stated_error),
        cmocka_unit_test(same_on_any_thread_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

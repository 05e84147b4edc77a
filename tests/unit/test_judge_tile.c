/* The judge's vectorized tile arithmetic (judge_tile.c, compiled for the
 * CPU at hand: AVX-512, AVX2 or the baseline) gives, element by element, the
 * values the scalar definitions give: the error, its ULPs (kv_ulp), the bound,
 * the ratio, the p99's bin, the flags, the tile's maxima and counts, and
 * its counts of zero ULP errors and of ratios in each of the distribution's
 * bins (kv_dist_ratio_bin); for f32, bf16 and f64 outputs, with and without
 * the other legal value, a bound of its own and a slack (added where the
 * ratio without it is over 1, in a pass of its own or after one without
 * it), over finite, zero, subnormal, huge and non-finite values, and over
 * tiles of finite pairs alone. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/dtype.h"
#include "core/errdist.h"
#include "core/judge_tile.h"

#define N 300 /* a whole tile and a partial one */

static uint64_t bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* The p99 histogram's bin, written as judge.h describes it. */
static uint64_t q_bin(double u)
{
    if (u < 0x1p-80) return 0;
    if (u >= 0x1p80) return KV_Q_BINS - 1;
    int e;
    double m = frexp(u, &e); /* u = m 2^e, m in [0.5, 1) */
    return 1 + ((uint64_t)(e - 1 + KV_Q_OCT) << KV_Q_SUB) + (uint64_t)((2 * m - 1) * (1 << KV_Q_SUB));
}

/* A value of every kind, by index. */
static double value(unsigned i, double scale)
{
    switch (i % 23) {
    case 0: return 0;
    case 1: return -0.0;
    case 2: return 0x1p-140 * scale; /* an f32 subnormal */
    case 3: return 0x1p-1060;        /* an f64 subnormal */
    case 4: return 3e38 * scale;
    case 5: return i % 2 ? NAN : INFINITY;
    default: return (double)((int)(i * 2654435761u % 20001) - 10000) / 997.0 * scale;
    }
}

/* finite: no pair that is not finite, so that the tile takes its vector
 * loops for the ratio's distribution (a tile with one counts element by
 * element) */
static void one(enum kv_dtype t, int with_alt, int with_lam, int tol, int with_slack, int finite, int slack_first)
{
    static double y[N], S[N], alt[N], lam[N], fix[N], slack[N];
    static float c32[N];
    static double c64[N];
    static uint16_t c16[N];
    void *cand = t == KV_F32 ? (void *)c32 : t == KV_F64 ? (void *)c64 : (void *)c16;
    for (unsigned i = 0; i < N; i++) {
        y[i] = value(i, 1.0);
        if (finite && !(fabs(y[i]) < 1e30)) y[i] = 1.25; /* c, up to 1025 y, stays finite in f32 and bf16 */
        S[i] = fabs(y[i]) * (1 + i % 3);
        double c = y[i] * (1 + ((i % 7) - 3) * 0x1p-22) + (i % 11 == 0 ? 1e-3 : 0);
        if (i % 29 == 3 && !finite) c = -INFINITY;
        if (i % 31 == 4 && !finite) c = NAN;
        kv_store_f64(t, cand, i, c);
        alt[i] = i % 5 == 0 ? kv_load_f64(t, cand, i) : 1.5;
        lam[i] = fabs(y[i]) * 0x1p-20, fix[i] = i % 4 ? 0 : 0x1p-30;
        /* none, enough (c is up to 1025 y), too little, NaN */
        slack[i] = i % 3 == 0 ? 0 : i % 3 == 1 ? 4096 * fabs(y[i]) + 1 : i % 4 ? 0x1p-40 : NAN;
    }
    double edge[KV_DIST_RATIO_BINS + 1] = {0}; /* the reference's, kv_dist_ratio_bin's */
    for (int i = 1; i < KV_DIST_RATIO_BINS; i++) edge[i] = kv_dist_ratio_edge(i);
    edge[KV_DIST_RATIO_BINS] = INFINITY;
    struct kv_tile_tables tab;
    kv_tile_tables_init(&tab);
    const struct kv_dtype_info *ti = kv_dtype_info(t);
    const double c1 = 3e-7, c2 = 5e-8, half_rho = 0.5, lambda = 8, floor_rel = ldexp(1.0, ti->emin);
    const double at = 1e-6, rt = 1e-4;
    static struct kv_tile tile;
    for (size_t i0 = 0; i0 < N; i0 += KV_TILE) {
        const size_t n = N - i0 < KV_TILE ? N - i0 : KV_TILE;
        struct kv_tile_in in = {.t = t, .cand = cand, .y = y + i0, .S = S + i0, .alt = with_alt ? alt + i0 : NULL,
                                .lam = with_lam ? lam + i0 : NULL, .fix = with_lam ? fix + i0 : NULL,
                                .slack = with_slack ? slack + i0 : NULL, .c1 = c1,
                                .c2 = c2, .half_rho = half_rho, .lambda = lambda, .floor_rel = floor_rel,
                                .emin = ti->emin, .prec = ti->precision, .tol = tol, .at = at, .rt = rt,
                                .tab = &tab, .dist = 1, .slack_first = slack_first};
        kv_judge_tile(&in, i0, n, &tile);
        double max_e = 0, max_u = 0, max_rel = 0, max_ratio = -1;
        uint64_t skipped = 0, over = 0, alts = 0, fails_tol = 0, odd = 0, slacked = 0, uzero = 0;
        uint64_t rcount[KV_DIST_RATIO_BINS + 1] = {0};
        for (size_t j = 0; j < n; j++) {
            const size_t i = i0 + j;
            const double c = kv_load_f64(t, cand, i), yy = y[i];
            if (!isfinite(c) || !isfinite(yy)) {
                assert_int_equal(tile.flag[j], KV_TILE_ODD);
                odd++;
                continue;
            }
            double e = fabs(c - yy);
            const int hit = with_alt && e > 0 && c == alt[i];
            if (hit) e = 0;
            assert_int_equal(tile.flag[j], hit ? KV_TILE_ALT : 0);
            const double ulp = kv_ulp(t, yy);
            double base = with_lam ? lambda * lam[i] + fix[i] + half_rho * ulp : c1 * S[i] + c2 * S[i] + half_rho * ulp;
            const int past = with_slack && e / base > 1;
            if (past) base += slack[i];
            const double u = e / ulp, ratio = e / base;
            slacked += past && ratio <= 1;
            assert_true(bits(tile.e[j]) == bits(e));
            assert_true(bits(tile.u[j]) == bits(u));
            assert_true(bits(tile.base[j]) == bits(base));
            assert_true(bits(tile.ratio[j]) == bits(ratio));
            assert_true(bits(tile.e2[j]) == bits(e * e) && bits(tile.y2[j]) == bits(yy * yy));
            assert_int_equal(tile.qbin[j], q_bin(u));
            uzero += u == 0;
            /* NaN (0 / 0 where f64's half ulp of 0 underflows): the last bin, as judge.c always put it */
            rcount[ratio == 0    ? KV_DIST_RATIO_BINS
                   : isnan(ratio) ? KV_DIST_RATIO_BINS - 1
                                  : kv_dist_ratio_bin(ratio, edge)]++;
            max_e = fmax(max_e, e), max_u = fmax(max_u, u);
            if (fabs(yy) >= floor_rel) max_rel = fmax(max_rel, e / fabs(yy));
            else skipped++;
            if (ratio > max_ratio) max_ratio = ratio;
            over += past ? !(ratio <= 1) : ratio > 1, alts += hit, fails_tol += tol && e > at + rt * fabs(yy);
        }
        assert_true(tile.max_e == (int64_t)bits(max_e) && tile.max_u == (int64_t)bits(max_u));
        assert_true(tile.max_rel == (int64_t)bits(max_rel));
        assert_true(max_ratio < 0 ? tile.max_ratio == -1 : tile.max_ratio == (int64_t)bits(max_ratio));
        assert_int_equal(tile.rel_skipped, skipped);
        assert_int_equal(tile.over, over);
        assert_int_equal(tile.alt, alts);
        assert_int_equal(tile.fails_tol, fails_tol);
        assert_int_equal(tile.odd, odd);
        assert_int_equal(tile.slacked, slacked);
        assert_int_equal(tile.uzero, uzero);
        for (int k = 0; k <= KV_DIST_RATIO_BINS; k++) assert_int_equal(tile.rcount[k], rcount[k]);
        int bins = 0; /* the ratios spread over several bins, zeros and NaN apart */
        for (int k = 0; k < KV_DIST_RATIO_BINS - 1; k++) bins += rcount[k] > 0;
        assert_true(bins >= 3 && rcount[KV_DIST_RATIO_BINS] > 0);
        /* the cases are there */
        assert_true((finite ? odd == 0 : odd > 0) && over > 0 && (!with_alt || alts > 0) && (!with_slack || slacked > 0));
    }
}

static void every_kind(void **s)
{
    (void)s;
    const enum kv_dtype types[] = {KV_F32, KV_BF16, KV_F64};
    for (int k = 0; k < 3; k++)
        for (int v = 0; v < 64; v++)
            one(types[k], v & 1, (v >> 1) & 1, (v >> 2) & 1, (v >> 3) & 1, (v >> 4) & 1, v >> 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(every_kind)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

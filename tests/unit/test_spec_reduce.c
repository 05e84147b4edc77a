/* The spec evaluator's long reductions, walked with their lanes across the
 * range (32 outer elements at once, 300 terms: kv_ev_reduce's inner walk,
 * a block of 256 terms at a time): each element's terms in order, as a
 * short one's; a max's and a min's by the rule that takes one term after
 * another (the first NaN, else the first term at the extreme, +0 and -0
 * equal), with the chosen term's magnitude. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/judge.h"
#include "specs/spec.h"
#include "spec_make.h"

/* A long reduction over the arrays' last index with many outer elements at
 * once, the outer index read only through an expression (32 lanes, 300
 * terms: walked with its lanes across the range, which reads memory in
 * order): each element's terms in order, as a short one's. */
static void test_long_reduction(void **st)
{
    (void)st;
    enum { N = 300 };
    float a[N], b[N], cc[N];
    int32_t lab[N];
    for (int i = 0; i < N; i++)
        a[i] = (float)((i % 7) - 3) * 0.37f + 0.001f * (float)i, b[i] = 1.0f / (float)(i + 3),
        cc[i] = (float)((i * 13) % 11) - 5.5f, lab[i] = i;
    struct kv_spec *s = make(OUT("o", "n") "," OUT("q", "n"),
                             "\"o[i] = sum(j in 0..n, a[j] * b[n - 1 - i])\","
                             "\"q[i] = sum(j in 0..n, a[n - 1 - i] * c[j] + b[j])\"",
                             KV_OK);
    struct kv_case c;
    run(s, &c, N, a, b, cc, lab, 0);
    for (int i = 0; i < N; i++) {
        double o = 0, oa = 0, q = 0;
        for (int j = 0; j < N; j++) {
            const double t = (double)a[j] * b[N - 1 - i];
            o += t, oa += fabs(t), q += (double)a[N - 1 - i] * cc[j] + b[j];
        }
        near(c.y[4][i], o, 0), near(c.y[5][i], q, 0);
        near(c.lam[4][i], sqrt((double)N) * u * oa, 1e-12);
    }
    kv_case_free(&c);
    kv_spec_free(s);
}

/* A long sum's peak, seen in its overflow flag: the largest peak of any
 * term, wherever in the range it lies. The one product past f32's range is
 * a[270] * b[i] (past the first block of 256 terms), in the rows where
 * b[i] = 1e10; times c[270] = 1e-20 the term, and so the sum, is back in
 * range, and only the term's peak tells. Elsewhere every product is in
 * range. */
static void test_long_sum_peak(void **st)
{
    (void)st;
    enum { N = 300 };
    float a[N], b[N], cc[N];
    int32_t lab[N];
    for (int i = 0; i < N; i++)
        a[i] = (float)((i * 5) % 9) - 4.0f, b[i] = i % 3 ? (float)(i % 3) : 1e10f, cc[i] = 1, lab[i] = 0;
    a[270] = 1e30f, cc[270] = 1e-20f;
    struct kv_spec *s = make(OUT("o", "n"), "\"o[i] = sum(j in 0..n, a[j] * b[i] * c[j])\"", KV_OK);
    struct kv_case c;
    run(s, &c, N, a, b, cc, lab, 0);
    for (int i = 0; i < N; i++) assert_int_equal(c.ovf[4][i] != 0, i % 3 == 0);
    kv_case_free(&c);
    kv_spec_free(s);
}

/* max and min of a[j] * b[i] over j: rows with ties (a holds 13 values), +0
 * and -0 terms (b[i] = 0 or -0: every term a zero, the first one's sign
 * kept; a[j] = -0), and NaN terms (0 * Inf, where b[i] is Inf: the first
 * zero a[j], past the first block of 256 terms in some rows). */
static void test_long_extremes(void **st)
{
    (void)st;
    enum { N = 300 };
    float a[N], b[N], cc[N];
    int32_t lab[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)((i * 7) % 13) - 6.0f, cc[i] = 0, lab[i] = 0;
        b[i] = i % 17 == 3 ? INFINITY : i % 19 == 5 ? -0.0f : (float)(i % 5) - 2.0f;
    }
    for (int j = 0; j < 260; j++) a[j] = a[j] == 0 ? 1.5f : a[j]; /* the first zero terms past 256 */
    a[261] = -0.0f, a[7] = 6.0f, a[200] = 6.0f, a[100] = -6.0f, a[255] = 2.0f; /* a[0] = -6: signs differ */
    struct kv_spec *s = make(OUT("x", "n") "," OUT("q", "n"),
                             "\"x[i] = max(j in 0..n, a[j] * b[i])\", \"q[i] = min(j in 0..n, a[j] * b[i])\"", KV_OK);
    struct kv_case c;
    run(s, &c, N, a, b, cc, lab, 0);
    for (int i = 0; i < N; i++)
        for (int o = 0; o < 2; o++) {
            double cur = o ? INFINITY : -INFINITY, S = 0;
            for (int j = 0; j < N; j++) {
                const double t = (double)a[j] * b[i];
                const int past = o ? t < cur : t > cur;
                if (!isnan(cur) && (isnan(t) || past)) cur = t, S = fabs((double)a[j]) * fabs((double)b[i]);
            }
            const double got = c.y[4 + o][i];
            if (isnan(cur) ? !isnan(got) : memcmp(&got, &cur, sizeof got) != 0)
                fail_msg("%s[%d] is %g, expected %g", o ? "q" : "x", i, got, cur);
            assert_true(isnan(cur) ? isnan(c.S[4 + o][i]) || c.S[4 + o][i] == S : c.S[4 + o][i] == S);
        }
    kv_case_free(&c);
    kv_spec_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_reduction),
        cmocka_unit_test(test_long_sum_peak),
        cmocka_unit_test(test_long_extremes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

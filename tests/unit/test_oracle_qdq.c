/* The qdq-affine oracle: its backward formulas agree with central finite
 * differences of an independent float64 forward, loss = sum(dy * (q*s + b)),
 * in s and b of every group; its codes round-trip within s/2; and the
 * documented edge cases hold (constant groups, exact ties, NaN and Inf,
 * flushed subnormals). */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/compare.h"
#include "core/rng.h"
#include "kernels/kernel.h"
#include "kv_test.h"

struct qdq {
    struct kv_case c;
    int64_t groups, gs;
    int N;
    int w, dy, s, b, q, qdq, ds, db;
};

static void make(struct qdq *x, const char *params, uint64_t seed)
{
    const struct kv_kernel *k = kv_test_case(&x->c, "qdq-affine", params, seed);
    x->groups = x->c.p[kv_param_index(k, "groups")].i;
    x->gs = x->c.p[kv_param_index(k, "group-size")].i;
    x->N = (1 << x->c.p[kv_param_index(k, "bits")].i) - 1;
    x->w = kv_case_tensor(&x->c, "w"), x->dy = kv_case_tensor(&x->c, "dy");
    x->s = kv_case_tensor(&x->c, "scales"), x->b = kv_case_tensor(&x->c, "biases");
    x->q = kv_case_tensor(&x->c, "q"), x->qdq = kv_case_tensor(&x->c, "qdq");
    x->ds = kv_case_tensor(&x->c, "d_scales"), x->db = kv_case_tensor(&x->c, "d_biases");
}

/* loss(s, b) of group g in float64, from the oracle's codes. */
static double loss(const struct qdq *x, int64_t g, double s, double b)
{
    const float *dy = x->c.t[x->dy].data;
    double l = 0;
    for (int64_t j = 0; j < x->gs; j++) l += dy[g * x->gs + j] * (x->c.y[x->q][g * x->gs + j] * s + b);
    return l;
}

static void finite_differences(const char *params)
{
    struct qdq x;
    make(&x, params, 5);
    for (int64_t g = 0; g < x.groups; g++) {
        double s = (float)x.c.y[x.s][g], b = (float)x.c.y[x.b][g];
        if (isnan(s)) continue;
        double h = 1e-3 * fmax(fabs(s), 1.0), hb = 1e-3 * fmax(fabs(b), 1.0);
        double fd_s = (loss(&x, g, s + h, b) - loss(&x, g, s - h, b)) / (2 * h);
        double fd_b = (loss(&x, g, s, b + hb) - loss(&x, g, s, b - hb)) / (2 * hb);
        assert_true(fabs(fd_s - x.c.y[x.ds][g]) <= 1e-9 * (x.c.S[x.ds][g] + 1e-300));
        assert_true(fabs(fd_b - x.c.y[x.db][g]) <= 1e-9 * (x.c.S[x.db][g] + 1e-300));
        for (int64_t j = 0; j < x.gs; j++) /* forward from the float32 (q, s, b) */
            assert_true(x.c.y[x.qdq][g * x.gs + j] == x.c.y[x.q][g * x.gs + j] * s + b);
    }
    kv_case_free(&x.c);
}

static void fd_all(void **state)
{
    (void)state;
    finite_differences("groups=3,group-size=2,bits=8");
    finite_differences("groups=4,group-size=64,bits=4");
    finite_differences("groups=2,group-size=1024,bits=1,dist=outlier");
    finite_differences("groups=12,group-size=8,bits=4,dist=nonfinite");
}

/* Codes lie in [0, N] and dequantize within s/2 of w (finite, unpoisoned). */
static void round_trip(void **state)
{
    (void)state;
    struct qdq x;
    make(&x, "groups=50,group-size=32,bits=3,dist=uniform", 2);
    const float *w = x.c.t[x.w].data;
    for (int64_t i = 0; i < x.groups * x.gs; i++) {
        double q = x.c.y[x.q][i], s = (float)x.c.y[x.s][i / x.gs];
        assert_true(q >= 0 && q <= x.N && q == floor(q));
        assert_true(fabs(x.c.y[x.qdq][i] - w[i]) <= 0.5 * s * (1 + 1e-6));
    }
    kv_case_free(&x.c);
}

static void constant_groups(void **state)
{
    (void)state;
    struct qdq x;
    make(&x, "groups=5,group-size=16,bits=4,dist=constant", 3);
    const float *w = x.c.t[x.w].data;
    for (int64_t i = 0; i < x.groups * x.gs; i++) {
        assert_true(x.c.y[x.s][i / x.gs] == 1.0 && x.c.y[x.q][i] == 0);
        assert_true(x.c.y[x.qdq][i] == w[i]); /* exact round trip */
    }
    kv_case_free(&x.c);
}

/* bits=1 ties (every division by a power of two) are strict and round away
 * from zero; bits=4 ties may go either way, and the alternative is the
 * other neighbour. */
static void ties(void **state)
{
    (void)state;
    struct qdq x;
    make(&x, "groups=20,group-size=8,bits=1,dist=ties", 4);
    for (int64_t i = 0; i < x.groups * x.gs; i++) {
        assert_int_equal(x.c.tie[x.q][i], -1);
        if (i % x.gs >= 2) assert_true(x.c.y[x.q][i] == 1); /* z = 1/2 exactly */
    }
    kv_case_free(&x.c);
    make(&x, "groups=20,group-size=8,bits=4,dist=ties", 4);
    const float *w = x.c.t[x.w].data;
    for (int64_t i = 0; i < x.groups * x.gs; i++) {
        if (i % x.gs < 2) continue;
        double z = ((double)w[i] - (float)x.c.y[x.b][i / x.gs]) / (float)x.c.y[x.s][i / x.gs];
        assert_true(z - floor(z) == 0.5);
        assert_true(x.c.y[x.q][i] == floor(z) + 1);
        assert_int_equal(x.c.tie[x.q][i], (int)floor(z));
    }
    kv_case_free(&x.c);
}

/* Group kinds cycle: NaN, +Inf, -Inf, both, a range at float32's edge
 * (overflowing at g = 4, all FLT_MAX at g = 11: a constant group, scale 1
 * and bias FLT_MAX), a NaN of payload 1 (sign set), plain. */
static void nonfinite(void **state)
{
    (void)state;
    struct qdq x;
    make(&x, "groups=14,group-size=8,bits=4,dist=nonfinite", 6);
    const float *w = x.c.t[x.w].data;
    for (int64_t g = 0; g < x.groups; g++) {
        int poison = g % 7 == 0 || (g % 7 == 4 && (g / 7) % 3 == 0) || g % 7 == 5;
        if (g == 11) assert_true(x.c.y[x.s][g] == 1 && x.c.y[x.b][g] == FLT_MAX);
        assert_int_equal(isnan(x.c.y[x.s][g]) != 0, poison);
        assert_int_equal(isnan(x.c.y[x.b][g]) != 0, poison);
        for (int64_t j = 0; j < x.gs; j++) {
            int64_t i = g * x.gs + j;
            if (poison) assert_true(x.c.y[x.q][i] == 0 && isnan(x.c.y[x.qdq][i]));
            else if (isinf(w[i])) assert_true(x.c.y[x.q][i] == (w[i] > 0 ? x.N : 0));
            else assert_true(isfinite(x.c.y[x.s][g]));
        }
    }
    kv_case_free(&x.c);
}

/* Near 2^-126 some codes change when subnormals flush: the flushed model's
 * code is offered (and differs); all-subnormal groups agree either way. */
static void flushed_subnormals(void **state)
{
    (void)state;
    struct qdq x;
    make(&x, "groups=16,group-size=32,bits=4,dist=subnormal", 1);
    size_t alt = 0;
    for (int64_t i = 0; i < x.groups * x.gs; i++) {
        int64_t g = i / x.gs;
        if (g % 2 == 0) {
            assert_true(x.c.y[x.s][g] == 1.0 && x.c.y[x.q][i] == 0 && x.c.flush[x.q][i] == -1);
            continue;
        }
        if (x.c.flush[x.q][i] >= 0) alt++, assert_true(x.c.flush[x.q][i] != x.c.y[x.q][i]);
    }
    assert_true(alt > 0);
    kv_case_free(&x.c);
}

/* A positive subnormal low value that a device flushes to 0 widens its
 * group's range: the scale it finds is normal (2^-126 and up) where the exact
 * one is not and becomes 1 (seed 404, group 621: 1.18e-38 against 1.13e-38).
 * Such a device, modelled in float32 (flushed operands, correctly rounded
 * operations, its own codes c->flush), must pass the scale within its
 * allowance and its d_scales within the chained allowance, its own rounding
 * of the codes that differ included. */
static void flushed_scale_normal(void **state)
{
    (void)state;
    struct qdq x;
    make(&x, "groups=2050,group-size=2,bits=4,dist=subnormal", 404);
    const float *w = x.c.t[x.w].data, *dy = x.c.t[x.dy].data;
    int seen = 0;
    for (int64_t g = 0; g < x.groups; g++) {
        float lo = INFINITY, hi = -INFINITY;
        for (int64_t j = 0; j < x.gs; j++) {
            float v = fabsf(w[g * x.gs + j]) < FLT_MIN ? 0.0f : w[g * x.gs + j];
            lo = fminf(lo, v), hi = fmaxf(hi, v);
        }
        float r = hi - lo, s = r / (float)x.N;
        if (!(x.c.y[x.s][g] == 1.0 && s >= FLT_MIN && isfinite(s))) continue;
        seen++;
        /* the judge's allowed error (kv_allowed, lambda 8, its half ulp left out) plus the slack */
        assert_true(fabs((double)s - 1.0) <= kv_allowed(&x.c.bound[x.s], NULL, 8, (size_t)g, 1.0, 0) + x.c.slack[x.s][g]);
        /* d_scales on the device's own codes, summed in float32 */
        float acc = 0;
        for (int64_t j = 0; j < x.gs; j++) {
            const size_t i = (size_t)(g * x.gs + j);
            const int code = x.c.flush[x.q][i] >= 0 ? kv_flush_code(x.c.flush[x.q][i]) : (int)x.c.y[x.q][i];
            acc += (float)code * dy[i];
        }
        const double allowed =
            kv_allowed(&x.c.bound[x.ds], NULL, 8, (size_t)g, x.c.S[x.ds][g], 0) + x.c.slack_chain[x.ds][g];
        assert_true(fabs((double)acc - x.c.y[x.ds][g]) <= allowed);
    }
    assert_true(seen > 0);
    kv_case_free(&x.c);
}

/* qdq.chained's allowed error at element i, as the judge makes it: the
 * chained bound (k_op + k_chain, lambda 8, its half ulp left out) plus the
 * chained slack. */
static double chained_allowed(const struct kv_case *c, int qdq, size_t i)
{
    struct kv_bound b = c->bound[qdq];
    b.k_op += c->k_chain[qdq];
    return kv_allowed(&b, NULL, 8, i, c->S[qdq][i], 0) + c->slack_chain[qdq][i];
}

/* One group of bits 4 holding the four values w (and dy, where given), its
 * oracle run. */
static void one_group(struct kv_case *c, const float w[4], const float *dy)
{
    const struct kv_kernel *k = kv_test_inputs(c, "qdq-affine", "groups=1,group-size=4,bits=4", 1);
    memcpy(c->t[kv_case_tensor(c, "w")].data, w, 4 * sizeof *w);
    if (dy) memcpy(c->t[kv_case_tensor(c, "dy")].data, dy, 4 * sizeof *dy);
    assert_int_equal(k->oracle(c), KV_OK);
}

/* A chained forward whose device code is the one across a tie from the
 * oracle's, one step up, from q = 0 in a group whose low value is 0 (a
 * non-negative group, as after a ReLU): the device's value is its own scale
 * alone, within 2.5 ulp of (hi - lo)/N, so up to about 7u past the oracle's
 * float32 s, where the bound has no magnitude at all (S = |0 s| + |0|). Such
 * a device, modelled in float32 (a division within 2.5 ulp: its scale one
 * ulp up and the quotient rounded up onto the tie), passes the chained row. */
static void tie_up_from_zero(void **state)
{
    (void)state;
    struct kv_case c;
    const double exact = 29.85f / 15.0; /* a scale near 2: w's steps are fine next to s's */
    const float s_in = (float)exact, s_dev = nextafterf(s_in, INFINITY);
    const float w[4] = {0, 29.85f, nextafterf(s_in / 2, 0), 1};
    one_group(&c, w, NULL);
    const int qt = kv_case_tensor(&c, "q"), qdq = kv_case_tensor(&c, "qdq");
    assert_true((float)c.y[kv_case_tensor(&c, "scales")][0] == s_in && c.y[qt][2] == 0 && c.tie[qt][2] == 1);
    /* the device: its scale legal (within 6u of exact), its quotient within
     * 2.5 ulp (2^-25 below 1/2) of the exact one, so 1/2 and code 1 */
    assert_true(fabs((double)s_dev - exact) <= 6 * 0x1p-24 * exact);
    assert_true(0.5 - (double)w[2] / s_dev <= 2.5 * 0x1p-25);
    const float y_dev = 1.0f * s_dev + 0.0f;
    assert_true(fabs((double)y_dev - c.y[qdq][2]) <= chained_allowed(&c, qdq, 2));
    kv_case_free(&c);
}

/* Where a code has both alternatives (across a tie, and the flushed model's,
 * whose rounded subtraction sits on the other side of the same tie), the
 * device's code is one of them: qdq.chained's allowance offers that one
 * step (the larger of the two models', at least |s| (1 + 10u)), not the two
 * added; a device code two steps away fails. */
static void one_step_for_two_alternatives(void **state)
{
    (void)state;
    int seen = 0;
    for (uint64_t seed = 1; seed <= 8 && !seen; seed++) {
        struct qdq x;
        make(&x, "groups=4096,group-size=64,bits=4", seed);
        for (int64_t i = 0; i < x.groups * x.gs; i++) {
            if (x.c.tie[x.q][i] < 0 || x.c.flush[x.q][i] != x.c.tie[x.q][i]) continue;
            const int64_t g = i / x.gs;
            const double s = (float)x.c.y[x.s][g], step = x.c.tie[x.q][i] - x.c.y[x.q][i];
            /* one step: the tie's, or the flushed model's (its scale may be an ulp from s_in, times q) */
            const double sc = x.c.slack_chain[x.qdq][i] - 3 * 0x1p-126;
            assert_true(sc >= s * (1 + 10 * 0x1p-24) && sc <= s * (1 + 0x1p-15));
            const double allowed = chained_allowed(&x.c, x.qdq, (size_t)i);
            assert_true(fabs(step * s) <= allowed && fabs(2 * step * s) > allowed);
            seen++;
        }
        kv_case_free(&x.c);
    }
    assert_true(seen > 0);
}

/* A flush may move z onto a tie of its own: in (-30, 30) x 2^-126 with bits
 * 4 (s = 2^-124), the subnormal 2^-127 has z = 7.625 (code 8, far from a
 * tie), but flushed to 0 its z is 7.5 exactly. A flushing device whose scale
 * is one ulp up (a division within 2.5 ulp) gets 7.5 (1 - 2u), code 7: the
 * flushed model's other code, offered as its alternative, and its chained
 * forward within qdq.chained's allowance. */
static void flushed_onto_a_tie(void **state)
{
    (void)state;
    struct kv_case c;
    const float w[4] = {-30 * 0x1p-126f, 30 * 0x1p-126f, 0x1p-127f, 0};
    one_group(&c, w, NULL);
    const int qt = kv_case_tensor(&c, "q"), qdq = kv_case_tensor(&c, "qdq");
    assert_true(c.y[qt][2] == 8 && c.tie[qt][2] == -1);
    /* the device: flushed operand, its scale one ulp up, correctly rounded quotient */
    const float s_dev = nextafterf(0x1p-124f, INFINITY), z_dev = (0.0f - w[0]) / s_dev;
    const int code = (int)floorf(z_dev + 0.5f);
    assert_int_equal(code, 7);
    assert_int_equal(c.flush[qt][2], code);
    const float y_dev = (float)code * s_dev + w[0];
    assert_true(fabs((double)y_dev - c.y[qdq][2]) <= chained_allowed(&c, qdq, 2));
    kv_case_free(&c);
}

/* Where the flushed model's code differs from q, it may itself sit near a
 * tie, whose other side is two codes from q. A scale just above 2^-126,
 * s = (1 + 2^-20) 2^-126, and the group (lo, hi) = (-(4.5 + 48u), 10.5 +
 * 192u) x 2^-126 (exact: hi - lo = 15 s): the largest negative subnormal v
 * has z = 3.5 - 6u (code 3, its tie's other side 4); flushed to 0, z is
 * -lo/s = 4.5 - 24u (code 4, near a tie). A flushing device whose scale is
 * one ulp down and whose quotient is 2 ulps up (a division within 2.5 ulp)
 * gets 4.5, code 5: it must be explained, and d_scales on the device's
 * codes within its chained allowance. */
static void flushed_two_codes_away(void **state)
{
    (void)state;
    const double u = 0x1p-24;
    const float lo = (float)(-(4.5 + 48 * u) * 0x1p-126), hi = (float)((10.5 + 192 * u) * 0x1p-126);
    assert_true((double)lo == -(4.5 + 48 * u) * 0x1p-126 && (double)hi == (10.5 + 192 * u) * 0x1p-126);
    const float w[4] = {lo, hi, -(0x1p-126f - 0x1p-149f), 0}, dy[4] = {0.5f, -0.25f, 1.0f, 0.75f};
    struct kv_case c;
    one_group(&c, w, dy);
    const int qt = kv_case_tensor(&c, "q"), st = kv_case_tensor(&c, "scales"), dst = kv_case_tensor(&c, "d_scales");
    const float s_in = (float)c.y[st][0];
    assert_true((double)s_in == (1 + 0x1p-20) * 0x1p-126);
    assert_true(c.y[qt][2] == 3 && c.y[qt][3] == 4);
    /* the device: flushed v, its scale one ulp down (within 6u of exact),
     * the quotient -lo/s_dev within 2.5 ulp of 4.5, so 4.5 and code 5 */
    const float s_dev = nextafterf(s_in, 0);
    assert_true(s_dev >= FLT_MIN && fabs((double)s_dev - (double)s_in) <= 6 * u * s_in);
    assert_true(fabs(4.5 - (0.0 - (double)lo) / s_dev) <= 2.5 * 0x1p-21);
    const uint8_t dev[4] = {0, 15, 5, 5};
    struct kv_allow a = {NULL, c.tie[qt], c.flush[qt], NULL, NULL, NULL, NULL};
    struct kv_criteria crit;
    struct kv_metrics m;
    kv_criteria_default(&crit);
    assert_int_equal(kv_compare(KV_U8, dev, c.y[qt], c.S[qt], 4, &c.bound[qt], &a, &crit, &m), KV_OK);
    assert_int_equal(m.unexplained, 0);
    assert_true(m.pass);
    /* d_scales on the device's codes, summed in float32 */
    float acc = 0;
    for (int j = 0; j < 4; j++) acc += (float)dev[j] * dy[j];
    const double allowed = kv_allowed(&c.bound[dst], NULL, 8, 0, c.S[dst][0], 0) + c.slack_chain[dst][0];
    assert_true(fabs((double)acc - c.y[dst][0]) <= allowed);
    kv_case_free(&c);
}

/* The normal dist's inputs (a fast path of kv_qdq_inputs) are their
 * definition's, element by element from the scalar draw of each index:
 * w = f32(N(0,1) * scale) (stream 0), dy = f32(N(0,1)) (stream 1); an
 * uneven last batch and a scale other than 1 included. */
static void normal_inputs(void **state)
{
    (void)state;
    const char *const params[] = {"groups=100,group-size=64,scale=3", "groups=4097,group-size=2,scale=1e-30"};
    for (int p = 0; p < 2; p++) {
        struct qdq x;
        make(&x, params[p], 21 + (uint64_t)p);
        const double scale = p ? 1e-30 : 3;
        const float *w = x.c.t[x.w].data, *dy = x.c.t[x.dy].data;
        for (int64_t i = 0; i < x.groups * x.gs; i++)
            if (w[i] != (float)(kv_rng_normal(21 + (uint64_t)p, 0, (uint64_t)i) * scale) ||
                dy[i] != (float)kv_rng_normal(21 + (uint64_t)p, 1, (uint64_t)i))
                fail_msg("%s: element %lld is not its definition's", params[p], (long long)i);
        kv_case_free(&x.c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fd_all), cmocka_unit_test(round_trip), cmocka_unit_test(constant_groups),
        cmocka_unit_test(ties), cmocka_unit_test(nonfinite), cmocka_unit_test(flushed_subnormals),
        cmocka_unit_test(flushed_scale_normal), cmocka_unit_test(normal_inputs),
        cmocka_unit_test(tie_up_from_zero), cmocka_unit_test(one_step_for_two_alternatives),
        cmocka_unit_test(flushed_onto_a_tie), cmocka_unit_test(flushed_two_codes_away),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

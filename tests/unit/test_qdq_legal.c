/* qdq-affine's allowances hold every legal device: a model of the shaders in
 * float32 whose every choice Vulkan leaves open is made at its edges, and
 * whose outputs the judge (kv_compare) must pass against the oracle, for
 * each row that the pipeline judges. The choices:
 * - subnormal operands and results flushed to zero, or kept: by every
 *   instruction, by none, by min and max alone, or by all but min and max
 *   (hardware whose min and max ignore its flush mode, or follow only it);
 * - the scale (hi - lo)/N: any float within 2.5 ulp of the exact quotient of
 *   the device's own float32 range (which is correctly rounded);
 * - each code's quotient (w - lo)/s: any float within 2.5 ulp of exact
 *   (exact where s is a power of two, as the oracle takes it), the farthest
 *   one up, or down, or toward dy's sign, or against it, for every element;
 * - the forward q*s + b: two roundings.
 * The codes rounded half up from the clamped quotient, a non-normal scale 1,
 * as the shaders do. Every distribution at bits 1, 4 and 8, group sizes 2,
 * 32 and 64, several seeds; and groups made at the edges of 2^-126, which
 * the distributions reach too rarely: by hand, and 3000 drawn there. */
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
#include "core/judge.h"
#include "kernels/kernel.h"
#include "kv_test.h"

/* The device's choices for one run. */
struct choice {
    int ftz;   /* subnormals flushed: FTZ_MINMAX by min and max, FTZ_ARITH by the rest */
    int s_off; /* the scale: this many floats from the correctly rounded one */
    int dir;   /* each quotient at its edge: +1 up, -1 down, +2 toward dy's sign, -2 against it */
};

enum { FTZ_MINMAX = 1, FTZ_ARITH = 2 };

static float ftz_of(float x, int ftz) { return ftz && fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

static float step_floats(float x, int k)
{
    for (; k > 0; k--) x = nextafterf(x, INFINITY);
    for (; k < 0; k++) x = nextafterf(x, -INFINITY);
    return x;
}

/* The spacing of floats at the exact value x (finite, nonzero): 2^(e - 23)
 * for x in [2^e, 2^(e+1)), the subnormals' below 2^-126. */
static double ulp_at(double x)
{
    int e;
    frexp(fabs(x), &e); /* |x| in [2^(e-1), 2^e) */
    return ldexp(1.0, (e - 1 < -126 ? -126 : e - 1) - 23);
}

/* A float within 2.5 ulp of the exact x, k floats from the nearest (or the
 * nearest where k is not legal); flushed where ftz. */
static float within(double x, int k, int ftz)
{
    const float r = (float)x;
    if (!isfinite(r) || x == 0) return ftz_of(r, ftz);
    const float c = step_floats(r, k);
    return ftz_of(isfinite(c) && fabs((double)c - x) <= 2.5 * ulp_at(x) ? c : r, ftz);
}

/* The farthest float within 2.5 ulp of x in direction d (+1 up, -1 down). */
static float edge(double x, int d, int ftz)
{
    for (int k = 3 * d; k != 0; k -= d) {
        const float r = within(x, k, ftz);
        if (r != ftz_of((float)x, ftz)) return r;
    }
    return ftz_of((float)x, ftz);
}

static int is_pow2f(float x)
{
    int e;
    return x > 0 && frexpf(x, &e) == 0.5f;
}

/* The device's outputs of one run. */
struct dev {
    float *s, *b, *qdq, *qdq_iso, *ds, *ds_iso, *db;
    uint8_t *q;
};

static void device_group(const struct kv_case *c, const struct choice *ch, int64_t g, int64_t gs, int N, struct dev *o,
                         int ts, int tb, int tq)
{
    const int fm = ch->ftz & FTZ_MINMAX, ftz = ch->ftz & FTZ_ARITH;
    const float *w = (const float *)c->t[0].data + g * gs, *dy = (const float *)c->t[1].data + g * gs;
    float lo = FLT_MAX, hi = -FLT_MAX;
    int nan = 0, finite = 0;
    for (int64_t j = 0; j < gs; j++) {
        const float v = ftz_of(w[j], fm);
        nan |= isnan(v);
        if (isfinite(v)) finite = 1, lo = fminf(lo, v), hi = fmaxf(hi, v);
    }
    const float r = ftz_of(ftz_of(hi, ftz) - ftz_of(lo, ftz), ftz); /* operands and result */
    const int poison = nan || !finite || !isfinite(r);
    float s = N == 1 ? r : within((double)r / N, ch->s_off, ftz); /* by 1 (a power of two): exact */
    if (!(s >= FLT_MIN)) s = 1.0f;
    o->s[g] = poison ? NAN : s, o->b[g] = poison ? NAN : lo;
    /* isolated stages read the oracle's scale and bias and codes, as float32 */
    const float s_in = (float)c->y[ts][g], b_in = (float)c->y[tb][g];
    float acc = 0, acc_iso = 0, accb = 0;
    for (int64_t j = 0; j < gs; j++) {
        const size_t i = (size_t)(g * gs + j);
        int code = 0;
        if (!poison) {
            const float d = ftz_of(ftz_of(w[j], ftz) - ftz_of(lo, ftz), ftz);
            const double zx = (double)d / s;
            const int dir = ch->dir == 2 ? (dy[j] < 0 ? -1 : 1) : ch->dir == -2 ? (dy[j] < 0 ? 1 : -1) : ch->dir;
            float z = is_pow2f(s) || !isfinite(zx) ? ftz_of((float)zx, ftz) : edge(zx, dir, ftz);
            z = fminf(fmaxf(z, 0.0f), (float)N);
            const float t = floorf(z);
            code = (int)t + (z - t >= 0.5f ? 1 : 0);
        }
        o->q[i] = (uint8_t)code;
        o->qdq[i] = ftz_of(ftz_of((float)code * o->s[g], ftz) + ftz_of(o->b[g], ftz), ftz);
        const float qo = (float)c->y[tq][i];
        o->qdq_iso[i] = ftz_of(ftz_of((float)qo * s_in, ftz) + ftz_of(b_in, ftz), ftz);
        const float dyj = ftz_of(dy[j], ftz);
        acc = ftz_of(acc + ftz_of((float)code * dyj, ftz), ftz);
        acc_iso = ftz_of(acc_iso + ftz_of(qo * dyj, ftz), ftz);
        accb = ftz_of(accb + dyj, ftz);
    }
    o->ds[g] = acc, o->ds_iso[g] = acc_iso, o->db[g] = accb;
}

/* One row judged: a failure names the case, the choice and the element. */
static int row(const char *what, const char *params, uint64_t seed, const struct choice *ch, enum kv_dtype dt,
               const void *cand, const double *y, const double *S, size_t n, struct kv_bound b,
               const struct kv_allow *a)
{
    struct kv_criteria crit;
    struct kv_metrics m;
    kv_criteria_default(&crit);
    assert_int_equal(kv_compare(dt, cand, y, S, n, &b, a, &crit, &m), KV_OK);
    static int shown;
    if (m.pass) return 0;
    if (shown++ < 40)
        print_error("%s fails: %s seed %llu, ftz %d, scale %+d floats, quotients %+d: element %zu, ratio %g, "
                    "unexplained %zu\n",
                what, params, (unsigned long long)seed, ch->ftz, ch->s_off, ch->dir, m.worst_index, m.max_bound_ratio,
                m.unexplained);
    return 1;
}

/* Every choice's device on one case (w replaced by w_in where given): the
 * rows that fail. */
static int one_case(const char *params, uint64_t seed, const float *w_in)
{
    struct kv_case c;
    const struct kv_kernel *k = kv_test_inputs(&c, "qdq-affine", params, seed);
    if (w_in) memcpy(c.t[kv_case_tensor(&c, "w")].data, w_in, c.t[kv_case_tensor(&c, "w")].count * sizeof(float));
    assert_int_equal(k->oracle(&c), KV_OK);
    const int ts = kv_case_tensor(&c, "scales"), tb = kv_case_tensor(&c, "biases"), tq = kv_case_tensor(&c, "q");
    const int tf = kv_case_tensor(&c, "qdq"), tds = kv_case_tensor(&c, "d_scales");
    const int tdb = kv_case_tensor(&c, "d_biases");
    assert_true(kv_case_tensor(&c, "w") == 0 && kv_case_tensor(&c, "dy") == 1);
    const int64_t groups = c.p[kv_param_index(k, "groups")].i, gs = c.p[kv_param_index(k, "group-size")].i;
    const int N = (1 << c.p[kv_param_index(k, "bits")].i) - 1;
    const size_t n = (size_t)(groups * gs), ng = (size_t)groups;
    struct dev o = {malloc(ng * 4), malloc(ng * 4), malloc(n * 4), malloc(n * 4), malloc(ng * 4), malloc(ng * 4),
                    malloc(ng * 4), malloc(n)};
    assert_true(o.s && o.b && o.qdq && o.qdq_iso && o.ds && o.ds_iso && o.db && o.q);
    /* min and max flushing apart from the rest differ from the two uniform
     * models only where a value is subnormal: the subnormal dist's groups
     * and the groups made here (no dist) */
    const int mixes = !strstr(params, "dist=") || strstr(params, "dist=subnormal");
    int bad = 0;
    for (int ftz = 0; ftz < 4; ftz++)
        for (int s_off = -3; s_off <= 3; s_off++)
            for (int dir = -2; dir <= 2; dir++) {
                if (dir == 0 || (!mixes && (ftz == FTZ_MINMAX || ftz == FTZ_ARITH))) continue;
                const struct choice ch = {ftz, s_off, dir};
                for (int64_t g = 0; g < groups; g++) device_group(&c, &ch, g, gs, N, &o, ts, tb, tq);
                const struct kv_allow none = {0};
                struct kv_allow as = none, ab = none, aq = none, af = none, afc = none, ads = none, adsc = none,
                                adb = none, art = none;
                as.slack = c.slack[ts], as.alt = c.alt[ts];
                ab.slack = c.slack[tb];
                aq.tie = c.tie[tq], aq.flush = c.flush[tq];
                af.slack = c.slack[tf];
                afc.slack = c.slack_chain[tf];
                ads.slack = c.slack[tds], adsc.slack = c.slack_chain[tds];
                adb.slack = c.slack[tdb];
                art.slack = c.chk[0].slack;
                struct kv_bound bf = c.bound[tf], bds = c.bound[tds];
                bf.k_op += c.k_chain[tf], bds.k_op += c.k_chain[tds];
                bad += row("scales", params, seed, &ch, KV_F32, o.s, c.y[ts], c.S[ts], ng, c.bound[ts], &as);
                bad += row("biases", params, seed, &ch, KV_F32, o.b, c.y[tb], c.S[tb], ng, c.bound[tb], &ab);
                bad += row("q", params, seed, &ch, KV_U8, o.q, c.y[tq], c.S[tq], n, c.bound[tq], &aq);
                bad += row("qdq", params, seed, &ch, KV_F32, o.qdq_iso, c.y[tf], c.S[tf], n, c.bound[tf], &af);
                bad += row("qdq.chained", params, seed, &ch, KV_F32, o.qdq, c.y[tf], c.S[tf], n, bf, &afc);
                bad += row("qdq.roundtrip", params, seed, &ch, KV_F32, o.qdq, c.chk[0].y, c.chk[0].S, n, c.chk[0].bound,
                           &art);
                bad += row("d_scales", params, seed, &ch, KV_F32, o.ds_iso, c.y[tds], c.S[tds], ng, c.bound[tds], &ads);
                bad += row("d_scales.chained", params, seed, &ch, KV_F32, o.ds, c.y[tds], c.S[tds], ng, bds, &adsc);
                bad += row("d_biases", params, seed, &ch, KV_F32, o.db, c.y[tdb], c.S[tdb], ng, c.bound[tdb], &adb);
            }
    free(o.s), free(o.b), free(o.qdq), free(o.qdq_iso), free(o.ds), free(o.ds_iso), free(o.db), free(o.q);
    kv_case_free(&c);
    return bad;
}

static void every_legal_device(void **state)
{
    (void)state;
    static const char *const dists[] = {"normal", "uniform", "outlier", "constant", "subnormal", "ties", "nonfinite"};
    static const char *const shapes[] = {"groups=512,group-size=2", "groups=128,group-size=32",
                                         "groups=64,group-size=64"};
    static const int bits[] = {1, 4, 8};
    int bad = 0;
    for (size_t d = 0; d < sizeof dists / sizeof *dists; d++)
        for (size_t sh = 0; sh < 3; sh++)
            for (size_t b = 0; b < 3; b++)
                for (uint64_t seed = 1; seed <= 4; seed++) {
                    char params[160];
                    snprintf(params, sizeof params, "%s,bits=%d,dist=%s", shapes[sh], bits[b], dists[d]);
                    bad += one_case(params, seed, NULL);
                }
    assert_int_equal(bad, 0);
}

/* qdq.chained's slack of a group of 4 at bits 4 (w) is at most finite
 * at a finite element, and at most inf at a +Inf one. */
static void at_most_chained(const float *w, double finite, double inf)
{
    struct kv_case c;
    const struct kv_kernel *k = kv_test_inputs(&c, "qdq-affine", "groups=1,group-size=4,bits=4", 1);
    memcpy(c.t[kv_case_tensor(&c, "w")].data, w, 4 * sizeof *w);
    assert_int_equal(k->oracle(&c), KV_OK);
    const int tf = kv_case_tensor(&c, "qdq");
    for (int j = 0; j < 4; j++) assert_true(c.slack_chain[tf][j] <= (isinf(w[j]) ? inf : finite));
    kv_case_free(&c);
}

/* A scale just under 2^-126, where a legal division may land at 2^-126:
 * (lo, hi) = (-8, 7 - 2^-20) x 2^-126 at bits 4, whose range 15 x 2^-126 -
 * 2^-146 is exact and whose quotient by 15 is 2^-126 - (8/15) 2^-149. The
 * oracle's float32 scale is the subnormal below 2^-126, so 1 (every code
 * 0); a device whose division gives 2^-126 keeps it, and its codes are the
 * group's spread over 0..15. Each such device must pass. */
static void scale_just_under_2_126(void **state)
{
    (void)state;
    const float lo = -8 * 0x1p-126f, hi = 7 * 0x1p-126f - 0x1p-146f, r = hi - lo;
    assert_true((double)r == 15 * 0x1p-126 - 0x1p-146 && (double)hi - (double)lo == (double)r);
    const double x = (double)r / 15;
    assert_true((float)x < FLT_MIN && within(x, 1, 0) == FLT_MIN); /* 1 for the oracle; a device may keep 2^-126 */
    const float w[4] = {lo, hi, 0x1p-127f, 3 * 0x1p-126f};
    assert_int_equal(one_case("groups=1,group-size=4,bits=4", 1, w), 0);
    /* and no more than that: qdq.chained's slack holds any code with a scale
     * under 2^-125 (the forward's 3 x 2^-126, and (1 + 2N) 2^-126), not a
     * step of the flushed model's scale of 1 */
    at_most_chained(w, (3 + 1 + 2 * 15) * 0x1p-126, 0);
}

/* The flushed model's code near a tie of its own, two codes from q (as in
 * unit.oracle_qdq's flushed_two_codes_away): s = (1 + 2^-20) 2^-126 and the
 * largest negative subnormal, whose exact code is 3 and whose flushed
 * quotient is 4.5 - 24u. Each device must pass, the flushing ones whose
 * scale is a float down and quotient at its upper edge (code 5) included. */
static void flushed_code_near_a_tie(void **state)
{
    (void)state;
    const double u = 0x1p-24;
    const float w[4] = {(float)(-(4.5 + 48 * u) * 0x1p-126), (float)((10.5 + 192 * u) * 0x1p-126),
                        -(0x1p-126f - 0x1p-149f), 0};
    assert_true((double)w[1] - (double)w[0] == 15 * (1 + 0x1p-20) * 0x1p-126);
    assert_int_equal(one_case("groups=1,group-size=4,bits=4", 1, w), 0);
}

/* A +Inf element, whose code is N under any scale, in a group where one
 * legal device's scale is 1 and another's normal, near 2^-126: its value is
 * N x 1 + lo on the one and about N x 2^-126 + lo on the other. Three ways
 * there: the flushed model's scale is 1 where the exact one is normal (a
 * negative subnormal low value flushed to 0 narrows the range), the other
 * way round (a positive one widens it), and a division that may land on
 * either side of 2^-126 with nothing to flush. Each device must pass. */
static void infinite_element_at_a_scale_of_1(void **state)
{
    (void)state;
    const float m = 0x1p-126f;
    const float narrowed[4] = {INFINITY, (float)(-0.9 * 0x1p-126), 14.5f * m, 0};
    const float widened[4] = {INFINITY, (float)(0.5 * 0x1p-126), 15.4f * m, 3 * m};
    const float divided[4] = {-8 * m, 7 * m + 0x1p-146f, INFINITY, 3 * m};
    assert_true(fabs(((double)divided[1] - (double)divided[0]) / 15 - 0x1p-126) < 0x1p-149); /* either side */
    assert_int_equal(one_case("groups=1,group-size=4,bits=4", 1, narrowed), 0);
    assert_int_equal(one_case("groups=1,group-size=4,bits=4", 1, widened), 0);
    assert_int_equal(one_case("groups=1,group-size=4,bits=4", 1, divided), 0);
    /* and no more: at the +Inf element the step N |1 - s| (s under
     * 2^-125), at a finite one a code's step at a scale under 2^-125 */
    const float *const groups[] = {narrowed, widened, divided};
    for (int i = 0; i < 3; i++) at_most_chained(groups[i], (3 + 1 + 2 * 15) * 0x1p-126, 15 + 0x1p-100);
    /* and only there: in a group whose scale (0.2) is far from 2^-126, the
     * +Inf element's slack is the forward's 3 x 2^-126 alone, a finite one's
     * at most a tie's step */
    const float far[4] = {INFINITY, -1, 2, 0.5f};
    at_most_chained(far, 0.2 * (1 + 0x1p-20) + 3 * 0x1p-126, 3 * 0x1p-126);
}

/* A device whose min and max flush while its arithmetic keeps subnormals,
 * at a normal element whose difference from the low value is subnormal:
 * (lo, hi) = (-15, 0.9) x 2^-126 at bits 4, where min and max flush hi to
 * 0, so the scale is 2^-126 (the exact one 1.06 x 2^-126). The element
 * -14.48 x 2^-126 is 0.52 x 2^-126 above lo: that device's quotient is
 * 0.52 (code 1), the exact model's 0.49 (code 0), and the flushed model's 0
 * (its difference flushed). Each device must pass. */
static void subnormal_difference_kept(void **state)
{
    (void)state;
    const float m = 0x1p-126f, w[4] = {-15 * m, 0.9f * m, -14.48f * m, 0};
    assert_true(fabsf(w[2]) >= FLT_MIN && (double)w[2] - (double)w[0] < (double)FLT_MIN);
    assert_int_equal(one_case("groups=1,group-size=4,bits=4", 1, w), 0);
    /* and no more: the element's entry is codes 0 and 1, its code 0 and
     * that device's 1, not a code beyond */
    struct kv_case c;
    const struct kv_kernel *k = kv_test_inputs(&c, "qdq-affine", "groups=1,group-size=4,bits=4", 1);
    memcpy(c.t[kv_case_tensor(&c, "w")].data, w, sizeof w);
    assert_int_equal(k->oracle(&c), KV_OK);
    const int tq = kv_case_tensor(&c, "q"), fl = c.flush[tq][2];
    assert_true(c.y[tq][2] == 0 && fl >= 0 && kv_flush_code(fl) == 0 && kv_flush_other(fl) == 1);
    kv_case_free(&c);
}

/* Groups of 4 drawn at the edges that the distributions reach too rarely:
 * values k x 2^-126 for k in [-20, 20] in steps of 1/1000 (so subnormal,
 * and ranges whose scale lies near 2^-126), subnormals, zeros, +Inf and
 * -Inf, at bits 1 to 8; every legal device must pass each. 3000 groups (a
 * fixed xorshift stream): on the tree before infinite_element_at_a_scale_of_1's
 * fix, one of them failed (a +Inf element with a scale of 1 or normal). */
static void random_groups_near_2_126(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252ull;
    int bad = 0;
    for (int it = 0; it < 3000; it++) {
        float w[4];
        for (int j = 0; j < 4; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const double k = (double)((x >> 8) % 40000) / 1000.0 - 20.0; /* k x 2^-126 */
            const double sub = (double)((x >> 20) % 1000) / 1000.0 * ((x >> 40) & 1 ? 1 : -1); /* subnormal */
            switch (x % 16) {
            case 0: w[j] = INFINITY; break;
            case 1: w[j] = -INFINITY; break;
            case 2: w[j] = 0; break;
            case 3: w[j] = (float)(sub * 0x1p-126); break;
            default: w[j] = (float)(k * 0x1p-126); break;
            }
        }
        char params[64];
        snprintf(params, sizeof params, "groups=1,group-size=4,bits=%d", 1 + (int)((x >> 33) % 8));
        const int b = one_case(params, 1, w);
        if (b) print_error("group (%a, %a, %a, %a) at %s: %d rows fail\n", w[0], w[1], w[2], w[3], params, b);
        bad += b;
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_legal_device), cmocka_unit_test(scale_just_under_2_126),
        cmocka_unit_test(flushed_code_near_a_tie), cmocka_unit_test(infinite_element_at_a_scale_of_1),
        cmocka_unit_test(subnormal_difference_kept), cmocka_unit_test(random_groups_near_2_126),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The gdn-wu inputs and oracle: A is the inverse of I + L for every chunk
 * (including a partial last one), and the spec and exact oracles agree with
 * an independent recomputation of u and w from the stored inputs, with the
 * bf16 stagings (spec) or without (exact); ambiguous stagings only widen w.
 * The spec oracle's exact sums (S 0, the even tie at a midpoint) only where
 * the f32 sum is exact in any order, at their edges, and on --dist grid. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/rng.h"
#include "kernels/kernel.h"
#include "kv_test.h"

#define P "batch=2,seq=70,heads=4,kv-heads=2,dk=16,dv=8"
enum { B = 2, T = 70, H = 4, HG = 2, K = 16, V = 8 };

static double bf(uint16_t h) { return kv_bf16_to_f32(h); }
static double rnd_bf16(double x) { return kv_bf16_to_f32(kv_f32_to_bf16((float)x)); }

static void a_inverts_i_plus_l(void **s)
{
    (void)s;
    struct kv_case c;
    kv_test_case(&c, "gdn-wu", P, 3);
    const uint16_t *k = c.t[kv_case_tensor(&c, "k")].data;
    const float *beta = c.t[kv_case_tensor(&c, "beta")].data, *g = c.t[kv_case_tensor(&c, "g")].data;
    const float *A = c.t[kv_case_tensor(&c, "A")].data;
    for (int b = 0; b < B; b++)
        for (int t0 = 0; t0 < T; t0 += 64)
            for (int h = 0; h < H; h++) {
                int nv = T - t0 < 64 ? T - t0 : 64, kh = h / (H / HG);
                for (int i = 0; i < nv; i++)
                    for (int j = 0; j < nv; j++) { /* ((I + L) A)[i][j] */
                        double s = A[((b * T + t0 + i) * H + h) * 64 + j];
                        for (int m = 0; m < i; m++) {
                            double dot = 0;
                            for (int e = 0; e < K; e++)
                                dot += bf(k[((b * T + t0 + i) * HG + kh) * K + e]) * bf(k[((b * T + t0 + m) * HG + kh) * K + e]);
                            int ri = (b * T + t0 + i) * H + h, rm = (b * T + t0 + m) * H + h;
                            double l = beta[ri] * dot * exp((double)g[ri] - g[rm]);
                            s += l * A[((b * T + t0 + m) * H + h) * 64 + j];
                        }
                        assert_true(fabs(s - (i == j)) < 1e-5);
                    }
            }
    kv_case_free(&c);
}

/* The lowest set bit's exponent of a nonzero finite double. */
static int low_bit(double v)
{
    int e;
    double m = frexp(fabs(v), &e);
    while (m != floor(m)) m *= 2, e--;
    return e;
}

/* The n terms' sum is exact in f32 in any order: their grid 2^q (the lowest
 * set bit over the nonzero terms) is at or past 2^-126 and the sum of their
 * magnitudes at most 2^(q+24); and (as it must then be) the f32 sums forward,
 * backward and pairwise are y. */
static int f32_exact(const double *t, int n, double y)
{
    int q = 100000;
    double mag = 0;
    for (int j = 0; j < n; j++)
        if (t[j] != 0) q = low_bit(t[j]) < q ? low_bit(t[j]) : q, mag += fabs(t[j]);
    if (mag == 0) return y == 0;
    float fw = 0, bw = 0, pw[64];
    for (int j = 0; j < n; j++) fw += (float)t[j], bw += (float)t[n - 1 - j], pw[j] = (float)t[j];
    for (int w = 1; w < n; w *= 2)
        for (int j = 0; j + w < n; j += 2 * w) pw[j] += pw[j + w];
    return q >= -126 && mag <= ldexp(1, q + 24) && fw == y && bw == y && pw[0] == y;
}

/* y (an f32 value) at a bf16 midpoint: the neighbour whose last bit is 0;
 * else y. */
static double even_tie(double y)
{
    uint32_t u;
    const float f = (float)y;
    memcpy(&u, &f, 4);
    const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
    float flo, fhi;
    memcpy(&flo, &lo, 4), memcpy(&fhi, &hi, 4);
    if ((double)f != y || y != 0.5 * ((double)flo + fhi) || !isfinite(fhi)) return y;
    return (lo >> 16) & 1 ? fhi : flo;
}

static void oracles_recompute(int exact)
{
    struct kv_case c;
    const struct kv_kernel *k = kv_test_inputs(&c, "gdn-wu", P, 5);
    c.exact = exact;
    assert_int_equal(k->oracle(&c), KV_OK);
    const uint16_t *kk = c.t[kv_case_tensor(&c, "k")].data, *v = c.t[kv_case_tensor(&c, "v")].data;
    const float *beta = c.t[kv_case_tensor(&c, "beta")].data, *g = c.t[kv_case_tensor(&c, "g")].data;
    const float *A = c.t[kv_case_tensor(&c, "A")].data;
    int tw = kv_case_tensor(&c, "w"), tu = kv_case_tensor(&c, "u");
    size_t flips = 0, zeroed = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                int t0 = t / 64 * 64, nv = T - t0 < 64 ? T - t0 : 64, kh = h / (H / HG);
                for (int col = 0; col < K; col++) {
                    double w = 0, u = 0, Sw = 0, Su = 0, tw_[64], tu_[64];
                    for (int j = 0; j < nv; j++) {
                        int r = (b * T + t0 + j) * H + h;
                        double a = A[((b * T + t) * H + h) * 64 + j];
                        double xw = bf(kk[((b * T + t0 + j) * HG + kh) * K + col]) * beta[r] * exp((double)g[r]);
                        w += a * (exact ? xw : rnd_bf16(xw)), Sw += fabs(a * (exact ? xw : rnd_bf16(xw)));
                        tw_[j] = a * (exact ? xw : rnd_bf16(xw));
                        double xu = col < V ? bf(v[r * V + col]) * beta[r] : 0;
                        u += a * (exact ? xu : rnd_bf16(xu)), Su += fabs(a * (exact ? xu : rnd_bf16(xu)));
                        tu_[j] = a * (exact ? xu : rnd_bf16(xu));
                    }
                    /* each sum over j in order, S's terms rounded products: the same bits; S
                     * is 0 (the spec oracle only) where the f32 sum is exact in any order */
                    size_t ow = (size_t)((b * T + t) * H + h) * K + col, ou = (size_t)((b * T + t) * H + h) * V + col;
                    assert_true((w == c.y[tw][ow] && Sw == c.S[tw][ow]) ||
                                (!exact && c.S[tw][ow] == 0 && c.y[tw][ow] == even_tie(w) && c.slack[tw][ow] == 0 &&
                                 f32_exact(tw_, nv, w)));
                    zeroed += Sw != c.S[tw][ow];
                    if (col < V) {
                        assert_true((u == c.y[tu][ou] && Su == c.S[tu][ou]) ||
                                    (!exact && c.S[tu][ou] == 0 && c.y[tu][ou] == even_tie(u) && f32_exact(tu_, nv, u)));
                        zeroed += Su != c.S[tu][ou];
                    }
                    /* a flip moves one staged value by at most one bf16 step (2^-7 relative) */
                    assert_true(c.slack[tw][ow] <= 0x1p-7 * c.S[tw][ow] * (1 + 1e-12));
                    flips += c.slack[tw][ow] > 0;
                }
            }
    assert_int_equal(flips, c.ambiguous[tw]);
    assert_true(exact ? flips == 0 : flips > 0);
    assert_true(exact ? zeroed == 0 : zeroed > 0); /* a chunk's row 0: A[0][0] = 1 and 0 past it */
    assert_null(c.slack[tu]);
    kv_case_free(&c);
}

static void spec_oracle(void **s) { (void)s; oracles_recompute(0); }
static void exact_oracle(void **s) { (void)s; oracles_recompute(1); }

/* kv_gdn_make_inputs (blocks of draws, in parallel) makes each element as
 * its definition does, from the scalar draw of its own index: k L2-normalised
 * rows of N(0,1) (a row past 4096 normalised from its bf16 values; random:
 * not normalised), v N(0,1), beta = sigmoid(N(0,1)), g the sum over its
 * chunk's steps so far of log sigmoid(N(0,1)) (a 16th of it where dense),
 * clipped at -20; gdn-wy-bwd's dw and du N(0, 1/16). The streams: gdn-wu's
 * tensors k, v, beta, g (0 .. 3); dw's and du's 80 + their tensor numbers. */
static void inputs_case(const char *kernel, const char *params, uint64_t seed, int dist)
{
    struct kv_case c;
    kv_test_inputs(&c, kernel, params, seed);
    const struct kv_tensor *tk = &c.t[kv_case_tensor(&c, "k")], *tv = &c.t[kv_case_tensor(&c, "v")];
    const float *beta = c.t[kv_case_tensor(&c, "beta")].data, *g = c.t[kv_case_tensor(&c, "g")].data;
    const int64_t T = tk->shape[1], H = tv->shape[2], Kd = tk->shape[3], rows = tk->shape[0] * T * tk->shape[2];
    for (int64_t r = 0; r < rows; r++) {
        double nrm = 0;
        for (int64_t e = 0; e < Kd; e++) {
            const double z = kv_rng_normal(seed, 0, (uint64_t)(r * Kd + e));
            nrm += z * z;
        }
        for (int64_t e = 0; e < Kd; e++) {
            const double z = kv_rng_normal(seed, 0, (uint64_t)(r * Kd + e));
            const uint16_t want = dist == 1   ? kv_f32_to_bf16((float)z)
                                  : Kd <= 4096 ? kv_f32_to_bf16((float)(z / sqrt(nrm)))
                                               : kv_f32_to_bf16(kv_bf16_to_f32(kv_f32_to_bf16((float)z)) / (float)sqrt(nrm));
            if (((const uint16_t *)tk->data)[r * Kd + e] != want)
                fail_msg("%s %s: k[%lld]", kernel, params, (long long)(r * Kd + e));
        }
    }
    for (size_t i = 0; i < tv->count; i++)
        if (((const uint16_t *)tv->data)[i] != kv_f32_to_bf16((float)kv_rng_normal(seed, 1, i)))
            fail_msg("%s: v[%zu]", params, i);
    double acc = 0;
    for (int64_t h = 0; h < H; h++)
        for (int64_t bt = 0; bt < tv->shape[0] * T; bt++) {
            const int64_t ri = bt * H + h;
            acc = bt % T % 64 ? acc : 0;
            acc += -log1p(exp(-kv_rng_normal(seed, 3, (uint64_t)ri))) * (dist == 2 ? 1.0 / 16 : 1.0);
            if (beta[ri] != (float)(1 / (1 + exp(-kv_rng_normal(seed, 2, (uint64_t)ri)))) || g[ri] != (float)fmax(acc, -20.0))
                fail_msg("%s %s: beta or g at %lld", kernel, params, (long long)ri);
        }
    for (int t = kv_case_tensor(&c, "dw"), n = 0; t >= 0 && n < 2; t = kv_case_tensor(&c, "du"), n++)
        for (size_t i = 0; i < c.t[t].count; i++)
            if (((const uint16_t *)c.t[t].data)[i] != kv_f32_to_bf16((float)(0.25 * kv_rng_normal(seed, 80 + (uint32_t)t, i))))
                fail_msg("%s: %s[%zu]", params, n ? "du" : "dw", i);
    kv_case_free(&c);
}

static void inputs_by_definition(void **s)
{
    (void)s;
    inputs_case("gdn-wu", P, 3, 0);
    inputs_case("gdn-wu", P ",dist=random", 4, 1);
    inputs_case("gdn-wu", P ",dist=dense", 5, 2);
    inputs_case("gdn-wu", "batch=1,seq=3,heads=2,kv-heads=1,dk=4097,dv=1", 6, 0); /* a key row past 4096 */
    inputs_case("gdn-wu", "batch=1,seq=3,heads=2,kv-heads=1,dk=4097,dv=1,dist=random", 7, 1);
    inputs_case("gdn-wu", "batch=2,seq=65,heads=4100,kv-heads=2050,dk=1,dv=1", 8, 0); /* heads past 4096 */
    inputs_case("gdn-wu", "batch=1,seq=130,heads=100,kv-heads=50,dk=3,dv=2", 11, 0); /* 40 steps of 100 heads a block */
    inputs_case("gdn-wy-bwd", "batch=2,seq=70,heads=4,kv-heads=2,dk=16,dv=8", 9, 0);
    inputs_case("gdn-wy-bwd", "batch=1,seq=130,heads=6,kv-heads=3,dk=700,dv=5", 10, 0); /* 4096 / K rows not whole */
}

/* --dist grid: k and v are -1, 0 or 1 (by thirds of a uniform draw), beta 1,
 * g 0, and A's entry j of row i of a chunk m 2^-9 + f 2^-23 (1 past the
 * chunk's rows): m in [512, 576) on the diagonal, +-[32, 128) at two seeded
 * columns, -1, 0 or 1 elsewhere; f -1 or 1 an eighth of the time each. Every
 * sum is then exact in f32 and the spec oracle's S is 0 throughout (the
 * exact oracle's is not: its terms are not the device's), while y is the sum. */
static double trit(double u) { return u < 1.0 / 3 ? -1 : u < 2.0 / 3 ? 0 : 1; }

static void grid_case(const char *params, uint64_t seed, int exact)
{
    struct kv_case c;
    const struct kv_kernel *k = kv_test_inputs(&c, "gdn-wu", params, seed);
    const struct kv_tensor *tk = &c.t[kv_case_tensor(&c, "k")], *tv = &c.t[kv_case_tensor(&c, "v")];
    const struct kv_tensor *tA = &c.t[kv_case_tensor(&c, "A")];
    const float *beta = c.t[kv_case_tensor(&c, "beta")].data, *g = c.t[kv_case_tensor(&c, "g")].data;
    for (size_t i = 0; i < tk->count; i++)
        if (bf(((const uint16_t *)tk->data)[i]) != trit(kv_rng_uniform(seed, 90, i))) fail_msg("%s: k[%zu]", params, i);
    for (size_t i = 0; i < tv->count; i++)
        if (bf(((const uint16_t *)tv->data)[i]) != trit(kv_rng_uniform(seed, 91, i))) fail_msg("%s: v[%zu]", params, i);
    const int64_t T = tk->shape[1], H = tv->shape[2], rows = tv->shape[0] * T * H;
    for (int64_t r = 0; r < rows; r++) {
        if (beta[r] != 1 || g[r] != 0) fail_msg("%s: beta or g at %lld", params, (long long)r);
        const int64_t t = r / H % T, i = t % 64, n = T - (t - i) < 64 ? T - (t - i) : 64;
        const int64_t j1 = (int64_t)(kv_rng_uniform(seed, 92, (uint64_t)r) * (double)n);
        const int64_t j2 = (int64_t)(kv_rng_uniform(seed, 93, (uint64_t)r) * (double)n);
        for (int64_t j = 0; j < 64; j++) {
            const double u = kv_rng_uniform(seed, 94, (uint64_t)(r * 64 + j)), f = kv_rng_uniform(seed, 95, (uint64_t)(r * 64 + j));
            double m = trit(u);
            if (j == j1 || j == j2) m = u < 0.5 ? -(32 + floor(192 * u)) : 32 + floor(192 * (u - 0.5));
            if (j == i) m = 512 + floor(64 * u);
            const double want = j >= n ? 1 : m * 0x1p-9 + (f < 0.125 ? -1 : f < 0.25 ? 1 : 0) * 0x1p-23;
            const double stored = tA->dtype == KV_F32 ? (float)want : rnd_bf16(want); /* a-bf16: rounded */
            if (kv_load_f64(tA->dtype, tA->data, (size_t)(r * 64 + j)) != stored)
                fail_msg("%s: A[%lld][%lld]", params, (long long)r, (long long)j);
        }
    }
    c.exact = exact;
    assert_int_equal(k->oracle(&c), KV_OK);
    size_t zero = 0, n_out = 0, ties = 0;
    for (int t = 0; t < k->n_tensors; t++)
        if (c.y[t])
            for (size_t e = 0; e < c.t[t].count; e++) zero += c.S[t][e] == 0, n_out++;
    if (exact ? zero == n_out : zero != n_out) fail_msg("%s: %zu of %zu S zero", params, zero, n_out);
    /* y: the sum over the chunk's rows (k and v are the staged values), the
     * even neighbour at a midpoint (the spec oracle) */
    for (int out = 0; out < 2; out++) {
        const struct kv_tensor *x = out ? tk : tv;
        const double *y = c.y[kv_case_tensor(&c, out ? "w" : "u")];
        const int64_t D = x->shape[3], Hx = x->shape[2];
        for (int64_t r = 0; r < rows; r++) {
            const int64_t t = r / H % T, t0 = t - t % 64, n = T - t0 < 64 ? T - t0 : 64, bt0 = r / H - t % 64;
            for (int64_t col = 0; col < D; col++) {
                double sum = 0;
                for (int64_t j = 0; j < n; j++)
                    sum += kv_load_f64(tA->dtype, tA->data, (size_t)(r * 64 + j)) *
                           bf(((const uint16_t *)x->data)[((bt0 + j) * Hx + r % H / (H / Hx)) * D + col]);
                const double want = exact ? sum : even_tie(sum);
                ties += want != sum;
                if (y[r * D + col] != want) fail_msg("%s: %s[%lld]", params, out ? "w" : "u", (long long)(r * D + col));
            }
        }
    }
    if (exact ? ties != 0 : ties == 0) fail_msg("%s: %zu midpoints", params, ties);
    kv_case_free(&c);
}

/* The spec oracle's exact sums at their edges, on made inputs (two rows, k
 * = v = 1, g = 0: each staged value is its row's beta; per head, a 2 x 2 A):
 * S is 0 where every nonzero factor's lowest bit (2^qa over a row of A, 2^qx
 * over the staged column) is at or past 2^-126, q = qa + qx too, and S <=
 * (1 - 2^-6) 2^(q+24); else S stays. */
enum { NH = 11 };
static void exact_sums_edges(void **s)
{
    (void)s;
    struct kv_case c;
    const struct kv_kernel *k = kv_test_inputs(&c, "gdn-wu", "batch=1,seq=2,heads=11,kv-heads=1,dk=1,dv=1", 1);
    uint16_t *kk = c.t[kv_case_tensor(&c, "k")].data, *v = c.t[kv_case_tensor(&c, "v")].data;
    float *beta = c.t[kv_case_tensor(&c, "beta")].data, *g = c.t[kv_case_tensor(&c, "g")].data;
    float *A = c.t[kv_case_tensor(&c, "A")].data;
    const double lim = (1 - 0x1p-6) * 0x1p24; /* 16515072 */
    /* per head: beta of rows 0 and 1, A[0][0..1], A[1][0..1], and S zero or not in u's rows 0 and 1
     * and w's rows 0 and 1 (as bits 0 .. 3) */
    static const struct { double b0, b1, a00, a01, a10, a11; int zero; } hd[NH] = {
        {1, 1, lim - 1, 0, lim + 1, 0, 1 | 4},           /* the bound on S, either side */
        {0x1p-100, 1, lim - 1, 0, lim + 1, 0, 1 | 4},    /* the same 2^-100 lower */
        {0x1p-126, 1, 1.5, 0, 1, 0, 2 | 8},              /* q = -127 against q = -126 */
        {1, 0x1p-10, 0x1p20, 1, 16, 1, 2 | 8},           /* the last row's factor sets qx */
        {2, 2, 0x1p-127, 0, 1, 0, 2 | 8},                /* qa = -127 (q = -126): a subnormal A */
        {1 + 0x1p-8, 1, 1, 0, 0, 1, 1 | 2 | 8},          /* w's row 0 staged either way: w keeps S */
        {1, 1, INFINITY, 1, 1, 1, 2 | 8},                /* y infinite: S over the finite terms stays */
        {1, 1, 1, 1, 1, 1, 4 | 8},                       /* u's v is +Inf in row 0: u as above, in both rows */
        {0x1p-127, 1, 2, 0, 0, 2, 0},                    /* qx = -127 (q = -126): a subnormal staged value */
        {1, 1, 0, 1, 0, 1, 4 | 8},                       /* u's v +Inf in row 0 meets only zeros of A: y NaN */
        {1, 0x1p-30, 1, 0, 1, 0, 1 | 2 | 4 | 8},         /* row 1's fine x meets only zeros of A: no term */
    };
    for (int t = 0; t < 2; t++) {
        kk[t] = kv_f32_to_bf16(1);
        for (int h = 0; h < NH; h++) {
            v[t * NH + h] = kv_f32_to_bf16(t == 0 && (h == 7 || h == 9) ? INFINITY : 1), g[t * NH + h] = 0;
            beta[t * NH + h] = (float)(t ? hd[h].b1 : hd[h].b0);
            A[(t * NH + h) * 64] = (float)(t ? hd[h].a10 : hd[h].a00);
            A[(t * NH + h) * 64 + 1] = (float)(t ? hd[h].a11 : hd[h].a01);
        }
    }
    assert_int_equal(k->oracle(&c), KV_OK);
    for (int out = 0; out < 2; out++) {
        const double *S = c.S[kv_case_tensor(&c, out ? "w" : "u")];
        for (int t = 0; t < 2; t++)
            for (int h = 0; h < NH; h++)
                if ((S[t * NH + h] == 0) != ((hd[h].zero >> (2 * out + t)) & 1))
                    fail_msg("%s: row %d of head %d: S %g", out ? "w" : "u", t, h, S[t * NH + h]);
    }
    kv_case_free(&c);
}

static void grid_dist(void **s)
{
    (void)s;
    grid_case(P ",dist=grid", 12, 0);
    grid_case(P ",dist=grid,variant=a-bf16", 13, 0);
    grid_case("batch=1,seq=130,heads=2,kv-heads=1,dk=3,dv=200,dist=grid,variant=bf16-coopmat", 14, 0);
    grid_case(P ",dist=grid", 12, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_inverts_i_plus_l), cmocka_unit_test(spec_oracle), cmocka_unit_test(exact_oracle),
        cmocka_unit_test(inputs_by_definition), cmocka_unit_test(grid_dist), cmocka_unit_test(exact_sums_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

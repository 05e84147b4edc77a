/* The gdn-wu inputs and oracle: A is the inverse of I + L for every chunk
 * (including a partial last one), and the spec and exact oracles agree with
 * an independent recomputation of u and w from the stored inputs, with the
 * bf16 stagings (spec) or without (exact); ambiguous stagings only widen w. */
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

static void oracles_recompute(int exact)
{
    struct kv_case c;
    const struct kv_kernel *k = kv_kernel_find("gdn-wu");
    assert_int_equal(kv_case_init(&c, k, 5), KV_OK);
    assert_int_equal(kv_param_apply(&c, P), KV_OK);
    assert_int_equal(kv_case_shapes(&c), KV_OK);
    assert_int_equal(kv_case_alloc(&c), KV_OK);
    assert_int_equal(k->inputs(&c), KV_OK);
    c.exact = exact;
    assert_int_equal(k->oracle(&c), KV_OK);
    const uint16_t *kk = c.t[kv_case_tensor(&c, "k")].data, *v = c.t[kv_case_tensor(&c, "v")].data;
    const float *beta = c.t[kv_case_tensor(&c, "beta")].data, *g = c.t[kv_case_tensor(&c, "g")].data;
    const float *A = c.t[kv_case_tensor(&c, "A")].data;
    int tw = kv_case_tensor(&c, "w"), tu = kv_case_tensor(&c, "u");
    size_t flips = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                int t0 = t / 64 * 64, nv = T - t0 < 64 ? T - t0 : 64, kh = h / (H / HG);
                for (int col = 0; col < K; col++) {
                    double w = 0, u = 0, Sw = 0, Su = 0;
                    for (int j = 0; j < nv; j++) {
                        int r = (b * T + t0 + j) * H + h;
                        double a = A[((b * T + t) * H + h) * 64 + j];
                        double xw = bf(kk[((b * T + t0 + j) * HG + kh) * K + col]) * beta[r] * exp((double)g[r]);
                        w += a * (exact ? xw : rnd_bf16(xw)), Sw += fabs(a * (exact ? xw : rnd_bf16(xw)));
                        if (col < V) {
                            double xu = bf(v[r * V + col]) * beta[r];
                            u += a * (exact ? xu : rnd_bf16(xu)), Su += fabs(a * (exact ? xu : rnd_bf16(xu)));
                        }
                    }
                    /* each sum over j in order, S's terms rounded products: the same bits */
                    size_t ow = (size_t)((b * T + t) * H + h) * K + col, ou = (size_t)((b * T + t) * H + h) * V + col;
                    assert_true(w == c.y[tw][ow] && Sw == c.S[tw][ow]);
                    if (col < V) assert_true(u == c.y[tu][ou] && Su == c.S[tu][ou]);
                    /* a flip moves one staged value by at most one bf16 step (2^-7 relative) */
                    assert_true(c.slack[tw][ow] <= 0x1p-7 * c.S[tw][ow] * (1 + 1e-12));
                    flips += c.slack[tw][ow] > 0;
                }
            }
    assert_int_equal(flips, c.ambiguous[tw]);
    assert_true(exact ? flips == 0 : flips > 0);
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
    const struct kv_kernel *k = kv_kernel_find(kernel);
    assert_int_equal(kv_case_init(&c, k, seed), KV_OK);
    assert_int_equal(kv_param_apply(&c, params), KV_OK);
    assert_int_equal(kv_case_shapes(&c), KV_OK);
    assert_int_equal(kv_case_alloc(&c), KV_OK);
    assert_int_equal(k->inputs(&c), KV_OK);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_inverts_i_plus_l), cmocka_unit_test(spec_oracle), cmocka_unit_test(exact_oracle),
        cmocka_unit_test(inputs_by_definition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

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
                    double w = 0, u = 0;
                    for (int j = 0; j < nv; j++) {
                        int r = (b * T + t0 + j) * H + h;
                        double a = A[((b * T + t) * H + h) * 64 + j];
                        double xw = bf(kk[((b * T + t0 + j) * HG + kh) * K + col]) * beta[r] * exp((double)g[r]);
                        w += a * (exact ? xw : rnd_bf16(xw));
                        if (col < V) {
                            double xu = bf(v[r * V + col]) * beta[r];
                            u += a * (exact ? xu : rnd_bf16(xu));
                        }
                    }
                    size_t ow = (size_t)((b * T + t) * H + h) * K + col, ou = (size_t)((b * T + t) * H + h) * V + col;
                    assert_true(fabs(w - c.y[tw][ow]) <= 1e-12 * (c.S[tw][ow] + 1e-300));
                    if (col < V) assert_true(fabs(u - c.y[tu][ou]) <= 1e-12 * (c.S[tu][ou] + 1e-300));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_inverts_i_plus_l), cmocka_unit_test(spec_oracle), cmocka_unit_test(exact_oracle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The gemm-bwd oracle's backward formulas agree with central finite
 * differences of an independent float64 forward, loss = sum(dC * (A B)),
 * in every variant (f16: the forward uses the f16 casts of dC and B as the
 * spec says; accumulate adds dA_in). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/blas_core.h"
#include "kernels/kernel.h"
#include "kv_test.h"

static double loss(const double *a, const double *b, const double *dc, int m, int n, int kk)
{
    double l = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double cij = 0;
            for (int p = 0; p < kk; p++) cij += a[i * kk + p] * b[p * n + j];
            l += dc[i * n + j] * cij;
        }
    return l;
}

/* Central difference of the loss in v[i] (v is a or b). */
static double fd(double *v, int i, const double *a, const double *b, const double *dc, int m, int n, int kk)
{
    const double h = 1e-3, save = v[i];
    v[i] = save + h;
    double lp = loss(a, b, dc, m, n, kk);
    v[i] = save - h;
    double lm = loss(a, b, dc, m, n, kk);
    v[i] = save;
    return (lp - lm) / (2 * h);
}

static double *load(const struct kv_tensor *t, int cast16)
{
    double *d = malloc(t->count * sizeof *d);
    for (size_t i = 0; i < t->count; i++) {
        double v = kv_load_f64(t->dtype, t->data, i);
        d[i] = cast16 ? kv_f16_to_f32(kv_f32_to_f16((float)v)) : v;
    }
    return d;
}

static void check(const char *params)
{
    struct kv_case c;
    const struct kv_kernel *k = kv_test_case(&c, "gemm-bwd", params, 3);
    int m = (int)c.p[kv_param_index(k, "m")].i, n = (int)c.p[kv_param_index(k, "n")].i;
    int kk = (int)c.p[kv_param_index(k, "k")].i;
    int f16 = strstr(params, "f16") != NULL, acc = strstr(params, "accumulate") != NULL;
    double *a = load(&c.t[kv_case_tensor(&c, "A")], 0), *b = load(&c.t[kv_case_tensor(&c, "B")], 0);
    double *dc = load(&c.t[kv_case_tensor(&c, "dC")], f16), *dc32 = load(&c.t[kv_case_tensor(&c, "dC")], 0);
    int tda = kv_case_tensor(&c, "dA"), tdb = kv_case_tensor(&c, "dB");
    const float *din = acc ? c.t[kv_case_tensor(&c, "dA_in")].data : NULL;
    for (int i = 0; i < m * kk; i++) {
        double g = fd(a, i, a, b, dc, m, n, kk) + (din ? din[i] : 0);
        assert_true(fabs(g - c.y[tda][i]) <= 1e-9 * (c.S[tda][i] + 1));
    }
    for (int i = 0; i < kk * n; i++) {
        double g = fd(b, i, a, b, dc32, m, n, kk);
        assert_true(fabs(g - c.y[tdb][i]) <= 1e-9 * (c.S[tdb][i] + 1));
    }
    free(a), free(b), free(dc), free(dc32);
    kv_case_free(&c);
}

static void f32(void **s) { (void)s; check("m=3,n=5,k=4"); check("m=1,n=1,k=1"); }
static void accumulate(void **s) { (void)s; check("m=4,n=3,k=5,variant=accumulate"); }
static void f16(void **s) { (void)s; check("m=5,n=4,k=3,variant=f16"); check("m=2,n=3,k=2,variant=f16,scale=1e4"); }

/* With a sample, the oracle computes exactly the full oracle's values there. */
static void sampled_matches_full(void **s)
{
    (void)s;
    const char *variants[] = {"m=37,n=29,k=23", "m=37,n=29,k=23,variant=accumulate", "m=37,n=29,k=23,variant=f16"};
    for (int v = 0; v < 3; v++) {
        struct kv_case full, part;
        const struct kv_kernel *k = kv_test_case(&full, "gemm-bwd", variants[v], 3);
        assert_int_equal(kv_case_init(&part, k, 3), KV_OK);
        assert_int_equal(kv_param_apply(&part, variants[v]), KV_OK);
        assert_int_equal(kv_case_shapes(&part), KV_OK);
        assert_int_equal(kv_case_alloc(&part), KV_OK);
        for (int t = 0; t < k->n_tensors; t++) {
            if (kv_tensor_on(&part, t) && k->tensors[t].role == KV_OUTPUT) {
                if (strcmp(k->tensors[t].name, "dC16") != 0) {
                    part.n_sample[t] = 0;
                    part.sample[t] = malloc(part.t[t].count / 7 * sizeof(size_t) + sizeof(size_t));
                    for (size_t i = 0; i < part.t[t].count; i += 7) part.sample[t][part.n_sample[t]++] = i;
                }
            }
        }
        assert_int_equal(k->inputs(&part), KV_OK);
        assert_int_equal(k->oracle(&part), KV_OK);
        for (int t = 0; t < k->n_tensors; t++) {
            if (!part.sample[t]) continue;
            for (size_t i = 0; i < part.n_sample[t]; i++) {
                size_t e = part.sample[t][i];
                double tol = 1e-14 * (full.S[t][e] + 1e-300);
                assert_true(fabs(part.y[t][e] - full.y[t][e]) <= tol);
                assert_true(fabs(part.S[t][e] - full.S[t][e]) <= tol);
            }
        }
        kv_case_free(&part);
        kv_case_free(&full);
    }
}

/* OpenBLAS's generic kernels are replaced where the CPU runs better ones,
 * and only those: a known core, or a CPU without AVX2, keeps its choice. */
static void blas_core_choice(void **s)
{
    (void)s;
    assert_string_equal(kv_blas_core_instead("Prescott", 1, 1), "SkylakeX");
    assert_string_equal(kv_blas_core_instead("PRESCOTT", 0, 1), "Haswell");
    assert_null(kv_blas_core_instead("Prescott", 0, 0));
    assert_null(kv_blas_core_instead("SkylakeX", 1, 1));
    assert_null(kv_blas_core_instead("Haswell", 1, 1));
    assert_null(kv_blas_core_instead(NULL, 1, 1));
    assert_non_null(kv_blas_core()); /* the kernels this process runs */
    /* one thread a call: the pthreads build (1), unless the user named a count */
    assert_true(kv_blas_threads_instead(1, NULL));
    assert_true(kv_blas_threads_instead(1, ""));
    assert_false(kv_blas_threads_instead(1, "4"));
    assert_false(kv_blas_threads_instead(2, NULL)); /* OpenMP: one thread inside kverify's team already */
    assert_false(kv_blas_threads_instead(0, NULL)); /* sequential */
}

/* X (red x rows, row-major) as kv_dgemm_rows_t2's blocks take it: columns [r0, r1). */
struct cols {
    const double *x;
    int red, rows;
};
static void cols_of(const void *ctx, int r0, int r1, double *v, double *a)
{
    const struct cols *c = ctx;
    const int w = r1 - r0;
    for (int l = 0; l < c->red; l++)
        for (int j = 0; j < w; j++) {
            v[l * w + j] = c->x[(size_t)l * c->rows + r0 + j];
            a[l * w + j] = fabs(v[l * w + j]);
        }
}

/* dB's products made a block of X at a time give kv_dgemm_rows's bits on
 * the whole X: the same calls (rows one short of, at and past a block of 96,
 * and several blocks). */
static void blocks_of_x_transposed(void **s)
{
    (void)s;
    const int shapes[][3] = {{1, 3, 5}, {95, 7, 33}, {96, 4, 129}, {97, 9, 64}, {300, 17, 250}};
    for (size_t q = 0; q < sizeof shapes / sizeof shapes[0]; q++) {
        const int rows = shapes[q][0], cols = shapes[q][1], red = shapes[q][2];
        double *x = malloc((size_t)red * rows * sizeof *x), *xa = malloc((size_t)red * rows * sizeof *xa);
        double *y = malloc((size_t)red * cols * sizeof *y), *ya = malloc((size_t)red * cols * sizeof *ya);
        double *c1 = malloc((size_t)rows * cols * sizeof *c1), *c2 = malloc((size_t)rows * cols * sizeof *c2);
        double *w1 = malloc((size_t)rows * cols * sizeof *w1), *w2 = malloc((size_t)rows * cols * sizeof *w2);
        assert_true(x && xa && y && ya && c1 && c2 && w1 && w2);
        for (size_t i = 0; i < (size_t)red * rows; i++) x[i] = sin(1.0 + 0.37 * (double)i) * 3.1, xa[i] = fabs(x[i]);
        for (size_t i = 0; i < (size_t)red * cols; i++) y[i] = cos(0.5 + 0.11 * (double)i), ya[i] = fabs(y[i]);
        kv_dgemm_rows(1, 0, rows, cols, red, x, rows, y, cols, w1, cols);
        kv_dgemm_rows(1, 0, rows, cols, red, xa, rows, ya, cols, w2, cols);
        const struct cols ctx = {x, red, rows};
        assert_int_equal(kv_dgemm_rows_t2(rows, cols, red, cols_of, &ctx, y, ya, cols, c1, c2, cols), KV_OK);
        assert_memory_equal(c1, w1, (size_t)rows * cols * sizeof *c1);
        assert_memory_equal(c2, w2, (size_t)rows * cols * sizeof *c2);
        free(x), free(xa), free(y), free(ya), free(c1), free(c2), free(w1), free(w2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(f32), cmocka_unit_test(accumulate), cmocka_unit_test(f16),
                                       cmocka_unit_test(sampled_matches_full), cmocka_unit_test(blas_core_choice),
                                       cmocka_unit_test(blocks_of_x_transposed)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

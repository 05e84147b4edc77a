/* The rmsnorm-bwd oracle's backward formulas agree with central finite
 * differences of an independent float64 forward, loss = sum(dy * y),
 * y[b,i] = x[b,i] * r[b] * w[i]: the oracle is checked without any device. */
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

static double loss(const double *x, const double *w, const double *dy, int rows, int dim, double eps)
{
    double l = 0;
    for (int b = 0; b < rows; b++) {
        double ss = 0;
        for (int j = 0; j < dim; j++) ss += x[b * dim + j] * x[b * dim + j];
        double r = 1 / sqrt(ss / dim + eps);
        for (int i = 0; i < dim; i++) l += dy[b * dim + i] * x[b * dim + i] * r * w[i];
    }
    return l;
}

/* Central difference of the loss in v[i]. */
static double fd(double *v, size_t i, double h, const double *x, const double *w, const double *dy,
                 int rows, int dim, double eps)
{
    double save = v[i];
    v[i] = save + h;
    double lp = loss(x, w, dy, rows, dim, eps);
    v[i] = save - h;
    double lm = loss(x, w, dy, rows, dim, eps);
    v[i] = save;
    return (lp - lm) / (2 * h);
}

static void check_shape(int rows, int dim, double eps, uint64_t seed)
{
    struct kv_case c;
    char params[128];
    snprintf(params, sizeof params, "rows=%d,dim=%d,eps=%g", rows, dim, eps);
    const struct kv_kernel *k = kv_test_case(&c, "rmsnorm-bwd", params, seed);
    int tx = kv_tensor_index(k, "x"), tw = kv_tensor_index(k, "w"), tdy = kv_tensor_index(k, "dy");
    int tr = kv_tensor_index(k, "r"), tdx = kv_tensor_index(k, "dx"), tdw = kv_tensor_index(k, "dw");
    size_t n = (size_t)rows * dim;
    double *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy), *w = malloc((size_t)dim * sizeof *w);
    for (size_t i = 0; i < n; i++) x[i] = ((float *)c.t[tx].data)[i], dy[i] = ((float *)c.t[tdy].data)[i];
    for (int i = 0; i < dim; i++) w[i] = ((float *)c.t[tw].data)[i];
    const double e32 = (double)(float)eps;

    /* r itself, from the definition. */
    for (int b = 0; b < rows; b++) {
        double ss = 0;
        for (int j = 0; j < dim; j++) ss += x[b * dim + j] * x[b * dim + j];
        assert_true(fabs(c.y[tr][b] - 1 / sqrt(ss / dim + e32)) <= 1e-15 * c.y[tr][b]);
    }
    /* The oracle feeds dx and dw the f32-rounded r (stage isolation), so it
     * sits within ~1e-7 relative of the exact gradient; a wrong term is O(1). */
    for (size_t i = 0; i < n; i++) {
        double g = fd(x, i, 1e-5 * fmax(1.0, fabs(x[i])), x, w, dy, rows, dim, e32);
        assert_true(fabs(g - c.y[tdx][i]) <= 1e-6 * (c.S[tdx][i] + 1e-30) + 1e-12 * fabs(g));
    }
    for (int i = 0; i < dim; i++) {
        double g = fd(w, (size_t)i, 1e-5, x, w, dy, rows, dim, e32);
        assert_true(fabs(g - c.y[tdw][i]) <= 1e-6 * (c.S[tdw][i] + 1e-30));
    }
    free(x), free(dy), free(w);
    kv_case_free(&c);
}

static void small_shapes(void **s)
{
    (void)s;
    check_shape(3, 7, 1e-6, 5);
    check_shape(1, 1, 1e-6, 2);
    check_shape(5, 33, 1e-3, 9);
}

static void zero_row_gives_nan(void **s)
{
    (void)s;
    struct kv_case c;
    const struct kv_kernel *k = kv_test_case(&c, "rmsnorm-bwd", "rows=2,dim=4,eps=0,dist=zero-row", 1);
    int tr = kv_tensor_index(k, "r"), tdx = kv_tensor_index(k, "dx"), tdw = kv_tensor_index(k, "dw");
    assert_true(isinf(c.y[tr][0]) && c.y[tr][0] > 0);
    assert_true(isfinite(c.y[tr][1]));
    for (int i = 0; i < 4; i++) {
        assert_true(isnan(c.y[tdx][i]));     /* row 0 */
        assert_true(isfinite(c.y[tdx][4 + i])); /* row 1 */
        assert_true(isnan(c.y[tdw][i]));     /* 0 * Inf enters every column */
    }
    kv_case_free(&c);
}

/* The generated inputs are their definition's, element by element from the
 * scalar draw of each index: x = f32(N(0,1) * scale) (stream 0; uniform:
 * (2 U - 1) sqrt 3; zero-row: row 0 zero), w = f32(1 + N(0,1) / 10) (stream
 * 1), dy = f32(N(0,1) / sqrt(rows dim)) (stream 2); rows past a block of
 * draws and an uneven last block included. */
static void inputs_by_definition(void **s)
{
    (void)s;
    const char *const params[] = {"rows=3,dim=5000,scale=2", "rows=2,dim=4100,dist=uniform",
                                  "rows=5,dim=3000,dist=zero-row"};
    for (int p = 0; p < 3; p++) {
        struct kv_case c;
        const uint64_t seed = 30 + (uint64_t)p;
        kv_test_case(&c, "rmsnorm-bwd", params[p], seed);
        const int64_t rows = c.t[kv_case_tensor(&c, "x")].shape[0], dim = c.t[kv_case_tensor(&c, "x")].shape[1];
        const float *x = c.t[kv_case_tensor(&c, "x")].data, *w = c.t[kv_case_tensor(&c, "w")].data;
        const float *dy = c.t[kv_case_tensor(&c, "dy")].data;
        for (int64_t i = 0; i < rows * dim; i++) {
            double v = p == 1 ? (2.0 * kv_rng_uniform(seed, 0, (uint64_t)i) - 1.0) * sqrt(3.0)
                              : kv_rng_normal(seed, 0, (uint64_t)i);
            v = p == 2 && i < dim ? 0.0 : v;
            if (x[i] != (float)(v * (p ? 1.0 : 2.0)) ||
                dy[i] != (float)(kv_rng_normal(seed, 2, (uint64_t)i) * (1.0 / sqrt((double)rows * (double)dim))))
                fail_msg("%s: element %lld is not its definition's", params[p], (long long)i);
        }
        for (int64_t j = 0; j < dim; j++)
            if (w[j] != (float)(1.0 + 0.1 * kv_rng_normal(seed, 1, (uint64_t)j)))
                fail_msg("%s: w[%lld]", params[p], (long long)j);
        kv_case_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_shapes),
        cmocka_unit_test(zero_row_gives_nan),
        cmocka_unit_test(inputs_by_definition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The derived bounds against the hand-derived ones: rmsnorm-bwd and gemm-bwd
 * written as specs (tests/specs) on the built-ins' own inputs, over the
 * built-ins' sweep shapes and two seeds. Both oracles agree on every value;
 * per element, the derived allowed error (8*lam + fix + ulp/2) over the hand
 * one (lambda*sqrt(n)*u*S + k_op*u*S + ulp/2) is printed as min / median /
 * max per output. The derivation is never looser than the hand bound (so a
 * mutant the hand bound kills, the derived one kills too) and is tighter
 * where the hand bound rounds up (measured, min / median):
 *   gemm dA, dB: the same model, a ratio of 1, but for 1-term sums, which
 *     have no accumulation error (the hand bound keeps 8u*S): 0.16 / 1.
 *   rmsnorm dw: two roundings per term where the hand budget counts 3; no
 *     accumulation error for one row: 0.22 / 0.93.
 *   rmsnorm r: the square root halves the sum's relative error, which the
 *     hand bound keeps whole, and eps, where it dominates the mean square,
 *     shrinks it: 0.058 / 0.67.
 *   rmsnorm dx: the hand bound puts lambda*sqrt(dim) on every term of S, the
 *     derivation only on the sum s's term: 0.002 / 0.38. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/dtype.h"
#include "core/files.h"
#include "kv_test.h"
#include "specs/spec.h"

static struct kv_spec *load(const char *file)
{
    char path[1024], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", KV_SPECS_DIR, file);
    assert_int_equal(kv_read_file(path, 1 << 20, &text, &len), KV_OK);
    struct kv_spec *s = NULL;
    enum kv_status st = kv_spec_parse(path, text, len, 0, &s);
    if (st) fprintf(stderr, "%s\n", kv_error_msg());
    assert_int_equal(st, KV_OK);
    free(text);
    return s;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct stat_ {
    double *r;
    size_t n, cap;
};

static void add(struct stat_ *s, double v)
{
    if (s->n == s->cap) s->r = realloc(s->r, (s->cap = s->cap ? 2 * s->cap : 4096) * sizeof *s->r);
    assert_non_null(s->r);
    s->r[s->n++] = v;
}

/* Every shape of the built-in's sweep (where the spec has its parameters),
 * seeds 1 and 2: the ratios per output into st[]. */
static void compare(const char *builtin, struct kv_spec *s, const char *const *outs, int n_outs, struct stat_ *st)
{
    const struct kv_kernel *k = kv_kernel_find(builtin);
    for (int w = 0; k->sweep[w]; w++) {
        if (strstr(k->sweep[w], "dist=") || strstr(k->sweep[w], "variant=")) continue; /* not in the spec */
        for (uint64_t seed = 1; seed <= 2; seed++) {
            struct kv_case h, c;
            kv_test_case(&h, builtin, k->sweep[w], seed);
            assert_int_equal(kv_case_init(&c, &s->k, seed), KV_OK);
            assert_int_equal(kv_param_apply(&c, k->sweep[w]), KV_OK);
            assert_int_equal(kv_case_shapes(&c), KV_OK);
            assert_int_equal(kv_case_alloc(&c), KV_OK);
            for (int t = 0; t < s->k.n_tensors; t++)
                if (s->tensors[t].role == KV_INPUT)
                    memcpy(c.t[t].data, h.t[kv_case_tensor(&h, s->tensors[t].name)].data, kv_tensor_bytes(&c.t[t]));
            assert_int_equal(s->k.oracle(&c), KV_OK);
            for (int o = 0; o < n_outs; o++) {
                const int th = kv_case_tensor(&h, outs[o]), ts = kv_case_tensor(&c, outs[o]);
                const struct kv_bound *b = &h.bound[th];
                for (size_t e = 0; e < c.t[ts].count; e++) {
                    const double y = h.y[th][e], half = 0.5 * kv_ulp(c.t[ts].dtype, y);
                    if (!(fabs(c.y[ts][e] - y) <= 1e-13 * fabs(h.S[th][e]) + 1e-300))
                        fail_msg("%s %s[%zu]: the spec oracle's %.17g, the built-in's %.17g", k->sweep[w], outs[o], e,
                                 c.y[ts][e], y);
                    const double hand = (8 * sqrt(b->n) + b->k_op) * b->u_acc * h.S[th][e] + half * b->rho;
                    const double derived = 8 * c.lam[ts][e] + c.fix[ts][e] + half;
                    add(&st[o], derived / hand);
                }
            }
            kv_case_free(&h);
            kv_case_free(&c);
        }
    }
}

/* Prints the summary and checks lo <= every ratio <= hi (hi: never looser). */
static void report(const char *kernel, const char *out, struct stat_ *s, double lo, double hi)
{
    qsort(s->r, s->n, sizeof *s->r, cmpd);
    printf("%-12s %-3s %8zu elements: derived / hand  min %.3f  median %.3f  max %.3f\n", kernel, out, s->n, s->r[0],
           s->r[s->n / 2], s->r[s->n - 1]);
    assert_true(s->r[0] >= lo);
    assert_true(s->r[s->n - 1] <= hi);
    free(s->r);
}

static void test_gemm(void **state)
{
    (void)state;
    struct kv_spec *s = load("gemm_bwd.kernel.json");
    const char *outs[] = {"dA", "dB"};
    struct stat_ st[2] = {{0}};
    compare("gemm-bwd", s, outs, 2, st);
    report("gemm-bwd", "dA", &st[0], 0.15, 1 + 1e-9);
    report("gemm-bwd", "dB", &st[1], 0.15, 1 + 1e-9);
    kv_spec_free(s);
}

static void test_rmsnorm(void **state)
{
    (void)state;
    struct kv_spec *s = load("rmsnorm_bwd.kernel.json");
    const char *outs[] = {"r", "dx", "dw"};
    struct stat_ st[3] = {{0}};
    compare("rmsnorm-bwd", s, outs, 3, st);
    report("rmsnorm-bwd", "r", &st[0], 0.05, 1);
    report("rmsnorm-bwd", "dx", &st[1], 0.001, 1);
    report("rmsnorm-bwd", "dw", &st[2], 0.2, 1);
    kv_spec_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gemm), cmocka_unit_test(test_rmsnorm)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

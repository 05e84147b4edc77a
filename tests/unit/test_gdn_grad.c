/* The gated delta net's exact chunk gradient (kernels/gdn_grad.h) against
 * central finite differences of the float64 forward, which recomputes A from
 * (k, beta, g): every entry of dk, dv, dbeta and dg, for chunks of 1, 5 and
 * 64 rows, realistic (L2-normalised k, sigmoid beta, decaying g) and with
 * unnormalised k. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "core/rng.h"
#include "kernels/gdn_grad.h"

enum { MAXN = 64, K = 7, V = 5 };

struct chunk {
    double k[MAXN * K], v[MAXN * V], beta[MAXN], g[MAXN], dw[MAXN * K], du[MAXN * V];
    struct kv_gdn_chunk c;
};

static void make(struct chunk *x, int n, uint64_t seed, int realistic)
{
    double acc = 0;
    for (int i = 0; i < n; i++) {
        double nrm = 0;
        for (int e = 0; e < K; e++) x->k[i * K + e] = kv_rng_normal(seed, 1, (uint64_t)(i * K + e)), nrm += x->k[i * K + e] * x->k[i * K + e];
        for (int e = 0; realistic && e < K; e++) x->k[i * K + e] /= sqrt(nrm);
        for (int e = 0; e < V; e++) x->v[i * V + e] = kv_rng_normal(seed, 2, (uint64_t)(i * V + e));
        x->beta[i] = 1 / (1 + exp(-kv_rng_normal(seed, 3, (uint64_t)i)));
        acc += -log1p(exp(-kv_rng_normal(seed, 4, (uint64_t)i))) * 0.2;
        x->g[i] = acc;
        for (int e = 0; e < K; e++) x->dw[i * K + e] = kv_rng_normal(seed, 5, (uint64_t)(i * K + e));
        for (int e = 0; e < V; e++) x->du[i * V + e] = kv_rng_normal(seed, 6, (uint64_t)(i * V + e));
    }
    x->c = (struct kv_gdn_chunk){n, K, V, x->k, x->v, x->beta, x->g, x->dw, x->du};
}

static double loss(const struct chunk *x)
{
    double w[MAXN * K], u[MAXN * V], s = 0;
    kv_gdn_chunk_forward(&x->c, w, u);
    for (int i = 0; i < x->c.n * K; i++) s += x->dw[i] * w[i];
    for (int i = 0; i < x->c.n * V; i++) s += x->du[i] * u[i];
    return s;
}

/* Central difference of the loss in *p; |analytic - fd| within a relative
 * 1e-6 of the scale of the entry. */
static void check(struct chunk *x, double *p, double analytic, double scale)
{
    double h = 1e-5 * fmax(1, fabs(*p)), keep = *p;
    *p = keep + h;
    double up = loss(x);
    *p = keep - h;
    double down = loss(x);
    *p = keep;
    double fd = (up - down) / (2 * h);
    if (!(fabs(fd - analytic) <= 1e-6 * (fabs(analytic) + scale)))
        fail_msg("analytic %.12g vs finite difference %.12g", analytic, fd);
}

static void run(int n, uint64_t seed, int realistic)
{
    struct chunk *x = calloc(1, sizeof *x);
    double *dk = calloc(MAXN * K, sizeof *dk), *dv = calloc(MAXN * V, sizeof *dv), db[MAXN], dg[MAXN];
    double *scratch = calloc(5 * MAXN * MAXN + 2 * MAXN * K, sizeof *scratch);
    assert_non_null(x), assert_non_null(dk), assert_non_null(dv), assert_non_null(scratch);
    make(x, n, seed, realistic);
    kv_gdn_chunk_backward(&x->c, dk, dv, db, dg, scratch);
    double scale = 0;
    for (int i = 0; i < n * K; i++) scale = fmax(scale, fabs(dk[i]));
    for (int i = 0; i < n * K; i++) check(x, &x->k[i], dk[i], scale);
    for (int i = 0; i < n * V; i++) check(x, &x->v[i], dv[i], scale);
    for (int i = 0; i < n; i++) check(x, &x->beta[i], db[i], scale), check(x, &x->g[i], dg[i], scale);
    free(x), free(dk), free(dv), free(scratch);
}

static void one_row(void **s) { (void)s, run(1, 1, 1); }
static void five_rows(void **s) { (void)s, run(5, 2, 1); }
static void full_chunk(void **s) { (void)s, run(64, 3, 1); }
static void unnormalised(void **s) { (void)s, run(9, 4, 0); }

/* dk accumulates: two value heads sharing a key head give the sum. */
static void dk_accumulates(void **s)
{
    (void)s;
    struct chunk *x = calloc(1, sizeof *x);
    double dk1[MAXN * K] = {0}, dk2[MAXN * K] = {0}, dv[MAXN * V], db[MAXN], dg[MAXN];
    double *scratch = calloc(5 * MAXN * MAXN + 2 * MAXN * K, sizeof *scratch);
    assert_non_null(x), assert_non_null(scratch);
    make(x, 6, 5, 1);
    kv_gdn_chunk_backward(&x->c, dk1, dv, db, dg, scratch);
    kv_gdn_chunk_backward(&x->c, dk2, dv, db, dg, scratch);
    kv_gdn_chunk_backward(&x->c, dk2, dv, db, dg, scratch);
    for (int i = 0; i < 6 * K; i++) assert_true(fabs(dk2[i] - 2 * dk1[i]) <= 1e-12 * fabs(dk1[i]) + 1e-300);
    free(x), free(scratch);
}

/* One run of the spec in FLA's order into fresh arrays. */
struct spec_run {
    double dk[MAXN * K], dk_S[MAXN * K], dk_sl[MAXN * K], dv[MAXN * V], dv_S[MAXN * V];
    double db[MAXN], db_S[MAXN], db_sl[MAXN], dg[MAXN], dg_S[MAXN], dg_sl[MAXN];
    struct kv_gdn_spec o;
};
static struct spec_run *spec_run(const struct chunk *x, const double *A, int round, int a_bf16)
{
    struct spec_run *r = calloc(1, sizeof *r);
    double *scratch = calloc(kv_gdn_spec_scratch(K, V), sizeof *scratch);
    assert_non_null(r), assert_non_null(scratch);
    r->o = (struct kv_gdn_spec){round, a_bf16, 0, r->dk, r->dk_S, r->dk_sl, r->dv, r->dv_S,
                                r->db, r->db_S, r->db_sl, r->dg, r->dg_S, r->dg_sl, 0, 0};
    kv_gdn_chunk_backward_spec(&x->c, A, &r->o, scratch);
    free(scratch);
    return r;
}

/* FLA's order of operations (kv_gdn_chunk_backward_spec) without its
 * roundings is the exact gradient taken another way: equal to 1e-12. With
 * the roundings it stays near (bf16 casts: a few 2^-8 relative of the
 * entry's scale), and A in bf16 moves it further, not beyond. The scales S
 * bound every value, and the slack is zero exactly when nothing may flip. */
static void spec_order(void **s)
{
    (void)s;
    for (int n = 1; n <= 64; n += 21) {
        struct chunk *x = calloc(1, sizeof *x);
        double *A = calloc(MAXN * MAXN, sizeof *A), *scratch = calloc(6 * MAXN * MAXN + 2 * MAXN * K, sizeof *scratch);
        double dk[MAXN * K] = {0}, dv[MAXN * V], db[MAXN], dg[MAXN];
        assert_non_null(x), assert_non_null(A), assert_non_null(scratch);
        make(x, n, 10 + (uint64_t)n, 1);
        kv_gdn_chunk_A(&x->c, A);
        kv_gdn_chunk_backward(&x->c, dk, dv, db, dg, scratch);
        struct spec_run *e = spec_run(x, A, 0, 0), *r = spec_run(x, A, 1, 1);
        double scale = 1e-30;
        for (int i = 0; i < n * K; i++) scale = fmax(scale, fabs(dk[i]));
        for (int i = 0; i < n * V; i++) scale = fmax(scale, fabs(dv[i]));
        for (int i = 0; i < n; i++) scale = fmax(scale, fmax(fabs(db[i]), fabs(dg[i])));
        double worst_exact = 0, worst_round = 0;
        for (int i = 0; i < n * K; i++) {
            worst_exact = fmax(worst_exact, fabs(e->dk[i] - dk[i])), worst_round = fmax(worst_round, fabs(r->dk[i] - dk[i]));
            assert_true(fabs(r->dk[i]) <= r->dk_S[i] * (1 + 1e-12)), assert_true(r->dk_sl[i] >= 0);
        }
        for (int i = 0; i < n * V; i++) {
            worst_exact = fmax(worst_exact, fabs(e->dv[i] - dv[i])), worst_round = fmax(worst_round, fabs(r->dv[i] - dv[i]));
            assert_true(fabs(r->dv[i]) <= r->dv_S[i] * (1 + 1e-12));
        }
        for (int i = 0; i < n; i++) {
            worst_exact = fmax(worst_exact, fmax(fabs(e->db[i] - db[i]), fabs(e->dg[i] - dg[i])));
            worst_round = fmax(worst_round, fmax(fabs(r->db[i] - db[i]), fabs(r->dg[i] - dg[i])));
            assert_true(fabs(r->db[i]) <= r->db_S[i] * (1 + 1e-12) && fabs(r->dg[i]) <= r->dg_S[i] * (1 + 1e-12));
        }
        if (!(worst_exact <= 1e-12 * scale)) fail_msg("n=%d: FLA's order differs from the exact gradient by %g of %g", n, worst_exact, scale);
        if (!(worst_round <= 0.05 * scale && worst_round > 0))
            fail_msg("n=%d: FLA's roundings move the gradient by %g of %g", n, worst_round, scale);
        if (n > 1 && !(r->o.flips > 0)) fail_msg("n=%d: no bf16 cast counted as within reach of a flip", n);
        free(x), free(A), free(scratch), free(e), free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_row),      cmocka_unit_test(five_rows),      cmocka_unit_test(full_chunk),
        cmocka_unit_test(unnormalised), cmocka_unit_test(dk_accumulates), cmocka_unit_test(spec_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

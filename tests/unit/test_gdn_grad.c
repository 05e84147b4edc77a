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
#include <string.h>
#include <cmocka.h>

#include "core/rng.h"
#include "kernels/gdn_grad.h"
#include "kernels/gdn_prod.h"

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
                                r->db, r->db_S, r->db_sl, r->dg, r->dg_S, r->dg_sl, 0, 0, 0};
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

/* The products' sums as kernels/gdn_prod.h defines them, term by term: s a
 * product then an add, S and ep fused multiply-adds (rounded: a rounded
 * product then an add), S over the finite products alone, lower rows cut at
 * i. */
static void prod_reference(const struct kv_gdn_prod *p, double *s, double *S, double *ep, int ld, int add)
{
    for (int i = 0; i < p->rows; i++)
        for (int j = 0; j < p->cols; j++) {
            const int cut = p->lower_cols && j >= i, go_on = add && !cut;
            double a = go_on ? s[i * ld + j] : 0, b = go_on ? S[i * ld + j] : 0, e = go_on && ep ? ep[i * ld + j] : 0;
            for (int m = 0; m < p->depth && !cut; m++) {
                if (p->lower_depth && m >= i) break;
                const double l = p->L[i * p->l_row + m * p->l_col], r = p->R[m * p->ldr + j], t = l * r;
                a += t;
                if (isfinite(t)) b = p->rounded ? b + fabs(t) : fma(fabs(l), fabs(r), b);
                if (p->Le && p->rounded) e += p->Le[i * p->l_row + m * p->l_col] * fabs(r);
                else if (p->Le) e = fma(p->Le[i * p->l_row + m * p->l_col], fabs(r), e);
                if (p->Re && p->rounded) e += fabs(l) * p->Re[m * p->ldr + j];
                else if (p->Re) e = fma(fabs(l), p->Re[m * p->ldr + j], e);
            }
            s[i * ld + j] = a, S[i * ld + j] = b;
            if (ep) ep[i * ld + j] = e;
        }
}

static int same_bits(const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0 && !(isnan(a[i]) && isnan(b[i]))) return 0;
    return 1;
}

/* kv_gdn_prod (its register tiles of each width this CPU has) against the
 * definition, bit for bit: row and column counts off the tiles' multiples,
 * L by rows and by columns, each error operand, the lower cuts, a product
 * made in two parts, and operands where the tiles must not run (an infinite
 * or NaN entry, products past the double range: S leaves those terms out). */
static void prod_tiles(void **st)
{
    (void)st;
    enum { N = 67 * 128 };
    double *L = malloc(sizeof(double) * N), *E = malloc(sizeof(double) * N), *R = malloc(sizeof(double) * N);
    double *out = malloc(sizeof(double) * 6 * N), *init = malloc(sizeof(double) * 3 * N);
    assert_non_null(L), assert_non_null(E), assert_non_null(R), assert_non_null(out), assert_non_null(init);
    for (int q = 0; q < 3 * N; q++) init[q] = q % 7 ? kv_rng_normal(7, 4, (uint64_t)q) : -0.0; /* add's first part */
    const int shapes[][3] = {{64, 64, 128}, {61, 17, 9}, {5, 8, 64}, {1, 3, 1}, {67, 67, 66}, {4, 9, 0}};
    int cases = 0;
    for (int sh = 0; sh < 6; sh++)
        for (int v = 0; v < 96; v++) {
            const int rows = shapes[sh][0], cols = shapes[sh][1], depth = shapes[sh][2];
            /* lower: none, cols, depth, none in two parts, cols in two parts, then the tiles' hints: zeros
             * from m = i, below m = i, up to m = i (in two parts); odd: a term not finite */
            const int by_cols = v & 1, mode = v / 2 % 3, lower = v / 6 % 8, odd = v / 48;
            const int lower_depth = lower == 2 && cols == rows, add = lower == 3 || lower == 4 || lower == 7;
            struct kv_gdn_prod p = {.L = L, .l_row = by_cols ? 1 : depth, .l_col = by_cols ? rows : 1, .R = R, .ldr = cols,
                                    .rows = rows, .cols = cols, .depth = depth, .lower_cols = lower == 1 || lower == 4,
                                    .lower_depth = lower_depth, .zero_from_i = lower == 5, .zero_below = lower >= 6 ? lower - 5 : 0};
            if (mode == 1) p.Le = E;
            if (mode == 2) p.Re = E;
            for (int q = 0; q < N; q++) {
                L[q] = kv_rng_normal(100 + (uint64_t)v, 1, (uint64_t)q), R[q] = kv_rng_normal(100 + (uint64_t)v, 2, (uint64_t)q);
                E[q] = fabs(kv_rng_normal(100 + (uint64_t)v, 3, (uint64_t)q)) * 1e-7;
            }
            for (int i = 0; i < rows; i++) /* L(i, m) = 0 where the product says so, Le too */
                for (int m = 0; m < depth; m++)
                    if (((lower_depth || p.zero_from_i) && m >= i) || (p.zero_below && m < i + p.zero_below - 1))
                        L[i * p.l_row + m * p.l_col] = 0, E[i * p.l_row + m * p.l_col] = 0;
            if (odd && rows * depth > 0) {
                const double l_odd[] = {INFINITY, 2, 1e300}, r_odd[] = {2, NAN, 1e300}; /* L's, R's, both */
                const int i = rows >= 8 ? 4 : rows > 1; /* in a tile's rows where there are some */
                L[i * p.l_row] = l_odd[sh % 3], R[0] = r_odd[sh % 3];
            }
            double *s = out, *S = s + N, *ep = S + N, *rs = ep + N, *rS = rs + N, *rep = rS + N;
            double *e1 = mode ? ep : NULL, *e2 = mode ? rep : NULL;
            for (p.rounded = 0; p.rounded < 2; p.rounded++) {
                memcpy(rs, init, sizeof(double) * 3 * N);
                prod_reference(&p, rs, rS, e2, cols, add);
                for (int width = 2; width >= 1; width--) { /* AVX-512, AVX2 with FMA (where the CPU has them) */
                    memcpy(out, init, sizeof(double) * 3 * N);
                    kv_gdn_prod_tiles(width);
                    kv_gdn_prod(&p, s, S, e1, cols, add);
                    if (!same_bits(s, rs, (size_t)rows * cols) || !same_bits(S, rS, (size_t)rows * cols) ||
                        (mode && !same_bits(ep, rep, (size_t)rows * cols)))
                        fail_msg("%dx%dx%d, L by %s, mode %d, lower %d, odd %d, rounded %d, tiles %d: not the definition's bits",
                                 rows, cols, depth, by_cols ? "columns" : "rows", mode, lower, odd, p.rounded, width);
                }
                kv_gdn_prod_tiles(2);
                memcpy(out, init, sizeof(double) * 3 * N);
                kv_gdn_prod_rows(&p, s, S, e1, cols, add);
                if (!same_bits(s, rs, (size_t)rows * cols) || !same_bits(S, rS, (size_t)rows * cols) ||
                    (mode && !same_bits(ep, rep, (size_t)rows * cols)))
                    fail_msg("%dx%dx%d, rounded %d: the row-by-row sums differ from the definition", rows, cols, depth,
                             p.rounded);
                cases++;
            }
        }
    assert_int_equal(cases, 2 * 576);
    free(L), free(E), free(R), free(out), free(init);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_row),      cmocka_unit_test(five_rows),      cmocka_unit_test(full_chunk),
        cmocka_unit_test(unnormalised), cmocka_unit_test(dk_accumulates), cmocka_unit_test(spec_order),
        cmocka_unit_test(prod_tiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#include "core/errdist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double kv_dist_ulp_edge(int i) { return ldexp(1.0, i - 5); }
double kv_dist_ratio_edge(int i) { return pow(10.0, (double)(i - 15) / 2.0); }

static int ulp_bin(double u)
{
    if (!(u < ldexp(1.0, 30))) return KV_DIST_ULP_BINS - 1;
    int e;
    frexp(u, &e); /* u in [2^(e-1), 2^e) */
    int i = e - 1 + 5;
    return i < 0 ? 0 : i >= KV_DIST_ULP_BINS ? KV_DIST_ULP_BINS - 1 : i;
}

/* r's bin among the lower edges (edge[0] unused: bin 0 starts above 0). */
static int ratio_bin(double r, const double *edge)
{
    int lo = 0, hi = KV_DIST_RATIO_BINS - 1;
    while (lo < hi) { /* the last bin whose lower edge is <= r */
        int mid = (lo + hi + 1) / 2;
        if (r >= edge[mid]) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* Keep the KV_DIST_WORST largest: mismatches first, then by ratio. */
static void note_worst(struct kv_error_dist *d, const struct kv_worst_elem *w)
{
    double key = w->mismatch ? INFINITY : w->ratio;
    int n = d->n_worst;
    if (n == KV_DIST_WORST) {
        const struct kv_worst_elem *last = &d->worst[n - 1];
        if (key <= (last->mismatch ? INFINITY : last->ratio)) return;
        n--;
    }
    int i = n;
    while (i > 0 && key > (d->worst[i - 1].mismatch ? INFINITY : d->worst[i - 1].ratio)) {
        d->worst[i] = d->worst[i - 1];
        i--;
    }
    d->worst[i] = *w;
    d->n_worst = n + 1;
}

static void grid(struct kv_error_dist *d, int ndim, const int64_t *shape)
{
    int64_t cols = ndim > 0 ? shape[ndim - 1] : 1, rows = 1;
    for (int k = 0; k + 1 < ndim; k++) rows *= shape[k];
    d->rows = rows, d->cols = cols;
    d->cell_rows = (int)(rows < KV_DIST_MAP_ROWS ? rows : KV_DIST_MAP_ROWS);
    if (d->cell_rows < 1) d->cell_rows = 1;
    int64_t max_cols = KV_DIST_MAP_CELLS / d->cell_rows;
    if (max_cols > KV_DIST_MAP_COLS) max_cols = KV_DIST_MAP_COLS;
    d->cell_cols = (int)(cols < max_cols ? cols : max_cols);
    if (d->cell_cols < 1) d->cell_cols = 1;
    for (int c = 0; c < KV_DIST_MAP_CELLS; c++) d->map[c] = -1;
}

static int cell_of(const struct kv_error_dist *d, size_t flat)
{
    int64_t r = d->cols ? (int64_t)flat / d->cols : 0, c = d->cols ? (int64_t)flat % d->cols : 0;
    int cr = (int)(r * d->cell_rows / (d->rows ? d->rows : 1));
    int cc = (int)(c * d->cell_cols / (d->cols ? d->cols : 1));
    return cr * d->cell_cols + cc;
}

/* What every chunk reads. */
struct dist_in {
    enum kv_dtype t;
    const void *cand;
    const double *y, *S, *slack, *alt;
    const unsigned char *ovf;
    const struct kv_allow *allow;
    double lambda;
    const struct kv_bound *b;
    const size_t *idx;
    const int16_t *tie, *flush;
    double c1, c2, rho;
    int codes;
    double edge[KV_DIST_RATIO_BINS];
    const int *colcell; /* each column's cell column (whole outputs; NULL: divide) */
};

/* Elements [lo, hi) into p (whose grid is set). */
static void dist_chunk(const struct dist_in *x, size_t lo, size_t hi, struct kv_error_dist *p)
{
    /* whole outputs walk their rows and columns instead of dividing each index */
    int64_t r = p->cols ? (int64_t)lo / p->cols : 0, col = p->cols ? (int64_t)lo % p->cols : 0;
    int rowcell = (int)(r * p->cell_rows / (p->rows ? p->rows : 1)) * p->cell_cols;
    for (size_t i = lo; i < hi; i++) {
        int cell = x->idx || !x->colcell ? cell_of(p, x->idx ? x->idx[i] : i) : rowcell + x->colcell[col];
        if (!x->idx && x->colcell && ++col == p->cols) {
            col = 0, r++;
            rowcell = (int)(r * p->cell_rows / (p->rows ? p->rows : 1)) * p->cell_cols;
        }
        double c = kv_load_f64(x->t, x->cand, i), yi = x->y[i];
        struct kv_worst_elem w = {x->idx ? x->idx[i] : i, c, yi, fabs(c - yi), 0, 0, 0, 0};
        if (x->codes) {
            int explained = w.error == 0 || (x->tie && x->tie[i] >= 0 && c == x->tie[i]) ||
                            (x->flush && x->flush[i] >= 0 && c == x->flush[i]);
            w.mismatch = !explained;
            w.ulp = w.error;
        } else if (!isfinite(c) || !isfinite(yi)) {
            double err = (x->allow && x->allow->lam ? x->lambda * x->allow->lam[i] + x->allow->fix[i]
                                                    : (x->c1 + x->c2) * x->S[i]) +
                         (x->slack ? x->slack[i] : 0);
            if (kv_nonfinite_match(x->t, x->b, c, yi, x->S[i], err, x->ovf && x->ovf[i]) != KV_NF_MISMATCH)
                continue; /* compare.c's rule */
            w.mismatch = 1, w.error = INFINITY;
        } else {
            if (x->alt && c == x->alt[i]) w.error = 0; /* the other legal value */
            double ulp = kv_ulp(x->t, yi);
            w.bound = x->allow && x->allow->lam ? kv_allowed(x->b, x->allow, x->lambda, i, x->S[i], ulp)
                                                : x->c1 * x->S[i] + x->c2 * x->S[i] + 0.5 * ulp * x->rho;
            w.ratio = w.error / w.bound;
            if (x->slack && w.ratio > 1.0) w.bound += x->slack[i], w.ratio = w.error / w.bound;
            w.ulp = w.error / ulp;
        }
        if (w.mismatch) {
            p->mismatch++;
            p->bad[cell] = 1;
            if (p->map[cell] < 0) p->map[cell] = 0;
        } else {
            if (w.ulp == 0) p->ulp_zero++;
            else p->ulp[ulp_bin(w.ulp)]++;
            if (x->codes || w.ratio == 0) p->ratio_zero++; /* an explained code is within its allowance */
            else p->ratio[ratio_bin(w.ratio, x->edge)]++;
            if ((float)w.ratio > p->map[cell]) p->map[cell] = (float)w.ratio;
            if (p->map[cell] < 0) p->map[cell] = 0;
        }
        if (w.mismatch || w.ratio > 0) note_worst(p, &w);
    }
}

/* Chunk p's counts, cells and worst elements into d; chunks merge in index
 * order, so the result is the same on any number of threads. */
static void merge(struct kv_error_dist *d, const struct kv_error_dist *p)
{
    d->ulp_zero += p->ulp_zero, d->ratio_zero += p->ratio_zero, d->mismatch += p->mismatch;
    for (int i = 0; i < KV_DIST_ULP_BINS; i++) d->ulp[i] += p->ulp[i];
    for (int i = 0; i < KV_DIST_RATIO_BINS; i++) d->ratio[i] += p->ratio[i];
    for (int c = 0; c < d->cell_rows * d->cell_cols; c++) {
        if (p->map[c] > d->map[c]) d->map[c] = p->map[c];
        d->bad[c] |= p->bad[c];
    }
    for (int i = 0; i < p->n_worst; i++) note_worst(d, &p->worst[i]);
}

#define DIST_CHUNK ((size_t)1 << 16)

void kv_error_dist(enum kv_dtype t, const void *cand, const double *y, const double *S, size_t n, const size_t *idx,
                   int ndim, const int64_t *shape, const struct kv_bound *b, const struct kv_allow *allow,
                   const struct kv_criteria *crit, struct kv_error_dist *d)
{
    struct dist_in x = {t, cand, y, S, allow ? allow->slack : NULL, allow ? allow->alt : NULL, allow ? allow->ovf : NULL,
                        allow, crit->lambda, b, idx, allow ? allow->tie : NULL,
                        allow ? allow->flush : NULL, crit->lambda * sqrt(b->n) * b->u_acc, b->k_op * b->u_acc, b->rho,
                        kv_dtype_is_integer(t), {0}, NULL};
    for (int i = 1; i < KV_DIST_RATIO_BINS; i++) x.edge[i] = kv_dist_ratio_edge(i);
    memset(d, 0, sizeof *d);
    grid(d, ndim, shape);
    int *colcell = !idx && d->cols <= ((int64_t)1 << 26) ? malloc((size_t)(d->cols ? d->cols : 1) * sizeof *colcell) : NULL;
    for (int64_t c = 0; colcell && c < d->cols; c++) colcell[c] = (int)(c * d->cell_cols / d->cols);
    x.colcell = colcell;
    size_t nchunks = (n + DIST_CHUNK - 1) / DIST_CHUNK;
    struct kv_error_dist *parts = nchunks > 1 ? malloc(nchunks * sizeof *parts) : NULL;
    if (!parts) { /* one chunk, or no memory for more: serially, into d */
        dist_chunk(&x, 0, n, d);
        free(colcell);
        return;
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t k = 0; k < nchunks; k++) {
        struct kv_error_dist *p = &parts[k];
        memset(p, 0, sizeof *p);
        p->rows = d->rows, p->cols = d->cols, p->cell_rows = d->cell_rows, p->cell_cols = d->cell_cols;
        for (int c = 0; c < KV_DIST_MAP_CELLS; c++) p->map[c] = -1;
        dist_chunk(&x, k * DIST_CHUNK, k + 1 < nchunks ? (k + 1) * DIST_CHUNK : n, p);
    }
    for (size_t k = 0; k < nchunks; k++) merge(d, &parts[k]);
    free(parts);
    free(colcell);
}

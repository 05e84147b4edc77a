#include "core/errdist.h"

#include <math.h>
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

static int ratio_bin(double r)
{
    int i = (int)floor(2.0 * log10(r)) + 15;
    /* log10's rounding must not move a value across an edge */
    while (i > 0 && r < kv_dist_ratio_edge(i)) i--;
    while (i + 1 < KV_DIST_RATIO_BINS && r >= kv_dist_ratio_edge(i + 1)) i++;
    return i < 0 ? 0 : i >= KV_DIST_RATIO_BINS ? KV_DIST_RATIO_BINS - 1 : i;
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

void kv_error_dist(enum kv_dtype t, const void *cand, const double *y, const double *S, size_t n, const size_t *idx,
                   int ndim, const int64_t *shape, const struct kv_bound *b, const struct kv_allow *allow,
                   const struct kv_criteria *crit, struct kv_error_dist *d)
{
    memset(d, 0, sizeof *d);
    grid(d, ndim, shape);
    const int codes = kv_dtype_is_integer(t);
    const double *slack = allow ? allow->slack : NULL;
    const int16_t *tie = allow ? allow->tie : NULL, *flush = allow ? allow->flush : NULL;
    const double c1 = crit->lambda * sqrt(b->n) * b->u_acc, c2 = b->k_op * b->u_acc;
    for (size_t i = 0; i < n; i++) {
        double c = kv_load_f64(t, cand, i), yi = y[i];
        struct kv_worst_elem w = {idx ? idx[i] : i, c, yi, fabs(c - yi), 0, 0, 0, 0};
        if (codes) {
            int explained = w.error == 0 || (tie && tie[i] >= 0 && c == tie[i]) || (flush && flush[i] >= 0 && c == flush[i]);
            w.mismatch = !explained;
            w.ulp = w.error;
        } else if (!isfinite(c) || !isfinite(yi)) {
            if ((isnan(c) && isnan(yi)) || (isinf(c) && c == yi)) continue; /* a matching NaN/Inf */
            w.mismatch = 1, w.error = INFINITY;
        } else {
            double ulp = kv_ulp(t, yi);
            w.bound = c1 * S[i] + c2 * S[i] + 0.5 * ulp * b->rho;
            w.ratio = w.error / w.bound;
            if (slack && w.ratio > 1.0) w.bound += slack[i], w.ratio = w.error / w.bound;
            w.ulp = w.error / ulp;
        }
        int cell = cell_of(d, w.index);
        if (w.mismatch) {
            d->mismatch++;
            d->bad[cell] = 1;
            if (d->map[cell] < 0) d->map[cell] = 0;
        } else {
            if (w.ulp == 0) d->ulp_zero++;
            else d->ulp[ulp_bin(w.ulp)]++;
            if (codes) d->ratio_zero++; /* an explained code is within its allowance */
            else if (w.ratio == 0) d->ratio_zero++;
            else d->ratio[ratio_bin(w.ratio)]++;
            if ((float)w.ratio > d->map[cell]) d->map[cell] = (float)w.ratio;
            if (d->map[cell] < 0) d->map[cell] = 0;
        }
        if (w.mismatch || w.ratio > 0) note_worst(d, &w);
    }
}

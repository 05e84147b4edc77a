#include "core/errdist.h"

#include <math.h>
#include <string.h>

double kv_dist_ulp_edge(int i) { return ldexp(1.0, i - 5); }
double kv_dist_ratio_edge(int i) { return pow(10.0, (double)(i - 15) / 2.0); }

int kv_dist_ratio_bin(double r, const double *edge)
{
    int lo = 0, hi = KV_DIST_RATIO_BINS - 1;
    while (lo < hi) { /* the last bin whose lower edge is <= r */
        int mid = (lo + hi + 1) / 2;
        if (r >= edge[mid]) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static double key_of(const struct kv_worst_elem *w) { return w->mismatch ? INFINITY : w->ratio; }

/* Whether a goes before b: the larger key, then the smaller index. A total
 * order, so the list does not depend on the order elements are noted in. */
static int before(const struct kv_worst_elem *a, const struct kv_worst_elem *b)
{
    double ka = key_of(a), kb = key_of(b);
    return ka > kb || (ka == kb && a->index < b->index);
}

void kv_dist_note_worst(struct kv_error_dist *d, const struct kv_worst_elem *w)
{
    int n = d->n_worst;
    if (n == KV_DIST_WORST) {
        if (!before(w, &d->worst[n - 1])) return;
        n--;
    }
    int i = n;
    while (i > 0 && before(w, &d->worst[i - 1])) {
        d->worst[i] = d->worst[i - 1];
        i--;
    }
    d->worst[i] = *w;
    d->n_worst = n + 1;
}

void kv_dist_init(struct kv_error_dist *d, int ndim, const int64_t *shape)
{
    memset(d, 0, sizeof *d);
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

void kv_dist_init_like(struct kv_error_dist *p, const struct kv_error_dist *d)
{
    memset(p, 0, sizeof *p);
    p->rows = d->rows, p->cols = d->cols, p->cell_rows = d->cell_rows, p->cell_cols = d->cell_cols;
    for (int c = 0; c < KV_DIST_MAP_CELLS; c++) p->map[c] = -1;
}

int kv_dist_cell(const struct kv_error_dist *d, size_t flat)
{
    int64_t r = d->cols ? (int64_t)flat / d->cols : 0, c = d->cols ? (int64_t)flat % d->cols : 0;
    int cr = (int)(r * d->cell_rows / (d->rows ? d->rows : 1));
    int cc = (int)(c * d->cell_cols / (d->cols ? d->cols : 1));
    return cr * d->cell_cols + cc;
}

void kv_dist_merge(struct kv_error_dist *d, const struct kv_error_dist *p)
{
    d->ulp_zero += p->ulp_zero, d->ratio_zero += p->ratio_zero, d->mismatch += p->mismatch;
    for (int i = 0; i < KV_DIST_ULP_BINS; i++) d->ulp[i] += p->ulp[i];
    for (int i = 0; i < KV_DIST_RATIO_BINS; i++) d->ratio[i] += p->ratio[i];
    for (int c = 0; c < d->cell_rows * d->cell_cols; c++) {
        if (p->map[c] > d->map[c]) d->map[c] = p->map[c];
        d->bad[c] |= p->bad[c];
    }
    for (int i = 0; i < p->n_worst; i++) kv_dist_note_worst(d, &p->worst[i]);
}

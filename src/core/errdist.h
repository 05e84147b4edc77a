/* Where an output's error lies and how it is distributed: histograms of the
 * error in ULP and of the bound ratio, the bound ratio max-pooled over the
 * tensor seen as a matrix, and the worst elements. The data behind the HTML
 * report's plots, kept in the JSON report (man kverify, "JSON report"). */
#ifndef KV_ERRDIST_H
#define KV_ERRDIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/compare.h"

/* ULP histogram: counts[0] holds (0, 2^-4), counts[i] [2^(i-5), 2^(i-4)),
 * the last [2^30, inf); exact matches apart. Codes: |code difference| on the
 * same edges. */
#define KV_DIST_ULP_BINS 36
/* Bound-ratio histogram: counts[0] holds (0, 10^-7), counts[i]
 * [10^((i-15)/2), 10^((i-14)/2)), the last [10^3, inf); ratio 0 apart. The
 * pass line is at 1, the edge between counts[14] and counts[15]. */
#define KV_DIST_RATIO_BINS 22
/* The pooled map: at most 64 rows of cells and 256 columns, 4096 cells. */
#define KV_DIST_MAP_ROWS 64
#define KV_DIST_MAP_COLS 256
#define KV_DIST_MAP_CELLS 4096
#define KV_DIST_WORST 8

double kv_dist_ulp_edge(int i);   /* lower edge of ULP bin i (i >= 1) */
double kv_dist_ratio_edge(int i); /* lower edge of ratio bin i (i >= 1) */

struct kv_worst_elem {
    size_t index;    /* flat, row-major */
    double device, oracle, error, bound, ratio, ulp;
    int mismatch;    /* a NaN/Inf mismatch, or an unexplained code */
};

struct kv_error_dist {
    size_t ulp_zero, ulp[KV_DIST_ULP_BINS];
    size_t ratio_zero, ratio[KV_DIST_RATIO_BINS];
    size_t mismatch;          /* NaN/Inf mismatches, unexplained codes: in neither histogram */
    int64_t rows, cols;       /* the output as a matrix: leading dims x the last */
    int cell_rows, cell_cols; /* the pooled grid */
    float map[KV_DIST_MAP_CELLS]; /* max bound ratio per cell; -1: nothing compared there */
    unsigned char bad[KV_DIST_MAP_CELLS]; /* 1: a mismatch lies in the cell */
    int n_worst;
    struct kv_worst_elem worst[KV_DIST_WORST]; /* largest ratio first, mismatches before all */
};

/* Building blocks of the one pass that makes it (judge.c). */
/* The ULP bin of u > 0: inline, for the loops over every element. */
static inline int kv_dist_ulp_bin(double u)
{
    if (!(u < 0x1p30)) return KV_DIST_ULP_BINS - 1;
    union { double d; uint64_t b; } v = {.d = u};
    /* u in [2^e, 2^(e+1)) for a normal u; subnormals fall in bin 0 */
    int i = (int)(v.b >> 52) - 1023 + 5;
    return i < 0 ? 0 : i;
}
int kv_dist_ratio_bin(double r, const double *edge); /* r > 0; edge[i] = kv_dist_ratio_edge(i) */
void kv_dist_init(struct kv_error_dist *d, int ndim, const int64_t *shape); /* empty, its grid set */
void kv_dist_init_like(struct kv_error_dist *p, const struct kv_error_dist *d); /* empty, d's grid */
int kv_dist_cell(const struct kv_error_dist *d, size_t flat); /* the map cell of a flat index */
/* Keep the KV_DIST_WORST first in order: mismatches, then the larger ratio,
 * then the smaller index (a total order: any order of noting gives one list). */
void kv_dist_note_worst(struct kv_error_dist *d, const struct kv_worst_elem *w);
void kv_dist_merge(struct kv_error_dist *d, const struct kv_error_dist *p);

/* The map cells of flat elements lo, lo + 1, ... of a whole output, walked
 * by row and column: a division only where a cell column or a row starts
 * (kv_dist_cell's cells, for the loops over every element). */
struct kv_dist_walk {
    const struct kv_error_dist *d;
    int rowcell, cc;
    int64_t r, col, next; /* next: the first column of cell column cc + 1 */
};

/* The first column of cell column k: the least c with c * cell_cols / cols >= k. */
static inline int64_t kv_dist_cell_edge(const struct kv_error_dist *d, int64_t k)
{
    return (k * d->cols + d->cell_cols - 1) / d->cell_cols;
}

static inline void kv_dist_walk_at(struct kv_dist_walk *w, const struct kv_error_dist *d, size_t lo)
{
    w->d = d;
    w->r = (int64_t)lo / d->cols, w->col = (int64_t)lo % d->cols;
    w->rowcell = (int)(w->r * d->cell_rows / (d->rows ? d->rows : 1)) * d->cell_cols;
    w->cc = (int)(w->col * d->cell_cols / d->cols);
    w->next = kv_dist_cell_edge(d, w->cc + 1);
}

/* How many elements from the walk's on lie in its cell: to the end of its
 * cell column (at least 1, as cell_cols <= cols). */
static inline int64_t kv_dist_walk_run(const struct kv_dist_walk *w)
{
    return w->next - w->col;
}

/* The walk k elements on, 0 < k <= kv_dist_walk_run(w). */
static inline void kv_dist_walk_skip(struct kv_dist_walk *w, int64_t k)
{
    const struct kv_error_dist *d = w->d;
    w->col += k;
    if (w->col == d->cols) {
        w->col = 0, w->r++, w->cc = 0, w->next = kv_dist_cell_edge(d, 1);
        w->rowcell = (int)(w->r * d->cell_rows / (d->rows ? d->rows : 1)) * d->cell_cols;
    } else if (w->col == w->next) {
        w->cc++, w->next = kv_dist_cell_edge(d, w->cc + 1);
    }
}

/* The walk's element's cell, then a step to the next element. */
static inline int kv_dist_walk_next(struct kv_dist_walk *w)
{
    int cell = w->rowcell + w->cc;
    kv_dist_walk_skip(w, 1);
    return cell;
}

#endif

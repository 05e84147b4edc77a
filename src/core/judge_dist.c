#include "core/judge_dist.h"

#include "core/clones.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

void kv_dist_tiles_at(struct kv_dist_tiles *s, struct kv_error_dist *d, const size_t *idx, size_t lo)
{
    memset(s, 0, sizeof *s);
    s->d = d, s->idx = idx;
    s->whole = !idx && d->cols > 0;
    if (s->whole) kv_dist_walk_at(&s->w, d, lo);
}

/* A tile element's ratio for the map: the bits of a non-negative double,
 * whose order is its (NaN as 0: compared, as in the map), -1 for a
 * non-finite pair (not compared). */
static inline int64_t map_bits(const struct kv_tile *tile, size_t j)
{
    const int64_t b = tile->ratio[j] == tile->ratio[j] ? kv_bits_of(tile->ratio[j]) : 0;
    return tile->flag[j] & KV_TILE_ODD ? -1 : b;
}

/* The largest ratio of some of a cell's elements into the map: the largest
 * of their (float) ratios, as rounding keeps order; at least 0 where one was
 * compared (m >= 0). */
static inline void cell_put(struct kv_error_dist *d, int cell, int64_t m)
{
    if (m < 0) return;
    const float f = (float)kv_double_of(m);
    if (f > d->map[cell]) d->map[cell] = f;
    if (d->map[cell] < 0) d->map[cell] = 0;
}

/* Whether ratio r at index i comes before the worst list's last entry
 * (kv_dist_note_worst's order: the larger ratio, then the smaller index). */
static inline int enters(const struct kv_error_dist *d, double r, size_t i)
{
    if (d->n_worst < KV_DIST_WORST) return 1;
    const struct kv_worst_elem *last = &d->worst[KV_DIST_WORST - 1];
    return !last->mismatch && (r > last->ratio || (r == last->ratio && i < last->index));
}

/* The map's cells of one row's elements [j, j + len) of the tile, where each
 * column is a cell column of its own (cells cell, cell + 1, ...): cell_put
 * on each, a loop that vectorizes (m >= 0 is a non-negative float f, which
 * is past the -1 of a cell not compared yet). */
KV_CLONES static void row_put(float *restrict map, const struct kv_tile *restrict tile, size_t j, size_t len)
{
    for (size_t k = 0; k < len; k++) {
        const int64_t m = map_bits(tile, j + k);
        const float f = (float)kv_double_of(m), now = map[k];
        map[k] = ((m >= 0) & (f > now)) ? f : now;
    }
}

void kv_dist_tiles_add(struct kv_dist_tiles *s, const struct kv_tile *tile, enum kv_dtype t, const void *cand,
                       const double *y, size_t i0, size_t n)
{
    struct kv_error_dist *d = s->d;
    for (int k = 0; k <= KV_DIST_RATIO_BINS; k++) s->ratio[k] += tile->rcount[k];
    if (s->whole && d->cell_cols == d->cols) { /* a run of one element each: a row's part at a time */
        for (size_t j = 0; j < n;) {
            const size_t len = (size_t)(d->cols - s->w.col) < n - j ? (size_t)(d->cols - s->w.col) : n - j;
            row_put(d->map + s->w.rowcell + s->w.col, tile, j, len);
            j += len;
            kv_dist_walk_at(&s->w, d, i0 + j);
        }
    } else if (s->whole) {
        struct kv_dist_walk w = s->w; /* a local walk: its state stays in registers */
        for (size_t j = 0; j < n;) {
            const int cell = w.rowcell + w.cc;
            size_t run = (size_t)kv_dist_walk_run(&w);
            run = run < n - j ? run : n - j;
            int64_t m = -1;
            if (run == n) { /* the whole tile in one cell: its largest ratio, else 0 for a NaN one, else -1 */
                m = tile->max_ratio >= 0 ? tile->max_ratio : n > tile->odd ? 0 : -1;
            } else {
                for (size_t k = j; k < j + run; k++) {
                    const int64_t b = map_bits(tile, k);
                    m = b > m ? b : m;
                }
            }
            cell_put(d, cell, m);
            kv_dist_walk_skip(&w, (int64_t)run);
            j += run;
        }
        s->w = w;
    } else {
        for (size_t j = 0; j < n; j++) {
            const size_t i = i0 + j;
            cell_put(d, kv_dist_cell(d, s->idx ? s->idx[i] : i), map_bits(tile, j));
        }
    }
    /* the worst list: once it is full, only a ratio of at least its last
     * one's can enter, so that one compare passes over most elements, and
     * none of a tile whose largest ratio is below it (NaN left out of the
     * largest: it cannot enter a full list) */
    if (d->n_worst == KV_DIST_WORST) {
        const struct kv_worst_elem *last = &d->worst[KV_DIST_WORST - 1];
        if (last->mismatch || tile->max_ratio < 0 || kv_double_of(tile->max_ratio) < last->ratio) return;
    }
    double least = 0;
    int full = 0;
    for (size_t j = 0; j < n; j++) {
        if (!full && d->n_worst == KV_DIST_WORST) {
            if (d->worst[KV_DIST_WORST - 1].mismatch) break; /* mismatches fill it: nothing enters */
            full = 1, least = d->worst[KV_DIST_WORST - 1].ratio;
        }
        const double ratio = tile->ratio[j];
        if (full && !(ratio >= least)) continue;
        if (tile->flag[j] & KV_TILE_ODD || ratio == 0) continue;
        const size_t i = i0 + j, at = s->idx ? s->idx[i] : i;
        if (!enters(d, ratio, at)) continue;
        struct kv_worst_elem w = {at, kv_load_f64(t, cand, i), y[j], tile->e[j], tile->base[j], ratio, tile->u[j], 0};
        kv_dist_note_worst(d, &w);
        full = 0; /* the last one may have changed */
    }
}

void kv_dist_tiles_close(struct kv_dist_tiles *s)
{
    struct kv_error_dist *d = s->d;
    for (int k = 0; k < KV_DIST_RATIO_BINS; k++) d->ratio[k] += s->ratio[k];
    d->ratio_zero += s->ratio[KV_DIST_RATIO_BINS];
}

/* The lower edge of histogram bin k (0 < k < KV_Q_BINS - 1). */
static double q_edge(size_t k)
{
    k--;
    int e = (int)(k >> KV_Q_SUB) - KV_Q_OCT;
    return kv_double_of((int64_t)(((uint64_t)(e + 1023) << 52) | ((uint64_t)(k & ((1u << KV_Q_SUB) - 1)) << (52 - KV_Q_SUB))));
}

/* The nearest-rank 0.99 quantile from the histogram (see judge.h). */
double kv_judge_p99(const uint64_t *hist, size_t qlo, size_t qhi, size_t compared, double max_ulp)
{
    if (!compared) return 0;
    size_t kk = (size_t)ceil(0.99 * (double)compared);
    kk = kk ? kk - 1 : 0;
    uint64_t cum = hist[0];
    if (cum > kk) return 0;
    for (size_t k = qlo; k <= qhi && k < KV_Q_BINS; k++) { /* the bins past 0 outside [qlo, qhi] are empty */
        cum += hist[k];
        if (cum > kk) return k == KV_Q_BINS - 1 ? max_ulp : q_edge(k);
    }
    return max_ulp;
}

/* A float output's ULP histogram in the distribution (errdist.h: a bin an
 * octave of u, zeros apart), made from the p99's: each of its bins lies in
 * one octave (judge_tile.h), bin 0 holds the zeros and u < 2^-KV_Q_OCT, the
 * last u >= 2^KV_Q_OCT. Or, where the p99 is exact, from the ULP errors. */
void kv_dist_ulp_hist(struct kv_error_dist *d, const uint64_t *hist, size_t qlo, size_t qhi, const double *ulps,
                     size_t compared, size_t zeros)
{
    if (ulps) {
        for (size_t k = 0; k < compared; k++)
            if (ulps[k] == 0) d->ulp_zero++;
            else d->ulp[kv_dist_ulp_bin(ulps[k])]++;
        return;
    }
    d->ulp_zero += zeros;
    d->ulp[0] += hist[0] - zeros;
    for (size_t k = qlo > 1 ? qlo : 1; k + 1 < KV_Q_BINS && k <= qhi; k++) { /* the others are empty */
        const int e = (int)((k - 1) >> KV_Q_SUB) - KV_Q_OCT; /* u in [2^e, 2^(e+1)) */
        d->ulp[e + 5 < 0 ? 0 : e + 5 >= KV_DIST_ULP_BINS ? KV_DIST_ULP_BINS - 1 : e + 5] += hist[k];
    }
    d->ulp[KV_DIST_ULP_BINS - 1] += hist[KV_Q_BINS - 1];
}

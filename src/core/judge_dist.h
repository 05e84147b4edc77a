/* The judge's error distribution (errdist.h) over a float output, a tile at
 * a time (judge_tile.h): the ratio's bins (counted by the tile), the map a
 * run of one cell's elements at a time, the worst list; and, at the end,
 * the p99 and the ULP histogram read from the p99's histogram. The same
 * distribution as element by element: counts add up, the map keeps maxima,
 * the worst list is in a total order. */
#ifndef KV_CORE_JUDGE_DIST_H
#define KV_CORE_JUDGE_DIST_H

#include <stddef.h>

#include "core/errdist.h"
#include "core/judge_tile.h"

/* A chunk's share: where it is in the map and its ratio histogram (zeros in
 * the last slot). The ULP histogram is not made here: judge.c derives it
 * from the p99's, whose every bin lies in one of its octaves. */
struct kv_dist_tiles {
    struct kv_error_dist *d;
    const size_t *idx; /* a sample's flat indices; NULL: elements lo, lo + 1, ... of a whole output */
    int whole;         /* walked over the map (a whole output of at least one column) */
    struct kv_dist_walk w;
    size_t ratio[KV_DIST_RATIO_BINS + 1];
};

/* A chunk from element lo on, into d. */
void kv_dist_tiles_at(struct kv_dist_tiles *s, struct kv_error_dist *d, const size_t *idx, size_t lo);
/* The next tile: elements i0 .. i0 + n - 1 (the device's in cand, of type
 * t; the oracle's from y[0]). */
void kv_dist_tiles_add(struct kv_dist_tiles *s, const struct kv_tile *tile, enum kv_dtype t, const void *cand,
                       const double *y, size_t i0, size_t n);
/* The chunk's ratio histogram into d. */
void kv_dist_tiles_close(struct kv_dist_tiles *s);

/* From the p99's histogram (judge.c: hist[k] the compared elements in bin k,
 * every count in bin 0 or [qlo, qhi]): the nearest-rank 0.99 quantile of
 * the ULP errors (max_ulp for the last bin's) ... */
double kv_judge_p99(const uint64_t *hist, size_t qlo, size_t qhi, size_t compared, double max_ulp);
/* ... and the distribution's ULP histogram (zeros: the compared ULP errors
 * of 0); or, where ulps holds every compared ULP error (an exact p99), from
 * those. */
void kv_dist_ulp_hist(struct kv_error_dist *d, const uint64_t *hist, size_t qlo, size_t qhi, const double *ulps,
                      size_t compared, size_t zeros);

#endif

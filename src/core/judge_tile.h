/* The judge's arithmetic on a float output, a tile of elements at a time:
 * each element's error, ULP error, bound, bound ratio and relative error, in
 * loops that vectorize (KV_CLONES). Every value is the one the scalar
 * expression gives (IEEE operations in the same order, no contraction); the
 * counts, maxima and sums over them stay in judge.c, in index order. */
#ifndef KV_CORE_JUDGE_TILE_H
#define KV_CORE_JUDGE_TILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "core/errdist.h"

#define KV_TILE 256

/* The p99's histogram (judge.c): bin 0 holds u < 2^-KV_Q_OCT (0 included),
 * then 2^KV_Q_SUB bins per octave up to 2^KV_Q_OCT, then one bin for the rest. */
#define KV_Q_OCT 80
#define KV_Q_SUB 10
#define KV_Q_BINS (((size_t)2 * KV_Q_OCT << KV_Q_SUB) + 2)

/* A double's bits as a signed integer (for non-negative doubles, +Inf
 * included, in their order: the tile's maxima are kept so), and back. */
static inline int64_t kv_bits_of(double v)
{
    int64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}
static inline double kv_double_of(int64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* u's bin in the p99's histogram, without a branch: u >= 0, not NaN (as u
 * is for a finite pair), and the bins rise with u. 64-bit lanes throughout,
 * the doubles' width. */
static inline uint64_t kv_judge_q_bin(double u)
{
    const uint64_t bits = (uint64_t)kv_bits_of(u);
    const int64_t e = (int64_t)(bits >> 52) - 1023;
    uint64_t k = 1 + ((uint64_t)(e + KV_Q_OCT) << KV_Q_SUB) + ((bits >> (52 - KV_Q_SUB)) & ((1u << KV_Q_SUB) - 1));
    k = e < -KV_Q_OCT ? 0 : k;
    return e >= KV_Q_OCT ? KV_Q_BINS - 1 : k;
}

/* Tile element flags. */
enum {
    KV_TILE_ODD = 1, /* the device's or the oracle's value is not finite: nothing else is set */
    KV_TILE_ALT = 2, /* the device's value is the other legal one (kv_allow.alt): e is 0 */
};

/* The lower edges of the ratio's bins (kv_dist_ratio_edge), edge[0] = 0 and
 * edge[KV_DIST_RATIO_BINS] = +Inf. */
struct kv_tile_tables {
    double edge[KV_DIST_RATIO_BINS + 1];
};
void kv_tile_tables_init(struct kv_tile_tables *tab);

struct kv_tile_in {
    enum kv_dtype t;
    const void *cand; /* the device's output, from element 0 */
    /* from the tile's first element; alt, lam and slack NULL where absent */
    const double *y, *S, *alt, *lam, *fix, *slack;
    double c1, c2, half_rho, lambda, floor_rel;
    int emin, prec;
    int tol;       /* count the pairs past the tolerance atol + rtol |y| */
    double at, rt; /* atol, rtol */
    const struct kv_tile_tables *tab;
    int dist; /* count the ratio's distribution (rcount) */
    /* with a slack: judge with it in one pass, not first without it (the
     * values are the same), as where the last tile had a ratio past 1
     * without it (slacked or over) */
    int slack_first;
};

struct kv_tile {
    /* e = |c - y|; u = e / ulp(y); base = the bound, plus the element's
     * slack where e over the bound without it is over 1; ratio = e / base;
     * e2 = e * e, y2 = y * y (the sums' terms) */
    double e[KV_TILE], u[KV_TILE], base[KV_TILE], ratio[KV_TILE], e2[KV_TILE], y2[KV_TILE];
    /* qbin: u's bin in the p99's histogram */
    uint64_t qbin[KV_TILE];
    unsigned char flag[KV_TILE];
    /* Over the tile's finite pairs: the largest e, u and e / |y| (|y| from
     * the smallest normal; 0 where none) and ratio (NaN left out; -1 where
     * none), as the bits of these non-negative doubles, whose order is
     * theirs; how many have |y| below the smallest normal, ratio > 1, the
     * other legal value, e past the tolerance, a ratio brought to 1 or below
     * by the slack; and how many pairs are not finite. */
    int64_t max_e, max_u, max_rel, max_ratio;
    uint64_t rel_skipped, over, alt, fails_tol, slacked, odd;
    /* Over the finite pairs too: how many have u = 0; and, where in->dist,
     * the ratio's distribution: rcount[i] pairs in bin i (kv_dist_ratio_bin;
     * a NaN ratio in the last), rcount[KV_DIST_RATIO_BINS] those of ratio 0. */
    uint64_t uzero;
    uint64_t rcount[KV_DIST_RATIO_BINS + 1];
};

/* Elements at, at + 1, ..., at + n - 1 (n <= KV_TILE) of in->cand, the
 * oracle's arrays read from index 0. */
void kv_judge_tile(const struct kv_tile_in *in, size_t at, size_t n, struct kv_tile *o);

#endif

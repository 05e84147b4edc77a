/* The judge's inner state (core/judge.c): what every chunk of an output
 * reads, the per-chunk sums, and each thread's results, made on its first
 * chunk, merged at the end in any order (counts add up, maxima and first
 * indices keep), and freed. */
#ifndef KV_CORE_JUDGE_THR_H
#define KV_CORE_JUDGE_THR_H

#include <stddef.h>
#include <stdint.h>

#include "core/compare.h"
#include "core/errdist.h"
#include "core/judge_dist.h"
#include "core/judge_tile.h"

#define CHUNK ((size_t)1 << 16)
/* A chunk whose oracle is made block by block is made and judged SUB
 * elements at a time: the block stays in cache between the two. */
#define SUB ((size_t)1 << 12)

/* A thread's 32-bit counts are added into the shared 64-bit ones before they can wrap. */
#define Q_FLUSH ((uint64_t)UINT32_MAX - 2 * CHUNK)

/* What every chunk reads. */
struct jin {
    enum kv_dtype t;
    const void *cand;
    const double *y, *S, *slack, *alt, *lam, *fix;
    const unsigned char *ovf;
    const int16_t *tie, *flush;
    const size_t *idx;
    const struct kv_bound *b;
    double lambda, c1, c2, rho, floor_rel, rt, at;
    int tol, emin, prec, exact_p99;
    struct kv_tile_tables tab;        /* the ratio's bins */
    const struct kv_error_dist *grid; /* NULL: no distribution */
};

/* A chunk's oracle and allowances, indexed from its first element (j = i - lo):
 * the whole arrays' from lo, or a block the source made for the chunk. */
struct jrow {
    const double *y, *S, *slack, *alt, *lam, *fix;
    const unsigned char *ovf;
    const int16_t *tie, *flush;
};

/* The sums, whose value depends on the order of the additions: one per chunk,
 * added in index order at the end. */
struct jsum {
    double ulp, e2, y2;
};

/* One thread's results: counts, maxima and first indices, which merge the
 * same in any order. */
struct jthr {
    int used;
    double max_ulp, max_abs, max_rel, worst_ratio;
    size_t worst, first_mismatch, compared;
    size_t rel_skipped, fails_bound, fails_tol, nan_match, inf_match, nan_mismatch, inf_mismatch;
    size_t slack_used, overflow_ok, exact, ambiguous, tie_explained, flush_explained, unexplained;
    size_t uzero;    /* compared pairs of ULP error 0 (a float output's) */
    uint32_t *hist;  /* the p99's histogram */
    uint64_t filled; /* counted into hist since its last flush */
    size_t qlo, qhi; /* hist's bins past 0 lie in [qlo, qhi] (qlo > qhi: none) */
    double *ulps;    /* the ULP errors, for an exact p99 of a small output */
    double *yb, *Sb; /* SUB elements of the oracle, where it is made block by block */
    double *slb, *lamb, *fixb; /* and of its allowances, where the source makes them */
    double *slb2;              /* the second row's slack (kv_judge_pair) */
    unsigned char *ovfb;
    struct kv_error_dist *d;
    struct kv_dist_tiles *dt; /* the float loop's share of d, a tile at a time */
};

static inline int kv_jthr_better(double r, size_t i, double best, size_t at) { return r > best || (r == best && i < at); }

/* Thread th's first chunk (x's output, n elements): its histogram (or ULP
 * buffer) and distribution; where blocks, the block's buffers (with slack:
 * the slack's, bound: the per-element bound's) and, pair, the second row's
 * slack. -1: out of memory. */
int kv_jthr_init(const struct jin *x, struct jthr *th, size_t n, int blocks, int slack, int bound, int pair);
/* nt threads' results freed, and th. */
void kv_jthr_free(struct jthr *th, int nt);
/* th's histogram added into total (its range into [*qlo, *qhi]) and emptied. */
void kv_jthr_flush_hist(struct jthr *th, uint64_t *total, size_t *qlo, size_t *qhi);
/* th's results into m, all (the worst, the first mismatch, the histogram's
 * range, zeros), hist, d and the failure counts. */
void kv_jthr_merge(struct kv_metrics *m, struct jthr *all, const struct jthr *th, uint64_t *hist,
                   struct kv_error_dist *d, size_t *fails_bound, size_t *fails_tol);

#endif

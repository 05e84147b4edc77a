/* One pass over an output against its float64 oracle: every metric and the
 * verdict of compare.h, and the error distribution of errdist.h, from one
 * read of each element, in parallel chunks, with memory that does not grow
 * with the output (metrics.md; man kverify, "p99 ULP"). */
#ifndef KV_JUDGE_H
#define KV_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/compare.h"
#include "core/errdist.h"

/* Judge cand[i] (dtype t, the output's dtype) against y[i] with scales S[i]
 * (allow may be NULL) into m and, where d is not NULL, the distribution of
 * an output of shape[0..ndim) into d; idx: the flat index of each of the n
 * elements given (a --sample), or NULL when all are. Integer dtypes are
 * codes: compared exactly, a mismatch passes only where allow explains it.
 * Every result is the same on any number of threads. The p99 ULP is exact up
 * to KV_JUDGE_EXACT_P99 elements; past that it is read from a histogram of
 * 2^10 bins per octave: the lower edge of the bin that holds it, at most
 * 2^-10 of it below (0 when below 2^-80 ULP, the max ULP when past 2^80).
 * Fails only on out of memory. */
#define KV_JUDGE_EXACT_P99 ((size_t)1 << 16)
enum kv_status kv_judge(enum kv_dtype t, const void *cand, const double *y, const double *S, size_t n,
                        const size_t *idx, int ndim, const int64_t *shape, const struct kv_bound *b,
                        const struct kv_allow *allow, const struct kv_criteria *crit, struct kv_metrics *m,
                        struct kv_error_dist *d);

/* The oracle of an output: whole arrays y and S, or (y NULL) made block by
 * block as the judge goes: fill(ctx, lo, hi, b) writes elements [lo, hi)
 * into b->y[0..hi-lo) and b->S, and their allowances where allow says
 * (KV_BLOCK_SLACK: b->slack; KV_BLOCK_BOUND: b->lam, b->fix and b->ovf;
 * kv_allow's are then not read); called from several threads at once and
 * once more for the element a row shows. Memory then stays a chunk per
 * thread. */
enum { KV_BLOCK_SLACK = 1, KV_BLOCK_BOUND = 2 };
struct kv_oracle_block {
    double *y, *S, *slack, *lam, *fix;
    unsigned char *ovf;
    double *slack2; /* kv_judge_pair: the second row's slack, where not NULL */
};
struct kv_oracle_src {
    const double *y, *S;
    enum kv_status (*fill)(void *ctx, size_t lo, size_t hi, const struct kv_oracle_block *b);
    void *ctx;
    int allow;
};
enum kv_status kv_judge_src(enum kv_dtype t, const void *cand, const struct kv_oracle_src *src, size_t n,
                            const size_t *idx, int ndim, const int64_t *shape, const struct kv_bound *b,
                            const struct kv_allow *allow, const struct kv_criteria *crit, struct kv_metrics *m,
                            struct kv_error_dist *d);

/* Two rows of one output (cand[0], cand[1]: e.g. the isolated and the
 * chained run's) judged in one pass against one oracle made block by block
 * (src->fill; src->y NULL), each block made once: the second row reads the
 * block's slack2 (the fill writes it where it is not NULL) in place of its
 * slack, and has its own bound. Each row's metrics and distribution are
 * what kv_judge_src gives it alone (no whole-array allowances). */
enum kv_status kv_judge_pair(enum kv_dtype t, const void *const cand[2], const struct kv_oracle_src *src, size_t n,
                             int ndim, const int64_t *shape, const struct kv_bound b[2], const struct kv_criteria *crit,
                             struct kv_metrics m[2], struct kv_error_dist *d[2]);

/* kv_judge without a distribution (a flat output). */
enum kv_status kv_compare(enum kv_dtype t, const void *cand, const double *y, const double *S, size_t n,
                          const struct kv_bound *b, const struct kv_allow *allow, const struct kv_criteria *crit,
                          struct kv_metrics *m);

/* kv_judge's distribution alone. */
void kv_error_dist(enum kv_dtype t, const void *cand, const double *y, const double *S, size_t n, const size_t *idx,
                   int ndim, const int64_t *shape, const struct kv_bound *b, const struct kv_allow *allow,
                   const struct kv_criteria *crit, struct kv_error_dist *d);

#endif

#include "core/judge_tile.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/clones.h"

/* 1/x for a power of two x in [2^-1022, 2^1023]: exact, by its exponent. */
static inline double inv_pow2(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits = (uint64_t)(2046 - (int64_t)(bits >> 52)) << 52;
    double r;
    memcpy(&r, &bits, sizeof r);
    return r;
}

/* 2^k for k in [-1022, 1024] (1024: Inf). */
static inline double pow2(int64_t k)
{
    uint64_t bits = (uint64_t)(k + 1023) << 52;
    double r;
    memcpy(&r, &bits, sizeof r);
    return r;
}

/* kv_ulp_finite(y) without a branch or a variable shift: 2^max(e, emin)
 * times step = 2^(1 - precision), a product of powers of two, exact down to
 * f64's smallest subnormal. emin >= -1022 for every dtype, so a zero or
 * subnormal y (exponent field 0) is below it, as there. 64-bit integers
 * throughout: one lane width with the doubles'. */
static inline double ulp_of(double y, int64_t emin, double step)
{
    uint64_t bits;
    memcpy(&bits, &y, sizeof bits);
    int64_t e = (int64_t)((bits >> 52) & 0x7ff) - 1023;
    e = e < emin ? emin : e;
    return pow2(e) * step;
}

void kv_tile_tables_init(struct kv_tile_tables *tab)
{
    tab->edge[0] = 0;
    for (int i = 1; i < KV_DIST_RATIO_BINS; i++) tab->edge[i] = kv_dist_ratio_edge(i);
    tab->edge[KV_DIST_RATIO_BINS] = INFINITY;
}

/* The ratio's distribution over the tile's finite pairs: each bin holds the
 * ratios from its lower edge to the next one's, so a bin's count is the
 * difference of the counts of ratios at or past those edges, and those
 * counts are vector loops (a compare and an add per element, no table
 * lookup, no scatter). Only the edges between the smallest and the largest
 * positive ratio need one: past the largest, no ratio reaches an edge; up
 * to the smallest, every positive one does. NaN reaches none, and counts in
 * the last bin. A tile with a pair that is not finite (rare) is counted
 * element by element instead: the vectorizer does not take the flags. */
static inline __attribute__((always_inline)) void ratio_counts(const double *restrict rv,
                                                               const unsigned char *restrict fv, size_t n,
                                                               const double *edge, int64_t max_r, uint64_t zeros,
                                                               uint64_t nans, uint64_t odds, uint64_t *restrict rc)
{
    for (int k = 0; k <= KV_DIST_RATIO_BINS; k++) rc[k] = 0;
    rc[KV_DIST_RATIO_BINS] = zeros;
    rc[KV_DIST_RATIO_BINS - 1] = nans;
    if (odds) {
        for (size_t j = 0; j < n; j++)
            if (!(fv[j] & KV_TILE_ODD) && rv[j] > 0) rc[kv_dist_ratio_bin(rv[j], edge)]++;
        return;
    }
    if (max_r <= 0) return; /* no positive ratio */
    /* the smallest positive one (a NaN is not > 0), as the largest of
     * INT64_MAX less its bits: GCC vectorizes that, not the smallest */
    int64_t top = -1;
    for (size_t j = 0; j < n; j++) {
        const int64_t r = kv_bits_of(rv[j]), b = ((r > 0) & (r <= 0x7ff0000000000000)) ? INT64_MAX - r : -1;
        top = b > top ? b : top;
    }
    const int kmin = kv_dist_ratio_bin(kv_double_of(INT64_MAX - top), edge);
    const int kmax = kv_dist_ratio_bin(kv_double_of(max_r), edge);
    uint64_t at_least = (uint64_t)n - zeros - nans; /* ratios at or past edge kmin: every positive one */
    for (int k = kmin; k <= kmax; k++) {
        uint64_t next = 0; /* at or past edge k + 1 */
        if (k < kmax) {
            const double ek = edge[k + 1];
            for (size_t j = 0; j < n; j++) next += (uint64_t)(rv[j] >= ek);
        }
        rc[k] += at_least - next;
        at_least = next;
    }
}

/* A tile's loop (t and the presence of alt and lam are constants in each
 * caller, so the loop has no branch left). What it reads is held in locals,
 * restrict: the stores into o alias nothing it reads. */
static inline __attribute__((always_inline)) void loop(const struct kv_tile_in *in, enum kv_dtype t, int has_alt,
                                                      int has_lam, int has_slack, size_t at, size_t n,
                                                      struct kv_tile *restrict o)
{
    const void *restrict cand = in->cand;
    const double *restrict yv = in->y, *restrict Sv = in->S, *restrict alt = in->alt, *restrict lam = in->lam,
                 *restrict fix = in->fix, *restrict slack = in->slack;
    const double c1 = in->c1, c2 = in->c2, half_rho = in->half_rho, lambda = in->lambda, floor_rel = in->floor_rel;
    const int64_t emin = in->emin;
    const double step = pow2(1 - (int64_t)in->prec);
    const int tol = in->tol;
    const double atol = in->at, rtol = in->rt;
    double *restrict ev = o->e, *restrict uv = o->u, *restrict bv = o->base, *restrict rv = o->ratio,
                     *restrict e2v = o->e2, *restrict y2v = o->y2;
    int64_t max_e = 0, max_u = 0, max_rel = 0, max_ratio = -1;
    uint64_t rel_skipped = 0, over = 0, alts = 0, fails_tol = 0, odds = 0, slacked = 0;
    uint64_t *restrict qv = o->qbin;
    uint64_t uzero = 0, rzero = 0, rnan = 0;
    unsigned char *restrict fv = o->flag;
    for (size_t j = 0; j < n; j++) {
        const double c = kv_load_f64_fast(t, cand, at + j), y = yv[j];
        /* bitwise & and |: both sides are cheap, and a branch would stop the vectorizer */
        const int odd = !(fabs(c) <= DBL_MAX) | !(fabs(y) <= DBL_MAX);
        double e = fabs(c - y);
        const int hit = has_alt & (e > 0) & (c == (has_alt ? alt[j] : 0));
        e = hit ? 0 : e;
        const double ulp = ulp_of(y, emin, step);
        const double base0 = has_lam ? lambda * lam[j] + fix[j] + half_rho * ulp : c1 * Sv[j] + c2 * Sv[j] + half_rho * ulp;
        /* ulp is a power of two: times its exact inverse, the same as e / ulp
         * (which f64's smallest spacings, past 2^-1022, still need) */
        const double ay = fabs(y), q = e / ay; /* made for every element: a division under a select would be a branch */
        const double u = t == KV_F64 ? e / ulp : e * inv_pow2(ulp);
        ev[j] = e;
        uv[j] = u;
        e2v[j] = e * e;
        y2v[j] = y * y;
        qv[j] = kv_judge_q_bin(u);
        /* the slack only where the ratio without it is over 1 (a NaN ratio is not) */
        const double ratio0 = e / base0;
        /* with the slack made in every lane, then chosen: no branch */
        const double base1 = has_slack ? base0 + slack[j] : base0, ratio1 = has_slack ? e / base1 : ratio0;
        /* ratio0 > 1 (NaN not), on its bits: the vectorizer takes this mask
         * into the count below, which it does not with the double compare's */
        const int64_t b0 = kv_bits_of(ratio0);
        const int past = has_slack & (b0 > 0x3ff0000000000000) & (b0 <= 0x7ff0000000000000);
        const double base = past ? base1 : base0, ratio = past ? ratio1 : ratio0;
        bv[j] = base;
        rv[j] = ratio;
        /* the reductions, over the finite pairs (keep) */
        const int keep = !odd, normal = ay >= floor_rel;
        const int64_t be = keep ? kv_bits_of(e) : 0, bu = keep ? kv_bits_of(u) : 0, bq = (keep & normal) ? kv_bits_of(q) : 0;
        const int64_t br = (keep & (ratio == ratio)) ? kv_bits_of(ratio) : -1;
        max_e = be > max_e ? be : max_e;
        max_u = bu > max_u ? bu : max_u;
        max_rel = bq > max_rel ? bq : max_rel;
        max_ratio = br > max_ratio ? br : max_ratio;
        /* for the distribution: the zero ULP errors, the zero and NaN
         * ratios, on the bits (as above: the vectorizer takes these masks;
         * it does not take a smallest here, so ratio_counts makes that) */
        const int64_t rmag = kv_bits_of(ratio) & INT64_MAX, ub = kv_bits_of(u) & INT64_MAX;
        uzero += (uint64_t)(keep & (ub == 0));
        rzero += (uint64_t)(keep & (rmag == 0));
        rnan += (uint64_t)(keep & (rmag > 0x7ff0000000000000));
        rel_skipped += (uint64_t)(keep & !normal);
        /* over 1, or made NaN by the slack (a NaN slack: not within it) */
        over += (uint64_t)(keep & ((ratio > 1.0) | (past & !(ratio <= 1.0))));
        slacked += (uint64_t)(keep & past & (ratio <= 1.0)); /* NaN: not rescued */
        alts += (uint64_t)(keep & hit);
        fails_tol += (uint64_t)(keep & tol & (e > atol + rtol * ay));
        odds += (uint64_t)odd;
        fv[j] = (unsigned char)(odd ? KV_TILE_ODD : hit ? KV_TILE_ALT : 0);
    }
    o->max_e = max_e, o->max_u = max_u, o->max_rel = max_rel, o->max_ratio = max_ratio;
    o->rel_skipped = rel_skipped, o->over = over, o->alt = alts, o->fails_tol = fails_tol, o->odd = odds;
    o->slacked = slacked, o->uzero = uzero;
    if (in->dist) ratio_counts(rv, fv, n, in->tab->edge, max_ratio, rzero, rnan, odds, o->rcount);
}

/* One pass of a tile's loop, with the slack or without it. */
static inline __attribute__((always_inline)) void pass(const struct kv_tile_in *in, enum kv_dtype t, int slack,
                                                      size_t at, size_t n, struct kv_tile *o)
{
    if (in->alt && in->lam) slack ? loop(in, t, 1, 1, 1, at, n, o) : loop(in, t, 1, 1, 0, at, n, o);
    else if (in->alt) slack ? loop(in, t, 1, 0, 1, at, n, o) : loop(in, t, 1, 0, 0, at, n, o);
    else if (in->lam) slack ? loop(in, t, 0, 1, 1, at, n, o) : loop(in, t, 0, 1, 0, at, n, o);
    else slack ? loop(in, t, 0, 0, 1, at, n, o) : loop(in, t, 0, 0, 0, at, n, o);
}

static inline __attribute__((always_inline)) void tile_of(const struct kv_tile_in *in, enum kv_dtype t, size_t at,
                                                         size_t n, struct kv_tile *o)
{
    /* The slack is read only where a ratio without it is past 1: for a
     * finite pair, where it counts in over (a non-finite pair's ratio and
     * base are never read). A tile with none (nearly every tile) is the same
     * without it, which spares a division and a load per element. Where
     * the caller expects one (in->slack_first), the pass with the slack runs
     * alone: each value it makes is the one the two passes make (the second
     * writes all the first does). */
    int slack = in->slack && in->slack_first;
    if (!slack) {
        pass(in, t, 0, at, n, o);
        slack = in->slack && o->over; /* judged again with the slack where a ratio is past 1 */
    }
    if (slack) pass(in, t, 1, at, n, o);
}

KV_CLONES static void tile_f32(const struct kv_tile_in *in, size_t at, size_t n, struct kv_tile *o)
{
    tile_of(in, KV_F32, at, n, o);
}

KV_CLONES static void tile_bf16(const struct kv_tile_in *in, size_t at, size_t n, struct kv_tile *o)
{
    tile_of(in, KV_BF16, at, n, o);
}

KV_CLONES static void tile_f64(const struct kv_tile_in *in, size_t at, size_t n, struct kv_tile *o)
{
    tile_of(in, KV_F64, at, n, o);
}

void kv_judge_tile(const struct kv_tile_in *in, size_t at, size_t n, struct kv_tile *o)
{
    switch (in->t) {
    case KV_F32: tile_f32(in, at, n, o); break;
    case KV_BF16: tile_bf16(in, at, n, o); break;
    case KV_F64: tile_f64(in, at, n, o); break;
    default: tile_of(in, in->t, at, n, o); break;
    }
}

#include "core/judge.h"
#include "core/judge_codes.h"
#include "core/judge_dist.h"
#include "core/judge_tile.h"
#include "core/tensor.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    unsigned char *ovfb;
    struct kv_error_dist *d;
    struct kv_dist_tiles *dt; /* the float loop's share of d, a tile at a time */
};

static inline int better(double r, size_t i, double best, size_t at) { return r > best || (r == best && i < at); }

/* A mismatch, a worst-list entry for it, its cell marked. */
static void mismatch(const struct jin *x, struct jthr *th, size_t i, double c, double y, int cell)
{
    if (i < th->first_mismatch) th->first_mismatch = i;
    if (!th->d) return;
    struct kv_error_dist *d = th->d;
    d->mismatch++;
    d->bad[cell] = 1;
    if (d->map[cell] < 0) d->map[cell] = 0;
    struct kv_worst_elem w = {x->idx ? x->idx[i] : i, c, y, kv_dtype_is_integer(x->t) ? fabs(c - y) : INFINITY,
                              0, 0, 0, 1};
    if (w.error != INFINITY) w.ulp = w.error;
    kv_dist_note_worst(d, &w);
}

/* A pair with a non-finite member: a legal match, or a mismatch. */
static void nonfinite(const struct jin *x, struct jthr *th, size_t i, const struct jrow *r, size_t j, double c,
                      double y, double Si, int cell)
{
    double err = (r->lam ? x->lambda * r->lam[j] + r->fix[j] : (x->c1 + x->c2) * Si) + (r->slack ? r->slack[j] : 0);
    switch (kv_nonfinite_match(x->t, x->b, c, y, Si, err, r->ovf && r->ovf[j])) {
    case KV_NF_NAN: th->nan_match++; return;
    case KV_NF_INF: th->inf_match++; return;
    case KV_NF_OVERFLOW: th->overflow_ok++; return;
    case KV_NF_MISMATCH: break;
    }
    if (isnan(c) || isnan(y)) th->nan_mismatch++;
    else th->inf_mismatch++;
    mismatch(x, th, i, c, y, cell);
}

/* The map cells of elements lo, lo + 1, ...: walked over a whole output
 * (kv_dist_walk), looked up for a sample's indices. */
struct cells {
    const struct jin *x;
    int whole;
    struct kv_dist_walk w;
};

static inline void cells_at(struct cells *c, const struct jin *x, const struct kv_error_dist *d, size_t lo)
{
    *c = (struct cells){x, d && !x->idx && d->cols > 0, {d, 0, 0, 0, 0, 0}};
    if (c->whole) kv_dist_walk_at(&c->w, d, lo);
}

/* Element i's cell (i goes up by one from lo); 0 without a distribution. */
static inline int cells_next(struct cells *c, size_t i)
{
    if (!c->w.d) return 0;
    if (!c->whole) return kv_dist_cell(c->w.d, c->x->idx ? c->x->idx[i] : i);
    return kv_dist_walk_next(&c->w);
}

/* Elements [lo, hi) of a float output, a tile at a time: the tile's
 * arithmetic vectorized (kv_judge_tile, the same values as element by
 * element), then its sums in index order (on from s's: a chunk made block by
 * block comes in parts), its non-finite pairs, its share of
 * the distribution (kv_dist_tiles_add), its counts and maxima. t is a
 * constant in each caller; what the loop counts is held in locals. */

static inline __attribute__((always_inline)) void chunk_float(const struct jin *x, enum kv_dtype t, size_t lo,
                                                              size_t hi, const struct jrow *r, struct jthr *th,
                                                              struct jsum *s)
{
    struct kv_error_dist *d = th->d;
    struct kv_dist_tiles *dt = th->dt;
    if (d) kv_dist_tiles_at(dt, d, x->idx, lo);
    const void *cand = x->cand;
    const double *y_lo = r->y, *S_lo = r->S;
    const int exact = x->exact_p99;
    struct kv_tile_in in = {.t = t, .cand = cand, .c1 = x->c1, .c2 = x->c2, .half_rho = 0.5 * x->rho,
                            .lambda = x->lambda, .floor_rel = x->floor_rel, .emin = x->emin, .prec = x->prec,
                            .tol = x->tol, .at = x->at, .rt = x->rt, .tab = &x->tab, .dist = d != NULL};
    struct kv_tile tile;
    uint32_t *hist = th->hist;
    double *ulps = th->ulps;
    double sum_ulp = s->ulp, sum_e2 = s->e2, sum_y2 = s->y2, max_ulp = th->max_ulp, max_abs = th->max_abs, max_rel = th->max_rel;
    double worst_ratio = th->worst_ratio;
    size_t worst = th->worst, compared = th->compared, rel_skipped = 0, fails_bound = 0, fails_tol = 0, slack_used = 0;
    size_t uzero = 0, qlo = th->qlo, qhi = th->qhi;
    for (size_t i0 = lo; i0 < hi; i0 += KV_TILE) {
        const size_t n = hi - i0 < KV_TILE ? hi - i0 : KV_TILE, o = i0 - lo;
        in.y = y_lo + o, in.S = S_lo + o;
        in.alt = r->alt ? r->alt + o : NULL;
        in.lam = r->lam ? r->lam + o : NULL, in.fix = r->lam ? r->fix + o : NULL;
        in.slack = r->slack ? r->slack + o : NULL;
        kv_judge_tile(&in, i0, n, &tile);
        in.slack_first = tile.slacked + tile.over > 0; /* the next tile likely past 1 without its slack too */
        /* the histogram and the sums, in index order: a loop without a call,
         * so that the sums stay in registers */
        for (size_t j = 0; j < n; j++) {
            if (tile.odd && tile.flag[j] & KV_TILE_ODD) continue;
            const double u = tile.u[j];
            if (exact) {
                ulps[compared] = u;
            } else { /* and the lowest bin past 0 it counts in */
                const size_t b = tile.qbin[j];
                hist[b]++;
                qlo = b && b < qlo ? b : qlo;
            }
            compared++;
            sum_ulp += u;
            sum_e2 += tile.e2[j];
            sum_y2 += tile.y2[j];
        }
        /* the highest: the largest ULP error's (the bins rise with it) */
        const size_t top = exact ? 0 : kv_judge_q_bin(kv_double_of(tile.max_u));
        qhi = top > qhi ? top : qhi;
        /* the non-finite pairs */
        if (tile.odd)
            for (size_t j = 0; j < n; j++) {
                const size_t i = i0 + j;
                if (!(tile.flag[j] & KV_TILE_ODD)) continue;
                const int cell = d ? kv_dist_cell(d, x->idx ? x->idx[i] : i) : 0;
                nonfinite(x, th, i, r, o + j, kv_load_f64_fast(t, cand, i), y_lo[o + j], S_lo[o + j], cell);
            }
        if (d) kv_dist_tiles_add(dt, &tile, t, cand, y_lo + o, i0, n);
        /* the tile's counts and maxima (kv_judge_tile) */
        max_ulp = kv_double_of(tile.max_u) > max_ulp ? kv_double_of(tile.max_u) : max_ulp;
        max_abs = kv_double_of(tile.max_e) > max_abs ? kv_double_of(tile.max_e) : max_abs;
        max_rel = kv_double_of(tile.max_rel) > max_rel ? kv_double_of(tile.max_rel) : max_rel;
        rel_skipped += tile.rel_skipped, fails_bound += tile.over, fails_tol += tile.fails_tol, uzero += tile.uzero;
        slack_used += tile.alt + tile.slacked; /* the other legal value, or within the slack */
        /* the first element of the largest ratio, where it beats the chunk's so far (i rises: the first of equals stays) */
        if (tile.max_ratio >= 0 && kv_double_of(tile.max_ratio) > worst_ratio) {
            size_t j = 0;
            while (tile.flag[j] & KV_TILE_ODD || memcmp(&tile.ratio[j], &tile.max_ratio, sizeof(double))) j++;
            worst_ratio = tile.ratio[j], worst = i0 + j;
        }
    }
    if (d) kv_dist_tiles_close(dt);
    th->max_ulp = max_ulp, th->max_abs = max_abs, th->max_rel = max_rel;
    if (worst != th->worst && better(worst_ratio, worst, th->worst_ratio, th->worst))
        th->worst_ratio = worst_ratio, th->worst = worst;
    th->compared = compared, th->rel_skipped += rel_skipped, th->fails_bound += fails_bound;
    th->fails_tol += fails_tol, th->slack_used += slack_used, th->uzero += uzero;
    th->qlo = qlo, th->qhi = qhi;
    s->ulp = sum_ulp, s->e2 = sum_e2, s->y2 = sum_y2;
}

/* A tile of codes all exact: its counts, and its cells marked as compared,
 * as the loop below would (the walk moved past it). */
static void codes_exact_tile(struct cells *cw, struct kv_error_dist *d, size_t i, size_t n, const int16_t *tie,
                             struct jthr *th)
{
    th->ambiguous += tie ? kv_codes_nonneg(tie, n) : 0, th->compared += n, th->exact += n;
    if (!d) return;
    d->ulp_zero += n, d->ratio_zero += n;
    if (cw->whole) {
        kv_codes_mark(d, i, n);
        kv_dist_walk_at(&cw->w, d, i + n);
    } else {
        for (size_t j = 0; j < n; j++) {
            const int cell = cells_next(cw, i + j);
            if (d->map[cell] < 0) d->map[cell] = 0;
        }
    }
}

/* Elements [lo, hi) of an integer output (codes): exact, the other side of
 * a tie within reach, or the flushed model's code. A tile of codes all
 * exact (nearly every one) is counted at once. */
static void chunk_codes(const struct jin *x, size_t lo, size_t hi, const struct jrow *r, struct jthr *th)
{
    struct kv_error_dist *d = th->d;
    struct cells cw;
    cells_at(&cw, x, d, lo);
    for (size_t i = lo, end = lo; i < hi; i++) {
        if (i == end) { /* a tile's start */
            const size_t n = hi - i < KV_TILE ? hi - i : KV_TILE;
            end = i + n;
            if (kv_codes_equal(x->t, x->cand, i, n, r->y + (i - lo)) == n) {
                codes_exact_tile(&cw, d, i, n, r->tie ? r->tie + (i - lo) : NULL, th);
                i = end - 1;
                continue;
            }
        }
        const int cell = cells_next(&cw, i);
        const size_t j = i - lo;
        double c = kv_load_f64_fast(x->t, x->cand, i), dd = fabs(c - r->y[j]);
        int has_tie = r->tie && r->tie[j] >= 0;
        th->ambiguous += (size_t)has_tie;
        th->compared++;
        if (dd > th->max_abs) th->max_abs = dd;
        if (dd == 0) th->exact++;
        else if (has_tie && c == r->tie[j]) th->tie_explained++;
        else if (r->flush && r->flush[j] >= 0 && c == r->flush[j]) th->flush_explained++;
        else {
            th->unexplained++;
            mismatch(x, th, i, c, r->y[j], cell);
            continue;
        }
        if (!d) continue;
        if (dd == 0) d->ulp_zero++;
        else d->ulp[kv_dist_ulp_bin(dd)]++;
        d->ratio_zero++; /* an explained code is within its allowance */
        if (d->map[cell] < 0) d->map[cell] = 0;
    }
}

typedef void chunk_fn(const struct jin *, size_t, size_t, const struct jrow *, struct jthr *, struct jsum *);
static void chunk_f32(const struct jin *x, size_t lo, size_t hi, const struct jrow *r, struct jthr *th, struct jsum *s)
{
    chunk_float(x, KV_F32, lo, hi, r, th, s);
}
static void chunk_f64(const struct jin *x, size_t lo, size_t hi, const struct jrow *r, struct jthr *th, struct jsum *s)
{
    chunk_float(x, KV_F64, lo, hi, r, th, s);
}
static void chunk_bf16(const struct jin *x, size_t lo, size_t hi, const struct jrow *r, struct jthr *th, struct jsum *s)
{
    chunk_float(x, KV_BF16, lo, hi, r, th, s);
}
static void chunk_other(const struct jin *x, size_t lo, size_t hi, const struct jrow *r, struct jthr *th,
                        struct jsum *s)
{
    chunk_float(x, x->t, lo, hi, r, th, s);
}

/* Chunk lo's oracle and allowances: the block made for it, or the whole arrays from lo. */
static struct jrow row_at(const struct jin *x, size_t lo, const struct kv_oracle_block *b)
{
#define AT(p) ((p) ? (p) + lo : NULL)
    struct jrow r = {AT(x->y), AT(x->S), AT(x->slack), AT(x->alt), AT(x->lam), AT(x->fix), AT(x->ovf), AT(x->tie),
                     AT(x->flush)};
#undef AT
    if (b) r.y = b->y, r.S = b->S;
    if (b && b->slack) r.slack = b->slack;
    if (b && b->lam) r.lam = b->lam, r.fix = b->fix, r.ovf = b->ovf;
    return r;
}

static void free_thr(struct jthr *th, int nt)
{
    for (int k = 0; th && k < nt; k++) {
        free(th[k].hist), free(th[k].ulps), free(th[k].d), free(th[k].dt), free(th[k].yb), free(th[k].Sb);
        free(th[k].slb), free(th[k].lamb), free(th[k].fixb), free(th[k].ovfb);
    }
    free(th);
}

/* A thread's first chunk: its histogram (or ULP buffer) and distribution. */
static int init_thr(const struct jin *x, struct jthr *th, size_t n, int blocks, int allow)
{
    th->used = 1;
    if (blocks) {
        th->yb = malloc(SUB * sizeof *th->yb), th->Sb = malloc(SUB * sizeof *th->Sb);
        if (!th->yb || !th->Sb) return -1;
    }
    if (blocks && (allow & KV_BLOCK_SLACK) && !(th->slb = malloc(SUB * sizeof *th->slb))) return -1;
    if (blocks && (allow & KV_BLOCK_BOUND)) {
        th->lamb = malloc(SUB * sizeof *th->lamb), th->fixb = malloc(SUB * sizeof *th->fixb);
        th->ovfb = malloc(SUB);
        if (!th->lamb || !th->fixb || !th->ovfb) return -1;
    }
    th->worst_ratio = -1;
    th->worst = th->first_mismatch = (size_t)-1;
    th->qlo = KV_Q_BINS, th->qhi = 0;
    if (!kv_dtype_is_integer(x->t)) {
        if (x->exact_p99) th->ulps = malloc((n ? n : 1) * sizeof *th->ulps);
        else th->hist = calloc(KV_Q_BINS, sizeof *th->hist);
        if (!th->ulps && !th->hist) return -1;
    }
    if (x->grid) {
        th->d = malloc(sizeof *th->d), th->dt = malloc(sizeof *th->dt);
        if (!th->d || !th->dt) return -1;
        kv_dist_init_like(th->d, x->grid);
    }
    return 0;
}

/* A thread's histogram into the total: bin 0 and the range its other
 * counts lie in (a few octaves of the 2 KV_Q_OCT), not every bin. */
static void add_hist(uint64_t *total, const struct jthr *th)
{
    total[0] += th->hist[0];
    for (size_t k = th->qlo; k <= th->qhi; k++) total[k] += th->hist[k];
}

static void flush_hist(struct jthr *th, uint64_t *total, size_t *qlo, size_t *qhi)
{
#pragma omp critical(kv_judge_hist)
    {
        add_hist(total, th);
        *qlo = th->qlo < *qlo ? th->qlo : *qlo, *qhi = th->qhi > *qhi ? th->qhi : *qhi;
    }
    th->hist[0] = 0;
    if (th->qlo <= th->qhi) memset(th->hist + th->qlo, 0, (th->qhi - th->qlo + 1) * sizeof *th->hist);
    th->filled = 0, th->qlo = KV_Q_BINS, th->qhi = 0;
}

static void merge_thr(struct kv_metrics *m, struct jthr *all, const struct jthr *th, uint64_t *hist,
                      struct kv_error_dist *d, size_t *fails_bound, size_t *fails_tol)
{
    if (!th->used) return;
    if (th->hist) {
        add_hist(hist, th);
        all->qlo = th->qlo < all->qlo ? th->qlo : all->qlo, all->qhi = th->qhi > all->qhi ? th->qhi : all->qhi;
    }
    if (d && th->d) kv_dist_merge(d, th->d);
    if (th->max_ulp > m->max_ulp) m->max_ulp = th->max_ulp;
    if (th->max_abs > m->max_abs) m->max_abs = th->max_abs;
    if (th->max_rel > m->max_rel) m->max_rel = th->max_rel;
    m->compared += th->compared, m->rel_skipped += th->rel_skipped;
    m->nan_match += th->nan_match, m->inf_match += th->inf_match;
    m->nan_mismatch += th->nan_mismatch, m->inf_mismatch += th->inf_mismatch;
    m->slack_used += th->slack_used, m->overflow_ok += th->overflow_ok;
    m->exact += th->exact, m->ambiguous += th->ambiguous, m->tie_explained += th->tie_explained;
    m->flush_explained += th->flush_explained, m->unexplained += th->unexplained;
    *fails_bound += th->fails_bound, *fails_tol += th->fails_tol;
    all->uzero += th->uzero;
    if (th->first_mismatch < all->first_mismatch) all->first_mismatch = th->first_mismatch;
    if (th->worst != (size_t)-1 && better(th->worst_ratio, th->worst, all->worst_ratio, all->worst))
        all->worst_ratio = th->worst_ratio, all->worst = th->worst;
}

/* The element a row shows: the first mismatch, else the worst. */
static void note_shown(enum kv_dtype t, const void *cand, const struct kv_oracle_src *src, size_t i, struct kv_metrics *m)
{
    double y = NAN, S, sl, lam, fix;
    unsigned char ovf;
    const int sl_on = src->allow & KV_BLOCK_SLACK, bd = src->allow & KV_BLOCK_BOUND;
    const struct kv_oracle_block b = {&y, &S, sl_on ? &sl : NULL, bd ? &lam : NULL, bd ? &fix : NULL, bd ? &ovf : NULL};
    if (src->y) y = src->y[i];
    else if (src->fill(src->ctx, i, i + 1, &b)) y = NAN;
    m->worst_index = i, m->worst_c = kv_load_f64_fast(t, cand, i), m->worst_y = y, m->has_worst = 1;
}

/* The sums in chunk order, the worst element, the p99 and the verdict. */
static void finish(enum kv_dtype t, const void *cand, const struct kv_oracle_src *src, size_t n, const struct kv_criteria *crit,
                   int integer, const struct jthr *all, const struct jsum *sums, size_t nchunks, double *ulps,
                   const uint64_t *hist, size_t fails_bound, size_t fails_tol, struct kv_metrics *m)
{
    double sum_ulp = 0, sum_e2 = 0, sum_y2 = 0;
    for (size_t k = 0; k < nchunks; k++) sum_ulp += sums[k].ulp, sum_e2 += sums[k].e2, sum_y2 += sums[k].y2;
    if (integer) {
        m->integer = 1;
        /* no allowance exists for an unexplained code: its bound ratio is infinite */
        m->max_bound_ratio = m->unexplained ? INFINITY : 0;
        size_t show = all->first_mismatch != (size_t)-1 ? all->first_mismatch : (n ? 0 : (size_t)-1);
        if (show != (size_t)-1) note_shown(t, cand, src, show, m);
        m->pass = m->unexplained == 0;
        snprintf(m->criterion, sizeof m->criterion, "codes exact (ties and flushed subnormals explained)");
    } else {
        size_t show = all->first_mismatch != (size_t)-1 ? all->first_mismatch : all->worst;
        if (show != (size_t)-1) note_shown(t, cand, src, show, m);
        m->max_bound_ratio = all->worst_ratio < 0 ? 0 : all->worst_ratio;
        m->mean_ulp = m->compared ? sum_ulp / (double)m->compared : 0;
        m->p99_ulp = ulps ? kv_quantile(ulps, m->compared, 0.99) : kv_judge_p99(hist, all->qlo, all->qhi, m->compared, m->max_ulp);
        m->nmse = sum_y2 > 0 ? sum_e2 / sum_y2 : (sum_e2 > 0 ? INFINITY : 0);
        if (m->compared) {
            double k = (double)m->compared;
            m->rmse_ratio = sqrt(sum_e2 / k) / (sqrt(sum_y2 / k) + 1e-30);
        }
        kv_metrics_decide(m, crit, fails_bound, fails_tol);
    }
}

/* An output of fewer chunks than threads, made block by block: its blocks
 * made on every thread at once, in pieces, into whole arrays (no larger than
 * the threads' chunks would be), then judged as whole arrays. The values do
 * not depend on the pieces (kv_oracle_src), so neither does the report. */
static enum kv_status judge_filled(enum kv_dtype t, const void *cand, const struct kv_oracle_src *src, size_t n,
                                   const size_t *idx, int ndim, const int64_t *shape, const struct kv_bound *b,
                                   const struct kv_allow *allow, const struct kv_criteria *crit, struct kv_metrics *m,
                                   struct kv_error_dist *d, int nt)
{
    const int sl_on = src->allow & KV_BLOCK_SLACK, al = src->allow & KV_BLOCK_BOUND;
    double *y = kv_malloc_big(n * sizeof *y), *S = kv_malloc_big(n * sizeof *S);
    double *sl = sl_on ? kv_malloc_big(n * sizeof *sl) : NULL;
    double *lam = al ? kv_malloc_big(n * sizeof *lam) : NULL, *fix = al ? kv_malloc_big(n * sizeof *fix) : NULL;
    unsigned char *ovf = al ? malloc(n) : NULL;
    enum kv_status st = KV_OK;
    if (!y || !S || (sl_on && !sl) || (al && (!lam || !fix || !ovf)))
        st = kv_error(KV_EDEVICE, "out of host memory comparing %zu elements", n);
    const size_t piece = n / (4 * (size_t)nt) > 256 ? n / (4 * (size_t)nt) : 256, np = (n + piece - 1) / piece;
    enum kv_status fill_st = KV_OK;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (size_t q = 0; q < (st ? 0 : np); q++) { /* st: not yet allocated */
        const size_t lo = q * piece, hi = lo + piece < n ? lo + piece : n;
        const struct kv_oracle_block blk = {y + lo, S + lo, sl_on ? sl + lo : NULL, al ? lam + lo : NULL,
                                            al ? fix + lo : NULL, al ? ovf + lo : NULL};
        enum kv_status fs = src->fill(src->ctx, lo, hi, &blk);
        if (fs) {
#pragma omp critical(kv_judge_fill)
            fill_st = fill_st ? fill_st : fs;
        }
    }
    if (!st) st = fill_st;
    if (!st) {
        const struct kv_oracle_src whole = {y, S, NULL, NULL, 0};
        struct kv_allow a = allow ? *allow : (struct kv_allow){0};
        if (sl_on) a.slack = sl;
        if (al) a.lam = lam, a.fix = fix, a.ovf = ovf;
        st = kv_judge_src(t, cand, &whole, n, idx, ndim, shape, b, &a, crit, m, d);
    }
    free(y), free(S), free(sl), free(lam), free(fix), free(ovf);
    return st;
}

enum kv_status kv_judge_src(enum kv_dtype t, const void *cand, const struct kv_oracle_src *src, size_t n,
                            const size_t *idx, int ndim, const int64_t *shape, const struct kv_bound *b,
                        const struct kv_allow *allow, const struct kv_criteria *crit, struct kv_metrics *m,
                        struct kv_error_dist *d)
{
    const int threads = omp_get_max_threads();
    if (!src->y && n > 0 && threads > 1 && n <= CHUNK * (size_t)(threads - 1))
        return judge_filled(t, cand, src, n, idx, ndim, shape, b, allow, crit, m, d, threads);
    const struct kv_allow none = {0};
    const struct kv_allow *a = allow ? allow : &none;
    const struct kv_dtype_info *ti = kv_dtype_info(t);
    struct jin x = {t, cand, src->y, src->S, a->slack, a->alt, a->lam, a->fix, a->ovf, a->tie, a->flush, idx, b,
                    crit->lambda, crit->lambda * sqrt(b->n) * b->u_acc, b->k_op * b->u_acc, b->rho,
                    ldexp(1.0, ti->emin), crit->rtol > 0 ? crit->rtol : 0, crit->atol > 0 ? crit->atol : 0,
                    crit->rtol >= 0 || crit->atol >= 0, ti->emin, ti->precision, n <= KV_JUDGE_EXACT_P99,
                    {{0}}, d};
    kv_tile_tables_init(&x.tab);
    memset(m, 0, sizeof *m);
    m->elements = n;
    if (d) kv_dist_init(d, ndim, shape);
    const int integer = kv_dtype_is_integer(t);
    chunk_fn *fn = t == KV_F32 ? chunk_f32 : t == KV_F64 ? chunk_f64 : t == KV_BF16 ? chunk_bf16 : chunk_other;
    size_t nchunks = (n + CHUNK - 1) / CHUNK;
    int nt = x.exact_p99 ? 1 : omp_get_max_threads();
    struct jthr *th = calloc((size_t)nt, sizeof *th);
    struct jsum *sums = calloc(nchunks ? nchunks : 1, sizeof *sums);
    uint64_t *hist = x.exact_p99 || integer ? NULL : calloc(KV_Q_BINS, sizeof *hist);
    int oom = !th || !sums || (!x.exact_p99 && !integer && !hist);
    const int blocks = !src->y;
    enum kv_status fill_st = KV_OK;
    const int own_allow = blocks ? src->allow : 0;
    size_t flo = KV_Q_BINS, fhi = 0; /* the flushed histograms' range */
    if (!oom && nt == 1 && init_thr(&x, &th[0], n, blocks, own_allow)) oom = 1;
    if (!oom) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
        for (size_t k = 0; k < nchunks; k++) {
            struct jthr *me = &th[omp_get_thread_num()];
            if (!me->used && init_thr(&x, me, n, blocks, own_allow)) {
#pragma omp atomic write
                oom = 1;
            }
            int failed;
#pragma omp atomic read
            failed = oom;
            if (failed) continue;
            const size_t lo = k * CHUNK, hi = lo + CHUNK < n ? lo + CHUNK : n;
            const struct kv_oracle_block b = {me->yb, me->Sb, me->slb, me->lamb, me->fixb, me->ovfb};
            /* made block by block: SUB elements at a time, each judged as
             * its block is made (the chunk's sums go on in index order) */
            for (size_t a = lo, e; a < hi; a = e) {
                e = blocks && hi - a > SUB ? a + SUB : hi;
                const enum kv_status fs = blocks ? src->fill(src->ctx, a, e, &b) : KV_OK;
                if (fs) {
#pragma omp critical(kv_judge_fill)
                    fill_st = fill_st ? fill_st : fs;
                    break;
                }
                const struct jrow r = row_at(&x, a, blocks ? &b : NULL);
                if (integer) chunk_codes(&x, a, e, &r, me);
                else fn(&x, a, e, &r, me, &sums[k]);
            }
            if (me->hist && (me->filled += hi - lo) > Q_FLUSH) flush_hist(me, hist, &flo, &fhi);
        }
    }
    if (oom || fill_st) {
        free_thr(th, nt), free(sums), free(hist);
        return fill_st ? fill_st : kv_error(KV_EDEVICE, "out of host memory comparing %zu elements", n);
    }
    struct jthr all = {.worst_ratio = -1, .worst = (size_t)-1, .first_mismatch = (size_t)-1, .qlo = flo, .qhi = fhi};
    size_t fails_bound = 0, fails_tol = 0;
    for (int k = 0; k < nt; k++) merge_thr(m, &all, &th[k], hist, d, &fails_bound, &fails_tol);
    if (d && !integer) kv_dist_ulp_hist(d, hist, all.qlo, all.qhi, x.exact_p99 ? th[0].ulps : NULL, m->compared, all.uzero);
    finish(t, cand, src, n, crit, integer, &all, sums, nchunks, x.exact_p99 ? th[0].ulps : NULL, hist, fails_bound,
           fails_tol, m);
    free_thr(th, nt), free(sums), free(hist);
    return KV_OK;
}

enum kv_status kv_judge(enum kv_dtype t, const void *cand, const double *y, const double *S, size_t n,
                        const size_t *idx, int ndim, const int64_t *shape, const struct kv_bound *b,
                        const struct kv_allow *allow, const struct kv_criteria *crit, struct kv_metrics *m,
                        struct kv_error_dist *d)
{
    const struct kv_oracle_src src = {y, S, NULL, NULL, 0};
    return kv_judge_src(t, cand, &src, n, idx, ndim, shape, b, allow, crit, m, d);
}

enum kv_status kv_compare(enum kv_dtype t, const void *cand, const double *y, const double *S, size_t n,
                          const struct kv_bound *b, const struct kv_allow *allow, const struct kv_criteria *crit,
                          struct kv_metrics *m)
{
    return kv_judge(t, cand, y, S, n, NULL, 1, NULL, b, allow, crit, m, NULL);
}

void kv_error_dist(enum kv_dtype t, const void *cand, const double *y, const double *S, size_t n, const size_t *idx,
                   int ndim, const int64_t *shape, const struct kv_bound *b, const struct kv_allow *allow,
                   const struct kv_criteria *crit, struct kv_error_dist *d)
{
    struct kv_metrics m;
    if (kv_judge(t, cand, y, S, n, idx, ndim, shape, b, allow, crit, &m, d)) kv_dist_init(d, ndim, shape);
}

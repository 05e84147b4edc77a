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

#include "core/judge_thr.h"


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
    if (worst != th->worst && kv_jthr_better(worst_ratio, worst, th->worst_ratio, th->worst))
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
        else if (r->flush && kv_flush_offers(r->flush[j], c)) th->flush_explained++;
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

/* The element a row shows: the first mismatch, else the worst. */
static void note_shown(enum kv_dtype t, const void *cand, const struct kv_oracle_src *src, size_t i, struct kv_metrics *m)
{
    double y = NAN, S, sl, lam, fix;
    unsigned char ovf;
    const int sl_on = src->allow & KV_BLOCK_SLACK, bd = src->allow & KV_BLOCK_BOUND;
    const struct kv_oracle_block b = {&y, &S, sl_on ? &sl : NULL, bd ? &lam : NULL, bd ? &fix : NULL, bd ? &ovf : NULL, NULL};
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
 * the threads' chunks would be), then judged as whole arrays, once for each
 * of the K rows (the second with the blocks' slack2). The values do not
 * depend on the pieces (kv_oracle_src), so neither does the report. */
static enum kv_status judge_filled(int K, enum kv_dtype t, const void *const *cand, const struct kv_oracle_src *src,
                                   size_t n, const size_t *idx, int ndim, const int64_t *shape,
                                   const struct kv_bound *b, const struct kv_allow *const *allow,
                                   const struct kv_criteria *crit, struct kv_metrics *m, struct kv_error_dist **d,
                                   int nt)
{
    const int sl_on = src->allow & KV_BLOCK_SLACK, al = src->allow & KV_BLOCK_BOUND;
    double *y = kv_malloc_big(n * sizeof *y), *S = kv_malloc_big(n * sizeof *S);
    double *sl = sl_on ? kv_malloc_big(n * sizeof *sl) : NULL, *sl2 = K > 1 ? kv_malloc_big(n * sizeof *sl2) : NULL;
    double *lam = al ? kv_malloc_big(n * sizeof *lam) : NULL, *fix = al ? kv_malloc_big(n * sizeof *fix) : NULL;
    unsigned char *ovf = al ? malloc(n) : NULL;
    enum kv_status st = KV_OK;
    if (!y || !S || (sl_on && !sl) || (K > 1 && !sl2) || (al && (!lam || !fix || !ovf)))
        st = kv_error(KV_EDEVICE, "out of host memory comparing %zu elements", n);
    const size_t piece = n / (4 * (size_t)nt) > 256 ? n / (4 * (size_t)nt) : 256, np = (n + piece - 1) / piece;
    enum kv_status fill_st = KV_OK;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (size_t q = 0; q < (st ? 0 : np); q++) { /* st: not yet allocated */
        const size_t lo = q * piece, hi = lo + piece < n ? lo + piece : n;
        const struct kv_oracle_block blk = {y + lo, S + lo, sl_on ? sl + lo : NULL, al ? lam + lo : NULL,
                                            al ? fix + lo : NULL, al ? ovf + lo : NULL, K > 1 ? sl2 + lo : NULL};
        enum kv_status fs = src->fill(src->ctx, lo, hi, &blk);
        if (fs) {
#pragma omp critical(kv_judge_fill)
            fill_st = fill_st ? fill_st : fs;
        }
    }
    if (!st) st = fill_st;
    for (int j = 0; j < K && !st; j++) {
        const struct kv_oracle_src whole = {y, S, NULL, NULL, 0};
        struct kv_allow a = allow[j] ? *allow[j] : (struct kv_allow){0};
        if (j) a.slack = sl2;
        else if (sl_on) a.slack = sl;
        if (al) a.lam = lam, a.fix = fix, a.ovf = ovf;
        st = kv_judge_src(t, cand[j], &whole, n, idx, ndim, shape, &b[j], &a, crit, &m[j], d[j]);
    }
    free(y), free(S), free(sl), free(sl2), free(lam), free(fix), free(ovf);
    return st;
}

/* One row's state through the pass: what its chunks read, each thread's
 * results, the per-chunk sums and the p99's histogram. */
struct jone {
    struct jin x;
    struct jthr *th;
    struct jsum *sums;
    uint64_t *hist;
    size_t flo, fhi; /* the flushed histograms' range */
};

/* Row j's state: what its chunks read, its metrics and distribution started. */
static int row_init(struct jone *o, enum kv_dtype t, const void *cand, const struct kv_oracle_src *src, size_t n,
                    const size_t *idx, int ndim, const int64_t *shape, const struct kv_bound *b,
                    const struct kv_allow *allow, const struct kv_criteria *crit, struct kv_metrics *m,
                    struct kv_error_dist *d, int nt)
{
    const struct kv_allow none = {0}, *a = allow ? allow : &none;
    const struct kv_dtype_info *ti = kv_dtype_info(t);
    const int exact_p99 = n <= KV_JUDGE_EXACT_P99, integer = kv_dtype_is_integer(t);
    const size_t nchunks = (n + CHUNK - 1) / CHUNK;
    o->x = (struct jin){t, cand, src->y, src->S, a->slack, a->alt, a->lam, a->fix, a->ovf, a->tie, a->flush, idx, b,
                        crit->lambda, crit->lambda * sqrt(b->n) * b->u_acc, b->k_op * b->u_acc, b->rho,
                        ldexp(1.0, ti->emin), crit->rtol > 0 ? crit->rtol : 0, crit->atol > 0 ? crit->atol : 0,
                        crit->rtol >= 0 || crit->atol >= 0, ti->emin, ti->precision, exact_p99, {{0}}, d};
    kv_tile_tables_init(&o->x.tab);
    memset(m, 0, sizeof *m);
    m->elements = n;
    if (d) kv_dist_init(d, ndim, shape);
    o->th = calloc((size_t)nt, sizeof *o->th);
    o->sums = calloc(nchunks ? nchunks : 1, sizeof *o->sums);
    o->hist = exact_p99 || integer ? NULL : calloc(KV_Q_BINS, sizeof *o->hist);
    o->flo = KV_Q_BINS, o->fhi = 0;
    return !o->th || !o->sums || (!exact_p99 && !integer && !o->hist);
}

/* Row o's threads merged: the distribution, the sums in chunk order, the verdict. */
static void row_finish(struct jone *o, enum kv_dtype t, const void *cand, const struct kv_oracle_src *src, size_t n,
                       const struct kv_criteria *crit, struct kv_metrics *m, struct kv_error_dist *d, int nt)
{
    const int integer = kv_dtype_is_integer(t), exact_p99 = n <= KV_JUDGE_EXACT_P99;
    struct jthr all = {.worst_ratio = -1, .worst = (size_t)-1, .first_mismatch = (size_t)-1, .qlo = o->flo,
                       .qhi = o->fhi};
    size_t fails_bound = 0, fails_tol = 0;
    for (int q = 0; q < nt; q++) kv_jthr_merge(m, &all, &o->th[q], o->hist, d, &fails_bound, &fails_tol);
    if (d && !integer)
        kv_dist_ulp_hist(d, o->hist, all.qlo, all.qhi, exact_p99 ? o->th[0].ulps : NULL, m->compared, all.uzero);
    finish(t, cand, src, n, crit, integer, &all, o->sums, (n + CHUNK - 1) / CHUNK, exact_p99 ? o->th[0].ulps : NULL,
           o->hist, fails_bound, fails_tol, m);
}

/* K rows (1, or 2 of one output: kv_judge_pair) in one pass over the
 * chunks; where the oracle is made block by block, each block is made once
 * and judged for every row (the second row reads its slack2). */
static enum kv_status judge_rows(int K, enum kv_dtype t, const void *const *cand, const struct kv_oracle_src *src,
                                 size_t n, const size_t *idx, int ndim, const int64_t *shape,
                                 const struct kv_bound *bd, const struct kv_allow *const *allow,
                                 const struct kv_criteria *crit, struct kv_metrics *m, struct kv_error_dist **d)
{
    const int threads = omp_get_max_threads();
    if (!src->y && n > 0 && threads > 1 && n <= CHUNK * (size_t)(threads - 1))
        return judge_filled(K, t, cand, src, n, idx, ndim, shape, bd, allow, crit, m, d, threads);
    const int integer = kv_dtype_is_integer(t), nt = n <= KV_JUDGE_EXACT_P99 ? 1 : threads, blocks = !src->y;
    const size_t nchunks = (n + CHUNK - 1) / CHUNK;
    int oom = 0;
    struct jone J[2];
    memset(J, 0, sizeof J);
    for (int j = 0; j < K; j++)
        oom |= row_init(&J[j], t, cand[j], src, n, idx, ndim, shape, &bd[j], allow[j], crit, &m[j], d[j], nt);
    chunk_fn *fn = t == KV_F32 ? chunk_f32 : t == KV_F64 ? chunk_f64 : t == KV_BF16 ? chunk_bf16 : chunk_other;
    enum kv_status fill_st = KV_OK;
    const int sl_on = blocks && (src->allow & KV_BLOCK_SLACK), bd_on = blocks && (src->allow & KV_BLOCK_BOUND);
    /* the first row's threads hold the block buffers (and the second row's slack) */
    for (int j = 0; !oom && nt == 1 && j < K; j++)
        if (kv_jthr_init(&J[j].x, &J[j].th[0], n, blocks && !j, sl_on, bd_on, K > 1 && !j)) oom = 1;
    if (!oom) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
        for (size_t k = 0; k < nchunks; k++) {
            const int tid = omp_get_thread_num();
            struct jthr *me = &J[0].th[tid];
            for (int j = 0; j < K; j++) {
                struct jthr *tj = &J[j].th[tid];
                if (!tj->used && kv_jthr_init(&J[j].x, tj, n, blocks && !j, sl_on, bd_on, K > 1 && !j)) {
#pragma omp atomic write
                    oom = 1;
                }
            }
            int failed;
#pragma omp atomic read
            failed = oom;
            if (failed) continue;
            const size_t lo = k * CHUNK, hi = lo + CHUNK < n ? lo + CHUNK : n;
            const struct kv_oracle_block b = {me->yb, me->Sb, me->slb, me->lamb, me->fixb, me->ovfb, me->slb2};
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
                for (int j = 0; j < K; j++) {
                    struct kv_oracle_block bj = b;
                    if (j) bj.slack = b.slack2;
                    const struct jrow r = row_at(&J[j].x, a, blocks ? &bj : NULL);
                    if (integer) chunk_codes(&J[j].x, a, e, &r, &J[j].th[tid]);
                    else fn(&J[j].x, a, e, &r, &J[j].th[tid], &J[j].sums[k]);
                }
            }
            for (int j = 0; j < K; j++) {
                struct jthr *tj = &J[j].th[tid];
                if (tj->hist && (tj->filled += hi - lo) > Q_FLUSH) kv_jthr_flush_hist(tj, J[j].hist, &J[j].flo, &J[j].fhi);
            }
        }
    }
    for (int j = 0; j < K && !oom && !fill_st; j++) row_finish(&J[j], t, cand[j], src, n, crit, &m[j], d[j], nt);
    for (int j = 0; j < K; j++) kv_jthr_free(J[j].th, nt), free(J[j].sums), free(J[j].hist);
    if (oom || fill_st) return fill_st ? fill_st : kv_error(KV_EDEVICE, "out of host memory comparing %zu elements", n);
    return KV_OK;
}

enum kv_status kv_judge_src(enum kv_dtype t, const void *cand, const struct kv_oracle_src *src, size_t n,
                            const size_t *idx, int ndim, const int64_t *shape, const struct kv_bound *b,
                            const struct kv_allow *allow, const struct kv_criteria *crit, struct kv_metrics *m,
                            struct kv_error_dist *d)
{
    return judge_rows(1, t, &cand, src, n, idx, ndim, shape, b, &allow, crit, m, &d);
}

enum kv_status kv_judge_pair(enum kv_dtype t, const void *const cand[2], const struct kv_oracle_src *src, size_t n,
                             int ndim, const int64_t *shape, const struct kv_bound b[2], const struct kv_criteria *crit,
                             struct kv_metrics m[2], struct kv_error_dist *d[2])
{
    const struct kv_allow *none[2] = {NULL, NULL};
    return judge_rows(2, t, cand, src, n, NULL, ndim, shape, b, none, crit, m, d);
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

/* gdn-wy-bwd's oracle (kernels/gdn_wy_bwd.c is the kernel): each key head's
 * chunk of 64 rows, its group of value heads in FLA's order with the
 * device's legal error carried along (kernels/gdn_grad.h), into the
 * outputs' oracle arrays, and dk as stage dk sums the group's dk_head. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/clones.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "kernels/gdn_grad.h"
#include "kernels/gdn_prod.h"
#include "kernels/gdn_wy_bwd.h"

/* One chunk of one value head as float64 rows, the spec's outputs, and
 * (exact) the exact gradient's; and the chunk's dk: its group's dk_head
 * summed as stage dk sums them (sum_y, sum_S, sum_chain, and sum_lsb, the
 * smallest ulp of a nonzero term; sum_ovf). */
struct chunk_work {
    struct kv_gdn_chunk x;
    double beta[BT], g[BT], *A, *k, *v, *dw, *du, *scratch;
    double *dk, *dk_S, *dk_sl, *dv, *dv_S, *ex_dk, *ex_dv, *sum_y, *sum_S, *sum_chain, *sum_lsb;
    double *sl_row; /* a row of dk_head's slacks (K) */
    double db[BT], db_S[BT], db_sl[BT], dg[BT], dg_S[BT], dg_sl[BT], ex_db[BT], ex_dg[BT];
    unsigned char sum_ovf;
    struct kv_gdn_spec o;
};

static struct chunk_work *work_new(const struct dims *d, int a_bf16, double u_acc)
{
    struct chunk_work *w = calloc(1, sizeof *w);
    const size_t D = (size_t)(d->K > d->V ? d->K : d->V), nK = BT * (size_t)d->K, nV = BT * (size_t)d->V;
    const size_t sc = kv_gdn_spec_scratch((int)d->K, (int)d->V), ex = 8 * BT * BT + 6 * BT * D; /* spec, exact */
    double *p = w ? malloc(sizeof(double) * (BT * BT + 2 * nK + 2 * nV + (sc > ex ? sc : ex) + 8 * nK + 3 * nV + (size_t)d->K))
                  : NULL;
    if (!p) return free(w), NULL;
    w->A = p, p += BT * BT, w->k = p, p += nK, w->dw = p, p += nK, w->v = p, p += nV, w->du = p, p += nV;
    w->scratch = p, p += sc > ex ? sc : ex;
    w->dk = p, p += nK, w->dk_S = p, p += nK, w->dk_sl = p, p += nK, w->ex_dk = p, p += nK;
    w->sum_y = p, p += nK, w->sum_S = p, p += nK, w->sum_chain = p, p += nK, w->sum_lsb = p, p += nK;
    w->dv = p, p += nV, w->dv_S = p, p += nV, w->ex_dv = p, p += nV, w->sl_row = p;
    w->o = (struct kv_gdn_spec){1, a_bf16, u_acc, w->dk, w->dk_S, w->dk_sl, w->dv, w->dv_S,
                                w->db, w->db_S, w->db_sl, w->dg, w->dg_S, w->dg_sl, 0, 0, 0};
    return w;
}

static void work_free(struct chunk_work *w)
{
    if (w) free(w->A);
    free(w);
}

/* Gather chunk ch of head h in batch b into w (rows < n). */
static void gather(const struct kv_case *c, const struct dims *d, struct chunk_work *w, int64_t b, int64_t ch,
                   int64_t h)
{
    const int64_t t0 = ch * BT, n = d->T - t0 < BT ? d->T - t0 : BT, kh = h / d->ratio, K = d->K, V = d->V;
    const struct kv_tensor *A = &c->t[a16(c) ? T_A16 : T_A];
    for (int64_t i = 0; i < n; i++) {
        const int64_t r = (b * d->T + t0 + i) * d->H + h, kr = (b * d->T + t0 + i) * d->Hg + kh;
        w->beta[i] = ((const float *)c->t[T_BETA].data)[r], w->g[i] = ((const float *)c->t[T_G].data)[r];
        kv_load_f64_n(A->dtype, A->data, (size_t)(r * BT), w->A + i * n, (size_t)n);
        kv_load_f64_n(KV_BF16, c->t[T_K].data, (size_t)(kr * K), w->k + i * K, (size_t)K);
        kv_load_f64_n(KV_BF16, c->t[T_DW].data, (size_t)(r * K), w->dw + i * K, (size_t)K);
        kv_load_f64_n(KV_BF16, c->t[T_V].data, (size_t)(r * V), w->v + i * V, (size_t)V);
        kv_load_f64_n(KV_BF16, c->t[T_DU].data, (size_t)(r * V), w->du + i * V, (size_t)V);
    }
    w->x = (struct kv_gdn_chunk){(int)n, (int)K, (int)V, w->k, w->v, w->beta, w->g, w->dw, w->du};
}

/* The cache lines of chunk ch of head h in batch b that gather reads (k's
 * where with_k), asked for ahead: the rows of a head lie H rows apart in
 * memory, where the hardware's prefetchers do not follow them. */
static void prefetch(const struct kv_case *c, const struct dims *d, int64_t b, int64_t ch, int64_t h, int with_k)
{
    const int64_t t0 = ch * BT, n = d->T - t0 < BT ? d->T - t0 : BT, kh = h / d->ratio;
    const struct kv_tensor *A = &c->t[a16(c) ? T_A16 : T_A];
    const size_t ea = a16(c) ? 2 : 4;
    for (int64_t i = 0; i < n; i++) {
        const size_t r = (size_t)((b * d->T + t0 + i) * d->H + h), kr = (size_t)((b * d->T + t0 + i) * d->Hg + kh);
        const struct { const void *p; size_t at, bytes; } rows[] = {
            {c->t[T_BETA].data, 4 * r, 4}, {c->t[T_G].data, 4 * r, 4}, {A->data, ea * BT * r, ea * BT},
            {c->t[T_DW].data, 2 * (size_t)d->K * r, 2 * (size_t)d->K}, {c->t[T_V].data, 2 * (size_t)d->V * r, 2 * (size_t)d->V},
            {c->t[T_DU].data, 2 * (size_t)d->V * r, 2 * (size_t)d->V}, {c->t[T_K].data, 2 * (size_t)d->K * kr, with_k ? 2 * (size_t)d->K : 0}};
        for (size_t q = 0; q < sizeof rows / sizeof rows[0]; q++)
            for (size_t o = rows[q].at & ~(size_t)63; o < rows[q].at + rows[q].bytes; o += 64)
                __builtin_prefetch((const char *)rows[q].p + o, 0, 2);
    }
}

/* A row of the chunk's dk_head, from its element s0 (the spec's values yk,
 * exact's where c->exact), into its slacks sl (a flipped intermediate may
 * carry the value across a power of two, where the final rounding's step
 * doubles) and into the group's sums (scatter): in a loop that vectorizes.
 * Returns how many elements have a slack. */
static inline __attribute__((always_inline)) size_t
dk_terms(const double *restrict yk, const double *restrict dk, const double *restrict dsl, const double *restrict dS,
         double *restrict sy, double *restrict sS, double *restrict lsbs, double *restrict chain, double *restrict sl,
         int64_t K, int exact, double u_acc)
{
    size_t amb = 0;
    for (int64_t e = 0; e < K; e++) {
        const double yi = yk[e], fed = exact ? yi : kv_bf16_to_f32(kv_f32_to_bf16((float)yi));
        const double d = dsl[e], up = d + 0.5 * kv_ulp_bf16(fabs(dk[e]) + d), se = d > 0 ? up : 0;
        sl[e] = se, amb += se > 0;
        sy[e] += fed, sS[e] += fabs(fed);
        /* the smallest ulp of a nonzero term */
        const double ul = kv_ulp_bf16(fed), lf = fed != 0 ? ul : 0, lsb = lsbs[e];
        lsbs[e] = fed == 0 ? lsb : lsb == 0 ? lf : lf < lsb ? lf : lsb;
        chain[e] += (8 * sqrt(BT) + 3) * u_acc * dS[e] + 0.5 * kv_ulp_bf16(yi) + se + fabs(fed - yi);
    }
    return amb;
}
KV_CLONES static size_t dk_row(struct chunk_work *w, size_t s0, int64_t K, const double *yk, int exact, double u_acc,
                               double *sl)
{
#define DK_ARGS yk, w->dk + s0, w->dk_sl + s0, w->dk_S + s0, w->sum_y + s0, w->sum_S + s0, w->sum_lsb + s0, \
                w->sum_chain + s0, sl, K
    return exact ? dk_terms(DK_ARGS, 1, u_acc) : dk_terms(DK_ARGS, 0, u_acc);
#undef DK_ARGS
}

/* The chunk's values into the case's outputs (their sampled elements where
 * compact): the spec's, or the exact gradient's with the spec's scales (the
 * exact rows are not judged); dk_head whole into its isolated input where
 * that is kept apart (c->iso); and into the group's sums (stage dk's):
 * dk = sum over the group's value heads of dk_head as the device reads it
 * (the oracle's, rounded to bf16: stage isolation; the exact oracle's
 * unrounded), an f32 sum of ratio terms. Its chained run adds up the
 * device's own dk_head, each within its allowed error of the oracle's
 * unrounded value: that error and the rounding's go to sum_chain. */
static size_t scatter(struct kv_case *c, const struct dims *d, struct chunk_work *w, int64_t b, int64_t ch,
                      int64_t h, double u_acc)
{
    const int64_t t0 = ch * BT, n = w->x.n, K = d->K, V = d->V;
    const int tk = out_of(c, T_DKH), tv = out_of(c, T_DV), tb = out_of(c, T_DB), tg = out_of(c, T_DG);
    const unsigned char ovf = (unsigned char)w->o.overflow; /* the chunk's f32 sums may overflow */
    struct kv_tensor *iso = c->iso[tk].data ? &c->iso[tk] : NULL;
    size_t amb = 0, q, r0 = (size_t)((b * d->T + t0) * d->H + h);
    struct kv_oracle_walk wb = kv_oracle_walk(c, tb, r0), wg = kv_oracle_walk(c, tg, r0);
    w->sum_ovf |= ovf;
    for (int64_t i = 0; i < n; i++) {
        const size_t r = (size_t)((b * d->T + t0 + i) * d->H + h);
        if (kv_oracle_next(&wb, r, &q))
            c->ovf[tb][q] = ovf, c->y[tb][q] = c->exact ? w->ex_db[i] : w->db[i], c->S[tb][q] = w->db_S[i],
            c->slack[tb][q] = w->db_sl[i];
        if (kv_oracle_next(&wg, r, &q))
            c->ovf[tg][q] = ovf, c->y[tg][q] = c->exact ? w->ex_dg[i] : w->dg[i], c->S[tg][q] = w->dg_S[i],
            c->slack[tg][q] = w->dg_sl[i];
        const double *yk = (c->exact ? w->ex_dk : w->dk) + i * K, *yv = (c->exact ? w->ex_dv : w->dv) + i * V;
        double *sl = w->sl_row;
        if (iso) kv_store_f64_n(iso->dtype, iso->data, r * (size_t)K, yk, (size_t)K);
        amb += dk_row(w, (size_t)(i * K), K, yk, c->exact, u_acc, sl);
        kv_oracle_put_row(c, tk, r * (size_t)K, (size_t)K, yk, w->dk_S + i * K, sl, ovf);
        if (!c->blocked[tv]) kv_oracle_put_row(c, tv, r * (size_t)V, (size_t)V, yv, w->dv_S + i * V, NULL, ovf);
        else if (ovf) memset(c->ovf[tv] + r * (size_t)V, ovf, (size_t)V); /* dv made in blocks: its flags whole */
    }
    return amb;
}

/* dv's rows i0..i1-1 of chunk ch of head h in batch b (i1 <= the chunk's
 * rows), as pass 1 makes them (kernels/gdn_grad.c): s = A^T du, the same
 * product over the same terms in the same order from row i0 on (the tiles
 * skip only leading zero terms, +-0 added to +0), then dv = s beta and
 * S(dv) = S(s) |beta|. work: 64 (64 + V) + 2 (i1 - i0) V doubles. */
static void dv_rows(const struct kv_case *c, const struct dims *d, int64_t b, int64_t ch, int64_t h, int64_t i0,
                    int64_t i1, double *work, double *y, double *S)
{
    const int64_t t0 = ch * BT, n = d->T - t0 < BT ? d->T - t0 : BT, V = d->V;
    const struct kv_tensor *A = &c->t[a16(c) ? T_A16 : T_A];
    double *Ad = work, *du = Ad + BT * BT, *s = du + BT * V, *Ss = s + (i1 - i0) * V;
    for (int64_t i = 0; i < n; i++) {
        const size_t r = (size_t)((b * d->T + t0 + i) * d->H + h);
        kv_load_f64_n(A->dtype, A->data, r * BT, Ad + i * n, (size_t)n);
        kv_load_f64_n(KV_BF16, c->t[T_DU].data, r * (size_t)V, du + i * V, (size_t)V);
    }
    const int lower = kv_gdn_a_lower(Ad, (int)n); /* the spec's hint, shifted to row i0 */
    kv_gdn_prod(&(struct kv_gdn_prod){.L = Ad + i0, .l_row = 1, .l_col = (int)n, .R = du, .ldr = (int)V,
                                      .rows = (int)(i1 - i0), .cols = (int)V, .depth = (int)n,
                                      .zero_below = lower ? (int)i0 + 1 : 0},
                s, Ss, NULL, (int)V, 0);
    for (int64_t i = i0; i < i1; i++) {
        const double beta = ((const float *)c->t[T_BETA].data)[(b * d->T + t0 + i) * d->H + h];
        for (int64_t v = 0; v < V; v++)
            y[(i - i0) * V + v] = s[(i - i0) * V + v] * beta, S[(i - i0) * V + v] = Ss[(i - i0) * V + v] * fabs(beta);
    }
}

/* The doubles dv_range's work holds: dv_rows' work, then a chunk's rows' y and S. */
static size_t dv_work(const struct dims *d) { return BT * BT + 5 * BT * (size_t)d->V; }

/* dv's oracle for the flat elements [lo, hi) into y, S (from element lo):
 * the rows of each chunk and head that the range reaches, as pass 1 makes
 * them. work: dv_work(d) doubles. */
static void dv_range(const struct kv_case *c, const struct dims *d, size_t lo, size_t hi, double *yo, double *So,
                     double *work)
{
    const size_t V = (size_t)d->V, HV = (size_t)d->H * V;
    double *y = work + BT * BT + 3 * BT * V, *S = y + BT * V;
    /* the (batch, step) rows of the range, a chunk (of one sequence) at a time */
    for (size_t bt = lo / HV; bt * HV < hi;) {
        const int64_t b = (int64_t)bt / d->T, tt = (int64_t)bt % d->T, ch = tt / BT;
        const int64_t end = (int64_t)((hi - 1) / HV) - b * d->T + 1, t1 = end < (ch + 1) * BT ? end : (ch + 1) * BT;
        const int64_t i0 = tt - ch * BT, i1 = t1 < d->T ? t1 - ch * BT : d->T - ch * BT;
        for (int64_t h = 0; h < d->H; h++) {
            dv_rows(c, d, b, ch, h, i0, i1, work, y, S);
            for (int64_t i = i0; i < i1; i++) { /* the row's elements inside [lo, hi) */
                const size_t e0 = (size_t)((b * d->T + ch * BT + i) * d->H + h) * V;
                const size_t a = e0 > lo ? e0 : lo, z = e0 + V < hi ? e0 + V : hi;
                for (size_t e = a; e < z; e++)
                    yo[e - lo] = y[(size_t)(i - i0) * V + (e - e0)], So[e - lo] = S[(size_t)(i - i0) * V + (e - e0)];
            }
        }
        bt = (size_t)(b * d->T + ch * BT + i1);
    }
}

/* The judge asks for a few thousand elements at a time, fewer than a row
 * of every head; each of the judge's threads keeps a piece of a chunk's
 * rows (slot tid): the chunk's rows from a multiple of `keep` (a power of
 * two, the most of a chunk's 64 rows whose elements fit DV_KEEP), so that a
 * chunk's A and du are gathered and multiplied once for each piece, and a
 * piece never reaches into the next chunk. */
#define DV_KEEP ((size_t)1 << 16)
struct dv_slot {
    size_t bt0, bt1;      /* the (batch, step) rows held: [bt0, bt1) */
    double *y, *S, *work; /* keep H V each; dv_range's work */
};
struct dv_state {
    int n;
    struct dv_slot slot[];
};

static void dv_state_free(void *state)
{
    struct dv_state *st = state;
    for (int i = 0; st && i < st->n; i++) free(st->slot[i].y);
    free(st);
}

/* The slots, one per thread the judge may run (kept in c->state). */
static enum kv_status dv_state_new(struct kv_case *c)
{
    const int n = omp_get_num_procs() > omp_get_max_threads() ? omp_get_num_procs() : omp_get_max_threads();
    struct dv_state *st = calloc(1, sizeof *st + (size_t)n * sizeof st->slot[0]);
    if (!st) return kv_error(KV_EDEVICE, "out of host memory for dv's oracle");
    st->n = n;
    if (c->state && c->state_free) c->state_free(c->state);
    c->state = st, c->state_free = dv_state_free;
    return KV_OK;
}

/* The rows of a slot's piece: the most of a chunk's that fit DV_KEEP
 * elements, a power of two (0: not one row fits). */
static size_t dv_keep(size_t HV)
{
    size_t keep = BT;
    while (keep && keep * HV > DV_KEEP) keep /= 2;
    return keep;
}

/* dv's oracle for the flat elements [lo, hi) (oracle_block), so that its
 * float64 oracle (16 bytes an element) is never held whole: from the
 * thread's slot, its piece made where the rows are not there (a range that
 * crosses pieces, from each in turn), or, for a thread without a slot or
 * rows longer than DV_KEEP, made straight into the block. */
enum kv_status kv_gdn_wy_dv_block(const struct kv_case *c, int t, size_t lo, size_t hi, int chained,
                                  const struct kv_oracle_block *blk)
{
    (void)chained; /* dv's stage is the first: its chained run is the isolated one */
    if (t != out_of(c, T_DV)) return kv_error(KV_EDEVICE, "gdn-wy-bwd: no block oracle for %s", c->k->tensors[t].name);
    const struct dims d = dims_of(c);
    const size_t HV = (size_t)d.H * (size_t)d.V, T = (size_t)d.T, keep = dv_keep(HV);
    struct dv_state *st = c->state;
    const int tid = omp_get_thread_num();
    if (!st || tid >= st->n || !keep) {
        double *work = malloc(sizeof(double) * dv_work(&d));
        if (!work) return kv_error(KV_EDEVICE, "out of host memory for dv's oracle");
        dv_range(c, &d, lo, hi, blk->y, blk->S, work);
        free(work);
        return KV_OK;
    }
    struct dv_slot *sl = &st->slot[tid];
    if (!sl->y) { /* made once (each free would sit in AddressSanitizer's quarantine) */
        sl->y = malloc(sizeof(double) * (2 * keep * HV + dv_work(&d)));
        if (!sl->y) return kv_error(KV_EDEVICE, "out of host memory for dv's oracle");
        sl->S = sl->y + keep * HV, sl->work = sl->S + keep * HV, sl->bt0 = sl->bt1 = 0;
    }
    for (size_t a = lo, e; a < hi; a = e) {
        const size_t bt = a / HV;
        if (!(sl->bt0 <= bt && bt < sl->bt1)) { /* the piece of bt's chunk that holds bt */
            const size_t tt = bt % T, c0 = bt - tt % BT, end = bt - tt + T; /* its chunk's first row; the sequence's end */
            const size_t p0 = c0 + (tt % BT) / keep * keep, p1 = p0 + keep < end ? p0 + keep : end;
            dv_range(c, &d, p0 * HV, p1 * HV, sl->y, sl->S, sl->work);
            sl->bt0 = p0, sl->bt1 = p1;
        }
        e = sl->bt1 * HV < hi ? sl->bt1 * HV : hi;
        memcpy(blk->y + (a - lo), sl->y + (a - sl->bt0 * HV), sizeof(double) * (e - a));
        memcpy(blk->S + (a - lo), sl->S + (a - sl->bt0 * HV), sizeof(double) * (e - a));
    }
    return KV_OK;
}

/* dk's sum y of bf16 terms (sum_S of their magnitudes, lsb the smallest
 * ulp of a nonzero one) where stage dk's f32 sum is exact in any order: every
 * partial sum is a multiple of lsb below 2^24 lsb, and none is subnormal (lsb
 * >= 2^-126, so a device that flushes them changes nothing). The device's bf16
 * is then exactly y rounded to nearest even, and at a bf16 midpoint the
 * bound's half ulp would pass either neighbour: there y becomes the even one
 * (and the chained run, which sums the device's own dk_head, keeps its reach
 * in *chain). Elsewhere y stays. */
static double tie_to_even(double y, double S, double lsb, double *chain)
{
    if (!(lsb >= 0x1p-126) || !(S < 0x1p24 * lsb)) return y;
    const double r = kv_bf16_even_tie(y); /* y is an f32 value: exact */
    *chain += fabs(r - y);
    return r;
}

/* The group's sums (scatter) into dk's rows of the chunk. */
static void scatter_dk(struct kv_case *c, const struct dims *d, const struct chunk_work *w, int64_t b, int64_t ch,
                       int64_t kh)
{
    const int64_t t0 = ch * BT, n = w->x.n;
    const size_t K = (size_t)d->K;
    const int to = out_of(c, T_DK);
    for (int64_t i = 0; i < n; i++) {
        const size_t r = (size_t)((b * d->T + t0 + i) * d->Hg + kh);
        for (size_t q = kv_oracle_pos(c, to, r * K), e = kv_oracle_pos(c, to, r * K + K); q < e; q++) {
            const size_t s = (size_t)i * K + kv_oracle_elem(c, to, q) - r * K;
            double chain = w->sum_chain[s];
            c->y[to][q] = c->exact || w->sum_ovf ? w->sum_y[s]
                                                 : tie_to_even(w->sum_y[s], w->sum_S[s], w->sum_lsb[s], &chain);
            c->S[to][q] = w->sum_S[s], c->slack_chain[to][q] = chain;
            c->ovf[to][q] = w->sum_ovf;
        }
    }
}

/* With every output compact (--sample), the key heads' chunks (items of the
 * oracle's loop) that hold a sampled element of some output: need[item] = 1.
 * *need stays NULL (every item) where an output is whole. */
static enum kv_status needed_items(const struct kv_case *c, const struct dims *d, unsigned char **need)
{
    *need = NULL;
    for (int t = T_DKH; t <= T_DK; t++)
        if (!c->compact[out_of(c, t)]) return KV_OK;
    *need = calloc((size_t)(d->B * d->NT * d->Hg), 1);
    if (!*need) return kv_error(KV_EDEVICE, "out of host memory for the oracle");
    for (int t = T_DKH; t <= T_DK; t++) {
        const int o = out_of(c, t);
        const size_t inner = c->t[o].count / (size_t)(d->B * d->T);
        const size_t per_head = t == T_DKH || t == T_DK ? (size_t)d->K : t == T_DV ? (size_t)d->V : 1;
        for (size_t q = 0; q < c->n_sample[o]; q++) {
            const size_t e = c->sample[o][q], bt = e / inner, h = e % inner / per_head;
            const int64_t b = (int64_t)bt / d->T, ch = (int64_t)bt % d->T / BT;
            (*need)[(b * d->NT + ch) * d->Hg + (int64_t)h / (t == T_DK ? 1 : d->ratio)] = 1;
        }
    }
    return KV_OK;
}

/* The next item of the oracle's loop that no thread has claimed and that
 * is needed (need NULL: every one), from *next; items when none is left. */
static int64_t claim(int64_t *next, int64_t items, const unsigned char *need)
{
    int64_t i;
    do {
#pragma omp atomic capture
        i = (*next)++;
    } while (i < items && need && !need[i]);
    return i < items ? i : items;
}

static enum kv_status alloc_allow(struct kv_case *c, double **p, int t)
{
    free(*p); /* --oracle both calls the oracle twice */
    *p = kv_calloc_big(kv_oracle_len(c, t), sizeof(double));
    return *p ? KV_OK : kv_error(KV_EDEVICE, "out of host memory for the oracle");
}

/* alloc_allow's slack arrays and the overflow flags (gdn_wy_bwd.h) */
uint64_t kv_gdn_wy_oracle_host(const struct kv_case *c, uint32_t whole, uint32_t sampled, const uint64_t *len)
{
    (void)whole, (void)sampled;
    uint64_t b = sizeof(double) * (len[out_of(c, T_DKH)] + len[out_of(c, T_DB)] + len[out_of(c, T_DG)] +
                                   len[out_of(c, T_DK)]);
    for (int t = T_DKH; t <= T_DK; t++) b += len[out_of(c, t)];
    return b;
}

/* Tolerances (metrics.md), u = 2^-24, with S and slack from the spec
 * (kv_gdn_chunk_backward_spec: slack is the legal error of the
 * intermediates, the flips of their bf16 casts included):
 *   dk_head = bf16(dkb beta + U^T kb + dk1): dots of 64 terms, one product
 *     and two adds: n = 64, k_op = 3; S = |beta| S(dkb) + S(U^T kb) + |dk1|.
 *   dv = bf16(dvb beta): n = 64, k_op = 1; S = |beta| S(dvb).
 *   dbeta: 2K + V terms in f32 (K in each pass over k, V in the V pass),
 *     n = 2K + V, k_op = 2 (each term's products).
 *   dg: K terms of pass 1 and 2 x 64 of U * M: n = K + 128, k_op = 2.
 *   dk: the f32 sum of heads/kv-heads bf16 terms: n = ratio, k_op = 0. */
enum kv_status kv_gdn_wy_oracle(struct kv_case *c)
{
    const struct dims d = dims_of(c);
    const int tk = out_of(c, T_DKH), tb = out_of(c, T_DB), tg = out_of(c, T_DG), to = out_of(c, T_DK);
    KV_TRY_RET(alloc_allow(c, &c->slack[tk], tk));
    KV_TRY_RET(alloc_allow(c, &c->slack[tb], tb));
    KV_TRY_RET(alloc_allow(c, &c->slack[tg], tg));
    KV_TRY_RET(alloc_allow(c, &c->slack_chain[to], to));
    for (int t = T_DKH; t <= T_DK; t++) {
        const int o = out_of(c, t);
        free(c->ovf[o]); /* --oracle both calls the oracle twice */
        c->ovf[o] = kv_calloc_big(kv_oracle_len(c, o), 1);
        if (!c->ovf[o]) return kv_error(KV_EDEVICE, "out of host memory for the oracle");
    }
    if (c->blocked[out_of(c, T_DV)]) KV_TRY_RET(dv_state_new(c)); /* kv_gdn_wy_dv_block's slots */
    unsigned char *need;
    KV_TRY_RET(needed_items(c, &d, &need));
    size_t ambiguous = 0;
    int failed = 0;
    /* the tensor cores' f32 accumulation truncates: u = 2^-23 there */
    const double ua = is_cm(c) ? 0x1p-23 : 0x1p-24;
    const size_t nK = (size_t)(BT * d.K);
    const int64_t items = d.B * d.NT * d.Hg;
    int64_t next = 0; /* the first item no thread has claimed */
#pragma omp parallel reduction(+ : ambiguous) reduction(| : failed)
    {
        struct chunk_work *w = work_new(&d, a16(c), ua);
        failed |= !w;
        /* a key head's chunk: its group of value heads, then their dk. Items are claimed one at a time,
         * the next before this one is made (its rows prefetched meanwhile): a thread that runs slower
         * (beside the device's opener, or faulting in the outputs' pages) takes fewer. */
        int64_t item = w ? claim(&next, items, need) : items;
        while (item < items) {
            const int64_t nx = claim(&next, items, need);
            int64_t b = item / (d.NT * d.Hg), ch = (item / d.Hg) % d.NT, kh = item % d.Hg;
            memset(w->sum_y, 0, 4 * nK * sizeof(double)); /* sum_y, sum_S, sum_chain, sum_lsb */
            w->sum_ovf = 0;
            for (int64_t h = kh * d.ratio; h < (kh + 1) * d.ratio; h++) {
                gather(c, &d, w, b, ch, h);
                /* the next head's rows, or the next item's, on their way while this one is made */
                if (h + 1 < (kh + 1) * d.ratio) prefetch(c, &d, b, ch, h + 1, 0);
                else if (nx < items) prefetch(c, &d, nx / (d.NT * d.Hg), nx / d.Hg % d.NT, nx % d.Hg * d.ratio, 1);
                /* the key head's k k^T, made for its first value head, kept for the others (the exact
                 * oracle writes over the scratch) */
                w->o.same_k = h > kh * d.ratio && !c->exact;
                kv_gdn_chunk_backward_spec(&w->x, w->A, &w->o, w->scratch);
                if (c->exact) {
                    memset(w->ex_dk, 0, sizeof(double) * (size_t)(w->x.n * d.K));
                    kv_gdn_chunk_backward(&w->x, w->ex_dk, w->ex_dv, w->ex_db, w->ex_dg, w->scratch);
                }
                ambiguous += scatter(c, &d, w, b, ch, h, ua);
            }
            scatter_dk(c, &d, w, b, ch, kh);
            item = nx;
        }
        work_free(w);
    }
    free(need);
    if (failed) return kv_error(KV_EDEVICE, "out of host memory for the oracle");
    c->ambiguous[tk] = ambiguous;
    const double u = 0x1p-24, K = (double)d.K;
    c->bound[tk] = (struct kv_bound){.n = BT, .k_op = 3, .u_acc = ua, .rho = 1};
    c->bound[out_of(c, T_DV)] = (struct kv_bound){.n = BT, .k_op = 1, .u_acc = ua, .rho = 1};
    c->bound[tb] = (struct kv_bound){.n = 2 * K + (double)d.V, .k_op = 2, .u_acc = u, .rho = 1};
    c->bound[tg] = (struct kv_bound){.n = K + 2 * BT, .k_op = 2, .u_acc = u, .rho = 1};
    c->bound[to] = (struct kv_bound){.n = (double)d.ratio, .k_op = 0, .u_acc = u, .rho = 1};
    return KV_OK;
}

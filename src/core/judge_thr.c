/* The judge's threads (judge_thr.h): each thread's results made, merged and freed. */
#include "core/judge_thr.h"

#include <stdlib.h>
#include <string.h>

void kv_jthr_free(struct jthr *th, int nt)
{
    for (int k = 0; th && k < nt; k++) {
        free(th[k].hist), free(th[k].ulps), free(th[k].d), free(th[k].dt), free(th[k].yb), free(th[k].Sb);
        free(th[k].slb), free(th[k].slb2), free(th[k].lamb), free(th[k].fixb), free(th[k].ovfb);
    }
    free(th);
}

int kv_jthr_init(const struct jin *x, struct jthr *th, size_t n, int blocks, int slack, int bound, int pair)
{
    th->used = 1;
    if (blocks) {
        th->yb = malloc(SUB * sizeof *th->yb), th->Sb = malloc(SUB * sizeof *th->Sb);
        if (!th->yb || !th->Sb) return -1;
    }
    if (blocks && slack && !(th->slb = malloc(SUB * sizeof *th->slb))) return -1;
    if (blocks && pair && !(th->slb2 = malloc(SUB * sizeof *th->slb2))) return -1;
    if (blocks && bound) {
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

void kv_jthr_flush_hist(struct jthr *th, uint64_t *total, size_t *qlo, size_t *qhi)
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

void kv_jthr_merge(struct kv_metrics *m, struct jthr *all, const struct jthr *th, uint64_t *hist,
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
    if (th->worst != (size_t)-1 && kv_jthr_better(th->worst_ratio, th->worst, all->worst_ratio, all->worst))
        all->worst_ratio = th->worst_ratio, all->worst = th->worst;
}

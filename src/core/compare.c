#include "core/compare.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kv_criteria_default(struct kv_criteria *c)
{
    c->lambda = 8.0;
    c->max_ulp = c->rtol = c->atol = c->max_nmse = -1.0;
}

static void swapd(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

double kv_quantile(double *v, size_t n, double q)
{
    if (n == 0) return 0.0;
    size_t kk = (size_t)ceil(q * (double)n);
    kk = kk == 0 ? 0 : kk - 1;
    if (kk >= n) kk = n - 1;
    /* Wirth's selection: expected linear time, fine with many equal keys. */
    ptrdiff_t k = (ptrdiff_t)kk, l = 0, r = (ptrdiff_t)n - 1;
    while (l < r) {
        double x = v[k];
        ptrdiff_t i = l, j = r;
        do {
            while (v[i] < x) i++;
            while (x < v[j]) j--;
            if (i <= j) {
                swapd(&v[i], &v[j]);
                i++;
                j--;
            }
        } while (i <= j);
        if (j < k) l = i;
        if (k < i) r = j;
    }
    return v[k];
}

static void note_worst(struct kv_metrics *m, size_t i, double c, double y)
{
    m->worst_index = i;
    m->worst_c = c;
    m->worst_y = y;
    m->has_worst = 1;
}

/* Partial results of one fixed-size chunk. Chunks are combined in index
 * order, so every metric is the same whatever the number of threads. */
struct part {
    double sum_ulp, sum_e2, sum_y2, max_ulp, max_abs, max_rel, worst_ratio;
    size_t compared, rel_skipped, fails_bound, fails_tol, worst, first_mismatch;
    size_t nan_match, inf_match, nan_mismatch, inf_mismatch, slack_used, overflow_ok;
    size_t exact, ambiguous, tie_explained, flush_explained, unexplained;
};

int kv_dtype_is_integer(enum kv_dtype t)
{
    return t == KV_U8 || t == KV_I32 || t == KV_U16;
}

#define KV_CHUNK ((size_t)1 << 16)

enum kv_nonfinite kv_nonfinite_match(enum kv_dtype t, const struct kv_bound *b, double c, double y, double S,
                                     double err, int ovf)
{
    if (isnan(c) && isnan(y)) return KV_NF_NAN;
    if (isinf(c) && c == y) return KV_NF_INF;
    const struct kv_dtype_info *ti = kv_dtype_info(t);
    /* where round to nearest into t gives Inf: the largest finite value plus half its ulp (emax = 1 - emin) */
    const double over = ldexp(1.0, 2 - ti->emin) - ldexp(1.0, 1 - ti->emin - ti->precision);
    if (!b->exact && isinf(c) && isfinite(y) && signbit(c) == signbit(y) && fabs(y) + err >= over) return KV_NF_INF;
    /* partial sums of terms whose magnitudes add up past the accumulator's
     * range may overflow, with either sign, or meet an opposite one (or an
     * infinite term, where y is infinite and a finite S sums the others): NaN */
    const double acc_over = b->u_acc >= 0x1p-11 ? 65520.0 : b->u_acc >= 0x1p-24 ? ldexp(2.0 - 0x1p-24, 127) : INFINITY;
    if (!isnan(y) && ((isfinite(S) && S >= acc_over) || ovf)) return KV_NF_OVERFLOW;
    return KV_NF_MISMATCH;
}

static void compare_chunk(enum kv_dtype t, const void *cand, const double *y, const double *S,
                          size_t lo, size_t hi, const struct kv_bound *b, const struct kv_allow *allow,
                          const struct kv_criteria *crit, double *ulps, struct part *p)
{
    const double *slack = allow ? allow->slack : NULL, *alt = allow ? allow->alt : NULL;
    const unsigned char *ovf = allow ? allow->ovf : NULL;
    const double floor_rel = ldexp(1.0, kv_dtype_info(t)->emin);
    const double c1 = crit->lambda * sqrt(b->n) * b->u_acc, c2 = b->k_op * b->u_acc;
    const int tol = crit->rtol >= 0 || crit->atol >= 0;
    const double rt = crit->rtol > 0 ? crit->rtol : 0, at = crit->atol > 0 ? crit->atol : 0;
    memset(p, 0, sizeof *p);
    p->worst_ratio = -1;
    p->first_mismatch = (size_t)-1;
    p->worst = (size_t)-1;
    for (size_t i = lo; i < hi; i++) {
        double c = kv_load_f64(t, cand, i), yi = y[i];
        if (!isfinite(c) || !isfinite(yi)) {
            const double err = (allow && allow->lam ? crit->lambda * allow->lam[i] + allow->fix[i] : (c1 + c2) * S[i]) +
                               (slack ? slack[i] : 0);
            enum kv_nonfinite m = kv_nonfinite_match(t, b, c, yi, S[i], err, ovf && ovf[i]);
            if (m == KV_NF_NAN) { p->nan_match++; continue; }
            if (m == KV_NF_INF) { p->inf_match++; continue; }
            if (m == KV_NF_OVERFLOW) { p->overflow_ok++; continue; }
            if (isnan(c) || isnan(yi)) p->nan_mismatch++;
            else p->inf_mismatch++;
            if (p->first_mismatch == (size_t)-1) p->first_mismatch = i;
            continue;
        }
        double e = fabs(c - yi);
        if (e > 0 && alt && c == alt[i]) e = 0, p->slack_used++; /* the other legal value */
        double ulp = kv_ulp(t, yi);
        double base = allow && allow->lam ? kv_allowed(b, allow, crit->lambda, i, S[i], ulp)
                                          : c1 * S[i] + c2 * S[i] + 0.5 * ulp * b->rho;
        double ratio = e / base;
        if (slack && ratio > 1.0) {
            ratio = e / (base + slack[i]);
            if (ratio <= 1.0) p->slack_used++;
        }
        double u = e / ulp;
        ulps[lo + p->compared++] = u;
        p->sum_ulp += u;
        p->sum_e2 += e * e;
        p->sum_y2 += yi * yi;
        if (u > p->max_ulp) p->max_ulp = u;
        if (e > p->max_abs) p->max_abs = e;
        if (fabs(yi) >= floor_rel) {
            double rel = e / fabs(yi);
            if (rel > p->max_rel) p->max_rel = rel;
        } else {
            p->rel_skipped++;
        }
        if (ratio > 1.0) p->fails_bound++;
        if (tol && e > at + rt * fabs(yi)) p->fails_tol++;
        if (ratio > p->worst_ratio) p->worst_ratio = ratio, p->worst = i;
    }
}

/* Codes: exact, or the other side of a tie within reach, or the flushed
 * model's code. The worst element is the first unexplained mismatch. */
static void compare_codes(enum kv_dtype t, const void *cand, const double *y, size_t lo, size_t hi,
                          const struct kv_allow *allow, struct part *p)
{
    const int16_t *tie = allow ? allow->tie : NULL, *flush = allow ? allow->flush : NULL;
    memset(p, 0, sizeof *p);
    p->first_mismatch = (size_t)-1;
    p->worst = (size_t)-1;
    for (size_t i = lo; i < hi; i++) {
        double c = kv_load_f64(t, cand, i), d = fabs(c - y[i]);
        int has_tie = tie && tie[i] >= 0;
        p->ambiguous += (size_t)has_tie;
        if (d > p->max_abs) p->max_abs = d;
        if (d == 0) p->exact++;
        else if (has_tie && c == tie[i]) p->tie_explained++;
        else if (flush && flush[i] >= 0 && c == flush[i]) p->flush_explained++;
        else {
            p->unexplained++;
            if (p->first_mismatch == (size_t)-1) p->first_mismatch = i;
        }
    }
    if (hi > lo && p->first_mismatch == (size_t)-1) p->worst = lo;
}

static enum kv_status compare_integer(enum kv_dtype t, const void *cand, const double *y, size_t n,
                                      const struct kv_allow *allow, struct kv_metrics *m)
{
    size_t nchunks = (n + KV_CHUNK - 1) / KV_CHUNK;
    struct part *parts = calloc(nchunks ? nchunks : 1, sizeof *parts);
    if (!parts) return kv_error(KV_EDEVICE, "out of host memory comparing %zu codes", n);
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t k = 0; k < nchunks; k++) {
        size_t lo = k * KV_CHUNK, hi = lo + KV_CHUNK < n ? lo + KV_CHUNK : n;
        compare_codes(t, cand, y, lo, hi, allow, &parts[k]);
    }
    size_t first = (size_t)-1;
    for (size_t k = 0; k < nchunks; k++) {
        const struct part *p = &parts[k];
        m->exact += p->exact, m->ambiguous += p->ambiguous, m->tie_explained += p->tie_explained;
        m->flush_explained += p->flush_explained, m->unexplained += p->unexplained;
        if (p->max_abs > m->max_abs) m->max_abs = p->max_abs;
        if (first == (size_t)-1) first = p->first_mismatch;
    }
    free(parts);
    m->integer = 1;
    m->compared = n;
    /* No allowance exists for an unexplained code: its bound ratio is infinite. */
    m->max_bound_ratio = m->unexplained ? INFINITY : 0;
    size_t show = first != (size_t)-1 ? first : (n ? 0 : (size_t)-1);
    if (show != (size_t)-1) note_worst(m, show, kv_load_f64(t, cand, show), y[show]);
    m->pass = m->unexplained == 0;
    snprintf(m->criterion, sizeof m->criterion, "codes exact (ties and flushed subnormals explained)");
    return KV_OK;
}

enum kv_status kv_compare(enum kv_dtype t, const void *cand, const double *y, const double *S,
                          size_t n, const struct kv_bound *b, const struct kv_allow *allow,
                          const struct kv_criteria *crit, struct kv_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->elements = n;
    if (kv_dtype_is_integer(t)) return compare_integer(t, cand, y, n, allow, m);
    size_t nchunks = (n + KV_CHUNK - 1) / KV_CHUNK;
    double *ulps = malloc((n ? n : 1) * sizeof *ulps);
    struct part *parts = calloc(nchunks ? nchunks : 1, sizeof *parts);
    if (!ulps || !parts) {
        free(ulps);
        free(parts);
        return kv_error(KV_EDEVICE, "out of host memory comparing %zu elements", n);
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t k = 0; k < nchunks; k++) {
        size_t lo = k * KV_CHUNK, hi = lo + KV_CHUNK < n ? lo + KV_CHUNK : n;
        compare_chunk(t, cand, y, S, lo, hi, b, allow, crit, ulps, &parts[k]);
    }
    double sum_ulp = 0, sum_e2 = 0, sum_y2 = 0, worst_ratio = -1;
    size_t fails_bound = 0, fails_tol = 0, first_mismatch = (size_t)-1, worst = (size_t)-1;
    for (size_t k = 0; k < nchunks; k++) {
        const struct part *p = &parts[k];
        /* Compact this chunk's ULP errors after the previous chunks'. */
        memmove(ulps + m->compared, ulps + k * KV_CHUNK, p->compared * sizeof *ulps);
        m->compared += p->compared;
        sum_ulp += p->sum_ulp, sum_e2 += p->sum_e2, sum_y2 += p->sum_y2;
        if (p->max_ulp > m->max_ulp) m->max_ulp = p->max_ulp;
        if (p->max_abs > m->max_abs) m->max_abs = p->max_abs;
        if (p->max_rel > m->max_rel) m->max_rel = p->max_rel;
        m->rel_skipped += p->rel_skipped;
        fails_bound += p->fails_bound, fails_tol += p->fails_tol;
        m->nan_match += p->nan_match, m->inf_match += p->inf_match;
        m->nan_mismatch += p->nan_mismatch, m->inf_mismatch += p->inf_mismatch;
        m->slack_used += p->slack_used, m->overflow_ok += p->overflow_ok;
        if (first_mismatch == (size_t)-1) first_mismatch = p->first_mismatch;
        if (p->worst_ratio > worst_ratio) worst_ratio = p->worst_ratio, worst = p->worst;
    }
    free(parts);
    size_t show = first_mismatch != (size_t)-1 ? first_mismatch : worst;
    if (show != (size_t)-1) note_worst(m, show, kv_load_f64(t, cand, show), y[show]);
    m->max_bound_ratio = worst_ratio < 0 ? 0 : worst_ratio;
    m->mean_ulp = m->compared ? sum_ulp / (double)m->compared : 0;
    m->p99_ulp = kv_quantile(ulps, m->compared, 0.99);
    m->nmse = sum_y2 > 0 ? sum_e2 / sum_y2 : (sum_e2 > 0 ? INFINITY : 0);
    if (m->compared) {
        double k = (double)m->compared;
        m->rmse_ratio = sqrt(sum_e2 / k) / (sqrt(sum_y2 / k) + 1e-30);
    }
    free(ulps);

    int mismatches = m->nan_mismatch + m->inf_mismatch > 0;
    int overridden = crit->max_ulp >= 0 || crit->rtol >= 0 || crit->atol >= 0 || crit->max_nmse >= 0;
    if (!overridden) {
        m->pass = !mismatches && fails_bound == 0;
        snprintf(m->criterion, sizeof m->criterion, "bound_ratio<=1 (lambda=%g)", crit->lambda);
    } else {
        int ok = !mismatches;
        size_t o = 0;
        m->criterion[0] = '\0';
        if (crit->max_ulp >= 0) {
            ok = ok && m->max_ulp <= crit->max_ulp;
            o += (size_t)snprintf(m->criterion + o, sizeof m->criterion - o, "max_ulp<=%g ", crit->max_ulp);
        }
        if (crit->rtol >= 0 || crit->atol >= 0) {
            ok = ok && fails_tol == 0;
            o += (size_t)snprintf(m->criterion + o, sizeof m->criterion - o, "|c-y|<=atol+rtol*|y| ");
        }
        if (crit->max_nmse >= 0 && o < sizeof m->criterion) {
            ok = ok && m->nmse <= crit->max_nmse;
            snprintf(m->criterion + o, sizeof m->criterion - o, "nmse<=%g", crit->max_nmse);
        }
        m->pass = ok;
    }
    return KV_OK;
}

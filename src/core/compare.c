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

int kv_dtype_is_integer(enum kv_dtype t)
{
    return t == KV_U8 || t == KV_I32 || t == KV_U16;
}

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

void kv_metrics_decide(struct kv_metrics *m, const struct kv_criteria *crit, size_t fails_bound, size_t fails_tol)
{
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
}

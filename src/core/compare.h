/* Error metrics of a candidate output against the float64 oracle (metrics.md). */
#ifndef KV_COMPARE_H
#define KV_COMPARE_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"

/* The allowed error of element i (metrics.md):
 *   lambda*sqrt(n)*u_acc*S_i + k_op*u_acc*S_i + 0.5*ulp_T(y_i)*rho
 * Each kernel derives n and k_op per output. */
struct kv_bound {
    double n;     /* terms accumulated per element */
    double k_op;  /* non-reduction rounding budget, in units of u_acc */
    double u_acc; /* unit roundoff of the accumulation (f32: 2^-24) */
    double rho;   /* 1, or 2 where either neighbour is allowed */
    int exact;    /* against the exact oracle: y is not rounded into the output's type, so an
                     Inf where y is finite past its range is a mismatch (the design's cost) */
};

/* User overrides; a negative value means "not given". When any is given the
 * default bound criterion is replaced by all the given ones. */
struct kv_criteria {
    double lambda;   /* default 8 */
    double max_ulp;
    double rtol, atol;
    double max_nmse;
};

/* Per-element additions to the criterion; NULL members: none (metrics.md,
 * "a legal implementation can flip an intended rounding"). */
struct kv_allow {
    /* Float outputs: absolute error allowed on top of the bound, for a legal
     * choice upstream (a subnormal a device may flush; a code computed by the
     * implementation itself that sits on a rounding tie). */
    const double *slack;
    /* Integer outputs (codes): the code on the other side of a rounding tie
     * that lies within the allowed error, and the code a device that flushes
     * subnormals computes (kv_flush_code: with, where its own quotient is
     * near a tie, that tie's other side); -1 where there is none. */
    const int16_t *tie, *flush;
    /* Float outputs: a second legal value, met exactly (the scale of a
     * device that flushes subnormals); NaN where there is none. */
    const double *alt;
    /* Float outputs: nonzero where an f32 intermediate may overflow on the
     * device (its terms' magnitudes pass f32's range): any Inf or NaN is
     * legal there unless the oracle is NaN. */
    const unsigned char *ovf;
    /* Float outputs: the bound derived per element (spec kernels, running
     * error analysis): lambda*lam[i] + fix[i] + 0.5*ulp_T(y)*rho replaces
     * the per-output formula of struct kv_bound; both NULL or both set. */
    const double *lam, *fix;
};

/* A flush entry: a code below 2^9, and in flags more legal codes: up to
 * three codes above it (KV_FLUSH_SPAN, a count: the flushed model's quotient
 * near a tie of its own, two codes from the oracle's, and the codes of a
 * device whose min and max flush while its arithmetic keeps subnormals; a
 * span of 1 is KV_FLUSH_PAIR), 0 (KV_FLUSH_ZERO: a scale that a legal
 * division may put below 2^-126, which becomes 1), or every code from 0 to
 * the entry's (KV_FLUSH_RANGE: the other way round, a scale of 1 that may be
 * a normal one). KV_FLUSH_ONE offers no other code: the entry's code is
 * also taken at a scale of 1 (a clipped element, the same code under any
 * scale, where a scale may be 1 or normal), which the kernel's forward
 * reads. */
enum { KV_FLUSH_CODE = 0x1ff, KV_FLUSH_PAIR = 0x200, KV_FLUSH_SPAN = 0x600, KV_FLUSH_ONE = 0x800,
       KV_FLUSH_ZERO = 0x2000, KV_FLUSH_RANGE = 0x4000 };
/* Entry f's code and the highest its span adds (the same code where it has
 * none); f >= 0. Arithmetic, so that loops over entries vectorize. */
static inline int kv_flush_code(int f) { return f & KV_FLUSH_CODE; }
static inline int kv_flush_other(int f) { return (f & KV_FLUSH_CODE) + ((f & KV_FLUSH_SPAN) >> 9); }
/* Whether code c is one entry f offers (none where f < 0). */
static inline int kv_flush_offers(int f, double c)
{
    if (f < 0) return 0;
    if ((c >= kv_flush_code(f) && c <= kv_flush_other(f)) || ((f & KV_FLUSH_ZERO) && c == 0)) return 1;
    return (f & KV_FLUSH_RANGE) && c >= 0 && c <= kv_flush_code(f);
}

/* Element i's allowed error before any slack: the per-element derivation
 * where allow has one, else the per-output formula. */
static inline double kv_allowed(const struct kv_bound *b, const struct kv_allow *a, double lambda, size_t i,
                                double S, double ulp)
{
    if (a && a->lam) return lambda * a->lam[i] + a->fix[i] + 0.5 * ulp * b->rho;
    return (lambda * sqrt(b->n) + b->k_op) * b->u_acc * S + 0.5 * ulp * b->rho;
}

/* How a pair with a non-finite member compares: a NaN for a NaN, an Inf for
 * an Inf of its sign or, against the spec oracle, for a finite y past t's
 * range within err (round to nearest into t overflows there), an Inf or NaN where a finite S (the terms'
 * magnitudes; for an infinite y, those of its finite terms) passes the
 * accumulator's range (b->u_acc: f16 or f32), else a mismatch. */
enum kv_nonfinite { KV_NF_MISMATCH, KV_NF_NAN, KV_NF_INF, KV_NF_OVERFLOW };
enum kv_nonfinite kv_nonfinite_match(enum kv_dtype t, const struct kv_bound *b, double c, double y, double S,
                                     double err, int ovf);

struct kv_metrics {
    size_t elements;
    size_t compared;      /* finite pairs entering the finite metrics */
    double max_ulp, mean_ulp, p99_ulp;
    double max_abs, max_rel;
    size_t rel_skipped;   /* |y| below the relative floor */
    double nmse, rmse_ratio, max_bound_ratio;
    size_t nan_match, inf_match, nan_mismatch, inf_mismatch;
    size_t worst_index;   /* largest bound ratio; a mismatch counts as infinite */
    double worst_c, worst_y;
    int has_worst;
    size_t slack_used;    /* within the bound only thanks to kv_allow.slack */
    size_t overflow_ok;   /* Inf or NaN where S passes the accumulator's range: a legal overflow */
    /* Integer outputs (compared exactly; the float metrics above stay 0 but
     * max_abs, which is the largest |code difference|). */
    int integer;
    size_t exact;           /* codes equal to the oracle's */
    size_t ambiguous;       /* elements whose exact quotient is within reach of a tie */
    size_t tie_explained;   /* mismatches that are the other side of such a tie */
    size_t flush_explained; /* mismatches that are the flushed-subnormal code */
    size_t unexplained;     /* every other mismatch: fails */
    int pass;
    char criterion[96];   /* which rule decided, e.g. "bound_ratio<=1" */
};

void kv_criteria_default(struct kv_criteria *c);

/* The verdict of metrics m under crit, from the elements past the bound
 * (fails_bound) and past atol + rtol*|y| (fails_tol): m->pass and m->criterion. */
void kv_metrics_decide(struct kv_metrics *m, const struct kv_criteria *crit, size_t fails_bound, size_t fails_tol);

/* Whether dtype t holds integer codes rather than real numbers. */
int kv_dtype_is_integer(enum kv_dtype t);

/* The q-quantile (0..1, nearest rank) of v[0..n), reordering v. */
double kv_quantile(double *v, size_t n, double q);

#endif

/* qdq-affine's codes as a device may compute them in float32 (kernels.md,
 * qdq-affine): each group's encoding under the exact model and under one
 * that flushes every subnormal, the codes and their legal alternatives
 * lane by lane, and each element's flush entry (core/compare.h) for the
 * judge. The kernel's file holds its stages and the rest of its oracle. */
#ifndef KV_QDQ_CODES_H
#define KV_QDQ_CODES_H

#include <float.h>
#include <stddef.h>
#include <stdint.h>

#include "core/compare.h"

/* float32's unit roundoff and its smallest normal, in the allowances of both files */
#define QDQ_U 0x1p-24
#define QDQ_FMIN 0x1p-126

/* A group's encoding as a device computes it in float32: flushed (every
 * subnormal operand and result is zero) or not. */
struct kv_qdq_enc {
    int poison;
    int one;         /* the scale was not a normal number and became 1 */
    int flip;        /* a legal division (2.5 ulp) may put it on either side of 2^-126 */
    float lo, hi, s; /* s: the float32 scale the codes divide by */
    double win;      /* the group's part of the tie window (kv_qdq_codes) */
    double x;        /* the exact quotient of the float32 range by N */
};

/* Group w's encoding (gs elements, N = 2^bits - 1), flushed where ftz. */
struct kv_qdq_enc kv_qdq_encode(const float *w, int64_t gs, double N, int ftz);

/* A group's alternatives that are not the exact model's: the flushed
 * model's scale (2^-125 where both are 1 in a range) and low value, and
 * where a scale may be 1 or normal on either side of 2^-126 (enc.flip), the
 * largest step that other branch adds to the forward past |q s| (0: none),
 * and the flags of its codes (a scale of 1 makes every finite element's
 * code 0; a normal scale where the oracle's is 1, any code). A +Inf
 * element's code is N under any scale, but its value N s + lo is N x 1 + lo
 * under a scale of 1: where either model's scale is 1 and the other's
 * normal, or a division may put one on either side of 2^-126 (and no range
 * entry holds every code), its entry is N taken at both scales. */
struct kv_qdq_grp {
    double fs, flo, zc;
    int flags;
    int inf; /* a +Inf element's entry (code N at a scale of 1 too), or -1 */
};

struct kv_qdq_grp kv_qdq_group_of(const struct kv_qdq_enc *e, const struct kv_qdq_enc *f, double N);

/* The largest n that kv_qdq_codes takes at once. */
enum { KV_QDQ_LANES = 256 };

/* The codes of a group's elements under encoding e and under the flushed
 * model f, lane by lane, without a branch, so that the loop vectorizes:
 * - q: the exact quotient z = (w - lo)/s clamped to [0, N] and rounded half
 *   away from zero (+-Inf clip to N and 0; z is never NaN in a group that is
 *   not poisoned);
 * - alt: q's other legal value, or -1. The tie window is the relative error
 *   with which a device may compute z, so a code whose exact quotient lies
 *   within it of a tie k + 1/2 may be k or k+1: the subtraction (1u unless
 *   exact), the device's own scale (within 2.5 ulp of (hi - lo)/N, 6u of the
 *   float32 s the oracle divides by, unless it is (hi - lo)/1 or the
 *   replacement 1: e->win) and the division (2.5 ulp <= 5u, unless by a power
 *   of two, which every implementation does exactly: e->win). An exact tie
 *   with all three exact is not ambiguous: it must round away from zero;
 * - fq: the code of the flushed model, from the flushed operand and
 *   difference; where that is q, the flushed model's other code where its
 *   z is within its window of a tie (else q: no alternative); where it is
 *   not, that code and, where its z is near a tie, its own other code as
 *   a pair (kv_flush_code): two codes from q, where a flush moves z by
 *   about a whole code (a scale near 2^-126). Widened to hold the codes of
 *   a device whose min and max flush while its arithmetic keeps subnormals
 *   (the flushed model's range and scale, the element and its difference
 *   kept), with their own other codes, where q and alt do not.
 * A poisoned encoding's codes are 0, with no alternative. */
void kv_qdq_codes(const float *w, size_t n, double N, const struct kv_qdq_enc *e, const struct kv_qdq_enc *f,
                  int *restrict q, int *restrict alt, int *restrict fq);

/* Element w's flush entry (kv_flush_code): the flushed model's code fq as
 * q's alternative where it differs, and both models poison the group alike;
 * with the flags of the group's other scale branch (kv_qdq_group_of),
 * every code to N for a range; a +Inf element's, the group's; else -1. */
static inline int kv_qdq_flush_entry(float w, int q, int fq, const struct kv_qdq_enc *e, const struct kv_qdq_enc *f,
                                     const struct kv_qdq_grp *gp, double N)
{
    if (gp->flags & KV_FLUSH_RANGE) return (int)N | KV_FLUSH_RANGE;
    if (w > FLT_MAX && gp->inf >= 0) return gp->inf;
    const int fl = fq != q && f->poison == e->poison ? fq : -1;
    return gp->flags ? (fl >= 0 ? fl : q) | gp->flags : fl;
}

#endif

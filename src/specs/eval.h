/* The evaluator of a spec kernel's math: statements over whole arrays in
 * blocks of lanes (consecutive elements of the target), each node of the
 * expression computed for a block at once, in float64, with what running
 * error analysis carries (Higham, Accuracy and Stability of Numerical
 * Algorithms, ch. 3) beside each value:
 *   S    the condition scale (magnitudes of the terms, as metrics.md defines it)
 *   lam  the error bound's part that scales with lambda (reductions' lambda*sqrt(n)*u*sum|terms|)
 *   fix  the part that does not (each operation's rounding, k_op*u*|value|)
 *   chn  the error carried in from another stage's output on a chained rerun
 *   pk   the largest magnitude any intermediate reaches (f32 overflow)
 * propagated to first order through the derivative of every operation. */
#ifndef KV_SPEC_EVAL_H
#define KV_SPEC_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "specs/ev_ops.h"

/* Evaluate statement i of x->s into its target's arrays (allocated). On an
 * index out of range or a non-integer index: KV_EDATA naming the spec, the
 * statement, the column and the element. */
enum kv_status kv_ev_stmt(struct kv_ev *x, int i);

/* Elements [lo, hi) of statement i's target from one thread, LANES at a
 * time: each handed to out(ctx, at, n, part) with its parts (part[k][0..n)
 * for elements lo + at ..), the values kv_ev_stmt gives them. For a target
 * made block by block (oracle_block) while x holds every array it reads. */
enum kv_status kv_ev_range(const struct kv_ev *x, int i, size_t lo, size_t hi,
                           void (*out)(void *ctx, size_t at, size_t n, double *const part[KV_EV_PARTS]), void *ctx);

/* Array a (an output) as a later stage reads it: a->iso (allocated here,
 * freed by the caller). */
enum kv_status kv_ev_isolate(struct kv_ev_arr *a);

#endif

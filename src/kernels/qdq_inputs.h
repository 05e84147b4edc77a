/* qdq-affine's inputs (kernels.md, qdq-affine; its --dist in man kverify):
 * made apart from the kernel's file, which holds its stages and oracle. */
#ifndef KV_QDQ_INPUTS_H
#define KV_QDQ_INPUTS_H

#include <stdint.h>

/* --dist, in the order of its choices. */
enum kv_qdq_dist { KV_QDQ_NORMAL, KV_QDQ_UNIFORM, KV_QDQ_OUTLIER, KV_QDQ_CONSTANT, KV_QDQ_SUBNORMAL, KV_QDQ_TIES,
                   KV_QDQ_NONFINITE };

struct kv_qdq_inputs {
    uint64_t seed;
    int64_t groups, gs; /* groups of gs elements */
    int dist;           /* enum kv_qdq_dist */
    double scale, N;    /* w's multiplier; N = 2^bits - 1 */
    float *w, *dy;      /* groups * gs each, written whole */
};

/* w and dy, on every thread. */
void kv_qdq_inputs(const struct kv_qdq_inputs *x);

#endif

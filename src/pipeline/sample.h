/* --sample N: which elements of an output are verified. */
#ifndef KV_SAMPLE_H
#define KV_SAMPLE_H

#include "kernels/kernel.h"

/* The sample of output t: sorted, distinct element indices in c->sample[t]
 * (c->n_sample[t] of them), deterministic in the seed. Where the kernel's
 * work is local to chunks of a sequence (window_chunk) and t is laid out
 * [batch, seq, ...], its random elements lie in a pool of chunks that every
 * output of the case shares (kv_sample_pool), so that an oracle computes
 * only those chunks: at most 2 rows + n elements. Elsewhere: the first and
 * last rows and columns whole (a 1-D output: its first and last 16
 * elements), and n random elements. */
enum kv_status kv_make_sample(struct kv_case *c, int t, int64_t n);
/* The number of chunks in the pool of a sample of n elements out of
 * `chunks`: max(8, n / 256), at most all of them. */
int64_t kv_sample_pool(int64_t n, int64_t chunks);

#endif

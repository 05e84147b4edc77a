/* The judge's codes (integer outputs) a tile at a time: nearly every tile's
 * codes all equal the oracle's, and such a tile is counted at once (judge.c
 * judges the others element by element). */
#ifndef KV_CORE_JUDGE_CODES_H
#define KV_CORE_JUDGE_CODES_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/errdist.h"

/* How many of the codes [i, i + n) of cand equal y's (y[0] is element i's):
 * a loop that vectorizes for u8 codes. */
size_t kv_codes_equal(enum kv_dtype t, const void *cand, size_t i, size_t n, const double *y);
/* How many of v[0, n) are >= 0 (the codes with a tie's other side). */
size_t kv_codes_nonneg(const int16_t *v, size_t n);
/* The cells of a whole output's elements [lo, lo + n) marked as compared
 * (a map value below 0 made 0), a row's run of cell columns at a time. */
void kv_codes_mark(struct kv_error_dist *d, size_t lo, size_t n);

#endif

#include "core/judge_codes.h"

#include "core/clones.h"

KV_CLONES static size_t equal_u8(const uint8_t *restrict c, size_t n, const double *restrict y)
{
    size_t eq = 0;
    for (size_t j = 0; j < n; j++) eq += (size_t)((double)c[j] == y[j]);
    return eq;
}

size_t kv_codes_equal(enum kv_dtype t, const void *cand, size_t i, size_t n, const double *y)
{
    if (t == KV_U8) return equal_u8((const uint8_t *)cand + i, n, y);
    size_t eq = 0;
    for (size_t j = 0; j < n; j++) eq += (size_t)(kv_load_f64(t, cand, i + j) == y[j]);
    return eq;
}

KV_CLONES size_t kv_codes_nonneg(const int16_t *v, size_t n)
{
    size_t k = 0;
    for (size_t j = 0; j < n; j++) k += (size_t)(v[j] >= 0);
    return k;
}

void kv_codes_mark(struct kv_error_dist *d, size_t lo, size_t n)
{
    const int64_t cols = d->cols, rows = d->rows ? d->rows : 1;
    /* the cells marked last: the rows of one cell row repeat them. Every
     * part but the range's first and last spans its whole row, so a part
     * never reaches past the cell columns marked before it in its cell row */
    int last_row = -1, last_lo = 0;
    for (size_t at = lo, end = lo + n; at < end;) {
        const int64_t r = (int64_t)at / cols, c0 = (int64_t)at % cols;
        const int64_t c1 = (int64_t)(end - at) < cols - c0 ? c0 + (int64_t)(end - at) : cols; /* the row's part: [c0, c1) */
        const int rowcell = (int)(r * d->cell_rows / rows) * d->cell_cols;
        const int lo_cc = (int)(c0 * d->cell_cols / cols), hi_cc = (int)((c1 - 1) * d->cell_cols / cols);
        if (rowcell != last_row || lo_cc < last_lo) {
            for (int cc = lo_cc; cc <= hi_cc; cc++)
                if (d->map[rowcell + cc] < 0) d->map[rowcell + cc] = 0;
            last_row = rowcell, last_lo = lo_cc;
        }
        at += (size_t)(c1 - c0);
    }
}

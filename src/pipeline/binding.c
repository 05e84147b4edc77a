#include "pipeline/binding.h"

#include <stdint.h>
#include <string.h>

static size_t round4(size_t n) { return (n + 3) & ~(size_t)3; }

size_t kv_poison_bytes(size_t bytes)
{
    size_t n = round4(bytes);
    return n < KV_GUARD_BYTES ? KV_GUARD_BYTES : n > KV_POISON_MAX ? KV_POISON_MAX : n;
}

size_t kv_range_cut(size_t want, size_t words, uint64_t max_range)
{
    return want > max_range && words <= max_range ? (size_t)max_range : want;
}

size_t kv_bound_bytes(const struct kv_tensor_def *td, size_t bytes, uint64_t max_range)
{
    size_t want = round4(bytes) + (td->role == KV_OUTPUT ? KV_GUARD_BYTES : kv_poison_bytes(bytes));
    return kv_range_cut(want, round4(bytes), max_range);
}

uint64_t kv_window_row_bytes(const struct kv_case *c, int t)
{
    const struct kv_kernel *k = c->k;
    uint64_t rows = (uint64_t)c->p[k->window_batch].i * (uint64_t)c->p[k->window_seq].i;
    return (uint64_t)kv_tensor_bytes(&c->t[t]) / rows;
}

/* Whether every binding of stage s fits max_range when each holds `rows`
 * rows. */
static int fits(const struct kv_case *c, int s, uint64_t rows, uint64_t max_range)
{
    const struct kv_stage_def *sd = &c->k->stages[s];
    for (int i = 0; i < sd->n_bindings; i++) {
        int t = sd->bindings[i];
        if (kv_bound_bytes(&c->k->tensors[t], (size_t)(rows * kv_window_row_bytes(c, t)), SIZE_MAX) > max_range)
            return 0;
    }
    return 1;
}

int64_t kv_window_at(const struct kv_case *c, const struct kv_windows *w, int64_t i, int64_t *batch, int64_t *seq)
{
    const struct kv_kernel *k = c->k;
    const int64_t B = c->p[k->window_batch].i, T = c->p[k->window_seq].i;
    *batch = B, *seq = T;
    if (w->n == 1) return 0;
    if (w->batches > 0) {
        int64_t b0 = i * w->batches;
        *batch = B - b0 < w->batches ? B - b0 : w->batches;
        return b0 * T;
    }
    int64_t per = (T + w->rows - 1) / w->rows, b = i / per, t0 = (i % per) * w->rows;
    *batch = 1;
    *seq = T - t0 < w->rows ? T - t0 : w->rows;
    return b * T + t0;
}

/* Every window's binding offsets are multiples of align. */
static enum kv_status check_offsets(const struct kv_case *c, int s, const struct kv_windows *w, uint64_t align)
{
    const struct kv_stage_def *sd = &c->k->stages[s];
    for (int64_t i = 0; i < w->n; i++) {
        int64_t batch, seq, row0 = kv_window_at(c, w, i, &batch, &seq);
        for (int j = 0; j < sd->n_bindings; j++) {
            int t = sd->bindings[j];
            uint64_t off = (uint64_t)row0 * kv_window_row_bytes(c, t);
            if (align && off % align)
                return kv_error(KV_EUSAGE, "%s: stage %s would bind %s from byte %llu, not a multiple of this "
                                "device's minStorageBufferOffsetAlignment (%llu): a sequence length that is a "
                                "multiple of %d binds it", c->name, sd->name, c->k->tensors[t].name,
                                (unsigned long long)off, (unsigned long long)align, c->k->window_chunk);
        }
    }
    return KV_OK;
}

/* The most bytes a binding of stage s covers where it is bound whole (a
 * tail cut to max_range), and (*worst_t) its tensor. */
static uint64_t widest(const struct kv_case *c, int s, uint64_t max_range, int *worst_t)
{
    const struct kv_stage_def *sd = &c->k->stages[s];
    uint64_t worst = 0;
    *worst_t = sd->bindings[0];
    for (int i = 0; i < sd->n_bindings; i++) {
        int t = sd->bindings[i];
        uint64_t b = kv_bound_bytes(&c->k->tensors[t], kv_tensor_bytes(&c->t[t]), max_range);
        if (b > worst) worst = b, *worst_t = t;
    }
    return worst;
}

enum kv_status kv_addr_plan(const struct kv_case *c, int s, uint64_t max_range, const char *why)
{
    const struct kv_stage_def *sd = &c->k->stages[s];
    int worst_t;
    uint64_t worst = widest(c, s, max_range, &worst_t);
    if (why)
        return kv_error(KV_EUSAGE, "%s: tensor %s needs %llu bytes, more than this device's "
                        "maxStorageBufferRange (%llu bytes), and stage %s cannot bind it in windows, nor by "
                        "address: %s", c->name, c->k->tensors[worst_t].name, (unsigned long long)worst,
                        (unsigned long long)max_range, sd->name, why);
    return KV_OK;
}

enum kv_status kv_windows_plan(const struct kv_case *c, int s, uint64_t max_range, uint64_t align,
                               struct kv_windows *w)
{
    const struct kv_kernel *k = c->k;
    const struct kv_stage_def *sd = &k->stages[s];
    memset(w, 0, sizeof *w);
    w->n = 1;
    int worst_t;
    /* whole, its tails cut where only they pass the range; a kernel with
     * windows takes them instead, which keep every tail */
    if (widest(c, s, k->window_chunk ? SIZE_MAX : max_range, &worst_t) <= max_range) return KV_OK;
    if (!k->window_chunk) { /* bound by address, where it can be: kv_addr_plan */
        w->addr = 1;
        return KV_OK;
    }
    const int64_t B = c->p[k->window_batch].i, T = c->p[k->window_seq].i, chunk = k->window_chunk;
    /* whole sequences where one fits, else runs of chunks within each; the
     * most that fit (fits is monotone in the rows) */
    const int whole = fits(c, s, (uint64_t)T, max_range);
    int64_t lo = 0, hi = whole ? B : (T + chunk - 1) / chunk;
    const int64_t unit = whole ? T : chunk;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (fits(c, s, (uint64_t)mid * (uint64_t)unit, max_range)) lo = mid;
        else hi = mid - 1;
    }
    for (int i = 0; lo == 0 && i < sd->n_bindings; i++) {
        int t = sd->bindings[i];
        if (kv_bound_bytes(&k->tensors[t], (size_t)((uint64_t)chunk * kv_window_row_bytes(c, t)), SIZE_MAX) >
            max_range)
            return kv_error(KV_EUSAGE, "%s: one chunk of %lld rows of tensor %s, with its tail, passes this "
                            "device's maxStorageBufferRange (%llu bytes)", c->name, (long long)chunk,
                            k->tensors[t].name, (unsigned long long)max_range);
    }
    if (whole) {
        w->batches = lo;
        w->n = (B + lo - 1) / lo;
    } else {
        w->rows = lo * chunk;
        w->n = B * ((T + w->rows - 1) / w->rows);
    }
    return check_offsets(c, s, w, align);
}

/* Guard words start after the last whole word of the output. The bytes of
 * that word past the last element may be written only as zero (a packed
 * 16-bit or 8-bit output writes its last word whole, the unused part zero);
 * anything else there is a write past the end too, the nearest. */
size_t kv_guard_check(const void *base, size_t bytes, size_t padded, size_t *furthest)
{
    const unsigned char *b = base;
    uint32_t want = KV_SENTINEL;
    size_t bad = 0, whole = round4(bytes);
    *furthest = 0;
    for (size_t i = bytes; i < whole; i++)
        if (b[i] != 0 && b[i] != ((const unsigned char *)&want)[i % 4]) {
            bad = 1, *furthest = 1;
            break;
        }
    for (size_t w = 0; w < (padded - whole) / 4; w++)
        if (memcmp(b + whole + 4 * w, &want, 4) != 0) bad++, *furthest = w + 1;
    return bad;
}


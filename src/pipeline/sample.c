/* --sample N: which elements of an output are verified (pipeline/sample.h). */
#include "pipeline/sample.h"

#include <stdlib.h>

#include "core/rng.h"

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Sort idx[0..k) and drop repeats into c->sample[t]. */
static void keep(struct kv_case *c, int t, size_t *idx, size_t k)
{
    qsort(idx, k, sizeof *idx, cmp_size);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || idx[i] != idx[u - 1]) idx[u++] = idx[i];
    c->sample[t] = idx;
    c->n_sample[t] = u;
}

/* Pick s's coordinate in [0, ext), uniform. */
static size_t below(const struct kv_case *c, uint32_t stream, int64_t s, size_t ext)
{
    size_t v = (size_t)(kv_rng_uniform(c->seed ^ 0x5a3c9e17u, stream, (uint64_t)s) * (double)ext);
    return v < ext ? v : ext - 1;
}

/* Pick s's coordinate in [0, ext): uniform, a third of the picks on a
 * 16-element tile edge where ext > 16. */
static size_t pick(const struct kv_case *c, uint32_t stream, int64_t s, size_t ext)
{
    size_t v = below(c, stream, s, ext);
    if (s % 3 == 0 && ext > 16) v = (v / 16) * 16 + ((s / 3) % 2 ? 15 : 0); /* a tile edge */
    return v < ext ? v : ext - 1;
}

int64_t kv_sample_pool(int64_t n, int64_t chunks)
{
    int64_t p = n / 256 > 8 ? n / 256 : 8;
    return p < chunks ? p : chunks;
}

/* Chunk i of the pool (its batch and first row): the first chunk of the
 * first sequence, the last chunks of the last and the first sequences, the
 * first of the last, then random chunks. The same for every output. */
static void pool_chunk(const struct kv_case *c, int64_t i, int64_t B, int64_t NT, int64_t *b, int64_t *ch)
{
    switch (i) {
    case 0: *b = 0, *ch = 0; return;
    case 1: *b = B - 1, *ch = NT - 1; return;
    case 2: *b = 0, *ch = NT - 1; return;
    case 3: *b = B - 1, *ch = 0; return;
    default: break;
    }
    int64_t r = (int64_t)(kv_rng_uniform(c->seed ^ 0x2b7e1516u, 999u, (uint64_t)i) * (double)(B * NT));
    r = r < B * NT ? r : B * NT - 1;
    *b = r / NT, *ch = r % NT;
}

/* The chunked sample (kv_make_sample): the first and last rows, then each
 * pick in a chunk of the pool, a quarter of them on the chunk's last row
 * (a sequence's tail where the chunk is partial), its last dimension's
 * first or last element a third of the time, a tile edge another third. */
static enum kv_status chunked(struct kv_case *c, int t, int64_t n, int64_t B, int64_t T)
{
    const struct kv_tensor *x = &c->t[t];
    const int64_t chunk = c->k->window_chunk, NT = (T + chunk - 1) / chunk;
    const size_t inner = x->count / (size_t)(B * T), cols = x->ndim > 2 ? (size_t)x->shape[x->ndim - 1] : inner;
    const size_t mid = inner / cols, last_row = x->count - cols;
    const int64_t P = kv_sample_pool(n, B * NT);
    size_t *idx = malloc(((size_t)n + 2 * cols + 1) * sizeof *idx), k = 0;
    if (!idx) return kv_error(KV_EDEVICE, "out of host memory for the sample");
    for (size_t j = 0; j < cols; j++) idx[k++] = j, idx[k++] = last_row + j;
    for (int64_t s = 0; s < n; s++) {
        int64_t b, ch;
        pool_chunk(c, (int64_t)below(c, 2000u + (uint32_t)t, s, (size_t)P), B, NT, &b, &ch);
        const int64_t t0 = ch * chunk, nv = T - t0 < chunk ? T - t0 : chunk;
        int64_t row = s % 4 == 3 ? nv - 1 : (int64_t)pick(c, 3000u + (uint32_t)t, s, (size_t)nv);
        size_t col = pick(c, 4000u + (uint32_t)t, s, cols);
        if (s % 3 == 1) col = (s / 3) % 2 ? cols - 1 : 0;
        const size_t m = mid > 1 ? below(c, 5000u + (uint32_t)t, s, mid) : 0;
        idx[k++] = (size_t)(b * T + t0 + row) * inner + m * cols + col;
    }
    keep(c, t, idx, k);
    return KV_OK;
}

/* The sample of a 1-D output: its first and last 16 elements and n picks,
 * a third of them on 16-element tile edges. */
static enum kv_status flat(struct kv_case *c, int t, int64_t n)
{
    const size_t count = c->t[t].count, edge = count < 16 ? count : 16;
    size_t *idx = malloc(((size_t)n + 2 * edge) * sizeof *idx), k = 0;
    if (!idx) return kv_error(KV_EDEVICE, "out of host memory for the sample");
    for (size_t j = 0; j < edge; j++) idx[k++] = j, idx[k++] = count - 1 - j;
    for (int64_t s = 0; s < n; s++) idx[k++] = pick(c, 1000u + (uint32_t)(2 * t), s, count);
    keep(c, t, idx, k);
    return KV_OK;
}

/* The sample of output t: its whole last row and last column (and first
 * ones), rows and columns on 16-element tile boundaries, and n random
 * elements, a third of them on boundaries; chunked where the kernel's work
 * is local to chunks, flat for a 1-D output (above). Deterministic in the
 * seed. */
enum kv_status kv_make_sample(struct kv_case *c, int t, int64_t n)
{
    const struct kv_tensor *x = &c->t[t];
    const struct kv_kernel *kn = c->k;
    if (kn->window_chunk > 0 && x->ndim >= 2) {
        const int64_t B = c->p[kn->window_batch].i, T = c->p[kn->window_seq].i;
        if (x->shape[0] == B && x->shape[1] == T && B > 0 && T > 0) return chunked(c, t, n, B, T);
    }
    if (x->ndim < 2) return flat(c, t, n);
    size_t cols = (size_t)x->shape[x->ndim - 1], rows = x->count / cols;
    size_t cap = 2 * rows + 2 * cols + (size_t)n + 2, k = 0;
    size_t *idx = malloc(cap * sizeof *idx);
    if (!idx) return kv_error(KV_EDEVICE, "out of host memory for the sample");
    for (size_t j = 0; j < cols; j++) idx[k++] = (rows - 1) * cols + j, idx[k++] = j;
    for (size_t i = 0; i < rows; i++) idx[k++] = i * cols + cols - 1, idx[k++] = i * cols;
    for (int64_t s = 0; s < n; s++)
        idx[k++] = pick(c, 1000u + (uint32_t)(2 * t), s, rows) * cols + pick(c, 1000u + (uint32_t)(2 * t + 1), s, cols);
    keep(c, t, idx, k);
    return KV_OK;
}

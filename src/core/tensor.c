#include "core/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

/* The huge pages wholly inside [p, p + bytes); nothing there written yet
 * (a large calloc is fresh mmap'd memory), or the advice only waits. */
static void *advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (p && bytes >= 4 * HUGE_PAGE) {
        const uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        const uintptr_t hi = ((uintptr_t)p + bytes) & ~(HUGE_PAGE - 1);
        if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice: a refusal changes nothing */
    }
#endif
    return p;
}

void *kv_calloc_big(size_t n, size_t size)
{
    return advise_huge(calloc(n, size), n * size); /* calloc checks n * size */
}

void *kv_malloc_big(size_t bytes)
{
    return advise_huge(malloc(bytes), bytes);
}

void kv_touch_pages(void *p, size_t bytes)
{
    if (!p || bytes < 4 * HUGE_PAGE) return; /* small: its faults cost less than a team */
    const uintptr_t a = (uintptr_t)p, end = a + bytes, first = a & ~(HUGE_PAGE - 1);
    const size_t parts = (size_t)((end - first + HUGE_PAGE - 1) / HUGE_PAGE);
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < parts; k++) {
        const uintptr_t lo = first + k * HUGE_PAGE, hi = lo + HUGE_PAGE;
        for (uintptr_t q = lo > a ? lo : a; q < (hi < end ? hi : end); q = (q | 4095) + 1) *(volatile char *)q = 0;
    }
}

enum kv_status kv_shape_count(const char *name, enum kv_dtype t, int ndim,
                              const int64_t *shape, size_t *count)
{
    size_t n = 1, esize = kv_dtype_info(t)->size;
    if (ndim < 0 || ndim > KV_MAX_DIMS)
        return kv_error(KV_EUSAGE, "%s: %d dimensions, at most %d supported", name, ndim, KV_MAX_DIMS);
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 1)
            return kv_error(KV_EUSAGE, "%s: dimension %d is %lld, must be >= 1", name, d,
                            (long long)shape[d]);
        if ((uint64_t)shape[d] > SIZE_MAX / n || n * (size_t)shape[d] > SIZE_MAX / esize)
            return kv_error(KV_EUSAGE, "%s: size overflows", name);
        n *= (size_t)shape[d];
    }
    *count = n;
    return KV_OK;
}

enum kv_status kv_tensor_alloc(struct kv_tensor *t, const char *name,
                               enum kv_dtype dtype, int ndim, const int64_t *shape)
{
    size_t n;
    enum kv_status st = kv_shape_count(name, dtype, ndim, shape, &n);
    if (st) return st;
    void *p = kv_calloc_big(n, kv_dtype_info(dtype)->size);
    if (!p)
        return kv_error(KV_EDEVICE, "%s: out of host memory (%zu elements)", name, n);
    free(t->data);
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    t->count = n;
    t->data = p;
    return KV_OK;
}

size_t kv_tensor_bytes(const struct kv_tensor *t)
{
    return t->count * kv_dtype_info(t->dtype)->size;
}

void kv_tensor_free(struct kv_tensor *t)
{
    if (!t) return;
    free(t->data);
    memset(t, 0, sizeof *t);
}

void kv_tensor_unravel(const struct kv_tensor *t, size_t i, int64_t *idx)
{
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = (int64_t)(i % (size_t)t->shape[d]);
        i /= (size_t)t->shape[d];
    }
}

void kv_shape_str(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, size - o, "[");
    for (int d = 0; d < ndim && o < size; d++)
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (o < size) snprintf(buf + o, size - o, "]");
}

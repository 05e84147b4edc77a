/* A dense row-major tensor owning its data. */
#ifndef KV_TENSOR_H
#define KV_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"

#define KV_MAX_DIMS 4

struct kv_tensor {
    enum kv_dtype dtype;
    int ndim;
    int64_t shape[KV_MAX_DIMS];
    size_t count;  /* elements */
    void *data;    /* owned; NULL until kv_tensor_alloc */
};

/* Element count of a shape, or an error if any extent is < 1 or the product
 * (or its size in bytes for dtype) overflows size_t. */
enum kv_status kv_shape_count(const char *name, enum kv_dtype t, int ndim,
                              const int64_t *shape, size_t *count);
/* calloc and malloc for large host arrays (inputs, downloaded outputs, whole
 * oracles): from 8 MiB on, the kernel is asked to back them with transparent
 * huge pages (madvise; Linux's default setting, transparent_hugepage =
 * madvise, gives them only on request), so that their first writes take 512
 * times fewer page faults and their free is faster. free() releases them. */
void *kv_calloc_big(size_t n, size_t size);
void *kv_malloc_big(size_t bytes);
/* The first write to every page of [p, p + bytes), which the kernel zeroes
 * then, made on every thread, each thread whole 2 MiB parts (nothing from 8
 * MiB down). For an array every element of which is written next by threads
 * that take small pieces in turn: several of them would fault one huge page
 * at once, and each racer zeroes a huge page of its own, all but one freed
 * (measured on a 16-core host: 512 MiB of normals, 145-154 ms as they come
 * against 124-136 ms touched first, in 3x less system time). Writes zeros:
 * for fresh memory only. */
void kv_touch_pages(void *p, size_t bytes);
/* Set dtype and shape and allocate zeroed storage (data is replaced). */
enum kv_status kv_tensor_alloc(struct kv_tensor *t, const char *name,
                               enum kv_dtype dtype, int ndim, const int64_t *shape);
size_t kv_tensor_bytes(const struct kv_tensor *t);
void kv_tensor_free(struct kv_tensor *t); /* NULL-safe, leaves t empty */
/* Write the multi-index of flat element i into idx[0..ndim). */
void kv_tensor_unravel(const struct kv_tensor *t, size_t i, int64_t *idx);
/* Format a shape as "[a, b]" into buf. */
void kv_shape_str(int ndim, const int64_t *shape, char *buf, size_t size);

#endif

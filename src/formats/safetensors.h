/* safetensors files (huggingface/safetensors' format): an 8-byte
 * little-endian header length N, N bytes of a UTF-8 JSON object mapping each
 * tensor's name to {"dtype", "shape", "data_offsets": [begin, end]} (and an
 * optional "__metadata__" object of strings), then the tensors' bytes,
 * little-endian, C order.
 *
 * Opening checks the whole file as the format requires: the header within
 * the file and at most 100 MB, JSON that starts with '{' (trailing spaces
 * allowed), UTF-8 names, no name twice, shapes and dtypes that agree with
 * each byte range, and ranges that neither overlap nor leave a hole in the
 * data. Every error is one line, KV_EDATA, naming the file and the tensor.
 * A file is mapped, not read: a tensor is copied once, when it is read.
 *
 * Reading gives F32, F64, F16, BF16, U8, U16 and I32 as they are, and I64 as
 * i32 (PyTorch's default integer dtype; a value outside i32 is an error).
 * Other dtypes of the format open (their ranges are checked) but do not read. */
#ifndef KV_SAFETENSORS_H
#define KV_SAFETENSORS_H

#include <stddef.h>

#include "core/tensor.h"

struct kv_st;

/* Open a file (mapped), or a buffer that must outlive the handle. */
enum kv_status kv_st_open(const char *path, struct kv_st **out);
enum kv_status kv_st_open_mem(const char *what, const void *buf, size_t size, struct kv_st **out);
/* The tensors in the header's order; names are owned by the handle. */
long kv_st_count(const struct kv_st *f);
const char *kv_st_name(const struct kv_st *f, long i);
/* The tensor's dtype as the file spells it ("BF16"). */
const char *kv_st_dtype(const struct kv_st *f, long i);
/* Index of tensor NAME, or -1. */
long kv_st_find(const struct kv_st *f, const char *name);
/* Read tensor i into out (a fresh tensor it owns). */
enum kv_status kv_st_read(struct kv_st *f, long i, struct kv_tensor *out);
/* "__metadata__": entries in the file's order, owned by the handle; the
 * value of key, or NULL. */
long kv_st_meta_count(const struct kv_st *f);
const char *kv_st_meta_key(const struct kv_st *f, long i);
const char *kv_st_meta_value(const struct kv_st *f, long i);
const char *kv_st_meta(const struct kv_st *f, const char *key);
/* The file's name, for messages. */
const char *kv_st_path(const struct kv_st *f);
void kv_st_close(struct kv_st *f); /* NULL-safe */

/* One tensor to write: data holds count(shape) elements of dtype. */
struct kv_st_entry {
    const char *name;
    enum kv_dtype dtype;
    int ndim;
    const int64_t *shape;
    const void *data;
};

/* Write the entries, in order, and the metadata pairs meta[2i] = meta[2i+1],
 * to path atomically. The header is padded with spaces so that the data
 * starts 8-byte aligned. */
enum kv_status kv_st_write(const char *path, const struct kv_st_entry *e, int n, const char *const *meta, int n_meta);

#endif

/* .npy files: format versions 1.0, 2.0 and 3.0.
 * Reading accepts f2, f4, f8, u1, u2, i4 in either byte order ('<', '>', '|',
 * '='), and V2 (how numpy saves ml_dtypes.bfloat16: raw 16-bit words, read as
 * u16 like u2). Fortran-order arrays are transposed into C order. Object,
 * structured and other dtypes are rejected. Writing uses version 1.0 (2.0 for
 * very long headers), little-endian, C order; bf16 is written as u2 bits. */
#ifndef KV_IO_NPY_H
#define KV_IO_NPY_H

#include <stddef.h>

#include "core/tensor.h"

/* Largest payload a reader accepts from an archive member (bytes); tests
 * and fuzzers lower it. Files are bounded by their own size. */
extern size_t kv_io_max_bytes;

/* Parse a whole .npy image; what names it in errors. On success out owns a
 * fresh C-order tensor (u2 and V2 arrive as KV_U16). Errors are KV_EDATA. */
enum kv_status kv_npy_parse(const char *what, const void *buf, size_t size, struct kv_tensor *out);
/* Read a .npy file. */
enum kv_status kv_npy_read(const char *path, struct kv_tensor *out);
/* Encode t as a .npy image in a malloc'd buffer the caller frees. */
enum kv_status kv_npy_encode(const struct kv_tensor *t, char **buf, size_t *size);
/* Write t to path atomically. */
enum kv_status kv_npy_write(const char *path, const struct kv_tensor *t);

#endif

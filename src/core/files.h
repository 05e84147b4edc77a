/* Whole files in and out: read a bounded file into memory, and write one
 * atomically (the file is the old one or the complete new one). */
#ifndef KV_FILES_H
#define KV_FILES_H

#include <stddef.h>

#include "core/status.h"

/* Read a whole file into a malloc'd buffer (at most max bytes), NUL-terminated. */
enum kv_status kv_read_file(const char *path, size_t max, char **buf, size_t *size);
/* Write a whole buffer to path through a temporary file and rename(), so the
 * file is either the old one or the complete new one. "-" writes to stdout. */
enum kv_status kv_write_atomic(const char *path, const char *data, size_t size);
/* The same for the concatenation of n parts, never joined in memory. */
enum kv_status kv_write_atomic_parts(const char *path, const void *const *data, const size_t *size, int n);
/* Make the directory dir (its parent must exist); 1 when it is one now. */
int kv_make_dir(const char *dir);
/* kverify's cache directory ($XDG_CACHE_HOME/kverify, else ~/.cache/kverify),
 * created if missing; 0 when there is none. */
int kv_cache_dir(char *dir, size_t size);

#endif

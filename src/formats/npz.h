/* .npz archives (numpy's savez / savez_compressed): stored and deflated
 * members, ZIP64 included, read with libzip. */
#ifndef KV_IO_NPZ_H
#define KV_IO_NPZ_H

#include <stddef.h>

#include "core/tensor.h"

struct kv_npz;

/* Open an archive from a file, or from memory (buf must outlive the handle). */
enum kv_status kv_npz_open(const char *path, struct kv_npz **out);
enum kv_status kv_npz_open_mem(const char *what, const void *buf, size_t size, struct kv_npz **out);
/* Read member NAME.npy (numpy's naming) into out; *found = 0 without error
 * when the archive has no such member. */
enum kv_status kv_npz_read(struct kv_npz *z, const char *name, struct kv_tensor *out, int *found);
/* Number of members and the name of member i (owned by the archive). */
long kv_npz_count(struct kv_npz *z);
const char *kv_npz_name(struct kv_npz *z, long i);
void kv_npz_close(struct kv_npz *z); /* NULL-safe */

#endif

/* Property: opening any bytes as an .npz and reading every member (by the
 * kernel input names and by each name the archive lists) never crashes,
 * leaks or reads out of bounds; failures are clean KV_EDATA. Members are
 * capped at 1 MiB so claimed sizes cannot exhaust memory. */
#include <stdlib.h>
#include <string.h>

#include "formats/npy.h"
#include "formats/npz.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    kv_io_max_bytes = 1 << 20;
    struct kv_npz *z;
    if (kv_npz_open_mem("fuzz.npz", data, size, &z) != KV_OK) return 0;
    const char *names[] = {"x", "w", "dy"};
    struct kv_tensor t;
    int found;
    for (int i = 0; i < 3; i++)
        if (kv_npz_read(z, names[i], &t, &found) == KV_OK && found) kv_tensor_free(&t);
    long n = kv_npz_count(z);
    for (long i = 0; i < n && i < 64; i++) {
        const char *m = kv_npz_name(z, i);
        size_t len = m ? strlen(m) : 0;
        if (len < 5 || len > 200 || strcmp(m + len - 4, ".npy") != 0) continue;
        char base[256];
        memcpy(base, m, len - 4);
        base[len - 4] = '\0';
        if (kv_npz_read(z, base, &t, &found) == KV_OK && found) kv_tensor_free(&t);
    }
    kv_npz_close(z);
    return 0;
}

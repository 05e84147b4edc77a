/* Property: opening any bytes as a safetensors file and reading every
 * tensor and metadata entry never crashes, leaks or reads out of bounds;
 * failures are clean one-line KV_EDATA; a tensor read whole holds exactly
 * the bytes of its range (I64 narrowed to i32 aside). */
#include <stdlib.h>
#include <string.h>

#include "formats/safetensors.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    struct kv_st *f;
    if (kv_st_open_mem("fuzz.safetensors", data, size, &f) != KV_OK) {
        if (strchr(kv_error_msg(), '\n')) abort();
        return 0;
    }
    for (long i = 0; i < kv_st_meta_count(f); i++)
        if (!kv_st_meta_key(f, i) || !kv_st_meta_value(f, i) || kv_st_meta(f, kv_st_meta_key(f, i)) == NULL) abort();
    size_t total = 0;
    for (long i = 0; i < kv_st_count(f); i++) {
        if (kv_st_find(f, kv_st_name(f, i)) != i) abort(); /* names are unique */
        struct kv_tensor t;
        if (kv_st_read(f, i, &t) != KV_OK) {
            if (strchr(kv_error_msg(), '\n')) abort();
            continue;
        }
        total += kv_tensor_bytes(&t) * (strcmp(kv_st_dtype(f, i), "I64") ? 1 : 2);
        kv_tensor_free(&t);
    }
    if (total > size) abort(); /* ranges never overlap */
    kv_st_close(f);
    return 0;
}

/* Property: kv_npy_parse never crashes, leaks or reads out of bounds on any
 * input; whatever it accepts re-encodes (kv_npy_encode) to an image that
 * parses back to the same dtype, shape and bytes. */
#include <stdlib.h>
#include <string.h>

#include "formats/npy.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    struct kv_tensor t, back;
    if (kv_npy_parse("fuzz.npy", data, size, &t) != KV_OK) return 0;
    char *buf;
    size_t n;
    if (kv_npy_encode(&t, &buf, &n) != KV_OK) abort();
    if (kv_npy_parse("re.npy", buf, n, &back) != KV_OK) abort();
    if (back.dtype != t.dtype || back.ndim != t.ndim || back.count != t.count ||
        memcmp(back.shape, t.shape, sizeof(int64_t) * (size_t)t.ndim) != 0 ||
        memcmp(back.data, t.data, kv_tensor_bytes(&t)) != 0)
        abort();
    free(buf);
    kv_tensor_free(&t);
    kv_tensor_free(&back);
    return 0;
}

/* Property: kv_fixture_parse never crashes, leaks or reads out of bounds on
 * any input; an accepted fixture's tensors hold exactly count elements of
 * their dtype (checked by touching every byte under ASan). */
#include <stdlib.h>
#include <string.h>

#include "formats/fixture.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    struct kv_fixture fx;
    if (kv_fixture_parse("fuzz.json", (const char *)data, size, &fx) != KV_OK) return 0;
    volatile unsigned char sink = 0;
    for (int i = 0; i < fx.n_tensors; i++) {
        const unsigned char *b = fx.t[i].data;
        size_t n = kv_tensor_bytes(&fx.t[i]);
        for (size_t j = 0; j < n; j++) sink ^= b[j];
    }
    (void)sink;
    kv_fixture_free(&fx);
    return 0;
}

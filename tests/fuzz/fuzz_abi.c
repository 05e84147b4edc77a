/* Property: kv_abi_parse never crashes, leaks or reads out of bounds on any
 * input (as an interface file of rmsnorm-bwd's dx stage); in an accepted
 * file every expression evaluates, or fails with an error, for a case at
 * the kernel's defaults, never crashing, and integer fields land in range. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/abi.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static const struct kv_kernel *k;
    static struct kv_case c;
    static int ready;
    if (!ready) {
        k = kv_kernel_find("rmsnorm-bwd");
        if (!k || kv_case_init(&c, k, 1) != KV_OK) abort();
        ready = 1;
    }
    struct kv_abi *a = malloc(sizeof *a);
    if (!a) return 0;
    if (kv_abi_parse(k, 1, "fuzz.json", (const char *)data, size, a) == KV_OK) {
        double v;
        for (int i = 0; i < a->n_push; i++)
            if (kv_abi_value(&c, "push", a->push[i].expr, a->push[i].type, &v) == KV_OK && a->push[i].type == KV_ABI_UINT &&
                !(v >= 0 && v <= 4294967295.0))
                abort();
        for (int i = 0; i < 3; i++)
            if (kv_abi_value(&c, "dispatch", a->dispatch[i], KV_ABI_UINT, &v) == KV_OK && (v < 0 || v != floor(v)))
                abort();
    }
    free(a);
    return 0;
}

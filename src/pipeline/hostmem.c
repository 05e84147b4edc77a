#include "pipeline/hostmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/stream.h"

uint64_t kv_case_host_floor(const struct kv_case *c, const struct kv_vk_info *dev)
{
    const struct kv_kernel *k = c->k;
    const int cpu = dev && dev->type && !strcmp(dev->type, "cpu");
    uint64_t in = 0, out = 0;
    for (int t = 0; t < k->n_tensors; t++) {
        if (!kv_tensor_on(c, t)) continue;
        uint64_t n = 1;
        for (int d = 0; d < c->t[t].ndim; d++) n *= (uint64_t)c->t[t].shape[d];
        uint64_t bytes = n * kv_dtype_info(c->t[t].dtype)->size;
        if (k->tensors[t].role == KV_INPUT) in += bytes;
        else out += bytes;
    }
    if (!dev) return in;
    /* on a CPU device: generated, then in the device's buffers (host memory
     * too), where the outputs are judged in place (plan.h, direct);
     * elsewhere generated and downloaded, and staged whole too where the plan
     * is not streamed (stream.h) */
    if (cpu) return 2 * in + out;
    return in + out + (in + out > kv_stream_threshold() ? 0 : in);
}

uint64_t kv_host_available(void)
{
    const char *test = getenv("KVERIFY_TEST_MEM_AVAILABLE");
    if (test && *test) return strtoull(test, NULL, 10);
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

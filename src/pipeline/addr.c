#include "pipeline/addr.h"

#include <stdlib.h>
#include <string.h>

#include "spirv/glsl.h"

/* Whether a --shader's source names KV_ADDR (so builds with it), as the
 * build decides for the built-in ones. */
static int shader_names(const char *path)
{
    size_t n = strlen(path);
    if (n > 4 && !strcmp(path + n - 4, ".spv")) return 0;
    struct kv_glsl_env env = {0};
    char *text = NULL;
    size_t len = 0;
    int named = kv_glsl_read(&env, path, &text, &len) == KV_OK && strstr(text, "KV_ADDR");
    kv_error_clear();
    free(text);
    return named;
}

int kv_addr_source(const struct kv_kernel *k, int s, const char *shader)
{
    return shader ? shader_names(shader) : k->stages[s].addr;
}

/* KVERIFY_TEST_ADDR_ON_CPU=1: the tests' CPU device taken as a GPU (its
 * KV_ADDR builds unguarded, with shaders known to stay in bounds). */
int kv_addr_guarded(const struct kv_vk_info *dev)
{
    const char *hook = getenv("KVERIFY_TEST_ADDR_ON_CPU");
    return kv_vk_is_cpu(dev) && !(hook && !strcmp(hook, "1"));
}

const char *kv_addr_lacks(const struct kv_vk_info *dev)
{
    return !dev->addr ? "this device lacks bufferDeviceAddress or shaderInt64" : NULL;
}

enum kv_status kv_addr_push(struct kv_vk_device *d, const struct kv_vk_range *bind, int n, int lengths,
                            const void *push, uint32_t push_size, unsigned char *out)
{
    for (int i = 0; i < n; i++) {
        uint64_t a = kv_vk_buffer_address(d, bind[i].buf) + bind[i].offset;
        /* the address builds' accesses claim the alignment their offsets prove from 16 */
        if (a % 16)
            return kv_error(KV_EDEVICE, "binding %d's device address 0x%llx is not a multiple of 16", i,
                            (unsigned long long)a);
        memcpy(out + 8 * i, &a, sizeof a);
        if (!lengths) continue;
        const uint64_t range = bind[i].size; /* what a bound binding's length() reads */
        memcpy(out + 8 * (n + i), &range, sizeof range);
    }
    memcpy(out + 8 * n * (lengths ? 2 : 1), push, push_size);
    return KV_OK;
}

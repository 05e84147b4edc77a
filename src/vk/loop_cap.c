/* Whether the device cuts a shader's loops short. Mesa's llvmpipe (the
 * default device where no GPU is present) stops every loop of an invocation
 * after 65535 iterations in all (its loop limiter, shared between the loops
 * of a shader), without an error: a stage whose invocations loop longer
 * leaves work undone, and its outputs fail on that device alone. The probe
 * (shaders/loop_cap.comp) runs one loop of PROBE_N iterations; its
 * count is believed where the loop's value is the host's after as many. */

#include "vk/vk.h"

static const uint32_t probe_spv[] =
#include "loop_cap.sg.h"
    ;

enum { PROBE_N = 1 << 20 };

static enum kv_status probe(struct kv_vk_device *d, uint32_t *cap)
{
    const uint32_t n = PROBE_N;
    uint32_t out[2] = {0};
    *cap = 0;
    KV_TRY_RET(kv_vk_probe(d, "built-in loop probe", probe_spv, sizeof probe_spv, NULL, 0, 0, out, sizeof out, &n,
                           sizeof n));
    /* the step's value after the iterations counted: the loop ran them (not
     * folded, nor counted wrong) */
    uint32_t x = 1;
    for (uint32_t i = 0; i < out[0] && i < n; i++) x = x * 1664525u + 1013904223u;
    if (out[0] > n || out[1] != x)
        return kv_error(KV_EDEVICE, "its value does not match its count of %u iterations", out[0]);
    *cap = out[0] < n ? out[0] : 0;
    return KV_OK;
}

enum kv_status kv_vk_loop_cap(struct kv_vk_device *d, uint32_t *cap)
{
    return kv_vk_probe_noted(probe(d, cap), "the loop probe", "");
}

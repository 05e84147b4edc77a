/* Whether the device cuts a shader's loops short. Mesa's llvmpipe (the
 * default device where no GPU is present) stops every loop of an invocation
 * after 65535 iterations in all (its loop limiter, shared between the loops
 * of a shader), without an error: a stage whose invocations loop longer
 * leaves work undone, and its outputs fail on that device alone. The probe
 * (shaders/loop_cap.comp) runs one loop of PROBE_N iterations. */
#include <stdio.h>
#include <stdlib.h>

#include "vk/vk.h"

static const uint32_t probe_spv[] =
#include "loop_cap.sg.h"
    ;

enum { PROBE_N = 1 << 20 };

static enum kv_status probe(struct kv_vk_device *d, uint32_t *cap)
{
    enum kv_status st = KV_OK;
    struct kv_vk_buffer out = {0}, down = {0};
    struct kv_vk_pipeline pipe = {0};
    struct kv_vk_batch b = {0};
    *cap = 0;
    KV_TRY(kv_vk_buffer_create(d, 2 * sizeof(uint32_t), KV_MEM_DEVICE, &out));
    KV_TRY(kv_vk_buffer_create(d, 2 * sizeof(uint32_t), KV_MEM_READBACK, &down));
    KV_TRY(kv_vk_pipeline_create(d, "built-in loop probe", probe_spv, sizeof probe_spv, 1, 4, &pipe));
    KV_TRY(kv_vk_batch_begin(d, 1, 0, &b));
    struct kv_vk_range r_out = {&out, 0, out.size}, r_down = {&down, 0, down.size};
    const uint32_t n = PROBE_N, groups[3] = {1, 1, 1};
    KV_TRY(kv_vk_batch_dispatch(&b, &pipe, &r_out, &n, groups));
    kv_vk_batch_barrier(&b, KV_BARRIER_COMPUTE_TO_TRANSFER);
    kv_vk_batch_copy(&b, r_out, r_down);
    kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_HOST);
    KV_TRY(kv_vk_batch_submit(&b));
    KV_TRY(kv_vk_buffer_invalidate(d, &down));
    const uint32_t ran = ((const uint32_t *)down.map)[0];
    *cap = ran < n ? ran : 0;
cleanup:
    kv_vk_batch_destroy(&b);
    kv_vk_pipeline_destroy(d, &pipe);
    kv_vk_buffer_destroy(d, &out);
    kv_vk_buffer_destroy(d, &down);
    return st;
}

enum kv_status kv_vk_loop_cap(struct kv_vk_device *d, uint32_t *cap)
{
    if (probe(d, cap) == KV_OK) return KV_OK;
    fprintf(stderr, "kverify: note: the loop probe failed (%s)\n", kv_error_msg());
    kv_error_clear();
    *cap = 0;
    return KV_OK;
}

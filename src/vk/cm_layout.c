/* The element layout of the device's 16 x 16 f32 cooperative-matrix
 * accumulators. A shader that reads or writes an accumulator's elements
 * (M[e]) by position relies on the driver's layout, which Vulkan leaves to
 * the implementation: such a build (KV_CM_EL) runs only where this probe
 * finds the layout it is written for (shaders/cm_layout.comp). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk/vk.h"

static const uint32_t probe_spv[] =
#include "cm_layout.cm.h"
    ;

enum { N_OUT = 1 + 32 * 64 };

int kv_vk_cm_layout_known(const float *out, size_t n)
{
    if (n < 1 + 32 * 8 || out[0] != 8.0f) return 0;
    for (unsigned lane = 0; lane < 32; lane++)
        for (unsigned e = 0; e < 8; e++) {
            unsigned g = lane / 4, q = lane % 4, p = e / 2;
            unsigned r = g + 8 * (p >> 1), c = 8 * (p & 1) + 2 * q + e % 2;
            if (out[1 + lane * 8 + e] != (float)(r * 16 + c)) return 0;
        }
    return 1;
}

static enum kv_status probe(struct kv_vk_device *d, int *known)
{
    enum kv_status st = KV_OK;
    struct kv_vk_buffer up = {0}, ids = {0}, out = {0}, down = {0};
    struct kv_vk_pipeline pipe = {0};
    struct kv_vk_batch b = {0};
    *known = 0;
    const char *force = getenv("KVERIFY_CM_LAYOUT");
    if (force && !strcmp(force, "generic")) return KV_OK;
    KV_TRY(kv_vk_buffer_create(d, 256 * sizeof(float), KV_MEM_UPLOAD, &up));
    KV_TRY(kv_vk_buffer_create(d, 256 * sizeof(float), KV_MEM_DEVICE, &ids));
    KV_TRY(kv_vk_buffer_create(d, N_OUT * sizeof(float), KV_MEM_DEVICE, &out));
    KV_TRY(kv_vk_buffer_create(d, N_OUT * sizeof(float), KV_MEM_READBACK, &down));
    for (int i = 0; i < 256; i++) ((float *)up.map)[i] = (float)i;
    KV_TRY(kv_vk_buffer_flush(d, &up));
    KV_TRY(kv_vk_pipeline_create(d, "built-in accumulator layout probe", probe_spv, sizeof probe_spv, 2, 0, &pipe));
    KV_TRY(kv_vk_batch_begin(d, 1, 0, &b));
    struct kv_vk_range r_up = {&up, 0, up.size}, r_ids = {&ids, 0, ids.size}, r_out = {&out, 0, out.size},
                       r_down = {&down, 0, down.size};
    kv_vk_batch_copy(&b, r_up, r_ids);
    kv_vk_batch_fill(&b, r_out, 0xffffffffu); /* NaN where nothing is written */
    kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_COMPUTE);
    struct kv_vk_range bind[2] = {r_ids, r_out};
    const uint32_t groups[3] = {1, 1, 1};
    KV_TRY(kv_vk_batch_dispatch(&b, &pipe, bind, NULL, groups));
    kv_vk_batch_barrier(&b, KV_BARRIER_COMPUTE_TO_TRANSFER);
    kv_vk_batch_copy(&b, r_out, r_down);
    kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_HOST);
    KV_TRY(kv_vk_batch_submit(&b));
    KV_TRY(kv_vk_buffer_invalidate(d, &down));
    *known = kv_vk_cm_layout_known(down.map, N_OUT);
cleanup:
    kv_vk_batch_destroy(&b);
    kv_vk_pipeline_destroy(d, &pipe);
    kv_vk_buffer_destroy(d, &up);
    kv_vk_buffer_destroy(d, &ids);
    kv_vk_buffer_destroy(d, &out);
    kv_vk_buffer_destroy(d, &down);
    return st;
}

/* A probe that cannot run leaves the generic builds, which need no layout: the
 * device still serves every stage (a lost device fails at its next use). */
enum kv_status kv_vk_cm_layout(struct kv_vk_device *d, int *known)
{
    if (probe(d, known) == KV_OK) return KV_OK;
    fprintf(stderr, "kverify: note: the accumulator layout probe failed (%s); the generic builds run\n", kv_error_msg());
    kv_error_clear();
    *known = 0;
    return KV_OK;
}

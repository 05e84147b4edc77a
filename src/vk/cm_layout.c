/* The element layout of the device's 16 x 16 f32 cooperative-matrix
 * accumulators. A shader that reads or writes an accumulator's elements
 * (M[e]) by position relies on the driver's layout, which Vulkan leaves to
 * the implementation: such a build (KV_CM_EL) runs only where this probe
 * finds the layout it is written for (shaders/cm_layout.comp). */
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
    *known = 0;
    const char *force = getenv("KVERIFY_CM_LAYOUT");
    if (force && !strcmp(force, "generic")) return KV_OK;
    float ids[256], *out = malloc(N_OUT * sizeof(float));
    if (!out) return kv_error(KV_EDEVICE, "out of host memory");
    for (int i = 0; i < 256; i++) ids[i] = (float)i;
    /* NaN where nothing is written */
    enum kv_status st = kv_vk_probe(d, "built-in accumulator layout probe", probe_spv, sizeof probe_spv, ids,
                                    sizeof ids, 0xffffffffu, out, N_OUT * sizeof(float), NULL, 0);
    if (!st) *known = kv_vk_cm_layout_known(out, N_OUT);
    free(out);
    return st;
}

/* A probe that cannot run leaves the generic builds, which need no layout: the
 * device still serves every stage (a lost device fails at its next use). */
enum kv_status kv_vk_cm_layout(struct kv_vk_device *d, int *known)
{
    return kv_vk_probe_noted(probe(d, known), "the accumulator layout probe", "; the generic builds run");
}

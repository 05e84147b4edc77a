/* A device's measured ceilings (`kverify devices --measure`): the copy
 * bandwidth and the f32 and f16 matrix-product rates of the best built-in
 * kernel, cached per device so that --bench can give each stage's share. */
#ifndef KV_CEILINGS_H
#define KV_CEILINGS_H

#include <stdio.h>

#include "reports/report.h"
#include "vk/vk.h"

/* The cache file ($XDG_CACHE_HOME/kverify/ceilings.json, else
 * ~/.cache/kverify/...); 0 when there is no cache directory. */
int kv_ceilings_path(char *path, size_t size);
/* The cached ceilings of this device (same name and driver); 0 when none or
 * the cache cannot be read. */
int kv_ceilings_load(const struct kv_vk_info *dev, struct kv_ceilings *out);
/* Measure on d, writing progress lines to log (may be NULL). */
enum kv_status kv_ceilings_measure(struct kv_vk_device *d, struct kv_ceilings *out, FILE *log);
/* Store this device's entry in the cache, keeping other devices' entries. */
enum kv_status kv_ceilings_save(const struct kv_vk_info *dev, const struct kv_ceilings *c);

#endif

/* Running one case of a kernel: inputs, oracle, device stages, comparison. */
#ifndef KV_RUN_H
#define KV_RUN_H

#include "kernels/kernel.h"
#include "pipeline/runner.h"
#include "reports/report.h"
#include "spirv/glsl.h"
#include "vk/vk.h"

/* Check a case's shapes against the kernel and the device's limits. */
enum kv_status kv_case_check(struct kv_case *c, const struct kv_vk_info *dev);

/* Run one case and fill res; never fails: errors are recorded in res. */
void kv_run_case(struct kv_runner *r, struct kv_case *c, const struct kv_run_opts *o,
                 struct kv_case_result *res);

#endif

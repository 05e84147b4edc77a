/* --bench: each stage's device time over many back-to-back runs. */
#ifndef KV_BENCH_H
#define KV_BENCH_H

#include "pipeline/plan.h"

/* Keep the device busy with the first stage for warmup_s seconds (a GPU
 * leaves its idle clocks only under sustained load), then run each stage in
 * run_stage 3 times untimed and n times timed back to back (each between
 * barriers, on the isolated inputs; every window of a stage bound in
 * windows), and give each stage's fastest and median time. */
enum kv_status kv_plan_bench(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage, int n,
                             double warmup_s, uint32_t cap, double *min_ms, double *median_ms);

#endif

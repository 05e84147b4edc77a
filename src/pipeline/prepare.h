/* A case made ready before it runs: which of its stages run on the device
 * and which rerun on the device's intermediates (kv_case_stages), and the
 * first case's device buffers, made on the thread that opens the device
 * while the main thread makes the case's inputs (kv_early_plan; jobs.c). */
#ifndef KV_PIPELINE_PREPARE_H
#define KV_PIPELINE_PREPARE_H

#include "pipeline/plan.h"

/* The stages of case c that run on r's device: a stage runs unless every
 * output it writes has a candidate (none runs without a device); and those
 * rerun on the device's intermediates: a stage fed intermediates, where
 * their producers ran (not an --abi stage). *any: whether one runs.
 * KV_ENODEV where a stage that must run has no pipeline on this device
 * (r->missing). */
enum kv_status kv_case_stages(const struct kv_runner *r, const struct kv_case *c, int *run_stage, int *chain_stage,
                              int *any);

/* Device buffers made for a case before it runs, and what they were made
 * for: the runner and the case's parameters, from which its tensors' shapes
 * and its chained stages follow. */
struct kv_early_plan {
    struct kv_plan p;
    const struct kv_runner *r;
    struct kv_pval p_made[KV_MAX_PARAMS];
};

/* Case c's device buffers (kv_plan_alloc) on r's device, or NULL where they
 * are not made now (no device, no stage to run, a limit the case passes
 * not, a failed allocation: the case's run makes them, and reports why).
 * c: the thread's own copy of the case (kv_case_check makes its shapes). */
struct kv_early_plan *kv_early_plan(struct kv_runner *r, struct kv_case *c);
/* e's buffers into the empty plan p where they were made for case c as it
 * runs (the same runner and parameters): 1; else they are freed: 0. e is
 * freed either way. */
int kv_early_plan_take(struct kv_early_plan *e, const struct kv_runner *r, const struct kv_case *c,
                       struct kv_plan *p);
void kv_early_plan_free(struct kv_vk_device *d, struct kv_early_plan *e);

#endif

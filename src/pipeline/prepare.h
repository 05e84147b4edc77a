/* A case made ready before it runs: which of its stages run on the device
 * and which rerun on the device's intermediates (kv_case_stages), and its
 * device buffers made on another thread while the main thread makes the
 * case's inputs: the first case's on the thread that opens the device
 * (kv_early_plan; jobs.c), a later large case's on one of its own
 * (kv_plan_beside). */
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

/* A later case's device buffers made on a thread of their own while the
 * calling thread makes its inputs (the first case's are made as the device
 * opens, jobs.c): started only where that pays, a case with a stage to run
 * on r's device, no --abi stage, and more than kv_stream_threshold() of
 * inputs and outputs (a driver takes tens of ms to make their buffers: 70 ms
 * a case on an H200 host at 1.5 GB); NULL otherwise, and under
 * KVERIFY_TEST_NO_OVERLAP=1. c: the case, its shapes made (kv_case_check).
 * The calling thread's teams are one thread smaller until the join. */
struct kv_plan_beside;
/* KVERIFY_TEST_NO_OVERLAP=1: no case is prepared before the device opens and
 * no device buffers are made beside inputs (the tests' way to compare a run
 * without either). */
int kv_overlap_off(void);
struct kv_plan_beside *kv_plan_beside_start(struct kv_runner *r, const struct kv_case *c, int any_stage);
/* The buffers the thread made (kv_early_plan: NULL where it made none), once
 * it is done; b is freed. NULL for a NULL b. */
struct kv_early_plan *kv_plan_beside_join(struct kv_plan_beside *b);

#endif

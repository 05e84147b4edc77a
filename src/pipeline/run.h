/* Running one case of a kernel: inputs, oracle, device stages, comparison. */
#ifndef KV_RUN_H
#define KV_RUN_H

#include "kernels/kernel.h"
#include "pipeline/prepare.h"
#include "pipeline/runner.h"
#include "reports/report.h"
#include "spirv/glsl.h"
#include "vk/vk.h"

/* A case's inputs, made before the case runs (jobs.c makes the first
 * case's while the device opens), their time, or the error that stopped
 * them (reported when the case runs); and its oracle where
 * kv_case_prepare_oracle made it too. */
struct kv_case_prep {
    enum kv_status st;
    char msg[1024];
    double inputs_ms, oracle_ms;
    int oracle_made;
    /* its device buffers, made on the opening thread meanwhile (prepare.h),
     * or NULL; the case's run takes them */
    struct kv_early_plan *early;
};
/* Only for options without --abi (its constants come with the runner). */
void kv_case_prepare(struct kv_case *c, const struct kv_run_opts *o, struct kv_case_prep *pre);
/* The prepared case's oracle made now, rather than when it runs: for a
 * thread that would otherwise wait for the device to open (jobs.c asks only
 * then: beside the opening thread, the oracle's loops on every core lose
 * time, and gdn-wy-bwd's float64 products lost more than the opening took).
 * An error stops the case as the inputs' would. */
void kv_case_prepare_oracle(struct kv_case *c, const struct kv_run_opts *o, struct kv_case_prep *pre);

/* Run one case and fill res; never fails: errors are recorded in res.
 * pre: the case prepared by kv_case_prepare, or NULL (made here). */
void kv_run_case(struct kv_runner *r, struct kv_case *c, const struct kv_run_opts *o, struct kv_case_prep *pre,
                 struct kv_case_result *res);

#endif

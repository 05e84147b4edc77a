/* The sanitized run's records (sanitize/san.h) read back as rows of the
 * case (memcheck, racecheck, initcheck), each with a one-line reason; the
 * instrumented builds are the runner's (kv_runner.san), the record buffers
 * the plan's. */
#ifndef KV_PIPELINE_SANITIZE_H
#define KV_PIPELINE_SANITIZE_H

#include "pipeline/plan.h"

/* After a sanitized run: a failing row per kind with records, per stage;
 * returns 1 when there was none. */
int kv_sanitize_rows(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage,
                     const int *chain_stage, struct kv_case_result *res);

#endif

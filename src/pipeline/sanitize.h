/* The sanitized run (sanitize/san.h) in the pipeline: each stage's
 * instrumented build, built from the source the stage runs with debug
 * information (a .spv as it is), and its records read back as rows of the
 * case (memcheck, racecheck, initcheck), each with a one-line reason. */
#ifndef KV_PIPELINE_SANITIZE_H
#define KV_PIPELINE_SANITIZE_H

#include "pipeline/plan.h"

/* The slot of one stage's (and pass's) record buffer in the plan's. */
#define KV_SAN_SLOT 1024

/* Whether options o run the sanitized run (with the stress runs, or alone). */
static inline int kv_sanitize_on(const struct kv_run_opts *o) { return o->sanitize > 0; }
/* Build stage s's sanitized pipeline into r (r->san[s], r->san_mod[s]); a
 * stage it cannot instrument keeps the reason in r->san_missing[s]. */
enum kv_status kv_runner_sanitized(struct kv_runner *r, int s, const struct kv_run_opts *o, unsigned defines);
void kv_runner_sanitized_free(struct kv_runner *r, int s);
/* The logical bytes of each binding of stage s (the record buffer's header). */
int kv_sanitize_logical(const struct kv_runner *r, const struct kv_case *c, const struct kv_plan *p, int s,
                        uint64_t *bytes);
/* After a sanitized run: a failing row per kind with records, per stage;
 * returns 1 when there was none. */
int kv_sanitize_rows(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage,
                     const int *chain_stage, struct kv_case_result *res);

#endif

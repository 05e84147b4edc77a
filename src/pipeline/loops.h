/* A failing run of a case on a device that cuts loops short (vk/loop_cap.c:
 * llvmpipe ends every loop of an invocation after 65535 iterations in all,
 * without an error): its stages run again in their loop-cut builds
 * (sanitize/loops.h), which count the invocations whose loops the device
 * ended at a back edge. Where some were, and that run's outputs are the
 * checked run's value for value (the same cut), the device's outputs cannot be
 * judged: the case is a device error (exit 4), with the reason, not a
 * failure. (A cut at a loop's last back edge loses nothing, yet cannot be
 * told from one that does: so the case is not skipped, which a gate would
 * pass, and a kernel's own failure in such a case still fails the run.)
 * Where none was, the failure is the kernel's. */
#ifndef KV_PIPELINE_LOOPS_H
#define KV_PIPELINE_LOOPS_H

#include "pipeline/plan.h"
#include "pipeline/runner.h"
#include "reports/report.h"

/* Whether case c's failure is checked so: a capped device, the plan's
 * buffers still held (not retired), no stage bound by address, and not
 * --fail-fast (kverify mutate's too: a failing mutant is killed as it fails). */
int kv_loops_wanted(const struct kv_runner *r, const struct kv_plan *p, const struct kv_run_opts *o);
/* The check of a run whose outputs are in p, with a failing row among res's
 * rows from `from` on: the plain run (sr NULL, from 0), or the stress run sr
 * (the sanitized one too), whose rows follow the plain ones. Run again so
 * (sr's group cap, its subgroups reversed where sr's are, its sanitized builds
 * where sr is the sanitized run), the stages that can have cut a failing row
 * (its own, and those before a chained row) in their loop-cut builds, the
 * others as they are. KV_EDEVICE naming the cut where the device cut one of them;
 * else KV_OK, *clear 1 where each of them has a loop-cut build that counted
 * no cut, or no loop (this run's failure is the kernel's), and
 * res->loops_checked set where that holds of every failing run of the case
 * so far. Not run where the outputs pass 1 GiB (kept while the run writes
 * over them). p's outputs are the checked run's again on return. */
enum kv_status kv_loops_check(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage,
                              const int *chain_stage, const struct kv_stress_run *sr, int from,
                              struct kv_case_result *res, int *clear);

#endif

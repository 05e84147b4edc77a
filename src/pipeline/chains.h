/* A case's intermediates (outputs of one stage that another reads) and its
 * chained reruns (stages fed the device's intermediates rather than the
 * oracle's): what the plan's buffers, the run's stages and the host-memory
 * check all follow. */
#ifndef KV_PIPELINE_CHAINS_H
#define KV_PIPELINE_CHAINS_H

#include "kernels/kernel.h"
#include "formats/abi.h"

/* Whether stage s reads an output of another stage; whether output t feeds
 * another active stage. */
int kv_consumes_intermediate(const struct kv_kernel *k, int s);
int kv_is_intermediate(const struct kv_case *c, int t);
/* The stages of case c that run on a device (not every output a
 * candidate) and those rerun chained (fed intermediates whose producers
 * ran; not an --abi stage: abi[s] its interface, NULL: none), into
 * run_stage and chain_stage: kv_case_stages's rule, and what the host-memory
 * check counts (a chained stage's outputs come back twice). */
void kv_case_chains(const struct kv_case *c, const struct kv_abi *const *abi, int *run_stage, int *chain_stage);

#endif

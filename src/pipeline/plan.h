/* The device side of one case: a buffer for every tensor (inputs, outputs,
 * the oracle's rounded intermediates for stage isolation, chained outputs),
 * staging, and one command buffer that uploads, fills outputs with a NaN
 * sentinel and guard words, runs the stages and downloads. */
#ifndef KV_PLAN_H
#define KV_PLAN_H

#include "pipeline/runner.h"
#include "pipeline/stream.h"
#include "pipeline/binding.h"


/* The slot of one stage's (and pass's) sanitizer record buffer in the plan's. */
#define KV_SAN_SLOT 2048
_Static_assert(KV_SAN_BUFFER_BYTES <= KV_SAN_SLOT, "a stage's record buffer fits its slot");

#define KV_LOOPS_SLOT 256u

/* Device-side state of one case. */
struct kv_plan {
    struct kv_vk_buffer dev[KV_MAX_TENSORS];   /* inputs; outputs as their stage writes them */
    struct kv_vk_buffer iso[KV_MAX_TENSORS];   /* oracle-rounded intermediates */
    struct kv_vk_buffer chain[KV_MAX_TENSORS]; /* outputs of stages fed device intermediates */
    struct kv_vk_buffer up, down;
    size_t up_off[2][KV_MAX_TENSORS];          /* [0] dev inputs, [1] iso */
    size_t down_off[2][KV_MAX_TENSORS];        /* [0] dev outputs, [1] chain */
    struct kv_tensor iso_host[KV_MAX_TENSORS];
    int iso_lent[KV_MAX_TENSORS];              /* iso_host[t] is the case's c->iso[t] (blocked), not the plan's */
    int has_chain[KV_MAX_TENSORS];
    size_t nondet[KV_MAX_TENSORS][2];          /* elements that differed between repeats */
    /* --abi stages' products (a * b computed on the host), by stage and binding entry */
    struct kv_vk_buffer product[KV_MAX_STAGES][KV_ABI_MAX];
    size_t product_bytes[KV_MAX_STAGES][KV_ABI_MAX], product_off[KV_MAX_STAGES][KV_ABI_MAX];
    /* the sanitized run's record buffers, a slot per stage and pass (pipeline/sanitize.h) */
    struct kv_vk_buffer san_dev, san_up, san_down;
    struct kv_vk_buffer san_shadow; /* the shared-memory shadow of stages it does not fit (sanitize/san.h) */
    /* racecheck-global's shadow: a part per stage and pass, zeroed at each run */
    struct kv_vk_buffer san_global;
    size_t san_goff[KV_MAX_STAGES][2], san_gbytes[KV_MAX_STAGES][2];
    /* the loop-cut run's counts, a slot of KV_LOOPS_SLOT bytes per stage and
     * pass, and its flags (pipeline/loops.h) */
    struct kv_vk_buffer loops_dev, loops_down, loops_flags;
    struct kv_plan_retired *retired; /* kv_plan_retire's buffers and the thread that destroys them */
    /* Streamed (transfers past kv_stream_threshold()): up and down are staging
     * buffers of kv_stage_bytes(), the uploads come from the host tensors (and
     * the products kept here) at each run, and the downloads land in host_down
     * (as long as the device buffers, guard words included). */
    int streamed;
    /* Direct (every device buffer mapped: a CPU device): no staging at all;
     * uploads are copies into the device's buffers, downloads read there. */
    int direct;
    struct kv_tensor prod_host[KV_MAX_STAGES][KV_ABI_MAX];
    /* Each stage's windows: one dispatch per window where a tensor is longer
     * than a binding reaches (pipeline/binding.h) */
    struct kv_windows win[KV_MAX_STAGES];
    void *host_down[KV_MAX_TENSORS][2];
    /* kv_plan_alloc's part made: the device buffers (and the staging, up
     * and down, unless --abi products add to up), and the bytes that the
     * staging of inputs and intermediates (up) and of outputs (down) takes */
    int alloced;
    size_t up_bytes, down_bytes;
};

/* Buffers for case c; chain_stage[s] marks stages rerun on device
 * intermediates. kv_plan_alloc makes the device's buffers and the staging
 * alone, from the case's shapes: it needs neither inputs nor oracle (jobs.c
 * makes the first case's while its inputs are made); kv_plan_make then makes
 * the rest (the oracle's intermediates, staging where --abi products add to
 * it), or all of it where p has none yet. */
enum kv_status kv_plan_alloc(struct kv_runner *r, const struct kv_case *c, const int *chain_stage, struct kv_plan *p);
enum kv_status kv_plan_make(struct kv_runner *r, struct kv_case *c, const int *chain_stage, struct kv_plan *p);
/* Record and run the stages once, each dispatch capped at cap workgroups
 * (0: none), on the variant's pipelines (KV_VARIANT_*) where the runner has
 * them (the sanitized ones with their record buffers); times per isolated
 * stage, of the chained reruns together (chained_ms, may be NULL), upload,
 * download. */
enum kv_status kv_plan_run(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage,
                           const int *chain_stage, uint32_t cap, int variant, double *stage_ms, double *chained_ms,
                           double *upload_ms, double *download_ms);
/* Record stage s (pass 0 isolated, 1 chained) into batch b: one dispatch
 * per window, on the variant's pipeline with its record buffers. */
enum kv_status kv_plan_dispatch(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, int s, int pass,
                                uint32_t cap, int variant, struct kv_vk_batch *b);
/* Where run 0's download of output t landed (ch 0 isolated, 1 chained). */
const void *kv_plan_download(const struct kv_plan *p, int t, int ch);
/* A streamed plan's device buffers destroyed on a thread of their own, for
 * a case whose device runs are all done and whose outputs are in host_down:
 * a driver may take tens of milliseconds to free gigabytes, and the case is
 * judged meanwhile. The buffers keep their sizes (the judge reads them), not
 * their handles. Nothing for a plan not streamed (its outputs are read in
 * its buffers) or where no thread starts (kv_plan_free destroys them).
 * then(ctx), where given, follows on the same thread once they are gone
 * (nothing calls it where they are not retired). */
void kv_plan_retire(struct kv_vk_device *d, struct kv_plan *p, void (*then)(void *ctx), void *ctx);
void kv_plan_free(struct kv_vk_device *d, struct kv_plan *p); /* joins kv_plan_retire's thread first */
void kv_plan_retired_join(struct kv_plan *p); /* that join alone: the buffers (and then) are done */

#endif

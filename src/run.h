/* Running one case of a kernel: inputs, oracle, device stages, comparison. */
#ifndef KV_RUN_H
#define KV_RUN_H

#include "kernels/kernel.h"
#include "report.h"
#include "vk/vk.h"

enum { KV_ORACLE_SPEC, KV_ORACLE_EXACT, KV_ORACLE_BOTH };

struct kv_run_opts {
    struct kv_criteria crit;
    int repeat;                         /* device runs per case (>= 1) */
    const char *shader[KV_MAX_STAGES];  /* user shader per stage, or NULL */
    int no_subgroup;                    /* force the shared-memory reduction shaders */
    int no_8bit;                        /* force the packed-word code access shaders */
    const char *save_dir;               /* --save DIR, or NULL */
    int oracle;                         /* KV_ORACLE_SPEC, _EXACT or _BOTH */
    int64_t sample;                     /* --sample N: random elements per output (0: all) */
    int bench;                          /* --bench N: timed runs per stage after warm-up (0: none) */
    double bench_warmup_s;              /* --bench-warmup S: busy seconds before the first timed stage */
};

/* Pipelines for one kernel on one device, created once per process. */
struct kv_runner {
    struct kv_vk_device *d;
    const struct kv_kernel *k;
    struct kv_vk_pipeline pipe[KV_MAX_STAGES];
    uint32_t local[KV_MAX_STAGES][3];
    char missing[KV_MAX_STAGES][512]; /* why a stage has no pipeline here (a device feature it needs), or "" */
    double pipeline_ms;
};

/* Build every stage's pipeline (d may be NULL when no stage needs a device:
 * then there is nothing to build) (user shaders compiled and checked against the
 * stage's interface). KV_EDATA for a bad user shader, KV_EDEVICE otherwise. */
enum kv_status kv_runner_init(struct kv_runner *r, struct kv_vk_device *d, const struct kv_kernel *k,
                              const struct kv_run_opts *o);
void kv_runner_free(struct kv_runner *r);

/* Check a case's shapes against the kernel and the device's limits. */
enum kv_status kv_case_check(struct kv_case *c, const struct kv_vk_info *dev);

/* Run one case and fill res; never fails: errors are recorded in res. */
void kv_run_case(struct kv_runner *r, struct kv_case *c, const struct kv_run_opts *o,
                 struct kv_case_result *res);

double kv_now_ms(void);

#endif

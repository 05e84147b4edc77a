/* `kverify mutate`'s work: the stages under mutation and their mutants, and
 * the pool of worker processes that compile each mutant, drop those whose
 * optimised SPIR-V equals the original's (equivalent) and run the kernel's
 * sweep on the others, stopping at the first failing case. Workers are
 * forked from the command, each with its own device, so that a mutant that
 * never finishes (an endless loop) is stopped at its timeout and counted as
 * killed by the hang, and the pool goes on. */
#ifndef KV_MUTATE_JOB_H
#define KV_MUTATE_JOB_H

#include <limits.h>

#include "pipeline/jobs.h"
#include "spirv/mutate.h"

#define KV_MUT_FILES 16

enum kv_mut_status { KV_MUT_PENDING, KV_MUT_KILLED, KV_MUT_SURVIVED, KV_MUT_EQUIVALENT, KV_MUT_STILLBORN,
                     KV_MUT_HANG, KV_MUT_SKIPPED, KV_MUT_LOST /* the device was lost: run it again alone */ };

struct kv_mut_stage {
    int s;                             /* the kernel's stage index */
    struct kv_glsl_env env;            /* how it compiles (built-in sources or files on disk, defines) */
    int n_files;                       /* [0] the .comp, then what it includes */
    char *names[KV_MUT_FILES], *texts[KV_MUT_FILES];
    size_t lens[KV_MUT_FILES];
    size_t first, count;               /* its mutants in kv_mut_job.m */
    size_t cases;                      /* sweep cases that run the stage */
    char skip[512];                    /* why its mutants are not run, or "" */
    double orig_ms;                    /* the unmutated sweep's time */
};

struct kv_mut_result {
    int status;                        /* enum kv_mut_status */
    double ms;
    char why[400];                     /* the killing case and row, or the compile error */
};

struct kv_mut_job {
    struct kv_job job;                 /* the kernel's sweep (cases, options) */
    struct kv_mut_stage st[KV_MAX_STAGES];
    int n_st;
    struct kv_mutant *m;
    size_t n_m, cap_m;
    int *m_stage;                      /* index into st of each mutant */
    struct kv_mut_result *res;
    int workers;
    double timeout_s;                  /* 0: 10 s + 3x the unmutated sweep */
    int verbose;
    int respawns;                      /* workers started again after dying */
    /* Per worker, in memory shared with the workers: when its mutant's sweep
     * began (0 while its shader compiles), so that the timeout counts the
     * sweep alone: a driver compiling a large shader cold is no hang. */
    volatile double *sweep_at;
};

/* Read stage s's sources (o->shader[s] or the built-in), find its live
 * lines for the device's defines and make its mutants (ops: bits of
 * kv_mutate_ops). KV_EDATA for a source that cannot be read or compiled. */
enum kv_status kv_mut_stage_add(struct kv_mut_job *j, int s, const struct kv_vk_info *dev, unsigned ops);
/* Run every mutant through the worker pool (results in j->res). */
enum kv_status kv_mut_run(struct kv_mut_job *j);
void kv_mut_job_free(struct kv_mut_job *j);

#endif

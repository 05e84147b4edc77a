/* Jobs: what `kverify KERNEL`, `kverify run SUITE` and `kverify mutate`
 * share. A job is one kernel with its options and built cases; kv_run_jobs
 * runs a list of them on one device, with pipelines made once per kernel,
 * prints the table and writes the reports. */
#ifndef KV_JOBS_H
#define KV_JOBS_H

#include <regex.h>

#include "formats/source.h"
#include "pipeline/run.h"

/* Report and run-wide options. */
struct kv_outputs {
    const char *json, *junit, *markdown, *html, *baseline, *device;
    char devices[512];     /* --device given more than once: the selectors, one per line (device points here) */
    int narrow; /* --narrow: the narrow table */
    double regress_factor; /* default 2 */
    int verbose;
    double timeout_s;  /* --timeout: the longest a submission may run (kv_vk_set_timeout) */
    int timeout_given; /* else the device's default */
};

struct kopts {
    struct kv_run_opts run;
    struct kv_outputs out;
    uint64_t seed, seeds, range_lo;
    int seeds_given, seed_from_range, seed_given, sweep, no_device;
    int stress; /* --stress 1, --no-stress -1, else 0 (on with --sweep) */
    int sanitize; /* --sanitize 1, --no-sanitize -1, else 0 (on with the stress runs) */
    const char *inputs;
    int save_format_given; /* --save-format (needs --save) */
    const char *set[KV_MAX_PARAMS];
    const char *candidate[2 * KV_MAX_TENSORS];
    int n_candidates;
    const char *abi_arg[KV_MAX_STAGES];  /* --abi [STAGE=]FILE, as given */
    int n_abi;
    struct kv_abi *abi[KV_MAX_STAGES];   /* loaded (owned; run.abi points here) */
    /* The options a case's own command repeats (--shader, --abi, --inputs,
     * --candidate, --no-device, criteria, --max-groups, ...), shell-quoted;
     * not the cases' choice (--sweep, --seed(s), parameters without --inputs),
     * the reports, --device or the stress flags, which the case adds itself.
     * repro_cut: they did not fit, so no case names a command. */
    char repro[2048];
    int repro_cut;
};

struct kv_job {
    const struct kv_kernel *k;
    struct kopts o;
    struct kv_given given;
    struct kv_case *cases;
    size_t n_cases;
    int need_device;
    /* A suite entry that could not be built becomes one error row. */
    const char *label;
    enum kv_status error;
    char error_msg[512];
    /* A suite entry's argument strings, which the options point into. */
    char **argv;
    int argc;
};

/* Which cases run: those whose name matches filter (NULL: all), then every
 * shard_n-th of them starting at shard_i (1-based). */
struct kv_select {
    const regex_t *filter;
    int shard_i, shard_n;
};

void kv_kopts_init(struct kopts *o);
/* The seeds each of the job's shapes runs: --seeds, else the sweep's, else 1. */
uint64_t kv_kopts_seeds(const struct kv_kernel *k, const struct kopts *o);
/* Read the job's files and build its cases. */
enum kv_status kv_job_build(struct kv_job *j);
void kv_job_free(struct kv_job *j);
/* Run the selected cases of every job, print the table, write the reports,
 * compare with the baseline; returns the exit code. */
int kv_run_jobs(struct kv_job *jobs, size_t n, const struct kv_outputs *out, const struct kv_select *sel);

#endif

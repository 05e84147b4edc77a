/* The in-memory result of one invocation. Every writer (table, JSON, and
 * later JUnit and Markdown) is a small file that reads only this. */
#ifndef KV_REPORT_H
#define KV_REPORT_H

#include <stdio.h>

#include "core/compare.h"
#include "core/errdist.h"
#include "kernels/kernel.h"
#include "vk/vk.h"

/* A device's measured ceilings (`kverify devices --measure`, cached per
 * device by pipeline/ceilings.h): what --bench gives each stage's share of. */
struct kv_ceilings {
    double transfer_gbs;  /* vkCmdCopyBuffer: bytes read + written per second, 1e9 */
    double shader_gbs;    /* a compute-shader copy, the same way */
    double copy_gbs;      /* the larger of the two: the memory-bound ceiling */
    double copy_mib;      /* the size copied */
    double f32_gflops, f16_gflops;
    char f32_how[96], f16_how[96]; /* which built-in stage, at which shape */
    char measured[32];    /* UTC, ISO 8601 */
};

struct kv_output_result {
    char name[64];         /* "dx", or "dx.chained" */
    const char *stage;
    int chained;
    enum kv_dtype dtype;
    int ndim;
    int64_t shape[KV_MAX_DIMS];
    const char *oracle;    /* "spec" or "exact" */
    const char *source;    /* "device", "candidate" (--candidate) or "expected" (fixture) */
    int judged;            /* 0 for the exact oracle's rows beside the spec's (--oracle both) */
    int check;             /* a kernel check (qdq.roundtrip), not the output against its oracle */
    size_t total;          /* elements of the output (m.elements were checked) */
    struct kv_metrics m;
    int64_t worst_idx[KV_MAX_DIMS];
    size_t guard_bad;      /* guard words changed: writes past the end */
    size_t guard_far;      /* how far past the end the furthest of them lies, in words */
    size_t nondet;         /* elements that differed between --repeat runs */
    int pass;
    struct kv_error_dist *dist; /* histograms, pooled map, worst elements (malloc'd; NULL: none) */
    int not_judged;        /* a place holder: the output was not checked (remark says why) */
    void *data;            /* the device's output (malloc'd), kept with several devices for their agreement */
    char remark[320];      /* why not judged, or how it was judged (stage isolation), or "" */
    const char *sanitizer; /* a sanitizer row: "memcheck", "racecheck" or "initcheck" (total: its records; remark: the first), or NULL */
};

enum kv_case_status { KV_CASE_PASS, KV_CASE_FAIL, KV_CASE_ERROR, KV_CASE_SKIP };

#define KV_BENCH_STATS 12

struct kv_case_result {
    char name[256];
    int device;            /* position in kv_report.devices (several devices), else 0 */
    size_t index;          /* position in the whole (unsharded, filtered) run: merge orders by it */
    const char *kernel;
    uint64_t seed;
    int n_params;
    char pname[KV_MAX_PARAMS][32];
    char pval[KV_MAX_PARAMS][64];
    int pnumeric[KV_MAX_PARAMS];
    enum kv_case_status status;
    enum kv_status error_code;
    char error[512];
    char stress[64];       /* the stress runs made, "groups=1,groups=3+reversed,reversed,sanitized" (pipeline/runner.h), or "" */
    char sanitize[512];    /* what the sanitized run could not check, one line per stage ("; "), or "" */
    int n_outputs;
    struct kv_output_result out[4 * KV_MAX_TENSORS + KV_MAX_CHECKS];
    struct {
        double inputs, upload, device, download, oracle, compare;
        double buffers, teardown; /* the device buffers' creation; freeing the case */
        double chained;           /* the chained reruns on the device (not in device) */
    } ms;
    int early_buffers;     /* its device buffers were made while its inputs were (--verbose) */
    int loops_checked;     /* failed on a device that cuts loops short, and its run again counted no loop cut (pipeline/loops.h) */
    char inputs[1024];     /* --inputs path, or "" when generated */
    char command[2048];    /* the kernel command that reproduces this case's verdict, or "" */
    char note[256];        /* the input generator's remark, or "" */
    char saved[4200];      /* --save folder of this case, or "" */
    int n_stages;
    const char *stage_name[KV_MAX_STAGES];
    double stage_ms[KV_MAX_STAGES];     /* median device time per stage */
    double stage_min_ms[KV_MAX_STAGES]; /* and the fastest of the --repeat runs */
    int64_t windows[KV_MAX_STAGES];     /* dispatches per stage: > 1 where it ran in windows (pipeline/binding.h) */
    int addressed[KV_MAX_STAGES];       /* 1 where the stage read its tensors through device addresses (pipeline/addr.h) */
    int bench_runs;                     /* --bench N, or 0 */
    double bench_warmup_s;              /* --bench-warmup S */
    struct kv_bench_stage {
        int ran;
        double min_ms, median_ms;
        double bytes;  /* the fewest bytes the stage must move: each bound tensor once */
        double flops;  /* 0 when the kernel does not count them */
        /* Shares of the device's cached ceilings (kverify devices --measure),
         * percent; 0 when none are cached. */
        double pct_copy, pct_matmul;
        /* The driver's compile statistics of the stage's pipeline (register
         * count, shared memory, ...), where the device reports them. */
        int n_stats;
        struct kv_vk_stat stats[KV_BENCH_STATS];
    } bench[KV_MAX_STAGES];
};

/* A benched stage's rates at its fastest time: GB/s of its fewest bytes and
 * GFLOP/s; 0 without a time. */
static inline double kv_bench_gbs(const struct kv_bench_stage *b)
{
    return b->min_ms > 0 ? b->bytes / b->min_ms / 1e6 : 0;
}
static inline double kv_bench_gflops(const struct kv_bench_stage *b)
{
    return b->min_ms > 0 ? b->flops / b->min_ms / 1e6 : 0;
}

/* Two devices' outputs of one case side by side (--device all). */
struct kv_agreement {
    char case_name[256], output[64];
    uint32_t device_a, device_b; /* kv_vk_info.index of each */
    size_t elements, equal;      /* bitwise equal elements */
    double max_ulp;              /* the largest distance in ULP of the output's dtype (NaN pairs: 0; one NaN: inf) */
};

#define KV_MAX_DEVICES 8

struct kv_report {
    int has_device;
    struct kv_vk_info device;
    int n_devices;               /* with --device all or repeated: every device run, in order */
    struct kv_vk_info devices[KV_MAX_DEVICES];
    struct kv_agreement *agree;
    size_t n_agree;
    int has_ceilings;
    struct kv_ceilings ceilings;
    struct kv_case_result *cases;
    size_t n, cap;
};

/* The JSON report's schema: 2 adds each output's "distribution" and the
 * command line; readers take 1 and 2. */
#define KV_REPORT_SCHEMA 2
/* The command line of this process, quoted for a shell, for the reports. */
void kv_report_set_command(int argc, char **argv);
const char *kv_report_command(void);

/* Append a zeroed case; NULL when out of memory. */
struct kv_case_result *kv_report_add(struct kv_report *r);
void kv_report_free(struct kv_report *r);
/* Free what a case's rows own and zero it, for reuse. */
void kv_case_result_clear(struct kv_case_result *c);
void kv_report_counts(const struct kv_report *r, size_t *passed, size_t *failed,
                      size_t *errors, size_t *skipped);
/* The process exit code for this report (design.md): an error's own code,
 * else 1 for any failure, 77 when no case was judged (every case skipped, or
 * none selected), else 0. */
int kv_report_exit_code(const struct kv_report *r);
/* Why no case was judged (exit 77): the first skipped case's reason. Static or r's. */
const char *kv_report_skip_reason(const struct kv_report *r);
const char *kv_case_status_str(enum kv_case_status s);
/* Append " arg" to buf (size bytes, NUL-terminated), quoted for a POSIX shell
 * where it needs it; returns 0 when it does not fit (buf then unchanged). */
int kv_shell_append(char *buf, size_t size, const char *arg);

/* "[i,j] device vs oracle" of an output's worst element, or "-". */
void kv_output_worst_str(const struct kv_output_result *o, char *buf, size_t size);

/* Several devices (--device all): each case's outputs on the first device
 * against the others' (rows keep their data); the table's block of them. */
enum kv_status kv_report_agreement(struct kv_report *r);
void kv_table_agreement(FILE *f, const struct kv_report *r);

/* Terminal table: a header, then rows as cases finish. Narrow: output,
 * max ULP, bound ratio, NaN/Inf, the worst element and the verdict only
 * (about 90 columns instead of 150). */
void kv_table_set_narrow(int on);
void kv_table_header(FILE *f);
void kv_table_case(FILE *f, const struct kv_case_result *c);
void kv_table_summary(FILE *f, const struct kv_report *r);

/* JSON report (schema 1), written whole or not at all; "-" is stdout. */
enum kv_status kv_report_write_json(const struct kv_report *r, const char *path);

/* The JSON report as a cJSON tree (schema 1), the summary recomputed from a
 * tree's cases (merge uses it too, so a merged report equals the unsharded
 * one), and printing a tree atomically. */
struct cJSON;
struct cJSON *kv_report_json(const struct kv_report *r);
void kv_json_set_summary(struct cJSON *root);
enum kv_status kv_json_write(const struct cJSON *root, const char *path);

/* JUnit XML (one testcase per judged output row) and Markdown (the table),
 * written whole or not at all; "-" is stdout. */
enum kv_status kv_report_write_junit(const struct kv_report *r, const char *path);
enum kv_status kv_report_write_markdown(const struct kv_report *r, const char *path);

#endif

/* Running jobs: one device, pipelines made once per kernel and stage
 * options, a table row per case as it finishes, the reports at the end. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "pipeline/jobs.h"

#include "core/clock.h"
#include "core/threads.h"
#include "pipeline/ceilings.h"
#include "pipeline/hostmem.h"
#include "pipeline/prepare.h"
#include "reports/html.h"
#include "reports/regress.h"

/* The runner of job j, reusing an earlier job's when the kernel and the
 * stage options are the same. */
static int same_stage_opts(const struct kv_run_opts *a, const struct kv_run_opts *b)
{
    if (a->no_subgroup != b->no_subgroup || a->no_8bit != b->no_8bit || a->stress != b->stress ||
        a->sanitize != b->sanitize)
        return 0;
    for (int s = 0; s < KV_MAX_STAGES; s++)
        if ((a->shader[s] == NULL) != (b->shader[s] == NULL) || (a->shader[s] && strcmp(a->shader[s], b->shader[s])))
            return 0;
    for (int s = 0; s < KV_MAX_STAGES; s++)
        if ((a->abi[s] == NULL) != (b->abi[s] == NULL) || (a->abi[s] && strcmp(a->abi[s]->path, b->abi[s]->path)))
            return 0;
    return 1;
}

static void error_row(struct kv_case_result *res, const struct kv_job *j, const char *name, enum kv_status code,
                      const char *msg)
{
    snprintf(res->name, sizeof res->name, "%s", name);
    res->kernel = j->k->name;
    res->status = code == KV_ENODEV ? KV_CASE_SKIP : KV_CASE_ERROR;
    res->error_code = code;
    snprintf(res->error, sizeof res->error, "%s", msg);
}

/* Whether the next case named `name` runs; *seen counts the cases the filter
 * keeps (their position in the unsharded run, stored as *index). */
static int selected(const struct kv_select *sel, const char *name, size_t *seen, size_t *index)
{
    if (sel->filter && regexec(sel->filter, name, 0, NULL, 0) != 0) return 0;
    *index = (*seen)++;
    return (int)(*index % (size_t)sel->shard_n) + 1 == sel->shard_i;
}

/* --bench rates as shares of the device's measured ceilings. */
static void bench_shares(struct kv_case_result *res, const struct kv_kernel *k, const struct kv_ceilings *c)
{
    for (int s = 0; s < k->n_stages && res->bench_runs; s++) {
        struct kv_bench_stage *b = &res->bench[s];
        if (!b->ran || b->min_ms <= 0) continue;
        double matmul = k->stages[s].flops_f16 ? c->f16_gflops : c->f32_gflops;
        b->pct_copy = c->copy_gbs > 0 ? 100.0 * kv_bench_gbs(b) / c->copy_gbs : 0;
        b->pct_matmul = matmul > 0 ? 100.0 * kv_bench_gflops(b) / matmul : 0;
    }
}

static const char *case_name(const struct kv_job *j, size_t i)
{
    return j->error ? j->label : j->cases[i].name;
}

/* The state of kv_run_jobs: the device, the report, and per job the runner
 * it uses (its own or an earlier job's), made on its first selected case. */
struct jobs_run {
    struct kv_job *jobs;
    size_t n;
    const struct kv_outputs *out;
    const struct kv_select *sel;
    struct kv_vk_device *dev;
    int n_dev, dev_pos;       /* several devices: how many, and the one running */
    struct kv_report report;
    struct kv_runner *runners;
    int *runner_of, *ready;
    enum kv_status *runner_err;
    char (*runner_msg)[512];
    FILE *tab;                /* the table's stream */
    size_t total, done;       /* selected cases, and those run */
    double t0, progress_after_ms; /* the progress line: shown on a terminal once a run takes this long */
    int progress, progress_shown;
    double sum[9], pipeline_ms, open_ms; /* --verbose's times */
    size_t early;                        /* cases whose device buffers were made beside their inputs */
    int oracle_beside;                   /* the prepared case's oracle made while the device opened */
    struct kv_case *pre_case; /* the case prepared while the device opened, until it runs */
    struct kv_case_prep pre;
    pthread_t opener;   /* the thread that opened the device, joined as the device closes */
    int opener_running; /* it signalled its end, and may still be exiting */
    int released;       /* devices released while their last case was judged (release_after_last) */
    struct kv_case_result *cur; /* the case running, its job and name (on_hang) */
    const struct kv_job *cur_job;
    const char *cur_name;
};

/* A row's device; on several devices, the same case is named by its device. */
static void by_device(const struct jobs_run *x, struct kv_case_result *res)
{
    res->device = x->dev_pos;
    if (x->n_dev > 1 && x->dev) {
        size_t used = strlen(res->name);
        snprintf(res->name + used, sizeof res->name - used, "@%u", x->dev->info.index);
    }
}

/* Whether a selected case needs the device. */
static int need_device(const struct jobs_run *x)
{
    size_t seen = 0, index;
    int need = 0;
    for (size_t j = 0; j < x->n; j++)
        for (size_t i = 0; i < (x->jobs[j].error ? 1 : x->jobs[j].n_cases); i++)
            if (selected(x->sel, case_name(&x->jobs[j], i), &seen, &index) && !x->jobs[j].error)
                need |= x->jobs[j].need_device;
    return need;
}

/* The device just opened: the report's device, and a single job's cases
 * checked against its limits (prepared: the case whose inputs are made). */
static enum kv_status device_opened(struct jobs_run *x)
{
    enum kv_status st = KV_OK;
    if (!x->report.has_device) {
        x->report.has_device = 1;
        x->report.device = x->dev->info;
        x->report.has_ceilings = kv_ceilings_load(&x->dev->info, &x->report.ceilings);
    }
    if (x->n_dev > 1) x->report.devices[x->report.n_devices++] = x->dev->info;
    /* One job (a kernel command): a case beyond the device's limits is a
     * usage error before anything runs; in a suite it is that case's error. */
    for (size_t i = 0; x->n == 1 && !x->jobs[0].error && i < x->jobs[0].n_cases; i++)
        KV_TRY(kv_case_check(&x->jobs[0].cases[i], &x->dev->info, &x->jobs[0].o.run,
                            &x->jobs[0].cases[i] != x->pre_case));
cleanup:
    return st;
}

/* The runner of job j: an earlier job's when the kernel and the stage
 * options are the same, else its own, made now. */
static int job_runner(struct jobs_run *x, size_t j)
{
    struct kv_job *jb = &x->jobs[j];
    if (x->ready[j]) return x->runner_of[j];
    x->runner_of[j] = (int)j;
    for (size_t p = 0; p < j; p++)
        if (x->ready[p] && x->jobs[p].k == jb->k && x->jobs[p].need_device == jb->need_device &&
            !x->runner_err[x->runner_of[p]] && same_stage_opts(&x->jobs[p].o.run, &jb->o.run)) {
            x->runner_of[j] = x->runner_of[p];
            break;
        }
    if (x->runner_of[j] == (int)j) {
        kv_error_clear();
        x->runner_err[j] = kv_runner_init(&x->runners[j], jb->need_device ? x->dev : NULL, jb->k, &jb->o.run);
        if (x->runner_err[j]) snprintf(x->runner_msg[j], sizeof x->runner_msg[j], "%s", kv_error_msg());
        x->pipeline_ms += x->runners[j].pipeline_ms;
    }
    x->ready[j] = 1;
    return x->runner_of[j];
}

/* The progress line on a terminal: cases done of all, elapsed, the case now
 * running; cleared before each table row, so the table stays clean. */
static void progress_clear(struct jobs_run *x)
{
    if (x->progress_shown) fputs("\r\033[K", stderr), fflush(stderr);
    x->progress_shown = 0;
}

static void progress_show(struct jobs_run *x, const char *name)
{
    double el = kv_now_ms() - x->t0;
    if (!x->progress || el < x->progress_after_ms) return;
    fprintf(stderr, "\r\033[K[%zu/%zu] %.1f s  %.60s", x->done + 1, x->total, el / 1e3, name);
    fflush(stderr);
    x->progress_shown = 1;
}

/* The kernel command that reproduces res's verdict: its parameters (unless
 * --inputs names them), its seed, the options that shaped the verdict
 * (kopts.repro), the stress runs and the device. "" where it cannot be
 * written whole: better none than one that reproduces something else. */
static void case_command(const struct jobs_run *x, const struct kv_job *jb, struct kv_case_result *res)
{
    char *b = res->command, seed[32];
    const size_t size = sizeof res->command;
    b[0] = '\0';
    if (jb->o.repro_cut || !res->n_params) return;
    int ok = kv_shell_append(b, size, "kverify");
    if (ok && jb->k->origin) ok = kv_shell_append(b, size, "--kernels") && kv_shell_append(b, size, jb->k->origin);
    ok = ok && kv_shell_append(b, size, jb->k->name);
    for (int i = 0; ok && !jb->o.inputs && i < res->n_params; i++) {
        char flag[40];
        snprintf(flag, sizeof flag, "--%s", res->pname[i]);
        ok = kv_shell_append(b, size, flag) && kv_shell_append(b, size, res->pval[i]);
    }
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)res->seed);
    ok = ok && kv_shell_append(b, size, "--seed") && kv_shell_append(b, size, seed);
    if (ok && jb->o.repro[0]) { /* already quoted */
        size_t o = strlen(b), n = strlen(jb->o.repro);
        ok = o + 1 + n < size;
        if (ok) b[o] = ' ', memcpy(b + o + 1, jb->o.repro, n + 1);
    }
    if (ok && jb->o.run.stress) ok = kv_shell_append(b, size, "--stress");
    if (ok && x->dev && (x->n_dev > 1 || x->out->device)) {
        char index[16];
        snprintf(index, sizeof index, "%u", x->dev->info.index);
        ok = kv_shell_append(b, size, "--device") && kv_shell_append(b, size, index);
    }
    if (!ok) b[0] = '\0';
}

static void release_after_last(void *ctx);

/* Case i of job j into res, then its table row; *stop: --fail-fast met a
 * failing case. */
static enum kv_status run_one(struct jobs_run *x, size_t j, size_t i, struct kv_case_result *res, int *stop)
{
    struct kv_job *jb = &x->jobs[j];
    if (jb->error) {
        error_row(res, jb, jb->label, jb->error, jb->error_msg);
    } else {
        int r = job_runner(x, j);
        if (x->runner_err[r] && x->n == 1) /* a single job's bad shader is the command's error */
            return kv_error(x->runner_err[r], "%s", x->runner_msg[r]);
        /* the pass's last case releases the device while it is judged */
        const int last = x->n_dev > 0 && x->done + 1 == (size_t)(x->dev_pos + 1) * (x->total / (size_t)x->n_dev);
        jb->o.run.device_done = last && x->dev ? release_after_last : NULL;
        jb->o.run.device_done_ctx = x;
        if (x->runner_err[r]) error_row(res, jb, case_name(jb, i), x->runner_err[r], x->runner_msg[r]);
        else kv_run_case(&x->runners[r], &jb->cases[i], &jb->o.run, x->pre_case == &jb->cases[i] ? &x->pre : NULL, res);
        jb->o.run.device_done = NULL;
        if (x->pre_case == &jb->cases[i]) x->pre_case = NULL; /* freed with the run */
        if (x->report.has_ceilings) bench_shares(res, jb->k, &x->report.ceilings);
        case_command(x, jb, res);
    }
    progress_clear(x);
    by_device(x, res);
    kv_table_case(x->tab, res);
    *stop = jb->o.run.fail_fast && (res->status == KV_CASE_FAIL || res->status == KV_CASE_ERROR);
    fflush(x->tab);
    double parts[9] = {res->ms.inputs, res->ms.oracle, res->ms.upload, res->ms.device,
                       res->ms.download, res->ms.compare, res->ms.buffers, res->ms.teardown, res->ms.chained};
    for (int q = 0; q < 9; q++) x->sum[q] += parts[q];
    x->early += (size_t)res->early_buffers;
    return KV_OK;
}

/* Every selected case in order, a table row each. */
static enum kv_status run_all(struct jobs_run *x)
{
    enum kv_status st = KV_OK;
    size_t seen = 0, index;
    int stopped = 0;
    for (size_t j = 0; j < x->n && !stopped; j++)
        for (size_t i = 0; i < (x->jobs[j].error ? 1 : x->jobs[j].n_cases) && !stopped; i++) {
            if (!selected(x->sel, case_name(&x->jobs[j], i), &seen, &index)) continue;
            struct kv_case_result *res = kv_report_add(&x->report);
            KV_CHECK(res, KV_EDEVICE, "out of host memory for the report");
            res->index = index;
            progress_show(x, case_name(&x->jobs[j], i));
            x->cur = res, x->cur_job = &x->jobs[j], x->cur_name = case_name(&x->jobs[j], i);
            KV_TRY(run_one(x, j, i, res, &stopped));
            x->cur = NULL;
            x->done++;
        }
cleanup:
    return st;
}

/* A terminal narrower than the wide table's 150 columns. */
static int narrow_terminal(FILE *f)
{
    struct winsize ws;
    return isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_col < 150;
}

static enum kv_status write_html(struct jobs_run *x)
{
    cJSON *root = kv_report_json(&x->report);
    if (!root) return kv_error(KV_EDATA, "%s: out of memory building the report", x->out->html);
    enum kv_status st = kv_html_write(root, x->out->html);
    cJSON_Delete(root);
    return st;
}

/* The reports asked for (--json, --junit, --markdown, --html). */
static enum kv_status write_reports(struct jobs_run *x)
{
    enum kv_status st = KV_OK;
    const struct kv_outputs *out = x->out;
    if (out->json) KV_TRY(kv_report_write_json(&x->report, out->json));
    if (out->junit) KV_TRY(kv_report_write_junit(&x->report, out->junit));
    if (out->markdown) KV_TRY(kv_report_write_markdown(&x->report, out->markdown));
    if (out->html) KV_TRY(write_html(x));
cleanup:
    return st;
}

/* A submission the device has not finished within --timeout, after which
 * the process ends (kv_vk_set_hang_hook): a case in flight becomes an error
 * row, then the table's summary and the reports of the cases so far are
 * written, and its name is returned. None (the device opening): NULL, and
 * nothing is written. */
static const char *on_hang(double s, void *ctx)
{
    struct jobs_run *x = ctx;
    if (!x->cur) return NULL;
    char msg[256];
    snprintf(msg, sizeof msg, "the device has not finished a submission after %g s (--timeout); the run ended here, "
             "and the cases after it were not run", s);
    error_row(x->cur, x->cur_job, x->cur_name, KV_EDEVICE, msg);
    by_device(x, x->cur);
    /* its device time: the submission's, at least the time waited for it */
    if (x->cur->ms.device < s * 1e3) x->cur->ms.device = s * 1e3;
    progress_clear(x);
    kv_table_case(x->tab, x->cur);
    kv_table_summary(x->tab, &x->report);
    fflush(x->tab);
    if (write_reports(x)) fprintf(stderr, "kverify: %s\n", kv_error_msg());
    return x->cur->name;
}

/* The regressions against --baseline, counted. */
static enum kv_status against_baseline(struct jobs_run *x, const cJSON *base, size_t *regress)
{
    cJSON *cur = kv_report_json(&x->report);
    if (!cur) return kv_error(KV_EDATA, "out of memory comparing with the baseline");
    *regress = kv_regressions(base, cur, x->out->regress_factor, x->tab);
    cJSON_Delete(cur);
    return KV_OK;
}

/* The runners made on this device, and the device's Vulkan objects (its
 * info stays, for the reports): after its last case, or as it closes. */
static void release_device(struct jobs_run *x)
{
    for (size_t j = 0; j < x->n; j++) {
        if (x->runners && x->runner_of && x->ready && x->ready[j] && x->runner_of[j] == (int)j)
            kv_runner_free(&x->runners[j]);
        if (x->ready) x->ready[j] = 0;
        if (x->runner_err) x->runner_err[j] = KV_OK;
    }
    if (x->opener_running) pthread_join(x->opener, NULL), x->opener_running = 0;
    kv_vk_release(x->dev);
}

/* The pass's last case is judged while this runs (kv_run_opts' device_done,
 * on kv_plan_retire's thread): the NVIDIA driver takes 40-45 ms to destroy
 * a device and its instance. */
static void release_after_last(void *ctx)
{
    struct jobs_run *x = ctx;
    release_device(x);
    x->released++; /* read once the case's retire thread is joined */
}

/* The runners made on this device, and the device. */
static void free_runners(struct jobs_run *x)
{
    release_device(x); /* nothing left to do where the last case's retire did it */
    kv_vk_close(x->dev);
    x->dev = NULL;
}

/* The first selected case, where it can be prepared before the device is
 * open: a case of a job without --abi stages (their interface comes with
 * the runner), that needs the device, and whose inputs and outputs fit the
 * host's memory on any device (the check that would refuse it in one line
 * runs once the device is open, and must not meet a process killed first). */
static struct kv_case *case_to_prepare(const struct jobs_run *x, size_t *job)
{
    size_t seen = 0, index;
    if (kv_overlap_off()) return NULL;
    for (size_t j = 0; j < x->n; j++)
        for (size_t i = 0; i < (x->jobs[j].error ? 1 : x->jobs[j].n_cases); i++) {
            if (!selected(x->sel, case_name(&x->jobs[j], i), &seen, &index)) continue;
            struct kv_job *jb = &x->jobs[j];
            int abi = 0;
            for (int s = 0; s < KV_MAX_STAGES; s++) abi |= jb->o.run.abi[s] != NULL;
            if (jb->error || !jb->need_device || abi) return NULL;
            /* its shapes made again (a run on an earlier device freed them) */
            if (kv_case_check(&jb->cases[i], NULL, NULL, 0) != KV_OK) return NULL; /* its error comes when it runs */
            const struct kv_vk_info cpu = {.type = "cpu"};
            uint64_t avail = kv_host_available();
            if (avail && kv_case_host_floor(&jb->cases[i], &cpu, &jb->o.run) > avail) return NULL;
            *job = j;
            return &x->jobs[j].cases[i];
        }
    return NULL;
}

/* Opening the device, the first case's pipelines and its device buffers,
 * on a thread beside the one that makes that case's inputs. */
struct opener {
    struct jobs_run *x;
    const char *selector;
    size_t job;
    struct kv_case *shape; /* a copy of the case: the main thread allocates its tensors meanwhile */
    struct kv_early_plan *early;
    enum kv_status st;
    char msg[1024];
    double ms;
    atomic_int done; /* set as the thread ends, under opened_mu */
};

/* The opener's end, signalled: the thread is joined only as the device
 * closes (free_runners), since its exit can take 10 ms or more (measured on
 * an NVIDIA driver), which the cases need not wait for. Static: the thread
 * touches them after the opener's frame may be gone, and there is one
 * opener at a time. */
static pthread_mutex_t opened_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t opened_cv = PTHREAD_COND_INITIALIZER;

static void *open_thread(void *arg)
{
    struct opener *op = arg;
    double t0 = kv_now_ms();
    op->st = kv_vk_open(op->selector, &op->x->dev);
    op->ms = kv_now_ms() - t0;
    if (op->st) {
        snprintf(op->msg, sizeof op->msg, "%s", kv_error_msg());
    } else {
        int r = job_runner(op->x, op->job); /* its error is the case's, as when made in run_one */
        if (!op->x->runner_err[r] && op->shape) op->early = kv_early_plan(&op->x->runners[r], op->shape);
    }
    pthread_mutex_lock(&opened_mu);
    atomic_store(&op->done, 1);
    pthread_cond_signal(&opened_cv);
    pthread_mutex_unlock(&opened_mu); /* op is not touched past here */
    return NULL;
}

/* Open the device when a selected case needs one; the first case's inputs
 * made meanwhile where it can be prepared (case_to_prepare). */
static enum kv_status open_device(struct jobs_run *x, const char *selector)
{
    if (!need_device(x)) return KV_OK;
    size_t j = 0;
    struct kv_case *c = case_to_prepare(x, &j);
    struct opener op = {x, selector, j, c ? malloc(sizeof *c) : NULL, NULL, KV_OK, "", 0, 0};
    if (op.shape) *op.shape = *c;
    pthread_t th;
    if (c && pthread_create(&th, NULL, open_thread, &op) == 0) {
        x->pre_case = c;
        kv_threads_beside(1); /* a core to the opener */
        kv_case_prepare(c, &x->jobs[j].o.run, &x->pre);
        /* the device still opening: the case's oracle meanwhile (the tests force it) */
        const char *force = getenv("KVERIFY_TEST_ORACLE_BESIDE");
        if (!atomic_load(&op.done) || (force && *force == '1')) kv_case_prepare_oracle(c, &x->jobs[j].o.run, &x->pre);
        x->oracle_beside = x->pre.oracle_made;
        pthread_mutex_lock(&opened_mu);
        while (!atomic_load(&op.done)) pthread_cond_wait(&opened_cv, &opened_mu);
        pthread_mutex_unlock(&opened_mu);
        kv_threads_beside(0);
        x->opener = th, x->opener_running = 1;
        free(op.shape);
        x->pre.early = op.early;
        x->open_ms += op.ms;
        if (op.st) return kv_error(op.st, "%s", op.msg);
    } else {
        free(op.shape);
        double t0 = kv_now_ms();
        KV_TRY_RET(kv_vk_open(selector, &x->dev));
        x->open_ms += kv_now_ms() - t0;
    }
    return device_opened(x);
}

/* Every selected case on one device: its header line and rows. */
static enum kv_status device_pass(struct jobs_run *x, const char *selector)
{
    enum kv_status st = KV_OK;
    KV_TRY(open_device(x, selector));
    if (x->dev)
        fprintf(x->tab, "device %u: %s (%s, %s)\n", x->dev->info.index, x->dev->info.name, x->dev->info.type,
                x->dev->info.driver);
    else if (x->total) /* else no case was selected: none is judged */
        fprintf(x->tab, "no device: the outputs with a candidate are judged\n");
    kv_table_header(x->tab);
    KV_TRY(run_all(x));
cleanup:
    if (x->pre_case) kv_case_free(x->pre_case); /* prepared, never run (an error first) */
    x->pre_case = NULL;
    kv_early_plan_free(x->dev, x->pre.early);
    x->pre.early = NULL;
    free_runners(x);
    return st;
}

/* The devices to run on: "all" (every usable one), several selectors given
 * one per line (--device repeated), or one (NULL: the default). */
static enum kv_status device_list(const char *device, const char *sel[KV_MAX_DEVICES], int *n)
{
    static char index[KV_MAX_DEVICES][12];
    static char lines[512];
    *n = 1;
    sel[0] = device;
    if (device && !strcmp(device, "all")) {
        struct kv_vk_info *infos = NULL;
        uint32_t count = 0;
        KV_TRY_RET(kv_vk_list(&infos, &count));
        *n = 0;
        for (uint32_t i = 0; i < count && *n < KV_MAX_DEVICES; i++) {
            snprintf(index[*n], sizeof index[*n], "%u", infos[i].index);
            sel[*n] = index[*n];
            (*n)++;
        }
        free(infos);
        if (*n == 0) return kv_error(KV_ENODEV, "--device all: no usable Vulkan device");
    } else if (device && strchr(device, '\n')) {
        snprintf(lines, sizeof lines, "%s", device);
        *n = 0;
        for (char *save = NULL, *t = strtok_r(lines, "\n", &save); t && *n < KV_MAX_DEVICES; t = strtok_r(NULL, "\n", &save))
            sel[(*n)++] = t;
    }
    return KV_OK;
}

int kv_run_jobs(struct kv_job *jobs, size_t n, const struct kv_outputs *out, const struct kv_select *sel)
{
    enum kv_status st = KV_OK;
    double t_start = kv_now_ms();
    struct jobs_run x = {.jobs = jobs, .n = n, .out = out, .sel = sel, .tab = stdout};
    size_t m = n ? n : 1, regress = 0;
    x.runners = calloc(m, sizeof *x.runners);
    x.runner_of = calloc(m, sizeof *x.runner_of), x.ready = calloc(m, sizeof *x.ready);
    x.runner_err = calloc(m, sizeof *x.runner_err);
    x.runner_msg = calloc(m, sizeof *x.runner_msg);
    cJSON *base = NULL;
    const char *selectors[KV_MAX_DEVICES];
    KV_CHECK(x.runners && x.runner_of && x.ready && x.runner_err && x.runner_msg, KV_EDEVICE, "out of host memory");
    kv_vk_set_timeout(out->timeout_given ? out->timeout_s : -1);
    kv_vk_set_hang_hook(on_hang, &x);
    if (out->baseline) KV_TRY(kv_report_read(out->baseline, &base));
    KV_TRY(device_list(out->device, selectors, &x.n_dev));
    for (int j = 0; j < (int)n; j++) jobs[j].o.run.keep_outputs = x.n_dev > 1;
    int stdout_report = (out->json && !strcmp(out->json, "-")) || (out->junit && !strcmp(out->junit, "-")) ||
                        (out->markdown && !strcmp(out->markdown, "-"));
    x.tab = stdout_report ? stderr : stdout; /* a report on stdout owns it */
    kv_table_set_narrow(out->narrow || narrow_terminal(x.tab));
    for (size_t j = 0, seen = 0, index; j < n; j++)
        for (size_t i = 0; i < (jobs[j].error ? 1 : jobs[j].n_cases); i++)
            x.total += (size_t)selected(sel, case_name(&jobs[j], i), &seen, &index);
    x.total *= (size_t)x.n_dev;
    /* KVERIFY_PROGRESS_AFTER_MS: when the line starts (tests lower it). */
    const char *after = getenv("KVERIFY_PROGRESS_AFTER_MS");
    x.progress = isatty(STDERR_FILENO);
    x.progress_after_ms = after ? atof(after) : 2000;
    x.t0 = t_start;
    for (x.dev_pos = 0; x.dev_pos < x.n_dev; x.dev_pos++) {
        st = device_pass(&x, selectors[x.dev_pos]);
        progress_clear(&x);
        KV_TRY(st);
    }
    if (x.n_dev > 1) {
        KV_TRY(kv_report_agreement(&x.report));
        kv_table_agreement(x.tab, &x.report);
    }
    kv_table_summary(x.tab, &x.report);
    fflush(x.tab);
    char early[64] = "";
    if (x.early)
        snprintf(early, sizeof early, " (%zu %s inputs)", x.early,
                 x.early == 1 ? "case's made beside its" : "cases' made beside their");
    if (out->verbose)
        fprintf(stderr,
                "kverify: time: start-up %.1f ms, pipelines %.1f ms, inputs %.1f ms, oracle %.1f ms%s, buffers %.1f ms%s, "
                "upload %.2f ms, device %.2f ms, chained reruns %.2f ms, download %.2f ms, compare %.1f ms, teardown %.1f ms%s, "
                "total %.1f ms\n",
                x.open_ms, x.pipeline_ms, x.sum[0], x.sum[1],
                x.oracle_beside ? " (the first case's made while the device opened)" : "", x.sum[6],
                early, x.sum[2], x.sum[3], x.sum[8],
                x.sum[4], x.sum[5], x.sum[7], x.released ? " (the device released while the last case was judged)" : "",
                kv_now_ms() - t_start);
    kv_vk_set_hang_hook(NULL, NULL);
    KV_TRY(write_reports(&x));
    if (base) KV_TRY(against_baseline(&x, base, &regress));
cleanup:
    kv_vk_set_hang_hook(NULL, NULL);
    free_runners(&x);
    if (!st && kv_vk_validation_errors())
        st = kv_error(KV_EDEVICE, "the validation layer reported %u errors", kv_vk_validation_errors());
    int code = st ? (int)st : kv_report_exit_code(&x.report);
    if (!st && regress && code == 0) code = 1;
    if (st) fprintf(stderr, "kverify: %s\n", kv_error_msg());
    else if (code == KV_ENODEV) fprintf(stderr, "kverify: nothing was judged: %s\n", kv_report_skip_reason(&x.report));
    kv_report_free(&x.report);
    cJSON_Delete(base);
    free(x.runners), free(x.runner_of), free(x.ready), free(x.runner_err), free(x.runner_msg);
    return code;
}

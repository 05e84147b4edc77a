#include "pipeline/mutate_job.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <omp.h>
#include <unistd.h>

#include "core/clock.h"
#include "pipeline/plan.h"
#include "pipeline/sanitize.h"

/* The files a source includes, in the order met, resolved as spirv/glsl.c does. */
static enum kv_status add_file(struct kv_mut_stage *ms, const char *name)
{
    enum kv_status st = KV_OK;
    for (int i = 0; i < ms->n_files; i++)
        if (!strcmp(ms->names[i], name)) return KV_OK;
    KV_CHECK(ms->n_files < KV_MUT_FILES, KV_EDATA, "%s: more than %d included files", name, KV_MUT_FILES);
    int f = ms->n_files++;
    ms->names[f] = strdup(name);
    KV_CHECK(ms->names[f], KV_EDATA, "out of memory");
    KV_TRY(kv_glsl_read(&ms->env, name, &ms->texts[f], &ms->lens[f]));
    for (const char *p = ms->texts[f]; (p = strstr(p, "#include")) != NULL; p += 8) {
        const char *q = strchr(p, '"'), *nl = strchr(p, '\n');
        if (!q || (nl && q > nl)) continue;
        const char *q2 = strchr(q + 1, '"');
        if (!q2) continue;
        char req[PATH_MAX], inc[PATH_MAX];
        snprintf(req, sizeof req, "%.*s", (int)(q2 - q - 1), q + 1);
        kv_glsl_include_path(name, req, inc, sizeof inc);
        KV_TRY(add_file(ms, inc));
    }
cleanup:
    return st;
}

enum kv_status kv_mut_stage_add(struct kv_mut_job *j, int s, const struct kv_vk_info *dev, unsigned ops)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = j->job.k;
    const struct kv_stage_def *sd = &k->stages[s];
    const struct kv_run_opts *o = &j->job.o.run;
    struct kv_mut_stage *ms = &j->st[j->n_st++];
    char *pre = NULL;
    unsigned char *live[KV_MUT_FILES] = {0};
    int n_lines[KV_MUT_FILES] = {0};
    memset(ms, 0, sizeof *ms);
    ms->s = s;
    ms->first = j->n_m;
    ms->env.defines = kv_stage_defines(dev, sd, o);
    char name[PATH_MAX];
    if (o->shader[s]) {
        size_t n = strlen(o->shader[s]);
        KV_CHECK(!(n > 4 && !strcmp(o->shader[s] + n - 4, ".spv")), KV_EDATA,
                 "%s: a SPIR-V module has no source to mutate: give the stage's .comp", o->shader[s]);
        snprintf(name, sizeof name, "%s", o->shader[s]);
    } else {
        ms->env.builtin = !sd->source_disk;
        kv_stage_source(k, s, name, sizeof name);
    }
    KV_TRY(add_file(ms, name));
    { /* the original must compile: its errors are the user's to see first */
        uint32_t *words = NULL;
        size_t bytes = 0;
        st = kv_glsl_compile(&ms->env, name, &words, &bytes);
        free(words);
        if (st) goto cleanup;
    }
    size_t pre_len = 0;
    struct kv_glsl_env penv = ms->env;
    penv.no_optimize = 1;
    KV_TRY(kv_glsl_preprocess(&penv, name, &pre, &pre_len));
    KV_TRY(kv_mutate_liveness(pre, pre_len, (const char *const *)ms->names, (const char *const *)ms->texts,
                              ms->n_files, live, n_lines));
    for (int f = 0; f < ms->n_files; f++)
        KV_TRY(kv_mutate_text(ms->texts[f], ms->lens[f], f, live[f], n_lines[f], ops, &j->m, &j->n_m, &j->cap_m));
    ms->count = j->n_m - ms->first;
    for (size_t i = 0; i < j->job.n_cases; i++) ms->cases += kv_stage_on(&j->job.cases[i], s) != 0;
    if (!ms->cases) snprintf(ms->skip, sizeof ms->skip, "no case of the sweep runs stage %s", sd->name);
cleanup:
    free(pre);
    for (int f = 0; f < KV_MUT_FILES; f++) free(live[f]);
    return st;
}

void kv_mut_job_free(struct kv_mut_job *j)
{
    for (int i = 0; i < j->n_st; i++)
        for (int f = 0; f < j->st[i].n_files; f++) free(j->st[i].names[f]), free(j->st[i].texts[f]);
    free(j->m), free(j->m_stage), free(j->res);
    kv_job_free(&j->job);
}

/* --- a worker process --- */

struct worker_state {
    struct kv_vk_device *dev;
    struct kv_runner base;
    struct kv_case_result *res;
    uint32_t *orig[KV_MAX_STAGES];
    size_t orig_bytes[KV_MAX_STAGES];
};

/* Run the sweep's cases of stage s on runner r, stopping at the first that
 * fails or errs; out says which. */
static void sweep(struct kv_mut_job *j, struct worker_state *w, struct kv_runner *r, int s,
                  const struct kv_run_opts *o, struct kv_mut_result *out)
{
    out->status = KV_MUT_SURVIVED;
    for (size_t i = 0; i < j->job.n_cases; i++) {
        if (!kv_stage_on(&j->job.cases[i], s)) continue;
        struct kv_case c = j->job.cases[i];
        kv_case_result_clear(w->res);
        kv_run_case(r, &c, o, NULL, w->res);
        if (w->res->status == KV_CASE_PASS || w->res->status == KV_CASE_SKIP) continue;
        out->status = KV_MUT_KILLED;
        if (w->res->status == KV_CASE_ERROR && strstr(w->res->error, "DEVICE_LOST")) {
            /* Perhaps another worker's mutant hung the GPU: not this one's verdict. */
            out->status = KV_MUT_LOST;
            snprintf(out->why, sizeof out->why, "%.150s: %.200s", w->res->name, w->res->error);
            return;
        }
        if (w->res->status == KV_CASE_ERROR) {
            snprintf(out->why, sizeof out->why, "%.150s: error: %.200s", w->res->name, w->res->error);
            return;
        }
        for (int q = 0; q < w->res->n_outputs; q++)
            if (!w->res->out[q].pass) {
                const struct kv_output_result *x = &w->res->out[q];
                snprintf(out->why, sizeof out->why, "%.200s: %.100s%s", w->res->name, x->name,
                         x->guard_bad ? " (written past its end)"
                         : x->m.nan_mismatch ? " (NaN mismatch)" : " (out of tolerance)");
                return;
            }
        return;
    }
}

static void process(struct kv_mut_job *j, struct worker_state *w, int slot, long idx, struct kv_mut_result *out)
{
    double t0 = kv_now_ms();
    memset(out, 0, sizeof *out);
    if (idx < 0) { /* the unmutated stage -idx-1 */
        int s = j->st[-idx - 1].s;
        sweep(j, w, &w->base, s, &j->job.o.run, out);
        out->ms = kv_now_ms() - t0;
        return;
    }
    const struct kv_mutant *m = &j->m[idx];
    struct kv_mut_stage *ms = &j->st[j->m_stage[idx]];
    int s = ms->s;
    kv_error_clear();
    if (!w->orig[s] && kv_glsl_compile(&ms->env, ms->names[0], &w->orig[s], &w->orig_bytes[s]) != KV_OK) {
        out->status = KV_MUT_STILLBORN;
        snprintf(out->why, sizeof out->why, "the original does not compile: %s", kv_error_msg());
        return;
    }
    size_t len = 0;
    char *text = kv_mutant_apply(ms->texts[m->file], ms->lens[m->file], m, &len);
    struct kv_glsl_file over = {ms->names[m->file], text, len};
    struct kv_glsl_env env = ms->env;
    env.over = &over, env.n_over = 1;
    uint32_t *words = NULL;
    size_t bytes = 0;
    if (!text || kv_glsl_compile(&env, ms->names[0], &words, &bytes) != KV_OK) {
        out->status = KV_MUT_STILLBORN;
        snprintf(out->why, sizeof out->why, "%s", kv_error_msg());
    } else if (bytes == w->orig_bytes[s] && !memcmp(words, w->orig[s], bytes)) {
        out->status = KV_MUT_EQUIVALENT;
    } else {
        struct kv_runner r = w->base;
        memset(&r.pipe[s], 0, sizeof r.pipe[s]);
        memset(&r.rev[s], 0, sizeof r.rev[s]);
        memset(&r.alt[s], 0, sizeof r.alt[s]); /* the mutant runs every case, aligned ones too */
        memset(&r.san[s], 0, sizeof r.san[s]);
        r.san_mod[s] = NULL;
        memset(r.addr[s], 0, sizeof r.addr[s]); /* built from the mutant where a case needs it */
        struct kv_run_opts o = j->job.o.run;
        o.src_env[s] = &env, o.src_name[s] = ms->names[0], o.src_words[s] = words, o.src_bytes[s] = bytes;
        if (kv_runner_stage(&r, s, &o) != KV_OK) {
            out->status = KV_MUT_STILLBORN;
            snprintf(out->why, sizeof out->why, "%s", kv_error_msg());
        } else {
            j->sweep_at[slot] = kv_now_ms(); /* the timeout runs from here */
            sweep(j, w, &r, s, &o, out);
        }
        kv_vk_pipeline_destroy(r.d, &r.pipe[s]);
        kv_vk_pipeline_destroy(r.d, &r.rev[s]);
        kv_runner_sanitized_free(&r, s);
        kv_runner_addr_free(&r, &w->base);
    }
    free(words);
    free(text);
    out->ms = kv_now_ms() - t0;
}

static int read_full(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
    for (size_t put = 0; put < n;) {
        ssize_t r = write(fd, (const char *)buf + put, n - put);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        put += (size_t)r;
    }
    return 0;
}

static void worker_main(struct kv_mut_job *j, int slot, int in, int out)
{
    struct worker_state w;
    memset(&w, 0, sizeof w);
    int code = 0;
    /* The workers share the CPUs: each oracle gets its share of the threads. */
    int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN), share = cpus / (j->workers > 0 ? j->workers : 1);
    omp_set_num_threads(share > 1 ? share : 1);
    w.res = calloc(1, sizeof *w.res);
    if (!w.res || kv_vk_open(j->job.o.out.device, &w.dev) != KV_OK ||
        kv_runner_init(&w.base, w.dev, j->job.k, &j->job.o.run) != KV_OK) {
        fprintf(stderr, "kverify mutate: worker: %s\n", kv_error_msg());
        code = 4;
    }
    long idx;
    while (!code && read_full(in, &idx, sizeof idx) == 0) {
        struct kv_mut_result r;
        process(j, &w, slot, idx, &r);
        if (write_full(out, &r, sizeof r) || r.status == KV_MUT_LOST) break; /* a lost device is of no more use */
    }
    kv_runner_free(&w.base);
    for (int s = 0; s < KV_MAX_STAGES; s++) free(w.orig[s]);
    kv_vk_close(w.dev);
    if (w.res) kv_case_result_clear(w.res);
    free(w.res);
    _exit(code);
}

/* --- the pool --- */

/* How long a mutant may compile before its timeout starts to count. */
#define KV_MUT_COMPILE_MS 600e3

struct worker {
    pid_t pid;
    int to, from;
    long idx; /* the item it runs, or LONG_MIN when idle */
    double started, limit_ms;
};

static enum kv_status spawn(struct kv_mut_job *j, struct worker *wk, struct worker *all, int n_all)
{
    int a[2], b[2];
    if (pipe(a) || pipe(b)) return kv_error(KV_EDEVICE, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return kv_error(KV_EDEVICE, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(a[1]), close(b[0]);
        /* The other workers' pipe ends: held here, they would keep a worker
         * from seeing the end of its input. */
        for (int i = 0; i < n_all; i++)
            if (all[i].pid > 0) close(all[i].to), close(all[i].from);
        worker_main(j, (int)(wk - all), a[0], b[1]);
    }
    close(a[0]), close(b[1]);
    wk->pid = pid, wk->to = a[1], wk->from = b[0], wk->idx = LONG_MIN;
    return KV_OK;
}

static void stop(struct worker *wk, int sig)
{
    if (wk->pid <= 0) return;
    close(wk->to), close(wk->from);
    if (sig) kill(wk->pid, sig);
    waitpid(wk->pid, NULL, 0);
    wk->pid = 0;
}

/* Items (negative: an unmutated stage) through the pool; res_of(item). */
static enum kv_status pool(struct kv_mut_job *j, const long *items, size_t n, struct kv_mut_result *res,
                           struct worker *wk, int nw, double limit_ms_of_stage[])
{
    enum kv_status st = KV_OK;
    size_t next = 0, done = 0;
    /* A progress line on a terminal once the work takes 2 s (KVERIFY_PROGRESS_AFTER_MS). */
    const char *after = getenv("KVERIFY_PROGRESS_AFTER_MS");
    const double t0 = kv_now_ms(), after_ms = after ? atof(after) : 2000;
    const int tty = isatty(STDERR_FILENO) && !j->verbose;
    int shown = 0;
    while (done < n) {
        if (tty && kv_now_ms() - t0 >= after_ms) {
            fprintf(stderr, "\r\033[K[%zu/%zu] %.0f s, %d workers", done, n, (kv_now_ms() - t0) / 1e3, nw);
            fflush(stderr);
            shown = 1;
        }
        struct pollfd pf[64];
        for (int i = 0; i < nw; i++) {
            if (!wk[i].pid) KV_TRY(spawn(j, &wk[i], wk, nw));
            if (wk[i].idx == LONG_MIN && next < n) {
                long it = items[next];
                wk[i].idx = it;
                wk[i].started = kv_now_ms();
                j->sweep_at[i] = 0;
                int sti = it < 0 ? (int)(-it - 1) : j->m_stage[it];
                wk[i].limit_ms = it < 0 ? 3600e3 : limit_ms_of_stage[sti];
                if (write_full(wk[i].to, &it, sizeof it)) {
                    stop(&wk[i], SIGKILL);
                    KV_CHECK(++j->respawns < 64, KV_EDEVICE, "mutation workers keep dying (see above)");
                    wk[i].idx = LONG_MIN;
                    continue; /* respawned on the next round */
                }
                next++;
            }
            pf[i] = (struct pollfd){wk[i].from, POLLIN, 0};
        }
        int rc = poll(pf, (nfds_t)nw, 250);
        KV_CHECK(rc >= 0 || errno == EINTR, KV_EDEVICE, "poll: %s", strerror(errno));
        for (int i = 0; i < nw; i++) {
            if (wk[i].idx == LONG_MIN) continue;
            long it = wk[i].idx;
            struct kv_mut_result *r = &res[it < 0 ? (size_t)(-it - 1) : (size_t)it];
            /* a mutant's sweep (its compilation not counted, up to 10 minutes of it) */
            const double now = kv_now_ms(), at = j->sweep_at[i];
            double el = it >= 0 && at > 0 ? now - at : now - wk[i].started;
            if (it >= 0 && at <= 0) el = el > KV_MUT_COMPILE_MS ? el - KV_MUT_COMPILE_MS : 0;
            if (rc > 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                if (read_full(wk[i].from, r, sizeof *r) != 0) { /* died: a crash of the run counts against it */
                    int ws = 0;
                    close(wk[i].to), close(wk[i].from);
                    waitpid(wk[i].pid, &ws, 0);
                    wk[i].pid = 0;
                    KV_CHECK(it >= 0, KV_EDEVICE, "a mutation worker stopped (%s %d) on the unmutated kernel",
                             WIFSIGNALED(ws) ? "signal" : "exit", WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
                    r->status = KV_MUT_KILLED;
                    snprintf(r->why, sizeof r->why, "the run crashed (%s %d)", WIFSIGNALED(ws) ? "signal" : "exit",
                             WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
                }
            } else if (el > wk[i].limit_ms) {
                stop(&wk[i], SIGKILL);
                /* On a GPU another worker's hang stalls this one too: only a
                 * mutant that times out running alone (nw == 1) hangs itself. */
                r->status = nw == 1 || it < 0 ? KV_MUT_HANG : KV_MUT_LOST;
                snprintf(r->why, sizeof r->why, "did not finish in %.0f s (a hang)", wk[i].limit_ms / 1e3);
            } else {
                continue;
            }
            if (r->status == KV_MUT_LOST) stop(&wk[i], SIGKILL);
            wk[i].idx = LONG_MIN;
            done++;
            if (j->verbose && it >= 0)
                fprintf(stderr, "kverify mutate: %zu/%zu\r", done, n);
        }
    }
cleanup:
    if (shown) fputs("\r\033[K", stderr);
    return st;
}

enum kv_status kv_mut_run(struct kv_mut_job *j)
{
    enum kv_status st = KV_OK;
    int nw = j->workers < 1 ? 1 : j->workers > 64 ? 64 : j->workers;
    struct worker wk[64];
    memset(wk, 0, sizeof wk);
    long *items = malloc((j->n_m + KV_MAX_STAGES) * sizeof *items);
    struct kv_mut_result orig[KV_MAX_STAGES];
    void *shared = mmap(NULL, 64 * sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    KV_CHECK(shared != MAP_FAILED, KV_EDEVICE, "mmap: %s", strerror(errno));
    j->sweep_at = shared;
    double limit[KV_MAX_STAGES];
    size_t n = 0;
    KV_CHECK(items, KV_EDEVICE, "out of memory");
    /* The unmutated stages first: each must pass its sweep, and its time sets the mutants' timeout. */
    for (int i = 0; i < j->n_st; i++)
        if (!j->st[i].skip[0]) items[n++] = -(long)i - 1;
    KV_TRY(pool(j, items, n, orig, wk, nw < (int)n ? nw : (int)(n ? n : 1), limit));
    for (int i = 0; i < j->n_st; i++) {
        struct kv_mut_stage *ms = &j->st[i];
        if (ms->skip[0]) continue;
        ms->orig_ms = orig[i].ms;
        limit[i] = j->timeout_s > 0 ? j->timeout_s * 1e3 : 10e3 + 3 * orig[i].ms;
        if (orig[i].status != KV_MUT_SURVIVED)
            snprintf(ms->skip, sizeof ms->skip, "the unmutated stage fails its sweep: %s", orig[i].why);
    }
    n = 0;
    for (size_t i = 0; i < j->n_m; i++) {
        struct kv_mut_stage *ms = &j->st[j->m_stage[i]];
        if (ms->skip[0]) {
            j->res[i].status = KV_MUT_SKIPPED;
            snprintf(j->res[i].why, sizeof j->res[i].why, "%.390s", ms->skip);
        } else {
            items[n++] = (long)i;
        }
    }
    if (n) KV_TRY(pool(j, items, n, j->res, wk, nw, limit));
    /* Mutants whose device was lost (another's hang resets the GPU for all)
     * run again one at a time: losing it then is their own hang. */
    n = 0;
    for (size_t i = 0; i < j->n_m; i++)
        if (j->res[i].status == KV_MUT_LOST) items[n++] = (long)i;
    if (n) {
        for (int i = 1; i < nw; i++) stop(&wk[i], 0);
        KV_TRY(pool(j, items, n, j->res, wk, 1, limit));
        for (size_t i = 0; i < n; i++) {
            struct kv_mut_result *r = &j->res[items[i]];
            if (r->status != KV_MUT_LOST) continue;
            r->status = KV_MUT_HANG;
            char why[sizeof r->why];
            snprintf(why, sizeof why, "lost the device running alone (a hang the driver stopped): %.300s", r->why);
            memcpy(r->why, why, sizeof why);
        }
    }
cleanup:
    for (int i = 0; i < nw; i++) stop(&wk[i], 0);
    if (j->sweep_at) munmap((void *)j->sweep_at, 64 * sizeof(double));
    j->sweep_at = NULL;
    free(items);
    return st;
}

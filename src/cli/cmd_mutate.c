/* `kverify mutate KERNEL`: how strong the kernel's sweep is against one-site
 * bugs in its shaders (the built-in ones, or the user's with --shader). */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd_kernel.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/parse.h"
#include "pipeline/mutate_job.h"
#include "reports/report.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: kverify mutate KERNEL [options]\n"
               "Makes one-site mutants of each stage's shader, runs the kernel's sweep (with its stress\n"
               "runs and the sanitized run) on each, and prints the mutation score and every surviving\n"
               "mutant.\n\n"
               "  --stage NAME                 mutate only this stage (repeatable) [default: every stage]\n"
               "  --shader STAGE=FILE          mutate your .comp for STAGE instead of the built-in one\n"
               "  --lines [FILE:]A..B|N        only the mutants on lines A..B, or line N (of FILE: a\n"
               "                               shader or an include, by name) (repeatable, up to 8)\n"
               "                               [default: every line]\n"
               "  --operators LIST             comma-separated operators [default: all]:\n");
    for (int i = 0; i < kv_mutate_n_ops; i++) fprintf(f, "                                 %-8s %s\n",
                                                      kv_mutate_ops[i].name, kv_mutate_ops[i].doc);
    fprintf(f, "  --seeds N                    seeds per sweep shape [default: the kernel's]\n"
               "  --jobs N                     worker processes [default: the number of CPUs]\n"
               "  --timeout S                  a mutant whose sweep runs longer than S seconds is killed by\n"
               "                               a hang (its shader's compilation not counted, up to 10\n"
               "                               minutes of it) [default: 10 + 3x the unmutated sweep]\n"
               "  --no-sanitize                no sanitized run: only what reaches an output kills\n"
               "  --list                       list the mutants, run nothing\n"
               "  --min-score PCT              exit 1 when the score is below PCT [default: 0]\n"
               "  --json FILE                  write every mutant and its fate as JSON; - for stdout\n"
               "  --device N|NAME              pick a device (kverify devices)\n"
               "  --verbose                    progress on stderr\n"
               "  --help                       this help\n"
               "\nscore: killed / (killed + survived); equivalent mutants (optimised SPIR-V equal to the\n"
               "original's) and stillborn ones (do not compile or fit the stage) are not run.\n"
               "exit: 0 done, 1 score below --min-score, 2 usage, 3 a shader that cannot be read or\n"
               "compiled, 4 device error, 77 no mutant judged (no device, or none could run)\n");
}

/* --lines: at most this many ranges. */
#define MAX_LINES 8
struct line_sel {
    int n;
    struct {
        char file[128]; /* empty: any file */
        long a, b;
    } r[MAX_LINES];
};

static const char *const STATUS[] = {"pending", "killed", "survived", "equivalent", "stillborn", "killed (hang)",
                                     "skipped", "lost"};

/* --operators A,B,...: the mutation operators by name. */
static enum kv_status operators_option(const char *arg, unsigned *ops)
{
    enum kv_status st = KV_OK;
    *ops = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int i;
        for (i = 0; i < kv_mutate_n_ops && strcmp(kv_mutate_ops[i].name, t); i++) {}
        KV_CHECK(i < kv_mutate_n_ops, KV_EUSAGE, "--operators: unknown operator '%s' (see --help)", t);
        *ops |= 1u << i;
    }
    KV_CHECK(*ops, KV_EUSAGE, "--operators: no operator given");
cleanup:
    return st;
}

/* --lines [FILE:]A..B or [FILE:]N: one more range of lines. */
static enum kv_status lines_option(const char *arg, struct line_sel *sel)
{
    enum kv_status st = KV_OK;
    KV_CHECK(sel->n < MAX_LINES, KV_EUSAGE, "--lines: at most %d ranges", MAX_LINES);
    const char *colon = strrchr(arg, ':');
    size_t flen = colon ? (size_t)(colon - arg) : 0;
    KV_CHECK(!colon || (flen > 0 && flen < sizeof sel->r[0].file), KV_EUSAGE,
             "--lines: expected [FILE:]A..B, got '%s' (a file name of 1 to 127 characters)", arg);
    uint64_t a, b;
    KV_TRY(kv_parse_range("--lines", colon ? colon + 1 : arg, &a, &b));
    KV_CHECK(a >= 1 && b <= 1000000, KV_EUSAGE, "--lines: lines run from 1 to 1000000, got '%s'", arg);
    memcpy(sel->r[sel->n].file, arg, flen);
    sel->r[sel->n].file[flen] = '\0';
    sel->r[sel->n].a = (long)a, sel->r[sel->n].b = (long)b;
    sel->n++;
cleanup:
    return st;
}

/* Whether --lines keeps a mutant on line of file name (its path or base name). */
static int line_kept(const struct line_sel *sel, const char *name, int line)
{
    if (!sel->n) return 1;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (int i = 0; i < sel->n; i++)
        if ((!sel->r[i].file[0] || !strcmp(sel->r[i].file, name) || !strcmp(sel->r[i].file, base)) &&
            line >= sel->r[i].a && line <= sel->r[i].b)
            return 1;
    return 0;
}

/* Drops the mutants --lines leaves out; each stage's run stays contiguous. */
static enum kv_status keep_lines(struct kv_mut_job *j, const struct line_sel *sel)
{
    enum kv_status st = KV_OK;
    if (!sel->n) return KV_OK;
    size_t n = 0;
    for (int s = 0; s < j->n_st; s++) {
        struct kv_mut_stage *ms = &j->st[s];
        size_t first = n;
        for (size_t q = ms->first; q < ms->first + ms->count; q++)
            if (line_kept(sel, ms->names[j->m[q].file], j->m[q].line)) j->m[n] = j->m[q], j->m_stage[n++] = s;
        ms->first = first, ms->count = n - first;
    }
    j->n_m = n;
    KV_CHECK(n, KV_EUSAGE, "--lines: no mutant on those lines (see --list without --lines)");
cleanup:
    return st;
}

static enum kv_status parse(int argc, char **argv, struct kv_mut_job *j, unsigned *ops, int *only, int *list,
                            double *min_score, const char **json, int *help, struct line_sel *sel)
{
    enum kv_status st = KV_OK;
    static const struct option opts[] = {
        {"stage", required_argument, NULL, 's'},   {"shader", required_argument, NULL, 'S'},
        {"operators", required_argument, NULL, 'o'}, {"seeds", required_argument, NULL, 'n'},
        {"jobs", required_argument, NULL, 'j'},    {"timeout", required_argument, NULL, 't'},
        {"list", no_argument, NULL, 'l'},          {"min-score", required_argument, NULL, 'm'},
        {"json", required_argument, NULL, 'J'},    {"device", required_argument, NULL, 'd'},
        {"verbose", no_argument, NULL, 'v'},       {"help", no_argument, NULL, 'h'},
        {"lines", required_argument, NULL, 'L'},   {"no-sanitize", no_argument, NULL, 'N'}};
    const struct kv_kernel *k = j->job.k;
    /* The kernel's parameters too: they apply to every sweep case (--variant). */
    struct option all[32 + KV_MAX_PARAMS];
    int n_opts = (int)(sizeof opts / sizeof *opts);
    memcpy(all, opts, sizeof opts);
    for (int i = 0; i < k->n_params; i++) all[n_opts + i] = (struct option){k->params[i].name, required_argument, NULL, 1000 + i};
    all[n_opts + k->n_params] = (struct option){0, 0, 0, 0};
    int64_t v;
    optind = 1;
    opterr = 0;
    for (;;) {
        char bad[8];
        int c = getopt_long(argc, argv, ":hv", all, NULL), s;
        if (c == -1) break;
        const char *arg = optarg;
        switch (c) {
        case 's':
            for (s = 0; s < k->n_stages && strcmp(k->stages[s].name, arg); s++) {}
            KV_CHECK(s < k->n_stages, KV_EUSAGE, "--stage: %s has no stage '%s' (see kverify list)", k->name, arg);
            only[s] = 1;
            break;
        case 'S': KV_TRY(kv_shader_option(k, arg, &j->job.o.run)); break;
        case 'o': KV_TRY(operators_option(arg, ops)); break;
        case 'L': KV_TRY(lines_option(arg, sel)); break;
        case 'n':
            KV_TRY(kv_parse_i64("--seeds", arg, 1, 1000, &v));
            j->job.o.seeds = (uint64_t)v, j->job.o.seeds_given = 1;
            break;
        case 'j': KV_TRY(kv_parse_i64("--jobs", arg, 1, 64, &v)); j->workers = (int)v; break;
        case 't': KV_TRY(kv_parse_f64("--timeout", arg, 1, 86400, &j->timeout_s)); break;
        case 'l': *list = 1; break;
        case 'N': j->job.o.sanitize = -1; break;
        case 'm': KV_TRY(kv_parse_f64("--min-score", arg, 0, 100, min_score)); break;
        case 'J':
            KV_CHECK(*arg, KV_EUSAGE, "--json: empty file name");
            *json = j->job.o.out.json = arg;
            break;
        case 'd': j->job.o.out.device = arg; break;
        case 'v': j->verbose = 1; break;
        case 'h': *help = 1; break;
        case ':': KV_CHECK(0, KV_EUSAGE, "mutate: missing value for %s",
                     kv_bad_option(c, optopt, optind, argv, bad, sizeof bad)); break;
        default:
            KV_CHECK(c >= 1000 && c < 1000 + k->n_params, KV_EUSAGE,
                     "mutate: unknown option '%s' (see kverify mutate --help)",
                     kv_bad_option(c, optopt, optind, argv, bad, sizeof bad));
            j->job.o.set[c - 1000] = arg;
        }
    }
    KV_CHECK(optind >= argc, KV_EUSAGE, "mutate: unexpected argument '%s'", argv[optind]);
    KV_TRY(kv_outputs_check(&j->job.o.out));
cleanup:
    return st;
}

static cJSON *json_report(const struct kv_mut_job *j, const struct kv_vk_info *dev, double score)
{
    cJSON *root = cJSON_CreateObject(), *arr;
    cJSON_AddStringToObject(root, "kernel", j->job.k->name);
    cJSON_AddStringToObject(root, "device", dev->name);
    cJSON_AddNumberToObject(root, "score", score);
    arr = cJSON_AddArrayToObject(root, "stages");
    for (int i = 0; i < j->n_st; i++) {
        const struct kv_mut_stage *ms = &j->st[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "stage", j->job.k->stages[ms->s].name);
        cJSON_AddStringToObject(o, "source", ms->names[0]);
        cJSON_AddNumberToObject(o, "sweep_cases", (double)ms->cases);
        cJSON_AddNumberToObject(o, "sweep_ms", ms->orig_ms);
        if (ms->skip[0]) cJSON_AddStringToObject(o, "skipped", ms->skip);
        cJSON_AddItemToArray(arr, o);
    }
    arr = cJSON_AddArrayToObject(root, "mutants");
    for (size_t i = 0; i < j->n_m; i++) {
        const struct kv_mutant *m = &j->m[i];
        const struct kv_mut_stage *ms = &j->st[j->m_stage[i]];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "stage", j->job.k->stages[ms->s].name);
        cJSON_AddStringToObject(o, "file", ms->names[m->file]);
        cJSON_AddNumberToObject(o, "line", m->line);
        cJSON_AddNumberToObject(o, "column", m->col);
        cJSON_AddStringToObject(o, "operator", m->op);
        cJSON_AddStringToObject(o, "change", m->desc);
        cJSON_AddStringToObject(o, "status", j->res ? STATUS[j->res[i].status] : "pending");
        if (j->res && j->res[i].why[0]) cJSON_AddStringToObject(o, "detail", j->res[i].why);
        if (j->res) cJSON_AddNumberToObject(o, "ms", j->res[i].ms);
        cJSON_AddItemToArray(arr, o);
    }
    return root;
}

/* The mutants of every stage under mutation (all, or those --stage names)
 * on a device like info; a stage the device cannot run is kept, not run. */
static enum kv_status add_stages(struct kv_mut_job *j, const struct kv_vk_info *info, const int *only, unsigned ops)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = j->job.k;
    int any_only = 0;
    for (int s = 0; s < k->n_stages; s++) any_only |= only[s];
    for (int s = 0; s < k->n_stages; s++) {
        if (any_only && !only[s]) continue;
        size_t before = j->n_m;
        KV_TRY(kv_mut_stage_add(j, s, info, ops));
        int *ms = realloc(j->m_stage, (j->n_m ? j->n_m : 1) * sizeof *ms);
        KV_CHECK(ms, KV_EDEVICE, "out of memory");
        j->m_stage = ms;
        for (size_t i = before; i < j->n_m; i++) j->m_stage[i] = j->n_st - 1;
        const struct kv_stage_def *sd = &k->stages[s];
        const char *lacks = kv_stage_lacks(info, sd);
        struct kv_mut_stage *last = &j->st[j->n_st - 1];
        if (!last->skip[0] && lacks)
            snprintf(last->skip, sizeof last->skip, "stage %s needs %.300s, which %.100s lacks", sd->name, lacks,
                     info->name);
    }
cleanup:
    return st;
}

/* One mutant as "STAGE FILE:LINE:COL OP DESC" after prefix. */
static void print_mutant(FILE *f, const char *prefix, const struct kv_mut_job *j, size_t i)
{
    const struct kv_mutant *m = &j->m[i];
    const struct kv_mut_stage *ms = &j->st[j->m_stage[i]];
    fprintf(f, "%s%s %s:%d:%d %s %s\n", prefix, j->job.k->stages[ms->s].name, ms->names[m->file], m->line, m->col,
            m->op, m->desc);
}

/* The mutants that ran to a verdict (killed, by a hang or not, or survived). */
static size_t judged(const struct kv_mut_job *j)
{
    size_t n = 0;
    for (size_t q = 0; q < j->n_m; q++)
        n += j->res[q].status == KV_MUT_KILLED || j->res[q].status == KV_MUT_HANG || j->res[q].status == KV_MUT_SURVIVED;
    return n;
}

/* Why none did: a stage's reason for not running, or what the mutants were. */
static const char *why_unjudged(const struct kv_mut_job *j)
{
    for (int i = 0; i < j->n_st; i++)
        if (j->st[i].skip[0]) return j->st[i].skip;
    return j->n_m ? "every mutant was equivalent or stillborn" : "no mutant on the lines and operators given";
}

/* The summary: a line per stage, the survivors, the score (returned). */
static double print_summary(FILE *f, const struct kv_mut_job *j, const struct kv_vk_info *info, double seconds)
{
    const struct kv_kernel *k = j->job.k;
    size_t tot[8] = {0};
    fprintf(f, "kverify mutate %s on %s: %.1f s\n", k->name, info->name, seconds);
    for (int i = 0; i < j->n_st; i++) {
        const struct kv_mut_stage *ms = &j->st[i];
        size_t c[8] = {0};
        for (size_t q = ms->first; q < ms->first + ms->count; q++) c[j->res[q].status]++, tot[j->res[q].status]++;
        size_t killed = c[KV_MUT_KILLED] + c[KV_MUT_HANG], judged = killed + c[KV_MUT_SURVIVED];
        fprintf(f, "  stage %-10s %-24s %5zu mutants: %zu killed (%zu by a hang), %zu survived, %zu equivalent, "
                   "%zu stillborn", k->stages[ms->s].name, ms->names[0], ms->count, killed, c[KV_MUT_HANG],
                c[KV_MUT_SURVIVED], c[KV_MUT_EQUIVALENT], c[KV_MUT_STILLBORN]);
        if (ms->skip[0]) fprintf(f, "; not run: %s", ms->skip);
        else fprintf(f, "; score %.1f%%", judged ? 100.0 * (double)killed / (double)judged : 100.0);
        fputc('\n', f);
    }
    for (size_t q = 0; q < j->n_m; q++)
        if (j->res[q].status == KV_MUT_SURVIVED) print_mutant(f, "  survived: ", j, q);
    size_t killed = tot[KV_MUT_KILLED] + tot[KV_MUT_HANG], judged = killed + tot[KV_MUT_SURVIVED];
    double score = judged ? 100.0 * (double)killed / (double)judged : 100.0;
    if (judged) fprintf(f, "mutation score %.1f%%: ", score);
    else fprintf(f, "no mutation score: ");
    fprintf(f, "%zu of %zu killed (%zu equivalent, %zu stillborn, %zu not run)\n", killed, judged,
            tot[KV_MUT_EQUIVALENT], tot[KV_MUT_STILLBORN], tot[KV_MUT_SKIPPED]);
    return score;
}

int cmd_mutate(int argc, char **argv)
{
    enum kv_status st = KV_OK;
    struct kv_mut_job j;
    memset(&j, 0, sizeof j);
    struct kv_vk_device *dev = NULL;
    struct kv_vk_info info;
    cJSON *doc = NULL;
    int only[KV_MAX_STAGES] = {0}, list = 0, help = 0, code = 0;
    unsigned ops = (1u << kv_mutate_n_ops) - 1;
    double min_score = 0;
    const char *json = NULL;
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    KV_CHECK(argc >= 2 && argv[1][0] != '-', KV_EUSAGE, "mutate: no kernel given (usage: kverify mutate KERNEL; "
             "see kverify mutate --help)");
    j.job.k = kv_kernel_find(argv[1]);
    KV_CHECK(j.job.k, KV_EUSAGE, "mutate: unknown kernel '%s' (see kverify list)", argv[1]);
    kv_kopts_init(&j.job.o);
    j.job.o.sweep = 1;
    j.workers = (int)sysconf(_SC_NPROCESSORS_ONLN);
    struct line_sel sel = {0};
    KV_TRY(parse(argc - 1, argv + 1, &j, &ops, only, &list, &min_score, &json, &help, &sel));
    if (help) {
        usage(stdout);
        goto cleanup;
    }
    j.job.o.run.stress = 1;
    j.job.o.run.sanitize = j.job.o.sanitize >= 0; /* a mutant that only breaks memory safety is killed too */
    j.job.o.run.fail_fast = 1;
    j.job.o.run.no_dist = 1;
    KV_TRY(kv_job_build(&j.job));
    /* The device's features decide the defines, hence the live lines. */
    KV_TRY(kv_vk_open(j.job.o.out.device, &dev));
    info = dev->info;
    kv_vk_close(dev);
    dev = NULL;
    KV_TRY(add_stages(&j, &info, only, ops));
    KV_TRY(keep_lines(&j, &sel));
    if (list) {
        for (size_t i = 0; i < j.n_m; i++) print_mutant(stdout, "", &j, i);
        printf("%zu mutants\n", j.n_m);
        goto cleanup;
    }
    j.res = calloc(j.n_m ? j.n_m : 1, sizeof *j.res);
    KV_CHECK(j.res, KV_EDEVICE, "out of memory");
    signal(SIGPIPE, SIG_IGN);
    double t0 = kv_now_ms();
    KV_TRY(kv_mut_run(&j));
    double score = print_summary(json && !strcmp(json, "-") ? stderr : stdout, &j, &info, (kv_now_ms() - t0) / 1e3);
    if (json) {
        doc = json_report(&j, &info, score);
        KV_CHECK(doc, KV_EDEVICE, "out of memory for the report");
        KV_TRY(kv_json_write(doc, json));
    }
    code = score < min_score ? 1 : 0;
    if (!judged(&j)) { /* no mutant ran to a verdict: a gate must not read that as a score */
        fprintf(stderr, "kverify: nothing was judged: %s\n", why_unjudged(&j));
        code = KV_ENODEV;
    }
cleanup:
    if (st) fprintf(stderr, "kverify: %s\n", kv_error_msg());
    cJSON_Delete(doc);
    kv_vk_close(dev);
    kv_mut_job_free(&j);
    return st ? (int)st : code;
}

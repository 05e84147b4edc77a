/* `kverify run SUITE.json`, `kverify merge`, `kverify compare`: a suite of
 * cases in one process, shards of it merged back, and regressions between
 * two reports. A suite entry becomes the argument list of a kernel command,
 * so a suite says nothing a command line cannot. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_kernel.h"
#include "cli/commands.h"
#include "core/files.h"
#include "core/parse.h"
#include "formats/npy.h"
#include "formats/save.h"
#include "reports/regress.h"
#include "reports/report.h"

#define MAX_ARGS 128

struct entry_args {
    int argc;
    char *argv[MAX_ARGS];
};

static enum kv_status push_arg(struct entry_args *a, const char *what, const char *fmt, const char *s)
{
    if (a->argc >= MAX_ARGS - 1) return kv_error(KV_EUSAGE, "%s: too many settings", what);
    size_t n = strlen(fmt) + strlen(s) + 1;
    char *p = malloc(n);
    if (!p) return kv_error(KV_EUSAGE, "out of memory");
    snprintf(p, n, fmt, s);
    a->argv[a->argc++] = p;
    return KV_OK;
}

static void free_args(struct entry_args *a)
{
    for (int i = 0; i < a->argc; i++) free(a->argv[i]);
    a->argc = 0;
}

/* A value as text: strings as they are, numbers without loss, booleans. */
static enum kv_status value_text(const cJSON *v, const char *what, char *buf, size_t size)
{
    if (cJSON_IsString(v)) snprintf(buf, size, "%s", v->valuestring);
    else if (cJSON_IsNumber(v)) snprintf(buf, size, "%.17g", v->valuedouble);
    else return kv_error(KV_EUSAGE, "%s: expected a number or a string", what);
    return KV_OK;
}

/* A path relative to the suite file's folder. */
static void resolve(const char *dir, const char *p, char *buf, size_t size)
{
    if (p[0] == '/' || !dir[0]) snprintf(buf, size, "%s", p);
    else snprintf(buf, size, "%s/%s", dir, p);
}

static enum kv_status add_pairs(struct entry_args *a, const char *what, const cJSON *obj, const char *flag,
                                const char *dir, int paths)
{
    enum kv_status st = KV_OK;
    KV_CHECK(cJSON_IsObject(obj), KV_EUSAGE, "%s: expected an object", what);
    const cJSON *x;
    cJSON_ArrayForEach(x, obj)
    {
        char v[2048], full[4096], kv[4200];
        KV_TRY(value_text(x, what, v, sizeof v));
        if (paths) resolve(dir, v, full, sizeof full);
        else snprintf(full, sizeof full, "%s", v);
        if (!flag) { /* params: --name value */
            KV_TRY(push_arg(a, what, "--%s", x->string));
            KV_TRY(push_arg(a, what, "%s", full));
        } else {
            snprintf(kv, sizeof kv, "%s=%s", x->string, full);
            KV_TRY(push_arg(a, what, "%s", flag));
            KV_TRY(push_arg(a, what, "%s", kv));
        }
    }
cleanup:
    return st;
}

/* The argument list of suite entry e (after the kernel name). */
static enum kv_status entry_argv(const cJSON *e, const char *what, const char *dir, struct entry_args *a)
{
    enum kv_status st = KV_OK;
    static const char *const scalar[][2] = {{"seed", "--seed"},     {"seeds", "--seeds"},   {"repeat", "--repeat"},
                                            {"sample", "--sample"}, {"oracle", "--oracle"},
                                            {"bench", "--bench"},   {"bench_warmup", "--bench-warmup"}};
    static const char *const flags[][2] = {{"sweep", "--sweep"}, {"no_subgroup", "--no-subgroup"},
                                           {"no_8bit_storage", "--no-8bit-storage"}, {"no_device", "--no-device"},
                                           {"no_stress", "--no-stress"}, {"sanitize", "--sanitize"},
                                           {"no_sanitize", "--no-sanitize"}};
    static const char *const tol[][2] = {{"lambda", "--lambda"}, {"max_ulp", "--max-ulp"}, {"rtol", "--rtol"},
                                         {"atol", "--atol"},     {"max_nmse", "--max-nmse"}};
    KV_TRY(push_arg(a, what, "%s", "kernel"));
    const cJSON *x;
    cJSON_ArrayForEach(x, e)
    {
        const char *k = x->string;
        char v[2048], path[4096];
        int done = !strcmp(k, "kernel") || !strcmp(k, "name");
        for (size_t i = 0; !done && i < sizeof scalar / sizeof *scalar; i++)
            if (!strcmp(k, scalar[i][0])) {
                KV_TRY(value_text(x, what, v, sizeof v));
                KV_TRY(push_arg(a, what, "%s", scalar[i][1]));
                KV_TRY(push_arg(a, what, "%s", v));
                done = 1;
            }
        for (size_t i = 0; !done && i < sizeof flags / sizeof *flags; i++)
            if (!strcmp(k, flags[i][0])) {
                KV_CHECK(cJSON_IsBool(x), KV_EUSAGE, "%s: \"%s\" must be true or false", what, k);
                if (cJSON_IsTrue(x)) KV_TRY(push_arg(a, what, "%s", flags[i][1]));
                done = 1;
            }
        if (!done && !strcmp(k, "candidates") && cJSON_IsString(x)) { /* one .safetensors of outputs */
            resolve(dir, x->valuestring, path, sizeof path);
            KV_TRY(push_arg(a, what, "%s", "--candidate"));
            KV_TRY(push_arg(a, what, "%s", path));
            done = 1;
        }
        if (!done && (!strcmp(k, "params") || !strcmp(k, "candidates") || !strcmp(k, "shader"))) {
            const char *flag = !strcmp(k, "params") ? NULL : !strcmp(k, "candidates") ? "--candidate" : "--shader";
            KV_TRY(add_pairs(a, what, x, flag, dir, flag != NULL));
            done = 1;
        }
        if (!done && !strcmp(k, "inputs")) {
            KV_CHECK(cJSON_IsString(x), KV_EUSAGE, "%s: \"inputs\" must be a path", what);
            resolve(dir, x->valuestring, path, sizeof path);
            KV_TRY(push_arg(a, what, "%s", "--inputs"));
            KV_TRY(push_arg(a, what, "%s", path));
            done = 1;
        }
        if (!done && !strcmp(k, "tolerance")) {
            KV_CHECK(cJSON_IsObject(x), KV_EUSAGE, "%s: \"tolerance\" must be an object", what);
            const cJSON *t;
            cJSON_ArrayForEach(t, x)
            {
                size_t i = 0;
                while (i < sizeof tol / sizeof *tol && strcmp(t->string, tol[i][0])) i++;
                KV_CHECK(i < sizeof tol / sizeof *tol, KV_EUSAGE,
                         "%s: unknown tolerance \"%s\" (lambda, max_ulp, rtol, atol, max_nmse)", what, t->string);
                KV_TRY(value_text(t, what, v, sizeof v));
                KV_TRY(push_arg(a, what, "%s", tol[i][1]));
                KV_TRY(push_arg(a, what, "%s", v));
            }
            done = 1;
        }
        KV_CHECK(done, KV_EUSAGE, "%s: unknown key \"%s\" (see man kverify: SUITES)", what, k);
    }
    a->argv[a->argc] = NULL;
cleanup:
    return st;
}

/* --seed-offset: the entry's seeds moved on by off, unless its inputs or
 * outputs come from files (made at the seeds they name). */
static enum kv_status offset_seeds(struct kopts *o, const struct kv_kernel *k, uint64_t off, const char *what)
{
    enum kv_status st = KV_OK;
    if (!off || o->inputs || o->n_candidates) return KV_OK;
    const uint64_t count = kv_kopts_seeds(k, o);
    KV_CHECK(o->seed <= (uint64_t)INT64_MAX - off && o->seed + off <= (uint64_t)INT64_MAX - (count - 1), KV_EUSAGE,
             "%s: --seed-offset %llu moves seed %llu past 2^63-1", what, (unsigned long long)off,
             (unsigned long long)o->seed);
    o->seed += off;
cleanup:
    return st;
}

static enum kv_status load_suite(const char *path, uint64_t seed_offset, struct kv_job **jobs, size_t *n)
{
    enum kv_status st = KV_OK;
    cJSON *root = NULL;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else dir[0] = '\0';
    char *buf = NULL;
    size_t size;
    KV_TRY(kv_read_file(path, (size_t)1 << 26, &buf, &size));
    root = cJSON_Parse(buf);
    free(buf);
    KV_CHECK(root, KV_EDATA, "%s: not JSON", path);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    KV_CHECK(cJSON_IsArray(cases) && cJSON_GetArraySize(cases) > 0, KV_EDATA,
             "%s: a suite needs a non-empty \"cases\" array", path);
    *n = (size_t)cJSON_GetArraySize(cases);
    *jobs = calloc(*n, sizeof **jobs);
    KV_CHECK(*jobs, KV_EDATA, "out of memory");
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cases)
    {
        struct kv_job *j = &(*jobs)[i];
        char what[512];
        const char *kn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "kernel"));
        snprintf(what, sizeof what, "%s: cases[%zu]", path, i);
        KV_CHECK(cJSON_IsObject(e) && kn, KV_EUSAGE, "%s: needs \"kernel\"", what);
        j->k = kv_kernel_find(kn);
        KV_CHECK(j->k, KV_EUSAGE, "%s: unknown kernel \"%s\" (see kverify list)", what, kn);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const char *label = cJSON_GetStringValue(name);
        KV_CHECK(!name || label, KV_EUSAGE, "%s: \"name\" must be a string", what);
        char lb[600];
        snprintf(lb, sizeof lb, "%s[%s]", kn, label ? label : what);
        j->label = strdup(lb);
        struct entry_args a = {0};
        st = entry_argv(e, what, dir, &a);
        int help = 0;
        kv_kopts_init(&j->o);
        if (!st) st = kv_kopts_parse(j->k, a.argc, a.argv, &j->o, &help);
        /* The options point into the argument strings: keep them with the job. */
        j->argv = malloc(sizeof(char *) * (size_t)(a.argc + 1));
        if (j->argv) memcpy(j->argv, a.argv, sizeof(char *) * (size_t)(a.argc + 1)), j->argc = a.argc;
        else free_args(&a);
        if (st) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s", kv_error_msg());
            st = kv_error(KV_EUSAGE, "%s (%s): %s", what, kn, msg);
            goto cleanup;
        }
        KV_TRY(offset_seeds(&j->o, j->k, seed_offset, what));
        if (j->o.run.save_dir) st = kv_dir_makeable(j->o.run.save_dir);
        if (!st) st = kv_job_build(j);
        if (st == KV_EUSAGE) { /* a bad value is the suite's usage error, before anything runs */
            char msg[600];
            snprintf(msg, sizeof msg, "%s", kv_error_msg());
            st = kv_error(KV_EUSAGE, "%s (%s): %s", what, kn, msg);
            goto cleanup;
        }
        if (st) { /* files that cannot be read: this entry errors, the others run */
            j->error = st;
            snprintf(j->error_msg, sizeof j->error_msg, "%s", kv_error_msg());
            kv_job_free(j);
            st = KV_OK;
        }
        i++;
    }
cleanup:
    cJSON_Delete(root);
    return st;
}

static void free_jobs(struct kv_job *jobs, size_t n)
{
    for (size_t i = 0; jobs && i < n; i++) {
        kv_job_free(&jobs[i]);
        for (int a = 0; jobs[i].argv && a < jobs[i].argc; a++) free(jobs[i].argv[a]);
        free(jobs[i].argv);
        free((void *)jobs[i].label);
    }
    free(jobs);
}

static void run_usage(FILE *f)
{
    fprintf(f, "usage: kverify run SUITE.json [options]\n"
               "Runs every case of a suite file in one process (man kverify: SUITES).\n\n"
               "  --filter REGEX               run the cases whose name matches (POSIX extended)\n"
               "  --shard I/N                  run the I-th of N deterministic shares (1 <= I <= N) [default: 1/1]\n"
               "  --json FILE                  write the JSON report (schema 2); - for stdout\n"
               "  --junit FILE                 write a JUnit XML report\n"
               "  --markdown FILE              write the table as Markdown\n"
               "  --html FILE                  write a self-contained HTML page (plots per case and output)\n"
               "  --narrow                     a narrow table (also when the terminal is narrow)\n"
               "  --seed-offset K              every case's seeds moved on by K: new inputs each night, each\n"
               "                               case's seed in the report (entries with \"inputs\" or\n"
               "                               \"candidates\" keep theirs) [default: 0]\n"
               "  --baseline PREV.json         compare with an earlier report; exit 1 on a regression\n"
               "  --regress-factor X           growth of max bound ratio or max ULP that regresses [default: 2]\n"
               "  --device N|NAME              device index or name substring [default: a GPU, else a CPU device]\n"
               "  --timeout S                  a submission the device has not finished after S seconds (a\n"
               "                               shader that never ends) ends the run: exit 4, the case an error\n"
               "                               [default: 600 on a GPU, none on a CPU device; 0: none]\n"
               "  --verbose                    print the time split to stderr\n"
               "  --help                       this help\n"
               "\nexit: 0 pass, 1 out of tolerance or regression, 2 usage, 3 bad input data, 4 device error, "
               "77 no device\n");
}

/* --shard I/N: every N-th case starting at the I-th. */
static enum kv_status shard_option(const char *arg, struct kv_select *sel)
{
    enum kv_status st = KV_OK;
    int64_t i, m;
    char a[64];
    const char *sl = strchr(arg, '/');
    KV_CHECK(sl && (size_t)(sl - arg) < sizeof a, KV_EUSAGE, "--shard: '%s' is not I/N", arg);
    snprintf(a, sizeof a, "%.*s", (int)(sl - arg), arg);
    KV_TRY(kv_parse_i64("--shard N", sl + 1, 1, 1000000, &m));
    KV_TRY(kv_parse_i64("--shard I", a, 1, m, &i));
    sel->shard_i = (int)i, sel->shard_n = (int)m;
cleanup:
    return st;
}

int cmd_run(int argc, char **argv)
{
    enum kv_status st = KV_OK;
    struct kv_outputs out = {.regress_factor = 2};
    const char *filter = NULL;
    int64_t seed_offset = 0; /* --seed-offset */
    struct kv_select sel = {NULL, 1, 1};
    regex_t re;
    int have_re = 0, code = 0;
    struct kv_job *jobs = NULL;
    size_t n = 0;
    enum { O_FILTER = 1000, O_SHARD, O_JSON, O_JUNIT, O_MD, O_HTML, O_NARROW, O_BASE, O_FACTOR, O_DEVICE, O_VERBOSE, O_HELP,
           O_OFFSET, O_TIMEOUT };
    static const struct option opts[] = {
        {"filter", required_argument, NULL, O_FILTER},   {"shard", required_argument, NULL, O_SHARD},
        {"json", required_argument, NULL, O_JSON},       {"junit", required_argument, NULL, O_JUNIT},
        {"markdown", required_argument, NULL, O_MD},     {"baseline", required_argument, NULL, O_BASE},
        {"html", required_argument, NULL, O_HTML},       {"narrow", no_argument, NULL, O_NARROW},
        {"regress-factor", required_argument, NULL, O_FACTOR}, {"device", required_argument, NULL, O_DEVICE},
        {"verbose", no_argument, NULL, O_VERBOSE},       {"help", no_argument, NULL, O_HELP},
        {"seed-offset", required_argument, NULL, O_OFFSET}, {"timeout", required_argument, NULL, O_TIMEOUT},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    for (;;) {
        char bad[8];
        int c = getopt_long(argc, argv, ":hv", opts, NULL);
        if (c == -1) break;
        const char *arg = optarg;
        switch (c) {
        case O_FILTER: filter = arg; break;
        case O_SHARD: KV_TRY(shard_option(arg, &sel)); break;
        case O_JSON: out.json = arg; break;
        case O_JUNIT: out.junit = arg; break;
        case O_MD: out.markdown = arg; break;
        case O_HTML:
            KV_CHECK(strcmp(arg, "-"), KV_EUSAGE, "--html: give a file name (the page does not go to stdout)");
            out.html = arg;
            break;
        case O_NARROW: out.narrow = 1; break;
        case O_OFFSET: KV_TRY(kv_parse_i64("--seed-offset", arg, 0, INT64_MAX, &seed_offset)); break;
        case O_BASE: out.baseline = arg; break;
        case O_FACTOR: KV_TRY(kv_parse_f64("--regress-factor", arg, 1, 1e30, &out.regress_factor)); break;
        case O_DEVICE: KV_TRY(kv_device_option(arg, &out)); break;
        case O_TIMEOUT: KV_TRY(kv_timeout_option(arg, &out)); break;
        case 'v':
        case O_VERBOSE: out.verbose = 1; break;
        case 'h':
        case O_HELP: run_usage(stdout); return 0;
        case ':': KV_CHECK(0, KV_EUSAGE, "run: missing value for %s",
                     kv_bad_option(c, optopt, optind, argv, bad, sizeof bad)); break;
        default: KV_CHECK(0, KV_EUSAGE, "run: unknown option '%s' (see kverify run --help)",
                     kv_bad_option(c, optopt, optind, argv, bad, sizeof bad)); break;
        }
    }
    KV_CHECK(optind < argc, KV_EUSAGE, "run: no suite file given (usage: kverify run SUITE.json)");
    KV_CHECK(optind + 1 == argc, KV_EUSAGE, "run: unexpected argument '%s'", argv[optind + 1]);
    for (const char **p = (const char *[]){out.json, out.junit, out.markdown, out.html, out.baseline}, **e = p + 5;
         p < e; p++)
        KV_CHECK(!*p || **p, KV_EUSAGE, "run: empty file name");
    KV_TRY(kv_outputs_check(&out));
    if (filter) {
        int rc = regcomp(&re, filter, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char msg[256];
            regerror(rc, &re, msg, sizeof msg);
            KV_CHECK(0, KV_EUSAGE, "--filter: '%s' is not a regular expression: %s", filter, msg);
        }
        have_re = 1;
        sel.filter = &re;
    }
    KV_TRY(load_suite(argv[optind], (uint64_t)seed_offset, &jobs, &n));
    code = kv_run_jobs(jobs, n, &out, &sel);
cleanup:
    if (st) fprintf(stderr, "kverify: %s\n", kv_error_msg()), code = (int)st;
    if (have_re) regfree(&re);
    free_jobs(jobs, n);
    return code;
}

static int cmp_index(const void *a, const void *b)
{
    double x = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(*(cJSON *const *)a, "index"));
    double y = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(*(cJSON *const *)b, "index"));
    return x < y ? -1 : x > y;
}

int cmd_merge(int argc, char **argv)
{
    enum kv_status st = KV_OK;
    const char *outp = NULL;
    cJSON *merged = NULL, *part = NULL, **items = NULL;
    size_t n_items = 0, cap = 0;
    int n_in = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            KV_CHECK(i + 1 < argc && *argv[i + 1], KV_EUSAGE, "merge: -o needs a file name");
            outp = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: kverify merge A.json B.json ... -o ALL.json\n"
                   "Merges the reports of the shards of a run (kverify run --shard I/N) into the report the\n"
                   "whole run writes: cases in their original order, the summary recounted.\n");
            return 0;
        }
        KV_CHECK(argv[i][0] != '-' || !argv[i][1], KV_EUSAGE, "merge: unknown option '%s'", argv[i]);
        n_in++;
    }
    KV_CHECK(outp, KV_EUSAGE, "merge: no output given (-o ALL.json)");
    KV_CHECK(n_in > 0, KV_EUSAGE, "merge: no reports given");
    struct kv_outputs o = {.json = outp};
    KV_TRY(kv_outputs_check(&o));
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) { i++; continue; }
        KV_TRY(kv_report_read(argv[i], &part));
        if (!merged) {
            merged = cJSON_CreateObject();
            KV_CHECK(merged, KV_EDATA, "out of memory");
            cJSON_AddItemToObject(merged, "kverify", cJSON_DetachItemFromObjectCaseSensitive(part, "kverify"));
            /* the merged report's command is the merge, not a shard's run */
            cJSON *kv = cJSON_GetObjectItemCaseSensitive(merged, "kverify");
            cJSON_DeleteItemFromObjectCaseSensitive(kv, "command");
            if (kv_report_command()[0]) cJSON_AddStringToObject(kv, "command", kv_report_command());
            cJSON *dev = cJSON_DetachItemFromObjectCaseSensitive(part, "device");
            cJSON_AddItemToObject(merged, "device", dev ? dev : cJSON_CreateNull());
        }
        cJSON *cs = cJSON_GetObjectItemCaseSensitive(part, "cases"), *c;
        while ((c = cJSON_DetachItemFromArray(cs, 0))) {
            KV_CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(c, "index")), KV_EDATA,
                     "%s: a case has no \"index\" (a report from an older kverify?)", argv[i]);
            if (n_items == cap) {
                cap = cap ? 2 * cap : 64;
                cJSON **p = realloc(items, cap * sizeof *p);
                KV_CHECK(p, KV_EDATA, "out of memory");
                items = p;
            }
            items[n_items++] = c;
        }
        cJSON_Delete(part);
        part = NULL;
    }
    qsort(items, n_items, sizeof *items, cmp_index);
    for (size_t i = 1; i < n_items; i++)
        KV_CHECK(cmp_index(&items[i - 1], &items[i]) != 0, KV_EDATA,
                 "merge: two reports hold case %g (the same shard twice?)",
                 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(items[i], "index")));
    cJSON *arr = cJSON_AddArrayToObject(merged, "cases");
    for (size_t i = 0; i < n_items; i++) cJSON_AddItemToArray(arr, items[i]);
    n_items = 0;
    kv_json_set_summary(merged);
    KV_TRY(kv_json_write(merged, outp));
cleanup:
    for (size_t i = 0; i < n_items; i++) cJSON_Delete(items[i]);
    free(items);
    cJSON_Delete(part);
    cJSON_Delete(merged);
    if (st) fprintf(stderr, "kverify: %s\n", kv_error_msg());
    return (int)st;
}

int cmd_compare(int argc, char **argv)
{
    enum kv_status st = KV_OK;
    double factor = 2;
    const char *files[2];
    int nf = 0;
    cJSON *a = NULL, *b = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--regress-factor")) {
            KV_CHECK(i + 1 < argc, KV_EUSAGE, "compare: missing value for --regress-factor");
            KV_TRY(kv_parse_f64("--regress-factor", argv[++i], 1, 1e30, &factor));
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: kverify compare PREV.json CUR.json [--regress-factor X]\n"
                   "Lists per case and output what got worse (newly failing, newly NaN/Inf, max bound ratio or\n"
                   "max ULP grown by more than X [default: 2], cases or outputs removed) and what improved;\n"
                   "exit 1 on any regression.\n");
            return 0;
        } else {
            KV_CHECK(argv[i][0] != '-', KV_EUSAGE, "compare: unknown option '%s'", argv[i]);
            KV_CHECK(nf < 2, KV_EUSAGE, "compare: unexpected argument '%s' (two reports: PREV.json CUR.json)", argv[i]);
            files[nf++] = argv[i];
        }
    }
    KV_CHECK(nf == 2, KV_EUSAGE, "compare: needs two reports (kverify compare PREV.json CUR.json)");
    KV_TRY(kv_report_read(files[0], &a));
    KV_TRY(kv_report_read(files[1], &b));
    st = kv_regressions(a, b, factor, stdout) ? 1 : 0;
cleanup:
    if (st > 1) fprintf(stderr, "kverify: %s\n", kv_error_msg());
    cJSON_Delete(a);
    cJSON_Delete(b);
    return (int)st;
}

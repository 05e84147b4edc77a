/* `kverify <kernel> [options]`: build the cases, run them, report. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd_kernel.h"

#include "cli/commands.h"
#include "core/parse.h"
#include "formats/save.h"
#include "formats/source.h"
#include "pipeline/run.h"

enum {
    OPT_SEED = 1000, OPT_SEEDS, OPT_SWEEP, OPT_REPEAT, OPT_JSON, OPT_DEVICE, OPT_SHADER, OPT_NO_SUBGROUP, OPT_NO_8BIT, OPT_JUNIT, OPT_MARKDOWN, OPT_HTML, OPT_NARROW, OPT_ABI, OPT_BASELINE, OPT_REGRESS, OPT_BENCH, OPT_BENCH_WARMUP,
    OPT_LAMBDA, OPT_MAX_ULP, OPT_RTOL, OPT_ATOL, OPT_MAX_NMSE, OPT_VERBOSE, OPT_TIMEOUT, OPT_HELP, OPT_INPUTS,
    OPT_CANDIDATE, OPT_SAVE, OPT_NO_DEVICE, OPT_ORACLE, OPT_SAMPLE, OPT_MAX_GROUPS, OPT_STRESS, OPT_NO_STRESS, OPT_FAIL_FAST,
    OPT_SANITIZE, OPT_NO_SANITIZE, OPT_SAVE_FORMAT,
    OPT_PARAM = 2000,
};

static const struct option common_opts[] = {
    {"seed", required_argument, NULL, OPT_SEED},
    {"seeds", required_argument, NULL, OPT_SEEDS},
    {"sweep", no_argument, NULL, OPT_SWEEP},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {"bench", required_argument, NULL, OPT_BENCH},
    {"bench-warmup", required_argument, NULL, OPT_BENCH_WARMUP},
    {"json", required_argument, NULL, OPT_JSON},
    {"junit", required_argument, NULL, OPT_JUNIT},
    {"markdown", required_argument, NULL, OPT_MARKDOWN},
    {"html", required_argument, NULL, OPT_HTML},
    {"narrow", no_argument, NULL, OPT_NARROW},
    {"abi", required_argument, NULL, OPT_ABI},
    {"baseline", required_argument, NULL, OPT_BASELINE},
    {"regress-factor", required_argument, NULL, OPT_REGRESS},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"shader", required_argument, NULL, OPT_SHADER},
    {"no-subgroup", no_argument, NULL, OPT_NO_SUBGROUP},
    {"no-8bit-storage", no_argument, NULL, OPT_NO_8BIT},
    {"lambda", required_argument, NULL, OPT_LAMBDA},
    {"max-ulp", required_argument, NULL, OPT_MAX_ULP},
    {"rtol", required_argument, NULL, OPT_RTOL},
    {"atol", required_argument, NULL, OPT_ATOL},
    {"max-nmse", required_argument, NULL, OPT_MAX_NMSE},
    {"verbose", no_argument, NULL, OPT_VERBOSE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"inputs", required_argument, NULL, OPT_INPUTS},
    {"candidate", required_argument, NULL, OPT_CANDIDATE},
    {"save", required_argument, NULL, OPT_SAVE},
    {"save-format", required_argument, NULL, OPT_SAVE_FORMAT},
    {"no-device", no_argument, NULL, OPT_NO_DEVICE},
    {"oracle", required_argument, NULL, OPT_ORACLE},
    {"sample", required_argument, NULL, OPT_SAMPLE},
    {"max-groups", required_argument, NULL, OPT_MAX_GROUPS},
    {"stress", no_argument, NULL, OPT_STRESS},
    {"no-stress", no_argument, NULL, OPT_NO_STRESS},
    {"sanitize", no_argument, NULL, OPT_SANITIZE},
    {"no-sanitize", no_argument, NULL, OPT_NO_SANITIZE},
    {"fail-fast", no_argument, NULL, OPT_FAIL_FAST},
    {"help", no_argument, NULL, OPT_HELP},
};

/* kernel_usage's last part: the reports, the device, the run. */
static void output_usage(FILE *f)
{
    fputs("\noutput:\n"
          "  --json FILE                  write the JSON report (schema 2); - for stdout\n"
          "  --junit FILE                 write a JUnit XML report (a testcase per case and output)\n"
          "  --markdown FILE              write the table as Markdown (for pull-request comments)\n"
          "  --html FILE                  write a self-contained HTML page: error histograms, error\n"
          "                               maps, worst elements per output (no - : a file)\n"
          "  --narrow                     a narrow table (also when the terminal is narrow)\n"
          "  --baseline PREV.json         compare with an earlier report; exit 1 on a regression\n"
          "  --regress-factor X           growth of max bound ratio or max ULP that regresses [default: 2]\n"
          "  --device N|NAME              pick a device (kverify devices) [default: best GPU, else CPU]\n"
          "  --timeout S                  a submission the device has not finished after S seconds (a\n"
          "                               shader that never ends) ends the run: exit 4, the case an error\n"
          "                               [default: 600 on a GPU, none on a CPU device; 0: none]\n"
          "  --verbose                    print where the time went, to stderr\n"
          "  --help                       this help\n"
          "\nexit: 0 pass, 1 out of tolerance, 2 usage, 3 bad input data, 4 device error, 77 no device\n",
          f);
}

static void kernel_usage(const struct kv_kernel *k, FILE *f)
{
    fprintf(f, "usage: kverify %s [options]\n%s\n\nkernel parameters:\n", k->name, k->summary);
    for (int i = 0; i < k->n_params; i++) {
        const struct kv_param_def *p = &k->params[i];
        char flag[64];
        snprintf(flag, sizeof flag, "--%s %s", p->name,
                 p->type == KV_PARAM_CHOICE ? p->choices : p->type == KV_PARAM_INT ? "N" : "X");
        fprintf(f, "  %-28s %s [default: %s]\n", flag, p->help, p->def);
    }
    fprintf(f, "\ncases:\n"
               "  --seed S                     first seed [default: 1]\n"
               "  --seeds N|A..B               seeds per shape: S, S+1, ..., or the range A..B\n"
               "                               [default: 1; with --sweep: %d]\n"
               "  --sweep                      run the kernel's built-in shapes (kverify list)\n"
               "  --fail-fast                  stop after the first case that fails or errs\n"
               "  --repeat N                   run the device N times, fail on any difference [default: 1]\n"
               "  --bench N                    time each stage N times back to back after 3 warm-up runs:\n"
               "                               min and median, GB/s, GFLOP/s [default: off]\n"
               "  --bench-warmup S             keep the device busy S seconds (0..60) before timing, so\n"
               "                               that its clocks leave their idle state [default: 0.5]\n"
               "  --stress                     also run each case with at most 1 and 3 workgroups per\n"
               "                               dispatch and with each workgroup's subgroups in reverse\n"
               "                               order; a differing output is judged as a row of its own\n"
               "                               [default: on with --sweep]\n"
               "  --no-stress                  no stress runs, also with --sweep\n"
               "  --sanitize                   run each case's shaders instrumented: out-of-bounds indices\n"
               "                               (memcheck), shared-memory races (racecheck), reads of\n"
               "                               shared memory never written (initcheck) and a buffer\n"
               "                               element stored by one workgroup and accessed by another,\n"
               "                               or by two invocations with no barrier between\n"
               "                               (racecheck-global) fail the case, each a row of its own\n"
               "                               [default: on with the stress runs; alone, the only extra\n"
               "                               run]\n"
               "  --no-sanitize                no sanitized run, also with --sweep or --stress\n"
               "  --max-groups N               at most N workgroups per dispatch, so that grid-stride\n"
               "                               loops iterate [default: the device's limit]\n"
               "  --shader STAGE=FILE          replace a stage's shader (.comp or .spv; kverify list --abi)\n"
               "  --abi [STAGE=]FILE.json      the --shader's own interface: bindings, push constants,\n"
               "                               defines, dispatch (man kverify, VERIFY YOUR OWN SHADER)\n"
               "  --no-subgroup                use the shared-memory reduction shaders\n"
               "  --no-8bit-storage            read and write 8-bit codes as packed words\n"
               "\nfiles (man kverify: FILES):\n"
               "  --inputs PATH                inputs from a directory of NAME.npy, an .npz, a .safetensors\n"
               "                               or a .json fixture; shapes infer the size parameters\n"
               "  --candidate OUTPUT=FILE.npy  judge an output computed elsewhere instead of the device\n"
               "                               (also OUTPUT=FILE.safetensors: that file's tensor OUTPUT)\n"
               "  --candidate FILE.safetensors judge every output the file holds, by name\n"
               "  --no-device                  never open a device: judge the candidates (with --save and\n"
               "                               none, write the case and judge nothing)\n"
               "  --save DIR                   write inputs, device and oracle outputs, report per case\n"
               "  --save-format FMT            --save's tensors: npy (.npy files in folders) or safetensors\n"
               "                               (inputs, device, oracle.safetensors) [default: npy]\n"
               "  --oracle spec|exact|both     judge against the spec oracle (the kernel's intended\n"
               "                               roundings) or the exact one; both shows the exact\n"
               "                               oracle's rows beside, not judged [default: spec]\n"
               "  --sample N                   verify N random elements per output, plus its last row and\n"
               "                               column and tile edges, instead of all (intermediates too)\n"
               "                               [default: all]\n"
               "\ntolerance (man kverify, METRICS; any override replaces the default bound):\n"
               "  --lambda X                   probabilistic bound factor [default: 8]\n"
               "  --max-ulp X                  pass when max ULP error <= X\n"
               "  --rtol X, --atol X           pass when |c-y| <= atol + rtol*|y|\n"
               "  --max-nmse X                 pass when NMSE <= X\n",
            k->sweep_seeds);
    output_usage(f);
}

static enum kv_status oracle_option(const struct kv_kernel *k, const char *arg, struct kopts *o)
{
    enum kv_status st = KV_OK;
    if (!strcmp(arg, "spec")) o->run.oracle = KV_ORACLE_SPEC;
    else if (!strcmp(arg, "exact")) o->run.oracle = KV_ORACLE_EXACT;
    else if (!strcmp(arg, "both")) o->run.oracle = KV_ORACLE_BOTH;
    else KV_CHECK(0, KV_EUSAGE, "--oracle: '%s' is not one of spec|exact|both", arg);
    KV_CHECK(k->has_exact || o->run.oracle == KV_ORACLE_SPEC, KV_EUSAGE,
             "--oracle %s: %s rounds only at its outputs, so its spec oracle is the exact one", arg, k->name);
cleanup:
    return st;
}

/* --seeds N, or an inclusive range A..B. */
static enum kv_status seeds_option(const char *arg, struct kopts *o)
{
    enum kv_status st = KV_OK;
    int64_t v;
    if (strstr(arg, "..")) {
        uint64_t lo, hi;
        KV_TRY(kv_parse_range("--seeds", arg, &lo, &hi));
        KV_CHECK(hi - lo < 100000, KV_EUSAGE, "--seeds: range '%s' has more than 100000 seeds", arg);
        o->seed_from_range = 1;
        o->range_lo = lo;
        o->seeds = hi - lo + 1;
    } else {
        KV_TRY(kv_parse_i64("--seeds", arg, 1, 100000, &v));
        o->seeds = (uint64_t)v;
        o->seed_from_range = 0;
    }
    o->seeds_given = 1;
cleanup:
    return st;
}

/* --shader STAGE=FILE. */
enum kv_status kv_shader_option(const struct kv_kernel *k, const char *arg, struct kv_run_opts *run)
{
    enum kv_status st = KV_OK;
    const char *eq = strchr(arg, '=');
    KV_CHECK(eq && eq != arg && eq[1], KV_EUSAGE, "--shader: '%s' is not STAGE=FILE", arg);
    int s;
    for (s = 0; s < k->n_stages; s++)
        if (strlen(k->stages[s].name) == (size_t)(eq - arg) && !strncmp(k->stages[s].name, arg, (size_t)(eq - arg)))
            break;
    KV_CHECK(s < k->n_stages, KV_EUSAGE, "--shader: %s has no stage '%.*s' (see kverify list)", k->name,
             (int)(eq - arg), arg);
    run->shader[s] = eq + 1;
cleanup:
    return st;
}

enum kv_status kv_device_option(const char *arg, struct kv_outputs *out)
{
    enum kv_status st = KV_OK;
    KV_CHECK(*arg && !strchr(arg, '\n'), KV_EUSAGE, "--device: empty device index or name");
    if (out->device) { /* repeated: a list */
        size_t n = strlen(out->devices);
        if (!n) n = (size_t)snprintf(out->devices, sizeof out->devices, "%s", out->device);
        KV_CHECK(n + strlen(arg) + 2 < sizeof out->devices, KV_EUSAGE, "--device: too many");
        snprintf(out->devices + n, sizeof out->devices - n, "\n%s", arg);
        out->device = out->devices;
    } else {
        out->device = arg;
    }
cleanup:
    return st;
}

enum kv_status kv_timeout_option(const char *arg, struct kv_outputs *out)
{
    out->timeout_given = 1;
    return kv_parse_f64("--timeout", arg, 0, 1e6, &out->timeout_s);
}

/* The report files, the baseline, the device, the timeout. */
static enum kv_status output_option(int c, const char *arg, struct kv_outputs *out)
{
    enum kv_status st = KV_OK;
    switch (c) {
    case OPT_HTML:
        KV_CHECK(*arg && strcmp(arg, "-"), KV_EUSAGE, "--html: give a file name (the page does not go to stdout)");
        out->html = arg;
        break;
    case OPT_NARROW: out->narrow = 1; break;
    case OPT_JSON:
    case OPT_JUNIT:
    case OPT_MARKDOWN: {
        const char *flag = c == OPT_JSON ? "--json" : c == OPT_JUNIT ? "--junit" : "--markdown";
        KV_CHECK(*arg, KV_EUSAGE, "%s: empty file name", flag);
        *(c == OPT_JSON ? &out->json : c == OPT_JUNIT ? &out->junit : &out->markdown) = arg;
        break;
    }
    case OPT_BASELINE:
        KV_CHECK(*arg, KV_EUSAGE, "--baseline: empty file name");
        out->baseline = arg;
        break;
    case OPT_REGRESS: KV_TRY(kv_parse_f64("--regress-factor", arg, 1, 1e30, &out->regress_factor)); break;
    case OPT_DEVICE: KV_TRY(kv_device_option(arg, out)); break;
    case OPT_TIMEOUT: KV_TRY(kv_timeout_option(arg, out)); break;
    }
cleanup:
    return st;
}

/* The criteria of a pass (core/compare.h). */
static enum kv_status criteria_option(int c, const char *arg, struct kv_criteria *crit)
{
    enum kv_status st = KV_OK;
    switch (c) {
    case OPT_LAMBDA: KV_TRY(kv_parse_f64("--lambda", arg, 0, 1e6, &crit->lambda)); break;
    case OPT_MAX_ULP: KV_TRY(kv_parse_f64("--max-ulp", arg, 0, 1e30, &crit->max_ulp)); break;
    case OPT_RTOL: KV_TRY(kv_parse_f64("--rtol", arg, 0, 1e30, &crit->rtol)); break;
    case OPT_ATOL: KV_TRY(kv_parse_f64("--atol", arg, 0, 1e30, &crit->atol)); break;
    case OPT_MAX_NMSE: KV_TRY(kv_parse_f64("--max-nmse", arg, 0, 1e30, &crit->max_nmse)); break;
    }
cleanup:
    return st;
}

/* How the device runs a case: repeats, group caps, timing. */
static enum kv_status device_option(int c, const char *arg, struct kv_run_opts *run)
{
    enum kv_status st = KV_OK;
    int64_t v;
    switch (c) {
    case OPT_MAX_GROUPS:
        KV_TRY(kv_parse_i64("--max-groups", arg, 1, UINT32_MAX, &v));
        run->max_groups = (uint32_t)v;
        break;
    case OPT_BENCH:
        KV_TRY(kv_parse_i64("--bench", arg, 1, 1000, &v));
        run->bench = (int)v;
        break;
    case OPT_BENCH_WARMUP: KV_TRY(kv_parse_f64("--bench-warmup", arg, 0, 60, &run->bench_warmup_s)); break;
    case OPT_REPEAT:
        KV_TRY(kv_parse_i64("--repeat", arg, 1, 64, &v));
        run->repeat = (int)v;
        break;
    }
cleanup:
    return st;
}

/* The seed, and the files: --inputs, --candidate, --save. */
static enum kv_status files_option(int c, const char *arg, struct kopts *o)
{
    enum kv_status st = KV_OK;
    int64_t v;
    switch (c) {
    case OPT_SEED:
        KV_TRY(kv_parse_i64("--seed", arg, 0, INT64_MAX, &v));
        o->seed = (uint64_t)v;
        o->seed_given = 1;
        break;
    case OPT_INPUTS:
        KV_CHECK(*arg, KV_EUSAGE, "--inputs: empty path");
        o->inputs = arg;
        break;
    case OPT_CANDIDATE:
        KV_CHECK(o->n_candidates < (int)(sizeof o->candidate / sizeof *o->candidate), KV_EUSAGE,
                 "--candidate: too many");
        o->candidate[o->n_candidates++] = arg;
        break;
    case OPT_SAVE:
        KV_CHECK(*arg, KV_EUSAGE, "--save: empty directory name");
        o->run.save_dir = arg;
        break;
    case OPT_SAVE_FORMAT:
        KV_CHECK(!strcmp(arg, "npy") || !strcmp(arg, "safetensors"), KV_EUSAGE,
                 "--save-format: '%s' is not npy or safetensors", arg);
        o->run.save_format = !strcmp(arg, "safetensors") ? KV_SAVE_SAFETENSORS : KV_SAVE_NPY;
        o->save_format_given = 1;
        break;
    }
cleanup:
    return st;
}

/* --abi STAGE=FILE (or FILE when one stage has --shader): the foreign
 * shader's interface, read now so that a bad file stops before any work. */
static enum kv_status load_abi(const struct kv_kernel *k, struct kopts *o)
{
    enum kv_status st = KV_OK;
    for (int i = 0; i < o->n_abi; i++) {
        const char *arg = o->abi_arg[i], *eq = strchr(arg, '='), *file = arg;
        int s = -1, n_shaders = 0;
        for (int q = 0; q < k->n_stages; q++) n_shaders += o->run.shader[q] != NULL;
        if (eq) {
            for (int q = 0; q < k->n_stages; q++)
                if (strlen(k->stages[q].name) == (size_t)(eq - arg) && !strncmp(k->stages[q].name, arg, (size_t)(eq - arg))) s = q;
            KV_CHECK(s >= 0, KV_EUSAGE, "--abi: %s has no stage '%.*s' (see kverify list)", k->name, (int)(eq - arg), arg);
            file = eq + 1;
        } else {
            KV_CHECK(n_shaders == 1, KV_EUSAGE, "--abi %s: name the stage (--abi STAGE=FILE) when %s", arg,
                     n_shaders ? "several stages have --shader" : "no stage has --shader");
            for (int q = 0; q < k->n_stages; q++)
                if (o->run.shader[q]) s = q;
        }
        KV_CHECK(o->run.shader[s], KV_EUSAGE, "--abi %s: stage %s has no --shader (the file describes a shader)", arg,
                 k->stages[s].name);
        KV_CHECK(!o->abi[s], KV_EUSAGE, "--abi: stage %s given twice", k->stages[s].name);
        o->abi[s] = malloc(sizeof *o->abi[s]);
        KV_CHECK(o->abi[s], KV_EUSAGE, "out of memory");
        KV_TRY(kv_abi_load(k, s, file, o->abi[s]));
        o->run.abi[s] = o->abi[s];
    }
cleanup:
    return st;
}

/* The arguments of option c (argv[prev] up to optind) into o->repro where a
 * case's command must repeat them to reproduce its verdict. A parameter is
 * kept only beside --inputs (the case's command names every parameter
 * otherwise); kv_kopts_parse runs before --inputs is known, so parameters
 * are kept apart and added at the end. */
static void repro_keep(int c, int argc, char **argv, int prev, struct kopts *o)
{
    /* the cases' choice, the reports and the device, which each case's command adds itself */
    static const int not_kept[] = {OPT_SEED, OPT_SEEDS, OPT_SWEEP, OPT_STRESS, OPT_NO_STRESS, OPT_FAIL_FAST,
                                   OPT_BENCH, OPT_BENCH_WARMUP, OPT_JSON, OPT_JUNIT, OPT_MARKDOWN, OPT_HTML,
                                   OPT_NARROW, OPT_BASELINE, OPT_REGRESS, OPT_DEVICE, OPT_SAVE, OPT_SAVE_FORMAT, OPT_VERBOSE, OPT_TIMEOUT,
                                   OPT_HELP, 'v', 'h', ':', '?'};
    for (size_t i = 0; i < sizeof not_kept / sizeof *not_kept; i++)
        if (c == not_kept[i]) return;
    if (c >= OPT_PARAM) return;
    for (int i = prev; i < optind && i < argc; i++) o->repro_cut |= !kv_shell_append(o->repro, sizeof o->repro, argv[i]);
}

/* Beside --inputs, a case's command repeats the parameters as given. */
static void repro_params(const struct kv_kernel *k, struct kopts *o)
{
    for (int i = 0; o->inputs && i < k->n_params; i++)
        if (o->set[i]) {
            char flag[64];
            snprintf(flag, sizeof flag, "--%s", k->params[i].name);
            o->repro_cut |= !kv_shell_append(o->repro, sizeof o->repro, flag);
            o->repro_cut |= !kv_shell_append(o->repro, sizeof o->repro, o->set[i]);
        }
}

/* What the options imply together, once all are read. */
static enum kv_status kopts_finish(const struct kv_kernel *k, struct kopts *o)
{
    enum kv_status st = KV_OK;
    if (o->seed_from_range) o->seed = o->range_lo, o->seed_given = 1;
    repro_params(k, o);
    o->run.stress = o->stress > 0 || (o->stress == 0 && o->sweep);
    o->run.sanitize = o->sanitize > 0 ? (o->run.stress ? 1 : 2) : o->sanitize == 0 && o->run.stress;
    KV_CHECK(!(o->sweep && o->inputs), KV_EUSAGE, "--sweep and --inputs exclude each other");
    KV_CHECK(!o->save_format_given || o->run.save_dir, KV_EUSAGE, "--save-format: needs --save DIR");
    KV_TRY(load_abi(k, o));
    KV_TRY(kv_outputs_check(&o->out));
cleanup:
    return st;
}

enum kv_status kv_kopts_parse(const struct kv_kernel *k, int argc, char **argv, struct kopts *o, int *help)
{
    enum kv_status st = KV_OK;
    struct option opts[64];
    int n = 0;
    for (size_t i = 0; i < sizeof common_opts / sizeof *common_opts; i++) opts[n++] = common_opts[i];
    for (int i = 0; i < k->n_params; i++)
        opts[n++] = (struct option){k->params[i].name, required_argument, NULL, OPT_PARAM + i};
    opts[n] = (struct option){0, 0, 0, 0};
    optind = 1;
    opterr = 0;
    for (;;) {
        int prev = optind;
        char bad[8];
        int c = getopt_long(argc, argv, ":hv", opts, NULL);
        if (c == -1) break;
        const char *arg = optarg;
        repro_keep(c, argc, argv, prev, o);
        switch (c) {
        case OPT_SEED:
        case OPT_INPUTS:
        case OPT_CANDIDATE:
        case OPT_SAVE:
        case OPT_SAVE_FORMAT: KV_TRY(files_option(c, arg, o)); break;
        case OPT_NO_DEVICE: o->no_device = 1; break;
        case OPT_SAMPLE: KV_TRY(kv_parse_i64("--sample", arg, 1, 100000000, &o->run.sample)); break;
        case OPT_ORACLE: KV_TRY(oracle_option(k, arg, o)); break;
        case OPT_SEEDS: KV_TRY(seeds_option(arg, o)); break;
        case OPT_SWEEP: o->sweep = 1; break;
        case OPT_STRESS: o->stress = 1; break;
        case OPT_NO_STRESS: o->stress = -1; break;
        case OPT_SANITIZE: o->sanitize = 1; break;
        case OPT_NO_SANITIZE: o->sanitize = -1; break;
        case OPT_FAIL_FAST: o->run.fail_fast = 1; break;
        case OPT_BENCH:
        case OPT_BENCH_WARMUP:
        case OPT_REPEAT:
        case OPT_MAX_GROUPS: KV_TRY(device_option(c, arg, &o->run)); break;
        case OPT_JSON:
        case OPT_JUNIT:
        case OPT_MARKDOWN:
        case OPT_HTML:
        case OPT_NARROW:
        case OPT_BASELINE:
        case OPT_REGRESS:
        case OPT_DEVICE:
        case OPT_TIMEOUT: KV_TRY(output_option(c, arg, &o->out)); break;
        case OPT_SHADER: KV_TRY(kv_shader_option(k, arg, &o->run)); break;
        case OPT_ABI:
            KV_CHECK(*arg && o->n_abi < KV_MAX_STAGES, KV_EUSAGE, "--abi: %s", *arg ? "given too often" : "empty file name");
            o->abi_arg[o->n_abi++] = arg;
            break;
        case OPT_NO_SUBGROUP: o->run.no_subgroup = 1; break;
        case OPT_NO_8BIT: o->run.no_8bit = 1; break;
        case OPT_LAMBDA:
        case OPT_MAX_ULP:
        case OPT_RTOL:
        case OPT_ATOL:
        case OPT_MAX_NMSE: KV_TRY(criteria_option(c, arg, &o->run.crit)); break;
        case 'v':
        case OPT_VERBOSE: o->out.verbose = 1; break;
        case 'h':
        case OPT_HELP: *help = 1; break;
        case ':': KV_CHECK(0, KV_EUSAGE, "%s: missing value for %s", k->name,
                     kv_bad_option(c, optopt, optind, argv, bad, sizeof bad)); break;
        case '?':
            KV_CHECK(0, KV_EUSAGE, "%s: unknown option '%s' (see kverify %s --help)", k->name,
                     kv_bad_option(c, optopt, optind, argv, bad, sizeof bad), k->name);
            break;
        default:
            if (c >= OPT_PARAM && c < OPT_PARAM + k->n_params) o->set[c - OPT_PARAM] = arg;
            break;
        }
    }
    KV_CHECK(optind >= argc, KV_EUSAGE, "%s: unexpected argument '%s'", k->name, argv[optind]);
    KV_TRY(kopts_finish(k, o));
cleanup:
    return st;
}

enum kv_status kv_outputs_check(const struct kv_outputs *o)
{
    enum kv_status st = KV_OK;
    const char *reports[4] = {o->json, o->junit, o->markdown, o->html};
    const char *flags[4] = {"--json", "--junit", "--markdown", "--html"};
    int to_stdout = 0;
    for (int i = 0; i < 4; i++) {
        if (!reports[i]) continue;
        if (!strcmp(reports[i], "-")) {
            KV_CHECK(!to_stdout++, KV_EUSAGE, "%s -: only one report can go to stdout", flags[i]);
            continue;
        }
        /* Fail before any work rather than after it. */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", reports[i]);
        char *slash = strrchr(dir, '/');
        if (slash) slash[slash == dir] = '\0';
        const char *d = slash ? dir : ".";
        KV_CHECK(access(d, W_OK) == 0, KV_EUSAGE, "%s: cannot write to directory '%s'", flags[i], d);
    }
cleanup:
    return st;
}

int cmd_kernel(const struct kv_kernel *k, int argc, char **argv)
{
    struct kv_job job;
    memset(&job, 0, sizeof job);
    job.k = k;
    kv_kopts_init(&job.o);
    int help = 0, code;
    enum kv_status st = kv_kopts_parse(k, argc, argv, &job.o, &help);
    if (!st && help) {
        kernel_usage(k, stdout);
        kv_job_free(&job);
        return 0;
    }
    if (!st) st = kv_job_build(&job); /* bad files stop here, before --save's folder is checked */
    if (!st && job.o.run.save_dir) st = kv_dir_makeable(job.o.run.save_dir);
    if (st) {
        fprintf(stderr, "kverify: %s\n", kv_error_msg());
        kv_job_free(&job);
        return (int)st;
    }
    struct kv_select all = {NULL, 1, 1};
    code = kv_run_jobs(&job, 1, &job.o.out, &all);
    kv_job_free(&job);
    return code;
}

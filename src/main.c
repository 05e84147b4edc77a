/* kverify: the command table and the only exit(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/version.h"
#include "kernels/blas_core.h"
#include "reports/report.h"
#include "specs/spec.h"

#include "kv_commit.h" /* KV_COMMIT, written at build time (scripts/commit-header.cmake) */

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
};

static const struct command commands[] = {
    {"list", cmd_list, "kernels, stages, outputs, parameters (--abi: stage interfaces)"},
    {"devices", cmd_devices, "usable Vulkan devices and what they support"},
    {"run", cmd_run, "run a suite file of cases in one process (--shard I/N, --filter, --baseline)"},
    {"merge", cmd_merge, "merge shard reports into the report of the whole run (-o ALL.json)"},
    {"compare", cmd_compare, "regressions between two reports (exit 1 on any)"},
    {"mutate", cmd_mutate, "mutation score of a kernel's sweep against one-site bugs in its shaders"},
    {"report", cmd_report, "an HTML page from saved JSON reports: one run, before/after, or a trend over runs"},
};

void kv_usage(FILE *f)
{
    fprintf(f, "usage: kverify COMMAND [options]\n"
               "Verifies GPU training kernels on a Vulkan device against a float64 oracle.\n\n"
               "kernels (kverify KERNEL --help for options):\n");
    for (int i = 0; kv_kernel_at(i); i++) fprintf(f, "  %-14s %s\n", kv_kernel_at(i)->name, kv_kernel_at(i)->summary);
    fprintf(f, "\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\noptions:\n  --help         this help\n  --version      print the version\n"
               "  --kernels DIR  also the spec kernels (*.kernel.json) in DIR, anywhere on the line (repeatable)\n"
               "\nexample: kverify rmsnorm-bwd --rows 512 --dim 4096 --json report.json\n"
               "exit: 0 pass, 1 out of tolerance, 2 usage, 3 bad input data, 4 device error, 77 no device\n"
               "environment: KVERIFY_VALIDATE=1 enables the Khronos validation layer (errors exit 4)\n");
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "kverify: no command given (usage: kverify COMMAND [options]; see kverify --help)\n");
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        kv_usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("kverify %s%s%s\n", KV_VERSION, KV_COMMIT[0] ? ", commit " : "", KV_COMMIT);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    const struct kv_kernel *k = kv_kernel_find(cmd);
    if (k) return cmd_kernel(k, argc - 1, argv + 1);
    fprintf(stderr, "kverify: unknown command '%s' (see kverify --help)\n", cmd);
    return 2;
}

/* --kernels DIR (or --kernels=DIR), anywhere on the line: folders of spec
 * kernels, taken out of argv before the command sees it. */
static int take_kernel_dirs(int *argc, char **argv, const char **dirs, int max)
{
    int n = 0, o = 1;
    for (int i = 1; i < *argc; i++) {
        const char *d = NULL;
        if (!strcmp(argv[i], "--kernels")) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "kverify: --kernels needs a folder\n");
                return -1;
            }
            d = argv[++i];
        } else if (!strncmp(argv[i], "--kernels=", 10)) {
            d = argv[i] + 10;
        }
        if (!d) {
            argv[o++] = argv[i];
            continue;
        }
        if (n == max) {
            fprintf(stderr, "kverify: --kernels given more than %d times\n", max);
            return -1;
        }
        dirs[n++] = d;
    }
    *argc = o;
    argv[o] = NULL;
    return n;
}

int main(int argc, char **argv)
{
    kv_blas_core_fit(argv); /* may run this process again, with BLAS kernels the CPU runs */
    kv_report_set_command(argc, argv);
    const char *dirs[16];
    int n_dirs = take_kernel_dirs(&argc, argv, dirs, 16);
    if (n_dirs < 0) exit(2);
    enum kv_status st = kv_specs_load(dirs, n_dirs);
    if (st) {
        fprintf(stderr, "kverify: %s\n", kv_error_msg());
        exit(st == KV_EUSAGE ? 2 : 3);
    }
    exit(dispatch(argc, argv));
}

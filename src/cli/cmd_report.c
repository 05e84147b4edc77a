/* `kverify report A.json [B.json ...] --html OUT [--json DATA]`: an HTML page
 * from saved reports, no device needed. One report: its page, as --html
 * draws it. Two: before and after per case and output. More, in run order:
 * each output's largest bound ratio and ULP over the runs, with the runs
 * that regress against the one before marked (as kverify compare judges). */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_kernel.h"
#include "cli/commands.h"
#include "core/parse.h"
#include "reports/html.h"
#include "reports/report.h"
#include "reports/regress.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: kverify report REPORT.json [REPORT.json ...] --html OUT.html [options]\n"
               "An HTML page from saved JSON reports (kverify --json), in run order: one report\n"
               "gives its page; two a before/after view per case and output; more a trend of each\n"
               "output's max bound ratio and max ULP over the runs, regressions marked.\n\n"
               "  --html FILE            the page (required), written atomically\n"
               "  --json FILE            the trend data: runs, and per case and output the values\n"
               "                         and the runs that regress; - for stdout\n"
               "  --regress-factor F     growth that counts as a regression [default: 2]\n"
               "  --help                 this help\n"
               "exit: 0 written (regressions do not change it), 2 usage, 3 unreadable report\n");
}

int cmd_report(int argc, char **argv)
{
    enum kv_status st = KV_OK;
    struct kv_outputs out = {.regress_factor = 2};
    cJSON **reps = NULL, *data = NULL;
    int n = 0;
    enum { O_HTML = 1000, O_JSON, O_FACTOR, O_HELP };
    static const struct option opts[] = {
        {"html", required_argument, NULL, O_HTML}, {"json", required_argument, NULL, O_JSON},
        {"regress-factor", required_argument, NULL, O_FACTOR}, {"help", no_argument, NULL, O_HELP}, {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    for (;;) {
        char bad[8];
        int c = getopt_long(argc, argv, ":h", opts, NULL);
        if (c == -1) break;
        switch (c) {
        case O_HTML: out.html = optarg; break;
        case O_JSON: out.json = optarg; break;
        case O_FACTOR: KV_TRY(kv_parse_f64("--regress-factor", optarg, 1, 1e30, &out.regress_factor)); break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        case ':': KV_CHECK(0, KV_EUSAGE, "report: missing value for %s",
                     kv_bad_option(c, optopt, optind, argv, bad, sizeof bad)); break;
        default: KV_CHECK(0, KV_EUSAGE, "report: unknown option '%s' (see kverify report --help)",
                     kv_bad_option(c, optopt, optind, argv, bad, sizeof bad)); break;
        }
    }
    KV_CHECK(optind < argc, KV_EUSAGE, "report: no report given (usage: kverify report A.json [B.json ...] --html OUT)");
    KV_CHECK(out.html, KV_EUSAGE, "report: --html OUT.html is required");
    KV_CHECK(*out.html && strcmp(out.html, "-"), KV_EUSAGE, "--html: give a file name (the page does not go to stdout)");
    KV_CHECK(!out.json || *out.json, KV_EUSAGE, "--json: empty file name");
    KV_CHECK(argc - optind <= 10000, KV_EUSAGE, "report: more than 10000 reports");
    KV_TRY(kv_outputs_check(&out));
    n = argc - optind;
    reps = calloc((size_t)n, sizeof *reps);
    KV_CHECK(reps, KV_EDATA, "out of memory");
    for (int i = 0; i < n; i++) KV_TRY(kv_report_read(argv[optind + i], &reps[i]));
    KV_TRY(kv_html_history(reps, (const char *const *)(argv + optind), (size_t)n, out.regress_factor, out.html,
                           out.json ? &data : NULL));
    if (out.json) KV_TRY(kv_json_write(data, out.json));
cleanup:
    if (st) fprintf(stderr, "kverify: %s\n", kv_error_msg());
    for (int i = 0; reps && i < n; i++) cJSON_Delete(reps[i]);
    free(reps);
    cJSON_Delete(data);
    return (int)st;
}

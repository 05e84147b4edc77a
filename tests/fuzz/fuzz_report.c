/* Property: a JSON report read back (--baseline, compare, merge, report)
 * never crashes, leaks or reads out of bounds on any input: parsed and
 * checked (kv_report_parse), compared with itself (kv_regressions_list),
 * its summary counted again (merge) and drawn as kverify report draws one,
 * two (before/after) and three (a trend) reports, in memory. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "reports/html.h"
#include "reports/regress.h"
#include "reports/report.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    cJSON *rep;
    if (kv_report_parse("fuzz.json", (const char *)data, size, &rep) != KV_OK) return 0;
    struct kv_regression *list = NULL;
    size_t n = 0;
    kv_regressions_list(rep, rep, 2.0, NULL, &list, &n);
    free(list);
    kv_json_set_summary(rep);
    cJSON *const reps[3] = {rep, rep, rep};
    const char *const labels[3] = {"a.json", "b.json", "c.json"};
    for (size_t k = 1; k <= 3; k++) {
        cJSON *trend = NULL;
        kv_html_history(reps, labels, k, 2.0, NULL, &trend);
        cJSON_Delete(trend);
    }
    cJSON_Delete(rep);
    return 0;
}

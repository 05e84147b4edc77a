/* Regressions between two JSON reports (`kverify compare`, --baseline). */
#ifndef KV_REGRESS_H
#define KV_REGRESS_H

#include <stdio.h>

#include "core/status.h"

/* The regression table of cur against prev (report trees): printed to f;
 * returns the number of regressions (improvements are listed, not counted). */
struct cJSON;
/* One row of the comparison: kind 1 a regression, 0 an improvement, -1 a
 * change listed (a case or output added). output is "-" for a case's row. */
struct kv_regression {
    int kind;
    char case_name[256], output[80], what[40], before[32], after[32];
};
/* kv_regressions, also giving the rows (malloc'd, caller frees; list may be
 * NULL) and printing to f only when f is not NULL. */
size_t kv_regressions_list(const struct cJSON *prev, const struct cJSON *cur, double factor, FILE *f,
                           struct kv_regression **list, size_t *n);
size_t kv_regressions(const struct cJSON *prev, const struct cJSON *cur, double factor, FILE *f);
/* Read a JSON report file (KV_EDATA naming the file if it is not one, or
 * if a field a comparison reads has another type); kv_report_parse: the
 * same from size bytes of buf, named path in its errors. */
enum kv_status kv_report_read(const char *path, struct cJSON **out);
enum kv_status kv_report_parse(const char *path, const char *buf, size_t size, struct cJSON **out);

#endif

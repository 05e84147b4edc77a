/* Regressions between two JSON reports (`kverify compare`, --baseline). */
#ifndef KV_REGRESS_H
#define KV_REGRESS_H

#include <stdio.h>

#include "core/status.h"

/* The regression table of cur against prev (report trees): printed to f;
 * returns the number of regressions (improvements are listed, not counted). */
struct cJSON;
size_t kv_regressions(const struct cJSON *prev, const struct cJSON *cur, double factor, FILE *f);
/* Read a JSON report file (KV_EDATA naming the file if it is not one). */
enum kv_status kv_report_read(const char *path, struct cJSON **out);

#endif

/* The HTML report: one self-contained page (inline SVG, CSS and PNG data,
 * no script, nothing loaded from anywhere), drawn from a JSON report alone,
 * so that `kverify report` can draw saved reports as --html draws a run's. */
#ifndef KV_HTML_H
#define KV_HTML_H

#include "core/status.h"
#include "reports/sbuf.h"

struct cJSON;

/* Sections of a page (reports/html.c). */
void kv_html_head(struct kv_sbuf *b, const char *title);
void kv_html_report_body(struct kv_sbuf *b, const struct cJSON *report);
void kv_html_tail(struct kv_sbuf *b);

/* A whole page from one report, written atomically to path. */
enum kv_status kv_html_write(const struct cJSON *report, const char *path);
/* A page from saved reports in run order (kverify report): two give a
 * before/after view, more a trend per output; regressions marked as
 * kverify compare judges them. *data (may be NULL) gets the trend as JSON. */
enum kv_status kv_html_history(struct cJSON *const *reports, const char *const *labels, size_t n, double factor,
                               const char *path, struct cJSON **data);

#endif

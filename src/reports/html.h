/* The HTML report: one self-contained page (inline SVG, CSS and PNG data,
 * no script, nothing loaded from anywhere), drawn from a JSON report alone,
 * so that `kverify report` can draw saved reports as --html draws a run's. */
#ifndef KV_HTML_H
#define KV_HTML_H

#include <stdarg.h>
#include <stddef.h>

#include "core/status.h"

struct cJSON;

/* A growing text buffer; out of memory sets oom and drops what follows. */
struct kv_sbuf {
    char *s;
    size_t n, cap;
    int oom;
};
void kv_sb_printf(struct kv_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kv_sb_esc(struct kv_sbuf *b, const char *text); /* HTML-escaped */
void kv_sb_free(struct kv_sbuf *b);

/* Fields of a JSON report: the member, a string ("" when absent), a number
 * (NaN when absent; "Infinity" strings as infinities). */
const struct cJSON *kv_jget(const struct cJSON *o, const char *k);
const char *kv_jstr(const struct cJSON *o, const char *k);
double kv_jnum(const struct cJSON *o, const char *k);

/* Plots (reports/svg.c). */
void kv_svg_hist(struct kv_sbuf *b, const char *cls, const char *title, const struct cJSON *hist, int log_edges_base2,
                 double pass_line);
void kv_svg_map(struct kv_sbuf *b, const struct cJSON *map);
/* A line of values[r] over runs (NaN: absent), log scale; marks[r] != 0
 * draws a regression mark; pass_line > 0 is drawn dashed. */
void kv_svg_trend(struct kv_sbuf *b, const char *title, const double *values, const unsigned char *marks, size_t runs,
                  double pass_line);
/* Horizontal bars: label, value in [0, 100] (percent), text. */
void kv_svg_bar(struct kv_sbuf *b, const char *label, double pct, const char *text);
/* The colour of a bound ratio (fails red), as "#rrggbb". */
void kv_ratio_colour(double ratio, char out[8]);

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

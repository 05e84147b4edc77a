/* The HTML page's plots as inline SVG (reports/svg.c). */
#ifndef KV_SVG_H
#define KV_SVG_H

#include "reports/sbuf.h"

struct cJSON;

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

#endif

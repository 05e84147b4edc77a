/* The text buffer a page is written into, and the fields of a JSON report
 * it is drawn from: shared by the page (html.c, history.c) and its plots
 * (svg.c), so that neither needs the other's file. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/sbuf.h"

void kv_sb_printf(struct kv_sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int w = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (w < 0) return;
        if ((size_t)w < room) {
            b->n += (size_t)w;
            return;
        }
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap - b->n <= (size_t)w) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s, b->cap = cap;
    }
}

void kv_sb_esc(struct kv_sbuf *b, const char *t)
{
    for (; t && *t; t++) {
        switch (*t) {
        case '<': kv_sb_printf(b, "&lt;"); break;
        case '>': kv_sb_printf(b, "&gt;"); break;
        case '&': kv_sb_printf(b, "&amp;"); break;
        case '"': kv_sb_printf(b, "&quot;"); break;
        case '\'': kv_sb_printf(b, "&#39;"); break;
        default: kv_sb_printf(b, "%c", *t);
        }
    }
}

void kv_sb_free(struct kv_sbuf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

const cJSON *kv_jget(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

const char *kv_jstr(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(kv_jget(o, k));
    return s ? s : "";
}

double kv_jnum(const cJSON *o, const char *k)
{
    const cJSON *v = kv_jget(o, k);
    if (cJSON_IsNumber(v)) return v->valuedouble;
    const char *s = cJSON_GetStringValue(v);
    return s && !strcmp(s, "Infinity") ? INFINITY : s && !strcmp(s, "-Infinity") ? -INFINITY : NAN;
}

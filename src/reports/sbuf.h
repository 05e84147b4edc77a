/* The text buffer a page is written into (kv_sbuf) and the fields of a JSON
 * report it is drawn from (kv_j*): what the HTML page and its plots share. */
#ifndef KV_SBUF_H
#define KV_SBUF_H

#include <stddef.h>

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

#endif

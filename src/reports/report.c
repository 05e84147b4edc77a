#include "reports/report.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct kv_case_result *kv_report_add(struct kv_report *r)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        struct kv_case_result *c = realloc(r->cases, cap * sizeof *c);
        if (!c) return NULL;
        r->cases = c;
        r->cap = cap;
    }
    struct kv_case_result *c = &r->cases[r->n++];
    memset(c, 0, sizeof *c);
    return c;
}

void kv_case_result_clear(struct kv_case_result *c)
{
    for (int i = 0; i < KV_COUNT(c->out); i++) free(c->out[i].dist), free(c->out[i].data);
    memset(c, 0, sizeof *c);
}

void kv_report_free(struct kv_report *r)
{
    for (size_t i = 0; i < r->n; i++) kv_case_result_clear(&r->cases[i]);
    free(r->agree);
    r->agree = NULL, r->n_agree = 0;
    free(r->cases);
    memset(r, 0, sizeof *r);
}

void kv_report_counts(const struct kv_report *r, size_t *passed, size_t *failed, size_t *errors,
                      size_t *skipped)
{
    *passed = *failed = *errors = *skipped = 0;
    for (size_t i = 0; i < r->n; i++) switch (r->cases[i].status) {
        case KV_CASE_PASS: (*passed)++; break;
        case KV_CASE_FAIL: (*failed)++; break;
        case KV_CASE_ERROR: (*errors)++; break;
        case KV_CASE_SKIP: (*skipped)++; break;
        }
}

int kv_report_exit_code(const struct kv_report *r)
{
    size_t p, f, e, s;
    kv_report_counts(r, &p, &f, &e, &s);
    for (size_t i = 0; i < r->n; i++)
        if (r->cases[i].status == KV_CASE_ERROR) return (int)r->cases[i].error_code;
    if (f) return KV_FAIL;
    if (!p) return KV_ENODEV; /* nothing judged: a gate must not read it as a pass */
    return 0;
}

const char *kv_report_skip_reason(const struct kv_report *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->cases[i].status == KV_CASE_SKIP && r->cases[i].error[0]) return r->cases[i].error;
    return r->n ? "every case was skipped" : "no case was selected";
}

const char *kv_case_status_str(enum kv_case_status s)
{
    static const char *n[] = {"pass", "fail", "error", "skip"};
    return n[s];
}

static char command_line[4096];

void kv_report_set_command(int argc, char **argv)
{
    size_t o = 0;
    command_line[0] = '\0';
    for (int i = 0; i < argc && o + 4 < sizeof command_line; i++) {
        const char *a = i == 0 ? "kverify" : argv[i];
        int plain = *a != '\0';
        for (const char *p = a; *p; p++)
            plain = plain && (isalnum((unsigned char)*p) || strchr("-_./=,:+@%", *p));
        char part[1024];
        if (plain) snprintf(part, sizeof part, "%s", a);
        else {
            size_t q = 0;
            part[q++] = '\'';
            for (const char *p = a; *p && q + 6 < sizeof part; p++) {
                if (*p == '\'') memcpy(part + q, "'\\''", 4), q += 4;
                else part[q++] = *p;
            }
            part[q++] = '\'', part[q] = '\0';
        }
        o += (size_t)snprintf(command_line + o, sizeof command_line - o, "%s%s", i ? " " : "", part);
    }
    if (o >= sizeof command_line) command_line[0] = '\0'; /* cut: better none than a wrong one */
}

const char *kv_report_command(void) { return command_line; }

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

int kv_shell_append(char *buf, size_t size, const char *arg)
{
    size_t o = strlen(buf), need = 3 + (buf[0] != '\0');
    int plain = *arg != '\0';
    for (const char *p = arg; *p; p++) {
        plain = plain && (isalnum((unsigned char)*p) || strchr("-_./=,:+@%", *p));
        need += *p == '\'' ? 4 : 1;
    }
    if (o + need >= size) return 0;
    if (o) buf[o++] = ' ';
    if (plain) {
        memcpy(buf + o, arg, strlen(arg) + 1);
        return 1;
    }
    buf[o++] = '\'';
    for (const char *p = arg; *p; p++) {
        if (*p == '\'') memcpy(buf + o, "'\\''", 4), o += 4;
        else buf[o++] = *p;
    }
    buf[o++] = '\'', buf[o] = '\0';
    return 1;
}

void kv_report_set_command(int argc, char **argv)
{
    command_line[0] = '\0';
    for (int i = 0; i < argc; i++)
        if (!kv_shell_append(command_line, sizeof command_line, i == 0 ? "kverify" : argv[i])) {
            command_line[0] = '\0'; /* cut: better none than a wrong one */
            return;
        }
}

const char *kv_report_command(void) { return command_line; }

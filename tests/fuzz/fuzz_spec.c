/* Property: kv_spec_parse never crashes, leaks or reads out of bounds on any
 * input. An input that starts with '{' is a whole spec file; any other is
 * the math of a small spec (one statement per line; inputs x[n, m] and
 * lab[n], output o[n, m], parameters n, m and eps). An accepted spec whose
 * arrays are small at its defaults makes its inputs and runs its oracle,
 * which either succeeds or fails with an error, never crashing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "specs/spec.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The math as a JSON list of strings. */
static char *math_spec(const unsigned char *data, size_t size)
{
    static const char head[] =
        "{\"kernel\": \"f\", \"params\": [{\"name\": \"n\", \"type\": \"int\", \"default\": 3},"
        " {\"name\": \"m\", \"type\": \"int\", \"default\": 5}, {\"name\": \"eps\", \"type\": \"float\", \"default\": 0.5}],"
        " \"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": \"n, m\", \"dist\": \"normal\"},"
        " {\"name\": \"lab\", \"role\": \"input\", \"dtype\": \"i32\", \"shape\": \"n\", \"dist\": {\"gen\": \"randint\", \"lo\": 0, \"hi\": \"m\"}},"
        " {\"name\": \"o\", \"role\": \"output\", \"dtype\": \"f32\", \"shape\": \"n, m\"}],"
        " \"stages\": [{\"name\": \"s\", \"shader\": \"s.comp\"}], \"math\": [\"";
    char *out = malloc(sizeof head + 6 * size + 8), *p = out;
    if (!out) return NULL;
    p += sprintf(p, "%s", head);
    for (size_t i = 0; i < size; i++) {
        unsigned char ch = data[i];
        if (ch == '\n') p += sprintf(p, "\", \"");
        else if (ch == '"' || ch == '\\') p += sprintf(p, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f) p += sprintf(p, "\\u%04x", ch);
        else *p++ = (char)ch;
    }
    sprintf(p, "\"]}");
    return out;
}

static void run(const struct kv_spec *s)
{
    struct kv_case c;
    if (kv_case_init(&c, &s->k, 1) == KV_OK && kv_case_shapes(&c) == KV_OK) {
        size_t total = 0;
        for (int t = 0; t < s->k.n_tensors; t++) total += c.t[t].count;
        if (total <= 4096 && kv_case_alloc(&c) == KV_OK && s->k.inputs(&c) == KV_OK) (void)s->k.oracle(&c);
    }
    kv_case_free(&c);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *text = NULL;
    if (!(size && data[0] == '{')) text = math_spec(data, size);
    struct kv_spec *s = NULL;
    const char *t = text ? text : (const char *)data;
    if (kv_spec_parse("fuzz.kernel.json", t, text ? strlen(text) : size, 1, &s) == KV_OK) run(s);
    kv_spec_free(s);
    free(text);
    return 0;
}

/* The math language's parser: recursive descent over one statement, with the
 * column of every error. */
#include "specs/sx.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"

static const char *const fn_names[KV_FN_COUNT] = {"exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid",
                                                    "sin", "cos", "abs", "floor", "min", "max", "pow", "normal", "uniform"};
static const int fn_arity[KV_FN_COUNT] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 0, 0};

const char *kv_sx_fn_name(int f)
{
    return f >= 0 && f < KV_FN_COUNT ? fn_names[f] : "?";
}

struct parser {
    const char *what, *text, *p;
    const struct kv_sx_names *names;
    struct kv_sx_stmt *st;
    int depth, n_nodes;
};

#define FAIL(ps, at, ...) fail(ps, at, __VA_ARGS__)

static enum kv_status fail(struct parser *ps, const char *at, const char *fmt, const char *arg)
{
    char cause[160];
    snprintf(cause, sizeof cause, fmt, arg);
    return kv_error(KV_EDATA, "%s column %d: %s", ps->what, (int)(at - ps->text) + 1, cause);
}

static void skip(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t') ps->p++;
}

static int accept(struct parser *ps, const char *tok)
{
    skip(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) != 0) return 0;
    /* "<" is not the start of "<=", "=" not of "==", "!" not of "!=" */
    if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '=' || tok[0] == '!') && ps->p[1] == '=') return 0;
    ps->p += n;
    return 1;
}

static int ident(struct parser *ps, char *out, size_t size)
{
    skip(ps);
    const char *s = ps->p;
    if (!isalpha((unsigned char)*s) && *s != '_') return 0;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
    size_t n = (size_t)(ps->p - s);
    if (n >= size) n = size - 1;
    memcpy(out, s, n);
    out[n] = '\0';
    return 1;
}

static enum kv_status node(struct parser *ps, enum kv_sx_op op, const char *at, struct kv_sx **out)
{
    struct kv_sx *e = calloc(1, sizeof *e);
    if (!e) return kv_error(KV_EDEVICE, "out of host memory parsing %s", ps->what);
    e->op = op;
    e->pos = (int)(at - ps->text) + 1;
    *out = e;
    return KV_OK;
}

static enum kv_status expr(struct parser *ps, struct kv_sx **out);

static enum kv_status expect(struct parser *ps, const char *tok)
{
    if (accept(ps, tok)) return KV_OK;
    skip(ps);
    return FAIL(ps, ps->p, *ps->p ? "expected '%s'" : "expected '%s' before the end", tok);
}

static int find_var(const struct kv_sx_stmt *st, const char *name)
{
    for (int v = st->n_vars - 1; v >= 0; v--)
        if (!strcmp(st->var[v], name)) return v;
    return -1;
}

/* name[i, j]: kids are the index expressions. */
static enum kv_status access(struct parser *ps, const char *at, int sym, int ndim, const char *name, struct kv_sx **out)
{
    enum kv_status st = node(ps, KV_SX_ACCESS, at, out);
    if (st) return st;
    (*out)->ref = sym;
    if (accept(ps, "[")) {
        do {
            if ((*out)->n == KV_SX_MAX_KIDS) return FAIL(ps, ps->p, "more than 4 indices of '%s'", name);
            if ((st = expr(ps, &(*out)->kid[(*out)->n++]))) return st;
        } while (accept(ps, ","));
        if ((st = expect(ps, "]"))) return st;
    }
    if (ndim >= 0 && (*out)->n != ndim) {
        char msg[96];
        snprintf(msg, sizeof msg, "'%%s' takes %d ind%s, not %d", ndim, ndim == 1 ? "ex" : "ices", (*out)->n);
        return FAIL(ps, at, msg, name);
    }
    return KV_OK;
}

/* sum(k in lo..hi, body): the variable is in scope in body only. */
static enum kv_status reduction(struct parser *ps, const char *at, enum kv_sx_op op, struct kv_sx **out)
{
    char var[32];
    enum kv_status st = node(ps, op, at, out);
    if (st) return st;
    const char *vat = (skip(ps), ps->p);
    ident(ps, var, sizeof var);
    if (find_var(ps->st, var) >= 0) return FAIL(ps, vat, "index '%s' is already in use", var);
    if (ps->st->n_vars == KV_SX_MAX_VARS) return FAIL(ps, vat, "more than 16 index variables at '%s'", var);
    if (!accept(ps, "in")) return FAIL(ps, ps->p, "expected 'in' after '%s'", var);
    (*out)->n = 3; /* kids freed with the node, parsed or not */
    if ((st = expr(ps, &(*out)->kid[0])) || (st = expect(ps, "..")) || (st = expr(ps, &(*out)->kid[1])) ||
        (st = expect(ps, ",")))
        return st;
    int slot = ps->st->n_vars++;
    snprintf(ps->st->var[slot], sizeof ps->st->var[slot], "%s", var);
    (*out)->ref = slot;
    if ((st = expr(ps, &(*out)->kid[2])) || (st = expect(ps, ")"))) return st;
    ps->st->var[slot][0] = '\0'; /* out of scope; the slot stays the reduction's */
    return KV_OK;
}

static enum kv_status call(struct parser *ps, const char *at, const char *name, struct kv_sx **out)
{
    enum kv_status st;
    const char *save = ps->p;
    char var[32];
    int red = !strcmp(name, "sum") || !strcmp(name, "max") || !strcmp(name, "min");
    if (red && ident(ps, var, sizeof var) && accept(ps, "in")) {
        ps->p = save;
        return reduction(ps, at, !strcmp(name, "sum") ? KV_SX_SUM : !strcmp(name, "max") ? KV_SX_RMAX : KV_SX_RMIN, out);
    }
    ps->p = save;
    if (!strcmp(name, "round")) {
        char ty[16];
        const char *tat = (skip(ps), ps->p);
        int d = ident(ps, ty, sizeof ty) ? kv_dtype_from_name(ty) : -1;
        if (d != KV_F32 && d != KV_F16 && d != KV_BF16) return FAIL(ps, tat, "round() takes bf16, f16 or f32 first%s", "");
        if ((st = node(ps, KV_SX_ROUND, at, out)) || (st = expect(ps, ","))) return st;
        (*out)->ref = d;
        (*out)->n = 1;
        if ((st = expr(ps, &(*out)->kid[0]))) return st;
        return expect(ps, ")");
    }
    int f = -1, arity = 3;
    for (int i = 0; i < KV_FN_COUNT; i++)
        if (!strcmp(name, fn_names[i])) f = i;
    if (f < 0 && strcmp(name, "where")) return FAIL(ps, at, "unknown function '%s'", name);
    if ((st = node(ps, f < 0 ? KV_SX_WHERE : KV_SX_FUNC, at, out))) return st;
    (*out)->ref = f;
    if (f >= 0) arity = fn_arity[f];
    for (int i = 0; i < arity; i++) {
        if (i && (st = expect(ps, ","))) return st;
        skip(ps);
        if (*ps->p == ')') return FAIL(ps, ps->p, "too few arguments to '%s'", name);
        if ((st = expr(ps, &(*out)->kid[(*out)->n++]))) return st;
    }
    return expect(ps, ")");
}

static enum kv_status primary(struct parser *ps, struct kv_sx **out)
{
    skip(ps);
    const char *at = ps->p;
    char name[64];
    if (isdigit((unsigned char)*at) || (*at == '.' && isdigit((unsigned char)at[1]))) {
        char *end;
        double v = strtod(at, &end);
        if (end[-1] == '.' && *end == '.') end--; /* "0..n": the number is 0 */
        ps->p = end;
        enum kv_status st = node(ps, KV_SX_NUM, at, out);
        if (!st) (*out)->num = v;
        return st;
    }
    if (accept(ps, "(")) {
        enum kv_status st = expr(ps, out);
        return st ? st : expect(ps, ")");
    }
    if (!ident(ps, name, sizeof name)) return FAIL(ps, at, *at ? "unexpected '%.1s'" : "expression missing%s", at);
    if (accept(ps, "(")) return call(ps, at, name, out);
    int v = find_var(ps->st, name), ndim = -1, sym;
    if (v >= 0 && ps->p[0] != '[') {
        enum kv_status st = node(ps, KV_SX_VAR, at, out);
        if (!st) (*out)->ref = v;
        return st;
    }
    if ((sym = ps->names->array(ps->names->ctx, name, &ndim)) >= 0) return access(ps, at, sym, ndim, name, out);
    int p = ps->names->param(ps->names->ctx, name);
    if (p >= 0) {
        enum kv_status st = node(ps, KV_SX_PARAM, at, out);
        if (!st) (*out)->ref = p;
        return st;
    }
    return FAIL(ps, at, "unknown name '%s'", name);
}

static enum kv_status unary(struct parser *ps, struct kv_sx **out)
{
    skip(ps);
    const char *at = ps->p;
    enum kv_sx_op op = accept(ps, "-") ? KV_SX_NEG : accept(ps, "!") ? KV_SX_NOT : KV_SX_NUM;
    if (op == KV_SX_NUM) return primary(ps, out);
    if (++ps->depth > 200) return FAIL(ps, at, "expression nested too deep%s", "");
    enum kv_status st = node(ps, op, at, out);
    if (!st) (*out)->n = 1, st = unary(ps, &(*out)->kid[0]);
    ps->depth--;
    return st;
}

/* Binary operators by precedence level, loosest first. */
static const struct { const char *tok; enum kv_sx_op op; int level; } binops[] = {
    {"||", KV_SX_OR, 0}, {"&&", KV_SX_AND, 1},
    {"==", KV_SX_EQ, 2}, {"!=", KV_SX_NE, 2}, {"<=", KV_SX_LE, 2}, {">=", KV_SX_GE, 2}, {"<", KV_SX_LT, 2},
    {">", KV_SX_GT, 2},
    {"+", KV_SX_ADD, 3}, {"-", KV_SX_SUB, 3},
    {"*", KV_SX_MUL, 4}, {"/", KV_SX_DIV, 4}, {"%", KV_SX_MOD, 4},
};

static enum kv_status level(struct parser *ps, int lv, struct kv_sx **out)
{
    if (lv > 4) return unary(ps, out);
    enum kv_status st = level(ps, lv + 1, out);
    if (st) return st;
    for (;;) {
        skip(ps);
        const char *at = ps->p;
        int found = -1;
        for (size_t i = 0; i < sizeof binops / sizeof *binops && found < 0; i++)
            if (binops[i].level == lv && !(binops[i].op == KV_SX_SUB && at[1] == '>') &&
                !(lv == 4 && at[0] == '.') && accept(ps, binops[i].tok))
                found = (int)i;
        if (found < 0) return KV_OK;
        struct kv_sx *e = NULL;
        if ((st = node(ps, binops[found].op, at, &e))) return st;
        e->n = 2;
        e->kid[0] = *out;
        *out = e;
        if ((st = level(ps, lv + 1, &e->kid[1]))) return st;
    }
}

static enum kv_status expr(struct parser *ps, struct kv_sx **out)
{
    if (++ps->depth > 200) return FAIL(ps, ps->p, "expression nested too deep%s", "");
    enum kv_status st = level(ps, 0, out);
    ps->depth--;
    return st;
}

static void number(struct kv_sx *e, int *n)
{
    e->vars = e->op == KV_SX_VAR ? 1u << e->ref : 0u;
    for (int i = 0; i < e->n; i++)
        if (e->kid[i]) number(e->kid[i], n), e->vars |= e->kid[i]->vars;
    if (e->op == KV_SX_SUM || e->op == KV_SX_RMAX || e->op == KV_SX_RMIN) e->vars &= ~(1u << e->ref);
    if (e->op == KV_SX_FUNC && (e->ref == KV_FN_NORMAL || e->ref == KV_FN_UNIFORM)) e->vars = ~0u;
    e->id = (*n)++;
}

/* target[i, j] = : the target and its index variables. */
static enum kv_status head(struct parser *ps)
{
    const char *at = (skip(ps), ps->p);
    if (!ident(ps, ps->st->target, sizeof ps->st->target)) return FAIL(ps, at, "expected the name of an array%s", "");
    if (accept(ps, "[")) {
        do {
            char v[32];
            const char *vat = (skip(ps), ps->p);
            if (!ident(ps, v, sizeof v)) return FAIL(ps, vat, "expected an index variable%s", "");
            if (find_var(ps->st, v) >= 0) return FAIL(ps, vat, "index '%s' appears twice", v);
            if (ps->st->n_vars == 4) return FAIL(ps, vat, "more than 4 indices at '%s'", v);
            if (accept(ps, "in")) { /* an explicit range 0..extent: a parameter, an integer or a product */
                skip(ps);
                size_t w = strspn(ps->p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_*");
                if (w == 0 || w >= sizeof ps->st->ext[0]) return FAIL(ps, ps->p, "expected the extent of '%s'", v);
                memcpy(ps->st->ext[ps->st->n_vars], ps->p, w);
                ps->p += w;
            }
            snprintf(ps->st->var[ps->st->n_vars++], 32, "%s", v);
        } while (accept(ps, ","));
        enum kv_status st = expect(ps, "]");
        if (st) return st;
    }
    ps->st->n_target = ps->st->n_vars;
    return expect(ps, "=");
}

enum kv_status kv_sx_parse(const char *what, const char *text, const struct kv_sx_names *names, struct kv_sx_stmt *st)
{
    struct parser ps = {what, text, text, names, st, 0, 0};
    memset(st, 0, sizeof *st);
    enum kv_status s = head(&ps);
    if (s || !names) return s;
    if ((s = expr(&ps, &st->rhs))) goto fail;
    skip(&ps);
    if (*ps.p) {
        s = FAIL(&ps, ps.p, "unexpected '%.1s' after the expression", ps.p);
        goto fail;
    }
    number(st->rhs, &st->n_nodes);
    return KV_OK;
fail:
    kv_sx_free(st->rhs);
    st->rhs = NULL;
    return s;
}

void kv_sx_free(struct kv_sx *e)
{
    if (!e) return;
    for (int i = 0; i < e->n; i++) kv_sx_free(e->kid[i]);
    free(e);
}

int kv_sx_reads(const struct kv_sx *e, int sym)
{
    if (!e) return 0;
    if (e->op == KV_SX_ACCESS && e->ref == sym) return 1;
    for (int i = 0; i < e->n; i++)
        if (kv_sx_reads(e->kid[i], sym)) return 1;
    return 0;
}

int kv_sx_rounds(const struct kv_sx *e)
{
    if (!e) return 0;
    if (e->op == KV_SX_ROUND) return 1;
    for (int i = 0; i < e->n; i++)
        if (kv_sx_rounds(e->kid[i])) return 1;
    return 0;
}

int kv_sx_draws(const struct kv_sx *e, int in_reduction)
{
    if (!e) return 0;
    if (e->op == KV_SX_FUNC && (e->ref == KV_FN_NORMAL || e->ref == KV_FN_UNIFORM) && in_reduction) return e->pos;
    int red = e->op == KV_SX_SUM || e->op == KV_SX_RMAX || e->op == KV_SX_RMIN;
    for (int i = 0; i < e->n; i++) {
        int p = kv_sx_draws(e->kid[i], in_reduction || (red && i == 2));
        if (p) return p;
    }
    return 0;
}

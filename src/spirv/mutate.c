#include "spirv/mutate.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct kv_mutate_op kv_mutate_ops[] = {
    {"bound", "a for loop's bound one less: 'i < n' -> 'i < n - 1' (with rel, off by one both ways)"},
    {"rel", "a comparison off by one: '<' <-> '<=', '>' <-> '>='"},
    {"flip", "a comparison flipped: '<' <-> '>', '<=' <-> '>=', '==' <-> '!='"},
    {"barrier", "a barrier removed: barrier(), memoryBarrierShared(), subgroupBarrier(), ..."},
    {"step", "a for loop's step made an assignment: 'i += s' -> 'i = s' (grid-stride steps)"},
    {"assign", "an accumulation made an assignment: '+=' -> '='"},
    {"index", "an array index off by one: 'a[i]' -> 'a[i + 1]', 'a[i - 1]'"},
    {"shift", "a shift amount off by one: 'x >> 16' -> 'x >> 15', 'x >> 17'"},
    {"round", "a rounding function swapped: floor <-> ceil, round/roundEven -> trunc, trunc -> round"},
    {"const", "a constant nudged: integers +-1, floats doubled (0.0 -> 1.0)"},
    {"minmax", "min <-> max"},
    {"drop", "a term dropped from a sum: 'a + b*c' -> 'a'"},
};
const int kv_mutate_n_ops = (int)(sizeof kv_mutate_ops / sizeof *kv_mutate_ops);
enum { OP_BOUND, OP_REL, OP_FLIP, OP_BARRIER, OP_STEP, OP_ASSIGN, OP_INDEX, OP_SHIFT, OP_ROUND, OP_CONST, OP_MINMAX,
       OP_DROP };

enum tk { T_IDENT, T_NUM, T_PUNCT };
struct tok {
    enum tk kind;
    size_t off, len;
    int line, col;
    int skip;     /* in a directive other than #define's body, a layout(), or a dead line */
    int dir;      /* in a directive line */
    int for_part; /* 1, 2, 3: in a for header's init, condition, step; 0 elsewhere */
    int decl;     /* in a declaration before its '=' (array sizes are not indices) */
    int size;     /* inside a declaration's [ ]: an array size, not a constant of the math */
};

static const char *const PUNCT3[] = {"<<=", ">>=", NULL};
static const char *const PUNCT2[] = {"<=", ">=", "==", "!=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=",
                                     "%=", "&=", "|=", "^=", "<<", ">>", NULL};
static const char *const TYPES[] = {"shared", "const", "float", "double", "int", "uint", "bool", "vec2", "vec3",
                                    "vec4", "uvec2", "uvec3", "uvec4", "ivec2", "ivec3", "ivec4", "mat2", "mat3",
                                    "mat4", "float16_t", "f16vec2", "f16vec4", "uint16_t", "uint8_t", "highp",
                                    "mediump", "precise", "coherent", "volatile", "restrict", NULL};

static int is(const char *text, const struct tok *t, const char *s)
{
    return t->len == strlen(s) && !strncmp(text + t->off, s, t->len);
}

static int in_list(const char *text, const struct tok *t, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (is(text, t, list[i])) return 1;
    return 0;
}

/* Context: which tokens lie in a layout(...) (skipped), in which part of a
 * for header, in a declaration, in an array size. */
static void mark_context(const char *text, struct tok *t, size_t n)
{
    int depth = 0, layout_depth = -1, for_depth = -1, for_part = 0, stmt_decl = 0, stmt_start = 1, brackets = 0;
    for (size_t j = 0; j < n; j++) {
        struct tok *k = &t[j];
        if (k->dir) continue; /* a directive is no part of the statements around it */
        if (is(text, k, "[") && j + 1 < n && is(text, &t[j + 1], "[")) {
            /* an attribute ([[unroll]]): no index in it, and the statement it
             * heads starts after it */
            size_t e = j + 2;
            while (e + 1 < n && !(is(text, &t[e], "]") && is(text, &t[e + 1], "]"))) e++;
            for (size_t q = j; q <= e + 1 && q < n; q++) t[q].skip = 1;
            j = e + 1;
            continue;
        }
        if (stmt_start) stmt_decl = k->kind == T_IDENT && in_list(text, k, TYPES), stmt_start = 0;
        if (is(text, k, "=") || is(text, k, "(")) {
            if (is(text, k, "=")) stmt_decl = 0;
        }
        if (k->kind == T_IDENT && is(text, k, "layout") && j + 1 < n && is(text, &t[j + 1], "(")) layout_depth = depth;
        if (k->kind == T_IDENT && is(text, k, "for") && j + 1 < n && is(text, &t[j + 1], "(")) {
            for_depth = depth, for_part = 0;
        }
        if (is(text, k, "(")) {
            depth++;
            if (for_depth == depth - 1 && for_part == 0) for_part = 1, stmt_decl = 1;
        } else if (is(text, k, ")")) {
            depth--;
            if (layout_depth == depth) layout_depth = -1, k->skip = 1;
            if (for_depth == depth) for_depth = -1, for_part = 0;
        } else if (is(text, k, ";")) {
            if (for_depth >= 0 && for_part && for_part < 3) for_part++;
            stmt_start = 1;
        } else if (is(text, k, "{") || is(text, k, "}")) {
            stmt_start = 1;
        }
        if (layout_depth >= 0) k->skip = 1;
        k->for_part = for_depth >= 0 && !is(text, k, ";") ? for_part : 0;
        k->decl = stmt_decl && !(for_depth >= 0 && for_part > 1);
        if (is(text, k, "[")) brackets++;
        if (is(text, k, "]") && brackets > 0) brackets--;
        k->size = k->decl && brackets > 0;
        if (stmt_start) brackets = 0;
        if (stmt_decl && for_depth >= 0 && for_part == 1 && is(text, k, "=")) stmt_decl = 0;
    }
}

/* Tokens of text, comments and whitespace dropped, with their context. */
static struct tok *lex(const char *text, size_t len, const unsigned char *live, int n_live, size_t *n_out)
{
    size_t cap = len / 2 + 16, n = 0;
    struct tok *t = malloc(cap * sizeof *t);
    if (!t) return NULL;
    int line = 1, bol = 1, directive = 0, define_body = 0;
    size_t line_start = 0;
    for (size_t i = 0; i < len;) {
        char c = text[i];
        if (c == '\n') {
            line++, bol = 1, directive = 0, define_body = 0, line_start = ++i;
            continue;
        }
        if (c == '\\' && i + 1 < len && text[i + 1] == '\n') { /* a continued directive */
            i += 2, line++, line_start = i;
            continue;
        }
        if (isspace((unsigned char)c)) {
            i++;
            continue;
        }
        if (c == '/' && i + 1 < len && text[i + 1] == '/') {
            while (i < len && text[i] != '\n') i++;
            continue;
        }
        if (c == '/' && i + 1 < len && text[i + 1] == '*') {
            for (i += 2; i + 1 < len && !(text[i] == '*' && text[i + 1] == '/'); i++)
                if (text[i] == '\n') line++, line_start = i + 1;
            i = i + 2 < len ? i + 2 : len;
            continue;
        }
        if (bol && c == '#') {
            directive = 1;
            size_t j = i + 1;
            while (j < len && (text[j] == ' ' || text[j] == '\t')) j++;
            define_body = !strncmp(text + j, "define", 6) ? -1 : 0; /* -1: the name comes next */
        }
        bol = 0;
        struct tok k = {.kind = T_PUNCT, .off = i, .len = 1, .line = line, .col = (int)(i - line_start) + 1};
        if (isalpha((unsigned char)c) || c == '_') {
            k.kind = T_IDENT;
            while (i + k.len < len && (isalnum((unsigned char)text[i + k.len]) || text[i + k.len] == '_')) k.len++;
        } else if (isdigit((unsigned char)c) || (c == '.' && i + 1 < len && isdigit((unsigned char)text[i + 1]))) {
            k.kind = T_NUM;
            while (i + k.len < len) {
                char d = text[i + k.len];
                if (isalnum((unsigned char)d) || d == '.' ||
                    ((d == '-' || d == '+') && (text[i + k.len - 1] == 'e' || text[i + k.len - 1] == 'E') &&
                     !(text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X'))))
                    k.len++;
                else
                    break;
            }
        } else {
            for (int p = 0; PUNCT3[p] && k.len == 1; p++)
                if (!strncmp(text + i, PUNCT3[p], 3)) k.len = 3;
            for (int p = 0; PUNCT2[p] && k.len == 1; p++)
                if (!strncmp(text + i, PUNCT2[p], 2)) k.len = 2;
        }
        int dead = live && (line > n_live || !live[line]);
        if (directive) {
            /* Only a #define's body is code; its name and other directives are not. */
            if (define_body == -1 && k.kind == T_IDENT && !is(text, &k, "define")) define_body = 1, k.skip = 1;
            else if (define_body != 1) k.skip = 1;
        }
        if (dead) k.skip = 1;
        k.dir = directive;
        if (n == cap) {
            struct tok *t2 = realloc(t, (cap *= 2) * sizeof *t);
            if (!t2) return free(t), NULL;
            t = t2;
        }
        t[n++] = k;
        i += k.len;
    }
    mark_context(text, t, n);
    *n_out = n;
    return t;
}

static enum kv_status add(struct kv_mutant **m, size_t *n, size_t *cap, int file, const struct tok *at, size_t off,
                          size_t len, const char *repl, int op, const char *text)
{
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 256;
        struct kv_mutant *m2 = realloc(*m, nc * sizeof **m);
        if (!m2) return kv_error(KV_EDATA, "out of memory for mutants");
        *m = m2, *cap = nc;
    }
    struct kv_mutant *x = &(*m)[(*n)++];
    memset(x, 0, sizeof *x);
    x->file = file, x->line = at->line, x->col = at->col, x->off = off, x->len = len, x->op = kv_mutate_ops[op].name;
    snprintf(x->repl, sizeof x->repl, "%s", repl);
    int shown = len > 40 ? 40 : (int)len, tl = at->len > 40 ? 40 : (int)at->len;
    if (len == 0 && off == at->off) /* an insertion before the token */
        snprintf(x->desc, sizeof x->desc, "'%.*s' -> '%s%.*s'", tl, text + at->off, repl, tl, text + at->off);
    else if (len == 0) /* after it */
        snprintf(x->desc, sizeof x->desc, "'%.*s' -> '%.*s%s'", tl, text + at->off, tl, text + at->off, repl);
    else
        snprintf(x->desc, sizeof x->desc, "'%.*s%s' -> '%s'", shown, text + off, len > 40 ? "..." : "", repl);
    return KV_OK;
}

/* The end (exclusive token index) of the operand starting at j: a primary
 * with postfixes, then * / % chains; j itself when there is none. */
static size_t skip_balanced(const char *text, const struct tok *t, size_t n, size_t j)
{
    const char *open = text + t[j].off;
    char o = *open, c = o == '(' ? ')' : ']';
    int d = 0;
    for (; j < n; j++) {
        if (t[j].len == 1 && text[t[j].off] == o) d++;
        else if (t[j].len == 1 && text[t[j].off] == c && --d == 0) return j + 1;
    }
    return n;
}

static size_t operand_end(const char *text, const struct tok *t, size_t n, size_t j)
{
    for (;;) {
        if (j >= n) return j;
        if (t[j].kind == T_IDENT) {
            j++;
            if (j < n && is(text, &t[j], "(")) j = skip_balanced(text, t, n, j);
        } else if (t[j].kind == T_NUM) {
            j++;
        } else if (is(text, &t[j], "(")) {
            j = skip_balanced(text, t, n, j);
        } else {
            return (size_t)-1;
        }
        while (j < n && (is(text, &t[j], ".") || is(text, &t[j], "["))) {
            if (is(text, &t[j], ".")) j += 2;
            else j = skip_balanced(text, t, n, j);
        }
        if (j < n && (is(text, &t[j], "*") || is(text, &t[j], "/") || is(text, &t[j], "%"))) {
            j++;
            continue;
        }
        return j;
    }
}

static void nudge(const char *text, const struct tok *k, int dir, char *out, size_t size)
{
    char lit[64];
    snprintf(lit, sizeof lit, "%.*s", (int)(k->len < 63 ? k->len : 63), text + k->off);
    int is_hex = lit[0] == '0' && (lit[1] == 'x' || lit[1] == 'X');
    if (!is_hex && (strchr(lit, '.') || strchr(lit, 'e') || strchr(lit, 'E'))) {
        char *end;
        double v = strtod(lit, &end);
        snprintf(out, size, "%.9g%s%s", v == 0 ? 1.0 : 2 * v, strchr(lit, '.') || strchr(lit, 'e') ? "" : ".0",
                 *end == 'f' || *end == 'F' ? "f" : *end == 'l' || *end == 'L' ? "lf" : "");
        if (!strchr(out, '.') && !strchr(out, 'e')) {
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%s", out);
            size_t d = strcspn(tmp, "fl");
            snprintf(out, size, "%.*s.0%s", (int)d, tmp, tmp + d);
        }
        return;
    }
    char *end;
    unsigned long long v = strtoull(lit, &end, 0);
    if (dir < 0 && v == 0) {
        out[0] = '\0';
        return;
    }
    v = dir > 0 ? v + 1 : v - 1;
    if (is_hex) snprintf(out, size, "0x%llX%s", v, end);
    else snprintf(out, size, "%llu%s", v, end);
}

/* What the mutant generators share: the text, its tokens, the operators
 * asked for, and the list the mutants go to. */
struct gen {
    const char *text;
    const struct tok *t;
    size_t nt;
    unsigned ops;
    int file;
    struct kv_mutant **m;
    size_t *n, *cap;
};

#define ON(op) (g->ops & (1u << (op)))
#define ADD(op, at, off, len, repl) KV_TRY_RET(add(g->m, g->n, g->cap, g->file, at, off, len, repl, op, g->text))

/* The amount of a shift, one more and one less. */
static enum kv_status shift_mutants(const struct gen *g, size_t j)
{
    const char *text = g->text;
    const struct tok *t = g->t, *k = &t[j];
    size_t nt = g->nt;
    if ((is(text, k, "<<") || is(text, k, ">>")) && ON(OP_SHIFT) && j + 1 < nt && !t[j + 1].skip) {
        const struct tok *a = &t[j + 1];
        char buf[64];
        if (a->kind == T_NUM) {
            nudge(text, a, 1, buf, sizeof buf);
            ADD(OP_SHIFT, a, a->off, a->len, buf);
            nudge(text, a, -1, buf, sizeof buf);
            if (buf[0]) ADD(OP_SHIFT, a, a->off, a->len, buf);
        } else if (a->kind == T_IDENT && !(j + 2 < nt && (is(text, &t[j + 2], "(") || is(text, &t[j + 2], ".") ||
                                                           is(text, &t[j + 2], "[")))) {
            snprintf(buf, sizeof buf, "(%.*s + 1)", (int)a->len, text + a->off);
            ADD(OP_SHIFT, a, a->off, a->len, buf);
            snprintf(buf, sizeof buf, "(%.*s - 1)", (int)a->len, text + a->off);
            ADD(OP_SHIFT, a, a->off, a->len, buf);
        }
    }
    return KV_OK;
}

/* Relations, compound assignments, indices, shifts, dropped operands. */
static enum kv_status punct_mutants(const struct gen *g, size_t j, int binary)
{
    const char *text = g->text;
    const struct tok *t = g->t, *k = &t[j], *prev = j ? &t[j - 1] : NULL;
    size_t nt = g->nt;
    static const char *const rel[][3] = {{"<", "<=", ">"}, {"<=", "<", ">="}, {">", ">=", "<"},
                                         {">=", ">", "<="}, {"==", NULL, "!="}, {"!=", NULL, "=="}};
    for (int r = 0; r < 6; r++)
        if (is(text, k, rel[r][0]) && !k->decl) {
            if (rel[r][1] && ON(OP_REL)) ADD(OP_REL, k, k->off, k->len, rel[r][1]);
            if (ON(OP_FLIP)) ADD(OP_FLIP, k, k->off, k->len, rel[r][2]);
        }
    if (is(text, k, "+=")) {
        if (k->for_part == 3 && ON(OP_STEP)) ADD(OP_STEP, k, k->off, k->len, "=");
        else if (k->for_part != 3 && ON(OP_ASSIGN)) ADD(OP_ASSIGN, k, k->off, k->len, "=");
    }
    if (is(text, k, "]") && !k->decl && ON(OP_INDEX) && !(prev && is(text, prev, "["))) {
        ADD(OP_INDEX, k, k->off, 0, " + 1");
        ADD(OP_INDEX, k, k->off, 0, " - 1");
    }
    KV_TRY_RET(shift_mutants(g, j));
    if ((is(text, k, "+") || is(text, k, "-")) && binary && !k->decl && ON(OP_DROP)) {
        size_t e = operand_end(text, t, nt, j + 1);
        if (e != (size_t)-1 && e > j + 1 && e <= nt) {
            size_t last = t[e - 1].off + t[e - 1].len;
            int ok = 1;
            for (size_t b = j + 1; b < e; b++) ok &= !t[b].skip;
            if (ok && last - k->off <= 200) ADD(OP_DROP, k, k->off, last - k->off, "");
        }
    }
    return KV_OK;
}

/* Literals: one more, one less (integers). */
static enum kv_status num_mutants(const struct gen *g, size_t j)
{
    const char *text = g->text;
    const struct tok *k = &g->t[j], *prev = j ? &g->t[j - 1] : NULL;
    /* Literals in array sizes of declarations are not constants of the math. */
    int in_size = k->size;
    int shifted = prev && (is(text, prev, "<<") || is(text, prev, ">>"));
    if (ON(OP_CONST) && !in_size && !shifted) {
        char buf[64];
        nudge(text, k, 1, buf, sizeof buf);
        ADD(OP_CONST, k, k->off, k->len, buf);
        int is_float = memchr(text + k->off, '.', k->len) != NULL;
        if (!is_float) {
            nudge(text, k, -1, buf, sizeof buf);
            if (buf[0]) ADD(OP_CONST, k, k->off, k->len, buf);
        }
    }
    return KV_OK;
}

/* Calls: barriers removed, roundings swapped, min and max swapped. */
static enum kv_status call_mutants(const struct gen *g, size_t j)
{
    static const char *const barriers[] = {"barrier", "memoryBarrierShared", "memoryBarrier", "groupMemoryBarrier",
                                           "subgroupBarrier", "subgroupMemoryBarrierShared", NULL};
    static const char *const rounds[][2] = {{"floor", "ceil"}, {"ceil", "floor"}, {"round", "trunc"},
                                            {"roundEven", "trunc"}, {"trunc", "round"}, {NULL, NULL}};
    const char *text = g->text;
    const struct tok *t = g->t, *k = &t[j];
    size_t nt = g->nt;
    if (ON(OP_BARRIER) && in_list(text, k, barriers) && j + 2 < nt && is(text, &t[j + 2], ")"))
        ADD(OP_BARRIER, k, k->off, t[j + 2].off + 1 - k->off, "");
    for (int r = 0; rounds[r][0] && ON(OP_ROUND); r++)
        if (is(text, k, rounds[r][0])) ADD(OP_ROUND, k, k->off, k->len, rounds[r][1]);
    if (ON(OP_MINMAX) && (is(text, k, "min") || is(text, k, "max")))
        ADD(OP_MINMAX, k, k->off, k->len, is(text, k, "min") ? "max" : "min");
    return KV_OK;
}

enum kv_status kv_mutate_text(const char *text, size_t len, int file, const unsigned char *live, int n_live,
                              unsigned ops, struct kv_mutant **m, size_t *n, size_t *cap)
{
    enum kv_status st = KV_OK;
    size_t nt = 0;
    struct tok *t = lex(text, len, live, n_live, &nt);
    KV_CHECK(t, KV_EDATA, "out of memory lexing a shader");
    const struct gen gen = {text, t, nt, ops, file, m, n, cap}, *g = &gen;
    for (size_t j = 0; j < nt; j++) {
        const struct tok *k = &t[j];
        if (k->skip) continue;
        const struct tok *prev = j ? &t[j - 1] : NULL;
        int binary = prev && (prev->kind != T_PUNCT || is(text, prev, ")") || is(text, prev, "]"));
        if (k->for_part == 2 && ON(OP_BOUND) && j + 1 < nt && is(text, &t[j + 1], ";")) {
            int has_rel = 0;
            for (size_t b = j; b > 0 && t[b].for_part == 2; b--)
                has_rel |= is(text, &t[b], "<") || is(text, &t[b], "<=") || is(text, &t[b], ">") || is(text, &t[b], ">=");
            if (has_rel) KV_TRY(add(m, n, cap, file, k, k->off + k->len, 0, " - 1", OP_BOUND, text));
        }
        if (k->kind == T_PUNCT) KV_TRY(punct_mutants(g, j, binary));
        else if (k->kind == T_NUM) KV_TRY(num_mutants(g, j));
        else if (k->kind == T_IDENT && j + 1 < nt && is(text, &t[j + 1], "(")) KV_TRY(call_mutants(g, j));
    }
cleanup:
    free(t);
    return st;
}
#undef ADD
#undef ON

char *kv_mutant_apply(const char *text, size_t len, const struct kv_mutant *m, size_t *out_len)
{
    size_t r = strlen(m->repl), n = len - m->len + r;
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, text, m->off);
    memcpy(out + m->off, m->repl, r);
    memcpy(out + m->off + r, text + m->off + m->len, len - m->off - m->len);
    out[n] = '\0';
    *out_len = n;
    return out;
}

static int count_lines(const char *s)
{
    int n = 1;
    for (; *s; s++) n += *s == '\n';
    return n;
}

enum kv_status kv_mutate_liveness(const char *pre, size_t pre_len, const char *const *names, const char *const *texts,
                                  int n_files, unsigned char **live, int *n_lines)
{
    enum kv_status st = KV_OK;
    int *block = NULL;
    for (int f = 0; f < n_files; f++) {
        n_lines[f] = count_lines(texts[f]);
        live[f] = calloc((size_t)n_lines[f] + 2, 1);
        KV_CHECK(live[f], KV_EDATA, "out of memory");
    }
    /* Lines of the output map to (file, line) through #line markers (none
     * when nothing is included: then it is the main file's, line for line). */
    int file = 0, line = 0;
    for (size_t i = 0; i < pre_len;) {
        size_t e = i;
        while (e < pre_len && pre[e] != '\n') e++;
        if (!strncmp(pre + i, "#line ", 6)) {
            line = atoi(pre + i + 6) - 1;
            const char *q = memchr(pre + i, '"', e - i);
            if (q) {
                const char *q2 = memchr(q + 1, '"', (size_t)(pre + e - q - 1));
                file = -1;
                for (int f = 0; q2 && f < n_files; f++)
                    if (strlen(names[f]) == (size_t)(q2 - q - 1) && !strncmp(names[f], q + 1, (size_t)(q2 - q - 1)))
                        file = f;
            }
        } else {
            line++;
            int content = 0;
            for (size_t j = i; j < e; j++) content |= !isspace((unsigned char)pre[j]);
            if (content && file >= 0 && line >= 1 && line <= n_lines[file]) live[file][line] = 1;
        }
        i = e + 1;
    }
    /* #define lines: live where their conditional block has a live line. */
    for (int f = 0; f < n_files; f++) {
        int n = n_lines[f], nb = 1, stack[64], depth = 0;
        free(block);
        block = calloc((size_t)n + 2, sizeof *block);
        unsigned char *blive = calloc((size_t)n + 2, 1);
        KV_CHECK(block && blive, KV_EDATA, "out of memory");
        stack[0] = 0;
        const char *p = texts[f];
        for (int l = 1; l <= n; l++) {
            const char *s = p;
            while (*s == ' ' || *s == '\t') s++;
            if (!strncmp(s, "#if", 3) && depth < 63) stack[++depth] = nb++;
            else if ((!strncmp(s, "#el", 3)) && depth > 0) stack[depth] = nb++;
            else if (!strncmp(s, "#endif", 6) && depth > 0) depth--;
            block[l] = depth ? stack[depth] : 0;
            if (*s != '#' && live[f][l]) blive[block[l]] = 1;
            const char *nl = strchr(p, '\n');
            if (!nl) break;
            p = nl + 1;
        }
        p = texts[f];
        for (int l = 1; l <= n; l++) {
            const char *s = p;
            while (*s == ' ' || *s == '\t') s++;
            if (!strncmp(s, "#define", 7)) live[f][l] = block[l] == 0 || blive[block[l]];
            const char *nl = strchr(p, '\n');
            if (!nl) break;
            p = nl + 1;
        }
        free(blive);
    }
cleanup:
    free(block);
    return st;
}

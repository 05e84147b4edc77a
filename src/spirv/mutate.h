/* One-site mutants of GLSL source text, for `kverify mutate`: each is one
 * realistic bug made at one place of one file (a replaced span of text),
 * never inside a comment, a directive other than #define, a layout
 * qualifier, or a line that the preprocessor drops. */
#ifndef KV_MUTATE_H
#define KV_MUTATE_H

#include <stddef.h>

#include "core/status.h"

struct kv_mutant {
    int file;          /* index into the caller's file list */
    int line, col;     /* 1-based, of the replaced span */
    size_t off, len;   /* the span replaced */
    char repl[48];     /* by this text */
    const char *op;    /* the operator's name (kv_mutate_ops) */
    char desc[96];     /* "'<' -> '<='" */
};

/* The operators, for --help and the report. */
extern const struct kv_mutate_op {
    const char *name;
    const char *doc;
} kv_mutate_ops[];
extern const int kv_mutate_n_ops;

/* Append the mutants of text (file index `file`) to *m (grown with realloc;
 * *n and *cap updated). live[l] (1-based lines, n_live of them) says whether
 * line l survives the preprocessor; NULL: every line. ops: bit i enables
 * kv_mutate_ops[i]. */
enum kv_status kv_mutate_text(const char *text, size_t len, int file, const unsigned char *live, int n_live,
                              unsigned ops, struct kv_mutant **m, size_t *n, size_t *cap);

/* The lines of each file that survive the preprocessor, from its output
 * (spirv/glsl.h kv_glsl_preprocess, with #line markers): live[f][l] for file
 * names[f]; #define lines count as live where the block they sit in has a
 * live line, or is the file's top level. *live[f] is calloc'd, n_lines[f]+2. */
enum kv_status kv_mutate_liveness(const char *pre, size_t pre_len, const char *const *names, const char *const *texts,
                                  int n_files, unsigned char **live, int *n_lines);

/* The text of file `text` with mutant m applied (malloc'd, NUL-terminated). */
char *kv_mutant_apply(const char *text, size_t len, const struct kv_mutant *m, size_t *out_len);

#endif

/* GLSL compiled at run time (libshaderc): a user's .comp for --shader, and the
 * built-in stages recompiled from their embedded sources, for `kverify
 * mutate` (with one file replaced by a mutant) and for the stress run with
 * subgroups in reverse order. */
#ifndef KV_GLSL_H
#define KV_GLSL_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

struct kv_glsl_file {
    const char *name; /* a built-in's base name ("reduce.glsl"), or a user file's path */
    const char *text; /* not necessarily NUL-terminated */
    size_t len;
};

enum {
    KV_SHADER_SUBGROUP = 1, /* KV_SUBGROUP=1: the device has subgroup arithmetic */
    KV_SHADER_INT8 = 2,     /* KV_INT8=1: 8-bit storage buffers */
    KV_SHADER_BF16CM = 4,   /* KV_BF16CM=1, then NV float16 matrices rewritten as KHR bfloat16 (spirv_khr.h) */
    KV_SHADER_ABF16 = 8,    /* KV_ABF16=1: gdn's A in bf16 (--variant a-bf16) */
    KV_SHADER_CMEL = 16,    /* KV_CM_EL=1: accumulators' elements by position (kv_vk_info.cm_layout) */
    KV_SHADER_ADDR = 32,    /* KV_ADDR=1: tensors read through device addresses in the push constants (addr.glsl) */
};

/* Where a compile finds its files, and what it does to them. */
/* A foreign shader's own preprocessor defines and include folders (--abi). */
struct kv_glsl_extra {
    int n_macros;
    const char (*macro)[2][256]; /* name, value */
    int n_dirs;
    const char (*dir)[1024];     /* searched after the including file's folder */
};

struct kv_glsl_env {
    int builtin;                     /* names are the embedded sources' (else paths on disk) */
    const struct kv_glsl_file *over; /* files whose text replaces the named file's (a mutant) */
    int n_over;
    unsigned defines;                /* KV_SHADER_* */
    int reverse;                     /* number the subgroups of a workgroup in reverse (below) */
    int transpose;                   /* with reverse: also spread neighbours over subgroups (set by compile) */
    int no_optimize;                 /* -O0 instead of -O (kverify mutate's liveness probe) */
    int debug;                       /* -g: OpLine per instruction (the sanitizer's source locations) */
    const struct kv_glsl_extra *extra; /* or NULL */
};

/* The embedded source named name (base name), or NULL; and by index, for
 * listing (NULL past the end). */
const struct kv_glsl_file *kv_glsl_builtin(const char *name);
const struct kv_glsl_file *kv_glsl_builtin_at(size_t i);

/* The text of file name as env sees it (an override, a built-in, or read
 * from disk); *text is malloc'd and NUL-terminated. */
enum kv_status kv_glsl_read(const struct kv_glsl_env *env, const char *name, char **text, size_t *len);

/* The file that `#include "requested"` in file requesting names: relative
 * to the including file's directory, unless absolute. */
void kv_glsl_include_path(const char *requesting, const char *requested, char *out, size_t size);

/* Compile name for Vulkan 1.2 into SPIR-V (*words malloc'd). #include is
 * resolved relative to the including file, through env. With env->reverse,
 * every file's gl_LocalInvocationID, gl_LocalInvocationIndex,
 * gl_GlobalInvocationID and gl_SubgroupID are renumbered so that the
 * workgroup's subgroups run in reverse order of their logical indices
 * (lanes keep their place in the subgroup): a correct shader computes the
 * same, while a missing barrier between subgroups meets the other order of
 * a device that runs subgroups one after another (lavapipe). A shader that
 * names nothing of subgroups (no subgroup operation, gl_Subgroup* or
 * cooperative matrix) is also transposed: logical neighbours sit in
 * different subgroups, so a race between two of them, which lanes of one
 * subgroup running in lockstep would hide, meets both orders too. Failures
 * are KV_EDATA with a one-line message naming the file. */
enum kv_status kv_glsl_compile(const struct kv_glsl_env *env, const char *name, uint32_t **words, size_t *bytes);

/* The preprocessed text of name (#line markers kept), for kverify mutate's
 * liveness of source lines; *out malloc'd. */
enum kv_status kv_glsl_preprocess(const struct kv_glsl_env *env, const char *name, char **out, size_t *len);

#endif

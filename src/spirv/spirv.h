/* Just enough SPIR-V reflection to check a compute shader against a stage's
 * interface: descriptor bindings and their kinds, the push-constant block's
 * size, and the workgroup size. */
#ifndef KV_SPIRV_H
#define KV_SPIRV_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define KV_SPIRV_MAX_BINDINGS 32
#define KV_SPIRV_MAX_PUSH 32
#define KV_SPIRV_MAX_SPEC 32

/* A scalar's kind, under vectors and arrays. */
enum { KV_SCALAR_OTHER, KV_SCALAR_FLOAT, KV_SCALAR_INT, KV_SCALAR_UINT, KV_SCALAR_BOOL };

enum kv_binding_kind { KV_BIND_STORAGE, KV_BIND_UNIFORM, KV_BIND_OTHER };

struct kv_spirv_iface {
    uint32_t local[3];
    int n_bindings;
    struct {
        uint32_t set, binding;
        enum kv_binding_kind kind;
        int writable, readable; /* no NonWritable / NonReadable on the variable or its block */
        int elem_kind;          /* KV_SCALAR_* of its last member's elements */
        uint32_t elem_bits;
    } b[KV_SPIRV_MAX_BINDINGS];
    uint32_t push_size; /* 0 when the shader declares no push constants */
    int n_push;         /* the push block's members, in order */
    struct {
        uint32_t offset, size, bits;
        int kind;
    } push[KV_SPIRV_MAX_PUSH];
    int n_spec; /* specialization constants (SpecId) */
    struct {
        uint32_t id, bits;
        int kind;
    } spec[KV_SPIRV_MAX_SPEC];
};

/* Reflect a module; KV_EDATA with a message naming `what` when it is not a
 * valid compute module we can read. */
enum kv_status kv_spirv_reflect(const char *what, const uint32_t *words, size_t n_words,
                                struct kv_spirv_iface *out);
/* Check the reflected interface against an ABI of n storage buffers at set 0
 * (bindings 0..n-1) and push_size bytes of push constants, push_doc their
 * fields as GLSL ("uint rows; float eps;": 32-bit scalars in order; NULL or
 * another form: their range only). Every declared binding must fit the ABI;
 * those in `required` (a bit per binding: the stage's outputs) must be
 * declared, others may be left out (an optimising compiler drops unused
 * buffers, and unused push-constant members: kv_spirv_push_misfit). */
enum kv_status kv_spirv_check(const char *what, const struct kv_spirv_iface *got,
                              uint32_t n_bindings, uint32_t required, uint32_t push_size, const char *push_doc);
/* The first member of got's push-constant block that is not within push_size
 * bytes of 32-bit fields of kinds[i] (KV_SCALAR_*) at offset 4i, word for
 * word, or -1 when all are. Members may be left out (glslc -Os drops those a
 * shader never reads); kinds NULL checks the range only, as for a struct
 * member; sign_free lets int and uint stand for each other. */
int kv_spirv_push_misfit(const struct kv_spirv_iface *got, uint32_t push_size, const int *kinds, int sign_free);
/* The kinds (KV_SCALAR_*) of a push_doc's fields, at most max: their count,
 * or -1 when doc is NULL or not of that form. */
int kv_spirv_doc_kinds(const char *doc, int *kinds, int max);
/* "float", "int", "uint", "bool" or "non-scalar". */
const char *kv_spirv_kind_name(int kind);

#endif

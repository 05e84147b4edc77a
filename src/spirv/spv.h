/* A SPIR-V module as the rewrites see it (the sanitizer's, the address
 * build's): its ids indexed (definitions, names, decorations), types
 * measured, and a word buffer new instructions are written into, with the
 * types and constants they need found in the module or declared anew. */
#ifndef KV_SPIRV_SPV_H
#define KV_SPIRV_SPV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* SpvHasResultAndType as an inline definition: spirv/spirv_khr.c gives the external one. */
#define SPV_ENABLE_UTILITY_CODE
#include <spirv/unified1/spirv.h>

/* Instructions newer than the headers. */
enum {
    KV_OP_COOPMAT_LOAD_KHR = 4457, KV_OP_COOPMAT_STORE_KHR = 4458,
    KV_OP_COOPMAT_LOAD_NV = 5359, KV_OP_COOPMAT_STORE_NV = 5360,
};

/* Whether op has a result id and a result type: SpvHasResultAndType, which
 * knows the cooperative-matrix KHR instructions only in newer headers. */
static inline void kv_spv_result(uint32_t op, bool *res, bool *rt)
{
    if (op >= 4456 && op <= 4460) { /* OpTypeCooperativeMatrixKHR .. OpCooperativeMatrixLengthKHR */
        *res = op != KV_OP_COOPMAT_STORE_KHR, *rt = op != KV_OP_COOPMAT_STORE_KHR && op != 4456;
        return;
    }
    SpvHasResultAndType((SpvOp)op, res, rt);
}

/* A growing word buffer. */
struct kv_words {
    uint32_t *w;
    size_t n, cap;
    int oom;
};
void kv_words_put(struct kv_words *b, const uint32_t *w, size_t n);
/* The instruction at w put as it is, except a loop's merge loses its Unroll
 * hint: the hint forces a device to unroll the loop's body whatever its size,
 * and the rewrites (the sanitizer's, the loop-cut build's) add to that body. */
void kv_words_put_rolled(struct kv_words *b, const uint32_t *w);
/* One instruction: opcode and its operands. */
void kv_words_ins(struct kv_words *b, uint32_t op, size_t n, const uint32_t *args);
#define KV_INS(b, op, ...) \
    kv_words_ins(b, op, sizeof((uint32_t[]){__VA_ARGS__}) / 4, (uint32_t[]){__VA_ARGS__})
/* A string operand's words (nul-terminated, padded). */
size_t kv_words_str(uint32_t *out, size_t max, const char *s);

struct kv_spv {
    const uint32_t *w;
    size_t n;
    uint32_t version, bound, next; /* next: the next id to allocate */
    uint32_t *def;      /* id -> offset of its defining instruction, 0: none */
    uint32_t *name;     /* id -> offset of its OpName, 0: none */
    int32_t *binding, *set;
    uint32_t *stride;   /* ArrayStride */
    int32_t *builtin;   /* BuiltIn + 1, 0: none */
    uint8_t *block;     /* Block or BufferBlock */
    uint32_t *str;      /* OpString id -> offset */
    size_t first_type;  /* offset of the first type, constant or global variable */
    size_t first_fn;    /* offset of the first OpFunction */
    size_t after_ext;   /* offset after the last OpExtension / OpCapability */
    size_t entry;       /* offset of the GLCompute OpEntryPoint */
    uint32_t entry_fn;
    int vulkan_mm;      /* the Vulkan memory model: device-wide atomics at QueueFamily scope */
    /* new global instructions (types, constants, variables) and annotations */
    struct kv_words globals, annot;
    /* what was found or declared, so that each is made once */
    uint32_t t_void, t_bool, t_uint, t_uvec3, t_u64, c_true;
    int n_const, n_ptr;
    uint32_t cval[512], cid[512];
    uint32_t pkey[64][2], pid[64];
};

int kv_spv_index(struct kv_spv *m, const uint32_t *w, size_t n, char *err, size_t err_size);
void kv_spv_free(struct kv_spv *m);
static inline uint32_t kv_op(uint32_t word) { return word & 0xffffu; }
static inline uint32_t kv_len(uint32_t word) { return word >> 16; }
/* The opcode defining id, or 0. */
uint32_t kv_spv_op(const struct kv_spv *m, uint32_t id);
/* The type of value id, or 0. */
uint32_t kv_spv_type(const struct kv_spv *m, uint32_t id);
/* A 32-bit OpConstant's value: 1 with *v set, 0 when id is not one. */
int kv_spv_const(const struct kv_spv *m, uint32_t id, uint32_t *v);
/* The scalars a type holds (its shadow units); 0 when not fixed (runtime
 * arrays, spec-constant lengths, opaque types). */
uint32_t kv_spv_units(const struct kv_spv *m, uint32_t type);
/* The name OpName gives id, or "". */
const char *kv_spv_name(const struct kv_spv *m, uint32_t id);

/* Types and constants, found in the module (where redeclaring is invalid)
 * or declared in m->globals. */
uint32_t kv_spv_void(struct kv_spv *m);
uint32_t kv_spv_bool(struct kv_spv *m);
uint32_t kv_spv_uint(struct kv_spv *m);
uint32_t kv_spv_u64(struct kv_spv *m); /* a 64-bit unsigned integer (the Int64 capability's) */
uint32_t kv_spv_uvec3(struct kv_spv *m);
uint32_t kv_spv_fn(struct kv_spv *m, uint32_t ret, int n, const uint32_t *params);
uint32_t kv_spv_ptr(struct kv_spv *m, uint32_t sclass, uint32_t type);
uint32_t kv_spv_u32(struct kv_spv *m, uint32_t value);
uint32_t kv_spv_true(struct kv_spv *m);
uint32_t kv_spv_id(struct kv_spv *m);

/* The variable of a built-in input (SpvBuiltIn*) of type, found or
 * declared in m->globals (then *is_new = 1: the entry point must list it). */
uint32_t kv_spv_builtin(struct kv_spv *m, int builtin, uint32_t type, uint32_t *is_new);
/* Invocations per workgroup (LocalSize), 0 when not fixed (a specialized WorkgroupSize). */
uint32_t kv_spv_local_size(const struct kv_spv *m);

/* The module put together with what a rewrite made: caps (capabilities
 * added before the module's own), the storage-buffer extension where the
 * module is older than SPIR-V 1.3, the entry point's interface grown by the
 * new variables vars (from SPIR-V 1.4, where it lists every global) and io
 * (new built-in inputs: at any version), m's new annotations and globals,
 * then body (the functions rewritten) and fns (new functions, or NULL).
 * Into *out (malloc'd) and *bytes; -1 when out of memory. */
int kv_spv_assemble(struct kv_spv *m, const uint32_t *caps, int n_caps, const uint32_t *vars, uint32_t n_vars,
                    const uint32_t *io, uint32_t n_io, const struct kv_words *body, const struct kv_words *fns,
                    uint32_t **out, size_t *bytes);

#endif

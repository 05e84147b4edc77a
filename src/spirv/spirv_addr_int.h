/* The address build's rewrite (spirv_addr.h) shared by its two files: the
 * module's globals and its putting together (spirv_addr_module.c), and the
 * functions' instructions (spirv_addr.c). Not an interface of its own. */
#ifndef KV_SPIRV_ADDR_INT_H
#define KV_SPIRV_ADDR_INT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spirv/spirv.h"
#include "spirv/spv.h"

enum {
    SC_UNIFORM_CONST = 0, SC_UNIFORM = 2, SC_PUSH = 9, SC_SB = 12, SC_PSB = 5349,
    CAP_PSB = 5347, CAP_INT64 = 11, AM_PSB64 = 5348,
    MEM_ALIGNED = 2, TOP_ALIGN = 16, /* a tensor's address is a multiple of 16 (kv_addr_push) */
    MAXB = KV_SPIRV_MAX_BINDINGS, MAXV = 64,
};

struct ax {
    struct kv_spv m;
    uint32_t n_bind;
    /* The buffer variables the build removes (several may alias one binding):
     * id -> 1 + their index here, 0: none. */
    int32_t *bind_of;
    int n_var;
    struct {
        uint32_t binding, block, psb; /* its block struct, and a PhysicalStorageBuffer pointer to it */
        uint8_t coherent, vol;
        uint32_t fn_ptr; /* the address the function loaded */
        uint32_t fn_u;   /* the same as an integer (guard) */
    } var[MAXV];
    uint32_t pc_old, P;  /* the module's push-constant variable and struct (0: none) */
    uint32_t P2, V2, pm_ptr, cb[2 * MAXB], u64;
    /* Whether a function reads a buffer's length(): then each binding's byte
     * range follows the addresses (64-bit words at 8 (n_bind + b)); n_mem, the
     * push block's members before the module's own (n_bind, or 2 n_bind). */
    int lengths;
    uint32_t n_mem;
    int n_c64;
    uint64_t c64v[64];
    uint32_t c64id[64];
    uint32_t *aln, *pty;          /* id -> alignment (0: no address made here) and pointee type */
    int32_t *root;                /* id -> 1 + the buffer variable it points into */
    int guard;                    /* every access kept within its binding's range (kv_spirv_addr) */
    size_t n_aln;
    uint32_t (*off)[3];           /* Offset decorations: struct, member, offset */
    size_t n_off, cap_off;
    struct kv_words body;
    char *err;
    size_t err_size;
};

static inline int fail(struct ax *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt), vsnprintf(x->err, x->err_size, fmt, ap), va_end(ap);
    return -1;
}

/* The instruction defining id, where it has the words its opcode's
 * operands the rewrite reads need (a type's), else NULL. */
static const uint32_t *def_of(const struct ax *x, uint32_t id)
{
    if (id >= x->m.bound || !x->m.def[id]) return NULL;
    const uint32_t *d = x->m.w + x->m.def[id], op = kv_op(d[0]), len = kv_len(d[0]);
    const uint32_t need = op == SpvOpTypePointer || op == SpvOpTypeArray || op == SpvOpTypeVector ||
                                  op == SpvOpTypeMatrix || op == SpvOpTypeInt
                              ? 4
                          : op == SpvOpTypeRuntimeArray || op == SpvOpTypeFloat ? 3
                                                                                : 2;
    return len >= need ? d : NULL;
}

/* A pointer type's storage class and pointee (0 where t is not a pointer type). */
static inline uint32_t pointee(const struct ax *x, uint32_t t, uint32_t *sc)
{
    const uint32_t *d = def_of(x, t);
    if (!d || kv_op(d[0]) != SpvOpTypePointer) return 0;
    if (sc) *sc = d[2];
    return d[3];
}

static inline int has_deco(const struct ax *x, uint32_t id, uint32_t deco)
{
    for (size_t i = 5; i < x->m.first_type; i += kv_len(x->m.w[i]))
        if (kv_op(x->m.w[i]) == SpvOpDecorate && x->m.w[i + 1] == id && x->m.w[i + 2] == deco) return 1;
    return 0;
}

static inline int has_member_deco(const struct ax *x, uint32_t st, uint32_t k, uint32_t deco)
{
    for (size_t i = 5; i < x->m.first_type; i += kv_len(x->m.w[i]))
        if (kv_op(x->m.w[i]) == SpvOpMemberDecorate && x->m.w[i + 1] == st && x->m.w[i + 2] == k &&
            x->m.w[i + 3] == deco)
            return 1;
    return 0;
}

/* Member k's Offset in struct st: 1 with *off set, 0 where none is given. */
static inline int member_offset(const struct ax *x, uint32_t st, uint32_t k, uint32_t *off)
{
    for (size_t i = 0; i < x->n_off; i++)
        if (x->off[i][0] == st && x->off[i][1] == k) return *off = x->off[i][2], 1;
    return 0;
}

/* A constant index, sign-extended where its type is signed: 1 with *v set. */
static inline int const_index(const struct ax *x, uint32_t id, uint64_t *v)
{
    uint32_t c;
    if (!kv_spv_const(&x->m, id, &c)) return 0;
    const uint32_t *t = def_of(x, kv_spv_type(&x->m, id));
    *v = t && t[3] ? (uint64_t)(int64_t)(int32_t)c : c;
    return 1;
}

/* The storage buffers at set 0 that become addresses, the push constants
 * and the Offset decorations (spirv_addr_module.c). */
int kv_ax_scan_globals(struct ax *x);
/* The new push block that holds the addresses, and its variable. */
int kv_ax_declare_push(struct ax *x);
/* The module put together from x's rewritten functions into *out. */
int kv_ax_assemble(struct ax *x, uint32_t **out, size_t *n_out);

#endif

/* The address build's rewrite (spirv/spirv_addr.h): every embedded compute
 * shader, bound (its storage buffers rewritten) and with KV_ADDR where it
 * has that build (its indices alone), under each set of defines it builds
 * with, comes out as a module SPIRV-Tools' validator accepts, with no
 * storage buffer left, no access chain through an address (every one made
 * as 64-bit arithmetic), every load and store through an address Aligned,
 * and the push constants n_bind words later with the addresses before
 * them (and the bindings' ranges, where a buffer's length() is read); what
 * it cannot follow is refused with its reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <spirv-tools/libspirv.h>

#include "kv_spv_valid.h"

#include "spirv/glsl.h"
#include "spirv/spirv.h"
#include "spirv/spirv_addr.h"

enum { OP_TYPE_INT = 21, OP_TYPE_STRUCT = 30, OP_TYPE_POINTER = 32, OP_VARIABLE = 59, OP_LOAD = 61, OP_STORE = 62,
       OP_ACCESS_CHAIN = 65, OP_IN_BOUNDS_ACCESS_CHAIN = 66, OP_MEMBER_DECORATE = 72, OP_CONVERT_U_TO_PTR = 120,
       SC_UNIFORM = 2, SC_PUSH = 9, SC_SB = 12, SC_PSB = 5349, DECO_OFFSET = 35, MEM_ALIGNED = 2 };

/* The push block's member offsets (struct of the PushConstant variable), -1 past its members. */
static void push_offsets(const uint32_t *m, size_t n, int64_t off[64], uint32_t kind[64])
{
    uint32_t bound = m[3], *ptr_sc = calloc(bound, 4), *ptr_to = calloc(bound, 4), st = 0;
    uint8_t *u64 = calloc(bound, 1);
    assert_true(ptr_sc && ptr_to && u64);
    for (int i = 0; i < 64; i++) off[i] = -1, kind[i] = 0;
    for (size_t i = 5; i < n; i += m[i] >> 16) {
        const uint32_t op = m[i] & 0xffff, *in = m + i;
        if (op == OP_TYPE_POINTER) ptr_sc[in[1]] = in[2], ptr_to[in[1]] = in[3];
        if (op == OP_TYPE_INT && in[2] == 64) u64[in[1]] = 1;
        if (op == OP_VARIABLE && in[3] == SC_PUSH) st = ptr_to[in[1]];
    }
    for (size_t i = 5; st && i < n; i += m[i] >> 16) {
        const uint32_t op = m[i] & 0xffff, *in = m + i;
        if (op == OP_MEMBER_DECORATE && in[1] == st && in[3] == DECO_OFFSET && in[2] < 64) off[in[2]] = in[4];
        if (op == OP_TYPE_STRUCT && in[1] == st)
            for (uint32_t k = 2; k < (m[i] >> 16) && k - 2 < 64; k++) kind[k - 2] = u64[in[k]] ? 64 : 1;
    }
    free(ptr_sc), free(ptr_to), free(u64);
}

/* The rewritten module's facts: storage buffers left, access chains through
 * an address, loads and stores through one without Aligned. */
static void inspect(const uint32_t *m, size_t n, int *buffers, int *chains, int *unaligned, int *made)
{
    uint32_t bound = m[3], *type = calloc(bound, 4), *ptr_sc = calloc(bound, 4);
    assert_true(type && ptr_sc);
    *buffers = *chains = *unaligned = *made = 0;
    for (size_t i = 5; i < n; i += m[i] >> 16) {
        const uint32_t op = m[i] & 0xffff, len = m[i] >> 16, *in = m + i;
        assert_true(len > 0 && i + len <= n);
        if (op == OP_TYPE_POINTER) ptr_sc[in[1]] = in[2];
        if (op == OP_VARIABLE && (in[3] == SC_SB || in[3] == SC_UNIFORM)) (*buffers)++;
        if (op == OP_VARIABLE || op == OP_ACCESS_CHAIN || op == OP_IN_BOUNDS_ACCESS_CHAIN || op == OP_CONVERT_U_TO_PTR ||
            op == OP_LOAD)
            type[in[2]] = in[1];
        if (op == OP_CONVERT_U_TO_PTR) (*made)++;
        if ((op == OP_ACCESS_CHAIN || op == OP_IN_BOUNDS_ACCESS_CHAIN) && ptr_sc[type[in[3]]] == SC_PSB) (*chains)++;
        const uint32_t p = op == OP_LOAD ? in[3] : op == OP_STORE ? in[1] : 0, mi = op == OP_LOAD ? 4 : 3;
        if (p && ptr_sc[type[p]] == SC_PSB) {
            const int aligned = len > mi && (in[mi] & MEM_ALIGNED) && in[mi + 1] && !(in[mi + 1] & (in[mi + 1] - 1));
            *unaligned += !aligned;
        }
    }
    free(type), free(ptr_sc);
}

enum { OP_ULESS_EQUAL = 178 }; /* OpULessThanEqual */

/* How many instructions of opcode op module m has. */
static int count_op(const uint32_t *m, size_t n, uint32_t op)
{
    int c = 0;
    for (size_t i = 5; i < n && m[i] >> 16; i += m[i] >> 16) c += (m[i] & 0xffff) == op;
    return c;
}

static void all_builtins_rewrite(void **state)
{
    (void)state;
    static const unsigned defs[] = {0, KV_SHADER_SUBGROUP, KV_SHADER_SUBGROUP | KV_SHADER_INT8,
                                    KV_SHADER_SUBGROUP | KV_SHADER_CMEL, KV_SHADER_ABF16};
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    int modules = 0, addr_builds = 0, made = 0, guarded = 0;
    for (size_t i = 0; kv_glsl_builtin_at(i); i++) {
        const char *name = kv_glsl_builtin_at(i)->name;
        size_t len = strlen(name);
        if (len < 5 || strcmp(name + len - 5, ".comp")) continue;
        for (size_t d = 0; d < 2 * sizeof defs / sizeof *defs; d++) {
            const int addr = d % 2;
            struct kv_glsl_env env = {.builtin = 1, .defines = defs[d / 2] | (addr ? KV_SHADER_ADDR : 0)};
            uint32_t *w = NULL, *out = NULL;
            size_t bytes = 0, n_out = 0;
            if (kv_glsl_compile(&env, name, &w, &bytes) != KV_OK) continue; /* a build it does not have */
            struct kv_spirv_iface iface;
            assert_int_equal(kv_spirv_reflect(name, w, bytes / 4, &iface), KV_OK);
            if (addr && iface.n_bindings) { /* no KV_ADDR build: the defines changed nothing */
                free(w);
                continue;
            }
            uint32_t n_bind = 0;
            for (int b = 0; b < iface.n_bindings; b++)
                if (iface.b[b].binding + 1 > n_bind) n_bind = iface.b[b].binding + 1;
            char err[300], why[1024];
            if (kv_spirv_addr(w, bytes / 4, n_bind, 0, &out, &n_out, NULL, err, sizeof err))
                fail_msg("%s (defines %u): refused: %s", name, env.defines, err);
            if (kv_spv_valid(ctx, w, bytes / 4, NULL, 0) && !kv_spv_valid(ctx, out, n_out, why, sizeof why))
                fail_msg("%s (defines %u): the address build is invalid: %s", name, env.defines, why);
            int buffers, chains, unaligned, m;
            inspect(out, n_out, &buffers, &chains, &unaligned, &m);
            assert_int_equal(buffers, 0);
            assert_int_equal(chains, 0);
            assert_int_equal(unaligned, 0);
            made += m;
            /* the addresses first (64-bit words at 8 b), then the module's push constants, 8 n_bind later */
            int64_t off[64];
            uint32_t kind[64];
            push_offsets(out, n_out, off, kind);
            for (uint32_t b = 0; b < n_bind; b++) assert_int_equal(off[b], 8 * b), assert_int_equal(kind[b], 64);
            for (int k = 0; k < iface.n_push && n_bind; k++)
                assert_int_equal(off[n_bind + (uint32_t)k], 8 * n_bind + iface.push[k].offset);
            struct kv_spirv_iface after;
            assert_int_equal(kv_spirv_reflect(name, out, n_out, &after), KV_OK);
            assert_int_equal(after.n_bindings, 0);
            assert_int_equal(after.push_size, iface.push_size + 8 * n_bind);
            if (!addr) { /* guarded (a CPU device's): valid too, each binding's range after the addresses */
                uint32_t *g = NULL;
                size_t n_g = 0;
                int lengths = 0;
                if (kv_spirv_addr(w, bytes / 4, n_bind, 1, &g, &n_g, &lengths, err, sizeof err))
                    fail_msg("%s (defines %u): guarded, refused: %s", name, env.defines, err);
                if (kv_spv_valid(ctx, w, bytes / 4, NULL, 0) && !kv_spv_valid(ctx, g, n_g, why, sizeof why))
                    fail_msg("%s (defines %u): the guarded address build is invalid: %s", name, env.defines, why);
                assert_int_equal(lengths, n_bind > 0);
                assert_int_equal(kv_spirv_reflect(name, g, n_g, &after), KV_OK);
                assert_int_equal(after.push_size, iface.push_size + 16 * n_bind);
                /* a clamp (an unsigned <= of 64-bit offsets) for each pointer a chain made */
                if (m > (int)n_bind) assert_true(count_op(g, n_g, OP_ULESS_EQUAL) > count_op(out, n_out, OP_ULESS_EQUAL));
                guarded++;
                free(g);
            }
            modules++, addr_builds += addr;
            free(w), free(out);
        }
    }
    spvContextDestroy(ctx);
    print_message("%d modules rewritten (%d KV_ADDR builds, %d bound builds guarded too), %d pointers made by "
                  "64-bit arithmetic\n", modules, addr_builds, guarded, made);
    assert_true(modules >= 40);
    assert_int_equal(guarded, modules - addr_builds);
    assert_true(addr_builds >= 8);
    assert_true(made >= 4 * modules);
}

/* GLSL compiled from text, as a user's --shader is. */
static uint32_t *compile_text(const char *text, size_t *n)
{
    char path[] = "/tmp/kv_addr_XXXXXX.comp";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    struct kv_glsl_env env = {0};
    uint32_t *w = NULL;
    size_t bytes = 0;
    enum kv_status st = kv_glsl_compile(&env, path, &w, &bytes);
    remove(path);
    assert_int_equal(st, KV_OK);
    *n = bytes / 4;
    return w;
}

/* A buffer's length() read through an address: the binding's byte range
 * follows the addresses in the push constants, the module's own after it. */
static void reads_lengths_from_the_push_constants(void **state)
{
    (void)state;
    size_t n, n_out;
    uint32_t *out = NULL;
    char err[300], why[1024];
    uint32_t *w = compile_text("#version 450\nlayout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) readonly buffer A { uint k; float a[]; };\n"
                               "layout(std430, binding = 1) buffer B { float b[]; };\n"
                               "layout(push_constant) uniform P { uint n; } p;\n"
                               "void main() { uint i = gl_GlobalInvocationID.x;\n"
                               "  if (i < min(p.n, uint(a.length()))) b[i] = a[i] + float(k); }\n",
                               &n);
    int lengths = 0, buffers, chains, unaligned, made;
    assert_int_equal(kv_spirv_addr(w, n, 2, 0, &out, &n_out, &lengths, err, sizeof err), 0);
    assert_true(lengths);
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    if (!kv_spv_valid(ctx, out, n_out, why, sizeof why)) fail_msg("invalid: %s", why);
    spvContextDestroy(ctx);
    inspect(out, n_out, &buffers, &chains, &unaligned, &made);
    assert_int_equal(buffers + chains + unaligned, 0);
    int64_t off[64];
    uint32_t kind[64];
    push_offsets(out, n_out, off, kind);
    for (int b = 0; b < 4; b++) assert_int_equal(off[b], 8 * b), assert_int_equal(kind[b], 64); /* 2 addresses, 2 ranges */
    assert_int_equal(off[4], 32); /* p.n */
    free(w), free(out);
    /* without length(): no ranges */
    w = compile_text("#version 450\nlayout(local_size_x = 64) in;\n"
                     "layout(std430, binding = 0) buffer B { float b[]; };\n"
                     "layout(push_constant) uniform P { uint n; } p;\n"
                     "void main() { if (gl_GlobalInvocationID.x < p.n) b[gl_GlobalInvocationID.x] = 1.0; }\n",
                     &n);
    assert_int_equal(kv_spirv_addr(w, n, 1, 0, &out, &n_out, &lengths, err, sizeof err), 0);
    assert_false(lengths);
    push_offsets(out, n_out, off, kind);
    assert_int_equal(off[1], 8);
    free(w), free(out);
}

static void refuses_what_it_cannot_follow(void **state)
{
    (void)state;
    char err[300];
    uint32_t *out = NULL;
    size_t n, n_out;
    /* a binding past the stage's */
    uint32_t *w = compile_text("#version 450\nlayout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) buffer A { float a[]; };\n"
                               "void main() { a[gl_GlobalInvocationID.x] = 1.0; }\n",
                               &n);
    assert_int_not_equal(kv_spirv_addr(w, n, 0, 0, &out, &n_out, NULL, err, sizeof err), 0);
    assert_non_null(strstr(err, "binding 0 of set 0 is none of the stage's 0"));
    free(w);
    /* a uniform buffer */
    w = compile_text("#version 450\nlayout(local_size_x = 64) in;\n"
                     "layout(std140, binding = 0) uniform U { float s; };\n"
                     "layout(std430, binding = 1) buffer A { float a[]; };\n"
                     "void main() { a[gl_GlobalInvocationID.x] = s; }\n",
                     &n);
    assert_int_not_equal(kv_spirv_addr(w, n, 2, 0, &out, &n_out, NULL, err, sizeof err), 0);
    assert_non_null(strstr(err, "binding 0 is a uniform buffer"));
    free(w);
    /* not SPIR-V */
    uint32_t junk[8] = {0x12345678, 0, 0, 10, 0, 0, 0, 0};
    assert_int_not_equal(kv_spirv_addr(junk, 8, 1, 0, &out, &n_out, NULL, err, sizeof err), 0);
    assert_non_null(strstr(err, "not SPIR-V"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_builtins_rewrite),
        cmocka_unit_test(reads_lengths_from_the_push_constants),
        cmocka_unit_test(refuses_what_it_cannot_follow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The loop-cut build (sanitize/loops.h): every embedded compute shader,
 * under each set of defines it builds with, and its sanitized build
 * (sanitize/san.h), rewrites into a module SPIRV-Tools' validator accepts
 * wherever it accepts the original, with a loop counted for each structured
 * loop it has and none keeping an Unroll hint; a module without loops is
 * left alone; a module it cannot read is refused in one line. */
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

#include "core/status.h"
#include "sanitize/loops.h"
#include "sanitize/san.h"
#include "spirv/glsl.h"

/* What the walk over the embedded shaders counts. */
struct tally {
    spv_context ctx;
    int modules, counted, loops, unrolled;
};

/* The module w (bytes) of an embedded shader under defines def, rewritten
 * for its count and flags at binding `at`: as many loops counted as it has
 * OpLoopMerge (glslang's loops have no OpSwitch back edge), none rewritten
 * without, and valid wherever w is. */
static void rewrite_checked(struct tally *t, const char *name, unsigned def, const char *build, const uint32_t *w,
                            size_t bytes, uint32_t at)
{
    uint32_t *out = NULL;
    size_t out_bytes = 0;
    int orig_ok = kv_spv_valid(t->ctx, w, bytes / 4, NULL, 0), n = -1;
    assert_int_equal(kv_loops_instrument(name, w, bytes, at, &out, &out_bytes, &n), KV_OK);
    int unrolled = 0, unrolled_out = 0;
    assert_int_equal(n, kv_spv_loops(w, bytes / 4, &unrolled));
    if (!n) assert_null(out);
    else assert_int_equal(kv_spv_loops(out, out_bytes / 4, &unrolled_out), n);
    assert_int_equal(unrolled_out, 0); /* no loop keeps the hint */
    t->unrolled += unrolled;
    char why[1024];
    if (n && orig_ok && !kv_spv_valid(t->ctx, out, out_bytes / 4, why, sizeof why))
        fail_msg("%s (defines %u): the loop-cut build of the %s build is invalid: %s", name, def, build, why);
    t->modules++, t->counted += n > 0 && orig_ok, t->loops += n;
    free(out);
}

/* Each embedded compute shader under each of the defines it builds with
 * (debug: with OpLine, as the sanitizer's builds are), to fn. */
static void each_builtin(const unsigned *defs, size_t n_defs, int debug,
                         void (*fn)(struct tally *, const char *, unsigned, size_t, const uint32_t *, size_t),
                         struct tally *t)
{
    for (size_t i = 0; kv_glsl_builtin_at(i); i++) {
        const char *name = kv_glsl_builtin_at(i)->name;
        size_t len = strlen(name);
        if (len < 5 || strcmp(name + len - 5, ".comp")) continue;
        for (size_t d = 0; d < n_defs; d++) {
            struct kv_glsl_env env = {.builtin = 1, .defines = defs[d], .debug = debug};
            uint32_t *w = NULL;
            size_t bytes = 0;
            if (kv_glsl_compile(&env, name, &w, &bytes) != KV_OK) continue; /* a build it does not have */
            fn(t, name, defs[d], i + d, w, bytes);
            free(w);
        }
    }
}

static void plain(struct tally *t, const char *name, unsigned def, size_t seq, const uint32_t *w, size_t bytes)
{
    (void)seq;
    rewrite_checked(t, name, def, "plain", w, bytes, 8);
}

static void all_builtins_validate(void **state)
{
    (void)state;
    static const unsigned defs[] = {0, KV_SHADER_SUBGROUP, KV_SHADER_SUBGROUP | KV_SHADER_INT8,
                                    KV_SHADER_SUBGROUP | KV_SHADER_CMEL, KV_SHADER_ABF16, KV_SHADER_SUBGROUP | KV_SHADER_BF16CM};
    struct tally t = {spvContextCreate(SPV_ENV_VULKAN_1_2), 0, 0, 0, 0};
    each_builtin(defs, sizeof defs / sizeof *defs, 0, plain, &t);
    spvContextDestroy(t.ctx);
    print_message("%d modules, %d with loops counted and validated, %d loops (%d with the Unroll hint)\n", t.modules,
                  t.counted, t.loops, t.unrolled);
    assert_true(t.modules >= 40);
    assert_true(t.counted >= t.modules / 2);
    assert_true(t.unrolled >= 10); /* the shaders' [[unroll]] loops reached the rewrite */
}

/* Its sanitized build (every other one with 1 KiB of shared memory: the
 * shadow in a buffer of its own), whose count and flags follow the record
 * buffer and the shadow's. */
static void sanitized(struct tally *t, const char *name, unsigned def, size_t seq, const uint32_t *w, size_t bytes)
{
    struct kv_san_module m;
    memset(&m, 0, sizeof m);
    assert_int_equal(kv_san_instrument(name, w, bytes, 8, seq % 2 ? 1024 : 1u << 16, 16, &m), KV_OK);
    rewrite_checked(t, name, def, "sanitized", m.words, m.bytes, m.binding + 1 + (m.shadow_binding ? 1 : 0));
    kv_san_module_free(&m);
}

/* The sanitized builds, whose loop-cut builds check the sanitized run. */
static void sanitized_builds_validate(void **state)
{
    (void)state;
    static const unsigned defs[] = {0, KV_SHADER_SUBGROUP, KV_SHADER_ABF16};
    struct tally t = {spvContextCreate(SPV_ENV_VULKAN_1_2), 0, 0, 0, 0};
    each_builtin(defs, sizeof defs / sizeof *defs, 1, sanitized, &t);
    spvContextDestroy(t.ctx);
    print_message("%d sanitized modules, %d with loops counted and validated\n", t.modules, t.counted);
    assert_true(t.modules >= 30);
    assert_true(t.counted >= t.modules / 2);
}

static void refuses_garbage(void **state)
{
    (void)state;
    uint32_t junk[8] = {0x07230203, 0x00010300, 0, 100, 0, 0xdeadbeef, 1, 2};
    uint32_t *out = NULL;
    size_t out_bytes = 0;
    int n = -1;
    assert_int_equal(kv_loops_instrument("junk.spv", junk, sizeof junk, 4, &out, &out_bytes, &n), KV_EDATA);
    assert_null(out);
    assert_non_null(strstr(kv_error_msg(), "junk.spv"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_builtins_validate),
        cmocka_unit_test(sanitized_builds_validate),
        cmocka_unit_test(refuses_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

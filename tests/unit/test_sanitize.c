/* The sanitizer's instrumentation (sanitize/san.h): every embedded compute
 * shader, compiled with and without debug information under each set of
 * defines it builds with, instruments into a module SPIRV-Tools' validator
 * accepts wherever it accepts the original; the records of a module are
 * read back as written; a module it cannot read is refused in one line; no
 * loop of an instrumented module keeps an Unroll hint (a device must unroll
 * such a loop, checks and all, whatever its size). */
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

#include "sanitize/san.h"
#include "spirv/glsl.h"

static void all_builtins_validate(void **state)
{
    (void)state;
    static const unsigned defs[] = {0, KV_SHADER_SUBGROUP, KV_SHADER_SUBGROUP | KV_SHADER_INT8,
                                    KV_SHADER_SUBGROUP | KV_SHADER_CMEL, KV_SHADER_ABF16, KV_SHADER_SUBGROUP | KV_SHADER_BF16CM};
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    int modules = 0, shadowed = 0, sites = 0, sg = 0, cm = 0, valid_sg = 0, unrolled = 0, global = 0;
    for (size_t i = 0; kv_glsl_builtin_at(i); i++) {
        const char *name = kv_glsl_builtin_at(i)->name;
        size_t len = strlen(name);
        if (len < 5 || strcmp(name + len - 5, ".comp")) continue;
        for (size_t d = 0; d < sizeof defs / sizeof *defs; d++)
            for (int debug = (defs[d] & KV_SHADER_BF16CM) != 0; debug < 2; debug++) { /* bf16 matrices: the -g build alone */
                struct kv_glsl_env env = {.builtin = 1, .defines = defs[d], .debug = debug};
                uint32_t *w = NULL;
                size_t bytes = 0;
                if (kv_glsl_compile(&env, name, &w, &bytes) != KV_OK) continue; /* a build it does not have */
                int orig_ok = kv_spv_valid(ctx, w, bytes / 4, NULL, 0);
                struct kv_san_module m;
                assert_int_equal(kv_san_instrument(name, w, bytes, 8, 65536, 16, &m), KV_OK);
                char why[1024];
                int ok = kv_spv_valid(ctx, m.words, m.bytes / 4, why, sizeof why);
                if (orig_ok && !ok) fail_msg("%s (defines %u, debug %d): instrumented module invalid: %s", name, defs[d],
                                             debug, why);
                int unrolled_out = 0;
                const int loops = kv_spv_loops(w, bytes / 4, &unrolled);
                /* every loop kept (the helpers' beside them), none with the hint */
                assert_true(kv_spv_loops(m.words, m.bytes / 4, &unrolled_out) >= loops);
                assert_int_equal(unrolled_out, 0);
                sites += m.n_sites;
                for (int s = 0; s < m.n_sites; s++) assert_true(m.site[s].where[0] != '\0');
                if (debug && m.n_sites) assert_non_null(strstr(m.site[0].where, ":")); /* file:line */
                modules++;
                shadowed += m.shared_checks;
                /* racecheck-global: its shadow past the record buffer (and the shared shadow) */
                if (m.global_binding) assert_int_equal(m.global_binding, 9 + (m.shadow_binding ? 1 : 0));
                global += m.global_mask != 0;
                sg += m.subgroup_epochs && m.shared_checks, cm += m.coopmat && m.shared_checks;
                valid_sg += orig_ok && m.subgroup_epochs && m.shared_checks;
                kv_san_module_free(&m);
                free(w);
            }
    }
    spvContextDestroy(ctx);
    print_message("%d modules, %d shadowed, %d with subgroup epochs (%d validated), %d with cooperative matrices shadowed, "
                  "%d unrolled loops\n", modules, shadowed, sg, valid_sg, cm, unrolled);
    assert_true(modules >= 40);
    assert_true(sites >= 40 * modules / 2);
    assert_true(shadowed >= 10);
    assert_true(global >= modules * 3 / 4); /* nearly every stage stores through a runtime array */
    assert_true(unrolled >= 10); /* the shaders' [[unroll]] loops reached the modules */
}

/* The buffer's header and a record, as the flush writes them, read back. */
static void records_read_back(void **state)
{
    (void)state;
    struct kv_san_module m = {0};
    struct kv_san_site site = {.kind = KV_SAN_MEMCHECK, .binding = 2, .var = UINT32_MAX, .where = "a.comp:7:3"};
    m.n_sites = 1, m.site = &site;
    uint32_t buf[KV_SAN_BUFFER_BYTES / 4];
    uint64_t bytes[3] = {8, 12, (uint64_t)1 << 33};
    kv_san_buffer_init(&m, buf, bytes, 3);
    assert_int_equal(buf[KV_SAN_LOGICAL + 0], 8);
    assert_int_equal(buf[KV_SAN_LOGICAL + 1], 12);
    assert_int_equal(buf[KV_SAN_LOGICAL + 2], KV_SAN_MAX_LOGICAL); /* checked as far as 32 bits reach */
    buf[0] = 5, buf[KV_SAN_SLOTS] = 1;
    uint32_t *r = buf + KV_SAN_HEADER;
    uint32_t rec[10] = {1, 1, 3, 3, 0, 17, 2, 0, 0, 5};
    memcpy(r, rec, sizeof rec);
    struct kv_san_result res;
    kv_san_read(&m, buf, &res);
    assert_int_equal(res.count[KV_SAN_MEMCHECK], 5);
    assert_int_equal(res.n, 1);
    assert_int_equal(res.rec[0].index, 3);
    assert_int_equal(res.rec[0].invocation, 17);
    char why[320];
    kv_san_reason(&m, &res, KV_SAN_MEMCHECK, "dx", NULL, NULL, why, sizeof why);
    assert_non_null(strstr(why, "stage dx: 5 out-of-bounds accesses"));
    assert_non_null(strstr(why, "a.comp:7:3"));
    assert_non_null(strstr(why, "index 3 of buffer (binding 2, 3 elements)"));
    assert_non_null(strstr(why, "invocation 17 of workgroup (2,0,0)"));
    r[1] = 9; /* a site the module does not have: dropped, not followed */
    kv_san_read(&m, buf, &res);
    assert_int_equal(res.n, 0);
}

/* racecheck-global's parts of the shadow: one per stored binding, in order,
 * a word per unit of its logical bytes and of a last element's reach; none
 * past KV_SAN_GLOBAL_MAX words, and the flag set. */
static void global_parts(void **state)
{
    (void)state;
    struct kv_san_module m = {.global_binding = 9, .global_unit = 2, .global_mask = (1u << 1) | (1u << 2)};
    uint32_t buf[KV_SAN_BUFFER_BYTES / 4];
    uint64_t bytes[3] = {8, 12, 100};
    assert_int_equal(kv_san_buffer_init(&m, buf, bytes, 3), 4 * (39 + 83));
    assert_int_equal(buf[KV_SAN_GBASE + 0], KV_SAN_GBASE_NONE);
    assert_int_equal(buf[KV_SAN_GBASE + 1], 0);
    assert_int_equal(buf[KV_SAN_GBASE + 2], 39);
    assert_int_equal(buf[KV_SAN_GBASE + 3], KV_SAN_GBASE_NONE);
    assert_int_equal(buf[KV_SAN_FLAGS], 0);
    bytes[2] = (uint64_t)1 << 23; /* 2^22 units, 2^24 words: past the limit */
    assert_int_equal(kv_san_buffer_init(&m, buf, bytes, 3), 0);
    for (int b = 0; b < KV_SAN_MAX_BINDINGS; b++) assert_int_equal(buf[KV_SAN_GBASE + b], KV_SAN_GBASE_NONE);
    assert_int_equal(buf[KV_SAN_FLAGS], KV_SAN_FLAG_GLOBAL_OFF);
    m.global_binding = 0; /* none made: no part */
    assert_int_equal(kv_san_buffer_init(&m, buf, bytes, 3), 0);
    assert_int_equal(buf[KV_SAN_FLAGS], 0);
    /* a record read back as its row's reason */
    struct kv_san_site site = {.kind = KV_SAN_GLOBAL, .binding = 1, .var = UINT32_MAX, .where = "r.comp:30"};
    m.n_sites = 1, m.site = &site;
    uint32_t rec[10] = {KV_SAN_GLOBAL + 1, 1, 8, 0, 0, 0, 2, 0, 0, 3};
    memcpy(buf + KV_SAN_HEADER, rec, sizeof rec);
    buf[KV_SAN_GLOBAL] = 3;
    struct kv_san_result res;
    kv_san_read(&m, buf, &res);
    char why[400];
    kv_san_reason(&m, &res, KV_SAN_GLOBAL, "r", NULL, NULL, why, sizeof why);
    assert_non_null(strstr(why, "stage r: 3 races through storage buffers; the first at r.comp:30: "
                                "byte 8 of buffer (binding 1) stored by workgroup (2,0,0) (invocation 0) where workgroup 0 "
                                "(linear index) stored it"));
    buf[KV_SAN_HEADER + 3] = 2; /* a load where another workgroup stored */
    kv_san_read(&m, buf, &res);
    kv_san_reason(&m, &res, KV_SAN_GLOBAL, "r", NULL, NULL, why, sizeof why);
    assert_non_null(strstr(why, "loaded by workgroup (2,0,0) (invocation 0) where workgroup 0 (linear index) stored it"));
    buf[KV_SAN_HEADER + 3] = 4, buf[KV_SAN_HEADER + 4] = 7, buf[KV_SAN_HEADER + 5] = 9; /* one workgroup's invocations */
    kv_san_read(&m, buf, &res);
    kv_san_reason(&m, &res, KV_SAN_GLOBAL, "r", NULL, NULL, why, sizeof why);
    assert_non_null(strstr(why, "stored by invocation 9 of workgroup (2,0,0) where invocation 7 loaded it with no "
                                "workgroup barrier between"));
    assert_string_equal(kv_san_kind_name(KV_SAN_GLOBAL), "racecheck-global");
}

static void refuses_garbage(void **state)
{
    (void)state;
    uint32_t junk[8] = {0x12345678, 0, 0, 10, 0, 0, 0, 0};
    struct kv_san_module m;
    assert_int_equal(kv_san_instrument("junk.spv", junk, sizeof junk, 3, 65536, 16, &m), KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "junk.spv: cannot instrument"));
    uint32_t trunc[6] = {0x07230203, 0x10500, 0, 10, 0, (9u << 16) | 17};
    assert_int_equal(kv_san_instrument("short.spv", trunc, sizeof trunc, 3, 65536, 16, &m), KV_EDATA);
    assert_null(strchr(kv_error_msg(), '\n'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_builtins_validate),
        cmocka_unit_test(records_read_back),
        cmocka_unit_test(global_parts),
        cmocka_unit_test(refuses_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

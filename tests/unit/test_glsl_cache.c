/* The compiled-GLSL cache (spirv/glsl_cache.h): a second compile of the
 * same files with the same options is served from the cache (an entry whose
 * words were altered on disk comes back altered), while a changed included
 * file, a changed option, KVERIFY_NO_SHADER_CACHE=1 or a damaged entry each
 * give the compiler's own words, as do --abi macro lists that would read alike
 * run together; a failed compile is never kept. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "spirv/glsl.h"

static char root[128], src[200], cache[200];

static void write_text(const char *name, const char *text)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", src, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char MAIN[] = "#version 450\n#include \"inc.glsl\"\nlayout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) buffer B { float x[]; };\n"
                           "void main() { x[gl_GlobalInvocationID.x] = twice(x[gl_GlobalInvocationID.x]); }\n";

/* How many entries the cache's folder holds; the path of one other than skip
 * (NULL: any) into out. */
static int entries(char *out, size_t size, const char *skip)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/kverify/glsl", cache);
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[800];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (!strstr(e->d_name, ".bin") || strstr(e->d_name, ".tmp")) continue;
        n++;
        if (!skip || strcmp(p, skip)) snprintf(out, size, "%s", p);
    }
    if (d) closedir(d);
    return n;
}

static void copy_file(const char *from, const char *to)
{
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
}

/* Flip the entry's last byte: the last byte of its words. */
static void alter_last_byte(const char *path)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, -1, SEEK_END), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, -1, SEEK_END), 0);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

static void compile(const struct kv_glsl_env *env, uint32_t **w, size_t *n)
{
    char path[400];
    snprintf(path, sizeof path, "%s/main.comp", src);
    assert_int_equal(kv_glsl_compile(env, path, w, n), KV_OK);
    assert_true(*n > 20 && (*w)[0] == 0x07230203u);
}

static void served_and_checked(void **s)
{
    (void)s;
    struct kv_glsl_env env = {0};
    uint32_t *a, *b, *c;
    size_t na, nb, nc;
    char entry[800];
    write_text("main.comp", MAIN);
    write_text("inc.glsl", "float twice(float v) { return 2.0 * v; }\n");
    compile(&env, &a, &na);
    assert_int_equal(entries(entry, sizeof entry, NULL), 1);
    /* the same compile again: the entry's words, as altered */
    alter_last_byte(entry);
    compile(&env, &b, &nb);
    assert_int_equal(na, nb);
    assert_memory_not_equal(a, b, na);
    assert_memory_equal(a, b, na - 1);
    free(b);
    /* turned off: the compiler's words */
    setenv("KVERIFY_NO_SHADER_CACHE", "1", 1);
    compile(&env, &b, &nb);
    unsetenv("KVERIFY_NO_SHADER_CACHE");
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    free(b);
    /* another option (-g): its own entry; the plain entry copied into the -g
     * entry's slot is not taken for it (the options differ). The two share a
     * slot once in 4096 runs (the key holds the temporary folder's name): the
     * -g entry then took the plain one's place, and there is nothing to copy. */
    char dbg[800];
    env.debug = 1;
    compile(&env, &b, &nb);
    assert_true(nb > na);
    if (entries(dbg, sizeof dbg, entry) == 2) {
        copy_file(entry, dbg);
        compile(&env, &c, &nc);
        assert_int_equal(nc, nb);
        assert_memory_equal(b, c, nb);
        free(c);
    }
    env.debug = 0;
    free(b);
    /* the included file changed (same length): the compiler's new words, kept */
    write_text("inc.glsl", "float twice(float v) { return 3.0 * v; }\n");
    setenv("KVERIFY_NO_SHADER_CACHE", "1", 1);
    compile(&env, &b, &nb);
    unsetenv("KVERIFY_NO_SHADER_CACHE");
    assert_memory_not_equal(a, b, na < nb ? na : nb);
    compile(&env, &c, &nc);
    assert_int_equal(nc, nb);
    assert_memory_equal(b, c, nb);
    uint32_t *d;
    size_t nd;
    compile(&env, &d, &nd);
    assert_int_equal(nd, nb);
    assert_memory_equal(b, d, nb);
    free(a), free(b), free(c), free(d);
}

/* Every entry in the cache's folder cut to half its length (how 0), or its
 * first length made huge (how 1). */
static void damage_all(int how)
{
    char dir[400], path[700];
    snprintf(dir, sizeof dir, "%s/kverify/glsl", cache);
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strstr(e->d_name, ".bin")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r+b");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        if (how == 1) {
            uint64_t huge = UINT64_MAX - 3;
            fseek(f, 0, SEEK_SET);
            fwrite(&huge, sizeof huge, 1, f);
        }
        fclose(f);
        if (how == 0) assert_int_equal(truncate(path, n / 2), 0);
    }
    closedir(d);
}

static void damaged_entry_is_a_miss(void **s)
{
    (void)s;
    struct kv_glsl_env env = {.defines = KV_SHADER_SUBGROUP};
    uint32_t *a, *b;
    size_t na, nb;
    write_text("main.comp", MAIN);
    write_text("inc.glsl", "float twice(float v) { return v + v; }\n");
    compile(&env, &a, &na);
    for (int how = 0; how < 2; how++) {
        damage_all(how);
        compile(&env, &b, &nb);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na);
        free(b);
    }
    free(a);
}

/* --abi's macros: a list whose value reads like a second macro is another list. */
static void macro_lists_apart(void **s)
{
    (void)s;
    static const char one[2][2][256] = {{"A", "1"}, {"B", "2"}}, two[1][2][256] = {{"A", "1 -DB=2"}};
    struct kv_glsl_extra x1 = {2, one, 0, NULL}, x2 = {1, two, 0, NULL};
    struct kv_glsl_env e1 = {.extra = &x1}, e2 = {.extra = &x2};
    uint32_t *a, *b, *c;
    size_t na, nb, nc;
    write_text("main.comp", "#version 450\nlayout(local_size_x = 1) in;\n"
                            "layout(std430, binding = 0) buffer Buf { float x[]; };\n"
                            "#ifdef B\nvoid main() { x[0] = 7.0; }\n#else\nvoid main() { x[1] = 5.0; }\n#endif\n");
    compile(&e1, &a, &na);
    setenv("KVERIFY_NO_SHADER_CACHE", "1", 1);
    compile(&e2, &b, &nb);
    unsetenv("KVERIFY_NO_SHADER_CACHE");
    assert_true(na != nb || memcmp(a, b, na));
    compile(&e2, &c, &nc);
    assert_int_equal(nc, nb);
    assert_memory_equal(b, c, nb);
    free(a), free(b), free(c);
}

static void failed_compile_not_kept(void **s)
{
    (void)s;
    struct kv_glsl_env env = {.defines = KV_SHADER_INT8};
    char path[400], entry[500];
    uint32_t *w = NULL;
    size_t n = 0;
    int before = entries(entry, sizeof entry, NULL);
    write_text("bad.comp", "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undefined_name = 1; }\n");
    snprintf(path, sizeof path, "%s/bad.comp", src);
    assert_int_equal(kv_glsl_compile(&env, path, &w, &n), KV_EDATA);
    assert_int_equal(kv_glsl_compile(&env, path, &w, &n), KV_EDATA);
    assert_int_equal(entries(entry, sizeof entry, NULL), before);
}

static int setup(void **s)
{
    (void)s;
    snprintf(root, sizeof root, "/tmp/kv_glsl_cache_XXXXXX");
    if (!mkdtemp(root)) return -1;
    snprintf(src, sizeof src, "%s/src", root);
    snprintf(cache, sizeof cache, "%s/cache", root);
    if (mkdir(src, 0755) || mkdir(cache, 0755)) return -1;
    setenv("XDG_CACHE_HOME", cache, 1);
    unsetenv("KVERIFY_NO_SHADER_CACHE");
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(served_and_checked),
        cmocka_unit_test(damaged_entry_is_a_miss),
        cmocka_unit_test(macro_lists_apart),
        cmocka_unit_test(failed_compile_not_kept),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

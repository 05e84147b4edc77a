/* safetensors: every dtype kverify reads or writes round-trips through a
 * file it writes; a file made byte by byte here (as another library would
 * write it) reads as expected; and every malformed file the format forbids
 * is a one-line KV_EDATA naming the file and what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "formats/safetensors.h"

/* A file image: the 8-byte length, the header as given, then data. */
static size_t image(unsigned char *out, const char *header, const void *data, size_t bytes)
{
    uint64_t n = strlen(header);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(n >> (8 * i));
    memcpy(out + 8, header, n);
    if (bytes) memcpy(out + 8 + n, data, bytes);
    return 8 + n + bytes;
}

static void one_line(void)
{
    if (strchr(kv_error_msg(), '\n')) {
        fprintf(stderr, "message spans lines: '%s'\n", kv_error_msg());
        fail();
    }
}

static void roundtrip(void **s)
{
    (void)s;
    const enum kv_dtype all[] = {KV_F32, KV_F64, KV_F16, KV_BF16, KV_U8, KV_U16, KV_I32};
    const char *st_names[] = {"F32", "F64", "F16", "BF16", "U8", "U16", "I32"};
    char path[64];
    snprintf(path, sizeof path, "/tmp/kv_test_st_%ld.safetensors", (long)getpid());
    struct kv_st_entry e[7];
    unsigned char data[7][3 * 5 * 8];
    int64_t shapes[7][3];
    char names[7][16];
    for (int i = 0; i < 7; i++) {
        for (size_t j = 0; j < sizeof data[i]; j++) data[i][j] = (unsigned char)(j * 37 + (size_t)i * 11 + 1);
        int nd = 1 + i % 3;
        for (int d = 0; d < nd; d++) shapes[i][d] = d == 0 ? 3 : d == 1 ? 5 : 1;
        snprintf(names[i], sizeof names[i], "t%d.%s", i, kv_dtype_info(all[i])->name);
        e[i] = (struct kv_st_entry){names[i], all[i], nd, shapes[i], data[i]};
    }
    const char *meta[] = {"kernel", "rmsnorm-bwd", "rows", "3", "note", "\xc3\xa9t\xc3\xa9"};
    assert_int_equal(kv_st_write(path, e, 7, meta, 3), KV_OK);
    struct kv_st *f;
    assert_int_equal(kv_st_open(path, &f), KV_OK);
    assert_int_equal(kv_st_count(f), 7);
    assert_int_equal(kv_st_meta_count(f), 3);
    assert_string_equal(kv_st_meta(f, "rows"), "3");
    assert_string_equal(kv_st_meta(f, "note"), "\xc3\xa9t\xc3\xa9");
    assert_null(kv_st_meta(f, "seed"));
    for (int i = 0; i < 7; i++) {
        long at = kv_st_find(f, names[i]);
        assert_int_equal(at, i);
        assert_string_equal(kv_st_dtype(f, at), st_names[i]);
        struct kv_tensor t;
        assert_int_equal(kv_st_read(f, at, &t), KV_OK);
        assert_int_equal(t.dtype, all[i]);
        assert_int_equal(t.ndim, e[i].ndim);
        for (int d = 0; d < t.ndim; d++) assert_int_equal(t.shape[d], shapes[i][d]);
        assert_memory_equal(t.data, data[i], kv_tensor_bytes(&t));
        kv_tensor_free(&t);
    }
    kv_st_close(f);
    /* the data starts 8-byte aligned, as the format recommends */
    FILE *fp = fopen(path, "rb");
    unsigned char len[8];
    assert_int_equal(fread(len, 1, 8, fp), 8);
    fclose(fp);
    assert_int_equal(len[0] % 8, 0);
    remove(path);
}

static void foreign(void **s)
{
    (void)s;
    unsigned char buf[512], data[64];
    /* BF16 words, I64 labels (read as i32), an empty tensor and a scalar, in
     * an order other than the header's, with __metadata__ last and padding. */
    uint16_t bf[3] = {0x3f80, 0xc000, 0x7fc0};
    int64_t lab[2] = {-7, 2147483647};
    float sc = 0.5f;
    memcpy(data, lab, 16);
    memcpy(data + 16, bf, 6);
    memcpy(data + 22, &sc, 4);
    const char *h = "{\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[16,22]},"
                    "\"labels\":{\"shape\":[2,1],\"dtype\":\"I64\",\"data_offsets\":[0,16]},"
                    "\"none\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[22,22]},"
                    "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[22,26]},"
                    "\"__metadata__\":{\"format\":\"pt\"}}   ";
    size_t n = image(buf, h, data, 26);
    struct kv_st *f;
    struct kv_tensor t;
    assert_int_equal(kv_st_open_mem("f.safetensors", buf, n, &f), KV_OK);
    assert_int_equal(kv_st_count(f), 4);
    assert_int_equal(kv_st_read(f, kv_st_find(f, "b"), &t), KV_OK);
    assert_int_equal(t.dtype, KV_BF16);
    assert_memory_equal(t.data, bf, 6);
    kv_tensor_free(&t);
    assert_int_equal(kv_st_read(f, kv_st_find(f, "labels"), &t), KV_OK);
    assert_int_equal(t.dtype, KV_I32);
    assert_int_equal(t.ndim, 2);
    assert_int_equal(((int32_t *)t.data)[0], -7);
    assert_int_equal(((int32_t *)t.data)[1], 2147483647);
    kv_tensor_free(&t);
    assert_int_equal(kv_st_read(f, kv_st_find(f, "s"), &t), KV_OK);
    assert_int_equal(t.ndim, 0);
    assert_true(((float *)t.data)[0] == 0.5f);
    kv_tensor_free(&t);
    assert_int_equal(kv_st_read(f, kv_st_find(f, "none"), &t), KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "tensor 'none' has shape [0, 4]: no elements"));
    kv_st_close(f);
}

/* Errors found when a tensor is read, not when the file opens. */
static void bad_reads(void **s)
{
    (void)s;
    unsigned char buf[512], data[64] = {0};
    int64_t big = 4294967296LL;
    memcpy(data, &big, 8);
    const struct {
        const char *header;
        size_t bytes;
        const char *needle;
    } bad[] = {
        {"{\"x\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "element 0 = 4294967296 does not fit i32"},
        {"{\"x\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "tensor 'x' is BOOL; kverify reads"},
        {"{\"x\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,2],\"data_offsets\":[0,2]}}", 2, "5 dimensions; kverify reads at most 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        size_t n = image(buf, bad[i].header, data, bad[i].bytes);
        struct kv_st *f;
        struct kv_tensor t;
        assert_int_equal(kv_st_open_mem("r.safetensors", buf, n, &f), KV_OK);
        assert_int_equal(kv_st_read(f, 0, &t), KV_EDATA);
        assert_null(t.data);
        one_line();
        if (!strstr(kv_error_msg(), bad[i].needle) || !strstr(kv_error_msg(), "r.safetensors")) {
            fprintf(stderr, "read %zu: message '%s' lacks '%s'\n", i, kv_error_msg(), bad[i].needle);
            fail();
        }
        kv_st_close(f);
    }
}

static void bad_files(void **s)
{
    (void)s;
    static unsigned char buf[4096], data[256];
    const char *t8 = "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
    char h[1024];
    const struct {
        const char *header; /* NULL: raw bytes below */
        size_t bytes;
        const char *needle;
    } bad[] = {
        {"[1,2]", 0, "the header does not start with '{'"},
        {" {}", 0, "does not start with '{'"},
        {"{\"a\":", 0, "the header is not JSON"},
        {"{} x", 0, "bytes after the header's JSON"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "tensor 'a': data_offsets [0, 8] out of the data's 4 bytes"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "tensor 'a': data_offsets [8, 0] out of"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "tensor 'a': shape [3] of F32 does not fill its 8 bytes"},
        {"{\"a\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "shape [3] of BF16 does not fill"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8, "does not fill"},
        {"{\"a\":{\"dtype\":\"F7\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 'a': unknown dtype 'F7'"},
        {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 'a': no \"dtype\" string"},
        {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "tensor 'a': no \"shape\" list"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape holds something not a size"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, "shape holds something not a size"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, "\"data_offsets\" is not [begin, end]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":\"0-8\"}}", 8, "\"data_offsets\" is not [begin, end]"},
        {"{\"a\":7}", 0, "tensor 'a': not an object"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
         "tensors 'a' and 'b' overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", 8,
         "tensors 'a' and 'b' overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "bytes 0..4 of the data belong to no tensor (before 'a')"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12, "bytes 8..12 of the data belong to no tensor (after the last)"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16,
         "tensor 'a' appears twice"},
        {"{\"\xff\xfe\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "a tensor name is not valid UTF-8 (byte 0"},
        {"{\"ok\xc0\xaf\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "not valid UTF-8 (byte 2 of 'ok"},
        {"{\"a\\nb\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,9]}}", 8, "tensor 'a?b': data_offsets"},
        {"{\"__metadata__\":{\"seed\":1}}", 0, "__metadata__.seed is not a string"},
        {"{\"__metadata__\":[]}", 0, "__metadata__ is not an object of strings"},
        {"{\"__metadata__\":{\"k\":\"\xed\xa0\x80\"}}", 0, "__metadata__.k is not valid UTF-8"},
        {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "__metadata__ appears twice"},
        {"{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, "__metadata__.k appears twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        size_t n = image(buf, bad[i].header, data, bad[i].bytes);
        struct kv_st *f = (struct kv_st *)1;
        assert_int_equal(kv_st_open_mem("b.safetensors", buf, n, &f), KV_EDATA);
        assert_null(f);
        one_line();
        if (!strstr(kv_error_msg(), bad[i].needle) || !strstr(kv_error_msg(), "b.safetensors")) {
            fprintf(stderr, "case %zu: message '%s' lacks '%s'\n", i, kv_error_msg(), bad[i].needle);
            fail();
        }
    }
    /* the length: past the file, over the format's limit, shorter than 8 bytes */
    snprintf(h, sizeof h, "{%s}", t8);
    size_t n = image(buf, h, data, 8);
    buf[0] = (unsigned char)(buf[0] + 1);
    struct kv_st *f;
    assert_int_equal(kv_st_open_mem("b.safetensors", buf, n - 8, &f), KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "runs past the file's"));
    memset(buf, 0, 8);
    buf[3] = 0x10; /* 268 MB */
    assert_int_equal(kv_st_open_mem("b.safetensors", buf, n, &f), KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "over the format's limit"));
    assert_int_equal(kv_st_open_mem("b.safetensors", buf, 5, &f), KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "shorter than the 8-byte header length"));
    assert_int_equal(kv_st_open("/nonexistent/x.safetensors", &f), KV_EDATA);
    assert_non_null(strstr(kv_error_msg(), "cannot open"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundtrip),
        cmocka_unit_test(foreign),
        cmocka_unit_test(bad_reads),
        cmocka_unit_test(bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

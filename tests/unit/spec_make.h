/* What the spec engine's unit tests share: a spec made from text with
 * inputs a, b, c (f32[n]) and lab (i32[n]), a case of it run through its
 * oracle, and a value compared within a relative tolerance. */
#ifndef KV_TEST_SPEC_MAKE_H
#define KV_TEST_SPEC_MAKE_H

static const double u = 0x1p-24; /* f32's unit roundoff */

/* A spec with inputs a, b, c (f32[n]), lab (i32[n]), and the outputs and math
 * given; every output in the one stage. */
static inline struct kv_spec *make(const char *outputs, const char *math, enum kv_status want)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"kernel\": \"t\", \"params\": [{\"name\": \"n\", \"type\": \"int\", \"default\": 4},"
             " {\"name\": \"eps\", \"type\": \"float\", \"default\": 0.1}],"
             " \"tensors\": [{\"name\": \"a\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": \"n\", \"dist\": \"normal\"},"
             " {\"name\": \"b\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": \"n\", \"dist\": \"normal\"},"
             " {\"name\": \"c\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": \"n\", \"dist\": \"normal\"},"
             " {\"name\": \"lab\", \"role\": \"input\", \"dtype\": \"i32\", \"shape\": \"n\","
             "  \"dist\": {\"gen\": \"randint\", \"lo\": 0, \"hi\": \"n\"}}, %s],"
             " \"math\": [%s], \"stages\": [{\"name\": \"s\", \"shader\": \"none.comp\"}]}",
             outputs, math);
    struct kv_spec *s = NULL;
    enum kv_status st = kv_spec_parse("t.kernel.json", text, strlen(text), 1, &s);
    if (st != want) fprintf(stderr, "%s\n", kv_error_msg());
    assert_int_equal(st, want);
    return s;
}

/* A case of s with n elements, inputs a, b, c and lab as given, the oracle
 * run; output `blocked` (>= 0) made in blocks (kv_spec_block), as the
 * pipeline asks where it judges an output block by block. */
static inline void run_blocked(struct kv_spec *s, struct kv_case *c, int n, const float *a, const float *b, const float *cc,
                        const int32_t *lab, int exact, int blocked)
{
    char p[32];
    snprintf(p, sizeof p, "n=%d", n);
    assert_int_equal(kv_case_init(c, &s->k, 1), KV_OK);
    assert_int_equal(kv_param_apply(c, p), KV_OK);
    assert_int_equal(kv_case_shapes(c), KV_OK);
    assert_int_equal(kv_case_alloc(c), KV_OK);
    memcpy(c->t[0].data, a, (size_t)n * 4);
    memcpy(c->t[1].data, b, (size_t)n * 4);
    memcpy(c->t[2].data, cc, (size_t)n * 4);
    memcpy(c->t[3].data, lab, (size_t)n * 4);
    c->exact = exact;
    if (blocked >= 0) c->blocked[blocked] = 1;
    enum kv_status st = s->k.oracle(c);
    if (st) fprintf(stderr, "%s\n", kv_error_msg());
    assert_int_equal(st, KV_OK);
}

static inline void run(struct kv_spec *s, struct kv_case *c, int n, const float *a, const float *b, const float *cc,
                const int32_t *lab, int exact)
{
    run_blocked(s, c, n, a, b, cc, lab, exact, -1);
}

/* A case of s at its parameters' defaults, its tensors allocated. */
static inline void new_case(struct kv_spec *s, struct kv_case *c, uint64_t seed)
{
    assert_int_equal(kv_case_init(c, &s->k, seed), KV_OK);
    assert_int_equal(kv_case_shapes(c), KV_OK);
    assert_int_equal(kv_case_alloc(c), KV_OK);
}

#define OUT(name, shape) "{\"name\": \"" name "\", \"role\": \"output\", \"dtype\": \"f32\", \"shape\": \"" shape "\"}"

static inline void near(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want) + 1e-300)) fail_msg("%.17g, expected %.17g", got, want);
}

#endif

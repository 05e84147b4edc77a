/* The error distribution behind the HTML report's plots: histogram bins and
 * their edges, the pooled map's grid and maxima, mismatches marked in their
 * cells and outside the histograms, the worst elements in order, and the
 * same largest bound ratio as kv_compare. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "core/judge.h"
#include "core/judge_codes.h"
#include "core/judge_dist.h"

static const struct kv_bound bound = {.n = 16, .k_op = 1, .u_acc = 0x1p-24, .rho = 1};

static void dist(const float *c, const double *y, const double *S, size_t n, int ndim, const int64_t *shape,
                 struct kv_error_dist *d, struct kv_metrics *m)
{
    struct kv_criteria crit;
    kv_criteria_default(&crit);
    kv_error_dist(KV_F32, c, y, S, n, NULL, ndim, shape, &bound, NULL, &crit, d);
    assert_int_equal(kv_compare(KV_F32, c, y, S, n, &bound, NULL, &crit, m), KV_OK);
}

static void bins_and_edges(void **s)
{
    (void)s;
    /* each ULP bin's lower edge falls in that bin, the value below it in the one before */
    for (int i = 1; i < KV_DIST_ULP_BINS; i++) assert_true(kv_dist_ulp_edge(i) == ldexp(1.0, i - 5));
    for (int i = 1; i < KV_DIST_RATIO_BINS; i++) {
        assert_true(fabs(kv_dist_ratio_edge(i) / pow(10.0, (i - 15) / 2.0) - 1) < 1e-15);
        float c[2];
        double y[2] = {1, 1}, S[2] = {1, 1};
        const double base = (8 * 4 + 1) * 0x1p-24 + 0.5 * 0x1p-23; /* the bound of y = 1, S = 1 */
        double e = kv_dist_ratio_edge(i) * base;
        c[0] = (float)(1 + e), c[1] = 1;
        int64_t shape[1] = {2};
        struct kv_error_dist d;
        struct kv_metrics m;
        dist(c, y, S, 2, 1, shape, &d, &m);
        double r = fabs((double)c[0] - 1) / base; /* what the float made of it */
        int want = 0;
        while (want + 1 < KV_DIST_RATIO_BINS && r >= kv_dist_ratio_edge(want + 1)) want++;
        assert_int_equal(d.ratio_zero, 1 + (r == 0));
        if (r > 0) assert_int_equal(d.ratio[want], 1);
    }
    assert_true(kv_dist_ratio_edge(15) == 1.0); /* the pass line is an edge */
}

static void map_grid_and_marks(void **s)
{
    (void)s;
    enum { R = 100, C = 300 };
    float *c = malloc(sizeof(float) * R * C);
    double *y = malloc(sizeof(double) * R * C), *S = malloc(sizeof(double) * R * C);
    for (int i = 0; i < R * C; i++) c[i] = 1, y[i] = 1, S[i] = 1;
    c[37 * C + 250] = 1.5f;  /* fails far past the bound */
    c[99 * C + 299] = NAN;   /* a mismatch in the last cell */
    int64_t shape[3] = {2, 50, C};
    struct kv_error_dist d;
    struct kv_metrics m;
    dist(c, y, S, R * C, 3, shape, &d, &m);
    assert_true(d.rows == R && d.cols == C);
    assert_int_equal(d.cell_rows, 64);
    assert_int_equal(d.cell_cols, 64); /* 4096 cells at most */
    int cell = (37 * 64 / R) * 64 + 250 * 64 / C;
    float top = 0;
    for (int k = 0; k < 64 * 64; k++) top = d.map[k] > top ? d.map[k] : top;
    assert_true(d.map[cell] == top && top > 1);
    assert_true(fabs(top / m.max_bound_ratio - 1) < 1e-6);
    assert_int_equal(d.bad[64 * 64 - 1], 1);
    assert_int_equal(d.mismatch, 1);
    assert_int_equal(d.ulp_zero + d.mismatch + 1, (size_t)R * C);
    /* the worst: the mismatch first, then the failing element */
    assert_true(d.n_worst == 2 && d.worst[0].mismatch && d.worst[0].index == (size_t)R * C - 1);
    assert_true(!d.worst[1].mismatch && d.worst[1].index == 37 * C + 250 && d.worst[1].ratio > 1);
    free(c), free(y), free(S);
}

static void worst_keeps_the_largest(void **s)
{
    (void)s;
    enum { N = 50 };
    float c[N];
    double y[N], S[N];
    for (int i = 0; i < N; i++) y[i] = 1, S[i] = 1, c[i] = 1 + (float)((i * 7) % N) * 0x1p-20f;
    int64_t shape[1] = {N};
    struct kv_error_dist d;
    struct kv_metrics m;
    dist(c, y, S, N, 1, shape, &d, &m);
    assert_int_equal(d.n_worst, KV_DIST_WORST);
    assert_int_equal(d.cell_rows, 1); /* a 1-D output is a strip */
    for (int i = 1; i < d.n_worst; i++) assert_true(d.worst[i - 1].ratio >= d.worst[i].ratio);
    assert_true(d.worst[0].ratio == m.max_bound_ratio && d.worst[0].index == m.worst_index);
}

/* The histograms against their definitions, element by element, for a small
 * output (its p99 exact, from every ULP error) and a large one (the ULP
 * histogram made from the p99's; the ratio's counted a tile at a time, on
 * every thread): ULP errors of 0, below 2^-80, in every octave, from 2^30
 * and 2^80 on; ratios of 0 and across the bins; pairs that are not finite,
 * in neither histogram; and tiles without such pairs, whose ratio counts
 * take the vector loops. */
static void histograms_element_by_element(void **s)
{
    (void)s;
    const size_t sizes[] = {50000, 300000};
    double edge[KV_DIST_RATIO_BINS + 1] = {0};
    for (int i = 1; i < KV_DIST_RATIO_BINS; i++) edge[i] = kv_dist_ratio_edge(i);
    edge[KV_DIST_RATIO_BINS] = INFINITY;
    for (int z = 0; z < 2; z++) {
        const size_t n = sizes[z];
        float *c = malloc(n * sizeof *c);
        double *y = malloc(n * sizeof *y), *S = malloc(n * sizeof *S);
        assert_non_null(c), assert_non_null(y), assert_non_null(S);
        size_t uzero = 0, ulp[KV_DIST_ULP_BINS] = {0}, rzero = 0, ratio[KV_DIST_RATIO_BINS] = {0};
        for (size_t i = 0; i < n; i++) {
            const double v = 1 + (double)(i % 1000) / 1000;
            const int kind = (int)(i % 97); /* mostly plain errors: tiles of finite pairs */
            c[i] = (float)v, y[i] = v, S[i] = v;
            if (kind == 1) y[i] = (double)c[i] + ldexp(1.0, -110);          /* u below 2^-80 */
            else if (kind == 2) y[i] = 1e-30, S[i] = 1e-30;                  /* u from 2^80 on */
            else if (kind == 3) c[i] = (float)(v * (1 + ldexp(1.0, (int)(i % 40) - 23))); /* an octave of u */
            else if (kind == 4 && i % 5 == 0) c[i] = NAN;                    /* neither histogram */
            else if (kind > 4) y[i] = v + ldexp(v, -24 - (int)(i % 7)) * (double)(i % 3); /* 0 (i % 3 = 0) or small */
            if (isnan(c[i])) continue;
            const double e = fabs((double)c[i] - y[i]), ul = kv_ulp(KV_F32, y[i]), u = e / ul;
            if (u == 0) uzero++;
            else ulp[kv_dist_ulp_bin(u)]++;
            const double r = e / ((32 * 0x1p-24) * S[i] + 0x1p-24 * S[i] + 0.5 * ul); /* the bound's formula */
            if (r == 0) rzero++;
            else ratio[kv_dist_ratio_bin(r, edge)]++;
        }
        int64_t shape[2] = {(int64_t)(n / 1000), 1000};
        struct kv_error_dist *d = malloc(sizeof *d);
        struct kv_metrics m;
        assert_non_null(d);
        dist(c, y, S, n, 2, shape, d, &m);
        assert_int_equal(d->ulp_zero, uzero);
        for (int k = 0; k < KV_DIST_ULP_BINS; k++) assert_int_equal(d->ulp[k], ulp[k]);
        assert_int_equal(d->ratio_zero, rzero);
        for (int k = 0; k < KV_DIST_RATIO_BINS; k++) assert_int_equal(d->ratio[k], ratio[k]);
        /* the cases are there: zeros, the first and last bins, octaves
         * between; zero ratios and ratios across several bins */
        int octaves = 0, rbins = 0;
        for (int k = 1; k + 1 < KV_DIST_ULP_BINS; k++) octaves += ulp[k] > 0;
        for (int k = 0; k < KV_DIST_RATIO_BINS; k++) rbins += ratio[k] > 0;
        assert_true(uzero > 0 && ulp[0] > 0 && ulp[KV_DIST_ULP_BINS - 1] > 0 && octaves >= 30);
        assert_true(rzero > 0 && rbins >= 5);
        free(c), free(y), free(S), free(d);
    }
}

/* The map against its definition, cell by cell (the largest ratio of the
 * cell's compared elements as a float, 0 where a mismatch is the only one,
 * -1 where none), for grids whose every column is a cell column of its own
 * (rows of 64 and of 7 columns, one column) and grids of wider cells, over
 * ratios of 0 (whole cells of them), across the bins, NaN candidates and
 * NaN pairs (whole cells of them, not compared); the output in many tiles on
 * every thread. Then a cell of NaN ratios alone. */
static void map_element_by_element(void **s)
{
    (void)s;
    const int64_t shapes[][2] = {{4000, 64}, {30000, 7}, {256000, 1}, {200, 1500}, {1, 300000}, {3001, 65}};
    for (int k = 0; k < 6; k++) {
        const size_t n = (size_t)(shapes[k][0] * shapes[k][1]);
        float *c = malloc(n * sizeof *c);
        double *y = malloc(n * sizeof *y), *S = malloc(n * sizeof *S);
        struct kv_error_dist *d = malloc(sizeof *d), *ref = malloc(sizeof *ref);
        assert_true(c && y && S && d && ref);
        for (size_t i = 0; i < n; i++) {
            const double v = 1 + (double)(i * 7919 % 1000) / 1000;
            c[i] = (float)v, y[i] = v + ldexp(v, -24 - (int)(i * 31 % 23)) * (double)(i % 3), S[i] = v;
            if (i < n / 16) y[i] = c[i]; /* whole cells of zero ratios */
            else if (i >= n - n / 16) y[i] = c[i] = NAN; /* and of NaN pairs, a legal match: not compared */
            else if (i % 4093 == 5) c[i] = NAN;
        }
        kv_dist_init(ref, 2, shapes[k]);
        for (size_t i = 0; i < n; i++) {
            if (isnan(y[i])) continue;
            const double e = fabs((double)c[i] - y[i]), ul = kv_ulp(KV_F32, y[i]);
            const float r = isnan(c[i]) ? 0 : (float)(e / ((32 * 0x1p-24) * S[i] + 0x1p-24 * S[i] + 0.5 * ul));
            float *cell = &ref->map[kv_dist_cell(ref, i)];
            *cell = r > *cell ? r : *cell;
        }
        struct kv_metrics m;
        dist(c, y, S, n, 2, shapes[k], d, &m);
        int cells = d->cell_rows * d->cell_cols, bins = 0, zero_cells = 0, empty = 0;
        for (int j = 0; j < cells; j++) zero_cells += ref->map[j] == 0, empty += ref->map[j] < 0;
        assert_true(k > 2 || d->cell_cols == d->cols);
        for (int j = 0; j < KV_DIST_MAP_CELLS; j++) assert_true(d->map[j] == ref->map[j]);
        for (int j = 0; j < KV_DIST_RATIO_BINS; j++) bins += d->ratio[j] > 0;
        assert_true(bins >= 3 && d->ratio_zero > 0 && d->mismatch > 0 && cells > 1 && zero_cells > 0 && empty > 0);
        free(c), free(y), free(S), free(d), free(ref);
    }
    /* f64: a pair of zeros with a bound of 0 (half an ulp of 0 underflows)
     * has a NaN ratio, compared: a cell of them alone is 0, not -1 (cells of
     * 1024 columns: each of their tiles wholly inside one) */
    enum { W = 262144 };
    double *c = calloc(W, sizeof *c), *y = calloc(W, sizeof *y), *S = calloc(W, sizeof *S);
    struct kv_error_dist *d = malloc(sizeof *d);
    assert_true(c && y && S && d);
    for (size_t i = W / 2; i < W; i++) y[i] = S[i] = 1, c[i] = 1 + 0x1p-40;
    struct kv_criteria crit;
    kv_criteria_default(&crit);
    const int64_t shape[2] = {1, W};
    kv_error_dist(KV_F64, c, y, S, W, NULL, 2, shape, &bound, NULL, &crit, d);
    assert_true(d->cell_cols == 256 && d->map[0] == 0 && d->map[255] > 0);
    free(c), free(y), free(S), free(d);
}

/* A codes output's tiles counted at once where every code is exact
 * (judge_codes): the cells they mark, against each element's own cell, for
 * grids of several shapes and ranges across rows; then an output whose
 * tiles are exact but for a few (a tie, a flushed code, an unexplained
 * code): the counts, and every cell compared, the unexplained's bad. */
static void codes_tiles(void **s)
{
    (void)s;
    const int64_t shapes[][2] = {{257, 70}, {3, 1000}, {5000, 1}, {1, 777}, {40, 64}};
    for (int k = 0; k < 5; k++) {
        struct kv_error_dist *a = malloc(sizeof *a), *b = malloc(sizeof *b);
        assert_non_null(a), assert_non_null(b);
        const size_t n = (size_t)(shapes[k][0] * shapes[k][1]), cols = (size_t)shapes[k][1];
        uint64_t r = 12345;
        for (int q = 0; q < 300; q++) { /* one range on an empty map: what it marks, no more, no less */
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            const size_t lo = (size_t)(r >> 33) % n, want = 1 + (size_t)(r >> 13) % (3 * cols + 2);
            const size_t m = n - lo < want ? n - lo : want;
            kv_dist_init(a, 2, shapes[k]), kv_dist_init(b, 2, shapes[k]);
            kv_codes_mark(a, lo, m);
            for (size_t i = lo; i < lo + m; i++)
                if (b->map[kv_dist_cell(b, i)] < 0) b->map[kv_dist_cell(b, i)] = 0;
            assert_memory_equal(a->map, b->map, sizeof a->map);
        }
        free(a), free(b);
    }
    enum { R = 257, C = 70 };
    uint8_t *c = malloc(R * C);
    double *y = malloc(sizeof(double) * R * C);
    int16_t *tie = malloc(sizeof(int16_t) * R * C), *flush = malloc(sizeof(int16_t) * R * C);
    for (int i = 0; i < R * C; i++) c[i] = (uint8_t)(i % 13), y[i] = i % 13, tie[i] = i % 7 ? -1 : (int16_t)(i % 13 + 1), flush[i] = -1;
    c[301] = (uint8_t)tie[301];         /* across a tie (301 = 7 * 43) */
    flush[9000] = 5, c[9000] = 5;       /* the flushed model's code (the oracle's is 4) */
    c[300] = 255, c[17000] += 2;        /* unexplained: no tie at either */
    struct kv_allow al = {0};
    al.tie = tie, al.flush = flush;
    struct kv_criteria crit;
    kv_criteria_default(&crit);
    struct kv_error_dist *d = malloc(sizeof *d);
    struct kv_metrics m;
    const int64_t shape[2] = {R, C};
    const struct kv_bound ub = {.n = 1, .u_acc = 0x1p-24, .rho = 1};
    assert_int_equal(kv_judge(KV_U8, c, y, NULL, R * C, NULL, 2, shape, &ub, &al, &crit, &m, d), KV_OK);
    size_t ties = 0;
    for (int i = 0; i < R * C; i++) ties += tie[i] >= 0;
    assert_int_equal(m.tie_explained, 1), assert_int_equal(m.flush_explained, 1), assert_int_equal(m.unexplained, 2);
    assert_int_equal(m.exact, R * C - 4), assert_int_equal(m.ambiguous, ties), assert_int_equal(m.compared, R * C);
    assert_int_equal(d->ulp_zero, R * C - 4);
    for (int cell = 0; cell < d->cell_rows * d->cell_cols; cell++) assert_true(d->map[cell] >= 0);
    assert_true(d->bad[kv_dist_cell(d, 17000)] && d->bad[kv_dist_cell(d, 300)]);
    free(c), free(y), free(tie), free(flush), free(d);
}

/* The p99 read from the histogram (kv_judge_p99) at its edges: the rank
 * that falls on bin 0's last count, on the lowest and the highest bin in
 * use (its lower edge, not the largest error), and in the last bin (the
 * largest error). */
static void p99_from_histogram(void **s)
{
    (void)s;
    uint64_t *h = calloc(KV_Q_BINS, sizeof *h);
    assert_non_null(h);
    const size_t b = (size_t)kv_judge_q_bin(1.3), b2 = (size_t)kv_judge_q_bin(5.7); /* rank 98999 of 100000 */
    h[0] = 99000, h[b] = 1000;
    assert_true(kv_judge_p99(h, b, b, 100000, 1.3) == 0);
    h[0] = 98999, h[b] = 1001;
    const double p = kv_judge_p99(h, b, b, 100000, 1.3);
    assert_true(p > 1.29 && p < 1.3 && kv_judge_q_bin(p) == b); /* b's lower edge */
    h[0] = 98998, h[b] = 1, h[b2] = 1001; /* rank 98999: the highest bin in use */
    const double p2 = kv_judge_p99(h, b, b2, 100000, 5.7);
    assert_true(p2 > 5.69 && p2 < 5.7 && kv_judge_q_bin(p2) == b2);
    h[b2] = 0, h[KV_Q_BINS - 1] = 1001;
    assert_true(kv_judge_p99(h, b, KV_Q_BINS - 1, 100000, 1e30) == 1e30);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bins_and_edges),
        cmocka_unit_test(map_grid_and_marks),
        cmocka_unit_test(worst_keeps_the_largest),
        cmocka_unit_test(histograms_element_by_element),
        cmocka_unit_test(map_element_by_element),
        cmocka_unit_test(codes_tiles),
        cmocka_unit_test(p99_from_histogram),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

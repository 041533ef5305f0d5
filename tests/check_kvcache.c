/* check_kvcache.c: the decode with a low-precision KV cache (decode.h's fs_decode_kv; paged.h's
 * fs_paged_decode_kv): the float16 cache and the e4m3 cache with per-head or per-page scales,
 * against the float64 reference on random problems drawn fresh each run (the seed printed on
 * failure, FS_SEED=... replays it).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check/check.h"
#include "engine/decode.h"
#include "engine/fp8.h"
#include "engine/lowp.h"
#include "engine/paged.h"
#include "engine/reference.h"
#include "test_problem.h"
#include "test_util.h"

static fs_decoding random_decoding(fs_rng *r)
{
    fs_decoding dc = fs_decoding_default();
    dc.split = fs_rng_int(r, 0, 3) == 0 ? FS_SPLIT_STRIDED : FS_SPLIT_CONTIGUOUS;
    dc.Bk = fs_rng_int(r, 1, 12);
    dc.parts = fs_rng_int(r, 1, 5);
    dc.merge = fs_rng_int(r, 0, 1) ? FS_MERGE_TREE : FS_MERGE_SEQUENTIAL;
    dc.form = fs_rng_int(r, 0, 1) ? FS_FORM_NORMALIZED : FS_FORM_UNNORMALIZED;
    return dc;
}

/* The largest |x| of rows [j0, j1) of one KV head (n numbers a row). */
static double amax_rows(const double *X, int32_t n_kv, int32_t n, int32_t g, int32_t j0, int32_t j1)
{
    double m = 0;
    for (int32_t j = j0; j < j1; j++)
        for (int32_t c = 0; c < n; c++) m = fmax(m, fabs(X[((size_t)g * n_kv + j) * n + c]));
    return m;
}

/* A bound on |O − O_ref| for row i of head h, derived from the formats alone:
 *   a stored value x is within u|x| + η·s of x (u: half the relative spacing, 2^-4 for e4m3 and
 *   2^-11 for float16, plus 2^-22 for the two float32 conversions; η·s: half the smallest
 *   subnormal step, 2^-10 · s for e4m3, 2^-25 for float16), Q within 2^-11|q| + 2^-25;
 *   a score then within Δ_j = scale · Σ (|q| e_k + e_q |k| + e_q e_k), plus float32's dot
 *   product, (d + 3) · 2^-23 of scale · Σ |q'| |k'|;
 *   each weight within a factor e^{±Δ}, so the normalized weights within e^{2Δ}, and P's float16
 *   rounding before P · V another 2^-11;
 *   the output within max e_v + (e^{2Δ}(1 + 2^-10) − 1) · max |v'| + float32's sums. */
static double row_bound(const fs_attn *a, fs_kv_fmt fmt, int32_t per, int32_t h, int32_t i)
{
    const int32_t g = fs_attn_kv_head(a, h), n_kv = a->n_kv, d = a->d, dv = a->d_v;
    const double u = fmt == FS_KV_E4M3 ? 0x1p-4 + 0x1p-22 : 0x1p-11 + 0x1p-22, eta = fmt == FS_KV_E4M3 ? 0x1p-10 : 0x1p-25;
    const double *q = a->Q + ((size_t)h * a->n_q + i) * d;
    double D = 0, ev = 0, vmax = 0;
    int visible = 0;
    for (int32_t j = 0; j < n_kv; j++) {
        if (!fs_mask_visible(&a->mask, a->n_q, n_kv, i, j)) continue;
        visible++;
        int32_t p0 = j / per * per, p1 = p0 + per < n_kv ? p0 + per : n_kv;
        double sk = fmt == FS_KV_E4M3 ? amax_rows(a->K, n_kv, d, g, p0, p1) / 448 : 1;
        double sv = fmt == FS_KV_E4M3 ? amax_rows(a->V, n_kv, dv, g, p0, p1) / 448 : 1;
        const double *k = a->K + ((size_t)g * n_kv + j) * d, *v = a->V + ((size_t)g * n_kv + j) * dv;
        double dj = 0, mag = 0;
        for (int32_t c = 0; c < d; c++) {
            double ek = u * fabs(k[c]) + eta * sk, eq = 0x1p-11 * fabs(q[c]) + 0x1p-25;
            dj += fabs(q[c]) * ek + eq * fabs(k[c]) + eq * ek;
            mag += (fabs(q[c]) + eq) * (fabs(k[c]) + ek);
        }
        D = fmax(D, a->scale * (dj + (d + 3) * 0x1p-23 * mag));
        for (int32_t c = 0; c < dv; c++) {
            double e = u * fabs(v[c]) + eta * sv;
            ev = fmax(ev, e);
            vmax = fmax(vmax, fabs(v[c]) + e);
        }
    }
    if (!visible) return 0;
    return ev + (exp(2 * D) * (1 + 0x1p-10) - 1) * vmax + (n_kv + 16) * 0x1p-22 * vmax;
}

/* Random problems, every mask, GQA, splits, merges, forms; each cache format against float64
 * within row_bound. Some e4m3 run must use at least 2 % of its bound (the bound is not vacuous),
 * and the e4m3 error must exceed the float16 one on the whole (the formats really differ). */
START_TEST(test_kv_cache_against_reference)
{
    uint64_t seed = fs_test_seed() + 7u * (uint64_t)_i;
    fs_rng r = {seed};
    const fs_test_problem_spec spec = {.max_n_q = 3, .max_n_kv = 60, .max_d = 9, .max_d_v = 6, .max_offset = 6,
                                       .max_window = 12, .bits_visible = 0.6, .random_scale = true};
    double used = 0, sq[FS_KV_COUNT] = {0, 0};
    for (int rep = 0; rep < 40; rep++) {
        fs_test_problem p;
        fs_test_problem_draw(&p, &r, (_i + rep) % FS_TEST_MASKS, &spec);
        fs_attn *a = &p.a;
        /* values of every magnitude: one KV head's cache scaled by up to 1000 either way */
        double mag = pow(10.0, fs_rng_uniform(&r, -3, 3));
        for (size_t e = 0; e < (size_t)a->n_kv_heads * a->n_kv * a->d_v; e++) p.V[e] *= mag;
        /* and pages of different magnitudes, so that per-page scales differ from page to page */
        const int32_t ps = fs_rng_int(&r, 1, 9);
        for (int32_t g = 0; g < a->n_kv_heads; g++)
            for (int32_t j0 = 0; j0 < a->n_kv; j0 += ps) {
                double fk = pow(2.0, fs_rng_uniform(&r, -2, 1)), fv = pow(2.0, fs_rng_uniform(&r, -3, 3));
                for (int32_t j = j0; j < j0 + ps && j < a->n_kv; j++) {
                    for (int32_t c = 0; c < a->d; c++) p.K[((size_t)g * a->n_kv + j) * a->d + c] *= fk;
                    for (int32_t c = 0; c < a->d_v; c++) p.V[((size_t)g * a->n_kv + j) * a->d_v + c] *= fv;
                }
            }
        const long no = (long)a->n_q_heads * a->n_q * a->d_v;
        double *O = malloc(sizeof(double) * no), *Or = malloc(sizeof(double) * no);
        ck_assert_int_eq(fs_reference(a, Or, NULL, NULL), FS_OK);
        const fs_decoding dc = random_decoding(&r);
        for (int f = 0; f < 3; f++) {
            fs_kv_store kv = {f == 0 ? FS_KV_F16 : FS_KV_E4M3, f == 2 ? ps : 0};
            fs_status st = fs_decode_kv(a, &dc, &kv, NULL, O, NULL, NULL, NULL);
            FS_ASSERT_SEED(st == FS_OK, seed, "%s cache: %s", fs_kv_fmt_str(kv.fmt), fs_status_str(st));
            const int32_t per = kv.page_size > 0 ? kv.page_size : a->n_kv;
            for (int32_t h = 0; h < a->n_q_heads; h++)
                for (int32_t i = 0; i < a->n_q; i++) {
                    double b = row_bound(a, kv.fmt, per, h, i), err = 0;
                    for (int32_t c = 0; c < a->d_v; c++) {
                        size_t e = ((size_t)h * a->n_q + i) * a->d_v + c;
                        err = fmax(err, fabs(O[e] - Or[e]));
                        if (!isfinite(O[e])) err = INFINITY;
                        sq[kv.fmt] += (O[e] - Or[e]) * (O[e] - Or[e]) / (mag * mag);
                    }
                    FS_ASSERT_SEED(err <= b, seed,
                                   "%s cache (page %d), %s splits Bk %d parts %d, %s merge: head %d row %d: |O - ref| "
                                   "= %.3g over the bound %.3g", fs_kv_fmt_str(kv.fmt), kv.page_size,
                                   fs_split_str(dc.split), dc.Bk, dc.parts, fs_merge_str(dc.merge), h, i, err, b);
                    if (kv.fmt == FS_KV_E4M3 && b > 0) used = fmax(used, err / b);
                }
        }
        free(O);
        free(Or);
        fs_test_problem_free(&p);
    }
    FS_ASSERT_SEED(used >= 0.02, seed, "no e4m3 run used 2 %% of its bound (at most %.3g): the bound is vacuous", used);
    FS_ASSERT_SEED(sq[FS_KV_E4M3] > 4 * sq[FS_KV_F16], seed, "e4m3's squared error %.3g is not above float16's %.3g",
                   sq[FS_KV_E4M3], sq[FS_KV_F16]);
}
END_TEST

/* The paged cache with per-page scales gives exactly the contiguous run with scales per block of
 * page_size positions, through a shuffled table, with the table's LOOKUP events; and the
 * e4m3 cache's events are fs_decode's events, kind by kind, with the scales on PARTIAL. */
START_TEST(test_kv_cache_paged)
{
    uint64_t seed = fs_test_seed() + 104729u * (uint64_t)_i;
    fs_rng r = {seed};
    const fs_test_problem_spec spec = {.max_n_q = 3, .max_n_kv = 50, .max_d = 8, .max_d_v = 5, .max_offset = 6,
                                       .max_window = 10, .bits_visible = 0.6};
    for (int rep = 0; rep < 20; rep++) {
        fs_test_problem p;
        fs_test_problem_draw(&p, &r, (_i + rep) % FS_TEST_MASKS, &spec);
        const fs_attn *a = &p.a;
        const int32_t ps = fs_rng_int(&r, 1, 9), blocks = (a->n_kv + ps - 1) / ps;
        int32_t *table = malloc(sizeof(int32_t) * (size_t)blocks + 1), *order = malloc(sizeof(int32_t) * (size_t)blocks + 1);
        for (int32_t b = 0; b < blocks; b++) order[b] = b;
        for (int32_t b = blocks - 1; b > 0; b--) {
            int32_t k = fs_rng_int(&r, 0, b), t = order[b];
            order[b] = order[k];
            order[k] = t;
        }
        fs_paged_cache c;
        int32_t seq;
        ck_assert_int_eq(fs_paged_init(&c, ps, blocks, a->n_kv_heads, a->d, a->d_v, order), FS_OK);
        ck_assert_int_eq(fs_paged_add(&c, &seq), FS_OK);
        ck_assert_int_eq(fs_paged_append_rows(&c, seq, a->K, a->V, a->n_kv, NULL), FS_OK);
        memcpy(table, c.seq[seq].table, sizeof(int32_t) * (size_t)blocks);
        const fs_decoding dc = random_decoding(&r);
        const long no = (long)a->n_q_heads * a->n_q * a->d_v, rows = (long)a->n_q_heads * a->n_q;
        double *O1 = malloc(sizeof(double) * no), *O2 = malloc(sizeof(double) * no);
        double *l1 = malloc(sizeof(double) * rows), *l2 = malloc(sizeof(double) * rows);
        fs_trace t1, t2, t0;
        fs_trace_init(&t1);
        fs_trace_init(&t2);
        fs_trace_init(&t0);
        fs_kv_store kv = {FS_KV_E4M3, ps};
        ck_assert_int_eq(fs_decode_kv(a, &dc, &kv, NULL, O1, NULL, l1, &t1), FS_OK);
        fs_attn view = *a;
        view.K = view.V = NULL;
        fs_status st = fs_paged_decode_kv(&c, seq, &view, &dc, &kv, O2, NULL, l2, &t2);
        FS_ASSERT_SEED(st == FS_OK, seed, "paged: %s", fs_status_str(st));
        FS_ASSERT_SEED(!memcmp(O1, O2, sizeof(double) * no) && !memcmp(l1, l2, sizeof(double) * rows), seed,
                       "page size %d: the paged e4m3 cache differs from the contiguous one", ps);
        /* the same events once the LOOKUPs are left out; each LOOKUP follows the table */
        int64_t k1 = 0, lookups = 0;
        for (int64_t k = 0; k < t2.n; k++) {
            const fs_event *e = &t2.ev[k];
            if (e->kind == FS_EV_LOOKUP) {
                lookups++;
                FS_ASSERT_SEED(e->block >= 0 && e->block < blocks && e->page == table[e->block], seed,
                               "lookup of block %d gives page %d, the table says %d", e->block, e->page,
                               e->block >= 0 && e->block < blocks ? table[e->block] : -1);
                continue;
            }
            FS_ASSERT_SEED(k1 < t1.n && t1.ev[k1].kind == e->kind && t1.ev[k1].k_scale == e->k_scale, seed,
                           "event %lld differs", (long long)k);
            k1++;
        }
        int64_t reads = 0;   /* splits that read keys: each looks up at least one block */
        for (int64_t k = 0; k < t1.n; k++)
            reads += t1.ev[k].kind == FS_EV_PARTIAL && t1.ev[k].cls != FS_TILE_SKIPPED && t1.ev[k].c0 < t1.ev[k].c1;
        FS_ASSERT_SEED(k1 == t1.n && lookups >= reads, seed, "%lld events of %lld, %lld lookups for %lld reading splits",
                       (long long)k1, (long long)t1.n, (long long)lookups, (long long)reads);
        /* fs_decode's events, kind by kind; PARTIALs carry lowp and the page's scales */
        fs_kv_store head = {FS_KV_E4M3, 0};
        ck_assert_int_eq(fs_decode(a, &dc, O2, NULL, NULL, &t0), FS_OK);
        ck_assert_int_eq(fs_decode_kv(a, &dc, &head, NULL, O2, NULL, NULL, &t2 /* reused */), FS_OK);
        FS_ASSERT_SEED(t0.n == t1.n, seed, "%lld events, fs_decode has %lld", (long long)t1.n, (long long)t0.n);
        for (int64_t k = 0; k < t0.n; k++) {
            const fs_event *e = &t1.ev[k];
            FS_ASSERT_SEED(e->kind == t0.ev[k].kind && e->id == t0.ev[k].id && e->c0 == t0.ev[k].c0, seed,
                           "event %lld differs from fs_decode's", (long long)k);
            if (e->kind == FS_EV_PARTIAL && e->c0 < a->n_kv) {
                int32_t g = e->kv_head, p0 = e->c0 / ps * ps, p1 = p0 + ps < a->n_kv ? p0 + ps : a->n_kv;
                double want = amax_rows(a->K, a->n_kv, a->d, g, p0, p1) / 448;
                FS_ASSERT_SEED(e->lowp && (want == 0 || fabs(e->k_scale - want) <= 1e-6 * want), seed,
                               "split %d: k_scale %.9g, the page's amax / 448 is %.9g", e->kt, e->k_scale, want);
            }
        }
        fs_trace_free(&t0);
        fs_trace_free(&t1);
        fs_trace_free(&t2);
        free(O1); free(O2); free(l1); free(l2); free(table); free(order);
        fs_paged_free(&c);
        fs_test_problem_free(&p);
    }
}
END_TEST

/* The engine's e4m3 cache judged by fs_check_judge with kv_only (check --dtype e4m3 --kv-only):
 * it passes, and a copy whose rows were left undivided by ℓ is diagnosed as unnormalized. The
 * inputs are what the kernel holds: Q float16, K and V e4m3 values times one descale per tensor
 * (one KV head, so the engine's per-head scales are those descales). */
START_TEST(test_kv_cache_judged)
{
    uint64_t seed = fs_test_seed() + 31u * (uint64_t)_i;
    fs_rng r = {seed};
    const int32_t HQ = fs_rng_int(&r, 1, 4), n_q = fs_rng_int(&r, 1, 3), n_kv = fs_rng_int(&r, 40, 300);
    const int32_t d = fs_rng_int(&r, 4, 32), dv = fs_rng_int(&r, 4, 16);
    double *Q = malloc(sizeof(double) * (size_t)HQ * n_q * d), *K = malloc(sizeof(double) * (size_t)n_kv * d);
    double *V = malloc(sizeof(double) * (size_t)n_kv * dv), *O = malloc(sizeof(double) * (size_t)HQ * n_q * dv);
    double *l = malloc(sizeof(double) * (size_t)HQ * n_q);
    const double ks = fs_rng_uniform(&r, 0.5, 3) / 448, vs = pow(2.0, fs_rng_uniform(&r, -8, 4));   /* |K| ≤ 3 */
    for (int32_t e = 0; e < HQ * n_q * d; e++) Q[e] = fs_lowp_round(FS_LOWP_F16, fs_rng_uniform(&r, -2, 2));
    /* e4m3 values with one of them 448, so that the engine's scale amax / 448 is the descale */
    for (int32_t e = 0; e < n_kv * d; e++) K[e] = (e ? fs_fp8_round(FS_FP8_E4M3, fs_rng_uniform(&r, -448, 448)) : 448) * ks;
    for (int32_t e = 0; e < n_kv * dv; e++) V[e] = (e ? fs_fp8_round(FS_FP8_E4M3, fs_rng_uniform(&r, -448, 448)) : -448) * vs;
    fs_attn a = fs_attn_make(n_q, n_kv, d, dv);
    a.n_q_heads = HQ;
    a.Q = Q;
    a.K = K;
    a.V = V;
    a.mask.kind = _i % 2 ? FS_MASK_CAUSAL : FS_MASK_NONE;
    fs_decoding dc = random_decoding(&r);
    dc.Bk = fs_rng_int(&r, 16, 64);
    fs_kv_store kv = {FS_KV_E4M3, 0};
    ck_assert_int_eq(fs_decode_kv(&a, &dc, &kv, NULL, O, NULL, l, NULL), FS_OK);
    fs_check_opts o = fs_check_opts_default();
    o.prec = FS_PREC_E4M3;
    o.kv_only = true;
    o.fp8_scale[1] = ks;
    o.fp8_scale[2] = vs;
    o.threads = 1;
    fs_check_result res;
    ck_assert_int_eq(fs_check_judge(&a, O, &o, &res), FS_OK);
    FS_ASSERT_SEED(res.pass, seed, "the engine's e4m3 cache fails check --kv-only: %.3g over %.3g (%s)", res.max_abs_err,
                   res.tolerance, res.detail);
    fs_check_result_free(&res);
    for (int32_t e = 0; e < HQ * n_q * dv; e++) O[e] *= l[e / dv];   /* the division by ℓ undone */
    ck_assert_int_eq(fs_check_judge(&a, O, &o, &res), FS_OK);
    FS_ASSERT_SEED(!res.pass && res.diag == FS_DIAG_UNNORMALIZED, seed, "undivided rows: %s, %s", res.pass ? "pass" : "fail",
                   fs_diag_str(res.diag));
    fs_check_result_free(&res);
    free(Q); free(K); free(V); free(O); free(l);
}
END_TEST

/* Bad input: an unknown format, a negative page size, a soft-cap, a value beyond float16, a page
 * size that is not the paged cache's. */
START_TEST(test_kv_cache_errors)
{
    double Q[4] = {1, 0, 0, 1}, K[6] = {1, 2, 3, 4, 5, 6}, V[6] = {1, 2, 3, 4, 5, 6}, O[4];
    fs_attn a = fs_attn_make(2, 3, 2, 2);
    a.Q = Q;
    a.K = K;
    a.V = V;
    fs_decoding dc = fs_decoding_default();
    fs_kv_store kv = {FS_KV_COUNT, 0};
    ck_assert_int_eq(fs_decode_kv(&a, &dc, &kv, NULL, O, NULL, NULL, NULL), FS_ERR_ARG);
    kv = (fs_kv_store){FS_KV_E4M3, -1};
    ck_assert_int_eq(fs_decode_kv(&a, &dc, &kv, NULL, O, NULL, NULL, NULL), FS_ERR_ARG);
    kv.page_size = 2;
    a.softcap = 2;
    ck_assert_int_eq(fs_decode_kv(&a, &dc, &kv, NULL, O, NULL, NULL, NULL), FS_ERR_ARG);
    a.softcap = 0;
    ck_assert_int_eq(fs_decode_kv(&a, &dc, &kv, NULL, O, NULL, NULL, NULL), FS_OK);
    V[3] = 1e5;   /* fine in e4m3 with a scale, beyond float16 */
    ck_assert_int_eq(fs_decode_kv(&a, &dc, &kv, NULL, O, NULL, NULL, NULL), FS_OK);
    kv.fmt = FS_KV_F16;
    ck_assert_int_eq(fs_decode_kv(&a, &dc, &kv, NULL, O, NULL, NULL, NULL), FS_ERR_RANGE);
    V[3] = 4;
    dc.Bk = 0;
    ck_assert_int_eq(fs_decode_kv(&a, &dc, &kv, NULL, O, NULL, NULL, NULL), FS_ERR_TILE);
    dc = fs_decoding_default();
    fs_paged_cache c;
    int32_t seq;
    ck_assert_int_eq(fs_paged_init(&c, 2, 2, 1, 2, 2, NULL), FS_OK);
    ck_assert_int_eq(fs_paged_add(&c, &seq), FS_OK);
    ck_assert_int_eq(fs_paged_append_rows(&c, seq, K, V, 3, NULL), FS_OK);
    fs_attn view = a;
    view.K = view.V = NULL;
    kv = (fs_kv_store){FS_KV_E4M3, 3};
    ck_assert_int_eq(fs_paged_decode_kv(&c, seq, &view, &dc, &kv, O, NULL, NULL, NULL), FS_ERR_ARG);
    kv.page_size = 2;
    ck_assert_int_eq(fs_paged_decode_kv(&c, seq, &view, &dc, &kv, O, NULL, NULL, NULL), FS_OK);
    fs_paged_free(&c);
}
END_TEST

Suite *kvcache_suite(void)
{
    Suite *s = suite_create("kvcache");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_kv_cache_against_reference, 0, 6);
    tcase_add_loop_test(tc, test_kv_cache_paged, 0, 6);
    tcase_add_loop_test(tc, test_kv_cache_judged, 0, 4);
    tcase_add_test(tc, test_kv_cache_errors);
    suite_add_tcase(s, tc);
    return s;
}

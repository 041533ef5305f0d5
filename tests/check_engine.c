/* check_engine.c: the engine against its float64 reference, and against the documents' numbers.
 *
 * Random problems are drawn fresh each run (seed printed on failure, FS_SEED=... replays one).
 * Tolerance 1e-12 relative (max(1, |x|) in the denominator): every path computes the same sums
 * in float64 in a different order, so differences are a few ulps times the number of tiles.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/run.h"
#include "test_problem.h"
#include "test_util.h"

#define TOL 1e-12

/* The engine's random problems (test_problem.h): n_q ≤ 13, n_kv ≤ 17, d ≤ 6, d_v ≤ 5; Q and K, or
 * given scores S (n_q_heads, n_q, n_kv) when given_scores; one in four with a soft-cap. */
static void problem_random(fs_test_problem *p, fs_rng *r, int mask_kind, int given_scores)
{
    const fs_test_problem_spec spec = {.max_n_q = 13, .max_n_kv = 17, .max_d = 6, .max_d_v = 5,
                                       .max_offset = 6, .max_window = 6, .bits_visible = 2.0 / 3,
                                       .given_scores = given_scores, .softcap = true};
    fs_test_problem_draw(p, r, mask_kind, &spec);
}

static long out_len(const fs_attn *a) { return (long)a->n_q_heads * a->n_q * a->d_v; }

/* Every form × order × exp2 × mask × (Q,K or given S) against the reference, on fresh inputs. */
START_TEST(test_tiled_matches_reference)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    int mask_kind = _i % FS_TEST_MASKS;
    for (int rep = 0; rep < 40; rep++) {
        fs_test_problem p;
        problem_random(&p, &r, mask_kind, rep % 4 == 3);
        long n = out_len(&p.a), rows = (long)p.a.n_q_heads * p.a.n_q;
        double *ref = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * n);
        double *mr = malloc(sizeof(double) * rows), *lr = malloc(sizeof(double) * rows);
        double *m = malloc(sizeof(double) * rows), *l = malloc(sizeof(double) * rows);
        ck_assert_int_eq(fs_reference(&p.a, ref, mr, lr), FS_OK);
        for (int form = 0; form < 2; form++)
            for (int order = 0; order < 2; order++)
                for (int e2 = 0; e2 < 2; e2++) {
                    fs_tiling t = fs_tiling_default();
                    t.Bq = fs_rng_int(&r, 1, 7);
                    t.Bk = fs_rng_int(&r, 1, 7);
                    t.form = form;
                    t.order = order;
                    t.exp2 = e2;
                    fs_trace tr;
                    fs_trace_init(&tr);
                    fs_status st = fs_tiled(&p.a, &t, out, m, l, rep % 2 ? &tr : NULL);
                    FS_ASSERT_SEED(st == FS_OK, seed, "status %s", fs_status_str(st));
                    double err = fs_max_rel_err(out, ref, n);
                    FS_ASSERT_SEED(err <= TOL, seed,
                                   "mask %d form %d order %d exp2 %d Bq %d Bk %d: O error %.3g",
                                   mask_kind, form, order, e2, t.Bq, t.Bk, err);
                    for (long i = 0; i < rows; i++) {
                        FS_ASSERT_SEED(m[i] == mr[i] || fabs(m[i] - mr[i]) <= 1e-12 * fmax(1, fabs(mr[i])),
                                       seed, "m differs in row %ld: %g vs %g", i, m[i], mr[i]);
                        FS_ASSERT_SEED(fabs(l[i] - lr[i]) <= TOL * fmax(1, lr[i]), seed,
                                       "l differs in row %ld: %.17g vs %.17g", i, l[i], lr[i]);
                    }
                    fs_trace_free(&tr);
                }
        free(ref);
        free(out);
        free(mr);
        free(lr);
        free(m);
        free(l);
        fs_test_problem_free(&p);
    }
}
END_TEST

/* The invariants the trace promises, on every ROW event: m never decreases, α ≤ 1, β ≤ 1, and
 * ℓ_new = α ℓ_old + β ℓ_blk. Tile events come in loop order with their rows after them. */
START_TEST(test_trace_invariants)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int rep = 0; rep < 60; rep++) {
        fs_test_problem p;
        problem_random(&p, &r, rep % FS_TEST_MASKS, 0);
        fs_tiling t = fs_tiling_default();
        t.Bq = fs_rng_int(&r, 1, 5);
        t.Bk = fs_rng_int(&r, 1, 5);
        t.form = rep % 2;
        t.order = (rep / 2) % 2;
        double *out = malloc(sizeof(double) * out_len(&p.a));
        fs_trace tr;
        fs_trace_init(&tr);
        ck_assert_int_eq(fs_tiled(&p.a, &t, out, NULL, NULL, &tr), FS_OK);
        int nqt = (p.a.n_q + t.Bq - 1) / t.Bq, nkt = (p.a.n_kv + t.Bk - 1) / t.Bk;
        int pairs = 0, outs = 0, expect_rows = 0;
        for (int64_t k = 0; k < tr.n; k++) {
            const fs_event *e = &tr.ev[k];
            ck_assert_int_eq(e->step, k);
            if (e->kind == FS_EV_TILE || e->kind == FS_EV_SKIP) {
                FS_ASSERT_SEED(expect_rows == 0, seed, "a tile started before the last one's rows");
                pairs++;
                if (e->kind == FS_EV_TILE) expect_rows = e->r1 - e->r0;
            } else if (e->kind == FS_EV_ROW) {
                FS_ASSERT_SEED(expect_rows > 0, seed, "row event outside a tile");
                expect_rows--;
                FS_ASSERT_SEED(e->m_new >= e->m_old, seed, "m decreased at step %d", e->step);
                FS_ASSERT_SEED(e->alpha <= 1 && e->alpha >= 0 && e->beta <= 1 && e->beta >= 0, seed,
                               "alpha %g beta %g at step %d", e->alpha, e->beta, e->step);
                double l = e->alpha * e->l_old + e->beta * e->l_blk;
                FS_ASSERT_SEED(fabs(l - e->l_new) <= 1e-12 * fmax(1, l), seed, "l_new at step %d", e->step);
                if (e->m_new == -INFINITY)
                    FS_ASSERT_SEED(e->alpha == 1 && e->beta == 0 && e->l_new == 0, seed,
                                   "unseen row must report alpha 1, beta 0");
                if (e->m_old == -INFINITY && e->m_new > -INFINITY)
                    FS_ASSERT_SEED(e->alpha == 0, seed, "first visible key must give alpha 0");
            } else if (e->kind == FS_EV_OUT) {
                outs++;
            }
        }
        ck_assert_int_eq(pairs, p.a.n_q_heads * nqt * nkt);
        ck_assert_int_eq(outs, p.a.n_q_heads * p.a.n_q);
        free(out);
        fs_trace_free(&tr);
        fs_test_problem_free(&p);
    }
}
END_TEST

/* Where the OUT events sit. The trace is compared, event by event, with the sequence the loop
 * order implies: per head, Q outer: for each Q tile, its pairs (TILE then the tile's ROWs, or
 * SKIP) over every KV tile, then one OUT per row of the Q tile, in row order, before the next Q
 * tile's first TILE or SKIP; KV outer: every pair, and all OUT rows (head by head) at the very end.
 * Random shapes, masks, heads, tiles, forms, exp2, pitfalls and dropout, fresh each run. The
 * numbers do not depend on where the OUT events sit: both orders give the same O bit for bit
 * (each row meets its KV tiles in the same order), equal to the untraced run's, every OUT
 * carries its row of O and its ℓ, and the correct variants match the float64 reference. */
START_TEST(test_out_events_where_rows_finish)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int rep = 0; rep < 80; rep++) {
        fs_test_problem p;
        problem_random(&p, &r, rep % FS_TEST_MASKS, rep % 5 == 4);
        const fs_attn *a = &p.a;
        long n = out_len(a), rows = (long)a->n_q_heads * a->n_q;
        double *ref = malloc(sizeof(double) * n), *O[2], *O_plain = malloc(sizeof(double) * n);
        double *l = malloc(sizeof(double) * rows);
        O[0] = malloc(sizeof(double) * n);
        O[1] = malloc(sizeof(double) * n);
        ck_assert_int_eq(fs_reference(a, ref, NULL, NULL), FS_OK);
        fs_tiling t = fs_tiling_default();
        t.Bq = fs_rng_int(&r, 1, 6);
        t.Bk = fs_rng_int(&r, 1, 6);
        t.form = fs_rng_int(&r, 0, 1) ? FS_FORM_UNNORMALIZED : FS_FORM_NORMALIZED;
        t.exp2 = fs_rng_int(&r, 0, 1);
        t.pitfall = rep % 3 == 1 ? (fs_pitfall)fs_rng_int(&r, 1, FS_PITFALL_COUNT - 1) : FS_PITFALL_NONE;
        if (rep % 3 == 2) {
            t.dropout.on = true;
            t.dropout.p = fs_rng_uniform(&r, 0, 0.9);
            t.dropout.seed = fs_rng_next(&r);
        }
        const int nqt = (a->n_q + t.Bq - 1) / t.Bq, nkt = (a->n_kv + t.Bk - 1) / t.Bk;
        for (int order = 0; order < 2; order++) {
            t.order = order ? FS_ORDER_KV_OUTER : FS_ORDER_Q_OUTER;
            fs_trace tr;
            fs_trace_init(&tr);
            fs_status st = fs_tiled(a, &t, O[order], NULL, l, &tr);
            FS_ASSERT_SEED(st == FS_OK, seed, "rep %d order %d: status %s", rep, order, fs_status_str(st));
            /* Walk the expected sequence alongside the trace. */
            int64_t k = 0;
            const char *ctx = order ? "kv-outer" : "q-outer";
#define NEXT_IS(cond, ...)                                                                          \
    do {                                                                                            \
        FS_ASSERT_SEED(k < tr.n, seed, "rep %d %s Bq %d Bk %d: the trace ends at %lld", rep, ctx, t.Bq, \
                       t.Bk, (long long)k);                                                         \
        const fs_event *e_ = &tr.ev[k];                                                             \
        FS_ASSERT_SEED(cond, seed, __VA_ARGS__);                                                    \
        (void)e_;                                                                                   \
    } while (0)
            for (int h = 0; h < a->n_q_heads; h++)
                for (int x = 0; x < (order ? nkt : nqt); x++) {
                    for (int y = 0; y < (order ? nqt : nkt); y++) {
                        const int qt = order ? y : x, kt = order ? x : y;
                        const int r0 = qt * t.Bq, r1 = r0 + t.Bq < a->n_q ? r0 + t.Bq : a->n_q;
                        NEXT_IS((e_->kind == FS_EV_TILE || e_->kind == FS_EV_SKIP) && e_->head == h && e_->qt == qt &&
                                    e_->kt == kt,
                                "rep %d %s Bq %d Bk %d: step %lld is kind %d (head %d, qt %d, kt %d), expected the "
                                "pair (head %d, qt %d, kt %d)",
                                rep, ctx, t.Bq, t.Bk, (long long)k, (int)tr.ev[k].kind, tr.ev[k].head, tr.ev[k].qt,
                                tr.ev[k].kt, h, qt, kt);
                        const bool visited = tr.ev[k++].kind == FS_EV_TILE;
                        for (int i = r0; visited && i < r1; i++, k++)
                            NEXT_IS(e_->kind == FS_EV_ROW && e_->head == h && e_->row == i, "rep %d %s: step %lld, "
                                    "expected the ROW of row %d (head %d)", rep, ctx, (long long)k, i, h);
                    }
                    if (order) continue;
                    /* Q outer: the Q tile x has met every KV tile; its rows go out now. */
                    const int r0 = x * t.Bq, r1 = r0 + t.Bq < a->n_q ? r0 + t.Bq : a->n_q;
                    for (int i = r0; i < r1; i++, k++)
                        NEXT_IS(e_->kind == FS_EV_OUT && e_->head == h && e_->row == i,
                                "rep %d q-outer Bq %d Bk %d: step %lld is kind %d, expected the OUT of row %d (head "
                                "%d) right after Q tile %d's last KV tile",
                                rep, t.Bq, t.Bk, (long long)k, (int)tr.ev[k].kind, i, h, x);
                }
            if (order)   /* KV outer: every row stays live to the end */
                for (int h = 0; h < a->n_q_heads; h++)
                    for (int i = 0; i < a->n_q; i++, k++)
                        NEXT_IS(e_->kind == FS_EV_OUT && e_->head == h && e_->row == i,
                                "rep %d kv-outer: step %lld, expected the OUT of row %d (head %d) at the end", rep,
                                (long long)k, i, h);
#undef NEXT_IS
            FS_ASSERT_SEED(k == tr.n, seed, "rep %d %s: %lld events after the last OUT", rep, ctx,
                           (long long)(tr.n - k));
            /* Each OUT carries its row's final O and ℓ, bit for bit. */
            for (int64_t j = 0; j < tr.n; j++) {
                const fs_event *e = &tr.ev[j];
                if (e->kind != FS_EV_OUT) continue;
                const size_t row = (size_t)e->head * a->n_q + e->row;
                const double *o = fs_trace_at(&tr, e->o_new);
                FS_ASSERT_SEED(o && e->n_o == a->d_v &&
                                   !memcmp(o, O[order] + row * a->d_v, sizeof(double) * (size_t)a->d_v) &&
                                   !memcmp(&e->l_new, &l[row], sizeof(double)),
                               seed, "rep %d %s: the OUT of row %d (head %d) is not the run's O row", rep, ctx, e->row,
                               e->head);
            }
            fs_trace_free(&tr);
            /* The untraced run gives the same bits. */
            ck_assert_int_eq(fs_tiled(a, &t, O_plain, NULL, NULL, NULL), FS_OK);
            FS_ASSERT_SEED(!memcmp(O_plain, O[order], sizeof(double) * (size_t)n), seed,
                           "rep %d %s: traced and untraced outputs differ", rep, ctx);
        }
        FS_ASSERT_SEED(!memcmp(O[0], O[1], sizeof(double) * (size_t)n), seed,
                       "rep %d (pitfall %s, Bq %d, Bk %d): q-outer and kv-outer outputs differ", rep,
                       fs_pitfall_str(t.pitfall), t.Bq, t.Bk);
        if (t.pitfall == FS_PITFALL_NONE && !t.dropout.on) {
            double err = fs_max_rel_err(O[0], ref, n);
            FS_ASSERT_SEED(err <= TOL, seed, "rep %d: O error %.3g against the reference", rep, err);
        }
        free(ref);
        free(O[0]);
        free(O[1]);
        free(O_plain);
        free(l);
        fs_test_problem_free(&p);
    }
}
END_TEST

/* One tile holding everything: tiled is the reference in another order. */
START_TEST(test_single_tile)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    fs_test_problem p;
    problem_random(&p, &r, FS_TEST_MASK_CAUSAL, 0);
    long n = out_len(&p.a);
    double *ref = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * n);
    ck_assert_int_eq(fs_reference(&p.a, ref, NULL, NULL), FS_OK);
    fs_tiling t = fs_tiling_default();
    t.Bq = 1000;
    t.Bk = 1000;
    fs_trace tr;
    fs_trace_init(&tr);
    ck_assert_int_eq(fs_tiled(&p.a, &t, out, NULL, NULL, &tr), FS_OK);
    FS_ASSERT_SEED(fs_max_rel_err(out, ref, n) <= TOL, seed, "single tile differs");
    ck_assert_int_eq(tr.ev[0].kind, FS_EV_TILE);
    ck_assert_int_eq(tr.ev[0].r1, p.a.n_q);
    ck_assert_int_eq(tr.ev[0].c1, p.a.n_kv);
    fs_trace_free(&tr);
    free(ref);
    free(out);
    fs_test_problem_free(&p);
}
END_TEST

/* Extreme scores: exp(±1e4) over- or underflows unless the max is subtracted first. */
START_TEST(test_extreme_scores)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    fs_test_problem p;
    problem_random(&p, &r, FS_TEST_MASK_NONE, 1);
    long ns = (long)p.a.n_q_heads * p.a.n_q * p.a.n_kv;
    for (long i = 0; i < ns; i++) p.S[i] = fs_rng_int(&r, 0, 1) ? 1e4 * fs_rng_uniform(&r, 0.9, 1) : -1e4;
    long n = out_len(&p.a);
    double *ref = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * n);
    ck_assert_int_eq(fs_reference(&p.a, ref, NULL, NULL), FS_OK);
    for (int form = 0; form < 2; form++) {
        fs_tiling t = fs_tiling_default();
        t.Bq = 2;
        t.Bk = 3;
        t.form = form;
        ck_assert_int_eq(fs_tiled(&p.a, &t, out, NULL, NULL, NULL), FS_OK);
        FS_ASSERT_SEED(fs_max_rel_err(out, ref, n) <= TOL, seed, "extreme scores, form %d", form);
    }
    free(ref);
    free(out);
    fs_test_problem_free(&p);
}
END_TEST

/* Rows that see nothing (a bitmask with empty rows) and tiles that see nothing: O = 0, no NaN. */
START_TEST(test_fully_masked)
{
    int n_q = 5, n_kv = 7, w = fs_mask_words(n_kv);
    double Q[5 * 2], K[7 * 2], V[7 * 3];
    for (int i = 0; i < 10; i++) Q[i] = 0.1 * i - 0.3;
    for (int i = 0; i < 14; i++) K[i] = 0.2 * (i % 5) - 0.4;
    for (int i = 0; i < 21; i++) V[i] = (double)(i % 4) - 1.5;
    uint64_t bits[5] = {0};
    bits[1] = 0x7f;      /* row 1 sees everything */
    bits[3] = 1u << 6;   /* row 3 sees only the last key */
    fs_attn a = fs_attn_make(n_q, n_kv, 2, 3);
    a.Q = Q;
    a.K = K;
    a.V = V;
    a.mask.kind = FS_MASK_BITS;
    a.mask.bits = bits;
    a.mask.words_per_row = w;
    double ref[15], out[15], m[5], l[5];
    ck_assert_int_eq(fs_reference(&a, ref, NULL, NULL), FS_OK);
    for (int form = 0; form < 2; form++)
        for (int order = 0; order < 2; order++) {
            fs_tiling t = {2, 3, form, order, false, FS_PITFALL_NONE, {false, 0.0, 0}};
            fs_trace tr;
            fs_trace_init(&tr);
            ck_assert_int_eq(fs_tiled(&a, &t, out, m, l, &tr), FS_OK);
            ck_assert(fs_max_rel_err(out, ref, 15) <= TOL);
            for (int c = 0; c < 3; c++) ck_assert(out[0 * 3 + c] == 0 && out[4 * 3 + c] == 0);
            ck_assert(m[0] == -INFINITY && l[0] == 0);
            int skips = 0;
            for (int64_t k = 0; k < tr.n; k++) skips += tr.ev[k].kind == FS_EV_SKIP;
            ck_assert_int_eq(skips, 3 * 3 - 4); /* tiles holding row 1 or row 3 with a visible key */
            fs_trace_free(&tr);
        }
}
END_TEST

/* 000's 16 × 16 causal picture with 4 × 4 tiles: 10 of 16 computed (004: 6 past, 4 boundary,
 * 6 future). */
START_TEST(test_causal_16x16_classes)
{
    fs_mask m = {0};
    m.kind = FS_MASK_CAUSAL;
    int full = 0, partial = 0, skipped = 0;
    for (int qt = 0; qt < 4; qt++)
        for (int kt = 0; kt < 4; kt++) {
            fs_skip_reason why;
            fs_tile_class c = fs_mask_classify(&m, 16, 16, qt * 4, qt * 4 + 4, kt * 4, kt * 4 + 4, &why);
            full += c == FS_TILE_FULL;
            partial += c == FS_TILE_PARTIAL;
            skipped += c == FS_TILE_SKIPPED;
            if (c == FS_TILE_SKIPPED) ck_assert_int_eq(why, FS_SKIP_CAUSAL);
            ck_assert_int_eq(c, kt < qt ? FS_TILE_FULL : kt == qt ? FS_TILE_PARTIAL : FS_TILE_SKIPPED);
        }
    ck_assert_int_eq(full, 6);
    ck_assert_int_eq(partial, 4);
    ck_assert_int_eq(skipped, 6);
}
END_TEST

/* The tile classes agree with an element-by-element count, for every mask, on random tiles. */
START_TEST(test_classify_matches_elements)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int rep = 0; rep < 300; rep++) {
        fs_test_problem p;
        /* every mask kind but none, in turn */
        problem_random(&p, &r, FS_TEST_MASK_CAUSAL + rep % (FS_TEST_MASKS - FS_TEST_MASK_CAUSAL), 0);
        int r0 = fs_rng_int(&r, 0, p.a.n_q - 1), r1 = fs_rng_int(&r, r0 + 1, p.a.n_q);
        int c0 = fs_rng_int(&r, 0, p.a.n_kv - 1), c1 = fs_rng_int(&r, c0 + 1, p.a.n_kv);
        int seen = 0;
        for (int i = r0; i < r1; i++)
            for (int j = c0; j < c1; j++) seen += fs_mask_visible(&p.a.mask, p.a.n_q, p.a.n_kv, i, j);
        fs_tile_class want = seen == 0 ? FS_TILE_SKIPPED
                           : seen == (r1 - r0) * (c1 - c0) ? FS_TILE_FULL : FS_TILE_PARTIAL;
        fs_tile_class got = fs_mask_classify(&p.a.mask, p.a.n_q, p.a.n_kv, r0, r1, c0, c1, NULL);
        FS_ASSERT_SEED(got == want, seed, "mask %d tile [%d,%d)x[%d,%d): %s, want %s", p.a.mask.kind,
                       r0, r1, c0, c1, fs_tile_class_str(got), fs_tile_class_str(want));
        fs_test_problem_free(&p);
    }
}
END_TEST

/* 000, "A Complete Numerical Example with Tiling": n = 6, d = 2, Bq = 2, Bk = 3, causal. */
static const double Q6[] = {1.0, 0.5, 0.8, -0.1, 0.2, 0.9, -0.3, 0.4, 0.7, 0.6, 0.1, -0.5};
static const double K6[] = {0.3, 0.7, 0.6, 0.2, -0.1, 0.8, 0.4, -0.3, 0.9, 0.1, 0.2, 0.5};
static const double V6[] = {1.0, 0.0, 0.0, 1.0, 0.5, 0.5, 0.8, 0.2, 0.3, 0.7, 0.6, 0.4};

START_TEST(test_doc000_tiled_example)
{
    fs_attn a = fs_attn_make(6, 6, 2, 2);
    a.Q = Q6;
    a.K = K6;
    a.V = V6;
    a.mask.kind = FS_MASK_CAUSAL;
    fs_tiling t = {2, 3, FS_FORM_UNNORMALIZED, FS_ORDER_Q_OUTER, false, FS_PITFALL_NONE, {false, 0.0, 0}};
    double O[12];
    fs_trace tr;
    fs_trace_init(&tr);
    ck_assert_int_eq(fs_tiled(&a, &t, O, NULL, NULL, &tr), FS_OK);
    /* Q tile 0 × KV tile 0 is visited (partial), × KV tile 1 is skipped (causal). */
    ck_assert_int_eq(tr.ev[0].kind, FS_EV_TILE);
    ck_assert_int_eq(tr.ev[0].cls, FS_TILE_PARTIAL);
    const fs_event *r0 = &tr.ev[1], *r1 = &tr.ev[2];
    ck_assert_int_eq(r0->row, 0);
    const double *s0 = fs_trace_at(&tr, r0->s_row), *s1 = fs_trace_at(&tr, r1->s_row);
    ck_assert_double_eq_tol(s0[0], 0.65 / sqrt(2), 1e-15);   /* printed 0.460 */
    ck_assert(s0[1] == -INFINITY && s0[2] == -INFINITY);
    ck_assert_double_eq_tol(s1[0], 0.17 / sqrt(2), 1e-15);   /* 0.120 */
    ck_assert_double_eq_tol(s1[1], 0.46 / sqrt(2), 1e-15);   /* 0.325 */
    ck_assert(r0->alpha == 0 && r0->l_new == 1);             /* correction exp(−∞ − 0.460) = 0 */
    ck_assert_double_eq_tol(r1->l_new, 1 + exp((0.17 - 0.46) / sqrt(2)), 1e-15); /* 1.8146 */
    ck_assert_int_eq(tr.ev[3].kind, FS_EV_SKIP);
    ck_assert_int_eq(tr.ev[3].reason, FS_SKIP_CAUSAL);
    /* O rows 0 and 1: [1, 0] and 000's [0.449, 0.551] */
    ck_assert_double_eq_tol(O[0], 1.0, 1e-15);
    ck_assert_double_eq_tol(O[1], 0.0, 1e-15);
    ck_assert_double_eq_tol(O[2], 0.449, 5e-4);
    ck_assert_double_eq_tol(O[3], 0.551, 5e-4);
    fs_trace_free(&tr);
}
END_TEST

/* 000's online softmax of z = [2, 5, 1, 4] and its printed sums; chunked (001) agrees. */
START_TEST(test_doc000_online_softmax)
{
    const double z[] = {2, 5, 1, 4};
    double p[4], ref[4], m, l, pc[4];
    fs_trace tr;
    fs_trace_init(&tr);
    ck_assert_int_eq(fs_online_softmax(z, 4, 1, p, &m, &l, &tr), FS_OK);
    fs_reference_softmax(z, 4, ref);
    ck_assert(fs_max_rel_err(p, ref, 4) <= TOL);
    ck_assert_int_eq(tr.n, 5);
    ck_assert_double_eq_tol(tr.ev[1].alpha, exp(-3), 1e-15);   /* correction 0.0498 */
    ck_assert_double_eq_tol(tr.ev[1].l_new, 1 + exp(-3), 1e-15); /* 1.0498 */
    ck_assert_double_eq_tol(l, 1 + exp(-3) + exp(-4) + exp(-1), 1e-15); /* 1.4360 */
    ck_assert(m == 5);
    for (int chunk = 2; chunk <= 5; chunk++) {
        ck_assert_int_eq(fs_online_softmax(z, 4, chunk, pc, NULL, NULL, NULL), FS_OK);
        ck_assert(fs_max_rel_err(pc, ref, 4) <= TOL);
    }
    fs_trace_free(&tr);
}
END_TEST

/* 000's online attention with q = [1, 0] and three keys. The walk ends at [0.4421, 0.5579];
 * the document's check prints 0.5580, the sum of its rounded terms 0.4470 + 0.1110. */
START_TEST(test_doc000_online_query)
{
    const double q[] = {1, 0}, K[] = {0.5, 0.3, 0.8, -0.2, 0.1, 0.7}, V[] = {1, 0, 0, 1, 0.5, 0.5};
    fs_attn a = fs_attn_make(1, 3, 2, 2);
    a.Q = q;
    a.K = K;
    a.V = V;
    a.scale = 1; /* the document skips 1/√d */
    double O[2];
    fs_trace tr;
    fs_trace_init(&tr);
    ck_assert_int_eq(fs_online_query(&a, O, &tr), FS_OK);
    ck_assert_double_eq_tol(O[0], 0.4421, 5e-5);
    ck_assert_double_eq_tol(O[1], 0.5579, 5e-5);
    /* step 2 (key 1): correction exp(−0.3) = 0.7408; step 3 (key 2): weight exp(−0.7) = 0.4966 */
    ck_assert_int_eq(tr.ev[3].kind, FS_EV_ROW);
    ck_assert_double_eq_tol(tr.ev[3].alpha, exp(-0.3), 1e-15);
    ck_assert_double_eq_tol(tr.ev[5].beta, exp(-0.7), 1e-15);
    const double *o = fs_trace_at(&tr, tr.ev[5].o_new);
    ck_assert_double_eq_tol(o[0], exp(-0.3) + 0.5 * exp(-0.7), 1e-15); /* 0.9891 */
    fs_trace_free(&tr);
}
END_TEST

/* 000's 9-token speculative tree gives the printed mask; broken parent arrays are refused. */
START_TEST(test_tree_mask)
{
    const int32_t parent[9] = {-1, 0, 1, 1, 2, 2, 3, 3, 4};
    static const char *want[9] = {"100000000", "110000000", "111000000", "110100000", "111010000",
                                  "111001000", "110100100", "110100010", "111010001"};
    uint64_t bits[9];
    ck_assert_int_eq(fs_mask_tree_build(parent, 9, bits, NULL), FS_OK);
    fs_mask m = fs_mask_tree(bits, 9);
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 9; j++)
            ck_assert_int_eq(fs_mask_visible(&m, 9, 9, i, j), want[i][j] == '1');
    int32_t bad;
    const int32_t two_roots[3] = {-1, -1, 0}, cycle[3] = {-1, 2, 1}, range[3] = {-1, 5, 0}, self[2] = {-1, 1};
    ck_assert_int_eq(fs_mask_tree_build(two_roots, 3, bits, &bad), FS_ERR_TREE);
    ck_assert_int_eq(bad, 1);
    ck_assert_int_eq(fs_mask_tree_build(cycle, 3, bits, &bad), FS_ERR_TREE);
    ck_assert_int_eq(fs_mask_tree_build(range, 3, bits, &bad), FS_ERR_TREE);
    ck_assert_int_eq(bad, 1);
    ck_assert_int_eq(fs_mask_tree_build(self, 2, bits, &bad), FS_ERR_TREE);
}
END_TEST

/* Decode: every split size, both partitions, both merges and both forms give the reference;
 * the merge order does not change the output. */
START_TEST(test_decode_merge_order)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int rep = 0; rep < 40; rep++) {
        fs_test_problem p;
        /* none, causal (with and without an offset) and window in turn; no tree or bits */
        problem_random(&p, &r, rep % (FS_TEST_MASK_WINDOW + 1), 0);
        long n = out_len(&p.a);
        double *ref = malloc(sizeof(double) * n), *seq = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * n);
        ck_assert_int_eq(fs_reference(&p.a, ref, NULL, NULL), FS_OK);
        for (int split = 0; split < 2; split++)
            for (int form = 0; form < 2; form++) {
                fs_decoding dc = fs_decoding_default();
                dc.split = split;
                dc.Bk = fs_rng_int(&r, 1, 6);
                dc.parts = fs_rng_int(&r, 1, 6);
                dc.form = form;
                dc.merge = FS_MERGE_SEQUENTIAL;
                fs_trace tr;
                fs_trace_init(&tr);
                ck_assert_int_eq(fs_decode(&p.a, &dc, seq, NULL, NULL, &tr), FS_OK);
                FS_ASSERT_SEED(fs_max_rel_err(seq, ref, n) <= TOL, seed, "sequential split %d form %d", split, form);
                dc.merge = FS_MERGE_TREE;
                ck_assert_int_eq(fs_decode(&p.a, &dc, out, NULL, NULL, NULL), FS_OK);
                FS_ASSERT_SEED(fs_max_rel_err(out, ref, n) <= TOL, seed, "tree split %d form %d", split, form);
                FS_ASSERT_SEED(fs_max_rel_err(out, seq, n) <= TOL, seed, "tree vs sequential");
                int merges = 0, partials = 0;
                for (int64_t k = 0; k < tr.n; k++) {
                    merges += tr.ev[k].kind == FS_EV_MERGE;
                    partials += tr.ev[k].kind == FS_EV_PARTIAL;
                }
                int nsp = split ? dc.parts : (p.a.n_kv + dc.Bk - 1) / dc.Bk;
                ck_assert_int_eq(partials, p.a.n_q_heads * p.a.n_q * nsp);
                ck_assert_int_eq(merges, p.a.n_q_heads * p.a.n_q * (nsp - 1));
                fs_trace_free(&tr);
            }
        free(ref);
        free(seq);
        free(out);
        fs_test_problem_free(&p);
    }
}
END_TEST

/* The merge is associative: ((a·b)·c) = (a·(b·c)) for random states, including empty ones. */
START_TEST(test_merge_associative)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int rep = 0; rep < 200; rep++) {
        double m[3], l[3], o[3][4], ab[4], abc1[4], bc[4], abc2[4], mab, lab, m1, l1, mbc, lbc, m2, l2, ca, cb;
        fs_form form = rep % 2;
        for (int k = 0; k < 3; k++) {
            int empty = fs_rng_int(&r, 0, 4) == 0;
            m[k] = empty ? -INFINITY : fs_rng_uniform(&r, -5, 5);
            l[k] = empty ? 0 : fs_rng_uniform(&r, 1, 4);
            for (int c = 0; c < 4; c++) o[k][c] = empty ? 0 : fs_rng_uniform(&r, -1, 1);
        }
        fs_decode_merge(m[0], l[0], o[0], m[1], l[1], o[1], 4, form, &mab, &lab, ab, &ca, &cb);
        fs_decode_merge(mab, lab, ab, m[2], l[2], o[2], 4, form, &m1, &l1, abc1, &ca, &cb);
        fs_decode_merge(m[1], l[1], o[1], m[2], l[2], o[2], 4, form, &mbc, &lbc, bc, &ca, &cb);
        fs_decode_merge(m[0], l[0], o[0], mbc, lbc, bc, 4, form, &m2, &l2, abc2, &ca, &cb);
        FS_ASSERT_SEED(m1 == m2, seed, "m differs");
        FS_ASSERT_SEED(fabs(l1 - l2) <= TOL * fmax(1, l1), seed, "l differs");
        FS_ASSERT_SEED(fs_max_rel_err(abc1, abc2, 4) <= TOL, seed, "o differs");
    }
}
END_TEST

/* 001's pitfalls: which wrong variants are actually wrong. */
START_TEST(test_pitfalls)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    /* Scores rise through the first KV tile and fall through the second, so the second tile's
     * own maximum sits well below the running one (β ≪ 1). */
    int n = 8;
    double S[64], V[8 * 3], ref[24], out[24];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) S[i * n + j] = (j < 4 ? j : -j) + fs_rng_uniform(&r, -0.1, 0.1);
    fs_rng_fill(&r, V, 24, -1, 1);
    fs_attn a = fs_attn_make(n, n, 1, 3);
    a.S = S;
    a.V = V;
    a.scale = 1;
    ck_assert_int_eq(fs_reference(&a, ref, NULL, NULL), FS_OK);
    fs_tiling t = {4, 4, FS_FORM_NORMALIZED, FS_ORDER_KV_OUTER, false, FS_PITFALL_NO_RESCALE, {false, 0.0, 0}};
    ck_assert_int_eq(fs_tiled(&a, &t, out, NULL, NULL, NULL), FS_OK);
    FS_ASSERT_SEED(fs_max_rel_err(out, ref, 24) > 1e-3, seed, "no-rescale should drift");
    t.pitfall = FS_PITFALL_BLOCK_MAX_NO_BETA;
    ck_assert_int_eq(fs_tiled(&a, &t, out, NULL, NULL, NULL), FS_OK);
    FS_ASSERT_SEED(fs_max_rel_err(out, ref, 24) > 1e-3, seed, "block max without beta should drift");
    t.pitfall = FS_PITFALL_GLOBAL_MAX_NO_BETA;
    ck_assert_int_eq(fs_tiled(&a, &t, out, NULL, NULL, NULL), FS_OK);
    FS_ASSERT_SEED(fs_max_rel_err(out, ref, 24) <= TOL, seed, "global max without beta is exact");
    /* Causal: key 0 is visible to every row, so 001's fix is enough; no guard at all is not
     * (rows of a partial tile that see nothing). */
    a.mask.kind = FS_MASK_CAUSAL;
    ck_assert_int_eq(fs_reference(&a, ref, NULL, NULL), FS_OK);
    t.pitfall = FS_PITFALL_MASKED_DOC_FIX;
    ck_assert_int_eq(fs_tiled(&a, &t, out, NULL, NULL, NULL), FS_OK);
    FS_ASSERT_SEED(fs_max_rel_err(out, ref, 24) <= TOL, seed, "doc fix is fine under plain causal");
    /* With Bk < Bq a causal partial tile holds rows that see none of its keys: with no guard
     * at all, exp(−∞ − (−∞)) turns them into NaN. */
    t.order = FS_ORDER_Q_OUTER;
    t.Bk = 2;
    t.pitfall = FS_PITFALL_MASKED_NAN;
    ck_assert_int_eq(fs_tiled(&a, &t, out, NULL, NULL, NULL), FS_OK);
    int nans = 0;
    for (int i = 0; i < 24; i++) nans += isnan(out[i]);
    ck_assert_int_gt(nans, 0);
    /* A sliding window leaves rows whose first visited tile hides all their keys: NaN again. */
    a.mask.kind = FS_MASK_WINDOW;
    a.mask.window = 2;
    t.Bk = 4;
    t.pitfall = FS_PITFALL_MASKED_DOC_FIX;
    ck_assert_int_eq(fs_tiled(&a, &t, out, NULL, NULL, NULL), FS_OK);
    nans = 0;
    for (int i = 0; i < 24; i++) nans += isnan(out[i]);
    ck_assert_int_gt(nans, 0);
    t.pitfall = FS_PITFALL_NONE;
    ck_assert_int_eq(fs_reference(&a, ref, NULL, NULL), FS_OK);
    ck_assert_int_eq(fs_tiled(&a, &t, out, NULL, NULL, NULL), FS_OK);
    ck_assert(fs_max_rel_err(out, ref, 24) <= TOL);
}
END_TEST

/* Bad input gives a status, never a crash. */
START_TEST(test_bad_input)
{
    double Q[4] = {1, 2, 3, 4}, V[4] = {1, 0, 0, 1}, O[4];
    fs_attn a = fs_attn_make(2, 2, 2, 2);
    a.Q = Q;
    a.K = Q;
    a.V = V;
    fs_tiling t = fs_tiling_default();
    t.Bq = 0;
    ck_assert_int_eq(fs_tiled(&a, &t, O, NULL, NULL, NULL), FS_ERR_TILE);
    t = fs_tiling_default();
    Q[1] = NAN;
    ck_assert_int_eq(fs_tiled(&a, &t, O, NULL, NULL, NULL), FS_ERR_VALUE);
    Q[1] = 2;
    a.mask.kind = FS_MASK_WINDOW;
    a.mask.window = 0;
    ck_assert_int_eq(fs_tiled(&a, &t, O, NULL, NULL, NULL), FS_ERR_MASK);
    a.mask.kind = FS_MASK_NONE;
    a.n_q_heads = 3;
    a.n_kv_heads = 2;
    ck_assert_int_eq(fs_reference(&a, O, NULL, NULL), FS_ERR_SHAPE);
    a.n_q_heads = a.n_kv_heads = 1;
    fs_decoding dc = fs_decoding_default();
    dc.Bk = 0;
    ck_assert_int_eq(fs_decode(&a, &dc, O, NULL, NULL, NULL), FS_ERR_TILE);
    ck_assert_int_eq(fs_online_softmax(Q, 4, 0, O, NULL, NULL, NULL), FS_ERR_TILE);
    /* A trace with a bound refuses to grow past it. */
    fs_trace tr;
    fs_trace_init(&tr);
    tr.max_events = 3;
    ck_assert_int_eq(fs_tiled(&a, &t, O, NULL, NULL, &tr), FS_ERR_LIMIT);
    fs_trace_clear(&tr);
    fs_decoding dd = fs_decoding_default();
    ck_assert_int_eq(fs_decode(&a, &dd, O, NULL, NULL, &tr), FS_ERR_LIMIT);
    fs_trace_clear(&tr);
    ck_assert_int_eq(fs_online_softmax(Q, 4, 1, O, NULL, NULL, &tr), FS_ERR_LIMIT);
    fs_trace_free(&tr);
}
END_TEST

/* With no trace attached, a large problem runs (N = 4096 would take seconds in float64; 1024
 * keeps the suite quick while still far past any lesson) and matches the reference. */
START_TEST(test_large_untraced)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    int n = 1024, d = 16;
    double *Q = malloc(sizeof(double) * n * d), *K = malloc(sizeof(double) * n * d), *V = malloc(sizeof(double) * n * d);
    double *ref = malloc(sizeof(double) * n * d), *out = malloc(sizeof(double) * n * d);
    fs_rng_fill(&r, Q, (long)n * d, -1, 1);
    fs_rng_fill(&r, K, (long)n * d, -1, 1);
    fs_rng_fill(&r, V, (long)n * d, -1, 1);
    fs_attn a = fs_attn_make(n, n, d, d);
    a.Q = Q;
    a.K = K;
    a.V = V;
    a.mask.kind = FS_MASK_CAUSAL;
    ck_assert_int_eq(fs_reference(&a, ref, NULL, NULL), FS_OK);
    fs_tiling t = fs_tiling_default();
    ck_assert_int_eq(fs_tiled(&a, &t, out, NULL, NULL, NULL), FS_OK);
    FS_ASSERT_SEED(fs_max_rel_err(out, ref, (long)n * d) <= TOL, seed, "large causal");
    free(Q);
    free(K);
    free(V);
    free(ref);
    free(out);
}
END_TEST

/* fs_event_significant on rows: a rescale, and the step where a row's state first turns NaN (the
 * masked-row pitfall's point), not every NaN step after it nor an ordinary update */
START_TEST(test_significant_rows)
{
    fs_event e;
    memset(&e, 0, sizeof e);
    e.kind = FS_EV_ROW;
    e.l_old = 1, e.l_new = 2, e.m_old = 0.5, e.m_new = 0.5, e.alpha = 1;
    ck_assert(!fs_event_significant(&e));
    e.alpha = 0.5, e.m_new = 1;
    ck_assert(fs_event_significant(&e));
    e.alpha = NAN, e.l_new = NAN, e.m_new = 0.5;
    ck_assert(fs_event_significant(&e));
    e.l_old = NAN;
    ck_assert(!fs_event_significant(&e));
    e.l_old = 0, e.alpha = 0, e.l_new = 1, e.m_old = -INFINITY, e.m_new = NAN;
    ck_assert(fs_event_significant(&e));
}
END_TEST

Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_tiled_matches_reference, 0, 12);
    tcase_add_test(tc, test_trace_invariants);
    tcase_add_test(tc, test_significant_rows);
    tcase_add_test(tc, test_out_events_where_rows_finish);
    tcase_add_test(tc, test_single_tile);
    tcase_add_test(tc, test_extreme_scores);
    tcase_add_test(tc, test_fully_masked);
    tcase_add_test(tc, test_causal_16x16_classes);
    tcase_add_test(tc, test_classify_matches_elements);
    tcase_add_test(tc, test_doc000_tiled_example);
    tcase_add_test(tc, test_doc000_online_softmax);
    tcase_add_test(tc, test_doc000_online_query);
    tcase_add_test(tc, test_tree_mask);
    tcase_add_test(tc, test_decode_merge_order);
    tcase_add_test(tc, test_merge_associative);
    tcase_add_test(tc, test_pitfalls);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_large_untraced);
    suite_add_tcase(s, tc);
    return s;
}

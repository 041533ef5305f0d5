/* check_dropout.c: dropout on P, forward and backward, against an independent formulation.
 *
 * 1. Philox4x32-10 against Random123's published known answers (its kat_vectors file):
 *      counter 0, key 0                → 6627e8d5 e169c58d bc57ac4c 9b00dbd8
 *      counter and key all ffffffff    → 408f276d 41c83b0e a20bc7c6 6d5451fd
 *      counter 243f6a88 85a308d3 13198a2e 03707344, key a4093822 299f31d0 (the digits of π)
 *                                      → d16cfe09 94fdcceb 5001e420 24126ea1
 * 2. The mask: built here cell by cell from the Philox function and the mapping written in
 *    dropout.h (key = the seed's words, counter = (batch, head, row, column >> 2), word column & 3,
 *    dropped when the word < ⌈p · 2^32⌉), and compared with the engine's row function; the
 *    fraction dropped is p within 5 standard deviations.
 * 3. The tiled forward (both forms, both orders, ragged tiles, every mask, GQA, the soft-cap) and
 *    the tiled backward against the dense spec that takes that explicitly materialized mask
 *    (fs_dropout_reference, fs_dropout_backward_dense), to 1e-11, on problems drawn fresh each run.
 * 4. p = 0 with dropout on is bit for bit the run without dropout (outputs, gradients, traces).
 * 5. The forward's TILE events and the backward's BTILE events list the same dropped cells, and
 *    exactly the visible cells the mask drops.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backward.h"
#include "engine/dropout.h"
#include "engine/reference.h"
#include "engine/run.h"
#include "test_problem.h"
#include "test_util.h"

#define TOL 1e-11

START_TEST(test_philox_known_answers)
{
    static const struct { uint32_t ctr[4], key[2], out[4]; } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t k = 0; k < sizeof kat / sizeof kat[0]; k++) {
        uint32_t out[4];
        fs_philox4x32_10(kat[k].ctr, kat[k].key, out);
        for (int w = 0; w < 4; w++)
            ck_assert_msg(out[w] == kat[k].out[w], "vector %zu word %d: %08x, expected %08x", k, w, out[w],
                          kat[k].out[w]);
    }
}
END_TEST

START_TEST(test_threshold)
{
    ck_assert(fs_dropout_threshold(0) == 0);
    ck_assert(fs_dropout_threshold(0.5) == (uint64_t)1 << 31);
    ck_assert(fs_dropout_threshold(0x1p-32) == 1);
    ck_assert(fs_dropout_threshold(0x1p-33) == 1);          /* any p > 0 can drop */
    ck_assert(fs_dropout_threshold(0.25 + 0x1p-40) == ((uint64_t)1 << 30) + 1);
    ck_assert(fs_dropout_threshold(1 - 0x1p-53) == (uint64_t)1 << 32);
    ck_assert_int_eq(fs_dropout_check(0), FS_OK);
    ck_assert_int_eq(fs_dropout_check(0.999), FS_OK);
    ck_assert_int_eq(fs_dropout_check(1), FS_ERR_ARG);
    ck_assert_int_eq(fs_dropout_check(-0.1), FS_ERR_ARG);
    ck_assert_int_eq(fs_dropout_check(NAN), FS_ERR_ARG);
    ck_assert_double_eq(fs_dropout_keep_scale(0), 1.0);
    ck_assert_double_eq(fs_dropout_keep_scale(0.5), 2.0);
}
END_TEST

/* The documented mapping, written out here without the engine's row function. */
static bool doc_dropped(uint64_t seed, double p, uint32_t b, uint32_t h, uint32_t i, uint32_t j)
{
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, ctr[4] = {b, h, i, j / 4}, x[4];
    fs_philox4x32_10(ctr, key, x);
    return ldexp((double)x[j % 4], -32) < p;
}

/* Z (n_q_heads, n_q, n_kv), 1 where kept, from the documented mapping. */
static uint8_t *doc_keep_mask(const fs_attn *a, uint64_t seed, double p)
{
    size_t n = (size_t)a->n_q_heads * a->n_q * a->n_kv;
    uint8_t *Z = malloc(n);
    for (int32_t h = 0; h < a->n_q_heads; h++)
        for (int32_t i = 0; i < a->n_q; i++)
            for (int32_t j = 0; j < a->n_kv; j++)
                Z[((size_t)h * a->n_q + i) * a->n_kv + j] = !doc_dropped(seed, p, 0, (uint32_t)h, (uint32_t)i, (uint32_t)j);
    return Z;
}

START_TEST(test_mask_mapping)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int rep = 0; rep < 200; rep++) {
        fs_dropout dr = {true, fs_rng_uniform(&r, 0, 1), fs_rng_next(&r)};
        uint32_t b = (uint32_t)fs_rng_int(&r, 0, 3), h = (uint32_t)fs_rng_int(&r, 0, 40);
        uint32_t i = (uint32_t)fs_rng_int(&r, 0, 100000);
        int32_t c0 = fs_rng_int(&r, 0, 9000), n = fs_rng_int(&r, 0, 37);
        uint8_t z[40];
        fs_dropout_row(&dr, b, h, i, c0, n, z);
        for (int32_t j = 0; j < n; j++) {
            bool want = doc_dropped(dr.seed, dr.p, b, h, i, (uint32_t)(c0 + j));
            FS_ASSERT_SEED(z[j] == want && fs_dropout_dropped(&dr, b, h, i, (uint32_t)(c0 + j)) == want, seed,
                           "p %.6f row %u key %d: row function says %d, the mapping %d", dr.p, i, c0 + j, z[j], want);
        }
    }
    /* The fraction dropped: 2^18 cells, p drawn; 5 standard deviations of a binomial. */
    fs_dropout dr = {true, fs_rng_uniform(&r, 0.05, 0.95), fs_rng_next(&r)};
    long dropped = 0, cells = 0;
    uint8_t z[512];
    for (uint32_t i = 0; i < 512; i++) {
        fs_dropout_row(&dr, 0, 3, i, 0, 512, z);
        for (int j = 0; j < 512; j++) dropped += z[j];
        cells += 512;
    }
    double frac = (double)dropped / cells, sd = sqrt(dr.p * (1 - dr.p) / cells);
    FS_ASSERT_SEED(fabs(frac - dr.p) < 5 * sd, seed, "dropped %.5f of the cells for p = %.5f", frac, dr.p);
}
END_TEST

static void problem_random(fs_test_problem *p, fs_rng *r, int mask_kind)
{
    const fs_test_problem_spec spec = {.max_n_q = 11, .max_n_kv = 14, .max_d = 5, .max_d_v = 4,
                                       .max_offset = 4, .max_window = 5, .bits_visible = 0.5,
                                       .dO = true, .softcap = true, .random_scale = true};
    fs_test_problem_draw(p, r, mask_kind, &spec);
}

/* Is (i, j) among the n pairs (row, key, row, key, ...)? */
static bool listed(const double *pairs, int32_t n, int32_t i, int32_t j)
{
    for (int32_t k = 0; k < n; k++)
        if (pairs[2 * k] == i && pairs[2 * k + 1] == j) return true;
    return false;
}

/* Every dropped cell a trace lists (TILE or BTILE, kind `kind`), checked against Z: each listed
 * cell is visible and dropped, listed once, and the count equals the number of visible dropped
 * cells of head h. Returns how many were listed. */
static long check_listed(const fs_trace *tr, fs_event_kind kind, const fs_attn *a, const uint8_t *Z, uint64_t seed)
{
    long listed_n = 0;
    uint8_t *seen = calloc((size_t)a->n_q_heads * a->n_q * a->n_kv, 1);
    for (int64_t k = 0; k < tr->n; k++) {
        const fs_event *e = &tr->ev[k];
        if (e->kind != kind) continue;
        FS_ASSERT_SEED(e->drop >= 0 || e->n_drop == 0, seed, "a %s event without its dropped cells",
                       fs_event_kind_str(kind));
        const double *pr = fs_trace_at(tr, e->drop);
        for (int32_t q = 0; q < e->n_drop; q++) {
            int32_t i = (int32_t)pr[2 * q], j = (int32_t)pr[2 * q + 1];
            FS_ASSERT_SEED(i >= e->r0 && i < e->r1 && j >= e->c0 && j < e->c1, seed, "cell (%d, %d) outside its tile", i, j);
            size_t ij = ((size_t)e->head * a->n_q + i) * a->n_kv + j;
            FS_ASSERT_SEED(!Z[ij] && fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j) && !seen[ij], seed,
                           "head %d cell (%d, %d) listed but kept %d, visible %d, seen %d", e->head, i, j, Z[ij],
                           fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j), seen[ij]);
            seen[ij] = 1;
            listed_n++;
        }
    }
    long want = 0;
    for (int32_t h = 0; h < a->n_q_heads; h++)
        for (int32_t i = 0; i < a->n_q; i++)
            for (int32_t j = 0; j < a->n_kv; j++)
                want += !Z[((size_t)h * a->n_q + i) * a->n_kv + j] && fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j);
    FS_ASSERT_SEED(listed_n == want, seed, "%s events list %ld dropped cells, the mask drops %ld visible ones",
                   fs_event_kind_str(kind), listed_n, want);
    free(seen);
    return listed_n;
}

/* Forward and backward, tiled, against the dense spec with the mask materialized. */
START_TEST(test_dropout_matches_dense)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    int mask_kind = _i % FS_TEST_MASKS;
    for (int rep = 0; rep < 20; rep++) {
        fs_test_problem pb;
        problem_random(&pb, &r, mask_kind);
        const fs_attn *a = &pb.a;
        const long rows = (long)a->n_q_heads * a->n_q, keys = (long)a->n_kv_heads * a->n_kv;
        fs_dropout dr = {true, rep % 5 == 0 ? 0.0 : fs_rng_uniform(&r, 0, 0.9), fs_rng_next(&r)};
        uint8_t *Z = doc_keep_mask(a, dr.seed, dr.p);
        double *O_ref = malloc(sizeof(double) * rows * a->d_v), *O = malloc(sizeof(double) * rows * a->d_v);
        double *m = malloc(sizeof(double) * rows), *l = malloc(sizeof(double) * rows), *L = malloc(sizeof(double) * rows);
        double *gq[2], *gk[2], *gv[2];
        for (int k = 0; k < 2; k++) {
            gq[k] = malloc(sizeof(double) * rows * a->d);
            gk[k] = malloc(sizeof(double) * keys * a->d);
            gv[k] = malloc(sizeof(double) * keys * a->d_v);
        }
        ck_assert_int_eq(fs_dropout_reference(a, Z, dr.p, O_ref), FS_OK);
        ck_assert_int_eq(fs_dropout_backward_dense(a, Z, dr.p, pb.dO, gq[0], gk[0], gv[0]), FS_OK);
        for (int order = 0; order < 2; order++) {
            fs_tiling t = fs_tiling_default();
            t.Bq = fs_rng_int(&r, 1, 6);
            t.Bk = fs_rng_int(&r, 1, 6);
            t.order = order;
            t.form = (fs_form)fs_rng_int(&r, 0, 1);
            t.dropout = dr;
            fs_trace tf, tb;
            fs_trace_init(&tf);
            fs_trace_init(&tb);
            fs_status st = fs_tiled(a, &t, O, m, l, &tf);
            FS_ASSERT_SEED(st == FS_OK, seed, "forward: %s", fs_status_str(st));
            double eo = fs_max_rel_err(O, O_ref, rows * a->d_v);
            FS_ASSERT_SEED(eo <= TOL, seed, "forward: mask %d p %.4f form %d order %d Bq %d Bk %d heads %d:%d: O %.3g",
                           mask_kind, dr.p, t.form, order, t.Bq, t.Bk, a->n_q_heads, a->n_kv_heads, eo);
            fs_lse(m, l, rows, L);
            st = fs_backward(a, &t, O, L, pb.dO, gq[1], gk[1], gv[1], NULL, &tb);
            FS_ASSERT_SEED(st == FS_OK, seed, "backward: %s", fs_status_str(st));
            double eq = fs_max_rel_err(gq[1], gq[0], rows * a->d), ek = fs_max_rel_err(gk[1], gk[0], keys * a->d);
            double ev = fs_max_rel_err(gv[1], gv[0], keys * a->d_v);
            FS_ASSERT_SEED(eq <= TOL && ek <= TOL && ev <= TOL, seed,
                           "backward: mask %d p %.4f order %d Bq %d Bk %d heads %d:%d softcap %g: dQ %.3g dK %.3g dV %.3g",
                           mask_kind, dr.p, order, t.Bq, t.Bk, a->n_q_heads, a->n_kv_heads, a->softcap, eq, ek, ev);
            /* The same cells in both traces, and exactly the visible cells Z drops. */
            long nf = check_listed(&tf, FS_EV_TILE, a, Z, seed), nb = check_listed(&tb, FS_EV_BTILE, a, Z, seed);
            FS_ASSERT_SEED(nf == nb, seed, "forward lists %ld dropped cells, backward %ld", nf, nb);
            for (int64_t k = 0; k < tb.n; k++) {
                const fs_event *e = &tb.ev[k];
                if (e->kind != FS_EV_BTILE) continue;
                const double *pr = fs_trace_at(&tb, e->drop);
                for (int64_t f = 0; f < tf.n; f++) {
                    const fs_event *g = &tf.ev[f];
                    if (g->kind != FS_EV_TILE || g->head != e->head || g->qt != e->qt || g->kt != e->kt) continue;
                    FS_ASSERT_SEED(g->n_drop == e->n_drop, seed, "tile (%d, %d): %d dropped forward, %d backward",
                                   e->qt, e->kt, g->n_drop, e->n_drop);
                    for (int32_t q = 0; q < e->n_drop; q++)
                        FS_ASSERT_SEED(listed(fs_trace_at(&tf, g->drop), g->n_drop, (int32_t)pr[2 * q],
                                              (int32_t)pr[2 * q + 1]), seed, "backward drops a cell the forward kept");
                }
            }
            fs_trace_free(&tf);
            fs_trace_free(&tb);
        }
        for (int k = 0; k < 2; k++) {
            free(gq[k]);
            free(gk[k]);
            free(gv[k]);
        }
        free(Z);
        free(O_ref);
        free(O);
        free(m);
        free(l);
        free(L);
        fs_test_problem_free(&pb);
    }
}
END_TEST

/* The dense spec itself: with nothing dropped it is the plain reference and the plain dense
 * backward. */
START_TEST(test_dense_spec_without_drops)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int rep = 0; rep < 12; rep++) {
        fs_test_problem pb;
        problem_random(&pb, &r, rep % FS_TEST_MASKS);
        const fs_attn *a = &pb.a;
        const long rows = (long)a->n_q_heads * a->n_q, keys = (long)a->n_kv_heads * a->n_kv;
        uint8_t *Z = malloc((size_t)rows * a->n_kv);
        memset(Z, 1, (size_t)rows * a->n_kv);
        double *O0 = malloc(sizeof(double) * rows * a->d_v), *O1 = malloc(sizeof(double) * rows * a->d_v);
        double *m = malloc(sizeof(double) * rows), *l = malloc(sizeof(double) * rows);
        double *g[6];
        for (int k = 0; k < 6; k++) g[k] = malloc(sizeof(double) * (k % 3 == 0 ? rows : keys) * (k % 3 == 2 ? a->d_v : a->d));
        ck_assert_int_eq(fs_reference(a, O0, m, l), FS_OK);
        ck_assert_int_eq(fs_dropout_reference(a, Z, 0, O1), FS_OK);
        ck_assert_int_eq(fs_backward_dense(a, pb.dO, g[0], g[1], g[2]), FS_OK);
        ck_assert_int_eq(fs_dropout_backward_dense(a, Z, 0, pb.dO, g[3], g[4], g[5]), FS_OK);
        FS_ASSERT_SEED(fs_max_rel_err(O1, O0, rows * a->d_v) <= TOL, seed, "O");
        FS_ASSERT_SEED(fs_max_rel_err(g[3], g[0], rows * a->d) <= TOL && fs_max_rel_err(g[4], g[1], keys * a->d) <= TOL &&
                           fs_max_rel_err(g[5], g[2], keys * a->d_v) <= TOL, seed, "gradients");
        for (int k = 0; k < 6; k++) free(g[k]);
        free(Z);
        free(O0);
        free(O1);
        free(m);
        free(l);
        fs_test_problem_free(&pb);
    }
}
END_TEST

/* The numbers of two traces' ROW or BROW events, byte for byte. */
static bool same_rows(const fs_trace *x, const fs_trace *y)
{
    if (x->n != y->n) return false;
    for (int64_t k = 0; k < x->n; k++) {
        const fs_event *e = &x->ev[k], *f = &y->ev[k];
        if (e->kind != f->kind) return false;
        if (memcmp(&e->m_old, &f->m_old, sizeof(double) * 8)) return false;
        const int64_t offs[][2] = {{e->p_row, f->p_row}, {e->dp_row, f->dp_row}, {e->ds_row, f->ds_row}};
        for (int v = 0; v < 3; v++) {
            const double *a = fs_trace_at(x, offs[v][0]), *b = fs_trace_at(y, offs[v][1]);
            if (!a != !b || (a && memcmp(a, b, sizeof(double) * (size_t)e->n_s))) return false;
        }
        const double *a = fs_trace_at(x, e->o_new), *b = fs_trace_at(y, f->o_new);
        if (!a != !b || (a && memcmp(a, b, sizeof(double) * (size_t)e->n_o))) return false;
    }
    return true;
}

START_TEST(test_p_zero_is_bitwise_off)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    for (int rep = 0; rep < 10; rep++) {
        fs_test_problem pb;
        problem_random(&pb, &r, (rep + _i) % FS_TEST_MASKS);
        fs_result res[2];
        fs_trace tr[2];
        for (int on = 0; on < 2; on++) {
            fs_run run = fs_run_make(_i ? FS_ALGO_BACKWARD : FS_ALGO_TILED);
            run.attn = pb.a;
            run.dO = pb.dO;
            run.tiling.Bq = 2;
            run.tiling.Bk = 3;
            run.tiling.form = (fs_form)(rep % 2);
            run.tiling.dropout = (fs_dropout){on != 0, 0.0, 12345};
            fs_trace_init(&tr[on]);
            ck_assert_int_eq(fs_run_exec(&run, &res[on], &tr[on]), FS_OK);
        }
        const fs_attn *a = &pb.a;
        size_t rows = (size_t)a->n_q_heads * a->n_q, keys = (size_t)a->n_kv_heads * a->n_kv;
        FS_ASSERT_SEED(!memcmp(res[0].O, res[1].O, sizeof(double) * rows * a->d_v), seed, "O differs at p = 0");
        if (_i)
            FS_ASSERT_SEED(!memcmp(res[0].dQ, res[1].dQ, sizeof(double) * rows * a->d) &&
                               !memcmp(res[0].dK, res[1].dK, sizeof(double) * keys * a->d) &&
                               !memcmp(res[0].dV, res[1].dV, sizeof(double) * keys * a->d_v),
                           seed, "gradients differ at p = 0");
        FS_ASSERT_SEED(same_rows(&tr[0], &tr[1]), seed, "traces differ at p = 0");
        for (int on = 0; on < 2; on++) {
            fs_result_free(&res[on]);
            fs_trace_free(&tr[on]);
        }
        fs_test_problem_free(&pb);
    }
}
END_TEST

START_TEST(test_dropout_bad_input)
{
    fs_rng r = {fs_test_seed()};
    fs_test_problem pb;
    problem_random(&pb, &r, FS_TEST_MASK_NONE);
    const fs_attn *a = &pb.a;
    size_t rows = (size_t)a->n_q_heads * a->n_q;
    double *O = malloc(sizeof(double) * rows * a->d_v);
    fs_tiling t = fs_tiling_default();
    const double bad[] = {-0.25, 1.0, 1.5, NAN, INFINITY};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        t.dropout = (fs_dropout){true, bad[k], 1};
        ck_assert_int_eq(fs_tiled(a, &t, O, NULL, NULL, NULL), FS_ERR_ARG);
    }
    t.dropout = (fs_dropout){true, 0.5, 1};
    t.pitfall = FS_PITFALL_NO_RESCALE;
    ck_assert_int_eq(fs_tiled(a, &t, O, NULL, NULL, NULL), FS_ERR_ARG);
    free(O);
    fs_test_problem_free(&pb);
}
END_TEST

Suite *dropout_suite(void)
{
    Suite *s = suite_create("dropout");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_philox_known_answers);
    tcase_add_test(tc, test_threshold);
    tcase_add_test(tc, test_mask_mapping);
    tcase_add_loop_test(tc, test_dropout_matches_dense, 0, 12);
    tcase_add_test(tc, test_dense_spec_without_drops);
    tcase_add_loop_test(tc, test_p_zero_is_bitwise_off, 0, 2);
    tcase_add_test(tc, test_dropout_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

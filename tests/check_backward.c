/* check_backward.c: the backward pass against two independent answers.
 *
 * 1. The materializing backward (fs_backward_dense), which builds S, P, dP and dS whole and takes
 *    D from Σ_j P dP instead of from O: the tiled backward must agree to 1e-11 for every mask,
 *    both loop orders, ragged tiles, GQA and the soft-cap.
 * 2. Central finite differences of the forward (fs_reference): the loss is Σ dO ∘ O, and
 *    (loss(x + h) − loss(x − h)) / 2h must match each gradient element. With h = 1e-5 the error
 *    of the difference is O(h²) ≈ 1e-10 times the third derivative plus ~1e-16/h ≈ 1e-11 of
 *    rounding, so 1e-6 relative (max(1, |g|)) has wide margin and still catches any wrong term.
 * Random problems are drawn fresh each run (seed printed on failure; FS_SEED=... replays one).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backward.h"
#include "engine/reference.h"
#include "engine/run.h"
#include "test_problem.h"
#include "test_util.h"

#define TOL_DENSE 1e-11
#define TOL_FD    1e-6

static long nq_rows(const fs_attn *a) { return (long)a->n_q_heads * a->n_q; }
static long nkv_rows(const fs_attn *a) { return (long)a->n_kv_heads * a->n_kv; }

/* The backward's random problems (test_problem.h), with dO (n_q_heads, n_q, d_v): n_q ≤ max_n,
 * n_kv ≤ max_n + 3, d ≤ 5, d_v ≤ 4; one in four with a soft-cap, one in four with its own scale. */
static void problem_random(fs_test_problem *p, fs_rng *r, int mask_kind, int max_n)
{
    const fs_test_problem_spec spec = {.max_n_q = max_n, .max_n_kv = max_n + 3, .max_d = 5, .max_d_v = 4,
                                       .max_offset = 4, .max_window = 5, .bits_visible = 1.0 / 3,
                                       .dO = true, .softcap = true, .random_scale = true};
    fs_test_problem_draw(p, r, mask_kind, &spec);
}

/* What the backward reads from the forward, O (n_q_heads · n_q, d_v) and L = m + ln ℓ (n_q_heads
 * · n_q), by the tiled forward (any tiling gives the same to rounding), and room for the D
 * (n_q_heads · n_q) it writes. forward_free frees all three. */
typedef struct { double *O, *L, *D; } forward_out;

static forward_out forward(const fs_attn *a)
{
    long rows = nq_rows(a);
    forward_out f = {malloc(sizeof(double) * rows * a->d_v), malloc(sizeof(double) * rows),
                     malloc(sizeof(double) * rows)};
    double *m = malloc(sizeof(double) * rows), *l = malloc(sizeof(double) * rows);
    fs_tiling t = fs_tiling_default();
    t.Bq = 3;
    t.Bk = 2;
    ck_assert_int_eq(fs_tiled(a, &t, f.O, m, l, NULL), FS_OK);
    fs_lse(m, l, rows, f.L);
    free(m);
    free(l);
    return f;
}

static void forward_free(forward_out *f)
{
    free(f->O);
    free(f->L);
    free(f->D);
}

typedef struct { double *dQ, *dK, *dV; } grads;

static grads grads_alloc(const fs_attn *a)
{
    grads g = {malloc(sizeof(double) * nq_rows(a) * a->d), malloc(sizeof(double) * nkv_rows(a) * a->d),
               malloc(sizeof(double) * nkv_rows(a) * a->d_v)};
    return g;
}

static void grads_free(grads *g)
{
    free(g->dQ);
    free(g->dK);
    free(g->dV);
}

static bool all_finite(const double *x, long n)
{
    for (long i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

/* Tiled (both orders, random ragged tiles, traced or not) against the dense backward. */
START_TEST(test_backward_matches_dense)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    int mask_kind = _i % FS_TEST_MASKS;
    for (int rep = 0; rep < 30; rep++) {
        fs_test_problem p;
        problem_random(&p, &r, mask_kind, 11);
        const fs_attn *a = &p.a;
        long rows = nq_rows(a);
        forward_out f = forward(a);
        grads ref = grads_alloc(a), got = grads_alloc(a);
        ck_assert_int_eq(fs_backward_dense(a, p.dO, ref.dQ, ref.dK, ref.dV), FS_OK);
        for (int order = 0; order < 2; order++) {
            fs_tiling t = fs_tiling_default();
            t.Bq = fs_rng_int(&r, 1, 6);
            t.Bk = fs_rng_int(&r, 1, 6);
            t.order = order;
            fs_trace tr;
            fs_trace_init(&tr);
            fs_status st = fs_backward(a, &t, f.O, f.L, p.dO, got.dQ, got.dK, got.dV, f.D, rep % 2 ? &tr : NULL);
            FS_ASSERT_SEED(st == FS_OK, seed, "status %s", fs_status_str(st));
            double eq = fs_max_rel_err(got.dQ, ref.dQ, rows * a->d);
            double ek = fs_max_rel_err(got.dK, ref.dK, nkv_rows(a) * a->d);
            double ev = fs_max_rel_err(got.dV, ref.dV, nkv_rows(a) * a->d_v);
            FS_ASSERT_SEED(eq <= TOL_DENSE && ek <= TOL_DENSE && ev <= TOL_DENSE, seed,
                           "mask %d order %d Bq %d Bk %d heads %d:%d softcap %g: dQ %.3g dK %.3g dV %.3g",
                           mask_kind, order, t.Bq, t.Bk, a->n_q_heads, a->n_kv_heads, a->softcap, eq, ek, ev);
            for (long i = 0; i < rows; i++) {
                if (f.L[i] > -INFINITY) continue;
                /* A row that sees no key: L = −∞, D = 0, and a zero dQ row. */
                FS_ASSERT_SEED(f.D[i] == 0, seed, "row %ld sees nothing but D = %g", i, f.D[i]);
                for (int c = 0; c < a->d; c++)
                    FS_ASSERT_SEED(got.dQ[i * a->d + c] == 0, seed, "row %ld sees nothing but dQ != 0", i);
            }
            fs_trace_free(&tr);
        }
        grads_free(&ref);
        grads_free(&got);
        forward_free(&f);
        fs_test_problem_free(&p);
    }
}
END_TEST

/* loss = Σ dO ∘ O with O from the reference forward. */
static double loss(const fs_attn *a, const double *dO, double *O)
{
    ck_assert_int_eq(fs_reference(a, O, NULL, NULL), FS_OK);
    double s = 0;
    for (long k = 0; k < nq_rows(a) * a->d_v; k++) s += dO[k] * O[k];
    return s;
}

/* Central differences of the forward, element by element of Q, K and V. */
static void check_fd(fs_test_problem *p, const grads *g, uint64_t seed, const char *what)
{
    double *O = malloc(sizeof(double) * nq_rows(&p->a) * p->a.d_v);
    const double h = 1e-5;
    struct { double *x; const double *gx; long n; const char *name; } t[] = {
        {p->Q, g->dQ, nq_rows(&p->a) * p->a.d, "dQ"},
        {p->K, g->dK, nkv_rows(&p->a) * p->a.d, "dK"},
        {p->V, g->dV, nkv_rows(&p->a) * p->a.d_v, "dV"},
    };
    for (int k = 0; k < 3; k++)
        for (long i = 0; i < t[k].n; i++) {
            double x = t[k].x[i];
            t[k].x[i] = x + h;
            double up = loss(&p->a, p->dO, O);
            t[k].x[i] = x - h;
            double down = loss(&p->a, p->dO, O);
            t[k].x[i] = x;
            double fd = (up - down) / (2 * h);
            double err = fabs(fd - t[k].gx[i]) / fmax(1, fabs(fd));
            FS_ASSERT_SEED(err <= TOL_FD, seed, "%s: %s[%ld] = %.12g but the finite difference is %.12g",
                           what, t[k].name, i, t[k].gx[i], fd);
        }
    free(O);
}

START_TEST(test_backward_finite_differences)
{
    uint64_t seed = fs_test_seed() + 100 + (uint64_t)_i;
    fs_rng r = {seed};
    int mask_kind = _i % FS_TEST_MASKS;
    for (int rep = 0; rep < 8; rep++) {
        fs_test_problem p;
        problem_random(&p, &r, mask_kind, 6);
        const fs_attn *a = &p.a;
        forward_out f = forward(a);
        grads dense = grads_alloc(a), tiled = grads_alloc(a);
        ck_assert_int_eq(fs_backward_dense(a, p.dO, dense.dQ, dense.dK, dense.dV), FS_OK);
        fs_tiling t = fs_tiling_default();
        t.Bq = fs_rng_int(&r, 1, 4);
        t.Bk = fs_rng_int(&r, 1, 4);
        t.order = rep % 2;
        ck_assert_int_eq(fs_backward(a, &t, f.O, f.L, p.dO, tiled.dQ, tiled.dK, tiled.dV, NULL, NULL), FS_OK);
        check_fd(&p, &dense, seed, "dense");
        check_fd(&p, &tiled, seed, rep % 2 ? "tiled kv-outer" : "tiled q-outer");
        grads_free(&dense);
        grads_free(&tiled);
        forward_free(&f);
        fs_test_problem_free(&p);
    }
}
END_TEST

/* Rows that see nothing, on purpose: zero gradients, finite everywhere, no NaN; a key no row
 * sees has zero dK and dV. */
START_TEST(test_backward_masked_rows)
{
    uint64_t seed = fs_test_seed() + 200;
    fs_rng r = {seed};
    for (int rep = 0; rep < 40; rep++) {
        fs_test_problem p;
        problem_random(&p, &r, FS_TEST_MASK_NONE, 8);
        fs_attn *a = &p.a;
        /* Causal with a negative offset: the first −offset rows see no key at all. */
        a->mask.kind = FS_MASK_CAUSAL;
        a->mask.has_offset = true;
        a->mask.offset = -fs_rng_int(&r, 1, a->n_q);
        long rows = nq_rows(a);
        forward_out f = forward(a);
        grads g = grads_alloc(a);
        fs_tiling t = fs_tiling_default();
        t.Bq = fs_rng_int(&r, 1, 4);
        t.Bk = fs_rng_int(&r, 1, 4);
        t.order = rep % 2;
        fs_trace tr;
        fs_trace_init(&tr);
        ck_assert_int_eq(fs_backward(a, &t, f.O, f.L, p.dO, g.dQ, g.dK, g.dV, f.D, &tr), FS_OK);
        FS_ASSERT_SEED(all_finite(g.dQ, rows * a->d) && all_finite(g.dK, nkv_rows(a) * a->d) &&
                           all_finite(g.dV, nkv_rows(a) * a->d_v) && all_finite(f.D, rows),
                       seed, "a gradient is not finite");
        int blind = -a->mask.offset;
        for (int h = 0; h < a->n_q_heads; h++)
            for (int i = 0; i < a->n_q && i < blind; i++) {
                long ri = (long)h * a->n_q + i;
                FS_ASSERT_SEED(f.L[ri] == -INFINITY, seed, "row %d sees nothing but L = %g", i, f.L[ri]);
                for (int c = 0; c < a->d; c++) FS_ASSERT_SEED(g.dQ[ri * a->d + c] == 0, seed, "dQ row %d not 0", i);
            }
        /* Keys past the last visible position (n_q − 1 + offset) are seen by nobody. */
        for (int kv = 0; kv < a->n_kv_heads; kv++)
            for (int j = a->n_q + a->mask.offset > 0 ? a->n_q + a->mask.offset : 0; j < a->n_kv; j++) {
                long rj = (long)kv * a->n_kv + j;
                for (int c = 0; c < a->d; c++) FS_ASSERT_SEED(g.dK[rj * a->d + c] == 0, seed, "dK of unseen key %d", j);
                for (int c = 0; c < a->d_v; c++) FS_ASSERT_SEED(g.dV[rj * a->d_v + c] == 0, seed, "dV of unseen key %d", j);
            }
        for (int64_t k = 0; k < tr.n; k++) {
            const fs_event *e = &tr.ev[k];
            const double *v[] = {fs_trace_at(&tr, e->p_row), fs_trace_at(&tr, e->dp_row), fs_trace_at(&tr, e->ds_row)};
            for (int q = 0; q < 3; q++)
                FS_ASSERT_SEED(!v[q] || all_finite(v[q], e->n_s), seed, "a NaN or inf in the trace at step %d", e->step);
        }
        fs_trace_free(&tr);
        grads_free(&g);
        forward_free(&f);
        fs_test_problem_free(&p);
    }
}
END_TEST

static bool vec_eq(const double *a, const double *b, int n, double tol)
{
    for (int i = 0; i < n; i++)
        if (fabs(a[i] - b[i]) > tol * fmax(1, fabs(b[i]))) return false;
    return true;
}

/* What the trace promises: LSE and DELTA rows first; one BTILE or BSKIP per pair in loop order,
 * classes as the mask says; after a BTILE its rows, then its keys; old + contribution = new;
 * P = exp(S − L), 0 where masked; dS = P ∘ (dP − D); the contributions add up to the GRAD rows;
 * the order finishes what it promises (kv-outer: a KV tile's dK, dV rows are final after its
 * last visit; q-outer: a Q tile's dQ rows). */
START_TEST(test_backward_trace_invariants)
{
    uint64_t seed = fs_test_seed() + 300;
    fs_rng r = {seed};
    for (int rep = 0; rep < 48; rep++) {
        fs_test_problem p;
        problem_random(&p, &r, rep % FS_TEST_MASKS, 9);
        const fs_attn *a = &p.a;
        long rows = nq_rows(a), keys = nkv_rows(a);
        const int d = a->d, dv = a->d_v;
        forward_out f = forward(a);
        grads g = grads_alloc(a);
        fs_tiling t = fs_tiling_default();
        t.Bq = fs_rng_int(&r, 1, 5);
        t.Bk = fs_rng_int(&r, 1, 5);
        t.order = rep % 2;
        fs_trace tr;
        fs_trace_init(&tr);
        ck_assert_int_eq(fs_backward(a, &t, f.O, f.L, p.dO, g.dQ, g.dK, g.dV, f.D, &tr), FS_OK);
        const int nqt = (a->n_q + t.Bq - 1) / t.Bq, nkt = (a->n_kv + t.Bk - 1) / t.Bk;
        const int grp = a->n_q_heads / a->n_kv_heads;
        int64_t k = 0;
        for (long i = 0; i < rows; i++, k++) {
            FS_ASSERT_SEED(tr.ev[k].kind == FS_EV_LSE && tr.ev[k].x == f.L[i], seed, "LSE row %ld", i);
            FS_ASSERT_SEED(tr.ev[k].head * a->n_q + tr.ev[k].row == i, seed, "LSE order");
        }
        for (long i = 0; i < rows; i++, k++) {
            const fs_event *e = &tr.ev[k];
            FS_ASSERT_SEED(e->kind == FS_EV_DELTA && e->x == f.D[i], seed, "DELTA row %ld", i);
            const double *dout = fs_trace_at(&tr, e->o_blk), *o = fs_trace_at(&tr, e->o_new);
            double s = 0;
            for (int c = 0; c < dv; c++) s += dout[c] * o[c];
            FS_ASSERT_SEED(fabs(s - e->x) <= 1e-13 * fmax(1, fabs(s)), seed, "D is not rowsum(dO o O)");
        }
        /* Accumulate the contributions independently. */
        double *sq = calloc((size_t)rows * d, sizeof(double)), *sk = calloc((size_t)keys * d, sizeof(double));
        double *sv = calloc((size_t)keys * dv, sizeof(double));
        int pair = 0;
        for (int x = 0; x < (t.order ? a->n_kv_heads * nkt * grp * nqt : a->n_q_heads * nqt * nkt); x++, pair++) {
            int h, qt, kt;
            if (t.order == FS_ORDER_KV_OUTER) {
                qt = x % nqt;
                h = (x / nqt) % grp;
                kt = (x / nqt / grp) % nkt;
                h += (x / nqt / grp / nkt) * grp;
            } else {
                kt = x % nkt;
                qt = (x / nkt) % nqt;
                h = x / nkt / nqt;
            }
            const fs_event *e = &tr.ev[k++];
            FS_ASSERT_SEED((e->kind == FS_EV_BTILE || e->kind == FS_EV_BSKIP) && e->head == h && e->qt == qt && e->kt == kt,
                           seed, "pair %d: expected (h %d, Q %d, KV %d) in loop order, got %s (h %d, Q %d, KV %d)",
                           pair, h, qt, kt, fs_event_kind_str(e->kind), e->head, e->qt, e->kt);
            fs_tile_class cls = fs_mask_classify(&a->mask, a->n_q, a->n_kv, e->r0, e->r1, e->c0, e->c1, NULL);
            FS_ASSERT_SEED(cls == e->cls && (cls == FS_TILE_SKIPPED) == (e->kind == FS_EV_BSKIP), seed, "tile class");
            if (e->kind == FS_EV_BSKIP) continue;
            const int nc = e->c1 - e->c0, kvh = e->kv_head;
            for (int i = e->r0; i < e->r1; i++) {
                const fs_event *b = &tr.ev[k++];
                FS_ASSERT_SEED(b->kind == FS_EV_BROW && b->row == i && b->n_s == nc, seed, "BROW %d after its tile", i);
                long ri = (long)h * a->n_q + i;
                const double *S = fs_trace_at(&tr, b->s_row), *P = fs_trace_at(&tr, b->p_row);
                const double *dP = fs_trace_at(&tr, b->dp_row), *dS = fs_trace_at(&tr, b->ds_row);
                for (int j = 0; j < nc; j++) {
                    bool vis = fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, e->c0 + j);
                    FS_ASSERT_SEED(vis == (S[j] > -INFINITY), seed, "S masked where the mask says");
                    double pw = vis && f.L[ri] > -INFINITY ? exp(S[j] - f.L[ri]) : 0;
                    FS_ASSERT_SEED(P[j] == pw && P[j] >= 0 && P[j] <= 1 + 1e-12, seed, "P = exp(S - L)");
                    FS_ASSERT_SEED(dS[j] == (P[j] == 0 ? 0 : P[j] * (dP[j] - f.D[ri])), seed, "dS = P (dP - D)");
                }
                const double *qo = fs_trace_at(&tr, b->o_old), *qb = fs_trace_at(&tr, b->o_blk);
                const double *qn = fs_trace_at(&tr, b->o_new);
                for (int c = 0; c < d; c++) {
                    FS_ASSERT_SEED(qo[c] + qb[c] == qn[c], seed, "dQ old + contribution != new");
                    FS_ASSERT_SEED(qo[c] == sq[ri * d + c], seed, "dQ old is not the running sum");
                    sq[ri * d + c] += qb[c];
                }
            }
            for (int j = e->c0; j < e->c1; j++) {
                const fs_event *b = &tr.ev[k++];
                FS_ASSERT_SEED(b->kind == FS_EV_BKEY && b->row == j, seed, "BKEY %d after the rows", j);
                long rj = (long)kvh * a->n_kv + j;
                const double *ko = fs_trace_at(&tr, b->o_old), *kb = fs_trace_at(&tr, b->o_blk),
                             *kn = fs_trace_at(&tr, b->o_new), *vo = fs_trace_at(&tr, b->g_old),
                             *vb = fs_trace_at(&tr, b->g_blk), *vn = fs_trace_at(&tr, b->g_new);
                for (int c = 0; c < d; c++) {
                    FS_ASSERT_SEED(ko[c] + kb[c] == kn[c] && ko[c] == sk[rj * d + c], seed, "dK running sum");
                    sk[rj * d + c] += kb[c];
                }
                for (int c = 0; c < dv; c++) {
                    FS_ASSERT_SEED(vo[c] + vb[c] == vn[c] && vo[c] == sv[rj * dv + c], seed, "dV running sum");
                    sv[rj * dv + c] += vb[c];
                }
            }
            /* The order's promise: the last visit of a tile finishes its rows. */
            if (t.order == FS_ORDER_KV_OUTER && h % grp == grp - 1 && qt == nqt - 1) {
                for (int j = e->c0; j < e->c1; j++) {
                    long rj = (long)kvh * a->n_kv + j;
                    FS_ASSERT_SEED(vec_eq(sk + rj * d, g.dK + rj * d, d, 0) && vec_eq(sv + rj * dv, g.dV + rj * dv, dv, 0),
                                   seed, "kv-outer: key %d not final after its KV tile", j);
                }
            }
            if (t.order == FS_ORDER_Q_OUTER && kt == nkt - 1)
                for (int i = e->r0; i < e->r1; i++) {
                    long ri = (long)h * a->n_q + i;
                    FS_ASSERT_SEED(vec_eq(sq + ri * d, g.dQ + ri * d, d, 0), seed, "q-outer: row %d not final", i);
                }
        }
        int want[] = {FS_GRAD_DQ, FS_GRAD_DK, FS_GRAD_DV};
        long nrows[] = {rows, keys, keys};
        const double *gv[] = {g.dQ, g.dK, g.dV};
        int width[] = {d, d, dv};
        for (int q = 0; q < 3; q++)
            for (long i = 0; i < nrows[q]; i++) {
                const fs_event *e = &tr.ev[k++];
                FS_ASSERT_SEED(e->kind == FS_EV_GRAD && e->tensor == want[q] && e->n_o == width[q], seed, "GRAD order");
                FS_ASSERT_SEED(vec_eq(fs_trace_at(&tr, e->o_new), gv[q] + i * width[q], width[q], 0), seed, "GRAD row");
            }
        FS_ASSERT_SEED(k == tr.n, seed, "events after the gradients");
        FS_ASSERT_SEED(vec_eq(sq, g.dQ, (int)(rows * d), 0) && vec_eq(sk, g.dK, (int)(keys * d), 0) &&
                           vec_eq(sv, g.dV, (int)(keys * dv), 0),
                       seed, "contributions do not add up to the gradients");
        free(sq);
        free(sk);
        free(sv);
        fs_trace_free(&tr);
        grads_free(&g);
        forward_free(&f);
        fs_test_problem_free(&p);
    }
}
END_TEST

/* The forward keeps L = m + ln ℓ for every attention algorithm, equal to log Σ exp(s) over the
 * visible scores, −∞ for a row that sees nothing. */
START_TEST(test_forward_keeps_lse)
{
    uint64_t seed = fs_test_seed() + 400;
    fs_rng r = {seed};
    for (int rep = 0; rep < 24; rep++) {
        fs_test_problem p;
        problem_random(&p, &r, rep % FS_TEST_MASKS, 9);
        fs_algo algos[] = {FS_ALGO_REFERENCE, FS_ALGO_TILED, FS_ALGO_DECODE, FS_ALGO_BACKWARD};
        for (int k = 0; k < 4; k++) {
            fs_run run = fs_run_make(algos[k]);
            run.attn = p.a;
            run.dO = p.dO;
            fs_result res;
            ck_assert_int_eq(fs_run_exec(&run, &res, NULL), FS_OK);
            for (int h = 0; h < p.a.n_q_heads; h++)
                for (int i = 0; i < p.a.n_q; i++) {
                    double mx = -INFINITY, sum = 0;
                    for (int j = 0; j < p.a.n_kv; j++)
                        if (fs_mask_visible(&p.a.mask, p.a.n_q, p.a.n_kv, i, j)) mx = fmax(mx, fs_attn_score(&p.a, h, i, j));
                    for (int j = 0; j < p.a.n_kv; j++)
                        if (fs_mask_visible(&p.a.mask, p.a.n_q, p.a.n_kv, i, j)) sum += exp(fs_attn_score(&p.a, h, i, j) - mx);
                    double want = sum > 0 ? mx + log(sum) : -INFINITY, got = res.L[h * p.a.n_q + i];
                    FS_ASSERT_SEED(got == want || fabs(got - want) <= 1e-12 * fmax(1, fabs(want)), seed,
                                   "%s: L of row %d is %.17g, not %.17g", fs_algo_str(algos[k]), i, got, want);
                }
            if (algos[k] == FS_ALGO_BACKWARD)
                FS_ASSERT_SEED(res.dQ && res.dK && res.dV && res.D, seed, "backward run without gradients");
            fs_result_free(&res);
        }
        fs_test_problem_free(&p);
    }
}
END_TEST

/* Without dO the run uses dO = 1: the gradient of sum(O). */
START_TEST(test_backward_default_do)
{
    uint64_t seed = fs_test_seed() + 500;
    fs_rng r = {seed};
    fs_test_problem p;
    problem_random(&p, &r, FS_TEST_MASK_CAUSAL, 7);
    long rows = nq_rows(&p.a);
    for (long k = 0; k < rows * p.a.d_v; k++) p.dO[k] = 1;
    grads ref = grads_alloc(&p.a);
    ck_assert_int_eq(fs_backward_dense(&p.a, p.dO, ref.dQ, ref.dK, ref.dV), FS_OK);
    fs_run run = fs_run_make(FS_ALGO_BACKWARD);
    run.attn = p.a;
    fs_result res;
    ck_assert_int_eq(fs_run_exec(&run, &res, NULL), FS_OK);
    FS_ASSERT_SEED(fs_max_rel_err(res.dQ, ref.dQ, rows * p.a.d) <= TOL_DENSE &&
                       fs_max_rel_err(res.dV, ref.dV, nkv_rows(&p.a) * p.a.d_v) <= TOL_DENSE,
                   seed, "dO = 1 by default");
    fs_result_free(&res);
    grads_free(&ref);
    fs_test_problem_free(&p);
}
END_TEST

/* Refusals: given scores (no dQ, dK), a pitfall, tiles below 1. */
START_TEST(test_backward_bad_input)
{
    double Q[2] = {1, 2}, K[2] = {3, 4}, V[2] = {1, 0}, S[1] = {0.5}, O[2], L[1] = {0}, dO[2] = {1, 1};
    double dQ[2], dK[2], dV[2];
    fs_attn a = fs_attn_make(1, 1, 2, 2);
    a.Q = Q;
    a.K = K;
    a.V = V;
    fs_tiling t = fs_tiling_default();
    ck_assert_int_eq(fs_tiled(&a, &t, O, NULL, NULL, NULL), FS_OK);
    t.Bq = 0;
    ck_assert_int_eq(fs_backward(&a, &t, O, L, dO, dQ, dK, dV, NULL, NULL), FS_ERR_TILE);
    t.Bq = 1;
    t.pitfall = FS_PITFALL_NO_RESCALE;
    ck_assert_int_eq(fs_backward(&a, &t, O, L, dO, dQ, dK, dV, NULL, NULL), FS_ERR_ARG);
    t.pitfall = FS_PITFALL_NONE;
    fs_attn s = a;
    s.Q = s.K = NULL;
    s.S = S;
    s.d = 0;
    ck_assert_int_eq(fs_backward(&s, &t, O, L, dO, dQ, dK, dV, NULL, NULL), FS_ERR_ARG);
    ck_assert_int_eq(fs_backward_dense(&s, dO, dQ, dK, dV), FS_ERR_ARG);
    ck_assert_int_eq(fs_backward(&a, &t, O, L, dO, dQ, dK, dV, NULL, NULL), FS_OK);
}
END_TEST

Suite *backward_suite(void)
{
    Suite *s = suite_create("backward");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_backward_matches_dense, 0, 12);
    tcase_add_loop_test(tc, test_backward_finite_differences, 0, 6);
    tcase_add_test(tc, test_backward_masked_rows);
    tcase_add_test(tc, test_backward_trace_invariants);
    tcase_add_test(tc, test_forward_keeps_lse);
    tcase_add_test(tc, test_backward_default_do);
    tcase_add_test(tc, test_backward_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

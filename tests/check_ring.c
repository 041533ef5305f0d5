/* check_ring.c: ring attention (ring.h) against the float64 reference and the single-device runs.
 *
 * Random problems are drawn fresh each run (seed printed on failure; FS_SEED=... replays one):
 * every sharding, causal and not, P in {1, 2, 3, 4, 8}, sequence lengths that are not multiples
 * of P or 2P, GQA, ragged tiles, both forms, given scores (forward) as well as Q and K.
 *
 * Tolerances: the forward agrees with fs_reference and fs_tiled to 1e-12 relative (max(1, |x|)):
 * the ring regroups sums of at most a few dozen terms of size ≤ 1 (a merge is one more product
 * and sum per row), each exact to 2⁻⁵³ ≈ 1.1e-16, so the error stays far below 1e-12 and a wrong
 * α, β or a missing shard is off by more than 1e-3. The backward agrees with fs_backward to
 * 1e-11 (its sums are the single device's regrouped over shards; check_backward.c uses the same).
 * Where ring.h promises bit-for-bit equality with fs_tiled, the test compares with memcmp.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backward.h"
#include "engine/reference.h"
#include "engine/ring.h"
#include "engine/tiled.h"
#include "test_util.h"

#define TOL     1e-12
#define TOL_BWD 1e-11

static const int32_t devices[] = {1, 2, 3, 4, 8};
#define N_DEVICES 5

/* A random self-attention problem of n positions: Q (hq, n, d), K, V (hkv, n, ·) in [−1, 1]. */
typedef struct {
    fs_attn a;
    double *Q, *K, *V, *dO;
} problem;

static void draw(problem *p, fs_rng *r, int32_t n, bool causal)
{
    const int32_t hkv = fs_rng_int(r, 1, 2), hq = hkv * fs_rng_int(r, 1, 2), d = fs_rng_int(r, 1, 4),
                  d_v = fs_rng_int(r, 1, 4);
    p->a = fs_attn_make(n, n, d, d_v);
    p->a.n_q_heads = hq;
    p->a.n_kv_heads = hkv;
    p->Q = malloc(sizeof(double) * (size_t)hq * n * d);
    p->K = malloc(sizeof(double) * (size_t)hkv * n * d);
    p->V = malloc(sizeof(double) * (size_t)hkv * n * d_v);
    p->dO = malloc(sizeof(double) * (size_t)hq * n * d_v);
    fs_rng_fill(r, p->Q, (long)hq * n * d, -1.5, 1.5);
    fs_rng_fill(r, p->K, (long)hkv * n * d, -1.5, 1.5);
    fs_rng_fill(r, p->V, (long)hkv * n * d_v, -1, 1);
    fs_rng_fill(r, p->dO, (long)hq * n * d_v, -1, 1);
    p->a.Q = p->Q;
    p->a.K = p->K;
    p->a.V = p->V;
    if (causal) p->a.mask.kind = FS_MASK_CAUSAL;
}

static void problem_free(problem *p)
{
    free(p->Q);
    free(p->K);
    free(p->V);
    free(p->dO);
}

/* Loop index i → P, sharding, causal; n drawn from the least the sharding allows to 11 more. */
static fs_ring ring_of(int i, fs_rng *r, bool *causal, int32_t *n)
{
    fs_ring g = fs_ring_default();
    g.P = devices[i % N_DEVICES];
    g.sharding = (fs_sharding)(i / N_DEVICES % FS_SHARD_COUNT);
    *causal = i / (N_DEVICES * FS_SHARD_COUNT) % 2 == 0;
    g.tiling.Bq = fs_rng_int(r, 1, 4);
    g.tiling.Bk = fs_rng_int(r, 1, 4);
    g.tiling.form = fs_rng_int(r, 0, 1) ? FS_FORM_UNNORMALIZED : FS_FORM_NORMALIZED;
    g.tiling.order = fs_rng_int(r, 0, 1) ? FS_ORDER_KV_OUTER : FS_ORDER_Q_OUTER;
    *n = (g.sharding == FS_SHARD_ZIGZAG ? 2 * g.P : g.P) + fs_rng_int(r, 0, 11);
    return g;
}

#define N_CASES (N_DEVICES * FS_SHARD_COUNT * 2)

START_TEST(test_ring_forward_matches_reference)
{
    const uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    for (int rep = 0; rep < 4; rep++) {
        bool causal;
        int32_t n;
        fs_ring g = ring_of(_i, &r, &causal, &n);
        problem p;
        draw(&p, &r, n, causal);
        double *S = NULL;
        if (rep == 3) {   /* given scores instead of Q and K */
            S = malloc(sizeof(double) * (size_t)p.a.n_q_heads * n * n);
            fs_rng_fill(&r, S, (long)p.a.n_q_heads * n * n, -3, 3);
            p.a.S = S;
            p.a.Q = p.a.K = NULL;
            p.a.scale = 1;
        }
        const size_t rows = (size_t)p.a.n_q_heads * n, on = rows * (size_t)p.a.d_v;
        double *O = malloc(sizeof(double) * on), *m = malloc(sizeof(double) * rows), *l = malloc(sizeof(double) * rows);
        double *Or = malloc(sizeof(double) * on), *mr = malloc(sizeof(double) * rows), *lr = malloc(sizeof(double) * rows);
        double *Ot = malloc(sizeof(double) * on), *mt = malloc(sizeof(double) * rows), *lt = malloc(sizeof(double) * rows);
        FS_ASSERT_SEED(fs_ring_forward(&p.a, &g, O, m, l, NULL) == FS_OK, seed, "ring forward failed");
        ck_assert_int_eq(fs_reference(&p.a, Or, mr, lr), FS_OK);
        ck_assert_int_eq(fs_tiled(&p.a, &g.tiling, Ot, mt, lt, NULL), FS_OK);
        FS_ASSERT_SEED(fs_max_rel_err(O, Or, (long)on) <= TOL, seed,
                       "P=%d %s %s n=%d Bq=%d Bk=%d: O differs from the reference by %g", g.P,
                       fs_sharding_str(g.sharding), causal ? "causal" : "none", n, g.tiling.Bq, g.tiling.Bk,
                       fs_max_rel_err(O, Or, (long)on));
        FS_ASSERT_SEED(fs_max_rel_err(O, Ot, (long)on) <= TOL, seed, "P=%d %s: O differs from fs_tiled", g.P,
                       fs_sharding_str(g.sharding));
        for (size_t k = 0; k < rows; k++) {
            /* m is a max of the same scores: exact. ℓ in the units of m: to rounding. */
            FS_ASSERT_SEED(m[k] == mt[k], seed, "P=%d %s: m of row %zu is %.17g, fs_tiled's %.17g", g.P,
                           fs_sharding_str(g.sharding), k, m[k], mt[k]);
            FS_ASSERT_SEED(fabs(l[k] - lt[k]) <= TOL * fmax(1, lt[k]), seed, "P=%d %s: l of row %zu", g.P,
                           fs_sharding_str(g.sharding), k);
        }
        free(O), free(m), free(l), free(Or), free(mr), free(lr), free(Ot), free(mt), free(lt), free(S);
        problem_free(&p);
    }
}
END_TEST

/* The rows ring.h promises bit for bit: every row with P = 1; under causal the first block's. */
static bool first_block_row(const fs_ring *g, int32_t n, int32_t pos)
{
    if (g->P == 1) return true;
    switch (g->sharding) {
    case FS_SHARD_CONTIGUOUS: return pos < (int32_t)((int64_t)n / g->P);
    case FS_SHARD_ZIGZAG: return pos < (int32_t)((int64_t)n / (2 * g->P));
    default: return pos == 0;
    }
}

START_TEST(test_ring_forward_bitwise)
{
    const uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    for (int rep = 0; rep < 4; rep++) {
        bool causal;
        int32_t n;
        fs_ring g = ring_of(_i, &r, &causal, &n);
        if (!causal && g.P > 1) continue;   /* without a mask every row meets every shard */
        problem p;
        draw(&p, &r, n, causal);
        const size_t rows = (size_t)p.a.n_q_heads * n, d_v = (size_t)p.a.d_v;
        double *O = malloc(sizeof(double) * rows * d_v), *m = malloc(sizeof(double) * rows), *l = malloc(sizeof(double) * rows);
        double *Ot = malloc(sizeof(double) * rows * d_v), *mt = malloc(sizeof(double) * rows), *lt = malloc(sizeof(double) * rows);
        ck_assert_int_eq(fs_ring_forward(&p.a, &g, O, m, l, NULL), FS_OK);
        ck_assert_int_eq(fs_tiled(&p.a, &g.tiling, Ot, mt, lt, NULL), FS_OK);
        int32_t same = 0;
        for (size_t k = 0; k < rows; k++) {
            const int32_t pos = (int32_t)(k % (size_t)n);
            if (!first_block_row(&g, n, pos)) continue;
            same++;
            FS_ASSERT_SEED(!memcmp(O + k * d_v, Ot + k * d_v, sizeof(double) * d_v) && m[k] == mt[k] && l[k] == lt[k],
                           seed, "P=%d %s n=%d Bk=%d %s: row %d is not fs_tiled's bit for bit", g.P,
                           fs_sharding_str(g.sharding), n, g.tiling.Bk, fs_form_str(g.tiling.form), pos);
        }
        ck_assert_int_gt(same, 0);
        free(O), free(m), free(l), free(Ot), free(mt), free(lt);
        problem_free(&p);
    }
}
END_TEST

START_TEST(test_ring_backward_matches_single_device)
{
    const uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    for (int rep = 0; rep < 3; rep++) {
        bool causal;
        int32_t n;
        fs_ring g = ring_of(_i, &r, &causal, &n);
        problem p;
        draw(&p, &r, n, causal);
        const fs_attn *a = &p.a;
        const size_t rows = (size_t)a->n_q_heads * n, keys = (size_t)a->n_kv_heads * n;
        const size_t nq = rows * a->d, nk = keys * a->d, nv = keys * a->d_v;
        double *O = malloc(sizeof(double) * rows * a->d_v), *m = malloc(sizeof(double) * rows);
        double *l = malloc(sizeof(double) * rows), *L = malloc(sizeof(double) * rows);
        double *dQ = malloc(sizeof(double) * nq), *dK = malloc(sizeof(double) * nk), *dV = malloc(sizeof(double) * nv);
        double *dQt = malloc(sizeof(double) * nq), *dKt = malloc(sizeof(double) * nk), *dVt = malloc(sizeof(double) * nv);
        double *D = malloc(sizeof(double) * rows), *Dt = malloc(sizeof(double) * rows);
        ck_assert_int_eq(fs_ring_forward(a, &g, O, m, l, NULL), FS_OK);
        fs_lse(m, l, (long)rows, L);
        FS_ASSERT_SEED(fs_ring_backward(a, &g, O, L, p.dO, dQ, dK, dV, D, NULL) == FS_OK, seed, "ring backward failed");
        ck_assert_int_eq(fs_backward(a, &g.tiling, O, L, p.dO, dQt, dKt, dVt, Dt, NULL), FS_OK);
        const char *sh = fs_sharding_str(g.sharding);
        FS_ASSERT_SEED(fs_max_rel_err(dQ, dQt, (long)nq) <= TOL_BWD, seed, "P=%d %s %s n=%d: dQ differs by %g", g.P, sh,
                       causal ? "causal" : "none", n, fs_max_rel_err(dQ, dQt, (long)nq));
        FS_ASSERT_SEED(fs_max_rel_err(dK, dKt, (long)nk) <= TOL_BWD, seed, "P=%d %s %s n=%d: dK differs by %g", g.P, sh,
                       causal ? "causal" : "none", n, fs_max_rel_err(dK, dKt, (long)nk));
        FS_ASSERT_SEED(fs_max_rel_err(dV, dVt, (long)nv) <= TOL_BWD, seed, "P=%d %s %s n=%d: dV differs by %g", g.P, sh,
                       causal ? "causal" : "none", n, fs_max_rel_err(dV, dVt, (long)nv));
        FS_ASSERT_SEED(!memcmp(D, Dt, sizeof(double) * rows), seed, "D differs");
        free(O), free(m), free(l), free(L), free(dQ), free(dK), free(dV), free(dQt), free(dKt), free(dVt), free(D), free(Dt);
        problem_free(&p);
    }
}
END_TEST

/* ---- the trace ---- */

/* Is any key of keys [c0, c1) of kpos at or before a query of rows [r0, r1) of qpos (causal)? */
static bool any_visible(const int32_t *qpos, int32_t r0, int32_t r1, const int32_t *kpos, int32_t c0, int32_t c1)
{
    for (int32_t i = r0; i < r1; i++)
        for (int32_t j = c0; j < c1; j++)
            if (kpos[j] <= qpos[i]) return true;
    return false;
}

/* Check a ring trace (forward or backward) against ring.h's promises; a message in why. */
static bool trace_ok(const fs_attn *a, const fs_ring *g, const fs_trace *tr, bool backward, char *why, size_t nw)
{
    const int32_t P = g->P, n = a->n_q;
    const bool causal = a->mask.kind == FS_MASK_CAUSAL;
    int32_t *held = calloc((size_t)P * P, sizeof(int32_t));   /* [p·P + t]: shard held, −1 none */
    int32_t *seen = calloc((size_t)P * P, sizeof(int32_t));   /* [p·P + s]: times p held s */
    int64_t *vis = calloc((size_t)P * P, sizeof(int64_t)), *skp = calloc((size_t)P * P, sizeof(int64_t));
    int64_t *wv = malloc(sizeof(int64_t) * P * P), *ws = malloc(sizeof(int64_t) * P * P);
    int32_t *qpos = malloc(sizeof(int32_t) * (size_t)n), *kpos = malloc(sizeof(int32_t) * (size_t)n);
    int64_t sends = 0, recvs = 0;
    bool ok = false;
    for (int32_t k = 0; k < P * P; k++) held[k] = -1;
    fs_ring_work(a, g, wv, ws, NULL);
#define FAIL(...) do { snprintf(why, nw, __VA_ARGS__); goto out; } while (0)
    for (int64_t k = 0; k < tr->n; k++) {
        const fs_event *e = &tr->ev[k];
        switch (e->kind) {
        case FS_EV_HOLD: {
            if (e->shard != ((e->device - e->ring_step) % P + P) % P)
                FAIL("step %lld: device %d holds shard %d at ring step %d", (long long)k, e->device, e->shard, e->ring_step);
            held[e->device * P + e->ring_step] = e->shard;
            seen[e->device * P + e->shard]++;
            const int32_t c = fs_ring_positions(g, n, e->shard, kpos);
            const double *v = fs_trace_at(tr, e->s_row);
            if (e->n_s != c) FAIL("step %lld: HOLD lists %d positions, shard has %d", (long long)k, e->n_s, c);
            for (int32_t j = 0; j < c; j++)
                if (v[j] != kpos[j]) FAIL("step %lld: HOLD position %d", (long long)k, j);
            break;
        }
        case FS_EV_SEND:
        case FS_EV_RECV: {
            const bool last = e->ring_step == P - 1;
            if (!backward && last) FAIL("a forward hop after the last step");
            if (e->b != (e->a + 1) % P || e->device != (e->kind == FS_EV_SEND ? e->a : e->b))
                FAIL("step %lld: hop %d -> %d on device %d", (long long)k, e->a, e->b, e->device);
            if (held[e->a * P + e->ring_step] != e->shard) FAIL("step %lld: device %d sends shard %d it does not hold",
                                                                 (long long)k, e->a, e->shard);
            const int64_t bytes = fs_ring_shard_bytes(a, fs_ring_positions(g, n, e->shard, NULL), backward, last);
            if (e->bytes != bytes) FAIL("step %lld: %lld bytes, expected %lld", (long long)k, (long long)e->bytes,
                                        (long long)bytes);
            /* The matching receive comes P events later (all sends, then all receives). */
            if (e->kind == FS_EV_SEND) {
                sends++;
                const fs_event *f = k + P < tr->n ? &tr->ev[k + P] : NULL;
                if (!f || f->kind != FS_EV_RECV || f->a != e->a || f->b != e->b || f->shard != e->shard ||
                    f->bytes != e->bytes || f->ring_step != e->ring_step)
                    FAIL("step %lld: the send of shard %d from %d has no matching receive", (long long)k, e->shard, e->a);
            } else {
                recvs++;
            }
            break;
        }
        case FS_EV_TILE:
        case FS_EV_SKIP:
        case FS_EV_BTILE:
        case FS_EV_BSKIP: {
            const bool skip = e->kind == FS_EV_SKIP || e->kind == FS_EV_BSKIP;
            if (e->device < 0 || held[e->device * P + e->ring_step] != e->shard) FAIL("step %lld: a tile outside a HOLD", (long long)k);
            fs_ring_positions(g, n, e->device, qpos);
            fs_ring_positions(g, n, e->shard, kpos);
            const bool seen_key = !causal || any_visible(qpos, e->r0, e->r1, kpos, e->c0, e->c1);
            if (skip == seen_key)
                FAIL("step %lld: device %d step %d tile rows %d-%d keys %d-%d %s but %s", (long long)k, e->device,
                     e->ring_step, e->r0, e->r1 - 1, e->c0, e->c1 - 1, skip ? "skipped" : "visited",
                     seen_key ? "a key is visible" : "no key is visible");
            if (skip && e->reason != FS_SKIP_CAUSAL) FAIL("step %lld: skip reason %s", (long long)k, fs_skip_reason_str(e->reason));
            if (e->head == 0) (skip ? skp : vis)[e->device * P + e->ring_step]++;
            break;
        }
        case FS_EV_RMERGE: {
            double al = e->m_old == -INFINITY ? 0 : exp(e->m_old - e->m_new), be = exp(e->m_blk - e->m_new);
            if (e->m_new != fmax(e->m_old, e->m_blk) || al != e->alpha || be != e->beta ||
                fabs(e->l_new - (al * e->l_old + be * e->l_blk)) > 1e-12 * fmax(1, e->l_new))
                FAIL("step %lld: merge of row %d: m %g, alpha %g (expected %g), beta %g (expected %g)", (long long)k,
                     e->row, e->m_new, e->alpha, al, e->beta, be);
            break;
        }
        default: break;
        }
    }
    for (int32_t p = 0; p < P; p++)
        for (int32_t s = 0; s < P; s++)
            if (seen[p * P + s] != 1) FAIL("device %d held shard %d %d times", p, s, seen[p * P + s]);
    if (sends != recvs || sends != (int64_t)P * (backward ? P : P - 1))
        FAIL("%lld sends, %lld receives for P = %d", (long long)sends, (long long)recvs, P);
    for (int32_t k = 0; k < P * P; k++)
        if (vis[k] != wv[k] || skp[k] != ws[k])
            FAIL("device %d step %d: the trace visits %lld and skips %lld tiles, the work table says %lld and %lld", k / P,
                 k % P, (long long)vis[k], (long long)skp[k], (long long)wv[k], (long long)ws[k]);
    ok = true;
#undef FAIL
out:
    free(held), free(seen), free(vis), free(skp), free(wv), free(ws), free(qpos), free(kpos);
    return ok;
}

START_TEST(test_ring_trace_invariants)
{
    const uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    for (int backward = 0; backward < 2; backward++) {
        bool causal;
        int32_t n;
        fs_ring g = ring_of(_i, &r, &causal, &n);
        problem p;
        draw(&p, &r, n, causal);
        const size_t rows = (size_t)p.a.n_q_heads * n, keys = (size_t)p.a.n_kv_heads * n;
        double *O = malloc(sizeof(double) * rows * p.a.d_v), *m = malloc(sizeof(double) * rows);
        double *l = malloc(sizeof(double) * rows), *L = malloc(sizeof(double) * rows);
        double *dQ = malloc(sizeof(double) * rows * p.a.d), *dK = malloc(sizeof(double) * keys * p.a.d);
        double *dV = malloc(sizeof(double) * keys * p.a.d_v);
        fs_trace tr;
        fs_trace_init(&tr);
        ck_assert_int_eq(fs_ring_forward(&p.a, &g, O, m, l, backward ? NULL : &tr), FS_OK);
        fs_lse(m, l, (long)rows, L);
        if (backward) ck_assert_int_eq(fs_ring_backward(&p.a, &g, O, L, p.dO, dQ, dK, dV, NULL, &tr), FS_OK);
        char why[300] = "";
        FS_ASSERT_SEED(trace_ok(&p.a, &g, &tr, backward, why, sizeof why), seed, "P=%d %s %s n=%d Bq=%d Bk=%d %s: %s", g.P,
                       fs_sharding_str(g.sharding), causal ? "causal" : "none", n, g.tiling.Bq, g.tiling.Bk,
                       backward ? "backward" : "forward", why);
        /* The last event of each kind: OUT rows (forward) or GRAD rows (backward), in order. */
        const fs_event *last = &tr.ev[tr.n - 1];
        ck_assert_int_eq(last->kind, backward ? FS_EV_GRAD : FS_EV_OUT);
        if (backward) {
            /* The dQ of a BROW and the dK, dV of a BKEY are the device's and the travelling
             * shard's: the last one of each row and key is its GRAD row, bit for bit. */
            int64_t grads = 0;
            for (int64_t k = 0; k < tr.n; k++) {
                const fs_event *gr = &tr.ev[k];
                if (gr->kind != FS_EV_GRAD) continue;
                const fs_event *last_ev = NULL;
                for (int64_t j = 0; j < tr.n; j++) {
                    const fs_event *e = &tr.ev[j];
                    if (gr->tensor == FS_GRAD_DQ ? e->kind == FS_EV_BROW && e->head == gr->head && e->pos == gr->row
                                                 : e->kind == FS_EV_BKEY && e->kv_head == gr->head && e->pos == gr->row)
                        last_ev = e;
                }
                if (!last_ev) continue;   /* every pair of this row or key skipped */
                const int64_t off = gr->tensor == FS_GRAD_DV ? last_ev->g_new : last_ev->o_new;
                FS_ASSERT_SEED(!memcmp(fs_trace_at(&tr, off), fs_trace_at(&tr, gr->o_new), sizeof(double) * gr->n_o), seed,
                               "P=%d %s: %s row %d differs from its last update in the trace", g.P,
                               fs_sharding_str(g.sharding), fs_grad_str(gr->tensor), gr->row);
                grads++;
            }
            ck_assert_int_gt(grads, 0);
        }
        if (!backward) {   /* the OUT rows are the output */
            int64_t outs = 0;
            for (int64_t k = 0; k < tr.n; k++)
                if (tr.ev[k].kind == FS_EV_OUT) {
                    const size_t row = (size_t)tr.ev[k].head * n + tr.ev[k].row;
                    FS_ASSERT_SEED(!memcmp(fs_trace_at(&tr, tr.ev[k].o_new), O + row * p.a.d_v, sizeof(double) * p.a.d_v),
                                   seed, "OUT row %zu", row);
                    outs++;
                }
            ck_assert_int_eq(outs, (int64_t)rows);
        }
        fs_trace_free(&tr);
        free(O), free(m), free(l), free(L), free(dQ), free(dK), free(dV);
        problem_free(&p);
    }
}
END_TEST

/* Zigzag balances the causal work, contiguous does not. With tiles of one zigzag block (N / 2P)
 * every zigzag device visits 2P + 1 tiles; with tiles of one contiguous shard (N / P) device p
 * visits p + 1, so the last does P times the first. In visible (query, key) pairs zigzag's
 * devices are equal (N a multiple of 2P) or within one block of each other, striped's within a
 * row of keys per query. */
START_TEST(test_ring_work_balance)
{
    const uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int k = 1; k < N_DEVICES; k++) {
        const int32_t P = devices[k], b = fs_rng_int(&r, 1, 4), n = 2 * P * b + (_i ? fs_rng_int(&r, 1, 2 * P - 1) : 0);
        double *x = calloc((size_t)n, sizeof(double));   /* the work table reads the mask and sizes only */
        fs_attn a = fs_attn_make(n, n, 1, 1);
        a.Q = a.K = a.V = x;
        a.mask.kind = FS_MASK_CAUSAL;
        int64_t *vis = malloc(sizeof(int64_t) * P * P), *pairs = malloc(sizeof(int64_t) * P * P);
        int64_t load[8], pload[8], lo = INT64_MAX, hi = 0, plo = INT64_MAX, phi = 0;
        fs_ring g = fs_ring_default();
        g.P = P;
        g.sharding = FS_SHARD_ZIGZAG;
        g.tiling.Bq = g.tiling.Bk = b;   /* one zigzag block (for uneven n, the smaller blocks' size) */
        ck_assert_int_eq(fs_ring_work(&a, &g, vis, NULL, pairs), FS_OK);
        for (int32_t p = 0; p < P; p++) {
            load[p] = pload[p] = 0;
            for (int32_t t = 0; t < P; t++) {
                load[p] += vis[p * P + t];
                pload[p] += pairs[p * P + t];
            }
            lo = load[p] < lo ? load[p] : lo;
            hi = load[p] > hi ? load[p] : hi;
            plo = pload[p] < plo ? pload[p] : plo;
            phi = pload[p] > phi ? pload[p] : phi;
        }
        if (!_i) {
            FS_ASSERT_SEED(lo == 2 * P + 1 && hi == 2 * P + 1, seed, "zigzag P=%d n=%d: tiles per device %lld to %lld", P,
                           n, (long long)lo, (long long)hi);
            FS_ASSERT_SEED(plo == phi, seed, "zigzag P=%d n=%d: pairs per device %lld to %lld", P, n, (long long)plo,
                           (long long)phi);
        }
        /* Uneven n: early blocks differ by one position, (N + 1) pairs, and the middle one's (ring.h). */
        FS_ASSERT_SEED(phi - plo <= 2 * (int64_t)(n + 1), seed, "zigzag P=%d n=%d: pairs per device %lld to %lld",
                       P, n, (long long)plo, (long long)phi);

        g.sharding = FS_SHARD_STRIPED;   /* each query sees at most one key more than on another device */
        ck_assert_int_eq(fs_ring_work(&a, &g, NULL, NULL, pairs), FS_OK);
        plo = INT64_MAX, phi = 0;
        for (int32_t p = 0; p < P; p++) {
            int64_t s = 0;
            for (int32_t t = 0; t < P; t++) s += pairs[p * P + t];
            plo = s < plo ? s : plo;
            phi = s > phi ? s : phi;
        }
        FS_ASSERT_SEED(phi - plo <= n, seed, "striped P=%d n=%d: pairs per device %lld to %lld", P, n, (long long)plo,
                       (long long)phi);

        if (!_i) {   /* contiguous, tiles of one shard: device p visits p + 1 */
            g.sharding = FS_SHARD_CONTIGUOUS;
            g.tiling.Bq = g.tiling.Bk = 2 * b;
            ck_assert_int_eq(fs_ring_work(&a, &g, vis, NULL, pairs), FS_OK);
            for (int32_t p = 0; p < P; p++) {
                load[p] = 0;
                for (int32_t t = 0; t < P; t++) load[p] += vis[p * P + t];
                FS_ASSERT_SEED(load[p] == p + 1, seed, "contiguous P=%d: device %d visits %lld tiles", P, p,
                               (long long)load[p]);
            }
            FS_ASSERT_SEED(load[P - 1] == P * load[0], seed, "contiguous P=%d: last %lld, first %lld", P,
                           (long long)load[P - 1], (long long)load[0]);
        }
        free(vis), free(pairs), free(x);
    }
}
END_TEST

START_TEST(test_ring_bad_input)
{
    double x[64] = {0};
    fs_attn a = fs_attn_make(6, 6, 1, 1);
    a.Q = a.K = a.V = x;
    a.mask.kind = FS_MASK_CAUSAL;
    fs_ring g = fs_ring_default();
    char why[200];
    g.P = 4;   /* zigzag over 4 needs 8 positions */
    ck_assert_int_eq(fs_ring_check(&a, &g, why, sizeof why), FS_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(why, "at least 8"));
    g.P = 0;
    ck_assert_int_eq(fs_ring_check(&a, &g, why, sizeof why), FS_ERR_ARG);
    g.P = 3;
    ck_assert_int_eq(fs_ring_check(&a, &g, why, sizeof why), FS_OK);
    a.mask.kind = FS_MASK_WINDOW;
    a.mask.window = 2;
    ck_assert_int_eq(fs_ring_check(&a, &g, why, sizeof why), FS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(why, "window"));
    a.mask.kind = FS_MASK_CAUSAL;
    a.mask.has_offset = true;
    a.mask.offset = 2;
    ck_assert_int_eq(fs_ring_check(&a, &g, why, sizeof why), FS_ERR_ARG);
    a.mask.has_offset = false;
    g.tiling.exp2 = true;
    ck_assert_int_eq(fs_ring_check(&a, &g, why, sizeof why), FS_ERR_ARG);
    g.tiling.exp2 = false;
    fs_attn b = fs_attn_make(6, 5, 1, 1);
    b.Q = b.K = b.V = x;
    ck_assert_int_eq(fs_ring_check(&b, &g, why, sizeof why), FS_ERR_SHAPE);
    double O[6];
    ck_assert_int_eq(fs_ring_forward(&b, &g, O, NULL, NULL, NULL), FS_ERR_SHAPE);
    x[0] = NAN;
    ck_assert_int_eq(fs_ring_forward(&a, &g, O, NULL, NULL, NULL), FS_ERR_VALUE);
    ck_assert_int_eq(fs_sharding_parse("zigzag"), FS_SHARD_ZIGZAG);
    ck_assert_int_eq(fs_sharding_parse("zig"), FS_SHARD_COUNT);
}
END_TEST

Suite *ring_suite(void)
{
    Suite *s = suite_create("ring");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_ring_forward_matches_reference, 0, N_CASES);
    tcase_add_loop_test(tc, test_ring_forward_bitwise, 0, N_CASES);
    tcase_add_loop_test(tc, test_ring_backward_matches_single_device, 0, N_CASES);
    tcase_add_loop_test(tc, test_ring_trace_invariants, 0, N_CASES);
    tcase_add_loop_test(tc, test_ring_work_balance, 0, 2);
    tcase_add_test(tc, test_ring_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

/* ring.c: ring (context-parallel) attention over P simulated devices (ring.h).
 *
 * Each device's step is an ordinary attention problem of its own: the device's queries against
 * the shard it holds, gathered into local arrays, with the causal mask of the global positions
 * written as a bitmask over the local rows and keys. The tiled kernel (tiled.c) or the tiled
 * backward (backward.c) runs on it unchanged, and its events are then labelled with the device,
 * the step and the shard (and the bitmask's skip reason put back to "causal"). The forward merges
 * each step's partial rows into the running state with decode.c's merge; the backward adds the
 * step's dQ to the device's and its dK, dV to the travelling shard's.
 */
#include "ring.h"

#include "backward.h"
#include "decode.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fs_ring fs_ring_default(void)
{
    fs_ring r;
    r.P = 4;
    r.sharding = FS_SHARD_ZIGZAG;
    r.tiling = fs_tiling_default();
    r.tiling.Bq = r.tiling.Bk = 2;
    return r;
}

const char *fs_sharding_str(fs_sharding s)
{
    static const char *n[] = {"contiguous", "zigzag", "striped"};
    return (unsigned)s < FS_SHARD_COUNT ? n[s] : "?";
}

fs_sharding fs_sharding_parse(const char *s)
{
    for (int k = 0; k < FS_SHARD_COUNT; k++)
        if (!strcmp(s, fs_sharding_str((fs_sharding)k))) return (fs_sharding)k;
    return FS_SHARD_COUNT;
}

/* The k-th of `parts` cuts of n positions: ⌊k n / parts⌋. */
static int32_t cut(int64_t k, int64_t n, int64_t parts) { return (int32_t)(k * n / parts); }

int32_t fs_ring_positions(const fs_ring *r, int32_t n, int32_t s, int32_t *pos)
{
    const int32_t P = r->P;
    int32_t c = 0;
    assert(s >= 0 && s < P);
    switch (r->sharding) {
    case FS_SHARD_CONTIGUOUS:
        for (int32_t i = cut(s, n, P); i < cut(s + 1, n, P); i++, c++)
            if (pos) pos[c] = i;
        break;
    case FS_SHARD_ZIGZAG: {
        /* The first half cut into P early blocks, each paired with its mirror image in the
         * second half (for n a multiple of 2P: blocks s and 2P − 1 − s). An odd n's middle
         * position joins the last device's early block. */
        const int32_t h = n / 2, e1 = cut(s + 1, h, P) + (s == P - 1 && n % 2);
        for (int32_t i = cut(s, h, P); i < e1; i++, c++)
            if (pos) pos[c] = i;
        for (int32_t i = n - cut(s + 1, h, P); i < n - cut(s, h, P); i++, c++)
            if (pos) pos[c] = i;
        break;
    }
    case FS_SHARD_STRIPED:
        for (int32_t i = s; i < n; i += P, c++)
            if (pos) pos[c] = i;
        break;
    default: assert(!"unknown sharding");
    }
    return c;
}

int64_t fs_ring_shard_bytes(const fs_attn *a, int32_t n_s, bool backward, bool last)
{
    const int64_t kv = (int64_t)n_s * (a->d + a->d_v) * a->n_kv_heads * (int64_t)sizeof(double);
    if (!backward) return kv;
    return last ? kv : 2 * kv;   /* K, V and dK, dV; the last hop carries dK and dV alone */
}

fs_status fs_ring_check(const fs_attn *a, const fs_ring *r, char *why, size_t n)
{
#define WHY(...) do { if (why) snprintf(why, n, __VA_ARGS__); } while (0)
    if (why && n) why[0] = 0;
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    if (r->P < 1 || r->P > FS_RING_MAX_DEVICES) {
        WHY("the ring needs 1 to %d devices, not %d", FS_RING_MAX_DEVICES, r->P);
        return FS_ERR_ARG;
    }
    if ((unsigned)r->sharding >= FS_SHARD_COUNT) {
        WHY("unknown sharding");
        return FS_ERR_ARG;
    }
    if (a->n_q != a->n_kv) {
        WHY("ring attention shards one sequence: n_q (%d) must equal n_kv (%d)", a->n_q, a->n_kv);
        return FS_ERR_SHAPE;
    }
    if (a->mask.kind != FS_MASK_NONE && a->mask.kind != FS_MASK_CAUSAL) {
        WHY("the ring runs without a mask or with the causal one, not %s", fs_mask_kind_str(a->mask.kind));
        return FS_ERR_ARG;
    }
    if (a->mask.has_offset && a->mask.offset != 0) {
        WHY("the ring's queries are the sequence's own positions: offset 0, not %d", a->mask.offset);
        return FS_ERR_ARG;
    }
    const int32_t need = r->sharding == FS_SHARD_ZIGZAG ? 2 * r->P : r->P;
    if (a->n_q < need) {
        WHY("%s sharding over %d devices needs at least %d positions (one a %s), not %d", fs_sharding_str(r->sharding),
            r->P, need, r->sharding == FS_SHARD_ZIGZAG ? "block" : "device", a->n_q);
        return FS_ERR_SHAPE;
    }
    if (r->tiling.Bq < 1 || r->tiling.Bk < 1) return FS_ERR_TILE;
    if (r->tiling.exp2 || r->tiling.pitfall != FS_PITFALL_NONE || r->tiling.dropout.on) {
        WHY("the ring runs the plain algorithm: no exp2, pitfall or dropout");
        return FS_ERR_ARG;
    }
    if ((unsigned)r->tiling.form > FS_FORM_UNNORMALIZED || (unsigned)r->tiling.order > FS_ORDER_KV_OUTER)
        return FS_ERR_ARG;
    return FS_OK;
#undef WHY
}

/* ---- one device's step as a problem of its own ---- */

typedef struct {
    int32_t *qpos, nq;      /* the device's query positions */
    int32_t *kpos, nk;      /* the held shard's key positions */
    double *Q, *K, *V, *S;  /* (Hq, nq, d), (Hkv, nk, d), (Hkv, nk, d_v), (Hq, nq, nk) gathered */
    uint64_t *bits;         /* (nq, words(nk)) the causal mask on global positions */
    fs_attn a;              /* the local problem over these */
} step_problem;

/* Gather the local problem of queries qpos against keys kpos (both increasing). The arrays are
 * sized once for the largest shard (cap positions). */
static void step_build(const fs_attn *g, step_problem *sp)
{
    const int32_t n = g->n_q, nq = sp->nq, nk = sp->nk, d = g->d, d_v = g->d_v;
    for (int32_t h = 0; h < g->n_q_heads; h++)
        for (int32_t i = 0; i < nq; i++) {
            if (g->Q) memcpy(sp->Q + ((size_t)h * nq + i) * d, g->Q + ((size_t)h * n + sp->qpos[i]) * d, sizeof(double) * d);
            if (g->S)
                for (int32_t j = 0; j < nk; j++)
                    sp->S[((size_t)h * nq + i) * nk + j] = g->S[((size_t)h * n + sp->qpos[i]) * n + sp->kpos[j]];
        }
    for (int32_t h = 0; h < g->n_kv_heads; h++)
        for (int32_t j = 0; j < nk; j++) {
            if (g->K) memcpy(sp->K + ((size_t)h * nk + j) * d, g->K + ((size_t)h * n + sp->kpos[j]) * d, sizeof(double) * d);
            memcpy(sp->V + ((size_t)h * nk + j) * d_v, g->V + ((size_t)h * n + sp->kpos[j]) * d_v, sizeof(double) * d_v);
        }
    fs_attn *a = &sp->a;
    *a = *g;
    a->n_q = nq;
    a->n_kv = nk;
    a->Q = g->Q ? sp->Q : NULL;
    a->K = g->K ? sp->K : NULL;
    a->V = sp->V;
    a->S = g->S ? sp->S : NULL;
    memset(&a->mask, 0, sizeof a->mask);
    a->mask.kind = FS_MASK_NONE;
    if (g->mask.kind == FS_MASK_CAUSAL) {
        const int32_t w = fs_mask_words(nk);
        memset(sp->bits, 0, sizeof(uint64_t) * (size_t)nq * w);
        for (int32_t i = 0; i < nq; i++)
            for (int32_t j = 0; j < nk && sp->kpos[j] <= sp->qpos[i]; j++)   /* kpos increases */
                sp->bits[(size_t)i * w + j / 64] |= (uint64_t)1 << (j % 64);
        a->mask.kind = FS_MASK_BITS;
        a->mask.bits = sp->bits;
        a->mask.words_per_row = w;
    }
}

/* Storage for every step (largest shard: cap positions). */
typedef struct {
    step_problem sp;
    double *Ob, *mb, *lb;          /* forward: the block's partial O (Hq, cap, d_v), m, ℓ (Hq, cap) */
    double *Lb, *dOb, *dQb, *dKb, *dVb;   /* backward: gathered L, O (in Ob), dO; the step's dQ, dK, dV */
    double *o_old;                 /* (d_v) a row's state before a merge, for the trace */
} ring_work;

static void work_free(ring_work *w)
{
    free(w->sp.qpos);
    free(w->sp.kpos);
    free(w->sp.Q);
    free(w->sp.K);
    free(w->sp.V);
    free(w->sp.S);
    free(w->sp.bits);
    free(w->Ob);
    free(w->mb);
    free(w->lb);
    free(w->Lb);
    free(w->dOb);
    free(w->dQb);
    free(w->dKb);
    free(w->dVb);
    free(w->o_old);
}

static int32_t largest_shard(const fs_ring *r, int32_t n)
{
    int32_t cap = 0;
    for (int32_t s = 0; s < r->P; s++) {
        int32_t c = fs_ring_positions(r, n, s, NULL);
        if (c > cap) cap = c;
    }
    return cap;
}

static bool work_alloc(const fs_attn *a, const fs_ring *r, bool backward, ring_work *w)
{
    memset(w, 0, sizeof *w);
    const size_t cap = (size_t)largest_shard(r, a->n_q), hq = (size_t)a->n_q_heads, hk = (size_t)a->n_kv_heads;
    const size_t d = (size_t)(a->d > 0 ? a->d : 1), d_v = (size_t)a->d_v;
    w->sp.qpos = malloc(sizeof(int32_t) * cap);
    w->sp.kpos = malloc(sizeof(int32_t) * cap);
    w->sp.Q = malloc(sizeof(double) * hq * cap * d);
    w->sp.K = malloc(sizeof(double) * hk * cap * d);
    w->sp.V = malloc(sizeof(double) * hk * cap * d_v);
    w->sp.S = a->S ? malloc(sizeof(double) * hq * cap * cap) : NULL;
    w->sp.bits = malloc(sizeof(uint64_t) * cap * (size_t)fs_mask_words((int32_t)cap));
    w->Ob = malloc(sizeof(double) * hq * cap * d_v);
    w->mb = malloc(sizeof(double) * hq * cap);
    w->lb = malloc(sizeof(double) * hq * cap);
    w->o_old = malloc(sizeof(double) * d_v);
    bool ok = w->sp.qpos && w->sp.kpos && w->sp.Q && w->sp.K && w->sp.V && (w->sp.S || !a->S) && w->sp.bits && w->Ob &&
              w->mb && w->lb && w->o_old;
    if (backward) {
        w->Lb = malloc(sizeof(double) * hq * cap);
        w->dOb = malloc(sizeof(double) * hq * cap * d_v);
        w->dQb = malloc(sizeof(double) * hq * cap * d);
        w->dKb = malloc(sizeof(double) * hk * cap * d);
        w->dVb = malloc(sizeof(double) * hk * cap * d_v);
        ok = ok && w->Lb && w->dOb && w->dQb && w->dKb && w->dVb;
    }
    return ok;
}

/* ---- the trace ---- */

static fs_status push_hold(fs_trace *tr, int32_t p, int32_t t, int32_t s, const step_problem *sp)
{
    fs_event e = fs_event_blank(FS_EV_HOLD);
    e.device = p;
    e.ring_step = t;
    e.shard = s;
    e.n_s = sp->nk;
    double *v = malloc(sizeof(double) * (size_t)(sp->nk > 0 ? sp->nk : 1));
    if (!v) return FS_ERR_NOMEM;
    for (int32_t j = 0; j < sp->nk; j++) v[j] = sp->kpos[j];
    e.s_row = fs_trace_vec(tr, v, sp->nk);
    free(v);
    if (e.s_row < 0) return FS_ERR_NOMEM;
    return fs_trace_push(tr, &e) ? FS_OK : fs_trace_error(tr);
}

/* After step t (t < P − 1 moves K and V; the backward's step P − 1 sends dK, dV home): every
 * device sends the shard it held to p + 1, then every device receives. */
static fs_status push_hops(fs_trace *tr, const fs_attn *a, const fs_ring *r, int32_t t, bool backward)
{
    const int32_t P = r->P;
    const bool last = t == P - 1;
    for (int k = 0; k < 2; k++)
        for (int32_t p = 0; p < P; p++) {
            const int32_t s = ((p - t) % P + P) % P, to = (p + 1) % P;
            fs_event e = fs_event_blank(k == 0 ? FS_EV_SEND : FS_EV_RECV);
            e.device = k == 0 ? p : to;
            e.ring_step = t;
            e.shard = s;
            e.a = p;
            e.b = to;
            e.tensor = !backward ? 0 : last ? 2 : 1;
            e.bytes = fs_ring_shard_bytes(a, fs_ring_positions(r, a->n_q, s, NULL), backward, last);
            if (!fs_trace_push(tr, &e)) return fs_trace_error(tr);
        }
    return FS_OK;
}

/* Label the events the kernel recorded from index `from` on with device p, step t, shard s,
 * global positions and the causal skip reason; drop the kinds in `drop` (the kernel's own OUT,
 * or LSE, DELTA and GRAD of the backward: the ring records those once for the whole sequence).
 * With dq, dk, dv (the backward), the dQ, dK and dV rows shown become the device's and the
 * travelling shard's (what they held before the step plus the step's running sum). */
static void relabel(fs_trace *tr, int64_t from, int32_t p, int32_t t, int32_t s, const step_problem *sp,
                    const fs_attn *g, uint32_t drop, const double *dq, const double *dk, const double *dv)
{
    int64_t w = from;
    const int32_t n = g->n_q, d = g->d, d_v = g->d_v;
    for (int64_t k = from; k < tr->n; k++) {
        fs_event e = tr->ev[k];
        if (drop >> e.kind & 1u) continue;
        e.device = p;
        e.ring_step = t;
        e.shard = s;
        if ((e.kind == FS_EV_SKIP || e.kind == FS_EV_BSKIP) && e.reason == FS_SKIP_BITMASK) e.reason = FS_SKIP_CAUSAL;
        if (e.kind == FS_EV_ROW || e.kind == FS_EV_BROW) e.pos = sp->qpos[e.row];
        if (e.kind == FS_EV_BKEY) e.pos = sp->kpos[e.row];
        if (e.kind == FS_EV_BROW && dq) {
            const double *before = dq + ((size_t)e.head * n + e.pos) * d;
            for (int32_t c = 0; c < d; c++) {
                tr->pool[e.o_old + c] += before[c];
                tr->pool[e.o_new + c] += before[c];
            }
        }
        if (e.kind == FS_EV_BKEY && dk) {
            const double *bk = dk + ((size_t)e.kv_head * n + e.pos) * d, *bv = dv + ((size_t)e.kv_head * n + e.pos) * d_v;
            for (int32_t c = 0; c < d; c++) {
                tr->pool[e.o_old + c] += bk[c];
                tr->pool[e.o_new + c] += bk[c];
            }
            for (int32_t c = 0; c < d_v; c++) {
                tr->pool[e.g_old + c] += bv[c];
                tr->pool[e.g_new + c] += bv[c];
            }
        }
        e.step = (int32_t)w;
        tr->ev[w++] = e;
    }
    tr->n = w;
}

/* ---- forward ---- */

/* Merge one row's block (m_b, ℓ_b, o_b) into its running state (m, ℓ, o), normalized. */
static fs_status merge_row(const fs_attn *a, int32_t h, int32_t p, int32_t t, int32_t s, int32_t pos, double m_b,
                           double l_b, const double *o_b, double *m, double *l, double *o, double *o_old,
                           fs_trace *tr)
{
    const int32_t d_v = a->d_v;
    if (m_b == -INFINITY) return FS_OK;   /* nothing visible in this shard: the state stays */
    const double m_old = *m, l_old = *l;
    double alpha, beta;
    if (tr) memcpy(o_old, o, sizeof(double) * (size_t)d_v);
    if (m_old == -INFINITY) {
        /* The first block that shows the row a key: taken as it is. */
        alpha = 0;
        beta = 1;
        *m = m_b;
        *l = l_b;
        memcpy(o, o_b, sizeof(double) * (size_t)d_v);
    } else {
        fs_decode_merge(m_old, l_old, o, m_b, l_b, o_b, d_v, FS_FORM_NORMALIZED, m, l, o, &alpha, &beta);
    }
    if (!tr) return FS_OK;
    fs_event e = fs_event_blank(FS_EV_RMERGE);
    e.head = h;
    e.kv_head = fs_attn_kv_head(a, h);
    e.row = pos;
    e.pos = pos;
    e.device = p;
    e.ring_step = t;
    e.shard = s;
    e.m_old = m_old;
    e.l_old = l_old;
    e.m_blk = m_b;
    e.l_blk = l_b;
    e.m_new = *m;
    e.l_new = *l;
    e.alpha = alpha;
    e.beta = beta;
    e.n_o = d_v;
    e.normalized = true;
    if ((e.o_old = fs_trace_vec(tr, o_old, d_v)) < 0 || (e.o_blk = fs_trace_vec(tr, o_b, d_v)) < 0 ||
        (e.o_new = fs_trace_vec(tr, o, d_v)) < 0 || !fs_trace_push(tr, &e))
        return fs_trace_error(tr);
    return FS_OK;
}

fs_status fs_ring_forward(const fs_attn *a, const fs_ring *r, double *O, double *m_out, double *l_out, fs_trace *tr)
{
    /* O (Hq, n, d_v); m_out, l_out (Hq, n). Per device p the running (m, ℓ, o) of its rows lives
     * in these global arrays at its rows' positions (no device reads another's rows). */
    assert(a && r && O);
    fs_status st = fs_ring_check(a, r, NULL, 0);
    if (st != FS_OK) return st;
    const int32_t P = r->P, n = a->n_q, d_v = a->d_v;
    const size_t rows = (size_t)a->n_q_heads * n;
    ring_work w;
    double *m = malloc(sizeof(double) * rows), *l = malloc(sizeof(double) * rows);
    st = FS_ERR_NOMEM;
    if (!work_alloc(a, r, false, &w) || !m || !l) goto done;
    for (size_t k = 0; k < rows; k++) {
        m[k] = -INFINITY;
        l[k] = 0;
    }
    memset(O, 0, sizeof(double) * rows * (size_t)d_v);
    st = FS_OK;
    for (int32_t t = 0; t < P && st == FS_OK; t++) {
        for (int32_t p = 0; p < P && st == FS_OK; p++) {
            const int32_t s = ((p - t) % P + P) % P;
            step_problem *sp = &w.sp;
            sp->nq = fs_ring_positions(r, n, p, sp->qpos);
            sp->nk = fs_ring_positions(r, n, s, sp->kpos);
            step_build(a, sp);
            if (tr && (st = push_hold(tr, p, t, s, sp)) != FS_OK) break;
            const int64_t from = tr ? tr->n : 0;
            st = fs_tiled(&sp->a, &r->tiling, w.Ob, w.mb, w.lb, tr);
            if (st != FS_OK) break;
            if (tr) relabel(tr, from, p, t, s, sp, a, 1u << FS_EV_OUT, NULL, NULL, NULL);
            for (int32_t h = 0; h < a->n_q_heads && st == FS_OK; h++)
                for (int32_t i = 0; i < sp->nq && st == FS_OK; i++) {
                    const size_t loc = (size_t)h * sp->nq + i, glob = (size_t)h * n + sp->qpos[i];
                    st = merge_row(a, h, p, t, s, sp->qpos[i], w.mb[loc], w.lb[loc], w.Ob + loc * d_v, &m[glob],
                                   &l[glob], O + glob * d_v, w.o_old, tr);
                }
        }
        if (st == FS_OK && tr && t < P - 1) st = push_hops(tr, a, r, t, false);
    }
    for (size_t k = 0; k < rows && st == FS_OK; k++) {
        if (m_out) m_out[k] = m[k];
        if (l_out) l_out[k] = l[k];
        if (tr) st = fs_trace_push_out(tr, a, k, O + k * d_v, m[k], l[k]);
    }
done:
    work_free(&w);
    free(m);
    free(l);
    return st;
}

/* ---- backward ---- */

static fs_status push_grad(fs_trace *tr, int tensor, int32_t head, int32_t kv_head, int32_t row, const double *v,
                           int32_t n)
{
    fs_event e = fs_event_blank(FS_EV_GRAD);
    e.tensor = tensor;
    e.head = head;
    e.kv_head = kv_head;
    e.row = row;
    e.n_o = n;
    if ((e.o_new = fs_trace_vec(tr, v, n)) < 0) return FS_ERR_NOMEM;
    return fs_trace_push(tr, &e) ? FS_OK : fs_trace_error(tr);
}

fs_status fs_ring_backward(const fs_attn *a, const fs_ring *r, const double *O, const double *L, const double *dO,
                           double *dQ, double *dK, double *dV, double *D_out, fs_trace *tr)
{
    /* O, dO (Hq, n, d_v); L, D_out (Hq, n); dQ (Hq, n, d); dK (Hkv, n, d); dV (Hkv, n, d_v).
     * dQ of device p's rows stays on p; dK, dV of shard s are added to wherever shard s is. */
    assert(a && r && O && L && dO && dQ && dK && dV);
    fs_status st = fs_ring_check(a, r, NULL, 0);
    if (st != FS_OK) return st;
    if (!a->Q || !a->K || a->S) return FS_ERR_ARG;
    if ((st = fs_backward_check_range(a, dO, NULL, 0)) != FS_OK) return st;
    const int32_t P = r->P, n = a->n_q, d = a->d, d_v = a->d_v;
    const size_t rows = (size_t)a->n_q_heads * n, keys = (size_t)a->n_kv_heads * n;
    ring_work w;
    double *D = malloc(sizeof(double) * rows);
    st = FS_ERR_NOMEM;
    if (!work_alloc(a, r, true, &w) || !D) goto done;
    memset(dQ, 0, sizeof(double) * rows * (size_t)d);
    memset(dK, 0, sizeof(double) * keys * (size_t)d);
    memset(dV, 0, sizeof(double) * keys * (size_t)d_v);

    /* L kept from the forward and D = rowsum(dO ∘ O): each device computes its own rows' once. */
    st = fs_backward_rows(a, O, L, dO, D, tr);

    for (int32_t t = 0; t < P && st == FS_OK; t++) {
        for (int32_t p = 0; p < P && st == FS_OK; p++) {
            const int32_t s = ((p - t) % P + P) % P;
            step_problem *sp = &w.sp;
            const int32_t nq = sp->nq = fs_ring_positions(r, n, p, sp->qpos);
            const int32_t nk = sp->nk = fs_ring_positions(r, n, s, sp->kpos);
            step_build(a, sp);
            /* The device's own O, L and dO rows. */
            for (int32_t h = 0; h < a->n_q_heads; h++)
                for (int32_t i = 0; i < nq; i++) {
                    const size_t loc = (size_t)h * nq + i, glob = (size_t)h * n + sp->qpos[i];
                    w.Lb[loc] = L[glob];
                    memcpy(w.Ob + loc * d_v, O + glob * d_v, sizeof(double) * (size_t)d_v);
                    memcpy(w.dOb + loc * d_v, dO + glob * d_v, sizeof(double) * (size_t)d_v);
                }
            if (tr && (st = push_hold(tr, p, t, s, sp)) != FS_OK) break;
            const int64_t from = tr ? tr->n : 0;
            st = fs_backward(&sp->a, &r->tiling, w.Ob, w.Lb, w.dOb, w.dQb, w.dKb, w.dVb, NULL, tr);
            if (st != FS_OK) break;
            if (tr)
                relabel(tr, from, p, t, s, sp, a, 1u << FS_EV_LSE | 1u << FS_EV_DELTA | 1u << FS_EV_GRAD, dQ, dK, dV);
            /* dQ stays on the device; dK and dV go with the shard. */
            for (int32_t h = 0; h < a->n_q_heads; h++)
                for (int32_t i = 0; i < nq; i++) {
                    double *dq = dQ + ((size_t)h * n + sp->qpos[i]) * d;
                    const double *b = w.dQb + ((size_t)h * nq + i) * d;
                    for (int32_t c = 0; c < d; c++) dq[c] += b[c];
                }
            for (int32_t h = 0; h < a->n_kv_heads; h++)
                for (int32_t j = 0; j < nk; j++) {
                    double *dk = dK + ((size_t)h * n + sp->kpos[j]) * d, *dv = dV + ((size_t)h * n + sp->kpos[j]) * d_v;
                    const double *bk = w.dKb + ((size_t)h * nk + j) * d, *bv = w.dVb + ((size_t)h * nk + j) * d_v;
                    for (int32_t c = 0; c < d; c++) dk[c] += bk[c];
                    for (int32_t c = 0; c < d_v; c++) dv[c] += bv[c];
                }
        }
        if (st == FS_OK && tr) st = push_hops(tr, a, r, t, true);
    }
    if (st != FS_OK || !tr) goto done;
    for (size_t k = 0; k < rows && st == FS_OK; k++) {
        int32_t h = (int32_t)(k / (size_t)n);
        st = push_grad(tr, FS_GRAD_DQ, h, fs_attn_kv_head(a, h), (int32_t)(k % (size_t)n), dQ + k * (size_t)d, d);
    }
    for (size_t k = 0; k < keys && st == FS_OK; k++)
        st = push_grad(tr, FS_GRAD_DK, (int32_t)(k / (size_t)n), (int32_t)(k / (size_t)n), (int32_t)(k % (size_t)n),
                       dK + k * (size_t)d, d);
    for (size_t k = 0; k < keys && st == FS_OK; k++)
        st = push_grad(tr, FS_GRAD_DV, (int32_t)(k / (size_t)n), (int32_t)(k / (size_t)n), (int32_t)(k % (size_t)n),
                       dV + k * (size_t)d_v, d_v);
done:
    if (D_out && st == FS_OK) memcpy(D_out, D, sizeof(double) * rows);
    work_free(&w);
    free(D);
    return st;
}

bool fs_ring_hold_skipped(const fs_trace *t, int64_t hold)
{
    int visited = 0, skipped = 0;
    for (int64_t k = hold + 1; k < t->n; k++) {
        const fs_event *x = &t->ev[k];
        if (x->kind == FS_EV_HOLD || x->kind == FS_EV_SEND || x->kind == FS_EV_RECV) break;
        visited += x->kind == FS_EV_TILE || x->kind == FS_EV_BTILE;
        skipped += x->kind == FS_EV_SKIP || x->kind == FS_EV_BSKIP;
    }
    return !visited && skipped;
}

/* ---- the work table ---- */

fs_status fs_ring_work(const fs_attn *a, const fs_ring *r, int64_t *visited, int64_t *skipped, int64_t *pairs)
{
    /* visited, skipped, pairs: (P, P), index p·P + t. */
    fs_status st = fs_ring_check(a, r, NULL, 0);
    if (st != FS_OK) return st;
    const int32_t P = r->P, n = a->n_q, Bq = r->tiling.Bq, Bk = r->tiling.Bk;
    const int32_t cap = largest_shard(r, n);
    int32_t *qpos = malloc(sizeof(int32_t) * (size_t)cap), *kpos = malloc(sizeof(int32_t) * (size_t)cap);
    if (!qpos || !kpos) {
        free(qpos);
        free(kpos);
        return FS_ERR_NOMEM;
    }
    const bool causal = a->mask.kind == FS_MASK_CAUSAL;
    for (int32_t p = 0; p < P; p++) {
        const int32_t nq = fs_ring_positions(r, n, p, qpos);
        for (int32_t t = 0; t < P; t++) {
            const int32_t s = ((p - t) % P + P) % P, nk = fs_ring_positions(r, n, s, kpos);
            int64_t vis = 0, skip = 0, pr = 0;
            /* A pair of tiles is skipped when its first key lies after its last query. */
            for (int32_t r0 = 0; r0 < nq; r0 += Bq)
                for (int32_t c0 = 0; c0 < nk; c0 += Bk) {
                    const int32_t r1 = r0 + Bq < nq ? r0 + Bq : nq;
                    if (causal && kpos[c0] > qpos[r1 - 1]) skip++;
                    else vis++;
                }
            for (int32_t i = 0, j = 0; i < nq; i++) {   /* keys at or before each query */
                if (!causal) {
                    pr += nk;
                    continue;
                }
                while (j < nk && kpos[j] <= qpos[i]) j++;
                pr += j;
            }
            const size_t k = (size_t)p * P + t;
            if (visited) visited[k] = vis;
            if (skipped) skipped[k] = skip;
            if (pairs) pairs[k] = pr;
        }
    }
    free(qpos);
    free(kpos);
    return FS_OK;
}

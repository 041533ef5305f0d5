/* backward.c: the backward pass by recomputation, instrumented (001, 004; FlashAttention 2).
 *
 * fs_backward first reads the forward's per-row L and computes each row's D = rowsum(dO ∘ O).
 * Then it walks the (Q tile, KV tile) pairs in the chosen order. For each pair the mask gives the
 * tile's class first (a skipped pair costs nothing); for a visited pair it recomputes S and
 * P = exp(S − L), forms dP and dS row by row, adds each row's dQ contribution, and adds each key's
 * dK and dV contribution. Gradients live for the whole problem at once, so both orders share one
 * body, visit().
 *
 * fs_backward_dense is the textbook backward that materializes S, P, dP and dS: the spec.
 */
#include "backward.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fs_lse(const double *m, const double *l, long n, double *L)
{
    /* m, l, L are (n) */
    for (long i = 0; i < n; i++) L[i] = l[i] > 0 ? m[i] + log(l[i]) : -INFINITY;
}

/* The factor the soft-cap puts on a score's gradient: d(cap · tanh(x / cap))/dx = 1 − (s/cap)²
 * with s the capped score; 1 without a cap. */
static double cap_slope(const fs_attn *a, double s)
{
    if (a->softcap <= 0) return 1;
    double t = s / a->softcap;
    return 1 - t * t;
}

/* Scratch for one tile. */
typedef struct {
    double *S, *P, *dP, *dS;   /* (Bk) one row's recomputed scores and weights, dP, dS */
    double *dq_blk;            /* (d) one row's dQ contribution */
    double *dq_old;            /* (d) copy for the trace */
    double *dk_blk;            /* (Bk, d)   each key's dK contribution from this tile */
    double *dv_blk;            /* (Bk, d_v) each key's dV contribution from this tile */
    double *g_old;             /* (max(d, d_v)) copy for the trace */
    uint8_t *Z;                /* (Bq, Bk) dropout: 1 where the cell is dropped, regenerated */
    double *drop;              /* (2 Bq Bk) dropout: the dropped visible cells as (row, key) */
} scratch;

/* Record e with its vectors: v[k] (n[k] numbers) goes to the trace's pool and its offset into
 * *off[k], for k < count; then e itself. */
static fs_status push_vecs(fs_trace *tr, fs_event *e, int64_t *off[], const double *v[], const int32_t n[],
                           int count)
{
    for (int k = 0; k < count; k++)
        if ((*off[k] = fs_trace_vec(tr, v[k], n[k])) < 0) return FS_ERR_NOMEM;
    return fs_trace_push(tr, e) ? FS_OK : fs_trace_error(tr);
}

/* One (Q tile, KV tile) pair of query head h.
 *   Q (n_q, d), dO (n_q, d_v), dQ (n_q, d), L, D (n_q) of head h;
 *   K (n_kv, d), V (n_kv, d_v), dK (n_kv, d), dV (n_kv, d_v) of its KV head. */
static fs_status visit(const fs_attn *a, const fs_tiling *t, int32_t h, int32_t qt, int32_t kt,
                       const double *L, const double *D, const double *dO, double *dQ, double *dK,
                       double *dV, scratch *w, fs_trace *tr)
{
    const int32_t kvh = fs_attn_kv_head(a, h);
    const int32_t r0 = qt * t->Bq, r1 = r0 + t->Bq < a->n_q ? r0 + t->Bq : a->n_q;
    const int32_t c0 = kt * t->Bk, c1 = c0 + t->Bk < a->n_kv ? c0 + t->Bk : a->n_kv;
    const int32_t nc = c1 - c0, d = a->d, d_v = a->d_v;
    const double *Q = a->Q + (size_t)h * a->n_q * d;
    const double *K = a->K + (size_t)kvh * a->n_kv * d;
    const double *V = a->V + (size_t)kvh * a->n_kv * d_v;

    fs_skip_reason why;
    fs_tile_class cls = fs_mask_classify(&a->mask, a->n_q, a->n_kv, r0, r1, c0, c1, &why);
    fs_event te = fs_event_pair(cls == FS_TILE_SKIPPED ? FS_EV_BSKIP : FS_EV_BTILE, h, kvh, qt, kt, r0, r1, c0, c1, cls);
    te.reason = why;
    /* Dropout: the forward's mask of this tile, regenerated from the same Philox counters. */
    const bool drop = t->dropout.on && cls != FS_TILE_SKIPPED;
    const double ks = drop ? fs_dropout_keep_scale(t->dropout.p) : 1.0;
    fs_status st;
    if (t->dropout.on && (st = fs_dropout_pair(&t->dropout, a, h, &te, w->Z, w->drop, tr)) != FS_OK) return st;
    if (tr && !fs_trace_push(tr, &te)) return fs_trace_error(tr);
    if (cls == FS_TILE_SKIPPED) return FS_OK;   /* costs nothing */

    memset(w->dk_blk, 0, sizeof(double) * (size_t)nc * d);
    memset(w->dv_blk, 0, sizeof(double) * (size_t)nc * d_v);
    for (int32_t i = r0; i < r1; i++) {
        const double *q = Q + (size_t)i * d, *dout = dO + (size_t)i * d_v;
        double *dq = dQ + (size_t)i * d;
        int32_t visible = 0;
        const uint8_t *z = drop ? w->Z + (size_t)(i - r0) * nc : NULL;
        /* S = scale · q Kᵀ (masked on partial tiles); P = exp(S − L); dP = dO Vᵀ; dS = P ∘ (dP − D).
         * With dropout dP = Z ∘ (dO Vᵀ) / (1 − p): a dropped weight passes no gradient back. */
        for (int32_t j = 0; j < nc; j++) {
            const double *v = V + (size_t)(c0 + j) * d_v;
            bool vis = cls == FS_TILE_FULL || fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, c0 + j);
            w->S[j] = vis ? fs_attn_score(a, h, i, c0 + j) : -INFINITY;
            w->P[j] = vis && L[i] > -INFINITY ? exp(w->S[j] - L[i]) : 0.0;
            double dp = 0;
            for (int32_t c = 0; c < d_v; c++) dp += dout[c] * v[c];
            if (z) dp = z[j] ? 0.0 : dp * ks;
            w->dP[j] = dp;
            w->dS[j] = w->P[j] == 0 ? 0.0 : w->P[j] * (dp - D[i]);   /* no −0 where masked */
            visible += vis;
        }
        /* dQ_i += scale · dS K;  dK_j += scale · dS_ij q;  dV_j += P_ij dO_i */
        for (int32_t c = 0; c < d; c++) w->dq_blk[c] = 0;
        for (int32_t j = 0; j < nc; j++) {
            if (w->P[j] == 0) continue;   /* masked (or underflowed): contributes nothing */
            double g = a->scale * w->dS[j] * cap_slope(a, w->S[j]);
            const double *k = K + (size_t)(c0 + j) * d;
            for (int32_t c = 0; c < d; c++) {
                w->dq_blk[c] += g * k[c];
                w->dk_blk[(size_t)j * d + c] += g * q[c];
            }
            if (z && z[j]) continue;   /* dropped: no dV (its dS above still reaches dQ and dK) */
            const double pd = z ? w->P[j] * ks : w->P[j];   /* the weight the forward used */
            for (int32_t c = 0; c < d_v; c++) w->dv_blk[(size_t)j * d_v + c] += pd * dout[c];
        }
        if (tr) memcpy(w->dq_old, dq, sizeof(double) * (size_t)d);
        for (int32_t c = 0; c < d; c++) dq[c] += w->dq_blk[c];
        if (tr) {
            fs_event e = fs_event_in_pair(FS_EV_BROW, &te);
            e.row = i;
            e.visible = visible;
            e.x = L[i];
            e.m_new = D[i];
            e.n_s = nc;
            e.n_o = d;
            int64_t *off[] = {&e.s_row, &e.p_row, &e.dp_row, &e.ds_row, &e.o_old, &e.o_blk, &e.o_new};
            const double *v[] = {w->S, w->P, w->dP, w->dS, w->dq_old, w->dq_blk, dq};
            const int32_t n[] = {nc, nc, nc, nc, d, d, d};
            st = push_vecs(tr, &e, off, v, n, 7);
            if (st != FS_OK) return st;
        }
    }
    for (int32_t j = 0; j < nc; j++) {
        double *dk = dK + (size_t)(c0 + j) * d, *dv = dV + (size_t)(c0 + j) * d_v;
        const double *dk_blk = w->dk_blk + (size_t)j * d, *dv_blk = w->dv_blk + (size_t)j * d_v;
        fs_event e = fs_event_in_pair(FS_EV_BKEY, &te);
        int64_t dk_old = -1;
        if (tr && (dk_old = fs_trace_vec(tr, dk, d)) < 0) return FS_ERR_NOMEM;
        if (tr) memcpy(w->g_old, dv, sizeof(double) * (size_t)d_v);
        for (int32_t c = 0; c < d; c++) dk[c] += dk_blk[c];
        for (int32_t c = 0; c < d_v; c++) dv[c] += dv_blk[c];
        if (tr) {
            e.row = c0 + j;
            e.o_old = dk_old;
            e.n_o = d;
            e.n_g = d_v;
            int64_t *off[] = {&e.o_blk, &e.o_new, &e.g_old, &e.g_blk, &e.g_new};
            const double *v[] = {dk_blk, dk, w->g_old, dv_blk, dv};
            const int32_t n[] = {d, d, d_v, d_v, d_v};
            st = push_vecs(tr, &e, off, v, n, 5);
            if (st != FS_OK) return st;
        }
    }
    return FS_OK;
}

/* One GRAD event: the final row `row` of dQ (head: the query head) or of dK, dV (head: the KV
 * head), v its n numbers. */
static fs_status push_grad(fs_trace *tr, int tensor, int32_t head, int32_t kv_head, int32_t row,
                           const double *v, int32_t n)
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

/* max |x_i| over n numbers (0 for none). */
static double max_abs(const double *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

fs_status fs_backward_check_range(const fs_attn *a, const double *dO, char *why, size_t n)
{
    /* shapes: dO (Hq, n_q, d_v); Q (Hq, n_q, d); K (Hkv, n_kv, d); V (Hkv, n_kv, d_v) */
    size_t rows = (size_t)a->n_q_heads * a->n_q, keys = (size_t)a->n_kv_heads * a->n_kv;
    for (size_t i = 0; dO && i < rows * (size_t)a->d_v; i++)
        if (!isfinite(dO[i])) {
            if (why) snprintf(why, n, "dO holds NaN or infinity");
            return FS_ERR_VALUE;
        }
    double A = dO ? max_abs(dO, rows * (size_t)a->d_v) : 1.0, Vi = max_abs(a->V, keys * (size_t)a->d_v);
    double Qi = a->Q ? max_abs(a->Q, rows * (size_t)a->d) : 0, Ki = a->K ? max_abs(a->K, keys * (size_t)a->d) : 0;
    double g = (double)(a->n_q_heads / a->n_kv_heads), sc = fabs(a->scale);
    double B = 2.0 * a->d_v * A * Vi;
    struct { const char *what; double bound; } b[] = {
        {"dP = dO Vᵀ and dS", B},
        {"dV = Pᵀ dO", g * a->n_q * A},
        {"dQ = scale · dS K", sc * B * Ki},
        {"dK = scale · dSᵀ Q", sc * g * a->n_q * B * Qi},
    };
    for (size_t k = 0; k < sizeof b / sizeof b[0]; k++)
        if (!(b[k].bound <= FS_VALUE_LIMIT)) {
            char v[48];
            if (isfinite(b[k].bound)) snprintf(v, sizeof v, "%.3g", b[k].bound);
            else snprintf(v, sizeof v, "more than %.3g", DBL_MAX);
            if (why)
                snprintf(why, n, "%s can reach %s with these inputs (largest |dO| %.3g, |V| %.3g, |Q| %.3g, "
                         "|K| %.3g), beyond the limit of %.2g that keeps float64 finite; scale dO or the inputs down",
                         b[k].what, v, A, Vi, Qi, Ki, FS_VALUE_LIMIT);
            return FS_ERR_RANGE;
        }
    return FS_OK;
}

/* Shapes: O, dO (n_q_heads, n_q, d_v); L, D (n_q_heads, n_q). */
fs_status fs_backward_rows(const fs_attn *a, const double *O, const double *L, const double *dO, double *D,
                           fs_trace *tr)
{
    const int32_t n_q = a->n_q, d_v = a->d_v;
    const size_t rows = (size_t)a->n_q_heads * n_q;
    fs_status st = FS_OK;
    for (size_t r = 0; r < rows && tr && st == FS_OK; r++) {
        fs_event e = fs_event_blank(FS_EV_LSE);
        e.head = (int32_t)(r / (size_t)n_q);
        e.kv_head = fs_attn_kv_head(a, e.head);
        e.row = (int32_t)(r % (size_t)n_q);
        e.x = L[r];
        if (!fs_trace_push(tr, &e)) st = fs_trace_error(tr);
    }
    for (size_t r = 0; r < rows && st == FS_OK; r++) {
        const double *o = O + r * (size_t)d_v, *dout = dO + r * (size_t)d_v;
        double sum = 0;
        for (int32_t c = 0; c < d_v; c++) sum += dout[c] * o[c];
        D[r] = sum;
        if (tr) {
            fs_event e = fs_event_blank(FS_EV_DELTA);
            e.head = (int32_t)(r / (size_t)n_q);
            e.kv_head = fs_attn_kv_head(a, e.head);
            e.row = (int32_t)(r % (size_t)n_q);
            e.x = sum;
            e.n_o = d_v;
            if ((e.o_blk = fs_trace_vec(tr, dout, d_v)) < 0 || (e.o_new = fs_trace_vec(tr, o, d_v)) < 0)
                st = FS_ERR_NOMEM;
            else if (!fs_trace_push(tr, &e))
                st = fs_trace_error(tr);
        }
    }
    return st;
}

fs_status fs_backward(const fs_attn *a, const fs_tiling *t, const double *O, const double *L,
                      const double *dO, double *dQ, double *dK, double *dV, double *D_out,
                      fs_trace *tr)
{
    /* shapes: O, dO (Hq, n_q, d_v); L, D_out (Hq, n_q); dQ (Hq, n_q, d); dK (Hkv, n_kv, d);
     *         dV (Hkv, n_kv, d_v). Loop order and events as in backward.h. */
    assert(a && t && O && L && dO && dQ && dK && dV);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    if (!a->Q || !a->K || a->S) return FS_ERR_ARG;   /* given scores have no dQ, dK */
    if (t->Bq < 1 || t->Bk < 1) return FS_ERR_TILE;
    if ((unsigned)t->order > FS_ORDER_KV_OUTER || t->pitfall != FS_PITFALL_NONE) return FS_ERR_ARG;
    if (t->dropout.on && fs_dropout_check(t->dropout.p) != FS_OK) return FS_ERR_ARG;
    if ((st = fs_backward_check_range(a, dO, NULL, 0)) != FS_OK) return st;

    const int32_t d = a->d, d_v = a->d_v, n_q = a->n_q, n_kv = a->n_kv;
    const int32_t Bk = t->Bk < n_kv ? t->Bk : n_kv;
    const int32_t g = a->n_q_heads / a->n_kv_heads;
    const size_t rows = (size_t)a->n_q_heads * n_q, keys = (size_t)a->n_kv_heads * n_kv;
    const int32_t dmax = d > d_v ? d : d_v;
    double *D = malloc(sizeof(double) * rows);
    scratch w;
    w.S = malloc(sizeof(double) * (size_t)Bk);
    w.P = malloc(sizeof(double) * (size_t)Bk);
    w.dP = malloc(sizeof(double) * (size_t)Bk);
    w.dS = malloc(sizeof(double) * (size_t)Bk);
    w.dq_blk = malloc(sizeof(double) * (size_t)d);
    w.dq_old = malloc(sizeof(double) * (size_t)d);
    w.dk_blk = malloc(sizeof(double) * (size_t)Bk * d);
    w.dv_blk = malloc(sizeof(double) * (size_t)Bk * d_v);
    w.g_old = malloc(sizeof(double) * (size_t)dmax);
    const int32_t Bq = t->Bq < n_q ? t->Bq : n_q;
    w.Z = malloc((size_t)Bq * Bk);
    w.drop = malloc(sizeof(double) * 2 * (size_t)Bq * Bk);
    st = FS_ERR_NOMEM;
    if (!D || !w.S || !w.P || !w.dP || !w.dS || !w.dq_blk || !w.dq_old || !w.dk_blk || !w.dv_blk || !w.g_old ||
        !w.Z || !w.drop)
        goto done;
    memset(dQ, 0, sizeof(double) * rows * (size_t)d);
    memset(dK, 0, sizeof(double) * keys * (size_t)d);
    memset(dV, 0, sizeof(double) * keys * (size_t)d_v);

    /* L as the forward kept it, then D = rowsum(dO ∘ O): one number per row, O(n) state. */
    if ((st = fs_backward_rows(a, O, L, dO, D, tr)) != FS_OK) goto done;

    const int32_t nqt = (n_q + t->Bq - 1) / t->Bq, nkt = (n_kv + t->Bk - 1) / t->Bk;
#define VISIT(h, qt, kt)                                                                              \
    visit(a, t, (h), (qt), (kt), L + (size_t)(h) * n_q, D + (size_t)(h) * n_q,                       \
          dO + (size_t)(h) * n_q * d_v, dQ + (size_t)(h) * n_q * d,                                   \
          dK + (size_t)fs_attn_kv_head(a, h) * n_kv * d, dV + (size_t)fs_attn_kv_head(a, h) * n_kv * d_v, \
          &w, tr)
    if (t->order == FS_ORDER_KV_OUTER) {
        /* FlashAttention 2: a KV tile stays put while every Q tile of every query head of its
         * group streams past it; its dK, dV rows are final when the inner loops end. */
        for (int32_t kvh = 0; kvh < a->n_kv_heads && st == FS_OK; kvh++)
            for (int32_t kt = 0; kt < nkt && st == FS_OK; kt++)
                for (int32_t h = kvh * g; h < (kvh + 1) * g && st == FS_OK; h++)
                    for (int32_t qt = 0; qt < nqt && st == FS_OK; qt++) st = VISIT(h, qt, kt);
    } else {
        /* A Q tile stays put while every KV tile streams past it; its dQ rows are then final. */
        for (int32_t h = 0; h < a->n_q_heads && st == FS_OK; h++)
            for (int32_t qt = 0; qt < nqt && st == FS_OK; qt++)
                for (int32_t kt = 0; kt < nkt && st == FS_OK; kt++) st = VISIT(h, qt, kt);
    }
#undef VISIT
    if (st != FS_OK || !tr) goto done;

    for (size_t r = 0; r < rows && st == FS_OK; r++) {
        int32_t h = (int32_t)(r / (size_t)n_q);
        st = push_grad(tr, FS_GRAD_DQ, h, fs_attn_kv_head(a, h), (int32_t)(r % (size_t)n_q),
                       dQ + r * (size_t)d, d);
    }
    for (size_t r = 0; r < keys && st == FS_OK; r++) {
        int32_t h = (int32_t)(r / (size_t)n_kv);
        st = push_grad(tr, FS_GRAD_DK, h, h, (int32_t)(r % (size_t)n_kv), dK + r * (size_t)d, d);
    }
    for (size_t r = 0; r < keys && st == FS_OK; r++) {
        int32_t h = (int32_t)(r / (size_t)n_kv);
        st = push_grad(tr, FS_GRAD_DV, h, h, (int32_t)(r % (size_t)n_kv), dV + r * (size_t)d_v, d_v);
    }

done:
    if (D_out && st == FS_OK) memcpy(D_out, D, sizeof(double) * rows);
    free(D);
    free(w.S);
    free(w.P);
    free(w.dP);
    free(w.dS);
    free(w.dq_blk);
    free(w.dq_old);
    free(w.dk_blk);
    free(w.dv_blk);
    free(w.g_old);
    free(w.Z);
    free(w.drop);
    return st;
}

fs_status fs_backward_dense(const fs_attn *a, const double *dO, double *dQ, double *dK, double *dV)
{
    /* dO (n_q_heads, n_q, d_v) in; dQ (n_q_heads, n_q, d), dK (n_kv_heads, n_kv, d),
     * dV (n_kv_heads, n_kv, d_v) out. Per head: S, P, dP, dS are (n_q, n_kv). */
    assert(a && dO && dQ && dK && dV);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    if (!a->Q || !a->K || a->S) return FS_ERR_ARG;
    const int32_t n_q = a->n_q, n_kv = a->n_kv, d = a->d, d_v = a->d_v;
    const size_t nn = (size_t)n_q * n_kv;
    double *S = malloc(sizeof(double) * nn), *P = malloc(sizeof(double) * nn);
    double *dP = malloc(sizeof(double) * nn), *dS = malloc(sizeof(double) * nn);
    if (!S || !P || !dP || !dS) {
        st = FS_ERR_NOMEM;
        goto done;
    }
    memset(dQ, 0, sizeof(double) * (size_t)a->n_q_heads * n_q * d);
    memset(dK, 0, sizeof(double) * (size_t)a->n_kv_heads * n_kv * d);
    memset(dV, 0, sizeof(double) * (size_t)a->n_kv_heads * n_kv * d_v);
    for (int32_t h = 0; h < a->n_q_heads; h++) {
        const int32_t kvh = fs_attn_kv_head(a, h);
        const double *Q = a->Q + (size_t)h * n_q * d, *K = a->K + (size_t)kvh * n_kv * d;
        const double *V = a->V + (size_t)kvh * n_kv * d_v, *G = dO + (size_t)h * n_q * d_v;
        double *gQ = dQ + (size_t)h * n_q * d, *gK = dK + (size_t)kvh * n_kv * d;
        double *gV = dV + (size_t)kvh * n_kv * d_v;
        for (int32_t i = 0; i < n_q; i++) {
            /* P = softmax of the masked row, two passes; a row that sees nothing is all zeros. */
            double *s = S + (size_t)i * n_kv, *p = P + (size_t)i * n_kv, mx = -INFINITY, sum = 0;
            for (int32_t j = 0; j < n_kv; j++) {
                s[j] = fs_mask_visible(&a->mask, n_q, n_kv, i, j) ? fs_attn_score(a, h, i, j) : -INFINITY;
                if (s[j] > mx) mx = s[j];
            }
            for (int32_t j = 0; j < n_kv; j++) sum += p[j] = s[j] == -INFINITY ? 0 : exp(s[j] - mx);
            for (int32_t j = 0; j < n_kv; j++) p[j] = sum > 0 ? p[j] / sum : 0;
            /* dP = dO Vᵀ; D = Σ_j P dP (equal to rowsum(dO ∘ O) since O = P V); dS = P ∘ (dP − D) */
            double Dr = 0;
            for (int32_t j = 0; j < n_kv; j++) {
                double acc = 0;
                for (int32_t c = 0; c < d_v; c++) acc += G[(size_t)i * d_v + c] * V[(size_t)j * d_v + c];
                dP[(size_t)i * n_kv + j] = acc;
                Dr += p[j] * acc;
            }
            for (int32_t j = 0; j < n_kv; j++)
                dS[(size_t)i * n_kv + j] = p[j] * (dP[(size_t)i * n_kv + j] - Dr) * cap_slope(a, s[j] == -INFINITY ? 0 : s[j]);
        }
        /* dV += Pᵀ dO;  dQ = scale · dS K;  dK += scale · dSᵀ Q */
        for (int32_t i = 0; i < n_q; i++)
            for (int32_t j = 0; j < n_kv; j++) {
                double p = P[(size_t)i * n_kv + j], ds = a->scale * dS[(size_t)i * n_kv + j];
                for (int32_t c = 0; c < d_v; c++) gV[(size_t)j * d_v + c] += p * G[(size_t)i * d_v + c];
                for (int32_t c = 0; c < d; c++) {
                    gQ[(size_t)i * d + c] += ds * K[(size_t)j * d + c];
                    gK[(size_t)j * d + c] += ds * Q[(size_t)i * d + c];
                }
            }
    }
    st = FS_OK;
done:
    free(S);
    free(P);
    free(dP);
    free(dS);
    return st;
}

const char *fs_grad_str(int tensor)
{
    static const char *s[] = {"dQ", "dK", "dV"};
    return tensor >= 0 && tensor <= FS_GRAD_DV ? s[tensor] : "?";
}

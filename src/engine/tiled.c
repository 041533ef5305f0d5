/* tiled.c: tiled FlashAttention, instrumented (000, 001, 002, 004; exp2 from 003).
 *
 * fs_tiled walks the (Q tile, KV tile) pairs in the chosen loop order. For each pair it asks the
 * mask for the tile's class first; a skipped pair costs nothing. For a visited pair it computes
 * the Bq × Bk block of scores S (element mask only for partial tiles), then folds each row into
 * that row's running (m, ℓ, o) with row_update. Running state lives for all rows of a head at
 * once, so both loop orders share one body. Only the moment a row is finished (finish_rows:
 * divided by ℓ in the unnormalized form, OUT recorded) depends on the order: Q outer, right after
 * its Q tile's last KV tile; KV outer, after the last KV tile of all.
 */
#include "tiled.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LOG2E 1.4426950408889634074

fs_tiling fs_tiling_default(void)
{
    fs_tiling t = {64, 64, FS_FORM_NORMALIZED, FS_ORDER_Q_OUTER, false, FS_PITFALL_NONE, {false, 0.0, 0}};
    return t;
}

/* The score in the units of the run: natural, or base-2 with exp2 (003 folds scale · log2 e into
 * Q; multiplying the score is the same number). No mask here: the caller applies it to partial
 * tiles only. */
static double score(const fs_attn *a, int32_t h, int32_t i, int32_t j, bool use_exp2)
{
    double s = fs_attn_score(a, h, i, j);
    return use_exp2 ? s * LOG2E : s;
}

static double ex(double x, bool use_exp2) { return use_exp2 ? exp2(x) : exp(x); }

/* Scratch for one tile. */
typedef struct {
    double *S;    /* (Bq, Bk) scores, −∞ where masked */
    double *P;    /* (Bk) weights of one row */
    double *pv;   /* (d_v) Σ_j P_j V_j of one row */
    double *o_old;/* (d_v) copy for the trace */
    uint8_t *Z;   /* (Bq, Bk) dropout: 1 where the cell is dropped */
    double *drop; /* (2 Bq Bk) dropout: the dropped visible cells as (row, key) */
} scratch;

/* Fold one row's block of scores into its running state.
 *   s is (nc) scores of keys c0 .. c0+nc−1, −∞ where masked; V is (n_kv, d_v) of this head.
 *   dropped is (nc), 1 where dropout drops the weight (NULL without dropout); ks = 1/(1 − p).
 *   m, l are the row's running max and sum; o is its (d_v) running output.
 * Fills e's statistics (the caller records it). */
static void row_update(const fs_tiling *t, const double *s, int32_t nc, int32_t c0, const double *V,
                       int32_t d_v, const uint8_t *dropped, double ks, double *m, double *l, double *o,
                       scratch *w, fs_event *e, bool tracing)
{
    const bool e2 = t->exp2;
    double m_old = *m, l_old = *l;
    double m_blk = -INFINITY;
    int32_t visible = 0;
    for (int32_t j = 0; j < nc; j++) {
        if (s[j] == -INFINITY) continue;
        visible++;
        if (s[j] > m_blk) m_blk = s[j];
    }
    double m_new = m_old > m_blk ? m_old : m_blk;
    double alpha, beta, l_blk = 0, l_new;

    /* P̃ = exp(s − m_blk), the block's own weights (001); 0 where masked. The unnormalized form
     * does not need them (it exponentiates against m_new) unless a trace reports ℓ_blk. */
    bool need_blk = tracing || t->form == FS_FORM_NORMALIZED || t->pitfall != FS_PITFALL_NONE;
    if (need_blk && (m_blk > -INFINITY || t->pitfall == FS_PITFALL_MASKED_NAN)) {
        for (int32_t j = 0; j < nc; j++) {
            w->P[j] = (s[j] == -INFINITY && m_blk > -INFINITY) ? 0.0 : ex(s[j] - m_blk, e2);
            l_blk += w->P[j];
        }
    } else if (need_blk) {
        for (int32_t j = 0; j < nc; j++) w->P[j] = 0;   /* nothing visible: no weights */
    }

    switch (t->pitfall) {
    case FS_PITFALL_NONE:
        if (m_new == -INFINITY) {
            /* Nothing visible yet: the state stays (−∞, 0, 0); report α = 1, β = 0. */
            alpha = 1;
            beta = 0;
            l_new = l_old;
            break;
        }
        alpha = ex(m_old - m_new, e2);   /* exp(−∞ − m_new) = 0 on the first visible key */
        beta = ex(m_blk - m_new, e2);    /* 0 when the block has nothing visible */
        if (t->form == FS_FORM_NORMALIZED) {
            /* o_new = (α ℓ_old o_old + β P̃ V) / ℓ_new; with dropout P̃ V becomes (Z ∘ P̃) V / (1 − p)
             * while ℓ keeps the whole P̃ */
            l_new = alpha * l_old + beta * l_blk;
            for (int32_t c = 0; c < d_v; c++) w->pv[c] = 0;
            for (int32_t j = 0; j < nc; j++) {
                if (w->P[j] == 0) continue;
                if (dropped && dropped[j]) continue;
                const double pj = dropped ? w->P[j] * ks : w->P[j];
                const double *v = V + (size_t)(c0 + j) * d_v;
                for (int32_t c = 0; c < d_v; c++) w->pv[c] += pj * v[c];
            }
            for (int32_t c = 0; c < d_v; c++) o[c] = (alpha * l_old * o[c] + beta * w->pv[c]) / l_new;
        } else {
            /* P = exp(s − m_new) directly; o_new = α o_old + P V; divide by ℓ at the end. */
            double sum = 0;
            for (int32_t c = 0; c < d_v; c++) o[c] *= alpha;
            for (int32_t j = 0; j < nc; j++) {
                if (s[j] == -INFINITY) continue;
                double p = ex(s[j] - m_new, e2);
                sum += p;                          /* ℓ: P before dropout */
                if (dropped && dropped[j]) continue;
                if (dropped) p *= ks;              /* a kept weight, scaled by 1/(1 − p) */
                const double *v = V + (size_t)(c0 + j) * d_v;
                for (int32_t c = 0; c < d_v; c++) o[c] += p * v[c];
            }
            l_new = alpha * l_old + sum;
        }
        break;

    /* ---- Deliberately wrong variants (001's pitfalls). Read past them for the algorithm. ---- */
    case FS_PITFALL_NO_RESCALE:
        alpha = m_new == -INFINITY ? 1 : ex(m_old - m_new, e2);
        beta = m_new == -INFINITY ? 0 : ex(m_blk - m_new, e2);
        l_new = alpha * l_old + beta * l_blk;
        for (int32_t c = 0; c < d_v; c++) {
            double pv = 0;
            for (int32_t j = 0; j < nc; j++)
                if (w->P[j] != 0) pv += w->P[j] * V[(size_t)(c0 + j) * d_v + c];
            o[c] = o[c] + (l_new > 0 ? pv / l_new : 0); /* old output never rescaled */
        }
        break;
    case FS_PITFALL_GLOBAL_MAX_NO_BETA:
    case FS_PITFALL_BLOCK_MAX_NO_BETA: {
        alpha = m_new == -INFINITY ? 1 : ex(m_old - m_new, e2);
        beta = 1; /* no β anywhere */
        bool global = t->pitfall == FS_PITFALL_GLOBAL_MAX_NO_BETA;
        double sum = 0;
        for (int32_t c = 0; c < d_v; c++) w->pv[c] = 0;
        for (int32_t j = 0; j < nc; j++) {
            if (s[j] == -INFINITY) continue;
            double p = global ? ex(s[j] - m_new, e2) : w->P[j];
            sum += p;
            for (int32_t c = 0; c < d_v; c++) w->pv[c] += p * V[(size_t)(c0 + j) * d_v + c];
        }
        l_new = alpha * l_old + sum;
        for (int32_t c = 0; c < d_v; c++)
            o[c] = l_new > 0 ? (alpha * l_old * o[c] + w->pv[c]) / l_new : o[c];
        break;
    }
    case FS_PITFALL_MASKED_NAN:
    case FS_PITFALL_MASKED_DOC_FIX: {
        /* 001's update with its safe_ell; MASKED_NAN drops the valid-row guard entirely,
         * MASKED_DOC_FIX keeps 001's guard on β and P̃ but not on α. */
        bool valid = m_blk > -INFINITY;
        bool guard = t->pitfall == FS_PITFALL_MASKED_DOC_FIX;
        alpha = ex(m_old - m_new, e2);                       /* NaN when both are −∞ */
        beta = (guard && !valid) ? 0.0 : ex(m_blk - m_new, e2);
        if (guard && !valid) l_blk = 0;
        l_new = l_old * alpha + l_blk * beta;
        double safe = l_new == 0 ? 1.0 : l_new;
        for (int32_t c = 0; c < d_v; c++) {
            double pv = 0;
            for (int32_t j = 0; j < nc; j++) pv += w->P[j] * V[(size_t)(c0 + j) * d_v + c];
            o[c] = (o[c] * alpha * l_old + beta * pv) / safe;
        }
        break;
    }
    default:
        assert(!"unknown pitfall");
        alpha = beta = l_new = 0;
    }

    *m = m_new;
    *l = l_new;
    if (tracing) {
        e->m_old = m_old;
        e->m_blk = m_blk;
        e->m_new = m_new;
        e->l_old = l_old;
        e->l_blk = l_blk;
        e->l_new = l_new;
        e->alpha = alpha;
        e->beta = beta;
        e->visible = visible;
    }
}

static fs_status record_row(fs_trace *tr, fs_event *e, const double *s, const double *P, int32_t nc,
                            const double *o_old, const double *o_new, int32_t d_v)
{
    e->n_s = nc;
    e->n_o = d_v;
    if ((e->s_row = fs_trace_vec(tr, s, nc)) < 0 || (e->p_row = fs_trace_vec(tr, P, nc)) < 0 ||
        (e->o_old = fs_trace_vec(tr, o_old, d_v)) < 0 || (e->o_new = fs_trace_vec(tr, o_new, d_v)) < 0)
        return FS_ERR_NOMEM;
    return fs_trace_push(tr, e) ? FS_OK : fs_trace_error(tr);
}

/* One visited (or skipped) pair of tiles for head h. */
static fs_status visit(const fs_attn *a, const fs_tiling *t, int32_t h, int32_t qt, int32_t kt,
                       double *m, double *l, double *O, scratch *w, fs_trace *tr)
{
    const int32_t kvh = fs_attn_kv_head(a, h);
    const int32_t r0 = qt * t->Bq, r1 = r0 + t->Bq < a->n_q ? r0 + t->Bq : a->n_q;
    const int32_t c0 = kt * t->Bk, c1 = c0 + t->Bk < a->n_kv ? c0 + t->Bk : a->n_kv;
    const int32_t nc = c1 - c0, d_v = a->d_v;
    const double *V = a->V + (size_t)kvh * a->n_kv * d_v;

    fs_skip_reason why;
    fs_tile_class cls = fs_mask_classify(&a->mask, a->n_q, a->n_kv, r0, r1, c0, c1, &why);
    fs_event te = fs_event_pair(cls == FS_TILE_SKIPPED ? FS_EV_SKIP : FS_EV_TILE, h, kvh, qt, kt, r0, r1, c0, c1, cls);
    te.reason = why;
    if (cls == FS_TILE_SKIPPED) {   /* costs nothing */
        fs_status st;
        if (t->dropout.on && (st = fs_dropout_pair(&t->dropout, a, h, &te, NULL, NULL, tr)) != FS_OK) return st;
        if (tr && !fs_trace_push(tr, &te)) return fs_trace_error(tr);
        return FS_OK;
    }

    /* S = scale · Q_tile K_tileᵀ   (r1 − r0, nc); the element mask only on partial tiles */
    for (int32_t i = r0; i < r1; i++) {
        double *srow = w->S + (size_t)(i - r0) * nc;
        for (int32_t j = 0; j < nc; j++) {
            if (cls == FS_TILE_PARTIAL && !fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, c0 + j))
                srow[j] = -INFINITY;
            else
                srow[j] = score(a, h, i, c0 + j, t->exp2);
        }
    }
    /* Dropout: the tile's decisions from Philox, (r1 − r0, nc); nothing is kept past the tile. */
    const bool drop = t->dropout.on;
    const double ks = drop ? fs_dropout_keep_scale(t->dropout.p) : 1.0;
    fs_status st;
    if (drop && (st = fs_dropout_pair(&t->dropout, a, h, &te, w->Z, w->drop, tr)) != FS_OK) return st;
    if (tr && !fs_trace_push(tr, &te)) return fs_trace_error(tr);

    for (int32_t i = r0; i < r1; i++) {
        const double *srow = w->S + (size_t)(i - r0) * nc;
        double *o = O + ((size_t)h * a->n_q + i) * d_v;
        size_t si = (size_t)h * a->n_q + i;
        fs_event e = fs_event_in_pair(FS_EV_ROW, &te);
        if (tr) memcpy(w->o_old, o, sizeof(double) * (size_t)d_v);
        const uint8_t *z = drop ? w->Z + (size_t)(i - r0) * nc : NULL;
        row_update(t, srow, nc, c0, V, d_v, z, ks, &m[si], &l[si], o, w, &e, tr != NULL);
        if (tr) {
            e.row = i;
            e.normalized = t->form == FS_FORM_NORMALIZED || t->pitfall != FS_PITFALL_NONE;
            st = record_row(tr, &e, srow, w->P, nc, w->o_old, o, d_v);
            if (st != FS_OK) return st;
        }
    }
    return FS_OK;
}

/* Finish rows r_beg .. r_end − 1 (indices h · n_q + i into the (n_q_heads, n_q) rows): the
 * unnormalized form divides o by ℓ now (a row that saw nothing stays 0; the pitfall variants
 * keep o as they left it), the row's OUT event is recorded, m and ℓ are copied out.
 *   m, l (rows): running state; O (rows, d_v); m_out, l_out (rows) may be NULL. */
static fs_status finish_rows(const fs_attn *a, const fs_tiling *t, size_t r_beg, size_t r_end, const double *m,
                             const double *l, double *O, double *m_out, double *l_out, fs_trace *tr)
{
    const bool divide = t->form == FS_FORM_UNNORMALIZED && t->pitfall == FS_PITFALL_NONE;
    for (size_t r = r_beg; r < r_end; r++) {
        double *o = O + r * (size_t)a->d_v;
        if (divide)
            for (int32_t c = 0; c < a->d_v; c++) o[c] = l[r] > 0 ? o[c] / l[r] : 0;
        if (tr) {
            const fs_status st = fs_trace_push_out(tr, a, r, o, m[r], l[r]);
            if (st != FS_OK) return st;
        }
        if (m_out) m_out[r] = t->exp2 ? m[r] / LOG2E : m[r];
        if (l_out) l_out[r] = l[r];
    }
    return FS_OK;
}

fs_status fs_tiled(const fs_attn *a, const fs_tiling *t, double *O, double *m_out, double *l_out,
                   fs_trace *tr)
{
    assert(a && t && O);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    if (t->Bq < 1 || t->Bk < 1) return FS_ERR_TILE;
    if ((unsigned)t->form > FS_FORM_UNNORMALIZED || (unsigned)t->order > FS_ORDER_KV_OUTER ||
        (unsigned)t->pitfall >= FS_PITFALL_COUNT)
        return FS_ERR_ARG;
    if (t->dropout.on && (fs_dropout_check(t->dropout.p) != FS_OK || t->pitfall != FS_PITFALL_NONE))
        return FS_ERR_ARG;

    const int32_t Bq = t->Bq < a->n_q ? t->Bq : a->n_q;
    const int32_t Bk = t->Bk < a->n_kv ? t->Bk : a->n_kv;
    const size_t rows = (size_t)a->n_q_heads * a->n_q;
    double *m = malloc(sizeof(double) * rows), *l = malloc(sizeof(double) * rows);
    scratch w;
    w.S = malloc(sizeof(double) * (size_t)Bq * Bk);
    w.P = malloc(sizeof(double) * (size_t)Bk);
    w.pv = malloc(sizeof(double) * (size_t)a->d_v);
    w.o_old = malloc(sizeof(double) * (size_t)a->d_v);
    w.Z = malloc((size_t)Bq * Bk);
    w.drop = malloc(sizeof(double) * 2 * (size_t)Bq * Bk);
    st = FS_ERR_NOMEM;
    if (!m || !l || !w.S || !w.P || !w.pv || !w.o_old || !w.Z || !w.drop) goto done;

    for (size_t r = 0; r < rows; r++) {
        m[r] = -INFINITY;
        l[r] = 0;
    }
    memset(O, 0, sizeof(double) * rows * (size_t)a->d_v);

    const int32_t nqt = (a->n_q + t->Bq - 1) / t->Bq, nkt = (a->n_kv + t->Bk - 1) / t->Bk;
    const size_t nq = (size_t)a->n_q;
    st = FS_OK;
    for (int32_t h = 0; h < a->n_q_heads && st == FS_OK; h++) {
        if (t->order == FS_ORDER_Q_OUTER) {
            /* A Q tile's rows are final once it has met every KV tile: out with them now. */
            for (int32_t qt = 0; qt < nqt && st == FS_OK; qt++) {
                for (int32_t kt = 0; kt < nkt && st == FS_OK; kt++)
                    st = visit(a, t, h, qt, kt, m, l, O, &w, tr);
                const int32_t r0 = qt * t->Bq, r1 = r0 + t->Bq < a->n_q ? r0 + t->Bq : a->n_q;
                if (st == FS_OK) st = finish_rows(a, t, (size_t)h * nq + (size_t)r0, (size_t)h * nq + (size_t)r1,
                                                  m, l, O, m_out, l_out, tr);
            }
        } else {
            for (int32_t kt = 0; kt < nkt && st == FS_OK; kt++)
                for (int32_t qt = 0; qt < nqt && st == FS_OK; qt++)
                    st = visit(a, t, h, qt, kt, m, l, O, &w, tr);
        }
    }
    /* KV outer: every row of every head stays live until the last KV tile; all out at the end. */
    if (st == FS_OK && t->order == FS_ORDER_KV_OUTER) st = finish_rows(a, t, 0, rows, m, l, O, m_out, l_out, tr);

done:
    free(m);
    free(l);
    free(w.S);
    free(w.P);
    free(w.pv);
    free(w.o_old);
    free(w.Z);
    free(w.drop);
    return st;
}

fs_status fs_online_query(const fs_attn *a, double *O, fs_trace *tr)
{
    fs_tiling t = fs_tiling_default();
    t.Bq = 1;
    t.Bk = 1;
    t.form = FS_FORM_UNNORMALIZED;
    return fs_tiled(a, &t, O, NULL, NULL, tr);
}

const char *fs_form_str(fs_form f) { return f == FS_FORM_UNNORMALIZED ? "unnormalized" : "normalized"; }
const char *fs_order_str(fs_order o) { return o == FS_ORDER_KV_OUTER ? "kv-outer" : "q-outer"; }

const char *fs_pitfall_str(fs_pitfall p)
{
    static const char *s[] = {"none", "no-rescale", "global-max-no-beta", "block-max-no-beta",
                              "masked-nan", "masked-doc-fix"};
    return (unsigned)p < FS_PITFALL_COUNT ? s[p] : "?";
}

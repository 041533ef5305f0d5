/* records.c: a traced tiled kernel's records into the engine's events (records.h). */
#include "kernels/records/records.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A number the kernel wrote, with its stand-in for −∞ read as −∞. */
static double num(float x) { return x <= -FLT_MAX ? -INFINITY : (double)x; }

/* A small count or enum the kernel wrote as a float; −1 for anything else (NaN from a record
 * never written included), which then shows in the comparison with the engine. */
static int32_t whole(float x) { return x >= 0 && x <= 1e6f ? (int32_t)x : -1; }

int32_t fs_records_slots(const fs_attn *at, const fs_tiling *t) { return t->Bk < at->n_kv ? t->Bk : at->n_kv; }

int32_t fs_records_n_kt(const fs_attn *at, const fs_tiling *t) { return (at->n_kv + t->Bk - 1) / t->Bk; }

int64_t fs_records_len(const fs_attn *at, const fs_tiling *t)
{
    return FS_REC_STATS + 2 * (int64_t)fs_records_slots(at, t) + at->d_v;
}

static fs_status push(fs_trace *tr, fs_event *e, const double *s, const double *p, int32_t ns,
                      const double *o_old, const double *o_new, int32_t no)
{
    e->n_s = s ? ns : 0;
    e->n_o = no;
    if ((s && (e->s_row = fs_trace_vec(tr, s, ns)) < 0) || (p && (e->p_row = fs_trace_vec(tr, p, ns)) < 0) ||
        (o_old && (e->o_old = fs_trace_vec(tr, o_old, no)) < 0) ||
        (o_new && (e->o_new = fs_trace_vec(tr, o_new, no)) < 0) || !fs_trace_push(tr, e))
        return fs_trace_error(tr);
    return FS_OK;
}

/* The (qt, kt) pair of head h: its TILE or SKIP (class and reason as the pair's first row wrote
 * them: every row of a pair writes the same), then a ROW per row of a visited pair.
 * o_prev (n_q_heads, n_q, d_v): each row's last o_new; buf: 2 · slots + d_v doubles. */
static fs_status pair_events(const fs_attn *at, const fs_tiling *t, const fs_records *r, int32_t h, int32_t qt,
                             int32_t kt, double *o_prev, double *buf, fs_trace *tr)
{
    const int32_t d_v = at->d_v;
    const int32_t r0 = qt * t->Bq, r1 = r0 + t->Bq < at->n_q ? r0 + t->Bq : at->n_q;
    const int32_t c0 = kt * t->Bk, c1 = c0 + t->Bk < at->n_kv ? c0 + t->Bk : at->n_kv, nc = c1 - c0;
    const float *first = r->rec + (((int64_t)h * at->n_q + r0) * r->n_kt + kt) * r->rec_len;
    int32_t c = whole(first[FS_REC_CLS]);
    fs_tile_class cls = c >= 0 && c <= (int32_t)FS_TILE_SKIPPED ? (fs_tile_class)c : FS_TILE_PARTIAL;
    fs_event e = fs_event_pair(cls == FS_TILE_SKIPPED ? FS_EV_SKIP : FS_EV_TILE, h, fs_attn_kv_head(at, h), qt, kt,
                               r0, r1, c0, c1, cls);
    if (c != (int32_t)cls) e.cls = (fs_tile_class)c;   /* nonsense shows in the comparison */
    e.reason = (fs_skip_reason)whole(first[FS_REC_WHY]);
    if (!fs_trace_push(tr, &e)) return fs_trace_error(tr);
    if (cls == FS_TILE_SKIPPED) return FS_OK;
    double *s = buf, *p = s + nc, *o = p + nc;
    for (int32_t i = r0; i < r1; i++) {
        const float *rec = r->rec + (((int64_t)h * at->n_q + i) * r->n_kt + kt) * r->rec_len;
        const float *rs = rec + FS_REC_STATS, *rp = rs + r->slots, *ro = rp + r->slots;
        fs_event w = fs_event_in_pair(FS_EV_ROW, &e);
        w.row = i;
        w.visible = whole(rec[FS_REC_VISIBLE]);
        w.m_old = num(rec[FS_REC_M_OLD]);
        w.m_blk = num(rec[FS_REC_M_BLK]);
        w.m_new = num(rec[FS_REC_M_NEW]);
        w.l_old = rec[FS_REC_L_OLD];
        w.l_blk = rec[FS_REC_L_BLK];
        w.l_new = rec[FS_REC_L_NEW];
        w.alpha = rec[FS_REC_ALPHA];
        w.beta = rec[FS_REC_BETA];
        w.normalized = t->form == FS_FORM_NORMALIZED;
        for (int32_t j = 0; j < nc; j++) {
            s[j] = num(rs[j]);
            p[j] = rp[j];
        }
        for (int32_t k = 0; k < d_v; k++) o[k] = ro[k];
        double *op = o_prev + ((int64_t)h * at->n_q + i) * d_v;
        fs_status st = push(tr, &w, s, p, nc, op, o, d_v);
        if (st != FS_OK) return st;
        memcpy(op, o, sizeof(double) * (size_t)d_v);
    }
    return FS_OK;
}

/* The OUT events of rows x_beg .. x_end − 1 (indices h · n_q + i), in order: the kernel's
 * final m, ℓ and O row. buf: d_v doubles. */
static fs_status out_events(const fs_attn *at, const fs_records *r, int64_t x_beg, int64_t x_end, double *buf,
                            fs_trace *tr)
{
    const int32_t d_v = at->d_v;
    fs_status st = FS_OK;
    for (int64_t x = x_beg; x < x_end && st == FS_OK; x++) {
        fs_event e = fs_event_blank(FS_EV_OUT);
        e.head = (int32_t)(x / at->n_q);
        e.kv_head = fs_attn_kv_head(at, e.head);
        e.row = (int32_t)(x % at->n_q);
        e.m_new = num(r->m[x * r->ml_stride]);
        e.l_new = r->l[x * r->ml_stride];
        e.normalized = true;
        for (int32_t k = 0; k < d_v; k++) buf[k] = r->O[x * d_v + k];
        st = push(tr, &e, NULL, NULL, 0, NULL, buf, d_v);
    }
    return st;
}

fs_status fs_records_events(const fs_attn *at, const fs_tiling *t, const fs_records *r, fs_trace *tr)
{
    if (t->Bq < 1 || t->Bk < 1 || !r->rec || !r->O || !r->m || !r->l) return FS_ERR_ARG;
    const int32_t n_qt = (at->n_q + t->Bq - 1) / t->Bq, n_kt = r->n_kt, d_v = at->d_v;
    const int64_t rows = (int64_t)at->n_q_heads * at->n_q;
    double *o_prev = calloc((size_t)(rows * d_v > 0 ? rows * d_v : 1), sizeof(double));
    double *buf = malloc(sizeof(double) * (size_t)(2 * (int64_t)r->slots + d_v + 1));
    fs_status st = o_prev && buf ? FS_OK : FS_ERR_NOMEM;
    const bool q_outer = t->order == FS_ORDER_Q_OUTER;
    const int32_t outer = q_outer ? n_qt : n_kt, inner = q_outer ? n_kt : n_qt;
    for (int32_t h = 0; h < at->n_q_heads && st == FS_OK; h++)
        for (int32_t a = 0; a < outer && st == FS_OK; a++) {
            for (int32_t b = 0; b < inner && st == FS_OK; b++)
                st = pair_events(at, t, r, h, q_outer ? a : b, q_outer ? b : a, o_prev, buf, tr);
            if (q_outer && st == FS_OK) {   /* Q outer: the Q tile's rows are final, out now */
                const int32_t r0 = a * t->Bq, r1 = r0 + t->Bq < at->n_q ? r0 + t->Bq : at->n_q;
                st = out_events(at, r, (int64_t)h * at->n_q + r0, (int64_t)h * at->n_q + r1, buf, tr);
            }
        }
    if (!q_outer && st == FS_OK) st = out_events(at, r, 0, rows, buf, tr);   /* KV outer: all at the end */
    free(o_prev);
    free(buf);
    return st;
}

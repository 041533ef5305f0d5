/* scene_backward.c: the backward pass by recomputation (docs/07-backward.md).
 *
 * The main area shows one query head's n_q × n_kv pairs cut into tiles, each visited pair
 * coloured by its recomputed P = exp(S − L); the KV tile being finished (kv-outer, FlashAttention
 * 2) or the Q tile (q-outer) is outlined as a band, the pair being recomputed as the current
 * tile. Right of the pairs, the rows of dQ accumulate; under the keys, each key's dK and dV
 * rows, outlined in green once final. The side panel shows the current tile's recomputed P beside
 * dP and dS, the current row's L, D and dQ contribution, and the attention state saved for the
 * backward pass (one L per row) against a materializing run's saved P.
 *
 * Like every scene it reads the trace up to the current step (one scan, bscan) and never
 * recomputes the algorithm. It reads from the problem only its shape (rows, keys, d, d_v, heads,
 * tiles, loop order) and, when Q is there, its mask: a saved trace replayed (trace_file.c) has
 * no Q, K, V or dO, and every number drawn comes from the events.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/memory.h"
#include "gui/draw.h"

#define ELEM_BYTES 4   /* the saved-state counters assume fp32, like the tiled scene's */

typedef struct {
    const fs_trace *t;
    int head, kvh, n_q, n_kv, d, d_v, Bq, Bk, nqt, nkt;
    int64_t k;
    int64_t *cell_ev;     /* (n_q, n_kv): latest BROW of this head covering the pair, −1 none */
    int64_t *tile_ev;     /* (nqt, nkt): BTILE or BSKIP of this head, −1 while in the future */
    int64_t *dq_ev;       /* (n_q): latest BROW of the row */
    int64_t *dq_last;     /* (n_q): the row's last BROW in the whole trace: dQ final after it */
    int64_t *key_ev;      /* (n_kv): latest BKEY of the key in this KV head (any query head) */
    int64_t *key_last;    /* (n_kv): the key's last BKEY in the whole trace */
    int64_t cur_tile;     /* latest BTILE / BSKIP ≤ k of this head */
    int64_t cur_row;      /* the BROW at step k, or the latest of the current tile; −1 none */
    double *L;            /* (n_q) from the LSE events ≤ k (NAN before) */
    double *D;            /* (n_q) from the DELTA events ≤ k */
} bscan;

static void bscan_free(bscan *c)
{
    free(c->cell_ev); free(c->tile_ev); free(c->dq_ev); free(c->dq_last);
    free(c->key_ev); free(c->key_last); free(c->L); free(c->D);
}

/* The query head to show at step k: that of the latest tile, row or dQ event (0 before any). */
static int shown_head(const fs_trace *t, int64_t k)
{
    for (int64_t s = k; s >= 0 && s < t->n; s--) {
        const fs_event *e = &t->ev[s];
        if (e->kind == FS_EV_BTILE || e->kind == FS_EV_BSKIP || e->kind == FS_EV_BROW || e->kind == FS_EV_BKEY ||
            e->kind == FS_EV_LSE || e->kind == FS_EV_DELTA || (e->kind == FS_EV_GRAD && e->tensor == FS_GRAD_DQ))
            return e->head > 0 ? e->head : 0;
    }
    return 0;
}

static bool bscan_build(bscan *c, const gui_show *show, int64_t k)
{
    memset(c, 0, sizeof *c);
    const fs_attn *a = &show->run.attn;
    const fs_trace *t = &show->trace;
    c->t = t;
    c->k = k;
    c->head = shown_head(t, k);
    c->kvh = fs_attn_kv_head(a, c->head);
    c->n_q = a->n_q; c->n_kv = a->n_kv; c->d = a->d; c->d_v = a->d_v;
    c->Bq = show->run.tiling.Bq > 0 ? show->run.tiling.Bq : 1;
    c->Bk = show->run.tiling.Bk > 0 ? show->run.tiling.Bk : 1;
    c->nqt = (c->n_q + c->Bq - 1) / c->Bq;
    c->nkt = (c->n_kv + c->Bk - 1) / c->Bk;
    if ((int64_t)c->n_q * c->n_kv > (1 << 18)) return false;   /* lessons are small; this is a bound */
    size_t nn = (size_t)c->n_q * (size_t)c->n_kv, nt = (size_t)c->nqt * (size_t)c->nkt;
    c->cell_ev = malloc(sizeof(int64_t) * nn);
    c->tile_ev = malloc(sizeof(int64_t) * nt);
    c->dq_ev = malloc(sizeof(int64_t) * (size_t)c->n_q);
    c->dq_last = malloc(sizeof(int64_t) * (size_t)c->n_q);
    c->key_ev = malloc(sizeof(int64_t) * (size_t)c->n_kv);
    c->key_last = malloc(sizeof(int64_t) * (size_t)c->n_kv);
    c->L = malloc(sizeof(double) * (size_t)c->n_q);
    c->D = malloc(sizeof(double) * (size_t)c->n_q);
    if (!c->cell_ev || !c->tile_ev || !c->dq_ev || !c->dq_last || !c->key_ev || !c->key_last || !c->L || !c->D) {
        bscan_free(c);
        return false;
    }
    for (size_t i = 0; i < nn; i++) c->cell_ev[i] = -1;
    for (size_t i = 0; i < nt; i++) c->tile_ev[i] = -1;
    for (int i = 0; i < c->n_q; i++) { c->dq_ev[i] = c->dq_last[i] = -1; c->L[i] = c->D[i] = NAN; }
    for (int j = 0; j < c->n_kv; j++) c->key_ev[j] = c->key_last[j] = -1;
    c->cur_tile = c->cur_row = -1;
    for (int64_t s = 0; s < t->n; s++) {
        const fs_event *e = &t->ev[s];
        bool now = s <= k;
        bool mine = e->head == c->head;
        switch (e->kind) {
        case FS_EV_LSE:
            if (now && mine && e->row >= 0 && e->row < c->n_q) c->L[e->row] = e->x;
            break;
        case FS_EV_DELTA:
            if (now && mine && e->row >= 0 && e->row < c->n_q) c->D[e->row] = e->x;
            break;
        case FS_EV_BTILE:
        case FS_EV_BSKIP:
            if (now && mine && e->qt >= 0 && e->qt < c->nqt && e->kt >= 0 && e->kt < c->nkt) {
                c->tile_ev[e->qt * c->nkt + e->kt] = s;
                c->cur_tile = s;
                c->cur_row = -1;
            }
            break;
        case FS_EV_BROW:
            if (!mine || e->row < 0 || e->row >= c->n_q) break;
            c->dq_last[e->row] = s;
            if (!now) break;
            c->dq_ev[e->row] = s;
            c->cur_row = s;
            for (int j = e->c0; j < e->c1 && j < c->n_kv; j++) c->cell_ev[(size_t)e->row * c->n_kv + j] = s;
            break;
        case FS_EV_BKEY:
            if (e->kv_head != c->kvh || e->row < 0 || e->row >= c->n_kv) break;
            c->key_last[e->row] = s;
            if (now) c->key_ev[e->row] = s;
            break;
        default: break;
        }
    }
    return true;
}

static double vec_at(const fs_trace *t, int64_t off, int32_t n, int i)
{
    const double *v = fs_trace_at(t, off);
    return v && i >= 0 && i < n ? v[i] : NAN;
}

static int cell_font(gui_draw *d, int cell, int chars)
{
    int f = (int)(cell * 0.88 / (chars * 0.602));
    return f > d->L.font_small ? d->L.font_small : f;
}

static void fmt2(double x, char *b, size_t n) { gui_fmt_cell(x, b, n); }

static void kb(double bytes, char *b, size_t n)
{
    if (bytes >= (double)(1 << 30)) snprintf(b, n, "%.2f GiB", bytes / (double)(1 << 30));
    else if (bytes >= 1 << 20) snprintf(b, n, "%.2f MiB", bytes / (1 << 20));
    else if (bytes >= 1024) snprintf(b, n, "%.1f KiB", bytes / 1024);
    else snprintf(b, n, "%.0f B", bytes);
}

/* A value cell: filled, with its number when it fits. */
static void value_cell(gui_draw *d, gui_rect r, uint32_t fill, double v, int vf)
{
    gui_fill(d, r, fill);
    if (vf < 7 || isnan(v)) return;
    char b[16];
    fmt2(v, b, sizeof b);
    /* A narrow cell (a large problem, or a large --zoom) takes the number without its leading
     * zero ("-.40"), then to one decimal ("-.4"), before it would be left out. */
    int shortest = (vf / 2 > 6 ? vf / 2 : 6);
    for (int k = 0; k < 2 && gui_char_w(d, shortest) * gui_utf8_len(b) > r.w; k++) {
        char *z = strstr(b, "0.");
        if (z && (z == b || (z == b + 1 && b[0] == '-'))) memmove(z, z + 1, strlen(z));
        else if (strchr(b, '.') && strlen(strchr(b, '.')) > 2) {
            char t[16];
            snprintf(t, sizeof t, "%.1f", v);
            char *z2 = strstr(t, "0.");
            if (z2 && (z2 == t || (z2 == t + 1 && t[0] == '-'))) memmove(z2, z2 + 1, strlen(z2));
            snprintf(b, sizeof b, "%s", t);
        }
    }
    gui_text_fit(d, vf, r, d->th->text, b);
}

/* A heat colour for a weight in [0, 1]. */
static uint32_t heat(const gui_theme *th, double p)
{
    if (isnan(p)) return th->future;
    return gui_mix(th->heat_lo, th->heat_hi, p < 0 ? 0 : p > 1 ? 1 : p);
}

/* The pairs, the dQ rows and the dK, dV rows, in the grid of gui_scene_grid. */
static void draw_main(gui_draw *d, const gui_state *s, const gui_show *show, const bscan *c, const gui_grid *g)
{
    const gui_theme *th = d->th;
    const gui_layout *L = &d->L;
    const fs_attn *a = &show->run.attn;
    const fs_trace *t = c->t;
    int cell = g->cell, inset = cell >= 10 ? 1 : 0;
    if (cell <= 3) {
        gui_text(d, L->font, L->main.x, L->main.y, th->dim, GUI_AL_LEFT, "too many pairs to draw at this size");
        return;
    }
    const fs_event *cur = s->n > 0 && s->step < t->n ? &t->ev[s->step] : NULL;
    const fs_event *ct = c->cur_tile >= 0 ? &t->ev[c->cur_tile] : NULL;
    const bool kv_outer = show->run.tiling.order == FS_ORDER_KV_OUTER;
    int vf = cell_font(d, cell, 4);
    int x_dq = g->x0 + (c->n_kv + 1) * cell;            /* dQ columns */
    int y_dk = g->y0 + (c->n_q + 1) * cell;             /* dK rows under the keys */
    int y_dv = y_dk + (c->d + 1) * cell;                /* dV rows */

    /* Pairs. */
    for (int i = 0; i < c->n_q; i++)
        for (int j = 0; j < c->n_kv; j++) {
            gui_rect r = {g->x0 + j * cell + inset, g->y0 + i * cell + inset, cell - 2 * inset, cell - 2 * inset};
            int64_t te = c->tile_ev[(i / c->Bq) * c->nkt + j / c->Bk];
            int64_t ce = c->cell_ev[(size_t)i * c->n_kv + j];
            /* A replayed trace (no Q: the mask is not known exactly) shows a pair masked once its
             * row's recomputed S is −∞ there; a problem in hand asks its mask. */
            bool vis = !a->Q ? ce < 0 || vec_at(t, t->ev[ce].s_row, t->ev[ce].n_s, j - t->ev[ce].c0) > -INFINITY
                             : fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j);
            if (te < 0) {
                gui_fill(d, r, th->future);
            } else if (t->ev[te].kind == FS_EV_BSKIP) {
                gui_fill(d, r, th->skipped);
                gui_hatch(d, r, gui_mix(th->skipped, th->text, 0.35), cell >= 24 ? cell / 4 : 4, 3);
            } else if (!vis) {
                gui_fill(d, r, th->masked);
                if (cell >= 14) {
                    int m = cell / 3;
                    gui_line(d, r.x + m, r.y + m, r.x + r.w - m, r.y + r.h - m, th->dim, 1);
                    gui_line(d, r.x + m, r.y + r.h - m, r.x + r.w - m, r.y + m, th->dim, 1);
                }
            } else {
                if (ce < 0) {
                    gui_fill(d, r, gui_mix(t->ev[te].cls == FS_TILE_PARTIAL ? th->partial : th->full, th->bg, 0.7));
                } else {
                    const fs_event *e = &t->ev[ce];
                    double p = vec_at(t, e->p_row, e->n_s, j - e->c0);
                    value_cell(d, r, heat(th, p), p, vf);
                }
            }
        }
    gui_tile_lines(d, g, c->n_q, c->n_kv, c->Bq, c->Bk);
    /* Dropout: the cells each recomputed pair drops, regenerated (the forward's, cell for cell). */
    for (int q = 0; q < c->nqt; q++)
        for (int k = 0; k < c->nkt; k++)
            if (c->tile_ev[q * c->nkt + k] >= 0) gui_mark_dropped(d, g, t, &t->ev[c->tile_ev[q * c->nkt + k]], c->n_q, c->n_kv);
    int gw = c->n_kv * cell, gh = c->n_q * cell;
    /* The band being finished: a KV tile's columns (kv-outer) or a Q tile's rows (q-outer). */
    if (ct) {
        int t3 = 3 * d->thin + 1;
        gui_rect band = kv_outer ? (gui_rect){g->x0 + ct->c0 * cell, g->y0, (ct->c1 - ct->c0) * cell, gh}
                                 : (gui_rect){g->x0, g->y0 + ct->r0 * cell, gw, (ct->r1 - ct->r0) * cell};
        gui_frame(d, (gui_rect){band.x - t3, band.y - t3, band.w + 2 * t3, band.h + 2 * t3}, th->accent, d->thin + 1);
        /* In the gap row under the pairs: what the band is. */
        int fsm = L->font_small, lhs = gui_line_h(d, fsm);
        if (cell >= lhs) {
            const char *what = kv_outer ? "this KV tile's dK, dV: Q tiles stream past" : "this Q tile's dQ: KV tiles stream past";
            int tx = kv_outer ? band.x + band.w / 2 : g->x0 + gw / 2;
            gui_text(d, fsm, tx, g->y0 + gh + (cell - lhs) / 2, th->accent, GUI_AL_CENTER, what);
        }
        gui_rect r = {g->x0 + ct->c0 * cell, g->y0 + ct->r0 * cell, (ct->c1 - ct->c0) * cell, (ct->r1 - ct->r0) * cell};
        gui_frame(d, (gui_rect){r.x - t3 / 2, r.y - t3 / 2, r.w + t3, r.h + t3}, th->current, t3);
        if (ct->kind == FS_EV_BSKIP && r.w > gui_text_w(d, L->font_small, "skipped")) {
            gui_rect lr = {r.x, r.y + r.h / 2 - gui_line_h(d, L->font_small) / 2, r.w, gui_line_h(d, L->font_small)};
            gui_fill_a(d, lr, th->bg, 200);
            gui_text_fit(d, L->font_small, lr, th->current, "skipped");
        }
    }
    if (cur && cur->kind == FS_EV_BROW && cur->head == c->head)
        gui_frame(d, (gui_rect){g->x0 + cur->c0 * cell, g->y0 + cur->row * cell, (cur->c1 - cur->c0) * cell, cell}, th->text,
                  2 * d->thin);

    /* dQ rows, right of the pairs. */
    for (int i = 0; i < c->n_q; i++) {
        int64_t qe = c->dq_ev[i];
        bool fin = qe >= 0 && qe == c->dq_last[i];
        bool changed = cur && cur->kind == FS_EV_BROW && cur->head == c->head && cur->row == i;
        for (int v = 0; v < c->d; v++) {
            gui_rect r = {x_dq + v * cell + inset, g->y0 + i * cell + inset, cell - 2 * inset, cell - 2 * inset};
            double x = qe >= 0 ? vec_at(t, t->ev[qe].o_new, t->ev[qe].n_o, v) : NAN;
            value_cell(d, r, qe >= 0 ? gui_mix(th->panel, th->accent, changed ? 0.45 : 0.15) : th->future, x, vf);
        }
        gui_rect rr = {x_dq, g->y0 + i * cell, c->d * cell, cell};
        if (fin) gui_frame(d, rr, th->good, d->thin + 1);
        else if (changed) gui_frame(d, rr, th->current, d->thin + 1);
    }
    /* dK and dV rows of each key, under the pairs (one column per key). */
    for (int j = 0; j < c->n_kv; j++) {
        int64_t ke = c->key_ev[j];
        bool fin = ke >= 0 && ke == c->key_last[j];
        bool changed = cur && cur->kind == FS_EV_BKEY && cur->kv_head == c->kvh && cur->row == j;
        uint32_t fill = ke >= 0 ? gui_mix(th->panel, th->warn, changed ? 0.45 : 0.15) : th->future;
        for (int v = 0; v < c->d; v++) {
            gui_rect r = {g->x0 + j * cell + inset, y_dk + v * cell + inset, cell - 2 * inset, cell - 2 * inset};
            value_cell(d, r, fill, ke >= 0 ? vec_at(t, t->ev[ke].o_new, t->ev[ke].n_o, v) : NAN, vf);
        }
        for (int v = 0; v < c->d_v; v++) {
            gui_rect r = {g->x0 + j * cell + inset, y_dv + v * cell + inset, cell - 2 * inset, cell - 2 * inset};
            value_cell(d, r, fill, ke >= 0 ? vec_at(t, t->ev[ke].g_new, t->ev[ke].n_g, v) : NAN, vf);
        }
        uint32_t fc = fin ? th->good : changed ? th->current : 0;
        if (fc) {
            gui_frame(d, (gui_rect){g->x0 + j * cell, y_dk, cell, c->d * cell}, fc, d->thin + 1);
            gui_frame(d, (gui_rect){g->x0 + j * cell, y_dv, cell, c->d_v * cell}, fc, d->thin + 1);
        }
    }

    /* Labels. */
    int lf = cell_font(d, cell * 2, 3);
    if (lf < 7) lf = 7;
    int every = cell >= gui_line_h(d, lf) ? 1 : 8;
    while (every < 64 && gui_text_w(d, lf, "00") + 2 > every * cell) every *= 2;   /* key numbers must not touch */
    int lh = gui_line_h(d, lf);
    for (int i = 0; i < c->n_q; i += every)
        gui_textf(d, lf, g->x0 - L->pad / 2, g->y0 + i * cell + (cell - lh) / 2, th->dim, GUI_AL_RIGHT, "%d", i);
    for (int j = 0; j < c->n_kv; j += every)
        gui_textf(d, lf, g->x0 + j * cell + cell / 2, g->y0 - lh - L->pad / 4, th->dim, GUI_AL_CENTER, "%d", j);
    gui_text(d, lf, x_dq + c->d * cell / 2, g->y0 - lh - L->pad / 4, th->text, GUI_AL_CENTER, "dQ");
    gui_text(d, lf, g->x0 - L->pad / 2, y_dk + (c->d * cell - lh) / 2, th->text, GUI_AL_RIGHT, "dKᵀ");
    gui_text(d, lf, g->x0 - L->pad / 2, y_dv + (c->d_v * cell - lh) / 2, th->text, GUI_AL_RIGHT, "dVᵀ");
    char cap[200], pre[64];
    if (a->n_q_heads > 1) snprintf(pre, sizeof pre, "head %d (KV head %d)", c->head, c->kvh);
    else snprintf(pre, sizeof pre, "P = exp(S - L), recomputed");
    if (ct)
        snprintf(cap, sizeof cap, "%s: %s %d (%s %d-%d) is finished while %s %d (%s %d-%d) streams past", pre,
                 kv_outer ? "KV tile" : "Q tile", kv_outer ? ct->kt : ct->qt, kv_outer ? "keys" : "rows",
                 kv_outer ? ct->c0 : ct->r0, kv_outer ? ct->c1 - 1 : ct->r1 - 1, kv_outer ? "Q tile" : "KV tile",
                 kv_outer ? ct->qt : ct->kt, kv_outer ? "rows" : "keys", kv_outer ? ct->r0 : ct->c0,
                 kv_outer ? ct->r1 - 1 : ct->c1 - 1);
    else
        snprintf(cap, sizeof cap, "P = exp(S - L), recomputed tile by tile (%s order)", kv_outer ? "kv-outer" : "q-outer");
    int old_x1 = d->clip_x1;
    d->clip_x1 = L->main.x + L->main.w - L->pad / 2;
    if (ct && L->main.x + gui_text_w(d, L->font_small, cap) > d->clip_x1)   /* a narrow scene (a phone upright) */
        snprintf(cap, sizeof cap, "%s %d (%s %d-%d) finished; %s %d passes", kv_outer ? "KV tile" : "Q tile",
                 kv_outer ? ct->kt : ct->qt, kv_outer ? "keys" : "rows", kv_outer ? ct->c0 : ct->r0,
                 kv_outer ? ct->c1 - 1 : ct->r1 - 1, kv_outer ? "Q tile" : "KV tile", kv_outer ? ct->qt : ct->kt);
    gui_text(d, L->font_small, L->main.x, g->y0 - lh - gui_line_h(d, L->font_small) - L->pad / 2, th->text, GUI_AL_LEFT, cap);
    d->clip_x1 = old_x1;
}

/* A small matrix of the current tile (rows r0..r1, keys c0..c1) filled from its BROW events:
 * which = 0 P, 1 dP, 2 dS. Returns its height. */
static int tile_matrix(gui_draw *d, const bscan *c, const fs_event *ct, int which, gui_rect r, const char *title)
{
    const gui_theme *th = d->th;
    const fs_trace *t = c->t;
    int fs = d->L.font_small, lh = gui_line_h(d, fs);
    gui_text(d, fs, r.x, r.y, th->text, GUI_AL_LEFT, title);
    int nr = ct->r1 - ct->r0, nc = ct->c1 - ct->c0;
    int cell = nr > 0 && nc > 0 ? (r.w / nc < (r.h - lh) / nr ? r.w / nc : (r.h - lh) / nr) : 0;
    if (cell > 4 * lh) cell = 4 * lh;
    if (cell < 4) return lh;
    int vf = cell_font(d, cell, 5);
    double mx = 0;   /* dP and dS: colour by sign, scaled by the largest magnitude shown */
    for (int64_t s = c->cur_tile + 1; s <= c->k && s < t->n; s++) {
        const fs_event *e = &t->ev[s];
        if (e->kind != FS_EV_BROW) break;
        for (int j = 0; j < nc; j++) {
            double v = vec_at(t, which == 1 ? e->dp_row : e->ds_row, e->n_s, j);
            if (isfinite(v)) mx = fmax(mx, fabs(v));
        }
    }
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < nc; j++) {
            gui_rect cr = {r.x + j * cell + 1, r.y + lh + i * cell + 1, cell - 2, cell - 2};
            gui_fill(d, cr, th->future);
        }
    for (int64_t s = c->cur_tile + 1; s <= c->k && s < t->n; s++) {
        const fs_event *e = &t->ev[s];
        if (e->kind != FS_EV_BROW) break;
        int i = e->row - ct->r0;
        if (i < 0 || i >= nr) continue;
        for (int j = 0; j < nc; j++) {
            gui_rect cr = {r.x + j * cell + 1, r.y + lh + i * cell + 1, cell - 2, cell - 2};
            bool vis = vec_at(t, e->s_row, e->n_s, j) > -INFINITY;
            double v = vec_at(t, which == 0 ? e->p_row : which == 1 ? e->dp_row : e->ds_row, e->n_s, j);
            uint32_t fill = which == 0 ? heat(th, v)
                                       : gui_mix(th->panel, v < 0 ? th->bad : th->good, mx > 0 ? fmin(1, fabs(v) / mx) * 0.7 : 0);
            if (!vis) fill = th->masked;
            value_cell(d, cr, fill, vis || which == 1 ? v : NAN, vf);
        }
    }
    return lh + nr * cell;
}

static void draw_side(gui_draw *d, const gui_show *show, const bscan *c)
{
    const gui_theme *th = d->th;
    const gui_layout *L = &d->L;
    const fs_attn *a = &show->run.attn;
    const fs_trace *t = c->t;
    gui_rect sr = L->side;
    gui_clip(d, &sr);
    gui_panel(d, sr, NULL);
    int x = sr.x + L->pad, w = sr.w - 2 * L->pad, y = sr.y + L->pad / 2;
    int fs = L->font_small, lh = gui_line_h(d, fs);
    char b1[32], b2[32], b3[32];
    const fs_event *ct = c->cur_tile >= 0 ? &t->ev[c->cur_tile] : NULL;
    gui_text(d, L->font, x, y, th->text, GUI_AL_LEFT, "Recomputed tile");
    y += gui_line_h(d, L->font) + L->pad / 3;
    if (ct && ct->kind == FS_EV_BTILE) {
        gui_textf(d, fs, x, y, th->dim, GUI_AL_LEFT, "rows %d-%d x keys %d-%d (Q%d, KV%d), %s", ct->r0, ct->r1 - 1, ct->c0,
                  ct->c1 - 1, ct->qt, ct->kt, fs_tile_class_str(ct->cls));
        y += lh + L->pad / 4;
        int mw = (w - L->pad) / 3, mh = 7 * lh;
        int h0 = tile_matrix(d, c, ct, 0, (gui_rect){x, y, mw - L->pad / 3, mh}, "P=exp(S-L)");
        int h1 = tile_matrix(d, c, ct, 1, (gui_rect){x + mw + L->pad / 2, y, mw - L->pad / 3, mh},
                             show->run.tiling.dropout.on ? "dP=Z∘dO·Vᵀ/(1-p)" : "dP=dO·Vᵀ");
        int h2 = tile_matrix(d, c, ct, 2, (gui_rect){x + 2 * (mw + L->pad / 2), y, mw - L->pad / 3, mh}, "dS=P∘(dP-D)");
        int hm = h0 > h1 ? h0 : h1;
        y += (hm > h2 ? hm : h2) + L->pad / 2;
    } else if (ct) {
        gui_textf(d, fs, x, y, th->dim, GUI_AL_LEFT, "Q tile %d x KV tile %d skipped (%s): P = 0, no gradient", ct->qt, ct->kt,
                  fs_skip_reason_str(ct->reason));
        y += lh + L->pad / 2;
    } else {
        gui_text(d, fs, x, y, th->dim, GUI_AL_LEFT, "First each row's L (kept) and D = rowsum(dO∘O).");
        y += lh + L->pad / 2;
    }
    /* The current row. */
    const fs_event *br = c->cur_row >= 0 ? &t->ev[c->cur_row] : NULL;
    if (br) {
        gui_textf(d, fs, x, y, th->text, GUI_AL_LEFT, "row %d: L = %s   D = %s", br->row, gui_fmt(br->x, b1, 32),
                  gui_fmt(br->m_new, b2, 32));
        y += lh;
        double q0 = vec_at(t, br->o_blk, br->n_o, 0), q1 = vec_at(t, br->o_blk, br->n_o, 1);
        gui_textf(d, fs, x, y, th->text, GUI_AL_LEFT, "dQ[%d] += scale·dS·K = [%s%s%s%s]", br->row, gui_fmt(q0, b1, 32),
                  br->n_o > 1 ? ", " : "", br->n_o > 1 ? gui_fmt(q1, b2, 32) : "", br->n_o > 2 ? ", …" : "");
        y += lh + L->pad / 2;
    } else {
        int shown = 0;
        for (int i = 0; i < c->n_q && shown < 3; i++)
            if (!isnan(c->L[i])) {
                gui_textf(d, fs, x, y, th->text, GUI_AL_LEFT, "row %d: L = %s%s%s", i, gui_fmt(c->L[i], b1, 32),
                          isnan(c->D[i]) ? "" : "   D = ", isnan(c->D[i]) ? "" : gui_fmt(c->D[i], b2, 32));
                y += lh;
                shown++;
            }
        y += L->pad / 2;
    }
    /* Saved state: one L per row against a saved P. */
    gui_text(d, L->font, x, y, th->text, GUI_AL_LEFT, "Saved for the backward (fp32)");
    y += gui_line_h(d, L->font) + L->pad / 3;
    double flash = fs_mem_stats_bytes(a->n_q, a->n_q_heads, 1, ELEM_BYTES);
    double mat = fs_mem_s_bytes(a->n_q, a->n_kv, a->n_q_heads, ELEM_BYTES);
    kb(flash, b1, sizeof b1);
    kb(mat, b2, sizeof b2);
    gui_textf(d, fs, x, y, th->accent, GUI_AL_LEFT, "recompute: L, %d x %d = %s", a->n_q_heads, a->n_q, b1);
    y += lh;
    gui_fill(d, (gui_rect){x, y, w, lh / 2}, th->future);
    gui_fill(d, (gui_rect){x, y, mat > 0 ? (int)fmax(2, w * flash / mat) : 2, lh / 2}, th->accent);
    y += lh / 2 + L->pad / 4;
    gui_textf(d, fs, x, y, th->bad, GUI_AL_LEFT, "materialize: P, %d x %d x %d = %s", a->n_q_heads, a->n_q, a->n_kv, b2);
    y += lh;
    gui_fill(d, (gui_rect){x, y, w, lh / 2}, th->bad);
    y += lh / 2 + L->pad / 4;
    kb(fs_mem_stats_bytes(8192, 32, 1, ELEM_BYTES), b1, sizeof b1);
    kb(fs_mem_s_bytes(8192, 8192, 32, ELEM_BYTES), b3, sizeof b3);
    gui_textf(d, fs, x, y, th->dim, GUI_AL_LEFT, "at 8192 tokens, 32 heads: %s vs %s", b1, b3);
    y += lh + L->pad / 2;
    if (show->run.tiling.dropout.on) {
        /* Dropout: the mask Z a backward would need, stored, against regenerating it. */
        double mb = fs_dropout_mask_bytes(a->n_q_heads, a->n_q, a->n_kv, 1);
        if (mb < 1024) snprintf(b1, sizeof b1, "%g B", mb);   /* 36 bits: 4.5 B, not "4 B" */
        else kb(mb, b1, sizeof b1);
        gui_textf(d, fs, x, y, th->warn, GUI_AL_LEFT, "dropout p = %.3g: mask Z stored, 1 bit a pair: %s", show->run.tiling.dropout.p, b1);
        y += lh;
        gui_text(d, fs, x, y, th->accent, GUI_AL_LEFT, "regenerated from Philox(seed, counters): 0 B kept");
        y += lh;
        kb(fs_dropout_mask_bytes(32, 8192, 8192, 1), b1, sizeof b1);
        kb(fs_dropout_mask_bytes(32, 8192, 8192, 8), b3, sizeof b3);
        gui_textf(d, fs, x, y, th->dim, GUI_AL_LEFT, "at 8192 tokens, 32 heads: %s (bits), %s (bytes)", b1, b3);
        y += lh + L->pad / 2;
    }
    /* Legend. */
    int sw = lh * 3 / 4;
    struct { uint32_t col; const char *name; } leg[] = {{th->good, "final row"}, {th->current, "just changed"},
                                                        {th->accent, "band being finished"}};
    int lx = x;
    for (int i = 0; i < 3; i++) {
        int tw = gui_text_w(d, fs, leg[i].name);
        if (lx + sw + tw + L->pad > x + w) { lx = x; y += lh; }
        gui_frame(d, (gui_rect){lx, y + (lh - sw) / 2, sw, sw}, leg[i].col, d->thin + 1);
        gui_text(d, fs, lx + sw + L->pad / 3, y, th->dim, GUI_AL_LEFT, leg[i].name);
        lx += sw + tw + L->pad;
    }
    gui_clip(d, NULL);
}

/* Hovering a pair shows its recomputed numbers; a gradient cell, its value. */
static void draw_hover(gui_draw *d, const gui_state *s, const bscan *c)
{
    if (s->hover != GUI_HOVER_CELL) return;
    const fs_trace *t = c->t;
    int i = s->hover_i, j = s->hover_j;
    char text[200] = "", b1[32], b2[32], b3[32], b4[32];
    if (i < c->n_q && j < c->n_kv) {
        int64_t ce = c->cell_ev[(size_t)i * c->n_kv + j];
        if (ce < 0) return;
        const fs_event *e = &t->ev[ce];
        int k = j - e->c0;
        snprintf(text, sizeof text, "row %d, key %d: S = %s  P = %s  dP = %s  dS = %s", i, j,
                 gui_fmt(vec_at(t, e->s_row, e->n_s, k), b1, 32), gui_fmt(vec_at(t, e->p_row, e->n_s, k), b2, 32),
                 gui_fmt(vec_at(t, e->dp_row, e->n_s, k), b3, 32), gui_fmt(vec_at(t, e->ds_row, e->n_s, k), b4, 32));
    } else if (i < c->n_q && j > c->n_kv && j - c->n_kv - 1 < c->d && c->dq_ev[i] >= 0) {
        const fs_event *e = &t->ev[c->dq_ev[i]];
        snprintf(text, sizeof text, "dQ[%d][%d] = %s%s", i, j - c->n_kv - 1, gui_fmt(vec_at(t, e->o_new, e->n_o, j - c->n_kv - 1), b1, 32),
                 c->dq_ev[i] == c->dq_last[i] ? " (final)" : "");
    } else if (j < c->n_kv && c->key_ev[j] >= 0 && i > c->n_q) {
        const fs_event *e = &t->ev[c->key_ev[j]];
        int r = i - c->n_q - 1;
        bool fin = c->key_ev[j] == c->key_last[j];
        if (r < c->d)
            snprintf(text, sizeof text, "dK[%d][%d] = %s%s", j, r, gui_fmt(vec_at(t, e->o_new, e->n_o, r), b1, 32), fin ? " (final)" : "");
        else if (r > c->d && r - c->d - 1 < c->d_v)
            snprintf(text, sizeof text, "dV[%d][%d] = %s%s", j, r - c->d - 1, gui_fmt(vec_at(t, e->g_new, e->n_g, r - c->d - 1), b1, 32),
                     fin ? " (final)" : "");
    }
    if (!text[0]) return;
    gui_tooltip(d, s, text);
}

void gui_scene_backward(gui_draw *d, const gui_state *s, const gui_show *show);
void gui_scene_backward(gui_draw *d, const gui_state *s, const gui_show *show)
{
    bscan c;
    if (!bscan_build(&c, show, s->n > 0 ? s->step : -1)) {
        gui_text(d, d->L.font, d->L.main.x, d->L.main.y, d->th->dim, GUI_AL_LEFT, "problem too large to draw pair by pair");
        return;
    }
    gui_grid g = gui_scene_grid(show, &d->L);
    draw_main(d, s, show, &c, &g);
    draw_side(d, show, &c);
    draw_hover(d, s, &c);
    bscan_free(&c);
}

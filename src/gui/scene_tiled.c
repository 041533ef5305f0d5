/* scene_tiled.c: the tiled scenes: prefill grid, tree mask, sliding window, GQA, pitfalls.
 *
 * The score grid is N_q × N_kv cells cut into Bq × Bk tiles. What the grid shows at step k is
 * read from the trace by one scan of events 0..k (tiled_scan): each tile's class once its TILE or
 * SKIP event has happened, each cell's score and P̃ from the last ROW event that covered it, each
 * row's m, ℓ and o from its last ROW (or OUT) event. Tile classes are coloured and patterned:
 * full = solid, partial = "/" hatching with masked cells dark, skipped = cross-hatched grey.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/memory.h"
#include "gui/draw.h"

#define ELEM_BYTES 4   /* the on-chip counters assume fp32 elements */

typedef struct {
    const fs_trace *t;
    const gui_show *show;
    const fs_event *ev;      /* t->ev when the scan began (with t, show and head: whose scan) */
    int head, n_q, n_kv, d, d_v, Bq, Bk, nqt, nkt;
    int64_t k, t_n;
    int64_t *row_ev, *out_ev, *cell_ev;
    int64_t *tile_ev;        /* TILE / SKIP event of each (qt, kt), −1 while in the future */
    int64_t cur_tile;        /* latest TILE / SKIP event ≤ k (this head), −1 none */
    bool cells;              /* cell_ev holds per-cell events (small problems) */
    gui_traffic io;          /* bytes moved so far, this head (gui_trace_traffic) */
    bool *q_read;            /* Q tiles read so far (for io) */
} tiled_scan;

static void scan_free(tiled_scan *c)
{
    free(c->row_ev); free(c->out_ev); free(c->cell_ev); free(c->tile_ev); free(c->q_read);
    memset(c, 0, sizeof *c);
}

void gui_scene_tiled_free(gui_draw *d)
{
    for (int i = 0; i < 2; i++) {
        if (d->scan[i]) scan_free(d->scan[i]);
        free(d->scan[i]);
        d->scan[i] = NULL;
    }
}

static bool scan_init(tiled_scan *c, const gui_show *show, const fs_trace *t, int head)
{
    memset(c, 0, sizeof *c);
    const fs_attn *a = &show->run.attn;
    c->t = t;
    c->show = show;
    c->t_n = t->n;
    c->ev = t->ev;
    c->k = -1;
    c->head = head;
    c->n_q = a->n_q; c->n_kv = a->n_kv; c->d = a->d; c->d_v = a->d_v;
    c->Bq = show->run.tiling.Bq > 0 ? show->run.tiling.Bq : 1;
    c->Bk = show->run.tiling.Bk > 0 ? show->run.tiling.Bk : 1;
    c->nqt = (c->n_q + c->Bq - 1) / c->Bq;
    c->nkt = (c->n_kv + c->Bk - 1) / c->Bk;
    c->row_ev = malloc(sizeof(int64_t) * (size_t)(c->n_q > 0 ? c->n_q : 1));
    c->out_ev = malloc(sizeof(int64_t) * (size_t)(c->n_q > 0 ? c->n_q : 1));
    /* Per-cell values only while a cell can still be seen (≤ 512 × 512); bigger problems are
     * drawn tile by tile. */
    bool cells = (int64_t)c->n_q * c->n_kv <= (1 << 18);
    c->cell_ev = malloc(sizeof(int64_t) * (cells ? (size_t)c->n_q * (size_t)c->n_kv : 1));
    c->tile_ev = malloc(sizeof(int64_t) * (size_t)(c->nqt * c->nkt > 0 ? c->nqt * c->nkt : 1));
    c->q_read = calloc((size_t)(c->nqt > 0 ? c->nqt : 1), 1);
    if (!c->row_ev || !c->out_ev || !c->cell_ev || !c->tile_ev || !c->q_read) { scan_free(c); return false; }
    for (int i = 0; i < c->n_q; i++) c->row_ev[i] = c->out_ev[i] = -1;
    for (int64_t i = 0; cells && i < (int64_t)c->n_q * c->n_kv; i++) c->cell_ev[i] = -1;
    c->cells = cells;
    for (int i = 0; i < c->nqt * c->nkt; i++) c->tile_ev[i] = -1;
    c->cur_tile = -1;
    return true;
}

/* Read events c->k + 1 … k into the scan. */
static void scan_advance(tiled_scan *c, int64_t k)
{
    const fs_trace *t = c->t;
    for (int64_t s = c->k + 1; s <= k && s < t->n; s++) {
        const fs_event *e = &t->ev[s];
        if (e->head != c->head) continue;
        gui_traffic_add(&c->io, c->q_read, c->nqt, c->show, e, ELEM_BYTES);
        switch (e->kind) {
        case FS_EV_TILE:
        case FS_EV_SKIP:
            if (e->qt >= 0 && e->qt < c->nqt && e->kt >= 0 && e->kt < c->nkt) c->tile_ev[e->qt * c->nkt + e->kt] = s;
            c->cur_tile = s;
            break;
        case FS_EV_ROW:
            if (e->row >= 0 && e->row < c->n_q) {
                c->row_ev[e->row] = s;
                if (e->s_row >= 0 && c->cells)
                    for (int j = e->c0; j < e->c1 && j < c->n_kv; j++) c->cell_ev[(int64_t)e->row * c->n_kv + j] = s;
            }
            break;
        case FS_EV_OUT:
            if (e->row >= 0 && e->row < c->n_q) c->out_ev[e->row] = s;
            break;
        default: break;
        }
    }
    c->k = k;
}

/* The scan of trace t (head) up to step k: what the grid shows at step k is read from events
 * 0 … k. The scan kept in d->scan[slot] is carried forward when it belongs to the same trace,
 * head and show and is not past k; else it is built again from step 0. */
static const tiled_scan *scan_get(gui_draw *d, int slot, const gui_show *show, const fs_trace *t, int64_t k, int head)
{
    tiled_scan *c = d->scan[slot];
    if (!c && !(c = d->scan[slot] = calloc(1, sizeof *c))) return NULL;
    const fs_attn *a = &show->run.attn;
    bool same = c->row_ev && c->t == t && c->ev == t->ev && c->show == show && c->head == head && c->t_n == t->n && c->k <= k &&
                c->n_q == a->n_q && c->n_kv == a->n_kv && c->d_v == a->d_v && c->Bq == show->run.tiling.Bq &&
                c->Bk == show->run.tiling.Bk;
    if (!same) {
        scan_free(c);
        if (!scan_init(c, show, t, head)) return NULL;
    }
    scan_advance(c, k);
    return c;
}

/* The value of cell (i, j): score (what = 0) or P̃ (what = 1); NAN when not computed yet. */
static double cell_value(const tiled_scan *c, int i, int j, int what)
{
    if (!c->cells) return NAN;
    int64_t s = c->cell_ev[(int64_t)i * c->n_kv + j];
    if (s < 0) return NAN;
    const fs_event *e = &c->t->ev[s];
    const double *v = fs_trace_at(c->t, what ? e->p_row : e->s_row);
    if (!v || j - e->c0 >= e->n_s) return NAN;
    return v[j - e->c0];
}

/* Row i's o vector (final O after its OUT event) and whether it is final. NULL: nothing yet. */
static const double *row_o(const tiled_scan *c, int i, bool *final, bool *normalized)
{
    int64_t s = c->out_ev[i] >= 0 ? c->out_ev[i] : c->row_ev[i];
    *final = c->out_ev[i] >= 0;
    if (s < 0) return NULL;
    const fs_event *e = &c->t->ev[s];
    *normalized = e->normalized || *final;
    return fs_trace_at(c->t, e->o_new);
}

static int cell_font(gui_draw *d, int cell, int chars)
{
    int f = (int)(cell * 0.88 / (chars * 0.602));
    if (f > d->L.font_small) f = d->L.font_small;
    return f;
}

static void fmt2(double x, char *b, size_t n) { gui_fmt_cell(x, b, n); }

/* A problem too big for cells: one square per tile, coloured and patterned by class. */
static void draw_tilemap(gui_draw *d, const gui_show *show, const tiled_scan *c, int gx, int gy, const char *caption)
{
    const gui_theme *th = d->th;
    gui_rect m = d->L.main;
    if (show->scene == GUI_SCENE_PITFALL) m.w = m.w / 2 - d->L.font / 2;
    if (gx > m.x + m.w / 2) m.x += d->L.main.w / 2;   /* the right-hand grid of a pitfall */
    (void)gy;
    m.y += 2 * d->L.font;
    m.h -= 2 * d->L.font;
    gui_grid t = gui_grid_fit(m, c->nqt, c->nkt, d->L.font, d->L.font, 8 * d->L.font);
    if (t.cell <= 0) {
        gui_text(d, d->L.font, m.x, m.y, th->dim, GUI_AL_LEFT, "too many tiles to draw at this size");
        return;
    }
    for (int q = 0; q < c->nqt; q++)
        for (int k = 0; k < c->nkt; k++) {
            gui_rect r = {t.x0 + k * t.cell, t.y0 + q * t.cell, t.cell > 3 ? t.cell - 1 : t.cell, t.cell > 3 ? t.cell - 1 : t.cell};
            int64_t te = c->tile_ev[q * c->nkt + k];
            if (te < 0) { gui_fill(d, r, th->future); continue; }
            const fs_event *e = &c->t->ev[te];
            if (e->kind == FS_EV_SKIP) {
                gui_fill(d, r, th->skipped);
                if (t.cell >= 6) gui_hatch(d, r, gui_mix(th->skipped, th->text, 0.35), t.cell / 3 > 3 ? t.cell / 3 : 3, 3);
            } else if (e->cls == FS_TILE_PARTIAL) {
                gui_fill(d, r, th->partial);
                if (t.cell >= 6) gui_hatch(d, r, gui_mix(th->partial, th->text, 0.3), t.cell / 3 > 3 ? t.cell / 3 : 3, 1);
            } else {
                gui_fill(d, r, th->full);
            }
            if (te == c->cur_tile) gui_frame(d, (gui_rect){r.x - 1, r.y - 1, r.w + 2, r.h + 2}, th->current, 2 * d->thin);
        }
    gui_textf(d, d->L.font_small, t.x0, t.y0 - gui_line_h(d, d->L.font_small) - 2, th->text, GUI_AL_LEFT,
              "%s%s%d x %d tiles of %d x %d (one square per tile)", caption ? caption : "", caption ? ": " : "", c->nqt, c->nkt,
              c->Bq, c->Bk);
}

/* Draw one grid (scores, O cells, m and ℓ columns) of scan c into g. ref: for the pitfall's wrong
 * run, the correct scan to compare O rows with (rows that differ are outlined). */
static void draw_grid(gui_draw *d, const gui_state *s, const gui_show *show, const tiled_scan *c,
                      const gui_grid *g, bool stats, const tiled_scan *ref, const char *caption)
{
    const gui_theme *th = d->th;
    const gui_layout *L = &d->L;
    const fs_attn *a = &show->run.attn;
    int cell = g->cell;
    if (cell <= 2) {   /* one square per tile: the score caption does not apply, a pitfall's or head's does */
        draw_tilemap(d, show, c, g->x0, g->y0, caption && strncmp(caption, "S = ", 4) ? caption : NULL);
        return;
    }
    const fs_event *cur = s->n > 0 && s->step < c->t->n ? &c->t->ev[s->step] : NULL;
    const fs_event *ct = c->cur_tile >= 0 ? &c->t->ev[c->cur_tile] : NULL;
    int follow = gui_followed_row(s, show);
    int vf = cell_font(d, cell, 5);
    bool two = vf >= 7 && cell >= 2 * gui_line_h(d, vf) + 2;
    int inset = cell >= 10 ? 1 : 0;
    /* Big cells carry numbers, so each is hatched on its own under its text; small cells are
     * hatched a tile at a time afterwards (the same picture with far fewer clip changes). */
    bool per_cell = vf >= 7;
    /* Does the current tile still have rows being computed (it is "open")? */
    bool tile_open = ct && ct->kind == FS_EV_TILE && cur && (cur->kind == FS_EV_TILE || cur->kind == FS_EV_ROW) &&
                     cur->qt == ct->qt && cur->kt == ct->kt;

    for (int i = 0; i < c->n_q; i++) {
        int qt = i / c->Bq;
        for (int j = 0; j < c->n_kv; j++) {
            int kt = j / c->Bk;
            gui_rect r = {g->x0 + j * cell + inset, g->y0 + i * cell + inset, cell - 2 * inset, cell - 2 * inset};
            int64_t te = c->tile_ev[qt * c->nkt + kt];
            bool is_cur = ct && te == c->cur_tile;
            if (te < 0) {
                gui_fill(d, r, th->future);
                continue;
            }
            const fs_event *e = &c->t->ev[te];
            bool vis = fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j);
            double dim = is_cur ? 0.0 : 0.45;
            if (e->kind == FS_EV_SKIP) {
                gui_fill(d, r, gui_mix(th->skipped, th->bg, dim * 0.5));
                if (per_cell) gui_hatch(d, r, gui_mix(th->skipped, th->text, 0.35), cell >= 24 ? cell / 4 : 4, 3);
            } else if (!vis) {
                gui_fill(d, r, th->masked);
                if (cell >= 14) {   /* a small × marks a masked pair */
                    int m = cell / 3;
                    gui_line(d, r.x + m, r.y + m, r.x + r.w - m, r.y + r.h - m, th->dim, 1);
                    gui_line(d, r.x + m, r.y + r.h - m, r.x + r.w - m, r.y + m, th->dim, 1);
                }
            } else if (e->cls == FS_TILE_PARTIAL) {
                gui_fill(d, r, gui_mix(th->partial, th->bg, dim));
                if (per_cell) gui_hatch(d, r, gui_mix(th->partial, th->text, 0.3), cell >= 24 ? cell / 4 : 4, 1);
            } else {
                gui_fill(d, r, gui_mix(th->full, th->bg, dim));
            }
            /* Beside a reference run (a low-precision run beside float64): a score that differs
             * from the reference's is framed in red. */
            if (ref && vis && e->kind == FS_EV_TILE && cell >= 6) {
                double sv = cell_value(c, i, j, 0), sr = cell_value(ref, i, j, 0);
                if (!isnan(sv) && !isnan(sr) && !(fabs(sv - sr) <= 1e-9 * fmax(1, fabs(sr))))
                    gui_frame(d, (gui_rect){r.x + 1, r.y + 1, r.w - 2, r.h - 2}, th->bad, d->thin);
            }
            /* Values: the score, and P̃ in the open tile. */
            if (vf >= 7 && vis && e->kind == FS_EV_TILE) {
                double sv = cell_value(c, i, j, 0);
                if (!isnan(sv)) {
                    char b1[16], b2[16];
                    fmt2(sv, b1, sizeof b1);
                    bool show_p = tile_open && is_cur && two;
                    int lh = gui_line_h(d, vf);
                    int y = r.y + (r.h - (show_p ? 2 * lh : lh)) / 2;
                    gui_fill_a(d, (gui_rect){r.x + r.w / 2 - gui_text_w(d, vf, b1) / 2 - 1, y, gui_text_w(d, vf, b1) + 2, lh},
                               th->bg, 150);
                    gui_text_cell(d, vf, r.x + r.w / 2, y, th->text, GUI_AL_CENTER, b1);
                    if (show_p) {
                        fmt2(cell_value(c, i, j, 1), b2, sizeof b2);
                        gui_fill_a(d, (gui_rect){r.x + r.w / 2 - gui_text_w(d, vf, b2) / 2 - 1, y + lh, gui_text_w(d, vf, b2) + 2, lh},
                                   th->bg, 150);
                        gui_text_cell(d, vf, r.x + r.w / 2, y + lh, th->accent, GUI_AL_CENTER, b2);
                    }
                }
            }
        }
    }
    if (!per_cell) {
        for (int q = 0; q < c->nqt; q++)
            for (int k = 0; k < c->nkt; k++) {
                int64_t te = c->tile_ev[q * c->nkt + k];
                if (te < 0) continue;
                const fs_event *e = &c->t->ev[te];
                if (e->kind == FS_EV_TILE && e->cls != FS_TILE_PARTIAL) continue;
                int r0 = q * c->Bq, c0 = k * c->Bk;
                int r1 = r0 + c->Bq < c->n_q ? r0 + c->Bq : c->n_q, c1 = c0 + c->Bk < c->n_kv ? c0 + c->Bk : c->n_kv;
                gui_rect tr = {g->x0 + c0 * cell, g->y0 + r0 * cell, (c1 - c0) * cell, (r1 - r0) * cell};
                bool skip = e->kind == FS_EV_SKIP;
                gui_hatch(d, tr, gui_mix(skip ? th->skipped : th->partial, th->text, skip ? 0.35 : 0.3), 4, skip ? 3 : 1);
                if (skip) continue;
                for (int i = r0; i < r1; i++)   /* masked pairs stay plain under the hatching */
                    for (int j = c0; j < c1; j++)
                        if (!fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j)) {
                            gui_rect r = {g->x0 + j * cell + inset, g->y0 + i * cell + inset, cell - 2 * inset, cell - 2 * inset};
                            gui_fill(d, r, th->masked);
                            if (cell >= 14) {
                                int m = cell / 3;
                                gui_line(d, r.x + m, r.y + m, r.x + r.w - m, r.y + r.h - m, th->dim, 1);
                                gui_line(d, r.x + m, r.y + r.h - m, r.x + r.w - m, r.y + m, th->dim, 1);
                            }
                        }
            }
    }
    gui_tile_lines(d, g, c->n_q, c->n_kv, c->Bq, c->Bk);
    /* Dropout: every visited tile's dropped cells, as its TILE event lists them. */
    for (int q = 0; q < c->nqt; q++)
        for (int k = 0; k < c->nkt; k++)
            if (c->tile_ev[q * c->nkt + k] >= 0)
                gui_mark_dropped(d, g, c->t, &c->t->ev[c->tile_ev[q * c->nkt + k]], c->n_q, c->n_kv);
    int gw = c->n_kv * cell;
    /* Sliding window: the band's two edges as staircases. */
    if (a->mask.kind == FS_MASK_WINDOW || a->mask.kind == FS_MASK_CAUSAL) {
        for (int i = 0; i < c->n_q; i++) {
            int64_t p = fs_mask_query_pos(&a->mask, a->n_q, a->n_kv, i);
            int hi = (int)(p + 1 < c->n_kv ? p + 1 : c->n_kv);
            int y = g->y0 + i * cell;
            if (hi >= 0) gui_fill(d, (gui_rect){g->x0 + hi * cell - d->thin, y, 2 * d->thin + 1, cell}, th->accent);
            if (a->mask.kind == FS_MASK_WINDOW) {
                int64_t lo = p - a->mask.window + 1;
                if (lo > 0 && lo <= c->n_kv) gui_fill(d, (gui_rect){g->x0 + (int)lo * cell - d->thin, y, 2 * d->thin + 1, cell}, th->accent);
            }
        }
    }
    /* The current tile and the current row. */
    if (ct && ct->r0 >= 0) {
        gui_rect r = {g->x0 + ct->c0 * cell, g->y0 + ct->r0 * cell, (ct->c1 - ct->c0) * cell, (ct->r1 - ct->r0) * cell};
        int t3 = 3 * d->thin + 1;
        gui_frame(d, (gui_rect){r.x - t3 / 2, r.y - t3 / 2, r.w + t3, r.h + t3}, th->current, t3);
        if (ct->kind == FS_EV_SKIP && cell * (ct->c1 - ct->c0) > gui_text_w(d, L->font_small, "skipped")) {
            gui_rect lr = {r.x, r.y + r.h / 2 - gui_line_h(d, L->font_small) / 2, r.w, gui_line_h(d, L->font_small)};
            gui_fill_a(d, lr, th->bg, 200);
            gui_text_fit(d, L->font_small, lr, th->current, "skipped");
        }
    }
    if (cur && cur->kind == FS_EV_ROW && cur->head == c->head && cur->row >= 0 && cur->c0 >= 0) {
        gui_rect r = {g->x0 + cur->c0 * cell, g->y0 + cur->row * cell, (cur->c1 - cur->c0) * cell, cell};
        gui_frame(d, r, th->text, 2 * d->thin);
    }
    /* Labels: query rows on the left, keys on top (every k-th when cells are small). */
    int lf = cell_font(d, cell * 2, 3);
    if (lf > L->font_small) lf = L->font_small;
    int every = lf >= 7 && cell >= gui_line_h(d, lf) ? 1 : 8;
    if (lf < 7) lf = 7;
    for (int i = 0; i < c->n_q; i += every)
        gui_textf(d, lf, g->x0 - d->L.pad / 2, g->y0 + i * cell + (cell - gui_line_h(d, lf)) / 2,
                  i == follow ? th->accent : th->dim, GUI_AL_RIGHT, "%s%d", i == follow ? ">" : "", i);
    for (int j = 0; j < c->n_kv; j += every)
        gui_textf(d, lf, g->x0 + j * cell + cell / 2, g->y0 - gui_line_h(d, lf) - d->L.pad / 4, th->dim, GUI_AL_CENTER, "%d", j);
    if (caption) {   /* beside the tree, the caption stops at the tree's column */
        int old_x1 = d->clip_x1;
        if (show->scene == GUI_SCENE_TREE) d->clip_x1 = L->main.x + L->main.w * 11 / 20;
        gui_text(d, L->font_small, g->x0, g->y0 - gui_line_h(d, lf) - gui_line_h(d, L->font_small) - d->L.pad / 2, th->text,
                 GUI_AL_LEFT, caption);
        d->clip_x1 = old_x1;
    }
    if (follow >= 0 && follow < c->n_q)
        gui_frame(d, (gui_rect){g->x0 - d->thin, g->y0 + follow * cell - d->thin, gw + 2 * d->thin, cell + 2 * d->thin}, th->accent,
                  d->thin);

    if (show->scene == GUI_SCENE_TREE) return;   /* the tree is drawn there instead */
    /* O cells (one gap column to the right), then the m and ℓ columns. */
    int ox = g->x0 + (c->n_kv + 1) * cell;
    bool any_norm = false, any_raw = false;
    for (int i = 0; i < c->n_q; i++) {
        bool fin = false, norm = false;
        const double *o = row_o(c, i, &fin, &norm);
        any_norm |= o && norm;
        any_raw |= o && !norm;
        bool differs = false;
        if (ref && o) {
            bool f2, n2;
            const double *o2 = row_o(ref, i, &f2, &n2);
            for (int v = 0; o2 && v < c->d_v; v++)
                differs |= !(fabs(o[v] - o2[v]) <= 1e-9 * fmax(1, fabs(o2[v])));
            differs |= !o2;
        }
        for (int v = 0; v < c->d_v; v++) {
            gui_rect r = {ox + v * cell + inset, g->y0 + i * cell + inset, cell - 2 * inset, cell - 2 * inset};
            uint32_t oc = th->future;
            if (o && vf >= 7) oc = fin ? gui_mix(th->panel, th->good, 0.18) : th->panel;
            else if (o && !isnan(o[v]))   /* too small for digits: the value as a colour */
                oc = gui_mix(th->panel, o[v] >= 0 ? th->full : th->partial, fmin(1.0, fabs(o[v])));
            gui_fill(d, r, oc);
            if (o && vf >= 7) {
                char b[16];
                fmt2(o[v], b, sizeof b);
                gui_text_fit(d, vf, r, isnan(o[v]) ? th->bad : th->text, isnan(o[v]) ? "nan" : b);
            }
        }
        if (differs)
            gui_frame(d, (gui_rect){ox - d->thin, g->y0 + i * cell - d->thin, c->d_v * cell + 2 * d->thin, cell + 2 * d->thin},
                      th->bad, 2 * d->thin);
    }
    /* Final rows (green) show O; rows still running in the unnormalized form show o, not yet
     * divided by ℓ. With Q tiles outside both are on screen between a Q tile's outputs and the end. */
    const char *oh = gui_text_w(d, lf, "o (not / ℓ)") <= c->d_v * cell ? "o (not / ℓ)" : "o";
    if (any_norm) oh = !any_raw ? "O" : gui_text_w(d, lf, "O, o (not / ℓ)") <= c->d_v * cell ? "O, o (not / ℓ)" : "O, o";
    gui_text(d, lf, ox + c->d_v * cell / 2, g->y0 - gui_line_h(d, lf) - d->L.pad / 4, th->dim, GUI_AL_CENTER, oh);
    if (!stats) return;
    int mx = ox + c->d_v * cell + d->L.pad, cw = gui_char_w(d, L->font_small) * 7 + d->L.pad / 2;
    int sf = cell >= gui_line_h(d, L->font_small) ? L->font_small : (cell >= 9 ? cell_font(d, cell * 3, 4) : 0);
    gui_text(d, lf, mx + cw / 2, g->y0 - gui_line_h(d, lf) - d->L.pad / 4, th->dim, GUI_AL_CENTER, "m");
    gui_text(d, lf, mx + cw + cw / 2, g->y0 - gui_line_h(d, lf) - d->L.pad / 4, th->dim, GUI_AL_CENTER, "ℓ");
    for (int i = 0; i < c->n_q && sf >= 7; i++) {
        int64_t rs = c->row_ev[i];
        if (rs < 0) continue;
        const fs_event *e = &c->t->ev[rs];
        char b[16];
        int y = g->y0 + i * cell + (cell - gui_line_h(d, sf)) / 2;
        bool resc = e->l_old > 0 && e->alpha < 1 && rs == s->step;
        fmt2(e->m_new, b, sizeof b);
        gui_text_cell(d, sf, mx + cw / 2, y, resc ? th->rescale : th->text, GUI_AL_CENTER, b);
        fmt2(e->l_new, b, sizeof b);
        gui_text_cell(d, sf, mx + cw + cw / 2, y, th->text, GUI_AL_CENTER, b);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Side panel: the followed row's update with the formulas filled in, the tile, the chip. */

/* A side-panel line that may be too wide: broken at the last space that fits, the rest on the
 * next line indented by four cells (cut with "…" only if it is still too wide). */
static void side_text(gui_draw *d, gui_rect r, int x, int *y, uint32_t col, const char *text)
{
    int fs = d->L.font_small, cw = gui_char_w(d, fs), lh = gui_line_h(d, fs);
    int per = cw > 0 ? (r.x + r.w - d->L.pad / 2 - x) / cw : 1;
    if (gui_utf8_len(text) <= per) {
        gui_text(d, fs, x, *y, col, GUI_AL_LEFT, text);
        *y += lh;
        return;
    }
    d->breaks++;
    /* The first line at x, the rest wrapped between words four cells further in. */
    char buf[1024];
    const char *p = text, *cut = NULL;
    for (int n = 0; *p && n < per; n++) {   /* the last space within `per` code points */
        if (*p == ' ' && p > text) cut = p;
        p++;
        while (((unsigned char)*p & 0xC0) == 0x80) p++;
    }
    if (!cut) cut = p;
    snprintf(buf, sizeof buf, "%.*s", (int)(cut - text), text);
    gui_text(d, fs, x, *y, col, GUI_AL_LEFT, buf);
    *y += lh;
    while (*cut == ' ') cut++;
    int rest_per = per - 4;
    if (rest_per < 4) rest_per = 4;
    int n = gui_wrap(cut, rest_per, 0, buf, sizeof buf, NULL);
    char *line = buf;
    for (int i = 0; i < n && line; i++) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        gui_text(d, fs, x + 4 * cw, *y, col, GUI_AL_LEFT, line);
        *y += lh;
        line = nl ? nl + 1 : NULL;
    }
}

static void kb(double bytes, char *b, size_t n)
{
    if (bytes >= 1 << 20) snprintf(b, n, "%.2f MiB", bytes / (1 << 20));
    else if (bytes >= 1024) snprintf(b, n, "%.1f KiB", bytes / 1024);
    else snprintf(b, n, "%.0f B", bytes);
}

/* A number for a formula, negatives in parentheses when they follow an operator ("− (-0.4000)"). */
static const char *fm(double x, bool paren, char *b, size_t n)
{
    char t[32];
    gui_fmt(x, t, sizeof t);
    if (paren && t[0] == '-') snprintf(b, n, "(%s)", t);
    else snprintf(b, n, "%s", t);
    return b;
}

/* fm for a maximum inside a factor f's exp(a - b): with f's decimals (gui_fmt_operand). */
static const char *fmo(double x, bool paren, double f, double other, char *b, size_t n)
{
    char t[32];
    gui_fmt_operand(x, f, other, t, sizeof t);
    if (paren && t[0] == '-') snprintf(b, n, "(%s)", t);
    else snprintf(b, n, "%s", t);
    return b;
}

typedef struct {
    gui_formula_line *out;
    int n, max;
} fl_list;

static void fl(fl_list *L, gui_formula_role role, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fl(fl_list *L, gui_formula_role role, const char *fmt, ...)
{
    if (L->n >= L->max) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->out[L->n].text, sizeof L->out[L->n].text, fmt, ap);
    va_end(ap);
    L->out[L->n++].role = role;
}

int gui_row_formulas(const fs_event *e, const fs_trace *t, fs_pitfall pit, bool use_exp2, gui_formula_line *out, int max)
{
    fl_list L = {out, 0, max};
    const char *EXP = use_exp2 ? "exp2" : "exp";
    const bool masked = pit == FS_PITFALL_MASKED_NAN || pit == FS_PITFALL_MASKED_DOC_FIX;
    const bool no_beta = pit == FS_PITFALL_GLOBAL_MAX_NO_BETA || pit == FS_PITFALL_BLOCK_MAX_NO_BETA;
    const bool lowp = e->lowp;
    const gui_formula_role rc = e->l_old > 0 && e->alpha < 1 ? GUI_FL_RESCALE : GUI_FL_TEXT;
    char b1[40], b2[40], b3[40], b4[40], b5[40];
    fl(&L, GUI_FL_TEXT, "m_blk = max of visible s = %s", fm(e->m_blk, false, b1, 40));
    if (!lowp && !masked && e->m_new == -INFINITY) {
        /* the guard: nothing visible yet, the state stays (−∞, 0, 0) */
        fl(&L, GUI_FL_TEXT, "nothing visible yet: m stays -inf,");
        fl(&L, GUI_FL_TEXT, "ℓ stays 0, o stays 0");
        fl(&L, GUI_FL_TEXT, no_beta ? "α = 1 by the guard (no β here)" : "α = 1, β = 0 by the guard");
        fl(&L, GUI_FL_NOTE, "(exp(-inf − (-inf)) would be NaN)");
        return L.n;
    }
    /* Σ P of the global-maximum variant: tiled.c's sum, in its order */
    double sum_p = 0;
    if (pit == FS_PITFALL_GLOBAL_MAX_NO_BETA) {
        const double *s = fs_trace_at(t, e->s_row);
        for (int32_t j = 0; s && j < e->n_s; j++)
            if (s[j] != -INFINITY) sum_p += use_exp2 ? exp2(s[j] - e->m_new) : exp(s[j] - e->m_new);
    }
    if (lowp)   /* FlashAttention-3's recipe takes P against m_new: β is 1, ℓ_blk is Σ P */
        fl(&L, GUI_FL_TEXT, "ℓ_blk = Σ P = Σ %s(s - m_new) = %s", EXP, fm(e->l_blk, false, b1, 40));
    else if (pit == FS_PITFALL_GLOBAL_MAX_NO_BETA)
        fl(&L, GUI_FL_TEXT, "Σ P = Σ %s(s - m_new) = %s", EXP, fm(sum_p, false, b1, 40));
    else if (pit == FS_PITFALL_MASKED_DOC_FIX && e->m_blk == -INFINITY)
        fl(&L, GUI_FL_TEXT, "ℓ_blk = 0 by 001's guard");
    else {
        fl(&L, isnan(e->l_blk) ? GUI_FL_BAD : GUI_FL_TEXT, "ℓ_blk = Σ %s(s - m_blk) = %s%s", EXP, fm(e->l_blk, false, b1, 40),
           isnan(e->l_blk) ? " (all s -inf)" : "");
    }
    fl(&L, rc, "m_new = max(m_old, m_blk)");
    fl(&L, rc, "      = max(%s, %s) = %s", fm(e->m_old, false, b1, 40), fm(e->m_blk, false, b2, 40),
       fm(e->m_new, false, b3, 40));
    fl(&L, rc, "α = %s(m_old - m_new)", EXP);
    fl(&L, isnan(e->alpha) ? GUI_FL_BAD : rc, "  = %s(%s - %s) = %s%s", EXP, fmo(e->m_old, false, e->alpha, e->l_old, b1, 40),
       fmo(e->m_new, true, e->alpha, e->l_old, b2, 40), gui_fmt_factor(e->alpha, e->l_old, b3, 40), isnan(e->alpha) ? " (NaN: no guard)" : "");
    if (lowp) {
        fl(&L, GUI_FL_TEXT, "β = 1 (P is already against m_new)");
        fl(&L, GUI_FL_NOTE, "scales q %s k %s v %s, P·%s", fm(e->q_scale, false, b1, 40), fm(e->k_scale, false, b2, 40),
           fm(e->v_scale, false, b3, 40), fm(e->p_scale, false, b4, 40));
    } else if (pit == FS_PITFALL_GLOBAL_MAX_NO_BETA) {
        fl(&L, GUI_FL_TEXT, "β = 1: P is taken against m_new,");
        fl(&L, GUI_FL_NOTE, "  so the block needs no β");
    } else if (pit == FS_PITFALL_BLOCK_MAX_NO_BETA) {
        fl(&L, GUI_FL_TEXT, "β = 1: this variant leaves β out");
        if (e->m_blk != -INFINITY && e->m_blk < e->m_new) {
            double right = use_exp2 ? exp2(e->m_blk - e->m_new) : exp(e->m_blk - e->m_new);
            fl(&L, GUI_FL_NOTE, "  (β would be %s(%s - %s) = %s)", EXP, fm(e->m_blk, false, b1, 40),
               fm(e->m_new, true, b2, 40), fm(right, false, b3, 40));
        }
    } else if (pit == FS_PITFALL_MASKED_DOC_FIX && e->m_blk == -INFINITY) {
        fl(&L, GUI_FL_TEXT, "β = 0 by 001's guard");
    } else {
        fl(&L, GUI_FL_TEXT, "β = %s(m_blk - m_new)", EXP);
        fl(&L, isnan(e->beta) ? GUI_FL_BAD : GUI_FL_TEXT, "  = %s(%s - %s) = %s%s", EXP, fmo(e->m_blk, false, e->beta, e->l_blk, b1, 40),
           fmo(e->m_new, true, e->beta, e->l_blk, b2, 40), gui_fmt_factor(e->beta, e->l_blk, b3, 40), isnan(e->beta) ? " (NaN)" : "");
    }
    if (lowp || pit == FS_PITFALL_GLOBAL_MAX_NO_BETA) {
        fl(&L, GUI_FL_TEXT, "ℓ_new = α·ℓ_old + Σ P");
        fl(&L, GUI_FL_SUM, "      = %s·%s + %s = %s", gui_fmt_factor(e->alpha, e->l_old, b1, 40), fm(e->l_old, false, b2, 40),
           fm(lowp ? e->l_blk : sum_p, false, b3, 40), fm(e->l_new, false, b4, 40));
    } else {
        fl(&L, GUI_FL_TEXT, "ℓ_new = α·ℓ_old + β·ℓ_blk");
        fl(&L, GUI_FL_SUM, "      = %s·%s + %s·%s = %s", gui_fmt_factor(e->alpha, e->l_old, b1, 40),
           fm(e->l_old, false, b2, 40), gui_fmt_factor(e->beta, e->l_blk, b3, 40), fm(e->l_blk, false, b4, 40),
           fm(e->l_new, false, b5, 40));
    }
    /* the words for a NaN ℓ or o go on the o line (a NaN row is short), so the panel keeps its
     * height */
    const char *why = !isnan(e->l_new) ? " (NaN: the row is lost)" : isnan(e->l_old) ? " (NaN since before)"
                                                                                    : " (0 · NaN is NaN)";
    const double *o = fs_trace_at(t, e->o_new);
    bool nan_o = isnan(e->l_new);
    for (int v = 0; o && v < e->n_o; v++) nan_o = nan_o || isnan(o[v]);
    if (o) {
        char line[200] = "", b[32];
        int n = snprintf(line, sizeof line, "%s = [", e->normalized ? "o_new" : "o_new (not / ℓ)");
        for (int v = 0; v < e->n_o && v < 6 && n < 150; v++)
            n += snprintf(line + n, sizeof line - (size_t)n, "%s%s", v ? ", " : "", gui_fmt(o[v], b, 32));
        snprintf(line + n, sizeof line - (size_t)n, "%s]%s", e->n_o > 6 ? ", …" : "", nan_o ? why : "");
        fl(&L, nan_o ? GUI_FL_BAD : GUI_FL_TEXT, "%s", line);
    } else if (nan_o) {
        fl(&L, GUI_FL_BAD, "ℓ%s", why);
    }
    if (pit == FS_PITFALL_NO_RESCALE) fl(&L, GUI_FL_NOTE, "this variant adds P̃·V/ℓ_new to the old o, not rescaled");
    if (rc == GUI_FL_RESCALE) fl(&L, GUI_FL_RESCALE, "new maximum: what was summed shrinks by α");
    return L.n;
}

/* which: "" or a note after the row number (" wrong run" for a pitfall). pit and exp2: what ran
 * (gui_row_formulas). */
static int draw_row_formulas(gui_draw *d, const gui_state *s, const tiled_scan *c, int row, gui_rect r, int y, const char *which,
                             fs_pitfall pit, bool exp2)
{
    const gui_theme *th = d->th;
    int x = r.x + d->L.pad, lh = gui_line_h(d, d->L.font_small);
    if (row < 0 || row >= c->n_q || c->row_ev[row] < 0) {
        gui_text(d, d->L.font_small, x, y, th->dim, GUI_AL_LEFT, "No row update yet.");
        return y + lh;
    }
    const fs_event *e = &c->t->ev[c->row_ev[row]];
    bool now = c->row_ev[row] == s->step;
    gui_textf(d, d->L.font, x, y, now ? th->current : th->text, GUI_AL_LEFT, "Row %d%s%s", row, which,
              now ? "  (this step)" : "");
    y += gui_line_h(d, d->L.font);
    char vis[96];
    snprintf(vis, sizeof vis, "tile Q%d,K%d · keys %d-%d · %d visible", e->qt, e->kt, e->c0, e->c1 - 1, e->visible);
    gui_text(d, d->L.font_small, x, y, th->dim, GUI_AL_LEFT, vis);
    y += lh + d->L.pad / 3;
    gui_formula_line lines[GUI_FORMULA_LINES];
    int n = gui_row_formulas(e, c->t, pit, exp2, lines, GUI_FORMULA_LINES);
    for (int i = 0; i < n; i++) {
        uint32_t col = lines[i].role == GUI_FL_RESCALE ? th->rescale : lines[i].role == GUI_FL_SUM ? th->accent
                     : lines[i].role == GUI_FL_NOTE  ? th->dim : lines[i].role == GUI_FL_BAD ? th->bad : th->text;
        side_text(d, r, x, &y, col, lines[i].text);   /* wraps when too wide */
    }
    return y;
}

/* On-chip panel: the tiles in SRAM and the HBM traffic so far against the materializing baseline. */
static int draw_chip(gui_draw *d, const gui_show *show, const tiled_scan *c, gui_rect r, int y, int group)
{
    const gui_theme *th = d->th;
    int x = r.x + d->L.pad, fs = d->L.font_small, lh = gui_line_h(d, fs);
    const fs_event *ct = c->cur_tile >= 0 ? &c->t->ev[c->cur_tile] : NULL;
    gui_text(d, d->L.font, x, y, th->text, GUI_AL_LEFT, "On chip (SRAM), fp32");
    y += gui_line_h(d, d->L.font) + d->L.pad / 3;
    struct { const char *name; int rows, cols; uint32_t col; } box[4] = {
        {"Q tile", c->Bq, c->d, th->accent}, {"K tile", c->Bk, c->d, th->full},
        {"V tile", c->Bk, c->d_v, th->partial}, {"S,P tile", c->Bq, c->Bk, th->warn}};
    int bx = x, bh = lh * 2;
    bool loaded = ct && ct->kind == FS_EV_TILE;
    for (int i = c->d == 0 ? 2 : 0; i < 4; i++) {   /* (no Q or K tiles without Q and K) */
        char lab[48];
        snprintf(lab, sizeof lab, "%s %dx%d", box[i].name, box[i].rows, box[i].cols);
        int bw = gui_text_w(d, fs, lab) + d->L.pad;
        if (bx + bw > r.x + r.w - d->L.pad) { bx = x; y += bh + d->L.pad / 2; }
        gui_rect br = {bx, y, bw, bh};
        gui_fill(d, br, loaded ? gui_mix(th->panel, box[i].col, 0.35) : th->future);
        gui_frame(d, br, loaded ? box[i].col : th->border, d->thin);
        gui_text(d, fs, bx + d->L.pad / 2, y + (bh - lh) / 2, loaded ? th->text : th->dim, GUI_AL_LEFT, lab);
        bx += bw + d->L.pad / 2;
    }
    y += bh + d->L.pad / 2;
    const fs_attn *a = &show->run.attn;
    if (a->d == 0) {   /* scores given, or a replayed trace: no Q or K, so no byte counts */
        side_text(d, r, x, &y, th->dim, "no byte counts: Q and K not given");
        char tl[160];
        snprintf(tl, sizeof tl, "tiles: %d computed (%d partial), %d skipped of %d", c->io.visited, c->io.partial,
                 c->io.skipped, c->nqt * c->nkt);
        side_text(d, r, x, &y, th->dim, tl);
        return y;
    }
    /* The whole run, all heads, from the memory model (engine/memory.h), fp32 everywhere. */
    fs_mem_problem mp = fs_mem_problem_make(a->n_q, a->n_kv, a->d, a->d_v);
    mp.n_q_heads = a->n_q_heads;
    mp.n_kv_heads = a->n_kv_heads;
    mp.Bq = c->Bq;
    mp.Bk = c->Bk;
    mp.in_bytes = mp.mat_bytes = mp.acc_bytes = ELEM_BYTES;
    mp.mask = a->mask;
    fs_mem_report mr;
    bool model = fs_mem_model(&mp, &mr) == FS_OK;
    double flash = c->io.q + c->io.kv + c->io.o;
    double base = model ? (double)(mr.mat_traffic + mr.io_bytes) / a->n_q_heads : 0;
    char b1[32], b2[32], b3[32];
    kb(flash, b1, sizeof b1);
    gui_textf(d, fs, x, y, th->text, GUI_AL_LEFT, "HBM traffic so far: %s (this head)", b1);
    y += lh;
    int bw = r.w - 2 * d->L.pad;
    double mx = fmax(base, flash);
    if (mx > 0) {
        gui_fill(d, (gui_rect){x, y, bw, lh / 2}, th->future);
        gui_fill(d, (gui_rect){x, y, (int)(bw * flash / mx), lh / 2}, th->accent);
        y += lh / 2 + d->L.pad / 4;
        gui_fill(d, (gui_rect){x, y, (int)(bw * base / mx), lh / 2}, th->bad);
        y += lh / 2 + d->L.pad / 4;
    }
    if (model) {
        kb((double)mr.tiled_traffic, b2, sizeof b2);
        kb((double)(mr.mat_traffic + mr.io_bytes), b3, sizeof b3);
        char ln[160];
        snprintf(ln, sizeof ln, "whole run: tiled %s, materializing %s", b2, b3);
        side_text(d, r, x, &y, th->dim, ln);
    }
    char tl[160];
    snprintf(tl, sizeof tl, "tiles: %d computed (%d partial), %d skipped of %d", c->io.visited, c->io.partial, c->io.skipped,
             c->nqt * c->nkt);
    side_text(d, r, x, &y, th->dim, tl);
    if (group > 1) {
        kb(c->io.kv / group, b1, sizeof b1);
        kb(c->io.kv, b2, sizeof b2);
        char ln[160];
        snprintf(ln, sizeof ln, "K,V shared by %d heads: %s each, not %s", group, b1, b2);
        side_text(d, r, x, &y, th->good, ln);
    }
    if (show->run.tiling.dropout.on) {   /* dropout: where 1/(1 − p) goes, and the mask not kept */
        double p = show->run.tiling.dropout.p;
        char ln[200], k1[32];
        snprintf(ln, sizeof ln, "dropout p = %.3g: l sums all of P; o takes the kept P times 1/(1-p) = %.4g", p,
                 fs_dropout_keep_scale(p));
        side_text(d, r, x, &y, th->warn, ln);
        double mb = fs_dropout_mask_bytes(1, c->n_q, c->n_kv, 1);
        if (mb < 1024) snprintf(k1, sizeof k1, "%g B", mb);   /* 36 bits: 4.5 B, not "4 B" */
        else kb(mb, k1, sizeof k1);
        snprintf(ln, sizeof ln, "mask regenerated from Philox, not stored (it would be %d x %d bits = %s a head)", c->n_q, c->n_kv,
                 k1);
        side_text(d, r, x, &y, th->dim, ln);
    }
    return y;
}

/* A mini table of the current tile's S and P̃ values (when the grid cells are too small). */
static int draw_tile_table(gui_draw *d, const tiled_scan *c, gui_rect r, int y)
{
    const fs_event *ct = c->cur_tile >= 0 ? &c->t->ev[c->cur_tile] : NULL;
    if (!ct || ct->kind != FS_EV_TILE) return y;
    const gui_theme *th = d->th;
    int fs = d->L.font_small, lh = gui_line_h(d, fs), x = r.x + d->L.pad;
    gui_textf(d, d->L.font, x, y, th->text, GUI_AL_LEFT, "Tile Q%d,K%d: scores s", ct->qt, ct->kt);
    y += gui_line_h(d, d->L.font);
    int cols = ct->c1 - ct->c0, cw = gui_char_w(d, fs) * 6;
    int maxc = (r.w - 2 * d->L.pad) / cw;
    /* Leave room under the table for the on-chip panel (title, two rows of boxes, five lines). */
    int reserve = gui_line_h(d, d->L.font) + 10 * lh + 2 * d->L.pad;
    for (int i = ct->r0; i < ct->r1 && y + lh < r.y + r.h - reserve; i++) {
        for (int j = 0; j < cols && j < maxc; j++) {
            char b[16];
            fmt2(cell_value(c, i, ct->c0 + j, 0), b, sizeof b);
            gui_text(d, fs, x + j * cw, y, th->text, GUI_AL_LEFT, b);
        }
        y += lh;
    }
    return y + d->L.pad / 2;
}

/* ---------------------------------------------------------------------------------------------
 * Tree drawing: nodes by depth, children spread under their parent; the followed query's
 * ancestors (the keys it may see) highlighted. */

static void draw_tree(gui_draw *d, const gui_show *show, int row, gui_rect r)
{
    const gui_theme *th = d->th;
    int n = show->n_parent;
    if (n <= 0 || n > 256) return;
    int depth[256], x_slot[256], leaves = 0, maxd = 0;
    for (int i = 0; i < n; i++) {
        depth[i] = 0;
        for (int p = show->parent[i], guard = 0; p >= 0 && guard < n; p = show->parent[p], guard++) depth[i]++;
        if (depth[i] > maxd) maxd = depth[i];
    }
    /* Leaves get slots left to right in depth-first order; a parent sits over its children. */
    int order[256], n_order = 0, stack[256], sp = 0;
    for (int i = n - 1; i >= 0; i--) if (show->parent[i] < 0) stack[sp++] = i;
    while (sp > 0 && n_order < n) {
        int v = stack[--sp];
        order[n_order++] = v;
        for (int ch = n - 1; ch >= 0; ch--) if (show->parent[ch] == v && sp < 256) stack[sp++] = ch;
    }
    for (int i = 0; i < n; i++) x_slot[i] = -1;
    for (int o = 0; o < n_order; o++) {
        int v = order[o];
        bool leaf = true;
        for (int ch = 0; ch < n; ch++) leaf &= show->parent[ch] != v;
        if (leaf) x_slot[v] = 2 * leaves++;
    }
    for (int o = n_order - 1; o >= 0; o--) {   /* parents after their children: mean of children */
        int v = order[o], sum = 0, cnt = 0;
        if (x_slot[v] >= 0) continue;
        for (int ch = 0; ch < n; ch++) if (show->parent[ch] == v && x_slot[ch] >= 0) { sum += x_slot[ch]; cnt++; }
        x_slot[v] = cnt ? sum / cnt : 0;
    }
    /* The caption on top, wrapped to the column (two lines at 1280 × 720). */
    const char *cap = row >= 0 ? "tree: the query (yellow) sees itself and its ancestors (blue)" : "tree";
    int cf = d->L.font_small;
    int cap_h = gui_text_wrap(d, cf, (gui_rect){r.x + d->L.pad, r.y, r.w - d->L.pad, 2 * gui_line_h(d, cf)}, th->text, cap);
    int fs = d->L.font, rad = fs;
    int top = r.y + cap_h + rad + d->L.pad / 2, h = r.y + r.h - rad - gui_line_h(d, d->L.font_small) - top;
    int w = r.w - 2 * rad - 2 * d->L.pad;
    int px[256], py[256];
    for (int i = 0; i < n; i++) {
        px[i] = r.x + rad + d->L.pad + (leaves > 1 ? x_slot[i] * w / (2 * leaves - 2) : w / 2);
        py[i] = top + (maxd ? depth[i] * h / maxd : h / 2);
    }
    bool anc[256] = {false};
    if (row >= 0 && row < n)
        for (int p = row, guard = 0; p >= 0 && guard < n; p = show->parent[p], guard++) anc[p] = true;
    for (int i = 0; i < n; i++) {
        int p = show->parent[i];
        if (p >= 0) gui_line(d, px[p], py[p], px[i], py[i], anc[i] && anc[p] ? th->current : th->border, anc[i] ? 3 * d->thin : d->thin);
    }
    for (int i = 0; i < n; i++) {
        uint32_t col = i == row ? th->current : anc[i] ? th->accent : th->future;
        gui_disc(d, px[i], py[i], rad, th->border);
        gui_disc(d, px[i], py[i], rad - d->thin - 1, col);
        /* The lesson's name for the position inside the disc, its index (the grid's row and
         * column) beside it; without names, the index inside. */
        char lab[16];
        bool named = show->node_label[i][0] != 0;
        snprintf(lab, sizeof lab, "%s", named ? show->node_label[i] : "");
        if (!named) snprintf(lab, sizeof lab, "%d", i);
        int lf = gui_text_w(d, fs, lab) <= 2 * rad - 2 ? fs : d->L.font_small;
        gui_text(d, lf, px[i], py[i] - gui_line_h(d, lf) / 2, i == row || anc[i] ? th->bg : th->text, GUI_AL_CENTER, lab);
        if (named) gui_textf(d, d->L.font_small, px[i] + rad * 7 / 10, py[i] + rad * 6 / 10, th->dim, GUI_AL_LEFT, "%d", i);
    }
}

/* ---------------------------------------------------------------------------------------------
 * GQA band: KV heads with the query heads that share them. */

static void draw_gqa_band(gui_draw *d, const gui_show *show, int head, bool veil, gui_rect r)
{
    const gui_theme *th = d->th;
    const fs_attn *a = &show->run.attn;
    int G = a->n_q_heads / (a->n_kv_heads > 0 ? a->n_kv_heads : 1);
    int fs = d->L.font_small, lh = gui_line_h(d, fs);
    if (veil) {
        /* which KV head a query head reads is being asked: the query heads in one row, ungrouped */
        gui_text(d, fs, r.x, r.y + d->L.pad / 4, th->dim, GUI_AL_LEFT, "query heads (their KV heads: after the question)");
        const int n = a->n_q_heads, qw = (r.w - (n - 1) * d->L.pad / 4) / (n > 0 ? n : 1);
        for (int h = 0; h < n && qw > 2; h++) {
            gui_rect q = {r.x + h * (qw + d->L.pad / 4), r.y + lh + d->L.pad, qw, lh + d->L.pad / 2};
            gui_fill(d, q, h == head ? th->current : th->future);
            gui_frame(d, q, th->border, d->thin);
            char ql[16];
            snprintf(ql, sizeof ql, "%d", h);
            int qf = fs;
            while (qf > 7 && gui_text_w(d, qf, ql) >= q.w) qf--;
            if (gui_text_w(d, qf, ql) < q.w)
                gui_text(d, qf, q.x + q.w / 2, q.y + (q.h - gui_line_h(d, qf)) / 2, h == head ? th->bg : th->text, GUI_AL_CENTER, ql);
        }
        return;
    }
    int bw = (r.w - d->L.pad) / (a->n_kv_heads > 0 ? a->n_kv_heads : 1) - d->L.pad;
    if (bw > 14 * fs) bw = 14 * fs;
    for (int kv = 0; kv < a->n_kv_heads; kv++) {
        bool cur = fs_attn_kv_head(a, head) == kv;
        gui_rect b = {r.x + kv * (bw + d->L.pad), r.y, bw, lh + d->L.pad / 2};
        gui_fill(d, b, cur ? gui_mix(th->panel, th->full, 0.5) : th->panel);
        gui_frame(d, b, cur ? th->current : th->border, d->thin);
        char kl[24];
        snprintf(kl, sizeof kl, "KV head %d", kv);
        if (gui_text_w(d, fs, kl) >= b.w) snprintf(kl, sizeof kl, "kv%d", kv);
        if (gui_text_w(d, fs, kl) < b.w) gui_text(d, fs, b.x + b.w / 2, b.y + d->L.pad / 4, th->text, GUI_AL_CENTER, kl);
        int qw = (bw - (G - 1) * d->L.pad / 2) / G;
        for (int g = 0; g < G; g++) {
            int h = kv * G + g;
            gui_rect q = {b.x + g * (qw + d->L.pad / 2), b.y + b.h + d->L.pad / 2, qw, lh + d->L.pad / 2};
            gui_fill(d, q, h == head ? th->current : th->future);
            gui_frame(d, q, th->border, d->thin);
            /* "q21", else "21", else "21" at a smaller size: every head keeps its number. */
            char ql[16];
            snprintf(ql, sizeof ql, "q%d", h);
            int qf = fs;
            if (gui_text_w(d, qf, ql) >= q.w) snprintf(ql, sizeof ql, "%d", h);
            while (qf > 7 && gui_text_w(d, qf, ql) >= q.w) qf--;
            if (gui_text_w(d, qf, ql) < q.w)
                gui_text(d, qf, q.x + q.w / 2, q.y + (q.h - gui_line_h(d, qf)) / 2, h == head ? th->bg : th->text, GUI_AL_CENTER, ql);
        }
    }
}

/* A low-precision run's cell (i, j) beside the float64 run ex: the score and P as float64 has
 * them and as the run computed them, P8 (what P · V used), and the tile's scales. Two lines. */
/* "a→a8 b→b8 …": up to 4 entries of an input row, exact and rounded (dequantized). */
static void pairs(char *out, size_t n, const double *x, const double *x8, int len)
{
    size_t k = 0;
    out[0] = 0;
    for (int c = 0; x && x8 && c < len && c < 4 && k < n; c++)
        k += (size_t)snprintf(out + k, n - k, "%s%.4g→%.4g", c ? "  " : "", x[c], x8[c]);
    if (len > 4 && k < n) snprintf(out + k, n - k, "  …");
}

static bool lowp_hover(const tiled_scan *c, const tiled_scan *ex, int i, int j, char *l1, char *l2, char *l3, size_t n)
{
    if (!c->cells || !ex || !ex->cells) return false;
    int64_t k = c->cell_ev[(int64_t)i * c->n_kv + j], kx = ex->cell_ev[(int64_t)i * ex->n_kv + j];
    if (k < 0 || kx < 0) return false;
    const fs_event *e = &c->t->ev[k], *x = &ex->t->ev[kx];
    if (!e->lowp || j - e->c0 >= e->n_s) return false;
    const double *p8 = fs_trace_at(c->t, e->p8_row), *P = fs_trace_at(c->t, e->p_row);
    double s = cell_value(c, i, j, 0), sx = cell_value(ex, i, j, 0);
    double px = isfinite(sx) && isfinite(x->m_new) ? exp(sx - x->m_new) : 0;   /* float64's P against its m_new */
    snprintf(l1, n, "q%d, k%d: s = %.6g (float64 %.6g)   P = %.6g (float64 %.6g)   P8 = %.6g", i, j, s, sx,
             P ? P[j - e->c0] : NAN, px, p8 ? p8[j - e->c0] : NAN);
    snprintf(l2, n, "scales: q %.6g  k %.6g  v %.6g  p %.6g   (S = q8·k8 · scale·q·k; P8 = e4m3(P·p) / p)", e->q_scale,
             e->k_scale, e->v_scale, e->p_scale);
    /* the inputs of this pair, exact → rounded: the query row and key j's row of K */
    int64_t te = c->tile_ev[(i / c->Bq) * c->nkt + j / c->Bk];
    const fs_event *t = te >= 0 ? &c->t->ev[te] : NULL;
    const double *kr = t ? fs_trace_at(c->t, t->k_tile) : NULL, *kr8 = t ? fs_trace_at(c->t, t->k8_tile) : NULL;
    char qa[96], ka[96];
    pairs(qa, sizeof qa, fs_trace_at(c->t, e->x_row), fs_trace_at(c->t, e->x8_row), e->n_x);
    pairs(ka, sizeof ka, kr ? kr + (size_t)(j - t->c0) * t->n_x : NULL, kr8 ? kr8 + (size_t)(j - t->c0) * t->n_x : NULL,
          t ? t->n_x : 0);
    l3[0] = 0;
    if (qa[0] && ka[0]) snprintf(l3, n, "q%d: %s    k%d: %s", i, qa, j, ka);
    return true;
}

static void draw_hover(gui_draw *d, const gui_state *s, const gui_show *show, const tiled_scan *c, const gui_grid *g,
                       const tiled_scan *ex)
{
    if (s->hover != GUI_HOVER_CELL) return;
    int i = s->hover_i, j = s->hover_j;
    char line[256], line2[256] = "", line3[256] = "", b1[32], b2[32];
    const fs_attn *a = &show->run.attn;
    if (j < c->n_kv && fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j) &&
        lowp_hover(c, ex, i, j, line, line2, line3, sizeof line)) {
        /* a low-precision run: both lines */
    } else if (j < c->n_kv) {
        double sv = cell_value(c, i, j, 0), pv = cell_value(c, i, j, 1);
        if (!fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j)) snprintf(line, sizeof line, "q%d, k%d: masked (s = -inf)", i, j);
        else if (isnan(sv)) snprintf(line, sizeof line, "q%d, k%d: not computed yet", i, j);
        else snprintf(line, sizeof line, "q%d, k%d: s = %.10g   P~ = %s", i, j, sv, gui_fmt(pv, b2, 32));
    } else if (j > c->n_kv && j - c->n_kv - 1 < c->d_v) {
        bool fin, norm;
        const double *o = row_o(c, i, &fin, &norm);
        if (o) snprintf(line, sizeof line, "%s[%d][%d] = %.10g%s", norm ? "O" : "o", i, j - c->n_kv - 1, o[j - c->n_kv - 1],
                        fin ? " (final)" : "");
        else snprintf(line, sizeof line, "row %d: no output yet", i);
    } else {
        return;
    }
    (void)b1;
    int fs = d->L.font_small, w = gui_text_w(d, fs, line) + d->L.pad, h = gui_line_h(d, fs) + d->L.pad / 2;
    const char *more[2] = {line2, line3};
    for (int k = 0; k < 2; k++)
        if (more[k][0]) {
            int w2 = gui_text_w(d, fs, more[k]) + d->L.pad;
            if (w2 > w) w = w2;
            h += gui_line_h(d, fs);
        }
    int x = s->mouse_x + d->L.pad, y = s->mouse_y + d->L.pad * 2;
    if (x + w > s->w) x = s->w - w;
    if (x < 0) x = 0;
    if (y + h > s->h) y = s->mouse_y - h - d->L.pad;
    gui_fill(d, (gui_rect){x, y, w, h}, d->th->panel);
    gui_frame(d, (gui_rect){x, y, w, h}, d->th->current, d->thin);
    gui_text(d, fs, x + d->L.pad / 2, y + d->L.pad / 4, d->th->text, GUI_AL_LEFT, line);
    for (int k = 0, yy = y + d->L.pad / 4 + gui_line_h(d, fs); k < 2; k++)
        if (more[k][0]) {
            gui_text(d, fs, x + d->L.pad / 2, yy, d->th->dim, GUI_AL_LEFT, more[k]);
            yy += gui_line_h(d, fs);
        }
    (void)g;
}

/* Tile classes in colour and pattern, at the foot of the side panel. */
static void draw_legend(gui_draw *d, gui_rect side, int used_y, bool dropout)
{
    const gui_theme *th = d->th;
    int fs = d->L.font_small, lh = gui_line_h(d, fs), sq = lh + 2, n = dropout ? 5 : 4, rows = (n + 1) / 2;
    int x = side.x + d->L.pad, y = side.y + side.h - rows * (sq + d->L.pad / 2) - d->L.pad / 2;
    if (y < used_y) return;   /* no room left under the numbers */
    struct { const char *t; uint32_t c; int pat; } it[5] = {
        {"full", th->full, 0}, {"partial (/)", th->partial, 1}, {"skipped (x)", th->skipped, 3}, {"masked pair", th->masked, 4},
        {"dropped (dropout)", th->panel, 5}};
    int colw = (side.w - 2 * d->L.pad) / 2;
    for (int i = 0; i < n; i++) {
        gui_rect r = {x + (i % 2) * colw, y + (i / 2) * (sq + d->L.pad / 2), sq, sq};
        gui_fill(d, r, it[i].c);
        if (it[i].pat == 1) gui_hatch(d, r, gui_mix(it[i].c, th->text, 0.3), sq / 3, 1);
        if (it[i].pat == 3) gui_hatch(d, r, gui_mix(it[i].c, th->text, 0.35), sq / 3, 3);
        if (it[i].pat == 4) {
            gui_line(d, r.x + 3, r.y + 3, r.x + r.w - 4, r.y + r.h - 4, th->dim, 1);
            gui_line(d, r.x + 3, r.y + r.h - 4, r.x + r.w - 4, r.y + 3, th->dim, 1);
        }
        gui_frame(d, r, th->border, 1);
        if (it[i].pat == 5) {   /* as gui_mark_dropped draws a dropped cell */
            gui_frame(d, (gui_rect){r.x + 2, r.y + 2, r.w - 4, r.h - 4}, th->warn, d->thin + 1);
            gui_line(d, r.x + 2, r.y + r.h - 2, r.x + r.w - 2, r.y + 2, th->warn, d->thin + 1);
        }
        gui_text(d, fs, r.x + sq + d->L.pad / 2, r.y + 1, th->text, GUI_AL_LEFT, it[i].t);
    }
}

void gui_scene_tiled(gui_draw *d, const gui_state *s, const gui_show *show);
void gui_scene_tiled(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_layout *L = &d->L;
    int head = s->n > 0 ? show->trace.ev[s->step].head : 0;
    if (head < 0) head = 0;
    const tiled_scan *cp = scan_get(d, 0, show, &show->trace, s->step, head);
    if (!cp) return;
    const tiled_scan c = *cp;
    gui_grid g = gui_scene_grid(show, L);
    int row = gui_followed_row(s, show);
    const fs_attn *a = &show->run.attn;
    char cap[96];
    snprintf(cap, sizeof cap, "%s%s", show->scene == GUI_SCENE_PITFALL ? "correct: " : "S = scale·QKᵀ; in blue: exp(S - m_blk)",
             a->n_q_heads > 1 ? "" : "");
    if (a->n_q_heads > 1) snprintf(cap, sizeof cap, "head %d (reads KV head %d)", head, fs_attn_kv_head(a, head));
    /* A pitfall: c is the wrong variant (the timeline's run), drawn on the right; the correct
     * run at the same step on the left, and the wrong run's O rows that differ from it outlined. */
    tiled_scan ok;
    bool have_correct = false;
    const bool lowp = show->run.lowp;   /* an fp8 lesson: the low-precision run beside float64 */
    if (show->scene == GUI_SCENE_PITFALL && show->correct.n > 0) {
        int64_t kc = s->step < show->correct.n ? s->step : show->correct.n - 1;
        const tiled_scan *okp = scan_get(d, 1, show, &show->correct, kc, head);
        if (okp) { ok = *okp; have_correct = true; }
    }
    if (have_correct) {
        gui_grid g2 = g;
        if (gui_pitfall_stacked(show, L)) g2.y0 += L->main.h / 2;
        else g2.x0 += L->main.w / 2;
        char cap2[96];
        snprintf(cap2, sizeof cap2, "%s%s", lowp ? "" : "wrong: ", show->wrong_label);
        draw_grid(d, s, show, &ok, &g, false, NULL, lowp ? "float64 (red: differs on the right)" : "correct");
        draw_grid(d, s, show, &c, &g2, false, &ok, cap2);
    } else {
        draw_grid(d, s, show, &c, &g, show->scene != GUI_SCENE_PITFALL, NULL, cap);
    }
    if (show->scene == GUI_SCENE_TREE) {
        gui_rect tr = {L->main.x + L->main.w * 11 / 20 + L->pad, L->main.y, L->main.w * 9 / 20 - L->pad, L->main.h};
        draw_tree(d, show, row, tr);
    }
    if (show->scene == GUI_SCENE_GQA)
        draw_gqa_band(d, show, head, gui_kv_head_wait(s, show), (gui_rect){L->main.x, L->main.y, L->main.w, 4 * L->font});

    /* Side panel. */
    gui_clip(d, &L->side);
    gui_panel(d, L->side, NULL);
    int y = L->side.y + L->pad / 2;
    if (show->scene == GUI_SCENE_PITFALL && have_correct) {
        const gui_theme *th = d->th;
        int x = L->side.x + L->pad, lh = gui_line_h(d, L->font_small);
        gui_text(d, L->font, x, y, th->text, GUI_AL_LEFT, lowp ? "Row update: float64 vs low precision" : "Row update: correct vs wrong");
        y += gui_line_h(d, L->font) + L->pad / 3;
        int64_t rc = row >= 0 ? ok.row_ev[row] : -1, rw = row >= 0 ? c.row_ev[row] : -1;
        if (rc >= 0 && rw >= 0) {
            const fs_event *e1 = &show->correct.ev[rc], *e2 = &show->trace.ev[rw];
            const char *names[3] = {"m", "ℓ", "α"};
            double v1[3] = {e1->m_new, e1->l_new, e1->alpha}, v2[3] = {e2->m_new, e2->l_new, e2->alpha};
            for (int i = 0; i < 3; i++) {
                char b1[32], b2[32];
                bool same = v1[i] == v2[i] || fabs(v1[i] - v2[i]) <= 1e-9 * fmax(1, fabs(v1[i]));
                gui_textf(d, L->font_small, x, y, same ? th->text : th->bad, GUI_AL_LEFT, "row %d %s: %s | %s", row, names[i],
                          gui_fmt(v1[i], b1, 32), gui_fmt(v2[i], b2, 32));
                y += lh;
            }
            const double *o1 = fs_trace_at(&show->correct, e1->o_new), *o2 = fs_trace_at(&show->trace, e2->o_new);
            for (int v = 0; o1 && o2 && v < e1->n_o && v < 4; v++) {
                char b1[32], b2[32];
                bool same = fabs(o1[v] - o2[v]) <= 1e-9 * fmax(1, fabs(o1[v]));
                gui_textf(d, L->font_small, x, y, same ? th->text : th->bad, GUI_AL_LEFT, "row %d o[%d]: %s | %s", row, v,
                          gui_fmt(o1[v], b1, 32), gui_fmt(o2[v], b2, 32));
                y += lh;
            }
        }
        y += L->pad / 2;
        if (show->diverge >= 0) {
            const fs_event *e = &show->trace.ev[show->diverge];
            gui_textf(d, L->font_small, x, y, s->step >= show->diverge ? th->bad : th->dim, GUI_AL_LEFT,
                      "first %s: step %lld (%s, row %d)", lowp ? "difference" : "divergence", (long long)show->diverge,
                      fs_event_kind_str(e->kind), e->row);
        } else {
            gui_text(d, L->font_small, x, y, th->good, GUI_AL_LEFT, "the two variants agree at every step");
        }
        y += lh + L->pad;
    }
    y = draw_row_formulas(d, s, &c, row, L->side, y, have_correct ? (lowp ? " low precision" : " wrong run") : "",
                          show->run.tiling.pitfall, show->run.tiling.exp2) + L->pad;
    int vf = cell_font(d, g.cell, 5);
    if (vf < 7 && c.cells && show->scene != GUI_SCENE_PITFALL) y = draw_tile_table(d, &c, L->side, y);
    int G = a->n_kv_heads > 0 ? a->n_q_heads / a->n_kv_heads : 1;
    y = draw_chip(d, show, &c, L->side, y, show->scene == GUI_SCENE_GQA ? G : 1);
    draw_legend(d, L->side, y, show->run.tiling.dropout.on);
    gui_clip(d, NULL);
    draw_hover(d, s, show, &c, &g, have_correct ? &ok : NULL);
}

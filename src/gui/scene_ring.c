/* scene_ring.c: ring attention (engine/ring.h) over P simulated devices.
 *
 * The main area is the ring's work table: one column per device, one row per ring step, each
 * cell the KV shard the device holds at that step (shard (p − t) mod P), coloured by the work it
 * does there under the mask (every pair visible, some, none: skipped), filled once done; the
 * hops of the step in flight under it (device p → p + 1, the last back to the first); and under
 * each column the device's load bar, its visible (query, key) pairs against the busiest
 * device's, filled as far as the run has gone. The side panel says what the current event is,
 * with the merge's α and β filled in. Reads the trace and the run only.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ring.h"
#include "gui/draw.h"
#include "lesson/lesson.h"

#define RING_DRAW_MAX 32   /* devices drawn one by one; more: the table is too fine to read */

static int text_line(gui_draw *d, int size, int x, int *y, uint32_t col, const char *s)
{
    gui_text(d, size, x, *y, col, GUI_AL_LEFT, s);
    *y += gui_line_h(d, size);
    return *y;
}

/* Where the run is: the ring step t and the device p of the event at step k (t = −1 before the
 * first HOLD, t = P after the last step: the outputs or gradients). */
static void ring_now(const gui_show *show, int64_t k, int32_t P, int32_t *t, int32_t *p)
{
    *t = -1;
    *p = -1;
    const fs_trace *tr = &show->trace;
    if (k < 0 || k >= tr->n) return;
    for (int64_t j = k; j >= 0; j--) {
        const fs_event *e = &tr->ev[j];
        if (e->ring_step >= 0) {
            *t = e->ring_step;
            *p = e->device;
            /* the sends and receives close a step: every device's cell of it is done */
            if (e->kind == FS_EV_SEND || e->kind == FS_EV_RECV) *p = P;
            return;
        }
        if (e->kind == FS_EV_OUT || e->kind == FS_EV_GRAD) { *t = P; *p = 0; return; }
    }
}

/* The current event in words and numbers, in the side panel. */
static void ring_side(gui_draw *d, const gui_state *s, const gui_show *show, const fs_ring *rg)
{
    const gui_layout *L = &d->L;
    const gui_theme *th = d->th;
    gui_clip(d, &L->side);
    gui_panel(d, L->side, NULL);
    int x = L->side.x + L->pad, y = L->side.y + L->pad / 2, fs = L->font_small;
    char b1[32], b2[32], buf[256];
    const fs_event *e = s->n > 0 ? &show->trace.ev[s->step] : NULL;
    snprintf(buf, sizeof buf, "%d devices, %s sharding%s", rg->P, fs_sharding_str(rg->sharding),
             show->run.ring_backward ? ", backward" : "");
    text_line(d, L->font, x, &y, th->accent, buf);
    if (e && e->device >= 0 && e->kind != FS_EV_SEND && e->kind != FS_EV_RECV) {
        snprintf(buf, sizeof buf, "ring step %d: device %d holds shard %d", e->ring_step, e->device, e->shard);
        text_line(d, fs, x, &y, th->text, buf);
    }
    y += L->pad / 2;
    if (!e) {
        text_line(d, fs, x, &y, th->dim, "no events");
    } else if (e->kind == FS_EV_HOLD) {
        const double *pos = fs_trace_at(&show->trace, e->s_row);
        int n = 0;
        n += snprintf(buf + n, sizeof buf - (size_t)n, "positions");
        for (int i = 0; pos && i < e->n_s && i < 12 && n < (int)sizeof buf - 16; i++)
            n += snprintf(buf + n, sizeof buf - (size_t)n, " %.0f", pos[i]);
        if (e->n_s > 12) snprintf(buf + n, sizeof buf - (size_t)n, " …");
        text_line(d, fs, x, &y, th->text, buf);
        text_line(d, fs, x, &y, th->dim, fs_ring_hold_skipped(&show->trace, e - show->trace.ev)
                                              ? "its queries see none of them: skipped" : "its queries meet these keys now");
    } else if (e->kind == FS_EV_SEND || e->kind == FS_EV_RECV) {
        snprintf(buf, sizeof buf, "%s: shard %d, device %d -> device %d", e->kind == FS_EV_SEND ? "send" : "receive",
                 e->shard, e->a, e->b);
        text_line(d, fs, x, &y, th->merge_mark, buf);
        snprintf(buf, sizeof buf, "%lld bytes (float64 %s rows)", (long long)e->bytes,
                 !show->run.ring_backward ? "K and V" : e->ring_step == rg->P - 1 ? "dK and dV, going home" : "K, V, dK and dV");
        text_line(d, fs, x, &y, th->text, buf);
        text_line(d, fs, x, &y, th->dim, "on a GPU ring: overlapped with the next step");
    } else if (e->kind == FS_EV_RMERGE) {
        gui_formula_line fl[GUI_FORMULA_LINES];
        int n = gui_merge_formulas(&show->trace, e, fl, GUI_FORMULA_LINES);
        for (int i = 0; i < n; i++)
            text_line(d, fs, x, &y, fl[i].role == GUI_FL_RESCALE ? th->rescale : fl[i].role == GUI_FL_SUM ? th->accent
                                  : fl[i].role == GUI_FL_NOTE    ? th->dim : th->text, fl[i].text);
    } else if (e->kind == FS_EV_ROW) {
        snprintf(buf, sizeof buf, "position %d, tile (Q %d, KV %d), %d visible", e->pos, e->qt, e->kt, e->visible);
        text_line(d, fs, x, &y, th->text, buf);
        snprintf(buf, sizeof buf, "m_blk = %s, ℓ_blk = %s", gui_fmt(e->m_blk, b1, sizeof b1), gui_fmt(e->l_blk, b2, sizeof b2));
        text_line(d, fs, x, &y, th->text, buf);
        snprintf(buf, sizeof buf, "within the shard: m = %s, ℓ = %s", gui_fmt(e->m_new, b1, sizeof b1), gui_fmt(e->l_new, b2, sizeof b2));
        text_line(d, fs, x, &y, th->text, buf);
    } else if (e->kind == FS_EV_TILE || e->kind == FS_EV_SKIP || e->kind == FS_EV_BTILE || e->kind == FS_EV_BSKIP) {
        bool skip = e->kind == FS_EV_SKIP || e->kind == FS_EV_BSKIP;
        snprintf(buf, sizeof buf, "%s Q tile %d x KV tile %d (rows %d-%d, keys %d-%d of the shard)", skip ? "skip" : "visit",
                 e->qt, e->kt, e->r0, e->r1 - 1, e->c0, e->c1 - 1);
        text_line(d, fs, x, &y, skip ? th->dim : th->text, buf);
        if (skip) text_line(d, fs, x, &y, th->dim, "every key after every query (causal)");
    } else if (e->kind == FS_EV_BROW || e->kind == FS_EV_BKEY || e->kind == FS_EV_GRAD) {
        /* A backward step's numbers, one formula a line as the terminal prints them (S, P, dP,
         * dS and dQ's share for a row; dK's and dV's for a key); its words are in the narration
         * bar. The ring's own note (which numbering the row and key use) is dimmed. */
        char desc[1536];
        fs_lesson_describe(NULL, &show->trace, s->step, 4, desc, sizeof desc);
        int w = L->side.w - 2 * L->pad, lh = gui_line_h(d, fs);
        for (char *p = desc, *q; p && *p; p = q) {
            q = strstr(p, "; ");
            if (q) { *q = 0; q += 2; }
            bool note = !strncmp(p, "on device ", 10);
            y += gui_text_wrap(d, fs, (gui_rect){x, y, w, 4 * lh}, note ? th->dim : th->text, p);
        }
    } else {
        char words[512];
        gui_narration(show, s->step, words, sizeof words);
        y += gui_text_wrap(d, fs, (gui_rect){x, y, L->side.w - 2 * L->pad, 6 * gui_line_h(d, fs)}, th->text, words);
    }
    /* the legend, at the bottom */
    int lh = gui_line_h(d, fs), sq = lh * 2 / 3, yl = L->side.y + L->side.h - 2 * lh - L->pad / 2;
    if (yl > y) {
        struct { uint32_t c; const char *t; } leg[4] = {
            {th->full, "every pair visible"}, {th->partial, "some (causal)"}, {th->skipped, "none: skipped"}, {th->future, "to come"}};
        for (int i = 0; i < 4; i++) {
            int lx = x + (i % 2) * (L->side.w / 2), ly = yl + (i / 2) * lh;
            gui_fill(d, (gui_rect){lx, ly + (lh - sq) / 2, sq, sq}, leg[i].c);
            gui_text(d, fs, lx + sq + L->pad / 2, ly, th->text, GUI_AL_LEFT, leg[i].t);
        }
    }
    gui_clip(d, NULL);
}

void gui_scene_ring(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_layout *L = &d->L;
    const gui_theme *th = d->th;
    const fs_attn *a = &show->run.attn;
    fs_ring rg = show->run.ring;
    rg.tiling = show->run.tiling;
    int32_t P = rg.P;
    gui_rect m = L->main;
    int f = L->font, fs = L->font_small, lh = gui_line_h(d, fs);
    ring_side(d, s, show, &rg);
    if (P < 1 || P > RING_DRAW_MAX) {
        char buf[128];
        snprintf(buf, sizeof buf, "%d devices: too many to draw one by one (the table: flashstep trace --ring)", P);
        gui_text_wrap(d, f, m, th->text, buf);
        return;
    }
    /* The work table, from the mask alone (ring.h), one head. */
    int64_t *pairs = calloc((size_t)P * (size_t)P, sizeof *pairs);
    int32_t *count = calloc((size_t)P, sizeof *count);
    if (!pairs || !count || fs_ring_work(a, &rg, NULL, NULL, pairs) != FS_OK) {
        free(pairs);
        free(count);
        gui_text(d, f, m.x, m.y, th->bad, GUI_AL_LEFT, "the ring's work table cannot be computed for this problem");
        return;
    }
    for (int32_t q = 0; q < P; q++) count[q] = fs_ring_positions(&rg, a->n_q, q, NULL);
    int32_t now_t, now_p;
    ring_now(show, s->n > 0 ? s->step : -1, P, &now_t, &now_p);
    const fs_event *e = s->n > 0 ? &show->trace.ev[s->step] : NULL;

    /* Geometry: a label column, P device columns; a header row, P step rows, the hop row, the
     * load bars. */
    int label_w = 5 * gui_char_w(d, fs) + L->pad;
    int col = (m.w - label_w) / P;
    int rows_h = m.h - 2 * lh - 3 * lh - L->pad;   /* header (2 lines), hops and load (3) */
    int cell = rows_h / P;
    if (cell > col * 3 / 4) cell = col * 3 / 4;
    if (cell > 5 * f) cell = 5 * f;
    if (col > 2 * cell + 2 * f) col = 2 * cell + 2 * f;
    int x0 = m.x + label_w, y0 = m.y + 2 * lh;
    char buf[96];
    snprintf(buf, sizeof buf, "the KV shard device p holds at ring step t: (p - t) mod %d", P);
    if (gui_text_w(d, fs, buf) > m.w) snprintf(buf, sizeof buf, "shard held: (p - t) mod %d", P);
    gui_text(d, fs, m.x, m.y, th->dim, GUI_AL_LEFT, buf);
    for (int32_t p = 0; p < P; p++) {
        snprintf(buf, sizeof buf, "dev %d", p);
        gui_text(d, fs, x0 + p * col + col / 2, m.y + lh, p == now_p && now_t >= 0 && now_t < P ? th->accent : th->text,
                 GUI_AL_CENTER, buf);
    }
    int64_t done[RING_DRAW_MAX] = {0}, load[RING_DRAW_MAX] = {0}, busiest = 1;
    /* while a question asks how much of a step a device computes, the work to come is not shown
     * (the cells' classes and counts, the loads' totals): only what the run has done */
    const bool veil = gui_classes_wait(s, show) >= 0;
    for (int32_t t = 0; t < P; t++) {
        snprintf(buf, sizeof buf, "t=%d", t);
        gui_text(d, fs, m.x, y0 + t * cell + (cell - lh) / 2, t == now_t ? th->accent : th->dim, GUI_AL_LEFT, buf);
        for (int32_t p = 0; p < P; p++) {
            int32_t sh = ((p - t) % P + P) % P;
            int64_t w = pairs[p * P + t], full = (int64_t)count[p] * count[sh];
            bool is_done = t < now_t || (t == now_t && p < now_p), is_now = t == now_t && p == now_p;
            load[p] += w;
            if (is_done || is_now) done[p] += w;
            uint32_t c = w == 0 ? th->skipped : w == full ? th->full : th->partial;
            const bool hidden = veil && !is_done && !is_now;
            if (hidden) c = th->future;
            else if (!is_done && !is_now) c = gui_mix(th->future, c, 0.25);
            gui_rect r = {x0 + p * col + (col - cell * 3 / 2) / 2, y0 + t * cell + 1, cell * 3 / 2, cell - 2};
            gui_fill(d, r, c);
            if (is_now) gui_frame(d, r, th->current, 2 * d->thin);
            snprintf(buf, sizeof buf, "s%d", sh);
            gui_text_fit(d, fs, (gui_rect){r.x, r.y, r.w, r.h / 2 + 2}, is_done || is_now ? th->text : th->dim, buf);
            if (hidden) snprintf(buf, sizeof buf, "?");
            else if (w) snprintf(buf, sizeof buf, "%lld", (long long)w);
            else snprintf(buf, sizeof buf, "skip");
            gui_text_fit(d, fs, (gui_rect){r.x, r.y + r.h / 2, r.w, r.h / 2}, is_done || is_now ? th->text : th->dim, buf);
        }
    }
    for (int32_t p = 0; p < P; p++)
        if (load[p] > busiest) busiest = load[p];
    /* The hops of the step in flight: shard (p − t) mod P from device p to p + 1, the last one
     * back to device 0 (drawn as a line under the columns). */
    int yh = y0 + P * cell + lh / 4;
    bool flying = e && (e->kind == FS_EV_SEND || e->kind == FS_EV_RECV);
    for (int32_t p = 0; p < P; p++) {
        int32_t sh = ((p - (now_t < 0 ? 0 : now_t)) % P + P) % P;
        uint32_t c = flying ? (e->a == p ? th->merge_mark : th->dim) : th->border;
        int xa = x0 + p * col + col / 2, xb = p + 1 < P ? x0 + (p + 1) * col + col / 2 : x0 + col / 2;
        if (p + 1 < P) {
            gui_fill(d, (gui_rect){xa, yh + lh / 2, xb - xa - f / 2, d->thin}, c);
            gui_text(d, fs, xb - f / 2, yh, c, GUI_AL_LEFT, ">");
        } else if (P > 1) {   /* the wrap: down, back left, up under device 0 */
            gui_fill(d, (gui_rect){xb, yh + lh, xa - xb, d->thin}, c);
            gui_fill(d, (gui_rect){xa, yh + lh / 2, d->thin, lh / 2}, c);
            gui_fill(d, (gui_rect){xb, yh + lh / 2, d->thin, lh / 2}, c);
        }
        if (flying && e->a == p) {
            snprintf(buf, sizeof buf, "s%d", sh);
            gui_text(d, fs, p + 1 < P ? (xa + xb) / 2 : xa, yh - lh / 4, th->merge_mark, GUI_AL_CENTER, buf);
        }
    }
    /* The load bars: each device's visible pairs against the busiest device's. */
    int yb = yh + 3 * lh / 2 + L->pad / 2, bh = lh;
    gui_text(d, fs, m.x, yb, th->dim, GUI_AL_LEFT, "load");
    for (int32_t p = 0; p < P; p++) {
        int bw = col - L->pad;
        gui_rect r = {x0 + p * col + L->pad / 2, yb, bw, bh};
        gui_fill(d, r, th->future);
        int wl = (int)lround((double)bw * (double)load[p] / (double)busiest);
        int wd = (int)lround((double)bw * (double)done[p] / (double)busiest);
        if (!veil) gui_fill(d, (gui_rect){r.x, r.y, wl, bh}, gui_mix(th->future, th->full, 0.35));
        gui_fill(d, (gui_rect){r.x, r.y, wd, bh}, th->full);
        gui_frame(d, r, th->border, d->thin);
        if (veil) snprintf(buf, sizeof buf, "%lld so far", (long long)done[p]);
        else snprintf(buf, sizeof buf, "%lld", (long long)load[p]);
        gui_text_fit(d, fs, (gui_rect){r.x, r.y + bh, r.w, lh}, th->text, buf);
    }
    free(pairs);
    free(count);
}

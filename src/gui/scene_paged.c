/* scene_paged.c: decode through a paged KV cache (engine/paged.h), drawn from its trace.
 *
 * Three parts in the main area, top to bottom:
 *   the pool      every physical page as a column of page_size slots, each slot coloured by the
 *                 sequence whose position it holds (a copy made on write hatched), the page's
 *                 number above it and, for a page several sequences hold, how many;
 *   the tables    one row per sequence: its logical blocks, each naming its page; the block the
 *                 current event touches is framed and a line joins it to its page;
 *   the merge     while a decode runs, FlashDecoding's diagram of that query row (scene.c).
 * The state of the pool and of the tables at step k is rebuilt from the events 0 … k (alloc,
 * share, cow, write): the window reads the trace and never recomputes the algorithm.
 */
#include <stdlib.h>
#include <string.h>

#include "gui/draw.h"

#define MAX_SEQS 8      /* rows of tables drawn (more sequences: the first 8) */
#define MAX_PAGES 512   /* pages drawn (a larger pool is summarized in words) */

typedef struct {
    int n_pages, ps, n_seqs, max_blocks;
    int *slot_seq, *slot_pos;   /* (n_pages, ps): the sequence and position a slot holds, −1 empty */
    unsigned char *slot_copy;   /* (n_pages, ps): 1 where the slot was filled by a copy on write */
    int *refs;                  /* (n_pages) sequences holding the page */
    int *table;                 /* (MAX_SEQS, max_blocks) page of each block, −1 none */
    int n_blocks[MAX_SEQS], n_tokens[MAX_SEQS];
    int free_pages;             /* after the last alloc or cow so far (−1: not known yet) */
} pool_view;

static bool is_page_event(fs_event_kind k)
{
    return k == FS_EV_LOOKUP || k == FS_EV_ALLOC || k == FS_EV_SHARE || k == FS_EV_COW || k == FS_EV_WRITE;
}

/* The pool's shape from the whole trace (stable while stepping), its contents from steps 0 … step. */
static bool view_build(pool_view *v, const gui_show *show, int64_t step)
{
    const fs_trace *t = &show->trace;
    memset(v, 0, sizeof *v);
    v->ps = show->run.page_size;
    v->free_pages = -1;
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        if (!is_page_event(e->kind)) continue;
        int top = e->page > e->src && e->kind == FS_EV_COW ? e->page : e->kind == FS_EV_COW ? e->src : e->page;
        if (top + 1 > v->n_pages) v->n_pages = top + 1;
        if (e->seq + 1 > v->n_seqs) v->n_seqs = e->seq + 1;
        if (e->block + 1 > v->max_blocks) v->max_blocks = e->block + 1;
        if (e->kind == FS_EV_WRITE && v->ps <= 0 && e->slot + 1 > v->ps) v->ps = e->slot + 1;
    }
    if (v->n_seqs > MAX_SEQS) v->n_seqs = MAX_SEQS;
    /* Pages never taken do not appear in any event: the pool's size is the pages taken so far
     * plus the free ones an alloc or cow reports (no event gives a page back). */
    if (v->n_pages > 0 && v->n_pages <= MAX_PAGES) {
        unsigned char seen[MAX_PAGES] = {0};
        int taken = 0;
        for (int64_t k = 0; k < t->n; k++) {
            const fs_event *e = &t->ev[k];
            if ((e->kind != FS_EV_ALLOC && e->kind != FS_EV_COW) || e->page < 0 || e->page >= MAX_PAGES) continue;
            taken += !seen[e->page];
            seen[e->page] = 1;
            if (e->n_free >= 0 && taken + e->n_free > v->n_pages) v->n_pages = taken + e->n_free;
        }
    }
    if (v->n_pages <= 0 || v->n_pages > MAX_PAGES || v->ps <= 0 || v->ps > 4096 || v->max_blocks <= 0) return false;
    size_t slots = (size_t)v->n_pages * (size_t)v->ps;
    v->slot_seq = malloc(slots * sizeof(int));
    v->slot_pos = malloc(slots * sizeof(int));
    v->slot_copy = calloc(slots, 1);
    v->refs = calloc((size_t)v->n_pages, sizeof(int));
    v->table = malloc((size_t)MAX_SEQS * (size_t)v->max_blocks * sizeof(int));
    if (!v->slot_seq || !v->slot_pos || !v->slot_copy || !v->refs || !v->table) return false;
    for (size_t i = 0; i < slots; i++) v->slot_seq[i] = v->slot_pos[i] = -1;
    for (int i = 0; i < MAX_SEQS * v->max_blocks; i++) v->table[i] = -1;
    for (int64_t k = 0; k <= step && k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        if (!is_page_event(e->kind) || e->kind == FS_EV_LOOKUP) continue;
        bool in = e->seq >= 0 && e->seq < v->n_seqs && e->block >= 0 && e->block < v->max_blocks;
        int *tb = in ? &v->table[e->seq * v->max_blocks + e->block] : NULL;
        switch (e->kind) {
        case FS_EV_ALLOC:
            if (e->page >= 0) v->refs[e->page] = 1;
            if (tb) *tb = e->page;
            if (in && e->block + 1 > v->n_blocks[e->seq]) v->n_blocks[e->seq] = e->block + 1;
            v->free_pages = e->n_free;
            break;
        case FS_EV_SHARE:
            if (e->page >= 0) v->refs[e->page] = e->refs;
            if (tb) *tb = e->page;
            if (in && e->block + 1 > v->n_blocks[e->seq]) v->n_blocks[e->seq] = e->block + 1;
            if (in && e->c1 > v->n_tokens[e->seq]) v->n_tokens[e->seq] = e->c1;
            break;
        case FS_EV_COW:
            if (e->page >= 0 && e->src >= 0) {
                v->refs[e->src] = e->refs;
                v->refs[e->page] = 1;
                for (int sl = 0; sl < e->slot && sl < v->ps; sl++) {
                    size_t a = (size_t)e->page * v->ps + sl, b = (size_t)e->src * v->ps + sl;
                    v->slot_seq[a] = v->slot_seq[b];
                    v->slot_pos[a] = v->slot_pos[b];
                    v->slot_copy[a] = 1;
                }
            }
            if (tb) *tb = e->page;
            v->free_pages = e->n_free;
            break;
        case FS_EV_WRITE:
            if (e->page >= 0 && e->slot >= 0 && e->slot < v->ps) {
                size_t a = (size_t)e->page * v->ps + e->slot;
                v->slot_seq[a] = e->seq;
                v->slot_pos[a] = e->c0;
                v->slot_copy[a] = 0;
                v->refs[e->page] = e->refs;
            }
            if (in && e->c0 + 1 > v->n_tokens[e->seq]) v->n_tokens[e->seq] = e->c0 + 1;
            break;
        default: break;
        }
    }
    return true;
}

static void view_free(pool_view *v)
{
    free(v->slot_seq);
    free(v->slot_pos);
    free(v->slot_copy);
    free(v->refs);
    free(v->table);
}

/* One colour per sequence (told apart by the sequence's number in every table row too). */
static uint32_t seq_color(const gui_theme *th, int s)
{
    const uint32_t c[5] = {th->accent, th->good, th->warn, th->merge_mark, th->bad};
    return s < 0 ? th->future : c[s % 5];
}

/* The decode run around step k: the steps [*k0, *k1) from the first lookup or partial after the
 * previous output row to the next output row, and the sequence it reads (its lookups'). False
 * when step k is not in a decode (the cache is being filled). */
static bool decode_segment(const fs_trace *t, int64_t k, int64_t *k0, int64_t *k1, int *seq)
{
    const fs_event *e = &t->ev[k];
    if (e->kind != FS_EV_LOOKUP && e->kind != FS_EV_PARTIAL && e->kind != FS_EV_MERGE && e->kind != FS_EV_OUT)
        return false;
    int64_t a = k;
    while (a > 0 && t->ev[a - 1].kind != FS_EV_OUT && (t->ev[a - 1].kind == FS_EV_LOOKUP || t->ev[a - 1].kind == FS_EV_PARTIAL ||
                                                       t->ev[a - 1].kind == FS_EV_MERGE))
        a--;
    int64_t b = k;
    while (b < t->n && t->ev[b].kind != FS_EV_OUT) b++;
    *k0 = a;
    *k1 = b < t->n ? b + 1 : t->n;
    *seq = 0;
    for (int64_t i = a; i < *k1; i++)
        if (t->ev[i].kind == FS_EV_LOOKUP) { *seq = t->ev[i].seq; break; }
    return true;
}

void gui_scene_paged(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_theme *th = d->th;
    const gui_layout *L = &d->L;
    const fs_trace *t = &show->trace;
    const gui_rect m = L->main;
    const int64_t step = s->n > 0 ? s->step : -1;
    const fs_event *now = step >= 0 ? &t->ev[step] : NULL;
    pool_view v;
    int fs = L->font_small, lh = gui_line_h(d, fs), cw = gui_char_w(d, fs);
    if (!view_build(&v, show, step)) {
        gui_text(d, L->font, m.x, m.y, th->text, GUI_AL_LEFT, "Paged KV cache: too large a pool to draw");
        view_free(&v);
        return;
    }
    int64_t k0 = 0, k1 = 0;
    int dseq = -1;
    bool decoding = now && decode_segment(t, step, &k0, &k1, &dseq);
    int used = 0;
    for (int p = 0; p < v.n_pages; p++) used += v.refs[p] > 0;
    gui_textf(d, L->font, m.x, m.y, th->text, GUI_AL_LEFT, "Pool: %d pages of %d slots, %d in use", v.n_pages, v.ps, used);
    int y = m.y + gui_line_h(d, L->font) + L->pad / 2;

    /* ---- the pool ---- */
    const int tables_h = v.n_seqs * (lh + L->pad / 2) + 2 * lh + L->pad;
    bool has_decode = false;   /* the merge's room is kept from the first step, so nothing jumps */
    for (int64_t k = 0; k < t->n && !has_decode; k++) has_decode = t->ev[k].kind == FS_EV_PARTIAL;
    int min_pw = 3 * cw + 4;
    int cols = v.n_pages, rows = 1;
    while (cols > 1 && m.w / cols < min_pw) {
        rows++;
        cols = (v.n_pages + rows - 1) / rows;
    }
    int pw = m.w / cols, label_h = lh;
    if (pw > 10 * cw) pw = 10 * cw;   /* a few pages: keep them page-shaped */
    /* The pool's height: with a decode to come, slots just tall enough for their numbers (at
     * most 40 % of the area), the rest for the merge diagram; without one, roomier slots. */
    int room = m.h - (y - m.y) - tables_h - L->pad;
    int ph = has_decode ? v.ps * (lh + 2) : v.ps * 2 * lh;
    if (has_decode && rows * (ph + label_h + L->pad / 2) > m.h * 2 / 5) ph = m.h * 2 / 5 / rows - label_h - L->pad / 2;
    if (rows * (ph + label_h + L->pad / 2) > room) ph = room / rows - label_h - L->pad / 2;
    if (ph < v.ps) ph = v.ps;
    int sh = ph / v.ps;   /* slot height */
    ph = sh * v.ps;
    /* The pages the current event names: the lookup's or write's page, a copy's source and target;
     * at a partial, the pages its split looked up; in a decode, the pages read so far. */
    int hot = now && is_page_event(now->kind) ? now->page : -1, hot_src = now && now->kind == FS_EV_COW ? now->src : -1;
    unsigned char split_pages[MAX_PAGES] = {0}, read_pages[MAX_PAGES] = {0};
    if (now && now->kind == FS_EV_PARTIAL)
        for (int64_t k = step - 1; k >= 0 && t->ev[k].kind == FS_EV_LOOKUP; k--)
            if (t->ev[k].page >= 0 && t->ev[k].page < v.n_pages) split_pages[t->ev[k].page] = 1;
    for (int64_t k = k0; decoding && k <= step; k++)
        if (t->ev[k].kind == FS_EV_LOOKUP && t->ev[k].page >= 0 && t->ev[k].page < v.n_pages) read_pages[t->ev[k].page] = 1;
    gui_rect page_r[MAX_PAGES];
    for (int p = 0; p < v.n_pages; p++) {
        int r = p / cols, c = p % cols;
        gui_rect box = {m.x + c * pw + 2, y + r * (ph + label_h + L->pad / 2) + label_h, pw - 4, ph};
        page_r[p] = box;
        char lab[32];
        if (v.refs[p] > 1) snprintf(lab, sizeof lab, "p%d x%d", p, v.refs[p]);
        else snprintf(lab, sizeof lab, "p%d", p);
        if (gui_text_w(d, fs, lab) > box.w) snprintf(lab, sizeof lab, "%d", p);
        if (gui_text_w(d, fs, lab) <= box.w)
            gui_text(d, fs, box.x + box.w / 2, box.y - label_h, v.refs[p] ? th->text : th->dim, GUI_AL_CENTER, lab);
        gui_fill(d, box, v.refs[p] ? th->panel : th->masked);
        for (int sl = 0; sl < v.ps; sl++) {
            size_t a = (size_t)p * v.ps + sl;
            gui_rect cell = {box.x + 1, box.y + sl * sh, box.w - 2, sh};
            if (sh >= 4) { cell.y += 1; cell.h -= 1; }
            int who = v.slot_seq[a];
            if (who < 0) continue;
            uint32_t col = seq_color(th, who);
            gui_fill(d, cell, gui_mix(col, th->bg, v.refs[p] ? 0.45 : 0.8));
            if (v.slot_copy[a] && cell.h >= 4) gui_hatch(d, cell, gui_mix(col, th->text, 0.3), cell.h / 2 > 3 ? cell.h / 2 : 3, 1);
            char pos[16];
            snprintf(pos, sizeof pos, "%d", v.slot_pos[a]);
            if (cell.h >= lh && gui_text_w(d, fs, pos) + 2 <= cell.w)
                gui_text(d, fs, cell.x + cell.w / 2, cell.y + (cell.h - lh) / 2, th->text, GUI_AL_CENTER, pos);
        }
        bool is_hot = p == hot || p == hot_src || split_pages[p];
        gui_frame(d, box, is_hot ? th->current : read_pages[p] ? th->merge_mark : v.refs[p] > 1 ? th->text : th->border,
                  is_hot ? 3 * d->thin : read_pages[p] || v.refs[p] > 1 ? 2 * d->thin : d->thin);
    }
    y += rows * (ph + label_h + L->pad / 2) + L->pad / 2;

    /* ---- the block tables: a header row of block numbers, then one row per sequence ---- */
    int name_w = 13 * cw, bw = (m.w - name_w) / (v.max_blocks > 0 ? v.max_blocks : 1);
    if (bw > 6 * cw) bw = 6 * cw;
    const int row_h = lh + L->pad / 2, head_y = y, rows_y = y + lh + L->pad / 4;
    int hot_seq = now && is_page_event(now->kind) ? now->seq : -1, hot_block = hot_seq >= 0 ? now->block : -1;
    /* The current event's block joined to its page (drawn first: the text goes over it). */
    if (hot_seq >= 0 && hot_seq < v.n_seqs && hot_block >= 0 && hot >= 0 && hot < v.n_pages)
        gui_line(d, m.x + name_w + hot_block * bw + bw / 2, rows_y + hot_seq * row_h, page_r[hot].x + page_r[hot].w / 2,
                 page_r[hot].y + page_r[hot].h, th->current, 2 * d->thin);
    gui_text(d, fs, m.x, head_y, th->dim, GUI_AL_LEFT, "seq: length");
    for (int b = 0; b < v.max_blocks; b++) {
        char hd[16];
        snprintf(hd, sizeof hd, bw >= 8 * cw ? "block %d" : "b%d", b);
        if (gui_text_w(d, fs, hd) + 2 <= bw) gui_text(d, fs, m.x + name_w + b * bw + bw / 2, head_y, th->dim, GUI_AL_CENTER, hd);
    }
    for (int q = 0; q < v.n_seqs; q++) {
        int ry = rows_y + q * row_h;
        uint32_t col = seq_color(th, q);
        gui_fill(d, (gui_rect){m.x, ry + 2, cw, lh - 4}, col);
        gui_textf(d, fs, m.x + cw + cw / 2, ry, q == dseq && decoding ? th->current : th->text, GUI_AL_LEFT, "seq %d: %d", q,
                  v.n_tokens[q]);
        for (int b = 0; b < v.n_blocks[q] && b < v.max_blocks; b++) {
            int page = v.table[q * v.max_blocks + b];
            gui_rect c = {m.x + name_w + b * bw + 1, ry, bw - 2, lh};
            bool shared = page >= 0 && v.refs[page] > 1;
            gui_fill(d, c, gui_mix(col, th->bg, shared ? 0.7 : 0.45));
            bool is_hot = q == hot_seq && b == hot_block;
            bool read = decoding && q == dseq && page >= 0 && page < v.n_pages && read_pages[page];
            gui_frame(d, c, is_hot ? th->current : read ? th->merge_mark : th->border, is_hot || read ? 2 * d->thin : d->thin);
            char txt[16];
            snprintf(txt, sizeof txt, "%d", page);
            if (gui_text_w(d, fs, txt) + 2 <= c.w) gui_text(d, fs, c.x + c.w / 2, c.y, th->text, GUI_AL_CENTER, txt);
        }
    }
    y = rows_y + v.n_seqs * row_h;
    /* The legend, unless the merge diagram would then have less than two levels of boxes
     * (four lines each) below it: large text on a small screen keeps the diagram readable. */
    bool legend = !has_decode || m.y + m.h - (y + lh + L->pad / 2) >= lh + L->pad + 2 * (4 * lh + 2 * L->pad);
    if (legend) {
        gui_text(d, fs, m.x, y, th->dim, GUI_AL_LEFT,
                 "cells: the page of each block; hatched: copied on write; xN: N sequences share it");
        y += lh + L->pad / 2;
    }

    /* ---- the merge, while a decode runs ---- */
    if (decoding) {
        int head = now->head, row = now->row >= 0 ? now->row : 0;
        gui_textf(d, fs, m.x, y, th->dim, GUI_AL_LEFT, "decode of sequence %d: one partial per split, then the merge", dseq);
        gui_decode_diagram(d, s, t, head, row, k0, k1, y + lh + L->pad / 2, m.y + m.h - L->pad / 2);
    } else if (has_decode) {
        gui_text(d, fs, m.x, y, th->dim, GUI_AL_LEFT, "the decode comes after the appends: each query reads K and V");
        gui_text(d, fs, m.x, y + lh, th->dim, GUI_AL_LEFT, "through its sequence's table, one split of keys at a time");
    }

    /* ---- side panel ---- */
    gui_clip(d, &L->side);
    gui_panel(d, L->side, NULL);
    int x = L->side.x + L->pad, yy = L->side.y + L->pad / 2;
    char kb[64];
    gui_text(d, L->font, x, yy, th->text, GUI_AL_LEFT, "This step");
    yy += gui_line_h(d, L->font);
    if (now) {
        switch (now->kind) {
        case FS_EV_WRITE:
            gui_textf(d, fs, x, yy, th->text, GUI_AL_LEFT, "seq %d writes position %d", now->seq, now->c0);
            yy += lh;
            gui_textf(d, fs, x, yy, th->text, GUI_AL_LEFT, "into page %d, slot %d", now->page, now->slot);
            yy += lh;
            gui_textf(d, fs, x, yy, th->dim, GUI_AL_LEFT, "(block %d = ⌊%d / %d⌋)", now->block, now->c0, v.ps);
            yy += lh;
            break;
        case FS_EV_ALLOC:
            gui_textf(d, fs, x, yy, th->text, GUI_AL_LEFT, "seq %d: last page full", now->seq);
            yy += lh;
            gui_textf(d, fs, x, yy, th->accent, GUI_AL_LEFT, "block %d takes page %d", now->block, now->page);
            yy += lh;
            gui_textf(d, fs, x, yy, th->dim, GUI_AL_LEFT, "%d page%s free", now->n_free, now->n_free == 1 ? " stays" : "s stay");
            yy += lh;
            break;
        case FS_EV_SHARE:
            gui_textf(d, fs, x, yy, th->text, GUI_AL_LEFT, "seq %d forked from seq %d", now->seq, now->src);
            yy += lh;
            gui_textf(d, fs, x, yy, th->accent, GUI_AL_LEFT, "block %d shares page %d", now->block, now->page);
            yy += lh;
            gui_textf(d, fs, x, yy, th->dim, GUI_AL_LEFT, "no copy; %d seqs hold it", now->refs);
            yy += lh;
            break;
        case FS_EV_COW:
            gui_textf(d, fs, x, yy, th->warn, GUI_AL_LEFT, "copy on write: seq %d", now->seq);
            yy += lh;
            gui_textf(d, fs, x, yy, th->text, GUI_AL_LEFT, "page %d is shared: its %d", now->src, now->slot);
            yy += lh;
            gui_textf(d, fs, x, yy, th->text, GUI_AL_LEFT, "slots copy to page %d", now->page);
            yy += lh;
            gui_textf(d, fs, x, yy, th->dim, GUI_AL_LEFT, "block %d -> page %d", now->block, now->page);
            yy += lh;
            break;
        case FS_EV_LOOKUP:
            gui_textf(d, fs, x, yy, th->text, GUI_AL_LEFT, "split %d reads %s", now->kt, fs_event_keys(now, kb, sizeof kb));
            yy += lh;
            gui_textf(d, fs, x, yy, th->accent, GUI_AL_LEFT, "table of seq %d:", now->seq);
            yy += lh;
            gui_textf(d, fs, x, yy, th->accent, GUI_AL_LEFT, "block %d -> page %d", now->block, now->page);
            yy += lh;
            break;
        default: gui_decode_side(d, t, now, x, &yy, fs); break;
        }
    }
    yy += L->pad / 2;
    gui_textf(d, fs, x, yy, th->dim, GUI_AL_LEFT, "pages in use %d of %d", used, v.n_pages);
    yy += lh;
    for (int q = 0; q < v.n_seqs; q++) {
        gui_textf(d, fs, x, yy, seq_color(th, q), GUI_AL_LEFT, "seq %d: %d token%s, %d block%s", q, v.n_tokens[q],
                  v.n_tokens[q] == 1 ? "" : "s", v.n_blocks[q], v.n_blocks[q] == 1 ? "" : "s");
        yy += lh;
    }
    yy += L->pad / 2;
    gui_text(d, fs, x, yy, th->dim, GUI_AL_LEFT, "Only a sequence's last page");
    yy += lh;
    gui_text(d, fs, x, yy, th->dim, GUI_AL_LEFT, "is ever partly empty.");
    gui_clip(d, NULL);
    view_free(&v);
}

/* scene.c: the scenes that are not a tile grid (online softmax, one-query attention, decode,
 * claims) and the switch that picks a scene. Each reads the trace up to the current step. */
#include <math.h>
#include <string.h>

#include "gui/draw.h"

void gui_scene_tiled(gui_draw *d, const gui_state *s, const gui_show *show);
void gui_scene_backward(gui_draw *d, const gui_state *s, const gui_show *show);
void gui_scene_paged(gui_draw *d, const gui_state *s, const gui_show *show);
void gui_scene_ring(gui_draw *d, const gui_state *s, const gui_show *show);

static int line(gui_draw *d, int size, int x, int *y, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int line(gui_draw *d, int size, int x, int *y, uint32_t col, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    gui_text(d, size, x, *y, col, GUI_AL_LEFT, buf);
    *y += gui_line_h(d, size);
    return *y;
}

#define F(x, b) gui_fmt((x), (b), sizeof(b))
#define FA(f, other, b) gui_fmt_factor((f), (other), (b), sizeof(b))   /* α, β before what they multiply */
#define FO(x, f, other, b) gui_fmt_operand((x), (f), (other), (b), sizeof(b))   /* a maximum in that factor's exp */

/* ---------------------------------------------------------------------------------------------
 * Online softmax: z as a strip, the cursor, m and ℓ with the formula filled in. */

static void scene_softmax(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_theme *th = d->th;
    const gui_layout *L = &d->L;
    const fs_trace *t = &show->trace;
    int n = show->run.n_z;
    const double *z = show->run.z;
    gui_grid g = gui_scene_grid(show, L);
    const fs_event *cur = NULL, *out = NULL;
    int done = 0, argmax = -1;
    for (int64_t k = 0; k <= s->step && k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        if (e->kind == FS_EV_ELEM) {
            cur = e;
            done = e->c1;
            if (e->m_new > e->m_old || argmax < 0) {
                const double *v = fs_trace_at(t, e->s_row);
                for (int j = 0; v && j < e->c1 - e->c0; j++) if (v[j] == e->m_new) argmax = e->c0 + j;
            }
        } else if (e->kind == FS_EV_OUT) {
            out = e;
        }
    }
    bool at_cur = s->n > 0 && t->ev[s->step].kind == FS_EV_ELEM;
    const double *p = out ? fs_trace_at(t, out->o_new) : NULL;
    gui_text(d, L->font, L->main.x, L->main.y, th->text, GUI_AL_LEFT, "z, folded in left to right:");
    int vf = L->font_big;
    for (int j = 0; j < n && g.cell > 0; j++) {
        gui_rect r = {g.x0 + j * g.cell + 2, g.y0 + 2, g.cell - 4, g.cell - 4};
        bool in_cur = at_cur && cur && j >= cur->c0 && j < cur->c1;
        uint32_t col = j < done ? (in_cur ? th->full : gui_mix(th->full, th->bg, 0.5)) : th->future;
        gui_fill(d, r, col);
        if (in_cur) gui_frame(d, (gui_rect){r.x - 2, r.y - 2, r.w + 4, r.h + 4}, th->current, 3 * d->thin + 1);
        char b[32];
        if (z) {
            snprintf(b, sizeof b, "%g", z[j]);
            gui_text_fit(d, vf, r, th->text, b);
        }
        gui_textf(d, L->font_small, r.x + r.w / 2, g.y0 - gui_line_h(d, L->font_small) - 2, th->dim, GUI_AL_CENTER, "z%d", j);
        if (j == argmax) {
            gui_text(d, L->font_small, r.x + r.w / 2, r.y + r.h + L->pad / 2, th->accent, GUI_AL_CENTER, "max so far");
        }
        if (p) {
            char pb[32];
            int bh = g.cell;
            gui_rect bar = {r.x + r.w / 4, g.y0 + g.cell + 2 * L->font + bh - (int)(bh * p[j]), r.w / 2, (int)(bh * p[j])};
            gui_fill(d, bar, th->good);
            gui_text(d, L->font_small, r.x + r.w / 2, g.y0 + g.cell + 2 * L->font + bh + 2, th->text, GUI_AL_CENTER, F(p[j], pb));
        }
    }
    /* The update with the numbers filled in. */
    int x = L->main.x + L->pad, y = g.y0 + g.cell + (p ? 4 * L->font + g.cell : 2 * L->font);
    char a[32], b[32], c[32];
    if (cur) {
        gui_formula_line fl[GUI_FORMULA_LINES];
        int nl = gui_walk_formulas(t, cur, fl, GUI_FORMULA_LINES);
        for (int i = 0; i < nl; i++) line(d, L->font, x, &y, fl[i].role == GUI_FL_RESCALE ? th->rescale : th->text, "%s", fl[i].text);
    } else {
        line(d, L->font, x, &y, th->dim, "m = -inf, ℓ = 0: nothing seen yet");
    }
    if (out) {
        y += L->pad;
        line(d, L->font, x, &y, th->good, "softmax_i = exp(z_i - m) / ℓ with m = %s, ℓ = %s", F(out->m_new, a), F(out->l_new, b));
    }
    /* Side panel: the history of (m, ℓ). */
    gui_clip(d, &L->side);
    gui_panel(d, L->side, NULL);
    int sx = L->side.x + L->pad, sy = L->side.y + L->pad / 2, fs = L->font_small;
    line(d, L->font, sx, &sy, th->text, "History");
    line(d, fs, sx, &sy, th->dim, "%-5s %-9s %-9s %-9s %s", "step", "z", "m", "ℓ", "α");
    for (int64_t k = 0; k <= s->step && k < t->n && sy < L->side.y + L->side.h - 2 * gui_line_h(d, fs); k++) {
        const fs_event *e = &t->ev[k];
        if (e->kind != FS_EV_ELEM) continue;
        char zb[32];
        if (e->c1 - e->c0 == 1) F(e->x, zb);
        else snprintf(zb, sizeof zb, "[%d..%d]", e->c0, e->c1 - 1);
        line(d, fs, sx, &sy, k == s->step ? th->current : (e->l_old > 0 && e->alpha < 1 ? th->rescale : th->text),
             "%-5lld %-9s %-9s %-9s %s", (long long)k, zb, F(e->m_new, a), F(e->l_new, b), F(e->alpha, c));
    }
    gui_clip(d, NULL);
    int hi, hj;
    if (s->hover == GUI_HOVER_CELL && gui_grid_hit(&g, s->mouse_x, s->mouse_y, &hi, &hj) && z) {
        char tip[128];
        if (p) snprintf(tip, sizeof tip, "z%d = %.10g   softmax = %.10g", hj, z[hj], p[hj]);
        else snprintf(tip, sizeof tip, "z%d = %.10g", hj, z[hj]);
        gui_tooltip(d, s, tip);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Online attention for one query: keys and values as rows, the running o growing. */

static void scene_query(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_theme *th = d->th;
    const gui_layout *L = &d->L;
    const fs_trace *t = &show->trace;
    const fs_attn *a = &show->run.attn;
    gui_grid g = gui_scene_grid(show, L);
    int64_t last_row[4096];
    int nk = a->n_kv < 4096 ? a->n_kv : 4096;
    for (int j = 0; j < nk; j++) last_row[j] = -1;
    const fs_event *cur = NULL, *out = NULL;
    /* The query this step belongs to (one's own problem may hold several, and heads). */
    int qrow = 0, qhead = 0;
    if (s->n > 0) {
        const fs_event *e = &t->ev[s->step];
        int r = e->row >= 0 ? e->row : e->r0;   /* a TILE event names its query by its rows */
        if (r >= 0 && r < a->n_q) { qrow = r; qhead = e->head >= 0 ? e->head : 0; }
    }
    int kvh = a->n_kv_heads > 0 && a->n_q_heads >= a->n_kv_heads ? fs_attn_kv_head(a, qhead) : 0;
    for (int64_t k = 0; k <= s->step && k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        if (e->kind == FS_EV_ROW && e->row == qrow && e->head == qhead) {
            cur = e;
            for (int j = e->c0; j < e->c1 && j < nk; j++) last_row[j] = k;
        } else if (e->kind == FS_EV_OUT && e->row == qrow && e->head == qhead) out = e;
    }
    const fs_event *now = s->n > 0 ? &t->ev[s->step] : NULL;
    char b1[32], b2[32];
    /* q above. */
    char qs[256];
    int qn = snprintf(qs, sizeof qs, a->n_q > 1 || a->n_q_heads > 1 ? "query %d%s: q = [" : "q = [", qrow, "");
    if (a->n_q_heads > 1) qn = snprintf(qs, sizeof qs, "head %d, query %d: q = [", qhead, qrow);
    const double *q = a->Q ? a->Q + ((size_t)qhead * a->n_q + (size_t)qrow) * a->d : NULL;
    for (int c = 0; q && c < a->d && qn < 200; c++) qn += snprintf(qs + qn, sizeof qs - (size_t)qn, "%s%g", c ? ", " : "", q[c]);
    snprintf(qs + qn, sizeof qs - (size_t)qn, "]   scale = %g", a->scale);
    gui_text(d, L->font, L->main.x, L->main.y, th->text, GUI_AL_LEFT, qs);
    for (int j = 0; j < nk && g.cell > 0; j++) {
        bool is_now = now && (now->kind == FS_EV_ROW || now->kind == FS_EV_TILE) && j >= now->c0 && j < now->c1;
        bool done = last_row[j] >= 0;
        for (int c = 0; c < a->d + 1 + a->d_v; c++) {
            if (c == a->d) continue;
            gui_rect r = {g.x0 + c * g.cell + 2, g.y0 + j * g.cell + 2, g.cell - 4, g.cell - 4};
            uint32_t base = c < a->d ? th->full : th->partial;
            gui_fill(d, r, done || is_now ? gui_mix(base, th->bg, is_now ? 0.1 : 0.5) : th->future);
            double v = c < a->d ? (a->K ? a->K[((size_t)kvh * a->n_kv + j) * a->d + c] : NAN)
                                : (a->V ? a->V[((size_t)kvh * a->n_kv + j) * a->d_v + c - a->d - 1] : NAN);
            char b[32];
            snprintf(b, sizeof b, "%g", v);
            gui_text_fit(d, L->font, r, th->text, b);
        }
        gui_textf(d, L->font_small, g.x0 - L->pad, g.y0 + j * g.cell + (g.cell - gui_line_h(d, L->font_small)) / 2,
                  is_now ? th->current : th->dim, GUI_AL_RIGHT, "%s%d", is_now ? "> " : "", j);
        if (is_now) gui_frame(d, (gui_rect){g.x0, g.y0 + j * g.cell, (a->d + 1 + a->d_v) * g.cell, g.cell}, th->current, 3 * d->thin);
        /* s_j and its weight p, once computed. */
        if (done) {
            const fs_event *e = &t->ev[last_row[j]];
            const double *sv = fs_trace_at(t, e->s_row);
            int x = g.x0 + (a->d + 1 + a->d_v) * g.cell + L->pad;
            gui_textf(d, L->font_small, x, g.y0 + j * g.cell + g.cell / 2 - gui_line_h(d, L->font_small), th->text, GUI_AL_LEFT,
                      "s = %s", sv ? F(sv[0], b1) : "?");
            gui_textf(d, L->font_small, x, g.y0 + j * g.cell + g.cell / 2, th->warn, GUI_AL_LEFT, "p = %s", F(e->beta, b2));
        }
    }
    if (g.cell > 0) {
        gui_text(d, L->font_small, g.x0 + a->d * g.cell / 2, g.y0 - gui_line_h(d, L->font_small) - 2, th->dim, GUI_AL_CENTER, "K");
        gui_text(d, L->font_small, g.x0 + (a->d + 1) * g.cell + a->d_v * g.cell / 2, g.y0 - gui_line_h(d, L->font_small) - 2, th->dim,
                 GUI_AL_CENTER, "V");
    }
    /* Side panel: the step with the numbers filled in. */
    gui_clip(d, &L->side);
    gui_panel(d, L->side, NULL);
    int x = L->side.x + L->pad, y = L->side.y + L->pad / 2, fs = L->font_small;
    line(d, L->font, x, &y, th->text, "Running state");
    if (cur) {
        gui_formula_line fl[GUI_FORMULA_LINES];
        int nl = gui_walk_formulas(t, cur, fl, GUI_FORMULA_LINES);
        for (int i = 0; i < nl; i++)
            line(d, fs, x, &y, fl[i].role == GUI_FL_RESCALE ? th->rescale : fl[i].role == GUI_FL_FACTOR ? th->warn : th->text,
                 "%s", fl[i].text);
        const double *o = fs_trace_at(t, cur->o_new), *oo = fs_trace_at(t, cur->o_old);
        char os[256] = "", oos[256] = "";
        int n1 = 0, n2 = 0;
        for (int c = 0; o && c < cur->n_o && c < 8; c++) n1 += snprintf(os + n1, sizeof os - (size_t)n1, "%s%s", c ? ", " : "", F(o[c], b1));
        for (int c = 0; oo && c < cur->n_o && c < 8; c++) n2 += snprintf(oos + n2, sizeof oos - (size_t)n2, "%s%s", c ? ", " : "", F(oo[c], b1));
        line(d, fs, x, &y, th->text, "o = α·o + p·v_%d", cur->c0);
        if (oo) line(d, fs, x, &y, th->dim, "  was [%s]", oos);
        line(d, fs, x, &y, th->accent, "  now [%s]", os);
        /* o as bars. */
        y += L->pad / 2;
        for (int c = 0; o && c < cur->n_o && c < 8; c++) {
            int bw = (int)((L->side.w - 4 * L->pad) * fmin(1.0, fabs(o[c]) / fmax(1.0, cur->l_new)));
            gui_fill(d, (gui_rect){x, y, bw, gui_line_h(d, fs) / 2}, th->accent);
            y += gui_line_h(d, fs) / 2 + 2;
        }
    } else {
        line(d, fs, x, &y, th->dim, "m = -inf, ℓ = 0, o = 0: no key seen yet");
    }
    if (out) {
        const double *o = fs_trace_at(t, out->o_new);
        char os[256] = "";
        int n1 = 0;
        for (int c = 0; o && c < out->n_o && c < 8; c++) n1 += snprintf(os + n1, sizeof os - (size_t)n1, "%s%s", c ? ", " : "", F(o[c], b1));
        y += L->pad;
        line(d, fs, x, &y, th->good, "output = o / ℓ = [%s]", os);
    }
    gui_clip(d, NULL);
    int hi, hj;
    if (s->hover == GUI_HOVER_CELL && gui_grid_hit(&g, s->mouse_x, s->mouse_y, &hi, &hj) && hj != a->d && a->K && a->V) {
        char tip[128];
        if (hj < a->d) snprintf(tip, sizeof tip, "K[%d][%d] = %.10g", hi, hj, a->K[((size_t)kvh * a->n_kv + hi) * a->d + hj]);
        else snprintf(tip, sizeof tip, "V[%d][%d] = %.10g", hi, hj - a->d - 1,
                      a->V[((size_t)kvh * a->n_kv + hi) * a->d_v + hj - a->d - 1]);
        gui_tooltip(d, s, tip);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Decode: the cache cut into splits, each split's partial, the merges with their corrections. */

/* The lines of text in a node of the merge diagram: a split's name, m, ℓ and o[0], or a merge's
 * operands, m, ℓ and its two factors α, β. Returns the number of lines. */
static int decode_node_text(const fs_trace *t, const fs_event *e, bool is_split, int id, char lines[4][64])
{
    char b[32];
    if (is_split) snprintf(lines[0], 64, "split %d", id);
    else snprintf(lines[0], 64, "%d+%d", e->a, e->b);
    snprintf(lines[1], 64, "m %s", F(e->m_new, b));
    snprintf(lines[2], 64, "ℓ %s", F(e->l_new, b));
    if (!is_split) {
        snprintf(lines[3], 64, "c %.3f %.3f", e->alpha, e->beta);
        return 4;
    }
    const double *o = fs_trace_at(t, e->o_new);
    if (!o) return 3;
    snprintf(lines[3], 64, "o[0] %s", F(o[0], b));   /* the first of the partial o's d values */
    return 4;
}

/* The merge diagram of one query row (head, row) of the decode events in steps [k0, k1): the
 * partials in the bottom row, the merges above them by level, between y = top and bottom across
 * the main area; nodes not reached by the current step drawn dim. scene_paged.c draws it too. */
void gui_decode_diagram(gui_draw *d, const gui_state *s, const fs_trace *t, int head, int row, int64_t k0, int64_t k1,
                        int top, int bottom)
{
    const gui_theme *th = d->th;
    const gui_layout *L = &d->L;
    enum { MAXN = 512 };
    int64_t node_ev[MAXN];
    int n_splits = 0;
    for (int i = 0; i < MAXN; i++) node_ev[i] = -1;
    for (int64_t k = k0; k < k1; k++) {
        const fs_event *e = &t->ev[k];
        if (e->head != head || e->row != row) continue;
        if (e->kind == FS_EV_PARTIAL && e->kt >= 0 && e->kt < MAXN && e->kt + 1 > n_splits) n_splits = e->kt + 1;
        if (k > s->step) continue;
        if ((e->kind == FS_EV_PARTIAL || e->kind == FS_EV_MERGE) && e->id >= 0 && e->id < MAXN) node_ev[e->id] = k;
    }
    if (n_splits <= 0 || n_splits > MAXN) return;
    int depth[MAXN], px[MAXN];
    int maxdepth = 0;
    for (int i = 0; i < MAXN; i++) { depth[i] = 0; px[i] = 0; }
    int w = L->main.w;
    for (int p = 0; p < n_splits; p++) px[p] = L->main.x + (2 * p + 1) * w / (2 * n_splits);
    /* All merges of this row (also future ones, drawn dim) give the shape of the diagram. */
    int64_t merge_all[MAXN], part_all[MAXN];
    for (int i = 0; i < MAXN; i++) merge_all[i] = part_all[i] = -1;
    for (int64_t k = k0; k < k1; k++) {
        const fs_event *e = &t->ev[k];
        if (e->head != head || e->row != row || e->id < 0 || e->id >= MAXN) continue;
        if (e->kind == FS_EV_PARTIAL) part_all[e->id] = k;
        if (e->kind != FS_EV_MERGE) continue;
        if (e->a < 0 || e->a >= MAXN || e->b < 0 || e->b >= MAXN) continue;
        merge_all[e->id] = k;
        depth[e->id] = 1 + (depth[e->a] > depth[e->b] ? depth[e->a] : depth[e->b]);
        px[e->id] = (px[e->a] + px[e->b]) / 2;
        if (depth[e->id] > maxdepth) maxdepth = depth[e->id];
    }
    /* How wide each node may be: the distance to its nearest neighbour on the same level, and
     * no wider than the picture around it. */
    int room[MAXN], need[MAXN];
    for (int id = 0; id < MAXN; id++) {
        room[id] = need[id] = 0;
        if (id >= n_splits && merge_all[id] < 0) continue;
        int r = 2 * (px[id] - L->main.x < L->main.x + w - px[id] ? px[id] - L->main.x : L->main.x + w - px[id]);
        for (int o = 0; o < MAXN; o++) {
            if (o == id || depth[o] != depth[id] || (o >= n_splits && merge_all[o] < 0)) continue;
            int dx = px[o] > px[id] ? px[o] - px[id] : px[id] - px[o];
            if (dx < r) r = dx;
        }
        room[id] = r - L->pad;
        /* The widest line the node will ever show (its event, at any step), in characters. */
        char lines[4][64];
        int64_t ke = id < n_splits ? part_all[id] : merge_all[id];
        int nl = ke >= 0 ? decode_node_text(t, &t->ev[ke], id < n_splits, id, lines) : 0;
        for (int i = 0; i < nl; i++) {
            int c = gui_utf8_len(lines[i]);
            if (c > need[id]) need[id] = c;
        }
    }
    /* One text size for the whole diagram: the small font, shrunk until every node's widest
     * line fits its room; below 7 pixels the nodes become dots (numbers in the side panel). */
    int fs = L->font_small, mg = L->pad / 2 > 3 * d->thin + 2 ? L->pad / 2 : 3 * d->thin + 2;
    for (int tries = 0; tries < 4; tries++) {
        int adv = gui_char_w(d, fs), worst = fs;
        for (int id = 0; id < MAXN; id++) {
            if (need[id] <= 0 || need[id] * adv + 2 * mg <= room[id]) continue;
            int f = (int)((double)fs * (room[id] - 2 * mg) / ((double)need[id] * adv));
            if (f < worst) worst = f;
        }
        if (worst >= fs) break;
        fs = worst < fs - 1 ? worst : fs - 1;
        if (fs < 7) break;
    }
    bool dots = fs < 7;
    /* The margin inside a box keeps the text clear of the thick frame of the current node. */
    int lh = gui_line_h(d, fs), adv = gui_char_w(d, fs);
    int rad = w / (2 * n_splits) - 2;   /* dots: one radius for all, as wide as the splits allow */
    if (rad > 2 * L->font) rad = 2 * L->font;
    if (rad > (bottom - top) / (3 * (maxdepth + 1))) rad = (bottom - top) / (3 * (maxdepth + 1));   /* and the levels fit */
    if (rad < 3) rad = 3;
    int box_h = dots ? 2 * rad + 2 : 4 * lh + 2 * mg;
    int level_h = maxdepth ? (bottom - top - box_h) / maxdepth : 0;
    if (level_h > box_h + 3 * L->pad) level_h = box_h + 3 * L->pad;
    int base_y = top + maxdepth * level_h;   /* the partials' row */
    int py[MAXN], bw[MAXN];
    for (int i = 0; i < MAXN; i++) {
        py[i] = base_y - depth[i] * level_h;
        bw[i] = need[i] * adv + 2 * mg;
        if (bw[i] < 8 * adv + 2 * mg) bw[i] = 8 * adv + 2 * mg;
        if (bw[i] > room[i]) bw[i] = room[i];
    }
    /* Edges first: from the child's top to the parent's bottom (centre to centre for dots). */
    for (int id = 0; id < MAXN; id++) {
        if (merge_all[id] < 0) continue;
        const fs_event *e = &t->ev[merge_all[id]];
        bool done = node_ev[id] >= 0;
        uint32_t col = done ? th->merge_mark : th->border;
        int y_par = dots ? py[id] + box_h / 2 : py[id] + box_h;
        int dy = dots ? box_h / 2 : 0;
        gui_line(d, px[e->a], py[e->a] + dy, px[id], y_par, col, done ? 2 * d->thin : d->thin);
        gui_line(d, px[e->b], py[e->b] + dy, px[id], y_par, col, done ? 2 * d->thin : d->thin);
    }
    for (int id = 0; id < MAXN; id++) {
        bool is_split = id < n_splits, is_merge = merge_all[id] >= 0;
        if (!is_split && !is_merge) continue;
        int64_t ke = node_ev[id];
        gui_rect r = {px[id] - bw[id] / 2, py[id], bw[id], box_h};
        bool is_now = ke >= 0 && ke == s->step;
        if (dots) {
            gui_disc(d, px[id], py[id] + box_h / 2, rad + 1, is_now ? th->current : th->border);
            gui_disc(d, px[id], py[id] + box_h / 2, rad, ke >= 0 ? (is_split ? th->full : th->merge_mark) : th->future);
            continue;
        }
        gui_fill(d, r, ke >= 0 ? gui_mix(th->panel, is_split ? (id % 2 ? th->partial : th->full) : th->merge_mark, 0.3) : th->future);
        gui_frame(d, r, is_now ? th->current : th->border, is_now ? 3 * d->thin : d->thin);
        int x = r.x + mg, y = r.y + mg;
        if (ke < 0) {
            gui_textf(d, fs, x, y, th->dim, GUI_AL_LEFT, is_split ? "split %d" : "merge", id);
            continue;
        }
        char lines[4][64];
        int nl = decode_node_text(t, &t->ev[ke], is_split, id, lines);
        for (int i = 0; i < nl; i++) {
            uint32_t col = i == 0 ? (is_split ? th->text : th->merge_mark) : i < 3 ? th->text : is_split ? th->dim : th->warn;
            gui_text(d, fs, x, y, col, GUI_AL_LEFT, lines[i]);
            y += lh;
        }
    }
}

/* The filled-in formulas of the two one-at-a-time walks, one line each: an FS_EV_ELEM of the
 * online softmax (m, α, ℓ; online.c's guard when nothing finite has come yet) or an FS_EV_ROW of
 * the one-query walk (the key's score s, m, α, its weight p, ℓ; the guard when nothing is visible
 * yet). Lines as the softmax and query scenes draw them; 0 lines for other events. */
int gui_walk_formulas(const fs_trace *t, const fs_event *e, gui_formula_line *out, int max)
{
    int n = 0;
    char b1[32], b2[32], b3[32], b4[32];
#define FL(role_, ...) do { if (n < max) { snprintf(out[n].text, sizeof out[n].text, __VA_ARGS__); out[n++].role = (role_); } } while (0)
    bool resc = e->l_old > 0 && e->alpha < 1;
    gui_formula_role rc = resc ? GUI_FL_RESCALE : GUI_FL_TEXT;
    if (e->kind == FS_EV_ELEM) {
        bool one = e->c1 - e->c0 == 1;
        FL(GUI_FL_TEXT, "m_new = max(m_old, %s) = max(%s, %s) = %s", one ? "z_i" : "max chunk", F(e->m_old, b1),
           F(e->m_blk, b2), F(e->m_new, b3));
        if (e->m_new == -INFINITY)   /* online.c's guard: nothing finite yet */
            FL(GUI_FL_TEXT, "nothing finite yet: α = 1, β = 0 by the guard");
        else
            FL(rc, "α = exp(m_old - m_new) = exp(%s - %s) = %s%s", FO(e->m_old, e->alpha, e->l_old, b1), FO(e->m_new, e->alpha, e->l_old, b2),
               FA(e->alpha, e->l_old, b3),
               resc ? "   <- rescale!" : "");
        FL(GUI_FL_TEXT, "ℓ_new = ℓ_old·α + %s", one ? "exp(z_i - m_new)" : "Σ exp(chunk - m_new)");
        FL(GUI_FL_TEXT, "      = %s·%s + %s = %s", F(e->l_old, b1), FA(e->alpha, e->l_old, b2), F(e->beta * e->l_blk, b3),
           F(e->l_new, b4));
    } else if (e->kind == FS_EV_ROW) {
        const double *sv = fs_trace_at(t, e->s_row);
        FL(GUI_FL_TEXT, "key %d: s = scale·q·k = %s", e->c0, sv ? F(sv[0], b1) : "?");
        FL(rc, "m_new = max(m, s)");
        FL(rc, "      = max(%s, %s) = %s", F(e->m_old, b1), F(e->m_blk, b2), F(e->m_new, b3));
        if (e->m_new == -INFINITY) {   /* tiled.c's guard: no key visible yet */
            FL(GUI_FL_TEXT, "nothing visible yet:");
            FL(GUI_FL_TEXT, "α = 1, p = 0 by the guard");
        } else {
            FL(rc, "α = exp(m - m_new) = %s%s", FA(e->alpha, e->l_old, b1), resc ? "  new max!" : "");
            FL(GUI_FL_FACTOR, "p = exp(s - m_new) = %s", F(e->beta, b1));
        }
        FL(GUI_FL_TEXT, "ℓ = α·ℓ + p");
        FL(GUI_FL_TEXT, "  = %s·%s + %s = %s", FA(e->alpha, e->l_old, b1), F(e->l_old, b2), F(e->beta, b3), F(e->l_new, b4));
    }
#undef FL
    return n;
}

/* The filled-in formulas of a merge of two partial states, one line each: FS_EV_MERGE (decode's
 * α, β for sides a and b) or FS_EV_RMERGE (the ring's α, β); nothing for other events. Two states
 * that saw nothing merge by the guard (α = 1, β = 0), said as such. t holds the event's vectors.
 * Returns the number of lines (at most max). No display needed (tests/check_equations_gui.c). */
int gui_merge_formulas(const fs_trace *t, const fs_event *e, gui_formula_line *out, int max)
{
    int n = 0;
    char b1[32], b2[32], b3[32], b4[32], b5[32];
#define FL(role_, ...) do { if (n < max) { snprintf(out[n].text, sizeof out[n].text, __VA_ARGS__); out[n++].role = (role_); } } while (0)
    if (e->kind == FS_EV_MERGE) {
        FL(GUI_FL_TEXT, "merge(a = %d, b = %d) -> %d, level %d", e->a, e->b, e->id, e->level);
        FL(GUI_FL_TEXT, "m = max(m_a, m_b)");
        FL(GUI_FL_TEXT, "  = max(%s, %s) = %s", F(e->m_old, b1), F(e->m_blk, b2), F(e->m_new, b3));
        if (e->m_new == -INFINITY) {   /* decode.c's guard: neither side saw a key */
            FL(GUI_FL_FACTOR, "neither side saw a key:");
            FL(GUI_FL_FACTOR, "α = 1, β = 0 by the guard");
        } else {
            FL(GUI_FL_FACTOR, "α = exp(m_a - m) = %s", FA(e->alpha, e->l_old, b1));
            FL(GUI_FL_FACTOR, "β = exp(m_b - m) = %s", FA(e->beta, e->l_blk, b1));
        }
        FL(GUI_FL_TEXT, "ℓ = α·ℓ_a + β·ℓ_b");
        FL(GUI_FL_TEXT, "  = %s·%s + %s·%s", FA(e->alpha, e->l_old, b1), F(e->l_old, b2), FA(e->beta, e->l_blk, b3),
           F(e->l_blk, b4));
        FL(GUI_FL_SUM, "  = %s", F(e->l_new, b1));
        const double *o = fs_trace_at(t, e->o_new);
        if (o) {   /* the merge formula of the partials' form (decode.h) */
            FL(GUI_FL_TEXT, "%s", e->normalized ? "o = (α·ℓ_a·o_a + β·ℓ_b·o_b) / ℓ" : "o = α·o_a + β·o_b");
            FL(GUI_FL_TEXT, "  = [%s%s]", F(o[0], b1), e->n_o > 1 ? ", …" : "");
        }
    } else if (e->kind == FS_EV_RMERGE) {
        FL(GUI_FL_TEXT, "row at position %d: the block merged in", e->pos);
        FL(GUI_FL_TEXT, "m_new = max(m_old, m_blk) = max(%s, %s) = %s", F(e->m_old, b1), F(e->m_blk, b2), F(e->m_new, b3));
        FL(e->alpha < 1 ? GUI_FL_RESCALE : GUI_FL_TEXT, "α = exp(m_old - m_new) = %s", FA(e->alpha, e->l_old, b1));
        FL(GUI_FL_TEXT, "β = exp(m_blk - m_new) = %s", FA(e->beta, e->l_blk, b1));
        FL(GUI_FL_TEXT, "ℓ_new = α·ℓ_old + β·ℓ_blk");
        FL(GUI_FL_SUM, "  = %s·%s + %s·%s = %s", FA(e->alpha, e->l_old, b1), F(e->l_old, b2), FA(e->beta, e->l_blk, b3), F(e->l_blk, b4),
           F(e->l_new, b5));
        FL(GUI_FL_NOTE, "FlashDecoding's merge of two partial states");
    }
#undef FL
    return n;
}

/* The side panel's lines for a decode event (a merge with its numbers, a partial, an output
 * row) at x from *y down, in size fs; nothing for other events. */
void gui_decode_side(gui_draw *d, const fs_trace *t, const fs_event *now, int x, int *yp, int fs)
{
    const gui_theme *th = d->th;
    char b1[32], b2[32];
    int y = *yp;
    if (now && now->kind == FS_EV_MERGE) {
        gui_formula_line fl[GUI_FORMULA_LINES];
        int n = gui_merge_formulas(t, now, fl, GUI_FORMULA_LINES);
        for (int i = 0; i < n; i++)
            line(d, fs, x, &y, fl[i].role == GUI_FL_FACTOR ? th->warn : fl[i].role == GUI_FL_SUM ? th->accent : th->text, "%s",
                 fl[i].text);
    } else if (now && now->kind == FS_EV_PARTIAL) {
        line(d, fs, x, &y, th->text, "split %d: keys %d..%d%s, %d visible", now->kt, now->c0, now->c1 - 1,
             now->stride > 1 ? " (strided)" : "", now->visible);
        line(d, fs, x, &y, th->text, "m = %s (max of its scores)", F(now->m_new, b1));
        line(d, fs, x, &y, th->text, "ℓ = Σ exp(s - m) = %s", F(now->l_new, b1));
        line(d, fs, x, &y, th->dim, "computed alone: splits run in parallel");
    } else if (now && now->kind == FS_EV_OUT) {
        const double *o = fs_trace_at(t, now->o_new);
        char os[256] = "";
        int n1 = 0;
        for (int c = 0; o && c < now->n_o && c < 6; c++) n1 += snprintf(os + n1, sizeof os - (size_t)n1, "%s%s", c ? ", " : "", F(o[c], b1));
        line(d, fs, x, &y, th->good, "output row %d = o / ℓ = [%s]", now->row, os);
        line(d, fs, x, &y, th->text, "m = %s, ℓ = %s", F(now->m_new, b1), F(now->l_new, b2));
    }
    *yp = y;
}

static void scene_decode(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_theme *th = d->th;
    const gui_layout *L = &d->L;
    const fs_trace *t = &show->trace;
    const fs_attn *a = &show->run.attn;
    gui_grid g = gui_scene_grid(show, L);
    const fs_event *now = s->n > 0 ? &t->ev[s->step] : NULL;
    int head = now ? now->head : 0, row = now && now->row >= 0 ? now->row : 0;
    if (s->follow >= 0 && s->follow < a->n_q) row = s->follow;
    /* Events of this (head, row), up to the step, by node id. */
    enum { MAXN = 512 };
    int64_t node_ev[MAXN];
    int n_nodes = 0, n_splits = 0;
    for (int i = 0; i < MAXN; i++) node_ev[i] = -1;
    int64_t out = -1, first = -1;
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        if (e->head != head || e->row != row) continue;
        if (first < 0) first = k;
        if (e->kind == FS_EV_PARTIAL && e->kt >= 0 && e->kt < MAXN) { n_splits = e->kt + 1 > n_splits ? e->kt + 1 : n_splits; }
        if (k > s->step) continue;
        if ((e->kind == FS_EV_PARTIAL || e->kind == FS_EV_MERGE) && e->id >= 0 && e->id < MAXN) {
            node_ev[e->id] = k;
            if (e->id + 1 > n_nodes) n_nodes = e->id + 1;
        }
        if (e->kind == FS_EV_OUT) out = k;
    }
    int split_of[4096];
    int nk = a->n_kv < 4096 ? a->n_kv : 4096;
    for (int j = 0; j < nk; j++) split_of[j] = -1;
    for (int64_t k = 0; k < t->n; k++) {   /* which split holds each key (from the PARTIAL events) */
        const fs_event *e = &t->ev[k];
        if (e->kind != FS_EV_PARTIAL || e->head != head || e->row != row) continue;
        int st = e->stride > 0 ? e->stride : 1;
        for (int j = e->c0; j < e->c1 && j < nk; j += st) split_of[j] = e->kt;
    }
    gui_textf(d, L->font, L->main.x, L->main.y, th->text, GUI_AL_LEFT, "KV cache (%d positions) in %d splits; query row %d", a->n_kv,
              n_splits, row);
    /* A long cache has narrow cells: the strip keeps a readable height (hover still hits the
     * top square of each key). */
    int strip_h = g.cell < 2 * L->font ? 2 * L->font : g.cell, gap = g.cell >= 6 ? 1 : 0;
    for (int j = 0; j < nk && g.cell > 0; j++) {
        int sp = split_of[j];
        gui_rect r = {g.x0 + j * g.cell + gap, g.y0 + 1, g.cell - 2 * gap, strip_h - 2};
        bool done = sp >= 0 && node_ev[sp] >= 0;
        bool is_now = now && now->kind == FS_EV_PARTIAL && now->kt == sp && now->row == row;
        uint32_t base = sp % 2 ? th->partial : th->full;
        gui_fill(d, r, sp < 0 ? th->masked : done ? gui_mix(base, th->bg, is_now ? 0 : 0.35) : gui_mix(base, th->bg, 0.75));
        if (sp % 2) gui_hatch(d, r, gui_mix(base, th->text, 0.25), g.cell / 3 > 3 ? g.cell / 3 : 3, 1);
        if (is_now && g.cell >= 6) gui_frame(d, r, th->current, 2 * d->thin);
        else if (is_now)   /* narrow cells: a bar under the split's keys instead of a frame per key */
            gui_fill(d, (gui_rect){g.x0 + j * g.cell, g.y0 + strip_h + 1, g.cell, 3 * d->thin + 1}, th->current);
        int every = g.cell >= 3 * gui_char_w(d, L->font_small) ? 1 : 8;
        if (j % every == 0)
            gui_textf(d, L->font_small, r.x + (every == 1 ? r.w / 2 : 0), g.y0 - gui_line_h(d, L->font_small), th->dim,
                      every == 1 ? GUI_AL_CENTER : GUI_AL_LEFT, "%d", j);
        if (sp >= 0 && g.cell >= 3 * gui_char_w(d, L->font_small))
            gui_textf(d, L->font_small, r.x + r.w / 2, r.y + (r.h - gui_line_h(d, L->font_small)) / 2, th->text, GUI_AL_CENTER, "s%d", sp);
    }
    if (g.cell > 0 && g.cell < 3 * gui_char_w(d, L->font_small))   /* narrow cells: one name per contiguous split */
        for (int64_t k = 0; k < t->n; k++) {
            const fs_event *e = &t->ev[k];
            if (e->kind != FS_EV_PARTIAL || e->head != head || e->row != row || e->stride > 1) continue;
            int x0 = g.x0 + e->c0 * g.cell, x1 = g.x0 + e->c1 * g.cell;
            char nm[16];
            snprintf(nm, sizeof nm, "s%d", e->kt);
            if (gui_text_w(d, L->font_small, nm) + 4 < x1 - x0)
                gui_text(d, L->font_small, (x0 + x1) / 2, g.y0 + (strip_h - gui_line_h(d, L->font_small)) / 2, th->text, GUI_AL_CENTER, nm);
        }
    /* The merge diagram: partials at the bottom row, merges above by level. */
    gui_decode_diagram(d, s, t, head, row, 0, t->n, g.y0 + strip_h + 2 * L->font, L->main.y + L->main.h - L->pad);
    /* Side panel: the current merge with the numbers, or the partial. */
    gui_clip(d, &L->side);
    gui_panel(d, L->side, NULL);
    int fs = L->font_small;
    int x = L->side.x + L->pad, y = L->side.y + L->pad / 2;
    line(d, L->font, x, &y, th->text, "This step");
    gui_decode_side(d, t, now, x, &y, fs);
    y += L->pad;
    line(d, fs, x, &y, th->dim, "The merge is associative: any number of");
    line(d, fs, x, &y, th->dim, "splits, any merge order, same output");
    line(d, fs, x, &y, th->dim, "(up to rounding).");
    (void)out; (void)first;
    gui_clip(d, NULL);
    int hi, hj;
    if (s->hover == GUI_HOVER_CELL && gui_grid_hit(&g, s->mouse_x, s->mouse_y, &hi, &hj) && a->K) {
        char tip[128];
        snprintf(tip, sizeof tip, "key %d, split %d: k[0] = %.10g", hj, split_of[hj], a->K[(size_t)fs_attn_kv_head(a, head) * a->n_kv * a->d + (size_t)hj * a->d]);
        gui_tooltip(d, s, tip);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Claims: a lesson with nothing to animate lists what it checked. */

static void scene_claims(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_theme *th = d->th;
    const gui_layout *L = &d->L;
    gui_rect r = gui_layout_body(L);
    gui_panel(d, r, NULL);
    int x = r.x + L->pad, y = r.y + L->pad / 2, w = r.w - 2 * L->pad, bottom = r.y + r.h - L->pad / 2;
    /* The ending and the section's quiz line lie over the list's foot: the list stops above them
     * (stop), laid out as without them (bottom), so that it reads the same with the page's
     * taller ending as without. */
    int stop = bottom;
    const gui_rect *over[2] = {&L->ending, &L->section};
    for (int k = 0; k < 2; k++)
        if (over[k]->h > 0 && over[k]->y > r.y && over[k]->y - L->pad / 2 < stop) stop = over[k]->y - L->pad / 2;
    if (show->intro[0]) {   /* the whole introduction, at the small size when it is long */
        int f = gui_wrap_lines(d, L->font, w, show->intro) <= 5 ? L->font : L->font_small;
        int most = L->portrait ? 16 : 7;   /* lines; upright, the page scrolls */
        /* but never so many that the list's heading, three claims and the count of the rest no
         * longer fit above the ending (a large text size under the ending showed no claim) */
        int keep = (stop - y - L->pad - gui_line_h(d, L->font) - 4 * gui_line_h(d, L->font_small)) / gui_line_h(d, f);
        if (keep < most) most = keep;
        if (most > 0) {
            y += gui_text_wrap(d, f, (gui_rect){x, y, w, most * gui_line_h(d, f)}, th->text, show->intro);
            y += L->pad;
        }
    }
    line(d, L->font, x, &y, th->text, "What this lesson checks (recomputed exactly):");
    /* The verdict in a column of its own, then the claim; claims take two lines each when all of
     * them fit that way, else one line each, the claim's words cut with "…" before its values. */
    int vlen = 7;   /* the verdict column: its longest word and two spaces */
    for (int i = 0; i < show->n_claims; i++) {
        int n = (int)strcspn(show->claim_verdict[i], "-");
        if (n > vlen) vlen = n;
    }
    int fs = L->font_small, lh = gui_line_h(d, fs), vw = (vlen + 2) * gui_char_w(d, fs), tw = w - vw;
    int need = 0, two[GUI_MAX_CLAIMS];   /* two[i]: claim i takes two lines when it may */
    for (int i = 0; i < show->n_claims; i++) {
        int nl = gui_wrap_lines(d, fs, tw, show->claims[i]);
        two[i] = nl >= 2;
        need += nl < 2 ? nl : 2;
    }
    int per = need * lh <= bottom - y ? 2 : 1;
    /* The claims that do not fit above stop (and any past GUI_MAX_CLAIMS) are counted in the last
     * line that does, so that none goes missing without a word: a wide window at a large text
     * size held 7 of 000_10's 43 and said nothing of the rest. */
    int all = show->n_claims_all > show->n_claims ? show->n_claims_all : show->n_claims, drawn = 0;
    for (int i = 0; i < show->n_claims && y + lh <= stop; i++) {
        int rows = per == 2 && two[i] && y + 2 * lh <= bottom ? 2 : 1;
        if (i + 1 < all && y + rows * lh + lh > stop) break;   /* the next line would be the last: it counts the rest */
        const char *v = show->claim_verdict[i];
        bool bad = !strcmp(v, "erratum"), holds = !strcmp(v, "holds");
        char vb[24];
        snprintf(vb, sizeof vb, "%.*s", (int)strcspn(v, "-"), v);   /* "rounded-intermediates" -> "rounded" */
        gui_text(d, fs, x, y, bad ? th->bad : holds ? th->good : th->warn, GUI_AL_LEFT, vb);
        const int room = per * lh < bottom - y ? per * lh : lh;
        int h = lh;
        if (room < 2 * lh) {   /* one line: the claim's words cut before its values, never a digit of them */
            char one[600];
            const int cw = gui_char_w(d, fs);
            gui_claim_line(show->claims[i], show->claim_values[i], cw > 0 ? tw / cw : 1, one, sizeof one);
            gui_text(d, fs, x + vw, y, bad ? th->bad : th->text, GUI_AL_LEFT, one);
        } else {   /* two lines: the same, when the claim needs more (the longest budget whose wrap fits) */
            const char *text = show->claims[i];
            char fit[600];
            const int cw = gui_char_w(d, fs), per_line = cw > 0 ? tw / cw : 1, lines = room / lh;
            if (gui_wrap(text, per_line, 0, NULL, 0, NULL) > lines)
                for (int budget = lines * per_line; budget > per_line / 2; budget -= 4) {
                    gui_claim_line(text, show->claim_values[i], budget, fit, sizeof fit);
                    if (gui_wrap(fit, per_line, 0, NULL, 0, NULL) <= lines) {
                        text = fit;
                        break;
                    }
                }
            h = gui_text_wrap(d, fs, (gui_rect){x + vw, y, tw, room}, bad ? th->bad : th->text, text);
        }
        y += h > lh ? h : lh;
        drawn++;
    }
    if (drawn < all && y + lh <= stop) {
        char more[160];
        snprintf(more, sizeof more, "… and %d more: flashstep verify %s lists them all", all - drawn, show->name);
        gui_text_wrap(d, fs, (gui_rect){x, y, w, lh}, th->dim, more);
    }
    (void)s;
}

static void scene_draw_once(gui_draw *d, const gui_state *s, const gui_show *show)
{
    gui_rect m = d->L.main;
    if (show->scene == GUI_SCENE_CLAIMS) m = gui_layout_body(&d->L);
    gui_clip(d, &m);
    switch (show->scene) {
    case GUI_SCENE_SOFTMAX: scene_softmax(d, s, show); break;
    case GUI_SCENE_QUERY: scene_query(d, s, show); break;
    case GUI_SCENE_DECODE: scene_decode(d, s, show); break;
    case GUI_SCENE_CLAIMS: scene_claims(d, s, show); break;
    case GUI_SCENE_TILED:
    case GUI_SCENE_TREE:
    case GUI_SCENE_WINDOW:
    case GUI_SCENE_GQA:
    case GUI_SCENE_PITFALL: gui_scene_tiled(d, s, show); break;
    case GUI_SCENE_BACKWARD: gui_scene_backward(d, s, show); break;
    case GUI_SCENE_PAGED: gui_scene_paged(d, s, show); break;
    case GUI_SCENE_RING: gui_scene_ring(d, s, show); break;
    case GUI_SCENE_COUNT: break;
    }
    gui_clip(d, NULL);
}

/* The scene's text at the largest size, from the layout's down to half of it in steps of 5 %, at
 * which no number is cut short (nor, where some size allows it, a side-panel line broken in two):
 * layout passes without painting (gui_draw with no renderer; a binary search, so a handful), then
 * one that paints. Only the text shrinks; the grids keep the layout's geometry (grid_font), so
 * hit tests still match the picture. */
#define FIT_LEVELS 11         /* 100 %, 95 %, … 50 % */
#define FIT_STRICT_LEVELS 5   /* shrinking only to keep formulas on one line: down to 80 % */

typedef struct { bool done; int cuts, breaks, min_text, min_cell_text; char cut_text[200]; } fit_pass;

static void scene_at(gui_draw *d, const gui_layout *L0, int level)
{
    int pct = 100 - 5 * level;
    d->L.font = L0->font * pct / 100;
    d->L.font_small = L0->font_small * pct / 100;
    d->L.font_big = L0->font_big * pct / 100;
    if (d->L.font_small < 7) d->L.font_small = 7;
    if (d->L.font < 8) d->L.font = 8;
}

static const fit_pass *measure(gui_draw *d, const gui_state *s, const gui_show *show, const gui_layout *L0,
                               fit_pass *p, int level)
{
    if (p[level].done) return &p[level];
    scene_at(d, L0, level);
    d->cuts = d->breaks = d->min_text = d->min_cell_text = 0;
    d->cut_text[0] = 0;
    scene_draw_once(d, s, show);
    p[level] = (fit_pass){true, d->cuts, d->breaks, d->min_text, d->min_cell_text, ""};
    memcpy(p[level].cut_text, d->cut_text, sizeof p[level].cut_text);
    return &p[level];
}

/* The first level (largest size) at which ok(pass) holds, assuming that once it holds it keeps
 * holding at smaller sizes; −1 when it does not hold even at the smallest. */
static int first_level(gui_draw *d, const gui_state *s, const gui_show *show, const gui_layout *L0, fit_pass *p,
                       bool strict)
{
    int lo = 0, hi = strict ? FIT_STRICT_LEVELS - 1 : FIT_LEVELS - 1;
    const fit_pass *q = measure(d, s, show, L0, p, hi);
    if (q->cuts || (strict && q->breaks)) return -1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        q = measure(d, s, show, L0, p, mid);
        if (!q->cuts && !(strict && q->breaks)) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

void gui_scene_draw(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_layout L0 = d->L;
    SDL_Renderer *r = d->r;
    int cuts = d->cuts, breaks = d->breaks, min_text = d->min_text, min_cell_text = d->min_cell_text;
    char cut_text[sizeof d->cut_text];
    memcpy(cut_text, d->cut_text, sizeof cut_text);
    fit_pass p[FIT_LEVELS];
    memset(p, 0, sizeof p);
    d->r = NULL;
    int best = 0;
    const fit_pass *q = measure(d, s, show, &L0, p, 0);
    if (q->cuts || q->breaks) {
        best = first_level(d, s, show, &L0, p, true);
        if (best < 0) best = first_level(d, s, show, &L0, p, false);
        if (best < 0) {   /* nothing fits: the size that cuts fewest (the fit check reports it) */
            best = 0;
            for (int l = 1; l < FIT_LEVELS; l++)
                if (measure(d, s, show, &L0, p, l)->cuts < p[best].cuts) best = l;
        }
    }
    d->r = r;
    d->breaks = breaks;
    d->fit_level = best;
    d->min_text = min_text;   /* the passes above only measured */
    d->min_cell_text = min_cell_text;
    if (!r) {   /* laying out only: this size's pass is the answer */
        if (p[best].min_text && (!min_text || p[best].min_text < min_text)) d->min_text = p[best].min_text;
        if (p[best].min_cell_text && (!min_cell_text || p[best].min_cell_text < min_cell_text))
            d->min_cell_text = p[best].min_cell_text;
        d->breaks = breaks + p[best].breaks;
        d->cuts = cuts + p[best].cuts;
        if (!cuts && p[best].cuts) memcpy(d->cut_text, p[best].cut_text, sizeof d->cut_text);
        else memcpy(d->cut_text, cut_text, sizeof cut_text);
        d->L = L0;
        return;
    }
    d->cuts = cuts;
    memcpy(d->cut_text, cut_text, sizeof cut_text);
    scene_at(d, &L0, best);
    scene_draw_once(d, s, show);
    d->L = L0;
}

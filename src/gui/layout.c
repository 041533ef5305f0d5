/* layout.c: where everything goes, as pure functions of the window size and the user scale.
 *
 * Update (hit tests for hover, click and drag) and draw (painting) both call these, so what the
 * mouse touches is exactly what was drawn. No SDL here: tests/check_gui.c checks the layout at
 * 1280×720, 1920×1080 and 3840×2160 and at several scales.
 */
#include <math.h>
#include <string.h>

#include "gui/gui.h"
#include "io/text.h"

bool gui_rect_contains(gui_rect r, int x, int y)
{
    return x >= r.x && y >= r.y && x < r.x + r.w && y < r.y + r.h;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static bool is_portrait(int w, int h) { return (long)h * 20 > (long)w * 23; }   /* taller than 1.15 : 1 */

/* The window's size relative to the reference one: 1280×720 on its side, 720×1280 upright. */
static double rel_size(int w, int h)
{
    return is_portrait(w, h) ? fmin(w / 720.0, h / 1280.0) : fmin(w / 1280.0, h / 720.0);
}

double gui_layout_font_at(int w, int h)
{
    if (w < 160) w = 160;
    if (h < 120) h = 120;
    return 16.0 * rel_size(w, h);
}

int gui_layout_scale_for(int w, int h, int px)
{
    double f = gui_layout_font_at(w, h);
    int z = f > 0 ? (int)ceil(px / f * 100.0) : 100;
    return clampi(z, 50, 300);
}

gui_rect gui_layout_body(const gui_layout *L)
{
    int x1 = L->side.x + L->side.w, y1 = L->side.y + L->side.h;
    if (L->main.x + L->main.w > x1) x1 = L->main.x + L->main.w;
    if (L->main.y + L->main.h > y1) y1 = L->main.y + L->main.h;
    return (gui_rect){L->main.x, L->main.y, x1 - L->main.x, y1 - L->main.y};
}

gui_layout gui_layout_compute(int w, int h, int scale_pct)
{
    gui_layout L;
    if (w < 160) w = 160;
    if (h < 120) h = 120;
    L.portrait = is_portrait(w, h);
    double rel = rel_size(w, h);
    L.font = clampi((int)lround(16.0 * rel * scale_pct / 100.0), 8, 160);
    L.font_small = clampi((int)lround(L.font * 0.82), 7, 140);
    L.font_big = (int)lround(L.font * 1.4);
    L.pad = clampi(L.font / 2, 3, 80);
    L.grid_font = L.font;

    /* Upright, the header has three lines (title; step; source), since one line of a phone's
     * width holds the title or the step counter but not both. */
    int head_h = L.portrait ? (int)lround(1.25 * (L.font_big + L.font + L.font_small) + L.pad / 2)
                            : (int)lround(L.font_big * 2.0);
    int time_h = (int)lround(L.font * 3.0);
    int narr_h = (int)lround(L.font * 3.4);
    /* A very large scale on a small window: squeeze the bars before the picture vanishes. */
    while (head_h + time_h + narr_h > h * 2 / 3 && narr_h > L.font) {
        narr_h = narr_h * 3 / 4;
        time_h = time_h * 7 / 8;
    }
    L.header = (gui_rect){0, 0, w, head_h};
    L.timeline = (gui_rect){L.pad, h - time_h, w - 2 * L.pad, time_h - L.pad};
    L.narration = (gui_rect){L.pad, h - time_h - narr_h, w - 2 * L.pad, narr_h - L.pad / 2};

    int body_y = head_h + L.pad / 2;
    int body_h = L.narration.y - L.pad / 2 - body_y;
    if (body_h < 1) body_h = 1;
    if (L.portrait) {
        /* The scene on top, as wide as the window and at most as tall as it is wide; the side
         * panel's numbers and formulas under it. */
        int main_h = body_h * 11 / 20;
        if (main_h > w) main_h = w;
        L.main = (gui_rect){L.pad, body_y, w - 2 * L.pad, main_h};
        L.side = (gui_rect){L.pad, body_y + main_h + L.pad / 2, w - 2 * L.pad, body_h - main_h - L.pad / 2};
        if (L.side.h < 1) L.side.h = 1;
    } else {
        /* The side panel holds formulas of about 46 characters of the small font. */
        int side_w = (int)lround(46 * 0.602 * L.font_small + 2 * L.pad);
        side_w = clampi(side_w, (int)(w * 0.30), (int)(w * 0.50));
        L.side = (gui_rect){w - side_w - L.pad, body_y, side_w, body_h};
        L.main = (gui_rect){L.pad, body_y, L.side.x - 2 * L.pad, body_h};
    }
    if (L.main.w < 1) L.main.w = 1;
    L.prompt = (gui_rect){L.main.x, L.main.y + L.main.h, L.main.w, 0};
    L.ending = (gui_rect){L.main.x, L.main.y, L.main.w, 0};
    L.section = (gui_rect){L.main.x, L.main.y + L.main.h, L.main.w, 0};
    return L;
}

/* Line height and advance of the monospace face, estimated from the pixel size the way the side
 * panel's width is (DejaVu Sans Mono: advance 0.602, height 1.17 of the size), rounded up. */
static int est_line_h(int font) { return (int)ceil(font * 1.25); }
static int est_char_w(int font) { return (int)ceil(font * 0.62); }

/* A box of height h across the scene's width, taken from the top of the side panel (upright,
 * where the panel lies under the scene): the panel moves down by h, `after` more (room the
 * platform keeps under the box) and a half gap. */
static gui_rect take_side_top(gui_layout *L, int h, int after)
{
    gui_rect r = {L->main.x, L->side.y, L->main.w, h};
    L->side.y += h + after + L->pad / 2;
    L->side.h -= h + after + L->pad / 2;
    if (L->side.h < 1) L->side.h = 1;
    return r;
}

/* A box of height h across the scene's width, taken from the scene's foot with a gap above it. */
static gui_rect take_main_foot(gui_layout *L, int h, int gap)
{
    L->main.h -= h + gap;
    if (L->main.h < 1) L->main.h = 1;
    return (gui_rect){L->main.x, L->main.y + L->main.h + gap, L->main.w, h};
}

bool gui_ending_shown(const gui_state *s, const gui_show *show)
{
    if (!show->summary[0] || s->menu || s->help || s->glossary >= 0) return false;
    if (s->predict.phase == GUI_PREDICT_ASK || s->predict.phase == GUI_PREDICT_SHOWN) return false;
    return s->n <= 0 || s->step == s->n - 1;
}

bool gui_section_end_shown(const gui_state *s)
{
    if (s->section_end < 0 || s->quiz.phase != GUI_QUIZ_OFF || s->menu || (s->n > 0 && s->step < s->n - 1)) return false;
    return s->predict.phase != GUI_PREDICT_ASK && s->predict.phase != GUI_PREDICT_SHOWN;
}

void gui_ending_lines(const gui_show *show, char *try_line, size_t n, const char *text[4])
{
    if (show->variation[0])
        snprintf(try_line, n, "V: back to the lesson as written (this is its variation %s)", show->variation);
    else if (show->try_opts[0])
        snprintf(try_line, n, "V: try this, %s (flashstep play %s %s)", show->try_label, show->name, show->try_opts);
    else
        try_line[0] = 0;
    text[0] = show->summary;
    text[1] = show->keep;
    text[2] = show->next;
    text[3] = try_line;
}

/* The ending box: a heading and its lines in the small size, then the platform's ending_room.
 * Side by side, over the top of a scene of rows (its last step's row, usually the bottom one,
 * and the side panel's formulas stay in view), but under the ring's table, which is at the top
 * of its scene (the scene gives up the room); upright, between the scene and the side panel,
 * which gives up the room; over a claims list, above the narration bar, across the window. */
static gui_layout layout_ending(gui_layout L, const gui_state *s, const gui_show *show)
{
    char tr[600];
    const char *text[4];
    gui_ending_lines(show, tr, sizeof tr, text);
    bool rows = show->scene != GUI_SCENE_CLAIMS && L.main.w > 0;
    gui_rect area = rows ? L.main : L.narration;
    int per = (area.w - 2 * L.pad) / est_char_w(L.font_small), lines = 1;
    for (int i = 0; i < 4; i++)
        if (text[i][0]) lines += gui_wrap(text[i], per > 4 ? per : 4, 0, NULL, 0, NULL);
    int room = s->ending_room > 0 ? s->ending_room : 0;
    int h = lines * est_line_h(L.font_small) + L.pad + room, top = L.header.y + L.header.h;
    if (rows && L.portrait) {
        int most = L.side.h * 2 / 3;
        L.ending = take_side_top(&L, h > most ? most : h, 0);
        return L;
    }
    if (rows && show->scene == GUI_SCENE_RING && h <= L.main.h / 2) {
        /* The ring's table sits at the top of the scene with its device and step labels, the
         * room under it free: the box goes at the scene's foot and the table fits above it
         * (when the box needs more than half the scene, over its top as for the others). */
        L.ending = take_main_foot(&L, h, L.pad / 2);
        return L;
    }
    L.ending = (gui_rect){area.x, rows ? top : L.narration.y - h, area.w, h};
    if (L.ending.y < top) L.ending.y = top;
    if (L.ending.y + L.ending.h > L.narration.y) L.ending.h = L.narration.y - L.ending.y;
    return L;
}

/* The section's quiz line: one line of the body size. Side by side, at the scene's foot, which
 * gives up the room; upright, at the top of the side panel (under the ending box), which does.
 * Over a claims list (which fills main and side), at the list's foot just above the ending, as
 * the ending itself lies over the list. */
static gui_layout layout_section(gui_layout L, const gui_state *s, const gui_show *show)
{
    if (!gui_section_end_shown(s)) return L;
    int h = est_line_h(L.font) + L.pad;
    if (show->scene == GUI_SCENE_CLAIMS || L.main.w <= 0) {
        int foot = L.ending.h > 0 ? L.ending.y : L.narration.y, top = L.header.y + L.header.h;
        L.section = (gui_rect){L.narration.x, foot - h - L.pad / 2, L.narration.w, h};
        if (L.section.y < top) L.section.y = top;
        return L;
    }
    L.section = L.portrait ? take_side_top(&L, h, 0) : take_main_foot(&L, h, L.pad / 2);
    return L;
}

static gui_layout layout_boxes(const gui_state *s, const gui_show *show)
{
    gui_layout L = gui_layout_compute(s->w, s->h, s->scale_pct);
    /* The narration bar: as many lines as the lesson's longest narration needs at the body size
     * (at the small size when that would take more than three lines or grow the bar by more
     * than a quarter of the body), the same at every step so the scene does not jump. */
    if (s->narr_longest >= 0) {
        char buf[4096];
        gui_narration(show, s->narr_longest, buf, sizeof buf);
        int body_bottom = L.narration.y - L.pad / 2, room = (body_bottom - L.main.y) / 4;
        if (L.portrait) room = L.side.h / 2;
        int fs = L.font, per = (L.narration.w - 2 * L.pad) / est_char_w(fs);
        int lines = gui_wrap(buf, per, 0, NULL, 0, NULL), need = lines * est_line_h(fs) + L.pad;
        if (need > L.narration.h && (need - L.narration.h > room || lines > 3)) {
            fs = L.font_small;
            per = (L.narration.w - 2 * L.pad) / est_char_w(fs);
            need = gui_wrap(buf, per, 0, NULL, 0, NULL) * est_line_h(fs) + L.pad;
        }
        if (need > L.narration.h) {
            int grow = need - L.narration.h;
            if (grow > room) grow = room;
            L.narration.y -= grow;
            L.narration.h += grow;
            L.side.h -= grow;
            if (!L.portrait) L.main.h -= grow;   /* upright, the side panel under the scene gives it all */
        }
    }
    /* Upright, a grid as wide as the scene leaves room above and below it: the side panel
     * under it takes that room (the grid keeps its cells; its scene draws nothing under it). */
    if (L.portrait && (show->scene == GUI_SCENE_TILED || show->scene == GUI_SCENE_WINDOW || show->scene == GUI_SCENE_GQA ||
                       show->scene == GUI_SCENE_BACKWARD)) {
        gui_grid g = gui_scene_grid(show, &L);
        int slack = g.cell > 0 ? L.main.y + L.main.h - (g.y0 + g.rows * g.cell) - L.pad / 2 : 0;
        if (slack > 0) {
            L.main.h -= 2 * slack;
            L.side.y -= 2 * slack;
            L.side.h += 2 * slack;
        }
    }
    if (gui_ending_shown(s, show)) return layout_section(layout_ending(L, s, show), s, show);
    char l[4][GUI_PREDICT_LEN];
    if (!gui_predict_text(s, show, l)) return layout_section(L, s, show);
    /* The question: "PREDICT", the event and the question (wrapped), the answer line in the big
     * size, the keys in the small size. Side by side, a question that covers the scene covers
     * its side panel too: it spans both. */
    const bool wide = !L.portrait && gui_predict_covers(s);
    const int qw = wide ? gui_layout_body(&L).w : L.main.w;
    int per = (qw - 2 * L.pad) / est_char_w(L.font);
    int n = 1 + gui_wrap(l[0], per, 0, NULL, 0, NULL) + gui_wrap(l[1], per, 0, NULL, 0, NULL);
    int n4 = gui_wrap(l[3], (qw - 2 * L.pad) / est_char_w(L.font_small), 0, NULL, 0, NULL);
    int h = n * est_line_h(L.font) + est_line_h(L.font_big) + n4 * est_line_h(L.font_small) + 2 * L.pad;
    int room = s->answer_room > 0 ? s->answer_room : 0;
    /* cover: the height the cover's words take, where a question covers the scene (frame.c's
     * draw_cover: its title and text inside two paddings; side by side a line to spare for the
     * estimate) */
    int cover = 0;
    if (gui_predict_covers(s)) {
        int cw = ((L.portrait ? L.main.w : gui_layout_body(&L).w) - 4 * L.pad) / est_char_w(L.font);
        cover = 4 * L.pad + est_line_h(L.font_big) + L.pad / 2 +
                (gui_wrap(gui_cover_text(s), cw > 4 ? cw : 4, 0, NULL, 0, NULL) + (L.portrait ? 0 : 1)) * est_line_h(L.font);
    }
    if (L.portrait && gui_predict_covers(s)) {
        /* upright, the scene keeps the room they take, and the question comes right under
         * them instead of below an empty scene. */
        int slack = L.main.h - cover;
        if (slack > 0) {
            L.main.h -= slack;
            L.side.y -= slack;
            L.side.h += slack;
        }
    }
    if (gui_predict_covers(s) && s->predict.at != GUI_AT_CLAIMS) {
        /* The bar says the lesson's introduction meanwhile (frame.c's draw_narration), often
         * longer than any step's words: it takes the rows it needs from what the cover hides.
         * Upright, that is the side panel under the scene (at most half of it); side by side,
         * the scene and side panel above the bar, down to the cover's words and the question.
         * A question on the claims says a line of its own there instead. */
        char intro[4096];
        gui_narration(show, -1, intro, sizeof intro);
        int ipl = (L.narration.w - 2 * L.pad) / est_char_w(L.font_small);
        int grow = gui_wrap(intro, ipl > 4 ? ipl : 4, 0, NULL, 0, NULL) * est_line_h(L.font_small) + L.pad - L.narration.h;
        int most = L.portrait ? L.side.h / 2 : gui_layout_body(&L).h - cover - h - room - L.pad;
        if (grow > most) grow = most;
        if (grow > 0) {
            L.narration.y -= grow;
            L.narration.h += grow;
            L.side.h -= grow;
            if (!L.portrait) L.main.h -= grow;
        }
    }
    if (wide) {
        /* Side by side and covered: the question goes at the foot of the scene and side panel
         * both, never over the cover's words; they give up the room. */
        gui_rect body = gui_layout_body(&L);
        int most = body.h - cover - room - L.pad;
        if (h > most) h = most;
        int take = (h < 1 ? 1 : h) + room;
        L.main.h -= take + L.pad;
        L.side.h -= take + L.pad;
        if (L.main.h < 1) L.main.h = 1;
        if (L.side.h < 1) L.side.h = 1;
        L.prompt = (gui_rect){body.x, body.y + body.h - take, body.w, take};
        return L;
    }
    if (L.portrait) {
        /* Upright the scene is already short and the side panel under it tall: the question
         * goes between them and the side panel gives up the room (at most two thirds of it). */
        int most = (L.side.h - room) * 2 / 3;
        if (h > most) h = most;
        L.prompt = take_side_top(&L, h < 1 ? 1 : h, room);
        return L;
    }
    /* Side by side, the scene gives up the room at its bottom; the platform's answer field
     * goes inside the box, in a strip of its own at the box's foot. */
    int most = (L.main.h - room) * 2 / 3;
    if (h > most) h = most;
    L.prompt = take_main_foot(&L, (h < 1 ? 1 : h) + room, L.pad);
    return L;
}

gui_layout gui_layout_for(const gui_state *s, const gui_show *show)
{
    gui_layout L = layout_boxes(s, show);
    /* Upright, the words go right under the scene (and under a question or ending box there),
     * above the side panel's numbers: on a phone the page scrolls a canvas taller than the
     * screen, and a bar at its foot, under a long side panel, is out of view while the scene is
     * in it. The side panel moves down by the bar's height and keeps its own. A claims list,
     * which fills scene and side panel alike, keeps the bar at its foot. */
    if (L.portrait && show->scene != GUI_SCENE_CLAIMS && L.main.w > 0) {
        int h = L.narration.h + L.pad / 2;
        L.narration.y = L.side.y;
        L.side.y += h;
    }
    return L;
}

/* End of the next line starting at s: after the last whole word within per code points. */
static const char *wrap_end(const char *s, int per)
{
    const char *p = s, *cut = NULL;
    int n = 0;
    while (*p && *p != '\n') {
        if (*p == ' ') cut = p;
        const char *q = p + 1;
        while (((unsigned char)*q & 0xC0) == 0x80) q++;
        if (n + 1 > per) break;
        n++;
        p = q;
    }
    if (!*p || *p == '\n' || *p == ' ') return p;
    return cut && cut > s ? cut : p;
}

static const char *skip_blank(const char *s)
{
    while (*s == ' ' || *s == '\n') s++;
    return s;
}

int gui_wrap(const char *s, int per, int max_lines, char *out, size_t n, bool *cut)
{
    if (cut) *cut = false;
    if (out && n) out[0] = 0;
    if (per < 4) per = 4;
    size_t used = 0;
    int lines = 0;
    s = skip_blank(s);
    while (*s) {
        const char *e = wrap_end(s, per);
        const char *next = skip_blank(e);
        bool last = max_lines > 0 && lines + 1 == max_lines && *next;
        if (last) {   /* room for " …" after a whole word */
            e = wrap_end(s, per - 2);
            while (e > s && e[-1] == ' ') e--;
            if (cut) *cut = true;
        }
        if (out && n) {
            size_t len = (size_t)(e - s), need = len + (last ? 4 : 0) + (lines ? 1 : 0);
            if (used + need < n) {
                if (lines) out[used++] = '\n';
                memcpy(out + used, s, len);
                used += len;
                if (last) { memcpy(out + used, " \xe2\x80\xa6", 4); used += 4; }
                out[used] = 0;
            }
        }
        lines++;
        if (last) break;
        s = next;
    }
    return lines;
}

void gui_claim_line(const char *s, int values, int per, char *out, size_t n)
{
    if (!out || !n) return;
    const size_t len = strlen(s), at = values > 0 && (size_t)values < len ? (size_t)values : len;
    const int tail = fs_text_cols(s + at, len - at), room = per - tail;
    if (fs_text_cols(s, len) <= per || at == len || room < 6) {   /* fits, or no values to keep apart */
        gui_wrap(s, per, 1, out, n, NULL);
        return;
    }
    char head[600];
    snprintf(head, sizeof head, "%.*s", (int)(at < sizeof head ? at : sizeof head - 1), s);
    char first[600];
    gui_wrap(head, room, 1, first, sizeof first, NULL);   /* the words that fit, then " …" */
    snprintf(out, n, "%s%s", first, s + at);
}

int64_t gui_timeline_step_at(gui_rect r, int64_t n, int x)
{
    if (n <= 1 || r.w <= 1) return 0;
    double t = (double)(x - r.x) / (double)(r.w - 1);
    if (t < 0) t = 0;
    if (t > 1) t = 1;
    return (int64_t)llround(t * (double)(n - 1));
}

int gui_timeline_x_of(gui_rect r, int64_t n, int64_t step)
{
    if (n <= 1) return r.x;
    if (step < 0) step = 0;
    if (step > n - 1) step = n - 1;
    return r.x + (int)llround((double)step / (double)(n - 1) * (double)(r.w - 1));
}

gui_grid gui_grid_fit(gui_rect r, int rows, int cols, int label_w, int label_h, int max_cell)
{
    gui_grid g = {r.x, r.y, 0, rows, cols};
    if (rows < 1 || cols < 1) return g;
    int aw = r.w - label_w, ah = r.h - label_h;
    int c = aw / cols;
    if (ah / rows < c) c = ah / rows;
    if (max_cell > 0 && c > max_cell) c = max_cell;
    if (c < 1) return g;
    g.cell = c;
    g.x0 = r.x + label_w + (aw - c * cols) / 2;
    g.y0 = r.y + label_h + (ah - c * rows) / 2;
    return g;
}

bool gui_grid_hit(const gui_grid *g, int x, int y, int *i, int *j)
{
    if (g->cell <= 0 || x < g->x0 || y < g->y0) return false;
    int jj = (x - g->x0) / g->cell, ii = (y - g->y0) / g->cell;
    if (ii >= g->rows || jj >= g->cols) return false;
    *i = ii;
    *j = jj;
    return true;
}

/* Per scene, the grid the scene draws in L->main (scene.c uses the same numbers). Above a tile
 * grid there is room for its caption and the key numbers (2.4 × the font). */
gui_grid gui_scene_grid(const gui_show *show, const gui_layout *L)
{
    const fs_attn *a = &show->run.attn;
    gui_rect m = L->main;
    int f = L->grid_font;
    gui_grid none = {m.x, m.y, 0, 0, 0};
    switch (show->scene) {
    case GUI_SCENE_SOFTMAX: {
        /* Under the strip: the softmax bars (as tall as a cell) and five lines of formulas. */
        int h = m.h * 2 / 5, room = (m.h - 2 * f - 4 * f - 5 * est_line_h(f) - (int)(1.6 * f)) / 2 + (int)(1.6 * f);
        gui_rect r = {m.x, m.y + 2 * f, m.w, room < h ? room : h};
        return gui_grid_fit(r, 1, show->run.n_z, 3 * f, (int)(1.6 * f), 6 * f);
    }
    case GUI_SCENE_DECODE: {
        gui_rect r = {m.x, m.y + 2 * f, m.w, m.h / 4};
        return gui_grid_fit(r, 1, a->n_kv, 3 * f, (int)(1.6 * f), 4 * f);
    }
    case GUI_SCENE_QUERY: {
        gui_rect r = {m.x, m.y + 3 * f, m.w * 11 / 20, m.h - 3 * f};
        return gui_grid_fit(r, a->n_kv, a->d + 1 + a->d_v, 3 * f, (int)(1.8 * f), 4 * f);
    }
    case GUI_SCENE_TREE: {
        gui_rect r = {m.x, m.y, m.w * 11 / 20, m.h};
        return gui_grid_fit(r, a->n_q, a->n_kv, (int)(2.4 * f), (int)(2.4 * f), 6 * f);
    }
    case GUI_SCENE_PITFALL: {
        /* The correct and the wrong run side by side, or one above the other when that gives
         * bigger cells (a few long rows); this is the first (correct) one's grid. */
        gui_rect side = {m.x, m.y, m.w / 2 - f / 2, m.h}, stack = {m.x, m.y, m.w, m.h / 2 - f / 2};
        int cols = a->n_kv + 1 + a->d_v, lw = (int)(2.4 * f), lh = (int)(2.4 * f);
        gui_grid g1 = gui_grid_fit(side, a->n_q, cols, lw, lh, 6 * f), g2 = gui_grid_fit(stack, a->n_q, cols, lw, lh, 6 * f);
        return g2.cell > g1.cell ? g2 : g1;
    }
    case GUI_SCENE_TILED:
    case GUI_SCENE_WINDOW:
    case GUI_SCENE_GQA: {
        gui_rect r = m;
        if (show->scene == GUI_SCENE_GQA) { r.y += 4 * f; r.h -= 4 * f; }
        /* Room on the right for the m and ℓ columns (7 characters each) and the O cells. */
        int stat_w = 2 * (7 * est_char_w(L->font_small) + L->pad) + L->pad;
        r.w -= stat_w;
        return gui_grid_fit(r, a->n_q, a->n_kv + 1 + a->d_v, (int)(2.4 * f), (int)(2.4 * f), 6 * f);
    }
    case GUI_SCENE_BACKWARD: {
        /* The pairs with the dQ columns right of them and the dK, dV rows under the keys
         * (scene_backward.c); a gap column and gap rows between. */
        gui_rect r = {m.x, m.y + f, m.w, m.h - f};
        return gui_grid_fit(r, a->n_q + 1 + a->d + 1 + a->d_v, a->n_kv + 1 + a->d, (int)(2.4 * f), (int)(2.4 * f), 5 * f);
    }
    case GUI_SCENE_CLAIMS:
    case GUI_SCENE_PAGED:   /* no grid of cells: pages and tables (scene_paged.c) */
    case GUI_SCENE_RING:    /* the ring's work table is not a grid of (query, key) cells */
    case GUI_SCENE_COUNT: break;
    }
    return none;
}

bool gui_pitfall_stacked(const gui_show *show, const gui_layout *L)
{
    gui_grid g = gui_scene_grid(show, L);
    return show->scene == GUI_SCENE_PITFALL && g.cell > 0 && g.y0 + g.rows * g.cell <= L->main.y + L->main.h / 2 &&
           g.x0 + g.cols * g.cell > L->main.x + L->main.w / 2;
}

/* frame.c: one frame around the scene: header, narration, timeline with event markers, and the
 * overlays (hover values, help, lesson list, predict box, status line). Reads state, never
 * changes it. */
#include <math.h>
#include <string.h>

#include "gui/draw.h"
#include "lesson/lesson.h"

static uint32_t marker_color(const gui_theme *th, const fs_event *e)
{
    switch (e->kind) {
    case FS_EV_SKIP:
    case FS_EV_BSKIP: return th->skip_mark;
    case FS_EV_GRAD: return th->out_mark;
    case FS_EV_MERGE: return th->merge_mark;
    case FS_EV_OUT: return th->out_mark;
    case FS_EV_ALLOC:
    case FS_EV_SHARE:
    case FS_EV_COW: return th->warn;   /* the paged cache: a page taken, shared or copied */
    default: return th->rescale;
    }
}

/* The event's kind in words for the header: the trace's short names ("brow", "bkey") read like
 * words cut short there. */
static const char *kind_words(fs_event_kind k)
{
    switch (k) {
    case FS_EV_ELEM: return "element";
    case FS_EV_TILE: return "tile";
    case FS_EV_SKIP: return "skip";
    case FS_EV_ROW: return "row";
    case FS_EV_PARTIAL: return "partial";
    case FS_EV_MERGE: return "merge";
    case FS_EV_OUT: return "output";
    case FS_EV_LSE: return "L = m + ln l";
    case FS_EV_DELTA: return "D row";
    case FS_EV_BTILE: return "backward tile";
    case FS_EV_BSKIP: return "backward skip";
    case FS_EV_BROW: return "backward row";
    case FS_EV_BKEY: return "backward key";
    case FS_EV_GRAD: return "gradient";
    case FS_EV_LOOKUP: return "table lookup";
    case FS_EV_ALLOC: return "page taken";
    case FS_EV_SHARE: return "page shared";
    case FS_EV_COW: return "copy on write";
    case FS_EV_WRITE: return "write";
    default: return fs_event_kind_str(k);
    }
}

/* The subtitle: where the lesson comes from (the document by its title, and its section), the
 * scene, the lesson's place in the catalogue. */
static void header_subtitle(const gui_state *s, const gui_show *show, char *sub, size_t n)
{
    char from[sizeof show->source + 64];
    fs_source_words(show->source, from, sizeof from);   /* the document by its title */
    if (s->lesson >= 0 && s->course_pos >= 0)   /* its place in the course, as `lessons --course` numbers it */
        snprintf(sub, n, "%s  ·  %s  ·  lesson %d of %d, %s", from,
                 show->run.lowp ? "fp8 beside float64" : gui_scene_str(show->scene), s->course_pos + 1, s->course_n, show->name);
    else if (s->lesson >= 0)
        snprintf(sub, n, "%s  ·  %s  ·  %d/%d %s", from, show->run.lowp ? "fp8 beside float64" : gui_scene_str(show->scene),
                 s->lesson + 1, s->catalog_n, show->name);
    else   /* one's own problem or a saved trace: not in the catalogue */
        snprintf(sub, n, "%s  ·  %s", from, show->run.lowp ? "fp8 beside float64" : gui_scene_str(show->scene));
}

/* The title at the big size, smaller down to the body size before it is cut at clip_x1. */
static void header_title(gui_draw *d, const gui_show *show, int y, int x1)
{
    const gui_layout *L = &d->L;
    d->clip_x1 = x1;
    int tf = L->font_big;
    while (tf > L->font && L->pad + gui_text_w(d, tf, show->title) > x1) tf--;
    gui_text(d, tf, L->pad, y + (gui_line_h(d, L->font_big) - gui_line_h(d, tf)) / 2, d->th->text, GUI_AL_LEFT, show->title);
    d->clip_x1 = 0;
}

static void draw_header(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_layout *L = &d->L;
    const gui_theme *th = d->th;
    gui_fill(d, L->header, th->panel);
    gui_fill(d, (gui_rect){0, L->header.h - d->thin, L->header.w, d->thin}, th->border);
    int y1 = L->pad / 2;
    int y2 = y1 + gui_line_h(d, L->font_big);
    char right[160];
    if (s->n > 0) {
        const fs_event *e = &show->trace.ev[s->step];
        if (gui_classes_wait(s, show) == 0)   /* step 0's event may be a skip, which the question asks about */
            snprintf(right, sizeof right, "step %lld of 0–%lld", (long long)s->step, (long long)(s->n - 1));
        else
            snprintf(right, sizeof right, "step %lld of 0–%lld · %s", (long long)s->step, (long long)(s->n - 1),
                     kind_words(e->kind));
    } else {
        snprintf(right, sizeof right, "no events");
    }
    int xr = L->header.w - L->pad;
    char sp[32], status[160], sub[512];
    double eps = gui_speed_eps(s->speed);
    snprintf(sp, sizeof sp, eps < 1 ? "%.1f ev/s" : "%.0f ev/s", eps);
    header_subtitle(s, show, sub, sizeof sub);
    if (L->portrait) {
        /* Three lines: the title; the step counter with the play state; the source. The theme's
         * name and the keys hint stay off a phone's narrow line (the page has buttons for both). */
        header_title(d, show, y1, xr);
        int y3 = y2 + gui_line_h(d, L->font);
        snprintf(status, sizeof status, "%s %s%s", s->playing ? "playing" : "paused", sp,
                 s->predict.phase != GUI_PREDICT_OFF ? "  ·  questions on" : "");
        int sw = gui_text(d, L->font_small, xr, y2 + (gui_line_h(d, L->font) - gui_line_h(d, L->font_small)) / 2,
                          s->playing ? th->good : th->dim, GUI_AL_RIGHT, status);
        d->clip_x1 = xr - sw - L->pad;
        gui_text(d, L->font, L->pad, y2, th->accent, GUI_AL_LEFT, right);
        d->clip_x1 = xr;
        gui_text(d, L->font_small, L->pad, y3, th->dim, GUI_AL_LEFT, sub);
        d->clip_x1 = 0;
        return;
    }
    int rw = gui_text(d, L->font_big, xr, y1, th->accent, GUI_AL_RIGHT, right);
    header_title(d, show, y1, xr - rw - L->pad);   /* the title stops short of the step counter */
    snprintf(status, sizeof status, "·  %s %s%s  ·  %s  ·  ? keys", s->playing ? "playing" : "paused", sp,
             s->predict.phase != GUI_PREDICT_OFF ? "  ·  questions on" : "", th->name);
    int sw = gui_text(d, L->font_small, xr, y2, s->playing ? th->good : th->dim, GUI_AL_RIGHT, status);
    /* The subtitle keeps clear of the status on the right: cut with "…" where needed. */
    d->clip_x1 = xr - sw - L->pad;
    gui_text(d, L->font_small, L->pad, y2, th->dim, GUI_AL_LEFT, sub);
    d->clip_x1 = 0;
}

/* The narration in the bar above the timeline: the body size when it fits, else the small size,
 * else the small size cut after a whole word with " …". Hovering the bar shows all of it. */
static void draw_narration(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_layout *L = &d->L;
    gui_panel(d, L->narration, NULL);
    char buf[4096];
    /* a question about step 0 covers that step: the lesson's introduction meanwhile; one about
     * the lesson's claims covers them, and the introduction too (it can state the figures) */
    if (gui_predict_covers(s) && s->predict.at == GUI_AT_CLAIMS)
        snprintf(buf, sizeof buf, "%s", "Questions on the lesson's figures: they stay hidden until the last question is "
                                        "answered or revealed.");
    else
        gui_narration(show, s->n > 0 && !gui_predict_covers(s) ? s->step : -1, buf, sizeof buf);
    gui_rect r = {L->narration.x + L->pad, L->narration.y + L->pad / 2, L->narration.w - 2 * L->pad,
                  L->narration.h - L->pad / 2};
    int fs = L->font, lines = gui_wrap_lines(d, fs, r.w, buf);
    if (lines > r.h / gui_line_h(d, fs) || (lines > 3 && r.h > 3 * gui_line_h(d, fs) + L->pad)) fs = L->font_small;
    bool cut = gui_wrap_lines(d, fs, r.w, buf) > r.h / gui_line_h(d, fs);
    gui_text_wrap(d, fs, r, d->th->text, buf);
    if (!cut || s->hover != GUI_HOVER_NARRATION) return;
    /* The whole text in a box that grows upward from the bar, over the scene. */
    int lh = gui_line_h(d, L->font), top = L->header.y + L->header.h;
    int n = gui_wrap_lines(d, L->font, r.w, buf);
    int h = n * lh + L->pad;
    gui_rect box = {L->narration.x, L->narration.y + L->narration.h - h, L->narration.w, h};
    if (box.y < top) { box.y = top; box.h = L->narration.y + L->narration.h - top; }
    gui_fill(d, box, d->th->panel);
    gui_frame(d, box, d->th->accent, d->thin);
    gui_text_wrap(d, L->font, (gui_rect){r.x, box.y + L->pad / 2, r.w, box.h - L->pad / 2}, d->th->text, buf);
}

static void draw_timeline(gui_draw *d, const gui_state *s, const gui_show *show)
{
    const gui_layout *L = &d->L;
    const gui_theme *th = d->th;
    gui_rect tl = L->timeline;
    int bar_h = tl.h * 45 / 100;
    gui_rect bar = {tl.x, tl.y + L->pad / 2, tl.w, bar_h};
    const int64_t hide = gui_classes_wait(s, show);   /* skip marks from this step on wait, or −1 */
    gui_fill(d, bar, th->future);
    if (s->n > 0) {
        int xc = gui_timeline_x_of(tl, s->n, s->step);
        gui_fill(d, (gui_rect){bar.x, bar.y, xc - bar.x + 1, bar.h}, gui_mix(th->future, th->accent, 0.35));
        /* Markers for the significant events; the divergence of a pitfall on top. */
        for (int64_t k = 0; d->r && k < s->n; k++) {   /* (markers hold no text: not laid out) */
            const fs_event *e = &show->trace.ev[k];
            if (!fs_event_significant(e)) continue;
            if (hide >= 0 && k >= hide && (e->kind == FS_EV_SKIP || e->kind == FS_EV_BSKIP)) continue;
            int x = gui_timeline_x_of(tl, s->n, k);
            int h = e->kind == FS_EV_OUT ? bar.h / 3 : bar.h;
            gui_fill(d, (gui_rect){x - d->thin / 2, bar.y + bar.h - h, d->thin > 1 ? d->thin : 2, h}, marker_color(th, e));
        }
        if (show->diverge >= 0) {
            int x = gui_timeline_x_of(tl, s->n, show->diverge);
            gui_fill(d, (gui_rect){x - d->thin, bar.y - L->pad / 2, 3 * d->thin + 1, bar.h + L->pad}, th->bad);
        }
        /* The cursor. */
        gui_fill(d, (gui_rect){xc - 2 * d->thin - 1, bar.y - L->pad / 3, 4 * d->thin + 3, bar.h + 2 * L->pad / 3}, th->current);
        if (s->hover == GUI_HOVER_TIMELINE && s->hover_step >= 0 && s->hover_step < show->trace.n) {
            int x = gui_timeline_x_of(tl, s->n, s->hover_step);
            gui_fill(d, (gui_rect){x, bar.y, d->thin, bar.h}, th->text);
            /* What is under the mouse: the step and its event, above the bar. */
            const fs_event *e = &show->trace.ev[s->hover_step];
            char tip[96];
            int n = snprintf(tip, sizeof tip, "step %lld", (long long)s->hover_step);
            if (hide < 0 || s->hover_step < hide) {   /* (a step's event would say which tiles are skipped) */
                n += snprintf(tip + n, sizeof tip - (size_t)n, ": %s", fs_event_kind_str(e->kind));
                if (e->row >= 0) n += snprintf(tip + n, sizeof tip - (size_t)n, " of row %d", e->row);
                if (fs_event_significant(e) && (e->kind == FS_EV_ROW || e->kind == FS_EV_ELEM))
                    n += snprintf(tip + n, sizeof tip - (size_t)n, " (rescale)");
                if (e->qt >= 0 && (e->kind == FS_EV_TILE || e->kind == FS_EV_SKIP))
                    snprintf(tip + n, sizeof tip - (size_t)n, ", tile Q%d,K%d", e->qt, e->kt);
            }
            int fs = L->font_small, w = gui_text_w(d, fs, tip) + L->pad, h = gui_line_h(d, fs) + L->pad / 2;
            int tx = x - w / 2;
            if (tx < tl.x) tx = tl.x;
            if (tx + w > tl.x + tl.w) tx = tl.x + tl.w - w;
            gui_rect r = {tx, bar.y - h - L->pad / 2, w, h};
            gui_fill(d, r, th->panel);
            gui_frame(d, r, th->current, d->thin);
            gui_text(d, fs, r.x + L->pad / 2, r.y + L->pad / 4, th->text, GUI_AL_LEFT, tip);
        }
    }
    gui_frame(d, bar, th->border, d->thin);
    /* Legend under the bar. */
    int y = bar.y + bar.h + L->pad / 3, x = tl.x, fs = L->font_small, sq = gui_line_h(d, fs) / 2;
    struct { uint32_t c; const char *t; } leg[5] = {
        {th->rescale, "new max (rescale)"},
        {th->skip_mark, hide >= 0 ? "skipped tile (after the question)" : "skipped tile"},
        {th->merge_mark, "merge"}, {th->out_mark, "output"}, {th->bad, "divergence"}};
    int nl = show->diverge >= 0 ? 5 : 4, leg_w = 0;
    if (show->scene == GUI_SCENE_PAGED) {   /* no rescale or skip there: the page events instead */
        leg[0].c = th->warn;
        leg[0].t = "page taken, shared or copied";
        leg[1] = leg[2];
        leg[2] = leg[3];
        nl = 3;
    }
    for (int i = 0; i < nl; i++) leg_w += sq + L->pad / 2 + gui_text_w(d, fs, leg[i].t) + L->pad * 2;
    /* A transient status message takes the hint's place on this row, never a place over other
     * text; when it does not fit beside the legend, the legend steps aside while it shows. */
    if (s->status[0]) {
        int sw = gui_text_w(d, fs, s->status);
        if (x + leg_w + sw > tl.x + tl.w) {
            gui_clip(d, &(gui_rect){tl.x, y - sq / 4, tl.w + L->pad / 2, gui_line_h(d, fs)});
            gui_text(d, fs, tl.x, y - sq / 4, th->warn, GUI_AL_LEFT, s->status);
            gui_clip(d, NULL);
            return;
        }
    }
    for (int i = 0; i < nl; i++) {
        gui_fill(d, (gui_rect){x, y + sq / 2, sq, sq}, leg[i].c);
        x += sq + L->pad / 2;
        x += gui_text(d, fs, x, y - sq / 4, th->dim, GUI_AL_LEFT, leg[i].t) + L->pad * 2;
    }
    /* At step 0 the hint says where the lesson's introduction is (the window opens there). */
    const char *hint = s->status[0] ? s->status
                       : s->step == 0 && show->intro[0] && !gui_predict_covers(s)
                           ? "I: the lesson's introduction  ·  click or drag to seek"
                           : "click or drag to seek  ·  Shift+arrow: next marker";
    if (x + gui_text_w(d, fs, hint) < tl.x + tl.w)
        gui_text(d, fs, tl.x + tl.w, y - sq / 4, s->status[0] ? th->warn : th->dim, GUI_AL_RIGHT, hint);
}

static void draw_box_lines(gui_draw *d, const char *title, const char *const *lines, int n, int width_chars)
{
    const gui_layout *L = &d->L;
    int fs = L->font, lh = gui_line_h(d, fs), cw = gui_char_w(d, fs);
    int w = cw * width_chars + 4 * L->pad, h = lh * (n + 2) + 2 * L->pad;
    int W = d->L.header.w, H = L->timeline.y + L->timeline.h;
    if (w > W - 2 * L->pad) w = W - 2 * L->pad;
    gui_rect r = {(W - w) / 2, (H - h) / 2, w, h};
    if (r.y < 0) r.y = 0;
    gui_fill_a(d, (gui_rect){0, 0, W, H + L->pad}, d->th->bg, 170);
    gui_fill(d, r, d->th->panel);
    gui_frame(d, r, d->th->accent, 2 * d->thin);
    gui_text(d, L->font_big, r.x + 2 * L->pad, r.y + L->pad, d->th->accent, GUI_AL_LEFT, title);
    for (int i = 0; i < n; i++)
        gui_text(d, fs, r.x + 2 * L->pad, r.y + L->pad + lh * (i + 2), d->th->text, GUI_AL_LEFT, lines[i]);
}

static void draw_help(gui_draw *d)
{
    static const char *const lines[] = {
        "Space          play / pause",
        "Right / Left   one event forward / back",
        "Shift+arrows   next / previous marker (rescale, skip,",
        "               merge, output)",
        "Up / Down      faster / slower",
        "Home / End     first / last event",
        "mouse          drag the timeline; hover a cell for its exact",
        "               value, the text bar for all of a long text;",
        "               click a row to follow it (again: let go)",
        "L, 1-9, 0      lesson list, pick lesson 1-10",
        "I              the lesson's introduction",
        "Q              questions on / off: answer the next number",
        "               before a step that matters, Enter checks it",
        "+ / -          bigger / smaller (projector mode)",
        "T              theme: dark, light, high contrast",
        "F              full screen",
        "[ / ]          decode: fewer / more splits (same output)",
        "P              save this frame as PNG",
        "V              at the end: try the lesson's variation;",
        "               V again: back to the lesson as written",
        "?              this help; ? again: the glossary of symbols",
        "Esc            close / quit",
    };
    draw_box_lines(d, "Keys", lines, (int)(sizeof lines / sizeof lines[0]), 62);
}

/* The height of text's paragraphs (split at blank lines) wrapped to w at size fs, half a line
 * between two; each drawn from y when draw (the last one cut with " …" below bottom). */
static int paragraphs(gui_draw *d, int fs, int x, int y, int w, int bottom, const char *text, bool draw)
{
    const int lh = gui_line_h(d, fs);
    int h = 0;
    for (const char *s = text; *s;) {
        const char *e = strstr(s, "\n\n");
        const size_t len = e ? (size_t)(e - s) : strlen(s);
        char para[2048];
        snprintf(para, sizeof para, "%.*s", (int)(len < sizeof para ? len : sizeof para - 1), s);
        if (h > 0) h += lh / 2;
        if (draw && y + h < bottom) gui_text_wrap(d, fs, (gui_rect){x, y + h, w, bottom - y - h}, d->th->text, para);
        h += gui_wrap_lines(d, fs, w, para) * lh;
        s += len;
        while (*s == '\n') s++;
    }
    return h;
}

/* I: the lesson's introduction whole, in a box over the scene, as the terminal shows it in pages
 * before step 0 and the page under "About this lesson". The body size when it fits the window,
 * else the small size, else cut with " …" (gui_text_wrap). */
static void draw_intro(gui_draw *d, const gui_show *show)
{
    const gui_layout *L = &d->L;
    const gui_theme *th = d->th;
    int W = L->header.w, H = L->timeline.y + L->timeline.h;
    int w = gui_char_w(d, L->font) * 84 + 4 * L->pad;
    if (w > W - 2 * L->pad) w = W - 2 * L->pad;
    int tw = w - 4 * L->pad;
    int head = L->pad + gui_line_h(d, L->font_big) + L->pad / 2, foot = L->pad / 2 + gui_line_h(d, L->font_small) + L->pad;
    int room = H - 2 * L->pad - head - foot;
    int fs = L->font;
    if (paragraphs(d, fs, 0, 0, tw, 0, show->intro, false) > room) fs = L->font_small;
    int text_h = paragraphs(d, fs, 0, 0, tw, 0, show->intro, false);
    if (text_h > room) text_h = room > 0 ? room : 0;
    gui_rect r = {(W - w) / 2, 0, w, head + text_h + foot};
    r.y = (H - r.h) / 2;
    if (r.y < 0) r.y = 0;
    gui_fill_a(d, (gui_rect){0, 0, W, H + L->pad}, th->bg, 170);
    gui_fill(d, r, th->panel);
    gui_frame(d, r, th->accent, 2 * d->thin);
    gui_text(d, L->font_big, r.x + 2 * L->pad, r.y + L->pad, th->accent, GUI_AL_LEFT, "Introduction");
    paragraphs(d, fs, r.x + 2 * L->pad, r.y + head, tw, r.y + head + text_h, show->intro, true);
    gui_text(d, L->font_small, r.x + 2 * L->pad, r.y + head + text_h + L->pad / 2, th->dim, GUI_AL_LEFT,
             "I or Esc: close");
}

/* The glossary's page p: each symbol, what it is, the lesson that defines it, wrapped at 64
 * characters (UTF-8 counted). */
static void draw_glossary(gui_draw *d, int p)
{
    char buf[64][200];
    const char *lines[64];
    int m = 0;
    const int first = p * GUI_GLOSSARY_PER_PAGE, n = fs_glossary_count(), pages = (n + GUI_GLOSSARY_PER_PAGE - 1) / GUI_GLOSSARY_PER_PAGE;
    for (int i = first; i < n && i < first + GUI_GLOSSARY_PER_PAGE && m < 60; i++) {
        const fs_glossary_entry *g = fs_glossary_get(i);
        char entry[640];
        snprintf(entry, sizeof entry, "%s: %s (%s)", g->symbol, g->meaning, g->lesson);
        const char *s = entry;
        bool first_line = true;
        while (*s && m < 60) {
            /* the longest run of whole words within 64 characters (60 after the first line) */
            int room = first_line ? 64 : 60, chars = 0;
            const char *e = s, *cut = NULL;
            while (*e && chars < room) {
                if (*e == ' ') cut = e;
                e++;
                while (((unsigned char)*e & 0xC0) == 0x80) e++;
                chars++;
            }
            if (*e && cut && cut > s) e = cut;
            snprintf(buf[m], sizeof buf[m], "%s%.*s", first_line ? "" : "    ", (int)(e - s), s);
            lines[m] = buf[m];
            m++;
            s = e;
            while (*s == ' ') s++;
            first_line = false;
        }
    }
    char title[96];
    snprintf(title, sizeof title, "Glossary %d of %d (? next page, Esc closes)", p + 1, pages);
    draw_box_lines(d, title, lines, m, 66);
}

static void draw_menu(gui_draw *d, const gui_state *s, const char *const *names, int n)
{
    char buf[40][96];
    const char *lines[40];
    /* As many entries as fit in the window (at most 36), scrolled to keep the selection in view. */
    int fit = (d->L.timeline.y + d->L.timeline.h) / gui_line_h(d, d->L.font) - 4;
    if (fit > 36) fit = 36;
    if (fit < 3) fit = 3;
    int first = s->menu_sel >= fit ? s->menu_sel - fit + 1 : 0, m = 0;
    for (int i = first; i < n && m < fit; i++, m++) {
        char key[16] = "  ";
        if (i >= 0 && i < 9) snprintf(key, sizeof key, "%d", i + 1);
        else if (i == 9) snprintf(key, sizeof key, "0");
        snprintf(buf[m], sizeof buf[m], "%s %-2s %s", i == s->menu_sel ? ">" : " ", key, names[i]);
        lines[m] = buf[m];
    }
    draw_box_lines(d, "Lessons and quizzes (Up/Down, Enter or a number; L closes)", lines, m, 60);
}

/* A section's quiz over the scene, header to timeline: its title, the question, the choices,
 * the answer line and the feedback or keys (gui_quiz_text). */
static void draw_quiz(gui_draw *d, const gui_state *s, const gui_show *show)
{
    char l[5][GUI_PREDICT_LEN];
    if (!gui_quiz_text(s, show, l)) return;
    const gui_layout *L = &d->L;
    const gui_theme *th = d->th;
    const gui_quiz_view *z = &s->quiz;
    int top = L->header.y + L->header.h, bottom = L->timeline.y + L->timeline.h;
    gui_rect r = {L->pad, top + L->pad, L->header.w - 2 * L->pad, bottom - top - 2 * L->pad};
    if (r.w <= 0 || r.h <= 0) return;
    gui_fill_a(d, (gui_rect){0, 0, L->header.w, bottom + L->pad}, th->bg, 200);
    gui_fill(d, r, th->panel);
    uint32_t edge = z->phase == GUI_QUIZ_ASK ? th->warn : z->phase == GUI_QUIZ_DONE ? th->accent : z->correct ? th->good : th->bad;
    gui_frame(d, r, edge, 2 * d->thin);
    int x = r.x + 2 * L->pad, y = r.y + L->pad, w = r.w - 4 * L->pad, y1 = r.y + r.h - L->pad;
    gui_text(d, L->font_small, x, y, th->warn, GUI_AL_LEFT, "QUIZ");
    y += gui_line_h(d, L->font_small);
    y += gui_text_wrap(d, L->font_big, (gui_rect){x, y, w, y1 - y}, th->accent, l[0]) + L->pad / 2;
    /* the box has the room: the question at the big size, the feedback at the body size */
    y += gui_text_wrap(d, L->font_big, (gui_rect){x, y, w, y1 - y}, th->text, l[1]) + L->pad / 2;
    if (l[2][0]) y += gui_text_wrap(d, L->font_big, (gui_rect){x, y, w, y1 - y}, th->text, l[2]) + L->pad / 2;
    if (l[3][0]) {
        gui_text(d, L->font_big, x, y, z->phase == GUI_QUIZ_ASK ? th->accent : z->correct ? th->good : th->bad, GUI_AL_LEFT, l[3]);
        y += gui_line_h(d, L->font_big) + L->pad / 2;
    }
    gui_text_wrap(d, L->font, (gui_rect){x, y, w, y1 - y}, th->dim, l[4]);
}

/* At the last step of a section's last lesson, a line offers the section's quiz (its entry of
 * the lesson list: names[catalog_n + section]), in the room gui_layout_for keeps for it. */
static void draw_section_end(gui_draw *d, const gui_state *s, const char *const *names, int n)
{
    const gui_layout *L = &d->L;
    gui_rect r = L->section;
    if (r.h <= 0 || !d->r) return;
    int i = s->catalog_n + s->section_end;
    if (i < 0 || i >= n || !names[i]) return;
    char line[256];
    snprintf(line, sizeof line, "Section done. Enter: %s", names[i]);
    gui_fill(d, r, d->th->panel);
    gui_frame(d, r, d->th->accent, d->thin);
    d->clip_x1 = r.x + r.w - L->pad / 2;
    gui_text(d, L->font, r.x + L->pad / 2, r.y + L->pad / 2, d->th->accent, GUI_AL_LEFT, line);
    d->clip_x1 = 0;
}

const char *gui_cover_text(const gui_state *s)
{
    return s->predict.at == GUI_AT_CLAIMS
               ? "The figures this lesson checks stay hidden while the questions below ask about some of "
                 "them: work each one out by hand, type it and Enter (Enter alone shows the answer); Right "
                 "then asks the next, and after the last shows every figure. Q turns the questions off."
               : "The scene shows each step once it is applied, so step 0 stays hidden while the question "
                 "below asks about it. Type your answer and Enter (Enter alone shows the answer); Right then "
                 "shows the step. Q turns the questions off.";
}

/* A question about step 0 is asked before that step is shown: the scene and its side panel,
 * which show step 0 applied, are covered until it is answered or revealed. */
static void draw_cover(gui_draw *d, const gui_state *s)
{
    const gui_layout *L = &d->L;
    const gui_theme *th = d->th;
    gui_rect body = gui_layout_body(L);
    gui_fill(d, body, th->bg);
    gui_rect r = {body.x + 2 * L->pad, body.y + 2 * L->pad, body.w - 4 * L->pad, body.h - 4 * L->pad};
    if (r.w <= 0 || r.h <= 0) return;
    bool claims = s->predict.at == GUI_AT_CLAIMS;
    int y = r.y;
    gui_text(d, L->font_big, r.x, y, th->accent, GUI_AL_LEFT, claims ? "Before the figures" : "Before the first step");
    y += gui_line_h(d, L->font_big) + L->pad / 2;
    gui_text_wrap(d, L->font, (gui_rect){r.x, y, r.w, r.y + r.h - y}, th->text, gui_cover_text(s));
}

/* Predict mode's question, in the room gui_layout_for keeps free below the scene. */
static void draw_predict(gui_draw *d, const gui_state *s, const gui_show *show)
{
    char l[4][GUI_PREDICT_LEN];
    if (!gui_predict_text(s, show, l)) return;
    const gui_predict *p = &s->predict;
    const gui_layout *L = &d->L;
    const gui_theme *th = d->th;
    gui_rect r = L->prompt;
    if (r.h <= 0) return;
    gui_fill(d, r, th->panel);
    gui_frame(d, r, p->phase == GUI_PREDICT_ASK ? th->warn : (p->correct ? th->good : th->bad), 2 * d->thin);
    int fs = L->font, lh = gui_line_h(d, fs), x = r.x + L->pad, y = r.y + L->pad, w = r.w - 2 * L->pad;
    gui_text(d, fs, x, y, th->warn, GUI_AL_LEFT, "QUESTION");
    y += lh;
    y += gui_text_wrap(d, fs, (gui_rect){x, y, w, r.y + r.h - y}, th->text, l[0]);
    y += gui_text_wrap(d, fs, (gui_rect){x, y, w, r.y + r.h - y}, th->text, l[1]);
    gui_text(d, L->font_big, x, y, p->phase == GUI_PREDICT_ASK ? th->accent : (p->correct ? th->good : th->bad),
             GUI_AL_LEFT, l[2]);
    y += gui_line_h(d, L->font_big);
    gui_text_wrap(d, L->font_small, (gui_rect){x, y, w, r.y + r.h - y}, th->dim, l[3]);
}

/* The lesson's ending at its last step (or over a claims-only lesson): what it showed, the
 * formula to keep, the next lesson, and the variation V loads (or, in a variation, the way back),
 * in the box gui_layout_for keeps for it (L->ending; its foot left free for the page's buttons). */
static void draw_ending(gui_draw *d, const gui_show *show)
{
    const gui_layout *L = &d->L;
    const gui_theme *th = d->th;
    gui_rect box = L->ending;
    if (box.h <= 0) return;
    char tr[600];
    const char *text[4];
    gui_ending_lines(show, tr, sizeof tr, text);
    const uint32_t color[4] = {th->text, th->accent, th->dim, th->warn};
    int fs = L->font_small, lh = gui_line_h(d, fs), w = box.w - 2 * L->pad;
    gui_fill(d, box, th->panel);
    gui_frame(d, box, th->accent, d->thin);
    int x = box.x + L->pad, y = box.y + L->pad / 2;
    gui_text(d, fs, x, y, th->accent, GUI_AL_LEFT, "The end of the lesson");
    y += lh;
    for (int i = 0; i < 4; i++)
        if (text[i][0]) y += gui_text_wrap(d, fs, (gui_rect){x, y, w, box.y + box.h - y}, color[i], text[i]);
}

void gui_frame_draw(gui_draw *d, const gui_state *s, const gui_show *show, const char *const *catalog, int n_catalog)
{
    if (d->r) SDL_SetRenderDrawColor(d->r, (d->th->bg >> 16) & 255, (d->th->bg >> 8) & 255, d->th->bg & 255, 255);
    if (d->r) SDL_RenderClear(d->r);
    gui_clip(d, NULL);
    /* a question about step 0 (or the claims) covers the scene: nothing of it is drawn */
    if (gui_predict_covers(s)) draw_cover(d, s);
    else gui_scene_draw(d, s, show);
    gui_clip(d, NULL);
    draw_header(d, s, show);
    draw_narration(d, s, show);
    draw_timeline(d, s, show);
    draw_predict(d, s, show);
    draw_ending(d, show);
    draw_section_end(d, s, catalog, n_catalog);
    draw_quiz(d, s, show);
    if (s->menu) draw_menu(d, s, catalog, n_catalog);
    if (s->intro && show->intro[0]) draw_intro(d, show);
    if (s->help) draw_help(d);
    if (s->glossary >= 0) draw_glossary(d, s->glossary);
}

/* draw.c: fonts (fontconfig + SDL2_ttf with a glyph-texture cache) and drawing primitives. */
#ifndef __EMSCRIPTEN__
#include <fontconfig/fontconfig.h>
#endif
#include <stdarg.h>
#include <string.h>

#include "gui/draw.h"

#ifdef __EMSCRIPTEN__
/* The web page has no fontconfig: `make web` packs the two DejaVu faces at fixed paths of its
 * file system (src/web/module.mk). */
int gui_font_find(char *path, size_t n, char *fallback, size_t fn)
{
    snprintf(path, n, "/flashstep/fonts/DejaVuSansMono.ttf");
    if (fallback && fn) snprintf(fallback, fn, "/flashstep/fonts/DejaVuSans.ttf");
    return 0;
}
#else
int gui_font_find(char *path, size_t n, char *fallback, size_t fn)
{
    static const char *const wanted[] = {"DejaVu Sans Mono:style=Book", "monospace"};
    FcConfig *cfg = FcInitLoadConfigAndFonts();
    if (!cfg) return -1;
    int rc = -1;
    for (size_t i = 0; i < 2 && rc; i++) {
        FcPattern *pat = FcNameParse((const FcChar8 *)wanted[i]);
        if (!pat) continue;
        FcConfigSubstitute(cfg, pat, FcMatchPattern);
        FcDefaultSubstitute(pat);
        FcResult res;
        FcPattern *m = FcFontMatch(cfg, pat, &res);
        FcChar8 *file = NULL;
        int spacing = 0;
        if (m && FcPatternGetString(m, FC_FILE, 0, &file) == FcResultMatch) {
            /* The first choice must really be DejaVu Sans Mono; the fallback any monospace. */
            FcChar8 *fam = NULL;
            bool ok = true;
            if (i == 0) ok = FcPatternGetString(m, FC_FAMILY, 0, &fam) == FcResultMatch && !strcmp((const char *)fam, "DejaVu Sans Mono");
            else ok = FcPatternGetInteger(m, FC_SPACING, 0, &spacing) != FcResultMatch || spacing >= FC_MONO;
            if (ok && strlen((const char *)file) < n) {
                strcpy(path, (const char *)file);
                rc = 0;
            }
        }
        if (m) FcPatternDestroy(m);
        FcPatternDestroy(pat);
    }
    if (fallback && fn) {
        fallback[0] = 0;
        /* A face that has ℓ (U+2113), DejaVu Sans preferred. */
        FcPattern *pat = FcNameParse((const FcChar8 *)"DejaVu Sans");
        FcCharSet *cs = FcCharSetCreate();
        if (pat && cs) {
            FcCharSetAddChar(cs, 0x2113);
            FcPatternAddCharSet(pat, FC_CHARSET, cs);
            FcConfigSubstitute(cfg, pat, FcMatchPattern);
            FcDefaultSubstitute(pat);
            FcResult res;
            FcPattern *m = FcFontMatch(cfg, pat, &res);
            FcChar8 *file = NULL;
            if (m && FcPatternGetString(m, FC_FILE, 0, &file) == FcResultMatch && strlen((const char *)file) < fn)
                strcpy(fallback, (const char *)file);
            if (m) FcPatternDestroy(m);
        }
        if (cs) FcCharSetDestroy(cs);
        if (pat) FcPatternDestroy(pat);
    }
    FcConfigDestroy(cfg);
    return rc;
}
#endif

int gui_draw_init(gui_draw *d, SDL_Renderer *r, const char *font_path, FILE *err)
{
    memset(d, 0, sizeof *d);
    d->r = r;
    d->th = gui_theme_get(GUI_THEME_DARK);
    if (font_path) {
        snprintf(d->font_path, sizeof d->font_path, "%s", font_path);
        char mono[1024];
        gui_font_find(mono, sizeof mono, d->fallback_path, sizeof d->fallback_path);
    } else if (gui_font_find(d->font_path, sizeof d->font_path, d->fallback_path, sizeof d->fallback_path)) {
        fprintf(err, "flashstep: no monospace font found through fontconfig; install fonts-dejavu-core "
                     "or pass --font FILE.ttf\n");
        return -1;
    }
    TTF_Font *f = TTF_OpenFont(d->font_path, 16);
    if (!f) {
        fprintf(err, "flashstep: cannot open font '%s': %s\n", d->font_path, TTF_GetError());
        return -1;
    }
    TTF_CloseFont(f);
    return 0;
}

static void font_clear(gui_font *f)
{
    for (int i = 0; i < 128; i++) if (f->ascii[i]) SDL_DestroyTexture(f->ascii[i]);
    if (f->atlas) SDL_DestroyTexture(f->atlas);
    for (int i = 0; i < f->n_extra; i++) if (f->extra[i]) SDL_DestroyTexture(f->extra[i]);
    if (f->ttf) TTF_CloseFont(f->ttf);
    if (f->fallback) TTF_CloseFont(f->fallback);
    memset(f, 0, sizeof *f);
}

void gui_draw_free(gui_draw *d)
{
    gui_scene_tiled_free(d);
    for (int i = 0; i < GUI_FONT_SLOTS; i++) font_clear(&d->fonts[i]);
}

void gui_draw_begin(gui_draw *d, const gui_state *s, const gui_show *show)
{
    d->frame++;
    d->th = gui_theme_get(s->theme);
    d->L = gui_layout_for(s, show);
    d->thin = d->L.font >= 20 ? d->L.font / 10 : 1;
    d->min_text = d->min_cell_text = 0;
}

gui_font *gui_font_get(gui_draw *d, int size)
{
    if (size < 6) size = 6;
    if (size > 400) size = 400;
    gui_font *victim = &d->fonts[0];
    for (int i = 0; i < GUI_FONT_SLOTS; i++) {
        gui_font *f = &d->fonts[i];
        if (f->size == size && f->ttf) { f->last_used = d->frame; return f; }
        if (!f->ttf) victim = f;
        else if (victim->ttf && f->last_used < victim->last_used) victim = f;
    }
    font_clear(victim);
    victim->ttf = TTF_OpenFont(d->font_path, size);
    if (!victim->ttf) return NULL;
    victim->size = size;
    victim->last_used = d->frame;
    int adv = 0;
    if (TTF_GlyphMetrics32(victim->ttf, '0', NULL, NULL, NULL, NULL, &adv)) adv = size * 6 / 10;
    victim->adv = adv;
    victim->height = TTF_FontHeight(victim->ttf);
    victim->ascent = TTF_FontAscent(victim->ttf);
    return victim;
}

static uint32_t utf8_next(const char **s)
{
    const unsigned char *p = (const unsigned char *)*s;
    uint32_t c = *p++;
    int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
    if (extra) c &= 0x3f >> extra;
    for (int i = 0; i < extra && (*p & 0xc0) == 0x80; i++) c = c << 6 | (*p++ & 0x3f);
    *s = (const char *)p;
    return c;
}

static SDL_Texture *glyph(gui_draw *d, gui_font *f, uint32_t cp)
{
    SDL_Texture **slot = NULL;
    if (cp < 128) slot = &f->ascii[cp];
    else {
        for (int i = 0; i < f->n_extra; i++) if (f->extra_cp[i] == cp) return f->extra[i];
        if (f->n_extra == GUI_GLYPHS_EXTRA) return NULL;
        f->extra_cp[f->n_extra] = cp;
        slot = &f->extra[f->n_extra++];
    }
    if (*slot) return *slot;
    SDL_Color white = {255, 255, 255, 255};
    TTF_Font *face = f->ttf;
    if (cp >= 128 && !TTF_GlyphIsProvided32(f->ttf, cp) && d->fallback_path[0]) {
        if (!f->fallback) f->fallback = TTF_OpenFont(d->fallback_path, f->size);
        if (f->fallback && TTF_GlyphIsProvided32(f->fallback, cp)) {
            face = f->fallback;
            int adv = 0;
            TTF_GlyphMetrics32(face, cp, NULL, NULL, NULL, NULL, &adv);
            f->extra_dx[f->n_extra - 1] = (f->adv - adv) / 2;
            f->extra_dy[f->n_extra - 1] = f->ascent - TTF_FontAscent(face);
        }
    }
    SDL_Surface *sf = TTF_RenderGlyph32_Blended(face, cp, white);
    if (!sf) return NULL;
    *slot = SDL_CreateTextureFromSurface(d->r, sf);
    SDL_FreeSurface(sf);
    if (*slot) SDL_SetTextureBlendMode(*slot, SDL_BLENDMODE_BLEND);
    return *slot;
}

/* The printable ASCII glyphs of one size in one texture: every string of digits and letters is
 * then drawn from a single texture, which renderers batch into one draw call (an optimization
 * only: without it, glyph() draws the same pixels one texture per glyph). */
static void atlas_build(gui_draw *d, gui_font *f)
{
    f->atlas_tried = true;
    SDL_Color white = {255, 255, 255, 255};
    SDL_Surface *g[96] = {NULL};
    int cw = 1, ch = 1;
    for (int c = 33; c < 127; c++) {
        g[c - 32] = TTF_RenderGlyph32_Blended(f->ttf, (Uint32)c, white);
        if (g[c - 32]) {
            if (g[c - 32]->w > cw) cw = g[c - 32]->w;
            if (g[c - 32]->h > ch) ch = g[c - 32]->h;
        }
    }
    SDL_Surface *a = SDL_CreateRGBSurfaceWithFormat(0, 16 * cw, 6 * ch, 32, SDL_PIXELFORMAT_ARGB8888);
    if (a) {
        SDL_FillRect(a, NULL, 0);
        for (int c = 33; c < 127; c++) {
            if (!g[c - 32]) continue;
            SDL_SetSurfaceBlendMode(g[c - 32], SDL_BLENDMODE_NONE);
            SDL_Rect dst = {((c - 32) % 16) * cw, ((c - 32) / 16) * ch, g[c - 32]->w, g[c - 32]->h};
            SDL_BlitSurface(g[c - 32], NULL, a, &dst);
        }
        f->atlas = SDL_CreateTextureFromSurface(d->r, a);
        if (f->atlas) SDL_SetTextureBlendMode(f->atlas, SDL_BLENDMODE_BLEND);
        f->atlas_w = cw;
        f->atlas_h = ch;
        SDL_FreeSurface(a);
    }
    for (int i = 0; i < 96; i++) SDL_FreeSurface(g[i]);
}

int gui_utf8_len(const char *s)
{
    int n = 0;
    while (*s) { utf8_next(&s); n++; }
    return n;
}

/* The metrics of a size, from the cache or from the font (0 when it cannot be opened). */
static bool metrics(gui_draw *d, int size, int *adv, int *height, int *ascent)
{
    if (size < 6) size = 6;
    if (size > 400) size = 400;
    if (!d->m_adv[size]) {
        gui_font *f = gui_font_get(d, size);
        if (!f) return false;
        d->m_adv[size] = (short)f->adv;
        d->m_height[size] = (short)f->height;
        d->m_ascent[size] = (short)f->ascent;
    }
    *adv = d->m_adv[size];
    *height = d->m_height[size];
    *ascent = d->m_ascent[size];
    return true;
}

int gui_char_w(gui_draw *d, int size)
{
    int a, h, asc;
    return metrics(d, size, &a, &h, &asc) ? a : size / 2;
}

int gui_line_h(gui_draw *d, int size)
{
    int a, h, asc;
    return metrics(d, size, &a, &h, &asc) ? h : size;
}

int gui_text_w(gui_draw *d, int size, const char *s) { return gui_char_w(d, size) * gui_utf8_len(s); }

/* The fit check: a text with a number in it, below the header, did not show whole. */
static void note_cut(gui_draw *d, int y, const char *s, const char *how)
{
    if (y < d->L.header.y + d->L.header.h || !strpbrk(s, "0123456789")) return;
    if (!d->cuts++) snprintf(d->cut_text, sizeof d->cut_text, "%s: \"%.150s\"", how, s);
}

int gui_text(gui_draw *d, int size, int x, int y, uint32_t color, gui_align al, const char *s)
{
    if (!s) return 0;
    if (*s && (d->min_text == 0 || size < d->min_text)) d->min_text = size;
    if (!d->r) {   /* laying out only (the fit check, and scene.c's fitting) */
        int adv, height, ascent;
        if (!metrics(d, size, &adv, &height, &ascent)) return 0;
        int w = adv * gui_utf8_len(s);
        if (al == GUI_AL_CENTER) x -= w / 2;
        else if (al == GUI_AL_RIGHT) x -= w;
        if (d->clip_x1 > 0 && x + w > d->clip_x1 + adv) note_cut(d, y, s, "cut at the right");
        else if (d->clip.w > 0 && (x < d->clip.x || x + w > d->clip.x + d->clip.w || y < d->clip.y ||
                                   y + ascent > d->clip.y + d->clip.h))
            note_cut(d, y, s, "outside its panel");
        return w;
    }
    gui_font *f = gui_font_get(d, size);
    if (!f) return 0;
    int w = f->adv * gui_utf8_len(s);
    if (al == GUI_AL_CENTER) x -= w / 2;
    else if (al == GUI_AL_RIGHT) x -= w;
    int cx = x;
    if (!f->atlas_tried) atlas_build(d, f);
    if (f->atlas) SDL_SetTextureColorMod(f->atlas, (color >> 16) & 255, (color >> 8) & 255, color & 255);
    while (*s) {
        uint32_t cp = utf8_next(&s);
        if (d->clip_x1 > 0 && *s && cx + 2 * f->adv > d->clip_x1) {   /* no room for more: an ellipsis */
            SDL_Texture *t = glyph(d, f, 0x2026);
            if (t) {
                int tw, th;
                SDL_QueryTexture(t, NULL, NULL, &tw, &th);
                SDL_SetTextureColorMod(t, (color >> 16) & 255, (color >> 8) & 255, color & 255);
                SDL_Rect dst = {cx, y, tw, th};
                SDL_RenderCopy(d->r, t, NULL, &dst);
            }
            break;
        }
        if (cp > 32 && cp < 127 && f->atlas) {
            SDL_Rect src = {(int)((cp - 32) % 16) * f->atlas_w, (int)((cp - 32) / 16) * f->atlas_h, f->atlas_w, f->atlas_h};
            SDL_Rect dst = {cx, y, f->atlas_w, f->atlas_h};
            SDL_RenderCopy(d->r, f->atlas, &src, &dst);
        } else if (cp != ' ') {
            SDL_Texture *t = glyph(d, f, cp);
            if (t) {
                int tw, th, dx = 0, dy = 0;
                for (int i = 0; cp >= 128 && i < f->n_extra; i++)
                    if (f->extra_cp[i] == cp) { dx = f->extra_dx[i]; dy = f->extra_dy[i]; }
                SDL_QueryTexture(t, NULL, NULL, &tw, &th);
                SDL_SetTextureColorMod(t, (color >> 16) & 255, (color >> 8) & 255, color & 255);
                SDL_Rect dst = {cx + dx, y + dy, tw, th};
                SDL_RenderCopy(d->r, t, NULL, &dst);
            }
        }
        cx += f->adv;
    }
    return w;
}

int gui_textf(gui_draw *d, int size, int x, int y, uint32_t color, gui_align al, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return gui_text(d, size, x, y, color, al, buf);
}

void gui_fmt_cell(double x, char *b, size_t n)
{
    if (isnan(x)) snprintf(b, n, " ");
    else if (isinf(x)) snprintf(b, n, x < 0 ? "-inf" : "inf");
    else if (fabs(x) >= 9999.5) {
        int e = (int)floor(log10(fabs(x)));
        double m = x / pow(10.0, e);
        if (fabs(m) >= 9.95) { m /= 10; e++; }
        snprintf(b, n, "%.1fe%d", m, e);
    } else if (fabs(x) >= 99.995) snprintf(b, n, "%.0f", x);
    else snprintf(b, n, "%.2f", x);
}

void gui_text_fit(gui_draw *d, int size, gui_rect r, uint32_t color, const char *s)
{
    int n = gui_utf8_len(s);
    if (!n) return;
    int sz = size;
    while (sz > size / 2 && sz > 6 && gui_char_w(d, sz) * n > r.w - 2) sz--;
    if (gui_char_w(d, sz) * n > r.w || gui_line_h(d, sz) > r.h + 2 || sz < 6) {
        if (!d->r) note_cut(d, r.y, s, "too small a cell");
        return;
    }
    gui_text_cell(d, sz, r.x + r.w / 2, r.y + (r.h - gui_line_h(d, sz)) / 2, color, GUI_AL_CENTER, s);
}

int gui_text_cell(gui_draw *d, int size, int x, int y, uint32_t color, gui_align al, const char *s)
{
    int min_text = d->min_text;
    int w = gui_text(d, size, x, y, color, al, s);
    d->min_text = min_text;
    if (s && *s && (d->min_cell_text == 0 || size < d->min_cell_text)) d->min_cell_text = size;
    return w;
}

int gui_wrap_lines(gui_draw *d, int size, int w, const char *s)
{
    int cw = gui_char_w(d, size);
    if (cw <= 0 || w / cw < 4) return 1 << 20;
    return gui_wrap(s, w / cw, 0, NULL, 0, NULL);
}

int gui_text_wrap(gui_draw *d, int size, gui_rect r, uint32_t color, const char *s)
{
    int cw = gui_char_w(d, size), lh = gui_line_h(d, size);
    int per = cw > 0 ? r.w / cw : 1, max_lines = lh > 0 ? r.h / lh : 0;
    if (per < 4 || max_lines < 1) {
        if (!d->r) note_cut(d, r.y, s, "no room to wrap");
        return 0;
    }
    char buf[8192];
    bool cut = false;
    int n = gui_wrap(s, per, max_lines, buf, sizeof buf, &cut);
    if (cut && !d->r) note_cut(d, r.y, s, "wrapped past its room");
    char *line = buf;
    for (int i = 0; i < n && line; i++) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        gui_text(d, size, r.x, r.y + i * lh, color, GUI_AL_LEFT, line);
        line = nl ? nl + 1 : NULL;
    }
    return n * lh;
}

static void set_color(gui_draw *d, uint32_t c, int a)
{
    SDL_SetRenderDrawColor(d->r, (c >> 16) & 255, (c >> 8) & 255, c & 255, (Uint8)a);
}

void gui_fill(gui_draw *d, gui_rect r, uint32_t color)
{
    if (!d->r) return;
    set_color(d, color, 255);
    SDL_SetRenderDrawBlendMode(d->r, SDL_BLENDMODE_NONE);
    SDL_Rect q = {r.x, r.y, r.w, r.h};
    SDL_RenderFillRect(d->r, &q);
}

void gui_fill_a(gui_draw *d, gui_rect r, uint32_t color, int alpha)
{
    if (!d->r) return;
    set_color(d, color, alpha);
    SDL_SetRenderDrawBlendMode(d->r, SDL_BLENDMODE_BLEND);
    SDL_Rect q = {r.x, r.y, r.w, r.h};
    SDL_RenderFillRect(d->r, &q);
    SDL_SetRenderDrawBlendMode(d->r, SDL_BLENDMODE_NONE);
}

void gui_frame(gui_draw *d, gui_rect r, uint32_t color, int thick)
{
    if (thick < 1) thick = 1;
    gui_fill(d, (gui_rect){r.x, r.y, r.w, thick}, color);
    gui_fill(d, (gui_rect){r.x, r.y + r.h - thick, r.w, thick}, color);
    gui_fill(d, (gui_rect){r.x, r.y, thick, r.h}, color);
    gui_fill(d, (gui_rect){r.x + r.w - thick, r.y, thick, r.h}, color);
}

void gui_line(gui_draw *d, int x0, int y0, int x1, int y1, uint32_t color, int thick)
{
    if (!d->r) return;
    set_color(d, color, 255);
    SDL_SetRenderDrawBlendMode(d->r, SDL_BLENDMODE_NONE);
    if (thick < 1) thick = 1;
    int dx = x1 - x0, dy = y1 - y0;
    bool steep = (dx < 0 ? -dx : dx) < (dy < 0 ? -dy : dy);
    for (int t = -(thick - 1) / 2; t <= thick / 2; t++) {
        if (steep) SDL_RenderDrawLine(d->r, x0 + t, y0, x1 + t, y1);
        else SDL_RenderDrawLine(d->r, x0, y0 + t, x1, y1 + t);
    }
}

void gui_hatch(gui_draw *d, gui_rect r, uint32_t color, int spacing, int dir)
{
    if (!d->r) return;
    if (spacing < 3) spacing = 3;
    SDL_Rect old;
    SDL_bool had = SDL_RenderIsClipEnabled(d->r);
    SDL_RenderGetClipRect(d->r, &old);
    SDL_Rect clip = {r.x, r.y, r.w, r.h};
    SDL_RenderSetClipRect(d->r, &clip);
    set_color(d, color, 255);
    SDL_SetRenderDrawBlendMode(d->r, SDL_BLENDMODE_NONE);
    for (int c = -r.h; c < r.w; c += spacing) {
        if (dir & 1) SDL_RenderDrawLine(d->r, r.x + c, r.y + r.h, r.x + c + r.h, r.y);
        if (dir & 2) SDL_RenderDrawLine(d->r, r.x + c, r.y, r.x + c + r.h, r.y + r.h);
    }
    SDL_RenderSetClipRect(d->r, had ? &old : NULL);
}

void gui_disc(gui_draw *d, int cx, int cy, int rad, uint32_t color)
{
    if (!d->r) return;
    set_color(d, color, 255);
    SDL_SetRenderDrawBlendMode(d->r, SDL_BLENDMODE_NONE);
    for (int y = -rad; y <= rad; y++) {
        int x = 0;
        while ((x + 1) * (x + 1) + y * y <= rad * rad) x++;
        SDL_RenderDrawLine(d->r, cx - x, cy + y, cx + x, cy + y);
    }
}

void gui_panel(gui_draw *d, gui_rect r, const char *title)
{
    gui_fill(d, r, d->th->panel);
    gui_frame(d, r, d->th->border, d->thin);
    if (title) gui_text(d, d->L.font_small, r.x + d->L.pad, r.y + d->L.pad / 3, d->th->dim, GUI_AL_LEFT, title);
}

void gui_tooltip(gui_draw *d, const gui_state *s, const char *text)
{
    int fs = d->L.font_small, w = gui_text_w(d, fs, text) + d->L.pad, h = gui_line_h(d, fs) + d->L.pad / 2;
    int x = s->mouse_x + d->L.pad, y = s->mouse_y + 2 * d->L.pad;
    if (x + w > s->w) x = s->w - w;
    if (y + h > s->h) y = s->mouse_y - h - d->L.pad;
    gui_fill(d, (gui_rect){x, y, w, h}, d->th->panel);
    gui_frame(d, (gui_rect){x, y, w, h}, d->th->current, d->thin);
    gui_text(d, fs, x + d->L.pad / 2, y + d->L.pad / 4, d->th->text, GUI_AL_LEFT, text);
}

void gui_tile_lines(gui_draw *d, const gui_grid *g, int n_q, int n_kv, int Bq, int Bk)
{
    int cell = g->cell, gw = n_kv * cell, gh = n_q * cell, tb = d->thin + 1;
    int nqt = (n_q + Bq - 1) / Bq, nkt = (n_kv + Bk - 1) / Bk;
    for (int q = 0; q <= nqt; q++) {
        int y = g->y0 + (q * Bq > n_q ? n_q : q * Bq) * cell;
        gui_fill(d, (gui_rect){g->x0 - tb / 2, y - tb / 2, gw + tb, tb}, d->th->border);
    }
    for (int kk = 0; kk <= nkt; kk++) {
        int x = g->x0 + (kk * Bk > n_kv ? n_kv : kk * Bk) * cell;
        gui_fill(d, (gui_rect){x - tb / 2, g->y0 - tb / 2, tb, gh + tb}, d->th->border);
    }
}

void gui_mark_dropped(gui_draw *d, const gui_grid *g, const fs_trace *t, const fs_event *pair, int n_q, int n_kv)
{
    if (!pair || (pair->kind != FS_EV_TILE && pair->kind != FS_EV_BTILE)) return;
    const double *v = fs_trace_at(t, pair->drop);
    int cell = g->cell, th = d->thin + 1;
    for (int32_t k = 0; v && k < pair->n_drop; k++) {
        int i = (int)v[2 * k], j = (int)v[2 * k + 1];
        if (i < 0 || i >= n_q || j < 0 || j >= n_kv) continue;
        gui_rect r = {g->x0 + j * cell, g->y0 + i * cell, cell, cell};
        if (cell < 8) {   /* too small for a mark: the cell takes the colour */
            gui_fill(d, r, d->th->warn);
            continue;
        }
        int m = cell >= 16 ? 3 : 2;
        gui_frame(d, (gui_rect){r.x + m, r.y + m, r.w - 2 * m, r.h - 2 * m}, d->th->warn, th);
        gui_line(d, r.x + m, r.y + r.h - m, r.x + r.w - m, r.y + m, d->th->warn, th);   /* struck out: "/" */
    }
}

void gui_clip(gui_draw *d, const gui_rect *r)
{
    if (!r) {
        if (d->r) SDL_RenderSetClipRect(d->r, NULL);
        d->clip_x1 = 0;
        d->clip = (gui_rect){0, 0, 0, 0};
        return;
    }
    d->clip = *r;
    SDL_Rect c = {r->x, r->y, r->w, r->h};
    if (d->r) SDL_RenderSetClipRect(d->r, &c);
    d->clip_x1 = r->x + r->w - d->L.pad / 2;
}

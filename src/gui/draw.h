/* draw.h: the window's painting layer (internal to src/gui; the only header that includes SDL).
 *
 * A gui_draw holds the SDL renderer, the theme and the fonts. Text is drawn from a cache of glyph
 * textures per font size (a monospace face, so a string is a row of equal advances), which keeps
 * a frame full of numbers cheap. Scenes (scene_*.c) paint with these primitives and only read
 * the state and the show.
 */
#ifndef FS_GUI_DRAW_H
#define FS_GUI_DRAW_H

#include <SDL.h>
#include <SDL_ttf.h>

#include "gui/gui.h"

#define GUI_FONT_SLOTS 10
#define GUI_GLYPHS_EXTRA 96

typedef struct {
    TTF_Font *ttf;
    TTF_Font *fallback;  /* for code points the monospace face lacks (DejaVu Sans Mono has no ℓ) */
    int size;            /* pixel size asked for; 0: slot free */
    int adv, height, ascent;
    int last_used;       /* frame number, for eviction */
    SDL_Texture *ascii[128];
    SDL_Texture *atlas;  /* printable ASCII in one texture (16 × 6 cells), so text batches */
    int atlas_w, atlas_h;/* one cell of it */
    bool atlas_tried;
    uint32_t extra_cp[GUI_GLYPHS_EXTRA];
    SDL_Texture *extra[GUI_GLYPHS_EXTRA];
    int extra_dx[GUI_GLYPHS_EXTRA], extra_dy[GUI_GLYPHS_EXTRA];   /* offsets of fallback glyphs */
    int n_extra;
} gui_font;

typedef struct {
    SDL_Renderer *r;
    const gui_theme *th;
    gui_layout L;
    char font_path[1024];
    char fallback_path[1024];   /* "" when none */
    gui_font fonts[GUI_FONT_SLOTS];
    int frame;
    int thin;            /* line width in pixels at this size */
    int clip_x1;         /* > 0: text stops at this x, ending in "…" (panels set it) */
    gui_rect clip;       /* the clip rectangle gui_clip set (w = 0: none) */
    /* The fit check (gui_fit_check): with no renderer (r == NULL) nothing is painted; text is
     * only laid out, and every text holding a digit that is cut short ("…", shrunk away, wrapped
     * past its room or outside its clip) below the header is counted, the first one kept. */
    int cuts;
    char cut_text[200];
    /* Metrics per pixel size (0: not known yet), so that laying out text at many sizes does not
     * reopen fonts (an optimization only: the same numbers as the opened font's). */
    short m_adv[401], m_height[401], m_ascent[401];
    int breaks;
    /* What the last frame drew: the smallest text size (pixels; 0 before any text) outside the
     * grids' cells and inside them (numbers shrunk to fit a cell: gui_text_fit), and the scene's
     * text size as a step of scene.c's fitting (0: the layout's own size, each step 5 % smaller).
     * The page reports them, and its layout tests hold them to a minimum. */
    int min_text, min_cell_text, fit_level;
    /* The tiled scenes' scans of the trace up to the current step, kept between frames so that
     * stepping forward reads only the new events (an optimization only; scene_tiled.c). */
    void *scan[2];          /* side-panel lines broken over two (counted always; scene.c's fitting) */
} gui_draw;

typedef enum { GUI_AL_LEFT = 0, GUI_AL_CENTER, GUI_AL_RIGHT } gui_align;

/* Find a monospace font with fontconfig (DejaVu Sans Mono preferred). 0 and path filled, or −1.
 * fallback (may be NULL): a face with the Greek and math letters the monospace one may lack. */
int gui_font_find(char *path, size_t n, char *fallback, size_t fn);
/* Open fonts from path (check that it loads); −1 with a message on err when it does not. */
int gui_draw_init(gui_draw *d, SDL_Renderer *r, const char *font_path, FILE *err);
void gui_draw_free(gui_draw *d);
/* The page's portrait canvas: the smallest height from s->h up to h_max (in steps of 8 pixels) at
 * which the show's steps (up to 24 of them, spread over the trace, and the one with the longest
 * narration) lay out at width s->w with every number whole and the scene's text at the layout's
 * own size (fit level 0); h_max when none does; s->h for a window that is not upright. The scale
 * is s->scale_pct, or with body_px > 0, at each height tried, the larger of s->scale_pct and the
 * scale that makes the body text body_px pixels there (gui_layout_scale_for: the page's rule). A layout check (nothing is painted); d's renderer is kept
 * for the next frame, and so is what the last frame drew (min_text, min_cell_text, fit_level). */
int gui_fit_height(gui_draw *d, const gui_state *s, const gui_show *show, int h_max, int body_px);

/* Start a frame: theme and layout for this size. */
void gui_draw_begin(gui_draw *d, const gui_state *s, const gui_show *show);

gui_font *gui_font_get(gui_draw *d, int size);
int gui_text_w(gui_draw *d, int size, const char *utf8);   /* width in pixels */
int gui_utf8_len(const char *utf8);                         /* code points (monospace cells) */
int gui_char_w(gui_draw *d, int size);                      /* one advance */
int gui_line_h(gui_draw *d, int size);
/* Draw utf8 with its top at y; x is the left, centre or right edge per align. Returns width. */
int gui_text(gui_draw *d, int size, int x, int y, uint32_t color, gui_align al, const char *utf8);
int gui_textf(gui_draw *d, int size, int x, int y, uint32_t color, gui_align al, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
/* gui_text for a number inside a grid's cell (or a row's statistic beside it): counted as cell
 * text (min_cell_text), which may shrink with the cell, not as the frame's text (min_text). */
int gui_text_cell(gui_draw *d, int size, int x, int y, uint32_t color, gui_align al, const char *utf8);
/* Text centred in a rect, shrunk to fit its width (down to half size), or not drawn. */
void gui_text_fit(gui_draw *d, int size, gui_rect r, uint32_t color, const char *utf8);
/* Word-wrapped text in r (lines break between words, so a number is never split); when it does
 * not all fit, the last line ends in " …" after a whole word. Returns the height used. */
int gui_text_wrap(gui_draw *d, int size, gui_rect r, uint32_t color, const char *utf8);
/* How many lines gui_text_wrap needs for all of utf8 in a width of w pixels. */
int gui_wrap_lines(gui_draw *d, int size, int w, const char *utf8);

void gui_fill(gui_draw *d, gui_rect r, uint32_t color);
void gui_fill_a(gui_draw *d, gui_rect r, uint32_t color, int alpha);
void gui_frame(gui_draw *d, gui_rect r, uint32_t color, int thick);
void gui_line(gui_draw *d, int x0, int y0, int x1, int y1, uint32_t color, int thick);
/* Diagonal hatching inside r: dir 1 "/", 2 "\", 3 both (cross-hatch), spacing in pixels. */
void gui_hatch(gui_draw *d, gui_rect r, uint32_t color, int spacing, int dir);
void gui_disc(gui_draw *d, int cx, int cy, int radius, uint32_t color);
void gui_panel(gui_draw *d, gui_rect r, const char *title);   /* a panel box with a title */
/* A box holding text beside the mouse, moved to stay inside the window. */
void gui_tooltip(gui_draw *d, const gui_state *s, const char *text);
/* The tile boundaries over grid g of n_q × n_kv cells, tiles of Bq × Bk cells (the last row and
 * column of tiles cut short). */
void gui_tile_lines(gui_draw *d, const gui_grid *g, int n_q, int n_kv, int Bq, int Bk);
/* Dropout: mark the cells that the pair event `pair` (a TILE or BTILE of trace t) lists as
 * dropped, over grid g of n_q × n_kv cells: a frame and a "/" strike in the theme's warn colour
 * (the cell filled with it when too small for a mark). Nothing for other events. */
void gui_mark_dropped(gui_draw *d, const gui_grid *g, const fs_trace *t, const fs_event *pair, int n_q, int n_kv);
/* Confine all drawing (and text, which ends in "…" at the right edge) to r; NULL lifts it. */
void gui_clip(gui_draw *d, const gui_rect *r);

/* Free the tiled scenes' kept scans (scene_tiled.c; gui_draw_free calls it). */
void gui_scene_tiled_free(gui_draw *d);

/* Scenes (scene_*.c): paint the main area and the side panel. */
void gui_scene_draw(gui_draw *d, const gui_state *s, const gui_show *show);
/* FlashDecoding's merge diagram and side-panel lines (scene.c), which the paged decode scene
 * (scene_paged.c) draws too: the diagram of query row (head, row) over the events in steps
 * [k0, k1), between y = top and bottom; the side lines of a partial, merge or output event. */
void gui_decode_diagram(gui_draw *d, const gui_state *s, const fs_trace *t, int head, int row, int64_t k0, int64_t k1,
                        int top, int bottom);
void gui_decode_side(gui_draw *d, const fs_trace *t, const fs_event *now, int x, int *yp, int fs);
/* The whole frame: header, scene, narration, timeline, overlays (frame.c). */
void gui_frame_draw(gui_draw *d, const gui_state *s, const gui_show *show, const char *const *catalog, int n_catalog);

#endif

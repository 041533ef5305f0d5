/* web.c: the web page's program, built by `make web` with Emscripten (never by the native build).
 * The page runs the window's own code: the same app (src/gui/app.h) with the same scenes, state and
 * layout, drawn by SDL2's software renderer into the page's canvas, one app_frame per browser
 * animation frame while anything changes, four a second once nothing has for half a second
 * (web_frame; page.js wakes it on any input and call). What a browser adds is here: the page
 * (src/web/page.js) calls these exported functions to open a lesson at a step (deep links, Back and
 * Forward), to read the state it shows in the address bar, to load one's own problem or a saved
 * trace from files it wrote into the program's file system, to save the trace as JSONL, and to run
 * the commands `verify`, `lessons` and `trace` with their output captured (page.js collects what
 * they print), and to trace what is shown on the GPU: the job a WGSL kernel runs (web_gpu_job) and
 * the comparison of what it wrote with the engine (web_gpu_compare; src/kernels/webgpu/webgpu.h),
 * and to say what is shown in words for a reader who cannot see the canvas (web_describe: the
 * step's words, its formulas with their numbers, each row's m and ℓ, the tile as a table).
 * Messages are the command line's own, on stderr, which the page shows.
 *
 * The page holds the one web_page pointer that web_start returns and passes it back; this file
 * keeps no global state. Files: /flashstep/{lessons,assets,fonts} are packed into the page's
 * data file; one's own inputs are written by the page under /input, the working directory, so
 * messages name them as the user did ("q.txt:3:7: ...").
 */
#include <emscripten.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/problem.h"
#include "gui/app.h"
#include "kernels/webgpu/webgpu.h"
#include "lesson/lesson.h"

/* The page's bounds on one's own problem's trace, below the command line's (CLI_MAX_TRACE_*):
 * the largest problem they let through is computed and drawn at once, so a mistaken paste never
 * freezes the tab. */
#define WEB_MAX_TRACE_EVENTS ((int64_t)1 << 20)
#define WEB_MAX_TRACE_POOL   ((int64_t)1 << 24)

/* cmd_play.c's helper that checks one's own problem and points the options at it. */
int cli_gui_problem(cli_problem *p, const char *scale_arg, const char *lesson, gui_options *o, char (*title)[160]);

typedef struct {
    app A;
    gui_options o;
    double last;             /* time of the last frame, ms */
    double frame_ms;         /* how long the last painted frame took (update and draw), ms */
    int quiet;               /* frames in a row that painted nothing while nothing played */
    bool slow;               /* the main loop ticks WEB_SLOW_MS apart (web_frame, web_wake) */
    long long ticks;         /* the main loop's runs so far (web_state's "loop", for the tests) */
    bool demo;               /* a built-in demo is shown (its name links like a lesson's) */
    int auto_zoom;           /* the text scale the page chose for the canvas size; 0 once the
                              * user has chosen one with + or - */
    int css_w, css_h;        /* the canvas size it was chosen for, CSS pixels */
    char json[8192];         /* web_state's answer */
    char title[2][160];      /* one's own problem's header lines */
    char *list;              /* web_lessons' answer */
    char next_json[768];     /* web_course_next's answer */
    char ending_json[2560];  /* web_ending's answer */
    fs_gpu_job job;          /* the GPU's traced run of what is shown (web_gpu_job) */
    fs_trace gpu;            /* its events, from the kernel's records (web_gpu_compare) */
    char *gpu_json;          /* web_gpu_job's and web_gpu_compare's answers */
    /* The description beside the canvas (web_describe): the lesson shown, loaded once more for
     * its words (fs_lesson_say) and formulas (fs_lesson_describe); NULL for anything else. */
    fs_lesson *said;
    char said_name[64];      /* its catalogue name, "" when none is loaded */
    char *desc;              /* web_describe's answer */
    size_t desc_cap;
    /* A section's quiz in the page's own panel (web_quiz, web_quiz_judge; page.js keeps the
     * scores in the browser's storage): the quiz made last, NULL before the first. */
    fs_quiz *quiz;
    char *quiz_json;         /* web_quiz's and web_quiz_judge's answers */
} web_page;

EMSCRIPTEN_KEEPALIVE int web_open(web_page *W, const char *name, double k);

/* A download for the browser: the page picks the file up from the file system. */
static void offer(void *ctx, const char *path)
{
    (void)ctx;
    EM_ASM({ if (Module.offerFile) Module.offerFile(UTF8ToString($0)); }, path);
}

/* The text scale for a canvas of w x h CSS pixels: 100 % down to 1280 x 720 / 1.45, then larger,
 * so that the body text stays about 11 CSS pixels high (a phone in landscape, 800 x 400, whose
 * canvas is 800 x 364 below the page's bar, gets 136 %); at most 160 %. Upright (a phone or a
 * tablet held so), the body text is the page's own, 14 CSS pixels, at any canvas height: the
 * page makes a portrait canvas as tall as its lesson needs and scrolls it (web_fit_height), and
 * the text must not change size as it does. The window's layout scales text with the window,
 * which makes a small page's text too small to read on a phone. */
#define WEB_BODY_PX 14
static int zoom_for(int w, int h)
{
    gui_layout L = gui_layout_compute(w, h, 100);
    if (L.portrait) {
        int z = gui_layout_scale_for(w, h, WEB_BODY_PX);
        return z < 100 ? 100 : z;
    }
    double rel = fmin(w / 1280.0, h / 720.0);
    int z = rel > 0 ? (int)lround(11.0 / (16.0 * rel) * 100.0) : 100;
    return z < 100 ? 100 : z > 160 ? 160 : z;
}

/* Follow the canvas's size with the automatic text scale, until the user picks one. */
static void follow_size(web_page *W)
{
    int w, h;
    SDL_GetWindowSize(W->A.win, &w, &h);
    if (W->auto_zoom && W->A.st.scale_pct != W->auto_zoom) W->auto_zoom = 0;   /* + or - was pressed */
    if (!W->auto_zoom || (w == W->css_w && h == W->css_h)) return;
    W->css_w = w;
    W->css_h = h;
    W->auto_zoom = W->A.st.scale_pct = zoom_for(w, h);
}

/* An idle page: a frame at every animation frame of the browser (60 or more a second) would run
 * the program for nothing, a tenth of a CPU core in headless Chromium, where a page that waits
 * for input should cost nothing (a student's laptop on battery, a teacher's tab left open). So
 * after WEB_QUIET_FRAMES frames that painted nothing, with nothing playing and no message counting
 * down, the loop ticks every WEB_SLOW_MS instead; web_wake (page.js calls it on every input event
 * and before every call into this file) puts it back on the animation frames at once. A wake
 * missed costs at most WEB_SLOW_MS of delay, never a frozen page: the slow ticks still poll. */
#define WEB_QUIET_FRAMES 30
#define WEB_SLOW_MS 250

static void web_frame(void *ctx)
{
    web_page *W = ctx;
    W->ticks++;
    follow_size(W);
    double now = emscripten_get_now();
    int dt = W->last > 0 ? (int)lround(fmin(now - W->last, 250.0)) : 16;
    W->last = now;
    if (W->A.st.lesson_changed) W->demo = false;   /* the L menu opens a lesson */
    bool painted = app_frame(&W->A, dt);
    if (painted) {
        W->frame_ms = emscripten_get_now() - now;
        EM_ASM({ if (Module.onFrame) Module.onFrame(); });
    }
    bool idle = !painted && !W->A.st.playing && W->A.st.status_ttl == 0 && !W->A.script.n;
    W->quiet = idle ? (W->quiet < WEB_QUIET_FRAMES ? W->quiet + 1 : W->quiet) : 0;
    if (W->slow != (W->quiet == WEB_QUIET_FRAMES)) {   /* idle long enough, or busy again */
        W->slow = !W->slow;
        if (W->slow) emscripten_set_main_loop_timing(EM_TIMING_SETTIMEOUT, WEB_SLOW_MS);
        else emscripten_set_main_loop_timing(EM_TIMING_RAF, 1);
    }
}

/* Back to a frame at every animation frame of the browser, from the next one (not after the slow
 * tick pending: the loop is restarted). */
EMSCRIPTEN_KEEPALIVE void web_wake(web_page *W)
{
    W->quiet = 0;
    if (!W->slow) return;
    W->slow = false;
    emscripten_set_main_loop_timing(EM_TIMING_RAF, 1);
    emscripten_pause_main_loop();
    emscripten_resume_main_loop();
}

/* A section's quiz asked for in the canvas (its entry of the L list, Enter at a section's
 * end): the page opens it in its own panel, where the score is kept in the browser. */
static void quiz_open(void *ctx, int section)
{
    (void)ctx;
    EM_ASM({ if (Module.openQuiz) Module.openQuiz($0); }, section);
}

/* The page's canvas is the window. name: a lesson (stem or unique prefix) or NULL for the first;
 * step: where to open; w × h: the canvas size in CSS pixels; theme: 0 dark, 1 light, 2 contrast;
 * questions: 1 to ask the lessons' questions (the default of the page), 0 not (?questions=off).
 * Returns the page, or NULL after a message on stderr. */
EMSCRIPTEN_KEEPALIVE web_page *web_start(const char *name, double step, int w, int h, int theme, int questions)
{
    web_page *W = calloc(1, sizeof *W);
    if (!W) return NULL;
    gui_options_default(&W->o);
    W->o.w = w >= 320 ? w : 320;
    W->o.h = h >= 200 ? h : 200;
    W->o.theme = theme >= 0 && theme < GUI_THEME_COUNT ? (gui_theme_id)theme : GUI_THEME_DARK;
    W->o.no_questions = !questions;
    app *A = &W->A;
    A->opt = &W->o;
    A->match_line = -1;
    A->lazy = true;
    A->saved = offer;
    A->quiz_open = quiz_open;
    SDL_SetHint(SDL_HINT_EMSCRIPTEN_KEYBOARD_ELEMENT, "#canvas");
    SDL_SetHint(SDL_HINT_RENDER_DRIVER, "software");
    if (SDL_Init(SDL_INIT_VIDEO) != 0 || TTF_Init() != 0) {
        fprintf(stderr, "flashstep: SDL: %s\n", SDL_GetError());
        free(W);
        return NULL;
    }
    A->ttf = true;
    if (app_load(A, NULL) != 0) { app_shutdown(A); free(W); return NULL; }
    /* Not SDL_WINDOW_ALLOW_HIGHDPI: SDL's software renderer on Emscripten would paint a CSS-sized
     * frame into the corner of a canvas of device pixels. The canvas keeps CSS pixels, which
     * the browser scales to the screen. */
    A->win = SDL_CreateWindow("flashstep", 0, 0, W->o.w, W->o.h, SDL_WINDOW_RESIZABLE);
    A->ren = A->win ? SDL_CreateRenderer(A->win, -1, SDL_RENDERER_SOFTWARE) : NULL;
    if (!A->ren || gui_draw_init(&A->draw, A->ren, W->o.font_path, stderr)) {
        fprintf(stderr, "flashstep: cannot draw into the page: %s\n", SDL_GetError());
        app_shutdown(A);
        free(W);
        return NULL;
    }
    SDL_GetRendererOutputSize(A->ren, &A->st.w, &A->st.h);
    app_apply_options(A);
    W->auto_zoom = A->st.scale_pct;
    follow_size(W);
    /* a deep link; one to a lesson that does not exist says so and shows the first */
    if (name && *name) web_open(W, name, step);
    emscripten_set_main_loop_arg(web_frame, W, 0, 0);
    return W;
}

/* Point a lesson's (or any show's) state at step k, clamped; a negative k keeps the step, and so
 * does the step already shown (a question about step 0, asked as the lesson opens, stays). */
static void seek(web_page *W, double k)
{
    gui_state *s = &W->A.st;
    if (k >= 0 && s->n > 0 && (int64_t)fmin(k, (double)(s->n - 1)) != s->step) {
        gui_cmd c = {GUI_CMD_SEEK, (int)fmin(k, (double)(s->n - 1)), 0};
        s->playing = false;
        gui_update(s, &W->A.show, &c);
    }
    W->A.have_drawn = false;
}

/* Show what is in *show (a demo, one's own problem, a saved trace: none of the catalogue) at step
 * 0, in place of what was shown; the page owns it from now on. */
static void replace_show(web_page *W, gui_show *show)
{
    gui_scene_tiled_free(&W->A.draw);   /* the kept scans belong to the old show */
    gui_show_free(&W->A.show);
    W->A.show = *show;
    gui_state_attach(&W->A.st, &W->A.show);
    W->A.st.lesson = -1;
    W->A.st.section_end = -1;
    W->A.st.menu = W->A.st.help = false;
    W->A.have_drawn = false;
}

/* Open catalogue entry `name` (a stem or unique prefix), or else the built-in demo of that
 * name (grid64, ...), at step k. 0, or 2 with a message. */
EMSCRIPTEN_KEEPALIVE int web_open(web_page *W, const char *name, double k)
{
    int i = gui_catalog_find(&W->A.cat, name);
    if (i < 0) {
        for (int d = 0; d < gui_demo_count(); d++) {
            if (strcmp(name, gui_demo_name(d))) continue;
            if (!W->demo || strcmp(W->A.show.name, name)) {
                gui_show show;
                if (gui_demo_load(name, &show, stderr)) return 2;
                replace_show(W, &show);
                W->demo = true;
            }
            seek(W, k);
            return 0;
        }
        int matches = 0;   /* a prefix of several: say so, as the command line does */
        for (int c = 0; c < W->A.cat.n; c++) matches += !strncmp(W->A.cat.names[c], name, strlen(name));
        if (matches > 1) fprintf(stderr, "flashstep: '%s' matches %d lessons; give more of the name\n", name, matches);
        else fprintf(stderr, "flashstep: no lesson matches '%s'\n", name);
        return 2;
    }
    W->demo = false;
    if (i != W->A.st.lesson || W->A.show.name[0] == 0 || strcmp(W->A.show.name, W->A.cat.names[i]) ||
        W->A.show.variation[0]) {   /* a lesson opened by name is the lesson as written */
        W->A.st.menu = W->A.st.help = false;
        if (app_load_entry(&W->A, i)) return 2;
        W->A.st.lesson = i;
    }
    seek(W, k);
    return 0;
}

EMSCRIPTEN_KEEPALIVE void web_seek(web_page *W, double k) { seek(W, k); }

/* A key as the window takes it (the page's buttons and swipes): its name as scripts write it
 * ("Right", "Space", "T"; gui_key_str), and shift. Quit and full screen are the browser's. */
EMSCRIPTEN_KEEPALIVE void web_key(web_page *W, const char *name, int shift)
{
    gui_key key = gui_key_parse(name);
    if (key == GUI_KEY_NONE) return;
    gui_cmd c = gui_key_cmd(&W->A.st, key, shift != 0);
    if (c.kind != GUI_CMD_NONE && c.kind != GUI_CMD_QUIT && c.kind != GUI_CMD_FULLSCREEN) gui_update(&W->A.st, &W->A.show, &c);
}

/* Append s to b as a JSON string body (control characters, quotes and backslashes escaped). */
static void json_str(char *b, size_t n, const char *s)
{
    size_t k = strlen(b);
    for (; *s && k + 8 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { b[k++] = '\\'; b[k++] = (char)c; }
        else if (c < 0x20) k += (size_t)snprintf(b + k, n - k, "\\u%04x", c);
        else b[k++] = (char)c;
    }
    b[k] = 0;
}

/* The height the page gives its canvas when it is upright (portrait): the smallest from view_h
 * (what the screen shows below the page's bars, CSS pixels) up to 3 × the width at which the
 * lesson's numbers show whole at full size (gui_fit_height); the page scrolls the rest. view_h
 * itself for a canvas on its side. */
EMSCRIPTEN_KEEPALIVE int web_fit_height(web_page *W, int view_h)
{
    gui_state s = W->A.st;
    if (view_h < 200) view_h = 200;
    s.h = view_h;
    if (s.ending_room < GUI_PAGE_END_ROOM) s.ending_room = GUI_PAGE_END_ROOM;   /* the last step's buttons */
    /* The page's own text scale follows each height tried as zoom_for does (at least 100 %, the
     * body text 14 pixels); one the user chose with + or - stays. */
    if (W->auto_zoom) s.scale_pct = 100;
    return gui_fit_height(&W->A.draw, &s, &W->A.show, 3 * s.w > view_h ? 3 * s.w : view_h, W->auto_zoom ? WEB_BODY_PX : 0);
}

/* The questions' part of web_state, appended to b (n bytes): the score so far ("right" of
 * "asked"), whether step 0 is covered by its question ("covers"; "claims_asked": the claims are,
 * by a question about one of them), the question asked or answered as the
 * canvas shows it ("question": [prompt, choices, answer line, feedback], [] when none), and the
 * course's section the lesson ends ("section_end", -1: none; its last step offers the quiz) with
 * its title ("section_title"). */
static void web_state_questions(web_page *W, char *b, size_t n)
{
    const gui_state *s = &W->A.st;
    char (*l)[GUI_PREDICT_LEN] = malloc(4 * GUI_PREDICT_LEN);
    size_t k = strlen(b);
    snprintf(b + k, n - k, ",\"right\":%d,\"asked\":%d,\"covers\":%s,\"claims_asked\":%s,\"section_end\":%d,\"question\":[",
             s->predict.n_right, s->predict.n_asked, gui_predict_covers(s) ? "true" : "false",
             gui_predict_covers(s) && s->predict.at == GUI_AT_CLAIMS ? "true" : "false", s->section_end);
    if (l && gui_predict_text(s, &W->A.show, l))
        for (int i = 0; i < 4; i++) {
            k = strlen(b);
            snprintf(b + k, n - k, "%s\"", i ? "," : "");
            json_str(b, n, l[i]);
            k = strlen(b);
            snprintf(b + k, n - k, "\"");
        }
    free(l);
    k = strlen(b);
    snprintf(b + k, n - k, "],\"section_title\":\"");
    if (s->section_end >= 0 && W->A.have_course && s->section_end < W->A.course.n_sections)
        json_str(b, n, W->A.course.sections[s->section_end]);
    k = strlen(b);
    snprintf(b + k, n - k, "\"");
}

/* What the page shows, as one JSON object (valid until the next call): the lesson's name and
 * index (-1: a demo, one's own problem or a saved trace), whether the name makes a link, the
 * step and the number of steps, play, theme, scene, what the mouse hovers (kind, row, key),
 * predict mode's phase, the scene's grid (x0, y0, cell, rows, cols in canvas pixels), the last
 * frame's time, the text scale in percent, the header lines (title, source, and the source with
 * the document's title: words); the layout (upright or not, the
 * small, body and big text sizes, the boxes of header, scene, side panel, narration, timeline,
 * predict prompt, the lesson's ending and the section's quiz line as [x, y, w, h]) and the last
 * frame's smallest text (outside the grids' cells, inside them) and fitting step; the main loop
 * (loop: 1 while it runs slowly, idle, and how many times it has run). */
EMSCRIPTEN_KEEPALIVE const char *web_state(web_page *W)
{
    const gui_state *s = &W->A.st;
    const gui_show *sh = &W->A.show;
    gui_layout L = gui_layout_for(s, sh);
    gui_grid g = gui_scene_grid(sh, &L);   /* where the scene's cells are, for taps in tests */
    char *b = W->json;
    size_t n = sizeof W->json;
    snprintf(b, n, "{\"name\":\"");
    json_str(b, n, sh->name);
    size_t k = strlen(b);
    snprintf(b + k, n - k,
             "\",\"lesson\":%d,\"step\":%lld,\"n\":%lld,\"playing\":%s,\"speed\":%d,\"theme\":%d,\"scene\":\"%s\","
             "\"hover\":[%d,%d,%d],\"predict\":%d,\"menu\":%s,\"help\":%s,\"intro\":%s,\"w\":%d,\"h\":%d,\"claims\":%d,"
             "\"link\":%s,\"grid\":[%d,%d,%d,%d,%d],\"frame_ms\":%.3f,\"zoom\":%d,\"title\":\"",
             s->lesson, (long long)s->step, (long long)s->n, s->playing ? "true" : "false", s->speed, (int)s->theme,
             gui_scene_str(sh->scene), (int)s->hover, s->hover_i, s->hover_j, (int)s->predict.phase,
             s->menu ? "true" : "false", s->help ? "true" : "false", s->intro ? "true" : "false", s->w, s->h, sh->n_claims,
             s->lesson >= 0 || W->demo ? "true" : "false", g.x0, g.y0, g.cell, g.rows, g.cols, W->frame_ms, s->scale_pct);
    json_str(b, n, sh->title);
    k = strlen(b);
    snprintf(b + k, n - k, "\",\"source\":\"");
    json_str(b, n, sh->source);
    char words[sizeof sh->source + 64];
    fs_source_words(sh->source, words, sizeof words);
    k = strlen(b);
    snprintf(b + k, n - k, "\",\"words\":\"");
    json_str(b, n, words);
    k = strlen(b);
    /* The layout's boxes and text sizes, and what the last frame drew (its smallest text, the
     * scene's fitting step): the page's layout tests hold them to their rules. */
    const gui_rect *R[] = {&L.header, &L.main, &L.side, &L.narration, &L.timeline, &L.prompt, &L.ending, &L.section};
    k += (size_t)snprintf(b + k, n - k, "\",\"portrait\":%s,\"font\":[%d,%d,%d],\"min_text\":[%d,%d],\"fit_level\":%d,\"boxes\":[",
                          L.portrait ? "true" : "false", L.font_small, L.font, L.font_big, W->A.draw.min_text,
                          W->A.draw.min_cell_text, W->A.draw.fit_level);
    for (int i = 0; i < 8 && k < n; i++)
        k += (size_t)snprintf(b + k, n - k, "%s[%d,%d,%d,%d]", i ? "," : "", R[i]->x, R[i]->y, R[i]->w, R[i]->h);
    if (k < n) snprintf(b + k, n - k, "],\"loop\":[%d,%lld]", W->slow ? 1 : 0, W->ticks);
    web_state_questions(W, b, n);
    k = strlen(b);
    if (k < n) snprintf(b + k, n - k, "}");
    return b;
}

/* The directory the catalogue's lessons (and the course, course.txt) are in; false, and dir "",
 * when there is no catalogue. */
static bool lessons_dir(const web_page *W, char *dir, size_t n)
{
    dir[0] = 0;
    if (!W->A.cat.paths || W->A.cat.n < 1) return false;
    snprintf(dir, n, "%s", W->A.cat.paths[0]);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, n, ".");
    return true;
}

/* The lessons as a JSON array of {name, title, source (the file name and section), words (the
 * same with the document's title), doc (the document's title, "" for none), course (the place in
 * the course, −1 for none), section (the course's section)}, in catalogue order (valid until the
 * next call). Loading every lesson runs the engine once each: the page asks when the lesson list
 * or the course is first opened. */
EMSCRIPTEN_KEEPALIVE const char *web_lessons(web_page *W)
{
    size_t cap = 512 + (size_t)W->A.cat.n * 1400, k = 0;
    char *b = realloc(W->list, cap);
    if (!b) return "[]";
    W->list = b;
    b[k++] = '[';
    b[k] = 0;
    /* The course beside the lessons (course.txt in their directory); none: every "course" -1. */
    fs_course course = {0};
    char dir[1024];
    fs_loc_error ce;
    bool have_course = lessons_dir(W, dir, sizeof dir) && fs_course_load(dir, &course, &ce);
    if (!have_course && dir[0]) fprintf(stderr, "%s:%d:%d: %s\n", ce.file, ce.line, ce.col, ce.msg);
    for (int i = 0; i < W->A.cat.n; i++) {
        const char *title = W->A.cat.names[i], *source = "";
        fs_lesson *l = NULL;
        fs_loc_error e;
        memset(&e, 0, sizeof e);
        if (W->A.cat.paths && fs_lesson_load(W->A.cat.paths[i], &l, &e)) {
            title = fs_lesson_title(l);
            source = fs_lesson_source(l);
        }
        const char *doc = fs_document_title(source);
        int at = have_course ? fs_course_find(&course, W->A.cat.names[i]) : -1;
        char words_raw[400], name[160], t[400], src[400], words[440], d[160], sec[200];
        fs_source_words(source, words_raw, sizeof words_raw);
        name[0] = t[0] = src[0] = words[0] = d[0] = sec[0] = 0;
        json_str(name, sizeof name, W->A.cat.names[i]);
        json_str(t, sizeof t, title);
        json_str(src, sizeof src, source);
        json_str(words, sizeof words, words_raw);
        json_str(d, sizeof d, doc ? doc : "");
        json_str(sec, sizeof sec, at >= 0 ? course.sections[course.section_of[at]] : "");
        k += (size_t)snprintf(b + k, cap - k,
                              "%s{\"name\":\"%s\",\"title\":\"%s\",\"source\":\"%s\",\"words\":\"%s\",\"doc\":\"%s\","
                              "\"course\":%d,\"section\":\"%s\"}",
                              i ? "," : "", name, t, src, words, d, at, sec);
        if (l) fs_lesson_free(l);
        if (k + 2 >= cap) break;
    }
    if (have_course) fs_course_free(&course);
    snprintf(b + k, cap - k, "]");
    return b;
}

/* The lesson after `name` in the course, as {"name", "title", "place" (1-based), "of"}, or {} when
 * name is not in the course or is its last lesson. Loads that one lesson only (for its title), so
 * the page can offer it at a lesson's last step without loading every lesson (web_lessons). */
EMSCRIPTEN_KEEPALIVE const char *web_course_next(web_page *W, const char *name)
{
    snprintf(W->next_json, sizeof W->next_json, "{}");
    char dir[1024];
    fs_course c;
    fs_loc_error e;
    if (!name || !lessons_dir(W, dir, sizeof dir) || !fs_course_load(dir, &c, &e)) return W->next_json;
    int k = fs_course_find(&c, name);
    if (k >= 0 && k + 1 < c.n) {
        char path[2048], t[400] = "", nm[160] = "";
        snprintf(path, sizeof path, "%s/%s.lesson", dir, c.names[k + 1]);
        fs_lesson *l = NULL;
        json_str(nm, sizeof nm, c.names[k + 1]);
        json_str(t, sizeof t, fs_lesson_load(path, &l, &e) ? fs_lesson_title(l) : c.names[k + 1]);
        if (l) fs_lesson_free(l);
        snprintf(W->next_json, sizeof W->next_json, "{\"name\":\"%s\",\"title\":\"%s\",\"place\":%d,\"of\":%d}", nm, t, k + 2, c.n);
    }
    fs_course_free(&c);
    return W->next_json;
}

/* The shown lesson's ending, as {"summary", "keep", "next", "try_label", "try_opts", "variation",
 * "name"} (each "" when the lesson has none; gui_show's fields), valid until the next call: the
 * page's "Try this" button at the last step. The button presses V (web_key), which app_frame
 * turns into app_try. */
EMSCRIPTEN_KEEPALIVE const char *web_ending(web_page *W)
{
    const gui_show *sh = &W->A.show;
    char *b = W->ending_json;
    size_t n = sizeof W->ending_json;
    const char *keys[] = {"summary", "keep", "next", "try_label", "try_opts", "variation", "name"};
    const char *vals[] = {sh->summary, sh->keep, sh->next, sh->try_label, sh->try_opts, sh->variation, sh->name};
    snprintf(b, n, "{");
    for (int i = 0; i < 7; i++) {
        size_t k = strlen(b);
        snprintf(b + k, n - k, "%s\"%s\":\"", i ? "," : "", keys[i]);
        json_str(b, n, vals[i]);
        k = strlen(b);
        snprintf(b + k, n - k, "\"");
    }
    size_t k = strlen(b);
    snprintf(b + k, n - k, "}");
    return b;
}

/* argv from one string of arguments separated by newlines (the page joins them so). */
static int split_args(char *s, char **argv, int max)
{
    int argc = 0;
    while (s && *s && argc < max) {
        argv[argc++] = s;
        char *nl = strchr(s, '\n');
        if (!nl) break;
        *nl = 0;
        s = nl + 1;
    }
    return argc;
}

/* One's own problem: args as `flashstep play` takes them after `play` (--q q.txt --k k.txt
 * --v v.txt --mask causal ...), the files already written under /input. On success the page
 * shows it at step 0; on failure what was shown stays and the message (the command line's) is
 * on stderr. 0, or 2. */
EMSCRIPTEN_KEEPALIVE int web_problem(web_page *W, const char *args)
{
    char *copy = strdup(args ? args : "");
    char *argv[64];
    argv[0] = "play";
    int argc = 1 + split_args(copy, argv + 1, 62);
    cli_problem p;
    cli_problem_init(&p, "play");
    p.max_events = WEB_MAX_TRACE_EVENTS;
    p.max_pool = WEB_MAX_TRACE_POOL;
    gui_options o = W->o;
    const char *scale_arg = NULL;
    int rc = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scale") && i + 1 < argc) {   /* the score scale, as with play */
            scale_arg = argv[++i];
            continue;
        }
        int r = cli_problem_option(&p, argc, argv, &i);
        if (r == 2) goto out;
        if (r == 0) {
            fprintf(stderr, "flashstep: play: unknown option '%s' (or it needs a value)\n", argv[i]);
            goto out;
        }
    }
    if (!cli_problem_given(&p)) {
        fprintf(stderr, "flashstep play: no problem given (Q, K and V, or the scores)\n");
        goto out;
    }
    if (cli_gui_problem(&p, scale_arg, NULL, &o, W->title)) goto out;
    gui_show show;
    if (gui_problem_load(o.problem, o.problem_parent, o.problem_n_parent, o.problem_title, o.problem_source, &show, stderr))
        goto out;
    replace_show(W, &show);
    W->demo = false;
    rc = 0;
out:
    cli_problem_free(&p);
    free(copy);
    return rc;
}

/* A trace saved by `flashstep trace --format jsonl`, at path (written by the page). 0, or 2 with
 * the reader's message (FILE:LINE:COLUMN: ...) on stderr; what was shown stays then. */
EMSCRIPTEN_KEEPALIVE int web_trace_file(web_page *W, const char *path)
{
    gui_show show;
    if (gui_trace_load(path, &show, stderr)) return 2;
    replace_show(W, &show);
    W->demo = false;
    return 0;
}

/* The trace of what is shown, as `flashstep trace --format jsonl` prints it, into path. 0 or 2. */
EMSCRIPTEN_KEEPALIVE int web_save_trace(web_page *W, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "flashstep: cannot write %s\n", path); return 2; }
    cli_trace_jsonl(f, &W->A.show.trace);
    return fclose(f) == 0 ? 0 : 2;
}

/* An answer typed into the page's question box (its field and Check button): typed into the
 * question the canvas asks, as its keys would (what cannot be typed there is dropped), and judged
 * (Enter). Nothing happens when no question is asked. */
EMSCRIPTEN_KEEPALIVE void web_answer(web_page *W, const char *text)
{
    gui_state *s = &W->A.st;
    if (s->predict.phase != GUI_PREDICT_ASK) return;
    while (s->predict.input[0]) {
        gui_cmd bs = {GUI_CMD_BACKSPACE, 0, 0};
        gui_update(s, &W->A.show, &bs);
    }
    for (const char *p = text ? text : ""; *p && strlen(s->predict.input) + 1 < sizeof s->predict.input; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c >= 0x7f) continue;   /* a typographic minus is judged as '-' only typed in the terminal */
        gui_cmd ch = {GUI_CMD_CHAR, c, 0};
        gui_update(s, &W->A.show, &ch);
    }
    gui_cmd enter = {GUI_CMD_ENTER, 0, 0};
    gui_update(s, &W->A.show, &enter);
    W->A.have_drawn = false;
}

/* The room, in canvas pixels, the page keeps free for its own answer field: under the canvas's
 * question box when the layout is upright, a strip at the box's foot otherwise. The layout
 * leaves it empty (gui_layout_for), so the field covers none of the question's words. */
EMSCRIPTEN_KEEPALIVE void web_answer_room(web_page *W, int px)
{
    px = px < 0 ? 0 : px > W->A.st.h / 3 ? W->A.st.h / 3 : px;
    if (W->A.st.answer_room == px) return;
    W->A.st.answer_room = px;
    W->A.have_drawn = false;
}

/* The room, in canvas pixels, the page keeps free at the foot of the canvas's ending box (the
 * lesson's last step) for its "Try this" and "Next" buttons, so they cover none of its words nor
 * the narration under it. */
EMSCRIPTEN_KEEPALIVE void web_ending_room(web_page *W, int px)
{
    px = px < 0 ? 0 : px > W->A.st.h / 3 ? W->A.st.h / 3 : px;
    if (W->A.st.ending_room == px) return;
    W->A.st.ending_room = px;
    W->A.have_drawn = false;
}

/* The page's PNG of the frame (P does the same through the window's own save). */
EMSCRIPTEN_KEEPALIVE void web_save_png(web_page *W)
{
    W->A.st.save_png = true;
}

/* ---- the description beside the canvas (docs/web.md, "For every student") ---- */

/* The most of a tile web_describe lists as a table, and the most rows whose m and ℓ it lists. */
#define WEB_TILE_ROWS 16
#define WEB_TILE_KEYS 32
#define WEB_ROWS_MAX 128
#define WEB_GRID_MAX 32   /* the whole score grid as a table: up to 32 queries × 32 keys */

/* A growing JSON answer: b[0..k) written, cap bytes held; b stays NULL after running out of
 * memory (then every put is a no-op and the caller answers "{}"). */
typedef struct { char *b; size_t k, cap; } jbuf;

/* Append printf-style text to j. */
static void jput(jbuf *j, const char *fmt, ...)
{
    for (;;) {
        if (!j->b) return;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(j->b + j->k, j->cap - j->k, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if ((size_t)n < j->cap - j->k) { j->k += (size_t)n; return; }
        size_t c = j->cap * 2 + (size_t)n;
        char *b = realloc(j->b, c);
        if (!b) { free(j->b); j->b = NULL; return; }
        j->b = b;
        j->cap = c;
    }
}

/* Append s to j as a JSON string, quotes included (control characters, quotes, backslashes
 * escaped). */
static void jstr(jbuf *j, const char *s)
{
    jput(j, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') jput(j, "\\%c", c);
        else if (c < 0x20) jput(j, "\\u%04x", c);
        else jput(j, "%c", c);
    }
    jput(j, "\"");
}

/* A number as the window prints it (gui_fmt: 4 decimals, "-inf"), as a JSON string: no finite
 * or infinite value gives NaN or a bare inf in the answer. */
static void jnum(jbuf *j, double x)
{
    char t[40];
    jstr(j, gui_fmt(x, t, sizeof t));
}

/* The fs_lesson of what is shown, for its words and formulas: catalogue entry st.lesson, loaded
 * again (once per lesson) because the show keeps its own copy private. NULL for a demo, one's own
 * problem, a saved trace, or a show whose trace is no longer the lesson's (the decode scene's
 * [ and ] re-split it and drop the lesson's narration). */
static const fs_lesson *shown_lesson(web_page *W)
{
    const gui_show *sh = &W->A.show;
    int i = W->A.st.lesson;
    if (i < 0 || i >= W->A.cat.n || !W->A.cat.paths || W->demo || !sh->narrate) return NULL;
    if (!W->said || strcmp(W->said_name, W->A.cat.names[i])) {
        if (W->said) fs_lesson_free(W->said);
        W->said = NULL;
        W->said_name[0] = 0;
        fs_loc_error e;
        memset(&e, 0, sizeof e);
        if (!fs_lesson_load(W->A.cat.paths[i], &W->said, &e)) { W->said = NULL; return NULL; }
        snprintf(W->said_name, sizeof W->said_name, "%s", W->A.cat.names[i]);
    }
    const fs_trace *t = fs_lesson_trace(W->said);
    return t && t->n == sh->trace.n ? W->said : NULL;
}

/* The (query row, m, ℓ) of each row the trace has touched up to step k, in order of first touch:
 * ROW and OUT events per (head, row), ELEM for the one vector of a softmax scene. At most
 * max rows; returns how many. */
typedef struct { int32_t head, row; double m, l; bool out; } row_ml;
static int rows_at(const fs_trace *t, int64_t k, row_ml *r, int max)
{
    int n = 0;
    for (int64_t i = 0; i <= k && i < t->n; i++) {
        const fs_event *e = &t->ev[i];
        if (e->kind != FS_EV_ROW && e->kind != FS_EV_OUT && e->kind != FS_EV_ELEM) continue;
        int32_t head = e->kind == FS_EV_ELEM ? 0 : e->head, row = e->kind == FS_EV_ELEM ? -1 : e->row;
        if (e->kind != FS_EV_ELEM && row < 0) continue;
        int j = 0;
        while (j < n && (r[j].head != head || r[j].row != row)) j++;
        if (j == n) {
            if (n == max) continue;
            r[n++] = (row_ml){head, row, 0, 0, false};
        }
        r[j].m = e->m_new;
        r[j].l = e->l_new;
        r[j].out = r[j].out || e->kind == FS_EV_OUT;
    }
    return n;
}

/* In a scene drawn as tiles: the current (Q tile, KV tile) pair's rows up to step k (its last
 * WEB_TILE_ROWS) as JSON (the "tile" member): for a ROW
 * its scores s and weights P̃ = exp(s − m_blk), for a BROW (the backward) S, P, dP and dS; each a
 * vector over the pair's keys c0..c1−1. Nothing when step k is not inside a computed pair. */
static void tile_json(jbuf *j, const gui_show *sh, int64_t k)
{
    const fs_trace *t = &sh->trace;
    /* the scenes drawn as a grid of tiles (the one-query walk's "tiles" are single keys, whose
     * P̃ against their own maximum would mislead) */
    switch (sh->scene) {
    case GUI_SCENE_TILED: case GUI_SCENE_TREE: case GUI_SCENE_WINDOW: case GUI_SCENE_GQA: case GUI_SCENE_PITFALL:
    case GUI_SCENE_BACKWARD: break;
    default: return;
    }
    if (k < 0 || k >= t->n) return;
    const fs_event *e = &t->ev[k];
    bool bwd = e->kind == FS_EV_BTILE || e->kind == FS_EV_BROW || e->kind == FS_EV_BKEY;
    if (!(e->kind == FS_EV_TILE || e->kind == FS_EV_ROW || bwd) || e->qt < 0 || e->kt < 0) return;
    fs_event_kind open = bwd ? FS_EV_BTILE : FS_EV_TILE, rowk = bwd ? FS_EV_BROW : FS_EV_ROW;
    int64_t a = k;
    while (a >= 0 && !(t->ev[a].kind == open && t->ev[a].head == e->head && t->ev[a].qt == e->qt && t->ev[a].kt == e->kt)) a--;
    if (a < 0) return;
    const fs_event *p = &t->ev[a];
    /* A table a listener can walk: the last WEB_TILE_ROWS rows reached, the first WEB_TILE_KEYS keys
     * (001_06's tiles are 64 × 64: the rest is in the formulas of each row's step). */
    int64_t first = k + 1;
    for (int64_t i = k, seen = 0; i > a && seen < WEB_TILE_ROWS; i--) {
        const fs_event *r = &t->ev[i];
        if (r->kind == rowk && r->head == p->head && r->qt == p->qt && r->kt == p->kt) { first = i; seen++; }
    }
    int32_t keys = p->c1 - p->c0 < WEB_TILE_KEYS ? p->c1 - p->c0 : WEB_TILE_KEYS;
    jput(j, ",\"tile\":{\"head\":%d,\"qt\":%d,\"kt\":%d,\"r0\":%d,\"r1\":%d,\"c0\":%d,\"c1\":%d,\"keys\":%d,\"backward\":%s,"
            "\"dropout\":%s,\"partial\":%s,\"rows\":[", p->head, p->qt, p->kt, p->r0, p->r1, p->c0, p->c1, keys,
         bwd ? "true" : "false", p->drop >= 0 ? "true" : "false", p->cls == FS_TILE_FULL ? "false" : "true");
    int n = 0;
    for (int64_t i = first; i <= k; i++) {
        const fs_event *r = &t->ev[i];
        if (r->kind != rowk || r->head != p->head || r->qt != p->qt || r->kt != p->kt) continue;
        const int64_t off[4] = {r->s_row, r->p_row, bwd ? r->dp_row : -1, bwd ? r->ds_row : -1};
        static const char *const names[4] = {"s", "p", "dp", "ds"};
        jput(j, "%s{\"row\":%d,\"m_blk\":", n++ ? "," : "", r->row);
        jnum(j, r->m_blk);
        for (int v = 0; v < 4; v++) {
            const double *x = fs_trace_at(t, off[v]);
            if (!x) continue;
            jput(j, ",\"%s\":[", names[v]);
            for (int32_t c = 0; c < r->n_s && c < keys; c++) {
                if (c) jput(j, ",");
                jnum(j, x[c]);
            }
            jput(j, "]");
        }
        jput(j, "}");
    }
    jput(j, "]}");
}

/* In a forward scene drawn as tiles whose problem has at most WEB_GRID_MAX queries and keys: the
 * whole score grid of the current step's head as JSON (the "grid" member), as the canvas shows it
 * after step k: {head, rows, cols, cells: rows × cols strings}, a cell being its score as printed
 * ("-inf": masked), "skipped" (in a tile skipped whole) or "" (not reached yet). */
static void grid_json(jbuf *j, const gui_show *sh, int64_t k)
{
    const fs_trace *t = &sh->trace;
    int32_t R = sh->run.attn.n_q, C = sh->run.attn.n_kv;
    switch (sh->scene) {
    case GUI_SCENE_TILED: case GUI_SCENE_TREE: case GUI_SCENE_WINDOW: case GUI_SCENE_GQA: case GUI_SCENE_PITFALL: break;
    default: return;
    }
    if (k < 0 || k >= t->n || R < 1 || C < 1 || R > WEB_GRID_MAX || C > WEB_GRID_MAX) return;
    int32_t head = t->ev[k].head >= 0 ? t->ev[k].head : 0;
    double v[WEB_GRID_MAX][WEB_GRID_MAX];
    char st[WEB_GRID_MAX][WEB_GRID_MAX];   /* 0 not reached, 1 a score, 2 skipped */
    memset(st, 0, sizeof st);
    for (int64_t i = 0; i <= k; i++) {
        const fs_event *e = &t->ev[i];
        if (e->head != head && !(e->head < 0 && head == 0)) continue;
        if (e->kind == FS_EV_SKIP) {
            for (int32_t r = e->r0 < 0 ? 0 : e->r0; r < e->r1 && r < R; r++)
                for (int32_t c = e->c0 < 0 ? 0 : e->c0; c < e->c1 && c < C; c++) st[r][c] = 2;
        } else if (e->kind == FS_EV_ROW && e->row >= 0 && e->row < R) {
            const double *s = fs_trace_at(t, e->s_row);
            int32_t step = e->stride > 1 ? e->stride : 1;
            for (int32_t c = 0; s && c < e->n_s; c++) {
                int32_t key = e->c0 + c * step;
                if (key < 0 || key >= C) continue;
                v[e->row][key] = s[c];
                st[e->row][key] = 1;
            }
        }
    }
    jput(j, ",\"grid\":{\"head\":%d,\"rows\":%d,\"cols\":%d,\"cells\":[", head, R, C);
    for (int32_t r = 0; r < R; r++) {
        jput(j, r ? ",[" : "[");
        for (int32_t c = 0; c < C; c++) {
            if (c) jput(j, ",");
            if (st[r][c] == 1) jnum(j, v[r][c]);
            else jstr(j, st[r][c] == 2 ? "skipped" : "");
        }
        jput(j, "]");
    }
    jput(j, "]}");
}

/* What step k changed, in words with its numbers ("row 1: m -inf → 0.3253, ℓ 0.0000 → 1.8146"),
 * for the events that move a running maximum and sum; "" for the others (their formulas say it). */
static void changed_json(jbuf *j, const fs_trace *t, int64_t k)
{
    char w[320] = "", a[32], b[32], c[32], d[32];
    if (k >= 0 && k < t->n) {
        const fs_event *e = &t->ev[k];
        char who[64];
        if (e->kind == FS_EV_ELEM) snprintf(who, sizeof who, "the vector");
        else if (e->kind == FS_EV_MERGE) snprintf(who, sizeof who, "row %d, merged state %d", e->row, e->id);
        else if (e->kind == FS_EV_PARTIAL) snprintf(who, sizeof who, "row %d, split %d", e->row, e->kt);
        else snprintf(who, sizeof who, "row %d", e->row);
        switch (e->kind) {
        case FS_EV_ELEM: case FS_EV_ROW: case FS_EV_RMERGE:
            if (e->m_new == e->m_old)   /* no new maximum: say so rather than "0.8 → 0.8" */
                snprintf(w, sizeof w, "%s: m stays %s, ℓ %s → %s", who, gui_fmt(e->m_new, b, 32), gui_fmt(e->l_old, c, 32),
                         gui_fmt(e->l_new, d, 32));
            else
                snprintf(w, sizeof w, "%s: m %s → %s, ℓ %s → %s", who, gui_fmt(e->m_old, a, 32), gui_fmt(e->m_new, b, 32),
                         gui_fmt(e->l_old, c, 32), gui_fmt(e->l_new, d, 32));
            break;
        case FS_EV_PARTIAL: case FS_EV_MERGE:
            snprintf(w, sizeof w, "%s: m = %s, ℓ = %s", who, gui_fmt(e->m_new, a, 32), gui_fmt(e->l_new, b, 32));
            break;
        case FS_EV_OUT:
            snprintf(w, sizeof w, "%s is finished: m = %s, ℓ = %s", e->row >= 0 ? who : "the vector", gui_fmt(e->m_new, a, 32),
                     gui_fmt(e->l_new, b, 32));
            break;
        case FS_EV_SKIP: case FS_EV_BSKIP:
            snprintf(w, sizeof w, "nothing: the tile of rows %d-%d and keys %d-%d is skipped", e->r0, e->r1 - 1, e->c0, e->c1 - 1);
            break;
        default: break;
        }
    }
    jput(j, ",\"changed\":");
    jstr(j, w);
}

/* What the page shows, in words, from the same C state the canvas is drawn from, as one JSON
 * object (valid until the next call): name, title, source (with the document's title: words),
 * intro, scene, step and n (the step is 0-based, as in the link), say (the step's words:
 * fs_lesson_say for a lesson, the window's own narration otherwise), formulas (the step's
 * fs_lesson_describe line split at "; "), changed (what the step moved, in words), rows (each
 * touched row's m and ℓ after the step: [{head, row (−1: a softmax vector), m, l, out}]), tile
 * (for a tiled or backward scene inside a computed pair: its keys and its last rows so far, each
 * with its scores and weights; keys: how many of c1 − c0 are listed), grid (a small forward tiled
 * problem's whole score grid as the canvas shows it: grid_json) and claims (a claims lesson's lines with their verdicts). Every number
 * is a string as the window prints it (4 decimals, "-inf"). */
EMSCRIPTEN_KEEPALIVE const char *web_describe(web_page *W)
{
    const gui_show *sh = &W->A.show;
    const gui_state *s = &W->A.st;
    const fs_trace *t = &sh->trace;
    const fs_lesson *l = shown_lesson(W);
    int64_t k = s->n > 0 ? s->step : -1;
    jbuf j = {W->desc, 0, W->desc_cap};
    if (!j.b) j.b = malloc(j.cap = 8192);
    if (j.b) j.b[0] = 0;
    char words[sizeof sh->source + 64];
    fs_source_words(sh->source, words, sizeof words);
    jput(&j, "{\"name\":");
    jstr(&j, sh->name);
    jput(&j, ",\"title\":");
    jstr(&j, sh->title);
    jput(&j, ",\"source\":");
    jstr(&j, sh->source);
    jput(&j, ",\"words\":");
    jstr(&j, words);
    jput(&j, ",\"intro\":");
    jstr(&j, sh->intro);
    jput(&j, ",\"scene\":\"%s\",\"lesson\":%s,\"step\":%lld,\"n\":%lld,\"kind\":\"%s\",\"say\":", gui_scene_str(sh->scene),
         l ? "true" : "false", (long long)s->step, (long long)s->n, k >= 0 && k < t->n ? fs_event_kind_str(t->ev[k].kind) : "");
    char *buf = malloc(8192);
    if (buf) {
        buf[0] = 0;
        if (l) fs_lesson_say(l, fs_lesson_trace(l), k, buf, 8192);
        if (!buf[0]) gui_narration(sh, k, buf, 8192);
    }
    jstr(&j, buf ? buf : "");
    jput(&j, ",\"formulas\":[");
    if (buf && k >= 0 && k < t->n) {
        buf[0] = 0;
        fs_lesson_describe(l, l ? fs_lesson_trace(l) : t, k, 4, buf, 8192);
        int m = 0;
        for (char *p = buf; p && *p;) {
            char *sep = strstr(p, "; ");
            if (sep) *sep = 0;
            jput(&j, m++ ? "," : "");
            jstr(&j, p);
            p = sep ? sep + 2 : NULL;
        }
    }
    free(buf);
    jput(&j, "]");
    changed_json(&j, t, k);
    jput(&j, ",\"rows\":[");
    row_ml rows[WEB_ROWS_MAX];
    int nr = k >= 0 ? rows_at(t, k, rows, WEB_ROWS_MAX) : 0;
    for (int i = 0; i < nr; i++) {
        jput(&j, "%s{\"head\":%d,\"row\":%d,\"out\":%s,\"m\":", i ? "," : "", rows[i].head, rows[i].row,
             rows[i].out ? "true" : "false");
        jnum(&j, rows[i].m);
        jput(&j, ",\"l\":");
        jnum(&j, rows[i].l);
        jput(&j, "}");
    }
    jput(&j, "]");
    tile_json(&j, sh, k);
    grid_json(&j, sh, k);
    jput(&j, ",\"claims\":[");
    for (int i = 0; i < sh->n_claims; i++) {
        jput(&j, i ? ",[" : "[");
        jstr(&j, sh->claims[i]);
        jput(&j, ",");
        jstr(&j, sh->claim_verdict[i]);
        jput(&j, "]");
    }
    jput(&j, "]}");
    W->desc = j.b;
    W->desc_cap = j.b ? j.cap : 0;
    return j.b ? j.b : "{}";
}

/* ---- "Run on this GPU": the traced WGSL kernels (src/kernels/webgpu, docs/webgpu.md) ---- */

/* Append to W->gpu_json (grown as needed). */
static void gpu_put(web_page *W, size_t *k, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(W->gpu_json + *k, *cap - *k, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < *cap - *k) { *k += (size_t)n; return; }
        size_t c = *cap * 2 + (size_t)(n > 0 ? n : 0);
        char *b = realloc(W->gpu_json, c);
        if (!b) return;
        W->gpu_json = b;
        *cap = c;
    }
}

static const char *gpu_answer(web_page *W, bool ok, const char *why)
{
    size_t k = 0, cap = 512;
    free(W->gpu_json);
    if (!(W->gpu_json = malloc(cap))) return "{\"ok\":false,\"why\":\"out of memory\"}";
    char body[600] = "";
    json_str(body, sizeof body, why ? why : "");
    gpu_put(W, &k, &cap, "{\"ok\":%s,\"why\":\"%s\"}", ok ? "true" : "false", body);
    return W->gpu_json;
}

/* The traced GPU run of what is shown, as JSON: the kind ("tiled" or "decode"), where its
 * arrays lie in the program's memory (byte addresses: params, 24 words; qs, k, v: float32;
 * bits, sched: u32; with their lengths) and how many floats the kernel writes (rec, node, o,
 * ml). {"ok":false,"why":...} when no WGSL kernel traces it. Valid until the next call. */
EMSCRIPTEN_KEEPALIVE const char *web_gpu_job(web_page *W)
{
    fs_gpu_job_free(&W->job);
    const fs_run *r = &W->A.show.run;
    if (!r->attn.V && r->algo != FS_ALGO_SOFTMAX)
        return gpu_answer(W, false, "what is shown has no attention problem to run (a lesson of printed claims only, "
                                    "or a saved trace, which keeps the events but not the inputs)");
    char why[300];
    if (fs_gpu_job_make(r, &W->job, why, sizeof why) != FS_OK) return gpu_answer(W, false, why);
    const fs_gpu_job *j = &W->job;
    size_t k = 0, cap = 1024;
    free(W->gpu_json);
    if (!(W->gpu_json = malloc(cap))) return "{\"ok\":false,\"why\":\"out of memory\"}";
    gpu_put(W, &k, &cap,
            "{\"ok\":true,\"kind\":\"%s\",\"algo\":\"%s\",\"params\":%lu,\"qs\":%lu,\"n_qs\":%lld,\"k\":%lu,\"n_k\":%lld,"
            "\"v\":%lu,\"n_v\":%lld,\"bits\":%lu,\"n_bits\":%lld,\"sched\":%lu,\"n_sched\":%d,\"rec_floats\":%lld,"
            "\"node_floats\":%lld,\"o_floats\":%lld,\"ml_floats\":%lld}",
            j->kind == FS_GPU_TILED ? "tiled" : "decode", fs_algo_str(r->algo), (unsigned long)(uintptr_t)j->params,
            (unsigned long)(uintptr_t)j->qs, (long long)j->n_qs, (unsigned long)(uintptr_t)j->k, (long long)j->n_k,
            (unsigned long)(uintptr_t)j->v, (long long)j->n_v, (unsigned long)(uintptr_t)j->bits, (long long)j->n_bits,
            (unsigned long)(uintptr_t)j->sched, (int)j->n_sched, (long long)j->rec_floats, (long long)j->node_floats,
            (long long)j->o_floats, (long long)j->ml_floats);
    return W->gpu_json;
}

/* What the kernel of the last web_gpu_job wrote (float32 arrays the page copied into the
 * program's memory; node or ml may be 0 where the kind has none), turned into the engine's
 * events and compared with the engine's own trace of the same run. JSON: {"ok", "match",
 * "events", "index" (the first differing event, -1), "message"}. The GPU's trace stays for
 * web_gpu_save_trace. */
EMSCRIPTEN_KEEPALIVE const char *web_gpu_compare(web_page *W, const float *rec, const float *node, const float *O,
                                                 const float *ml)
{
    if (!W->job.qs) return gpu_answer(W, false, "no GPU job (web_gpu_job first)");
    fs_trace_free(&W->gpu);
    fs_trace_init(&W->gpu);
    W->gpu.max_events = WEB_MAX_TRACE_EVENTS;
    fs_status st = fs_gpu_job_events(&W->job, rec, node, O, ml, NULL, &W->gpu);
    if (st != FS_OK) return gpu_answer(W, false, fs_status_str(st));
    fs_trace eng;
    fs_trace_init(&eng);
    eng.max_events = WEB_MAX_TRACE_EVENTS;
    fs_result res;
    st = fs_run_exec(&W->A.show.run, &res, &eng);
    fs_result_free(&res);
    if (st != FS_OK) {
        fs_trace_free(&eng);
        return gpu_answer(W, false, fs_status_str(st));
    }
    char msg[400];
    int64_t at = fs_gpu_trace_compare(&W->gpu, &eng, FS_GPU_TRACE_TOL, msg, sizeof msg);
    int64_t n = eng.n;
    fs_trace_free(&eng);
    size_t k = 0, cap = 1024;
    free(W->gpu_json);
    if (!(W->gpu_json = malloc(cap))) return "{\"ok\":false,\"why\":\"out of memory\"}";
    char body[800] = "";
    json_str(body, sizeof body, msg);
    gpu_put(W, &k, &cap, "{\"ok\":true,\"match\":%s,\"events\":%lld,\"index\":%lld,\"message\":\"%s\"}",
            at < 0 ? "true" : "false", (long long)n, (long long)at, body);
    return W->gpu_json;
}

/* The GPU's trace of the last web_gpu_compare, as `flashstep trace --format jsonl` prints
 * events, into path. 0, or 2 with a message. */
EMSCRIPTEN_KEEPALIVE int web_gpu_save_trace(web_page *W, const char *path)
{
    if (W->gpu.n == 0) { fprintf(stderr, "flashstep: no GPU trace yet\n"); return 2; }
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "flashstep: cannot write %s\n", path); return 2; }
    cli_trace_jsonl(f, &W->gpu);
    return fclose(f) == 0 ? 0 : 2;
}

/* Run a command of the program, arguments separated by newlines ("verify\n000_04"): trace,
 * lessons and verify. What it prints goes to stdout and stderr, which the page collects.
 * Returns its exit code. */
EMSCRIPTEN_KEEPALIVE int web_cli(const char *args)
{
    static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
        {"trace", cli_trace}, {"lessons", cli_lessons}, {"verify", cli_verify},
    };
    char *copy = strdup(args ? args : "");
    char *argv[64];
    int argc = split_args(copy, argv, 63);
    argv[argc] = NULL;
    int rc = 2;
    if (argc == 0) fprintf(stderr, "flashstep: no command\n");
    else {
        size_t i = 0;
        while (i < sizeof cmds / sizeof cmds[0] && strcmp(argv[0], cmds[i].name)) i++;
        if (i < sizeof cmds / sizeof cmds[0]) rc = cmds[i].fn(argc, argv);
        else fprintf(stderr, "flashstep: the page runs trace, lessons and verify, not '%s'\n", argv[0]);
    }
    fflush(stdout);
    fflush(stderr);
    free(copy);
    return rc;
}

int main(void)
{
    /* The lessons and their assets are packed under /flashstep; one's own files go to /input. */
    setenv("FLASHSTEP_LESSONS", "/flashstep/lessons", 1);
    if (chdir("/input") != 0) fprintf(stderr, "flashstep: no /input directory\n");
    return 0;
}

/* ---- a section's quiz, in the page's panel ---- */

/* The quiz of the course's section (0-based) on a fresh problem drawn from seed (the page draws
 * it at random: a new quiz each time), as JSON: {"section": title, "seed", "questions": [{"prompt",
 * "numeric", "options": [...], "lesson"}]}; {"error": message} when it cannot be made. Valid until
 * the next call. */
EMSCRIPTEN_KEEPALIVE const char *web_quiz(web_page *W, int section, double seed)
{
    jbuf j = {malloc(4096), 0, 4096};
    if (j.b) j.b[0] = 0;
    char dir[1024];
    fs_course c;
    fs_loc_error e;
    memset(&e, 0, sizeof e);
    if (!W->quiz) W->quiz = malloc(sizeof *W->quiz);
    bool have = lessons_dir(W, dir, sizeof dir) && fs_course_load(dir, &c, &e);
    uint64_t sd = seed >= 0 && seed < 18446744073709551616.0 ? (uint64_t)seed : 0;
    if (!have || !W->quiz || !fs_quiz_make(dir, &c, section, sd, W->quiz, &e)) {
        jput(&j, "{\"error\":");
        jstr(&j, !have ? "no course beside the lessons" : !W->quiz ? "out of memory" : e.msg);
        jput(&j, "}");
        if (W->quiz) W->quiz->n = 0;
    } else {
        jput(&j, "{\"section\":");
        jstr(&j, W->quiz->section);
        jput(&j, ",\"seed\":\"%llu\",\"questions\":[", (unsigned long long)sd);
        for (int i = 0; i < W->quiz->n; i++) {
            const fs_question *q = &W->quiz->q[i];
            jput(&j, "%s{\"prompt\":", i ? "," : "");
            jstr(&j, q->prompt);
            jput(&j, ",\"numeric\":%s,\"options\":[", q->numeric ? "true" : "false");
            for (int o = 0; !q->numeric && o < q->n_options; o++) {
                jput(&j, o ? "," : "");
                char name[112];
                jstr(&j, fs_question_option(q, o, name, sizeof name));
            }
            jput(&j, "],\"lesson\":");
            jstr(&j, W->quiz->lesson[i]);
            jput(&j, "}");
        }
        jput(&j, "]}");
    }
    if (have) fs_course_free(&c);
    free(W->quiz_json);
    W->quiz_json = j.b;
    return j.b ? j.b : "{\"error\":\"out of memory\"}";
}

/* Judge the answer typed to question i of the quiz made last (fs_question_judge) as JSON:
 * {"right": true/false, "answer": the right one as printed, "feedback": the answer echoed, the
 * right one and why}; a number typed with a unit is not judged: {"again": true, "feedback": what
 * to type instead} (fs_question_unit_hint); {} when there is no question i. */
EMSCRIPTEN_KEEPALIVE const char *web_quiz_judge(web_page *W, int i, const char *typed)
{
    if (!W->quiz || i < 0 || i >= W->quiz->n) return "{}";
    const fs_question *q = &W->quiz->q[i];
    char fb[2048], ans[64];
    if (fs_question_unit_hint(q, typed ? typed : "", fb, sizeof fb)) {
        jbuf j = {malloc(512), 0, 512};
        jput(&j, "{\"again\":true,\"feedback\":");
        jstr(&j, fb);
        jput(&j, "}");
        free(W->quiz_json);
        W->quiz_json = j.b;
        return j.b ? j.b : "{}";
    }
    bool ok = fs_question_judge(q, typed ? typed : "", fb, sizeof fb);
    fs_question_answer(q, ans, sizeof ans);
    jbuf j = {malloc(2048), 0, 2048};
    jput(&j, "{\"right\":%s,\"answer\":", ok ? "true" : "false");
    jstr(&j, ans);
    jput(&j, ",\"feedback\":");
    jstr(&j, fb);
    jput(&j, "}");
    free(W->quiz_json);
    W->quiz_json = j.b;
    return j.b ? j.b : "{}";
}

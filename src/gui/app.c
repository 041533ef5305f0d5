/* app.c: the platform layer: SDL window and events, the frame loop, offscreen rendering, timing.
 *
 *     init; while (!quit) { poll (SDL events -> gui_cmd); update (gui_update); draw; } shutdown
 *
 * app_frame runs one frame of that loop, so the window, `flashstep render` (an offscreen
 * software renderer, no display at all) and the timing mode share it. A script (--script) feeds
 * key and mouse events into SDL's own queue with SDL_PushEvent, so tests drive the same path as
 * a person at the keyboard.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gui/app.h"

double gui_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void gui_options_default(gui_options *o)
{
    memset(o, 0, sizeof *o);
    o->w = 1280;
    o->h = 720;
    o->scale_pct = 100;
    o->theme = GUI_THEME_DARK;
    o->t0 = gui_now();
}

static gui_key key_of(SDL_Keycode k)
{
    switch (k) {
    case SDLK_SPACE: return GUI_KEY_SPACE;
    case SDLK_LEFT: return GUI_KEY_LEFT;
    case SDLK_RIGHT: return GUI_KEY_RIGHT;
    case SDLK_UP: return GUI_KEY_UP;
    case SDLK_DOWN: return GUI_KEY_DOWN;
    case SDLK_HOME: return GUI_KEY_HOME;
    case SDLK_END: return GUI_KEY_END;
    case SDLK_ESCAPE: return GUI_KEY_ESCAPE;
    case SDLK_RETURN: case SDLK_KP_ENTER: return GUI_KEY_ENTER;
    case SDLK_BACKSPACE: return GUI_KEY_BACKSPACE;
    case SDLK_PLUS: case SDLK_EQUALS: case SDLK_KP_PLUS: return GUI_KEY_PLUS;
    case SDLK_MINUS: case SDLK_KP_MINUS: return GUI_KEY_MINUS;
    case SDLK_PERIOD: case SDLK_KP_PERIOD: return GUI_KEY_PERIOD;
    case SDLK_QUESTION: case SDLK_SLASH: return GUI_KEY_QUESTION;
    case SDLK_f: return GUI_KEY_F;
    case SDLK_l: return GUI_KEY_L;
    case SDLK_t: return GUI_KEY_T;
    case SDLK_p: return GUI_KEY_P;
    case SDLK_q: return GUI_KEY_Q;
    case SDLK_e: return GUI_KEY_E;
    case SDLK_KP_0: return GUI_KEY_0;
    case SDLK_LEFTBRACKET: return GUI_KEY_LBRACKET;
    case SDLK_RIGHTBRACKET: return GUI_KEY_RBRACKET;
    case SDLK_v: return GUI_KEY_V;
    case SDLK_a: return GUI_KEY_A;
    case SDLK_i: return GUI_KEY_I;
    case SDLK_n: return GUI_KEY_N;
    default: break;
    }
    if (k >= SDLK_0 && k <= SDLK_9) return (gui_key)(GUI_KEY_0 + (k - SDLK_0));
    if (k >= SDLK_KP_1 && k <= SDLK_KP_9) return (gui_key)(GUI_KEY_1 + (k - SDLK_KP_1));
    return GUI_KEY_NONE;
}

static SDL_Keycode sdl_key_of(gui_key k)
{
    static const SDL_Keycode map[GUI_KEY_COUNT] = {
        0, SDLK_SPACE, SDLK_LEFT, SDLK_RIGHT, SDLK_UP, SDLK_DOWN, SDLK_HOME, SDLK_END, SDLK_ESCAPE, SDLK_RETURN,
        SDLK_BACKSPACE, SDLK_PLUS, SDLK_MINUS, SDLK_PERIOD, SDLK_QUESTION, SDLK_f, SDLK_l, SDLK_t, SDLK_p, SDLK_q, SDLK_e,
        SDLK_0, SDLK_1, SDLK_2, SDLK_3, SDLK_4, SDLK_5, SDLK_6, SDLK_7, SDLK_8, SDLK_9,
        SDLK_LEFTBRACKET, SDLK_RIGHTBRACKET, SDLK_v, SDLK_a, SDLK_i, SDLK_n,
    };
    return (int)k >= 0 && k < GUI_KEY_COUNT ? map[k] : 0;
}

static void menu_free(app *A)
{
    for (int i = A->cat.n; A->menu && i < A->menu_n; i++) free(A->menu[i]);   /* the quizzes' labels */
    free(A->menu);
    A->menu = NULL;
    A->menu_n = 0;
}

void app_course_mark(app *A)
{
    gui_state *s = &A->st;
    s->n_sections = 0;
    s->section_end = -1;
    s->course_pos = -1;
    menu_free(A);
    if (!A->have_course) return;
    const fs_course *c = &A->course;
    /* the lesson shown ends a section when the course's next lesson is of another (or none); its
     * place in the course is the header's number (the catalogue is in file order) */
    if (s->lesson >= 0 && s->lesson < A->cat.n) {
        int k = fs_course_find(c, A->cat.names[s->lesson]);
        if (k >= 0 && (k + 1 == c->n || c->section_of[k + 1] != c->section_of[k])) s->section_end = c->section_of[k];
        s->course_pos = k;
        s->course_n = c->n;
    }
    A->menu = calloc((size_t)(A->cat.n + c->n_sections), sizeof *A->menu);
    if (!A->menu) return;
    char path[4096];
    bool kept = fs_quiz_state_path(path, sizeof path);
    for (int i = 0; i < A->cat.n; i++) A->menu[i] = A->cat.names[i];
    A->menu_n = A->cat.n;
    for (int q = 0; q < c->n_sections; q++) {
        int best, last, of;
        fs_quiz_scores(kept ? path : NULL, c->sections[q], &best, &last, &of);
        char label[256];
        if (best >= 0) snprintf(label, sizeof label, "Quiz: %s (best %d/%d)", c->sections[q], best, of);
        else snprintf(label, sizeof label, "Quiz: %s", c->sections[q]);
        if (!(A->menu[A->menu_n] = strdup(label))) break;
        A->menu_n++;
    }
    s->n_sections = A->menu_n - A->cat.n;
}

int app_load_entry(app *A, int i)
{
    gui_scene_tiled_free(&A->draw);   /* the kept scans belong to the old show */
    gui_show_free(&A->show);
    int rc = gui_catalog_load(&A->cat, i, &A->show, stderr);
    if (rc) return rc;
    gui_state_attach(&A->st, &A->show);
    A->st.lesson = i;   /* (the page's web_open sets it only after this) */
    app_course_mark(A);
    return 0;
}

int app_try(app *A)
{
    gui_show *sh = &A->show;
    if (!sh->path[0] || (!sh->variation[0] && !sh->try_opts[0])) return 0;
    char path[sizeof sh->path], opts[sizeof sh->try_opts];
    snprintf(path, sizeof path, "%s", sh->path);
    snprintf(opts, sizeof opts, "%s", sh->try_opts);
    bool back = sh->variation[0] != 0;
    gui_scene_tiled_free(&A->draw);   /* the kept scans belong to the old show */
    gui_show_free(sh);
    int rc = gui_lesson_load_variation(path, back ? "" : NULL, sh, stderr);
    if (rc) return rc;
    gui_state_attach(&A->st, sh);
    snprintf(A->st.status, sizeof A->st.status, back ? "the lesson as written (V: its variation again)"
                                                     : "try this: %s (V: back to the lesson as written)", opts);
    A->st.status_ttl = 250;
    return 0;
}

/* The quiz of section q: made on a seed from the clock (fs_quiz_make), then asked (the state's
 * GUI_CMD_QUIZ with b = 1). A message on the status line when it cannot be made. */
static void quiz_start(app *A, int q)
{
    fs_quiz *quiz = A->have_course ? malloc(sizeof *quiz) : NULL;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
    fs_loc_error err;
    memset(&err, 0, sizeof err);
    if (!quiz || !fs_quiz_make(A->dir, &A->course, q, seed, quiz, &err)) {
        snprintf(A->st.status, sizeof A->st.status, "no quiz: %.140s", quiz ? err.msg : "no course here");
        A->st.status_ttl = 300;
        free(quiz);
        return;
    }
    free(A->show.quiz);
    A->show.quiz = quiz;
    gui_cmd c = {GUI_CMD_QUIZ, q, 1};
    gui_update(&A->st, &A->show, &c);
}

/* A finished quiz: its score appended to the state file that `flashstep quiz` keeps. */
static void quiz_keep(app *A)
{
    gui_quiz_view *z = &A->st.quiz;
    z->kept = true;
    const fs_quiz *q = A->show.quiz;
    char path[4096];
    if (!q) return;
    if (!fs_quiz_state_path(path, sizeof path)) snprintf(A->st.status, sizeof A->st.status, "no home folder: the score is not kept");
    else if (!fs_quiz_keep(path, q->section, z->right, q->n, q->seed)) snprintf(A->st.status, sizeof A->st.status, "could not keep the score");
    else {
        snprintf(A->st.status, sizeof A->st.status, "score %d/%d kept (flashstep quiz lists it)", z->right, q->n);
        fprintf(stderr, "flashstep: quiz on \"%s\": %d of %d, kept in %s\n", q->section, z->right, q->n, path);
    }
    A->st.status_ttl = 400;
    app_course_mark(A);   /* the list's best scores */
}

/* Decode with twice (dir > 0) or half as many splits: run the engine again on the same problem
 * and compare the new output rows (OUT events) with the old ones. The picture changes; the
 * output does not, up to rounding, which the status line reports. */
static void resplit(app *A, int dir)
{
    fs_run r = A->show.run;
    fs_decoding *dc = &r.decoding;
    int n_kv = r.attn.n_kv;
    if (dc->split == FS_SPLIT_STRIDED) {
        int p = dir > 0 ? dc->parts * 2 : dc->parts / 2;
        if (p < 1 || p > n_kv) return;
        dc->parts = p;
    } else {
        int bk = dir > 0 ? (dc->Bk + 1) / 2 : dc->Bk * 2;
        if (bk < 1 || (dir < 0 && dc->Bk >= n_kv)) return;
        dc->Bk = bk;
    }
    fs_trace t;
    fs_trace_init(&t);
    fs_result res;
    fs_status st = fs_run_exec(&r, &res, &t);
    fs_result_free(&res);
    if (st != FS_OK) {
        fs_trace_free(&t);
        snprintf(A->st.status, sizeof A->st.status, "could not rerun: %s", fs_status_str(st));
        A->st.status_ttl = 200;
        return;
    }
    double worst = 0;
    int64_t ia = 0, ib = 0;
    const fs_trace *old = &A->show.trace;
    for (;;) {   /* pair the OUT events in order: same heads and rows */
        while (ia < old->n && old->ev[ia].kind != FS_EV_OUT) ia++;
        while (ib < t.n && t.ev[ib].kind != FS_EV_OUT) ib++;
        if (ia >= old->n || ib >= t.n) break;
        const double *oa = fs_trace_at(old, old->ev[ia].o_new), *ob = fs_trace_at(&t, t.ev[ib].o_new);
        for (int c = 0; oa && ob && c < t.ev[ib].n_o; c++) worst = fmax(worst, fabs(oa[c] - ob[c]));
        ia++;
        ib++;
    }
    int n_splits = 0;
    for (int64_t k = 0; k < t.n; k++)
        if (t.ev[k].kind == FS_EV_PARTIAL && t.ev[k].kt + 1 > n_splits) n_splits = t.ev[k].kt + 1;
    gui_scene_tiled_free(&A->draw);
    fs_trace_free(&A->show.trace);
    A->show.trace = t;
    A->show.run = r;
    A->show.narrate = NULL;   /* the lesson's words were for the old split */
    gui_show_questions(&A->show, NULL);   /* and so were its questions */
    double frac = A->st.n > 1 ? (double)A->st.step / (double)(A->st.n - 1) : 0;
    gui_state_attach(&A->st, &A->show);
    A->st.step = (int64_t)llround(frac * (double)(A->st.n - 1));
    snprintf(A->st.status, sizeof A->st.status, "%d splits: output unchanged up to rounding (max |dO| = %.1e)", n_splits, worst);
    A->st.status_ttl = 400;
}

/* Write the current frame (what the renderer holds now) as a PNG. */
static int save_frame(app *A, const char *path)
{
    int w = A->st.w, h = A->st.h;
    if (A->ren && !A->surface) SDL_GetRendererOutputSize(A->ren, &w, &h);
    uint8_t *px = malloc((size_t)w * h * 3);
    if (!px) return -1;
    int rc = SDL_RenderReadPixels(A->ren, NULL, SDL_PIXELFORMAT_RGB24, px, w * 3);
    if (rc == 0) rc = gui_png_write(path, px, w, h, w * 3);
    free(px);
    return rc;
}

static void push_key(gui_key k, bool shift)
{
    SDL_Event e;
    memset(&e, 0, sizeof e);
    e.type = SDL_KEYDOWN;
    e.key.state = SDL_PRESSED;
    e.key.keysym.sym = sdl_key_of(k);
    e.key.keysym.mod = shift ? KMOD_LSHIFT : KMOD_NONE;
    SDL_PushEvent(&e);
    e.type = SDL_KEYUP;
    e.key.state = SDL_RELEASED;
    SDL_PushEvent(&e);
}

static void push_mouse(Uint32 type, int x, int y)
{
    SDL_Event e;
    memset(&e, 0, sizeof e);
    e.type = type;
    if (type == SDL_MOUSEMOTION) {
        e.motion.x = x;
        e.motion.y = y;
    } else {
        e.button.button = SDL_BUTTON_LEFT;
        e.button.state = type == SDL_MOUSEBUTTONDOWN ? SDL_PRESSED : SDL_RELEASED;
        e.button.x = x;
        e.button.y = y;
        e.button.clicks = 1;
    }
    SDL_PushEvent(&e);
}

/* A script's `match REF`: compare the frame just drawn with a reference image (the same
 * tolerance as tests/check_gui.c). On failure the frame is written to match-fail.png. */
static void match_frame(app *A, const gui_script_line *l)
{
    int w, h;
    SDL_GetRendererOutputSize(A->ren, &w, &h);
    uint8_t *px = malloc((size_t)w * h * 3), *ref = NULL;
    int rw = 0, rh = 0;
    bool ok = false;
    if (px && SDL_RenderReadPixels(A->ren, NULL, SDL_PIXELFORMAT_RGB24, px, w * 3) == 0) {
        if (gui_png_read(l->path, &ref, &rw, &rh) != 0)
            fprintf(stderr, "%s:%d: cannot read the reference %s\n", A->script.file, l->line, l->path);
        else if (rw != w || rh != h)
            fprintf(stderr, "%s:%d: frame is %dx%d, reference %dx%d\n", A->script.file, l->line, w, h, rw, rh);
        else {
            int64_t bad = gui_image_diff(px, ref, w, h, 48), allowed = (int64_t)w * h / 200;
            ok = bad <= allowed;
            if (!ok) {
                fprintf(stderr, "%s:%d: %lld pixels differ from %s (allowed %lld); frame in match-fail.png\n", A->script.file,
                        l->line, (long long)bad, l->path, (long long)allowed);
                gui_png_write("match-fail.png", px, w, h, w * 3);
            }
        }
    }
    if (!ok) A->script_fail++;
    free(px);
    free(ref);
}

/* One script line per frame (WAIT holds it for n frames). Returns false at the end. */
static void script_step(app *A)
{
    if (A->script_wait > 0) { A->script_wait--; return; }
    while (A->script_pos < A->script.n) {
        const gui_script_line *l = &A->script.lines[A->script_pos++];
        switch (l->op) {
        case GUI_SCRIPT_KEY: push_key(l->key, l->shift); return;
        case GUI_SCRIPT_MOVE: push_mouse(SDL_MOUSEMOTION, l->v[0], l->v[1]); return;
        case GUI_SCRIPT_DOWN: push_mouse(SDL_MOUSEBUTTONDOWN, l->v[0], l->v[1]); return;
        case GUI_SCRIPT_UP: push_mouse(SDL_MOUSEBUTTONUP, l->v[0], l->v[1]); return;
        case GUI_SCRIPT_CLICK:
            push_mouse(SDL_MOUSEMOTION, l->v[0], l->v[1]);
            push_mouse(SDL_MOUSEBUTTONDOWN, l->v[0], l->v[1]);
            push_mouse(SDL_MOUSEBUTTONUP, l->v[0], l->v[1]);
            return;
        case GUI_SCRIPT_DRAG:
            push_mouse(SDL_MOUSEMOTION, l->v[0], l->v[1]);
            push_mouse(SDL_MOUSEBUTTONDOWN, l->v[0], l->v[1]);
            for (int i = 1; i <= 4; i++)
                push_mouse(SDL_MOUSEMOTION, l->v[0] + (l->v[2] - l->v[0]) * i / 4, l->v[1] + (l->v[3] - l->v[1]) * i / 4);
            push_mouse(SDL_MOUSEBUTTONUP, l->v[2], l->v[3]);
            return;
        case GUI_SCRIPT_WAIT: A->script_wait = l->v[0]; return;
        case GUI_SCRIPT_RESIZE:
            if (A->win) SDL_SetWindowSize(A->win, l->v[0], l->v[1]);
            {
                gui_cmd c = {GUI_CMD_RESIZE, l->v[0], l->v[1]};
                gui_update(&A->st, &A->show, &c);
            }
            return;
        case GUI_SCRIPT_EXPECT: {
            char msg[256];
            if (!gui_script_expect(l, &A->st, msg, sizeof msg)) {
                fprintf(stderr, "%s:%d: %s\n", A->script.file, l->line, msg);
                A->script_fail++;
            }
            break;   /* expectations take no frame */
        }
        case GUI_SCRIPT_SAVE: A->st.save_png = true; A->png_count = -1 - (A->script_pos - 1); return;
        case GUI_SCRIPT_QUIT: A->st.quit = true; return;
        case GUI_SCRIPT_MATCH: A->match_line = A->script_pos - 1; return;
        }
    }
}

/* poll: SDL events to commands, applied in order. Mouse positions come in window units and
 * are turned into the renderer's pixels, which the layout is in (they differ on a HiDPI
 * screen, where the window asks for every pixel). */
static void poll(app *A)
{
    SDL_Event e;
    int win_w = 0, win_h = 0, out_w = 0, out_h = 0;
    if (A->win) SDL_GetWindowSize(A->win, &win_w, &win_h);
    if (A->ren) SDL_GetRendererOutputSize(A->ren, &out_w, &out_h);
    if (win_w <= 0 || win_h <= 0 || out_w <= 0 || out_h <= 0) win_w = out_w = win_h = out_h = 1;
#define PX(x) ((int)((long long)(x) * out_w / win_w))
#define PY(y) ((int)((long long)(y) * out_h / win_h))
    while (SDL_PollEvent(&e)) {
        gui_cmd c = {GUI_CMD_NONE, 0, 0};
        switch (e.type) {
        case SDL_QUIT: c.kind = GUI_CMD_QUIT; A->st.help = A->st.menu = false; break;
        case SDL_KEYDOWN: c = gui_key_cmd(&A->st, key_of(e.key.keysym.sym), (e.key.keysym.mod & KMOD_SHIFT) != 0);
            if (e.key.keysym.sym == SDLK_SLASH && !(e.key.keysym.mod & KMOD_SHIFT) && A->st.predict.phase != GUI_PREDICT_ASK)
                c.kind = GUI_CMD_HELP;
            break;
        case SDL_MOUSEMOTION: c = (gui_cmd){GUI_CMD_MOUSE_MOVE, PX(e.motion.x), PY(e.motion.y)}; break;
        case SDL_MOUSEBUTTONDOWN:
            if (e.button.button == SDL_BUTTON_LEFT) c = (gui_cmd){GUI_CMD_MOUSE_DOWN, PX(e.button.x), PY(e.button.y)};
            break;
        case SDL_MOUSEBUTTONUP:
            if (e.button.button == SDL_BUTTON_LEFT) c = (gui_cmd){GUI_CMD_MOUSE_UP, PX(e.button.x), PY(e.button.y)};
            break;
        case SDL_WINDOWEVENT:
            if (e.window.event == SDL_WINDOWEVENT_SIZE_CHANGED) {
                int w, h;
                SDL_GetRendererOutputSize(A->ren, &w, &h);
                c = (gui_cmd){GUI_CMD_RESIZE, w, h};
            }
            break;
        default: break;
        }
        if (c.kind != GUI_CMD_NONE) gui_update(&A->st, &A->show, &c);
    }
#undef PX
#undef PY
}

void app_draw(app *A)
{
    gui_draw_begin(&A->draw, &A->st, &A->show);
    if (A->menu) gui_frame_draw(&A->draw, &A->st, &A->show, (const char *const *)A->menu, A->menu_n);
    else gui_frame_draw(&A->draw, &A->st, &A->show, (const char *const *)A->cat.names, A->cat.n);
}

/* Whether the state differs from the one last drawn (lazy drawing), ignoring the counters that
 * change every frame without changing the picture. */
static bool app_changed(app *A)
{
    if (!A->have_drawn || A->st.save_png || A->match_line >= 0) return true;
    gui_state cur;
    memcpy(&cur, &A->st, sizeof cur);
    cur.frames = A->drawn.frames;
    cur.acc_ms = A->drawn.acc_ms;
    return memcmp(&cur, &A->drawn, sizeof cur) != 0;
}

/* One frame: script, poll, update (time and requests), draw, save, present. */
bool app_frame(app *A, int dt_ms)
{
    if (A->script.n) script_step(A);
    poll(A);
    gui_cmd tick = {GUI_CMD_TICK, dt_ms, 0};
    gui_update(&A->st, &A->show, &tick);
    if (A->st.resplit) {
        resplit(A, A->st.resplit);
        A->st.resplit = 0;
    }
    if (A->st.lesson_changed) {
        A->st.lesson_changed = false;
        if (app_load_entry(A, A->st.lesson)) A->st.quit = true;
    }
    if (A->st.try_request) {
        A->st.try_request = false;
        if (app_try(A)) A->st.quit = true;
    }
    if (A->st.quiz_want >= 0) {
        int q = A->st.quiz_want;
        A->st.quiz_want = -1;
        if (A->quiz_open) A->quiz_open(A->quiz_ctx, q);
        else quiz_start(A, q);
    }
    if (A->st.quiz.phase == GUI_QUIZ_DONE && !A->st.quiz.kept) quiz_keep(A);
    if (A->win) {
        bool fs = (SDL_GetWindowFlags(A->win) & SDL_WINDOW_FULLSCREEN_DESKTOP) != 0;
        if (fs != A->st.fullscreen) SDL_SetWindowFullscreen(A->win, A->st.fullscreen ? SDL_WINDOW_FULLSCREEN_DESKTOP : 0);
    }
    if (A->lazy) {
        if (!app_changed(A)) return false;
        memcpy(&A->drawn, &A->st, sizeof A->drawn);
        A->have_drawn = true;
    }
    app_draw(A);
    if (A->st.save_png) {
        A->st.save_png = false;
        char path[512];
        if (A->png_count < 0) {   /* a script's save line names the file */
            snprintf(path, sizeof path, "%s", A->script.lines[-1 - A->png_count].path);
            A->png_count = 0;
        } else {
            snprintf(path, sizeof path, "flashstep-%s-%04lld.png", A->show.name, (long long)A->st.step);
        }
        char msg[600];
        if (save_frame(A, path) == 0) snprintf(msg, sizeof msg, "saved %s", path);
        else snprintf(msg, sizeof msg, "could not save %s", path);
        memcpy(A->st.status, msg, sizeof A->st.status - 1);
        A->st.status[sizeof A->st.status - 1] = 0;
        A->st.status_ttl = 120;
        fprintf(stderr, "flashstep: %s\n", msg);
        if (A->saved && !strncmp(msg, "saved ", 6)) A->saved(A->saved_ctx, path);
    }
    if (A->match_line >= 0) {
        match_frame(A, &A->script.lines[A->match_line]);
        A->match_line = -1;
    }
    SDL_RenderPresent(A->ren);
    return true;
}

void app_shutdown(app *A)
{
    gui_draw_free(&A->draw);
    gui_show_free(&A->show);
    menu_free(A);
    if (A->have_course) fs_course_free(&A->course);
    A->have_course = false;
    gui_catalog_free(&A->cat);
    gui_script_free(&A->script);
    if (A->ren) SDL_DestroyRenderer(A->ren);
    if (A->win) SDL_DestroyWindow(A->win);
    if (A->surface) SDL_FreeSurface(A->surface);
    if (A->ttf) TTF_Quit();
    SDL_Quit();
}

static int app_load_what(app *A, const char *name);

/* Load what to show (app_load_what), then the course beside the lessons, for the lesson list's
 * quizzes and the end of each section. */
int app_load(app *A, const char *name)
{
    int rc = app_load_what(A, name);
    if (rc) return rc;
    if (A->cat.paths && A->cat.n > 0) {
        snprintf(A->dir, sizeof A->dir, "%s", A->cat.paths[0]);
        char *slash = strrchr(A->dir, '/');
        if (slash) *slash = 0;
        else snprintf(A->dir, sizeof A->dir, ".");
        fs_loc_error err;
        A->have_course = fs_course_load(A->dir, &A->course, &err);
    }
    app_course_mark(A);
    return 0;
}

/* Load what to show: a demo, a lesson of the catalogue, or a lesson file by path. */
static int app_load_what(app *A, const char *name)
{
    if (gui_catalog_open(&A->cat, stderr)) return 2;
    int idx = 0;
    if (A->opt->problem || A->opt->trace_file) {   /* one's own problem, or a saved trace */
        gui_state_init(&A->st, A->opt->w, A->opt->h, A->cat.n, 0);
        A->st.lesson = -1;   /* none of the catalogue: L lists them, a number opens one */
        A->st.menu_sel = 0;
        if (A->opt->trace_file) return gui_trace_load(A->opt->trace_file, &A->show, stderr);
        return gui_problem_load(A->opt->problem, A->opt->problem_parent, A->opt->problem_n_parent, A->opt->problem_title,
                                A->opt->problem_source, &A->show, stderr);
    }
    if (A->opt->demo) {
        idx = -1;
        for (int i = 0; i < A->cat.n && !A->cat.paths; i++) if (!strcmp(A->cat.names[i], A->opt->demo)) idx = i;
        if (idx < 0) {
            gui_state_init(&A->st, A->opt->w, A->opt->h, A->cat.n, 0);
            if (gui_demo_load(A->opt->demo, &A->show, stderr)) return 2;
            return 0;
        }
    } else if (name) {
        idx = gui_catalog_find(&A->cat, name);
        if (idx < 0) {
            struct stat sb;
            if (stat(name, &sb) == 0 && S_ISREG(sb.st_mode)) {
                gui_state_init(&A->st, A->opt->w, A->opt->h, A->cat.n, 0);
                return gui_lesson_load_variation(name, A->opt->variation ? A->opt->variation : "", &A->show, stderr);
            }
            fprintf(stderr, "flashstep: no lesson matches '%s' (see 'flashstep lessons')\n", name);
            return 2;
        }
    }
    gui_state_init(&A->st, A->opt->w, A->opt->h, A->cat.n, idx);
    if (A->opt->variation && *A->opt->variation && A->cat.paths)   /* play LESSON --bq 3 … */
        return gui_lesson_load_variation(A->cat.paths[idx], A->opt->variation, &A->show, stderr);
    return gui_catalog_load(&A->cat, idx, &A->show, stderr);
}

void app_apply_options(app *A)
{
    const gui_options *o = A->opt;
    A->st.scale_pct = o->scale_pct;
    A->st.theme = o->theme;
    A->st.autoplay = o->autoplay;
    A->st.exit_at_end = o->exit_at_end;
    if (o->speed_eps > 0) {
        int best = 0;
        for (int i = 0; i < GUI_SPEEDS; i++)
            if (fabs(log(gui_speed_eps(i) / o->speed_eps)) < fabs(log(gui_speed_eps(best) / o->speed_eps))) best = i;
        A->st.speed = best;
    }
    /* Questions are on unless asked off: --no-questions (a teacher projecting), --autoplay (it
     * plays by itself: nobody is there to answer), and `render`, which draws frames. */
    A->st.predict.phase = o->no_questions || o->autoplay ? GUI_PREDICT_OFF : GUI_PREDICT_ARMED;
    gui_state_attach(&A->st, &A->show);
    if (o->start_step > 0 && A->st.n > 0) {
        A->st.step = o->start_step < A->st.n ? o->start_step : A->st.n - 1;
        if (A->st.predict.phase != GUI_PREDICT_OFF) A->st.predict.phase = GUI_PREDICT_ARMED;   /* not step 0's */
    }
}

int gui_play(const char *name, const gui_options *o)
{
    app A;
    memset(&A, 0, sizeof A);
    A.opt = o;
    A.match_line = -1;
    if (o->script && gui_script_load(o->script, &A.script, stderr)) return 2;
    if (SDL_Init(SDL_INIT_VIDEO) != 0) {
        fprintf(stderr, "flashstep: no display for the window (%s)\n", SDL_GetError());
        gui_script_free(&A.script);
        SDL_Quit();
        return GUI_NO_DISPLAY;
    }
    int rc = 0;
    const char *drv = SDL_GetCurrentVideoDriver();
    if (!drv || !strcmp(drv, "offscreen") || !strcmp(drv, "dummy") || !strcmp(drv, "evdev")) {
        fprintf(stderr, "flashstep: no display for the window (SDL video driver '%s')\n", drv ? drv : "none");
        gui_script_free(&A.script);
        SDL_Quit();
        return GUI_NO_DISPLAY;
    }
    if (TTF_Init() != 0) {
        fprintf(stderr, "flashstep: SDL_ttf: %s\n", TTF_GetError());
        app_shutdown(&A);
        return 2;
    }
    A.ttf = true;
    if ((rc = app_load(&A, name)) != 0) { app_shutdown(&A); return rc; }
    Uint32 flags = SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI | (o->fullscreen ? SDL_WINDOW_FULLSCREEN_DESKTOP : 0);
    A.win = SDL_CreateWindow("flashstep", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, o->w, o->h, flags);
    if (!A.win) {
        fprintf(stderr, "flashstep: cannot open a window (%s)\n", SDL_GetError());
        app_shutdown(&A);
        return GUI_NO_DISPLAY;
    }
    SDL_SetWindowMinimumSize(A.win, 640, 360);
    A.ren = SDL_CreateRenderer(A.win, -1, SDL_RENDERER_ACCELERATED | SDL_RENDERER_PRESENTVSYNC);
    if (!A.ren) A.ren = SDL_CreateRenderer(A.win, -1, SDL_RENDERER_SOFTWARE);
    if (!A.ren) {
        fprintf(stderr, "flashstep: cannot create a renderer (%s)\n", SDL_GetError());
        app_shutdown(&A);
        return GUI_NO_DISPLAY;
    }
    if (gui_draw_init(&A.draw, A.ren, o->font_path, stderr)) { app_shutdown(&A); return 2; }
    int w, h;
    SDL_GetRendererOutputSize(A.ren, &w, &h);
    A.st.w = w;
    A.st.h = h;
    app_apply_options(&A);
    A.st.fullscreen = o->fullscreen;
    double start = gui_now(), last = start, first_frame = 0, sum = 0, worst = 0;
    long frames = 0;
    bool scripted = A.script.n > 0;
    while (!A.st.quit) {
        double now = gui_now();
        int dt = scripted ? 16 : (int)lround((now - last) * 1000.0);
        last = now;
        double t_frame = gui_now();
        app_frame(&A, dt);
        double took = gui_now() - t_frame;
        if (frames == 0) first_frame = gui_now() - o->t0;
        else { sum += took; if (took > worst) worst = took; }
        frames++;
        if (scripted && A.script_pos >= A.script.n && A.script_wait == 0 && !A.st.playing) A.st.quit = true;
        if (o->max_seconds > 0 && now - start > o->max_seconds) {
            fprintf(stderr, "flashstep: stopped after %d s (--max-seconds)\n", o->max_seconds);
            rc = 1;
            break;
        }
        /* Idle (paused, no script): sleep until input arrives, redrawing at least 10 times a
         * second for the status line, instead of drawing as fast as possible. */
        if (!A.st.playing && !scripted) SDL_WaitEventTimeout(NULL, 100);
    }
    if (o->fps_report)
        printf("frames %ld, first frame %.1f ms after start, draw+present mean %.2f ms, worst %.2f ms (%dx%d)\n", frames,
               first_frame * 1e3, frames > 1 ? sum / (frames - 1) * 1e3 : 0, worst * 1e3, A.st.w, A.st.h);
    if (A.script_fail) {
        fprintf(stderr, "flashstep: %d script expectation%s failed\n", A.script_fail, A.script_fail == 1 ? "" : "s");
        rc = 1;
    }
    app_shutdown(&A);
    return rc;
}

/* An offscreen target: a surface and a software renderer; no video driver is involved. */
static int offscreen_open(app *A, int w, int h)
{
    SDL_SetMainReady();
    if (SDL_Init(0) != 0) { fprintf(stderr, "flashstep: SDL: %s\n", SDL_GetError()); return 2; }
    if (TTF_Init() != 0) { fprintf(stderr, "flashstep: SDL_ttf: %s\n", TTF_GetError()); return 2; }
    A->ttf = true;
    A->surface = SDL_CreateRGBSurfaceWithFormat(0, w, h, 32, SDL_PIXELFORMAT_ARGB8888);
    if (!A->surface) { fprintf(stderr, "flashstep: cannot make a %dx%d frame: %s\n", w, h, SDL_GetError()); return 2; }
    A->ren = SDL_CreateSoftwareRenderer(A->surface);
    if (!A->ren) { fprintf(stderr, "flashstep: software renderer: %s\n", SDL_GetError()); return 2; }
    return 0;
}

/* Once a renderer is open (rc == 0): load the lesson or demo and the font, take the frame size
 * and the options. Any failure (rc included) shuts everything down and is returned. */
static int app_start(app *A, const char *name, int rc)
{
    if (!rc) rc = app_load(A, name);
    if (!rc && gui_draw_init(&A->draw, A->ren, A->opt->font_path, stderr)) rc = 2;
    if (rc) {
        app_shutdown(A);
        return rc;
    }
    A->st.w = A->opt->w;
    A->st.h = A->opt->h;
    app_apply_options(A);
    return 0;
}

/* Steps a … b as the frames of an animation: the same pixels save_frame writes as PNG. */
static int render_anim(app *A, int64_t a, int64_t b, const char *out)
{
    int w = A->st.w, h = A->st.h;
    gui_anim *an;
    int rc = gui_anim_open(&an, out, w, h, A->opt->fps > 0 ? A->opt->fps : 2.0, stderr);
    if (rc) return rc;
    uint8_t *px = malloc((size_t)w * h * 3);
    if (!px) { fprintf(stderr, "flashstep: out of memory\n"); gui_anim_close(an, false, stderr); return 2; }
    for (int64_t k = a; k <= b && !rc; k++) {
        A->st.step = k;
        app_draw(A);
        if (SDL_RenderReadPixels(A->ren, NULL, SDL_PIXELFORMAT_RGB24, px, w * 3) != 0) {
            fprintf(stderr, "flashstep: cannot read a frame: %s\n", SDL_GetError());
            rc = 2;
        } else {
            rc = gui_anim_frame(an, px, w * 3, stderr);
        }
    }
    free(px);
    int rc2 = gui_anim_close(an, rc == 0, stderr);
    if (!rc && !rc2) printf("%s (%lld frames)\n", out, (long long)(b - a + 1));
    return rc ? rc : rc2;
}

int gui_render(const char *name, int64_t a, int64_t b, const char *out, const char *out_dir, const gui_options *o)
{
    app A;
    memset(&A, 0, sizeof A);
    gui_options ro = *o;
    ro.no_questions = true;   /* frames of the steps themselves: no question stands before one */
    A.opt = o = &ro;
    int rc = offscreen_open(&A, o->w, o->h);
    if ((rc = app_start(&A, name, rc)) != 0) return rc;
    A.st.playing = false;
    int64_t n = A.st.n;
    if (n <= 0) { a = b = 0; }
    else {
        if (a < 0) a = 0;
        if (b > n - 1) b = n - 1;
        if (a > n - 1) {
            fprintf(stderr, "flashstep: step %lld is past the end (the trace has steps 0..%lld)\n", (long long)a, (long long)(n - 1));
            app_shutdown(&A);
            return 2;
        }
    }
    if (out && gui_anim_kind_of(out) != GUI_ANIM_NONE) {   /* one animation of steps a … b */
        rc = render_anim(&A, a, b, out);
        app_shutdown(&A);
        return rc;
    }
    for (int64_t k = a; k <= b; k++) {
        A.st.step = k;
        app_draw(&A);
        char path[4096];
        if (out && a == b) snprintf(path, sizeof path, "%s", out);
        else snprintf(path, sizeof path, "%s/%s-%04lld.png", out_dir ? out_dir : ".", A.show.name, (long long)k);
        if (save_frame(&A, path)) {
            fprintf(stderr, "flashstep: cannot write %s\n", path);
            rc = 2;
            break;
        }
        printf("%s\n", path);
    }
    app_shutdown(&A);
    return rc;
}

int gui_bench(const char *name, int frames, bool window, const gui_options *o)
{
    app A;
    memset(&A, 0, sizeof A);
    gui_options bo = *o;
    bo.no_questions = true;   /* it times the steps' frames */
    A.opt = o = &bo;
    int rc;
    if (window) {
        if (SDL_Init(SDL_INIT_VIDEO) != 0) { fprintf(stderr, "flashstep: no display (%s)\n", SDL_GetError()); return GUI_NO_DISPLAY; }
        rc = TTF_Init() ? 2 : 0;
        A.ttf = rc == 0;
        if (!rc) {
            A.win = SDL_CreateWindow("flashstep bench", 0, 0, o->w, o->h, 0);
            A.ren = A.win ? SDL_CreateRenderer(A.win, -1, SDL_RENDERER_ACCELERATED) : NULL;
            if (!A.ren && A.win) A.ren = SDL_CreateRenderer(A.win, -1, SDL_RENDERER_SOFTWARE);
            if (!A.ren) rc = GUI_NO_DISPLAY;
        }
    } else {
        rc = offscreen_open(&A, o->w, o->h);
    }
    if ((rc = app_start(&A, name, rc)) != 0) return rc;
    SDL_RendererInfo info;
    SDL_GetRendererInfo(A.ren, &info);
    double t_first = 0, sum = 0, worst = 0;
    for (int f = 0; f < frames; f++) {
        A.st.step = A.st.n > 0 ? f % A.st.n : 0;
        double t = gui_now();
        app_draw(&A);
        SDL_RenderPresent(A.ren);
        if (window) SDL_RenderReadPixels(A.ren, NULL, SDL_PIXELFORMAT_RGB24, NULL, 0);   /* (no-op when NULL; keeps timing honest) */
        double took = gui_now() - t;
        if (f == 0) t_first = gui_now() - o->t0;
        else { sum += took; if (took > worst) worst = took; }
    }
    printf("bench: %s, %dx%d, renderer %s, %s, %lld events\n", A.show.name, A.st.w, A.st.h, info.name,
           window ? "window" : "offscreen", (long long)A.st.n);
    printf("first frame: %.1f ms after the command started\n", t_first * 1e3);
    if (frames > 1)
        printf("frame time over %d frames (one event per frame): mean %.2f ms (%.0f fps), worst %.2f ms\n", frames - 1,
               sum / (frames - 1) * 1e3, (frames - 1) / sum, worst * 1e3);
    app_shutdown(&A);
    return 0;
}

/* The fit check: every step of show laid out at w × h and scale_pct with the fonts of font_path,
 * nothing painted (a gui_draw without a renderer). The first text with a number in it that does
 * not show whole is described in why. */
int64_t gui_fit_check(const gui_show *show, int w, int h, int scale_pct, const char *font_path, char *why, size_t n,
                      int64_t *broken)
{
    if (why && n) why[0] = 0;
    if (broken) *broken = 0;
    SDL_SetMainReady();
    if (SDL_Init(0) != 0 || TTF_Init() != 0) {
        if (why) snprintf(why, n, "SDL or SDL_ttf: %s", SDL_GetError());
        return -2;
    }
    gui_draw *d = calloc(1, sizeof *d);
    int64_t bad = -1;
    if (!d || gui_draw_init(d, NULL, font_path, stderr)) {
        if (why) snprintf(why, n, "cannot open the font");
        bad = -2;
    } else {
        gui_state s;
        gui_state_init(&s, w, h, 1, 0);
        s.scale_pct = scale_pct;
        gui_state_attach(&s, show);
        s.hover = GUI_HOVER_NONE;
        const char *names[1] = {show->name};
        int64_t steps = s.n > 0 ? s.n : 1;
        for (int64_t k = 0; k < steps && bad < 0; k++) {
            s.step = s.n > 0 ? k : 0;
            gui_draw_begin(d, &s, show);
            d->cuts = 0;
            d->breaks = 0;
            gui_frame_draw(d, &s, show, names, 1);
            if (broken) *broken += d->breaks;
            if (d->cuts) {
                bad = s.step;
                if (why) snprintf(why, n, "%s", d->cut_text);
            }
        }
        /* Then the two frames that show the lesson's introduction: the window as it opens with
         * its questions on, where a question about step 0 covers the scene and the bar says the
         * introduction, and the introduction's own box (I). Text larger than 100 % leaves the
         * bar too little room for a long introduction: there it ends in " …" and hovering the
         * bar shows it whole (frame.c's draw_narration), so only the box is checked. */
        for (int view = scale_pct > 100; view < 2 && bad < 0 && show->intro[0]; view++) {
            gui_state t;
            gui_state_init(&t, w, h, 1, 0);
            t.scale_pct = scale_pct;
            t.predict.phase = view == 0 ? GUI_PREDICT_ARMED : GUI_PREDICT_OFF;
            gui_state_attach(&t, show);
            if (view == 0 && (!gui_predict_covers(&t) || t.predict.at == GUI_AT_CLAIMS)) continue;
            t.intro = view == 1;
            gui_draw_begin(d, &t, show);
            d->cuts = 0;
            gui_frame_draw(d, &t, show, names, 1);
            if (d->cuts) {
                bad = 0;
                if (why) snprintf(why, n, "%s: %s", view == 0 ? "with step 0's question over the scene" : "in the introduction's box (I)",
                                  d->cut_text);
            }
        }
        gui_draw_free(d);
    }
    free(d);
    TTF_Quit();
    SDL_Quit();
    return bad;
}

/* How badly the sampled steps lay out in a t->w × h window: 0 when every one is whole at the
 * scene's own text size; else the worst fitting step (fit level) a step needed, or, when a number
 * is cut, more than any fit level. */
static int misfit_at(gui_draw *d, gui_state *t, const gui_show *show, const int64_t *steps, int ns, int h, int body_px,
                     int floor_pct)
{
    const char *names[1] = {show->name};
    t->h = h;
    if (body_px > 0) {
        int z = gui_layout_scale_for(t->w, h, body_px);
        t->scale_pct = z > floor_pct ? z : floor_pct;
    }
    int worst = 0;
    for (int i = 0; i < ns; i++) {
        t->step = steps[i];
        gui_draw_begin(d, t, show);
        d->cuts = 0;
        d->breaks = 0;
        gui_frame_draw(d, t, show, names, 1);
        if (d->cuts) return 1000;
        if (d->fit_level > worst) worst = d->fit_level;
    }
    return worst;
}

int gui_fit_height(gui_draw *d, const gui_state *s, const gui_show *show, int h_max, int body_px)
{
    if (!gui_layout_compute(s->w, s->h, s->scale_pct).portrait || h_max <= s->h) return s->h;
    /* The steps: spread evenly over the trace, the longest narration (the bar's height), and the
     * last (the ending box takes its room from the side panel there). */
    int64_t steps[26];
    int ns = 0;
    if (s->n <= 0) steps[ns++] = 0;
    else {
        int64_t every = s->n > 24 ? s->n / 24 : 1;
        for (int64_t k = 0; k < s->n && ns < 24; k += every) steps[ns++] = k;
        if (s->narr_longest >= 0 && s->narr_longest < s->n) steps[ns++] = s->narr_longest;
        steps[ns++] = s->n - 1;
    }
    gui_state *t = malloc(sizeof *t);
    if (!t) return s->h;
    *t = *s;
    t->hover = GUI_HOVER_NONE;
    SDL_Renderer *r = d->r;
    d->r = NULL;
    /* What the last frame drew (the page reports it) is kept: the passes below only measure. */
    int min_text = d->min_text, min_cell_text = d->min_cell_text, fit_level = d->fit_level, cuts = d->cuts,
        breaks = d->breaks;
    gui_layout L = d->L;
    /* The smallest height at which the steps lay out whole at fit level 0; h_max when none does
     * (a claims list whose lines wrap at any height gets h_max: a smaller canvas that only lays out
     * "no worse" can leave claims under the ending or shrink the list's text). */
    int lo = s->h, hi = h_max, found = h_max;
    int at_hi = misfit_at(d, t, show, steps, ns, hi, body_px, s->scale_pct), want = 0;
    if (misfit_at(d, t, show, steps, ns, lo, body_px, s->scale_pct) <= want) found = lo;
    else if (at_hi <= want) {
        /* lo does not do as well as hi: bisect to 8 pixels */
        while (hi - lo > 8) {
            int mid = lo + (hi - lo) / 2;
            if (misfit_at(d, t, show, steps, ns, mid, body_px, s->scale_pct) <= want) hi = mid;
            else lo = mid;
        }
        found = hi;
    }
    d->r = r;
    d->min_text = min_text;
    d->min_cell_text = min_cell_text;
    d->fit_level = fit_level;
    d->cuts = cuts;
    d->breaks = breaks;
    d->L = L;
    free(t);
    return found;
}

int gui_portrait_height(const gui_show *show, int w, int view_h, int body_px, const char *font_path)
{
    SDL_SetMainReady();
    if (SDL_Init(0) != 0 || TTF_Init() != 0) return -2;
    gui_draw *d = calloc(1, sizeof *d);
    int h = -2;
    if (d && !gui_draw_init(d, NULL, font_path, stderr)) {
        gui_state s;
        gui_state_init(&s, w, view_h, 1, 0);
        s.scale_pct = 100;
        s.ending_room = GUI_PAGE_END_ROOM;
        gui_state_attach(&s, show);
        h = gui_fit_height(d, &s, show, 3 * w > view_h ? 3 * w : view_h, body_px);
        gui_draw_free(d);
    }
    free(d);
    TTF_Quit();
    SDL_Quit();
    return h;
}

/* app.h: the window's platform layer, as the native window (app.c) and the web page
 * (src/web/web.c) share it (internal to the window; includes SDL through draw.h).
 *
 * An app is one window's worth of state: the SDL window and renderer (or an offscreen surface),
 * the painting layer, the catalogue, what is shown and the state update changes. app_frame runs
 * one frame: script, poll (SDL events -> gui_cmd), update, draw, save, present. The native loop
 * calls it in a while loop (gui_play); the page calls it from the browser's animation frames.
 */
#ifndef FS_GUI_APP_H
#define FS_GUI_APP_H

#include "gui/draw.h"

typedef struct {
    SDL_Window *win;
    SDL_Renderer *ren;
    SDL_Surface *surface;    /* offscreen target, or NULL */
    gui_draw draw;
    gui_catalog cat;
    gui_show show;
    gui_state st;
    const gui_options *opt;
    gui_script script;
    int script_pos, script_wait, script_fail;
    int png_count;
    int match_line;          /* a script line whose reference the next frame must match, or -1 */
    bool ttf;
    /* Called after a frame was saved as PNG (P key), with its path; NULL: nothing more. The page
     * uses it to hand the file to the browser as a download. */
    void (*saved)(void *ctx, const char *path);
    void *saved_ctx;
    /* Lazy drawing (the page): a frame whose state equals the last drawn one (the frame counter
     * and play clock aside) is not painted again; clear have_drawn to force the next one. */
    bool lazy, have_drawn;
    gui_state drawn;
    /* The course beside the catalogue's lessons (course.txt; have_course false when there is
     * none): which lesson ends a section, and the sections' quizzes. menu: the lesson list's
     * entries, the catalogue's names then "Quiz: SECTION (best b/n)" for each section (menu_n). */
    fs_course course;
    bool have_course;
    char dir[1024];          /* the lessons' directory */
    char **menu;
    int menu_n;
    /* A section's quiz was asked for (st.quiz_want): the page opens its own (in the page's HTML,
     * its score kept in the browser) through this; NULL: the window makes it (fs_quiz_make) and
     * keeps the score in the state file (fs_quiz_keep). */
    void (*quiz_open)(void *ctx, int section);
    void *quiz_ctx;
} app;

/* Load what o names into A (a demo, one's own problem, a saved trace, a lesson of the catalogue
 * or a lesson file; name NULL: the first lesson) and initialize the state. 0, or 2 with a
 * message on stderr. */
int app_load(app *A, const char *name);
/* The lesson list's entries and the state's course fields (n_sections, section_end) from the
 * course, again: after a lesson is loaded and after a quiz's score is kept. */
void app_course_mark(app *A);
/* Replace what is shown by catalogue entry i (state attached at step 0). 0, or 2. */
int app_load_entry(app *A, int i);
/* V: load the shown lesson again with its try: (or, in a variation, as written), from step 0; a
 * show with neither is left alone. 0, or 2 after a message on stderr. */
int app_try(app *A);
/* The options' scale, theme, play settings and start step, into the state (after app_load). */
void app_apply_options(app *A);
/* One frame of the loop, dt_ms milliseconds after the last. Returns whether it painted. */
bool app_frame(app *A, int dt_ms);
/* Paint the current state into the renderer (no present). */
void app_draw(app *A);
/* Free everything A holds and quit SDL (and SDL_ttf when it was started). */
void app_shutdown(app *A);

#endif

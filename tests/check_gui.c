/* check_gui.c: the window's logic without a display: layout, timeline, commands and the state
 * machine (stepping, significant events, predict mode), themes, scripts, PNG files, and frames
 * rendered offscreen compared with reference images under tests/gui/ref. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "engine/memory.h"
#include "gui/gui.h"
#include "lesson/lesson.h"
#include "test_problem.h"
#include "test_util.h"

static const int sizes[][2] = {{1280, 720}, {1920, 1080}, {3840, 2160}, {1024, 768}, {2560, 1080},
                               {390, 756}, {360, 552}, {768, 936}, {1080, 1920}};   /* the last four upright */

static bool inside(gui_rect in, gui_rect out)
{
    return in.x >= out.x && in.y >= out.y && in.x + in.w <= out.x + out.w && in.y + in.h <= out.y + out.h;
}

static bool overlap(gui_rect a, gui_rect b)
{
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

START_TEST(layout_fits_the_window)
{
    int scales[] = {50, 100, 150, 300};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int k = 0; k < 4; k++) {
            int w = sizes[s][0], h = sizes[s][1];
            gui_layout L = gui_layout_compute(w, h, scales[k]);
            gui_rect win = {0, 0, w, h};
            gui_rect parts[5] = {L.header, L.main, L.side, L.narration, L.timeline};
            for (int i = 0; i < 5; i++) {
                ck_assert_msg(inside(parts[i], win), "part %d outside %dx%d at %d%%", i, w, h, scales[k]);
                ck_assert_int_gt(parts[i].w, 0);
                ck_assert_int_gt(parts[i].h, 0);
                for (int j = i + 1; j < 5; j++)
                    ck_assert_msg(!overlap(parts[i], parts[j]), "parts %d and %d overlap at %dx%d %d%%", i, j, w, h, scales[k]);
            }
            ck_assert_int_ge(L.font_small, 7);
        }
}
END_TEST

/* Upright: the scene over the side panel, both as wide as the window, a three-line header; on
 * its side the side panel is beside the scene. A phone's width gets the page's text size. */
START_TEST(layout_portrait_stacks)
{
    gui_layout p = gui_layout_compute(390, 756, gui_layout_scale_for(390, 756, 14));
    ck_assert(p.portrait);
    ck_assert_int_eq(p.font, 14);
    ck_assert_int_eq(p.main.w, p.side.w);
    ck_assert_int_eq(p.main.x, p.side.x);
    ck_assert_int_ge(p.side.y, p.main.y + p.main.h);
    ck_assert_int_ge(p.header.h, 3 * p.font_small + p.font);
    ck_assert_int_le(p.main.h, 390);
    gui_layout l = gui_layout_compute(1280, 720, 100), sq = gui_layout_compute(800, 900, 100);
    ck_assert(!l.portrait && !sq.portrait);   /* up to 1.15 : 1 stays on its side */
    ck_assert_int_gt(l.side.x, l.main.x + l.main.w);
    ck_assert_int_eq(l.side.y, l.main.y);
    gui_rect b = gui_layout_body(&p);
    ck_assert(b.y == p.main.y && b.y + b.h == p.side.y + p.side.h && b.w == p.main.w);
}
END_TEST

START_TEST(layout_text_grows_with_the_window)
{
    /* Same look from 720p to 4K: the body text scales with the window (projector legibility). */
    gui_layout a = gui_layout_compute(1280, 720, 100), b = gui_layout_compute(3840, 2160, 100);
    ck_assert_int_ge(a.font, 14);
    ck_assert_int_eq(b.font, 3 * a.font);
    gui_layout c = gui_layout_compute(1280, 720, 200);
    ck_assert_int_eq(c.font, 2 * a.font);
    /* The side panel holds ~46 small characters at 100 %. */
    ck_assert_int_ge(a.side.w, (int)(46 * 0.6 * a.font_small));
}
END_TEST

START_TEST(timeline_round_trip)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int t = 0; t < 500; t++) {
        gui_rect tl = {fs_rng_int(&r, 0, 50), 600, fs_rng_int(&r, 50, 3000), 30};
        int64_t n = fs_rng_int(&r, 1, 20000);
        int64_t k = fs_rng_int(&r, 0, (int)n - 1);
        int x = gui_timeline_x_of(tl, n, k);
        FS_ASSERT_SEED(x >= tl.x && x < tl.x + tl.w, seed, "x %d outside the bar", x);
        int64_t back = gui_timeline_step_at(tl, n, x);
        /* One pixel covers (n − 1)/(w − 1) steps: the round trip lands within half of that. */
        double slack = 0.5 * (double)(n - 1) / (tl.w - 1) + 0.5;
        FS_ASSERT_SEED(fabs((double)(back - k)) <= slack, seed, "step %lld -> x %d -> %lld (n %lld, w %d)", (long long)k, x,
                       (long long)back, (long long)n, tl.w);
    }
    gui_rect tl = {10, 0, 101, 5};
    ck_assert_int_eq(gui_timeline_step_at(tl, 11, -50), 0);
    ck_assert_int_eq(gui_timeline_step_at(tl, 11, 5000), 10);
    ck_assert_int_eq(gui_timeline_step_at(tl, 11, 60), 5);
    ck_assert_int_eq(gui_timeline_x_of(tl, 11, 10), 110);
}
END_TEST

START_TEST(grid_fit_and_hit)
{
    gui_rect r = {100, 50, 700, 500};
    gui_grid g = gui_grid_fit(r, 6, 9, 40, 30, 0);
    ck_assert_int_eq(g.cell, 73);   /* min(660 / 9, 470 / 6) */
    int i, j;
    ck_assert(gui_grid_hit(&g, g.x0 + 2 * g.cell + 1, g.y0 + 5 * g.cell + g.cell - 1, &i, &j));
    ck_assert_int_eq(i, 5);
    ck_assert_int_eq(j, 2);
    ck_assert(!gui_grid_hit(&g, g.x0 - 1, g.y0, &i, &j));
    ck_assert(!gui_grid_hit(&g, g.x0 + 9 * g.cell, g.y0, &i, &j));
    ck_assert(inside((gui_rect){g.x0, g.y0, 9 * g.cell, 6 * g.cell}, r));
    gui_grid z = gui_grid_fit((gui_rect){0, 0, 10, 10}, 64, 64, 5, 5, 0);
    ck_assert_int_eq(z.cell, 0);
    ck_assert(!gui_grid_hit(&z, 6, 6, &i, &j));
}
END_TEST

START_TEST(themes_are_legible)
{
    for (int t = 0; t < GUI_THEME_COUNT; t++) {
        const gui_theme *th = gui_theme_get((gui_theme_id)t);
        /* WCAG AAA for body text on background and panels; AA for dim text. */
        ck_assert_msg(gui_contrast(th->text, th->bg) >= 7.0, "%s: text/bg %.2f", th->name, gui_contrast(th->text, th->bg));
        ck_assert_msg(gui_contrast(th->text, th->panel) >= 7.0, "%s: text/panel", th->name);
        ck_assert_msg(gui_contrast(th->dim, th->panel) >= 4.5, "%s: dim/panel %.2f", th->name, gui_contrast(th->dim, th->panel));
        /* Text drawn on a tile must stay readable (cells print their values). */
        ck_assert_msg(gui_contrast(th->text, th->full) >= 3.0, "%s: text/full %.2f", th->name, gui_contrast(th->text, th->full));
        ck_assert_msg(gui_contrast(th->text, th->partial) >= 3.0 || gui_contrast(th->bg, th->partial) >= 3.0, "%s", th->name);
        /* Full and partial tiles differ in lightness too, not only in hue. */
        ck_assert_msg(gui_contrast(th->full, th->partial) >= 1.2, "%s: full/partial %.2f", th->name, gui_contrast(th->full, th->partial));
    }
    ck_assert_double_eq_tol(gui_contrast(0x000000, 0xffffff), 21.0, 1e-9);
    ck_assert_int_eq(gui_mix(0x000000, 0xffffff, 0.5), 0x808080);
    ck_assert_int_eq(gui_mix(0x123456, 0xabcdef, 0), 0x123456);
}
END_TEST

START_TEST(keys_to_commands)
{
    gui_state s;
    gui_state_init(&s, 1280, 720, 5, 0);
    ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_SPACE, false).kind, GUI_CMD_PLAY_PAUSE);
    gui_cmd c = gui_key_cmd(&s, GUI_KEY_RIGHT, true);
    ck_assert_int_eq(c.kind, GUI_CMD_SIGNIFICANT);
    ck_assert_int_eq(c.a, 1);
    c = gui_key_cmd(&s, GUI_KEY_LEFT, false);
    ck_assert_int_eq(c.kind, GUI_CMD_STEP);
    ck_assert_int_eq(c.a, -1);
    c = gui_key_cmd(&s, GUI_KEY_3, false);
    ck_assert_int_eq(c.kind, GUI_CMD_LESSON);
    ck_assert_int_eq(c.a, 2);
    ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_MINUS, false).kind, GUI_CMD_SCALE);
    /* In predict input the same keys type. */
    s.predict.phase = GUI_PREDICT_ASK;
    c = gui_key_cmd(&s, GUI_KEY_3, false);
    ck_assert_int_eq(c.kind, GUI_CMD_CHAR);
    ck_assert_int_eq(c.a, '3');
    ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_MINUS, false).a, '-');
    ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_ENTER, false).kind, GUI_CMD_ENTER);
    /* NaN and -inf can be typed (a pitfall's question has NaN for an answer): N, A, I and F type
     * their letters while a question waits, and F is full screen again when none does */
    static const struct { gui_key k; char ch; } letters[] = {{GUI_KEY_N, 'n'}, {GUI_KEY_A, 'a'}, {GUI_KEY_I, 'i'}, {GUI_KEY_F, 'f'}};
    for (size_t i = 0; i < sizeof letters / sizeof *letters; i++) {
        c = gui_key_cmd(&s, letters[i].k, false);
        ck_assert_int_eq(c.kind, GUI_CMD_CHAR);
        ck_assert_int_eq(c.a, letters[i].ch);
    }
    s.predict.phase = GUI_PREDICT_ARMED;
    ck_assert_int_ne(gui_key_cmd(&s, GUI_KEY_F, false).kind, GUI_CMD_CHAR);
    s.predict.phase = GUI_PREDICT_ASK;
    /* With predict mode on and no question pending (or the answer shown), digits and the point
     * still type: they never pick a lesson, whether the lesson list is open or not. */
    for (int phase = GUI_PREDICT_ARMED; phase <= GUI_PREDICT_SHOWN; phase++)
        for (int menu = 0; menu < 2; menu++) {
            s.predict.phase = (gui_predict_phase)phase;
            s.menu = menu;
            for (int k = GUI_KEY_0; k <= GUI_KEY_9; k++) {
                c = gui_key_cmd(&s, (gui_key)k, false);
                ck_assert_int_eq(c.kind, GUI_CMD_CHAR);
                ck_assert_int_eq(c.a, '0' + (k - GUI_KEY_0));
            }
            ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_PERIOD, false).a, '.');
            ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_L, false).kind, GUI_CMD_MENU);
        }
    s.menu = false;
    s.predict.phase = GUI_PREDICT_OFF;
    ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_4, false).kind, GUI_CMD_LESSON);
    for (int k = 1; k < GUI_KEY_COUNT; k++) ck_assert_int_eq(gui_key_parse(gui_key_str((gui_key)k)), k);
}
END_TEST

/* While predict mode asks, the question has its own room below the scene at every supported
 * size, upright (a phone's page) too: it overlaps neither the scene, the side panel, the
 * narration nor the timeline, nor does the room the page keeps under it for its answer field
 * upright (answer_room; side by side that room is a strip inside the box, at its foot); it
 * holds at least four lines of the question besides (on a phone the scene above is short: the
 * side panel under it gives the room). */
START_TEST(predict_prompt_covers_nothing)
{
    static const int sz[][4] = {{1024, 768, 100, 0}, {1280, 720, 100, 0}, {1920, 1080, 100, 0}, {1920, 1080, 150, 0},
                                {1280, 720, 200, 0}, {3840, 2160, 100, 0}, {1280, 720, 100, 40},
                                {390, 844, 100, 0}, {390, 844, 100, 30}, {360, 640, 100, 30}, {1170, 2532, 100, 90},
                                {768, 1024, 100, 0}};
    gui_show sh;
    ck_assert_int_eq(gui_demo_load("tiled", &sh, stderr), 0);
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
        gui_state s;
        gui_state_init(&s, sz[i][0], sz[i][1], 1, 0);
        s.scale_pct = sz[i][2];
        s.answer_room = sz[i][3];
        gui_state_attach(&s, &sh);
        gui_layout before = gui_layout_for(&s, &sh);
        ck_assert_int_eq(before.prompt.h, 0);
        gui_cmd q = {GUI_CMD_PREDICT, 0, 0}, sig = {GUI_CMD_SIGNIFICANT, 1, 0};
        gui_update(&s, &sh, &q);
        for (int n = 0; n < 100 && s.predict.phase != GUI_PREDICT_ASK; n++) gui_update(&s, &sh, &sig);
        ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ASK);
        gui_layout L = gui_layout_for(&s, &sh);
        ck_assert_int_gt(L.prompt.h, 0);
        ck_assert(!overlap(L.prompt, L.main));
        ck_assert(!overlap(L.prompt, L.side));
        ck_assert(!overlap(L.prompt, L.narration));
        ck_assert(!overlap(L.prompt, L.timeline));
        ck_assert(!overlap(L.prompt, L.header));
        ck_assert(inside(L.prompt, (gui_rect){0, 0, sz[i][0], sz[i][1]}));
        ck_assert_int_gt(L.main.h, 0);
        /* upright the answer field's room is under the box; side by side, a strip at its foot
         * under the question's own lines */
        gui_rect room = {L.prompt.x, L.prompt.y + L.prompt.h, L.prompt.w, s.answer_room};
        if (!L.portrait)
            ck_assert_msg(L.prompt.h >= s.answer_room + 4 * L.font, "%dx%d: the question's box is %d pixels with %d kept",
                          sz[i][0], sz[i][1], L.prompt.h, s.answer_room);
        else if (room.h > 0) {
            ck_assert_msg(!overlap(room, L.main) && !overlap(room, L.side) && !overlap(room, L.narration),
                          "%dx%d: the answer field's room under the question is covered", sz[i][0], sz[i][1]);
            ck_assert(inside(room, (gui_rect){0, 0, sz[i][0], sz[i][1]}));
        }
        if (L.portrait)
            ck_assert_msg(L.prompt.h >= 4 * L.font, "%dx%d: the question's box is %d pixels, under four lines of %d",
                          sz[i][0], sz[i][1], L.prompt.h, L.font);
    }
    gui_show_free(&sh);
}
END_TEST

/* A w × h state at 100 % over sh, at step 0, with the page's room for its ending buttons kept
 * (60 pixels, as the page asks for them). */
static void page_state(gui_state *s, const gui_show *sh, int w, int h)
{
    gui_state_init(s, w, h, 1, 0);
    s->scale_pct = 100;
    s->ending_room = 60;
    gui_state_attach(s, sh);
}

/* At the last step of a section's last lesson the line offering its quiz has a box of its own
 * (L.section): it covers no other box and none of the scene grid's rows. It was drawn over the
 * scene's foot, which upright is the grid's last row (the GQA lesson's row 1 on a phone). */
START_TEST(section_line_covers_nothing)
{
    static const int sz[][2] = {{1280, 720}, {1024, 768}, {1920, 1080}, {390, 844}, {360, 640}, {768, 1024}, {390, 1100}};
    static const char *const demos[] = {"tiled", "gqa", "window", "tree", "002_04_paged_kv_cache"};   /* and a claims lesson */
    gui_catalog cat;
    ck_assert_int_eq(gui_catalog_open(&cat, stderr), 0);
    for (size_t d = 0; d < sizeof demos / sizeof demos[0]; d++) {
        gui_show sh;
        int ci = gui_catalog_find(&cat, demos[d]);
        if (ci >= 0) ck_assert_int_eq(gui_catalog_load(&cat, ci, &sh, stderr), 0);
        else ck_assert_int_eq(gui_demo_load(demos[d], &sh, stderr), 0);
        for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
            gui_state s;
            page_state(&s, &sh, sz[i][0], sz[i][1]);
            s.n_sections = 1;
            s.section_end = 0;
            if (s.n > 1) ck_assert_int_eq(gui_layout_for(&s, &sh).section.h, 0);   /* not before the last step */
            gui_cmd end = {GUI_CMD_END, 0, 0};
            gui_update(&s, &sh, &end);
            gui_layout L = gui_layout_for(&s, &sh);
            const char *tag = demos[d];
            ck_assert_msg(L.section.h >= L.font, "%s %dx%d: the section's line is %d pixels", tag, sz[i][0], sz[i][1], L.section.h);
            ck_assert_msg(inside(L.section, (gui_rect){0, 0, sz[i][0], sz[i][1]}), "%s %dx%d: outside", tag, sz[i][0], sz[i][1]);
            const gui_rect *other[] = {&L.header, &L.main, &L.side, &L.narration, &L.timeline, &L.ending};
            /* over a claims list, like the ending, it may lie on the list's area (main, side) */
            bool list = sh.scene == GUI_SCENE_CLAIMS;
            for (size_t k = 0; k < sizeof other / sizeof other[0]; k++)
                if (!(list && (k == 1 || k == 2)))
                    ck_assert_msg(!overlap(L.section, *other[k]), "%s %dx%d: the section's line covers box %zu", tag,
                                  sz[i][0], sz[i][1], k);
            gui_grid g = gui_scene_grid(&sh, &L);
            if (g.cell > 0)
                ck_assert_msg(g.y0 + g.rows * g.cell <= L.section.y || g.y0 >= L.section.y + L.section.h,
                              "%s %dx%d: the grid's rows (to y %d) run under the section's line at y %d", tag, sz[i][0],
                              sz[i][1], g.y0 + g.rows * g.cell, L.section.y);
        }
        gui_show_free(&sh);
    }
    gui_catalog_free(&cat);
}
END_TEST

/* The lesson `name` of the catalogue (opened into *cat) loaded into *sh; returns its index. */
static int catalog_show(gui_catalog *cat, const char *name, gui_show *sh)
{
    ck_assert_int_eq(gui_catalog_open(cat, stderr), 0);
    int ci = gui_catalog_find(cat, name);
    ck_assert_int_ge(ci, 0);
    ck_assert_int_eq(gui_catalog_load(cat, ci, sh, stderr), 0);
    return ci;
}

/* The ring's table sits at the top of its scene: side by side, the ending box goes under it (the
 * scene gives up the room) instead of over its device labels and first ring steps. */
START_TEST(ring_ending_leaves_the_table)
{
    static const int sz[][2] = {{1280, 720}, {1024, 768}, {1920, 1080}};
    gui_catalog cat;
    gui_show sh;
    catalog_show(&cat, "ring_01_four_devices_causal_n8", &sh);
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
        gui_state s;
        page_state(&s, &sh, sz[i][0], sz[i][1]);
        gui_cmd end = {GUI_CMD_END, 0, 0};
        gui_update(&s, &sh, &end);
        gui_layout L = gui_layout_for(&s, &sh);
        ck_assert_int_gt(L.ending.h, 0);
        ck_assert_msg(!overlap(L.ending, L.main) && !overlap(L.ending, L.narration) && !overlap(L.ending, L.header),
                      "%dx%d: the ending [%d %d %d %d] over the ring's scene [%d %d %d %d]", sz[i][0], sz[i][1], L.ending.x,
                      L.ending.y, L.ending.w, L.ending.h, L.main.x, L.main.y, L.main.w, L.main.h);
        ck_assert_int_ge(L.main.h, L.ending.h);
    }
    gui_show_free(&sh);
    gui_catalog_free(&cat);
}
END_TEST

/* A pointer resting on the grid while the layout changes under it (the question's box goes, the
 * scene grows): the hover is the cell now under the pointer, not the one that was there (a
 * tooltip named O[0][1] with the pointer on row 1 after End). */
START_TEST(hover_follows_the_layout)
{
    gui_show sh;
    ck_assert_int_eq(gui_demo_load("tiled", &sh, stderr), 0);
    gui_state s;
    gui_state_init(&s, 1280, 720, 1, 0);
    gui_state_attach(&s, &sh);
    gui_cmd q = {GUI_CMD_PREDICT, 0, 0}, sig = {GUI_CMD_SIGNIFICANT, 1, 0};
    if (s.predict.phase != GUI_PREDICT_ASK) gui_update(&s, &sh, &q);
    for (int n = 0; n < 100 && s.predict.phase != GUI_PREDICT_ASK; n++) gui_update(&s, &sh, &sig);
    ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ASK);
    gui_layout L0 = gui_layout_for(&s, &sh);
    gui_grid g0 = gui_scene_grid(&sh, &L0);
    ck_assert_int_gt(g0.cell, 0);
    /* the last row's first cell, near its bottom edge */
    gui_cmd mv = {GUI_CMD_MOUSE_MOVE, g0.x0 + g0.cell / 2, g0.y0 + g0.rows * g0.cell - 2};
    gui_update(&s, &sh, &mv);
    ck_assert_int_eq(s.hover, GUI_HOVER_CELL);
    ck_assert_int_eq(s.hover_i, g0.rows - 1);
    /* the answer shown, then the step: the question's box goes and the grid grows */
    gui_cmd enter = {GUI_CMD_ENTER, 0, 0}, right = {GUI_CMD_STEP, 1, 0};
    gui_update(&s, &sh, &enter);
    for (int n = 0; n < 10 && gui_layout_for(&s, &sh).prompt.h > 0; n++) gui_update(&s, &sh, &right);
    gui_layout L1 = gui_layout_for(&s, &sh);
    gui_grid g1 = gui_scene_grid(&sh, &L1);
    ck_assert_int_eq(L1.prompt.h, 0);
    ck_assert_msg(g1.cell != g0.cell || g1.y0 != g0.y0, "the grid did not move: nothing to test");
    int i, j;
    if (gui_grid_hit(&g1, mv.a, mv.b, &i, &j)) {
        ck_assert_int_eq(s.hover, GUI_HOVER_CELL);
        ck_assert_msg(s.hover_i == i && s.hover_j == j, "hover (%d, %d), the pointer on (%d, %d)", s.hover_i, s.hover_j, i, j);
    } else {
        ck_assert_int_ne(s.hover, GUI_HOVER_CELL);
    }
    gui_show_free(&sh);
}
END_TEST

/* A built-in demo in a 1280 × 720 window state (catalog_n lessons in the catalog), at step 0. */
static void demo_state(const char *demo, gui_show *sh, gui_state *s, int catalog_n)
{
    ck_assert_int_eq(gui_demo_load(demo, sh, stderr), 0);
    gui_state_init(s, 1280, 720, catalog_n, 0);
    gui_state_attach(s, sh);
}

START_TEST(stepping_and_significant)
{
    gui_show sh;
    gui_state s;
    demo_state("tiled", &sh, &s, 1);
    ck_assert_int_eq(s.n, sh.trace.n);
    gui_cmd right = {GUI_CMD_STEP, +1, 0}, left = {GUI_CMD_STEP, -1, 0}, sig = {GUI_CMD_SIGNIFICANT, +1, 0};
    gui_update(&s, &sh, &left);
    ck_assert_int_eq(s.step, 0);
    for (int i = 0; i < 5; i++) gui_update(&s, &sh, &right);
    ck_assert_int_eq(s.step, 5);
    /* Shift+Right lands on exactly the next event the engine calls significant. */
    int64_t want = -1;
    for (int64_t k = 6; k < sh.trace.n && want < 0; k++) if (fs_event_significant(&sh.trace.ev[k])) want = k;
    ck_assert_int_ge(want, 0);
    gui_update(&s, &sh, &sig);
    ck_assert_int_eq(s.step, want);
    gui_cmd sigb = {GUI_CMD_SIGNIFICANT, -1, 0};
    gui_update(&s, &sh, &sigb);
    ck_assert(s.step < want);
    ck_assert(s.step == 0 || fs_event_significant(&sh.trace.ev[s.step]));
    gui_cmd end = {GUI_CMD_END, 0, 0}, home = {GUI_CMD_HOME, 0, 0};
    gui_update(&s, &sh, &end);
    ck_assert_int_eq(s.step, sh.trace.n - 1);
    gui_update(&s, &sh, &right);
    ck_assert_int_eq(s.step, sh.trace.n - 1);
    gui_update(&s, &sh, &home);
    ck_assert_int_eq(s.step, 0);
    /* Play: time moves the cursor at the chosen speed; exit-at-end quits after the last. */
    s.exit_at_end = true;
    gui_cmd play = {GUI_CMD_PLAY_PAUSE, 0, 0}, tick = {GUI_CMD_TICK, 250, 0};
    gui_update(&s, &sh, &play);
    ck_assert(s.playing);
    gui_update(&s, &sh, &tick);   /* 2 events/s: 250 ms is not enough */
    ck_assert_int_eq(s.step, 0);
    gui_update(&s, &sh, &tick);
    ck_assert_int_eq(s.step, 1);
    for (int i = 0; i < 400 && !s.quit; i++) gui_update(&s, &sh, &tick);
    ck_assert(s.quit);
    ck_assert_int_eq(s.step, sh.trace.n - 1);
    gui_show_free(&sh);
}
END_TEST

START_TEST(timeline_click_and_drag)
{
    gui_show sh;
    gui_state s;
    demo_state("tiled", &sh, &s, 1);
    gui_layout L = gui_layout_compute(1280, 720, 100);
    int y = L.timeline.y + L.timeline.h / 4;
    int64_t k = sh.trace.n * 2 / 3;
    int x = gui_timeline_x_of(L.timeline, sh.trace.n, k);
    gui_cmd down = {GUI_CMD_MOUSE_DOWN, x, y};
    gui_update(&s, &sh, &down);
    ck_assert_int_eq(s.step, k);
    ck_assert(s.dragging);
    gui_cmd move = {GUI_CMD_MOUSE_MOVE, L.timeline.x, y + 300};   /* dragging off the bar still seeks */
    gui_update(&s, &sh, &move);
    ck_assert_int_eq(s.step, 0);
    gui_cmd up = {GUI_CMD_MOUSE_UP, 0, 0};
    gui_update(&s, &sh, &up);
    move.a = x;
    gui_update(&s, &sh, &move);
    ck_assert_int_eq(s.step, 0);   /* released: moving does not seek */
    /* Hover over a grid cell and click its row to follow it. */
    gui_grid g = gui_scene_grid(&sh, &L);
    ck_assert_int_gt(g.cell, 0);
    gui_cmd hov = {GUI_CMD_MOUSE_MOVE, g.x0 + 4 * g.cell + g.cell / 2, g.y0 + 3 * g.cell + g.cell / 2};
    gui_update(&s, &sh, &hov);
    ck_assert_int_eq(s.hover, GUI_HOVER_CELL);
    ck_assert_int_eq(s.hover_i, 3);
    ck_assert_int_eq(s.hover_j, 4);
    gui_cmd click = {GUI_CMD_MOUSE_DOWN, hov.a, hov.b};
    gui_update(&s, &sh, &click);
    ck_assert_int_eq(s.follow, 3);
    ck_assert_int_eq(gui_followed_row(&s, &sh), 3);
    gui_update(&s, &sh, &click);
    ck_assert_int_eq(s.follow, -1);
    gui_show_free(&sh);
}
END_TEST

/* ? cycles through the keys and the glossary's pages; Esc closes the glossary. */
START_TEST(help_then_glossary)
{
    gui_show sh;
    gui_state s;
    demo_state("softmax", &sh, &s, 1);
    const int pages = (fs_glossary_count() + GUI_GLOSSARY_PER_PAGE - 1) / GUI_GLOSSARY_PER_PAGE;
    ck_assert_int_gt(pages, 1);
    gui_cmd help = {GUI_CMD_HELP, 0, 0}, esc = {GUI_CMD_QUIT, 0, 0};
    ck_assert_int_eq(s.glossary, -1);
    gui_update(&s, &sh, &help);
    ck_assert(s.help);
    ck_assert_int_eq(s.glossary, -1);
    for (int p = 0; p < pages; p++) {
        gui_update(&s, &sh, &help);
        ck_assert(!s.help);
        ck_assert_int_eq(s.glossary, p);
    }
    gui_update(&s, &sh, &help);
    ck_assert_int_eq(s.glossary, -1);
    ck_assert(!s.help);
    gui_update(&s, &sh, &help);
    gui_update(&s, &sh, &help);
    ck_assert_int_eq(s.glossary, 0);
    gui_update(&s, &sh, &esc);   /* Esc closes the glossary, and does not quit */
    ck_assert_int_eq(s.glossary, -1);
    ck_assert(!s.quit);
    gui_show_free(&sh);
}
END_TEST

/* I shows the lesson's introduction whole over the scene (the window showed it only in the bar,
 * cut, while step 0's question covered the scene, and not at all with the questions off): I again
 * or Esc closes it, ? or L replace it, a new show starts without it, and a lesson with no
 * introduction says so, as one does whose claims are covered by their questions. While a
 * question waits, I types the i of inf instead. */
START_TEST(intro_box)
{
    gui_show sh;
    gui_state s;
    demo_state("softmax", &sh, &s, 1);
    ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_I, false).kind, GUI_CMD_INTRO);
    gui_cmd intro = {GUI_CMD_INTRO, 0, 0}, esc = {GUI_CMD_QUIT, 0, 0}, help = {GUI_CMD_HELP, 0, 0}, menu = {GUI_CMD_MENU, 0, 0};
    sh.intro[0] = 0;
    gui_update(&s, &sh, &intro);
    ck_assert(!s.intro);
    ck_assert_str_eq(s.status, "this lesson has no introduction");
    snprintf(sh.intro, sizeof sh.intro, "One pass keeps a running maximum m and a running sum.");
    s.playing = true;
    gui_update(&s, &sh, &intro);
    ck_assert(s.intro && !s.playing);
    gui_update(&s, &sh, &intro);
    ck_assert(!s.intro);
    gui_update(&s, &sh, &intro);
    gui_update(&s, &sh, &esc);   /* Esc closes it, and does not quit */
    ck_assert(!s.intro && !s.quit);
    gui_update(&s, &sh, &intro);
    gui_update(&s, &sh, &help);
    ck_assert(s.help && !s.intro);
    gui_update(&s, &sh, &intro);
    ck_assert(s.intro && !s.help);
    gui_update(&s, &sh, &menu);
    ck_assert(s.menu && !s.intro);
    gui_update(&s, &sh, &menu);
    gui_update(&s, &sh, &intro);
    gui_state_attach(&s, &sh);   /* a new show (a lesson loaded) */
    ck_assert(!s.intro);
    s.predict.phase = GUI_PREDICT_SHOWN;   /* questions on the claims: the introduction can state them */
    s.predict.at = GUI_AT_CLAIMS;
    ck_assert(gui_predict_covers(&s));
    gui_update(&s, &sh, &intro);
    ck_assert(!s.intro);
    ck_assert_str_eq(s.status, "the introduction shows once the questions on the figures are done");
    s.predict.phase = GUI_PREDICT_ASK;
    gui_cmd c = gui_key_cmd(&s, GUI_KEY_I, false);
    ck_assert(c.kind == GUI_CMD_CHAR && c.a == 'i');
    gui_show_free(&sh);
}
END_TEST

START_TEST(predict_mode)
{
    gui_show sh;
    gui_state s;
    demo_state("softmax", &sh, &s, 1);   /* z = [2, 5, 1, 4]: 5 is a new maximum at step 1 */
    ck_assert_int_gt(sh.n_questions, 0);
    gui_cmd q = {GUI_CMD_PREDICT, 0, 0}, right = {GUI_CMD_STEP, 1, 0}, enter = {GUI_CMD_ENTER, 0, 0};
    gui_update(&s, &sh, &q);
    ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ARMED);
    /* Right stops before the first step with a question, which is asked */
    for (int n = 0; n < 10 && s.predict.phase != GUI_PREDICT_ASK; n++) gui_update(&s, &sh, &right);
    ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ASK);
    const fs_question *asked = &sh.questions[s.predict.qi];
    ck_assert_int_eq(s.predict.at, asked->step);
    ck_assert_int_eq(s.step, asked->step - 1);
    char l[4][GUI_PREDICT_LEN];
    ck_assert(gui_predict_text(&s, &sh, l));
    ck_assert_msg(strstr(l[0], asked->prompt) != NULL, "the prompt is the question's: %s", l[0]);
    /* the answer as the players print it, typed key by key (a choice by its number) */
    char ans[64];
    if (asked->numeric) fs_question_answer(asked, ans, sizeof ans);
    else snprintf(ans, sizeof ans, "%d", asked->right + 1);
    for (const char *p = ans; *p; p++) {
        gui_cmd ch = {GUI_CMD_CHAR, *p, 0};
        gui_update(&s, &sh, &ch);
    }
    gui_update(&s, &sh, &enter);
    ck_assert_int_eq(s.predict.phase, GUI_PREDICT_SHOWN);
    ck_assert(s.predict.correct);
    ck_assert_int_eq(s.predict.n_right, 1);
    ck_assert(gui_predict_text(&s, &sh, l));
    ck_assert_msg(strstr(l[3], "Right:") && strstr(l[3], asked->why), "the feedback gives the reason: %s", l[3]);
    /* Right: the step's next question, or the step applied */
    int64_t at = s.predict.at;
    gui_update(&s, &sh, &right);
    ck_assert(s.predict.phase == GUI_PREDICT_ASK ? s.predict.at == at : s.step == at);
    /* a wrong answer is shown as not quite, with the right one */
    while (s.predict.phase != GUI_PREDICT_ASK && s.step < s.n - 1) gui_update(&s, &sh, &right);
    if (s.predict.phase == GUI_PREDICT_ASK) {
        for (const char *p = "9999"; *p; p++) {
            gui_cmd ch = {GUI_CMD_CHAR, *p, 0};
            gui_update(&s, &sh, &ch);
        }
        gui_update(&s, &sh, &enter);
        ck_assert(!s.predict.correct);
        ck_assert(gui_predict_text(&s, &sh, l));
        ck_assert_msg(strstr(l[2], "not quite") && strstr(l[3], "Not quite: you typed 9999"), "%s / %s", l[2], l[3]);
        gui_update(&s, &sh, &right);
    }
    /* a word is no answer: the answer shown, no mark against the student */
    while (s.predict.phase != GUI_PREDICT_ASK && s.step < s.n - 1) gui_update(&s, &sh, &right);
    if (s.predict.phase == GUI_PREDICT_ASK && sh.questions[s.predict.qi].numeric) {
        int asked_before = s.predict.n_asked, right_before = s.predict.n_right;
        for (const char *p = "why"; *p; p++) {
            gui_cmd ch = {GUI_CMD_CHAR, *p, 0};
            gui_update(&s, &sh, &ch);
        }
        gui_update(&s, &sh, &enter);
        ck_assert_int_eq(s.predict.n_asked, asked_before);
        ck_assert_int_eq(s.predict.n_right, right_before);
        ck_assert(gui_predict_text(&s, &sh, l));
        ck_assert_msg(strstr(l[2], "not counted") && strstr(l[3], "is not a number"), "%s / %s", l[2], l[3]);
        gui_update(&s, &sh, &right);
    }
    /* Typing "0.4" while no question is pending neither types nor switches lessons. */
    gui_update(&s, &sh, &q);
    gui_update(&s, &sh, &q);   /* off and on again: armed */
    ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ARMED);
    int64_t step = s.step;
    char before[sizeof s.predict.input];
    memcpy(before, s.predict.input, sizeof before);
    for (const char *p = "0.4"; *p; p++) {
        gui_cmd k = gui_key_cmd(&s, *p == '.' ? GUI_KEY_PERIOD : (gui_key)(GUI_KEY_0 + (*p - '0')), false);
        gui_update(&s, &sh, &k);
    }
    ck_assert(!s.lesson_changed);
    ck_assert_int_eq(s.lesson, 0);
    ck_assert_int_eq(s.step, step);
    ck_assert_str_eq(s.predict.input, before);
    ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ARMED);
    gui_show_free(&sh);
}
END_TEST

/* With the questions on, a question about step 0 is asked as soon as the show is attached, over
 * a covered scene (gui_predict_covers); Right after its answer asks step 0's next one or shows
 * the step. With them off, nothing is asked. */
START_TEST(predict_step0_first)
{
    gui_show sh;
    gui_state s;
    demo_state("softmax", &sh, &s, 1);
    ck_assert_int_eq(s.predict.phase, GUI_PREDICT_OFF);   /* off: nothing asked, nothing covered */
    ck_assert(!gui_predict_covers(&s));
    int at0 = 0;
    for (int i = 0; i < sh.n_questions; i++) at0 += sh.questions[i].step == 0;
    ck_assert_int_gt(at0, 0);   /* the first element's maximum */
    s.predict.phase = GUI_PREDICT_ARMED;   /* on, as the window starts */
    gui_state_attach(&s, &sh);
    ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ASK);
    ck_assert_int_eq(s.predict.at, 0);
    ck_assert_int_eq(s.step, 0);
    ck_assert(gui_predict_covers(&s));
    char l[4][GUI_PREDICT_LEN];
    ck_assert(gui_predict_text(&s, &sh, l));
    ck_assert_msg(strstr(l[0], sh.questions[s.predict.qi].prompt) && !strstr(l[0], "step 0:"), "%s", l[0]);
    gui_cmd enter = {GUI_CMD_ENTER, 0, 0}, right = {GUI_CMD_STEP, 1, 0};
    for (int k = 0; k < at0; k++) {
        ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ASK);
        gui_update(&s, &sh, &enter);   /* empty: revealed, not scored */
        ck_assert_int_eq(s.predict.phase, GUI_PREDICT_SHOWN);
        ck_assert(gui_predict_covers(&s));
        gui_update(&s, &sh, &right);
        ck_assert_int_eq(s.step, 0);
    }
    ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ARMED);   /* step 0 shown now */
    ck_assert(!gui_predict_covers(&s));
    ck_assert_int_eq(s.predict.n_asked, 0);
    gui_show_free(&sh);
}
END_TEST

/* GQA's question on the KV head a query head reads: while it is asked the band leaves out the
 * grouping that would answer it (gui_kv_head_wait), and puts it back once it is revealed. */
START_TEST(kv_head_waits)
{
    gui_catalog cat;
    gui_show sh;
    const int ci = catalog_show(&cat, "000_08_gqa_32_8", &sh);
    int at = -1;
    for (int i = 0; i < sh.n_questions && at < 0; i++)
        if (sh.questions[i].kind == FS_Q_KV_HEAD) at = i;
    ck_assert_msg(at >= 0, "000_08 asks no KV head");
    gui_state s;
    gui_state_init(&s, 1280, 720, cat.n, ci);
    s.predict.phase = GUI_PREDICT_ARMED;
    gui_state_attach(&s, &sh);
    gui_cmd enter = {GUI_CMD_ENTER, 0, 0}, right = {GUI_CMD_STEP, 1, 0};
    for (int guard = 0; guard < 4000 && !(s.predict.phase == GUI_PREDICT_ASK && s.predict.qi == at); guard++) {
        ck_assert(!gui_kv_head_wait(&s, &sh));
        gui_update(&s, &sh, s.predict.phase == GUI_PREDICT_ASK ? &enter : &right);
    }
    ck_assert_int_eq(s.predict.qi, at);
    ck_assert(gui_kv_head_wait(&s, &sh));
    gui_update(&s, &sh, &enter);   /* revealed */
    ck_assert(!gui_kv_head_wait(&s, &sh));
    gui_show_free(&sh);
    gui_catalog_free(&cat);
}
END_TEST

/* A lesson whose step 0 asks how many tiles are skipped (and a tile's class): the window keeps its
 * skip marks to itself until step 0's questions on them have been answered, and shows them after;
 * a later question on a tile's class hides them from its step on while it is asked; with
 * questions off it never hides them. */
START_TEST(classes_wait_for_step0_questions)
{
    gui_catalog cat;
    gui_show sh;
    const int ci = catalog_show(&cat, "000_04_tiled_causal_n6", &sh);
    gui_state s;
    gui_state_init(&s, 1280, 720, cat.n, ci);
    gui_state_attach(&s, &sh);
    ck_assert_int_eq(gui_classes_wait(&s, &sh), -1);   /* questions off */
    int about = 0, at0 = 0;
    for (int i = 0; i < sh.n_questions && sh.questions[i].step == 0; i++) {
        at0++;
        about += fs_question_about_classes(&sh.questions[i]);
    }
    ck_assert_int_gt(about, 0);
    s.predict.phase = GUI_PREDICT_ARMED;
    gui_state_attach(&s, &sh);
    gui_cmd enter = {GUI_CMD_ENTER, 0, 0}, right = {GUI_CMD_STEP, 1, 0};
    for (int k = 0; k < at0; k++) {
        int left = 0;   /* step 0's questions on the classes not yet answered */
        for (int i = k; i < at0; i++) left += fs_question_about_classes(&sh.questions[i]);
        ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ASK);
        ck_assert_int_eq(gui_classes_wait(&s, &sh), left > 0 ? 0 : -1);
        gui_update(&s, &sh, &enter);   /* revealed */
        ck_assert_int_eq(gui_classes_wait(&s, &sh), left - fs_question_about_classes(&sh.questions[k]) > 0 ? 0 : -1);
        gui_update(&s, &sh, &right);
    }
    ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ARMED);
    ck_assert_int_eq(gui_classes_wait(&s, &sh), -1);
    /* a later question on a tile's class (none of the lessons has one: step 1's made one here):
     * the marks from its step on wait while it is asked, and no longer once it is revealed */
    int later = at0;
    ck_assert_int_lt(later, sh.n_questions);
    ck_assert_int_gt(sh.questions[later].step, 0);
    sh.questions[later].kind = FS_Q_TILE_CLASS;
    for (int guard = 0; guard < 100 && s.predict.phase != GUI_PREDICT_ASK; guard++) gui_update(&s, &sh, &right);
    ck_assert_int_eq(s.predict.qi, later);
    ck_assert_int_eq(s.step, sh.questions[later].step - 1);
    ck_assert_int_eq(gui_classes_wait(&s, &sh), sh.questions[later].step);
    gui_update(&s, &sh, &enter);
    ck_assert_int_eq(gui_classes_wait(&s, &sh), -1);
    gui_show_free(&sh);
    gui_catalog_free(&cat);
}
END_TEST

/* Type text into the state, one GUI_CMD_CHAR at a time. */
static void type_text(gui_state *s, const gui_show *sh, const char *t)
{
    for (; *t; t++) {
        gui_cmd ch = {GUI_CMD_CHAR, *t, 0};
        gui_update(s, sh, &ch);
    }
}

/* A claims list holds every check of its lesson (GUI_MAX_CLAIMS was 32, and 000_10's 43 lost
 * eleven without a word); what does not fit the window is counted on the list's last line
 * (scene.c), from n_claims_all. */
START_TEST(claims_lists_keep_every_claim)
{
    gui_catalog cat;
    ck_assert_int_eq(gui_catalog_open(&cat, stderr), 0);
    int most = 0;
    for (int i = 0; i < cat.n; i++) {
        gui_show sh;
        ck_assert_int_eq(gui_catalog_load(&cat, i, &sh, stderr), 0);
        ck_assert_msg(sh.n_claims == sh.n_claims_all, "%s: %d of its %d checks listed", sh.name, sh.n_claims, sh.n_claims_all);
        /* each line whole: its values after its words, their last digit kept (a line cut at 160
         * bytes showed 002_04's "exact 6144" as "exact 614"), and one line of 90 code points keeps
         * them too, the words cut before them, where the values fit in it */
        for (int c = 0; c < sh.n_claims; c++) {
            const char *line = sh.claims[c], *values = line + sh.claim_values[c];
            ck_assert_msg(sh.claim_values[c] > 0 && !strncmp(values, ": ", 2) && strstr(values, ", exact "),
                          "%s claim %d: no values in '%s'", sh.name, c, line);
            ck_assert_msg(strlen(line) + 1 < sizeof sh.claims[0], "%s claim %d: the line fills its buffer", sh.name, c);
            char one[600];
            gui_claim_line(line, sh.claim_values[c], 90, one, sizeof one);
            const size_t vn = strlen(values), on = strlen(one);
            int cps = 0, vcps = 0;
            for (size_t b = 0; b < on; b++) cps += ((unsigned char)one[b] & 0xC0) != 0x80;
            for (size_t b = 0; b < vn; b++) vcps += ((unsigned char)values[b] & 0xC0) != 0x80;
            ck_assert_msg(cps <= 90, "%s claim %d: one line of %d code points: '%s'", sh.name, c, cps, one);
            if (vcps + 6 <= 90)   /* (values longer than a line, 000_07's printed mask, are cut as any text) */
                ck_assert_msg(on >= vn && !strcmp(one + on - vn, values), "%s claim %d: one line '%s' lost its values '%s'",
                              sh.name, c, one, values);
        }
        if (sh.n_claims_all > most) most = sh.n_claims_all;
        gui_show_free(&sh);
    }
    ck_assert_int_gt(most, 32);   /* the old limit: a lesson past it is what this guards */
    gui_catalog_free(&cat);
}
END_TEST

/* Upright (a phone), while a question covers the scene, the scene keeps only the room its
 * cover's words take, and the question comes right under them, not below an empty scene: for a
 * claims-only lesson and for one that asks about step 0, at two phone sizes. */
START_TEST(upright_cover_keeps_the_question_close)
{
    gui_catalog cat;
    ck_assert_int_eq(gui_catalog_open(&cat, stderr), 0);
    int seen_claims = 0, seen_step0 = 0;
    for (int lesson = 0; lesson < cat.n && !(seen_claims && seen_step0); lesson++) {
        gui_show sh;
        ck_assert_int_eq(gui_catalog_load(&cat, lesson, &sh, stderr), 0);
        const int phone[2][2] = {{390, 844}, {360, 640}};
        for (int z = 0; z < 2; z++) {
            gui_state s;
            gui_state_init(&s, phone[z][0], phone[z][1], 1, 0);
            s.predict.phase = GUI_PREDICT_ARMED;
            gui_state_attach(&s, &sh);
            if (!gui_predict_covers(&s)) break;
            const bool claims = s.predict.at == GUI_AT_CLAIMS;
            if (claims ? seen_claims > 1 : seen_step0 > 1) break;
            gui_layout L = gui_layout_for(&s, &sh);
            gui_rect body = gui_layout_body(&L);
            ck_assert(L.portrait);
            ck_assert_int_gt(L.prompt.h, 0);
            ck_assert_msg(L.prompt.y >= L.main.y + L.main.h, "%s at %dx%d: the question over the cover's words", sh.name,
                          phone[z][0], phone[z][1]);
            ck_assert_msg(L.prompt.y - body.y < body.h * 45 / 100, "%s at %dx%d: the question %d px down a body of %d", sh.name,
                          phone[z][0], phone[z][1], L.prompt.y - body.y, body.h);
            if (claims) seen_claims++;
            else seen_step0++;
        }
        gui_show_free(&sh);
    }
    ck_assert_msg(seen_claims && seen_step0, "no covered lesson of each kind (%d claims, %d step 0)", seen_claims, seen_step0);
    gui_catalog_free(&cat);
}
END_TEST

/* Side by side, while a question covers the scene, the question spans the scene and the side
 * panel (both covered) at their foot, under the cover's title and words, and for a question about
 * step 0 the bar, which says the introduction meanwhile, takes the rows the cover leaves: at
 * 1366 x 768 the roofline lesson's whole introduction fits it (it showed four of its fourteen
 * lines, and at 150 % the question lay over the cover's words). */
START_TEST(side_by_side_cover_gives_the_bar_room)
{
    static const int sz[][3] = {{1366, 768, 100}, {1280, 720, 100}, {1024, 768, 100}, {1920, 1080, 150}};
    gui_catalog cat;
    ck_assert_int_eq(gui_catalog_open(&cat, stderr), 0);
    const int roofline = gui_catalog_find(&cat, "beyond_02_roofline");
    ck_assert_int_ge(roofline, 0);
    int seen[2] = {0, 0};   /* covered lessons seen: step 0's question, the claims' */
    for (int lesson = 0; lesson < cat.n; lesson++) {
        gui_show sh;
        ck_assert_int_eq(gui_catalog_load(&cat, lesson, &sh, stderr), 0);
        for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
            gui_state s, off;
            gui_state_init(&s, sz[i][0], sz[i][1], 1, 0);
            s.scale_pct = sz[i][2];
            off = s;
            s.predict.phase = GUI_PREDICT_ARMED;
            gui_state_attach(&s, &sh);
            gui_state_attach(&off, &sh);
            if (lesson == roofline) ck_assert_msg(gui_predict_covers(&s), "%s opens without a covering question", sh.name);
            if (!gui_predict_covers(&s)) break;
            const bool claims = s.predict.at == GUI_AT_CLAIMS;
            if (i == 0 && lesson != roofline && seen[claims]++ >= 2) break;
            gui_layout L = gui_layout_for(&s, &sh), O = gui_layout_for(&off, &sh);
            gui_rect body = gui_layout_body(&L);
            ck_assert(!L.portrait);
            ck_assert_int_gt(L.prompt.h, 0);
            ck_assert_int_eq(L.prompt.x, body.x);
            ck_assert_int_eq(L.prompt.w, body.w);
            ck_assert_msg(L.prompt.y >= body.y + body.h, "%s %dx%d: the question inside the cover", sh.name, sz[i][0], sz[i][1]);
            ck_assert_msg(L.prompt.y - gui_layout_body(&O).y >= 4 * L.pad + L.font_big + 2 * L.font,
                          "%s %dx%d: the question %d px under the scene's top, over the cover's words", sh.name, sz[i][0],
                          sz[i][1], L.prompt.y - gui_layout_body(&O).y);
            ck_assert(!overlap(L.prompt, L.narration) && !overlap(L.prompt, L.timeline) && !overlap(L.prompt, L.header));
            if (lesson == roofline && sz[i][2] == 100)
                ck_assert_msg(L.narration.h > O.narration.h + 4 * L.font_small, "%s %dx%d: the bar is %d px, %d without the cover",
                              sh.name, sz[i][0], sz[i][1], L.narration.h, O.narration.h);
        }
        gui_show_free(&sh);
    }
    ck_assert_msg(seen[0] && seen[1], "no covered lesson of each kind (%d step 0, %d claims)", seen[0], seen[1]);
    gui_catalog_free(&cat);
}
END_TEST

/* The questions about a lesson's claims (its figures) in the window, as the terminal asks them: a
 * lesson of claims only asks them at once, the claims covered until the last is answered, each
 * "A figure of the lesson (k of n)"; a lesson with steps asks its own after its last step, on
 * Right there, once. Before, the window asked none of them (17 lessons of claims only asked
 * nothing in the window). */
START_TEST(claim_questions_in_the_window)
{
    gui_catalog cat;
    ck_assert_int_eq(gui_catalog_open(&cat, stderr), 0);
    gui_cmd enter = {GUI_CMD_ENTER, 0, 0}, right = {GUI_CMD_STEP, 1, 0}, end = {GUI_CMD_END, 0, 0};
    char l[4][GUI_PREDICT_LEN], want[64];
    int seen_steps = 0, seen_only = 0;
    for (int lesson = 0; lesson < cat.n && !(seen_steps && seen_only); lesson++) {
        gui_show sh;
        ck_assert_int_eq(gui_catalog_load(&cat, lesson, &sh, stderr), 0);
        int total = 0;
        for (int i = 0; i < sh.n_questions; i++) total += sh.questions[i].step < 0;
        bool claims_only = sh.trace.n == 0;
        if (!total || (claims_only ? seen_only : seen_steps)) {
            gui_show_free(&sh);
            continue;
        }
        if (claims_only) seen_only++;
        else seen_steps++;
        gui_state s;
        gui_state_init(&s, 1280, 720, 1, 0);
        s.predict.phase = GUI_PREDICT_ARMED;   /* questions on, as the window starts */
        gui_state_attach(&s, &sh);
        if (!claims_only) {
            while (s.predict.phase == GUI_PREDICT_ASK || s.predict.phase == GUI_PREDICT_SHOWN) gui_update(&s, &sh, &right);
            gui_update(&s, &sh, &end);
            ck_assert_int_eq(s.step, s.n - 1);
            ck_assert(!gui_predict_covers(&s));
            ck_assert(gui_ending_shown(&s, &sh));
            gui_update(&s, &sh, &right);   /* Right at the last step: the lesson's claims */
        }
        for (int k = 1; k <= total; k++) {
            ck_assert_msg(s.predict.phase == GUI_PREDICT_ASK && s.predict.at == GUI_AT_CLAIMS, "%s: claim question %d not asked",
                          sh.name, k);
            ck_assert_int_lt(sh.questions[s.predict.qi].step, 0);
            ck_assert(gui_predict_covers(&s));
            ck_assert(!gui_ending_shown(&s, &sh));
            ck_assert(gui_predict_text(&s, &sh, l));
            snprintf(want, sizeof want, "A figure of the lesson (%d of %d): ", k, total);
            ck_assert_msg(!strncmp(l[0], want, strlen(want)), "%s: %s", sh.name, l[0]);
            char ans[64];
            type_text(&s, &sh, fs_question_answer(&sh.questions[s.predict.qi], ans, sizeof ans));
            gui_update(&s, &sh, &enter);
            ck_assert_int_eq(s.predict.phase, GUI_PREDICT_SHOWN);
            ck_assert_msg(s.predict.correct, "%s: the right answer %s judged wrong", sh.name, ans);
            ck_assert(gui_predict_text(&s, &sh, l));
            ck_assert_msg(strstr(l[3], k < total ? "Right: go on" : "Right: the figures"), "%s: %s", sh.name, l[3]);
            gui_update(&s, &sh, &right);
        }
        ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ARMED);
        ck_assert(s.predict.claims_done);
        ck_assert(!gui_predict_covers(&s));
        ck_assert_int_eq(s.predict.n_right, total);
        ck_assert(gui_ending_shown(&s, &sh));
        gui_update(&s, &sh, &right);   /* once: Right again asks nothing */
        ck_assert_int_eq(s.predict.phase, GUI_PREDICT_ARMED);
        /* with the questions off nothing is asked and nothing covered */
        gui_state_init(&s, 1280, 720, 1, 0);
        gui_state_attach(&s, &sh);
        gui_update(&s, &sh, &end);
        gui_update(&s, &sh, &right);
        ck_assert_int_eq(s.predict.phase, GUI_PREDICT_OFF);
        ck_assert(!gui_predict_covers(&s));
        gui_show_free(&sh);
    }
    ck_assert_msg(seen_steps && seen_only, "no lesson of each kind with claim questions (%d with steps, %d of claims only)",
                  seen_steps, seen_only);
    gui_catalog_free(&cat);
}
END_TEST

/* A section's quiz in the window: asked for from the lesson list's quiz entry (after the
 * lessons) or at a section's last step; made (here as the platform makes it, on a fresh seed);
 * asked one question at a time, each judged with its right answer and reason; the score, and the
 * lessons of the wrong answers to revisit; Esc leaves it. Every key but the answer's is the
 * quiz's while it is open. */
START_TEST(section_quiz)
{
    uint64_t seed = fs_test_seed();
    fs_course c;
    fs_loc_error err;
    ck_assert_msg(fs_course_load("lessons", &c, &err), "%s", err.msg);
    int section = (int)(seed % (uint64_t)c.n_sections);
    gui_show sh;
    gui_state s;
    demo_state("tiled", &sh, &s, 3);
    s.n_sections = c.n_sections;
    /* the list's quiz entry asks for its section's quiz */
    gui_cmd menu = {GUI_CMD_MENU, 0, 0};
    gui_update(&s, &sh, &menu);
    for (int i = 0; i < 3 + section; i++) {
        gui_cmd down = gui_key_cmd(&s, GUI_KEY_DOWN, false);
        gui_update(&s, &sh, &down);
    }
    ck_assert_int_eq(s.menu_sel, 3 + section);
    gui_cmd pick = gui_key_cmd(&s, GUI_KEY_ENTER, false);
    ck_assert_int_eq(pick.kind, GUI_CMD_QUIZ);
    ck_assert_int_eq(pick.a, section);
    gui_update(&s, &sh, &pick);
    ck_assert_int_eq(s.quiz_want, section);
    ck_assert(!s.menu);
    ck_assert_int_eq(s.quiz.phase, GUI_QUIZ_OFF);
    /* the platform makes it */
    sh.quiz = malloc(sizeof *sh.quiz);
    ck_assert_ptr_nonnull(sh.quiz);
    FS_ASSERT_SEED(fs_quiz_make("lessons", &c, section, seed, sh.quiz, &err), seed, "%s", err.msg);
    ck_assert_int_eq(sh.quiz->n, FS_QUIZ_QUESTIONS);
    gui_cmd made = {GUI_CMD_QUIZ, section, 1};
    gui_update(&s, &sh, &made);
    ck_assert_int_eq(s.quiz.phase, GUI_QUIZ_ASK);
    ck_assert_int_eq(s.quiz.qi, 0);
    /* while it is open, the keys are the quiz's: no lesson list, no lesson by number */
    ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_L, false).kind, GUI_CMD_NONE);
    ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_3, false).kind, GUI_CMD_CHAR);
    ck_assert_int_eq(gui_key_cmd(&s, GUI_KEY_RIGHT, false).kind, GUI_CMD_ENTER);
    char l[5][GUI_PREDICT_LEN];
    ck_assert(gui_quiz_text(&s, &sh, l));
    FS_ASSERT_SEED(strstr(l[0], c.sections[section]) && strstr(l[0], "question 1 of 5") && strstr(l[0], sh.quiz->lesson[0]), seed,
                   "%.200s", l[0]);
    FS_ASSERT_SEED(!strcmp(l[1], sh.quiz->q[0].prompt), seed, "%.200s", l[1]);
    /* the first answered right (a choice by its number), the second wrong, the rest revealed */
    gui_cmd enter = {GUI_CMD_ENTER, 0, 0};
    for (int i = 0; i < sh.quiz->n; i++) {
        const fs_question *q = &sh.quiz->q[i];
        char ans[64];
        if (i == 0) {
            if (q->numeric) fs_question_answer(q, ans, sizeof ans);
            else snprintf(ans, sizeof ans, "%d", q->right + 1);
            type_text(&s, &sh, ans);
        } else if (i == 1) {
            type_text(&s, &sh, "9999");
        }
        gui_update(&s, &sh, &enter);
        ck_assert_int_eq(s.quiz.phase, GUI_QUIZ_SHOWN);
        FS_ASSERT_SEED(s.quiz.correct == (i == 0), seed, "question %d (%.300s) judged %d", i + 1, q->prompt, s.quiz.correct);
        ck_assert(gui_quiz_text(&s, &sh, l));
        fs_question_answer(q, ans, sizeof ans);
        FS_ASSERT_SEED(strstr(l[3], ans) && strstr(l[4], q->why), seed, "the answer and why: %.150s / %.250s", l[3], l[4]);
        if (i == 1) FS_ASSERT_SEED(strstr(l[4], "9999") != NULL, seed, "the typed answer echoed: %.300s", l[4]);
        gui_update(&s, &sh, &enter);
    }
    ck_assert_int_eq(s.quiz.phase, GUI_QUIZ_DONE);
    ck_assert_int_eq(s.quiz.right, 1);
    ck_assert_int_eq(s.quiz.answered, FS_QUIZ_QUESTIONS);
    ck_assert(gui_quiz_text(&s, &sh, l));
    FS_ASSERT_SEED(strstr(l[0], "1 of 5 right") && strstr(l[1], "To revisit") && strstr(l[1], sh.quiz->lesson[1]), seed, "%.200s / %.200s",
                   l[0], l[1]);
    /* Esc leaves it; the scene's keys are back */
    gui_cmd esc = gui_key_cmd(&s, GUI_KEY_ESCAPE, false);
    gui_update(&s, &sh, &esc);
    ck_assert_int_eq(s.quiz.phase, GUI_QUIZ_OFF);
    ck_assert(!s.quit);
    ck_assert(!gui_quiz_text(&s, &sh, l));
    /* a section's last lesson at its last step: Enter asks for that section's quiz */
    s.section_end = section;
    ck_assert_int_ne(gui_key_cmd(&s, GUI_KEY_ENTER, false).kind, GUI_CMD_QUIZ);   /* not at the end yet */
    gui_cmd end = {GUI_CMD_END, 0, 0};
    gui_update(&s, &sh, &end);
    gui_cmd at_end = gui_key_cmd(&s, GUI_KEY_ENTER, false);
    ck_assert_int_eq(at_end.kind, GUI_CMD_QUIZ);
    ck_assert_int_eq(at_end.a, section);
    gui_show_free(&sh);
    fs_course_free(&c);
}
END_TEST

START_TEST(commands_change_settings)
{
    gui_show sh;
    gui_state s;
    demo_state("softmax", &sh, &s, 4);
    gui_cmd t = {GUI_CMD_THEME, 0, 0};
    for (int i = 0; i < GUI_THEME_COUNT; i++) gui_update(&s, &sh, &t);
    ck_assert_int_eq(s.theme, GUI_THEME_DARK);
    gui_cmd plus = {GUI_CMD_SCALE, 1, 0}, minus = {GUI_CMD_SCALE, -1, 0};
    gui_update(&s, &sh, &plus);
    ck_assert_int_gt(s.scale_pct, 100);
    for (int i = 0; i < 30; i++) gui_update(&s, &sh, &plus);
    ck_assert_int_eq(s.scale_pct, 300);
    for (int i = 0; i < 30; i++) gui_update(&s, &sh, &minus);
    ck_assert_int_eq(s.scale_pct, 50);
    gui_cmd up = {GUI_CMD_SPEED, 1, 0};
    for (int i = 0; i < 40; i++) gui_update(&s, &sh, &up);
    ck_assert_int_eq(s.speed, GUI_SPEEDS - 1);
    gui_cmd lesson = {GUI_CMD_LESSON, 3, 0};
    gui_update(&s, &sh, &lesson);
    ck_assert(s.lesson_changed);
    ck_assert_int_eq(s.lesson, 3);
    gui_cmd bad = {GUI_CMD_LESSON, 9, 0};
    s.lesson_changed = false;
    gui_update(&s, &sh, &bad);
    ck_assert(!s.lesson_changed);
    gui_cmd help = {GUI_CMD_HELP, 0, 0}, quit = {GUI_CMD_QUIT, 0, 0};
    gui_update(&s, &sh, &help);
    gui_update(&s, &sh, &quit);   /* Esc closes the help first */
    ck_assert(!s.help && !s.quit);
    gui_update(&s, &sh, &quit);
    ck_assert(s.quit);
    gui_show_free(&sh);
}
END_TEST

START_TEST(script_errors_are_located)
{
    char path[] = "/tmp/fs_gui_scriptXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# comment\nkey Right\nkey Right shift\nclick 10 20\nexpect step 3\n  key Bogus\n");
    fclose(f);
    gui_script sc;
    char *buf = NULL;
    size_t n = 0;
    FILE *err = open_memstream(&buf, &n);
    ck_assert_int_eq(gui_script_load(path, &sc, err), 2);
    fclose(err);
    char want[512];
    snprintf(want, sizeof want, "%s:6:7: unknown key 'Bogus'", path);
    ck_assert_msg(strstr(buf, want) != NULL, "got: %s", buf);
    free(buf);
    /* A line longer than any buffer still counts as one line (the error is on line 2, not 3),
     * and bytes outside printable ASCII are quoted as \xHH, never written raw. */
    f = fopen(path, "w");
    fprintf(f, "wait 1");
    for (int i = 0; i < 600; i++) fputc(' ', f);
    fprintf(f, "\n\x1b[31mbogus\xff\n");
    fclose(f);
    buf = NULL;
    err = open_memstream(&buf, &n);
    ck_assert_int_eq(gui_script_load(path, &sc, err), 2);
    fclose(err);
    snprintf(want, sizeof want, "%s:2:1: unknown command '\\x1b[31mbogus\\xff'", path);
    ck_assert_msg(strstr(buf, want) != NULL, "got: %s", buf);
    free(buf);
    f = fopen(path, "w");
    fprintf(f, "key Right\nkey Right shift\ndrag 1 2 3 4\nexpect predict ask\nsave /tmp/x.png\n");
    fclose(f);
    ck_assert_int_eq(gui_script_load(path, &sc, stderr), 0);
    ck_assert_int_eq(sc.n, 5);
    ck_assert(sc.lines[1].shift);
    ck_assert_int_eq(sc.lines[2].v[3], 4);
    ck_assert_int_eq(sc.lines[3].v[0], GUI_PREDICT_ASK);
    gui_state s;
    gui_state_init(&s, 100, 100, 1, 0);
    char msg[128];
    ck_assert(!gui_script_expect(&sc.lines[3], &s, msg, sizeof msg));
    s.predict.phase = GUI_PREDICT_ASK;
    ck_assert(gui_script_expect(&sc.lines[3], &s, msg, sizeof msg));
    gui_script_free(&sc);
    unlink(path);
}
END_TEST

START_TEST(png_round_trip)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    int w = fs_rng_int(&r, 1, 300), h = fs_rng_int(&r, 1, 200);
    uint8_t *img = malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h * 3; i++) img[i] = (uint8_t)(i % 7 == 0 ? fs_rng_next(&r) : (uint64_t)(i / 97));
    char path[] = "/tmp/fs_gui_pngXXXXXX";
    int fd = mkstemp(path);
    close(fd);
    ck_assert_int_eq(gui_png_write(path, img, w, h, w * 3), 0);
    uint8_t *back = NULL;
    int w2, h2;
    ck_assert_int_eq(gui_png_read(path, &back, &w2, &h2), 0);
    FS_ASSERT_SEED(w2 == w && h2 == h, seed, "size %dx%d came back %dx%d", w, h, w2, h2);
    FS_ASSERT_SEED(gui_image_diff(img, back, w, h, 0) == 0, seed, "pixels differ");
    back[5] ^= 0x80;
    ck_assert_int_eq(gui_image_diff(img, back, w, h, 10), 1);
    free(back);
    free(img);
    FILE *f = fopen(path, "wb");
    fputs("not a png at all", f);
    fclose(f);
    ck_assert_int_eq(gui_png_read(path, &back, &w2, &h2), -1);
    unlink(path);
}
END_TEST

/* The on-chip panel's counter, read from the trace, ends where engine/memory.h's model says the
 * whole run moves: summed over heads, exactly (both count bytes as integers). */
START_TEST(traffic_counter_matches_memory_model)
{
    static const char *const demos[] = {"tiled", "tree", "window", "gqa", "grid64", "pitfall"};
    for (size_t i = 0; i < sizeof demos / sizeof demos[0]; i++) {
        gui_show sh;
        ck_assert_int_eq(gui_demo_load(demos[i], &sh, stderr), 0);
        const fs_attn *a = &sh.run.attn;
        double sum = 0;
        for (int h = 0; h < a->n_q_heads; h++) {
            gui_traffic t = gui_trace_traffic(&sh, sh.trace.n - 1, h, 4);
            sum += t.q + t.kv + t.o;
        }
        fs_mem_problem p = fs_mem_problem_make(a->n_q, a->n_kv, a->d, a->d_v);
        p.n_q_heads = a->n_q_heads;
        p.n_kv_heads = a->n_kv_heads;
        p.Bq = sh.run.tiling.Bq;
        p.Bk = sh.run.tiling.Bk;
        p.in_bytes = p.mat_bytes = p.acc_bytes = 4;
        p.mask = a->mask;
        fs_mem_report r;
        ck_assert_int_eq(fs_mem_model(&p, &r), FS_OK);
        ck_assert_msg(sum == (double)r.tiled_traffic, "%s: trace counts %.0f bytes, memory.h %lld", demos[i], sum,
                      (long long)r.tiled_traffic);
        /* Halfway, strictly less has moved (over all heads: with Q tiles outside, head 0 may
         * have written all its output rows by then). */
        double half = 0;
        for (int h = 0; h < a->n_q_heads; h++) {
            gui_traffic t = gui_trace_traffic(&sh, sh.trace.n / 2, h, 4);
            half += t.q + t.kv + t.o;
        }
        ck_assert_msg(half < sum, "%s: %.0f bytes halfway, %.0f in all", demos[i], half, sum);
        gui_show_free(&sh);
    }
}
END_TEST

/* Word wrap: random texts of numbers and words (some with "·" and "ℓ", several bytes each) on
 * random widths. Every line holds at most `per` code points, lines break only between words (each
 * shown word is whole and the shown words are the text's first ones, in order), and a text that
 * does not fit ends in " …" on its last line. */
static int n_cps(const char *a, size_t len)
{
    int n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)a[i] & 0xC0) != 0x80;
    return n;
}

/* Cell numbers never mislead when a cell clips them: from 10^4 up they are in exponent form. */
START_TEST(cell_numbers_never_mislead)
{
    static const struct { double x; const char *s; } c[] = {
        {0.3549, "0.35"}, {-1.25, "-1.25"}, {140.4, "140"}, {9999.4, "9999"}, {9999.6, "1.0e4"},
        {1.40029245043378e19, "1.4e19"}, {-2.5e-300, "-0.00"}, {99950, "1.0e5"}, {-3e300, "-3.0e300"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char b[32];
        gui_fmt_cell(c[i].x, b, sizeof b);
        ck_assert_msg(!strcmp(b, c[i].s), "%g gave '%s', not '%s'", c[i].x, b, c[i].s);
        ck_assert(strlen(b) <= 8);
    }
    char b[8];
    gui_fmt_cell(NAN, b, sizeof b);
    ck_assert_str_eq(b, " ");
}
END_TEST

START_TEST(wrap_keeps_words_whole)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int trial = 0; trial < 300; trial++) {
        int per = fs_rng_int(&r, 12, 70), max_lines = fs_rng_int(&r, 1, 5), n_words = fs_rng_int(&r, 1, 60);
        char text[4096] = "", words[64][32];
        size_t tn = 0;
        for (int i = 0; i < n_words; i++) {
            switch (fs_rng_int(&r, 0, 3)) {
            case 0: snprintf(words[i], sizeof words[i], "%.4f,", fs_rng_uniform(&r, -9, 9)); break;
            case 1: snprintf(words[i], sizeof words[i], "[%.4f", fs_rng_uniform(&r, -9, 9)); break;
            case 2: snprintf(words[i], sizeof words[i], "ℓ_new"); break;
            default: snprintf(words[i], sizeof words[i], "α·ℓ_old"); break;
            }
            tn += (size_t)snprintf(text + tn, sizeof text - tn, "%s%s", i ? " " : "", words[i]);
        }
        char out[8192];
        bool cut = false;
        int lines = gui_wrap(text, per, max_lines, out, sizeof out, &cut);
        int all = gui_wrap(text, per, 0, NULL, 0, NULL);
        FS_ASSERT_SEED(lines >= 1 && lines <= max_lines, seed, "%d lines for at most %d", lines, max_lines);
        FS_ASSERT_SEED(cut == (all > max_lines), seed, "cut %d but the text needs %d lines of %d", cut, all, max_lines);
        int w = 0;
        const char *line = out;
        for (int li = 0; li < lines; li++) {
            const char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line) : strlen(line);
            FS_ASSERT_SEED(n_cps(line, len) <= per, seed, "line %d has %d code points, more than %d", li, n_cps(line, len), per);
            bool ell = cut && li == lines - 1;
            if (ell) {
                FS_ASSERT_SEED(len >= 4 && !memcmp(line + len - 4, " \xe2\x80\xa6", 4), seed, "last line of a cut text lacks \" …\"");
                len -= 4;
            }
            char buf[512];
            snprintf(buf, sizeof buf, "%.*s", (int)len, line);
            for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
                FS_ASSERT_SEED(w < n_words && !strcmp(tok, words[w]), seed, "line %d shows \"%s\" where word %d is \"%s\"", li,
                               tok, w, w < n_words ? words[w] : "(none)");
                w++;
            }
            line = nl ? nl + 1 : line + len;
        }
        FS_ASSERT_SEED(cut ? w < n_words : w == n_words, seed, "%d of %d words shown (cut %d)", w, n_words, cut);
    }
    /* a claim on one line: its words cut with " …" before its values, which stay whole */
    char one[256];
    const char *claim = "a contiguous cache reserves 3 x 2048 positions: expected 6144, exact 6144";
    const int at = (int)(strstr(claim, ": expected") - claim);
    gui_claim_line(claim, at, 50, one, sizeof one);   /* 23 code points for the words and " …" */
    ck_assert_str_eq(one, "a contiguous cache …: expected 6144, exact 6144");
    gui_claim_line(claim, at, 200, one, sizeof one);   /* it fits: unchanged */
    ck_assert_str_eq(one, claim);
    gui_claim_line(claim, at, 30, one, sizeof one);   /* not even the values fit: cut as wrap cuts */
    ck_assert_str_eq(one, "a contiguous cache reserves …");
}
END_TEST

/* A pitfall lesson: the timeline walks the lesson's main trace (the wrong variant), the correct
 * run is beside it, and the narration at every step describes the timeline's event (the lesson's
 * own words for that step, else words generated from the event of the main trace). Before
 * this was fixed the timeline walked the correct run while the words described the wrong one. */
START_TEST(pitfall_narration_follows_timeline)
{
    char **paths = NULL;
    int n = 0, checked = 0, differing = 0;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    for (int i = 0; i < n; i++) {
        fs_lesson *l = NULL;
        fs_loc_error e;
        memset(&e, 0, sizeof e);
        ck_assert_msg(fs_lesson_load(paths[i], &l, &e), "%s: %s", paths[i], e.msg);
        const fs_trace *main_t = fs_lesson_trace(l), *cmp = fs_lesson_compare_trace(l);
        if ((int)fs_lesson_scene(l) != (int)GUI_SCENE_PITFALL || !main_t || !cmp) { fs_lesson_free(l); continue; }
        gui_show sh;
        ck_assert_int_eq(gui_lesson_load(paths[i], &sh, stderr), 0);
        ck_assert_int_eq(sh.trace.n, main_t->n);
        ck_assert_int_eq(sh.correct.n, cmp->n);
        for (int64_t k = 0; k < main_t->n; k++) {
            const fs_event *a = &sh.trace.ev[k], *b = &main_t->ev[k];
            ck_assert_int_eq(a->kind, b->kind);
            ck_assert(a->l_new == b->l_new || (isnan(a->l_new) && isnan(b->l_new)));
            char got[4096], want[4096], other[4096];
            gui_narration(&sh, k, got, sizeof got);
            fs_lesson_say(l, main_t, k, want, sizeof want);   /* own words, else generated from this event */
            ck_assert_msg(!strcmp(got, want), "%s step %lld: narration \"%s\", expected \"%s\"", paths[i], (long long)k, got, want);
            fs_lesson_describe(l, cmp, k, 4, other, sizeof other);
            fs_lesson_describe(l, main_t, k, 4, want, sizeof want);
            differing += strcmp(other, want) != 0;   /* steps where the two runs read differently */
        }
        checked++;
        gui_show_free(&sh);
        fs_lesson_free(l);
    }
    fs_lesson_list_free(paths, n);
    ck_assert_msg(checked >= 2, "only %d pitfall lessons with a compare trace found", checked);
    ck_assert_msg(differing > 0, "no step where the wrong and correct runs differ: the test could not fail");
    /* The built-in pitfall follows the same rule: its timeline is the wrong variant. */
    gui_show d;
    ck_assert_int_eq(gui_demo_load("pitfall", &d, stderr), 0);
    ck_assert(d.run.tiling.pitfall != FS_PITFALL_NONE);
    ck_assert(d.correct.n > 0 && d.diverge >= 0);
    ck_assert_int_eq(gui_first_divergence(&d.trace, &d.correct), d.diverge);
    gui_show_free(&d);
}
END_TEST

/* The projector sizes: every step of every lesson and demo laid out at 1024×768, 1280×720 and
 * 1920×1080, and at 150 % on 1920×1080, shows every number whole (gui_fit_check: a layout check,
 * nothing is painted). All failures are listed before the test fails. Built with AddressSanitizer
 * (make test's second run) only 1280×720: the same code paths at a third of the time, since the
 * plain run has checked every size's numbers already. */
/* Under ASan+UBSan the fit checks below walk every third show (an offset drawn each run and
 * printed), at one size: the sanitizers look for memory and arithmetic faults in the code the
 * walk runs, which every show exercises alike; the plain run checks every show at every size. */
static int fit_stride(int *offset, const char *test)
{
#if defined(__SANITIZE_ADDRESS__)
    *offset = (int)(time(NULL) % 3);
    fprintf(stderr, "%s: under the sanitizers, every third show from show %d\n", test, *offset);
    return 3;
#else
    (void)test;
    *offset = 0;
    return 1;
#endif
}

START_TEST(every_step_fits_at_projector_sizes)
{
#if defined(__SANITIZE_ADDRESS__)
    static const int sz[][3] = {{1280, 720, 100}};
#else
    static const int sz[][3] = {{1024, 768, 100}, {1280, 720, 100}, {1920, 1080, 100}, {1920, 1080, 150}};
#endif
    const char *font = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
    ck_assert_msg(access(font, R_OK) == 0, "%s is missing (scripts/install-deps.sh installs fonts-dejavu-core)", font);
    gui_catalog c;
    ck_assert_int_eq(gui_catalog_open(&c, stderr), 0);
    int failures = 0, shows = c.n + gui_demo_count(), first, stride = fit_stride(&first, "fit at projector sizes");
    for (int i = first; i < shows; i += stride) {
        gui_show sh;
        if (i < c.n) ck_assert_int_eq(gui_catalog_load(&c, i, &sh, stderr), 0);
        else ck_assert_int_eq(gui_demo_load(gui_demo_name(i - c.n), &sh, stderr), 0);
        for (size_t k = 0; k < sizeof sz / sizeof sz[0]; k++) {
            char why[512];
            int64_t broken = 0;
            int64_t step = gui_fit_check(&sh, sz[k][0], sz[k][1], sz[k][2], font, why, sizeof why, &broken);
            /* 000_04 at 1024 × 768 cut the ℓ column and broke the ℓ_new formula in two: neither now. */
            if (!strcmp(sh.name, "000_04_tiled_causal_n6"))
                ck_assert_msg(broken == 0, "000_04 at %dx%d %d%%: %lld formulas broken over two lines", sz[k][0], sz[k][1],
                              sz[k][2], (long long)broken);
            ck_assert_msg(step != -2, "%s", why);
            if (step >= 0) {
                fprintf(stderr, "fit: %s at %dx%d %d%%, step %lld: %s\n", sh.name, sz[k][0], sz[k][1], sz[k][2],
                        (long long)step, why);
                failures++;
            }
        }
        gui_show_free(&sh);
    }
    gui_catalog_free(&c);
    ck_assert_msg(failures == 0, "%d lesson/size pairs cut a number (listed above)", failures);
}
END_TEST

/* A phone held upright (390 CSS pixels wide, 756 shown under the page's bars): the page makes the
 * canvas as tall as gui_portrait_height says, and there every step of every lesson and demo shows
 * every number whole with the body text at the page's 14 pixels (the fit check walks all steps,
 * not only those gui_fit_height samples); no lesson needs more than three screens' width. */
START_TEST(every_step_fits_upright_on_a_phone)
{
    const char *font = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
    ck_assert_msg(access(font, R_OK) == 0, "%s is missing (scripts/install-deps.sh installs fonts-dejavu-core)", font);
    gui_catalog c;
    ck_assert_int_eq(gui_catalog_open(&c, stderr), 0);
    int failures = 0, shows = c.n + gui_demo_count(), w = 390, view_h = 756, first,
        stride = fit_stride(&first, "fit upright on a phone");
    for (int i = first; i < shows; i += stride) {
        gui_show sh;
        if (i < c.n) ck_assert_int_eq(gui_catalog_load(&c, i, &sh, stderr), 0);
        else ck_assert_int_eq(gui_demo_load(gui_demo_name(i - c.n), &sh, stderr), 0);
        int h = gui_portrait_height(&sh, w, view_h, 14, font);
        ck_assert_int_ge(h, view_h);
        ck_assert_int_le(h, 3 * w > view_h ? 3 * w : view_h);
        int z = gui_layout_scale_for(w, h, 14);
        char why[512];
        int64_t step = gui_fit_check(&sh, w, h, z < 100 ? 100 : z, font, why, sizeof why, NULL);
        ck_assert_msg(step != -2, "%s", why);
        if (step >= 0) {
            fprintf(stderr, "fit upright: %s at %dx%d, step %lld: %s\n", sh.name, w, h, (long long)step, why);
            failures++;
        }
        gui_show_free(&sh);
    }
    gui_catalog_free(&c);
    ck_assert_msg(failures == 0, "%d lessons cut a number upright on a phone (listed above)", failures);
}
END_TEST

/* The backward lessons open in the backward scene, whose grid (pairs, a gap column, the dQ
 * columns; under them the dK and dV rows) fits the main area at both test sizes, and every step
 * has a narration (the lesson's or the event's own description). */
START_TEST(backward_lessons_in_their_scene)
{
    char **paths = NULL;
    int n = 0, found = 0;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    for (int i = 0; i < n; i++) {
        gui_show sh;
        ck_assert_int_eq(gui_lesson_load(paths[i], &sh, stderr), 0);
        if (sh.run.algo != FS_ALGO_BACKWARD) { gui_show_free(&sh); continue; }
        found++;
        ck_assert_int_eq(sh.scene, GUI_SCENE_BACKWARD);
        ck_assert_str_eq(gui_scene_str(sh.scene), "backward");
        const fs_attn *a = &sh.run.attn;
        int wh[2][2] = {{1280, 720}, {1920, 1080}};
        for (int z = 0; z < 2; z++) {
            gui_layout L = gui_layout_compute(wh[z][0], wh[z][1], 100);
            gui_grid g = gui_scene_grid(&sh, &L);
            ck_assert_msg(g.cell >= 8, "%s: cells of %d px at %dx%d", paths[i], g.cell, wh[z][0], wh[z][1]);
            ck_assert_int_eq(g.rows, a->n_q + 1 + a->d + 1 + a->d_v);
            ck_assert_int_eq(g.cols, a->n_kv + 1 + a->d);
            ck_assert(g.x0 >= L.main.x && g.x0 + g.cols * g.cell <= L.main.x + L.main.w);
            ck_assert(g.y0 >= L.main.y && g.y0 + g.rows * g.cell <= L.main.y + L.main.h);
        }
        int kinds = 0;
        for (int64_t k = 0; k < sh.trace.n; k++) {
            char buf[4096];
            gui_narration(&sh, k, buf, sizeof buf);
            ck_assert_msg(buf[0] != 0, "%s: no narration at step %lld", paths[i], (long long)k);
            kinds |= 1 << sh.trace.ev[k].kind;
        }
        ck_assert(kinds & (1 << FS_EV_BROW) && kinds & (1 << FS_EV_BKEY) && kinds & (1 << FS_EV_GRAD));
        gui_show_free(&sh);
    }
    fs_lesson_list_free(paths, n);
    ck_assert_msg(found >= 3, "only %d backward lessons found", found);
}
END_TEST

/* Options that render a built-in demo in a theme with the given font. */
static gui_options demo_options(const char *font, const char *demo, gui_theme_id theme)
{
    gui_options o;
    gui_options_default(&o);
    o.font_path = font;
    o.demo = demo;
    o.theme = theme;
    return o;
}

/* An animated GIF's first frame is the PNG render writes for that step, up to the palette: each
 * GIF frame holds its own 256 most frequent colours exactly and every rarer colour (an
 * anti-aliased edge) as the nearest of them. Measured on these frames (2026-11-23): 98.4 % to
 * 99.0 % of pixels exact, mean error 0.03 to 0.13 levels per channel, the worst pixel 77 levels
 * off (a rare blend of two far colours). Allowed: at least 95 % exact, mean under 0.5 levels,
 * no channel off by more than 128; a wrong step, frame or colour scheme misses these by far. */
START_TEST(gif_first_frame_is_the_png)
{
    if (!gui_anim_supported(GUI_ANIM_GIF)) {
        gui_anim *a;
        ck_assert_int_eq(gui_anim_open(&a, "/tmp/x.gif", 8, 8, 2, stderr), 2);   /* says so, exit 2 */
        return;
    }
    const char *font = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
    char gif[64], png[64];
    snprintf(gif, sizeof gif, "/tmp/fs_gui_anim_%d.gif", (int)getpid());
    snprintf(png, sizeof png, "/tmp/fs_gui_anim_%d.png", (int)getpid());
    static const struct { const char *demo; int a, b; gui_theme_id th; } cases[] = {
        {"tiled", 9, 12, GUI_THEME_DARK}, {"softmax", 1, 3, GUI_THEME_LIGHT}, {"decode-tree", 14, 15, GUI_THEME_CONTRAST}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gui_options o = demo_options(font, cases[i].demo, cases[i].th);
        o.fps = 4;
        ck_assert_int_eq(gui_render(NULL, cases[i].a, cases[i].b, gif, NULL, &o), 0);
        ck_assert_int_eq(gui_render(NULL, cases[i].a, cases[i].a, png, NULL, &o), 0);
        uint8_t *g = NULL, *p = NULL;
        int wg, hg, wp, hp;
        ck_assert_int_eq(gui_gif_read_first(gif, &g, &wg, &hg), 0);
        ck_assert_int_eq(gui_png_read(png, &p, &wp, &hp), 0);
        ck_assert_int_eq(wg, wp);
        ck_assert_int_eq(hg, hp);
        int worst = 0;
        double sum = 0;
        int64_t exact = 0, n = (int64_t)wg * hg;
        for (int64_t k = 0; k < n; k++) {
            int px = 0;
            for (int c = 0; c < 3; c++) {
                int dlt = abs((int)g[3 * k + c] - (int)p[3 * k + c]);
                sum += dlt;
                if (dlt > px) px = dlt;
            }
            exact += px == 0;
            if (px > worst) worst = px;
        }
        double mean = sum / (3.0 * (double)n);
        ck_assert_msg(worst <= 128 && mean < 0.5 && exact * 100 >= n * 95,
                      "%s: GIF frame 0 vs PNG: worst %d levels, mean %.3f, %.2f %% exact (allowed 128, 0.5, 95 %%)",
                      cases[i].demo, worst, mean, 100.0 * exact / n);
        free(g);
        free(p);
    }
    unlink(gif);
    unlink(png);
}
END_TEST

static bool same_vec(const fs_trace *ta, int64_t a, const fs_trace *tb, int64_t b, int32_t n);

/* Run r traced into t and save the trace at path as `flashstep trace --format jsonl` writes it. */
static void save_trace(const fs_run *r, fs_trace *t, const char *path, uint64_t seed, int round)
{
    fs_trace_init(t);
    fs_result res;
    fs_status st = fs_run_exec(r, &res, t);
    FS_ASSERT_SEED(st == FS_OK, seed, "round %d: the run fails: %s", round, fs_status_str(st));
    fs_result_free(&res);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    cli_trace_jsonl(f, t);
    fclose(f);
}

/* Saved traces replay: a trace written as JSONL by `trace --format jsonl` reads back event for
 * event, every field and vector bit for bit, on random problems of every algorithm (the seed is
 * printed on failure). */
START_TEST(saved_trace_reads_back_exactly)
{
    uint32_t seed = (uint32_t)fs_test_seed();
    srand(seed);
    char path[64];
    snprintf(path, sizeof path, "/tmp/fs_gui_trace_%d.jsonl", (int)getpid());
    for (int round = 0; round < 12; round++) {
        fs_algo algo = (fs_algo[]){FS_ALGO_TILED, FS_ALGO_DECODE, FS_ALGO_SOFTMAX, FS_ALGO_QUERY}[round % 4];
        fs_run r = fs_run_make(algo);
        int hkv = 1 + rand() % 2, hq = hkv * (1 + rand() % 2), nq = 1 + rand() % 7, nkv = 1 + rand() % 9;
        int d = 1 + rand() % 3, dv = 1 + rand() % 3;
        double *Q = malloc(sizeof(double) * (size_t)(hq * nq * d)), *K = malloc(sizeof(double) * (size_t)(hkv * nkv * d));
        double *V = malloc(sizeof(double) * (size_t)(hkv * nkv * dv)), *z = malloc(sizeof(double) * (size_t)nkv);
        for (int i = 0; i < hq * nq * d; i++) Q[i] = rand() / (double)RAND_MAX * 4 - 2;
        for (int i = 0; i < hkv * nkv * d; i++) K[i] = rand() / (double)RAND_MAX * 4 - 2;
        for (int i = 0; i < hkv * nkv * dv; i++) V[i] = rand() / (double)RAND_MAX * 4 - 2;
        for (int i = 0; i < nkv; i++) z[i] = rand() / (double)RAND_MAX * 10 - 5;
        if (algo == FS_ALGO_SOFTMAX) { r.z = z; r.n_z = nkv; r.chunk = 1 + rand() % 3; }
        else {
            r.attn = fs_attn_make(nq, nkv, d, dv);
            r.attn.n_q_heads = hq; r.attn.n_kv_heads = hkv;
            r.attn.Q = Q; r.attn.K = K; r.attn.V = V;
            if (rand() % 2) r.attn.mask.kind = FS_MASK_CAUSAL;
            r.tiling.Bq = 1 + rand() % 3; r.tiling.Bk = 1 + rand() % 3;
            r.decoding.Bk = 1 + rand() % 4;
            r.decoding.merge = rand() % 2 ? FS_MERGE_TREE : FS_MERGE_SEQUENTIAL;
            if (algo == FS_ALGO_TILED && round % 8 == 0) r.tiling.dropout = (fs_dropout){true, 0.4, (uint64_t)rand()};
        }
        fs_trace t;
        save_trace(&r, &t, path, seed, round);
        gui_show sh;
        ck_assert_msg(gui_trace_load(path, &sh, stderr) == 0, "seed %u round %d: the saved trace does not load", seed, round);
        ck_assert_int_eq(sh.trace.n, t.n);
        for (int64_t k = 0; k < t.n; k++) {
            const fs_event *a = &t.ev[k], *b = &sh.trace.ev[k];
            ck_assert_msg(a->kind == b->kind && a->row == b->row && a->c0 == b->c0 && a->c1 == b->c1 && a->kt == b->kt &&
                              (a->kind == FS_EV_ELEM || (a->head == b->head && a->kv_head == b->kv_head)),
                          "seed %u round %d step %lld: indices differ", seed, round, (long long)k);
            double x[6] = {a->m_new, a->l_new, a->alpha, a->beta, a->m_old, a->l_old};
            double y[6] = {b->m_new, b->l_new, b->alpha, b->beta, b->m_old, b->l_old};
            for (int i = 0; i < 6; i++)
                ck_assert_msg(memcmp(&x[i], &y[i], sizeof x[i]) == 0 || (isnan(x[i]) && isnan(y[i])) ||
                                  (a->kind == FS_EV_OUT && i >= 2) || (a->kind == FS_EV_PARTIAL && i >= 2),
                              "seed %u round %d step %lld: number %d differs (%.17g vs %.17g)", seed, round, (long long)k, i,
                              x[i], y[i]);
            ck_assert_int_eq(a->n_o, b->n_o);
            /* Dropout's cells on a tile: the same pairs and p (an empty list read back empty). */
            ck_assert_msg((a->drop >= 0) == (b->drop >= 0) && a->n_drop == b->n_drop && a->dropout == b->dropout &&
                              same_vec(&t, a->drop, &sh.trace, b->drop, 2 * a->n_drop),
                          "seed %u round %d step %lld: the dropped cells differ", seed, round, (long long)k);
            const double *oa = fs_trace_at(&t, a->o_new), *ob = fs_trace_at(&sh.trace, b->o_new);
            ck_assert((oa == NULL) == (ob == NULL));
            for (int i = 0; oa && i < a->n_o; i++) ck_assert_msg(oa[i] == ob[i], "seed %u: o differs at step %lld", seed, (long long)k);
        }
        ck_assert_int_eq(sh.run.attn.n_q_heads, algo == FS_ALGO_SOFTMAX ? 1 : hq);
        bool visited = false;   /* dropout is read from the tiles' lists (none when all are skipped) */
        for (int64_t k = 0; k < t.n; k++) visited |= t.ev[k].kind == FS_EV_TILE;
        ck_assert(sh.run.tiling.dropout.on == (r.tiling.dropout.on && visited));
        if (algo != FS_ALGO_SOFTMAX) ck_assert_int_eq(sh.run.attn.n_q, nq);
        gui_show_free(&sh);
        fs_trace_free(&t);
        free(Q); free(K); free(V); free(z);
    }
    unlink(path);
}
END_TEST

/* A random backward run for the replay tests (test_problem.h, no soft-cap): GQA or not, every
 * mask (FS_TEST_MASK_*); n_q ≤ max_n, n_kv ≤ max_n + 2, d and d_v ≤ 3; tiles of 1 to 3; the
 * given order; dO given in one run of two (otherwise NULL: dO = 1, the gradient of sum(O)).
 * The run's attention points into drawn, which bw_problem_free frees. */
typedef struct {
    fs_run r;
    fs_test_problem drawn;
} bw_problem;

static void bw_problem_random(bw_problem *p, fs_rng *g, int mask, fs_order order, int max_n)
{
    const fs_test_problem_spec spec = {.max_n_q = max_n, .max_n_kv = max_n + 2, .max_d = 3, .max_d_v = 3,
                                       .max_offset = 3, .max_window = 4, .bits_visible = 2.0 / 3, .dO = true};
    fs_test_problem_draw(&p->drawn, g, mask, &spec);
    p->r = fs_run_make(FS_ALGO_BACKWARD);
    p->r.attn = p->drawn.a;
    p->r.dO = fs_rng_int(g, 0, 1) ? p->drawn.dO : NULL;
    p->r.tiling.Bq = fs_rng_int(g, 1, 3);
    p->r.tiling.Bk = fs_rng_int(g, 1, 3);
    p->r.tiling.order = order;
    if (fs_rng_int(g, 0, 2) == 0) p->r.tiling.dropout = (fs_dropout){true, fs_rng_uniform(g, 0, 0.8), fs_rng_next(g)};
}

static void bw_problem_free(bw_problem *p) { fs_test_problem_free(&p->drawn); }

static bool same_vec(const fs_trace *ta, int64_t a, const fs_trace *tb, int64_t b, int32_t n)
{
    const double *x = fs_trace_at(ta, a), *y = fs_trace_at(tb, b);
    if ((x == NULL) != (y == NULL)) return false;
    return !x || n <= 0 || memcmp(x, y, sizeof(double) * (size_t)n) == 0;
}

/* Saved backward traces replay: random backward problems (every mask, both loop orders, GQA,
 * with and without dO) traced, written as JSONL and read back event for event, every field the
 * engine set and every vector bit for bit (a brow's or bkey's rows and keys, which the line does
 * not repeat, from its btile); the shape, heads, tiles and loop order come back from the events
 * alone, and the show opens the backward scene. */
START_TEST(saved_backward_trace_reads_back_exactly)
{
    uint64_t seed = fs_test_seed();
    fs_rng g = {seed};
    char path[64];
    snprintf(path, sizeof path, "/tmp/fs_gui_btrace_%d.jsonl", (int)getpid());
    for (int round = 0; round < 48; round++) {
        bw_problem p;
        int mask = round % FS_TEST_MASKS;
        fs_order order = (round / 6) % 2 ? FS_ORDER_KV_OUTER : FS_ORDER_Q_OUTER;
        bw_problem_random(&p, &g, mask, order, 7);
        const fs_attn *a = &p.r.attn;
        fs_trace t;
        save_trace(&p.r, &t, path, seed, round);
        gui_show sh;
        ck_assert_msg(gui_trace_load(path, &sh, stderr) == 0, "seed %llu round %d: the saved backward trace does not load",
                      (unsigned long long)seed, round);
        ck_assert_int_eq(sh.trace.n, t.n);
        for (int64_t k = 0; k < t.n; k++) {
            const fs_event *x = &t.ev[k], *y = &sh.trace.ev[k];
            bool tiled = x->kind == FS_EV_BTILE || x->kind == FS_EV_BSKIP || x->kind == FS_EV_BROW || x->kind == FS_EV_BKEY;
            ck_assert_msg(x->kind == y->kind && x->step == y->step && x->head == y->head && x->kv_head == y->kv_head &&
                              x->row == y->row && x->qt == y->qt && x->kt == y->kt && x->r0 == y->r0 && x->r1 == y->r1 &&
                              x->c0 == y->c0 && x->c1 == y->c1 && x->visible == y->visible && x->tensor == y->tensor &&
                              (!tiled || x->cls == y->cls) && (x->kind != FS_EV_BSKIP || x->reason == y->reason),
                          "seed %llu round %d step %lld (%s): indices differ", (unsigned long long)seed, round, (long long)k,
                          fs_event_kind_str(x->kind));
            double nx[10] = {x->x, x->m_old, x->m_blk, x->m_new, x->l_old, x->l_blk, x->l_new, x->alpha, x->beta, 0};
            double ny[10] = {y->x, y->m_old, y->m_blk, y->m_new, y->l_old, y->l_blk, y->l_new, y->alpha, y->beta, 0};
            ck_assert_msg(memcmp(nx, ny, sizeof nx) == 0, "seed %llu round %d step %lld: a number differs",
                          (unsigned long long)seed, round, (long long)k);
            ck_assert_int_eq(x->n_s, y->n_s);
            ck_assert_int_eq(x->n_o, y->n_o);
            ck_assert_int_eq(x->n_g, y->n_g);
            ck_assert_msg(same_vec(&t, x->s_row, &sh.trace, y->s_row, x->n_s) && same_vec(&t, x->p_row, &sh.trace, y->p_row, x->n_s) &&
                              same_vec(&t, x->dp_row, &sh.trace, y->dp_row, x->n_s) &&
                              same_vec(&t, x->ds_row, &sh.trace, y->ds_row, x->n_s) &&
                              same_vec(&t, x->o_old, &sh.trace, y->o_old, x->n_o) && same_vec(&t, x->o_blk, &sh.trace, y->o_blk, x->n_o) &&
                              same_vec(&t, x->o_new, &sh.trace, y->o_new, x->n_o) && same_vec(&t, x->g_old, &sh.trace, y->g_old, x->n_g) &&
                              same_vec(&t, x->g_blk, &sh.trace, y->g_blk, x->n_g) && same_vec(&t, x->g_new, &sh.trace, y->g_new, x->n_g) &&
                              (x->drop >= 0) == (y->drop >= 0) && x->n_drop == y->n_drop && x->dropout == y->dropout &&
                              same_vec(&t, x->drop, &sh.trace, y->drop, 2 * x->n_drop),
                          "seed %llu round %d step %lld (%s): a vector differs", (unsigned long long)seed, round, (long long)k,
                          fs_event_kind_str(x->kind));
        }
        const fs_attn *b = &sh.run.attn;
        ck_assert_int_eq(sh.scene, GUI_SCENE_BACKWARD);
        ck_assert_int_eq(sh.run.algo, FS_ALGO_BACKWARD);
        /* dropout is read from the pairs' events, skipped pairs included (they carry p, no cell) */
        ck_assert_msg(sh.run.tiling.dropout.on == p.r.tiling.dropout.on &&
                          (!p.r.tiling.dropout.on || sh.run.tiling.dropout.p == p.r.tiling.dropout.p),
                      "seed %llu round %d: dropout %d", (unsigned long long)seed, round, sh.run.tiling.dropout.on);
        ck_assert_msg(b->n_q == a->n_q && b->n_kv == a->n_kv && b->d == a->d && b->d_v == a->d_v && b->n_q_heads == a->n_q_heads &&
                          b->n_kv_heads == a->n_kv_heads && b->Q == NULL && sh.run.dO == NULL,
                      "seed %llu round %d: shape %dx%d d %d d_v %d heads %d:%d, expected %dx%d d %d d_v %d heads %d:%d",
                      (unsigned long long)seed, round, b->n_q, b->n_kv, b->d, b->d_v, b->n_q_heads, b->n_kv_heads, a->n_q, a->n_kv,
                      a->d, a->d_v, a->n_q_heads, a->n_kv_heads);
        int Bq = p.r.tiling.Bq < a->n_q ? p.r.tiling.Bq : a->n_q, Bk = p.r.tiling.Bk < a->n_kv ? p.r.tiling.Bk : a->n_kv;
        ck_assert_int_eq(sh.run.tiling.Bq, Bq);
        ck_assert_int_eq(sh.run.tiling.Bk, Bk);
        /* Both orders write the same trace when there is one KV tile, or one Q tile and one query
         * head per KV head: such a trace reads as q-outer. */
        int nqt = (a->n_q + Bq - 1) / Bq, nkt = (a->n_kv + Bk - 1) / Bk, grp = a->n_q_heads / a->n_kv_heads;
        bool alike = nkt == 1 || (nqt == 1 && grp == 1);
        ck_assert_msg(sh.run.tiling.order == (alike ? FS_ORDER_Q_OUTER : order), "seed %llu round %d: order %d, expected %d",
                      (unsigned long long)seed, round, sh.run.tiling.order, alike ? FS_ORDER_Q_OUTER : order);
        /* Every step has a narration. */
        for (int64_t k = 0; k < sh.trace.n; k++) {
            char buf[4096];
            ck_assert(gui_narration(&sh, k, buf, sizeof buf)[0] != 0);
        }
        gui_show_free(&sh);
        fs_trace_free(&t);
        bw_problem_free(&p);
    }
    unlink(path);
}
END_TEST

/* Damaged saved traces: each gives one message at the line and column where it goes wrong. A
 * trace made by the CUDA kernel (--backend cuda, float32 numbers) loads like the engine's. */
START_TEST(damaged_traces_are_located)
{
    static const struct { const char *file, *where; } bad[] = {
        {"truncated.jsonl", "truncated.jsonl:15:250: "},   {"no-output.jsonl", "no-output.jsonl:11:1: "},
        {"missing-line.jsonl", "missing-line.jsonl:6:23: "}, {"bad-number.jsonl", "bad-number.jsonl:8:73: "},
        {"short-vector.jsonl", "short-vector.jsonl:12:385: "}, {"missing-field.jsonl", "missing-field.jsonl:4:125: "},
        {"not-json.jsonl", "not-json.jsonl:1:1: "},
        /* backward traces (backward.jsonl damaged): a line cut short, a brow outside its btile, a dQ
         * row longer than the others, a forward event among backward ones, gradient rows missing,
         * the last newline missing (its column read after the line's buffer was freed, once) */
        {"backward-truncated.jsonl", "backward-truncated.jsonl:20:201: "},
        {"backward-outside.jsonl", "backward-outside.jsonl:20:54: this brow lies outside the btile"},
        {"backward-dq-length.jsonl", "backward-dq-length.jsonl:44:78: a dQ row of 3 numbers, earlier ones have 2"},
        {"backward-mixed.jsonl", "backward-mixed.jsonl:56:10: a forward event"},
        {"backward-no-grad.jsonl", "backward-no-grad.jsonl:51:1: the trace stops before its gradient rows"},
        {"backward-no-newline.jsonl", "backward-no-newline.jsonl:56:84: the last line has no newline"},
        /* dropout (dropout.jsonl damaged): a dropped pair outside its tile, a list of pairs cut */
        {"dropout-outside.jsonl", "dropout-outside.jsonl:1:131: dropped pair 1 [1, 3] is not a cell of the pair"},
        {"dropout-pairs.jsonl", "dropout-pairs.jsonl:5:134: expected ',' or ']'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[256], msg[1024] = "";
        snprintf(path, sizeof path, "tests/gui/traces/%s", bad[i].file);
        FILE *err = fmemopen(msg, sizeof msg - 1, "w");
        gui_show sh;
        ck_assert_int_eq(gui_trace_load(path, &sh, err), 2);
        fclose(err);
        ck_assert_msg(strstr(msg, bad[i].where) != NULL, "%s: got '%s'", bad[i].where, msg);
        ck_assert_msg(strchr(msg, '\n') == strrchr(msg, '\n'), "one line: '%s'", msg);
    }
    const char *good[] = {"tests/gui/traces/tiled.jsonl", "tests/gui/traces/cuda-tiled.jsonl"};
    for (int i = 0; i < 2; i++) {
        gui_show sh;
        ck_assert_int_eq(gui_trace_load(good[i], &sh, stderr), 0);
        ck_assert_int_eq(sh.trace.n, 22);
        ck_assert_int_eq(sh.scene, GUI_SCENE_TILED);
        ck_assert_int_eq(sh.run.attn.n_q, 6);
        ck_assert_int_eq(sh.run.tiling.Bq, 2);
        ck_assert_int_eq(sh.run.tiling.Bk, 3);
        ck_assert_int_eq(sh.run.attn.mask.kind, FS_MASK_CAUSAL);
        gui_show_free(&sh);
    }
    /* The dropout fixture (000's n = 6 causal example, --dropout 0.5 --seed 1): on, p read back,
     * the first tile's two dropped cells (1, 0) and (1, 1). */
    gui_show sd;
    ck_assert_int_eq(gui_trace_load("tests/gui/traces/dropout.jsonl", &sd, stderr), 0);
    ck_assert(sd.run.tiling.dropout.on && sd.run.tiling.dropout.p == 0.5);
    ck_assert_int_eq(sd.trace.ev[0].kind, FS_EV_TILE);
    ck_assert_int_eq(sd.trace.ev[0].n_drop, 2);
    const double *dp0 = fs_trace_at(&sd.trace, sd.trace.ev[0].drop);
    ck_assert(dp0[0] == 1 && dp0[1] == 0 && dp0[2] == 1 && dp0[3] == 1);
    gui_show_free(&sd);
    /* The backward fixture (trace --backward, 2 query heads over 1 KV head, causal with offset 0,
     * kv-outer, Bq 2, Bk 3: tests/gui/traces/{q,k,v,do}.txt) opens the backward scene. */
    gui_show sb;
    ck_assert_int_eq(gui_trace_load("tests/gui/traces/backward.jsonl", &sb, stderr), 0);
    ck_assert_int_eq(sb.trace.n, 56);
    ck_assert_int_eq(sb.scene, GUI_SCENE_BACKWARD);
    ck_assert_int_eq(sb.run.attn.n_q, 3);
    ck_assert_int_eq(sb.run.attn.n_kv, 6);
    ck_assert_int_eq(sb.run.attn.n_q_heads, 2);
    ck_assert_int_eq(sb.run.attn.n_kv_heads, 1);
    ck_assert_int_eq(sb.run.tiling.Bq, 2);
    ck_assert_int_eq(sb.run.tiling.Bk, 3);
    ck_assert_int_eq(sb.run.tiling.order, FS_ORDER_KV_OUTER);
    ck_assert_int_eq(sb.run.attn.mask.kind, FS_MASK_CAUSAL);
    gui_show_free(&sb);
    /* Random damage never crashes or hangs: cut a good file (forward or backward) anywhere, or
     * flip one byte. */
    uint32_t seed = (uint32_t)fs_test_seed();
    srand(seed);
    char path[64];
    snprintf(path, sizeof path, "/tmp/fs_gui_damaged_%d.jsonl", (int)getpid());
    for (int round = 0; round < 400; round++) {
        static char text[1 << 16];
        FILE *f = fopen(round < 200 ? "tests/gui/traces/tiled.jsonl" : "tests/gui/traces/backward.jsonl", "rb");
        ck_assert_ptr_nonnull(f);
        size_t n = fread(text, 1, sizeof text, f);
        ck_assert(n < sizeof text);
        fclose(f);
        FILE *g = fopen(path, "wb");
        size_t cut = (size_t)rand() % n;
        if (round % 2) fwrite(text, 1, cut, g);
        else {
            fwrite(text, 1, n, g);
            fseek(g, (long)cut, SEEK_SET);
            fputc(" {}[],:\"0-.e\nx"[rand() % 15], g);
        }
        fclose(g);
        gui_show sh;
        FILE *devnull = fopen("/dev/null", "w");
        int rc = gui_trace_load(path, &sh, devnull);
        fclose(devnull);
        ck_assert_msg(rc == 0 || rc == 2, "seed %u round %d: rc %d", seed, round, rc);
        /* A file cut short anywhere is refused (it loses at least the last row's newline, or whole
         * output or gradient rows). */
        ck_assert_msg(round % 2 == 0 || rc == 2, "seed %u round %d: a file cut at byte %zu of %zu loaded", seed, round, cut, n);
        if (rc == 0) gui_show_free(&sh);
    }
    unlink(path);
}
END_TEST

/* A saved backward trace replays like the problem itself: on random backward problems (every
 * mask, both orders, GQA) the replay's last frame at 1280×720 is the problem's own, pixel for
 * pixel, below the header (which names the file instead of the inputs); and every step of the
 * replayed fixture and of each random replay shows every number whole at the four projector
 * sizes (gui_fit_check). */
START_TEST(replayed_backward_trace_draws_like_its_problem)
{
    static const int sz[][3] = {{1024, 768, 100}, {1280, 720, 100}, {1920, 1080, 100}, {1920, 1080, 150}};
    const char *font = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
    ck_assert_msg(access(font, R_OK) == 0, "%s is missing (scripts/install-deps.sh installs fonts-dejavu-core)", font);
    uint64_t seed = fs_test_seed();
    fs_rng g = {seed};
    char path[64], png_a[64], png_b[64];
    snprintf(path, sizeof path, "/tmp/fs_gui_bframe_%d.jsonl", (int)getpid());
    snprintf(png_a, sizeof png_a, "/tmp/fs_gui_bframe_%d_a.png", (int)getpid());
    snprintf(png_b, sizeof png_b, "/tmp/fs_gui_bframe_%d_b.png", (int)getpid());
    gui_layout L = gui_layout_compute(1280, 720, 100);
    int below = L.main.y;   /* the header's two lines (the subtitle's descenders reach past L.header) */
    for (int round = 0; round < 7; round++) {
        const char *file = path;
        bw_problem p;
        bool fixture = round == 6;
        if (fixture) file = "tests/gui/traces/backward.jsonl";
        else {
            bw_problem_random(&p, &g, round, round % 2 ? FS_ORDER_KV_OUTER : FS_ORDER_Q_OUTER, 6);
            fs_trace t;
            save_trace(&p.r, &t, path, seed, round);
            int64_t last = t.n - 1;
            fs_trace_free(&t);
            /* Where both orders write the same trace, it reads as q-outer: draw the problem so. */
            const fs_attn *a = &p.r.attn;
            int Bq = p.r.tiling.Bq < a->n_q ? p.r.tiling.Bq : a->n_q, Bk = p.r.tiling.Bk < a->n_kv ? p.r.tiling.Bk : a->n_kv;
            int nqt = (a->n_q + Bq - 1) / Bq, nkt = (a->n_kv + Bk - 1) / Bk;
            if (nkt == 1 || (nqt == 1 && a->n_q_heads == a->n_kv_heads)) p.r.tiling.order = FS_ORDER_Q_OUTER;
            gui_options o;
            gui_options_default(&o);
            o.font_path = font;
            o.trace_file = path;
            ck_assert_int_eq(gui_render(NULL, last, last, png_a, NULL, &o), 0);
            gui_options_default(&o);
            o.font_path = font;
            o.problem = &p.r;
            o.problem_parent = p.drawn.parent;
            o.problem_n_parent = p.drawn.parent ? a->n_q : 0;
            ck_assert_int_eq(gui_render(NULL, last, last, png_b, NULL, &o), 0);
            uint8_t *x = NULL, *y = NULL;
            int wx, hx, wy, hy;
            ck_assert_int_eq(gui_png_read(png_a, &x, &wx, &hx), 0);
            ck_assert_int_eq(gui_png_read(png_b, &y, &wy, &hy), 0);
            ck_assert(wx == 1280 && hx == 720 && wy == wx && hy == hx);
            int64_t differ = 0;
            for (int64_t k = (int64_t)below * wx; k < (int64_t)wx * hx; k++) differ += memcmp(x + 3 * k, y + 3 * k, 3) != 0;
            ck_assert_msg(differ == 0, "seed %llu round %d (mask %d): %lld pixels of the replay differ from the problem's frame "
                          "(%s against %s)", (unsigned long long)seed, round, round, (long long)differ, png_a, png_b);
            free(x);
            free(y);
        }
        gui_show sh;
        ck_assert_int_eq(gui_trace_load(file, &sh, stderr), 0);
        ck_assert_int_eq(sh.scene, GUI_SCENE_BACKWARD);
        for (size_t k = 0; k < sizeof sz / sizeof sz[0]; k++) {
            char why[512];
            int64_t step = gui_fit_check(&sh, sz[k][0], sz[k][1], sz[k][2], font, why, sizeof why, NULL);
            ck_assert_msg(step != -2, "%s", why);
            ck_assert_msg(step < 0, "seed %llu round %d: the replay at %dx%d %d%%, step %lld, cuts %s", (unsigned long long)seed,
                          round, sz[k][0], sz[k][1], sz[k][2], (long long)step, why);
        }
        gui_show_free(&sh);
        if (!fixture) bw_problem_free(&p);
    }
    unlink(path);
    unlink(png_a);
    unlink(png_b);
}
END_TEST

/* Frames rendered offscreen against the reference images: at most 0.5 % of pixels may differ
 * by more than 48 levels in a channel (anti-aliasing and FreeType versions move edges by a
 * pixel; a wrong number, colour or layout changes far more). */
START_TEST(frames_match_references)
{
    static const struct { const char *demo; int step; gui_theme_id theme; } refs[] = {
        {"tiled", 11, GUI_THEME_DARK}, {"softmax", 1, GUI_THEME_LIGHT}, {"decode-tree", 14, GUI_THEME_DARK},
        {"tree", 15, GUI_THEME_CONTRAST}, {"pitfall", 11, GUI_THEME_DARK}, {"grid64", 240, GUI_THEME_LIGHT},
        {"paged", 30, GUI_THEME_DARK}, {"paged", 14, GUI_THEME_LIGHT},
    };
    const char *font = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
    ck_assert_msg(access(font, R_OK) == 0, "%s is missing (scripts/install-deps.sh installs fonts-dejavu-core)", font);
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        gui_options o = demo_options(font, refs[i].demo, refs[i].theme);
        char out[64], ref[256];
        snprintf(out, sizeof out, "/tmp/fs_gui_frame_%d.png", (int)getpid());
        snprintf(ref, sizeof ref, "tests/gui/ref/%s-%d.png", refs[i].demo, refs[i].step);
        ck_assert_int_eq(gui_render(NULL, refs[i].step, refs[i].step, out, NULL, &o), 0);
        uint8_t *a = NULL, *b = NULL;
        int wa, ha, wb, hb;
        ck_assert_int_eq(gui_png_read(out, &a, &wa, &ha), 0);
        ck_assert_msg(gui_png_read(ref, &b, &wb, &hb) == 0, "cannot read %s (run tests/gui/make-refs.sh)", ref);
        ck_assert_int_eq(wa, wb);
        ck_assert_int_eq(ha, hb);
        int64_t bad = gui_image_diff(a, b, wa, ha, 48);
        ck_assert_msg(bad <= (int64_t)wa * ha / 200, "%s: %lld pixels differ (allowed %lld); the frame is in %s", ref,
                      (long long)bad, (long long)wa * ha / 200, out);
        free(a);
        free(b);
        unlink(out);
    }
}
END_TEST

/* The formula lines' numbers: 3 significant digits under 0.01 (β = 0.000159, once "0.0002"),
 * and a factor before a sum of 10 or more with the decimals its product needs: 0.9871 · 1173.5108
 * missed the printed ℓ by 0.06; 0.98714858 · 1173.5108 is within its last digit. */
START_TEST(formula_numbers_keep_their_digits)
{
    char b[32];
    ck_assert_str_eq(gui_fmt(1.59e-4, b, sizeof b), "0.000159");
    ck_assert_str_eq(gui_fmt(-0.0027712, b, sizeof b), "-0.00277");
    ck_assert_str_eq(gui_fmt(0.5, b, sizeof b), "0.5000");
    ck_assert_str_eq(gui_fmt(5e-5, b, sizeof b), "5.000e-05");
    ck_assert_str_eq(gui_fmt_factor(0.98714858, 1173.5108, b, sizeof b), "0.98714858");
    ck_assert_str_eq(gui_fmt_factor(0.98714858, 9.5, b, sizeof b), "0.9871");
    ck_assert_str_eq(gui_fmt_factor(1.0, 1173.5108, b, sizeof b), "1.0000");
    const double f = 0.98714858, other = 1173.5108;
    double printed = strtod(gui_fmt_factor(f, other, b, sizeof b), NULL);
    ck_assert_msg(fabs(printed * other - f * other) < 0.5e-4, "%s · %g is off by %g", b, other, fabs(printed - f) * other);
    /* the maxima inside the factor's exp get its decimals, so exp of the printed operands is the printed factor */
    const double m_old = 0.43365017, m_new = 0.44658488, a = exp(m_old - m_new);
    char o1[32], o2[32];
    ck_assert_str_eq(gui_fmt_operand(m_old, a, other, o1, sizeof o1), "0.43365017");
    ck_assert_str_eq(gui_fmt_operand(m_old, a, 9.5, o1, sizeof o1), "0.4337");
    ck_assert_str_eq(gui_fmt_operand(-INFINITY, a, other, o1, sizeof o1), "-inf");
    gui_fmt_operand(m_old, a, other, o1, sizeof o1);
    gui_fmt_operand(m_new, a, other, o2, sizeof o2);
    gui_fmt_factor(a, other, b, sizeof b);
    ck_assert_msg(fabs(exp(strtod(o1, NULL) - strtod(o2, NULL)) - strtod(b, NULL)) < 1.5e-8,
                  "exp(%s - %s) is not the printed %s", o1, o2, b);
}
END_TEST

Suite *gui_suite(void)
{
    Suite *s = suite_create("gui");
    TCase *t = tcase_create("logic");
    tcase_set_timeout(t, 60);   /* some load every lesson; sanitized on a busy machine they take seconds */
    tcase_add_test(t, layout_fits_the_window);
    tcase_add_test(t, layout_text_grows_with_the_window);
    tcase_add_test(t, layout_portrait_stacks);
    tcase_add_test(t, timeline_round_trip);
    tcase_add_test(t, grid_fit_and_hit);
    tcase_add_test(t, themes_are_legible);
    tcase_add_test(t, keys_to_commands);
    tcase_add_test(t, stepping_and_significant);
    tcase_add_test(t, timeline_click_and_drag);
    tcase_add_test(t, predict_mode);
    tcase_add_test(t, predict_step0_first);
    tcase_add_test(t, classes_wait_for_step0_questions);
    tcase_add_test(t, kv_head_waits);
    tcase_add_test(t, claim_questions_in_the_window);
    tcase_add_test(t, upright_cover_keeps_the_question_close);
    tcase_add_test(t, side_by_side_cover_gives_the_bar_room);
    tcase_add_test(t, claims_lists_keep_every_claim);
    tcase_add_test(t, section_quiz);
    tcase_add_test(t, help_then_glossary);
    tcase_add_test(t, intro_box);
    tcase_add_test(t, predict_prompt_covers_nothing);
    tcase_add_test(t, section_line_covers_nothing);
    tcase_add_test(t, hover_follows_the_layout);
    tcase_add_test(t, ring_ending_leaves_the_table);
    tcase_add_test(t, commands_change_settings);
    tcase_add_test(t, script_errors_are_located);
    tcase_add_test(t, png_round_trip);
    tcase_add_test(t, traffic_counter_matches_memory_model);
    tcase_add_test(t, wrap_keeps_words_whole);
    tcase_add_test(t, formula_numbers_keep_their_digits);
    tcase_add_test(t, cell_numbers_never_mislead);
    tcase_add_test(t, pitfall_narration_follows_timeline);
    tcase_add_test(t, backward_lessons_in_their_scene);
    tcase_add_test(t, saved_trace_reads_back_exactly);
    tcase_add_test(t, saved_backward_trace_reads_back_exactly);
    tcase_add_test(t, damaged_traces_are_located);
    suite_add_tcase(s, t);
    TCase *f = tcase_create("frames");
    tcase_set_timeout(f, 60);
    tcase_add_test(f, frames_match_references);
    tcase_add_test(f, every_step_fits_at_projector_sizes);
    tcase_add_test(f, every_step_fits_upright_on_a_phone);
    tcase_add_test(f, gif_first_frame_is_the_png);
    tcase_add_test(f, replayed_backward_trace_draws_like_its_problem);
    suite_add_tcase(s, f);
    return s;
}

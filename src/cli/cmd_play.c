/* cmd_play.c: `flashstep play`: the SDL window (src/gui), or the terminal player when there is
 * no display, when SDL cannot open one, or with --terminal. Also the window's timing mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/problem.h"
#include "gui/gui.h"
#include "lesson/lesson.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashstep play [LESSON] [OPTIONS]\n"
            "       flashstep play --q FILE --k FILE --v FILE [PROBLEM OPTIONS] [OPTIONS]\n"
            "       flashstep play --trace FILE.jsonl [OPTIONS]\n\n"
            "Step through a lesson in a window (SDL2). LESSON is a lesson file, a file stem or a unique\n"
            "prefix of one (see 'flashstep lessons'); the first lesson when none is given. Instead of a\n"
            "lesson: your own problem, with the problem options of 'flashstep trace' (below), or a trace\n"
            "saved by 'flashstep trace --format jsonl' (also one from --backend cuda). Without a display\n"
            "(no DISPLAY or WAYLAND_DISPLAY, or SDL cannot open a window) a lesson falls back to the\n"
            "terminal player.\n\n"
            "A lesson with some of the problem options (--bq --bk --order --form --mask --window\n"
            "--offset --exp2 --pitfall --merge --parts --chunk --softcap --dropout --seed --ring\n"
            "--sharding --fp8) plays its variation: the lesson's own problem with those settings\n"
            "changed, e.g. 'flashstep play 000_04 --bq 3 --bk 3' (the \"try this\" of its last step).\n\n"
            "keys: Space play/pause; Right/Left one event; Shift+Right/Left next/previous significant\n"
            "event (rescale, skip, merge, output); Up/Down speed; Home/End; L or 1-9, 0 lesson (the list\n"
            "ends with each section's quiz); Q the questions on/off (on by default: asked before their steps;\n"
            "--autoplay starts without them); Enter at a section's last step: its quiz; +/- scale; T theme; F full screen; P save PNG; [ / ] fewer / more decode splits;\n"
            "V the lesson's variation (its \"try this\"; V again: the lesson as written);\n"
            "? help; Esc quit. Mouse: drag the timeline, hover a cell for its exact value, click a\n"
            "row to follow it.\n\n"
            "  --terminal         use the terminal player (its own options follow: --all, --digits N)\n"
            "  --autoplay         start playing            --exit-at-end   quit after the last event\n"
            "  --speed EPS        events per second (0.5 to 8192, nearest power of two)\n"
            "  --step N           open at step N\n"
            "  --no-questions     ask nothing (for a teacher projecting; Q turns questions on again)\n"
            "  --size WxH         window size (default 1280x720)   --fullscreen\n"
            "  --zoom PCT         text and geometry scale, 50-300 (default 100); without a problem of\n"
            "                     your own, --scale PCT means the same\n"
            "  --theme NAME       dark (default), light or contrast\n"
            "  --font FILE        a TrueType font (default: fontconfig's DejaVu Sans Mono, else monospace)\n"
            "  --script FILE      feed key and mouse input from FILE (docs/gui.md); exit 1 if an\n"
            "                     'expect' line fails\n"
            "  --demo NAME        a built-in problem instead of a lesson: softmax query tiled tree window\n"
            "                     gqa decode decode-tree pitfall grid64 paged\n"
            "  --trace FILE       replay a JSONL trace saved by 'flashstep trace --format jsonl'\n"
            "  --fps              print frame count, first-frame latency and frame times at exit\n"
            "  --bench N          time N frames (one event per frame) offscreen and exit;\n"
            "                     --bench-window times them in a window instead\n"
            "  --max-seconds N    give up after N seconds (exit 1), for tests\n\n");
    fputs(cli_problem_help, f);
}

/* The window's text and geometry scale in percent (--zoom, or --scale without a problem). */
static int set_zoom(const char *cmd, const char *name, const char *v, gui_options *o)
{
    long n;
    if (!cli_parse_int(v, 50, 300, &n)) { fprintf(stderr, "flashstep %s: %s wants 50..300 (percent), got '%s'\n", cmd, name, v); return -1; }
    o->scale_pct = (int)n;
    return 1;
}

/* Shared by play and render (cmd, for the messages): one option at argv[*i]; 1 handled, 0 not
 * ours, -1 bad. */
int cli_gui_option(const char *cmd, int argc, char **argv, int *i, gui_options *o);
int cli_gui_option(const char *cmd, int argc, char **argv, int *i, gui_options *o)
{
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
#define NEED() do { if (!v) { fprintf(stderr, "flashstep %s: %s needs a value\n", cmd, a); return -1; } (*i)++; } while (0)
    if (!strcmp(a, "--font")) { NEED(); o->font_path = v; return 1; }
    if (!strcmp(a, "--demo")) { NEED(); o->demo = v; return 1; }
    if (!strcmp(a, "--size")) {
        NEED();
        int w, h;
        char x;
        if (sscanf(v, "%d%c%d", &w, &x, &h) != 3 || (x != 'x' && x != 'X') || w < 320 || h < 200 || w > 8192 || h > 8192) {
            fprintf(stderr, "flashstep %s: --size wants WxH between 320x200 and 8192x8192, got '%s'\n", cmd, v);
            return -1;
        }
        o->w = w; o->h = h;
        return 1;
    }
    if (!strcmp(a, "--zoom")) {
        NEED();
        return set_zoom(cmd, a, v, o);
    }
    if (!strcmp(a, "--trace")) { NEED(); o->trace_file = v; return 1; }
    if (!strcmp(a, "--theme")) {
        NEED();
        if (!strcmp(v, "dark")) o->theme = GUI_THEME_DARK;
        else if (!strcmp(v, "light")) o->theme = GUI_THEME_LIGHT;
        else if (!strcmp(v, "contrast") || !strcmp(v, "high-contrast")) o->theme = GUI_THEME_CONTRAST;
        else { fprintf(stderr, "flashstep %s: --theme wants dark, light or contrast, got '%s'\n", cmd, v); return -1; }
        return 1;
    }
#undef NEED
    return 0;
}

/* Shared by play and render, after their options: --scale is the score scale with a problem of
 * one's own and the window scale (--zoom) without; a problem is checked and loaded into p and o.
 * title[0] and title[1] receive the window's title and subtitle. 0, or 2 with a message. */
int cli_gui_problem(cli_problem *p, const char *scale_arg, const char *lesson, gui_options *o, char (*title)[160]);
int cli_gui_problem(cli_problem *p, const char *scale_arg, const char *lesson, gui_options *o, char (*title)[160])
{
    bool mine = cli_problem_given(p);
    if (scale_arg && !mine) {
        if (set_zoom(p->cmd, "--scale", scale_arg, o) < 0) return 2;
    } else if (scale_arg && cli_problem_set(p, "--scale", scale_arg) == 2) {
        return 2;
    }
    if (!mine) return 0;
    const char *other = lesson ? "a lesson" : o->demo ? "--demo" : o->trace_file ? "--trace" : NULL;
    if (other) {
        fprintf(stderr, "flashstep %s: your own problem (--q/--k/--v, --scores or --z) or %s, not both\n", p->cmd, other);
        return 2;
    }
    if (cli_problem_load(p)) return 2;
    cli_problem_describe(p, title[0], sizeof title[0], title[1], sizeof title[1]);
    o->problem = &p->run;
    o->problem_parent = p->parent;
    o->problem_n_parent = p->n_parent;
    o->problem_title = title[0];
    o->problem_source = title[1];
    return 0;
}

int cli_play(int argc, char **argv)
{
    gui_options o;
    gui_options_default(&o);
    const char *lesson = NULL, *scale_arg = NULL;
    bool terminal = false, bench_window = false;
    long bench = 0;
    cli_problem p;
    cli_problem_init(&p, "play");
    char title[2][160];
    char variation[512] = "";   /* problem options that can vary a lesson (fs_lesson_option_arity) */
    bool other_problem = false; /* a problem option that cannot */
    int rc = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        int r = cli_gui_option("play", argc, argv, &i, &o);
        if (r < 0) goto out;
        if (r > 0) continue;
        int arity = fs_lesson_option_arity(a);
        if (arity >= 0 && (!fs_lesson_options_add(variation, sizeof variation, a) ||
                           (arity && v && !fs_lesson_options_add(variation, sizeof variation, v)))) {
            fprintf(stderr, "flashstep play: too many options\n");
            goto out;
        }
        if (!strcmp(a, "--scale")) {   /* the score scale or the window scale: decided below */
            if (!v) { fprintf(stderr, "flashstep play: --scale needs a value\n"); goto out; }
            if (scale_arg) { cli_fail("play", "%s given twice", a); goto out; }
            scale_arg = v;
            i++;
            continue;
        }
        r = cli_problem_option(&p, argc, argv, &i);
        if (r == 2) goto out;
        if (r == 1) {
            other_problem |= arity < 0;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); rc = 0; goto out; }
        else if (!strcmp(a, "--terminal")) terminal = true;
        else if (!strcmp(a, "--autoplay")) o.autoplay = true;
        else if (!strcmp(a, "--no-questions")) o.no_questions = true;
        else if (!strcmp(a, "--exit-at-end")) o.exit_at_end = true;
        else if (!strcmp(a, "--fullscreen")) o.fullscreen = true;
        else if (!strcmp(a, "--fps")) o.fps_report = true;
        else if (!strcmp(a, "--bench-window")) bench_window = true;
        else if (!strcmp(a, "--speed") && v) {
            char *end;
            o.speed_eps = strtod(v, &end);
            if (*end || !(o.speed_eps >= 0.5 && o.speed_eps <= 8192)) {
                fprintf(stderr, "flashstep play: --speed wants 0.5..8192, got '%s'\n", v);
                goto out;
            }
            i++;
        } else if (!strcmp(a, "--step") && v) {
            if (!cli_parse_int(v, 0, 1L << 30, &n)) { fprintf(stderr, "flashstep play: --step wants a step number, got '%s'\n", v); goto out; }
            o.start_step = n; i++;
        } else if (!strcmp(a, "--script") && v) { o.script = v; i++; }
        else if (!strcmp(a, "--bench") && v) {
            if (!cli_parse_int(v, 1, 1000000, &bench)) { fprintf(stderr, "flashstep play: --bench wants a frame count, got '%s'\n", v); goto out; }
            i++;
        } else if (!strcmp(a, "--max-seconds") && v) {
            if (!cli_parse_int(v, 1, 100000, &n)) { fprintf(stderr, "flashstep play: --max-seconds wants seconds, got '%s'\n", v); goto out; }
            o.max_seconds = (int)n; i++;
        } else if (a[0] == '-' && a[1]) {
            if (terminal) break;   /* the terminal player's own options */
            fprintf(stderr, "flashstep play: unknown option '%s' (or it needs a value); see flashstep play --help\n", a);
            goto out;
        } else if (!lesson) lesson = a;
        else { fprintf(stderr, "flashstep play: one lesson at a time ('%s' and '%s')\n", lesson, a); goto out; }
    }
    /* A lesson with only the options that vary it (--bq 3 --bk 2): its variation, not a problem
     * of one's own; the terminal player reads the same options from argv. */
    if (lesson && cli_problem_given(&p) && !other_problem) {
        cli_problem_free(&p);
        cli_problem_init(&p, "play");
        o.variation = variation;
    }
    if (cli_gui_problem(&p, scale_arg, lesson, &o, title)) goto out;
    bool mine = o.problem || o.trace_file;
    if (bench) { rc = gui_bench(lesson, (int)bench, bench_window, &o); goto out; }
    if (terminal && !mine) { rc = cli_play_terminal(argc, argv); goto out; }
    const char *disp = getenv("DISPLAY"), *wl = getenv("WAYLAND_DISPLAY"), *drv = getenv("SDL_VIDEODRIVER");
    bool display = (disp && *disp) || (wl && *wl) || (drv && *drv);
    rc = display && !terminal ? gui_play(lesson, &o) : GUI_NO_DISPLAY;
    if (rc != GUI_NO_DISPLAY) goto out;
    rc = 2;
    if (o.demo || mine) {
        fprintf(stderr, "flashstep play: %s, and the terminal player shows lessons only ('flashstep render' draws "
                        "frames without a display; 'flashstep trace' prints the steps)\n",
                terminal ? "--terminal" : "no display");
        goto out;
    }
    if (o.script) {   /* its input and 'expect' lines need the window: never pass them unchecked */
        fprintf(stderr, "flashstep play: no display for --script %s (run it under xvfb-run)\n", o.script);
        goto out;
    }
    fprintf(stderr, "flashstep play: no display: playing in the terminal instead\n");
    char step[32];   /* --step carries over to the terminal player */
    snprintf(step, sizeof step, "%lld", (long long)o.start_step);
    char *targv[6 + 64] = {argv[0]};
    int targc = 1;
    for (int i = 1; i < argc && targc < 6 + 56; i++) {   /* the variation's options carry over */
        if (cli_gui_option("play", argc, argv, &i, &(gui_options){0}) != 0) continue;
        int arity = fs_lesson_option_arity(argv[i]);
        if (arity < 0) continue;
        targv[targc++] = argv[i];
        if (arity && i + 1 < argc) targv[targc++] = argv[++i];
    }
    if (lesson) targv[targc++] = (char *)lesson;
    if (o.start_step > 0) { targv[targc++] = (char *)"--step"; targv[targc++] = step; }
    if (o.no_questions) targv[targc++] = (char *)"--no-questions";
    rc = cli_play_terminal(targc, targv);
out:
    cli_problem_free(&p);
    return rc;
}

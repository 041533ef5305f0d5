/* cmd_play.c: `flashstep play`: the SDL window (src/gui), or the terminal player when there is
 * no display, when SDL cannot open one, or with --terminal. Also the window's timing mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gui/gui.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashstep play [LESSON] [OPTIONS]\n\n"
            "Step through a lesson in a window (SDL2). LESSON is a lesson file, a file stem or a unique\n"
            "prefix of one (see 'flashstep lessons'); the first lesson when none is given. Without a\n"
            "display (no DISPLAY or WAYLAND_DISPLAY, or SDL cannot open a window) it falls back to the\n"
            "terminal player.\n\n"
            "keys: Space play/pause; Right/Left one event; Shift+Right/Left next/previous significant\n"
            "event (rescale, skip, merge, output); Up/Down speed; Home/End; L or 1-9, 0 lesson; Q predict\n"
            "mode; +/- scale; T theme; F full screen; P save PNG; [ / ] fewer / more decode splits;\n"
            "? help; Esc quit. Mouse: drag the timeline, hover a cell for its exact value, click a\n"
            "row to follow it.\n\n"
            "  --terminal         use the terminal player (its own options follow: --all, --digits N)\n"
            "  --autoplay         start playing            --exit-at-end   quit after the last event\n"
            "  --speed EPS        events per second (0.5 to 8192, nearest power of two)\n"
            "  --step N           open at step N\n"
            "  --size WxH         window size (default 1280x720)   --fullscreen\n"
            "  --scale PCT        text and geometry scale, 50-300 (default 100)\n"
            "  --theme NAME       dark (default), light or contrast\n"
            "  --font FILE        a TrueType font (default: fontconfig's DejaVu Sans Mono, else monospace)\n"
            "  --script FILE      feed key and mouse input from FILE (docs/gui.md); exit 1 if an\n"
            "                     'expect' line fails\n"
            "  --demo NAME        a built-in problem instead of a lesson: softmax query tiled tree window\n"
            "                     gqa decode decode-tree pitfall grid64\n"
            "  --fps              print frame count, first-frame latency and frame times at exit\n"
            "  --bench N          time N frames (one event per frame) offscreen and exit;\n"
            "                     --bench-window times them in a window instead\n"
            "  --max-seconds N    give up after N seconds (exit 1), for tests\n");
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || end == s || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Shared by play and render: one option at argv[*i]; 1 handled, 0 not ours, -1 bad. */
int cli_gui_option(int argc, char **argv, int *i, gui_options *o);
int cli_gui_option(int argc, char **argv, int *i, gui_options *o)
{
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    long n;
#define NEED() do { if (!v) { fprintf(stderr, "flashstep: %s needs a value\n", a); return -1; } (*i)++; } while (0)
    if (!strcmp(a, "--font")) { NEED(); o->font_path = v; return 1; }
    if (!strcmp(a, "--demo")) { NEED(); o->demo = v; return 1; }
    if (!strcmp(a, "--size")) {
        NEED();
        int w, h;
        char x;
        if (sscanf(v, "%d%c%d", &w, &x, &h) != 3 || (x != 'x' && x != 'X') || w < 320 || h < 200 || w > 8192 || h > 8192) {
            fprintf(stderr, "flashstep: --size wants WxH between 320x200 and 8192x8192, got '%s'\n", v);
            return -1;
        }
        o->w = w; o->h = h;
        return 1;
    }
    if (!strcmp(a, "--scale")) {
        NEED();
        if (parse_int(v, 50, 300, &n)) { fprintf(stderr, "flashstep: --scale wants 50..300, got '%s'\n", v); return -1; }
        o->scale_pct = (int)n;
        return 1;
    }
    if (!strcmp(a, "--theme")) {
        NEED();
        if (!strcmp(v, "dark")) o->theme = GUI_THEME_DARK;
        else if (!strcmp(v, "light")) o->theme = GUI_THEME_LIGHT;
        else if (!strcmp(v, "contrast") || !strcmp(v, "high-contrast")) o->theme = GUI_THEME_CONTRAST;
        else { fprintf(stderr, "flashstep: --theme wants dark, light or contrast, got '%s'\n", v); return -1; }
        return 1;
    }
#undef NEED
    return 0;
}

int cli_play(int argc, char **argv)
{
    gui_options o;
    gui_options_default(&o);
    const char *lesson = NULL;
    bool terminal = false, bench_window = false;
    long bench = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        int r = cli_gui_option(argc, argv, &i, &o);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--terminal")) terminal = true;
        else if (!strcmp(a, "--autoplay")) o.autoplay = true;
        else if (!strcmp(a, "--exit-at-end")) o.exit_at_end = true;
        else if (!strcmp(a, "--fullscreen")) o.fullscreen = true;
        else if (!strcmp(a, "--fps")) o.fps_report = true;
        else if (!strcmp(a, "--bench-window")) bench_window = true;
        else if (!strcmp(a, "--speed") && v) {
            char *end;
            o.speed_eps = strtod(v, &end);
            if (*end || !(o.speed_eps >= 0.5 && o.speed_eps <= 8192)) { fprintf(stderr, "flashstep: --speed wants 0.5..8192, got '%s'\n", v); return 2; }
            i++;
        } else if (!strcmp(a, "--step") && v) {
            if (parse_int(v, 0, 1L << 30, &n)) { fprintf(stderr, "flashstep: --step wants a step number, got '%s'\n", v); return 2; }
            o.start_step = n; i++;
        } else if (!strcmp(a, "--script") && v) { o.script = v; i++; }
        else if (!strcmp(a, "--bench") && v) {
            if (parse_int(v, 1, 1000000, &bench)) { fprintf(stderr, "flashstep: --bench wants a frame count, got '%s'\n", v); return 2; }
            i++;
        } else if (!strcmp(a, "--max-seconds") && v) {
            if (parse_int(v, 1, 100000, &n)) { fprintf(stderr, "flashstep: --max-seconds wants seconds, got '%s'\n", v); return 2; }
            o.max_seconds = (int)n; i++;
        } else if (a[0] == '-' && a[1]) {
            if (terminal) break;   /* the terminal player's own options */
            fprintf(stderr, "flashstep: play: unknown option '%s' (or it needs a value)\n", a);
            usage(stderr);
            return 2;
        } else if (!lesson) lesson = a;
        else { fprintf(stderr, "flashstep: play: one lesson at a time ('%s' and '%s')\n", lesson, a); return 2; }
    }
    if (bench) return gui_bench(lesson, (int)bench, bench_window, &o);
    if (terminal) return cli_play_terminal(argc, argv);
    const char *disp = getenv("DISPLAY"), *wl = getenv("WAYLAND_DISPLAY"), *drv = getenv("SDL_VIDEODRIVER");
    bool display = (disp && *disp) || (wl && *wl) || (drv && *drv);
    int rc = display ? gui_play(lesson, &o) : GUI_NO_DISPLAY;
    if (rc != GUI_NO_DISPLAY) return rc;
    if (o.demo) {
        fprintf(stderr, "flashstep: no display, and the terminal player shows lessons, not demos\n");
        return 2;
    }
    if (o.script) {   /* its input and 'expect' lines need the window: never pass them unchecked */
        fprintf(stderr, "flashstep: no display for --script %s (run it under xvfb-run)\n", o.script);
        return 2;
    }
    fprintf(stderr, "flashstep: no display: playing in the terminal instead\n");
    char *targv[3] = {argv[0], (char *)lesson, NULL};
    return cli_play_terminal(lesson ? 2 : 1, targv);
}

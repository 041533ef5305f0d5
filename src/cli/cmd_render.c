/* cmd_render.c: `flashstep render`: lesson frames as PNG files, without a display (an offscreen
 * surface and SDL's software renderer; see src/gui/app.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/problem.h"
#include "gui/gui.h"
#include "lesson/lesson.h"

int cli_gui_option(const char *cmd, int argc, char **argv, int *i, gui_options *o);
int cli_gui_problem(cli_problem *p, const char *scale_arg, const char *lesson, gui_options *o, char (*title)[160]);

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashstep render [LESSON] --step N --out FILE.png\n"
            "       flashstep render [LESSON] --steps A:B --out-dir DIR\n"
            "       flashstep render [LESSON] --steps A:B --out FILE.gif|FILE.mp4 [--fps F]\n"
            "       flashstep render --q FILE --k FILE --v FILE [PROBLEM OPTIONS] --step N --out FILE.png\n"
            "       flashstep render --trace FILE.jsonl --steps A:B --out-dir DIR\n\n"
            "Draw the window's frames for steps of a lesson into PNG files, with no display needed.\n"
            "LESSON as for 'flashstep play' (the first lesson when none is given); instead of a lesson,\n"
            "your own problem (the problem options of 'flashstep trace', below) or a trace saved by\n"
            "'flashstep trace --format jsonl'. --steps writes DIR/STEM-NNNN.png for every step from A\n"
            "to B (B is clamped to the last step; 'A:' means to the end). Prints each file written.\n"
            "A lesson with some of the problem options (--bq 3 --bk 3 ...; see 'flashstep play --help')\n"
            "draws its variation, as 'flashstep play' plays it.\n\n"
            "  --size WxH      frame size (default 1280x720)\n"
            "  --zoom PCT      text and geometry scale, 50-300 (default 100); without a problem of your\n"
            "                  own, --scale PCT means the same\n"
            "  --theme NAME    dark (default), light or contrast\n"
            "  --font FILE     a TrueType font (default: fontconfig's DejaVu Sans Mono, else monospace)\n"
            "  --demo NAME     a built-in problem instead of a lesson (see 'flashstep play --help')\n"
            "  --trace FILE    replay a JSONL trace saved by 'flashstep trace --format jsonl'\n"
            "  --out FILE.gif  with --steps A:B, one animated GIF of those steps (giflib; each frame\n"
            "                  quantized to its own 256 colours)\n"
            "  --out FILE.mp4  the same as an MP4 video (FFmpeg's libraries, where this build has them)\n"
            "  --fps F         frames (steps) per second of the animation, 0.5-100 (default 2);\n"
            "                  --speed F means the same, as in 'flashstep play'\n");
    fprintf(f, "This build writes PNG%s%s%s.\n\n", gui_anim_supported(GUI_ANIM_GIF) ? ", GIF" : "",
            gui_anim_supported(GUI_ANIM_MP4) ? ", MP4" : "",
            gui_anim_supported(GUI_ANIM_GIF) && gui_anim_supported(GUI_ANIM_MP4) ? ""
            : " (the others need their library at build time: scripts/install-deps.sh, then rebuild)");
    fputs(cli_problem_help, f);
}

static int render(const char *lesson, bool have_steps, long long a, long long b, const char *out, const char *out_dir,
                  const gui_options *o);

int cli_render(int argc, char **argv)
{
    gui_options o;
    gui_options_default(&o);
    const char *lesson = NULL, *out = NULL, *out_dir = NULL, *scale_arg = NULL;
    long long a = -1, b = -1;
    bool have_steps = false;
    cli_problem p;
    cli_problem_init(&p, "render");
    char variation[512] = "";   /* a lesson's variation, as `play LESSON --bq 3 …` (cmd_play.c) */
    bool other_problem = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = cli_gui_option("render", argc, argv, &i, &o);
        if (r < 0) return 2;
        if (r > 0) continue;
        int arity = fs_lesson_option_arity(arg);
        if (arity >= 0 && (!fs_lesson_options_add(variation, sizeof variation, arg) ||
                           (arity && v && !fs_lesson_options_add(variation, sizeof variation, v)))) {
            fprintf(stderr, "flashstep render: too many options\n");
            return 2;
        }
        if (!strcmp(arg, "--scale")) {   /* the score scale or the frame's scale: decided below */
            if (!v) { fprintf(stderr, "flashstep render: --scale needs a value\n"); return 2; }
            if (scale_arg) { cli_fail("render", "%s given twice", arg); return 2; }
            scale_arg = v;
            i++;
            continue;
        }
        r = cli_problem_option(&p, argc, argv, &i);
        if (r == 2) return 2;
        if (r == 1) {
            other_problem |= arity < 0;
            continue;
        }
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) { usage(stdout); return 0; }
        if (!strcmp(arg, "--step") && v) {
            char *end;
            a = b = strtoll(v, &end, 10);
            if (*end || end == v || a < 0) { fprintf(stderr, "flashstep render: --step wants a step number, got '%s'\n", v); return 2; }
            have_steps = true;
            i++;
        } else if (!strcmp(arg, "--steps") && v) {
            char *end;
            a = strtoll(v, &end, 10);
            if (end == v || *end != ':' || a < 0) { fprintf(stderr, "flashstep render: --steps wants A:B, got '%s'\n", v); return 2; }
            const char *bs = end + 1;
            if (!*bs) b = 1LL << 40;
            else {
                b = strtoll(bs, &end, 10);
                if (*end || b < a) { fprintf(stderr, "flashstep render: --steps wants A:B with A <= B, got '%s'\n", v); return 2; }
            }
            have_steps = true;
            i++;
        } else if ((!strcmp(arg, "--fps") || !strcmp(arg, "--speed")) && v) {
            char *end;
            double f = strtod(v, &end);
            if (*end || end == v || !(f >= 0.5 && f <= 100)) {
                fprintf(stderr, "flashstep render: %s wants 0.5..100 frames (steps) per second, got '%s'\n", arg, v);
                return 2;
            }
            o.fps = f;
            i++;
        } else if (!strcmp(arg, "--out") && v) { out = v; i++; }
        else if (!strcmp(arg, "--out-dir") && v) { out_dir = v; i++; }
        else if (arg[0] == '-' && arg[1]) {
            fprintf(stderr, "flashstep render: unknown option '%s' (or it needs a value); see flashstep render --help\n", arg);
            return 2;
        } else if (!lesson) lesson = arg;
        else { fprintf(stderr, "flashstep render: one lesson at a time ('%s' and '%s')\n", lesson, arg); return 2; }
    }
    char title[2][160];
    if (lesson && cli_problem_given(&p) && !other_problem) {   /* the lesson's variation */
        cli_problem_free(&p);
        cli_problem_init(&p, "render");
        o.variation = variation;
    }
    if (cli_gui_problem(&p, scale_arg, lesson, &o, title)) { cli_problem_free(&p); return 2; }
    int rc = render(lesson, have_steps, a, b, out, out_dir, &o);
    cli_problem_free(&p);
    return rc;
}

static int render(const char *lesson, bool have_steps, long long a, long long b, const char *out, const char *out_dir,
                  const gui_options *o)
{
    if (!have_steps) { fprintf(stderr, "flashstep render: give --step N or --steps A:B (see flashstep render --help)\n"); return 2; }
    bool anim = out && gui_anim_kind_of(out) != GUI_ANIM_NONE;
    if (a == b && !out && !out_dir) { fprintf(stderr, "flashstep render: --step needs --out FILE (or --out-dir DIR)\n"); return 2; }
    if (a != b && !out_dir && !anim) {
        fprintf(stderr, "flashstep render: --steps needs --out-dir DIR, or --out FILE.gif / FILE.mp4\n");
        return 2;
    }
    if (anim && out_dir) { fprintf(stderr, "flashstep render: --out %s or --out-dir, not both\n", out); return 2; }
    if (anim && !gui_anim_supported(gui_anim_kind_of(out))) {   /* before any drawing */
        gui_anim *none;
        return gui_anim_open(&none, out, 2, 2, 1, stderr);
    }
    if (out && !anim) {
        size_t n = strlen(out);
        if (n < 4 || strcasecmp(out + n - 4, ".png")) {
            fprintf(stderr, "flashstep render: --out wants FILE.png, FILE.gif or FILE.mp4, got '%s'\n", out);
            return 2;
        }
    }
    if (out_dir) {
        struct stat st;
        if (stat(out_dir, &st) != 0 && mkdir(out_dir, 0777) != 0) { fprintf(stderr, "flashstep render: cannot create %s\n", out_dir); return 2; }
    }
    return gui_render(lesson, a, b, a == b || anim ? out : NULL, out_dir, o);
}

/* cmd_lessons.c: `flashstep lessons`: the lessons in play order, with their sources; with
 * --course, the course's path through them (lessons/course.txt).
 *
 * The list is the sorted *.lesson files of the lessons directory (lesson.h: fs_lesson_dir).
 * Without --paths every lesson is loaded (parsed and run), so a broken lesson shows up here
 * with its file:line:column. Lines are wrapped to the terminal's width (else $COLUMNS, else 80).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "io/text.h"
#include "lesson/lesson.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: flashstep lessons [--paths | --course] [--dir DIR]\n\n"
               "List the lessons in the order `flashstep play` and `make run` use, each with its\n"
               "title and the document section it comes from (the document by its title, then its\n"
               "file name).\n\n"
               "  --course   the course instead: one path through every lesson for a newcomer, in\n"
               "             sections (online softmax, the tiled forward, decoding, the backward,\n"
               "             FP8, paging, dropout), as the page's \"Start here\" shows it; read\n"
               "             from course.txt in the lessons directory\n"
               "  --paths    print one lesson file path per line, nothing else (no loading)\n"
               "  --dir DIR  the lessons directory (default: $FLASHSTEP_LESSONS, else ../lessons\n"
               "             next to the binary, else ./lessons)\n");
}

/* Columns to wrap at: the terminal's, else $COLUMNS, else 80 (at least 40). */
static int list_width(void)
{
    long w = 0;
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) w = ws.ws_col;
    else if (getenv("COLUMNS")) w = strtol(getenv("COLUMNS"), NULL, 10);
    if (w <= 0 || w > 1000) w = 80;
    return w < 40 ? 40 : (int)w;
}

/* One lesson: its name, scene and claims; its title; where it comes from (the document by its
 * title, then its file), each wrapped to width, the lines after the first indented by indent
 * (4 when 0; the caller has printed indent columns before the name). false when it does not load (its
 * file:line:column on stderr). */
static bool print_lesson(const char *path, const char *stem_s, int stem, int indent, int width)
{
    fs_lesson *l;
    fs_loc_error err;
    if (!fs_lesson_load(path, &l, &err)) {
        char msg[1024];
        fs_loc_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
        printf("%.*s  (does not load)\n", stem, stem_s);
        return false;
    }
    int own = 0, nc = fs_lesson_check_count(l);
    for (int k = 0; k < nc; k++) own += fs_lesson_check(l, k)->own;
    const char *src = fs_lesson_source(l);
    char words[1024], file[256], more[1536];
    fs_source_words(src, words, sizeof words);
    snprintf(file, sizeof file, "%.*s", fs_document_title(src) ? (int)strcspn(src, ",") : 0, src);
    int sub = indent > 0 ? indent : 4;
    int len = snprintf(more, sizeof more, "%.*s · %s, %d claim%s", stem, stem_s, fs_scene_str(fs_lesson_scene(l)),
                       nc - own, nc - own == 1 ? "" : "s");
    if (own) snprintf(more + len, sizeof more - (size_t)len, " + %d own check%s", own, own == 1 ? "" : "s");
    fs_text_wrap(stdout, more, indent, sub, width);
    printf("%*s", sub, "");
    fs_text_wrap(stdout, fs_lesson_title(l), sub, sub, width);
    if (file[0]) snprintf(more, sizeof more, "%s (%s)", words, file);
    else snprintf(more, sizeof more, "%s", words);
    printf("%*s", sub, "");
    fs_text_wrap(stdout, more, sub, sub, width);
    fs_lesson_free(l);
    return true;
}

/* The course, section by section, numbered along the path. */
static int print_course(const char *dir, int width)
{
    fs_course c;
    fs_loc_error err;
    if (!fs_course_load(dir, &c, &err)) {
        char msg[1024];
        fs_loc_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "flashstep lessons: %s\n", msg);
        return 2;
    }
    printf("The course: %d lessons in %d sections, in this order.\n", c.n, c.n_sections);
    int rc = 0;
    for (int i = 0; i < c.n; i++) {
        if (i == 0 || c.section_of[i] != c.section_of[i - 1]) {
            char t[512];
            fs_text_escape_line(c.sections[c.section_of[i]], strlen(c.sections[c.section_of[i]]), t, sizeof t);
            char head[600];
            snprintf(head, sizeof head, "%d. %s", c.section_of[i] + 1, t);
            putchar('\n');
            fs_text_wrap(stdout, head, 0, 3, width);
        }
        char path[8192], num[16];
        snprintf(path, sizeof path, "%s/%s.lesson", dir, c.names[i]);
        snprintf(num, sizeof num, "%3d  ", i + 1);
        fputs(num, stdout);
        if (!print_lesson(path, c.names[i], (int)strlen(c.names[i]), (int)strlen(num), width)) rc = 2;
    }
    fs_course_free(&c);
    return rc;
}

int cli_lessons(int argc, char **argv)
{
    bool paths_only = false, course = false;
    const char *dir_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--paths")) {
            paths_only = true;
        } else if (!strcmp(argv[i], "--course")) {
            course = true;
        } else if (!strcmp(argv[i], "--dir")) {
            if (i + 1 == argc) {
                fprintf(stderr, "flashstep lessons: --dir needs a value (the lessons directory)\n");
                return 2;
            }
            dir_arg = argv[++i];
        } else {
            fprintf(stderr, "flashstep lessons: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    char dir[4096];
    if (dir_arg) snprintf(dir, sizeof dir, "%s", dir_arg);
    else if (!fs_lesson_dir(NULL, dir, sizeof dir)) {
        fprintf(stderr, "flashstep lessons: no lessons directory (set FLASHSTEP_LESSONS or use --dir)\n");
        return 2;
    }
    if (course && paths_only) {
        fprintf(stderr, "flashstep lessons: --course and --paths: choose one\n");
        return 2;
    }
    int width = list_width();
    if (course) return print_course(dir, width);
    char **paths;
    int n;
    if (fs_lesson_list(dir, &paths, &n) != 0) {
        fprintf(stderr, "flashstep lessons: cannot read %s\n", dir);
        return 2;
    }
    if (n == 0) {
        fprintf(stderr, "flashstep lessons: no *.lesson files in %s\n", dir);
        fs_lesson_list_free(paths, n);
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        /* Names come from a directory listing: escaped like text from a file (io/text.h). */
        char safe[1024];
        if (paths_only) {
            fs_text_escape_line(paths[i], strlen(paths[i]), safe, sizeof safe);
            printf("%s\n", safe);
            continue;
        }
        const char *base = strrchr(paths[i], '/');
        base = base ? base + 1 : paths[i];
        fs_text_escape_line(base, strlen(base) - strlen(".lesson"), safe, sizeof safe);
        if (!print_lesson(paths[i], safe, (int)strlen(safe), 0, width)) rc = 2;
    }
    fs_lesson_list_free(paths, n);
    return rc;
}

/* cmd_lessons.c: `flashstep lessons`: the lessons in play order, with their sources.
 *
 * The list is the sorted *.lesson files of the lessons directory (lesson.h: fs_lesson_dir).
 * Without --paths every lesson is loaded (parsed and run), so a broken lesson shows up here
 * with its file:line:column.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "io/text.h"
#include "lesson/lesson.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: flashstep lessons [--paths] [--dir DIR]\n\n"
               "List the lessons in the order `flashstep play` and `make run` use, each with its\n"
               "title and the document section it comes from.\n\n"
               "  --paths    print one lesson file path per line, nothing else (no loading)\n"
               "  --dir DIR  the lessons directory (default: $FLASHSTEP_LESSONS, else ../lessons\n"
               "             next to the binary, else ./lessons)\n");
}

int cli_lessons(int argc, char **argv)
{
    bool paths_only = false;
    const char *dir_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--paths")) {
            paths_only = true;
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
        const char *stem_s = safe;
        int stem = (int)strlen(safe);
        fs_lesson *l;
        fs_loc_error err;
        if (!fs_lesson_load(paths[i], &l, &err)) {
            char msg[1024];
            fs_loc_error_format(&err, msg, sizeof msg);
            fprintf(stderr, "%s\n", msg);
            printf("%-34.*s  (does not load)\n", stem, stem_s);
            rc = 2;
            continue;
        }
        int own = 0, nc = fs_lesson_check_count(l);
        for (int k = 0; k < nc; k++) own += fs_lesson_check(l, k)->own;
        printf("%-34.*s  %s\n%-34s  %s · %s, %d claim%s", stem, stem_s, fs_lesson_title(l), "",
               fs_lesson_source(l), fs_scene_str(fs_lesson_scene(l)), nc - own, nc - own == 1 ? "" : "s");
        if (own) printf(" + %d own check%s", own, own == 1 ? "" : "s");
        printf("\n");
        fs_lesson_free(l);
    }
    fs_lesson_list_free(paths, n);
    return rc;
}

/* cmd_quiz.c: `flashstep quiz`: a section of the course, checked — five questions on fresh random
 * problems (lesson.h: fs_quiz_make), answered one line each, scored, and the score kept.
 *
 * Scores go to a state file, one line per quiz taken: the section's title, the score, the number
 * of questions, the seed and the UTC time, separated by tabs. It is $FLASHSTEP_STATE when set,
 * else $XDG_STATE_HOME/flashstep/quiz.tsv, else ~/.local/state/flashstep/quiz.tsv (lesson.h:
 * fs_quiz_state_path, fs_quiz_keep; the window keeps its quizzes' scores there too). Without a
 * section, the command lists the sections with each one's best and last score.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "io/text.h"
#include "lesson/lesson.h"

#define WIDTH 78   /* prompts and answers are wrapped at this many columns, indented by 2 */

static void usage(FILE *f)
{
    fprintf(f, "usage: flashstep quiz [SECTION] [--seed S] [--dir DIR]\n\n"
               "Check a section of the course (`flashstep lessons --course`): five questions drawn from\n"
               "its lessons, each on a fresh random problem of the lesson's shape, so that the answers\n"
               "are new every time. Type each answer and Enter: a number (at least two significant\n"
               "digits; -inf is a number, and NaN is typed NaN where a mistake's arithmetic has no\n"
               "value) or one of the choices offered. Each answer is judged at once, with the right\n"
               "answer and why; at the end, the score and the lessons to revisit.\n"
               "Without SECTION: the sections, each with its best and last score.\n\n"
               "  SECTION    the section's number (1, 2, ...) or the start of its title\n"
               "  --seed S   draw the problems from seed S (0 to 2^64-1; default: from the clock),\n"
               "             to take the same quiz again or give a class the same one\n"
               "  --dir DIR  the lessons directory (default: as `flashstep lessons`)\n\n"
               "Scores are kept in $FLASHSTEP_STATE, else $XDG_STATE_HOME/flashstep/quiz.tsv, else\n"
               "~/.local/state/flashstep/quiz.tsv (one tab-separated line per quiz finished).\n");
}

static int list_sections(const fs_course *c, const char *state)
{
    printf("The course's sections: `flashstep quiz N` checks section N.\n\n");
    for (int s = 0; s < c->n_sections; s++) {
        int best, last, of;
        fs_quiz_scores(state, c->sections[s], &best, &last, &of);
        int n = 0;
        for (int i = 0; i < c->n; i++) n += c->section_of[i] == s;
        char score[64] = "not taken yet";
        if (best >= 0) snprintf(score, sizeof score, "best %d/%d, last %d/%d", best, of, last, of);
        printf("%2d  %-46.46s %2d lesson%s  %s\n", s + 1, c->sections[s], n, n == 1 ? " " : "s", score);
    }
    printf("\nScores are kept in %s.\n", state);
    return 0;
}

/* The section named by arg: a number from 1, or the unique start of a title (any case). */
static int find_section(const fs_course *c, const char *arg)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg && !*end) return v >= 1 && v <= c->n_sections ? (int)v - 1 : -1;
    int hit = -1;
    for (int s = 0; s < c->n_sections; s++)
        if (!strncasecmp(c->sections[s], arg, strlen(arg))) {
            if (hit >= 0) return -2;
            hit = s;
        }
    return hit;
}

int cli_quiz(int argc, char **argv)
{
    const char *section_arg = NULL, *dir_arg = NULL;
    uint64_t seed = 0;
    bool have_seed = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--seed") || !strcmp(argv[i], "--dir")) {
            if (i + 1 == argc) {
                fprintf(stderr, "flashstep quiz: %s needs a value\n", argv[i]);
                return 2;
            }
            if (!strcmp(argv[i], "--dir")) {
                dir_arg = argv[++i];
                continue;
            }
            const char *v = argv[++i];
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 0);
            if (!*v || *end || errno || *v == '-') {
                char q[128];
                fs_text_escape_line(v, strlen(v), q, sizeof q);
                fprintf(stderr, "flashstep quiz: --seed takes a whole number from 0 to 2^64-1, not '%s'\n", q);
                return 2;
            }
            seed = s;
            have_seed = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            char q[128];
            fs_text_escape_line(argv[i], strlen(argv[i]), q, sizeof q);
            fprintf(stderr, "flashstep quiz: unknown option '%s'\n", q);
            usage(stderr);
            return 2;
        } else if (!section_arg) {
            section_arg = argv[i];
        } else {
            fprintf(stderr, "flashstep quiz: one section at a time\n");
            return 2;
        }
    }
    char dir[4096];
    if (dir_arg) snprintf(dir, sizeof dir, "%s", dir_arg);
    else if (!fs_lesson_dir(NULL, dir, sizeof dir)) {
        fprintf(stderr, "flashstep quiz: no lessons directory found (set FLASHSTEP_LESSONS or use --dir)\n");
        return 2;
    }
    fs_course c;
    fs_loc_error err;
    if (!fs_course_load(dir, &c, &err)) {
        char msg[1024];
        fs_loc_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    char state[4096];
    bool have_state = fs_quiz_state_path(state, sizeof state);
    if (!section_arg) {
        int rc = list_sections(&c, have_state ? state : "(no $HOME: scores are not kept)");
        fs_course_free(&c);
        return rc;
    }
    int s = find_section(&c, section_arg);
    if (s < 0) {
        char q[128];
        fs_text_escape_line(section_arg, strlen(section_arg), q, sizeof q);
        fprintf(stderr, "flashstep quiz: %s section '%s' (1 to %d, or the start of a title; `flashstep quiz` lists them)\n",
                s == -2 ? "more than one" : "no", q, c.n_sections);
        fs_course_free(&c);
        return 2;
    }
    if (!have_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
    }
    fs_quiz *quiz = malloc(sizeof *quiz);
    if (!quiz || !fs_quiz_make(dir, &c, s, seed, quiz, &err)) {
        char msg[1024];
        if (quiz) fs_loc_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "flashstep quiz: %s\n", quiz ? msg : "out of memory");
        free(quiz);
        fs_course_free(&c);
        return 2;
    }
    /* wrapped as the questions are (a long section title had pushed the seed past 80 columns),
     * the seed on a line of its own, whole */
    char head[512];
    snprintf(head, sizeof head, "Quiz on \"%s\": %d questions on fresh problems.", quiz->section, quiz->n);
    fs_text_wrap(stdout, head, 0, 0, WIDTH);
    printf("(seed %llu: --seed asks the same ones again)\n", (unsigned long long)seed);
    int right = 0, answered = 0;
    bool wrong[FS_QUIZ_QUESTIONS] = {false};
    for (int i = 0; i < quiz->n; i++) {
        const fs_question *q = &quiz->q[i];
        printf("\n%d of %d (from %s)\n", i + 1, quiz->n, quiz->lesson[i]);
        printf("  ");
        fs_text_wrap(stdout, q->prompt, 2, 2, WIDTH);
        if (!q->numeric) {
            printf("  ");
            char name[112];
            for (int o = 0; o < q->n_options; o++) printf("%s%d %s", o ? "  " : "", o + 1, fs_question_option(q, o, name, sizeof name));
            printf("\n");
        }
        printf("> ");
        fflush(stdout);
        char line[256];
        if (!fgets(line, sizeof line, stdin)) {
            printf("\n");
            break;
        }
        fs_text_drop_keys(line);   /* an arrow pressed at the prompt is not part of the answer */
        /* a number with a unit: asked again for the number alone, not judged */
        char hint[160];
        bool more = true;
        while (more && fs_question_unit_hint(q, line, hint, sizeof hint)) {
            printf("  ");
            fs_text_wrap(stdout, hint, 2, 2, WIDTH);
            printf("> ");
            fflush(stdout);
            more = fgets(line, sizeof line, stdin) != NULL;
            if (more) fs_text_drop_keys(line);
        }
        if (!more) {
            printf("\n");
            break;
        }
        answered++;
        char fb[2048];
        bool ok = fs_question_judge(q, line, fb, sizeof fb);
        right += ok;
        wrong[i] = !ok;
        printf("  ");
        fs_text_wrap(stdout, fb, 2, 2, WIDTH);
    }
    int rc = 0;
    if (answered < quiz->n) {
        printf("\nThe quiz ended after %d of %d answers: no score kept.\n", answered, quiz->n);
        rc = 1;
    } else {
        printf("\nScore: %d of %d.\n", right, quiz->n);
        char revisit[1024] = "";
        for (int i = 0; i < quiz->n; i++) {
            if (!wrong[i]) continue;
            bool dup = false;
            for (int j = 0; j < i; j++) dup |= wrong[j] && !strcmp(quiz->lesson[j], quiz->lesson[i]);
            if (dup) continue;
            size_t len = strlen(revisit);
            snprintf(revisit + len, sizeof revisit - len, "%s %s", len ? "," : "To revisit (`flashstep play NAME`):",
                     quiz->lesson[i]);
        }
        if (revisit[0]) {
            strncat(revisit, ".", sizeof revisit - strlen(revisit) - 1);
            fs_text_wrap(stdout, revisit, 0, 0, WIDTH);
        } else {
            printf("Every answer right: on to the next section.\n");
        }
        if (have_state) {
            if (fs_quiz_keep(state, quiz->section, right, quiz->n, seed)) {
                printf("Kept in %s.\n", state);
            } else {
                char q[512];
                fs_text_escape_line(state, strlen(state), q, sizeof q);
                fprintf(stderr, "flashstep quiz: cannot write %s: %s (the score is not kept)\n", q, strerror(errno));
            }
        }
    }
    free(quiz);
    fs_course_free(&c);
    return rc;
}

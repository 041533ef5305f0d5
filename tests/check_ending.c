/* check_ending.c: the lessons' ending (docs/lesson-format.md, "The ending"): the summary: record
 * with its keep: line, the try: record with its play: line, and the variations they start
 * (fs_lesson_load_variation).
 *
 *   parsing       good input gives the getters' strings; bad input names file:line:column;
 *   variations    play options set the lesson's keys (their errors name the option's column),
 *                 the lesson's narration and checks are left out, the title says which options;
 *                 on fresh random tiles a variation of 000_04 still equals the reference (the
 *                 seed is printed on failure);
 *   every lesson  in lessons/ (run from the repository root) has a summary, its keep: line
 *                 holds no false equation (tests/test_equations.h), its next line names a lesson,
 *                 and its try: (where it has one) loads and runs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/reference.h"
#include "lesson/lesson.h"
#include "test_equations.h"
#include "test_util.h"

#define HEAD "title: t\nsource: 000_a9212bbbb0f7e97c.txt, §x\n"
#define TILED "algo: tiled\nQ: random 6x2 seed=1\nK: random 6x2 seed=2\nV: random 6x2 seed=3\nmask: causal\n" \
              "bq: 2\nbk: 3\nstep 1: ours\nexpect maxerr <= 1e-12\n  own: yes\n"

static fs_lesson *parse_ok(const char *text)
{
    fs_lesson *l = NULL;
    fs_loc_error e;
    ck_assert_msg(fs_lesson_parse(text, strlen(text), "mem.lesson", &l, &e), "%s:%d:%d: %s", e.file, e.line, e.col,
                  e.msg);
    return l;
}

static void parse_fail(const char *text, int line, int col, const char *frag)
{
    fs_lesson *l = NULL;
    fs_loc_error e;
    ck_assert(!fs_lesson_parse(text, strlen(text), "mem.lesson", &l, &e));
    ck_assert_ptr_null(l);
    ck_assert_str_eq(e.file, "mem.lesson");
    ck_assert_msg(e.line == line && e.col == col, "'%s' at %d:%d, want %d:%d", e.msg, e.line, e.col, line, col);
    ck_assert_msg(strstr(e.msg, frag), "'%s' lacks '%s'", e.msg, frag);
}

/* A variation of text that must fail: the error's file, line, column and words. */
static void variation_fail(const char *text, const char *opts, const char *file, int line, int col, const char *frag)
{
    fs_lesson *l = NULL;
    fs_loc_error e;
    ck_assert_msg(!fs_lesson_parse_variation(text, strlen(text), "mem.lesson", opts, "command line", &l, &e),
                  "'%s' was accepted", opts ? opts : "(the lesson's try)");
    ck_assert_ptr_null(l);
    ck_assert_str_eq(e.file, file);
    ck_assert_msg(e.line == line && e.col == col, "'%s' at %d:%d, want %d:%d", e.msg, e.line, e.col, line, col);
    ck_assert_msg(strstr(e.msg, frag), "'%s' lacks '%s'", e.msg, frag);
}

START_TEST(test_parse_ending)
{
    fs_lesson *l = parse_ok(HEAD "algo: none\nsummary: one\n  two\n  keep: m_new = max(m_old, m_blk)\n");
    ck_assert_str_eq(fs_lesson_summary(l), "one two");
    ck_assert_str_eq(fs_lesson_keep(l), "m_new = max(m_old, m_blk)");
    ck_assert_ptr_null(fs_lesson_try_label(l));
    ck_assert_ptr_null(fs_lesson_try_options(l));
    ck_assert_str_eq(fs_lesson_variation(l), "");
    fs_lesson_free(l);

    l = parse_ok(HEAD TILED "try: tiles of three\n  play: --bq 3  --bk 3 \nsummary: s\n  keep: k\n");
    ck_assert_str_eq(fs_lesson_try_label(l), "tiles of three");
    ck_assert_str_eq(fs_lesson_try_options(l), "--bq 3  --bk 3");
    ck_assert_str_eq(fs_lesson_summary(l), "s");
    ck_assert_int_eq(fs_lesson_check_count(l), 1);
    ck_assert_ptr_nonnull(fs_lesson_narration(l, 1));
    fs_lesson_free(l);

    /* a lesson without them is as before */
    l = parse_ok(HEAD "algo: none\n");
    ck_assert_ptr_null(fs_lesson_summary(l));
    ck_assert_ptr_null(fs_lesson_keep(l));
    fs_lesson_free(l);

    /* text is escaped like every lesson text */
    l = parse_ok(HEAD "algo: none\nsummary: a\x1b[2Jb\n  keep: x\n");
    ck_assert_ptr_null(strchr(fs_lesson_summary(l), 0x1b));
    fs_lesson_free(l);
}
END_TEST

START_TEST(test_parse_ending_errors)
{
    parse_fail(HEAD "algo: none\nsummary: one\n", 4, 1, "needs an indented 'keep:' line");
    parse_fail(HEAD "algo: none\nsummary:\n  keep: x\n", 4, 9, "expected what the lesson showed");
    parse_fail(HEAD "algo: none\nsummary: one\n  keep:   \n", 5, 11, "expected a formula");
    parse_fail(HEAD "algo: none\nsummary: one\n  keep: x\n  more\n", 6, 3, "nothing may follow its 'keep:'");
    parse_fail(HEAD "algo: none\nsummary: a\n  keep: x\nsummary: b\n  keep: y\n", 6, 1, "'summary' given twice");
    parse_fail(HEAD "algo: none\ntry: smaller\n", 4, 1, "needs an indented 'play:' line");
    parse_fail(HEAD "algo: none\ntry: smaller\n  options: --bq 2\n", 5, 3, "expected 'play: OPTIONS'");
    parse_fail(HEAD "algo: none\ntry:\n  play: --bq 2\n", 4, 5, "expected a label");
    parse_fail(HEAD "algo: none\ntry: x\n  play:\n", 5, 8, "expected play options");
    parse_fail(HEAD "algo: none\ntry: x\n  play: --bq 2 --colour red\n", 5, 16, "'--colour' is not an option");
    parse_fail(HEAD "algo: none\ntry: x\n  play: --bq\n", 5, 9, "--bq needs a value");
    parse_fail(HEAD "algo: none\ntry: x\n  play: --bq --bk 2\n", 5, 14, "--bq needs a value");
    parse_fail(HEAD "algo: none\ntry: x\n  play: --bq 2 --bq 3\n", 5, 16, "sets 'bq:' a second time");
    parse_fail(HEAD "algo: none\ntry: x\n  play: --mask causal --window 2\n", 5, 23, "sets 'mask:' a second time");
    parse_fail(HEAD "algo: none\ntry: x\n  play: --mask tree\n", 5, 16, "--mask takes none or causal");
    parse_fail(HEAD "algo: none\ntry: x\n  play: --fp8 'e4m3 block\n", 5, 15, "unclosed '");
}
END_TEST

START_TEST(test_variation)
{
    const char *text = HEAD TILED "try: one tile\n  play: --bq 6 --bk 6\nsummary: s\n  keep: k\n";
    fs_lesson *l = NULL;
    fs_loc_error e;
    /* the lesson's own try: */
    ck_assert(fs_lesson_parse_variation(text, strlen(text), "mem.lesson", NULL, NULL, &l, &e));
    ck_assert_str_eq(fs_lesson_title(l), "t (varied: --bq 6 --bk 6)");
    ck_assert_str_eq(fs_lesson_variation(l), "--bq 6 --bk 6");
    ck_assert_int_eq(fs_lesson_run(l)->tiling.Bq, 6);
    ck_assert_int_eq(fs_lesson_run(l)->tiling.Bk, 6);
    ck_assert_int_eq(fs_lesson_check_count(l), 0);     /* the lesson's checks are left out */
    ck_assert_ptr_null(fs_lesson_narration(l, 1));     /* and so is its narration */
    ck_assert_str_eq(fs_lesson_summary(l), "s");       /* the ending stays */
    ck_assert_str_eq(fs_lesson_intro(l), "");           /* no introduction: no note about it */
    fs_lesson_free(l);
    /* an introduction, written for the lesson as it stands, says first that this is a variation */
    const char *intro = HEAD TILED "intro: Tiles of two rows.\ntry: one tile\n  play: --bq 6 --bk 6\nsummary: s\n  keep: k\n";
    ck_assert(fs_lesson_parse_variation(intro, strlen(intro), "mem.lesson", NULL, NULL, &l, &e));
    ck_assert_msg(strstr(fs_lesson_intro(l), "(A variation, --bq 6 --bk 6: ") == fs_lesson_intro(l) &&
                  strstr(fs_lesson_intro(l), "Tiles of two rows."), "%s", fs_lesson_intro(l));
    fs_lesson_free(l);
    ck_assert(fs_lesson_parse(intro, strlen(intro), "mem.lesson", &l, &e));   /* as it stands: as written */
    ck_assert_str_eq(fs_lesson_intro(l), "Tiles of two rows.");
    fs_lesson_free(l);
    /* options of one's own, quoted words kept together */
    ck_assert(fs_lesson_parse_variation(text, strlen(text), "mem.lesson", "--order kv-outer --bk '2'", "command line",
                                        &l, &e));
    ck_assert_int_eq(fs_lesson_run(l)->tiling.order, FS_ORDER_KV_OUTER);
    ck_assert_int_eq(fs_lesson_run(l)->tiling.Bq, 2);   /* the lesson's own bq: stays */
    ck_assert_int_eq(fs_lesson_run(l)->tiling.Bk, 2);
    ck_assert_str_eq(fs_lesson_variation(l), "--order kv-outer --bk '2'");
    fs_lesson_free(l);
    /* errors: the option's column on the command line, or the play: line of the lesson */
    variation_fail(text, "--bq 0", "command line", 1, 6, "out of range");
    variation_fail(text, "--bk 2 --speed 3", "command line", 1, 8, "'--speed' is not an option");
    variation_fail(text, "--mask sideways", "command line", 1, 8, "--mask takes none or causal");
    variation_fail(HEAD TILED "try: x\n  play: --bq 99999999\n", NULL, "mem.lesson", 14, 14, "out of range");
    variation_fail(HEAD "algo: none\n", NULL, "mem.lesson", 3, 1, "no 'try:'");
    /* an option the lesson's algorithm would ignore is refused at the option */
    variation_fail(HEAD "algo: softmax\nz: 1 2 3\n", "--bq 2", "command line", 1, 6, "--bq changes nothing in a lesson of algo: softmax");
    variation_fail(HEAD TILED "try: x\n  play: --chunk 2\n", NULL, "mem.lesson", 14, 17, "--chunk changes nothing");
    /* the command-line words, quoted where they hold a blank */
    char buf[64] = "";
    ck_assert(fs_lesson_options_add(buf, sizeof buf, "--fp8"));
    ck_assert(fs_lesson_options_add(buf, sizeof buf, "e4m3 block"));
    ck_assert_str_eq(buf, "--fp8 'e4m3 block'");
    ck_assert(!fs_lesson_options_add(buf, sizeof buf, "it's odd"));
    ck_assert_int_eq(fs_lesson_option_arity("--exp2"), 0);
    ck_assert_int_eq(fs_lesson_option_arity("--bq"), 1);
    ck_assert_int_eq(fs_lesson_option_arity("--q"), -1);
}
END_TEST

/* Any tiles, either order, either form: a variation of 000_04 still equals the reference. */
START_TEST(test_variation_random)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int k = 0; k < 40; k++) {
        char opts[128];
        snprintf(opts, sizeof opts, "--bq %d --bk %d --order %s --form %s%s", fs_rng_int(&r, 1, 7), fs_rng_int(&r, 1, 7),
                 fs_rng_int(&r, 0, 1) ? "kv-outer" : "q-outer", fs_rng_int(&r, 0, 1) ? "normalized" : "unnormalized",
                 fs_rng_int(&r, 0, 1) ? " --mask none" : "");
        fs_lesson *l = NULL;
        fs_loc_error e;
        FS_ASSERT_SEED(fs_lesson_load_variation("lessons/000_04_tiled_causal_n6.lesson", opts, NULL, &l, &e), seed,
                       "%s: line %d:%d: %.200s", opts, e.line, e.col, e.msg);
        const fs_result *res = fs_lesson_result(l);
        const fs_run *run = fs_lesson_run(l);
        long n = (long)res->n_heads * res->n_rows * res->n_cols;
        double *ref = malloc(sizeof(double) * (size_t)n);
        ck_assert_ptr_nonnull(ref);
        ck_assert_int_eq(fs_reference(&run->attn, ref, NULL, NULL), FS_OK);
        double err = fs_max_rel_err(res->O, ref, n);
        FS_ASSERT_SEED(err <= 1e-12, seed, "%s: O differs from the reference by %g", opts, err);
        free(ref);
        fs_lesson_free(l);
    }
}
END_TEST

/* Every lesson ends: a summary with a formula, a next line, and a try that runs. */
START_TEST(test_every_lesson_ends)
{
    char **paths;
    int n;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    ck_assert_int_gt(n, 50);
    int tries = 0, equations = 0;
    for (int i = 0; i < n; i++) {
        fs_lesson *l = NULL;
        fs_loc_error e;
        ck_assert_msg(fs_lesson_load(paths[i], &l, &e), "%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
        ck_assert_msg(fs_lesson_summary(l) && *fs_lesson_summary(l), "%s has no summary:", paths[i]);
        ck_assert_msg(fs_lesson_keep(l) && *fs_lesson_keep(l), "%s has no keep:", paths[i]);
        /* a keep: line with numbers in an equation must be true */
        fs_eq_result eq;
        memset(&eq, 0, sizeof eq);
        fs_eq_check_text(fs_lesson_keep(l), &eq);
        ck_assert_msg(eq.wrong == 0, "%s: keep: %s", paths[i], eq.first);
        fs_eq_check_text(fs_lesson_summary(l), &eq);
        ck_assert_msg(eq.wrong == 0, "%s: summary: %s", paths[i], eq.first);
        equations += eq.checked;
        char next[700];
        fs_course_next_line(paths[i], next, sizeof next);
        ck_assert_msg(!strncmp(next, "next: ", 6) && strcmp(next, "next: not in the course"), "%s: %s", paths[i], next);
        if (fs_lesson_try_options(l)) {
            fs_lesson *v = NULL;
            ck_assert_msg(fs_lesson_load_variation(paths[i], NULL, NULL, &v, &e), "%s's try (%s) does not run: %s:%d:%d: %s",
                          paths[i], fs_lesson_try_options(l), e.file, e.line, e.col, e.msg);
            ck_assert_str_eq(fs_lesson_variation(v), fs_lesson_try_options(l));
            const fs_trace *t = fs_lesson_trace(v);
            ck_assert_msg(t && t->n > 0, "%s's try runs nothing", paths[i]);
            fs_lesson_free(v);
            tries++;
        }
        fs_lesson_free(l);
    }
    ck_assert_int_ge(tries, 40);
    ck_assert_int_ge(equations, 3);   /* the finder does read the keep: lines */
    fs_lesson_list_free(paths, n);

    char next[700];
    fs_course_next_line("lessons/000_00_four_numbers.lesson", next, sizeof next);
    ck_assert_str_eq(next, "next: Softmax of [1.0, 2.0, 0.5], the plain way");
    fs_course_next_line("lessons/004_14_dropout_backward.lesson", next, sizeof next);
    ck_assert_str_eq(next, "next: the course ends here");
    fs_course_next_line("tests/lessons/bad_attr.lesson", next, sizeof next);
    ck_assert_str_eq(next, "next: not in the course");
}
END_TEST

/* A section's last lesson knows it ends the section (the terminal then offers its quiz): exactly
 * the course's last lesson of each section, numbered as `flashstep quiz N` takes it. */
START_TEST(test_section_ends)
{
    fs_course c;
    fs_loc_error e;
    ck_assert_msg(fs_course_load("lessons", &c, &e), "%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
    int ends = 0;
    for (int i = 0; i < c.n; i++) {
        char path[600], title[512];
        snprintf(path, sizeof path, "lessons/%s.lesson", c.names[i]);
        const bool last = i + 1 == c.n || c.section_of[i + 1] != c.section_of[i];
        const int sec = fs_course_section_end(path, title, sizeof title);
        ck_assert_msg(sec == (last ? c.section_of[i] + 1 : 0), "%s: section end %d", c.names[i], sec);
        if (last) ck_assert_str_eq(title, c.sections[c.section_of[i]]);
        else ck_assert_str_eq(title, "");
        ends += sec > 0;
    }
    ck_assert_int_eq(ends, c.n_sections);
    char title[64];
    ck_assert_int_eq(fs_course_section_end("tests/lessons/bad_attr.lesson", title, sizeof title), 0);
    ck_assert_int_eq(fs_course_section_end("no/such/dir/x.lesson", title, sizeof title), 0);
    ck_assert_str_eq(title, "");
    fs_course_free(&c);
}
END_TEST

Suite *ending_suite(void)
{
    Suite *s = suite_create("ending");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_parse_ending);
    tcase_add_test(tc, test_parse_ending_errors);
    tcase_add_test(tc, test_variation);
    tcase_add_test(tc, test_variation_random);
    tcase_add_test(tc, test_every_lesson_ends);
    tcase_add_test(tc, test_section_ends);
    suite_add_tcase(s, tc);
    return s;
}

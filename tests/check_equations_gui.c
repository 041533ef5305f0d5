/* check_equations_gui.c: every equation of the window's side panel is true.
 *
 * The tiled scenes' side panel prints the followed row's update with its numbers filled in
 * (gui_row_formulas, scene_tiled.c), the decode and ring scenes a merge's (gui_merge_formulas,
 * scene.c), the softmax and query scenes the walk's step (gui_walk_formulas, scene.c). This suite
 * builds those lines for every ROW, MERGE, RMERGE and ELEM event of the main and the compare
 * trace of every lesson in lessons/ (the main trace with the lesson's
 * pitfall and base, as the window passes them) and of random problems (test_equations.h), and
 * re-evaluates every equation in them from the printed numbers, as check_equations.c does for the
 * players' text. No display is needed. Left out of NO_GUI=1 builds (the Makefile), like
 * check_gui.c.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gui/gui.h"
#include "lesson/lesson.h"
#include "test_equations.h"
#include "test_util.h"

typedef struct {
    fs_eq_result eq;
    int rows, nan_bare;
    char where[1024];
} gwalk;

/* The side panel's lines of event k of t (a tiled row's update, or a merge), joined by "; ", a
 * line that starts with "=" continuing the one before it (so "  = a·b + c·d" over "  = e" is one
 * equation). Returns false for an event without such a panel. */
static bool panel_text(const fs_trace *t, int64_t k, fs_pitfall pit, bool exp2, bool query, char *buf, size_t n)
{
    gui_formula_line lines[GUI_FORMULA_LINES];
    const fs_event *e = &t->ev[k];
    int m = e->kind == FS_EV_ELEM || (query && e->kind == FS_EV_ROW) ? gui_walk_formulas(t, e, lines, GUI_FORMULA_LINES)
          : e->kind == FS_EV_ROW ? gui_row_formulas(e, t, pit, exp2, lines, GUI_FORMULA_LINES)
                                 : gui_merge_formulas(t, e, lines, GUI_FORMULA_LINES);
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < m && len + 4 < n; i++) {
        const char *p = lines[i].text;
        while (*p == ' ') p++;
        int w = snprintf(buf + len, n - len, "%s%s", !i ? "" : *p == '=' ? " " : "; ", lines[i].text);
        if (w > 0) len += (size_t)w < n - len ? (size_t)w : n - len - 1;
    }
    return m > 0;
}

static void gwalk_trace(const fs_trace *t, fs_pitfall pit, bool exp2, bool query, const char *lesson, const char *name,
                        gwalk *w)
{
    if (!t) return;
    char buf[8192];
    for (int64_t k = 0; k < t->n; k++) {
        fs_event_kind kind = t->ev[k].kind;
        if (kind != FS_EV_ROW && kind != FS_EV_MERGE && kind != FS_EV_RMERGE && kind != FS_EV_ELEM) continue;
        if (!panel_text(t, k, pit, exp2, query, buf, sizeof buf)) continue;
        w->rows++;
        int bad = fs_eq_check_text(buf, &w->eq);
        bool nan_bare = strstr(buf, "nan") && !strstr(buf, "NaN");
        w->nan_bare += nan_bare;
        if (bad || nan_bare) {
            char why[512] = "";
            fs_eq_describe_wrong(buf, 0, why, sizeof why);
            fprintf(stderr, "check_equations_gui: %s, %s trace, step %lld: %s\n    %s\n", lesson, name, (long long)k + 1,
                    bad ? why : "\"nan\" without saying why", buf);
            if (!w->where[0])
                snprintf(w->where, sizeof w->where, "%s, %s trace, step %lld: %s", lesson, name, (long long)k + 1,
                         bad ? why : "\"nan\" without saying why");
        }
    }
}

static void gwalk_lesson(const fs_lesson *l, const char *name, gwalk *w)
{
    const fs_run *r = fs_lesson_run(l);
    if (!r) return;
    bool tiled = r->algo == FS_ALGO_TILED, query = r->algo == FS_ALGO_QUERY;
    gwalk_trace(fs_lesson_trace(l), tiled ? r->tiling.pitfall : FS_PITFALL_NONE, tiled && r->tiling.exp2, query, name,
                "main", w);
    const fs_run *c = fs_lesson_compare_run(l);
    gwalk_trace(fs_lesson_compare_trace(l), FS_PITFALL_NONE, c && c->algo == FS_ALGO_TILED && c->tiling.exp2,
                c && c->algo == FS_ALGO_QUERY, name, "compare", w);
}

START_TEST(test_panel_lessons)
{
    char **paths;
    int n;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    gwalk w;
    memset(&w, 0, sizeof w);
    for (int i = 0; i < n; i++) {
        fs_lesson *l;
        fs_loc_error e;
        ck_assert_msg(fs_lesson_load(paths[i], &l, &e), "%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
        const char *base = strrchr(paths[i], '/') ? strrchr(paths[i], '/') + 1 : paths[i];
        gwalk_lesson(l, base, &w);
        fs_lesson_free(l);
    }
    fs_lesson_list_free(paths, n);
    fprintf(stderr, "check_equations_gui: lessons: %d row panels, %d equations, %d false, %d bare nan\n", w.rows,
            w.eq.checked, w.eq.wrong, w.nan_bare);
    ck_assert_msg(w.eq.checked > 10000, "only %d equations found", w.eq.checked);
    ck_assert_msg(w.eq.wrong == 0 && w.nan_bare == 0, "%d false, %d bare nan; the first: %s", w.eq.wrong, w.nan_bare,
                  w.where);
}
END_TEST

START_TEST(test_panel_random)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    gwalk w;
    memset(&w, 0, sizeof w);
    static char buf[1 << 15];
    for (int k = 0; k < 270; k++) {
        size_t len = fs_eq_random_lesson(&r, k, buf, sizeof buf);
        fs_lesson *l;
        fs_loc_error e;
        char name[64];
        snprintf(name, sizeof name, "random lesson %d (seed %llu)", k, (unsigned long long)seed);
        if (!fs_lesson_parse(buf, len, name, &l, &e)) continue;
        int before = w.eq.wrong + w.nan_bare;
        gwalk_lesson(l, name, &w);
        if (w.eq.wrong + w.nan_bare > before) fprintf(stderr, "check_equations_gui: the lesson was:\n%s\n", buf);
        fs_lesson_free(l);
    }
    fprintf(stderr, "check_equations_gui: random (seed %llu): %d row panels, %d equations, %d false, %d bare nan\n",
            (unsigned long long)seed, w.rows, w.eq.checked, w.eq.wrong, w.nan_bare);
    ck_assert_msg(w.eq.wrong == 0 && w.nan_bare == 0, "seed %llu: %d false, %d bare nan; the first: %s",
                  (unsigned long long)seed, w.eq.wrong, w.nan_bare, w.where);
}
END_TEST

Suite *equations_gui_suite(void)
{
    Suite *s = suite_create("equations_gui");
    TCase *tc = tcase_create("equations_gui");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_panel_lessons);
    tcase_add_test(tc, test_panel_random);
    suite_add_tcase(s, tc);
    return s;
}

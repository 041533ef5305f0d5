/* check_equations.c: every equation the players print is true.
 *
 * The terminal player, the page and the window's step line print fs_lesson_describe's text
 * ("α = exp(0.8000 − 1.2000) = 0.6703; ℓ = α·ℓ_old + β·ℓ_blk = 0.6703 · 2.0836 + …"). This suite
 * walks every step of the main and the compare trace of every lesson in lessons/ (run from the
 * repository root), and of random problems written as lessons (every pitfall, masks that leave
 * rows with nothing visible, exp2, both forms and orders, query walks, softmax, decode, backward,
 * dropout, the ring), takes the text at 4 decimals (and at 6 for the random ones), and
 * re-evaluates every equation in it from the printed numbers (test_equations.h says which forms
 * and how exactly). It also requires words beside every "nan" the text prints, and that the
 * text never calls the running sum anything but ℓ.
 *
 * The random problems are drawn fresh each run; a failure prints the seed (FS_SEED=… replays it)
 * and the lesson text that failed.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lesson/lesson.h"
#include "test_equations.h"
#include "test_util.h"

#define TEXT_N 4096   /* what the terminal player gives fs_lesson_describe */

typedef struct {
    fs_eq_result eq;
    int nan_bare;            /* texts that print "nan" without saying why */
    int steps;
    char where[1024];        /* the first failure: lesson, trace, step, text */
} walk;

/* "nan" printed as a value: the token nan, not inside a word. */
static bool has_nan_token(const char *s)
{
    for (const char *p = strstr(s, "nan"); p; p = strstr(p + 1, "nan")) {
        bool left = p == s || !((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') || p[-1] == '_');
        char r = p[3];
        bool right = !((r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r == '_');
        if (left && right) return true;
    }
    return false;
}

/* Walk every step of t (name: "main" or "compare") of lesson l at the given decimals. */
static void walk_trace(const fs_lesson *l, const fs_trace *t, const char *lesson, const char *name, int digits, walk *w)
{
    if (!t) return;
    static char buf[TEXT_N];
    for (int64_t k = 0; k < t->n; k++) {
        fs_lesson_describe(l, t, k, digits, buf, sizeof buf);
        w->steps++;
        int before = w->eq.wrong;
        int bad = fs_eq_check_text(buf, &w->eq);
        bool nan_bare = has_nan_token(buf) && !strstr(buf, "NaN");
        if (nan_bare) w->nan_bare++;
        if (bad || nan_bare) {
            char why[512] = "";
            for (int j = 0; j < bad; j++) {
                fs_eq_describe_wrong(buf, j, why, sizeof why);
                fprintf(stderr, "check_equations: %s, %s trace, step %lld of %lld (%d decimals): false: %s\n", lesson,
                        name, (long long)k + 1, (long long)t->n, digits, why);
            }
            if (nan_bare)
                fprintf(stderr, "check_equations: %s, %s trace, step %lld of %lld (%d decimals): \"nan\" printed without "
                        "saying why\n", lesson, name, (long long)k + 1, (long long)t->n, digits);
            fprintf(stderr, "    the text: %s\n", buf);
            fs_eq_describe_wrong(buf, 0, why, sizeof why);
            if (!before && !w->where[0])
                snprintf(w->where, sizeof w->where, "%s, %s trace, step %lld: %s", lesson, name, (long long)k + 1,
                         bad ? why : "\"nan\" printed without saying why");
        }
    }
}

static void walk_lesson(const fs_lesson *l, const char *lesson, int digits, walk *w)
{
    walk_trace(l, fs_lesson_trace(l), lesson, "main", digits, w);
    walk_trace(l, fs_lesson_compare_trace(l), lesson, "compare", digits, w);
}

/* Every lesson of lessons/, every step of both traces. */
START_TEST(test_lesson_equations)
{
    char **paths;
    int n;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    ck_assert_int_ge(n, 40);
    walk w;
    memset(&w, 0, sizeof w);
    for (int i = 0; i < n; i++) {
        fs_lesson *l;
        fs_loc_error e;
        ck_assert_msg(fs_lesson_load(paths[i], &l, &e), "%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
        const char *base = strrchr(paths[i], '/') ? strrchr(paths[i], '/') + 1 : paths[i];
        walk_lesson(l, base, 4, &w);
        fs_lesson_free(l);
    }
    fs_lesson_list_free(paths, n);
    fprintf(stderr, "check_equations: lessons: %d steps, %d equations re-evaluated, %d false, %d bare nan\n", w.steps,
            w.eq.checked, w.eq.wrong, w.nan_bare);
    ck_assert_msg(w.eq.checked > 10000, "only %d equations found: the finder is broken", w.eq.checked);
    ck_assert_msg(w.eq.wrong == 0 && w.nan_bare == 0, "%d false equations, %d bare nan; the first: %s", w.eq.wrong,
                  w.nan_bare, w.where);
}
END_TEST

START_TEST(test_random_equations)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    walk w;
    memset(&w, 0, sizeof w);
    static char buf[1 << 15];
    int loaded = 0;
    for (int k = 0; k < 270; k++) {
        size_t len = fs_eq_random_lesson(&r, k, buf, sizeof buf);
        fs_lesson *l;
        fs_loc_error e;
        char name[64];
        snprintf(name, sizeof name, "random lesson %d (seed %llu)", k, (unsigned long long)seed);
        if (!fs_lesson_parse(buf, len, name, &l, &e)) {
            /* a drawn combination the format refuses (a ring that does not divide, …) is not
             * what this suite tests; the lesson suites test refusals */
            continue;
        }
        loaded++;
        int before = w.eq.wrong + w.nan_bare;
        walk_lesson(l, name, 4, &w);
        walk_lesson(l, name, 6, &w);
        if (w.eq.wrong + w.nan_bare > before) fprintf(stderr, "check_equations: the lesson was:\n%s\n", buf);
        fs_lesson_free(l);
    }
    fprintf(stderr, "check_equations: random (seed %llu): %d lessons, %d steps, %d equations, %d false, %d bare nan\n",
            (unsigned long long)seed, loaded, w.steps, w.eq.checked, w.eq.wrong, w.nan_bare);
    ck_assert_msg(loaded >= 200, "seed %llu: only %d of 270 random lessons loaded", (unsigned long long)seed, loaded);
    ck_assert_msg(w.eq.wrong == 0 && w.nan_bare == 0, "seed %llu: %d false equations, %d bare nan; the first: %s",
                  (unsigned long long)seed, w.eq.wrong, w.nan_bare, w.where);
}
END_TEST

/* The checker itself: it accepts the true forms and refuses the false ones, so that a pass above
 * means something. */
START_TEST(test_checker)
{
    struct { const char *s; int checked, wrong; } c[] = {
        {"α = exp(0.8000 − 1.2000) = 0.6703", 1, 0},
        {"β = exp(0.8000 − 1.2000) = 1.0000", 1, 1},
        {"β = exp(0.8000 - 1.2000) = 0.6704", 1, 0},          /* one unit off: allowed */
        {"β = exp(0.8000 - 1.2000) = 0.6706", 1, 1},
        {"α = exp(-inf − 1.2000) = 0.0000", 1, 0},
        {"β = exp(-inf − (-inf)) = 0.0000", 1, 1},
        {"α = exp(-inf − (-inf)) = nan", 1, 0},
        {"m_new = max(1.2000, 0.8000) = 1.2000; m = max(-inf, -inf) = -inf", 2, 0},
        {"m_new = max(1.2000, 0.8000) = 0.8000", 1, 1},
        {"ℓ = α·ℓ_old + β·ℓ_blk = 1.0000 · 2.0836 + 1.0000 · 2.7539 = 3.9296", 1, 1},
        {"ℓ = α·ℓ_old + β·ℓ_blk = 1.0000 · 2.0836 + 0.6703 · 2.7539 = 3.9296", 1, 0},
        {"      = 1.0000·2.0836 + 0.6703·2.7539 = 3.9296", 1, 0},
        {"ℓ = 1.0000 · 2.0836 + exp(0.8000 − 1.2000) = 2.7539", 1, 0},
        {"ℓ = 0.0000 · nan + 0.0000 · 0.0000 = nan", 1, 0},
        {"a / b = 1.0000 / 4.0000 = 0.2500", 1, 0},
        {"2p = exp2(1.0000 − 0.0000) = 2.0000", 1, 0},
        {"x = 6.144e-06 · 2.0000 = 1.229e-05", 1, 0},
        /* large sums: the rounding of the operands counts */
        {"ℓ = 0.9999 · 1234.5678 + 1.0000 · 3.0000 = 1237.4444", 1, 0},
        {"ℓ = 0.9999 · 1234.5678 + 1.0000 · 3.0000 = 1237.6000", 1, 1},
        /* not equations */
        {"o = [0.4799, 0.0969] · 0.5000 + 1.0000 · V[0] = [0.2, 0.3]", 0, 0},
        {"keys 0..3 (4 visible): s = [1.2000, -0.4000]; m_blk = 1.2000", 0, 0},
        {"exp(s − m_new) = 0.5; ℓ_blk = Σ exp(s - m_blk) = 2.0836", 0, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        fs_eq_result r;
        memset(&r, 0, sizeof r);
        fs_eq_check_text(c[i].s, &r);
        ck_assert_msg(r.checked == c[i].checked && r.wrong == c[i].wrong, "\"%s\": %d found, %d false (want %d, %d) %s",
                      c[i].s, r.checked, r.wrong, c[i].checked, c[i].wrong, r.first);
    }
    ck_assert(has_nan_token("α = nan") && !has_nan_token("the NaN guard") && !has_nan_token("nanoseconds"));
}
END_TEST

Suite *equations_suite(void)
{
    Suite *s = suite_create("equations");
    TCase *tc = tcase_create("equations");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_checker);
    tcase_add_test(tc, test_lesson_equations);
    tcase_add_test(tc, test_random_equations);
    suite_add_tcase(s, tc);
    return s;
}

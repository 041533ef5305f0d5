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
#include <stdarg.h>
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

/* ---- random problems written as lessons ---- */

typedef struct {
    char *s;
    size_t n, cap;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    if (w > 0) t->n += (size_t)w < t->cap - t->n ? (size_t)w : t->cap - t->n - 1;
}

/* A random entry: coarse (one decimal, so that maxima tie) or fine. */
static double entry(fs_rng *r, bool coarse)
{
    double x = fs_rng_uniform(r, -2, 2);
    return coarse ? round(x * 10) / 10 : round(x * 1e4) / 1e4;
}

static void matrix(text *t, fs_rng *r, const char *name, int rows, int cols, bool coarse)
{
    add(t, "%s:\n", name);
    for (int i = 0; i < rows; i++) {
        add(t, " ");
        for (int j = 0; j < cols; j++) add(t, " %.4f", entry(r, coarse));
        add(t, "\n");
    }
}

static const char *mask_line(fs_rng *r, int n_q, int n_kv, char *b, size_t n)
{
    switch (fs_rng_int(r, 0, 4)) {
    case 0: snprintf(b, n, "mask: none\n"); break;
    case 1: snprintf(b, n, "mask: causal\n"); break;
    case 2: snprintf(b, n, "mask: window %d\n", fs_rng_int(r, 1, 3)); break;
    case 3: snprintf(b, n, "mask: causal\noffset: %d\n", fs_rng_int(r, -2, n_kv - n_q > 0 ? n_kv - n_q : 0)); break;
    default: snprintf(b, n, "mask: window %d\noffset: %d\n", fs_rng_int(r, 1, 2), fs_rng_int(r, -2, 1)); break;
    }
    return b;
}

/* The text of lesson number k of the random set. */
static void draw_lesson(fs_rng *r, int k, text *t)
{
    static const char *pit[] = {"none", "no-rescale", "global-max-no-beta", "block-max-no-beta", "masked-nan", "masked-doc-fix"};
    char mb[96];
    bool coarse = fs_rng_int(r, 0, 1);
    int n_q = fs_rng_int(r, 1, 6), n_kv = fs_rng_int(r, 1, 8), d = fs_rng_int(r, 1, 3), d_v = fs_rng_int(r, 1, 3);
    add(t, "title: random %d\nsource: 001_b200530c91d92eb7.txt, §random\n", k);
    switch (k % 9) {
    case 0: case 1: case 2: case 3:   /* tiled, every pitfall */
        add(t, "algo: tiled\npitfall: %s\norder: %s\nform: %s\nbq: %d\nbk: %d\n%s", pit[fs_rng_int(r, 0, 5)],
            fs_rng_int(r, 0, 1) ? "kv-outer" : "q-outer", fs_rng_int(r, 0, 1) ? "normalized" : "unnormalized",
            fs_rng_int(r, 1, 4), fs_rng_int(r, 1, 4), mask_line(r, n_q, n_kv, mb, sizeof mb));
        if (fs_rng_int(r, 0, 3) == 0) add(t, "exp2: yes\n");
        if (fs_rng_int(r, 0, 2) == 0) {
            add(t, "scale: 1\n");
            matrix(t, r, "S", n_q, n_kv, coarse);
            matrix(t, r, "V", n_kv, d_v, false);
        } else {
            matrix(t, r, "Q", n_q, d, coarse);
            matrix(t, r, "K", n_kv, d, coarse);
            matrix(t, r, "V", n_kv, d_v, false);
        }
        break;
    case 4:   /* dropout */
        add(t, "algo: tiled\ndropout: %.2f\nseed: %d\nbq: %d\nbk: %d\nform: %s\n%s", fs_rng_uniform(r, 0, 0.8),
            fs_rng_int(r, 0, 1000), fs_rng_int(r, 1, 4), fs_rng_int(r, 1, 4),
            fs_rng_int(r, 0, 1) ? "normalized" : "unnormalized", mask_line(r, n_q, n_kv, mb, sizeof mb));
        matrix(t, r, "Q", n_q, d, coarse);
        matrix(t, r, "K", n_kv, d, coarse);
        matrix(t, r, "V", n_kv, d_v, false);
        break;
    case 5:   /* the one-query walk */
        add(t, "algo: query\n");
        matrix(t, r, "Q", 1, d, coarse);
        matrix(t, r, "K", n_kv, d, coarse);
        matrix(t, r, "V", n_kv, d_v, false);
        break;
    case 6: {  /* softmax, with −∞ entries */
        add(t, "algo: softmax\nchunk: %d\nz:", fs_rng_int(r, 1, 3));
        for (int j = 0; j < n_kv; j++) {
            if (fs_rng_int(r, 0, 4) == 0) add(t, " -inf");
            else add(t, " %.4f", entry(r, coarse) * 2);
        }
        add(t, "\n");
        break;
    }
    case 7:   /* decode */
        add(t, "algo: decode\nbk: %d\nmerge: %s\nform: %s\n", fs_rng_int(r, 1, 4), fs_rng_int(r, 0, 1) ? "tree" : "sequential",
            fs_rng_int(r, 0, 1) ? "normalized" : "unnormalized");
        if (fs_rng_int(r, 0, 1)) add(t, "split: strided\nparts: %d\n", fs_rng_int(r, 1, 3));
        matrix(t, r, "Q", fs_rng_int(r, 1, 2), d, coarse);
        matrix(t, r, "K", n_kv, d, coarse);
        matrix(t, r, "V", n_kv, d_v, false);
        break;
    default:  /* backward, or the ring */
        if (fs_rng_int(r, 0, 1)) {
            add(t, "algo: backward\nbq: %d\nbk: %d\norder: %s\n%s", fs_rng_int(r, 1, 4), fs_rng_int(r, 1, 4),
                fs_rng_int(r, 0, 1) ? "kv-outer" : "q-outer", mask_line(r, n_q, n_kv, mb, sizeof mb));
        } else {
            n_q = n_kv;
            add(t, "algo: ring\ndevices: %d\nsharding: %s\nbq: %d\nbk: %d\n%s", fs_rng_int(r, 1, 3),
                fs_rng_int(r, 0, 1) ? "zigzag" : "contiguous", fs_rng_int(r, 1, 2), fs_rng_int(r, 1, 2),
                fs_rng_int(r, 0, 1) ? "mask: causal\n" : "");
        }
        matrix(t, r, "Q", n_q, d, coarse);
        matrix(t, r, "K", n_kv, d, coarse);
        matrix(t, r, "V", n_kv, d_v, false);
        break;
    }
}

START_TEST(test_random_equations)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    walk w;
    memset(&w, 0, sizeof w);
    static char buf[1 << 15];
    int loaded = 0;
    for (int k = 0; k < 270; k++) {
        text t = {buf, 0, sizeof buf};
        buf[0] = 0;
        draw_lesson(&r, k, &t);
        fs_lesson *l;
        fs_loc_error e;
        char name[64];
        snprintf(name, sizeof name, "random lesson %d (seed %llu)", k, (unsigned long long)seed);
        if (!fs_lesson_parse(buf, t.n, name, &l, &e)) {
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

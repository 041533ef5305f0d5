/* check_narrate.c: the words for every step (src/lesson/narrate.c, fs_lesson_say and
 * fs_lesson_generate).
 *
 * Every step of every lesson (and of every compare trace) gets a sentence that ends with '.', is
 * more than the event's kind, and spells "nan" or "inf" only where the step's own values are not
 * finite. On random problems (online softmax, tiled causal, decode, backward, paged cache, ring;
 * seed printed on failure, FS_SEED=... replays one), the numbers a sentence states are the
 * event's values rounded: α and the maximum in ROW sentences, ℓ and α in ELEM, m and ℓ in
 * PARTIAL, ℓ in MERGE, L and D in the backward. The checks must be able to fail: a sentence with
 * a wrong α, a missing period or a stray "nan" is caught by the helpers below
 * (test_checker_fails). And a lesson read alone says m_blk, ℓ_blk, α and β in words (its
 * introduction or a step's narration) no later than the first step whose formula lines show them,
 * and its first merge's words name the number the merged state takes.
 */
#include <check.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/paged.h"
#include "engine/run.h"
#include "lesson/lesson.h"
#include "lesson/lesson_internal.h"
#include "test_util.h"

/* ---- what every sentence must be --------------------------------------------------------- */

/* A word "nan" or "inf" (any case, not inside a longer word). */
static bool spells_nonfinite(const char *s)
{
    for (const char *p = s; *p; p++) {
        bool start = p == s || !isalpha((unsigned char)p[-1]);
        if (!start) continue;
        if ((!strncasecmp(p, "nan", 3) || !strncasecmp(p, "inf", 3)) && !isalpha((unsigned char)p[3])) return true;
    }
    return false;
}

static bool vec_nonfinite(const fs_trace *t, int64_t off, int32_t n)
{
    const double *v = fs_trace_at(t, off);
    for (int32_t i = 0; v && i < n; i++)
        if (isnan(v[i]) || v[i] == INFINITY) return true;
    return false;
}

/* Values of the step that are not finite (NaN or +∞; −∞ is the empty state's maximum and is
 * written "−∞", never "inf"). */
static bool step_nonfinite(const fs_trace *t, const fs_event *e)
{
    const double sc[] = {e->x, e->m_old, e->m_blk, e->m_new, e->l_old, e->l_blk, e->l_new, e->alpha, e->beta};
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++)
        if (isnan(sc[i]) || sc[i] == INFINITY) return true;
    return vec_nonfinite(t, e->o_old, e->n_o) || vec_nonfinite(t, e->o_new, e->n_o) || vec_nonfinite(t, e->o_blk, e->n_o);
}

/* NULL when the sentence for step k of t is acceptable, else what is wrong with it. nonfinite:
 * the step's own values (or the correct run's it is compared with) are not finite. */
static const char *sentence_problem(const char *s, const char *kind, bool nonfinite)
{
    size_t n = strlen(s);
    if (n == 0) return "empty";
    if (s[n - 1] != '.') return "does not end with '.'";
    if (n < strlen(kind) + 12) return "no more than the kind's name";
    if (spells_nonfinite(s) && !nonfinite) return "spells nan or inf for finite values";
    if (nonfinite && spells_nonfinite(s) && !strstr(s, "not a number")) return "a NaN without its explanation";
    return NULL;
}

/* ---- every step of every lesson ----------------------------------------------------------- */

static void check_trace(const fs_lesson *l, const fs_trace *t, const char *path, bool main_trace)
{
    char buf[4096], say[4096];
    for (int64_t k = 0; t && k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        size_t w = fs_lesson_generate(l, t, k, buf, sizeof buf);
        ck_assert_msg(w < sizeof buf, "%s step %lld: %zu bytes", path, (long long)k, w);
        const char *bad = sentence_problem(buf, fs_event_kind_str(e->kind), step_nonfinite(t, e));
        ck_assert_msg(!bad, "%s step %lld (%s, %s): %s: \"%s\"", path, (long long)k, main_trace ? "main" : "compare",
                      fs_event_kind_str(e->kind), bad, buf);
        /* fs_lesson_say: the lesson's own words on the main trace, else the generated ones */
        fs_lesson_say(l, t, k, say, sizeof say);
        const char *own = main_trace ? fs_lesson_narration(l, k) : NULL;
        ck_assert_msg(!strcmp(say, own && *own ? own : buf), "%s step %lld: say differs", path, (long long)k);
    }
}

START_TEST(test_every_lesson_step)
{
    char **paths;
    int n;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    ck_assert_int_gt(n, 40);
    int64_t steps = 0;
    clock_t t0 = clock();
    for (int i = 0; i < n; i++) {
        fs_lesson *l = NULL;
        fs_loc_error err;
        ck_assert_msg(fs_lesson_load(paths[i], &l, &err), "%s: %s", paths[i], err.msg);
        const fs_trace *t = fs_lesson_trace(l), *c = fs_lesson_compare_trace(l);
        check_trace(l, t, paths[i], true);
        check_trace(l, c, paths[i], false);
        steps += (t ? t->n : 0) + (c ? c->n : 0);
        fs_lesson_free(l);
    }
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    ck_assert_int_gt(steps, 20000);
    /* loading included; the players ask for every step of a lesson at once */
    ck_assert_msg(secs < 20, "%lld steps took %.1f s", (long long)steps, secs);
    fs_lesson_list_free(paths, n);
}
END_TEST

/* ---- a factor and the maxima it is taken from ---------------------------------------------- */

/* One number of a formula line at *p ("0.4337", "(-1.2500)"): its value and its decimals; false
 * for what is not a plain decimal (inf, nan, an exponent). */
static bool read_num(const char **p, double *x, int *dec)
{
    const char *s = *p;
    bool paren = *s == '(';
    if (paren) s++;
    char *end;
    *x = strtod(s, &end);
    if (end == s || !isfinite(*x)) return false;
    const char *dot = memchr(s, '.', (size_t)(end - s));
    if (memchr(s, 'e', (size_t)(end - s)) || memchr(s, 'E', (size_t)(end - s))) return false;
    *dec = dot ? (int)(end - dot - 1) : 0;
    if (paren) {
        if (*end != ')') return false;
        end++;
    }
    *p = end;
    return true;
}

/* Every α = exp(a − b) = f and β = exp(a − b) = f of every step's formula lines: exp of the
 * printed a and b is the printed f to within its last digit and a half (the operands' rounding
 * and its own). A factor printed with more decimals than its operands (0.98714858 from exp(0.4337
 * − 0.4466) = 0.98718) fails. */
START_TEST(test_factors_from_their_operands)
{
    char **paths;
    int n;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    static char lines[65536];
    char msg[4096] = "";
    int bad = 0;
    long seen = 0;
    for (int i = 0; i < n; i++) {
        fs_lesson *l = NULL;
        fs_loc_error err;
        ck_assert_msg(fs_lesson_load(paths[i], &l, &err), "%s: %s", paths[i], err.msg);
        const fs_trace *t = fs_lesson_trace(l);
        for (int64_t k = 0; t && k < t->n; k++) {
            fs_lesson_describe(l, t, k, 4, lines, sizeof lines);
            for (const char *q = lines; (q = strstr(q, " = exp")) != NULL; q++) {
                if (q < lines + 2 || (strncmp(q - 2, "α", 2) && strncmp(q - 2, "β", 2))) continue;
                const char *p = q + 6;
                const bool two = !strncmp(p, "2(", 2);
                p += two ? 2 : 1;
                if (p[-1] != '(') continue;
                double a, b, f;
                int da, db, df;
                if (!read_num(&p, &a, &da) || strncmp(p, " \xe2\x88\x92 ", 5)) continue;
                p += 5;
                if (!read_num(&p, &b, &db) || strncmp(p, ") = ", 4)) continue;
                p += 4;
                if (!read_num(&p, &f, &df)) continue;
                seen++;
                const double got = two ? exp2(a - b) : exp(a - b);
                if (fabs(got - f) > 1.5 * pow(10, -df) + 1e-12 && bad++ < 20) {
                    size_t m = strlen(msg);
                    snprintf(msg + m, sizeof msg - m, "\n  %s step %lld: %.60s (exp of the printed operands: %.10f)", paths[i],
                             (long long)k, q - 2, got);
                }
            }
        }
        fs_lesson_free(l);
    }
    fs_lesson_list_free(paths, n);
    ck_assert_msg(seen > 1000, "only %ld factor lines found: the pattern no longer matches describe.c's", seen);
    ck_assert_msg(!bad, "%d factors that their printed operands do not give:%s", bad, msg);
}
END_TEST

/* ---- the symbols a step's lines use, said in words first ------------------------------------ */

/* A student may open any lesson alone (a teacher's link to one step): every symbol that the
 * formula lines of a step show (m_blk, ℓ_blk, α, β) must have been said in words by then, in the
 * introduction or in the narration of that step or an earlier one of the same lesson. */
START_TEST(test_symbols_said_before_lines)
{
    static const char *const sym[] = {"m_blk", "ℓ_blk", "α", "β"};
    enum { NS = sizeof sym / sizeof sym[0] };
    char **paths;
    int n;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    char lines[8192], say[4096], msg[4096] = "";
    int bad = 0;
    for (int i = 0; i < n; i++) {
        fs_lesson *l = NULL;
        fs_loc_error err;
        ck_assert_msg(fs_lesson_load(paths[i], &l, &err), "%s: %s", paths[i], err.msg);
        const fs_trace *t = fs_lesson_trace(l);
        bool said[NS], merged = false;
        for (int s = 0; s < NS; s++) said[s] = strstr(fs_lesson_intro(l), sym[s]) != NULL;
        for (int64_t k = 0; t && k < t->n; k++) {
            fs_lesson_say(l, t, k, say, sizeof say);
            /* the first merge's words say what number its result takes ("merge 0 + 1 → 32": 32 is
             * not a thirty-third split but the next free number) */
            if (t->ev[k].kind == FS_EV_MERGE && !merged) {
                merged = true;
                char n1[32], n2[32], n3[32];
                snprintf(n1, sizeof n1, "into %d", t->ev[k].id);
                snprintf(n2, sizeof n2, "numbered %d", t->ev[k].id);
                snprintf(n3, sizeof n3, "→ %d", t->ev[k].id);
                if (!strstr(say, n1) && !strstr(say, n2) && !strstr(say, n3) && bad++ < 40) {
                    size_t m = strlen(msg);
                    snprintf(msg + m, sizeof msg - m, "\n  %s step %lld: the first merge's result %d is not named", paths[i],
                             (long long)k, t->ev[k].id);
                }
            }
            fs_lesson_describe(l, t, k, 4, lines, sizeof lines);
            for (int s = 0; s < NS; s++) {
                said[s] |= strstr(say, sym[s]) != NULL;
                if (!said[s] && strstr(lines, sym[s])) {
                    if (bad++ < 40) {
                        size_t m = strlen(msg);
                        snprintf(msg + m, sizeof msg - m, "\n  %s step %lld shows %s", paths[i], (long long)k, sym[s]);
                    }
                    said[s] = true;   /* one report a symbol a lesson */
                }
            }
        }
        fs_lesson_free(l);
    }
    fs_lesson_list_free(paths, n);
    ck_assert_msg(!bad, "%d places where a lesson read alone shows what its words have not said:%s", bad, msg);
}
END_TEST

/* ---- words that fit the run they describe ------------------------------------------------- */

/* Sentences true of one kind of run, said only of it: a low-precision row has no β (its P is
 * taken against m_new at once); the "KV tile stays in fast memory" of dK and dV only with the KV
 * tiles outside and off the ring; dropout's dP carries the mask and 1/(1 − p) in the lines; a
 * ring send does not overlap the step that needs the shard; "1 of keys 0-1" (read as key 1) is
 * never said; and a ring row or question names its keys and query by position, not by the shard's
 * or the device's own numbers. */
static void word_problem(char *msg, size_t n, int *bad, const char *path, int64_t k, const char *what)
{
    if ((*bad)++ >= 12) return;   /* (Check's messages have a size limit) */
    size_t m = strlen(msg);
    snprintf(msg + m, n - m, "\n  %s step %lld: %s", path, (long long)k, what);
}

START_TEST(test_words_fit_the_run)
{
    char **paths;
    int n;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    static char say[4096], lines[8192], msg[4096];
    static fs_question q[64];
    msg[0] = 0;
    int bad = 0, lowp = 0, qouter = 0, drops = 0, ring_q = 0;
    for (int i = 0; i < n; i++) {
        fs_lesson *l = NULL;
        fs_loc_error err;
        ck_assert_msg(fs_lesson_load(paths[i], &l, &err), "%s: %s", paths[i], err.msg);
        const fs_trace *t = fs_lesson_trace(l);
        const fs_run *r = fs_lesson_run(l);
        const bool ring = r && r->algo == FS_ALGO_RING, drop = r && r->tiling.dropout.on;
        for (int64_t k = 0; t && k < t->n; k++) {
            const fs_event *e = &t->ev[k];
            fs_lesson_say(l, t, k, say, sizeof say);
            fs_lesson_describe(l, t, k, 4, lines, sizeof lines);
            if (strstr(say, "(1 of keys")) word_problem(msg, sizeof msg, &bad, paths[i], k, "says \"1 of keys\"");
            if (e->kind == FS_EV_ROW && e->lowp && (lowp++, strstr(say, "β =")))
                word_problem(msg, sizeof msg, &bad, paths[i], k, "a low-precision row states a β");
            if (e->kind == FS_EV_BKEY && (ring || r->tiling.order != FS_ORDER_KV_OUTER) && (qouter++, strstr(say, "stays in fast memory")))
                word_problem(msg, sizeof msg, &bad, paths[i], k, "dK and dV said to stay in fast memory with Q tiles outside");
            if (e->kind == FS_EV_BROW && e->visible > 0 && (drop ? (drops++, !strstr(lines, "dP = Z ∘")) : strstr(lines, "dP = Z ∘") != NULL))
                word_problem(msg, sizeof msg, &bad, paths[i], k, drop ? "dropout's dP shown without its mask" : "a mask on dP without dropout");
            if (e->kind == FS_EV_ROW && e->device >= 0 && strstr(say, "of the shard)"))
                word_problem(msg, sizeof msg, &bad, paths[i], k, "a ring row names its keys by the shard's own numbers");
            if (e->kind == FS_EV_SEND && strstr(say, "overlap the next step"))
                word_problem(msg, sizeof msg, &bad, paths[i], k, "a send said to overlap the step that needs its shard");
        }
        const int nq = fs_lesson_questions(l, 4, q, 64);
        for (int j = 0; ring && j < nq; j++) {
            if (q[j].step < 0 || !t || q[j].step >= t->n || t->ev[q[j].step].device < 0) continue;
            const fs_event *e = &t->ev[q[j].step];
            if (e->kind != FS_EV_ROW && e->kind != FS_EV_RMERGE && e->kind != FS_EV_BROW) continue;
            ring_q++;
            if (!strstr(q[j].prompt, "position")) word_problem(msg, sizeof msg, &bad, paths[i], q[j].step, "a ring question without positions");
        }
        fs_lesson_free(l);
    }
    fs_lesson_list_free(paths, n);
    ck_assert_msg(!bad, "%d places where the words do not fit the run:%s", bad, msg);
    /* each rule met its case in the lessons: else it tests nothing */
    ck_assert_msg(lowp > 0 && qouter > 0 && drops > 0 && ring_q > 0, "cases: %d low-precision rows, %d Q-outer keys, "
                  "%d dropout rows, %d ring questions", lowp, qouter, drops, ring_q);
}
END_TEST

/* ---- the numbers a sentence states -------------------------------------------------------- */

/* The number printed after the first occurrence of `after` in s (skipping an "exp(…) = " or
 * "exp2(…) = " that follows it). false when absent. */
static bool number_after(const char *s, const char *after, char *out, size_t n)
{
    const char *p = strstr(s, after);
    if (!p) return false;
    p += strlen(after);
    if (!strncmp(p, "exp", 3)) {
        const char *q = strstr(p, ") = ");
        if (!q) return false;
        p = q + 4;
    }
    size_t k = 0;
    while (p[k] && (isdigit((unsigned char)p[k]) || p[k] == '.' || p[k] == '-' || p[k] == 'e' || p[k] == '+') && k + 1 < n) {
        out[k] = p[k];
        k++;
    }
    while (k > 0 && (out[k - 1] == '.' || out[k - 1] == 'e')) k--;   /* the sentence's period */
    out[k] = 0;
    return k > 0;
}

/* The value printed after `after` rounds to x. */
static bool states(const char *s, const char *after, double x)
{
    char num[64];
    return number_after(s, after, num, sizeof num) && fs_rounds_to(x, num);
}

/* What a sentence for e must state, by kind; NULL when it does. */
static const char *number_problem(const fs_event *e, const char *s)
{
    switch (e->kind) {
    case FS_EV_ROW:
        if (e->visible == 0) return NULL;
        if (!states(s, "α = ", e->alpha)) return "α";
        if (e->m_old == -INFINITY) return states(s, "m = ", e->m_new) ? NULL : "m (first keys)";
        if (e->m_new > e->m_old) {
            if (!states(s, "rises from ", e->m_old)) return "m_old";
            char a[64];
            number_after(s, "rises from ", a, sizeof a);
            char key[96];
            snprintf(key, sizeof key, "rises from %s to ", a);
            return states(s, key, e->m_new) ? NULL : "m_new";
        }
        return states(s, "maximum stays ", e->m_new) ? NULL : "m (stays)";
    case FS_EV_PARTIAL:
        if (e->m_new == -INFINITY) return strstr(s, "m = −∞") ? NULL : "m (empty split)";
        if (!states(s, "m = ", e->m_new)) return "m";
        return states(s, "ℓ = ", e->l_new) ? NULL : "ℓ";
    case FS_EV_MERGE: case FS_EV_RMERGE: {
        const char *p = strstr(s, "; ℓ = ");
        if (e->kind == FS_EV_RMERGE && !p) p = strstr(s, "ℓ = ");
        return p && states(p, "ℓ = ", e->l_new) ? NULL : "ℓ";
    }
    case FS_EV_LSE: return e->x == -INFINITY || states(s, "L = m + ln ℓ = ", e->x) ? NULL : "L";
    case FS_EV_DELTA: return states(s, "D = rowsum(dO ∘ O) = ", e->x) ? NULL : "D";
    case FS_EV_ELEM: {
        /* the last "ℓ = " of the sentence is the new sum */
        const char *p = NULL;
        for (const char *q = strstr(s, "ℓ = "); q; q = strstr(q + 1, "ℓ = ")) p = q;
        if (!p || !states(p, "ℓ = ", e->l_new)) return "ℓ";
        if (e->c1 - e->c0 > 1 || e->m_old == -INFINITY) return NULL;
        return states(s, "α = ", e->alpha) ? NULL : "α";
    }
    default: return NULL;
    }
}

/* Every sentence of t is acceptable and states its numbers. */
static void check_random_trace(const fs_trace *t, uint64_t seed, const char *what)
{
    char buf[4096];
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        fs_lesson_generate(NULL, t, k, buf, sizeof buf);
        const char *bad = sentence_problem(buf, fs_event_kind_str(e->kind), step_nonfinite(t, e));
        FS_ASSERT_SEED(!bad, seed, "%s step %lld (%s): %s: %.300s", what, (long long)k, fs_event_kind_str(e->kind), bad, buf);
        bad = number_problem(e, buf);
        FS_ASSERT_SEED(!bad, seed, "%s step %lld (%s): %s not stated rounded: %.300s", what, (long long)k,
                       fs_event_kind_str(e->kind), bad, buf);
    }
}

typedef struct {
    double *Q, *K, *V;
    fs_attn a;
} problem;

static problem draw(fs_rng *r, int32_t n_q, int32_t n_kv, int32_t d, int32_t dv)
{
    problem p;
    p.Q = malloc(sizeof(double) * (size_t)n_q * d);
    p.K = malloc(sizeof(double) * (size_t)n_kv * d);
    p.V = malloc(sizeof(double) * (size_t)n_kv * dv);
    fs_rng_fill(r, p.Q, (long)n_q * d, -2, 2);
    fs_rng_fill(r, p.K, (long)n_kv * d, -2, 2);
    fs_rng_fill(r, p.V, (long)n_kv * dv, -1, 1);
    p.a = fs_attn_make(n_q, n_kv, d, dv);
    p.a.Q = p.Q;
    p.a.K = p.K;
    p.a.V = p.V;
    return p;
}

static void drop(problem *p)
{
    free(p->Q);
    free(p->K);
    free(p->V);
}

START_TEST(test_random_numbers)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    for (int rep = 0; rep < 6; rep++) {
        int32_t n = fs_rng_int(&r, 2, 12), d = fs_rng_int(&r, 1, 4), dv = fs_rng_int(&r, 1, 4);
        problem p = draw(&r, n, n, d, dv);
        p.a.mask.kind = fs_rng_int(&r, 0, 1) ? FS_MASK_CAUSAL : FS_MASK_NONE;
        fs_result res;
        fs_trace t;
        fs_trace_init(&t);
        /* tiled, either form and loop order */
        fs_run run = fs_run_make(FS_ALGO_TILED);
        run.attn = p.a;
        run.tiling.Bq = fs_rng_int(&r, 1, 4);
        run.tiling.Bk = fs_rng_int(&r, 1, 4);
        run.tiling.form = fs_rng_int(&r, 0, 1) ? FS_FORM_UNNORMALIZED : FS_FORM_NORMALIZED;
        run.tiling.order = fs_rng_int(&r, 0, 1) ? FS_ORDER_KV_OUTER : FS_ORDER_Q_OUTER;
        FS_ASSERT_SEED(fs_run_exec(&run, &res, &t) == FS_OK, seed, "tiled run");
        check_random_trace(&t, seed, "tiled");
        fs_result_free(&res);
        /* backward */
        fs_trace_clear(&t);
        run.algo = FS_ALGO_BACKWARD;
        run.tiling.form = FS_FORM_NORMALIZED;
        FS_ASSERT_SEED(fs_run_exec(&run, &res, &t) == FS_OK, seed, "backward run");
        check_random_trace(&t, seed, "backward");
        fs_result_free(&res);
        /* ring, causal, P devices */
        fs_trace_clear(&t);
        run = fs_run_make(FS_ALGO_RING);
        run.attn = p.a;
        run.attn.mask.kind = FS_MASK_CAUSAL;
        run.ring = fs_ring_default();
        run.ring.P = 2;
        run.ring.sharding = FS_SHARD_CONTIGUOUS;
        if (n >= 2) {
            FS_ASSERT_SEED(fs_run_exec(&run, &res, &t) == FS_OK, seed, "ring run");
            check_random_trace(&t, seed, "ring");
            fs_result_free(&res);
        }
        fs_trace_free(&t);
        drop(&p);
        /* online softmax of a vector, one element or a chunk at a time */
        {
            int32_t nz = fs_rng_int(&r, 1, 20);
            double *z = malloc(sizeof(double) * (size_t)nz);
            fs_rng_fill(&r, z, nz, -5, 5);
            fs_trace_init(&t);
            run = fs_run_make(FS_ALGO_SOFTMAX);
            run.z = z;
            run.n_z = nz;
            run.chunk = fs_rng_int(&r, 1, 3);
            FS_ASSERT_SEED(fs_run_exec(&run, &res, &t) == FS_OK, seed, "softmax run");
            check_random_trace(&t, seed, "softmax");
            fs_result_free(&res);
            fs_trace_free(&t);
            free(z);
        }
        /* decode: one query over many keys, contiguous or strided splits */
        int32_t nkv = fs_rng_int(&r, 1, 40);
        p = draw(&r, 1, nkv, d, dv);
        fs_trace_init(&t);
        run = fs_run_make(FS_ALGO_DECODE);
        run.attn = p.a;
        run.decoding.Bk = fs_rng_int(&r, 1, 8);
        run.decoding.form = fs_rng_int(&r, 0, 1) ? FS_FORM_UNNORMALIZED : FS_FORM_NORMALIZED;
        if (fs_rng_int(&r, 0, 1)) {
            run.decoding.split = FS_SPLIT_STRIDED;
            run.decoding.parts = fs_rng_int(&r, 1, 5);
        }
        FS_ASSERT_SEED(fs_run_exec(&run, &res, &t) == FS_OK, seed, "decode run");
        check_random_trace(&t, seed, "decode");
        fs_result_free(&res);
        fs_trace_free(&t);
        drop(&p);
    }
}
END_TEST

/* A scalar between 10^-4 and 0.01 keeps 3 significant digits (β = 0.000159 once printed 0.0002,
 * a number one digit deep); elsewhere, and below 3 digits asked, fs_num_plain's form. */
START_TEST(test_scalar_digits)
{
    static const struct { double x; int digits; const char *want; } cases[] = {
        {1.59e-4, 4, "0.000159"}, {-1.59e-4, 4, "-0.000159"}, {0.0012345, 4, "0.00123"},
        {0.0099996, 4, "0.01000"}, {0.0123456, 4, "0.0123"}, {0.5, 4, "0.5000"}, {0, 4, "0.0000"},
        {5e-5, 4, "5.000e-05"}, {0.0012345, 6, "0.001234"}, {0.0012345, 2, "0.00"},
        {1.59e-4, 3, "0.000159"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char s[64];
        fs_num_scalar(s, sizeof s, cases[i].x, cases[i].digits);
        ck_assert_msg(!strcmp(s, cases[i].want), "%g at %d digits: \"%s\", expected \"%s\"", cases[i].x,
                      cases[i].digits, s, cases[i].want);
    }
}
END_TEST

/* The paged cache's own events: pages taken, shared, copied on write, written, looked up. */
START_TEST(test_paged_events)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    const int32_t ps = fs_rng_int(&r, 1, 3), d = 2;
    fs_paged_cache c;
    ck_assert_int_eq(fs_paged_init(&c, ps, 32, 1, d, d, NULL), FS_OK);
    fs_trace t;
    fs_trace_init(&t);
    int32_t s0, s1;
    ck_assert_int_eq(fs_paged_add(&c, &s0), FS_OK);
    double k[2], v[2];
    int32_t n0 = fs_rng_int(&r, 1, 7);
    for (int32_t i = 0; i < n0; i++) {
        fs_rng_fill(&r, k, d, -1, 1);
        fs_rng_fill(&r, v, d, -1, 1);
        ck_assert_int_eq(fs_paged_append(&c, s0, k, v, &t), FS_OK);
    }
    ck_assert_int_eq(fs_paged_fork(&c, s0, &s1, &t), FS_OK);
    for (int32_t i = 0; i < 3; i++) {
        fs_rng_fill(&r, k, d, -1, 1);
        fs_rng_fill(&r, v, d, -1, 1);
        ck_assert_int_eq(fs_paged_append(&c, s1, k, v, &t), FS_OK);
    }
    double q[2];
    fs_rng_fill(&r, q, d, -1, 1);
    fs_attn a = fs_attn_make(1, n0 + 3, d, d);
    a.Q = q;
    fs_decoding dc = fs_decoding_default();
    dc.Bk = fs_rng_int(&r, 1, 4);
    double O[2];
    ck_assert_int_eq(fs_paged_decode(&c, s1, &a, &dc, O, NULL, NULL, &t), FS_OK);
    bool seen[FS_EV_COUNT] = {false};
    for (int64_t i = 0; i < t.n; i++) seen[t.ev[i].kind] = true;
    FS_ASSERT_SEED(seen[FS_EV_ALLOC] && seen[FS_EV_SHARE] && seen[FS_EV_WRITE] && seen[FS_EV_LOOKUP], seed,
                   "the paged run made every kind");
    check_random_trace(&t, seed, "paged");
    fs_trace_free(&t);
    fs_paged_free(&c);
}
END_TEST

/* The helpers above catch what they are meant to catch. */
START_TEST(test_checker_fails)
{
    ck_assert_ptr_nonnull(sentence_problem("", "row", false));
    ck_assert_ptr_nonnull(sentence_problem("A row event", "row", false));
    ck_assert_ptr_nonnull(sentence_problem("Row.", "row", false));
    ck_assert_ptr_nonnull(sentence_problem("Query 0's sum is nan here, as it happens.", "row", false));
    ck_assert_ptr_nonnull(sentence_problem("Query 0's maximum is -inf here, as it happens.", "row", false));
    ck_assert_ptr_null(sentence_problem("Query 0's maximum is −∞ and the info holds.", "row", false));
    fs_event e = fs_event_blank(FS_EV_ROW);
    e.visible = 2;
    e.m_old = 0.4455;
    e.m_new = 0.4879;
    e.alpha = 0.95849;
    const char *good = "Query 4's maximum rises from 0.4455 to 0.4879 (key 4), so α = exp(0.4455 − 0.4879) = 0.9585, "
                       "the correction.";
    ck_assert_ptr_null(number_problem(&e, good));
    ck_assert_ptr_nonnull(number_problem(&e, "Query 4's maximum rises from 0.4455 to 0.4879: α = 0.9586."));
    ck_assert_ptr_nonnull(number_problem(&e, "Query 4's maximum rises from 0.4455 to 0.4878: α = 0.9585."));
    ck_assert_ptr_nonnull(number_problem(&e, "Query 4's maximum stays 0.4879: α = 0.9585."));
}
END_TEST

Suite *narrate_suite(void)
{
    Suite *s = suite_create("narrate");
    TCase *tc = tcase_create("lessons");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_checker_fails);
    tcase_add_test(tc, test_scalar_digits);
    tcase_add_test(tc, test_every_lesson_step);
    tcase_add_test(tc, test_symbols_said_before_lines);
    tcase_add_test(tc, test_factors_from_their_operands);
    tcase_add_test(tc, test_words_fit_the_run);
    suite_add_tcase(s, tc);
    tc = tcase_create("random");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_random_numbers, 0, 4);
    tcase_add_test(tc, test_paged_events);
    suite_add_tcase(s, tc);
    return s;
}

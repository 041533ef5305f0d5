/* check_question.c: the question engine (lesson.h, question.c).
 *
 * Every lesson with steps asks at least three questions, of more than one kind where its trace
 * has more than one kind of event; every question's answer is the trace's own value; the judge
 * takes the answer as the players print it and rejects a wrong one with the right value and the
 * reason; the same holds on random problems of every algorithm (seed printed on failure).
 */
#include <ctype.h>
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/fp8.h"
#include "engine/run.h"
#include "lesson/lesson.h"
#include "test_problem.h"
#include "test_util.h"

#define QMAX 32

/* The value the question asks for, read from the trace it was asked on (NAN when the kind reads
 * no single field). */
static double trace_value(const fs_trace *t, const fs_question *q)
{
    const fs_event *e = &t->ev[q->step];
    switch (q->kind) {
    case FS_Q_M_NEW: return e->m_new;
    case FS_Q_ALPHA: return e->alpha;
    case FS_Q_BETA: return e->beta;
    case FS_Q_L_NEW: return e->l_new;
    case FS_Q_MERGE: return e->m_old < e->m_blk ? e->alpha : e->beta;
    case FS_Q_DELTA: return e->x;
    case FS_Q_SHARD:   /* the shard the device holds at the next ring step */
        for (int64_t n = q->step + 1; n < t->n; n++)
            if (t->ev[n].kind == FS_EV_HOLD && t->ev[n].device == e->device && t->ev[n].ring_step == e->ring_step + 1)
                return t->ev[n].shard;
        return -1;
    case FS_Q_PAGE: return e->block;
    case FS_Q_KV_HEAD: return e->kv_head;
    case FS_Q_DV: {
        const double *g = fs_trace_at(t, e->g_blk);
        return g ? g[0] : -1;
    }
    case FS_Q_SOFTCAP: {   /* the capped score of the key the prompt names */
        const double *v = fs_trace_at(t, e->s_row);
        const char *at = strstr(q->prompt, "raw score for key ");
        int j;
        if (!v || !at || sscanf(at + 18, "%d", &j) != 1 || j < e->c0 || j >= e->c1) return -1;
        return v[j - e->c0];
    }
    case FS_Q_DROP: return e->l_blk;
    case FS_Q_QUANT: case FS_Q_P8: {   /* one of the row's rounded values: the one the prompt names */
        const double *v = fs_trace_at(t, q->kind == FS_Q_QUANT ? e->x8_row : e->p8_row);
        const int32_t n = q->kind == FS_Q_QUANT ? e->n_x : e->n_s;
        int j;
        const char *at = strstr(q->prompt, q->kind == FS_Q_QUANT ? "'s element " : "'s weight for key ");
        if (!v || !at || sscanf(at + 3, q->kind == FS_Q_QUANT ? "element %d" : "weight for key %d", &j) != 1) return -1;
        if (q->kind == FS_Q_P8) j -= e->c0;
        return j >= 0 && j < n ? v[j] : -1;
    }
    default: return NAN;
    }
}

/* The judge: the answer as printed is right; a clearly wrong number, an empty answer and a word
 * are wrong, and the feedback then names the right answer. */
static void judge_all_ways(const fs_question *q, const char *where, uint64_t seed)
{
    char typed[64], fb[2048];
    if (!q->numeric) {
        ck_assert_msg(q->n_options >= 2 && q->right >= 0 && q->right < q->n_options, "%s: bad choice (seed %llu)", where,
                      (unsigned long long)seed);
        /* the option as the players show it (with its other name beside it) is that option */
        char shown[112];
        ck_assert_msg(fs_question_judge(q, fs_question_option(q, q->right, shown, sizeof shown), fb, sizeof fb),
                      "%s: the right option as shown, %s, judged wrong: %s", where, shown, fb);
        ck_assert_msg(fs_question_judge(q, q->options[q->right], fb, sizeof fb), "%s: the right option judged wrong: %s (seed %llu)",
                      where, fb, (unsigned long long)seed);
        snprintf(typed, sizeof typed, "%d", q->right + 1);
        ck_assert_msg(fs_question_judge(q, typed, fb, sizeof fb), "%s: its number judged wrong: %s", where, fb);
        int other = (q->right + 1) % q->n_options;
        ck_assert_msg(!fs_question_judge(q, q->options[other], fb, sizeof fb), "%s: a wrong option judged right", where);
        /* an option's other name (a recipe for "the first"), typed whole, is that option */
        if (q->alias[q->right][0]) {
            ck_assert_msg(strstr(shown, q->alias[q->right]), "%s: the option %s is shown without its name %s", where, shown,
                          q->alias[q->right]);
            ck_assert_msg(fs_question_judge(q, q->alias[q->right], fb, sizeof fb), "%s: the right option's name %s judged wrong: %s",
                          where, q->alias[q->right], fb);
            ck_assert_msg(!fs_question_judge(q, q->alias[other], fb, sizeof fb), "%s: the other option's name judged right", where);
        }
        ck_assert_msg(strstr(fb, q->options[q->right]) && strstr(fb, q->options[other]),
                      "%s: the feedback names neither the typed nor the right option: %s", where, fb);
        return;
    }
    if (isnan(q->answer)) {
        /* a mistake whose arithmetic has no value: NaN typed as a word, and only it, is right */
        ck_assert_msg(q->kind == FS_Q_MISTAKE, "%s: a NaN answer to a question of another kind (seed %llu)", where,
                      (unsigned long long)seed);
        ck_assert_msg(fs_question_judge(q, "NaN", fb, sizeof fb) && fs_question_judge(q, " nan ", fb, sizeof fb),
                      "%s: NaN judged wrong: %s", where, fb);
        ck_assert_msg(fs_question_readable(q, "nan"), "%s: NaN not read as an answer", where);
        ck_assert_msg(!fs_question_judge(q, "0", fb, sizeof fb) && !fs_question_judge(q, "-inf", fb, sizeof fb) &&
                      !fs_question_judge(q, "", fb, sizeof fb), "%s: a number judged right for NaN", where);
        ck_assert_msg(strstr(fb, "NaN") && strstr(fb, q->why), "%s: the feedback: %s", where, fb);
        char ans[16];
        ck_assert_str_eq(fs_question_answer(q, ans, sizeof ans), "NaN");
        return;
    }
    ck_assert_msg(isfinite(q->answer), "%s: a non-finite answer (seed %llu)", where, (unsigned long long)seed);
    snprintf(typed, sizeof typed, "%.12g", q->answer);
    ck_assert_msg(fs_question_judge(q, typed, fb, sizeof fb), "%s: the exact answer %s judged wrong: %s (seed %llu)", where, typed,
                  fb, (unsigned long long)seed);
    if (q->kind != FS_Q_CLAIM && q->kind != FS_Q_SKIPS && q->kind != FS_Q_SHARD && q->kind != FS_Q_PAGE) {
        snprintf(typed, sizeof typed, "%.*f", q->digits, q->answer);
        ck_assert_msg(fs_question_judge(q, typed, fb, sizeof fb) || fabs(q->answer) < 0.05,
                      "%s: the printed answer %s judged wrong: %s (seed %llu)", where, typed, fb, (unsigned long long)seed);
    }
    double wrong = q->answer + (fabs(q->answer) > 1 ? 0.25 * fabs(q->answer) : 0.37);
    snprintf(typed, sizeof typed, "%.6g", wrong);
    ck_assert_msg(!fs_question_judge(q, typed, fb, sizeof fb), "%s: the wrong answer %s judged right (answer %.12g, seed %llu)",
                  where, typed, q->answer, (unsigned long long)seed);
    ck_assert_msg(strstr(fb, typed) != NULL, "%s: the feedback does not echo the typed %s: %s", where, typed, fb);
    ck_assert_msg(strstr(fb, q->why) != NULL, "%s: the feedback does not give the reason: %s", where, fb);
    ck_assert_msg(!fs_question_judge(q, "", fb, sizeof fb), "%s: an empty answer judged right", where);
    ck_assert_msg(!fs_question_judge(q, "abc", fb, sizeof fb), "%s: a word judged right", where);
    ck_assert_msg(strstr(fb, "not a number") != NULL, "%s: a word's feedback: %s", where, fb);
    /* NaN is a readable answer, and wrong where the answer is a number */
    ck_assert_msg(fs_question_readable(q, "NaN") && !fs_question_judge(q, "NaN", fb, sizeof fb), "%s: NaN judged right", where);
}

static void check_questions(const fs_trace *t, const fs_question *q, int n, const char *name, uint64_t seed)
{
    for (int i = 0; i < n; i++) {
        char where[256];
        snprintf(where, sizeof where, "%s question %d (%s at step %lld)", name, i, fs_qkind_str(q[i].kind), (long long)q[i].step);
        ck_assert_msg(q[i].prompt[0] && q[i].why[0], "%s: empty prompt or reason", where);
        ck_assert_msg(!strstr(q[i].prompt, "nan") && !strstr(q[i].why, "nan"), "%s: nan in the text: %s", where, q[i].prompt);
        /* a claim's answer is printed as its reason's exact value is, whole: "0.05078125", not "0.0507812"
         * beside it */
        if (q[i].kind == FS_Q_CLAIM && q[i].numeric) {
            char ans[64];
            fs_question_answer(&q[i], ans, sizeof ans);
            bool whole = false;
            for (const char *p = strstr(q[i].why, ans); p && !whole; p = strstr(p + 1, ans)) {
                const char after = p[strlen(ans)];
                /* a full stop ends a sentence ("B = 64."), a decimal point goes on ("64.5") */
                const bool goes_on = after == '.' && isdigit((unsigned char)p[strlen(ans) + 1]);
                whole = (p == q[i].why || !isdigit((unsigned char)p[-1])) && !isdigit((unsigned char)after) && !goes_on;
            }
            ck_assert_msg(whole, "%s: the answer %s is not the reason's value: %s", where, ans, q[i].why);
        }
        /* a negative number is added, not subtracted: "(−1.0000 + 0.4205)", never "− -0.4205" */
        ck_assert_msg(!strstr(q[i].prompt, "− -") && !strstr(q[i].why, "− -"), "%s: minus a negative number: %s %s", where,
                      q[i].prompt, q[i].why);
        /* in step order; the claims' questions (step −1, asked on the claims pages) come last */
        if (i > 0)
            ck_assert_msg(q[i].step < 0 ? true : q[i - 1].step >= 0 && q[i].step >= q[i - 1].step,
                          "%s: questions out of step order", where);
        if (t && q[i].step >= 0) {
            ck_assert_msg(q[i].step < t->n, "%s: past the trace", where);
            double v = trace_value(t, &q[i]);
            /* pitfall lessons take row questions from the correct run; lesson callers check those */
            if (!isnan(v)) ck_assert_msg(v == q[i].answer, "%s: answer %.17g, trace %.17g (seed %llu)", where, q[i].answer, v,
                                         (unsigned long long)seed);
            /* a ring step's work: none when every pair of the device's step is skipped, all when none is
             * skipped and every computed one is full */
            if (q[i].kind == FS_Q_RING_WORK) {
                const fs_event *h = &t->ev[q[i].step];
                int64_t skipped = 0, full = 0, partial = 0;
                for (int64_t x = q[i].step + 1; x < t->n && t->ev[x].kind != FS_EV_HOLD; x++) {
                    const fs_event *y = &t->ev[x];
                    if (y->device != h->device || y->ring_step != h->ring_step) continue;
                    skipped += y->kind == FS_EV_SKIP || y->kind == FS_EV_BSKIP;
                    full += (y->kind == FS_EV_TILE || y->kind == FS_EV_BTILE) && y->cls == FS_TILE_FULL;
                    partial += (y->kind == FS_EV_TILE || y->kind == FS_EV_BTILE) && y->cls == FS_TILE_PARTIAL;
                }
                const int want = full + partial == 0 ? 2 : skipped == 0 && partial == 0 ? 0 : 1;
                ck_assert_msg(q[i].right == want, "%s: answered %s, the step's tiles say %s (%lld full, %lld partial, %lld "
                              "skipped)", where, q[i].options[q[i].right], q[i].options[want], (long long)full, (long long)partial,
                              (long long)skipped);
            }
            /* a shard question comes before the hop that brings the shard it asks for */
            for (int64_t x_at = 0; q[i].kind == FS_Q_SHARD && x_at < q[i].step; x_at++) {
                const fs_event *x = &t->ev[x_at], *e = &t->ev[q[i].step];
                ck_assert_msg(!(x->kind == FS_EV_RECV && x->device == e->device && x->ring_step == e->ring_step),
                              "%s: the hop at step %lld already brought the shard asked for", where, (long long)x_at);
            }
        }
        judge_all_ways(&q[i], where, seed);
    }
}

/* Does text hold the number p (digits, '.' and ',' as printed) as a token of its own: not inside a
 * longer number ("8,388,608" does not hold 8) nor glued to a word or an exponent? */
static bool number_token(const char *text, const char *p)
{
    const size_t n = strlen(p);
    for (const char *s = strstr(text, p); s; s = strstr(s + 1, p)) {
        const char before = s > text ? s[-1] : ' ', after = s[n];
        const bool glued_before = isalnum((unsigned char)before) || strchr("_.^,", before);
        const bool glued_after = isdigit((unsigned char)after) || ((after == '.' || after == ',') && isdigit((unsigned char)s[n + 1]));
        if (!glued_before && !glued_after) return true;
    }
    return false;
}

#define QMAX_CLAIMS 8   /* the questions a claims-only lesson asks at most (question.c) */

START_TEST(test_every_lesson_asks)
{
    char **paths;
    int n;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    ck_assert_int_gt(n, 10);
    int n_from_prompt = 0;   /* questions whose prompt's rounded numbers give another answer */
    int n_alias = 0;         /* choices that take a recipe's name for "the first" or "the second" */
    int n_e4m3_reasons = 0;  /* e4m3 roundings of a plain number, explained */
    int n_befores = 0;       /* FP8 questions whose starting number, typed back, is judged wrong */
    int n_mistake_lessons = 0;   /* lessons that run one of 001's pitfalls */
    for (int i = 0; i < n; i++) {
        fs_lesson *l;
        fs_loc_error err;
        ck_assert_msg(fs_lesson_load(paths[i], &l, &err), "%s: %s", paths[i], err.msg);
        fs_question q[QMAX];
        int nq = fs_lesson_questions(l, 4, q, QMAX);
        ck_assert_int_le(nq, QMAX);
        const fs_trace *t = fs_lesson_trace(l);
        const bool steps = t && t->n > 0;
        const bool pitfall = fs_lesson_compare_trace(l) != NULL && !fs_lesson_run(l)->lowp;
        if (steps) {
            ck_assert_msg(nq >= 3, "%s asks %d questions; a lesson with steps asks at least three", paths[i], nq);
            /* more than one kind of event: more than one kind of question */
            bool kinds_ev[FS_EV_COUNT] = {false}, kinds_q[FS_Q_COUNT] = {false};
            int nev = 0, nkq = 0;
            for (int64_t k = 0; k < t->n; k++)
                if (!kinds_ev[t->ev[k].kind]) { kinds_ev[t->ev[k].kind] = true; nev++; }
            for (int j = 0; j < nq; j++)
                if (!kinds_q[q[j].kind]) { kinds_q[q[j].kind] = true; nkq++; }
            if (nev > 1) ck_assert_msg(nkq > 1, "%s: %d kinds of event, one kind of question", paths[i], nev);
        } else {
            ck_assert_msg(nq >= 1 || fs_lesson_check_count(l) == 0 || 1, "%s", paths[i]);
        }
        check_questions(pitfall ? NULL : t, q, nq < QMAX ? nq : QMAX, paths[i], 0);
        /* a prompt starts a sentence, but a symbol keeps its case: z[0] is not Z[0], exp(100)
         * is not Exp(100) */
        for (int j = 0; j < nq && j < QMAX; j++) {
            const char *p = q[j].prompt;
            size_t name = 0;
            bool digit = false;   /* a word with a digit is a name: bfloat16, e4m3 */
            for (; isalnum((unsigned char)p[name]); name++) digit |= isdigit((unsigned char)p[name]) != 0;
            bool fn = name > 1 && p[name] == '(';   /* a function's name: exp(…), ln(…) */
            for (size_t c = 1; fn && c < name; c++) fn = !isupper((unsigned char)p[c]);
            bool named = name > 1 && digit && islower((unsigned char)p[1]);   /* Bfloat16: a name put in capitals */
            ck_assert_msg(!(p[0] >= 'A' && p[0] <= 'Z' && (p[1] == '[' || p[1] == '_' || fn || named)) || strchr("QKVOSPM", p[0]),
                          "%s question %d starts with a symbol put in capitals: %.40s", paths[i], j, p);
            ck_assert_msg(!(p[0] >= 'a' && p[0] <= 'z') || digit || (name > 0 && strchr("[_(", p[name])) || (p[1] == ' ' && p[2] == '='),
                          "%s question %d starts a sentence in lower case: %.40s", paths[i], j, p);
        }
        /* a question whose answer is a factor of 003's base-2 form says so itself (a quiz asks it
         * away from the lesson: a student taking exp would be marked wrong) */
        for (int j = 0; j < nq && j < QMAX; j++)
            if (strstr(q[j].why, "exp2(") && q[j].kind != FS_Q_M_NEW)
                ck_assert_msg(strstr(q[j].prompt, "base-2") != NULL, "%s question %d is judged with exp2 and its prompt does not say "
                              "it is in base 2: %s", paths[i], j, q[j].prompt);
        /* the mask's -inf is explained only where a -inf is shown, and one key is not "keys 2-2" */
        for (int j = 0; j < nq && j < QMAX; j++) {
            const char *p = q[j].prompt, *note = strstr(p, "(-inf: hidden by the mask)");
            ck_assert_msg(!note || strstr(p, "-inf,") || strstr(p, "-inf]") || strstr(p, "-inf, …"),
                          "%s question %d explains a -inf it does not show: %s", paths[i], j, p);
            int k0, k1;
            const char *keys = strstr(p, "meets keys ");
            ck_assert_msg(!keys || sscanf(keys, "meets keys %d-%d", &k0, &k1) != 2 || k0 != k1,
                          "%s question %d names one key as a range: %s", paths[i], j, p);
        }
        /* a claims-only lesson with more claims than questions asks across its list, not only
         * its first claims: the claims asked span more than half of its checks */
        if (!steps && nq == QMAX_CLAIMS) {
            int lo = INT_MAX, hi = -1;
            for (int j = 0; j < nq; j++)
                if (q[j].check >= 0) { lo = q[j].check < lo ? q[j].check : lo; hi = q[j].check > hi ? q[j].check : hi; }
            ck_assert_msg(hi - lo > fs_lesson_check_count(l) / 2, "%s: its %d questions ask checks %d to %d of %d only", paths[i],
                          nq, lo, hi, fs_lesson_check_count(l));
        }
        /* a claim's question does not state its answer: the printed number is not a token of the
         * claim's sentence unless the expression shows it too (an input, not the answer) */
        for (int j = 0; j < nq && j < QMAX; j++) {
            if (q[j].check < 0 || !q[j].numeric) continue;
            const fs_check *ck = fs_lesson_check(l, q[j].check);
            /* (an erratum's question shows the printed figure on purpose: it is not the answer) */
            const char *p = ck->printed, *cut = strstr(q[j].prompt, ". Work it out: ");
            while (*p == '~' || *p == '+' || *p == '-') p++;   /* a negative one's magnitude too (-1.75) */
            if (!cut || !isdigit((unsigned char)*p)) continue;
            char claim[sizeof q[j].prompt];
            snprintf(claim, sizeof claim, "%.*s", (int)(cut - q[j].prompt), q[j].prompt);
            ck_assert_msg(!number_token(claim, p) || number_token(cut, p),
                          "%s question %d states its own answer (%s): %s", paths[i], j, p, q[j].prompt);
            /* nor in words: 4 as "four times the numbers" */
            static const char *const names[] = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};
            char *end;
            const long w = strtol(p, &end, 10);
            if (!*end && w >= 2 && w <= 10) {
                char word[16];
                snprintf(word, sizeof word, " %s ", names[w - 2]);
                ck_assert_msg(!strstr(claim, word), "%s question %d states its own answer (%s) in words: %s", paths[i], j, p,
                              q[j].prompt);
            }
        }
        /* a claim whose expression counts bytes or seconds and whose unit is KiB, MiB, ms, …
         * says what the expression counts and what makes the unit: a student who multiplies it
         * out gets 131072, not the 128 (KiB) asked; a count's K, M, G (FLOPs, elements) say
         * what they stand for, and never that they count seconds */
        for (int j = 0; j < nq && j < QMAX; j++) {
            if (q[j].check < 0 || !strstr(q[j].prompt, "Work ")) continue;
            const fs_check *ck = fs_lesson_check(l, q[j].check);
            fs_unit u;
            if (!fs_unit_parse(ck->unit, &u) || fs_unit_factor(u, true) == 1.0 || u == FS_UNIT_PERCENT) continue;
            char want[24];
            snprintf(want, sizeof want, "(1 %s = ", ck->unit);
            if (u >= FS_UNIT_K && u <= FS_UNIT_G) {
                ck_assert_msg(strstr(q[j].prompt, want) && strstr(q[j].prompt, " here)") && !strstr(q[j].prompt, "seconds"),
                              "%s question %d: %s", paths[i], j, q[j].prompt);
                continue;
            }
            ck_assert_msg(strstr(q[j].prompt, "the expression counts "), "%s question %d: %s", paths[i], j, q[j].prompt);
            /* the answer times the factor the prompt names is the expression's value: the factor and
             * the answer in one reading (an erratum's 8.192 "KB" once came with 1 KB = 1024 B) */
            const char *f = strstr(q[j].prompt, "the expression counts ");
            f = f ? strstr(f, " = ") : NULL;
            const double F = f ? strtod(f + 3, NULL) : 0,
                         base = ck->got.exact_dec * fs_unit_factor(u, false);
            ck_assert_msg(F > 0 && fabs(q[j].answer * F - base) <= 1e-9 * fabs(base), "%s question %d: answer %.17g times %g "
                          "is not the expression's %.17g: %s", paths[i], j, q[j].answer, F, base, q[j].prompt);
            /* the course's binary units are KiB, MiB, …: a document's KB read as 1024 B is asked in KiB */
            if (u >= FS_UNIT_KB && u <= FS_UNIT_TB && F == fs_unit_factor(u, true))
                ck_assert_msg(strstr(q[j].prompt, fs_unit_str((fs_unit)(u - FS_UNIT_KB + FS_UNIT_KIB))),
                              "%s question %d: a binary %s not named as such: %s", paths[i], j, ck->unit, q[j].prompt);
        }
        /* an exp2 lesson's questions name exp2, not exp */
        if (fs_lesson_run(l) && fs_lesson_run(l)->tiling.exp2)
            for (int j = 0; j < nq && j < QMAX; j++)
                ck_assert_msg(!strstr(q[j].prompt, "exp(s") && !strstr(q[j].why, "exp(s"), "%s question %d: %s / %s", paths[i], j,
                              q[j].prompt, q[j].why);
        /* two questions before one step come in a row's order of work: the first one asked never
         * states the second's answer (α's prompt gives m_new, so the new maximum is asked first) */
        for (int j = 0; j + 1 < nq && j + 1 < QMAX; j++) {
            if (q[j].step < 0 || q[j + 1].step != q[j].step || !q[j + 1].numeric) continue;
            char ans[64];
            fs_question_answer(&q[j + 1], ans, sizeof ans);
            ck_assert_msg(!number_token(q[j].prompt, ans), "%s question %d gives away question %d's answer %s: %s", paths[i], j,
                          j + 1, ans, q[j].prompt);
        }
        /* a row's new maximum and first sum are asked only where the prompt shows every score */
        for (int j = 0; j < nq && j < QMAX; j++) {
            if (q[j].step < 0 || (q[j].kind != FS_Q_M_NEW && q[j].kind != FS_Q_L_NEW)) continue;
            const fs_event *e = &fs_lesson_trace(l)->ev[q[j].step];
            if (e->kind == FS_EV_ROW && e->m_old == -INFINITY)
                ck_assert_msg(!strstr(q[j].prompt, "values)]"), "%s question %d: scores cut: %s", paths[i], j, q[j].prompt);
        }
        /* the new maximum's reason names what the old one is compared with: m_blk only where a block
         * of several keys arrived (one key's score is s, one value z), and says what it is */
        for (int j = 0; j < nq && j < QMAX; j++) {
            if (q[j].kind != FS_Q_M_NEW || q[j].step < 0) continue;
            const fs_event *e = &fs_lesson_trace(l)->ev[q[j].step];
            if (e->kind != FS_EV_ROW && e->kind != FS_EV_ELEM) continue;   /* (a split's maximum is said otherwise) */
            bool one = e->c1 - e->c0 == 1 && (e->kind == FS_EV_ELEM || e->n_s == 1);
            if (one) ck_assert_msg(!strstr(q[j].why, "m_blk"), "%s question %d: one key or value called m_blk: %s", paths[i], j, q[j].why);
            else ck_assert_msg(strstr(q[j].why, "this block's best score (m_blk)"), "%s question %d: m_blk unexplained: %s", paths[i], j,
                               q[j].why);
        }
        /* a tile's class under a causal or window mask depends on where the queries sit: the
         * question says it (a quiz asks it away from the lesson that would) */
        for (int j = 0; j < nq && j < QMAX; j++)
            if ((q[j].kind == FS_Q_TILE_CLASS || q[j].kind == FS_Q_SKIPS) &&
                (strstr(q[j].prompt, "causal mask") || strstr(q[j].prompt, "sliding window")))
                ck_assert_msg(strstr(q[j].prompt, "query i is at position i"), "%s question %d: %s", paths[i], j, q[j].prompt);
        /* an e4m3 rounding of a plain number says between which two e4m3 values it lies and why
         * it goes to the one it does (a tie: to the even one) */
        for (int j = 0; j < nq && j < QMAX; j++) {
            if (q[j].kind != FS_Q_E4M3) continue;
            const fs_check *ck = fs_lesson_check(l, q[j].check);
            char *end;
            const double x = strtod(ck->target + 10, &end);   /* "expr e4m3(" */
            if (strncmp(ck->target, "expr e4m3(", 10) || end == ck->target + 10 || strcmp(end, ")") || fabs(x) > 448 ||
                fs_fp8_round(FS_FP8_E4M3, x) == x)
                continue;
            ck_assert_msg(strstr(q[j].why, "lies between") && (strstr(q[j].why, "the nearer is") || strstr(q[j].why, "the even one")),
                          "%s question %d: %s", paths[i], j, q[j].why);
            /* the number itself, typed, is not its rounding; the answer as printed is */
            char typed[48], fb[1024];
            snprintf(typed, sizeof typed, "%.*s", (int)(end - ck->target - 10), ck->target + 10);
            ck_assert_msg(q[j].has_before && !fs_question_judge(&q[j], typed, fb, sizeof fb), "%s question %d: %s judged right",
                          paths[i], j, typed);
            ck_assert_msg(fs_question_judge(&q[j], fs_question_answer(&q[j], typed, sizeof typed), fb, sizeof fb), "%s", fb);
            n_e4m3_reasons++;
        }
        /* an FP8 question's starting number (x before Q Kᵀ, P before P V), typed back as the
         * prompt prints it, is judged wrong */
        for (int j = 0; j < nq && j < QMAX; j++) {
            if (q[j].kind != FS_Q_QUANT && q[j].kind != FS_Q_P8) continue;
            char typed[48], fb[1024];
            snprintf(typed, sizeof typed, "%.6g", q[j].before);
            ck_assert_msg(q[j].has_before && strstr(q[j].prompt, typed), "%s question %d: %s not in %s", paths[i], j, typed,
                          q[j].prompt);
            ck_assert_msg(!fs_question_judge(&q[j], typed, fb, sizeof fb) && strstr(fb, "before rounding"),
                          "%s question %d: %s judged right: %s", paths[i], j, typed, fb);
            n_befores++;
        }
        /* where the reason says what the prompt's rounded numbers give, that answer, typed as the
         * reason prints it, is judged right, and so is the exact answer's rounding */
        for (int j = 0; j < nq && j < QMAX; j++) {
            if (!q[j].has_from_prompt) continue;
            const char *at = strstr(q[j].why, "the rounded ones give ");
            ck_assert_msg(at, "%s question %d: from_prompt set, the reason silent: %s", paths[i], j, q[j].why);
            char typed[48], fb[1024];
            snprintf(typed, sizeof typed, "%.*s", (int)strcspn(at + 22, ")"), at + 22);
            ck_assert_msg(fs_question_judge(&q[j], typed, fb, sizeof fb), "%s question %d: the prompt's own result %s judged "
                          "wrong: %s", paths[i], j, typed, fb);
            ck_assert_msg(fs_question_judge(&q[j], fs_question_answer(&q[j], typed, sizeof typed), fb, sizeof fb), "%s", fb);
            n_from_prompt++;
        }
        for (int j = 0; j < nq && j < QMAX; j++) n_alias += !q[j].numeric && q[j].alias[0][0] && q[j].alias[1][0];
        /* a lesson on a mistake asks what the mistake computes */
        if (fs_lesson_run(l) && fs_lesson_run(l)->tiling.pitfall != FS_PITFALL_NONE) {
            bool asks = false;
            for (int j = 0; j < nq && j < QMAX; j++) asks |= q[j].kind == FS_Q_MISTAKE;
            ck_assert_msg(asks, "%s runs pitfall %s and never asks what it computes", paths[i],
                          fs_pitfall_str(fs_lesson_run(l)->tiling.pitfall));
            n_mistake_lessons++;
        }
        if (pitfall)
            for (int j = 0; j < nq; j++)
                if (q[j].step >= 0) {
                    double v = trace_value(fs_lesson_compare_trace(l), &q[j]);
                    if (!isnan(v) && q[j].kind != FS_Q_TILE_CLASS)
                        ck_assert_msg(v == q[j].answer, "%s question %d: the correct run's %.17g, asked %.17g", paths[i], j, v,
                                      q[j].answer);
                    ck_assert_msg(q[j].kind == FS_Q_TILE_CLASS || q[j].kind == FS_Q_SKIPS || q[j].kind == FS_Q_MISTAKE ||
                                  strstr(q[j].prompt, "reference algorithm"),
                                  "%s question %d: a pitfall's number is not said to be the reference algorithm's", paths[i], j);
                }
        fs_lesson_free(l);
    }
    ck_assert_msg(n_from_prompt >= 3, "only %d questions whose rounded numbers give another answer", n_from_prompt);
    ck_assert_msg(n_e4m3_reasons >= 3, "only %d e4m3 roundings explained", n_e4m3_reasons);
    ck_assert_msg(n_befores >= 3, "only %d FP8 questions whose starting number was typed back", n_befores);
    ck_assert_msg(n_alias >= 1, "no choice between two recipes takes a recipe's name");
    ck_assert_msg(n_mistake_lessons >= 6, "only %d lessons run a pitfall", n_mistake_lessons);
    fs_lesson_list_free(paths, n);
}
END_TEST

/* The judging rule on one question built by hand: rounding to what was typed, two significant
 * digits, -inf, choices by name, letter and number. */
START_TEST(test_judge_rules)
{
    fs_question q;
    memset(&q, 0, sizeof q);
    q.kind = FS_Q_ALPHA;
    q.step = 14;
    q.numeric = true;
    q.answer = 0.958461;
    q.digits = 4;
    snprintf(q.why, sizeof q.why, "α = exp(0.4455 − 0.4879) = 0.9585.");
    char fb[1024];
    ck_assert(fs_question_judge(&q, "0.9585", fb, sizeof fb));
    ck_assert(fs_question_judge(&q, "0.96", fb, sizeof fb));
    /* a number with a unit is asked again (its hint quotes it); a number, a word, -inf, a decimal
     * comma and two numbers are not */
    ck_assert(fs_question_unit_hint(&q, "128 KiB", fb, sizeof fb) && strstr(fb, "\"128 KiB\"") && strstr(fb, "number alone"));
    ck_assert(fs_question_unit_hint(&q, " 15%", fb, sizeof fb));
    ck_assert(fs_question_unit_hint(&q, "0.6ms\n", fb, sizeof fb));
    static const char *const plain[] = {"0.9585", "abc", "-inf", "0,96", "2 or 3", "", "1e-3"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        ck_assert_msg(!fs_question_unit_hint(&q, plain[i], fb, sizeof fb), "'%s' taken for a number with a unit", plain[i]);
    ck_assert(fs_question_judge(&q, " 0.958 ", fb, sizeof fb));
    /* one unit off in the last of four typed decimals (worked out from rounded numbers): right,
     * and said why; two units off, or fewer decimals that do not round to it: not */
    ck_assert(fs_question_judge(&q, "0.9584", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "rounded"), "%s", fb);
    ck_assert(!fs_question_judge(&q, "0.9583", fb, sizeof fb));
    ck_assert(!fs_question_judge(&q, "0.95", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "0.95") && strstr(fb, "0.9585") && strstr(fb, "step 14"), "%s", fb);
    ck_assert(!fs_question_judge(&q, "1", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "significant"), "%s", fb);
    ck_assert(!fs_question_judge(&q, "0.9585x", fb, sizeof fb));
    /* a decimal comma is a point where it cannot be a thousands separator; what is no number
     * (a word, a unit, an empty line) is not an answer the players count */
    ck_assert(fs_question_judge(&q, "0,9585", fb, sizeof fb));
    ck_assert(fs_question_readable(&q, "0,96") && fs_question_readable(&q, " 0.9 ") && fs_question_readable(&q, "-inf"));
    ck_assert(!fs_question_readable(&q, "") && !fs_question_readable(&q, "  \n") && !fs_question_readable(&q, "abc") &&
              !fs_question_readable(&q, "128 KiB") && !fs_question_readable(&q, "exp(-0.4)"));
    /* NaN is an answer (a mistake's, where arithmetic has no value), and wrong for a number */
    ck_assert(fs_question_readable(&q, "nan") && !fs_question_judge(&q, "NaN", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "Not quite") && strstr(fb, "0.9585"), "%s", fb);
    ck_assert(!fs_question_judge(&q, "abc", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "not a number") && strstr(fb, "0.9585"), "%s", fb);
    ck_assert(!fs_question_judge(&q, "\x1b[2J", fb, sizeof fb));
    ck_assert_msg(!strchr(fb, '\x1b'), "a control byte reached the feedback");
    /* worked out from the prompt's rounded numbers, 1.0000 · 5.5279 + 0.3629 · 7.5138 = 8.2547
     * where the exact sum is 8.25496: that answer is right too, one unit of it off as well, and
     * the feedback says why; three units off it and off the exact value's rounding, not */
    q.answer = 8.254960;
    q.has_from_prompt = true;
    q.from_prompt = 8.25474;
    ck_assert(fs_question_judge(&q, "8.2550", fb, sizeof fb));
    ck_assert(fs_question_judge(&q, "8.2547", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "prompt's rounded numbers"), "%s", fb);
    ck_assert(fs_question_judge(&q, "8.2548", fb, sizeof fb));
    ck_assert(fs_question_judge(&q, "8.25", fb, sizeof fb));
    ck_assert(!fs_question_judge(&q, "8.2544", fb, sizeof fb));
    ck_assert(!fs_question_judge(&q, "8.24", fb, sizeof fb));
    q.has_from_prompt = false;
    ck_assert(!fs_question_judge(&q, "8.2547", fb, sizeof fb));
    /* one unit either side of the answer as printed, not of the exact value: 4.086651 prints
     * 4.0867, and 4.0866 and 4.0868 are both right, 4.0865 and 4.0869 not */
    q.answer = 4.086651;
    ck_assert(fs_question_judge(&q, "4.0866", fb, sizeof fb) && fs_question_judge(&q, "4.0868", fb, sizeof fb));
    ck_assert(!fs_question_judge(&q, "4.0865", fb, sizeof fb) && !fs_question_judge(&q, "4.0869", fb, sizeof fb));
    /* a merge's factors worked out again from the shown maxima (exp(0.6366 − 0.8156) · 17.7199 +
     * 16.1689 = 30.9846 for the exact 30.9855): right, to its rounding, and only with it set */
    q.answer = 30.98553;
    ck_assert(!fs_question_judge(&q, "30.98", fb, sizeof fb));
    q.has_from_inputs = true;
    q.from_inputs = 30.98464;
    ck_assert(fs_question_judge(&q, "30.98", fb, sizeof fb) && fs_question_judge(&q, "30.9846", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "another way"), "%s", fb);
    ck_assert(!fs_question_judge(&q, "30.97", fb, sizeof fb) && !fs_question_judge(&q, "30.9840", fb, sizeof fb));
    q.has_from_inputs = false;
    /* an e4m3 rounding that is a short binary fraction is printed in full, 0.28125 not 0.2812 */
    q.kind = FS_Q_P8;
    q.answer = 0.28125;
    ck_assert_str_eq(fs_question_answer(&q, fb, sizeof fb), "0.28125");
    q.answer = 0.29570341234;   /* not exact in 8 digits: the usual 4 decimals */
    ck_assert_str_eq(fs_question_answer(&q, fb, sizeof fb), "0.2957");
    q.kind = FS_Q_ALPHA;
    q.answer = -0.2;
    ck_assert(fs_question_judge(&q, "\xe2\x88\x92" "0.2", fb, sizeof fb));   /* a typographic minus */
    q.answer = 1.5;
    ck_assert(fs_question_judge(&q, "1,5", fb, sizeof fb));   /* one digit after it: a decimal comma */
    q.answer = 3;
    q.kind = FS_Q_SKIPS;
    ck_assert(fs_question_judge(&q, "3", fb, sizeof fb));
    q.answer = 1000;
    q.digits = 0;
    ck_assert(fs_question_judge(&q, "1,000", fb, sizeof fb));   /* three digits after it: a thousands separator */
    q.answer = 1.368;   /* 1,368 meant as a decimal comma: judged as 1368, and the feedback says so */
    q.digits = 4;
    ck_assert(!fs_question_judge(&q, "1,368", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "thousands separator"), "%s", fb);
    /* a whole number with trailing zeros: wrong read as all its digits, and the feedback says how to
     * type it where the digits before its zeros are right ("300" for 295.22: 3.0e2) */
    q.answer = 295.22388;
    ck_assert(!fs_question_judge(&q, "300", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "type 3.0e2,"), "%s", fb);
    ck_assert(fs_question_judge(&q, "3.0e2", fb, sizeof fb));
    ck_assert(!fs_question_judge(&q, "290", fb, sizeof fb));
    ck_assert_msg(!strstr(fb, "hold places"), "%s", fb);
    q.answer = -1234;
    ck_assert(!fs_question_judge(&q, "-1200", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "type -1.2e3,"), "%s", fb);
    ck_assert(!fs_question_judge(&q, "-1300", fb, sizeof fb) && !strstr(fb, "hold places"));
    q.answer = 1000;
    q.digits = 0;
    q.digits = 4;
    ck_assert(!fs_question_judge(&q, "2", fb, sizeof fb));
    q.kind = FS_Q_M_NEW;
    q.answer = -INFINITY;
    ck_assert(fs_question_judge(&q, "-inf", fb, sizeof fb));
    ck_assert(!fs_question_judge(&q, "inf", fb, sizeof fb));
    q.answer = 0.00001;
    ck_assert(fs_question_judge(&q, "0", fb, sizeof fb));
    q.answer = 0.5;
    ck_assert(!fs_question_judge(&q, "nan", fb, sizeof fb));

    fs_question c;
    memset(&c, 0, sizeof c);
    c.kind = FS_Q_TILE_CLASS;
    c.step = 3;
    c.n_options = 3;
    c.options[0] = "full";
    c.options[1] = "partial";
    c.options[2] = "skipped";
    c.right = 2;
    snprintf(c.why, sizeof c.why, "Skipped: no pair is visible.");
    ck_assert(fs_question_judge(&c, "skipped", fb, sizeof fb));
    ck_assert(fs_question_judge(&c, "Skip", fb, sizeof fb));
    ck_assert(fs_question_judge(&c, "s", fb, sizeof fb));
    ck_assert(fs_question_judge(&c, "3", fb, sizeof fb));
    ck_assert(!fs_question_judge(&c, "p", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "partial") && strstr(fb, "skipped") && strstr(fb, "step 3"), "%s", fb);
    ck_assert(!fs_question_judge(&c, "4", fb, sizeof fb));
    ck_assert(!fs_question_judge(&c, "", fb, sizeof fb));
    ck_assert(fs_question_readable(&c, "p") && fs_question_readable(&c, "3") && !fs_question_readable(&c, "4") &&
              !fs_question_readable(&c, "maybe") && !fs_question_readable(&c, ""));
    /* An e4m3 rounding: the value typed whole, or to three significant digits where it has more;
     * the number before rounding is wrong however near (-1.7 for -1.75 was judged right: read as
     * -1.75 to two digits), and so is a shorter rounding of the answer, with a word on why. */
    fs_question e;
    memset(&e, 0, sizeof e);
    e.kind = FS_Q_E4M3;
    e.step = -1;
    e.numeric = true;
    e.digits = 4;
    e.answer = -1.75;
    e.has_before = true;
    e.before = -1.7;
    ck_assert(fs_question_judge(&e, "-1.75", fb, sizeof fb));
    ck_assert(fs_question_judge(&e, "-1.750", fb, sizeof fb));
    ck_assert(!fs_question_judge(&e, "-1.7", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "before rounding"), "%s", fb);
    ck_assert(!fs_question_judge(&e, "-1.8", fb, sizeof fb));
    ck_assert_msg(strstr(fb, "type it whole"), "%s", fb);
    ck_assert(!fs_question_judge(&e, "-1.625", fb, sizeof fb));
    e.answer = 0.001953125;   /* 2^-9: seven digits, three of them enough */
    e.before = 0.0021;
    ck_assert(fs_question_judge(&e, "0.00195", fb, sizeof fb));
    ck_assert(fs_question_judge(&e, "0.001953125", fb, sizeof fb));
    ck_assert(!fs_question_judge(&e, "0.002", fb, sizeof fb));
    ck_assert(!fs_question_judge(&e, "0.0021", fb, sizeof fb));
    e.answer = 448;
    e.has_before = false;
    ck_assert(fs_question_judge(&e, "448", fb, sizeof fb));
    ck_assert(!fs_question_judge(&e, "450", fb, sizeof fb));
    /* a claim's e4m3 rounding in words (the terminal's claim step shows them): a plain number off
     * the grid only */
    fs_check ck;
    memset(&ck, 0, sizeof ck);
    char w[320];
    ck.target = "expr e4m3(2.9)";
    ck_assert_str_eq(fs_check_e4m3_words(&ck, w, sizeof w),
                     "2.9 lies between 2.75 and 3, e4m3's neighbours there (0.25 apart); the nearer is 3.");
    ck.target = "expr e4m3(1.0625)";
    ck_assert_msg(strstr(fs_check_e4m3_words(&ck, w, sizeof w), "halfway"), "%s", w);
    ck.target = "expr e4m3(-1000)";   /* past the largest value */
    ck_assert_str_eq(fs_check_e4m3_words(&ck, w, sizeof w),
                     "-1000 lies beyond 448, e4m3's largest magnitude, and e4m3 has no infinity: this tool's conversion "
                     "saturates, to -448.");
    static const char *const none[] = {"expr e4m3(3)", "expr e4m3(2.9) * 2", "expr 2 * 3", "step 2 l_new", "expr e4m3(x)"};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        ck.target = none[i];
        ck_assert_msg(!*fs_check_e4m3_words(&ck, w, sizeof w), "%s: '%s'", none[i], w);
    }
}
END_TEST

/* Random problems of every algorithm: the questions' answers are the trace's values and judge
 * as they should. */
/* Runs r, checks its questions and returns which kinds it asked (bit k for fs_qkind k). */
static unsigned run_and_check(fs_run *r, const char *what, uint64_t seed)
{
    unsigned asked = 0;
    fs_result res;
    fs_trace t;
    fs_trace_init(&t);
    fs_status st = fs_run_exec(r, &res, &t);
    ck_assert_msg(st == FS_OK, "%s: run failed (seed %llu)", what, (unsigned long long)seed);
    fs_question q[QMAX];
    int n = fs_run_questions(r, &t, 4, q, QMAX);
    ck_assert_int_le(n, QMAX);
    check_questions(&t, q, n < QMAX ? n : QMAX, what, seed);
    /* a tile's class, where asked, is the pair's */
    for (int i = 0; i < n && i < QMAX; i++)
        if (q[i].kind == FS_Q_TILE_CLASS) {
            const fs_event *e = &t.ev[q[i].step];
            int cls = e->kind == FS_EV_SKIP ? 2 : e->cls == FS_TILE_PARTIAL ? 1 : 0;
            ck_assert_msg(q[i].right == cls, "%s: tile class %d asked as %d (seed %llu)", what, cls, q[i].right,
                          (unsigned long long)seed);
        } else if (q[i].kind == FS_Q_DV) {
            /* Σ_i P_ij dO_i[0] over the tile's rows, from Q, K, L and dO themselves (P = exp(S − L)) */
            const fs_event *e = &t.ev[q[i].step];
            const fs_attn *a = &r->attn;
            double want = 0;
            for (int32_t row = e->r0; row < e->r1; row++) {
                if (!fs_mask_visible(&a->mask, a->n_q, a->n_kv, row, e->row)) continue;
                const double L = res.L[(size_t)e->head * a->n_q + row];
                const double P = exp(fs_attn_score(a, e->head, row, e->row) - L);
                want += P * (r->dO ? r->dO[((size_t)e->head * a->n_q + row) * a->d_v] : 1.0);
            }
            ck_assert_msg(fabs(q[i].answer - want) <= 1e-9 * fmax(1, fabs(want)), "%s: key %d's dV from the tile %.12g, P dO gives "
                          "%.12g (seed %llu)", what, e->row, q[i].answer, want, (unsigned long long)seed);
            asked |= 1u << FS_Q_DV;
        } else if (q[i].kind == FS_Q_LIVE) {
            /* without a mask: every row alive at once with the KV tiles outside, a Q tile's rows with Q outside */
            if (r->attn.mask.kind == FS_MASK_NONE) {
                const int32_t want = r->tiling.order == FS_ORDER_KV_OUTER ? r->attn.n_q : r->tiling.Bq;
                ck_assert_msg(q[i].answer == want, "%s: %s, %d rows in tiles of %d: %g rows alive asked, %d expected (seed %llu)",
                              what, r->tiling.order == FS_ORDER_KV_OUTER ? "kv-outer" : "q-outer", r->attn.n_q, r->tiling.Bq,
                              q[i].answer, want, (unsigned long long)seed);
            }
            asked |= 1u << FS_Q_LIVE;
        } else if (q[i].kind == FS_Q_KV_HEAD) {
            /* the head's group: consecutive query heads share a KV head */
            const fs_event *e = &t.ev[q[i].step];
            ck_assert_msg(q[i].answer == e->head / (r->attn.n_q_heads / r->attn.n_kv_heads), "%s: query head %d asked KV head %g "
                          "(seed %llu)", what, e->head, q[i].answer, (unsigned long long)seed);
            asked |= 1u << FS_Q_KV_HEAD;
        } else if (q[i].kind == FS_Q_SOFTCAP) {
            /* cap · tanh(raw / cap), the raw score from Q and K, and the prompt's raw score that one */
            const fs_event *e = &t.ev[q[i].step];
            int j;
            double shown_raw;
            ck_assert(sscanf(strstr(q[i].prompt, "raw score for key ") + 18, "%d is %lf", &j, &shown_raw) == 2);
            const fs_attn *a = &r->attn;
            double raw = 0;
            for (int32_t c = 0; c < a->d; c++)
                raw += a->Q[((size_t)e->head * a->n_q + e->row) * a->d + c] * a->K[((size_t)e->kv_head * a->n_kv + j) * a->d + c];
            raw *= a->scale;
            const double want = a->softcap * tanh(raw / a->softcap);
            ck_assert_msg(fabs(q[i].answer - want) <= 1e-12 * fmax(1, fabs(want)) && fabs(shown_raw - raw) <= 5e-5,
                          "%s: cap %g, raw %.9g (shown %g): capped %.9g, asked %.9g (seed %llu)", what, a->softcap, raw, shown_raw,
                          want, q[i].answer, (unsigned long long)seed);
            asked |= 1u << FS_Q_SOFTCAP;
        } else if (q[i].kind == FS_Q_QUANT) {
            /* the rounding redone from the trace's exact row and scale, as lowp.h states it */
            const fs_event *e = &t.ev[q[i].step];
            const double *x = fs_trace_at(&t, e->x_row);
            int j;
            ck_assert(x && sscanf(strstr(q[i].prompt, "'s element ") + 11, "%d", &j) == 1 && j >= 0 && j < e->n_x);
            const double want = fs_fp8_round(FS_FP8_E4M3, (float)(x[j] / e->q_scale)) * e->q_scale;
            ck_assert_msg(fabs(q[i].answer - want) <= 1e-6 * fabs(want), "%s: e4m3(x / σ) · σ = %.9g, asked %.9g (seed %llu)", what,
                          want, q[i].answer, (unsigned long long)seed);
        } else if (q[i].kind == FS_Q_DROP) {
            /* the keys it names as dropped are the pair's dropped cells of that row */
            const fs_event *e = &t.ev[q[i].step];
            const char *k = strstr(q[i].prompt, "dropout drops key");
            ck_assert(k);
            k = strchr(k + 17, ' ') + 1;
            int key;
            while (sscanf(k, "%d", &key) == 1) {
                bool found = false;
                for (int64_t x = q[i].step - 1; x >= 0 && !found; x--) {
                    const fs_event *te = &t.ev[x];
                    if (te->kind != FS_EV_TILE || te->qt != e->qt || te->kt != e->kt || te->head != e->head) continue;
                    const double *pairs = fs_trace_at(&t, te->drop);
                    for (int32_t d = 0; pairs && d < te->n_drop; d++) found |= pairs[2 * d] == e->row && pairs[2 * d + 1] == key;
                    break;
                }
                ck_assert_msg(found, "%s: key %d is not dropped for row %d: %s (seed %llu)", what, key, e->row, q[i].prompt,
                              (unsigned long long)seed);
                while (isdigit((unsigned char)*k)) k++;
                if (strncmp(k, ", ", 2)) break;
                k += 2;
            }
        } else if (q[i].kind == FS_Q_SKIPS) {
            int skips = 0;
            for (int64_t k = 0; k < t.n; k++) skips += (t.ev[k].kind == FS_EV_SKIP || t.ev[k].kind == FS_EV_BSKIP) && t.ev[k].head == 0;
            ck_assert_msg(q[i].answer == skips, "%s: %d skips, asked %g (seed %llu)", what, skips, q[i].answer,
                          (unsigned long long)seed);
        }
    for (int i = 0; i < n && i < QMAX; i++) asked |= 1u << q[i].kind;
    fs_trace_free(&t);
    fs_result_free(&res);
    return asked;
}

/* A problem of hq query heads over hkv KV heads, nq queries, nk keys, d = d_v, with Q and K drawn
 * from [-lim, lim) and V from [-1, 1) into the caller's Q, K and V (room for them given). */
static fs_attn drawn_qkv(fs_rng *rng, int32_t hq, int32_t hkv, int32_t nq, int32_t nk, int32_t d, double lim, double *Q, double *K,
                         double *V)
{
    fs_rng_fill(rng, Q, (long)hq * nq * d, -lim, lim);
    fs_rng_fill(rng, K, (long)hkv * nk * d, -lim, lim);
    fs_rng_fill(rng, V, (long)hkv * nk * d, -1, 1);
    fs_attn a = fs_attn_make(nq, nk, d, d);
    a.n_q_heads = hq;
    a.n_kv_heads = hkv;
    a.Q = Q, a.K = K, a.V = V;
    return a;
}

START_TEST(test_random_problems)
{
    uint64_t seed = fs_test_seed();
    fs_rng rng = {seed};
    fs_test_problem_spec spec = {.max_n_q = 9, .max_n_kv = 11, .max_d = 4, .max_d_v = 3, .max_offset = 4, .max_window = 4,
                                 .bits_visible = 0.5, .dO = true};
    unsigned dropout_asked = 0, fp8_asked = 0, backward_asked = 0, tiled_asked = 0;
    for (int it = 0; it < 60; it++) {
        fs_test_problem p;
        fs_test_problem_draw(&p, &rng, it % FS_TEST_MASKS, &spec);
        char what[96];
        fs_run r = fs_run_make(FS_ALGO_TILED);
        r.attn = p.a;
        r.tiling.Bq = fs_rng_int(&rng, 1, 4);
        r.tiling.Bk = fs_rng_int(&rng, 1, 4);
        r.tiling.form = it % 2 ? FS_FORM_UNNORMALIZED : FS_FORM_NORMALIZED;
        r.tiling.order = it % 3 ? FS_ORDER_Q_OUTER : FS_ORDER_KV_OUTER;
        snprintf(what, sizeof what, "tiled, mask kind %d", it % FS_TEST_MASKS);
        tiled_asked |= run_and_check(&r, what, seed);
        if (p.a.n_q_heads == 1 && p.a.mask.kind == FS_MASK_NONE) {
            fs_run d = fs_run_make(FS_ALGO_DECODE);
            d.attn = p.a;
            d.decoding.Bk = fs_rng_int(&rng, 1, 4);
            d.decoding.merge = it % 2 ? FS_MERGE_TREE : FS_MERGE_SEQUENTIAL;
            run_and_check(&d, "decode", seed);
        }
        fs_run b = fs_run_make(FS_ALGO_BACKWARD);
        b.attn = p.a;
        b.dO = p.dO;
        b.tiling.Bq = fs_rng_int(&rng, 1, 4);
        b.tiling.Bk = fs_rng_int(&rng, 1, 4);
        backward_asked |= run_and_check(&b, "backward", seed);
        if (p.a.Q && !p.a.S && !(p.a.softcap > 0)) {
            /* dropout: a row with a dropped weight asks its ℓ_blk, which keeps it */
            fs_run dr = r;
            dr.tiling.dropout = (fs_dropout){.on = true, .p = 0.2 + 0.5 * (it % 4) / 4.0, .seed = seed + (uint64_t)it};
            dropout_asked |= run_and_check(&dr, "tiled with dropout", seed);
            /* FP8: the rounded inputs and P8, with every scaling and P with and without its scale */
            fs_run lp = fs_run_make(FS_ALGO_TILED);
            lp.attn = p.a;
            lp.tiling.Bq = fs_rng_int(&rng, 1, 4);
            lp.tiling.Bk = fs_rng_int(&rng, 1, 4);
            lp.tiling.form = FS_FORM_UNNORMALIZED;
            lp.lowp = true;
            lp.recipe = fs_lowp_recipe_default();
            lp.recipe.values = true;
            lp.recipe.scaling = (fs_lowp_scaling)(it % FS_SCALE_COUNT);
            lp.recipe.p_scale = it % 2 ? 1 : 256;
            fp8_asked |= run_and_check(&lp, "tiled in e4m3", seed);
        }
        fs_test_problem_free(&p);
    }
    /* one head, no mask, at least two tiles each way, in both orders: the live rows are asked, and
     * answered by the order's rule (run_and_check) */
    for (int it = 0; it < 8; it++) {
        const int32_t nq = fs_rng_int(&rng, 4, 9), nk = fs_rng_int(&rng, 4, 9), d = fs_rng_int(&rng, 1, 3);
        double Q[9 * 3], K[9 * 3], V[9 * 3];
        fs_run lr = fs_run_make(FS_ALGO_TILED);
        lr.attn = drawn_qkv(&rng, 1, 1, nq, nk, d, 1, Q, K, V);
        lr.tiling.Bq = fs_rng_int(&rng, 1, nq / 2);
        lr.tiling.Bk = fs_rng_int(&rng, 1, nk / 2);
        lr.tiling.order = it % 2 ? FS_ORDER_KV_OUTER : FS_ORDER_Q_OUTER;
        tiled_asked |= run_and_check(&lr, it % 2 ? "tiled, kv-outer" : "tiled, q-outer", seed);
    }
    ck_assert_msg(tiled_asked & 1u << FS_Q_LIVE, "no tiled run asked its live rows (seed %llu)", (unsigned long long)seed);
    ck_assert_msg(backward_asked & 1u << FS_Q_DV, "no backward run asked a key's dV (seed %llu)", (unsigned long long)seed);
    ck_assert_msg(dropout_asked & 1u << FS_Q_DROP, "no dropout run asked about ℓ_blk (seed %llu)", (unsigned long long)seed);
    ck_assert_msg((fp8_asked & 1u << FS_Q_QUANT) && (fp8_asked & 1u << FS_Q_P8), "no e4m3 run asked its roundings (seed %llu)",
                  (unsigned long long)seed);
    /* the ring under the causal mask, contiguous and zigzag: a step's work asked, and answered as
     * its tiles say */
    unsigned ring_asked = 0;
    for (int it = 0; it < 12; it++) {
        const int32_t P = fs_rng_int(&rng, 2, 4), z = it % 2, n = P * (z ? 2 : 1) * fs_rng_int(&rng, 1, 2), d = fs_rng_int(&rng, 1, 3);
        double Q[8 * 2 * 3], K[8 * 2 * 3], V[8 * 2 * 3];
        fs_run rr = fs_run_make(FS_ALGO_RING);
        rr.attn = drawn_qkv(&rng, 1, 1, n, n, d, 1, Q, K, V);
        rr.attn.mask.kind = FS_MASK_CAUSAL;
        rr.ring.P = P;
        rr.ring.sharding = z ? FS_SHARD_ZIGZAG : FS_SHARD_CONTIGUOUS;
        rr.tiling.Bq = fs_rng_int(&rng, 1, 2);
        rr.tiling.Bk = fs_rng_int(&rng, 1, 2);
        ring_asked |= run_and_check(&rr, z ? "ring, zigzag" : "ring, contiguous", seed);
    }
    ck_assert_msg(ring_asked & 1u << FS_Q_RING_WORK, "no ring run asked a step's work (seed %llu)", (unsigned long long)seed);
    /* GQA with groups past the two the prompt lists, half of the runs soft-capped: the KV head and
     * the capped score asked, each redone (run_and_check) */
    unsigned gqa_asked = 0;
    for (int it = 0; it < 16; it++) {
        const int32_t hk = fs_rng_int(&rng, 3, 4), g = fs_rng_int(&rng, 2, 3), nq = fs_rng_int(&rng, 1, 3),
                      nk = fs_rng_int(&rng, 1, 5), d = fs_rng_int(&rng, 1, 3);
        double Q[12 * 3 * 3], K[4 * 5 * 3], V[4 * 5 * 3];
        fs_run gr = fs_run_make(FS_ALGO_TILED);
        gr.attn = drawn_qkv(&rng, hk * g, hk, nq, nk, d, 2, Q, K, V);
        if (it % 2) gr.attn.softcap = fs_rng_uniform(&rng, 0.5, 3);
        gr.tiling.Bq = fs_rng_int(&rng, 1, 3);
        gr.tiling.Bk = fs_rng_int(&rng, 1, 3);
        gqa_asked |= run_and_check(&gr, it % 2 ? "GQA, soft-capped" : "GQA", seed);
    }
    ck_assert_msg((gqa_asked & 1u << FS_Q_KV_HEAD) && (gqa_asked & 1u << FS_Q_SOFTCAP), "no GQA run asked its KV head or no "
                  "soft-capped run its capped score (seed %llu)", (unsigned long long)seed);
    /* online softmax of a random vector */
    double z[12];
    for (int it = 0; it < 20; it++) {
        int n = fs_rng_int(&rng, 2, 12);
        fs_rng_fill(&rng, z, n, -4, 4);
        fs_run s = fs_run_make(FS_ALGO_SOFTMAX);
        s.z = z;
        s.n_z = n;
        s.chunk = fs_rng_int(&rng, 1, 3);
        run_and_check(&s, "softmax", seed);
    }
}
END_TEST

/* A pitfall's own question on random problems of every variant: its answer redone from the
 * scores by the mistake's formula (and, for 001's printed pitfall 2, equal to the correct update's),
 * NaN exactly where a row's arithmetic has no value; a pitfall run walked alone asks nothing of
 * its wrong m, ℓ or O. */
START_TEST(test_mistakes)
{
    uint64_t seed = fs_test_seed();
    fs_rng rng = {seed};
    int asked[FS_PITFALL_COUNT] = {0}, nan_asked = 0;
    for (int it = 0; it < 200; it++) {
        const fs_pitfall pf = (fs_pitfall)(1 + it % (FS_PITFALL_COUNT - 1));
        const bool masked = pf == FS_PITFALL_MASKED_NAN || pf == FS_PITFALL_MASKED_DOC_FIX;
        const int32_t nq = fs_rng_int(&rng, 1, 4), nkv = fs_rng_int(&rng, 4, 10);
        double S[4 * 10], V[10 * 10] = {0}, W[10 * 10];
        fs_rng_fill(&rng, S, (size_t)nq * nkv, -2, 2);
        for (int32_t i = 0; i < nq * nkv; i++) S[i] = round(S[i] * 100) / 100;   /* as a prompt shows them */
        fs_rng_fill(&rng, W, (size_t)nkv * nkv, -1, 1);
        const bool ident = it % 3 != 0;
        for (int32_t j = 0; j < nkv; j++) V[j * nkv + j] = 1;
        fs_run r = fs_run_make(FS_ALGO_TILED);
        r.attn = fs_attn_make(nq, nkv, 1, nkv);
        r.attn.S = S;
        r.attn.V = ident ? V : W;
        r.attn.scale = 1;
        if (masked) {
            r.attn.mask.kind = it % 2 ? FS_MASK_CAUSAL : FS_MASK_WINDOW;
            r.attn.mask.window = fs_rng_int(&rng, 1, 3);
            r.attn.mask.has_offset = true;
            r.attn.mask.offset = 0;
        }
        r.tiling.Bq = fs_rng_int(&rng, 1, nq);
        r.tiling.Bk = fs_rng_int(&rng, 1, 4);
        r.tiling.order = it % 4 < 2 ? FS_ORDER_KV_OUTER : FS_ORDER_Q_OUTER;
        r.tiling.pitfall = pf;
        fs_result res;
        fs_trace t;
        fs_trace_init(&t);
        ck_assert_msg(fs_run_exec(&r, &res, &t) == FS_OK, "seed %llu", (unsigned long long)seed);
        fs_question q[QMAX];
        const int n = fs_run_questions(&r, &t, 4, q, QMAX);
        char where[160];
        snprintf(where, sizeof where, "pitfall %s, %d x %d, Bq %d, Bk %d", fs_pitfall_str(pf), nq, nkv, r.tiling.Bq, r.tiling.Bk);
        for (int i = 0; i < n && i < QMAX; i++) {
            ck_assert_msg(q[i].kind == FS_Q_MISTAKE || q[i].kind == FS_Q_SKIPS || q[i].kind == FS_Q_TILE_CLASS || q[i].kind == FS_Q_LIVE,
                          "%s: a pitfall run alone asks %s, the mistake's own number as the algorithm's (seed %llu)", where,
                          fs_qkind_str(q[i].kind), (unsigned long long)seed);
            if (q[i].kind != FS_Q_MISTAKE) continue;
            asked[pf]++;
            const fs_event *e = &t.ev[q[i].step];
            const double *sr = fs_trace_at(&t, e->s_row), *oo = fs_trace_at(&t, e->o_old);
            ck_assert(e->kind == FS_EV_ROW && sr && oo);
            /* the block's statistics from its scores, not from the record */
            double mb = -INFINITY, lb = 0, lg = 0;
            for (int32_t j = 0; j < e->n_s; j++) mb = fmax(mb, sr[j]);
            const double mn = fmax(e->m_old, mb);
            for (int32_t j = 0; j < e->n_s; j++)
                if (sr[j] > -INFINITY) lb += exp(sr[j] - mb), lg += exp(sr[j] - mn);
            const double al = exp(e->m_old - mn), be = exp(mb - mn);
            double want;
            switch (pf) {
            case FS_PITFALL_NO_RESCALE:
                if (ident) {
                    double so = 0;
                    for (int32_t c = 0; c < e->n_o; c++) so += oo[c];
                    want = so + lb / (al * e->l_old + be * lb);
                } else {
                    double pv = 0;
                    for (int32_t j = 0; j < e->n_s; j++)
                        if (sr[j] > -INFINITY) pv += exp(sr[j] - mb) * W[(e->c0 + j) * nkv];
                    want = oo[0] + pv / (al * e->l_old + be * lb);
                }
                break;
            case FS_PITFALL_BLOCK_MAX_NO_BETA: want = al * e->l_old + lb; break;
            case FS_PITFALL_GLOBAL_MAX_NO_BETA:
                want = al * e->l_old + lg;
                ck_assert_msg(fabs(want - (al * e->l_old + be * lb)) <= 1e-12 * want, "%s: not exact", where);
                break;
            default:   /* a block that hides every key: NaN unless 001's fix meets a row that saw a key */
                ck_assert_msg(e->visible == 0, "%s: asked at a row that sees a key", where);
                want = pf == FS_PITFALL_MASKED_DOC_FIX && e->m_old > -INFINITY ? e->l_old : NAN;
                break;
            }
            if (isnan(want)) {
                ck_assert_msg(isnan(q[i].answer), "%s: answer %.17g, NaN expected (seed %llu)", where, q[i].answer,
                              (unsigned long long)seed);
                nan_asked++;
            } else
                ck_assert_msg(fabs(q[i].answer - want) <= 1e-12 * fmax(1, fabs(want)), "%s: answer %.17g, the formula %.17g (seed %llu)",
                              where, q[i].answer, want, (unsigned long long)seed);
        }
        check_questions(NULL, q, n < QMAX ? n : QMAX, where, seed);
        fs_trace_free(&t);
        fs_result_free(&res);
    }
    for (int p = 1; p < FS_PITFALL_COUNT; p++)
        ck_assert_msg(asked[p] > 0, "pitfall %s never asked (seed %llu)", fs_pitfall_str((fs_pitfall)p), (unsigned long long)seed);
    ck_assert_msg(nan_asked > 0, "no NaN asked (seed %llu)", (unsigned long long)seed);
}
END_TEST


/* A lesson that runs and names its claims' kind (quiz:) asks its claims beside the first of its
 * trace's questions, in the lesson and in its section's quiz: the roofline lesson had asked only
 * the running maximum and the rescale factors of its small run, never a roofline. */
START_TEST(test_claims_as_subject)
{
    fs_loc_error err;
    fs_lesson *l;
    fs_question q[16];
    /* the roofline lesson: three of its run's questions, then five of its claims, of more than
     * one form (its claims end with five attainable rates, min(990, I * 3.35), in a row), and a
     * power of ten read as part of its number (990e12 / 3.35e12 is arithmetic a student can do) */
    ck_assert_msg(fs_lesson_load("lessons/beyond_02_roofline.lesson", &l, &err), "%s", err.msg);
    int n = fs_lesson_questions(l, 4, q, 16), claims = 0, mins = 0, tens = 0;
    for (int i = 0; i < n; i++) {
        claims += q[i].kind == FS_Q_CLAIM;
        mins += q[i].kind == FS_Q_CLAIM && strstr(q[i].prompt, "min(990") != NULL;
        tens += q[i].kind == FS_Q_CLAIM && strstr(q[i].prompt, "e12") != NULL;
    }
    ck_assert_msg(n == 8 && claims == 5, "the roofline lesson asks %d questions, %d of them claims", n, claims);
    ck_assert_msg(q[0].kind != FS_Q_CLAIM && q[2].kind != FS_Q_CLAIM && q[3].kind == FS_Q_CLAIM, "its run's questions first");
    ck_assert_msg(mins <= 2, "%d of its claim questions are min(990, I * 3.35)", mins);
    ck_assert_msg(tens >= 1, "no claim with a power of ten asked");
    fs_lesson_free(l);
    /* a lesson that runs and names no kind asks its run only */
    ck_assert_msg(fs_lesson_load("lessons/beyond_03_loop_orders.lesson", &l, &err), "%s", err.msg);
    n = fs_lesson_questions(l, 4, q, 16);
    ck_assert(n >= 3);
    for (int i = 0; i < n; i++) ck_assert_msg(q[i].kind != FS_Q_CLAIM, "beyond_03 asks a claim: %s", q[i].prompt);
    fs_lesson_free(l);

    /* the section's quiz: the two lessons are asked their subject on fresh sizes, never their
     * run's softmax, and the answers follow from the prompts */
    fs_course c;
    ck_assert_msg(fs_course_load("lessons", &c, &err), "%s", err.msg);
    const int sec = c.section_of[fs_course_find(&c, "beyond_02_roofline")];
    ck_assert_int_eq(sec, c.section_of[fs_course_find(&c, "beyond_01_io_complexity")]);
    const uint64_t seed = fs_test_seed();
    fs_quiz *a = malloc(sizeof *a);
    ck_assert(a);
    int roof = 0, io = 0, forms = 0;
    /* the crossover form comes up in about one quiz in eight (the IO lesson in half of them, that
     * form in a quarter of those): 40 quizzes miss it about once in 170 runs, so the search goes on
     * (up to 400) until every form has come up */
    uint64_t k = 0;
    for (; k < 400 && (k < 40 || forms != 7); k++) {
        ck_assert(fs_quiz_make("lessons", &c, sec, seed + k, a, &err));
        for (int i = 0; i < a->n; i++) {
            /* a memory question is named after a lesson of the section that teaches its form: the
             * ridge after the hardware lesson (its FLOPs a byte), a KV cache's size never after the
             * memory wall, which has none */
            if (strstr(a->q[i].prompt, "ridge point"))
                ck_assert_msg(!strcmp(a->lesson[i], "001_05_hardware"), "seed %llu: a ridge question from %s",
                              (unsigned long long)(seed + k), a->lesson[i]);
            if (strstr(a->q[i].prompt, "A KV cache keeps"))
                ck_assert_msg(strcmp(a->lesson[i], "001_01_memory_wall") && strcmp(a->lesson[i], "001_05_hardware"),
                              "seed %llu: a KV cache question from %s", (unsigned long long)(seed + k), a->lesson[i]);
            const bool r = !strcmp(a->lesson[i], "beyond_02_roofline"), o = !strcmp(a->lesson[i], "beyond_01_io_complexity");
            if (!r && !o) continue;
            roof += r, io += o;
            ck_assert_msg(a->q[i].kind == FS_Q_CLAIM, "seed %llu: %s asks a %s question", (unsigned long long)(seed + k),
                          a->lesson[i], fs_qkind_str(a->q[i].kind));
            int bq, bk, d;
            double peak, bw, I;
            if (sscanf(a->q[i].prompt, "A tile of Bq = %d queries meets Bk = %d keys of head size d = %d", &bq, &bk, &d) == 3) {
                ck_assert_msg(a->q[i].answer == bq, "%s: %g", a->q[i].prompt, a->q[i].answer);
                forms |= 1;
            } else if (sscanf(a->q[i].prompt, "On the roofline of an %*[^(](%lf TFLOP/s of float16 products, %lf TB/s of memory), "
                              "what rate in TFLOP/s can a kernel that does %lf", &peak, &bw, &I) == 3) {
                ck_assert_msg(fabs(a->q[i].answer - fmin(peak, I * bw)) < 1e-9, "%s: %g", a->q[i].prompt, a->q[i].answer);
                forms |= 2;
            } else if (sscanf(a->q[i].prompt, "A tiled pass moves 2·N·d + 2·N²·d / B numbers to and from HBM (square tiles of "
                              "B), standard attention 4·N·d + 4·N². At d = %d", &d) == 1) {
                ck_assert_msg(a->q[i].answer == d / 2, "%s: %g", a->q[i].prompt, a->q[i].answer);
                forms |= 4;
            }
        }
    }
    ck_assert_msg(roof >= 4 && io >= 4, "in %llu quizzes the roofline lesson was asked %d times, the IO lesson %d (seed %llu)",
                  (unsigned long long)k, roof, io, (unsigned long long)seed);
    ck_assert_msg(forms == 7, "not every checked form was asked in %llu quizzes (%d, seed %llu)", (unsigned long long)k, forms,
                  (unsigned long long)seed);
    free(a);
    fs_course_free(&c);
}
END_TEST

/* Every section's quiz: five questions, the same for one seed and new for another, each answer
 * judged right and each question naming a lesson of the section. */
START_TEST(test_quiz_every_section)
{
    fs_course c;
    fs_loc_error err;
    ck_assert_msg(fs_course_load("lessons", &c, &err), "%s", err.msg);
    uint64_t seed = fs_test_seed();
    fs_quiz *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    ck_assert(a && b);
    for (int s = 0; s < c.n_sections; s++) {
        ck_assert_msg(fs_quiz_make("lessons", &c, s, seed, a, &err), "section %d: %s", s + 1, err.msg);
        ck_assert_int_eq(a->n, FS_QUIZ_QUESTIONS);
        ck_assert_str_eq(a->section, c.sections[s]);
        char where[160];
        snprintf(where, sizeof where, "quiz of section %d", s + 1);
        check_questions(NULL, a->q, a->n, where, seed);
        for (int i = 0; i < a->n; i++) {
            ck_assert_int_eq(a->q[i].step, -1);
            /* no question gives another's answer away: an earlier one's prompt or reason, or a later
             * one's prompt, printing a decimal answer (a merge's ℓ_a, then split 0's ℓ) */
            char ans[112];
            fs_question_answer(&a->q[i], ans, sizeof ans);
            if (a->q[i].numeric && a->q[i].digits > 0 && strlen(ans) >= 4 && strchr(ans, '.') && strcmp(ans, "1.0000") &&
                strcmp(ans, "0.0000"))
                for (int k = 0; k < a->n; k++) {
                    if (k == i) continue;
                    const char *texts[2] = {a->q[k].prompt, k < i ? a->q[k].why : ""};
                    for (int x = 0; x < 2; x++)
                        for (const char *f = strstr(texts[x], ans); f; f = strstr(f + 1, ans)) {
                            const char before = f == texts[x] ? ' ' : f[-1], after = f[strlen(ans)];
                            ck_assert_msg(isdigit((unsigned char)before) || before == '.' || isdigit((unsigned char)after),
                                          "%s (seed %llu): question %d's answer %s is in question %d's %s: %s", where,
                                          (unsigned long long)seed, i + 1, ans, k + 1, x ? "reason" : "prompt", texts[x]);
                        }
                }
            int at = fs_course_find(&c, a->lesson[i]);
            ck_assert_msg(at >= 0 && c.section_of[at] == s, "%s: question %d names %s, not a lesson of the section", where, i,
                          a->lesson[i]);
        }
        ck_assert(fs_quiz_make("lessons", &c, s, seed, b, &err));
        for (int i = 0; i < a->n; i++) ck_assert_str_eq(a->q[i].prompt, b->q[i].prompt);
        ck_assert(fs_quiz_make("lessons", &c, s, seed + 1, b, &err));
        bool differ = false;
        for (int i = 0; i < a->n; i++) differ |= strcmp(a->q[i].prompt, b->q[i].prompt) != 0;
        ck_assert_msg(differ, "%s: seeds %llu and %llu give the same quiz", where, (unsigned long long)seed,
                      (unsigned long long)seed + 1);
    }
    /* the ring's shard question asks of a device and a step the seed draws (it had asked device 0
     * at step 0 on every seed), and its answer follows its rule, (p − t) mod P */
    int ring = -1, seen[64][64] = {{0}}, distinct = 0, asked = 0;
    for (int s = 0; s < c.n_sections; s++)
        if (strstr(c.sections[s], "ring")) ring = s;
    ck_assert_msg(ring >= 0, "no ring section in the course");
    for (uint64_t k = 0; k < 24; k++) {
        ck_assert(fs_quiz_make("lessons", &c, ring, seed + k, a, &err));
        for (int i = 0; i < a->n; i++) {
            if (a->q[i].kind != FS_Q_SHARD) continue;
            int P, t0, p, held, t1;
            ck_assert_msg(sscanf(a->q[i].prompt, "%d devices in a ring: at step 0 device p holds KV shard p, and after each step "
                                 "every device passes its shard on to device p + 1. At ring step %d device %d holds shard %d: "
                                 "which shard will it hold at ring step %d?", &P, &t0, &p, &held, &t1) == 5,
                          "%s", a->q[i].prompt);
            ck_assert(P > 1 && P <= 64 && p >= 0 && p < P && t1 == t0 + 1 && held == ((p - t0) % P + P) % P);
            ck_assert_msg(a->q[i].answer == ((p - t1) % P + P) % P, "%s: answer %g", a->q[i].prompt, a->q[i].answer);
            distinct += !seen[p][t0]++;
            asked++;
        }
    }
    ck_assert_msg(asked >= 2 && distinct > 1, "the ring quiz asked its shard question %d times, of one device and step only",
                  asked);
    /* a section's quiz asks about its own subject: FP8's roundings, dropout's ℓ_blk, the paged
     * cache's pages, the ring's load and its transfers (it had asked S's size in the paged cache's
     * quiz and the running maximum in FP8's) */
    static const struct { const char *title; const char *asks; } own[] = {
        {"FP8", "three e4m3 roundings"}, {"Dropout", "a dropout's ℓ_blk"}, {"paged", "pages four times in five"},
        {"ring", "a step's work and a transfer"}, {"Mistakes", "what three mistakes compute"},
        {"Decoding", "a kernel's division of work"}, {"Masks", "a capped score and a query head's KV head"}};
    for (size_t o = 0; o < sizeof own / sizeof *own; o++) {
        int s = -1;
        for (int x = 0; x < c.n_sections; x++)
            if (strstr(c.sections[x], own[o].title)) s = x;
        ck_assert_msg(s >= 0, "no section titled with %s", own[o].title);
        for (uint64_t k = 0; k < 6; k++) {
            ck_assert(fs_quiz_make("lessons", &c, s, seed + k, a, &err));
            int fp8 = 0, drop = 0, pages = 0, work = 0, hop = 0, wrong = 0, kernel = 0, cap = 0, kvh = 0;
            for (int i = 0; i < a->n; i++) {
                fp8 += a->q[i].kind == FS_Q_QUANT || a->q[i].kind == FS_Q_P8 || a->q[i].kind == FS_Q_E4M3 ||
                       strstr(a->q[i].prompt, "an entry come back as 0") != NULL;
                if (a->q[i].kind == FS_Q_E4M3) {   /* the number before rounding, typed, is not the answer */
                    char typed[48], fb[1024], shown[48];
                    snprintf(typed, sizeof typed, "%.3g", a->q[i].before);
                    /* (unless the rounding keeps it: 0.1 / (1.4 / 448) is 32, on the grid) */
                    const bool kept_it = fabs(strtod(fs_question_answer(&a->q[i], shown, sizeof shown), NULL) - a->q[i].before) <=
                                         1e-12 * fabs(a->q[i].before);
                    ck_assert_msg(a->q[i].has_before && fs_question_judge(&a->q[i], typed, fb, sizeof fb) == kept_it,
                                  "seed %llu: %s: %s judged %s", (unsigned long long)(seed + k), a->q[i].prompt, typed,
                                  kept_it ? "wrong" : "right");
                    ck_assert_msg(fs_question_judge(&a->q[i], fs_question_answer(&a->q[i], typed, sizeof typed), fb, sizeof fb),
                                  "seed %llu: %s", (unsigned long long)(seed + k), fb);
                }
                drop += a->q[i].kind == FS_Q_DROP;
                pages += !strncmp(a->q[i].prompt, "Pages hold ", 11);
                work += a->q[i].kind == FS_Q_RING_WORK;
                hop += !strncmp(a->q[i].prompt, "Ring attention", 14);
                wrong += a->q[i].kind == FS_Q_MISTAKE;
                cap += a->q[i].kind == FS_Q_SOFTCAP;
                kvh += a->q[i].kind == FS_Q_KV_HEAD;
                /* 003_05's kernel arithmetic (its lane question's answer by its rule, lane + 32 i) */
                int hd, lane, el;
                if (sscanf(a->q[i].prompt, "A SIMD group (32 lanes) shares one row of V of head_dim %d: each lane holds %*d / 32 = "
                           "%*d of its elements, strided by 32 (lane l holds elements l, l + 32, …). Which element of the row "
                           "(counting from 0) is lane %d's element %d?", &hd, &lane, &el) == 3) {
                    ck_assert_msg(a->q[i].answer == lane + 32 * el && lane < 32 && el < hd / 32, "%s: %g", a->q[i].prompt,
                                  a->q[i].answer);
                    kernel++;
                }
                kernel += !strncmp(a->q[i].prompt, "A prefill threadgroup", 21) || !strncmp(a->q[i].prompt, "A prefill of", 12) ||
                          !strncmp(a->q[i].prompt, "A decode kernel whose", 21);
            }
            const bool ok = o == 0 ? fp8 >= 3 : o == 1 ? drop >= 1 : o == 2 ? pages >= 4 : o == 3 ? work >= 1 && hop >= 1
                          : o == 4 ? wrong >= 3 : o == 5 ? kernel >= 1 : cap >= 1 && kvh >= 1;
            ck_assert_msg(ok, "the quiz of \"%s\" (seed %llu) does not ask %s", c.sections[s], (unsigned long long)(seed + k),
                          own[o].asks);
        }
    }
    /* the FP8 quiz asks, besides roundings, what one scale for a whole tensor loses: the magnitude
     * below which an entry comes back as 0, σ / 1024 (a quiz of roundings alone taught no idea) */
    int fp8s = -1, lost = 0;
    for (int x = 0; x < c.n_sections; x++)
        if (strstr(c.sections[x], "FP8")) fp8s = x;
    ck_assert(fp8s >= 0);
    for (uint64_t k = 0; k < 40 && lost < 2; k++) {
        ck_assert(fs_quiz_make("lessons", &c, fp8s, seed + k, a, &err));
        for (int i = 0; i < a->n; i++) {
            const char *at = strstr(a->q[i].prompt, "amax = ");
            if (!strstr(a->q[i].prompt, "an entry come back as 0") || !at) continue;
            const double amax = strtod(at + 7, NULL);
            ck_assert_msg(fabs(a->q[i].answer - amax / 448 / 1024) <= 1e-12 * a->q[i].answer, "seed %llu: %s: %g",
                          (unsigned long long)(seed + k), a->q[i].prompt, a->q[i].answer);
            char typed[48], fb[1024];
            snprintf(typed, sizeof typed, "%.3g", a->q[i].answer);
            ck_assert_msg(fs_question_judge(&a->q[i], typed, fb, sizeof fb), "%s", fb);
            snprintf(typed, sizeof typed, "%.3g", a->q[i].answer * 2);   /* 2^-9 · σ, the step itself: wrong */
            ck_assert_msg(!fs_question_judge(&a->q[i], typed, fb, sizeof fb), "%s", fb);
            lost++;
        }
    }
    ck_assert_msg(lost >= 2, "the FP8 quiz asked what one scale loses %d times in 40 quizzes (seed %llu)", lost,
                  (unsigned long long)seed);
    /* 001_11 teaches pitfall 1 where the maximum stays put: its quiz questions keep that (the
     * block's maximum at most the running one, as its prompt prints them) */
    int wrongs = -1, kept = 0;
    for (int x = 0; x < c.n_sections; x++)
        if (strstr(c.sections[x], "Mistakes")) wrongs = x;
    ck_assert(wrongs >= 0);
    /* at least 8 quizzes, and on until one has asked it: a quiz of five draws it about one time
     * in three, so 8 missed it for some seeds (1796301289595628) */
    uint64_t drawn = 0;
    for (; drawn < 80 && (drawn < 8 || kept == 0); drawn++) {
        const uint64_t k = drawn;
        ck_assert(fs_quiz_make("lessons", &c, wrongs, seed + k, a, &err));
        for (int i = 0; i < a->n; i++) {
            if (a->q[i].kind != FS_Q_MISTAKE || !strstr(a->lesson[i], "same_max")) continue;
            const char *b4 = strstr(a->q[i].prompt, "Before: m = "), *mb = strstr(a->q[i].prompt, "m_blk = ");
            ck_assert_msg(b4 && mb, "%s", a->q[i].prompt);
            ck_assert_msg(strtod(mb + 8, NULL) <= strtod(b4 + 12, NULL), "seed %llu: the maximum moves: %s",
                          (unsigned long long)(seed + k), a->q[i].prompt);
            kept++;
        }
    }
    ck_assert_msg(kept > 0, "no same-maximum mistake asked in %llu quizzes (seed %llu)", (unsigned long long)drawn,
                  (unsigned long long)seed);
    /* a pair's class under a mask does not depend on the numbers: a quiz asks it at a pair the seed
     * draws, not always the first (Q tile 0 against KV tile 0, partial under the causal mask) */
    /* likewise the rows alive at once, which depend on the shape alone: a plain tiled lesson's quiz
     * draws its tiles, so that the question is not the same every time (its answer may be: with the
     * KV tiles outside every row is alive, whatever the tiles) */
    for (int x = 0; x < c.n_sections; x++) {
        int classes = 0, other = 0, lives = 0;
        char live0[600] = "";
        bool live_other = false;
        char first[160] = "";
        for (uint64_t k = 0; k < 8; k++) {
            ck_assert(fs_quiz_make("lessons", &c, x, seed + k, a, &err));
            bool any = false;   /* a section whose first two quizzes ask no tile class or live rows is left */
            for (int i = 0; i < a->n; i++) {
                any |= a->q[i].kind == FS_Q_TILE_CLASS || a->q[i].kind == FS_Q_LIVE;
                if (a->q[i].kind != FS_Q_LIVE) continue;
                if (!lives++) snprintf(live0, sizeof live0, "%s", a->q[i].prompt);
                else live_other |= strcmp(a->q[i].prompt, live0) != 0;
            }
            if (k == 1 && !any && !classes && !lives) break;
            for (int i = 0; i < a->n; i++) {
                if (a->q[i].kind != FS_Q_TILE_CLASS) continue;
                /* the pair: "Q tile 2 ... meets KV tile 1", the parenthesized ranges left out (cut
                 * at the first parenthesis, it named the Q tile alone, and a lesson of three Q tiles
                 * asked of one of them eight times in a row once in about sixty seeds) */
                char pair[160];
                size_t o = 0;
                int depth = 0;
                for (const char *p = a->q[i].prompt; *p && *p != '?' && o + 1 < sizeof pair; p++) {
                    depth += *p == '(';
                    if (!depth) pair[o++] = *p;
                    depth -= *p == ')' && depth > 0;
                }
                pair[o] = 0;
                if (!classes++) snprintf(first, sizeof first, "%s", pair);
                else other += strcmp(pair, first) != 0;
            }
        }
        ck_assert_msg(classes < 3 || other > 0, "section %d asks its tile class %d times, always of %s (seed %llu)", x + 1,
                      classes, first, (unsigned long long)seed);
        ck_assert_msg(lives < 4 || live_other, "section %d asks its live rows %d times, always as %s (seed %llu)", x + 1, lives,
                      live0, (unsigned long long)seed);
    }
    ck_assert(!fs_quiz_make("lessons", &c, c.n_sections, seed, a, &err));
    free(a);
    free(b);
    fs_course_free(&c);
}
END_TEST

/* The quizzes' state file, shared by `flashstep quiz` and the window: its path from the
 * environment, each finished quiz appended (its folder made), a section's best and last score
 * read back, lines of other sections and lines that do not parse skipped. */
START_TEST(test_quiz_state_file)
{
    uint64_t seed = fs_test_seed();
    char dir[256], path[512], got[600];
    snprintf(dir, sizeof dir, "/tmp/fs_quiz_state_%llu", (unsigned long long)seed);
    snprintf(path, sizeof path, "%s/a/b/quiz.tsv", dir);
    setenv("FLASHSTEP_STATE", path, 1);
    ck_assert(fs_quiz_state_path(got, sizeof got));
    ck_assert_str_eq(got, path);
    unsetenv("FLASHSTEP_STATE");
    setenv("XDG_STATE_HOME", dir, 1);
    ck_assert(fs_quiz_state_path(got, sizeof got));
    ck_assert(strstr(got, dir) == got && strstr(got, "/flashstep/quiz.tsv"));
    ck_assert(!fs_quiz_state_path(got, 8));   /* too long for the buffer: no path */
    int best, last, of;
    fs_quiz_scores(path, "Masks", &best, &last, &of);   /* no file yet */
    ck_assert_int_eq(best, -1);
    ck_assert_int_eq(last, -1);
    int a = (int)(seed % 6), b = (int)((seed / 7) % 6);
    ck_assert(fs_quiz_keep(path, "Masks", a, 5, seed));
    ck_assert(fs_quiz_keep(path, "Other", 5, 5, 1));
    FILE *f = fopen(path, "a");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "Masks\tnot a number\nMasks\t9\t5\t0\tx\n");   /* skipped: no score, more than 5 of 5 */
    fclose(f);
    ck_assert(fs_quiz_keep(path, "Masks", b, 5, seed + 1));
    fs_quiz_scores(path, "Masks", &best, &last, &of);
    FS_ASSERT_SEED(best == (a > b ? a : b) && last == b && of == 5, seed, "best %d last %d of %d after %d, %d", best, last, of, a, b);
    fs_quiz_scores(path, "Mask", &best, &last, &of);   /* the whole title, not a prefix */
    ck_assert_int_eq(best, -1);
    remove(path);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/a/b", dir); rmdir(sub);
    snprintf(sub, sizeof sub, "%s/a", dir); rmdir(sub);
    rmdir(dir);
    unsetenv("XDG_STATE_HOME");
}
END_TEST

Suite *question_suite(void)
{
    Suite *s = suite_create("question");
    TCase *tc = tcase_create("question");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_every_lesson_asks);
    tcase_add_test(tc, test_judge_rules);
    tcase_add_test(tc, test_random_problems);
    tcase_add_test(tc, test_mistakes);
    tcase_add_test(tc, test_quiz_every_section);
    tcase_add_test(tc, test_claims_as_subject);
    tcase_add_test(tc, test_quiz_state_file);
    suite_add_tcase(s, tc);
    return s;
}

/* quiz.c: a section's quiz — five questions from its lessons, on fresh random problems.
 *
 * Each lesson of the section that runs an algorithm is run again on a problem of the same shape
 * (the same sizes, heads, mask, tiles, form, order and recipe) whose matrices are drawn from the
 * quiz's seed, so the answers cannot be remembered from the lesson; the question engine
 * (question.c) asks about that run. A section whose lessons only make claims (the memory
 * arithmetic) gets questions on the same formulas with fresh sizes. Each question names the
 * lesson to revisit when it is answered wrongly.
 *
 * The scores are kept in one state file that the terminal's `flashstep quiz` and the window share
 * (fs_quiz_state_path, fs_quiz_scores, fs_quiz_keep; the page keeps its own in the browser).
 */
#include "lesson_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine/lowp.h"
#include "engine/memory.h"

/* the quiz's random source: splitmix64 (fs_splitmix64), so that one seed gives one quiz everywhere */
static uint64_t next(uint64_t *s) { return fs_splitmix64(s); }

static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(next(s) >> 11) * 0x1.0p-53;
}

/* n fresh values in [lo, hi), rounded to two decimals so that prompts stay readable; NULL when
 * out of memory. */
static double *fresh(uint64_t *s, size_t n, double lo, double hi)
{
    double *x = malloc(sizeof *x * (n ? n : 1));
    for (size_t i = 0; x && i < n; i++) x[i] = round(uniform(s, lo, hi) * 100) / 100;
    return x;
}

/* V is the identity (scores given without values): kept, since O = P is the point there. */
static bool v_is_identity(const fs_attn *a)
{
    if (!a->V || a->d_v != a->n_kv || a->n_kv_heads != 1) return false;
    for (int32_t i = 0; i < a->n_kv; i++)
        for (int32_t j = 0; j < a->d_v; j++)
            if (a->V[(size_t)i * a->d_v + j] != (i == j)) return false;
    return true;
}

#define LESSON_MAX 12   /* questions drawn from one lesson's fresh run */

/* The questions of one lesson's run on a fresh problem of its shape; returns how many (0 when
 * the lesson runs nothing worth asking). */
static int fresh_questions(const fs_lesson *l, uint64_t *seed, fs_question *q, int max)
{
    if (!l->has_run || l->run.algo == FS_ALGO_REFERENCE) return 0;
    fs_run r = l->run;
    fs_attn *a = &r.attn;
    /* a pitfall lesson's quiz asks what the correct algorithm does on the same shape: the
     * numbers a student must be able to tell the mistake from */
    r.tiling.pitfall = FS_PITFALL_NONE;
    double *mem[6] = {NULL};
    bool ok = true;
    if (r.algo == FS_ALGO_SOFTMAX) {
        ok = r.z && (r.z = mem[0] = fresh(seed, (size_t)r.n_z, -2, 6)) != NULL;
    } else {
        const size_t nq = (size_t)a->n_q_heads * a->n_q, nk = (size_t)a->n_kv_heads * a->n_kv;
        if (a->Q) ok &= (a->Q = mem[0] = fresh(seed, nq * a->d, -1, 1)) != NULL;
        if (a->K) ok &= (a->K = mem[1] = fresh(seed, nk * a->d, -1, 1)) != NULL;
        if (a->V && !v_is_identity(a)) ok &= (a->V = mem[2] = fresh(seed, nk * a->d_v, -1, 1)) != NULL;
        if (a->S) ok &= (a->S = mem[3] = fresh(seed, nq * a->n_kv, -2, 2)) != NULL;
        if (r.dO) ok &= (r.dO = mem[4] = fresh(seed, nq * a->d_v, -1, 1)) != NULL;
    }
    int n = 0;
    if (ok) {
        fs_result res;
        fs_trace t;
        fs_trace_init(&t);
        if (fs_run_exec(&r, &res, &t) == FS_OK) n = fs_run_questions(&r, &t, 4, q, max);
        if (n > max) n = max;
        /* the ring's question is about its first moment, device 0 at step 0, whatever the
         * inputs: a quiz asks it of a device and a step the seed draws */
        for (int i = 0; i < n; i++)
            if (q[i].kind == FS_Q_SHARD && r.ring.P >= 2) {
                const int32_t P = r.ring.P, p = (int32_t)(next(seed) % (uint64_t)P), t0 = (int32_t)(next(seed) % (uint64_t)(P - 1));
                fs_question_shard(P, p, t0, &q[i]);
            }
        fs_trace_free(&t);
        fs_result_free(&res);
    }
    for (int i = 0; i < 6; i++) free(mem[i]);
    return n;
}

/* Fresh questions on the memory arithmetic of the "why tile" lessons: the score matrix S of one
 * layer, and a KV cache, for sizes drawn from the seed. */
static void memory_question(uint64_t *seed, int which, fs_question *q)
{
    memset(q, 0, sizeof *q);
    q->step = -1;
    q->check = -1;
    q->numeric = true;
    q->digits = 4;
    q->kind = FS_Q_CLAIM;
    static const int ns[] = {1024, 2048, 4096, 8192, 16384, 32768};
    static const int heads[] = {8, 16, 32, 64};
    static const int bytes[] = {2, 4};
    const int n = ns[next(seed) % 6], h = heads[next(seed) % 4], b = bytes[next(seed) % 2];
    const char *type = b == 2 ? "float16" : "float32";
    if (which % 2 == 0) {
        /* n × n scores per head, h heads */
        const double mib = (double)n * n * h * b / (1024.0 * 1024.0);
        snprintf(q->prompt, sizeof q->prompt, "Standard attention stores the score matrix S: n × n values per head. With n = %d "
                 "tokens, %d heads and %s (%d bytes a value), how many MiB (1 MiB = 2^20 bytes) is S for one layer?", n, h,
                 type, b);
        q->answer = mib;
        snprintf(q->why, sizeof q->why, "%d × %d × %d heads × %d bytes = %.0f bytes = %.6g MiB: it grows with n², which is "
                 "why FlashAttention never stores S.", n, n, h, b, (double)n * n * h * b, mib);
    } else {
        /* the KV cache of one layer: K and V, n positions, h KV heads of d = 128 */
        const int d = 128;
        const double mib = 2.0 * n * h * d * b / (1024.0 * 1024.0);
        snprintf(q->prompt, sizeof q->prompt, "A KV cache keeps K and V for every position: %d positions, %d KV heads of "
                 "d = %d, in %s (%d bytes a value). How many MiB (2^20 bytes) is it for one layer?", n, h, d, type, b);
        q->answer = mib;
        snprintf(q->why, sizeof q->why, "2 (K and V) × %d × %d × %d × %d bytes = %.0f bytes = %.6g MiB: it grows with n, not "
                 "n², and decoding reads all of it for every new token.", n, h, d, b, 2.0 * n * h * d * b, mib);
    }
}

bool fs_quiz_make(const char *dir, const fs_course *c, int section, uint64_t seed, fs_quiz *quiz, fs_loc_error *err)
{
    memset(quiz, 0, sizeof *quiz);
    quiz->seed = seed;
    if (section < 0 || section >= c->n_sections) {
        if (err) {
            memset(err, 0, sizeof *err);
            snprintf(err->msg, sizeof err->msg, "no section %d (the course has %d)", section + 1, c->n_sections);
        }
        return false;
    }
    snprintf(quiz->section, sizeof quiz->section, "%s", c->sections[section]);
    /* every lesson of the section, its fresh questions */
    int nl = 0;
    for (int i = 0; i < c->n; i++) nl += c->section_of[i] == section;
    fs_question(*pool)[LESSON_MAX] = calloc((size_t)(nl ? nl : 1), sizeof *pool);
    int *count = calloc((size_t)(nl ? nl : 1), sizeof *count), *used = calloc((size_t)(nl ? nl : 1), sizeof *used);
    const char **names = calloc((size_t)(nl ? nl : 1), sizeof *names);
    if (!pool || !count || !used || !names) {
        free(pool), free(count), free(used), free(names);
        if (err) snprintf(err->msg, sizeof err->msg, "out of memory");
        return false;
    }
    uint64_t s = seed;
    int k = 0;
    bool ok = true;
    for (int i = 0; i < c->n && ok; i++) {
        if (c->section_of[i] != section) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.lesson", dir, c->names[i]);
        fs_lesson *l;
        if (!fs_lesson_load(path, &l, err)) { ok = false; break; }
        names[k] = c->names[i];
        count[k] = fresh_questions(l, &s, pool[k], LESSON_MAX);
        fs_lesson_free(l);
        k++;
    }
    if (ok) {
        /* round robin over the lessons, from a lesson the seed picks, each time the next question
         * of a kind the quiz has not asked yet when the lesson has one */
        bool kind_used[FS_Q_COUNT] = {false};
        int start = nl ? (int)(next(&s) % (uint64_t)nl) : 0, idle = 0;
        for (int r = 0; quiz->n < FS_QUIZ_QUESTIONS && nl > 0 && idle < nl; r++) {
            int j = (start + r) % nl;
            if (used[j] >= count[j]) { idle++; continue; }
            idle = 0;
            int pick = used[j];
            for (int x = used[j]; x < count[j]; x++)
                if (!kind_used[pool[j][x].kind]) { pick = x; break; }
            fs_question t = pool[j][pick];
            pool[j][pick] = pool[j][used[j]];
            pool[j][used[j]++] = t;
            kind_used[t.kind] = true;
            t.step = -1;   /* a fresh problem: no lesson step shows this very number */
            quiz->q[quiz->n] = t;
            snprintf(quiz->lesson[quiz->n], sizeof quiz->lesson[0], "%s", names[j]);
            quiz->n++;
        }
        /* a section of claims only: the memory arithmetic on fresh sizes */
        for (int w = 0; quiz->n < FS_QUIZ_QUESTIONS; w++) {
            memory_question(&s, w, &quiz->q[quiz->n]);
            snprintf(quiz->lesson[quiz->n], sizeof quiz->lesson[0], "%s", nl ? names[0] : "");
            quiz->n++;
        }
    }
    free(pool);
    free(count);
    free(used);
    free(names);
    return ok;
}

/* ---- the state file: the scores ---- */

bool fs_quiz_state_path(char *buf, size_t n)
{
    const char *e = getenv("FLASHSTEP_STATE");
    if (e && *e) return snprintf(buf, n, "%s", e) < (int)n;
    const char *x = getenv("XDG_STATE_HOME");
    if (x && *x) return snprintf(buf, n, "%s/flashstep/quiz.tsv", x) < (int)n;
    const char *h = getenv("HOME");
    if (h && *h) return snprintf(buf, n, "%s/.local/state/flashstep/quiz.tsv", h) < (int)n;
    return false;
}

/* mkdir -p of the folder part of path (errors are left to the fopen after it). */
static void make_dirs(const char *path)
{
    char d[4096];
    if (snprintf(d, sizeof d, "%s", path) >= (int)sizeof d) return;
    char *slash = strrchr(d, '/');
    if (!slash) return;
    *slash = 0;
    for (char *p = d + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(d, 0755);
            *p = '/';
        }
    mkdir(d, 0755);
}

void fs_quiz_scores(const char *path, const char *section, int *best, int *last, int *of)
{
    *best = *last = -1;
    *of = FS_QUIZ_QUESTIONS;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        if (strcmp(line, section)) continue;
        int s, n;
        if (sscanf(tab + 1, "%d\t%d", &s, &n) != 2 || s < 0 || n <= 0 || s > n) continue;
        *last = s;
        *of = n;
        if (s > *best) *best = s;
    }
    fclose(f);
}

bool fs_quiz_keep(const char *path, const char *section, int right, int n, uint64_t seed)
{
    make_dirs(path);
    FILE *f = fopen(path, "a");
    if (!f) return false;
    time_t now = time(NULL);
    struct tm tm;
    char when[64] = "";
    if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "%s\t%d\t%d\t%llu\t%s\n", section, right, n, (unsigned long long)seed, when);
    return fclose(f) == 0;
}

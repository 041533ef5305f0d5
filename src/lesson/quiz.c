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

#include <ctype.h>
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

/* How much a kind says about what a lesson adds to the online softmax, 0 the most: a quiz asks
 * first about a section's own subject (a dropout's ℓ_blk, an e4m3 rounding, a ring step's work),
 * then about the machinery it runs on (merges, the backward's D and dS, the mask's tiles), and
 * last the online softmax's own numbers, which every lesson's run has. */
static int rank(fs_qkind k)
{
    switch (k) {
    case FS_Q_DROP: case FS_Q_QUANT: case FS_Q_P8: case FS_Q_RING_WORK: case FS_Q_PAGE: case FS_Q_E4M3: case FS_Q_MISTAKE:
    case FS_Q_SOFTCAP: case FS_Q_KV_HEAD:
        return 0;
    case FS_Q_SHARD: case FS_Q_MERGE: case FS_Q_DS: case FS_Q_DELTA: case FS_Q_DV: return 1;
    case FS_Q_SKIPS: case FS_Q_TILE_CLASS: case FS_Q_LIVE: return 2;
    default: return 3;
    }
}

/* q's kind asked at another event of the kind q was asked at, one the seed draws (64 tries), into
 * *out; false when none took it. */
static bool ask_elsewhere(const fs_run *r, const fs_trace *t, uint64_t *seed, const fs_question *q, fs_question *out)
{
    for (int tries = 0; tries < 64; tries++) {
        const int64_t k = (int64_t)(next(seed) % (uint64_t)t->n);
        if (k != q->step && t->ev[k].kind == t->ev[q->step].kind && fs_run_question_at(r, t, k, q->kind, 4, out)) return true;
    }
    return false;
}

/* A section's own kinds (rank 0) asked again at another moment of the same fresh run, so that a
 * quiz can ask its subject more than once with other numbers. */
static int more_of_own(const fs_run *r, const fs_trace *t, uint64_t *seed, fs_question *q, int n, int max)
{
    const int had = n;
    for (int i = 0; i < had && n < max; i++)
        if (rank(q[i].kind) == 0 && q[i].step >= 0 && ask_elsewhere(r, t, seed, &q[i], &q[n])) n++;
    return n;
}

/* Whether step k of t is a row update whose running maximum stays put (α = 1). */
static bool same_max(const fs_trace *t, int64_t k)
{
    const fs_event *e = &t->ev[k];
    return e->kind == FS_EV_ROW && isfinite(e->m_old) && e->m_new == e->m_old;
}

/* A pitfall's own questions on the fresh problem r (the correct algorithm's run) made with the
 * mistake: the first moment the variant's trace asks, and one more at a row the seed draws. keep:
 * only at row updates whose maximum stays put, where the lesson's own question is (001's "bites
 * even when the maximum does not change": its point, on any problem). */
static int mistake_questions(const fs_run *r, fs_pitfall pitfall, bool keep, uint64_t *seed, fs_question *q, int max)
{
    fs_run w = *r;
    w.tiling.pitfall = pitfall;
    fs_result res;
    fs_trace t;
    fs_trace_init(&t);
    int n = 0;
    fs_question all[LESSON_MAX];
    if (max >= 2 && fs_run_exec(&w, &res, &t) == FS_OK) {
        if (keep) {
            for (int64_t k = 0; k < t.n && n == 0; k++)
                if (same_max(&t, k) && fs_run_question_at(&w, &t, k, FS_Q_MISTAKE, 4, &q[0])) n = 1;
        } else {
            const int got = fs_run_questions(&w, &t, 4, all, LESSON_MAX);
            for (int i = 0; i < got && i < LESSON_MAX && n == 0; i++)
                if (all[i].kind == FS_Q_MISTAKE) q[n++] = all[i];
        }
        if (n == 1 && ask_elsewhere(&w, &t, seed, &q[0], &q[1]) && (!keep || same_max(&t, q[1].step))) n++;
    }
    fs_trace_free(&t);
    fs_result_free(&res);
    return n;
}

/* Whether lesson l's own mistake question (on its own problem, the trace its load recorded) sits
 * where the maximum stays put. */
static bool asks_at_same_max(const fs_lesson *l)
{
    const fs_trace *t = fs_lesson_trace(l);
    fs_question all[LESSON_MAX];
    const int got = t ? fs_lesson_questions(l, 4, all, LESSON_MAX) : 0;
    for (int i = 0; i < got && i < LESSON_MAX; i++)
        if (all[i].kind == FS_Q_MISTAKE) return all[i].step >= 0 && all[i].step < t->n && same_max(t, all[i].step);
    return false;
}

/* r: lesson l's run on fresh inputs of its shape drawn from seed (the arrays in mem, freed first,
 * freed by the caller after); false when out of memory. */
static bool draw_fresh(const fs_lesson *l, uint64_t *seed, fs_run *r, double *mem[6])
{
    for (int i = 0; i < 6; i++) free(mem[i]), mem[i] = NULL;
    *r = l->run;
    r->tiling.pitfall = FS_PITFALL_NONE;
    fs_attn *a = &r->attn;
    bool ok = true;
    if (r->algo == FS_ALGO_SOFTMAX) {
        ok = r->z && (r->z = mem[0] = fresh(seed, (size_t)r->n_z, -2, 6)) != NULL;
    } else {
        const size_t nq = (size_t)a->n_q_heads * a->n_q, nk = (size_t)a->n_kv_heads * a->n_kv;
        if (a->Q) ok &= (a->Q = mem[0] = fresh(seed, nq * a->d, -1, 1)) != NULL;
        if (a->K) ok &= (a->K = mem[1] = fresh(seed, nk * a->d, -1, 1)) != NULL;
        if (a->V && !v_is_identity(a)) ok &= (a->V = mem[2] = fresh(seed, nk * a->d_v, -1, 1)) != NULL;
        /* given scores, in [-2, 2]; under a soft-cap, out to three times the cap, where it bends them */
        const double sr = a->softcap > 0 ? 3 * a->softcap : 2;
        if (a->S) ok &= (a->S = mem[3] = fresh(seed, nq * a->n_kv, -sr, sr)) != NULL;
        if (r->dO) ok &= (r->dO = mem[4] = fresh(seed, nq * a->d_v, -1, 1)) != NULL;
    }
    /* a plain tiled run's tiles drawn too, so that what depends on the shape alone (the rows alive
     * at once, the pairs a mask skips, a pair's class) is not the same in every quiz: each of Bq
     * and Bk the lesson's, half of it or twice it, kept to at least two tiles where the lesson has
     * two (not a pitfall's, dropout's or a low-precision run's, whose lessons' blocks are their
     * point); drawn among the sizes that fit, so that one that does not fit does not make the
     * lesson's own more likely */
    if (r->algo == FS_ALGO_TILED && l->run.tiling.pitfall == FS_PITFALL_NONE && !r->tiling.dropout.on && !r->lowp) {
        int32_t *tile[2] = {&r->tiling.Bq, &r->tiling.Bk};
        const int32_t len[2] = {a->n_q, a->n_kv};
        for (int x = 0; x < 2; x++) {
            const int32_t T = *tile[x], cand[2] = {T / 2, 2 * T};
            const bool two = (len[x] + T - 1) / T >= 2;
            int32_t fit[3] = {T};   /* the lesson's own, always */
            int nf = 1;
            for (int c = 0; c < 2; c++)
                if (cand[c] >= 1 && cand[c] <= len[x] && (!two || (len[x] + cand[c] - 1) / cand[c] >= 2)) fit[nf++] = cand[c];
            *tile[x] = fit[next(seed) % (uint64_t)nf];
        }
    }
    return ok;
}

/* The questions of one lesson's run on a fresh problem of its shape; returns how many (0 when
 * the lesson runs nothing worth asking). */
static int fresh_questions(const fs_lesson *l, uint64_t *seed, fs_question *q, int max)
{
    if (!l->has_run || l->run.algo == FS_ALGO_REFERENCE) return 0;
    /* a pitfall lesson's quiz asks what its mistake computes on the fresh problem (from a run of
     * the variant), then what the correct algorithm does on it: the numbers a student must be
     * able to tell the mistake from; a problem that does not show the mistake (pitfall 2 as it
     * bites needs a block whose maximum is below the running one: half the draws) is drawn again, up
     * to 32 times */
    const fs_pitfall pitfall = l->run.tiling.pitfall;
    fs_run r;
    double *mem[6] = {NULL};
    bool ok = false;
    int n = 0;
    /* pitfall 1 taught where the maximum stays put (001_11) keeps that on its fresh problems */
    const bool keep = pitfall == FS_PITFALL_NO_RESCALE && asks_at_same_max(l);
    for (int attempt = 0; attempt < 32; attempt++) {
        ok = draw_fresh(l, seed, &r, mem);
        n = ok && pitfall != FS_PITFALL_NONE ? mistake_questions(&r, pitfall, keep, seed, q, max) : 0;
        if (!ok || pitfall == FS_PITFALL_NONE || n > 0) break;
    }
    if (ok) {
        fs_result res;
        fs_trace t;
        fs_trace_init(&t);
        if (fs_run_exec(&r, &res, &t) == FS_OK) n += fs_run_questions(&r, &t, 4, q + n, max - n);
        if (n > max) n = max;
        /* the ring's question is about its first moment, device 0 at step 0, whatever the
         * inputs: a quiz asks it of a device and a step the seed draws */
        for (int i = 0; i < n; i++)
            if (q[i].kind == FS_Q_SHARD && r.ring.P >= 2) {
                const int32_t P = r.ring.P, p = (int32_t)(next(seed) % (uint64_t)P), t0 = (int32_t)(next(seed) % (uint64_t)(P - 1));
                fs_question_shard(P, p, t0, &q[i]);
            }
        /* a ring step's work, a position's block, a query head's KV head and a pair's class under a
         * mask, likewise, at a hold, a write, a head's first pair or a pair the seed draws: none
         * depends on the numbers, so the trace's first would be the same every time (the first pair
         * of a causal run is always partial); and dropout's ℓ_blk at a row the seed draws (the
         * lesson's dropout mask drops the same key of the same row in every quiz) */
        for (int i = 0; i < n; i++) {
            fs_question moved;
            if ((q[i].kind == FS_Q_RING_WORK || q[i].kind == FS_Q_PAGE || q[i].kind == FS_Q_KV_HEAD ||
                 q[i].kind == FS_Q_TILE_CLASS || q[i].kind == FS_Q_DROP) &&
                q[i].step >= 0 && ask_elsewhere(&r, &t, seed, &q[i], &moved))
                q[i] = moved;
        }
        if (n > 0 && n < max && pitfall == FS_PITFALL_NONE) n = more_of_own(&r, &t, seed, q, n, max);
        fs_trace_free(&t);
        fs_result_free(&res);
    }
    for (int i = 0; i < 6; i++) free(mem[i]);
    return n;
}

/* GPUs by their datasheets' dense float16 matrix rate and memory bandwidth (the roofline's two
 * numbers); each takes "an" ("an A100"). The H100's and H200's rate is 001's 990 TFLOP/s, the figure
 * the roofline lesson teaches (their datasheets' 989.4, rounded), so a student who remembers the
 * lesson's ridge of 296 is right. */
static const struct { const char *name; double tflops, tbs; } gpu[] = {
    {"A100", 312, 2.0}, {"H100", 990, 3.35}, {"H200", 990, 4.8}, {"RTX 4090", 165, 1.0}};

/* A claim question with a numeric answer: the fields every fresh claim shares. */
static void claim_blank(fs_question *q)
{
    memset(q, 0, sizeof *q);
    q->step = -1;
    q->check = -1;
    q->numeric = true;
    q->digits = 4;
    q->kind = FS_Q_CLAIM;
}

/* Fresh questions on the memory arithmetic of the "why tile" lessons: the score matrix S of one
 * layer, a KV cache, attention's FLOPs, a GPU's ridge point (form which % MEMORY_FORMS, in that
 * order), for sizes drawn from the seed. */
#define MEMORY_FORMS 4
static void memory_question(uint64_t *seed, int which, fs_question *q)
{
    claim_blank(q);
    static const int ns[] = {1024, 2048, 4096, 8192, 16384, 32768};
    static const int heads[] = {8, 16, 32, 64};
    static const int bytes[] = {2, 4};
    const int n = ns[next(seed) % 6], h = heads[next(seed) % 4], b = bytes[next(seed) % 2];
    const char *type = b == 2 ? "float16" : "float32";
    switch (which % MEMORY_FORMS) {
    case 0: {   /* n × n scores per head, h heads */
        const double mib = (double)n * n * h * b / (1024.0 * 1024.0);
        snprintf(q->prompt, sizeof q->prompt, "Standard attention stores the score matrix S: n × n values per head. With n = %d "
                 "tokens, %d heads and %s (%d bytes a value), how many MiB (1 MiB = 2^20 bytes) is S for one layer?", n, h,
                 type, b);
        q->answer = mib;
        snprintf(q->why, sizeof q->why, "%d × %d × %d heads × %d bytes = %.0f bytes = %.6g MiB: it grows with n², which is "
                 "why FlashAttention never stores S.", n, n, h, b, (double)n * n * h * b, mib);
        break;
    }
    case 1: {   /* the KV cache of one layer: K and V, n positions, h KV heads of d = 128 */
        const int d = 128;
        const double mib = 2.0 * n * h * d * b / (1024.0 * 1024.0);
        snprintf(q->prompt, sizeof q->prompt, "A KV cache keeps K and V for every position: %d positions, %d KV heads of "
                 "d = %d, in %s (%d bytes a value). How many MiB (2^20 bytes) is it for one layer?", n, h, d, type, b);
        q->answer = mib;
        snprintf(q->why, sizeof q->why, "2 (K and V) × %d × %d × %d × %d bytes = %.0f bytes = %.6g MiB: it grows with n, not "
                 "n², and decoding reads all of it for every new token.", n, h, d, b, 2.0 * n * h * d * b, mib);
        break;
    }
    case 2: {   /* attention's FLOPs: two products of n² d multiply-adds a head */
        static const int ds[] = {64, 128};
        const int d = ds[next(seed) % 2];
        const double g = 4.0 * n * n * d * h / 1e9;
        snprintf(q->prompt, sizeof q->prompt, "Attention computes S = Q Kᵀ and O = P V: each product is n × n × d "
                 "multiply-adds a head, 2 FLOPs each. With n = %d, d = %d and %d heads, how many GFLOP (10^9 FLOPs) is the "
                 "forward pass of one layer (no mask)?", n, d, h);
        q->answer = g;
        snprintf(q->why, sizeof q->why, "4 × n² × d × heads = 4 × %d² × %d × %d = %.8g GFLOP: the work grows with n² too, "
                 "but FlashAttention does it from tiles in SRAM, so the memory traffic does not.", n, d, h, g);
        break;
    }
    default: {   /* the ridge point: FLOPs a byte where a kernel stops being memory-bound */
        const int i = (int)(next(seed) % 4);
        const double r = gpu[i].tflops / gpu[i].tbs;
        snprintf(q->prompt, sizeof q->prompt, "An %s does %g TFLOP/s of dense float16 matrix products and reads %g TB/s from "
                 "its memory (its datasheet's figures). How many FLOPs must a kernel do for each byte it reads to be limited by arithmetic rather than "
                 "by memory (the roofline's ridge point)?", gpu[i].name, gpu[i].tflops, gpu[i].tbs);
        q->answer = r;
        snprintf(q->why, sizeof q->why, "%g × 10^12 / (%g × 10^12) = %.8g FLOPs a byte: below it a kernel waits for memory. "
                 "Standard attention's softmax reads and writes n² values for a few FLOPs each, far below; tiles kept in SRAM "
                 "raise the FLOPs a byte.", gpu[i].tflops, gpu[i].tbs, r);
        break;
    }
    }
}

/* Fresh questions on a paged KV cache (002_04): pages a sequence takes, where a position lives,
 * the pages of samples that share a prompt. */
static void pages_question(uint64_t *seed, int which, fs_question *q)
{
    claim_blank(q);
    static const int sizes[] = {8, 16, 32};
    const int P = sizes[next(seed) % 3];
    switch (which % 3) {
    case 0: {   /* pages and unfilled slots of one sequence */
        const int n = 20 + (int)(next(seed) % 500), pages = (n + P - 1) / P;
        snprintf(q->prompt, sizeof q->prompt, "Pages hold %d positions each. A sequence of %d positions: how many slots of "
                 "its pages stay empty (a slot is one position's place in a page)?", P, n);
        q->answer = pages * P - n;
        snprintf(q->why, sizeof q->why, "It takes ⌈%d / %d⌉ = %d pages, %d slots, of which %d hold positions: %d stay empty, "
                 "always fewer than one page, where a contiguous cache reserves the maximum length.", n, P, pages, pages * P,
                 n, pages * P - n);
        q->digits = 0;
        break;
    }
    case 1: {   /* where a position lives: its logical block, then the block table */
        int table[6];
        for (int i = 0; i < 6; i++) table[i] = i + 1;
        for (int i = 5; i > 0; i--) {   /* shuffled physical pages, from the seed */
            const int j = (int)(next(seed) % (uint64_t)(i + 1)), t = table[i];
            table[i] = table[j], table[j] = t;
        }
        for (int i = 0; i < 6; i++) table[i] = table[i] * 3 + (int)(next(seed) % 3);
        const int pos = (int)(next(seed) % (uint64_t)(6 * P)), b = pos / P;
        snprintf(q->prompt, sizeof q->prompt, "Pages hold %d positions each, and a sequence's block table is [%d, %d, %d, %d, "
                 "%d, %d] (logical block b, positions b·%d to b·%d + %d, lives in that physical page). Which physical page "
                 "holds position %d?", P, table[0], table[1], table[2], table[3], table[4], table[5], P, P, P - 1, pos);
        q->answer = table[b];
        snprintf(q->why, sizeof q->why, "Position %d is in logical block ⌊%d / %d⌋ = %d, slot %d; the table's entry %d (counting "
                 "from 0) names page %d: a sequence's pages can lie anywhere in the pool.", pos, pos, P, b, pos % P, b,
                 table[b]);
        q->digits = 0;
        break;
    }
    default: {   /* samples of one prompt: the prompt's full pages shared */
        const int L = 40 + (int)(next(seed) % 200), k = 2 + (int)(next(seed) % 3);
        int len[4], own = 0, each = 0;
        for (int i = 0; i < k; i++) {
            len[i] = L + 5 + (int)(next(seed) % 300);
            own += (len[i] + P - 1) / P - L / P;
            each += (len[i] + P - 1) / P;
        }
        char lens[96];
        size_t at = 0;
        for (int i = 0; i < k; i++) at += (size_t)snprintf(lens + at, sizeof lens - at, "%s%d", i == 0 ? "" : i == k - 1 ? " and " : ", ", len[i]);
        snprintf(q->prompt, sizeof q->prompt, "Pages hold %d positions each. %d answers sampled from one prompt of %d positions make "
                 "sequences of %s positions. The prompt's full pages are shared; its partly filled last page is copied by any "
                 "sequence that writes into it. How many pages do the %d sequences hold in all?", P, k, L, lens, k);
        q->answer = L / P + own;
        snprintf(q->why, sizeof q->why, "⌊%d / %d⌋ = %d shared pages, then each sequence's pages past them: %d in all, against %d "
                 "if each kept its own copy of the prompt.", L, P, L / P, L / P + own, each);
        q->digits = 0;
        break;
    }
    }
}

/* Fresh e4m3 questions (004_09, 004_10): a number onto e4m3's grid, a number scaled into it, and
 * why one scale for a whole tensor loses its small entries (form which % 3, in that order). */
static void e4m3_question(uint64_t *seed, int which, fs_question *q)
{
    claim_blank(q);
    if (which % 3 == 2) {   /* the smallest entry one scale keeps: what an outlier costs the rest */
        static const double amaxes[] = {6.5, 30, 120, 448, 2000, 120000};
        const double amax = amaxes[next(seed) % 6], sigma = amax / 448;
        snprintf(q->prompt, sizeof q->prompt, "A tensor whose largest magnitude is amax = %g goes into e4m3 with one scale for "
                 "the whole tensor, σ = amax / 448: an entry x is stored as e4m3(x / σ). e4m3's smallest nonzero magnitude is "
                 "2^-9, and a magnitude below half of it (2^-10) rounds to 0. Below what magnitude does an entry come back as "
                 "0?", amax);
        q->answer = sigma / 1024;
        q->digits = 12;   /* judged by its significant digits, however small */
        snprintf(q->why, sizeof q->why, "σ = %g / 448 = %.6g; x / σ < 2^-10 when x < σ / 1024 = %.8g. The larger the amax (an "
                 "outlier sets it for everyone), the more of the ordinary entries vanish: a scale per block, from the "
                 "block's own amax, keeps them (004_10).", amax, sigma, q->answer);
        return;
    }
    q->kind = FS_Q_E4M3;
    double x;
    do {   /* a magnitude from 2^-8 to 2^8, three significant digits, off the grid */
        const double e = uniform(seed, -8, 8), v = exp2(e);
        const double p10 = pow(10, floor(log10(v)) - 2);
        x = round(v / p10) * p10 * (next(seed) % 4 == 0 ? -1 : 1);
    } while (fs_lowp_round(FS_LOWP_E4M3, x) == x);
    if (which % 3 == 0) {
        snprintf(q->prompt, sizeof q->prompt, "Which e4m3 value does %.3g round to? (e4m3 keeps 3 fraction bits: 8 values between "
                 "two powers of two, ties to even, no value above 448; below 2^-6 its steps are 2^-9 apart.)", x);
        q->answer = fs_lowp_round(FS_LOWP_E4M3, x);
        q->has_before = true;   /* x has three significant digits: the prompt prints it whole */
        q->before = x;
        snprintf(q->why, sizeof q->why, "e4m3(%.3g) = %.8g.", x, q->answer);
        fs_question_e4m3_why(q->why, sizeof q->why, x);
    } else {   /* a per-tensor scale: amax onto 448 */
        const double amax = round(uniform(seed, 1, 60) * 10) / 10, sigma = amax / 448;
        char ys[32];
        snprintf(ys, sizeof ys, "%.3g", x / fabs(x) * fmod(fabs(x), amax));   /* within the tensor's range, as printed */
        double y = strtod(ys, NULL);
        if (y == 0) y = amax / 3;
        const double r = fs_lowp_round(FS_LOWP_E4M3, y / sigma) * sigma;
        snprintf(q->prompt, sizeof q->prompt, "A tensor whose largest magnitude is amax = %g goes into e4m3 with the scale σ = amax "
                 "/ 448 (448: e4m3's largest value). What value does its entry x = %.3g come back as, e4m3(x / σ) · σ? (e4m3 "
                 "keeps 3 fraction bits: 8 values between two powers of two, ties to even.)", amax, y);
        q->answer = r;
        q->has_before = r != y;   /* x itself, not rounded */
        q->before = y;
        snprintf(q->why, sizeof q->why, "σ = %g / 448 = %.6g; x / σ = %.6g rounds to %.8g; times σ: %.8g.", amax, sigma, y / sigma,
                 fs_lowp_round(FS_LOWP_E4M3, y / sigma), r);
        fs_question_e4m3_why(q->why, sizeof q->why, y / sigma);
    }
}

/* Fresh questions on the ring's transfer against its computation (ring_04's model). */
static void ring_question(uint64_t *seed, int which, fs_question *q)
{
    claim_blank(q);
    static const int ns[] = {32768, 65536, 131072, 262144};
    static const int gs[] = {4, 8, 16};
    static const struct { const char *name; double gbs; } link[] = {{"NVLink at 450 GB/s", 450}, {"InfiniBand at 50 GB/s", 50},
                                                                   {"PCIe at 32 GB/s", 32}};
    const int n = ns[next(seed) % 4], G = gs[next(seed) % 3], li = (int)(next(seed) % 3);
    const double F = 700e12, B = link[li].gbs * 1e9, c = (double)n / G;
    switch (which % 3) {
    case 0:
        snprintf(q->prompt, sizeof q->prompt, "Ring attention over %d GPUs, n = %d positions in equal shards, no mask: each "
                 "step computes 4 c² d H FLOPs with c positions a GPU and passes 4 c d H bytes of K and V (float16) on. At F = "
                 "700 TFLOP/s and %s, what is the step's computation time over its transfer time, c · B / F?", G, n,
                 link[li].name);
        q->answer = c * B / F;
        snprintf(q->why, sizeof q->why, "c = %d / %d = %.0f; c · B / F = %.0f × %ge9 / 700e12 = %.8g: %s", n, G, c, c, link[li].gbs, c * B / F,
                 c * B / F >= 1 ? "above 1, so the transfer hides behind the computation."
                                : "below 1, so every step waits on the link.");
        break;
    case 1:
        snprintf(q->prompt, sizeof q->prompt, "Ring attention, no mask: a step's transfer hides behind its computation when "
                 "each GPU holds c ≥ F / B positions. At F = 700 TFLOP/s and %s, how many positions must a GPU hold at least "
                 "(F / B rounded up)?", link[li].name);
        q->answer = ceil(F / B);
        snprintf(q->why, sizeof q->why, "700e12 / %ge9 = %.8g, rounded up %.0f: the ratio c · B / F loses d and H, so the threshold "
                 "is the machine's FLOPs per byte of link.", link[li].gbs, F / B, ceil(F / B));
        q->digits = 0;
        break;
    default:
        snprintf(q->prompt, sizeof q->prompt, "Ring attention over %d GPUs with d = 128 and H = 32 heads: one shard's K and V "
                 "in float16 is 2 · c · d · H · 2 bytes, c = n / G. For n = %d, how many MiB (2^20 bytes) is a shard?", G, n);
        q->answer = 2.0 * c * 128 * 32 * 2 / (1024.0 * 1024.0);
        snprintf(q->why, sizeof q->why, "c = %d / %d = %.0f; 2 × %.0f × 128 × 32 × 2 = %.0f bytes = %.8g MiB, sent on at every "
                 "step.", n, G, c, c, 2.0 * c * 128 * 32 * 2, q->answer);
        break;
    }
}

/* Fresh questions on why softmax subtracts the maximum (000_09): the largest x whose exp a format
 * holds, and a softmax of two scores too large to exponentiate directly. */
static void stability_question(uint64_t *seed, int which, fs_question *q)
{
    claim_blank(q);
    if (which % 2 == 0) {
        static const struct { const char *name; double max; } fmt[] = {
            {"float32", 3.4028234663852886e38}, {"float16", 65504}, {"bfloat16", 3.3895313892515355e38}, {"float64", 1.7976931348623157e308}};
        const int i = (int)(next(seed) % 4);
        snprintf(q->prompt, sizeof q->prompt, "The largest finite %s is %.8g. Above what x does exp(x) overflow in %s (ln of that "
                 "largest value)?", fmt[i].name, fmt[i].max, fmt[i].name);
        q->answer = log(fmt[i].max);
        snprintf(q->why, sizeof q->why, "ln(%.8g) = %.8g: any score above it overflows to inf in %s, so a softmax that "
                 "exponentiates raw scores fails there; subtracting the maximum first makes every exponent at most 0.",
                 fmt[i].max, q->answer, fmt[i].name);
    } else {
        const double a = round(uniform(seed, 90, 1000)), b = a - round(uniform(seed, 1, 40)) / 10;
        snprintf(q->prompt, sizeof q->prompt, "Two scores, %.0f and %.1f: exp of either overflows float32. What is the softmax "
                 "weight of the first, computed with the maximum subtracted?", a, b);
        q->answer = 1 / (1 + exp(b - a));
        snprintf(q->why, sizeof q->why, "exp(%.0f − %.0f) / (exp(0) + exp(%.1f − %.0f)) = 1 / (1 + exp(%.1f)) = %.8g: subtracting "
                 "the maximum changes no weight, since it divides the numerator and the sum by the same exp(m).", a, a, b, a,
                 b - a, q->answer);
    }
}

/* Fresh questions on how a GPU kernel divides attention's work (003_05, in Metal's words: a SIMD
 * group of 32 lanes, a threadgroup and its memory): the element of V a lane holds, a prefill
 * threadgroup's bytes, the threadgroups of a prefill, the barriers of a decode. */
static void kernel_question(uint64_t *seed, int which, fs_question *q)
{
    claim_blank(q);
    static const int hd[] = {64, 128, 256};
    const int d = hd[next(seed) % 3];
    switch (which % 4) {
    case 0: {   /* a lane's elements of a row, strided by the SIMD group's width */
        const int lane = (int)(next(seed) % 32), i = (int)(next(seed) % (uint64_t)(d / 32));
        snprintf(q->prompt, sizeof q->prompt, "A SIMD group (32 lanes) shares one row of V of head_dim %d: each lane holds %d / "
                 "32 = %d of its elements, strided by 32 (lane l holds elements l, l + 32, …). Which element of the row "
                 "(counting from 0) is lane %d's element %d?", d, d, d / 32, lane, i);
        q->answer = lane + 32 * i;
        snprintf(q->why, sizeof q->why, "lane + 32 × i = %d + 32 × %d = %d: neighbouring lanes hold neighbouring elements, so "
                 "the 32 lanes' loads of one step are one contiguous stretch of memory.", lane, i, lane + 32 * i);
        break;
    }
    case 1: {   /* a prefill threadgroup's memory, from its buffers */
        static const int nqs[] = {4, 8, 16, 32};
        const int nq = nqs[next(seed) % 4];
        const int b = nq * d * 2 + nq * 32 * 4 + nq * d * 4 + 32 * d * 2 + 32 * d * 2 + nq * 2 * 4;
        snprintf(q->prompt, sizeof q->prompt, "A prefill threadgroup takes NQ = %d query rows of head_dim %d and walks the keys "
                 "32 at a time. Its threadgroup memory holds Q's rows in half (2 bytes), a row of 32 scores per query in float "
                 "(4 bytes), the output rows in float, the tile of 32 keys of K and of V in half, and m and ℓ per row in float. "
                 "How many bytes is that?", nq, d);
        q->answer = b;
        snprintf(q->why, sizeof q->why, "Q %d·%d·2 + S %d·32·4 + O %d·%d·4 + K 32·%d·2 + V 32·%d·2 + m, ℓ %d·2·4 = %d + %d + %d + "
                 "%d + %d + %d = %d bytes (%.4g KiB): K's and V's tiles weigh the same whatever NQ, while Q, S, O, m and ℓ "
                 "grow with it; the smaller the total, the more threadgroups share a core's memory.", nq, d, nq,
                 nq, d, d, d, nq, nq * d * 2, nq * 32 * 4, nq * d * 4, 32 * d * 2, 32 * d * 2, nq * 2 * 4, b, b / 1024.0);
        break;
    }
    case 2: {   /* threadgroups of a prefill */
        static const int ns[] = {1000, 2048, 3000, 4096, 8192, 10000};
        static const int nqs[] = {8, 16, 32};
        const int n = ns[next(seed) % 6], nq = nqs[next(seed) % 3], heads = 8 << (next(seed) % 3);
        snprintf(q->prompt, sizeof q->prompt, "A prefill of %d tokens over %d heads gives each threadgroup NQ = %d query rows of "
                 "one head. How many threadgroups does it dispatch?", n, heads, nq);
        q->answer = (double)heads * ((n + nq - 1) / nq);
        snprintf(q->why, sizeof q->why, "⌈%d / %d⌉ = %d threadgroups a head (%s) × %d heads = %.0f: a larger NQ means fewer "
                 "threadgroups, each reading K and V once for more rows.", n, nq, (n + nq - 1) / nq,
                 n % nq ? "the last one partly filled" : "all full: NQ divides n", heads, q->answer);
        break;
    }
    default: {   /* the barriers of a decode that syncs twice per key */
        static const int ns[] = {512, 1024, 2048, 4096, 8192};
        const int n = ns[next(seed) % 5];
        const double us = 0.1 * (1 + (int)(next(seed) % 3));
        snprintf(q->prompt, sizeof q->prompt, "A decode kernel whose SIMD groups share each key's dot product through "
                 "threadgroup memory waits at 2 barriers for every key of the cache (one after the groups write their partial "
                 "sums, one after they read them), each costing about %.1f µs. How many µs of barriers is that for a cache of %d "
                 "keys?", us, n);
        q->answer = 2 * us * n;
        snprintf(q->why, sizeof q->why, "2 × %.1f µs × %d = %.8g µs, whatever the head_dim: why 003's fast decode gives a head "
                 "one SIMD group, whose simd_sum reduces the dot product across its 32 lanes with no barrier at all.", us, n,
                 q->answer);
        break;
    }
    }
    if (which % 4 != 3) q->digits = 0;   /* a count, an index or bytes: exact */
}

/* Fresh questions on the roofline (beyond_02): a tile's FLOPs a byte, the smallest tile height
 * that reaches a GPU's ridge, the rate a kernel of given intensity can reach, and a decode step's
 * least time. */
static void roofline_question(uint64_t *seed, int which, fs_question *q)
{
    claim_blank(q);
    const int i = (int)(next(seed) % 4);
    const double peak = gpu[i].tflops, bw = gpu[i].tbs, ridge = peak / bw;
    const char *name = gpu[i].name;
    switch (which % 4) {
    case 0: {   /* a tile's intensity: Bq, whatever Bk and d */
        static const int bqs[] = {16, 32, 64, 128, 192, 256}, bks[] = {32, 64, 128}, ds[] = {64, 128, 256};
        const int bq = bqs[next(seed) % 6], bk = bks[next(seed) % 3], d = ds[next(seed) % 3];
        snprintf(q->prompt, sizeof q->prompt, "A tile of Bq = %d queries meets Bk = %d keys of head size d = %d: S = Q Kᵀ and P V "
                 "do 4·Bq·Bk·d FLOPs, and the kernel loads the K and V tiles (2·Bk·d numbers, float16: 2 bytes each) from "
                 "HBM, while the Q tile stays on chip. How many FLOPs does the tile do for each byte it loads?", bq, bk, d);
        q->answer = bq;
        snprintf(q->why, sizeof q->why, "4 × %d × %d × %d = %.0f FLOPs over 2 × %d × %d × 2 = %d bytes = %d: every number of K "
                 "and V is used by all Bq queries, one multiply-add (2 FLOPs, 2 bytes) each, so Bk and d cancel.", bq, bk, d,
                 4.0 * bq * bk * d, bk, d, 4 * bk * d, bq);
        q->digits = 0;
        break;
    }
    case 1: {   /* the smallest tile height at the ridge */
        snprintf(q->prompt, sizeof q->prompt, "An %s does %g TFLOP/s of dense float16 matrix products and reads %g TB/s. A "
                 "FlashAttention tile does Bq FLOPs for each byte of K and V it loads (Bq: its number of queries). What is "
                 "the smallest whole Bq at which the tile is no longer limited by memory?", name, peak, bw);
        q->answer = ceil(ridge);
        snprintf(q->why, sizeof q->why, "The ridge is %g × 10^12 / (%g × 10^12) = %.6g FLOPs a byte, so Bq ≥ %.0f; on a real "
                 "GPU the L2 cache serves K and V to tiles that run at once, so kernels do better than this model.", peak, bw,
                 ridge, ceil(ridge));
        q->digits = 0;
        break;
    }
    case 2: {   /* the attainable rate: min(peak, I × bandwidth) */
        static const double is[] = {0.625, 1, 4, 32, 64, 128, 256, 512, 2048};
        const double I = is[next(seed) % 9], r = fmin(peak, I * bw);
        snprintf(q->prompt, sizeof q->prompt, "On the roofline of an %s (%g TFLOP/s of float16 products, %g TB/s of memory), "
                 "what rate in TFLOP/s can a kernel that does %g FLOPs for each byte it moves reach at most?", name, peak,
                 bw, I);
        q->answer = r;
        snprintf(q->why, sizeof q->why, "min(%g, %g × %g) = %.8g TFLOP/s: %g FLOPs a byte is %s the ridge of %.4g, so %s",
                 peak, I, bw, r, I, I * bw < peak ? "below" : "at or past", ridge,
                 I * bw < peak ? "the bytes set the pace (memory-bound), not the peak."
                               : "the arithmetic sets the pace (compute-bound): the peak.");
        break;
    }
    default: {   /* a decode step over a KV cache: its least time */
        static const int ns[] = {4096, 8192, 32768, 131072};
        static const int hs[] = {8, 32};
        const int n = ns[next(seed) % 4], h = hs[next(seed) % 2], g = 4, d = 128;
        const double bytes = 2.0 * n * h * d * 2, flops = 4.0 * n * d * h * g;
        const double t = fmax(bytes / (bw * 1e12), flops / (peak * 1e12)) * 1e6;
        snprintf(q->prompt, sizeof q->prompt, "Decoding one token on an %s (%g TB/s, %g TFLOP/s) reads a float16 KV cache of n = %d "
                 "positions, %d KV heads, d = %d (K and V: 2·n·heads·d numbers of 2 bytes) and does 4·n·d FLOPs for each of "
                 "its %d query heads (%d per KV head). At least how many µs does the step take?", name, bw, peak, n, h, d,
                 g * h, g);
        q->answer = t;
        snprintf(q->why, sizeof q->why, "%.0f bytes / %g TB/s = %.6g µs, against %.0f FLOPs / %g TFLOP/s = %.3g µs: %.8g µs, "
                 "set by memory: %g FLOPs a byte, far below the ridge of %.3g.", bytes, bw, bytes / (bw * 1e6), flops, peak,
                 flops / (peak * 1e6), t, flops / bytes, ridge);
        break;
    }
    }
}

/* Fresh questions on the HBM accesses of standard and tiled attention (beyond_01's model, counted
 * in numbers: Q read and O written once, K and V once for every Q tile; standard attention also
 * writes and reads S and P): either count, their ratio, and the tile where they meet. */
static void io_question(uint64_t *seed, int which, fs_question *q)
{
    claim_blank(q);
    static const int ns[] = {1024, 2048, 4096, 8192, 16384};
    static const int ds[] = {64, 128}, bs[] = {16, 32, 64, 128};
    const int n = ns[next(seed) % 5], d = ds[next(seed) % 2], B = bs[next(seed) % 4];
    const double N = n, tiled = 2 * N * d + 2 * N * N * d / B, standard = 4 * N * d + 4 * N * N;
    switch (which % 4) {
    case 0:
        snprintf(q->prompt, sizeof q->prompt, "A tiled forward pass (one head, no mask) reads Q and writes O once (N·d numbers "
                 "each) and loads all of K and V (N·d each) once for every Q tile of Bq rows. With N = %d, d = %d and Bq = %d, "
                 "how many million numbers does it move to and from HBM?", n, d, B);
        q->answer = tiled / 1e6;
        snprintf(q->why, sizeof q->why, "2·N·d + 2·N²·d / Bq = %.0f + %.0f = %.0f numbers, %.8g million: the K and V term "
                 "shrinks as the Q tile grows, which is the whole point of a tall tile.", 2 * N * d, 2 * N * N * d / B, tiled,
                 tiled / 1e6);
        break;
    case 1:
        snprintf(q->prompt, sizeof q->prompt, "Standard attention (one head) reads Q, K and V and writes O (N·d numbers each), "
                 "and writes S, reads it, writes P and reads it (N² numbers each time). With N = %d and d = %d, how many "
                 "million numbers does it move to and from HBM?", n, d);
        q->answer = standard / 1e6;
        snprintf(q->why, sizeof q->why, "4·N·d + 4·N² = %.0f + %.0f = %.0f numbers, %.8g million: the N² term wins once N "
                 "passes d, and it is the one FlashAttention removes.", 4 * N * d, 4 * N * N, standard, standard / 1e6);
        break;
    case 2:
        snprintf(q->prompt, sizeof q->prompt, "Counted in numbers moved to and from HBM, a tiled pass moves 2·N·d + 2·N²·d / B "
                 "(square tiles of B) and standard attention 4·N·d + 4·N². With N = %d, d = %d and B = %d, what is tiled over "
                 "standard?", n, d, B);
        q->answer = tiled / standard;
        snprintf(q->why, sizeof q->why, "%.0f / %.0f = %.8g: about d / (2·B) = %.4g at large N, so tiles of B > d / 2 move less "
                 "than standard attention%s.", tiled, standard, tiled / standard, d / (2.0 * B),
                 B > d / 2 ? ", as here" : B == d / 2 ? " (here they meet)" : ", and these move more");
        break;
    default:
        snprintf(q->prompt, sizeof q->prompt, "A tiled pass moves 2·N·d + 2·N²·d / B numbers to and from HBM (square tiles of "
                 "B), standard attention 4·N·d + 4·N². At d = %d and large N, for which tile size B do the two move the same "
                 "(the crossover)?", d);
        q->answer = d / 2;
        snprintf(q->why, sizeof q->why, "The N² terms meet where 2·d / B = 4: B = d / 2 = %d. Larger tiles move less than "
                 "standard attention; counted in bytes (float16 Q, K, V, O; float32 S and P) the crossover falls to d / 4.", d / 2);
        q->digits = 0;
        break;
    }
}

/* One fresh claim question of the kind a lesson about claims names (quiz:). */
static void claim_question(fs_quiz_kind kind, uint64_t *seed, int which, fs_question *q)
{
    switch (kind) {
    case FS_QUIZ_PAGES: pages_question(seed, which, q); break;
    case FS_QUIZ_E4M3: e4m3_question(seed, which, q); break;
    case FS_QUIZ_RING: ring_question(seed, which, q); break;
    case FS_QUIZ_STABILITY: stability_question(seed, which, q); break;
    case FS_QUIZ_KERNEL: kernel_question(seed, which, q); break;
    case FS_QUIZ_ROOFLINE: roofline_question(seed, which, q); break;
    case FS_QUIZ_IO: io_question(seed, which, q); break;
    default: memory_question(seed, which, q); break;
    }
}

/* Whether text holds b's answer as printed, a number of its own (not inside a longer one): a
 * decimal of at least four characters, so that a count or a 1.0000 does not count. */
static bool shows_answer(const char *text, const fs_question *b)
{
    char ans[112];
    if (!b->numeric || b->digits == 0) return false;
    fs_question_answer(b, ans, sizeof ans);
    const size_t n = strlen(ans);
    if (n < 4 || !strchr(ans, '.') || !strcmp(ans, "1.0000") || !strcmp(ans, "0.0000")) return false;
    for (const char *p = strstr(text, ans); p; p = strstr(p + 1, ans)) {
        const char before = p == text ? ' ' : p[-1], after = p[n];
        if (!isdigit((unsigned char)before) && before != '.' && !isdigit((unsigned char)after)) return true;
    }
    return false;
}

/* Whether question q, asked after the quiz's first n, is given away by one of them (its prompt, or
 * its reason, shown once it is answered, prints q's answer: "ℓ_a = 1.5169" before "what is split
 * 0's ℓ?") or gives one of them away (its prompt prints an earlier answer). */
static bool gives_away(const fs_quiz *quiz, int n, const fs_question *q)
{
    for (int i = 0; i < n; i++)
        if (shows_answer(quiz->q[i].prompt, q) || shows_answer(quiz->q[i].why, q) || shows_answer(q->prompt, &quiz->q[i]))
            return true;
    return false;
}

/* The forms of memory_question (which % MEMORY_FORMS), each with words a lesson that teaches it uses: the
 * score matrix's size, a KV cache's, attention's FLOPs, the ridge (a GPU's FLOPs a byte). A quiz
 * names a form's question after a lesson of the section that says one of them where the lesson
 * whose turn it is does not: a ridge point "from" the memory-wall lesson sent a student to revisit
 * a lesson without one. */
static const char *const memory_words[MEMORY_FORMS][4] = {
    {"score matrix", "N x N", "n x n", "n²"}, {"KV cache", "kv cache", NULL, NULL}, {"FLOP", NULL, NULL, NULL},
    {"FLOPs a byte", "balance", "ridge", NULL}};

static bool says(const char *text, int form)
{
    for (int w = 0; w < 4 && text; w++)
        if (memory_words[form][w] && strstr(text, memory_words[form][w])) return true;
    return false;
}

/* Which of memory_question's forms lesson l's words teach, a bit a form: its title, introduction,
 * summary and claims. */
static unsigned memory_topics(const fs_lesson *l)
{
    unsigned t = 0;
    for (int form = 0; form < MEMORY_FORMS; form++) {
        bool hit = says(fs_lesson_title(l), form) || says(fs_lesson_intro(l), form) || says(fs_lesson_summary(l), form);
        for (int i = 0; i < fs_lesson_check_count(l) && !hit; i++) hit = says(fs_lesson_check(l, i)->claim, form);
        if (hit) t |= 1u << form;
    }
    return t;
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
    int k = 0, n_claims = 0, n_runs = 0;
    bool ok = true;
    /* the claims-only lessons, each with the kind of fresh question it asks */
    const char **claim_names = calloc((size_t)(nl ? nl : 1), sizeof *claim_names);
    fs_quiz_kind *claim_kind = calloc((size_t)(nl ? nl : 1), sizeof *claim_kind);
    unsigned *claim_topics = calloc((size_t)(nl ? nl : 1), sizeof *claim_topics);   /* memory_topics */
    if (!claim_names || !claim_kind || !claim_topics) ok = false;
    for (int i = 0; i < c->n && ok; i++) {
        if (c->section_of[i] != section) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.lesson", dir, c->names[i]);
        fs_lesson *l;
        if (!fs_lesson_load(path, &l, err)) { ok = false; break; }
        names[k] = c->names[i];
        /* a lesson that runs but names its claims' kind (quiz:) is asked its claims, not its run */
        count[k] = l->quiz_named && l->has_run ? 0 : fresh_questions(l, &s, pool[k], LESSON_MAX);
        n_runs += count[k] > 0;
        if (!l->has_run || l->quiz_named) {
            claim_names[n_claims] = c->names[i];
            claim_topics[n_claims] = memory_topics(l);
            claim_kind[n_claims++] = fs_lesson_quiz_kind(l);
        }
        fs_lesson_free(l);
        k++;
    }
    /* the claims-only lessons' share of the quiz, as their share of the section's lessons (at least
     * one question when there is one), the rest from the runs */
    int want_claims = 0;
    if (ok && n_claims > 0)
        want_claims = n_runs == 0 ? FS_QUIZ_QUESTIONS
                                  : (int)lround((double)FS_QUIZ_QUESTIONS * n_claims / (n_claims + n_runs));
    if (n_claims > 0 && want_claims < 1) want_claims = 1;
    if (want_claims > FS_QUIZ_QUESTIONS) want_claims = FS_QUIZ_QUESTIONS;
    if (ok) {
        /* round robin over the lessons, from a lesson the seed picks, each time the next question
         * of a kind the quiz has not asked yet when the lesson has one */
        bool kind_used[FS_Q_COUNT] = {false};
        int start = nl ? (int)(next(&s) % (uint64_t)nl) : 0, idle = 0;
        for (int r = 0; quiz->n < FS_QUIZ_QUESTIONS - want_claims && nl > 0 && idle < nl; r++) {
            int j = (start + r) % nl;
            if (used[j] >= count[j]) { idle++; continue; }
            /* the best by rank (what the section adds first), a kind not asked yet before one asked:
             * a kind of the section's own asked again before the machinery's or the softmax's */
            int pick = -1, best = 1 << 30;
            for (int x = used[j]; x < count[j]; x++) {
                if (gives_away(quiz, quiz->n, &pool[j][x])) continue;   /* another question's answer in sight */
                const int score = 2 * rank(pool[j][x].kind) + (kind_used[pool[j][x].kind] ? 5 : 0);
                if (score < best) best = score, pick = x;
            }
            if (pick < 0) {   /* every question left here would give one away: the lesson sits this round out */
                idle++;
                continue;
            }
            idle = 0;
            fs_question t = pool[j][pick];
            pool[j][pick] = pool[j][used[j]];
            pool[j][used[j]++] = t;
            /* each pitfall lesson's mistake is a mistake of its own: asked again, it is a new subject (not
             * so the live rows: a question that does not depend on the numbers, asked twice, could
             * make two seeds' quizzes alike) */
            if (t.kind != FS_Q_MISTAKE) kind_used[t.kind] = true;
            t.step = -1;   /* a fresh problem: no lesson step shows this very number */
            quiz->q[quiz->n] = t;
            snprintf(quiz->lesson[quiz->n], sizeof quiz->lesson[0], "%s", names[j]);
            quiz->n++;
        }
        /* the claims-only lessons' questions on fresh sizes, taking the lessons in turn (and every
         * kind of a lesson's questions in turn), until the quiz is full: also where the runs offer
         * fewer than their share */
        int turn[FS_QUIZ_KIND_COUNT];   /* each kind's forms in turn, from one the seed draws */
        for (int x = 0; x < FS_QUIZ_KIND_COUNT; x++) turn[x] = (int)(next(&s) % 12);
        const int first = n_claims ? (int)(next(&s) % (uint64_t)n_claims) : 0;   /* not always the section's first few */
        for (int w = 0; quiz->n < FS_QUIZ_QUESTIONS; w++) {
            const int j = n_claims ? (first + w) % n_claims : 0;
            const fs_quiz_kind kind = n_claims ? claim_kind[j] : FS_QUIZ_MEMORY;
            /* drawn again (up to 8 times) where an earlier question gives its answer away or it
             * gives one of theirs */
            int tries = 0, which;
            do claim_question(kind, &s, which = turn[kind]++, &quiz->q[quiz->n]);
            while (gives_away(quiz, quiz->n, &quiz->q[quiz->n]) && ++tries < 8);
            /* a memory question named after a lesson that teaches its form, this one where it does */
            int from = j;
            if (n_claims && kind == FS_QUIZ_MEMORY && !(claim_topics[j] & (1u << (which % MEMORY_FORMS))))
                for (int x = 1; x < n_claims; x++) {
                    const int y = (j + x) % n_claims;
                    if (claim_kind[y] == FS_QUIZ_MEMORY && (claim_topics[y] & (1u << (which % MEMORY_FORMS)))) { from = y; break; }
                }
            snprintf(quiz->lesson[quiz->n], sizeof quiz->lesson[0], "%s", n_claims ? claim_names[from] : nl ? names[0] : "");
            quiz->n++;
        }
    }
    free(claim_names);
    free(claim_kind);
    free(claim_topics);
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

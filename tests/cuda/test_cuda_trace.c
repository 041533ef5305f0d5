/* test_cuda_trace.c: the GPU's trace against the engine's, event by event (runs on a GPU machine).
 *
 *   test_cuda [--seed N] [--count N] [--lessons DIR]
 *
 * For random lesson-sized problems (heads with GQA, ragged tiles, every mask, given scores,
 * soft-capping, both forms, both loop orders, exp2, and the one-query walk of 000) it runs
 * fs_run_exec (the engine, float64) and fs_cuda_trace (the float32 reference kernel) and
 * compares the two traces: same number of events, same kind, indices, tile class and skip
 * reason, same visible count, and every number and vector within float32 tolerance
 * (|gpu − engine| ≤ 2e-4 · max(1, |engine|): float32 carries 24 bits and the problems are
 * small; −∞ must match −∞). The outputs O, m, ℓ are compared the same way. With --lessons,
 * every lesson of DIR whose run (or comparison run) is tiled or the one-query walk, without a
 * deliberate pitfall, is also run on the GPU and compared with the lesson's own trace.
 *
 * The backward pass (fs_cuda_trace on FS_ALGO_BACKWARD) gets the same: as many random problems
 * (GQA, ragged tiles, every mask, soft-capping, both loop orders, dropout, a given dO or none)
 * and every backward lesson, compared with fs_run_exec's backward trace (LSE, DELTA, BTILE,
 * BSKIP, BROW, BKEY, GRAD: S, P, dP, dS, the dQ, dK, dV updates, the dropped cells) and its
 * D, dQ, dK, dV.
 *
 *   test_cuda --host [--seed N] [--count N] [--lessons DIR]
 * runs only the backward's cases, with fs_cuda_trace_emulated: the kernels' per-thread code on
 * the CPU, no GPU needed (a machine with nvcc checks the backward's records and their
 * conversion into events before a GPU runs them).
 *
 * Exit 0 when every case matches, 1 otherwise (with the seed to replay), 2 when no GPU is
 * usable (without --host). A plain C program, not a Check suite: the GPU machine needs nothing
 * but the driver.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/run.h"
#include "kernels/cuda/cuda_backend.h"
#include "lesson/lesson.h"

#define TOL 2e-4

typedef struct { uint64_t s; } rng_t;
static uint64_t rnext(rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int rint_in(rng_t *r, int lo, int hi) { return lo + (int)(rnext(r) % (uint64_t)(hi - lo + 1)); }
static double runi(rng_t *r, double lo, double hi) { return lo + (hi - lo) * (double)(rnext(r) >> 11) * 0x1.0p-53; }

static int near(double g, double e)
{
    if (isnan(g) || isnan(e)) return 0;
    if (isinf(e) || isinf(g)) return g == e;
    return fabs(g - e) <= TOL * fmax(1.0, fabs(e));
}

static char g_where[256];

static int cmp_num(const char *what, int64_t k, double g, double e)
{
    if (near(g, e)) return 1;
    printf("  event %lld: %s gpu %.9g engine %.9g  (%s)\n", (long long)k, what, g, e, g_where);
    return 0;
}

static int cmp_vec(const char *what, int64_t k, const fs_trace *tg, int64_t og, const fs_trace *te,
                   int64_t oe, int32_t n)
{
    if ((og < 0) != (oe < 0)) {
        printf("  event %lld: %s present on one side only (%s)\n", (long long)k, what, g_where);
        return 0;
    }
    if (oe < 0) return 1;
    const double *a = fs_trace_at(tg, og), *b = fs_trace_at(te, oe);
    for (int32_t i = 0; i < n; i++)
        if (!near(a[i], b[i])) {
            printf("  event %lld: %s[%d] gpu %.9g engine %.9g (%s)\n", (long long)k, what, i, a[i], b[i], g_where);
            return 0;
        }
    return 1;
}

/* 1 when the two traces agree event by event. */
static int cmp_traces(const fs_trace *tg, const fs_trace *te)
{
    if (tg->n != te->n) {
        printf("  %lld GPU events, %lld engine events (%s)\n", (long long)tg->n, (long long)te->n, g_where);
        return 0;
    }
    for (int64_t k = 0; k < te->n; k++) {
        const fs_event *g = &tg->ev[k], *e = &te->ev[k];
        if (g->kind != e->kind || g->head != e->head || g->kv_head != e->kv_head || g->qt != e->qt ||
            g->kt != e->kt || g->row != e->row || g->r0 != e->r0 || g->r1 != e->r1 || g->c0 != e->c0 ||
            g->c1 != e->c1 || g->cls != e->cls || g->reason != e->reason || g->visible != e->visible ||
            g->n_s != e->n_s || g->n_o != e->n_o || g->normalized != e->normalized) {
            printf("  event %lld differs: gpu %s h%d qt%d kt%d row%d cls%d why%d vis%d / engine %s h%d "
                   "qt%d kt%d row%d cls%d why%d vis%d (%s)\n",
                   (long long)k, fs_event_kind_str(g->kind), g->head, g->qt, g->kt, g->row, g->cls,
                   g->reason, g->visible, fs_event_kind_str(e->kind), e->head, e->qt, e->kt, e->row,
                   e->cls, e->reason, e->visible, g_where);
            return 0;
        }
        if (!cmp_num("m_old", k, g->m_old, e->m_old) || !cmp_num("m_blk", k, g->m_blk, e->m_blk) ||
            !cmp_num("m_new", k, g->m_new, e->m_new) || !cmp_num("l_old", k, g->l_old, e->l_old) ||
            !cmp_num("l_blk", k, g->l_blk, e->l_blk) || !cmp_num("l_new", k, g->l_new, e->l_new) ||
            !cmp_num("alpha", k, g->alpha, e->alpha) || !cmp_num("beta", k, g->beta, e->beta))
            return 0;
        if (!cmp_vec("s", k, tg, g->s_row, te, e->s_row, e->n_s) ||
            !cmp_vec("p", k, tg, g->p_row, te, e->p_row, e->n_s) ||
            !cmp_vec("o_old", k, tg, g->o_old, te, e->o_old, e->n_o) ||
            !cmp_vec("o_new", k, tg, g->o_new, te, e->o_new, e->n_o))
            return 0;
        /* The backward's fields (backward.h): L or D in x, D in m_new (above), dP, dS, the
         * gradient blocks (o_blk; g_* for dV), which tensor a GRAD is; dropout's cells. */
        if (g->n_g != e->n_g || g->tensor != e->tensor || g->n_drop != e->n_drop) {
            printf("  event %lld (%s): n_g %d/%d tensor %d/%d n_drop %d/%d differ (%s)\n", (long long)k,
                   fs_event_kind_str(e->kind), g->n_g, e->n_g, g->tensor, e->tensor, g->n_drop, e->n_drop, g_where);
            return 0;
        }
        if (!cmp_num("x", k, g->x, e->x) || !cmp_num("dropout", k, g->dropout, e->dropout) ||
            !cmp_vec("dp", k, tg, g->dp_row, te, e->dp_row, e->n_s) ||
            !cmp_vec("ds", k, tg, g->ds_row, te, e->ds_row, e->n_s) ||
            !cmp_vec("o_blk", k, tg, g->o_blk, te, e->o_blk, e->n_o) ||
            !cmp_vec("g_old", k, tg, g->g_old, te, e->g_old, e->n_g) ||
            !cmp_vec("g_blk", k, tg, g->g_blk, te, e->g_blk, e->n_g) ||
            !cmp_vec("g_new", k, tg, g->g_new, te, e->g_new, e->n_g) ||
            !cmp_vec("dropped", k, tg, g->drop, te, e->drop, 2 * e->n_drop))
            return 0;
    }
    return 1;
}

/* The backward entry under test: the GPU, or its CPU emulation (--host). */
static int g_host;
static fs_status run_cuda(const fs_run *r, fs_result *res, fs_trace *tr, char *why, size_t n)
{
    return g_host ? fs_cuda_trace_emulated(r, res, tr, why, n) : fs_cuda_trace(r, res, tr, why, n);
}

/* n numbers of the GPU's result against the engine's. */
static int cmp_arr(const char *what, const double *g, const double *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!cmp_num(what, -1, g[i], e[i])) return 0;
    return 1;
}

/* Both results of a backward run: O, L, D, dQ, dK, dV. */
static int cmp_backward_results(const fs_attn *a, const fs_result *g, const fs_result *e)
{
    size_t rows = (size_t)a->n_q_heads * a->n_q, keys = (size_t)a->n_kv_heads * a->n_kv;
    return cmp_arr("O", g->O, e->O, rows * a->d_v) && cmp_arr("L", g->L, e->L, rows) &&
           cmp_arr("D", g->D, e->D, rows) && cmp_arr("dQ", g->dQ, e->dQ, rows * a->d) &&
           cmp_arr("dK", g->dK, e->dK, keys * a->d) && cmp_arr("dV", g->dV, e->dV, keys * a->d_v);
}

/* A random soft-cap (1 in 5), mask of kind `mask` (none, causal, window, bits, tree; causal and
 * window sometimes with an offset), Bq, Bk, form and order, for a problem of a->n_q queries and
 * a->n_kv keys. bits: n_q · fs_mask_words(n_kv) words, parent: n_q (both owned by the caller). */
static void draw_mask_tiling(rng_t *r, fs_attn *a, fs_tiling *t, int mask, uint64_t *bits, int32_t *parent)
{
    const int n_q = a->n_q, n_kv = a->n_kv;
    if (rint_in(r, 0, 4) == 0) a->softcap = runi(r, 0.5, 3);
    a->mask.kind = mask == 4 ? FS_MASK_BITS : (fs_mask_kind)mask;
    if (rint_in(r, 0, 3) == 0 && mask >= 1 && mask <= 2) {
        a->mask.has_offset = 1;
        a->mask.offset = rint_in(r, -5, n_kv);
    }
    a->mask.window = rint_in(r, 1, 12);
    if (mask == 3) {
        int w = fs_mask_words(n_kv);
        for (int i = 0; i < n_q * w; i++) bits[i] = rnext(r) & rnext(r) & (rint_in(r, 0, 2) ? ~0ull : 0);
        a->mask.bits = bits;
        a->mask.words_per_row = w;
    } else if (mask == 4) {
        for (int i = 0; i < n_q; i++) parent[i] = i == 0 ? -1 : rint_in(r, 0, i - 1);
        if (fs_mask_tree_build(parent, n_q, bits, NULL) != FS_OK) abort();
        a->mask = fs_mask_tree(bits, n_q);
    }
    t->Bq = rint_in(r, 1, 16);
    t->Bk = rint_in(r, 1, 16);
    t->form = rint_in(r, 0, 1) ? FS_FORM_UNNORMALIZED : FS_FORM_NORMALIZED;
    t->order = rint_in(r, 0, 1) ? FS_ORDER_KV_OUTER : FS_ORDER_Q_OUTER;
}

/* One random backward case; returns 1 when it matches. */
/* Forward results: O, m and ℓ of every row, within the float32 tolerance of cmp_num. */
static int cmp_forward_results(const fs_attn *a, const fs_result *g, const fs_result *e)
{
    const size_t rows = (size_t)a->n_q_heads * a->n_q;
    int ok = 1;
    for (size_t i = 0; ok && i < rows * a->d_v; i++) ok = cmp_num("O", -1, g->O[i], e->O[i]);
    for (size_t i = 0; ok && i < rows; i++)
        ok = cmp_num("m", -1, g->m[i], e->m[i]) && cmp_num("l", -1, g->l[i], e->l[i]);
    return ok;
}

/* run on the engine and through run_cuda (g_where names it in messages): 1 when both run, their
 * traces match event by event, and their results match: dQ, dK and dV for the backward, O, m
 * and ℓ for the forward when forward_results is set. */
static int run_both(const fs_run *run, int forward_results)
{
    fs_trace te, tg;
    fs_trace_init(&te);
    fs_trace_init(&tg);
    fs_result re, rg;
    char why[256] = "";
    fs_status se = fs_run_exec(run, &re, &te);
    fs_status sg = run_cuda(run, &rg, &tg, why, sizeof why);
    int ok = se == FS_OK && sg == FS_OK;
    if (!ok) printf("  engine: %s, cuda: %s %s (%s)\n", fs_status_str(se), fs_status_str(sg), why, g_where);
    ok = ok && cmp_traces(&tg, &te);
    if (run->algo == FS_ALGO_BACKWARD) ok = ok && cmp_backward_results(&run->attn, &rg, &re);
    else if (forward_results) ok = ok && cmp_forward_results(&run->attn, &rg, &re);
    if (se == FS_OK) fs_result_free(&re);
    if (sg == FS_OK) fs_result_free(&rg);
    fs_trace_free(&te);
    fs_trace_free(&tg);
    return ok;
}

/* The inputs both random cases share: a's heads (group query heads over each of n_kv_heads), Q
 * and K in [−2, 2], V in [−1, 1], and the mask buffers draw_mask_tiling fills, for a whose shape
 * is already set; case_free frees them. */
typedef struct {
    double *Q, *K, *V;
    uint64_t *bits;
    int32_t *parent;
} case_inputs;

static case_inputs draw_inputs(rng_t *r, fs_attn *a, int group, int n_kv_heads)
{
    const int n_q = a->n_q, n_kv = a->n_kv, d = a->d, d_v = a->d_v;
    a->n_kv_heads = n_kv_heads;
    a->n_q_heads = n_kv_heads * group;
    const int hq = a->n_q_heads;
    case_inputs c;
    c.Q = malloc(sizeof(double) * hq * n_q * d);
    c.K = malloc(sizeof(double) * n_kv_heads * n_kv * d);
    c.V = malloc(sizeof(double) * n_kv_heads * n_kv * d_v);
    c.bits = malloc(sizeof(uint64_t) * n_q * fs_mask_words(n_kv));
    c.parent = malloc(sizeof(int32_t) * n_q);
    for (int i = 0; i < hq * n_q * d; i++) c.Q[i] = runi(r, -2, 2);
    for (int i = 0; i < n_kv_heads * n_kv * d; i++) c.K[i] = runi(r, -2, 2);
    for (int i = 0; i < n_kv_heads * n_kv * d_v; i++) c.V[i] = runi(r, -1, 1);
    a->Q = c.Q;
    a->K = c.K;
    a->V = c.V;
    return c;
}

static void case_free(case_inputs *c)
{
    free(c->Q);
    free(c->K);
    free(c->V);
    free(c->bits);
    free(c->parent);
}

static int one_backward_case(rng_t *r, int idx)
{
    int group = rint_in(r, 1, 3), n_kv_heads = rint_in(r, 1, 2);
    int n_q = rint_in(r, 1, 30), n_kv = rint_in(r, 1, 40), d = rint_in(r, 1, 8), d_v = rint_in(r, 1, 8);
    int mask = rint_in(r, 0, 4);   /* none, causal, window, bits, tree */
    if (mask == 4) n_kv = n_q;
    fs_run run = fs_run_make(FS_ALGO_BACKWARD);
    fs_attn *a = &run.attn;
    *a = fs_attn_make(n_q, n_kv, d, d_v);
    case_inputs c = draw_inputs(r, a, group, n_kv_heads);
    const int hq = a->n_q_heads;
    double *dO = NULL;
    if (rint_in(r, 0, 3)) {   /* a given dO; else dO = 1 */
        dO = malloc(sizeof(double) * hq * n_q * d_v);
        for (int i = 0; i < hq * n_q * d_v; i++) dO[i] = runi(r, -1, 1);
        run.dO = dO;
    }
    draw_mask_tiling(r, a, &run.tiling, mask, c.bits, c.parent);
    if (rint_in(r, 0, 2) == 0) {
        run.tiling.dropout.on = true;
        run.tiling.dropout.p = rint_in(r, 0, 5) == 0 ? 0.0 : runi(r, 0.05, 0.9);
        run.tiling.dropout.seed = rnext(r);
    }
    snprintf(g_where, sizeof g_where,
             "backward case %d: heads %d/%d n_q %d n_kv %d d %d d_v %d mask %s%s Bq %d Bk %d %s %s%s%s%s", idx, hq,
             n_kv_heads, n_q, n_kv, d, d_v, mask == 4 ? "tree" : fs_mask_kind_str(a->mask.kind),
             a->mask.has_offset ? "+offset" : "", run.tiling.Bq, run.tiling.Bk, fs_form_str(run.tiling.form),
             fs_order_str(run.tiling.order), a->softcap > 0 ? " softcap" : "", dO ? " dO" : " dO=1",
             run.tiling.dropout.on ? " dropout" : "");

    const int ok = run_both(&run, 1);
    case_free(&c);
    free(dO);
    return ok;
}

/* One random case; returns 1 when it matches. */
static int one_case(rng_t *r, int idx)
{
    int group = rint_in(r, 1, 3), n_kv_heads = rint_in(r, 1, 2);
    int n_q = rint_in(r, 1, 40), n_kv = rint_in(r, 1, 50), d = rint_in(r, 1, 8), d_v = rint_in(r, 1, 8);
    int mask = rint_in(r, 0, 4);   /* none, causal, window, bits, tree */
    if (mask == 4) n_kv = n_q;     /* a tree is square */
    fs_run run = fs_run_make(rint_in(r, 0, 7) == 0 ? FS_ALGO_QUERY : FS_ALGO_TILED);
    fs_attn *a = &run.attn;
    *a = fs_attn_make(n_q, n_kv, d, d_v);
    case_inputs c = draw_inputs(r, a, group, n_kv_heads);
    const int hq = a->n_q_heads;
    double *S = NULL;
    if (rint_in(r, 0, 5) == 0) {   /* given scores, some of them −∞ */
        S = malloc(sizeof(double) * hq * n_q * n_kv);
        for (int i = 0; i < hq * n_q * n_kv; i++) S[i] = rint_in(r, 0, 9) == 0 ? -INFINITY : runi(r, -3, 3);
        a->S = S;
        a->Q = a->K = NULL;
    }
    draw_mask_tiling(r, a, &run.tiling, mask, c.bits, c.parent);
    run.tiling.exp2 = rint_in(r, 0, 2) == 0;
    snprintf(g_where, sizeof g_where,
             "case %d: %s heads %d/%d n_q %d n_kv %d d %d d_v %d mask %s%s Bq %d Bk %d %s %s%s%s%s", idx,
             fs_algo_str(run.algo), hq, n_kv_heads, n_q, n_kv, d, d_v,
             mask == 4 ? "tree" : fs_mask_kind_str(a->mask.kind), a->mask.has_offset ? "+offset" : "",
             run.tiling.Bq, run.tiling.Bk, fs_form_str(run.tiling.form), fs_order_str(run.tiling.order),
             run.tiling.exp2 ? " exp2" : "", S ? " given-S" : "", a->softcap > 0 ? " softcap" : "");

    const int ok = run_both(&run, 1);   /* never --host here: run_cuda is the GPU's fs_cuda_trace */
    case_free(&c);
    free(S);
    return ok;
}

/* One lesson run on the GPU against the engine's trace of it; 1 when it matches. *traced is
 * set when the run is one the CUDA backend covers. */
static int lesson_run(const char *path, const char *what, const fs_run *run, int *traced)
{
    *traced = 0;
    if (!run) return 1;
    const int backward = run->algo == FS_ALGO_BACKWARD;
    if (g_host && !backward) return 1;   /* the emulation covers the backward only */
    if (!backward && run->algo != FS_ALGO_TILED && run->algo != FS_ALGO_QUERY) return 1;
    if (run->algo != FS_ALGO_QUERY && run->tiling.pitfall != FS_PITFALL_NONE) return 1;
    /* what fs_cuda_trace refuses by design: the forward with FP8 inputs or with dropout */
    if (!backward && (run->lowp || run->tiling.dropout.on)) return 1;
    *traced = 1;
    snprintf(g_where, sizeof g_where, "%s (%s)", path, what);
    return run_both(run, 0);   /* a lesson's forward: the trace alone, as before */
}

/* Every lesson of dir: returns the number that failed; *n_traced counts the runs compared. */
static int lessons(const char *dir, int *n_traced)
{
    char **paths = NULL;
    int n = 0, bad = 0;
    *n_traced = 0;
    if (fs_lesson_list(dir, &paths, &n) != 0 || n == 0) {
        printf("  no lessons found in %s\n", dir);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        fs_lesson *l = NULL;
        fs_loc_error err;
        if (!fs_lesson_load(paths[i], &l, &err)) {
            printf("  %s:%d:%d: %s\n", paths[i], err.line, err.col, err.msg);
            bad++;
            continue;
        }
        int t1 = 0, t2 = 0;
        int ok = lesson_run(paths[i], "run", fs_lesson_run(l), &t1) &&
                 lesson_run(paths[i], "compare run", fs_lesson_compare_run(l), &t2);
        *n_traced += t1 + t2;
        if (!ok) bad++;
        fs_lesson_free(l);
    }
    printf("test_cuda: %d lessons, %d %s runs traced %s, %d lessons differ\n", n, *n_traced,
           g_host ? "backward" : "tiled/query/backward", g_host ? "by the CPU emulation" : "on the GPU", bad);
    fs_lesson_list_free(paths, n);
    return bad;
}

/* The comparison can fail: the same trace with one α nudged by 1% must be rejected. */
static int self_test(void)
{
    double Q[8], K[16], V[16];
    for (int i = 0; i < 8; i++) Q[i] = 0.3 * i - 1;
    for (int i = 0; i < 16; i++) K[i] = V[i] = 0.2 * i - 1.5;
    fs_run run = fs_run_make(FS_ALGO_TILED);
    run.attn = fs_attn_make(4, 8, 2, 2);
    run.attn.Q = Q;
    run.attn.K = K;
    run.attn.V = V;
    run.tiling.Bq = run.tiling.Bk = 2;
    fs_trace te, tg;
    fs_trace_init(&te);
    fs_trace_init(&tg);
    fs_result re, rg;
    char why[256] = "";
    snprintf(g_where, sizeof g_where, "self-test");
    int ok = fs_run_exec(&run, &re, &te) == FS_OK && fs_cuda_trace(&run, &rg, &tg, why, sizeof why) == FS_OK;
    ok = ok && cmp_traces(&tg, &te);
    int nudged = 0;
    for (int64_t k = 0; ok && k < tg.n && !nudged; k++)
        if (tg.ev[k].kind == FS_EV_ROW && tg.ev[k].alpha > 0 && tg.ev[k].alpha < 1) {
            tg.ev[k].alpha *= 1.01;
            nudged = 1;
        }
    printf("self-test: the traces match%s; with one alpha nudged: ", ok ? "" : " NOT");
    int caught = nudged && !cmp_traces(&tg, &te);
    printf("%s\n", caught ? "rejected, as it must be" : "NOT rejected");
    fs_result_free(&re);
    fs_result_free(&rg);
    fs_trace_free(&te);
    fs_trace_free(&tg);
    return ok && caught;
}

/* The same for the backward: one dS nudged by 1%, or one dK block's number, must be rejected. */
static int self_test_backward(void)
{
    double Q[12], K[16], V[16], dO[12];
    for (int i = 0; i < 12; i++) Q[i] = 0.3 * i - 1, dO[i] = 0.1 * i - 0.4;
    for (int i = 0; i < 16; i++) K[i] = V[i] = 0.2 * i - 1.5;
    fs_run run = fs_run_make(FS_ALGO_BACKWARD);
    run.attn = fs_attn_make(6, 8, 2, 2);
    run.attn.Q = Q;
    run.attn.K = K;
    run.attn.V = V;
    run.attn.mask.kind = FS_MASK_CAUSAL;
    run.dO = dO;
    run.tiling.Bq = 2;
    run.tiling.Bk = 3;
    fs_trace te, tg;
    fs_trace_init(&te);
    fs_trace_init(&tg);
    fs_result re, rg;
    char why[256] = "";
    snprintf(g_where, sizeof g_where, "backward self-test");
    int ok = fs_run_exec(&run, &re, &te) == FS_OK && run_cuda(&run, &rg, &tg, why, sizeof why) == FS_OK;
    ok = ok && cmp_traces(&tg, &te) && cmp_backward_results(&run.attn, &rg, &re);
    int caught = 0, tried = 0;
    for (int pass = 0; ok && pass < 2; pass++) {
        /* pass 0: a BROW's dS; pass 1: a BKEY's dK block */
        for (int64_t k = 0; k < tg.n; k++) {
            fs_event *e = &tg.ev[k];
            int64_t off = pass == 0 && e->kind == FS_EV_BROW ? e->ds_row : pass == 1 && e->kind == FS_EV_BKEY ? e->o_blk : -1;
            int32_t len = pass == 0 ? e->n_s : e->n_o;
            double *v = off >= 0 ? tg.pool + off : NULL;
            int32_t c = 0;
            while (v && c < len && fabs(v[c]) < 1e-2) c++;
            if (!v || c == len) continue;
            v[c] *= 1.01;
            tried++;
            caught += !cmp_traces(&tg, &te);
            v[c] /= 1.01;
            break;
        }
    }
    printf("backward self-test: the traces match%s; with one dS, then one dK block nudged: %s\n", ok ? "" : " NOT",
           tried == 2 && caught == 2 ? "rejected, as it must be" : "NOT rejected");
    fs_result_free(&re);   /* both calls zero their result first: freeing a failed one is safe */
    fs_result_free(&rg);
    fs_trace_free(&te);
    fs_trace_free(&tg);
    return ok && tried == 2 && caught == 2;
}

int main(int argc, char **argv)
{
    uint64_t seed = 0;
    int count = 300;
    const char *lesson_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--lessons") && i + 1 < argc) lesson_dir = argv[++i];
        else if (!strcmp(argv[i], "--host")) g_host = 1;
        else {
            fprintf(stderr, "usage: test_cuda [--host] [--seed N] [--count N] [--lessons DIR]\n");
            return 2;
        }
    }
    char why[256];
    if (!g_host && !fs_cuda_available(why, sizeof why)) {
        fprintf(stderr, "test_cuda: %s\n", why);
        return 2;
    }
    if (!seed) {
        const char *e = getenv("FS_SEED");
        if (e && *e) seed = strtoull(e, NULL, 0);
        else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
        }
    }
    rng_t r = {seed};
    int bad = 0, cases = 0, bad_cases = 0;
    for (int i = 0; !g_host && i < count; i++, cases++) bad_cases += !one_case(&r, i);
    for (int i = 0; i < count; i++, cases++) bad_cases += !one_backward_case(&r, i);
    bad += bad_cases;
    if (!g_host && !self_test()) bad++;
    if (!self_test_backward()) bad++;
    if (lesson_dir) {
        int traced = 0;
        bad += lessons(lesson_dir, &traced);
        if (traced == 0) bad++;   /* a lesson test that traced nothing cannot fail: a defect */
    }
    printf("test_cuda%s: %d of %d random cases (%s) match the engine (seed %llu)%s\n", g_host ? " --host" : "",
           cases - bad_cases, cases, g_host ? "backward, emulated on the CPU" : "forward and backward",
           (unsigned long long)seed, bad ? "; SOME CHECKS FAILED, replay with --seed" : "; every check passed");
    return bad ? 1 : 0;
}

/* check.c: the verdict on a candidate attention output (see check.h for the rule); the variants
 * that name its mistake are in diagnose.c, the precisions and the plain run in prec.c.
 *
 * Data flow: problem + candidate O → reference (float64) and plain (candidate's precision) →
 * per-row errors → verdict. On a fail: the problem is cut into single-head pieces (all rows, or
 * for large problems one block of rows around the worst one), every variant is computed on the
 * pieces by the engine (fs_reference with a changed problem, fs_tiled with a pitfall), and the
 * candidate's distance from each decides the diagnosis.
 */
#include "check/check.h"
#include "check/diagnose.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/reference.h"
#include "engine/tiled.h"

/* ---- diagnoses ---- */

const char *fs_diag_str(fs_diag d)
{
    static const char *s[] = {"ok", "wrong-scale", "mask-missing", "causal-shift", "no-rescale", "no-beta",
                              "unnormalized", "nan-rows", "k-transposed", "q-k-swapped", "unknown"};
    return (unsigned)d < FS_DIAG_COUNT ? s[d] : "?";
}

const char *fs_diag_sentence(fs_diag d)
{
    switch (d) {
    case FS_DIAG_OK: return "The output agrees with the float64 reference as closely as its precision allows.";
    case FS_DIAG_WRONG_SCALE:
        return "The scores were multiplied by the wrong scale before the softmax (the documents use 1/sqrt(d)).";
    case FS_DIAG_MASK_MISSING:
        return "The mask was not applied: queries also attend to keys the mask hides (future keys, for causal).";
    case FS_DIAG_CAUSAL_SHIFT:
        return "The causal boundary is off: a query misses its own key, sees one future key, or the "
               "queries are aligned to the first keys instead of the last ones.";
    case FS_DIAG_NO_RESCALE:
        return "The running output is not rescaled when the running max grows (001's pitfall 1): the "
               "old o must be multiplied by alpha * l_old / l_new (or, in the form that divides by l at "
               "the end, o and l both by alpha).";
    case FS_DIAG_NO_BETA:
        return "Each block's weights exp(S - m_blk) are used without the factor beta = exp(m_blk - m_new) "
               "(001's pitfall 2).";
    case FS_DIAG_UNNORMALIZED:
        return "The final division by l was forgotten: the output is the sum of exp(S - m) V, not its "
               "average.";
    case FS_DIAG_NAN_ROWS:
        return "Rows that see no key (or whose first visited block hides every key) hold NaN: exp(-inf - "
               "(-inf)) or 0/0 was not guarded (001's pitfall 4); such rows should be 0.";
    case FS_DIAG_K_TRANSPOSED: return "K was read transposed: key j was taken from column j of K instead of row j.";
    case FS_DIAG_Q_K_SWAPPED: return "Q and K were swapped: the scores are K Q^T instead of Q K^T.";
    case FS_DIAG_UNKNOWN: return "The output is wrong, and it matches none of the known mistakes.";
    default: return "?";
    }
}

const char *fs_diag_lesson(fs_diag d)
{
    switch (d) {
    case FS_DIAG_WRONG_SCALE: return "000_02";
    case FS_DIAG_MASK_MISSING: return "000_03";
    case FS_DIAG_CAUSAL_SHIFT: return "000_04";
    case FS_DIAG_NO_RESCALE: return "001_10";
    case FS_DIAG_NO_BETA: return "001_13";
    case FS_DIAG_UNNORMALIZED: return "000_02";
    case FS_DIAG_NAN_ROWS: return "001_15";
    default: return NULL;
    }
}

fs_check_opts fs_check_opts_default(void)
{
    fs_check_opts o = {.prec = FS_PREC_F32, .diagnose = true, .fp8_scale = {1, 1, 1}};
    return o;
}

int fs_check_threads(const fs_check_opts *o)
{
    if (o && o->threads > 0) return o->threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (n > 256 ? 256 : (int)n) : 1;
}

/* ---- the two passes (reference and plain run), in tasks of CHECK_TASK_ROWS rows of one head,
 * on threads: each task writes only its own rows, so the result does not depend on the number
 * of threads. ---- */

#define CHECK_TASK_ROWS 256

typedef struct {
    const fs_attn *a;
    const fs_check_opts *o;     /* the precision (and FP8 descales) of the plain run */
    double *Oref, *m, *l, *Opl, *lse_pl;
    int32_t per_head;           /* tasks per head */
    int64_t n_tasks;
    atomic_llong next;          /* the next task to take */
    atomic_llong done;          /* work finished: multiply-adds of both passes */
    atomic_int failed;          /* an fs_status, FS_OK while none failed */
    double total;
} passes;

/* Work of rows r0 … r1 − 1: the keys the passes visit times d + d_v (the dominant cost). */
static double rows_work(const fs_attn *a, int32_t r0, int32_t r1)
{
    double w = 0;
    for (int32_t i = r0; i < r1; i++) {
        int32_t lo, hi;
        fs_check_visible_range(a, i, &lo, &hi);
        w += hi - lo;
    }
    return w * (a->d + a->d_v) + 1;
}

/* The work of one pass over all of problem a. */
static double problem_work(const fs_attn *a)
{
    double w = 0;
    for (int32_t r0 = 0; r0 < a->n_q; r0 += CHECK_TASK_ROWS)
        w += rows_work(a, r0, r0 + CHECK_TASK_ROWS < a->n_q ? r0 + CHECK_TASK_ROWS : a->n_q);
    return w * a->n_q_heads;
}

/* The plain run of rows r0 … r1 − 1 of head h in o's precision: an FP8 one with o's descales. */
static fs_status plain_rows(const fs_attn *a, const fs_check_opts *o, int32_t h, int32_t r0, int32_t r1, double *O,
                            double *lse)
{
    if (fs_prec_is_fp8(o->prec))
        return o->kv_only ? fs_check_plain_rows_fp8kv(a, o->prec, o->fp8_scale, h, r0, r1, O, lse)
                          : fs_check_plain_rows_fp8(a, o->prec, o->fp8_scale, h, r0, r1, O, lse);
    return fs_check_plain_rows(a, o->prec, h, r0, r1, O, lse);
}

/* Take tasks until none is left; false when the caller should stop (a task failed). */
static bool passes_work(passes *P, bool one)
{
    const fs_attn *a = P->a;
    for (;;) {
        if (atomic_load(&P->failed) != FS_OK) return false;
        int64_t t = atomic_fetch_add(&P->next, 1);
        if (t >= P->n_tasks) return false;
        int32_t h = (int32_t)(t / P->per_head), r0 = (int32_t)(t % P->per_head) * CHECK_TASK_ROWS;
        int32_t r1 = r0 + CHECK_TASK_ROWS < a->n_q ? r0 + CHECK_TASK_ROWS : a->n_q;
        size_t row = (size_t)h * a->n_q + r0;
        fs_status st = fs_check_reference_rows(a, h, r0, r1, P->Oref + row * a->d_v, P->m + row, P->l + row);
        if (st == FS_OK) st = plain_rows(a, P->o, h, r0, r1, P->Opl + row * a->d_v, P->lse_pl + row);
        if (st != FS_OK) {
            int ok = FS_OK;
            atomic_compare_exchange_strong(&P->failed, &ok, (int)st);
            return false;
        }
        atomic_fetch_add(&P->done, 2 * (long long)rows_work(a, r0, r1));   /* both passes */
        if (one) return true;
    }
}

static void *passes_thread(void *arg)
{
    passes_work(arg, false);
    return NULL;
}

static fs_status passes_run(const fs_attn *a, const fs_check_opts *o, double *Oref, double *m, double *l, double *Opl,
                            double *lse_pl)
{
    passes P = {a, o, Oref, m, l, Opl, lse_pl, (a->n_q + CHECK_TASK_ROWS - 1) / CHECK_TASK_ROWS, 0, 0, 0, FS_OK, 0};
    P.n_tasks = (int64_t)a->n_q_heads * P.per_head;
    atomic_init(&P.next, 0);
    atomic_init(&P.done, 0);
    atomic_init(&P.failed, FS_OK);
    P.total = 2 * problem_work(a);   /* the reference and the plain run */
    int nt = fs_check_threads(o);
    if (nt > P.n_tasks) nt = (int)P.n_tasks;
    pthread_t *th = nt > 1 ? calloc((size_t)nt - 1, sizeof *th) : NULL;
    int started = 0;
    for (int k = 0; th && k < nt - 1; k++)
        if (pthread_create(&th[k], NULL, passes_thread, &P) == 0) started++;
    /* this thread works too, and reports between its tasks */
    while (passes_work(&P, true))
        if (o->progress) o->progress(o->progress_ctx, "judging", (double)atomic_load(&P.done), P.total);
    for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
    free(th);
    if (o->progress && atomic_load(&P.failed) == FS_OK) o->progress(o->progress_ctx, "judging", P.total, P.total);
    return (fs_status)atomic_load(&P.failed);
}

void fs_check_result_free(fs_check_result *r)
{
    free(r->row_err);
    free(r->row_ref_err);
    free(r->row_col);
    free(r->row_lse_err);
    r->row_err = r->row_ref_err = r->row_lse_err = NULL;
    r->row_col = NULL;
}

/* ---- the cost of a check, for --dry-run ---- */

/* The diagnosis's run counts (fs_check_diagnose): the variants listed for this problem, in units
 * of one reference pass over the diagnosed rows (a pitfall run costs about two, a slip about four
 * with its run in the candidate's precision; measured on this project's machine, docs/check.md),
 * and the scale fit's 65-point grid and 42 golden-section steps. */

fs_status fs_check_estimate_cost(const fs_attn *a, const fs_check_opts *o, fs_check_estimate *e)
{
    memset(e, 0, sizeof *e);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    e->threads = fs_check_threads(o);
    e->work = problem_work(a);
    e->scores = e->work / (a->d + a->d_v);
    /* the sample: the last rows of head 0, timed twice, the faster kept */
    int32_t ns = a->n_q < 64 ? a->n_q : 64, r0 = a->n_q - ns;
    double *O = malloc(sizeof(double) * (size_t)ns * a->d_v), *m = malloc(sizeof(double) * (size_t)ns * 3);
    if (!O || !m) { free(O); free(m); return FS_ERR_NOMEM; }
    double t_ref = INFINITY, t_plain = INFINITY;
    for (int rep = 0; rep < 2 && st == FS_OK; rep++) {
        struct timespec t0, t1, t2;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        st = fs_check_reference_rows(a, 0, r0, a->n_q, O, m, m + ns);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (st == FS_OK) st = plain_rows(a, o, 0, r0, a->n_q, O, m + 2 * ns);
        clock_gettime(CLOCK_MONOTONIC, &t2);
        t_ref = fmin(t_ref, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
        t_plain = fmin(t_plain, (t2.tv_sec - t1.tv_sec) + (t2.tv_nsec - t1.tv_nsec) * 1e-9);
    }
    free(O);
    free(m);
    if (st != FS_OK) return st;
    double w_sample = rows_work(a, r0, a->n_q);
    e->sample_rows = ns;
    int64_t tasks = (int64_t)a->n_q_heads * ((a->n_q + CHECK_TASK_ROWS - 1) / CHECK_TASK_ROWS);
    double par = (double)(tasks < e->threads ? tasks : e->threads);
    e->verdict_s = e->work * (t_ref + t_plain) / w_sample / par;
    /* the diagnosed rows: every row up to 4096, else 512 (taken where they cost most) */
    int64_t rows = (int64_t)a->n_q_heads * a->n_q;
    double w_diag = rows <= 4096 ? e->work : rows_work(a, a->n_q > 512 ? a->n_q - 512 : 0, a->n_q);
    int blocks = 0, bk[] = FS_CHECK_BLOCKS;
    for (size_t b = 0; b < sizeof bk / sizeof bk[0]; b++) blocks += bk[b] < a->n_kv;
    if (o->bk > 0) blocks = o->bk < a->n_kv;
    double listed = 10 + 16.0 * blocks, one = w_diag * t_ref / w_sample;
    double dpar = e->threads < listed ? e->threads : listed;
    /* the model counts the runs; the rest (the slips' scores computed once, scalar, the distances,
     * the golden-section steps one after another) made the measured times 1.6 to 1.8 times the
     * count on this project's 2-core machine (docs/check.md): the estimate is scaled by 1.7 */
    e->diagnose_s = 1.7 * (w_diag * t_plain / w_sample + listed * one / dpar);
    e->diagnose_max_s = e->diagnose_s + 1.7 * (65 / fmin(e->threads, 65) + 42) * one;
    return FS_OK;
}

/* The floor's c: the precision's, but float16's for an FP8 KV cache (--kv-only), whose output is
 * written in the query's precision (FP8 attention writes bfloat16, hence its wider floor). */
static double floor_factor(const fs_check_opts *o)
{
    return o->kv_only ? fs_check_floor_factor(FS_PREC_F16) : fs_check_floor_factor(o->prec);
}

fs_status fs_check_judge(const fs_attn *a, const double *O, const fs_check_opts *o, fs_check_result *r)
{
    /* a: the problem; O (HQ, n_q, d_v) the candidate; o->lse (HQ, n_q) optional */
    assert(a && O && o && r);
    memset(r, 0, sizeof *r);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    if ((unsigned)o->prec >= FS_PREC_COUNT || o->bk < 0 || (o->kv_only && !fs_prec_is_fp8(o->prec))) return FS_ERR_ARG;
    const int64_t rows = (int64_t)a->n_q_heads * a->n_q;
    const size_t n = (size_t)rows * (size_t)a->d_v;
    double *Oref = malloc(sizeof(double) * n), *Opl = malloc(sizeof(double) * n);
    double *m = malloc(sizeof(double) * (size_t)rows), *l = malloc(sizeof(double) * (size_t)rows);
    double *lse_pl = malloc(sizeof(double) * (size_t)rows);
    r->row_err = malloc(sizeof(double) * (size_t)rows);
    r->row_ref_err = malloc(sizeof(double) * (size_t)rows);
    r->row_col = malloc(sizeof(int32_t) * (size_t)rows);
    if (o->lse) r->row_lse_err = malloc(sizeof(double) * (size_t)rows);
    st = FS_ERR_NOMEM;
    if (!Oref || !Opl || !m || !l || !lse_pl || !r->row_err || !r->row_ref_err || !r->row_col ||
        (o->lse && !r->row_lse_err))
        goto done;
    if ((st = passes_run(a, o, Oref, m, l, Opl, lse_pl)) != FS_OK) goto done;

    /* per-row errors */
    for (size_t e = 0; e < n; e++) r->max_ref = fmax(r->max_ref, fabs(Oref[e]));
    r->worst = 0;
    for (int64_t k = 0; k < rows; k++) {
        double ec = 0, ep = 0;
        int32_t col = 0;
        bool bad = false;
        for (int32_t c = 0; c < a->d_v; c++) {
            size_t e = (size_t)k * a->d_v + c;
            /* A finite O whose distance overflows (|O| near DBL_MAX) is at least DBL_MAX away:
             * inf is kept for O's own NaN and inf. */
            double dc = fmin(fabs(O[e] - Oref[e]), DBL_MAX), dp = fabs(Opl[e] - Oref[e]);
            if (!isfinite(O[e])) {
                dc = INFINITY;
                if (!bad) col = c;
                bad = true;
            }
            if (dc > ec) {
                ec = dc;
                col = c;
            }
            if (dp > ep || isnan(dp)) ep = dp;
        }
        r->nan_rows += bad;
        r->row_err[k] = ec;
        r->row_ref_err[k] = isnan(ep) ? INFINITY : ep;   /* the plain run overflowed: no bound */
        r->plain_overflow_rows += isnan(ep);
        r->row_col[k] = col;
        if (ec > r->row_err[r->worst]) r->worst = k;
        if (ec > r->max_abs_err) r->max_abs_err = ec;
        if (isfinite(ep) && ep > r->reference_err) r->reference_err = ep;   /* overflowed plain rows are left out */
    }
    r->worst_col = r->row_col[r->worst];
    r->floor = floor_factor(o) * fmax(1.0, r->max_ref);
    r->tolerance = 2 * r->reference_err + r->floor;
    for (int64_t k = 0; k < rows; k++) r->rows_over += !(r->row_err[k] <= r->tolerance);
    bool pass_o = r->max_abs_err <= r->tolerance;

    /* log-sum-exp: ±inf is right for a row that sees no key */
    bool pass_lse = true;
    if (o->lse) {
        r->lse_checked = true;
        double mx = 0;
        for (int64_t k = 0; k < rows; k++) {
            double ref = l[k] > 0 ? m[k] + log(l[k]) : -INFINITY;
            if (isfinite(ref)) mx = fmax(mx, fabs(ref));
            double c = o->lse[k], ec, ep;
            if (!isfinite(ref)) {
                ec = isinf(c) ? 0 : INFINITY;
                ep = 0;
            } else {
                ec = isfinite(c) ? fmin(fabs(c - ref), DBL_MAX) : INFINITY;
                ep = fabs(lse_pl[k] - ref);
            }
            r->row_lse_err[k] = ec;
            if (!(ec <= r->lse_err)) r->lse_err = ec;
            if (isfinite(ep) && ep > r->lse_reference_err) r->lse_reference_err = ep;
        }
        r->lse_tolerance = 2 * r->lse_reference_err + floor_factor(o) * fmax(1.0, mx);
        pass_lse = r->lse_err <= r->lse_tolerance;
        r->lse_pass = pass_lse;
    }
    r->pass = pass_o && pass_lse;
    st = FS_OK;
    if (r->pass) {
        r->diag = FS_DIAG_OK;
        snprintf(r->detail, sizeof r->detail, "max |O - O_ref| = %.3g is within 2 x %.3g + %.3g (a plain %s "
                 "implementation's error, twice, plus the floor)%s.", r->max_abs_err, r->reference_err, r->floor,
                 fs_prec_str(o->prec), o->lse ? "; the log-sum-exp too" : "");
    } else if (!o->diagnose) {
        r->diag = FS_DIAG_UNKNOWN;
        snprintf(r->detail, sizeof r->detail, "not diagnosed");
    } else if (pass_o) {
        fs_check_diagnose_lse(a, o->lse, m, l, o, r);
    } else {
        fs_check_diagnose(a, O, Oref, l, o, r);
    }
done:
    free(Oref);
    free(Opl);
    free(m);
    free(l);
    free(lse_pl);
    return st;
}


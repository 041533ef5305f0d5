/* diagnose.c: which known mistake a failing output matches (see check.h for the rule).
 *
 * The problem is cut into single-head pieces (all rows, or for large problems one block of rows
 * around the worst one); every variant is computed on the pieces by the engine (fs_reference on
 * a changed problem, fs_tiled with a pitfall), and the candidate's distance from each decides.
 */
#include "check/diagnose.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/prec.h"
#include "engine/reference.h"
#include "engine/tiled.h"

#define LOG2E 1.4426950408889634074
#define LN2   0.69314718055994530942

/* Above this many rows (heads × queries) the diagnosis runs on one block of DIAG_BLOCK rows of the
 * worst head, not on everything: each variant costs a full pass over the problem. */
#define DIAG_MAX_ROWS 4096
#define DIAG_BLOCK    512

/* ---- the pieces a diagnosis runs on ---- */

/* One head, rows [r0, r0 + a.n_q) of it, as a problem of its own: the mask's offset is made
 * explicit so that the rows keep their positions. */
typedef struct {
    fs_attn a;
    int32_t h, r0;
    int32_t base_offset;   /* position of query row 0 of the whole head */
    const double *Qh;      /* every query row of the head (n_q_full, d) */
    int32_t n_q_full;
    const double *Oc;      /* candidate rows (a.n_q, d_v) */
    const double *Oref;    /* reference rows */
    const double *lref;    /* reference ℓ per row */
    double *Kt;            /* scratch: Kᵀ when n_kv = d */
    double *S64, *Sp;      /* the piece's scores (a.n_q, n_kv), exact and as the plain run in the
                            * candidate's precision rounds them (−∞ where masked), for the slips
                            * (acc_slip_run), which all share them; NULL when too large to keep */
} piece;

typedef struct {
    piece *p;
    int32_t n;
    double tol, mref;     /* the verdict's tolerance and max |O_ref| */
    fs_prec prec;         /* the precision the candidate ran in */
    size_t scratch;       /* doubles of one piece's output: the scratch each variant run needs */
    double *O, *Op;       /* scratch of the calling thread: exact and in prec */
    int threads;
    const fs_check_opts *opts;   /* for progress */
} diag_ctx;

/* A variant: what is changed from the problem the candidate was asked to compute. */
typedef struct {
    fs_diag diag;
    double scale;          /* NAN: unchanged */
    int mask;              /* 0 unchanged, 1 none, 2 causal instead of window */
    bool shift;            /* offset = base_offset + offset_delta, or 0 when top_left */
    int32_t offset_delta;
    bool top_left;
    fs_pitfall pitfall;    /* with bk: a tiled run */
    int32_t bk;
    bool k_transposed, qk_swapped;
    int acc_slip;          /* with bk, a slip of the online loop in another form than 001's
                              (acc_slip_run): 1 o without α, 2 ℓ without α (unnormalized),
                              3 o without its rescale (normalized, running max), 4 no final
                              division (unnormalized) */
} variant;

static variant variant_blank(fs_diag d)
{
    variant v;
    memset(&v, 0, sizeof v);
    v.diag = d;
    v.scale = NAN;
    return v;
}

/* The online loop with one of its corrections left out, in the forms kernels are written in,
 * for problem b (one head), keys in blocks of bk. The engine's pitfalls are 001's normalized form
 * (fs_tiled); these are the same slips in the other forms people write:
 *   unnormalized (000, 002, 004):  o_new = α o_old + P V,  ℓ_new = α ℓ_old + Σ P,
 *                                  P = exp(S − m_new),  O = o / ℓ at the end
 *   slip 1: o_new = o_old + P V (the accumulator keeps its old scale)
 *   slip 2: ℓ_new = ℓ_old + Σ P (the sum keeps its old scale)
 *   normalized with the running maximum, o kept divided by ℓ:
 *                                  o_new = (α ℓ_old o_old + P V) / ℓ_new
 *   slip 3: o_new = o_old + P V / ℓ_new (the old output neither rescaled by α nor reweighted by
 *           ℓ_old / ℓ_new: 001's pitfall 1 as it is most often written)
 *   slip 4: O = o, the division by ℓ at the end left out (in exact arithmetic the same for every
 *           bk: the reference times ℓ; run as one block)
 * (001's pitfall 2 in the unnormalized form, P = exp(S − m_blk) added without β, is not here: o / ℓ
 * is then the same as in the normalized form, so the engine's pitfall already names it.)
 * Run in precision p, every operation rounded as fs_check_plain rounds (FS_PREC_F64: the exact
 * scores and no rounding): a slip changes how the numbers grow, so its own rounding error can
 * exceed the plain run's, and the diagnosis measures it this way. */
static fs_status acc_slip_run(const fs_attn *b, int32_t bk, int slip, fs_prec p, const double *S, double *O)
{
    /* Q (n_q, d), K (n_kv, d), V (n_kv, d_v) → O (n_q, d_v); S: the scores (n_q, n_kv) already
     * computed in precision p (exact for FS_PREC_F64), or NULL */
    double *s = malloc(sizeof(double) * ((size_t)b->n_kv + (size_t)b->d_v));
    if (!s) return FS_ERR_NOMEM;
    double *pv = s + b->n_kv;   /* the block's P V (slip 3) */
#define R(x) fs_prec_round(p, (x))
    for (int32_t i = 0; i < b->n_q; i++) {
        double *o = O + (size_t)i * b->d_v, m = -INFINITY, l = 0;
        for (int32_t c = 0; c < b->d_v; c++) o[c] = 0;
        for (int32_t j = 0; j < b->n_kv; j++)
            s[j] = S ? S[(size_t)i * b->n_kv + j]
                 : p == FS_PREC_F64 ? fs_reference_score(b, 0, i, j) : fs_check_plain_score(b, p, 0, i, j);
        for (int32_t c0 = 0; c0 < b->n_kv; c0 += bk) {
            int32_t c1 = c0 + bk < b->n_kv ? c0 + bk : b->n_kv;
            double m_blk = -INFINITY;
            for (int32_t j = c0; j < c1; j++) m_blk = fmax(m_blk, s[j]);
            if (m_blk == -INFINITY) continue;
            double m_new = fmax(m, m_blk), alpha = R(exp(R(m - m_new))), sum = 0;
            if (slip != 1 && slip != 3)
                for (int32_t c = 0; c < b->d_v; c++) o[c] = R(o[c] * alpha);
            double *acc = slip == 3 ? pv : o;
            if (slip == 3)
                for (int32_t c = 0; c < b->d_v; c++) pv[c] = 0;
            for (int32_t j = c0; j < c1; j++) {
                if (s[j] == -INFINITY) continue;
                double pj = R(exp(R(s[j] - m_new)));
                sum = R(sum + pj);
                for (int32_t c = 0; c < b->d_v; c++) acc[c] = R(acc[c] + R(pj * R(b->V[(size_t)j * b->d_v + c])));
            }
            l = R((slip == 2 ? l : R(alpha * l)) + sum);
            if (slip == 3)
                for (int32_t c = 0; c < b->d_v; c++) o[c] = R(o[c] + R(pv[c] / l));
            m = m_new;
        }
        if (slip != 3 && slip != 4)
            for (int32_t c = 0; c < b->d_v; c++) o[c] = l > 0 ? R(o[c] / l) : 0;
    }
#undef R
    free(s);
    return FS_OK;
}

/* The variant's output for one piece into O (n_q, d_v), through the engine; p: the precision of
 * acc_slip_run (the engine's runs are exact). */
static fs_status variant_run(const piece *pc, const variant *v, fs_prec p, double *O)
{
    fs_attn b = pc->a;
    if (!isnan(v->scale)) b.scale = v->scale;
    if (v->mask == 1) b.mask.kind = FS_MASK_NONE;
    if (v->mask == 2) b.mask.kind = FS_MASK_CAUSAL;
    if (v->shift) b.mask.offset = (v->top_left ? 0 : pc->base_offset + v->offset_delta) + pc->r0;
    if (v->k_transposed) b.K = pc->Kt;
    if (v->qk_swapped) {
        /* S = K Qᵀ: the query rows are the keys' rows, the keys are the head's queries */
        b.Q = pc->a.K + (size_t)pc->r0 * b.d;
        b.K = pc->Qh;
    }
    fs_status st;
    if (v->acc_slip) {
        st = acc_slip_run(&b, v->bk, v->acc_slip, p, p == FS_PREC_F64 ? pc->S64 : pc->Sp, O);
    } else if (v->pitfall != FS_PITFALL_NONE) {
        fs_tiling t = fs_tiling_default();
        t.Bk = v->bk;
        t.pitfall = v->pitfall;
        st = fs_tiled(&b, &t, O, NULL, NULL, NULL);
    } else {
        st = fs_check_reference_rows(&b, 0, 0, b.n_q, O, NULL, NULL);   /* = fs_reference, bit for bit */
    }
    return st;
}

/* Distance of the candidate from a variant, in units of the variant's tolerance (≤ 1: it
 * matches). The tolerance grows with the variant's size: an unnormalized output is ℓ times
 * larger, and so are a low-precision kernel's rounding errors in it. A slip of the accumulator
 * or a missing final division also changes how errors build up (an unnormalized float16 row sums
 * its n_kv terms at ℓ times the scale, each addition rounded there), so for those the variant is
 * run in the candidate's precision too and judged by the verdict's own rule: 2 · its plain error +
 * floor, where that is larger.
 * *dist gets max |O − O_var|; NaN or inf in the candidate where the variant is finite (or the
 * other way) is infinitely far. A variant that would itself pass as the reference on these
 * inputs (a scale a hair off, a pitfall that never bites) explains nothing: it is infinitely far
 * too. */
static double variant_dist_in(const diag_ctx *D, double *Os, double *Ops, const variant *v, double *dist)
{
    double worst = 0, mv = 0, from_ref = 0, plain = 0;
    for (int32_t k = 0; k < D->n; k++) {
        const piece *pc = &D->p[k];
        if (variant_run(pc, v, FS_PREC_F64, Os) != FS_OK) return INFINITY;
        size_t n = (size_t)pc->a.n_q * pc->a.d_v;
        for (size_t e = 0; e < n; e++) {
            double x = pc->Oc[e], y = Os[e];
            double d = (isnan(x) && isnan(y)) ? 0 : (isfinite(x) && isfinite(y)) ? fabs(x - y) : INFINITY;
            if (!(d <= worst)) worst = d;
            if (isfinite(y) && fabs(y) > mv) mv = fabs(y);
            double dr = isfinite(y) ? fabs(y - pc->Oref[e]) : INFINITY;
            if (!(dr <= from_ref)) from_ref = dr;
        }
    }
    if (dist) *dist = worst;
    double tol = D->tol * fmax(1.0, mv) / fmax(1.0, D->mref);
    /* A match needs worst ≤ tol < from_ref whatever the tolerance, so the run in the candidate's
     * precision (as costly as the plain run) is made only when worst < from_ref. */
    if (v->acc_slip && D->prec != FS_PREC_F64 && !fs_prec_is_fp8(D->prec) && worst < from_ref) {
        for (int32_t k = 0; k < D->n; k++) {
            const piece *pc = &D->p[k];
            if (variant_run(pc, v, FS_PREC_F64, Os) != FS_OK || variant_run(pc, v, D->prec, Ops) != FS_OK)
                return INFINITY;
            size_t n = (size_t)pc->a.n_q * pc->a.d_v;
            for (size_t e = 0; e < n; e++)
                if (isfinite(Os[e]) && isfinite(Ops[e])) plain = fmax(plain, fabs(Ops[e] - Os[e]));
        }
        tol = fmax(tol, 2 * plain + fs_check_floor_factor(D->prec) * fmax(1.0, mv));
    }
    return from_ref <= tol ? INFINITY : worst / tol;
}

/* The same with the calling thread's scratch. */
static double variant_dist(diag_ctx *D, const variant *v, double *dist)
{
    return variant_dist_in(D, D->O, D->Op, v, dist);
}

/* variant_dist of n variants on D's threads: d[k] and dist[k] (each thread its own scratch; the
 * variants are independent, so the results do not depend on the number of threads). */
typedef struct {
    const diag_ctx *D;
    const char *what;     /* for the progress line */
    const variant *vs;
    int n;
    double *d, *dist;
    atomic_int next, done;
} dist_job;

static void dist_work(dist_job *J, bool report)
{
    double *Os = malloc(sizeof(double) * J->D->scratch * 2);
    for (;;) {
        int k = atomic_fetch_add(&J->next, 1);
        if (k >= J->n) break;
        J->d[k] = Os ? variant_dist_in(J->D, Os, Os + J->D->scratch, &J->vs[k], &J->dist[k]) : INFINITY;
        int done = atomic_fetch_add(&J->done, 1) + 1;
        if (report && J->D->opts && J->D->opts->progress)
            J->D->opts->progress(J->D->opts->progress_ctx, J->what, done, J->n);
    }
    free(Os);
}

static void *dist_thread(void *arg)
{
    dist_work(arg, false);
    return NULL;
}

static void variant_dists(const diag_ctx *D, const char *what, const variant *vs, int n, double *d, double *dist)
{
    dist_job J = {D, what, vs, n, d, dist, 0, 0};
    atomic_init(&J.next, 0);
    atomic_init(&J.done, 0);
    int nt = D->threads < n ? D->threads : n;
    pthread_t th[256];
    int started = 0;
    for (int k = 0; k < nt - 1 && k < 256; k++)
        if (pthread_create(&th[k], NULL, dist_thread, &J) == 0) started++;
    dist_work(&J, true);
    for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
}

/* Cut the problem into pieces: every head whole, or one block of rows of the worst head. */
static fs_status pieces_make(const fs_attn *a, const double *O, const double *Oref, const double *lref,
                             int64_t worst, diag_ctx *D)
{
    int64_t rows = (int64_t)a->n_q_heads * a->n_q;
    bool whole = rows <= DIAG_MAX_ROWS;
    D->n = whole ? a->n_q_heads : 1;
    D->p = calloc((size_t)D->n, sizeof(piece));
    if (!D->p) return FS_ERR_NOMEM;
    int32_t nq = whole ? a->n_q : (a->n_q < DIAG_BLOCK ? a->n_q : DIAG_BLOCK);
    D->scratch = (size_t)nq * a->d_v;
    D->O = malloc(sizeof(double) * D->scratch);
    D->Op = malloc(sizeof(double) * D->scratch);
    if (!D->O || !D->Op) return FS_ERR_NOMEM;
    int32_t base = a->mask.has_offset ? a->mask.offset : a->n_kv - a->n_q;
    for (int32_t k = 0; k < D->n; k++) {
        piece *pc = &D->p[k];
        int32_t h = whole ? k : (int32_t)(worst / a->n_q);
        int32_t r0 = 0;
        if (!whole) {
            int32_t wr = (int32_t)(worst % a->n_q);
            r0 = wr / nq * nq;
            if (r0 + nq > a->n_q) r0 = a->n_q - nq;
        }
        int32_t g = fs_attn_kv_head(a, h);
        pc->h = h;
        pc->r0 = r0;
        pc->base_offset = base;
        pc->n_q_full = a->n_q;
        fs_attn *b = &pc->a;
        *b = *a;
        b->n_q_heads = b->n_kv_heads = 1;
        b->n_q = nq;
        if (a->Q) b->Q = a->Q + ((size_t)h * a->n_q + r0) * a->d;
        if (a->K) b->K = a->K + (size_t)g * a->n_kv * a->d;
        if (a->S) b->S = a->S + ((size_t)h * a->n_q + r0) * a->n_kv;
        b->V = a->V + (size_t)g * a->n_kv * a->d_v;
        b->mask.has_offset = true;
        b->mask.offset = base + r0;
        if (a->mask.kind == FS_MASK_BITS) b->mask.bits = a->mask.bits + (size_t)r0 * a->mask.words_per_row;
        pc->Qh = a->Q ? a->Q + (size_t)h * a->n_q * a->d : NULL;
        size_t at = ((size_t)h * a->n_q + r0) * a->d_v;
        pc->Oc = O + at;
        pc->Oref = Oref + at;
        pc->lref = lref + (size_t)h * a->n_q + r0;
        /* The slips' scores, at most 64 MB of each; none in the candidate's precision where the
         * slips never run in it (float64 is the exact run; FP8 has a recipe, not such a run). */
        size_t ns = (size_t)nq * a->n_kv;
        bool in_prec = D->prec != FS_PREC_F64 && !fs_prec_is_fp8(D->prec);
        if (ns <= ((size_t)1 << 23) / (size_t)D->n) {
            pc->S64 = malloc(sizeof(double) * ns);
            pc->Sp = in_prec ? malloc(sizeof(double) * ns) : NULL;
            if (!pc->S64 || (in_prec && !pc->Sp)) {   /* then computed run by run instead */
                free(pc->S64);
                free(pc->Sp);
                pc->S64 = pc->Sp = NULL;
            }
            for (int32_t i = 0; pc->S64 && i < nq; i++) {
                for (int32_t j = 0; j < a->n_kv; j++) {
                    pc->S64[(size_t)i * a->n_kv + j] = fs_reference_score(b, 0, i, j);
                    if (pc->Sp) pc->Sp[(size_t)i * a->n_kv + j] = fs_check_plain_score(b, D->prec, 0, i, j);
                }
            }
        }
        if (a->K && a->n_kv == a->d) {
            pc->Kt = malloc(sizeof(double) * (size_t)a->d * a->d);
            if (!pc->Kt) return FS_ERR_NOMEM;
            for (int32_t j = 0; j < a->d; j++)
                for (int32_t c = 0; c < a->d; c++) pc->Kt[(size_t)j * a->d + c] = b->K[(size_t)c * a->d + j];
        }
    }
    return FS_OK;
}

static void pieces_free(diag_ctx *D)
{
    for (int32_t k = 0; D->p && k < D->n; k++) {
        free(D->p[k].Kt);
        free(D->p[k].S64);
        free(D->p[k].Sp);
    }
    free(D->p);
    free(D->O);
    free(D->Op);
}

/* "batch 1, head 3, row 17" (or "head 3, row 17") of a flat row index. */
static void where(const fs_attn *a, int32_t hpb, int64_t flat, char *buf, size_t n)
{
    int32_t h = (int32_t)(flat / a->n_q), i = (int32_t)(flat % a->n_q);
    if (hpb > 0 && a->n_q_heads > hpb)
        snprintf(buf, n, "batch %d, head %d, row %d", h / hpb, h % hpb, i);
    else if (a->n_q_heads > 1)
        snprintf(buf, n, "head %d, row %d", h, i);
    else
        snprintf(buf, n, "row %d", i);
}

/* A scale as people write it, when it is one of the usual ones. */
static const char *scale_name(double s, int32_t d, double given)
{
    struct { double v; const char *name; } known[] = {
        {1.0 / d, "1/d"}, {1.0, "1 (no scale)"}, {1.0 / sqrt(d), "1/sqrt(d)"},
        {given * LOG2E, "the given scale times log2(e) (exp2's factor, then exp)"},
        {given * LN2, "the given scale times ln(2) (exp2 of natural-unit scores)"},
        {given * given, "the given scale applied twice"}, {sqrt((double)d), "sqrt(d)"},
    };
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        if (fabs(s - known[k].v) <= 1e-9 * fabs(known[k].v)) return known[k].name;
    return NULL;
}

/* The rows of the candidate that are wrong, where they sit, and which key's value the worst
 * row's error leans toward: the detail of an unknown diagnosis. */
static void locate(const fs_attn *a, const double *O, const double *Oref, const fs_check_result *r,
                   int32_t hpb, char *buf, size_t n)
{
    int64_t rows = (int64_t)a->n_q_heads * a->n_q;
    int32_t lo = a->n_q, hi = -1, heads = 0;
    for (int32_t h = 0; h < a->n_q_heads; h++) {
        bool any = false;
        for (int32_t i = 0; i < a->n_q; i++)
            if (!(r->row_err[(size_t)h * a->n_q + i] <= r->tolerance)) {
                any = true;
                if (i < lo) lo = i;
                if (i > hi) hi = i;
            }
        heads += any;
    }
    char w[80];
    where(a, hpb, r->worst, w, sizeof w);
    char in_heads[48] = "";
    if (a->n_q_heads > 1) snprintf(in_heads, sizeof in_heads, ", in %d of %d heads", heads, a->n_q_heads);
    int k = snprintf(buf, n, "%lld of %lld rows exceed the tolerance (rows %d to %d%s); the worst is %s, column %d.",
                     (long long)r->rows_over, (long long)rows, lo, hi, in_heads, w, r->worst_col);
    if (k < 0 || (size_t)k >= n || r->nan_rows > 0) return;
    /* cos between the error e = O − O_ref of the worst row and v_j − O_ref for every key j */
    int32_t h = (int32_t)(r->worst / a->n_q), i = (int32_t)(r->worst % a->n_q);
    const double *V = a->V + (size_t)fs_attn_kv_head(a, h) * a->n_kv * a->d_v;
    const double *o = O + (size_t)r->worst * a->d_v, *ref = Oref + (size_t)r->worst * a->d_v;
    double ee = 0, best = -2;
    int32_t bj = -1;
    for (int32_t c = 0; c < a->d_v; c++) ee += (o[c] - ref[c]) * (o[c] - ref[c]);
    for (int32_t j = 0; j < a->n_kv && ee > 0; j++) {
        double dot = 0, vv = 0;
        for (int32_t c = 0; c < a->d_v; c++) {
            double u = V[(size_t)j * a->d_v + c] - ref[c];
            dot += (o[c] - ref[c]) * u;
            vv += u * u;
        }
        double cs = vv > 0 ? dot / sqrt(ee * vv) : -2;
        if (cs > best) {
            best = cs;
            bj = j;
        }
    }
    if (bj >= 0 && best > 0.5)
        snprintf(buf + k, n - (size_t)k, " Its error points toward the value of key %d (cos %.2f), a key the mask %s.",
                 bj, best, fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, bj) ? "shows it" : "hides from it");
}

/* NaN rows: which rows they are, and which pitfall makes exactly those rows NaN. */
static bool diagnose_nan(const fs_attn *a, const double *O, const fs_check_opts *o, diag_ctx *D,
                         const double *lref, fs_check_result *r)
{
    int64_t rows = (int64_t)a->n_q_heads * a->n_q, empty_nan = 0, empty = 0, first = -1;
    for (int64_t k = 0; k < rows; k++) {
        bool bad = !isfinite(r->row_err[k]);
        if (bad && first < 0) first = k;
        if (!bad && !(r->row_err[k] <= r->tolerance)) return false;   /* finite rows must be right */
        empty += lref[k] == 0;
        empty_nan += bad && lref[k] == 0;
    }
    r->diag = FS_DIAG_NAN_ROWS;
    char w[80];
    where(a, o->heads_per_batch, first, w, sizeof w);
    if (empty_nan == r->nan_rows && empty == r->nan_rows) {
        if (r->nan_rows == 1)
            snprintf(r->detail, sizeof r->detail, "The one row that sees no key holds NaN or inf (%s); the other rows "
                     "are right. A row with l = 0 must give 0.", w);
        else
            snprintf(r->detail, sizeof r->detail, "The %lld rows that see no key hold NaN or inf (first: %s); the other "
                     "rows are right. A row with l = 0 must give 0.", (long long)r->nan_rows, w);
        return true;
    }
    /* rows whose first visited block hides all their keys: 001's pitfall 4 at a block size */
    int32_t blocks[] = FS_CHECK_BLOCKS;
    int nb = o->bk > 0 ? 1 : (int)(sizeof blocks / sizeof blocks[0]);
    for (int b = 0; b < nb; b++) {
        int32_t bk = o->bk > 0 ? o->bk : blocks[b];
        if (bk >= a->n_kv && o->bk <= 0) break;
        for (fs_pitfall pf = FS_PITFALL_MASKED_NAN; pf <= FS_PITFALL_MASKED_DOC_FIX; pf++) {
            variant v = variant_blank(FS_DIAG_NAN_ROWS);
            v.pitfall = pf;
            v.bk = bk;
            double dist;
            if (variant_dist(D, &v, &dist) <= 1) {
                r->fit_bk = bk;
                snprintf(r->detail, sizeof r->detail, "%lld rows hold NaN (first: %s): the rows whose first visited "
                         "block of %d keys hides every key, as in 001's pitfall 4 (%s). The other rows are right.",
                         (long long)r->nan_rows, w, bk,
                         pf == FS_PITFALL_MASKED_NAN ? "no guard at all" : "001's own fix, which guards beta but not alpha");
                return true;
            }
        }
    }
    snprintf(r->detail, sizeof r->detail, "%lld rows hold NaN or inf (first: %s); the other rows are right.",
             (long long)r->nan_rows, w);
    return true;
}

/* Try every variant; the closest one within tolerance is the diagnosis. */
void fs_check_diagnose(const fs_attn *a, const double *O, const double *Oref, const double *lref,
                     const fs_check_opts *o, fs_check_result *r)
{
    diag_ctx D;
    memset(&D, 0, sizeof D);
    D.tol = r->tolerance;
    D.mref = r->max_ref;
    D.prec = o->prec;
    D.threads = fs_check_threads(o);
    D.opts = o;
    r->diag = FS_DIAG_UNKNOWN;
    if (pieces_make(a, O, Oref, lref, r->worst, &D) != FS_OK) {
        snprintf(r->detail, sizeof r->detail, "out of memory while diagnosing");
        pieces_free(&D);
        return;
    }
    if (r->nan_rows > 0 && diagnose_nan(a, O, o, &D, lref, r)) {
        pieces_free(&D);
        return;
    }

    variant vs[96];   /* at most 58: 8 block sizes × 5 + 18 others */
    int nv = 0;
    const double given = a->scale;
    const double scales[] = {1.0 / a->d, 1.0, 1.0 / sqrt(a->d), given * LOG2E, given * LN2, given * given,
                             sqrt((double)a->d)};
    for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
        if (fabs(scales[k] - given) <= 1e-9 * fabs(given)) continue;
        vs[nv] = variant_blank(FS_DIAG_WRONG_SCALE);
        vs[nv++].scale = scales[k];
    }
    bool masked = a->mask.kind != FS_MASK_NONE;
    if (masked) {
        vs[nv] = variant_blank(FS_DIAG_MASK_MISSING);
        vs[nv++].mask = 1;
    }
    if (a->mask.kind == FS_MASK_WINDOW) {
        vs[nv] = variant_blank(FS_DIAG_MASK_MISSING);
        vs[nv++].mask = 2;
    }
    if (a->mask.kind == FS_MASK_CAUSAL || a->mask.kind == FS_MASK_WINDOW) {
        for (int32_t dlt = -1; dlt <= 1; dlt += 2) {
            vs[nv] = variant_blank(FS_DIAG_CAUSAL_SHIFT);
            vs[nv].shift = true;
            vs[nv++].offset_delta = dlt;
        }
        if (D.p[0].base_offset != 0) {
            vs[nv] = variant_blank(FS_DIAG_CAUSAL_SHIFT);
            vs[nv].shift = true;
            vs[nv++].top_left = true;
        }
    }
    int32_t blocks[] = FS_CHECK_BLOCKS;
    int nb = o->bk > 0 ? 1 : (int)(sizeof blocks / sizeof blocks[0]);
    for (int b = 0; b < nb; b++) {
        int32_t bk = o->bk > 0 ? o->bk : blocks[b];
        if (bk >= a->n_kv) continue;   /* one block: both pitfalls compute the right thing */
        vs[nv] = variant_blank(FS_DIAG_NO_RESCALE);
        vs[nv].pitfall = FS_PITFALL_NO_RESCALE;
        vs[nv++].bk = bk;
        vs[nv] = variant_blank(FS_DIAG_NO_BETA);
        vs[nv].pitfall = FS_PITFALL_BLOCK_MAX_NO_BETA;
        vs[nv++].bk = bk;
        for (int slip = 1; slip <= 3; slip++) {
            vs[nv] = variant_blank(FS_DIAG_NO_RESCALE);
            vs[nv].acc_slip = slip;
            vs[nv++].bk = bk;
        }
    }
    vs[nv] = variant_blank(FS_DIAG_UNNORMALIZED);
    vs[nv].acc_slip = 4;
    vs[nv++].bk = a->n_kv;
    if (a->Q && a->K && a->n_kv == a->d) {
        vs[nv] = variant_blank(FS_DIAG_K_TRANSPOSED);
        vs[nv++].k_transposed = true;
    }
    if (a->Q && a->K && a->n_q == a->n_kv) {
        vs[nv] = variant_blank(FS_DIAG_Q_K_SWAPPED);
        vs[nv++].qk_swapped = true;
    }
    assert(nv <= (int)(sizeof vs / sizeof vs[0]));

    int best = -1;
    double best_d = INFINITY, best_dist = INFINITY, ds[96], dists[96];
    variant_dists(&D, "diagnosing", vs, nv, ds, dists);
    /* The closest match wins; one closer by less than 1 % of the tolerance (rounding) does not
     * displace an earlier one: the list starts with the documents' own forms (001's pitfalls),
     * which another form of the slip can equal exactly (001's pitfall 1 and its running-max form
     * agree whenever every block that raises the max holds the new max). */
    for (int k = 0; k < nv; k++) {
        if (ds[k] <= 1 && ds[k] < best_d - 0.01) {
            best = k;
            best_d = ds[k];
            best_dist = dists[k];
        }
    }
    variant fit;
    if (best >= 0) {
        fit = vs[best];
    } else if (a->Q && a->K) {
        /* No listed variant: fit the scale. A grid over log2(scale / given) from −8 to 8, then
         * golden-section search around the best point. */
        double bt = 0, bd = INFINITY;
        variant v = variant_blank(FS_DIAG_WRONG_SCALE), grid[65];
        double gd[65], gdist[65];
        for (int k = 0; k < 65; k++) {
            grid[k] = v;
            grid[k].scale = given * exp2(-8 + 0.25 * k);
        }
        variant_dists(&D, "fitting the scale", grid, 65, gd, gdist);
        for (int k = 0; k < 65; k++) {
            if (gd[k] < bd) {
                bd = gd[k];
                bt = -8 + 0.25 * k;
            }
        }
        double lo = bt - 0.25, hi = bt + 0.25, g = (sqrt(5.0) - 1) / 2;
        double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
        v.scale = given * exp2(x1);
        double f1 = variant_dist(&D, &v, NULL);
        v.scale = given * exp2(x2);
        double f2 = variant_dist(&D, &v, NULL);
        for (int it = 0; it < 40; it++) {
            if (f1 < f2) {
                hi = x2;
                x2 = x1;
                f2 = f1;
                x1 = hi - g * (hi - lo);
                v.scale = given * exp2(x1);
                f1 = variant_dist(&D, &v, NULL);
            } else {
                lo = x1;
                x1 = x2;
                f1 = f2;
                x2 = lo + g * (hi - lo);
                v.scale = given * exp2(x2);
                f2 = variant_dist(&D, &v, NULL);
            }
        }
        v.scale = given * exp2(f1 < f2 ? x1 : x2);
        double dist, d = variant_dist(&D, &v, &dist);
        if (d <= 1 && fabs(v.scale - given) > 1e-6 * given) {
            fit = v;
            best = 0;
            best_dist = dist;
        }
    }

    if (best < 0) {
        locate(a, O, Oref, r, o->heads_per_batch, r->detail, sizeof r->detail);
        pieces_free(&D);
        return;
    }
    r->diag = fit.diag;
    r->match_dist = best_dist;
    char m[64];
    snprintf(m, sizeof m, "max |O - O_variant| = %.3g", best_dist);
    switch (fit.diag) {
    case FS_DIAG_WRONG_SCALE: {
        r->fit_scale = fit.scale;
        const char *nm = scale_name(fit.scale, a->d, given);
        snprintf(r->detail, sizeof r->detail, "The output fits scale %.6g%s%s%s instead of %.6g (%s).", fit.scale,
                 nm ? " = " : "", nm ? nm : "", nm ? "" : ", a fitted value", given, m);
        break;
    }
    case FS_DIAG_MASK_MISSING:
        snprintf(r->detail, sizeof r->detail, "The output fits %s (%s).",
                 fit.mask == 2 ? "a plain causal mask: the window was not applied" : "no mask at all", m);
        break;
    case FS_DIAG_CAUSAL_SHIFT: {
        int32_t off = fit.top_left ? 0 : D.p[0].base_offset + fit.offset_delta;
        r->fit_offset = off;
        snprintf(r->detail, sizeof r->detail, "The output fits query i at position i + %d instead of i + %d: %s (%s).",
                 off, D.p[0].base_offset,
                 fit.top_left ? "the causal mask is aligned top-left (query 0 with key 0) instead of bottom-right "
                                "(the last query with the last key)"
                 : fit.offset_delta < 0 ? "the diagonal is excluded (a query does not see its own key)"
                                        : "one future key is seen",
                 m);
        break;
    }
    case FS_DIAG_NO_RESCALE:
        r->fit_bk = fit.bk;
        r->fit_slip = fit.acc_slip;
        if (fit.acc_slip == 3)
            snprintf(r->detail, sizeof r->detail, "The output fits the normalized form with the running max (P = exp(S - "
                     "m_new), o kept divided by l) with blocks of %d keys where the old o is not rescaled by "
                     "alpha * l_old / l_new when the max grows: o_new = o_old + P V / l_new (%s).", fit.bk, m);
        else if (fit.acc_slip)
            snprintf(r->detail, sizeof r->detail, "The output fits the unnormalized form (O = o / l at the end) with blocks "
                     "of %d keys where %s is not multiplied by alpha when the max grows (%s).", fit.bk,
                     fit.acc_slip == 1 ? "the accumulator o" : "the sum l", m);
        else
            snprintf(r->detail, sizeof r->detail, "The output fits 001's pitfall 1 with blocks of %d keys (%s).", fit.bk, m);
        break;
    case FS_DIAG_NO_BETA:
        r->fit_bk = fit.bk;
        snprintf(r->detail, sizeof r->detail, "The output fits 001's pitfall %d with blocks of %d keys (%s).",
                 fit.diag == FS_DIAG_NO_RESCALE ? 1 : 2, fit.bk, m);
        break;
    case FS_DIAG_UNNORMALIZED:
        snprintf(r->detail, sizeof r->detail, "Each row fits the reference times its l, the sum of its weights (%s).", m);
        break;
    case FS_DIAG_K_TRANSPOSED:
        snprintf(r->detail, sizeof r->detail, "The output fits attention with K transposed (n_kv = d = %d) (%s).", a->d, m);
        break;
    case FS_DIAG_Q_K_SWAPPED:
        snprintf(r->detail, sizeof r->detail, "The output fits attention with scores K Q^T (%s).", m);
        break;
    default: break;
    }
    pieces_free(&D);
}

/* The log-sum-exp, when the O check passed and the LSE did not: a few usual slips. */
void fs_check_diagnose_lse(const fs_attn *a, const double *lse, const double *m, const double *lref,
                         const fs_check_opts *o, fs_check_result *r)
{
    int64_t rows = (int64_t)a->n_q_heads * a->n_q;
    double e2 = 0, em = 0, el = 0;
    for (int64_t k = 0; k < rows; k++) {
        if (lref[k] == 0) continue;
        double ref = m[k] + log(lref[k]);
        e2 = fmax(e2, fabs(lse[k] - ref * LOG2E));
        em = fmax(em, fabs(lse[k] - m[k]));
        el = fmax(el, fabs(lse[k] - log(lref[k])));
        if (!isfinite(lse[k])) e2 = em = el = INFINITY;
    }
    r->diag = FS_DIAG_UNKNOWN;
    char w[80];
    int64_t worst = 0;
    for (int64_t k = 0; k < rows; k++)
        if (!(r->row_lse_err[k] <= r->row_lse_err[worst])) worst = k;
    where(a, o->heads_per_batch, worst, w, sizeof w);
    const double tol = r->lse_tolerance;
    const char *why = e2 <= tol ? "it is in base 2 (log2 of the sum): multiply it by ln(2)"
                    : em <= tol ? "it holds the row max m without log(l)"
                    : el <= tol ? "it holds log(l) without the row max m"
                                : NULL;
    snprintf(r->detail, sizeof r->detail, "O is right, but the log-sum-exp is off by up to %.3g (tolerance %.3g; worst "
             "at %s)%s%s.", r->lse_err, tol, w, why ? ": " : "", why ? why : "");
}


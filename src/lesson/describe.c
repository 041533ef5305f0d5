/* describe.c: one line per trace event with the formula filled in, for the players.
 *
 * The text is built from the event's before/after values, so it is exactly what the engine did:
 * "α = exp(0.8000 − 1.2000) = 0.6703". Every equation printed is true of its printed numbers
 * (tests/check_equations.c re-evaluates all of them): a pitfall variant (tiled.c) prints the
 * formulas it really used, not the algorithm's, and a guard prints what it sets ("α = 1, β = 0 by
 * the guard"), never exp(-inf − (-inf)) with a value. The one value recomputed is the block sum of
 * the global-maximum pitfall, Σ exp(s − m_new), which its event does not hold; it is summed from
 * the event's scores the way tiled.c sums it (and the block-maximum pitfall shows the β it left
 * out). Names are the same in every lesson: m, ℓ (the running sum), α (the old state's rescale),
 * β (the block's), p for the one-query walk's weight; a printed nan always comes with words.
 */
#include "lesson_internal.h"
#include "io/num.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef fs_sb sb;

void fs_sb_put(fs_sb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->len < b->n ? b->n - b->len : 0;
    int w = vsnprintf(room ? b->buf + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (w > 0) b->len += (size_t)w;
}

const char *fs_num_plain(char *s, size_t n, double x, int digits)
{
    if (isnan(x)) snprintf(s, n, "nan");
    else if (isinf(x)) snprintf(s, n, x < 0 ? "-inf" : "inf");
    else if (x != 0 && (fabs(x) >= 1e7 || fabs(x) < 1e-4)) snprintf(s, n, "%.*e", digits > 1 ? digits - 1 : 1, x);
    else snprintf(s, n, "%.*f", digits, x);
    return s;
}

const char *fs_num_scalar(char *s, size_t n, double x, int digits)
{
    const int dec = fs_num_decimals(x, digits);   /* 3 significant digits under 0.01 (io/num.h) */
    if (dec > digits) {
        snprintf(s, n, "%.*f", dec, x);
        return s;
    }
    return fs_num_plain(s, n, x, digits);
}

/* A scalar at the given decimals (fs_num_scalar), in the builder's ring of buffers so several can
 * appear in one fs_sb_put(). */
static const char *num_(sb *b, double x, int digits)
{
    return fs_num_scalar(b->ring[b->k++ & 15], sizeof b->ring[0], x, digits);
}

const char *fs_sb_sig4(fs_sb *b, double x)
{
    char *s = b->ring[b->k++ & 15];
    snprintf(s, sizeof b->ring[0], "%.4g", x);
    return s;
}

static void vec(sb *b, const fs_trace *t, int64_t off, int32_t n, int digits)
{
    const double *v = fs_trace_at(t, off);
    fs_sb_put(b, "[");
    if (!v) {
        fs_sb_put(b, "]");
        return;
    }
    int32_t shown = n < 8 ? n : 8;
    for (int32_t i = 0; i < shown; i++)
        fs_sb_put(b, "%s%s", i ? ", " : "", num_(b, v[i], digits));
    if (n > shown) fs_sb_put(b, ", … (%d)", n);
    fs_sb_put(b, "]");
}

static const char *label(const fs_lesson *l, int32_t i, char *tmp, size_t n)
{
    const char *s = l ? fs_lesson_label(l, i) : NULL;
    if (s) snprintf(tmp, n, "%d (%s)", i, s);
    else snprintf(tmp, n, "%d", i);
    return tmp;
}

/* "a − -b" reads badly: write "a − (-b)". Works in place on a terminated buffer of size n. */
static size_t paren_negatives(char *buf, size_t n)
{
    static const char minus[] = "\xe2\x88\x92 -";   /* "− -" */
    char tmp[4096];
    size_t len = strlen(buf), w = 0;
    for (size_t i = 0; i < len && w + 8 < sizeof tmp;) {
        if (!strncmp(buf + i, minus, 5)) {
            memcpy(tmp + w, "\xe2\x88\x92 (", 5);
            w += 5;
            i += 4;
            tmp[w++] = buf[i++];   /* the '-' */
            while (i < len && (strchr("0123456789.eainf+", buf[i]) && w + 2 < sizeof tmp)) tmp[w++] = buf[i++];
            tmp[w++] = ')';
        } else {
            tmp[w++] = buf[i++];
        }
    }
    tmp[w] = 0;
    if (w + 1 <= n) memcpy(buf, tmp, w + 1);
    return w;
}


/* Dropout on a TILE or BTILE: "; dropout p: <what> (i, j) …, weights kept × 1/(1 − p)". */
static void put_dropped(sb *b, const fs_trace *t, const fs_event *e, const char *what)
{
    if (e->drop < 0) return;
    const double *v = fs_trace_at(t, e->drop);
    fs_sb_put(b, "; dropout %g: %s ", e->dropout, what);
    if (!e->n_drop) fs_sb_put(b, "no cell here");
    for (int32_t k = 0; k < e->n_drop && k < 12; k++) fs_sb_put(b, "%s(%d, %d)", k ? " " : "", (int)v[2 * k], (int)v[2 * k + 1]);
    if (e->n_drop > 12) fs_sb_put(b, " and %d more", e->n_drop - 12);
    fs_sb_put(b, ", the kept weights × 1/(1 − p) = %.4g", 1.0 / (1.0 - e->dropout));
}
/* Backward: "rows 0-1, 4" — the query rows of head h (keys of KV head h when keys) whose last
 * BROW (BKEY) in the whole trace is at or before step: their dQ (dK, dV) rows are final. A row
 * the backward never touches is final (zero) from the start. */
static void put_finished(sb *b, const fs_trace *t, int64_t step, int h, bool keys)
{
    int32_t n = 0;
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        if (keys ? e->kind == FS_EV_GRAD && e->tensor == FS_GRAD_DK && e->head == h
                 : e->kind == FS_EV_GRAD && e->tensor == FS_GRAD_DQ && e->head == h)
            n = e->row + 1 > n ? e->row + 1 : n;
    }
    int shown = 0, run0 = -1;
    for (int32_t i = 0; i <= n; i++) {
        bool fin = false;
        if (i < n) {
            int64_t last = -1;
            for (int64_t k = 0; k < t->n; k++) {
                const fs_event *e = &t->ev[k];
                if (keys ? e->kind == FS_EV_BKEY && e->kv_head == h && e->row == i
                         : e->kind == FS_EV_BROW && e->head == h && e->row == i)
                    last = k;
            }
            fin = last >= 0 && last <= step;   /* a row with no event of its own is not finished */
        }
        if (fin && run0 < 0) run0 = i;
        if (!fin && run0 >= 0) {
            if (shown++ >= 6) { fs_sb_put(b, ", …"); return; }
            if (i - 1 > run0) fs_sb_put(b, "%s%d-%d", shown > 1 ? ", " : "", run0, i - 1);
            else fs_sb_put(b, "%s%d", shown > 1 ? ", " : "", run0);
            run0 = -1;
        }
    }
    if (!shown) fs_sb_put(b, "none");
}

/* The variant that computed trace t: the lesson's pitfall for its own trace, none for its compare
 * trace (the correct run) and for every other algorithm. */
static fs_pitfall trace_pitfall(const fs_lesson *l, const fs_trace *t)
{
    if (!l || !l->has_run || l->run.algo != FS_ALGO_TILED || t != fs_lesson_trace(l)) return FS_PITFALL_NONE;
    return l->run.tiling.pitfall;
}

static bool any_nan(const fs_trace *t, int64_t off, int32_t n)
{
    const double *v = fs_trace_at(t, off);
    for (int32_t i = 0; v && i < n; i++)
        if (isnan(v[i])) return true;
    return false;
}

/* One ROW event of the tiled forward (not low precision), from "; m_blk = …" to "o = ": the
 * formulas of the variant pit that computed it (tiled.c's row_update), so that every equation is
 * the one that ran and its numbers are the ones it used.
 *   NONE, NO_RESCALE: α = exp(m_old − m_new), β = exp(m_blk − m_new), ℓ = α·ℓ_old + β·ℓ_blk; a row
 *     with nothing visible yet keeps (−∞, 0) by the guard (α = 1, β = 0): printed as such, and
 *     false is returned (nothing more to say).
 *   GLOBAL_MAX_NO_BETA: P = exp(s − m_new) against the running maximum and no β:
 *     ℓ = α·ℓ_old + Σ P. The event holds ℓ_blk = Σ exp(s − m_blk), not Σ P, so Σ P is summed here
 *     from the event's scores exactly as tiled.c sums it (same order, same exp).
 *   BLOCK_MAX_NO_BETA: β = 1, ℓ = α·ℓ_old + 1·ℓ_blk with ℓ_blk against the block's own maximum.
 *   MASKED_NAN: no guard: α, β and ℓ_blk straight from the formulas, NaN when −∞ − (−∞) occurs.
 *   MASKED_DOC_FIX: 001's guard on β and ℓ_blk (0 when the block shows nothing), none on α.
 * Every NaN printed comes with the words that say where it came from. */
static bool row_update(sb *b, const fs_trace *t, const fs_event *e, fs_pitfall pit, bool e2, int D)
{
    const char *EXP = e2 ? "exp2" : "exp";
    const bool masked = pit == FS_PITFALL_MASKED_NAN || pit == FS_PITFALL_MASKED_DOC_FIX;
    const bool no_beta = pit == FS_PITFALL_GLOBAL_MAX_NO_BETA || pit == FS_PITFALL_BLOCK_MAX_NO_BETA;
    if (!masked && e->m_new == -INFINITY) {
        if (no_beta)
            fs_sb_put(b, "; nothing visible yet: m stays -inf, ℓ stays 0; α = 1 by the guard, and this variant has no β");
        else
            fs_sb_put(b, "; nothing visible yet: m stays -inf, ℓ stays 0; α = 1, β = 0 by the guard "
                   "(exp(-inf − (-inf)) would be NaN)");
        return false;
    }
    fs_sb_put(b, "; m_blk = %s; m_new = max(%s, %s) = %s; ", num_(b, e->m_blk, D), num_(b, e->m_old, D), num_(b, e->m_blk, D),
        num_(b, e->m_new, D));
    const int Da = fs_num_factor_decimals(D, e->alpha, e->l_old), Db = fs_num_factor_decimals(D, e->beta, e->l_blk);   /* α, β as their products need */
    fs_sb_put(b, "α = %s(%s − %s) = %s", EXP, num_(b, e->m_old, Da), num_(b, e->m_new, Da), num_(b, e->alpha, Da));
    if (isnan(e->alpha))
        fs_sb_put(b, " (NaN: -inf − (-inf) is undefined, and this variant has no guard)");
    fs_sb_put(b, "; ");
    switch (pit) {
    case FS_PITFALL_GLOBAL_MAX_NO_BETA: {
        const double *s = fs_trace_at(t, e->s_row);
        double sum = 0;
        for (int32_t j = 0; s && j < e->n_s; j++)
            if (s[j] != -INFINITY) sum += e2 ? exp2(s[j] - e->m_new) : exp(s[j] - e->m_new);
        fs_sb_put(b, "β = 1: P = %s(s − m_new) is taken against the running max m_new = %s, so no β; "
               "ℓ = α·ℓ_old + Σ P = %s · %s + %s = %s; o = ",
            EXP, num_(b, e->m_new, D), num_(b, e->alpha, Da), num_(b, e->l_old, D), num_(b, sum, D), num_(b, e->l_new, D));
        return true;
    }
    case FS_PITFALL_BLOCK_MAX_NO_BETA:
        fs_sb_put(b, "β = 1: this variant adds P̃ = %s(s − m_blk) unscaled", EXP);
        if (e->m_blk != -INFINITY && e->m_blk < e->m_new) {
            double right = e2 ? exp2(e->m_blk - e->m_new) : exp(e->m_blk - e->m_new);
            fs_sb_put(b, " (β would be %s(%s − %s) = %s)", EXP, num_(b, e->m_blk, D), num_(b, e->m_new, D),
                num_(b, right, D));
        }
        fs_sb_put(b, "; ");
        break;
    case FS_PITFALL_MASKED_DOC_FIX:
        if (e->m_blk == -INFINITY) {
            fs_sb_put(b, "β = 0 and ℓ_blk = 0 by 001's guard (nothing visible here); ");
            break;
        }
        /* fall through */
    default:
        fs_sb_put(b, "β = %s(%s − %s) = %s", EXP, num_(b, e->m_blk, Db), num_(b, e->m_new, Db), num_(b, e->beta, Db));
        if (isnan(e->beta)) fs_sb_put(b, " (NaN too)");
        if (pit == FS_PITFALL_MASKED_NAN && isnan(e->l_blk))
            fs_sb_put(b, "; ℓ_blk = Σ %s(s − m_blk) = %s (all s are -inf: NaN)", EXP, num_(b, e->l_blk, D));
        fs_sb_put(b, "; ");
        break;
    }
    fs_sb_put(b, "ℓ = α·ℓ_old + β·ℓ_blk = %s · %s + %s · %s = %s", num_(b, e->alpha, Da), num_(b, e->l_old, D),
        num_(b, e->beta, Db), num_(b, e->l_blk, D), num_(b, e->l_new, D));
    if (isnan(e->l_new) && !isnan(e->l_old)) fs_sb_put(b, " (0 · NaN is NaN: the sum is lost)");
    else if (isnan(e->l_new)) fs_sb_put(b, " (NaN since an earlier step)");
    fs_sb_put(b, "; o = ");
    return true;
}

/* A ROW event of the one-query walk (000): one key at a time, unnormalized. */
static void query_row(sb *b, const fs_lesson *l, const fs_trace *t, const fs_event *e, const double *s, int D)
{
    char t1[64];
    double sc = s ? s[0] : NAN;
    fs_sb_put(b, "key %s: score = %s; ", label(l, e->c0, t1, sizeof t1), num_(b, sc, D));
    if (e->m_new == -INFINITY) {
        fs_sb_put(b, "nothing visible yet: m stays -inf, ℓ stays 0; α = 1, p = 0 by the guard (exp(-inf − (-inf)) would be NaN)");
        return;
    }
    fs_sb_put(b, "m_new = max(%s, %s) = %s%s; ", num_(b, e->m_old, D), num_(b, sc, D), num_(b, e->m_new, D),
        e->m_new > e->m_old && e->m_old > -INFINITY ? " (new max)" : "");
    const int Da = fs_num_factor_decimals(D, e->alpha, e->l_old);
    fs_sb_put(b, "α = exp(%s − %s) = %s; p = exp(%s − %s) = %s; ", num_(b, e->m_old, Da), num_(b, e->m_new, Da),
        num_(b, e->alpha, Da), num_(b, sc, D), num_(b, e->m_new, D), num_(b, e->beta, D));
    fs_sb_put(b, "ℓ = α·ℓ_old + p = %s · %s + %s = %s; o = α·o + p·V[%d] = ", num_(b, e->alpha, Da), num_(b, e->l_old, D),
        num_(b, e->beta, D), num_(b, e->l_new, D), e->c0);
    vec(b, t, e->o_old, e->n_o, D);
    fs_sb_put(b, " · %s + %s · V[%d] = ", num_(b, e->alpha, D), num_(b, e->beta, D), e->c0);
    vec(b, t, e->o_new, e->n_o, D);
}

size_t fs_lesson_describe(const fs_lesson *l, const fs_trace *t, int64_t step, int digits, char *buf,
                          size_t n)
{
    sb b = {.buf = buf, .n = n, .len = 0, .k = 0};
    if (n) buf[0] = 0;
    if (!t || step < 0 || step >= t->n) return 0;
    if (digits < 1) digits = 4;
    if (digits > 12) digits = 12;
    const fs_event *e = &t->ev[step];
    const int D = digits;
    const bool query = l && l->has_run && l->run.algo == FS_ALGO_QUERY;
    const bool e2 = l && l->has_run && l->run.tiling.exp2 && l->run.algo == FS_ALGO_TILED;
    const char *EXP = e2 ? "exp2" : "exp";
    char t1[64], t2[64];
    switch (e->kind) {
    case FS_EV_ELEM:
        if (e->m_new == -INFINITY) {
            /* online.c's guard: nothing finite yet, the state stays (−∞, 0) */
            if (e->c1 - e->c0 == 1) fs_sb_put(&b, "z[%d] = %s: ", e->c0, num_(&b, e->x, D));
            else fs_sb_put(&b, "z[%d..%d]: ", e->c0, e->c1 - 1);
            fs_sb_put(&b, "nothing finite yet: m stays -inf, ℓ stays 0; α = 1, β = 0 by the guard "
                    "(exp(-inf − (-inf)) would be NaN)");
        } else if (e->c1 - e->c0 == 1) {
            fs_sb_put(&b, "z[%d] = %s: m_new = max(%s, %s) = %s%s; ", e->c0, num_(&b, e->x, D), num_(&b, e->m_old, D),
                num_(&b, e->x, D), num_(&b, e->m_new, D), e->m_new > e->m_old && e->m_old > -INFINITY ? " (new max)" : "");
            const int Da = fs_num_factor_decimals(D, e->alpha, e->l_old);
            fs_sb_put(&b, "α = exp(%s − %s) = %s; ", num_(&b, e->m_old, Da), num_(&b, e->m_new, Da), num_(&b, e->alpha, Da));
            fs_sb_put(&b, "ℓ = α·ℓ_old + exp(z − m_new) = %s · %s + exp(%s − %s) = %s", num_(&b, e->alpha, Da),
                num_(&b, e->l_old, D), num_(&b, e->x, D), num_(&b, e->m_new, D), num_(&b, e->l_new, D));
        } else {
            fs_sb_put(&b, "z[%d..%d]: m_blk = %s, ℓ_blk = %s; m_new = max(%s, %s) = %s; ", e->c0, e->c1 - 1,
                num_(&b, e->m_blk, D), num_(&b, e->l_blk, D), num_(&b, e->m_old, D), num_(&b, e->m_blk, D), num_(&b, e->m_new, D));
            const int Da = fs_num_factor_decimals(D, e->alpha, e->l_old), Db = fs_num_factor_decimals(D, e->beta, e->l_blk);
            fs_sb_put(&b, "α = exp(%s − %s) = %s; β = exp(%s − %s) = %s; ℓ = α·ℓ_old + β·ℓ_blk = %s · %s + %s · %s = %s",
                num_(&b, e->m_old, Da), num_(&b, e->m_new, Da), num_(&b, e->alpha, Da), num_(&b, e->m_blk, Db), num_(&b, e->m_new, Db),
                num_(&b, e->beta, Db), num_(&b, e->alpha, Da), num_(&b, e->l_old, D), num_(&b, e->beta, Db), num_(&b, e->l_blk, D),
                num_(&b, e->l_new, D));
        }
        break;
    case FS_EV_TILE:
        if (query) {
            fs_sb_put(&b, "load key %s: K[%d] and V[%d]", label(l, e->c0, t1, sizeof t1), e->c0, e->c0);
            break;
        }
        fs_sb_put(&b, "%stile (Q %d, KV %d): query rows %d..%d × keys %d..%d, %s", e->head > 0 ? "" : "", e->qt, e->kt,
            e->r0, e->r1 - 1, e->c0, e->c1 - 1, fs_tile_class_str(e->cls));
        if (e->cls == FS_TILE_PARTIAL) fs_sb_put(&b, " (the element mask is applied)");
        if (l && l->has_run && l->run.attn.n_q_heads > 1) fs_sb_put(&b, "; head %d reads KV head %d", e->head, e->kv_head);
        put_dropped(&b, t, e, "Philox drops");
        break;
    case FS_EV_SKIP:
        fs_sb_put(&b, "skip (Q %d, KV %d): query rows %d..%d × keys %d..%d are all hidden (%s): no loads, no arithmetic",
            e->qt, e->kt, e->r0, e->r1 - 1, e->c0, e->c1 - 1, fs_skip_reason_str(e->reason));
        break;
    case FS_EV_ROW: {
        const double *s = fs_trace_at(t, e->s_row);
        if (query) {
            query_row(&b, l, t, e, s, D);
            break;
        }
        fs_sb_put(&b, "row %s, tile (Q %d, KV %d), keys %d..%d (%d visible): s = ", label(l, e->row, t1, sizeof t1),
            e->qt, e->kt, e->c0, e->c1 - 1, e->visible);
        vec(&b, t, e->s_row, e->n_s, D);
        if (e->lowp) {
            /* a low-precision run (lowp.h): P against m_new, rounded to e4m3 with its own scale */
            fs_sb_put(&b, "; m_blk = %s; m_new = max(%s, %s) = %s; ", num_(&b, e->m_blk, D), num_(&b, e->m_old, D),
                num_(&b, e->m_blk, D), num_(&b, e->m_new, D));
            /* P8 is P rounded, not P itself: the line says so (P = exp(s − m_new) stays in the checks).
             * P's format: e4m3 for FP8 inputs (lowp.c's pfmt), else the inputs' own */
            const bool known = l && l->has_run && l->run.lowp;   /* (a saved trace does not say its recipe) */
            const fs_lowp_fmt in = known ? l->run.recipe.fmt : FS_LOWP_E4M3;
            const char *pf = !known ? "round" : in == FS_LOWP_E5M2 ? "e4m3" : fs_lowp_fmt_str(in);
            fs_sb_put(&b, "α = %s(%s − %s) = %s; P8 = %s(P × p) / p with P = %s(s − m_new): ", EXP, num_(&b, e->m_old, D),
                num_(&b, e->m_new, D), num_(&b, e->alpha, D), pf, EXP);
            vec(&b, t, e->p8_row, e->n_s, D);
            fs_sb_put(&b, "; ℓ = α·ℓ_old + Σ P = %s · %s + %s = %s; scales q %s, k %s, v %s, p = %s; o = ", num_(&b, e->alpha, D),
                num_(&b, e->l_old, D), num_(&b, e->l_blk, D), num_(&b, e->l_new, D), fs_sb_sig4(&b, e->q_scale),
                fs_sb_sig4(&b, e->k_scale), fs_sb_sig4(&b, e->v_scale), num_(&b, e->p_scale, 0));
        } else if (!row_update(&b, t, e, trace_pitfall(l, t), e2, D)) {
            break;   /* the guard: nothing visible yet, nothing changes */
        }
        vec(&b, t, e->o_old, e->n_o, D);
        fs_sb_put(&b, " → ");
        vec(&b, t, e->o_new, e->n_o, D);
        fs_sb_put(&b, e->normalized ? " (normalized)" : " (unnormalized: divided by ℓ when final)");
        if (!e->lowp && trace_pitfall(l, t) == FS_PITFALL_NO_RESCALE)
            fs_sb_put(&b, "; this variant adds P̃·V/ℓ_new to o without rescaling the old o");
        if (any_nan(t, e->o_new, e->n_o) && !isnan(e->l_new)) fs_sb_put(&b, "; NaN in o: the row's output is lost");
        break;
    }
    case FS_EV_PARTIAL:
        fs_sb_put(&b, "split %d of row %d, keys %d..%d%s%s: m = %s, ℓ = %s, o = ", e->kt, e->row, e->c0,
            e->c1 - 1, e->stride > 1 ? " step " : "", e->stride > 1 ? num_(&b, e->stride, 0) : "", num_(&b, e->m_new, D),
            num_(&b, e->l_new, D));
        vec(&b, t, e->o_new, e->n_o, D);
        fs_sb_put(&b, e->normalized ? " (normalized)" : " (unnormalized)");
        break;
    case FS_EV_MERGE:
        if (e->m_new == -INFINITY) {
            /* decode.c's guard: two states that saw nothing merge into one that saw nothing */
            fs_sb_put(&b, "merge %d + %d → %d (level %d): neither side saw a key: m stays -inf, ℓ stays 0; α = 1, β = 0 by "
                    "the guard (exp(-inf − (-inf)) would be NaN); o = ", e->a, e->b, e->id, e->level);
            vec(&b, t, e->o_new, e->n_o, D);
            break;
        }
        const int Da = fs_num_factor_decimals(D, e->alpha, e->l_old), Db = fs_num_factor_decimals(D, e->beta, e->l_blk);
        fs_sb_put(&b, "merge %d + %d → %d (level %d): m = max(%s, %s) = %s; α = exp(%s − %s) = %s; "
                "β = exp(%s − %s) = %s; ℓ = α·ℓ_a + β·ℓ_b = %s · %s + %s · %s = %s; ",
            e->a, e->b, e->id, e->level, num_(&b, e->m_old, D), num_(&b, e->m_blk, D), num_(&b, e->m_new, D), num_(&b, e->m_old, Da),
            num_(&b, e->m_new, Da), num_(&b, e->alpha, Da), num_(&b, e->m_blk, Db), num_(&b, e->m_new, Db), num_(&b, e->beta, Db),
            num_(&b, e->alpha, Da), num_(&b, e->l_old, D), num_(&b, e->beta, Db), num_(&b, e->l_blk, D), num_(&b, e->l_new, D));
        fs_sb_put(&b, e->normalized ? "o = (α·ℓ_a·o_a + β·ℓ_b·o_b) / ℓ = " : "o = α·o_a + β·o_b = ");
        vec(&b, t, e->o_new, e->n_o, D);
        break;
    case FS_EV_OUT:
        if (l && l->has_run && l->run.algo == FS_ALGO_SOFTMAX) {
            fs_sb_put(&b, "softmax = exp(z − m) / ℓ with m = %s, ℓ = %s: ", num_(&b, e->m_new, D), num_(&b, e->l_new, D));
            vec(&b, t, e->o_new, e->n_o, D);
        } else {
            fs_sb_put(&b, "output row %s%s: m = %s, ℓ = %s, O = ", label(l, e->row, t2, sizeof t2),
                e->head > 0 || (l && l->has_run && l->run.attn.n_q_heads > 1) ? "" : "", num_(&b, e->m_new, D),
                num_(&b, e->l_new, D));
            if (l && l->has_run && l->run.attn.n_q_heads > 1) fs_sb_put(&b, "(head %d) ", e->head);
            vec(&b, t, e->o_new, e->n_o, D);
            if (isnan(e->l_new) || any_nan(t, e->o_new, e->n_o))
                fs_sb_put(&b, "; NaN: the row was lost to -inf − (-inf) on the way");
        }
        break;
    /* ---- the backward pass (src/engine/backward.h) ---- */
    case FS_EV_LSE:
        fs_sb_put(&b, "row %s keeps L = m + ln ℓ = %s from the forward pass%s", label(l, e->row, t1, sizeof t1),
            num_(&b, e->x, D), e->x == -INFINITY ? " (it sees no key: P = 0 everywhere, zero gradients)" : "");
        if (l && l->has_run && l->run.attn.n_q_heads > 1) fs_sb_put(&b, " (head %d)", e->head);
        break;
    case FS_EV_DELTA:
        fs_sb_put(&b, "row %s: D = rowsum(dO ∘ O) = ", label(l, e->row, t1, sizeof t1));
        vec(&b, t, e->o_blk, e->n_o, D);
        fs_sb_put(&b, " · ");
        vec(&b, t, e->o_new, e->n_o, D);
        fs_sb_put(&b, " = %s", num_(&b, e->x, D));
        break;
    case FS_EV_BTILE:
        fs_sb_put(&b, "backward tile (Q %d, KV %d): query rows %d..%d × keys %d..%d, %s; recompute S and P = exp(S − L)",
            e->qt, e->kt, e->r0, e->r1 - 1, e->c0, e->c1 - 1, fs_tile_class_str(e->cls));
        if (l && l->has_run && l->run.attn.n_q_heads > 1) fs_sb_put(&b, "; head %d reads KV head %d", e->head, e->kv_head);
        put_dropped(&b, t, e, "Philox regenerates the forward's drops");
        /* the list names the cells the mask shows; dP is computed over the whole tile, and Philox
         * decides the hidden cells too: a 0 in their dP is a drop the list does not name */
        if (e->drop >= 0 && e->cls == FS_TILE_PARTIAL)
            fs_sb_put(&b, " (of the cells the mask shows: Philox decides the hidden ones too, and their dP reads 0 "
                          "where one is dropped, which P = 0 cancels)");
        if (e->device < 0) {   /* on a ring a device's rows are its own: their gradients are final at home */
            fs_sb_put(&b, "; final so far: dQ rows ");
            put_finished(&b, t, step, e->head, false);
            fs_sb_put(&b, "; dK, dV rows ");
            put_finished(&b, t, step, e->kv_head, true);
        }
        break;
    case FS_EV_BSKIP:
        fs_sb_put(&b, "backward skip (Q %d, KV %d): query rows %d..%d × keys %d..%d are all hidden (%s): P = 0 there, "
                "so no gradient flows; no loads, no arithmetic",
            e->qt, e->kt, e->r0, e->r1 - 1, e->c0, e->c1 - 1, fs_skip_reason_str(e->reason));
        break;
    case FS_EV_BROW:
        fs_sb_put(&b, "row %s, tile (Q %d, KV %d), keys %d..%d: S = ", label(l, e->row, t1, sizeof t1), e->qt, e->kt,
            e->c0, e->c1 - 1);
        vec(&b, t, e->s_row, e->n_s, D);
        if (e->x == -INFINITY) fs_sb_put(&b, "; L = -inf (the row sees no key): P = ");   /* exp(−∞ − (−∞)) never taken */
        else fs_sb_put(&b, "; P = exp(S − %s) = ", num_(&b, e->x, D));
        vec(&b, t, e->p_row, e->n_s, D);
        /* with dropout the forward used Pd = Z ∘ P / (1 − p): its gradient reaches P through the
         * same mask and factor (backward.h) */
        if (l && l->has_run && l->run.tiling.dropout.on) fs_sb_put(&b, "; dP = Z ∘ (dO·Vᵀ) / (1 − p) = ");
        else fs_sb_put(&b, "; dP = dO·Vᵀ = ");
        vec(&b, t, e->dp_row, e->n_s, D);
        fs_sb_put(&b, "; dS = P ∘ (dP − %s) = ", num_(&b, e->m_new, D));
        vec(&b, t, e->ds_row, e->n_s, D);
        fs_sb_put(&b, "; dQ += scale·dS·K = ");
        vec(&b, t, e->o_blk, e->n_o, D);
        fs_sb_put(&b, " → dQ = ");
        vec(&b, t, e->o_new, e->n_o, D);
        if (e->visible == 0) fs_sb_put(&b, "; no key of this tile is visible to the row: P = 0, nothing flows");
        break;
    case FS_EV_BKEY:
        fs_sb_put(&b, "key %s from tile (Q %d, KV %d): dK += scale·dSᵀ·Q = ", label(l, e->row, t1, sizeof t1), e->qt, e->kt);
        vec(&b, t, e->o_blk, e->n_o, D);
        fs_sb_put(&b, " → ");
        vec(&b, t, e->o_new, e->n_o, D);
        if (l && l->has_run && l->run.tiling.dropout.on) fs_sb_put(&b, "; dV += Pdᵀ·dO = ");   /* the weights used */
        else fs_sb_put(&b, "; dV += Pᵀ·dO = ");
        vec(&b, t, e->g_blk, e->n_g, D);
        fs_sb_put(&b, " → ");
        vec(&b, t, e->g_new, e->n_g, D);
        {
            /* the key's last contribution: its rows are final (in kv-outer order, at the end of
             * its KV tile's pass) */
            bool last = true;
            for (int64_t k = step + 1; k < t->n && last; k++)
                last = !(t->ev[k].kind == FS_EV_BKEY && t->ev[k].kv_head == e->kv_head && t->ev[k].row == e->row);
            if (last) fs_sb_put(&b, "; key %d is finished: its dK and dV rows are final", e->row);
        }
        break;
    case FS_EV_GRAD:
        fs_sb_put(&b, "%s row %s is final: ", fs_grad_str(e->tensor), label(l, e->row, t1, sizeof t1));
        vec(&b, t, e->o_new, e->n_o, D);
        if (l && l->has_run && (l->run.attn.n_q_heads > 1 || l->run.attn.n_kv_heads > 1))
            fs_sb_put(&b, " (%s %d)", e->tensor == FS_GRAD_DQ ? "head" : "KV head", e->head);
        break;
    /* ---- the paged KV cache (src/engine/paged.h) ---- */
    case FS_EV_LOOKUP:
        fs_sb_put(&b, "split %d of row %d reads %s: the block table of sequence %d maps its logical block %d "
                "to physical page %d",
            e->kt, e->row, fs_event_keys(e, t1, sizeof t1), e->seq, e->block, e->page);
        if (e->refs > 1) fs_sb_put(&b, " (shared by %d sequences)", e->refs);
        break;
    case FS_EV_ALLOC:
        fs_sb_put(&b, "sequence %d needs block %d: its last page is full (or it has none), so it takes free page %d; "
                "%d page%s free",
            e->seq, e->block, e->page, e->n_free, e->n_free == 1 ? " stays" : "s stay");
        break;
    case FS_EV_SHARE:
        fs_sb_put(&b, "sequence %d is forked from sequence %d: its block %d points at the same page %d (positions %d..%d), "
                "no copy; %d sequences hold the page now",
            e->seq, e->src, e->block, e->page, e->c0, e->c1 - 1, e->refs);
        break;
    case FS_EV_COW:
        fs_sb_put(&b, "sequence %d is about to write into page %d, which other sequences also hold: copy on write, its %d "
                "filled slots go to free page %d, and block %d now maps there; %d sequence%s keep%s page %d",
            e->seq, e->src, e->slot, e->page, e->block, e->refs, e->refs == 1 ? "" : "s", e->refs == 1 ? "s" : "",
            e->src);
        break;
    case FS_EV_WRITE:
        fs_sb_put(&b, "sequence %d appends position %d: its K and V go to page %d, slot %d (block %d)", e->seq, e->c0,
            e->page, e->slot, e->block);
        break;
    case FS_EV_HOLD: {
        const double *pos = fs_trace_at(t, e->s_row);
        fs_sb_put(&b, "ring step %d: device %d holds KV shard %d, the keys at positions", e->ring_step, e->device, e->shard);
        for (int32_t k = 0; pos && k < e->n_s && k < 16; k++) fs_sb_put(&b, "%s %d", k ? "," : "", (int)pos[k]);
        if (e->n_s > 16) fs_sb_put(&b, ", …");
        fs_sb_put(&b, fs_ring_hold_skipped(t, step) ? "; its queries see none of them: skipped"
                                                         : "; its queries meet them tile by tile");
        break;
    }
    case FS_EV_SEND:
        fs_sb_put(&b, "after ring step %d device %d sends shard %d (%s, %lld bytes in float64) on to device %d", e->ring_step,
            e->a, e->shard, e->tensor == 0 ? "K and V" : e->tensor == 1 ? "K, V and their dK, dV so far" : "dK and dV, home",
            (long long)e->bytes, e->b);
        break;
    case FS_EV_RECV:
        fs_sb_put(&b, "device %d receives shard %d from device %d", e->b, e->shard, e->a);
        if (e->tensor != 2) fs_sb_put(&b, " for ring step %d", e->ring_step + 1);
        break;
    case FS_EV_RMERGE:
    {   /* (the factors' decimals: Fa for α, Fb for β, as in the merge above) */
        const int Fa = fs_num_factor_decimals(D, e->alpha, e->l_old), Fb = fs_num_factor_decimals(D, e->beta, e->l_blk);
        fs_sb_put(&b, "device %d, the query at position %d: the block of shard %d (m_blk = %s, ℓ_blk = %s) merges into the running state: "
                "m_new = max(%s, %s) = %s; α = exp(%s − %s) = %s; β = exp(%s − %s) = %s; ℓ = α·ℓ_old + β·ℓ_blk = %s · %s + %s · %s = %s; "
                "o = (α·ℓ_old·o_old + β·ℓ_blk·o_blk) / ℓ = ",
            e->device, e->row, e->shard, num_(&b, e->m_blk, D), num_(&b, e->l_blk, D), num_(&b, e->m_old, D),
            num_(&b, e->m_blk, D), num_(&b, e->m_new, D), num_(&b, e->m_old, Fa), num_(&b, e->m_new, Fa), num_(&b, e->alpha, Fa),
            num_(&b, e->m_blk, Fb), num_(&b, e->m_new, Fb), num_(&b, e->beta, Fb), num_(&b, e->alpha, Fa), num_(&b, e->l_old, D),
            num_(&b, e->beta, Fb), num_(&b, e->l_blk, D), num_(&b, e->l_new, D));
        vec(&b, t, e->o_new, e->n_o, D);
        break;
    }
    default: fs_sb_put(&b, "%s", fs_event_kind_str(e->kind)); break;
    }
    if (e->device >= 0 && e->kind != FS_EV_HOLD && e->kind != FS_EV_RMERGE && e->kind != FS_EV_SEND && e->kind != FS_EV_RECV)
    {
        fs_sb_put(&b, "; on device %d at ring step %d, holding shard %d: row and key numbers count within the device's queries and the shard", e->device,
            e->ring_step, e->shard);
        if (e->pos >= 0) fs_sb_put(&b, " (%s %d is position %d)", e->kind == FS_EV_BKEY ? "key" : "row", e->row, e->pos);
    }
    if (b.len < n && n <= 4096 && strstr(buf, "\xe2\x88\x92 -")) return paren_negatives(buf, n);
    return b.len;
}

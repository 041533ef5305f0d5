/* narrate.c: a sentence for every step, generated from the event (what happened and why).
 *
 * fs_lesson_describe (describe.c) prints the formulas of a step; this file says the same step in
 * words, for a student who has never seen FlashAttention. The lesson's own narration, where it
 * has one, comes first (fs_lesson_say).
 *
 * Rules the generator keeps:
 *   - Only the event's stored values are used (m_old, m_blk, m_new, ℓ_old, ℓ_blk, ℓ_new, α, β, o,
 *     …), never the algorithm recomputed; numbers have 4 decimals, as describe.c prints them.
 *   - One name per quantity: m (running maximum), ℓ (running sum), α (the correction of what was
 *     accumulated), β (the weight of the new block), o (the row's output so far), O (the output).
 *   - −∞ is written "−∞"; a value that is not a number is written "NaN" and the sentence says
 *     where it came from (only the pitfall variants make one).
 *   - The first event of a kind in a trace (the first skip, the first rescale, the first merge, …)
 *     gets one more sentence of explanation; later ones are shorter.
 *   - Pitfall lessons: the wrong variant's step is compared with the correct run's step of the
 *     same index, when the two traces align there (same kind, head, row and tiles).
 *
 * Cost: O(1) per step except "first of its kind" (a scan from step 0 that stops at the first
 * earlier event of the same category) and the backward's "is this row final" (a scan forward that
 * stops at the row's next event), so a player can ask for every step of an 18 000-step trace.
 */
#include "lesson_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the string builder (fs_sb, lesson_internal.h) ---------------------------------------- */

typedef fs_sb sb;

/* x as describe.c prints it (fs_num_scalar: 4 decimals, 3 significant digits at least under
 * 0.01, scientific when tiny or huge), "−∞", "+∞" or "NaN"; exactly 0 and 1 (α and β often are)
 * as "0" and "1" unless in a vector (exact false). */
static const char *num_(sb *b, double x, bool exact)
{
    char *s = b->ring[b->k++ & 15];
    if (isnan(x)) snprintf(s, 64, "NaN");
    else if (isinf(x)) snprintf(s, 64, x < 0 ? "\xe2\x88\x92\xe2\x88\x9e" : "+\xe2\x88\x9e");
    else if (exact && (x == 0 || x == 1)) snprintf(s, 64, "%d", (int)x);   /* α = 0, β = 1: exact */
    else if (x != 0 && fabs(x) >= 1e7) snprintf(s, 64, "%.3e", x);
    else fs_num_scalar(s, 64, x, 4);
    return s;
}

/* A scalar: num_ with 0 and 1 exact. */
static const char *num(sb *b, double x) { return num_(b, x, true); }

/* A vector of the pool, at most 4 values shown: "[0.4421, 0.5579]" or "[0.1, 0.2, 0.3, 0.4, …]". */
static void vec(sb *b, const fs_trace *t, int64_t off, int32_t n)
{
    const double *v = fs_trace_at(t, off);
    fs_sb_put(b, "[");
    for (int32_t i = 0; v && i < n && i < 4; i++) fs_sb_put(b, "%s%s", i ? ", " : "", num_(b, v[i], false));
    if (v && n > 4) fs_sb_put(b, ", \xe2\x80\xa6");
    fs_sb_put(b, "]");
}

/* Every one of the n values at off is finite (true for an absent vector). */
static bool vec_finite(const fs_trace *t, int64_t off, int32_t n)
{
    const double *v = fs_trace_at(t, off);
    for (int32_t i = 0; v && i < n; i++)
        if (!isfinite(v[i])) return false;
    return true;
}

/* Every one of the n values at off is 0 (true for an absent vector). */
static bool vec_zero(const fs_trace *t, int64_t off, int32_t n)
{
    const double *v = fs_trace_at(t, off);
    for (int32_t i = 0; v && i < n; i++)
        if (v[i] != 0) return false;
    return true;
}

/* The largest |v| of a dQ row that is not all zero but is rounding residue: every |v| under 1e-12
 * of the largest dQ share in the trace (shares that cancel in real arithmetic leave a few units of
 * float64's last place); 0 when it is not. */
static double dq_residue(const fs_trace *t, int64_t off, int32_t n)
{
    double scale = 0;
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *x = &t->ev[k];
        const double *s = x->kind == FS_EV_BROW ? fs_trace_at(t, x->o_blk) : NULL;
        for (int32_t i = 0; s && i < x->n_o; i++)
            if (fabs(s[i]) > scale) scale = fabs(s[i]);
    }
    const double *v = fs_trace_at(t, off);
    double most = 0;
    for (int32_t i = 0; v && i < n; i++) {
        if (!(fabs(v[i]) <= 1e-12 * scale)) return 0;
        if (fabs(v[i]) > most) most = fabs(v[i]);
    }
    return most;
}

/* Do two stored vectors (or numbers) differ beyond rounding noise? NaN differs from a number. */
static bool differs(double a, double c)
{
    if (isnan(a) || isnan(c)) return isnan(a) != isnan(c);
    if (isinf(a) || isinf(c)) return a != c;
    return fabs(a - c) > 1e-9 * fmax(1.0, fabs(c));
}

/* Two vectors of n values (one in each trace) differ somewhere (differs()); false if one is absent. */
static bool vec_differs(const fs_trace *ta, int64_t oa, const fs_trace *tc, int64_t oc, int32_t n)
{
    const double *a = fs_trace_at(ta, oa), *c = fs_trace_at(tc, oc);
    if (!a || !c) return false;
    for (int32_t i = 0; i < n; i++)
        if (differs(a[i], c[i])) return true;
    return false;
}

/* ---- what the step is part of ----------------------------------------------------------- */

typedef struct {
    const fs_lesson *l;
    const fs_trace *t;
    int64_t step;
    const fs_event *e;
    const fs_run *run;      /* NULL without a lesson (a demo) or without a run */
    bool softmax;           /* online softmax of a vector */
    bool query;             /* 000's one query, one key at a time */
    bool exp2;              /* 003: base 2 */
    bool heads;             /* more than one query head */
    bool unnorm;            /* the unnormalized form: o divided by ℓ once, at the end */
    fs_pitfall pit;         /* the wrong variant this trace runs (NONE for the compare trace) */
    const fs_trace *ct;     /* the correct run to compare with (pitfall and low-precision lessons) */
    const fs_event *ce;     /* its event at the same index, when the traces align there */
    bool first;             /* the first event of this category in the trace */
} ctx;

/* A category per event for "first of its kind": the kind and what kind of step it is. */
static int category(const fs_event *e)
{
    int sub = 0;
    switch (e->kind) {
    case FS_EV_ELEM: sub = e->alpha < 1 && e->m_old > -INFINITY; break;
    case FS_EV_TILE: case FS_EV_BTILE: sub = e->cls == FS_TILE_PARTIAL; break;
    case FS_EV_SKIP: case FS_EV_BSKIP: sub = (int)e->reason; break;
    case FS_EV_ROW:
        sub = e->visible == 0 ? 0 : e->m_old == -INFINITY ? 1 : e->m_new > e->m_old ? 2 : 3;
        break;
    case FS_EV_GRAD: sub = e->tensor; break;
    default: break;
    }
    return (int)e->kind * 16 + sub;
}

/* Backwards, so that the scan stops at the nearest earlier event of the category (events of one
 * category come in runs: only the first of a category pays for a scan to step 0). */
static bool first_of_category(const fs_trace *t, int64_t step)
{
    int c = category(&t->ev[step]);
    for (int64_t k = step - 1; k >= 0; k--)
        if (category(&t->ev[k]) == c) return false;
    return true;
}

/* The same step of the correct run: the traces align there when kind, head, row and tiles agree. */
static const fs_event *aligned(const fs_trace *ct, int64_t step, const fs_event *e)
{
    if (!ct || step >= ct->n) return NULL;
    const fs_event *c = &ct->ev[step];
    if (c->kind != e->kind || c->head != e->head || c->row != e->row || c->qt != e->qt || c->kt != e->kt) return NULL;
    return c;
}

/* What the step of t (0 ≤ step < t->n) is part of; l may be NULL. */
static ctx make_ctx(const fs_lesson *l, const fs_trace *t, int64_t step)
{
    ctx c;
    memset(&c, 0, sizeof c);
    c.l = l;
    c.t = t;
    c.step = step;
    c.e = &t->ev[step];
    c.run = l && l->has_run ? &l->run : NULL;
    c.softmax = c.run ? c.run->algo == FS_ALGO_SOFTMAX : t->ev[0].kind == FS_EV_ELEM;
    c.query = c.run && c.run->algo == FS_ALGO_QUERY;
    c.exp2 = c.run && c.run->tiling.exp2 && c.run->algo == FS_ALGO_TILED;
    c.heads = c.run ? c.run->attn.n_q_heads > 1 : c.e->head > 0;
    if (c.run) {
        switch (c.run->algo) {
        case FS_ALGO_QUERY: c.unnorm = true; break;
        case FS_ALGO_TILED: c.unnorm = c.run->tiling.form == FS_FORM_UNNORMALIZED; break;
        case FS_ALGO_DECODE: c.unnorm = c.run->decoding.form == FS_FORM_UNNORMALIZED; break;
        default: break;
        }
    } else {
        c.unnorm = (c.e->kind == FS_EV_ROW || c.e->kind == FS_EV_PARTIAL) && !c.e->normalized;
    }
    const fs_trace *ct = l ? fs_lesson_compare_trace(l) : NULL;
    if (ct && ct != t) {
        c.pit = c.run ? c.run->tiling.pitfall : FS_PITFALL_NONE;
        c.ct = ct;
        c.ce = aligned(ct, step, c.e);
    }
    c.first = first_of_category(t, step);
    return c;
}

/* A lesson's label cut to at most 24 bytes, at a character boundary (labels are UTF-8). */
static int label_len(const char *lab)
{
    int n = (int)strnlen(lab, 24);
    if (lab[n]) while (n > 0 && ((unsigned char)lab[n] & 0xC0) == 0x80) n--;
    return n;
}

/* "query 4", "query 4 (E)", "query 4 of head 2", on the ring "the query at position 5". */
static const char *who(sb *b, const ctx *c, int32_t row)
{
    char *s = b->ring[b->k++ & 15];
    const fs_event *e = c->e;
    const char *lab = c->l && row >= 0 ? fs_lesson_label(c->l, row) : NULL;
    if (c->query) snprintf(s, 64, "the query");
    else if (e->device >= 0 && e->pos >= 0) snprintf(s, 64, "the query at position %d", e->pos);
    else if (lab) snprintf(s, 64, "query %d (%.*s)", row, label_len(lab), lab);
    else snprintf(s, 64, "query %d", row);
    if (c->heads && !c->query) {
        size_t k = strlen(s);
        snprintf(s + k, 64 - k, " of head %d", e->head);
    }
    return s;
}

/* "query 4's maximum", or "the maximum of query 3 (D)" when the name has more than a number (a
 * label, a head, a position on the ring), where a possessive would read badly. */
static const char *of(sb *b, const char *q, const char *noun)
{
    char *s = b->ring[b->k++ & 15];
    if (strchr(q, '(') || strchr(q, ' ') != strrchr(q, ' ')) snprintf(s, 64, "the %s of %s", noun, q);
    else snprintf(s, 64, "%s's %s", q, noun);
    return s;
}

/* On the ring: the positions of the shard the event's device holds at ring step `ring_step` (that
 * step's HOLD, before the event, lists them, n of them), or NULL. */
static const double *held_positions(const ctx *c, int32_t ring_step, int32_t *n)
{
    const fs_event *e = c->e;
    for (int64_t i = c->step; e->device >= 0 && i >= 0; i--) {
        const fs_event *h = &c->t->ev[i];
        if (h->kind == FS_EV_HOLD && h->device == e->device && h->ring_step == ring_step) {
            *n = h->n_s;
            return fs_trace_at(c->t, h->s_row);
        }
    }
    return NULL;
}

/* The shard the event's device holds now (its keys); the one it holds at ring step 0 is its own,
 * whose positions its queries are. */
static const double *shard_positions(const ctx *c, int32_t *n) { return held_positions(c, c->e->ring_step, n); }

/* "key 3", "key 3 (C)"; on the ring, where the event numbers it within its shard, "the key at
 * position 2". */
static const char *key(sb *b, const ctx *c, int32_t j)
{
    char *s = b->ring[b->k++ & 15];
    const char *lab = c->l ? fs_lesson_label(c->l, j) : NULL;
    const fs_event *e = c->e;
    int32_t np = 0;
    const double *pos = e->kind == FS_EV_ROW ? shard_positions(c, &np) : NULL;
    /* on the ring a key of the event is numbered within its shard: named by its position, as a
     * query is (who) */
    if (e->kind == FS_EV_BKEY && e->device >= 0 && e->pos >= 0 && j == e->row) snprintf(s, 64, "the key at position %d", e->pos);
    else if (pos && j >= 0 && j < np) snprintf(s, 64, "the key at position %d", (int)pos[j]);
    else if (lab) snprintf(s, 64, "key %d (%.*s)", j, label_len(lab), lab);
    else snprintf(s, 64, "key %d", j);
    return s;
}

/* "keys 3-5", "key 3", "queries 0-1" (what is "key" or "query"). */
static const char *range(sb *b, const char *what, int32_t lo, int32_t hi_excl)
{
    char *s = b->ring[b->k++ & 15];
    bool q = !strcmp(what, "query");
    if (hi_excl - lo == 1) snprintf(s, 64, "%s %d", what, lo);
    else snprintf(s, 64, "%s %d-%d", q ? "queries" : "keys", lo, hi_excl - 1);
    return s;
}

/* "the key at position 4", "the keys at positions 4 and 5", "the queries at positions 8 … 15":
 * items lo .. hi_excl − 1 named by pos[], into s (64 bytes). */
static const char *at_positions(char *s, const char *one, const char *many, const double *pos, int32_t lo,
                                int32_t hi_excl)
{
    const bool several = hi_excl - lo > 1;
    int at = snprintf(s, 64, "the %s at position%s ", several ? many : one, several ? "s" : "");
    if (hi_excl - lo > 4) snprintf(s + at, 64 - (size_t)at, "%d … %d", (int)pos[lo], (int)pos[hi_excl - 1]);
    else
        for (int32_t j = lo; j < hi_excl && at < 60; j++)
            at += snprintf(s + at, 64 - (size_t)at, "%s%d", j == lo ? "" : j == hi_excl - 1 ? " and " : ", ", (int)pos[j]);
    return s;
}

/* Keys of the event: "keys 3-5", on the ring "keys 0-1 of the shard" (a shard's keys are numbered
 * from 0; its HOLD names their positions). */
static const char *krange(sb *b, const ctx *c, int32_t lo, int32_t hi_excl)
{
    const char *r = range(b, "key", lo, hi_excl);
    if (c->e->device < 0) return r;
    char *s = b->ring[b->k++ & 15];
    int32_t np = 0;
    const double *pos = shard_positions(c, &np);
    if (!pos || lo < 0 || hi_excl > np || hi_excl - lo < 1) {   /* numbered within the shard */
        snprintf(s, 64, "%s of the shard", r);
        return s;
    }
    return at_positions(s, "key", "keys", pos, lo, hi_excl);
}

/* Do query heads share KV heads here (GQA), so that naming the KV head a head reads says something? */
static bool shares_kv(const ctx *c)
{
    return c->run ? c->run->attn.n_kv_heads < c->run->attn.n_q_heads : c->e->head != c->e->kv_head;
}

/* Queries of the event: "queries 0-1", on the ring "the queries at positions 2 and 3" (a device's
 * queries are numbered from 0; they are the positions of the shard it holds at ring step 0). */
static const char *qrange(sb *b, const ctx *c, int32_t lo, int32_t hi_excl)
{
    const char *r = range(b, "query", lo, hi_excl);
    if (c->e->device < 0) return r;
    int32_t np = 0;
    const double *pos = held_positions(c, 0, &np);
    if (!pos || lo < 0 || hi_excl > np || hi_excl - lo < 1) return r;
    return at_positions(b->ring[b->k++ & 15], "query", "queries", pos, lo, hi_excl);
}

/* Capitalize the letter at `at` when a sentence starts there (the start, or after ". "). */
static void capital(sb *b, size_t at)
{
    if (at >= b->len || at + 1 >= b->n) return;
    if (at > 0 && !(at >= 2 && b->buf[at - 2] == '.' && b->buf[at - 1] == ' ')) return;
    if (b->buf[at] >= 'a' && b->buf[at] <= 'z') b->buf[at] = (char)(b->buf[at] - 'a' + 'A');
}

/* Ring events happen on a device at a step, holding a shard. */
static void ring_prefix(sb *b, const ctx *c)
{
    const fs_event *e = c->e;
    if (e->device < 0 || e->kind == FS_EV_HOLD || e->kind == FS_EV_SEND || e->kind == FS_EV_RECV || e->kind == FS_EV_RMERGE)
        return;
    fs_sb_put(b, "On device %d, ring step %d (shard %d): ", e->device, e->ring_step, e->shard);
}

/* The exponential the run uses: "exp", or "exp2" in base 2 (003). */
static const char *EXPW(const ctx *c) { return c->exp2 ? "exp2" : "exp"; }

/* ---- the forward's events ---------------------------------------------------------------- */

static void say_elem(sb *b, const ctx *c)
{
    const fs_event *e = c->e;
    if (e->c1 - e->c0 == 1) {
        if (e->m_old == -INFINITY) {
            fs_sb_put(b, "z[%d] = %s is the first element: it sets the running maximum m = %s, and the running sum "
                   "starts at ℓ = exp(%s − %s) = %s.",
                e->c0, num(b, e->x), num(b, e->m_new), num(b, e->x), num(b, e->m_new), num(b, e->l_new));
            if (c->first)
                fs_sb_put(b, " Online softmax keeps only these two numbers while it reads the vector once; every later "
                       "term of ℓ is an exponential measured from m.");
        } else if (e->m_new > e->m_old) {
            fs_sb_put(b, "z[%d] = %s beats the maximum %s, so m rises to %s; the sum so far was measured from the old "
                   "maximum, so α = exp(%s − %s) = %s, the correction, shrinks it before exp(0) = 1 is added: ℓ = %s.",
                e->c0, num(b, e->x), num(b, e->m_old), num(b, e->m_new), num(b, e->m_old), num(b, e->m_new),
                num(b, e->alpha), num(b, e->l_new));
            if (c->first)
                fs_sb_put(b, " This is the whole trick: one multiplication re-expresses everything summed so far against "
                       "the new maximum, with no second pass over earlier elements.");
        } else {
            fs_sb_put(b, "z[%d] = %s does not beat the maximum %s: α = %s, nothing is rescaled, and exp(%s − %s) = %s is "
                   "added: ℓ = %s.",
                e->c0, num(b, e->x), num(b, e->m_old), num(b, e->alpha), num(b, e->x), num(b, e->m_new),
                num(b, e->beta), num(b, e->l_new));
        }
        return;
    }
    fs_sb_put(b, "The chunk z[%d..%d] is summed on its own first: its maximum m_blk = %s and ℓ_blk = %s. ", e->c0, e->c1 - 1,
        num(b, e->m_blk), num(b, e->l_blk));
    if (e->m_old == -INFINITY)
        fs_sb_put(b, "It is the first chunk, so the state starts from it: m = %s, α = %s multiplies an empty sum, ℓ = %s.",
            num(b, e->m_new), num(b, e->alpha), num(b, e->l_new));
    else if (e->m_new > e->m_old)
        fs_sb_put(b, "Its maximum is larger than the running m = %s, so m rises to %s and α = %s, the correction, shrinks the "
               "old ℓ; β = %s keeps the chunk's sum as it is: ℓ = %s.",
            num(b, e->m_old), num(b, e->m_new), num(b, e->alpha), num(b, e->beta), num(b, e->l_new));
    else
        fs_sb_put(b, "The maximum stays %s: α = %s, and the chunk's sum enters scaled by β = %s: ℓ = %s.", num(b, e->m_new),
            num(b, e->alpha), num(b, e->beta), num(b, e->l_new));
    if (c->first && e->m_old > -INFINITY && e->m_new > e->m_old)
        fs_sb_put(b, " A chunk is merged exactly like a single element, only with its own (m_blk, ℓ_blk) instead of (z, 1).");
}

/* Why a partial tile hides some pairs, by the run's mask (no run: the mask in general). */
static void mask_words(sb *b, const ctx *c)
{
    fs_mask_kind k = c->run ? c->run->attn.mask.kind : FS_MASK_NONE;
    bool tree = c->run && c->run->attn.mask.is_tree;
    if (k == FS_MASK_CAUSAL) fs_sb_put(b, "some keys come after some queries (causal)");
    else if (k == FS_MASK_WINDOW) fs_sb_put(b, "some keys are in a query's future or older than its window of %d positions",
                                      c->run->attn.mask.window);
    else if (tree) fs_sb_put(b, "the tree mask hides some keys (a query sees only itself and its ancestors)");
    else fs_sb_put(b, "the mask hides some pairs");
}

/* TILE: which queries meet which keys, full or partial, and what the tile brings along (soft-cap,
 * low precision, dropout); 000's walk loads one key. */
static void say_tile(sb *b, const ctx *c)
{
    const fs_event *e = c->e;
    if (c->query) {
        fs_sb_put(b, "Load %s: its K and V rows come into fast memory, and the query's score against it is next.",
            key(b, c, e->c0));
        if (c->first)
            fs_sb_put(b, " The query keeps only m, ℓ and o between keys, so the keys can be read one at a time, in any "
                   "number.");
        return;
    }
    size_t at = b->len;
    ring_prefix(b, c);
    fs_sb_put(b, "Q tile %d (%s) meets KV tile %d (%s)", e->qt, qrange(b, c, e->r0, e->r1), e->kt, krange(b, c, e->c0, e->c1));
    if (c->heads && shares_kv(c)) fs_sb_put(b, " in head %d, which reads KV head %d", e->head, e->kv_head);
    else if (c->heads) fs_sb_put(b, " in head %d", e->head);
    capital(b, at);
    if (e->cls == FS_TILE_FULL)
        fs_sb_put(b, ": every query sees every key, so no element mask is needed.");
    else {
        fs_sb_put(b, ": ");
        mask_words(b, c);
        fs_sb_put(b, ", so the element mask sets those scores to −∞.");
    }
    if (c->run && c->run->attn.softcap > 0)
        fs_sb_put(b, " Each score first passes the soft-cap, cap · tanh(s / cap) with cap = %g, so none can exceed %g.",
            c->run->attn.softcap, c->run->attn.softcap);
    if (e->lowp)
        fs_sb_put(b, " Q, K, V are stored in low precision; a value is the stored number times its scale (q %s, k %s, v %s).",
            fs_sb_sig4(b, e->q_scale), fs_sb_sig4(b, e->k_scale), fs_sb_sig4(b, e->v_scale));
    if (e->drop >= 0)
        fs_sb_put(b, " Dropout (p = %g) removes %d visible cell%s from the product with V (ℓ keeps %s); kept weights "
               "× 1/(1 − p) = %.4g keep O's expected value.",
            e->dropout, e->n_drop, e->n_drop == 1 ? "" : "s", e->n_drop == 1 ? "it" : "them", 1.0 / (1.0 - e->dropout));
    if (c->first && e->cls == FS_TILE_PARTIAL)
        fs_sb_put(b, " Only tiles on the mask's edge need this; tiles wholly inside are full, wholly outside skipped.");
    else if (c->first)
        fs_sb_put(b, " Only this pair's rows of Q, K, V sit in fast memory; its scores are never written out to slow memory.");
}

/* SKIP and BSKIP: why the whole pair is hidden, and what is saved. */
static void say_skip(sb *b, const ctx *c, bool backward)
{
    const fs_event *e = c->e;
    size_t at = b->len;
    ring_prefix(b, c);
    fs_sb_put(b, "Q tile %d (%s) × KV tile %d (%s) is skipped%s: ", e->qt, qrange(b, c, e->r0, e->r1), e->kt,
        krange(b, c, e->c0, e->c1), backward ? " in the backward" : "");
    capital(b, at);
    switch (e->reason) {
    case FS_SKIP_CAUSAL: fs_sb_put(b, "every key comes after every query (causal)."); break;
    case FS_SKIP_WINDOW:
        fs_sb_put(b, "every key is older than every query's sliding window.");
        break;
    case FS_SKIP_TREE:
        fs_sb_put(b, "no key is one of these queries or an ancestor of one in the tree.");
        break;
    case FS_SKIP_BITMASK: fs_sb_put(b, "the bitmask hides every pair of them."); break;
    default: fs_sb_put(b, "no pair of them is visible."); break;
    }
    if (backward) fs_sb_put(b, " P = 0 there, so no gradient flows; nothing is loaded or computed.");
    else fs_sb_put(b, " K and V are not loaded, no score is computed.");
    if (c->first && !backward)
        fs_sb_put(b, " Hidden pairs would only add exp(−∞) = 0: skipping is exact, and is where a masked kernel saves time.");
}

/* The sentence on the pitfall (or the rounding) at a ROW: what the wrong variant does differently
 * and whether its numbers part from the correct run's at this step. */
static void row_compare(sb *b, const ctx *c)
{
    const fs_event *e = c->e, *ce = c->ce;
    if (!ce) return;
    bool dl = differs(e->l_new, ce->l_new), dm = differs(e->m_new, ce->m_new);
    bool dov = vec_differs(c->t, e->o_new, c->ct, ce->o_new, e->n_o < ce->n_o ? e->n_o : ce->n_o);
    const char *what = NULL;
    switch (c->pit) {
    case FS_PITFALL_NO_RESCALE: what = "it adds this tile without shrinking the old o by α·ℓ_old/ℓ_new"; break;
    case FS_PITFALL_GLOBAL_MAX_NO_BETA:
        what = "it leaves out β but takes P against m_new, which puts β inside P";
        break;
    case FS_PITFALL_BLOCK_MAX_NO_BETA: what = "it adds exp(S − m_blk) without β, too much whenever m_blk < m_new"; break;
    case FS_PITFALL_MASKED_NAN: what = "it has no guard for a row whose keys are all hidden"; break;
    case FS_PITFALL_MASKED_DOC_FIX: what = "it guards β but not α"; break;
    default: what = c->run && c->run->lowp ? "rounding to low precision" : NULL; break;
    }
    if (!what) return;
    bool lowp = c->pit == FS_PITFALL_NONE;
    if (!dl && !dm && !dov) {
        /* say so only where the variant's difference could have acted */
        bool acts = false;
        switch (c->pit) {
        case FS_PITFALL_NO_RESCALE: acts = e->m_old > -INFINITY; break;
        case FS_PITFALL_GLOBAL_MAX_NO_BETA: case FS_PITFALL_BLOCK_MAX_NO_BETA: acts = ce->beta < 1 && e->visible > 0; break;
        case FS_PITFALL_MASKED_NAN: case FS_PITFALL_MASKED_DOC_FIX: acts = e->visible == 0; break;
        default: break;
        }
        if (acts && c->pit == FS_PITFALL_GLOBAL_MAX_NO_BETA && e->m_new == e->m_old)
            fs_sb_put(b, " Its ℓ and o agree with the correct run's here.");   /* the stay sentence said why */
        else if (acts) fs_sb_put(b, " The wrong variant (%s) still agrees with the correct run at this step.", what);
        return;
    }
    if (lowp)   /* (ℓ is measured from m: the exact run's own maximum is given with it) */
        fs_sb_put(b, " In exact arithmetic this step gives m = %s, ℓ = %s and o = ", num(b, ce->m_new), num(b, ce->l_new));
    else fs_sb_put(b, " Here the wrong variant (%s) parts from the correct run, which has ℓ = %s and o = ", what,
             num(b, ce->l_new));
    vec(b, c->ct, ce->o_new, ce->n_o);
    fs_sb_put(b, ".");
}

/* Does this ROW event keep o divided by ℓ (a lesson's run in the normalized form, no pitfall), so
 * that o is scaled by α · ℓ_old / ℓ_new even where α = 1? Without a lesson the form is read from
 * the event, but a pitfall's wrong run cannot be told from a right one: neither is claimed. */
static bool kept_divided(const ctx *c)
{
    const fs_event *e = c->e;
    return c->run && !c->unnorm && e->normalized && !c->query && c->pit == FS_PITFALL_NONE && !e->lowp &&
           e->l_old > 0 && e->l_new > 0;
}

/* ROW: one query row folds one tile (or one key) into its (m, ℓ, o): the row starts, its maximum
 * rises (α < 1) or stays (α = 1), the mask hides the tile, or a pitfall variant made a NaN. */
static void say_row(sb *b, const ctx *c)
{
    const fs_event *e = c->e;
    const char *q = who(b, c, e->row);
    size_t at = b->len;
    ring_prefix(b, c);
    bool nan_here = !isfinite(e->l_new) || isnan(e->m_new) || isnan(e->alpha) || isnan(e->beta) ||
                    !vec_finite(c->t, e->o_new, e->n_o);
    if (nan_here) {
        const bool was_nan = !isfinite(e->l_old) || !vec_finite(c->t, e->o_old, e->n_o);
        fs_sb_put(b, "%s %s NaN (not a number): ", of(b, q, "ℓ and o"), was_nan ? "stay" : "are now");
        if (was_nan)
            fs_sb_put(b, "they were NaN before this tile, and a NaN, once in ℓ or o, never leaves.");
        else if (isnan(e->alpha))
            fs_sb_put(b, "this variant computes α = exp(m_old − m_new) with both still −∞ (no key seen yet), and "
                   "exp(−∞ − (−∞)) is undefined; the guarded algorithm keeps α = 1 while m is −∞.");
        else if (isnan(e->l_blk) || e->m_blk == -INFINITY)
            fs_sb_put(b, "the mask hides every key of this tile from it, so m_blk = −∞ and this variant computes "
                   "exp(S − m_blk) = exp(−∞ − (−∞)), which is undefined; the guarded algorithm leaves the row "
                   "unchanged.");
        else fs_sb_put(b, "a non-finite value entered this step's arithmetic.");
        capital(b, at);
        if (c->ce) {
            fs_sb_put(b, " The correct run has ℓ = %s and o = ", num(b, c->ce->l_new));
            vec(b, c->ct, c->ce->o_new, c->ce->n_o);
            fs_sb_put(b, ".");
        }
        return;
    }
    if (e->visible == 0) {
        fs_sb_put(b, "The mask hides every key of this tile (%s) from %s, so its state is unchanged", krange(b, c, e->c0, e->c1), q);
        if (e->m_new == -INFINITY) fs_sb_put(b, ": it has seen no key yet (m = −∞, ℓ = %s).", num(b, e->l_new));
        else fs_sb_put(b, " (m = %s, ℓ = %s).", num(b, e->m_new), num(b, e->l_new));
        if (c->first && !c->query)
            fs_sb_put(b, " A guarded kernel checks for this case: with m_blk = −∞ it must not compute exp(−∞ − (−∞)).");
        row_compare(b, c);
        return;
    }
    /* the key that holds the tile's maximum (the first one if several) */
    const double *s = fs_trace_at(c->t, e->s_row);
    int32_t arg = -1;
    for (int32_t j = 0; s && j < e->n_s; j++)
        if (s[j] == e->m_blk) { arg = j; break; }
    bool no_beta = c->pit == FS_PITFALL_BLOCK_MAX_NO_BETA || c->pit == FS_PITFALL_GLOBAL_MAX_NO_BETA;
    const char *kbest = arg >= 0 ? key(b, c, e->c0 + arg * (e->stride > 0 ? e->stride : 1)) : "a key of this tile";
    if (c->query) {
        fs_sb_put(b, "Score of %s: %s. ", key(b, c, e->c0), num(b, s ? s[0] : e->m_blk));
    }
    size_t at2 = b->len;
    if (e->m_old == -INFINITY) {
        if (c->query) fs_sb_put(b, "It is the first key, so the row starts here: m = %s", num(b, e->m_new));
        else if (e->device >= 0)   /* on the ring: this shard's own state, merged into the row's after */
            fs_sb_put(b, "%s meets %s here%s: this shard's own state starts at m = %s (the score of %s)", q,
                krange(b, c, e->c0, e->c1), e->visible == 1 && e->c1 - e->c0 > 1 ? " (sees one of them)" : "",
                num(b, e->m_new), kbest);
        else if (e->visible == e->c1 - e->c0)
            fs_sb_put(b, "%s sees its first key%s here (%s), so the row starts: m = %s (the score of %s)", q,
                e->visible == 1 ? "" : "s", krange(b, c, e->c0, e->c1), num(b, e->m_new), kbest);
        else if (e->visible == 1)   /* "one of keys 0-1", not "1 of keys 0-1", which reads as key 1 */
            fs_sb_put(b, "%s sees its first key here (one of %s), so the row starts: m = %s (the score of %s)", q,
                krange(b, c, e->c0, e->c1), num(b, e->m_new), kbest);
        else fs_sb_put(b, "%s sees its first keys here (%d of %s), so the row starts: m = %s (the score of %s)", q,
                 e->visible, krange(b, c, e->c0, e->c1), num(b, e->m_new), kbest);
        capital(b, at2);
        if (c->first)   /* the symbols of this step's lines, said once before they are used */
            fs_sb_put(b, ". A row keeps m (its best score so far), ℓ (the sum of %s(score − m)) and o (its output so "
                   "far); each %s brings its best m_blk and sum ℓ_blk, and α (the row's) and β (the %s's) bring "
                   "both to the new maximum m_new, each %s(its maximum − m_new). Here α = %s: the state was empty.",
                EXPW(c), c->query ? "key" : "tile", c->query ? "key" : "tile", EXPW(c), num(b, e->alpha));
        else fs_sb_put(b, "; α = %s multiplies an empty state, so nothing is lost.", num(b, e->alpha));
    } else if (e->m_new > e->m_old) {
        fs_sb_put(b, "%s rises from %s to %s (%s beats everything before), so what was summed is measured from a "
               "maximum now too small: α = %s(%s − %s) = %s, the correction, shrinks the old ℓ %s before this %s added.",
            c->query ? "The query's maximum" : of(b, q, "maximum"), num(b, e->m_old), num(b, e->m_new), kbest, EXPW(c),
            num(b, e->m_old), num(b, e->m_new), num(b, e->alpha),
            c->pit == FS_PITFALL_NO_RESCALE ? "(and should shrink o, which this variant forgets)"
            : kept_divided(c) ? "and o (o, kept divided by ℓ, by α · ℓ_old / ℓ_new)" : "and o",
            c->query ? "key is" : "tile's keys are");
        capital(b, at2);
        if (c->first) fs_sb_put(b, " One multiplication corrects all earlier terms: nothing is recomputed.");
    } else {
        fs_sb_put(b, "%s stays %s (this tile's best, m_blk = %s, is not higher): α = %s",
            c->query ? "The query's maximum" : of(b, q, "maximum"), num(b, e->m_new), num(b, e->m_blk), num(b, e->alpha));
        if (kept_divided(c))   /* the normalized form: o is kept divided by ℓ, which grows */
            fs_sb_put(b, ", but o, kept divided by ℓ, is still scaled by ℓ_old / ℓ_new = %s; ", num(b, e->l_old / e->l_new));
        else fs_sb_put(b, "%s; ", c->unnorm ? ", nothing earlier needs rescaling" : " (the maximum holds)");
        if (c->pit == FS_PITFALL_GLOBAL_MAX_NO_BETA && c->ce)
            fs_sb_put(b, "this variant has no β, but it takes P = exp(S − m_new) against the new maximum, which is "
                   "exp(S − m_blk) times β = %s(%s − %s) = %s: the same weights.",
                EXPW(c), num(b, e->m_blk), num(b, e->m_new), num(b, c->ce->beta));
        else if (no_beta && c->ce)
            fs_sb_put(b, "the correct run scales this tile's keys by β = %s(%s − %s) = %s, but this variant leaves β out.",
                EXPW(c), num(b, e->m_blk), num(b, e->m_new), num(b, c->ce->beta));
        else if (e->lowp) {   /* low precision takes P against m_new at once: no β (the event's is a placeholder) */
            /* the kernel's exp: float64 rounded to float32 (lowp.c), so a tiny weight underflows to 0 */
            const float pb = (float)(c->exp2 ? exp2(e->m_blk - e->m_new) : exp(e->m_blk - e->m_new));
            fs_sb_put(b, "the tile's weights are taken against it directly, P = %s(s − m_new): at its best key "
                   "%s(%s − %s) = %s", EXPW(c), EXPW(c), num(b, e->m_blk), num(b, e->m_new), num(b, pb));
            if (pb == 0) fs_sb_put(b, " in float32: the whole tile adds nothing to ℓ or o.");
            else fs_sb_put(b, ".");
        }
        else
            fs_sb_put(b, "the new %s enter%s scaled by β = %s(%s − %s) = %s.", c->query ? "key" : "tile's keys", c->query ? "s" : "",
                EXPW(c), num(b, e->m_blk), num(b, e->m_new), num(b, e->beta));
        capital(b, at2);
    }
    if (c->exp2 && c->first)
        fs_sb_put(b, " Here scores and m are in base 2 (times log2 e) and exp2 replaces exp; α, β and ℓ are unchanged.");
    if (e->lowp && e->p_scale != 1 && c->first)
        fs_sb_put(b, " P is multiplied by %g before it is rounded to low precision, then divided back.", e->p_scale);
    else if (e->lowp && c->first)
        fs_sb_put(b, " P is rounded to low precision before the product with V.");
    if (e->device >= 0 && c->first) fs_sb_put(b, " This is the state within the shard; a merge into the row's running state follows.");
    row_compare(b, c);
}

/* PARTIAL: one decode split's state (m, ℓ, o) for one query row. */
static void say_partial(sb *b, const ctx *c)
{
    const fs_event *e = c->e;
    char keys[96];
    if (e->c0 >= e->c1 || e->m_new == -INFINITY) {
        fs_sb_put(b, "Split %d has no visible key for %s: its partial state is empty (m = −∞, ℓ = %s), and a merge "
               "scales it by 0.",
            e->kt, who(b, c, e->row), num(b, e->l_new));
        return;
    }
    fs_event_keys(e, keys, sizeof keys);
    fs_sb_put(b, "Split %d reads %s alone, as if they were all the keys: the partial state of %s is m = %s, ℓ = %s, "
           "o %s.",
        e->kt, keys, who(b, c, e->row), num(b, e->m_new), num(b, e->l_new),
        e->normalized ? "divided by ℓ" : "not yet divided by ℓ");
    if (c->first)
        fs_sb_put(b, " Splits run in parallel; each keeps its own maximum, so the merges that follow are exact.");
}

/* MERGE and RMERGE: two states (m_old, ℓ_old, o_old) and (m_blk, ℓ_blk, o_blk) become one. */
static void say_merge(sb *b, const ctx *c)
{
    const fs_event *e = c->e;
    bool ring = e->kind == FS_EV_RMERGE;
    if (ring) {
        fs_sb_put(b, "Device %d folds the block of KV shard %d into the running state of %s", e->device, e->shard,
            who(b, c, e->pos >= 0 ? e->pos : e->row));
        if (e->m_old == -INFINITY) {
            fs_sb_put(b, ": it was empty (m = −∞), so α = %s and the block's state is taken as it is (m = %s, ℓ = %s).",
                num(b, e->alpha), num(b, e->m_new), num(b, e->l_new));
            if (c->first)
                fs_sb_put(b, " Every ring step that the mask does not skip brings each row one block: its state over "
                       "the shard, with o already divided by ℓ_blk. Merging the blocks gives exactly the softmax over "
                       "all keys.");
            return;
        }
        if (e->m_blk == -INFINITY) {
            fs_sb_put(b, ": the block saw no visible key (m_blk = −∞), so β = %s and the running state stays m = %s, ℓ = %s.",
                num(b, e->beta), num(b, e->m_new), num(b, e->l_new));
            return;
        }
        fs_sb_put(b, ": ");
    } else {
        fs_sb_put(b, "Partials %d (m = %s, ℓ = %s) and %d (m = %s, ℓ = %s) merge into %d: ", e->a,
            num(b, e->m_old), num(b, e->l_old), e->b, num(b, e->m_blk), num(b, e->l_blk), e->id);
    }
    const char *A = ring ? "the running state" : "the first", *B = ring ? "the block" : "the second";
    if (e->m_old > e->m_blk)
        fs_sb_put(b, "%s has the larger maximum, %s, so β = exp(%s − %s) = %s scales %s down and α = %s keeps %s",
            A, num(b, e->m_new), num(b, e->m_blk), num(b, e->m_new), num(b, e->beta), B, num(b, e->alpha), A);
    else if (e->m_blk > e->m_old)
        fs_sb_put(b, "%s has the larger maximum, %s, so α = exp(%s − %s) = %s scales %s down and β = %s keeps %s",
            B, num(b, e->m_new), num(b, e->m_old), num(b, e->m_new), num(b, e->alpha), A, num(b, e->beta), B);
    else fs_sb_put(b, "both maxima are %s, so α = %s and β = %s: the sums add as they are", num(b, e->m_new),
             num(b, e->alpha), num(b, e->beta));
    fs_sb_put(b, "; ℓ = %s.", num(b, e->l_new));
    if (c->first)
        fs_sb_put(b, " Exact: both sums are measured from one maximum before they are added, as in one pass over all "
               "the keys.");
}

/* OUT: the softmax vector, or a final output row O and how it came from (m, ℓ, o). */
static void say_out(sb *b, const ctx *c)
{
    const fs_event *e = c->e;
    if (c->softmax) {
        fs_sb_put(b, "Done: each softmax value is exp(z − m) / ℓ with the final m = %s and ℓ = %s: ",
            num(b, e->m_new), num(b, e->l_new));
        vec(b, c->t, e->o_new, e->n_o);
        fs_sb_put(b, ".");
        if (c->first) fs_sb_put(b, " The vector was read once for m and ℓ; this last pass only divides.");
        return;
    }
    const char *q = who(b, c, e->row);
    size_t at = b->len;
    bool fin = isfinite(e->l_new) && vec_finite(c->t, e->o_new, e->n_o);
    if (!fin) {
        fs_sb_put(b, "%s is finished, but its output row is NaN (not a number), carried from its ℓ and o.", q);
        capital(b, at);
        const fs_event *ce = c->ce;
        if (ce) {
            fs_sb_put(b, " The correct run writes O = ");
            vec(b, c->ct, ce->o_new, ce->n_o);
            fs_sb_put(b, ".");
        }
        return;
    }
    if (e->l_new == 0) {
        fs_sb_put(b, "%s saw no key at all (ℓ = 0): its output row is defined as zeros instead of 0/0.", q);
        capital(b, at);
        return;
    }
    if (c->run && c->run->algo == FS_ALGO_REFERENCE)
        fs_sb_put(b, "%s from the plain reference (all scores, then softmax; m = %s, ℓ = %s): O = ", q, num(b, e->m_new),
            num(b, e->l_new));
    else if (e->device >= 0 || (c->run && c->run->algo == FS_ALGO_RING))
        fs_sb_put(b, "%s has met every shard: its merged state (m = %s, ℓ = %s) gives O = ", q, num(b, e->m_new),
            num(b, e->l_new));
    else if (c->unnorm)
        fs_sb_put(b, "%s is finished: o is divided by ℓ = %s once, giving O = ", q, num(b, e->l_new));
    else
        fs_sb_put(b, "%s is finished: o was kept divided by ℓ (ℓ = %s), so it is written as it is: O = ", q,
            num(b, e->l_new));
    capital(b, at);
    vec(b, c->t, e->o_new, e->n_o);
    fs_sb_put(b, ".");
    if (c->ce && vec_differs(c->t, e->o_new, c->ct, c->ce->o_new, e->n_o)) {
        fs_sb_put(b, c->pit == FS_PITFALL_NONE ? " In exact arithmetic O = " : " The correct run writes O = ");
        vec(b, c->ct, c->ce->o_new, c->ce->n_o);
        fs_sb_put(b, ".");
    }
    if (c->first && !(c->run && c->run->algo == FS_ALGO_REFERENCE)) {
        const bool kv_outer = c->run && c->run->tiling.order == FS_ORDER_KV_OUTER && c->run->tiling.Bk > 0 &&
                              c->run->attn.n_kv > c->run->tiling.Bk;
        fs_sb_put(b, kv_outer ? " With the KV tiles outside, each row's m, ℓ and o went back to slow memory after every KV "
                                "tile; the scores and their weights were never stored."
                              : " Each output row is written once; the scores and their weights were never stored.");
    }
}

/* ---- the backward ----------------------------------------------------------------------- */

/* Is there no later event of `kind` for the same row (BROW: query head and row, on the same
 * device, where the queries stay; BKEY: KV head and key, in the same shard, which travels the
 * ring)? Stops at the first later one. */
static bool last_for_row(const ctx *c, fs_event_kind kind)
{
    const fs_event *e = c->e;
    for (int64_t k = c->step + 1; k < c->t->n; k++) {
        const fs_event *x = &c->t->ev[k];
        if (x->kind != kind || x->row != e->row) continue;
        if (kind == FS_EV_BROW ? x->device != e->device : x->shard != e->shard) continue;
        if (kind == FS_EV_BROW ? x->head == e->head : x->kv_head == e->kv_head) return false;
    }
    return true;
}

/* The backward's events: LSE, DELTA, BTILE, BSKIP, BROW, BKEY, GRAD. */
static void say_backward(sb *b, const ctx *c)
{
    const fs_event *e = c->e;
    size_t at = b->len;
    switch (e->kind) {
    case FS_EV_LSE:
        if (e->x == -INFINITY) {
            fs_sb_put(b, "%s saw no key in the forward pass: L = −∞, so its P is 0 everywhere (set, not computed: "
                   "exp(S − L) would be exp(−∞ − (−∞)) where S is −∞) and its gradients are zero.", who(b, c, e->row));
        } else {
            fs_sb_put(b, "The forward kept one number for %s, L = m + ln ℓ = %s, from which the backward rebuilds "
                   "P = exp(S − L) exactly.", who(b, c, e->row), num(b, e->x));
            if (c->first) fs_sb_put(b, " One number a row instead of a row of P keeps the memory linear in n.");
        }
        break;
    case FS_EV_DELTA:
        fs_sb_put(b, "%s: D = rowsum(dO ∘ O) = %s. Every dS of the row uses it (dS = P ∘ (dP − D)), so it is "
               "computed once, here.",
            who(b, c, e->row), num(b, e->x));
        if (c->first) fs_sb_put(b, " It equals the row's Σ_j P_j dP_j over every key j, the softmax gradient's shared term, from one product per column of O (dO and O are as wide as a row of V) instead of one per key.");
        break;
    case FS_EV_BTILE:
        ring_prefix(b, c);
        fs_sb_put(b, "the backward visits Q tile %d (%s) × KV tile %d (%s), %s: S is recomputed from Q and K, and "
               "P = exp(S − L) from the saved L.",
            e->qt, qrange(b, c, e->r0, e->r1), e->kt, krange(b, c, e->c0, e->c1),
            e->cls == FS_TILE_FULL ? "every pair visible" : "the element mask applied");
        if (c->heads && shares_kv(c)) fs_sb_put(b, " Head %d reads KV head %d.", e->head, e->kv_head);
        else if (c->heads) fs_sb_put(b, " This is head %d.", e->head);
        if (e->drop >= 0)
            fs_sb_put(b, " The forward's %d dropped %s regenerated from the seed: no mask was stored.", e->n_drop,
                   e->n_drop == 1 ? "cell is" : "cells are");
        if (c->first) fs_sb_put(b, " Recomputing costs a second Q Kᵀ but spares storing and rereading an n × n P.");
        break;
    case FS_EV_BSKIP: say_skip(b, c, true); return;
    case FS_EV_BROW: {
        const char *q = who(b, c, e->row);
        ring_prefix(b, c);
        if (e->visible == 0) {
            fs_sb_put(b, "No key of this tile is visible to %s: P = 0, so dS = 0 and its dQ does not change.", q);
            if (e->dp_row >= 0)
                fs_sb_put(b, " dP is computed for the whole tile all the same, hidden cells too, as a kernel does; "
                       "P = 0 cancels it in dS.");
        } else {
            fs_sb_put(b, "%s against KV tile %d: P = exp(S − %s) is rebuilt, dP = %s, dS = P ∘ (dP − D) with "
                   "D = %s, and its dQ gains this tile's share, scale · dS K.",
                q, e->kt, num(b, e->x), c->run && c->run->tiling.dropout.on ? "Z ∘ (dO Vᵀ) / (1 − p)" : "dO Vᵀ",
                num(b, e->m_new));
        }
        if (last_for_row(c, FS_EV_BROW)) {
            fs_sb_put(b, " That was its last tile: its dQ row is final.");
            double r = dq_residue(c->t, e->o_new, e->n_o);
            if (r > 0)
                fs_sb_put(b, " Its shares cancel: the row is 0 in exact arithmetic, and float64's rounding leaves %s.", num(b, r));
        }
        else if (c->first) fs_sb_put(b, " A row's dQ collects one share from every KV tile it sees.");
        break;
    }
    case FS_EV_BKEY: {
        ring_prefix(b, c);
        if (vec_zero(c->t, e->o_blk, e->n_o) && vec_zero(c->t, e->g_blk, e->n_g)) {
            fs_sb_put(b, "%s gets a zero share from this tile (no query here sees it, or their dO and dS are 0%s).",
                key(b, c, e->row), c->run && c->run->tiling.dropout.on ? ", or the forward dropped its weights" : "");
            if (last_for_row(c, FS_EV_BKEY)) fs_sb_put(b, " No later tile touches this key: its dK and dV rows are final.");
            break;
        }
        fs_sb_put(b, "%s collects this tile's share: dK gains scale · dSᵀ Q and dV gains %s.", key(b, c, e->row),
            c->run && c->run->tiling.dropout.on ? "Pdᵀ dO (Pd: the weights after dropout)" : "Pᵀ dO");
        const bool ring = e->device >= 0 || (c->run && c->run->algo == FS_ALGO_RING);
        if (last_for_row(c, FS_EV_BKEY)) fs_sb_put(b, " No later tile touches this key: its dK and dV rows are final.");
        else if (c->first && ring)
            fs_sb_put(b, " The shard's dK and dV gather this ring step's shares here, then travel on with it.");
        else if (c->first && c->run && c->run->tiling.order == FS_ORDER_KV_OUTER)
            fs_sb_put(b, " The KV tile stays in fast memory while query tiles pass, so dK and dV are summed there and "
                   "written once.");
        else if (c->first)
            fs_sb_put(b, " With the Q tiles outside, each Q tile's pass adds its share to dK and dV in slow memory.");
        break;
    }
    case FS_EV_GRAD: {
        bool q = e->tensor == FS_GRAD_DQ;
        fs_sb_put(b, "The %s row of %s is final", fs_grad_str(e->tensor), q ? who(b, c, e->row) : key(b, c, e->row));
        if (c->heads || (c->run && c->run->attn.n_kv_heads > 1)) fs_sb_put(b, " (%s %d)", q ? "head" : "KV head", e->head);
        fs_sb_put(b, ": ");
        vec(b, c->t, e->o_new, e->n_o);
        double r = q ? dq_residue(c->t, e->o_new, e->n_o) : 0;
        if (vec_zero(c->t, e->o_new, e->n_o)) fs_sb_put(b, ", all zero: every share it got was 0.");
        else if (r > 0) fs_sb_put(b, ", zero but for rounding: its shares cancel in exact arithmetic, and float64 leaves %s.", num(b, r));
        else fs_sb_put(b, q ? ", the sum of the shares of the KV tiles it sees." : ", the sum of the shares of the queries "
                                                                           "that see it.");
        if (c->first && !(e->device >= 0 || (c->run && c->run->algo == FS_ALGO_RING))) {
            /* (a ring keeps dQ on its device and passes dK, dV around: no slow memory to speak of)
             * the gradient the loop order finishes in one pass is written once; the other one
             * gets its shares from passes with other work between, added in slow memory */
            const bool kv_outer = c->run && c->run->tiling.order == FS_ORDER_KV_OUTER;
            /* tiles of the outer loop: with one, every share came in the same pass */
            const int32_t Bo = !c->run ? 0 : kv_outer ? c->run->tiling.Bk : c->run->tiling.Bq;
            const int32_t outer = Bo <= 0 ? 2 : ((kv_outer ? c->run->attn.n_kv : c->run->attn.n_q) + Bo - 1) / Bo;
            if (q == kv_outer && outer > 1)
                fs_sb_put(b, " With the %s tiles outside, a row's shares come in separate passes, one for each tile it "
                          "sees, so a kernel adds each into slow memory as it comes (this final sum is what is left "
                          "there).", kv_outer ? "KV" : "Q");
            else fs_sb_put(b, " Its shares all came while its tile stayed in fast memory: it is written to slow memory once.");
        }
        break;
    }
    default: break;
    }
    capital(b, at);
}

/* ---- the paged KV cache and the ring ---------------------------------------------------- */

static void say_paged(sb *b, const ctx *c)
{
    const fs_event *e = c->e;
    char keys[96];
    switch (e->kind) {
    case FS_EV_LOOKUP:
        fs_event_keys(e, keys, sizeof keys);
        fs_sb_put(b, "Split %d of %s needs %s: sequence %d's block table maps its logical block %d to physical page %d, "
               "so that page is read.",
            e->kt, who(b, c, e->row), keys, e->seq, e->block, e->page);
        if (e->refs > 1) fs_sb_put(b, " %d sequences share the page; reading needs no copy.", e->refs);
        if (c->first)
            fs_sb_put(b, " The block table is one level of indirection: a sequence's keys may lie in any pages, in any "
                   "order, and the kernel still reads them in position order.");
        break;
    case FS_EV_ALLOC:
        fs_sb_put(b, "Sequence %d needs its block %d: its last page is full (or it has none), so it takes free page %d; "
               "%d page%s free.",
            e->seq, e->block, e->page, e->n_free, e->n_free == 1 ? " stays" : "s stay");
        if (c->first) fs_sb_put(b, " Pages are taken only when a sequence grows into them, so no memory is reserved for "
                             "tokens not yet generated.");
        break;
    case FS_EV_SHARE:
        fs_sb_put(b, "Sequence %d is forked from sequence %d: its block %d points at the same page %d (positions %d-%d) "
               "instead of a copy; %d sequences hold it now.",
            e->seq, e->src, e->block, e->page, e->c0, e->c1 - 1, e->refs);
        if (c->first) fs_sb_put(b, " A shared prefix costs no memory until one of the sequences writes into it.");
        break;
    case FS_EV_COW:
        fs_sb_put(b, "Sequence %d is about to write into page %d, which other sequences also hold: copy on write copies "
               "its %d filled slots to free page %d and points block %d there, so the others keep their data; "
               "%d sequence%s still hold%s page %d, %d page%s free.",
            e->seq, e->src, e->slot, e->page, e->block, e->refs, e->refs == 1 ? "" : "s", e->refs == 1 ? "s" : "",
            e->src, e->n_free, e->n_free == 1 ? " stays" : "s stay");
        break;
    case FS_EV_WRITE:
        fs_sb_put(b, "Sequence %d appends position %d: its K and V rows go to page %d, slot %d (logical block %d).",
            e->seq, e->c0, e->page, e->slot, e->block);
        if (e->refs > 1) fs_sb_put(b, " %d sequences hold this page.", e->refs);
        break;
    default: break;
    }
}

/* The ring's own events: HOLD, SEND, RECV (RMERGE is say_merge's). */
static void say_ring(sb *b, const ctx *c)
{
    const fs_event *e = c->e;
    switch (e->kind) {
    case FS_EV_HOLD: {
        const double *p = fs_trace_at(c->t, e->s_row);
        fs_sb_put(b, "Ring step %d: device %d holds KV shard %d, the keys at positions", e->ring_step, e->device, e->shard);
        for (int32_t k = 0; p && k < e->n_s && k < 8; k++) fs_sb_put(b, "%s %d", k ? "," : "", (int)p[k]);
        if (e->n_s > 8) fs_sb_put(b, ", \xe2\x80\xa6");
        if (fs_ring_hold_skipped(c->t, c->step))
            fs_sb_put(b, "; the mask hides every one of them from its own queries, so the step skips its tiles.");
        else
            fs_sb_put(b, "; its own queries meet these keys now, tile by tile.");
        if (e->ring_step == 0 && c->first)
            fs_sb_put(b, " Every device starts with its own shard of K and V; the shards travel around the ring, so "
                   "after as many steps as devices every query has met every key.");
        break;
    }
    case FS_EV_SEND:
        fs_sb_put(b, "After ring step %d, device %d sends shard %d (%s, %lld bytes in float64) on to device %d, %s.",
            e->ring_step, e->a, e->shard,
            e->tensor == 0 ? "K and V" : e->tensor == 1 ? "K, V and their dK, dV so far" : "its finished dK and dV, home",
            (long long)e->bytes, e->b,
            e->tensor == 2 ? "the shard's owner, where they are final" : "which works on it next");
        if (c->first && e->tensor == 0)
            fs_sb_put(b, " Here it goes after the step; a real ring starts the send while the step still computes with "
                   "the shard (room for two shards a device), so the ring hides its communication when each step "
                   "computes long enough.");
        else if (c->first)
            fs_sb_put(b, " Here it goes after the step. A real ring can send K and V on while the step still computes "
                   "with them, but the dK and dV they travel with are complete only once this step has added its "
                   "share: that send overlaps the next step's work instead.");
        break;
    case FS_EV_RECV:
        if (e->tensor == 2)
            fs_sb_put(b, "Device %d receives shard %d's dK and dV from device %d: they are home, final.", e->b, e->shard, e->a);
        else
            fs_sb_put(b, "Device %d receives shard %d from device %d: these are the keys it meets at ring step %d.", e->b,
                e->shard, e->a, e->ring_step + 1);
        break;
    default: break;
    }
}

/* "a − -b" reads badly: rewrite every "− -NUMBER" as "− (-NUMBER)" in place (buf holds len bytes
 * and room for n). Returns the new length, or len when the result would not fit. */
static size_t paren_negatives(char *buf, size_t len, size_t n)
{
    static const char pat[] = "\xe2\x88\x92 -";   /* "− -" */
    size_t extra = 0;
    for (const char *p = strstr(buf, pat); p; p = strstr(p + 5, pat)) extra += 2;
    if (!extra || len + extra + 1 > n) return len;
    /* from the end backwards, so that nothing is overwritten before it is moved */
    size_t r = len, w = len + extra;
    buf[w] = 0;
    while (r > 0) {
        /* is buf[r-1] the last character of a number that follows "− -"? */
        size_t k = r;
        while (k > 0 && strchr("0123456789.e+", buf[k - 1])) k--;
        if (k < r && k >= 5 && buf[k - 1] == '-' && !memcmp(buf + k - 5, pat, 4)) {
            buf[--w] = ')';
            while (r > k) buf[--w] = buf[--r];
            buf[--w] = buf[--r];   /* the '-' */
            buf[--w] = '(';
            continue;
        }
        buf[--w] = buf[--r];
    }
    return len + extra;
}

/* ---- the entry points ------------------------------------------------------------------- */

size_t fs_lesson_generate(const fs_lesson *l, const fs_trace *t, int64_t step, char *buf, size_t n)
{
    sb b;
    memset(&b, 0, sizeof b);
    b.buf = buf;
    b.n = n;
    if (n) buf[0] = 0;
    if (!t || step < 0 || step >= t->n) return 0;
    ctx c = make_ctx(l, t, step);
    switch (c.e->kind) {
    case FS_EV_ELEM: say_elem(&b, &c); break;
    case FS_EV_TILE: say_tile(&b, &c); break;
    case FS_EV_SKIP: say_skip(&b, &c, false); break;
    case FS_EV_ROW: say_row(&b, &c); break;
    case FS_EV_PARTIAL: say_partial(&b, &c); break;
    case FS_EV_MERGE: case FS_EV_RMERGE: say_merge(&b, &c); break;
    case FS_EV_OUT: say_out(&b, &c); break;
    case FS_EV_LSE: case FS_EV_DELTA: case FS_EV_BTILE: case FS_EV_BSKIP: case FS_EV_BROW: case FS_EV_BKEY:
    case FS_EV_GRAD: say_backward(&b, &c); break;
    case FS_EV_LOOKUP: case FS_EV_ALLOC: case FS_EV_SHARE: case FS_EV_COW: case FS_EV_WRITE: say_paged(&b, &c); break;
    case FS_EV_HOLD: case FS_EV_SEND: case FS_EV_RECV: say_ring(&b, &c); break;
    default: fs_sb_put(&b, "A step of a kind this version cannot put into words (%d).", (int)c.e->kind); break;
    }
    if (b.len < n) return paren_negatives(buf, b.len, n);
    return b.len;
}

size_t fs_lesson_say(const fs_lesson *l, const fs_trace *t, int64_t step, char *buf, size_t n)
{
    const char *own = l && t == fs_lesson_trace(l) ? fs_lesson_narration(l, step) : NULL;
    if (own && *own) {
        int w = snprintf(buf, n, "%s", own);
        return w > 0 ? (size_t)w : 0;
    }
    return fs_lesson_generate(l, t, step, buf, n);
}

/* question.c: the moments of a trace worth asking about, as questions, and their judging.
 *
 * A question is asked before the step whose result it names: "the maximum was 0.4455; this
 * tile's visible scores are 0.0707 and 0.4879; what is α?" Its answer is the value the engine
 * recorded for that step, never recomputed, so a question is exactly as right as the trace. The
 * prompt gives every number needed to work the answer out by hand and never the answer itself.
 *
 * Which moments: the first of each kind the trace holds (a maximum found, a rescale, a tile's
 * class, a merge, a backward row, a ring step), then the other moves of the maximum, spread over
 * the lesson, up to a handful. Pitfall lessons walk a wrong variant; their questions on m, α, β,
 * ℓ and O come from the correct run beside it ("In the reference algorithm …"), and one kind of
 * their own asks what the mistake computes.
 */
#include "lesson_internal.h"
#include "io/text.h"
#include "engine/fp8.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PER_TRACE 8       /* questions a trace asks at most */
#define MIN_PER_TRACE 3       /* and at least, where it has that many moments */
#define MAX_PER_CLAIMS 8      /* a claims-only lesson: one per computed claim, up to this */

static const char *const kind_names[FS_Q_COUNT] = {
    "m_new", "alpha", "beta", "l_new", "out", "tile-class", "skips", "live-rows", "merge", "D", "dS", "dV", "shard", "page",
    "e4m3", "dropout", "quantize", "P8", "ring-work", "mistake", "softcap", "kv-head", "claim",
};

const char *fs_qkind_str(fs_qkind k) { return (unsigned)k < FS_Q_COUNT ? kind_names[k] : "?"; }

/* A number as the players print it (lesson_internal.h's fs_num_plain). */
static const char *num(char *s, size_t n, double x, int digits) { return fs_num_plain(s, n, x, digits); }

/* A number printed as a later factor or term of a sum: a negative one in parentheses
 * (1.0000 · (-0.2800), not 1.0000 · -0.2800). */
static const char *numf(char *s, size_t n, double x, int digits)
{
    num(s + 1, n - 2, x, digits);   /* room kept for the parentheses */
    if (s[1] == '-') {
        s[0] = '(';
        const size_t len = strlen(s);
        s[len] = ')';
        s[len + 1] = 0;
        return s;
    }
    return s + 1;
}

/* x rounded as the questions print it (the number a student reads). */
static double shown(double x, int digits)
{
    char s[48];
    return strtod(num(s, sizeof s, x, digits), NULL);
}

/* When the printed inputs of a reason's arithmetic give, worked out, another rounding than the
 * exact result's (44.3835 / 1.2034 = 36.8818, where the exact o / ℓ is 36.8806), the reason says
 * so: why += " (the answer, 36.8806, is from the unrounded numbers; the rounded ones give 36.8818)"
 * (the answer named: the reason's last sentence may be about another number), and the judge takes
 * that answer too (q->from_prompt): it is what a student who works from the prompt gets. */
static void unrounded_note(fs_question *q, double from_shown, double exact, int digits)
{
    char a[48], b[48], *why = q->why;
    const size_t n = sizeof q->why;
    num(a, sizeof a, from_shown, digits);
    num(b, sizeof b, exact, digits);
    if (isfinite(from_shown) && strcmp(a, b)) {
        q->has_from_prompt = true;
        q->from_prompt = from_shown;
        size_t len = strlen(why);
        if (len && why[len - 1] == '.') why[len - 1] = 0;
        snprintf(why + strlen(why), n - strlen(why), " (the answer, %s, is from the unrounded numbers; the rounded ones give %s).", b, a);
    }
}

/* Appends to a fixed buffer, never past its end. */
static void add(char *buf, size_t n, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

/* A vector of the trace, cut at eight values: "[0.0707, 0.4879, -inf]". */
static void add_vec(char *buf, size_t n, const fs_trace *t, int64_t off, int32_t len, int digits)
{
    const double *v = fs_trace_at(t, off);
    char x[48];
    add(buf, n, "[");
    for (int32_t i = 0; v && i < len && i < 8; i++) add(buf, n, "%s%s", i ? ", " : "", num(x, sizeof x, v[i], digits));
    if (v && len > 8) add(buf, n, ", … (%d values)", len);
    add(buf, n, "]");
}

static fs_question blank(fs_qkind kind, int64_t step, int digits)
{
    fs_question q;
    memset(&q, 0, sizeof q);
    q.kind = kind;
    q.step = step;
    q.check = -1;
    q.numeric = true;
    q.digits = digits;
    return q;
}

/* (lesson_internal.h) */
void fs_question_e4m3_why(char *why, size_t n, double x)
{
    if (isfinite(x) && fabs(x) > 448) {   /* past the largest value: no infinity to go to */
        size_t len = strlen(why);
        if (len && why[len - 1] == '.') why[--len] = 0;
        snprintf(why + len, n - len, ". %.8g lies beyond 448, e4m3's largest magnitude, and e4m3 has no infinity: this "
                 "tool's conversion saturates, to %g.", x, x < 0 ? -448.0 : 448.0);
        return;
    }
    if (!isfinite(x) || x == 0) return;
    const double a = fabs(x);
    int e;
    frexp(a, &e);   /* a = f · 2^e, f in [0.5, 1): a in [2^(e−1), 2^e) */
    const double step = a < 0x1p-6 ? 0x1p-9 : ldexp(1, e - 1 - 3);
    const double lo = floor(a / step) * step, hi = lo + step;
    if (lo == a) return;
    const double r = fabs(fs_fp8_round(FS_FP8_E4M3, a));
    const bool tie = a - lo == hi - a;
    const double s = x < 0 ? -1 : 1;
    size_t len = strlen(why);
    if (len && why[len - 1] == '.') why[--len] = 0;
    snprintf(why + len, n - len, ". %.8g lies between %.8g and %.8g, e4m3's neighbours there (%.8g apart)%s%.8g.", x, s * lo,
             s * hi, step, tie ? "; it is halfway, and a tie goes to the neighbour whose last fraction bit is 0, the even one: "
                                 : "; the nearer is ", s * r);
}

const char *fs_check_e4m3_words(const fs_check *c, char *buf, size_t n)
{
    if (n) buf[0] = 0;
    if (!c || strncmp(c->target, "expr e4m3(", 10) || n < 2) return buf;
    char *end;
    const double x = strtod(c->target + 10, &end);
    if (end == c->target + 10 || strcmp(end, ")")) return buf;
    fs_question_e4m3_why(buf, n, x);   /* ". x lies between …" after an empty reason */
    if (buf[0] == '.' && buf[1] == ' ') memmove(buf, buf + 2, strlen(buf + 2) + 1);
    return buf;
}

/* ---- the context a trace's questions need ------------------------------------------------ */

typedef struct {
    const fs_lesson *l;
    const fs_run *run;       /* NULL for a trace without a lesson */
    const fs_trace *t;       /* the trace the player walks */
    const fs_trace *truth;   /* where numeric row questions take their values: t, or the correct
                                run beside a pitfall */
    const char *EXP;         /* "exp", or "exp2" in 003's base-2 form */
    int digits;
} ctx;

static bool has_mask(const ctx *c)
{
    return c->run && c->run->attn.mask.kind != FS_MASK_NONE;
}

/* The mask in words, with every number a student needs to apply it (the window's W); buf holds
 * the words where they carry a number. */
static const char *mask_words(const ctx *c, char *buf, size_t n)
{
    if (!c->run) return "the mask";
    const fs_mask *m = &c->run->attn.mask;
    /* where the queries sit, which decides what a causal or window mask shows (a quiz's question
     * comes without the lesson that would say it) */
    const int32_t off = m->has_offset ? m->offset : c->run->attn.n_kv - c->run->attn.n_q;
    char at[64];
    if (off) snprintf(at, sizeof at, "; query i is at position i + %d", off);
    else snprintf(at, sizeof at, "; query i is at position i, as key i");
    switch (m->kind) {
    case FS_MASK_CAUSAL:
        snprintf(buf, n, "the causal mask (a query sees the keys at or before its own position%s)", at);
        return buf;
    case FS_MASK_WINDOW:
        snprintf(buf, n, "the sliding window of W = %d (a query sees only the last W keys up to its position%s)", m->window, at);
        return buf;
    case FS_MASK_BITS: {
        const int32_t nq = c->run->attn.n_q, nk = c->run->attn.n_kv;
        if (!m->is_tree || nq != nk || nq > 24) return m->is_tree ? "the tree mask (a token sees itself and its ancestors)" : "the bitmask";
        /* the tree itself, so that the question can be worked out without the picture: each token's
         * parent, the deepest of the ancestors its row sees (an ancestor's row sees as many keys as
         * its depth) */
        size_t at_ = (size_t)snprintf(buf, n, "the tree mask (a token sees itself and its ancestors; the parents of tokens 0-%d: ", nq - 1);
        for (int32_t i = 0; i < nq && at_ < n; i++) {
            int32_t parent = -1, depth = -1;
            for (int32_t j = 0; j < nk; j++) {
                if (j == i || !fs_mask_visible(m, nq, nk, i, j)) continue;
                int32_t seen = 0;
                for (int32_t x = 0; x < nk; x++) seen += fs_mask_visible(m, nq, nk, j, x);
                if (seen > depth) depth = seen, parent = j;
            }
            at_ += (size_t)snprintf(buf + at_, n - at_, "%s%d", i ? ", " : "", (int)parent);
        }
        if (at_ < n) snprintf(buf + at_, n - at_, ", -1 for the root)");
        return buf;
    }
    default: return "no mask";
    }
}

/* The truth run's event for the walked trace's step k, when the two traces line up there. */
static const fs_event *truth_at(const ctx *c, int64_t k)
{
    if (c->truth == c->t) return &c->t->ev[k];
    if (k >= c->truth->n) return NULL;
    const fs_event *a = &c->t->ev[k], *b = &c->truth->ev[k];
    if (a->kind != b->kind || a->row != b->row || a->qt != b->qt || a->kt != b->kt || a->head != b->head) return NULL;
    return b;
}

/* A pitfall run walked without the correct run beside it (a quiz's fresh problem): its m, ℓ and O
 * are the mistake's, so only the mistake's own question may ask about them. */
static bool wrong_numbers(const ctx *c)
{
    return c->run && c->run->tiling.pitfall != FS_PITFALL_NONE && c->truth == c->t;
}

/* Whether event k is the trace's first pair (TILE or SKIP) of query head `head`, or of any head
 * when head is −1. */
static bool first_pair(const fs_trace *t, int64_t k, int32_t head)
{
    for (int64_t i = k - 1; i >= 0; i--)
        if ((t->ev[i].kind == FS_EV_TILE || t->ev[i].kind == FS_EV_SKIP) && (head < 0 || t->ev[i].head == head)) return false;
    return true;
}

/* On the ring: the positions of keys lo … hi − 1 of the shard that event k's device holds at
 * its step (the step's HOLD lists them), as "positions 4 and 5" into buf; false when not found. */
static bool shard_positions(const ctx *c, int64_t k, int32_t lo, int32_t hi, char *buf, size_t n)
{
    const fs_event *e = &c->t->ev[k];
    for (int64_t i = k; i >= 0; i--) {
        const fs_event *h = &c->t->ev[i];
        if (h->kind != FS_EV_HOLD || h->device != e->device || h->ring_step != e->ring_step) continue;
        const double *pos = fs_trace_at(c->t, h->s_row);
        if (!pos || lo < 0 || hi > h->n_s || hi - lo < 1) return false;
        size_t at = (size_t)snprintf(buf, n, "position%s ", hi - lo > 1 ? "s" : "");
        if (hi - lo > 4) {
            snprintf(buf + at, n - at, "%d … %d", (int)pos[lo], (int)pos[hi - 1]);
            return true;
        }
        for (int32_t j = lo; j < hi && at < n; j++)
            at += (size_t)snprintf(buf + at, n - at, "%s%d", j == lo ? "" : j == hi - 1 ? " and " : ", ", (int)pos[j]);
        return true;
    }
    return false;
}

/* ---- one question per kind, at step k ----------------------------------------------------- */

/* ROW and ELEM: the four numbers of the online-softmax update. */
static bool ask_row(const ctx *c, int64_t k, fs_qkind kind, fs_question *q)
{
    const fs_event *e = truth_at(c, k);
    if (!e || (e->kind != FS_EV_ROW && e->kind != FS_EV_ELEM) || wrong_numbers(c)) return false;
    if (e->kind == FS_EV_ROW && e->visible == 0) return false;
    if (!isfinite(e->m_new) || !isfinite(e->alpha) || !isfinite(e->beta) || !isfinite(e->l_new)) return false;
    const bool elem = e->kind == FS_EV_ELEM;
    const bool pit = c->truth != c->t;
    const int D = c->digits;
    char a[48], b[48], d[48], f[48], g[48];
    *q = blank(kind, k, D);
    char who[160];
    if (elem) snprintf(who, sizeof who, "the running state of the softmax");
    else if (c->run && c->run->algo == FS_ALGO_QUERY) snprintf(who, sizeof who, "the query's running state");
    else if (e->device >= 0 && e->pos >= 0)   /* on the ring rows count within the device: say the position */
        snprintf(who, sizeof who, "device %d's query at position %d", e->device, e->pos);
    else snprintf(who, sizeof who, "row %d%s", e->row, c->run && c->run->attn.n_q_heads > 1 ? " of its head" : "");
    /* a pitfall lesson runs a variant beside the reference; one of them (001_12's) is exact */
    add(q->prompt, sizeof q->prompt, "%s", pit ? "In the reference algorithm (beside the variant this lesson runs): " : "");
    /* what arrives */
    if (elem && e->c1 - e->c0 == 1)
        add(q->prompt, sizeof q->prompt, "z[%d] = %s arrives. ", e->c0, num(a, sizeof a, e->x, D));
    else if (elem)
        add(q->prompt, sizeof q->prompt, "z[%d..%d] arrive: their maximum is m_blk = %s and ℓ_blk = %s. ", e->c0, e->c1 - 1,
            num(a, sizeof a, e->m_blk, D), num(b, sizeof b, e->l_blk, D));
    else {
        const double *v = fs_trace_at(c->truth, e->s_row);
        if (e->c1 - e->c0 == 1 && v && e->n_s == 1) {
            add(q->prompt, sizeof q->prompt, "%s meets key %d; its score is %s. ", who, e->c0, num(a, sizeof a, v[0], D));
        } else {
            char kp[96];
            if (e->device >= 0 && e->shard >= 0 && c->truth == c->t && shard_positions(c, k, e->c0, e->c1, kp, sizeof kp))
                add(q->prompt, sizeof q->prompt, "%s meets the keys at %s (shard %d); its scores are ", who, kp,
                    e->shard);
            else if (e->device >= 0 && e->shard >= 0)   /* keys count within the shard the device holds */
                add(q->prompt, sizeof q->prompt, "%s meets keys %d-%d of shard %d (counted within the shard); its "
                    "scores are ", who, e->c0, e->c1 - 1, e->shard);
            else add(q->prompt, sizeof q->prompt, "%s meets keys %d-%d; its scores are ", who, e->c0, e->c1 - 1);
            add_vec(q->prompt, sizeof q->prompt, c->truth, e->s_row, e->n_s, D);
            /* the mask's -inf explained only where one is shown */
            bool hidden = false;
            for (int32_t i = 0; v && i < e->n_s && i < 8; i++) hidden |= v[i] == -INFINITY;
            add(q->prompt, sizeof q->prompt, "%s", hidden ? " (-inf: hidden by the mask). " : ". ");
        }
    }
    const bool first = e->m_old == -INFINITY;
    /* a row's scores are shown up to eight (add_vec): past that, its maximum and its first sum
     * cannot be worked out from the question, so they are not asked */
    if (!elem && e->n_s > 8 && (kind == FS_Q_M_NEW || (kind == FS_Q_L_NEW && first))) return false;
    if (first) add(q->prompt, sizeof q->prompt, "Nothing was seen before: m = -inf, ℓ = 0. ");
    else add(q->prompt, sizeof q->prompt, "Before: m = %s, ℓ = %s. ", num(a, sizeof a, e->m_old, D), num(b, sizeof b, e->l_old, D));
    const double blk = elem && e->c1 - e->c0 == 1 ? e->x : e->m_blk;
    switch (kind) {
    case FS_Q_M_NEW: {
        add(q->prompt, sizeof q->prompt, "What is the new running maximum m?");
        q->answer = e->m_new;
        /* what the old maximum is compared with: one value z, one key's score s, or a block's best m_blk */
        const bool one = e->c1 - e->c0 == 1 && (elem || e->n_s == 1);
        const char *sym = one ? (elem ? "z" : "s") : "m_blk";
        const char *what = one ? (elem ? "the new value z" : "the key's score s") : "this block's best score (m_blk)";
        snprintf(q->why, sizeof q->why, "m_new = max(m_old, %s) = max(%s, %s) = %s: the larger of the maximum so far (m_old) "
                 "and %s; the running maximum only ever grows.",
                 sym, num(a, sizeof a, e->m_old, D), num(b, sizeof b, one && !elem ? e->m_blk : blk, D),
                 num(d, sizeof d, e->m_new, D), what);
        return true;
    }
    case FS_Q_ALPHA:
        if (first) return false;
        add(q->prompt, sizeof q->prompt, "The new maximum is m_new = %s. What is α, the factor that rescales the old %s?",
            num(a, sizeof a, e->m_new, D), elem ? "sum ℓ" : "ℓ and o");
        q->answer = e->alpha;
        snprintf(q->why, sizeof q->why, "α = %s(m_old − m_new) = %s(%s − %s) = %s: %s", c->EXP, c->EXP, num(a, sizeof a, e->m_old, D),
                 num(b, sizeof b, e->m_new, D), num(d, sizeof d, e->alpha, D),
                 e->alpha < 1 ? "the old terms were weighed against a maximum that is now too small, so they shrink."
                              : "the maximum did not move, so nothing earlier needs rescaling.");
        return true;
    case FS_Q_BETA:
        if (elem && e->c1 - e->c0 == 1) return false;
        if (c->run && c->run->algo == FS_ALGO_QUERY)   /* one key at a time: its block is the key, β its weight p */
            add(q->prompt, sizeof q->prompt, "The new maximum is m_new = %s and the key's score is m_blk = %s (a block of one "
                "key). What is β, its weight p = %s(m_blk − m_new)?", num(a, sizeof a, e->m_new, D), num(b, sizeof b, e->m_blk, D),
                c->EXP);
        else
            add(q->prompt, sizeof q->prompt, "The new maximum is m_new = %s and this block's is m_blk = %s. What is β, the factor "
                "that rescales the block's own sum?", num(a, sizeof a, e->m_new, D), num(b, sizeof b, e->m_blk, D));
        q->answer = e->beta;
        snprintf(q->why, sizeof q->why, "β = %s(m_blk − m_new) = %s(%s − %s) = %s: %s", c->EXP, c->EXP, num(a, sizeof a, e->m_blk, D),
                 num(b, sizeof b, e->m_new, D), num(d, sizeof d, e->beta, D),
                 e->beta < 1 ? "the block's terms were taken against its own smaller maximum, so they shrink to the common one."
                             : "this block holds the new maximum, so its terms are already against it.");
        return true;
    case FS_Q_L_NEW:
        if (first && ((elem && e->c1 - e->c0 == 1) || (!elem && e->visible == 1))) return false;   /* exp(0) = 1 teaches nothing */
        if (first) {
            add(q->prompt, sizeof q->prompt, "The new maximum is m = %s. What is ℓ, the sum of %s(s − m) over the visible %s?",
                num(a, sizeof a, e->m_new, D), c->EXP, elem ? "values" : "scores");
            snprintf(q->why, sizeof q->why, "ℓ = Σ %s(s − m) = %s: each visible score is taken against the maximum, so every "
                     "term is at most 1 and the largest is exactly 1.", c->EXP, num(a, sizeof a, e->l_new, D));
        } else if (elem && e->c1 - e->c0 == 1) {
            add(q->prompt, sizeof q->prompt, "The new maximum is m_new = %s, so α = %s(m_old − m_new) = %s. What is the new running "
                "sum ℓ?", num(a, sizeof a, e->m_new, D), c->EXP, num(b, sizeof b, e->alpha, D));
            snprintf(q->why, sizeof q->why, "ℓ_new = α ℓ_old + %s(z − m_new) = %s · %s + %s(%s − %s) = %s.", c->EXP,
                     num(a, sizeof a, e->alpha, D), num(b, sizeof b, e->l_old, D), c->EXP, num(d, sizeof d, e->x, D),
                     num(f, sizeof f, e->m_new, D), num(g, sizeof g, e->l_new, D));
        } else {
            add(q->prompt, sizeof q->prompt, "%s own sum is ℓ_blk = %s (Σ %s(s − m_blk), m_blk its own maximum); α = %s "
                "and β = %s. What is the new running sum ℓ?",
                c->run && c->run->algo == FS_ALGO_QUERY ? "The key is a block of one key: its" : "The block's",
                num(a, sizeof a, e->l_blk, D), c->EXP, num(b, sizeof b, e->alpha, D), num(d, sizeof d, e->beta, D));
            char h[48];
            snprintf(q->why, sizeof q->why, "ℓ_new = α ℓ_old + β ℓ_blk = %s · %s + %s · %s = %s: both sums are brought to the new "
                     "maximum, then added.", num(a, sizeof a, e->alpha, D), num(b, sizeof b, e->l_old, D),
                     num(d, sizeof d, e->beta, D), num(f, sizeof f, e->l_blk, D), num(h, sizeof h, e->l_new, D));
            unrounded_note(q,
                           shown(e->alpha, D) * shown(e->l_old, D) + shown(e->beta, D) * shown(e->l_blk, D), e->l_new, D);
        }
        q->answer = e->l_new;
        return true;
    default: return false;
    }
}

/* V is the identity (scores given without values: O's rows are the softmax weights). */
static bool v_identity(const fs_run *r)
{
    const fs_attn *a = &r->attn;
    if (!a->V || a->d_v != a->n_kv || a->n_kv_heads != 1 || a->n_kv > 64) return false;
    for (int32_t i = 0; i < a->n_kv; i++)
        for (int32_t j = 0; j < a->d_v; j++)
            if (a->V[(size_t)i * a->d_v + j] != (i == j)) return false;
    return true;
}

/* OUT of the unnormalized form: o / ℓ, with o from the row's last update before it. */
static bool ask_out(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_OUT || c->truth != c->t || !c->run || wrong_numbers(c)) return false;
    const int D = c->digits;
    char a[48], b[48], d[48];
    const double *out = fs_trace_at(c->t, e->o_new);
    if (!out || e->n_o < 1) return false;
    if (c->run->algo == FS_ALGO_SOFTMAX) {
        /* softmax_i = exp(z_i − m) / ℓ: ask the largest */
        const double *z = c->run->z;
        if (!z || c->run->n_z != e->n_o) return false;
        int32_t i = 0;
        for (int32_t j = 1; j < e->n_o; j++)
            if (out[j] > out[i]) i = j;
        if (!isfinite(z[i]) || !isfinite(e->m_new) || !(e->l_new > 0)) return false;
        *q = blank(FS_Q_OUT, k, D);
        snprintf(q->prompt, sizeof q->prompt, "The pass is over: m = %s, ℓ = %s. What is softmax[%d], for z[%d] = %s?",
                 num(a, sizeof a, e->m_new, D), num(b, sizeof b, e->l_new, D), i, i, num(d, sizeof d, z[i], D));
        q->answer = out[i];
        char f[48];
        snprintf(q->why, sizeof q->why, "softmax[%d] = exp(z[%d] − m) / ℓ = exp(%s − %s) / %s = %s: one division at the end.", i, i,
                 num(a, sizeof a, z[i], D), num(b, sizeof b, e->m_new, D), num(d, sizeof d, e->l_new, D),
                 num(f, sizeof f, out[i], D));
        return true;
    }
    if (v_identity(c->run) && c->run->algo == FS_ALGO_TILED && e->head == 0) {
        /* scores given and V the identity: O's row is the softmax of the scores; ask the largest
         * weight, from the score the engine used for that key */
        int32_t j = 0;
        for (int32_t i = 1; i < e->n_o; i++)
            if (out[i] > out[j]) j = i;
        double s = NAN;
        for (int64_t i = k - 1; i >= 0 && isnan(s); i--) {
            const fs_event *r = &c->t->ev[i];
            if (r->kind == FS_EV_ROW && r->row == e->row && r->head == e->head && j >= r->c0 && j < r->c1) {
                const double *sr = fs_trace_at(c->t, r->s_row);
                if (sr) s = sr[j - r->c0];
            }
        }
        if (!isfinite(s) || !isfinite(e->m_new) || !(e->l_new > 0)) return false;
        *q = blank(FS_Q_OUT, k, D);
        char f[48];
        const bool two = !strcmp(c->EXP, "exp2");
        snprintf(q->prompt, sizeof q->prompt, "Row %d has seen every key: m = %s, ℓ = %s. Key %d scored s = %s%s. With V the "
                 "identity, O[%d][%d] is key %d's softmax weight. What is it?", e->row, num(a, sizeof a, e->m_new, D),
                 num(b, sizeof b, e->l_new, D), j, num(d, sizeof d, s, D), two ? " (in base-2 units: the given score times log2(e))" : "",
                 e->row, j, j);
        q->answer = out[j];
        snprintf(q->why, sizeof q->why, "%s(s − m) / ℓ = %s(%s − %s) / %s = %s.", c->EXP, c->EXP, num(a, sizeof a, s, D),
                 num(b, sizeof b, e->m_new, D), num(d, sizeof d, e->l_new, D), num(f, sizeof f, out[j], D));
        return true;
    }
    if (c->run->tiling.form != FS_FORM_UNNORMALIZED || c->run->algo == FS_ALGO_DECODE || c->run->algo == FS_ALGO_RING)
        return false;
    if (!(e->l_new > 0) || e->l_new == 1) return false;   /* o / 1 teaches nothing */
    /* the row's unnormalized o: its last ROW before this step */
    const fs_event *last = NULL;
    for (int64_t i = k - 1; i >= 0 && !last; i--) {
        const fs_event *r = &c->t->ev[i];
        if (r->kind == FS_EV_ROW && r->row == e->row && r->head == e->head) last = r;
    }
    if (!last || last->normalized || last->n_o != e->n_o) return false;
    const double *o = fs_trace_at(c->t, last->o_new);
    if (!o) return false;
    *q = blank(FS_Q_OUT, k, D);
    snprintf(q->prompt, sizeof q->prompt, "Row %d is done: o = ", e->row);
    add_vec(q->prompt, sizeof q->prompt, c->t, last->o_new, last->n_o, D);
    add(q->prompt, sizeof q->prompt, " (unnormalized) and ℓ = %s. What is the first element of its output O?",
        num(a, sizeof a, e->l_new, D));
    q->answer = out[0];
    snprintf(q->why, sizeof q->why, "O = o / ℓ: %s / %s = %s. The unnormalized form divides once, when the row has seen "
             "every key it will see.", num(a, sizeof a, o[0], D), num(b, sizeof b, e->l_new, D), num(d, sizeof d, out[0], D));
    unrounded_note(q, shown(o[0], D) / shown(e->l_new, D), out[0], D);
    return true;
}

static bool ask_tile(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if ((e->kind != FS_EV_TILE && e->kind != FS_EV_SKIP) || !has_mask(c)) return false;
    if (c->run->algo == FS_ALGO_QUERY || e->device >= 0) return false;
    *q = blank(FS_Q_TILE_CLASS, k, c->digits);
    q->numeric = false;
    q->n_options = 3;
    q->options[0] = "full";
    q->options[1] = "partial";
    q->options[2] = "skipped";
    q->right = e->kind == FS_EV_SKIP ? 2 : e->cls == FS_TILE_PARTIAL ? 1 : 0;
    char mw[320];
    snprintf(q->prompt, sizeof q->prompt, "Next, Q tile %d (queries %d-%d) meets KV tile %d (keys %d-%d) under %s. Is the "
             "tile full (every pair visible), partial (the element mask is needed) or skipped (no pair visible)?",
             e->qt, e->r0, e->r1 - 1, e->kt, e->c0, e->c1 - 1, mask_words(c, mw, sizeof mw));
    if (q->right == 2)
        snprintf(q->why, sizeof q->why, "Skipped: no query of rows %d-%d may see any of keys %d-%d (%s), so the tile is never "
                 "loaded and costs nothing.", e->r0, e->r1 - 1, e->c0, e->c1 - 1, fs_skip_reason_str(e->reason));
    else if (q->right == 1)
        snprintf(q->why, sizeof q->why, "Partial: some pairs of rows %d-%d and keys %d-%d are visible and some hidden, so the "
                 "scores are computed and the hidden ones set to -inf.", e->r0, e->r1 - 1, e->c0, e->c1 - 1);
    else
        snprintf(q->why, sizeof q->why, "Full: every query of rows %d-%d may see every key %d-%d, so no element mask is "
                 "applied.", e->r0, e->r1 - 1, e->c0, e->c1 - 1);
    return true;
}

/* Asked at the first pair of the run: how many of head 0's pairs the mask skips. */
static bool ask_skips(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if ((e->kind != FS_EV_TILE && e->kind != FS_EV_SKIP) || !has_mask(c) || e->device >= 0) return false;
    if (c->run->algo != FS_ALGO_TILED && c->run->algo != FS_ALGO_BACKWARD) return false;
    const int32_t Bq = c->run->tiling.Bq, Bk = c->run->tiling.Bk;
    const int32_t nq = c->run->attn.n_q, nkv = c->run->attn.n_kv;
    if (Bq < 1 || Bk < 1) return false;
    const int32_t nqt = (nq + Bq - 1) / Bq, nkt = (nkv + Bk - 1) / Bk;
    int32_t skips = 0;
    for (int64_t i = 0; i < c->t->n; i++)
        if ((c->t->ev[i].kind == FS_EV_SKIP || c->t->ev[i].kind == FS_EV_BSKIP) && c->t->ev[i].head == e->head) skips++;
    *q = blank(FS_Q_SKIPS, k, 0);
    char mw[320];
    snprintf(q->prompt, sizeof q->prompt, "Before the first tile: %d queries and %d keys cut into tiles of Bq = %d and Bk = %d "
             "make %d × %d = %d tile pairs%s. Under %s, how many pairs hide every key from every query, so that the "
             "kernel skips them?", nq, nkv, Bq, Bk, nqt, nkt, nqt * nkt,
             c->run->attn.n_q_heads > 1 ? " per head" : "", mask_words(c, mw, sizeof mw));
    q->answer = skips;
    snprintf(q->why, sizeof q->why, "%d of the %d pairs %s skipped: a pair is skipped when no (query, key) in it is visible; "
             "the run meets %s as skip events.", skips, nqt * nkt, skips == 1 ? "is" : "are", skips == 1 ? "it" : "them");
    return true;
}

/* The loop order, at a tiled run's first pair (one head, at least two Q tiles and two KV tiles):
 * at most how many query rows' running states (m, ℓ, o) are alive at once, a row's state living
 * from its first update to its last, counted on the trace's own row events. KV tiles outside keep
 * every row alive until the last KV tile; Q tiles outside, a Q tile's rows at a time. */
static bool ask_live(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_TILE || e->device >= 0 || !c->run || c->run->algo != FS_ALGO_TILED || c->run->attn.n_q_heads != 1 ||
        c->run->lowp)   /* an FP8 run's subject is its rounding, not its loop order */
        return false;
    if (!first_pair(c->t, k, -1)) return false;
    const int32_t Bq = c->run->tiling.Bq, Bk = c->run->tiling.Bk, nq = c->run->attn.n_q, nkv = c->run->attn.n_kv;
    if (Bq < 1 || Bk < 1 || nq > 4096) return false;
    const int32_t nqt = (nq + Bq - 1) / Bq, nkt = (nkv + Bk - 1) / Bk;
    if (nqt < 2 || nkt < 2) return false;
    /* each row's last update, then one sweep: a row is alive from its first update to its last */
    int64_t *last = malloc(sizeof *last * (size_t)nq);
    bool *begun = calloc((size_t)nq, sizeof *begun);
    if (!last || !begun) { free(last); free(begun); return false; }
    for (int64_t i = 0; i < c->t->n; i++)
        if (c->t->ev[i].kind == FS_EV_ROW && c->t->ev[i].row >= 0 && c->t->ev[i].row < nq) last[c->t->ev[i].row] = i;
    int32_t most = 0, live = 0;
    for (int64_t i = 0; i < c->t->n; i++) {
        const fs_event *r = &c->t->ev[i];
        if (r->kind != FS_EV_ROW || r->row < 0 || r->row >= nq) continue;
        if (!begun[r->row]) {   /* its first update */
            begun[r->row] = true;
            if (++live > most) most = live;
        }
        if (last[r->row] == i) live--;   /* its last */
    }
    free(last);
    free(begun);
    if (most < 1) return false;
    const bool kv_outer = c->run->tiling.order == FS_ORDER_KV_OUTER;
    *q = blank(FS_Q_LIVE, k, 0);
    snprintf(q->prompt, sizeof q->prompt, "Before the first tile: %d query rows in Q tiles of Bq = %d, %d keys in KV tiles of Bk = "
             "%d, and the kernel visits the pairs with the %s tiles outside (for each %s tile, every %s tile in turn). A row's "
             "running state (m, ℓ, o) lives from its first update to its last. At most how many rows' states are alive at once?",
             nq, Bq, nkv, Bk, kv_outer ? "KV" : "Q", kv_outer ? "KV" : "Q", kv_outer ? "Q" : "KV");
    q->answer = most;
    if (kv_outer)
        snprintf(q->why, sizeof q->why, "%d: with the KV tiles outside every row meets KV tile 0 before any meets KV tile 1, so "
                 "each row's state stays alive until the last KV tile, all %d at once (001's order: K and V are read once, "
                 "each Q tile %d times). With the Q tiles outside a tile's rows finish before the next tile's begin, %d at a time: "
                 "FlashAttention-2's order, each Q tile one independent piece of work.", most, most, nkt, Bq < nq ? Bq : nq);
    else
        snprintf(q->why, sizeof q->why, "%d: with the Q tiles outside a Q tile's rows meet every KV tile before the next Q tile "
                 "begins, so only one tile's rows live at a time (FlashAttention-2's order: each Q tile is one independent piece "
                 "of work, each K and V tile read %d times). With the KV tiles outside all %d rows would stay alive until the last "
                 "KV tile.",
                 most, nqt, nq);
    return true;
}

static bool ask_merge(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_MERGE && e->kind != FS_EV_RMERGE) return false;
    if (!isfinite(e->m_old) || !isfinite(e->m_blk) || e->m_old == e->m_blk) return false;
    const int D = c->digits;
    char a[48], b[48], d[48], f[48], g[48];
    const bool a_small = e->m_old < e->m_blk;
    const char *EXP = c->EXP;
    *q = blank(FS_Q_MERGE, k, D);
    if (e->kind == FS_EV_MERGE)
        snprintf(q->prompt, sizeof q->prompt, "Two partial states merge: a (m_a = %s, ℓ_a = %s) and b (m_b = %s, ℓ_b = %s). The "
                 "merged maximum is m = %s. What is the factor that rescales %s, %s(m_%s − m)?", num(a, sizeof a, e->m_old, D),
                 num(b, sizeof b, e->l_old, D), num(d, sizeof d, e->m_blk, D), num(f, sizeof f, e->l_blk, D),
                 num(g, sizeof g, e->m_new, D), a_small ? "a" : "b", EXP, a_small ? "a" : "b");
    else
        snprintf(q->prompt, sizeof q->prompt, "Device %d's query at position %d merges the block of shard %d (m_blk = %s) into its "
                 "running state (m = %s). The merged maximum is %s. What is %s, the factor for the %s?", e->device,
                 e->pos >= 0 ? e->pos : e->row, e->shard,
                 num(a, sizeof a, e->m_blk, D), num(b, sizeof b, e->m_old, D), num(d, sizeof d, e->m_new, D),
                 a_small ? "α" : "β", a_small ? "running state" : "block");
    q->answer = a_small ? e->alpha : e->beta;
    snprintf(q->why, sizeof q->why, "%s(%s − %s) = %s: the side with the smaller maximum is brought down to the merged one; the "
             "other keeps factor 1. Merging is exact, in any order.", EXP, num(a, sizeof a, a_small ? e->m_old : e->m_blk, D),
             num(b, sizeof b, e->m_new, D), num(d, sizeof d, q->answer, D));
    return true;
}

/* A decode split's partial state, where the scores are given (S: in the lesson): its maximum or
 * its sum, from the split's scores. */
static bool ask_partial(const ctx *c, int64_t k, fs_qkind kind, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_PARTIAL || !c->run || !c->run->attn.S || c->run->attn.softcap > 0 || e->stride > 1) return false;
    const fs_attn *at = &c->run->attn;
    if (e->c1 - e->c0 > 8 || e->c1 > at->n_kv || e->row < 0 || e->row >= at->n_q || !isfinite(e->m_new) || !isfinite(e->l_new))
        return false;
    const int D = c->digits;
    char a[48], b[48];
    *q = blank(kind, k, D);
    if (e->c1 - e->c0 == 1)
        snprintf(q->prompt, sizeof q->prompt, "Split %d takes key %d of row %d on its own; its score is [", e->kt, e->c0, e->row);
    else
        snprintf(q->prompt, sizeof q->prompt, "Split %d takes keys %d-%d of row %d on its own; their scores are [", e->kt, e->c0,
                 e->c1 - 1, e->row);
    for (int32_t j = e->c0; j < e->c1; j++)
        add(q->prompt, sizeof q->prompt, "%s%s", j > e->c0 ? ", " : "",
            num(a, sizeof a, at->scale * at->S[((size_t)e->head * at->n_q + e->row) * at->n_kv + j], D));
    if (kind == FS_Q_M_NEW) {
        add(q->prompt, sizeof q->prompt, "]. What is the split's maximum m?");
        q->answer = e->m_new;
        snprintf(q->why, sizeof q->why, "m = %s, the largest of its scores: each split keeps its own maximum, blind to the "
                 "others'.", num(a, sizeof a, e->m_new, D));
    } else if (kind == FS_Q_L_NEW) {
        add(q->prompt, sizeof q->prompt, "] and its maximum is m = %s. What is its sum ℓ = Σ exp(s − m)?",
            num(a, sizeof a, e->m_new, D));
        q->answer = e->l_new;
        snprintf(q->why, sizeof q->why, "ℓ = Σ exp(s − %s) = %s over the split's keys; the merge later brings it to the common "
                 "maximum.", num(a, sizeof a, e->m_new, D), num(b, sizeof b, e->l_new, D));
    } else {
        return false;
    }
    return true;
}

/* A merge's ℓ: both sums brought to the merged maximum, then added. */
static bool ask_merge_l(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if ((e->kind != FS_EV_MERGE && e->kind != FS_EV_RMERGE) || !isfinite(e->l_new) || !isfinite(e->m_new)) return false;
    if (!isfinite(e->m_old) || !isfinite(e->m_blk)) return false;
    const int D = c->digits;
    char a[48], b[48], d[48], f[48], g[48], h[48], i[48];
    *q = blank(FS_Q_L_NEW, k, D);
    snprintf(q->prompt, sizeof q->prompt, "Two partial states merge: a (m = %s, ℓ = %s) and b (m = %s, ℓ = %s); the merged "
             "maximum is %s, so the factors are %s and %s. What is the merged ℓ?", num(a, sizeof a, e->m_old, D),
             num(b, sizeof b, e->l_old, D), num(d, sizeof d, e->m_blk, D), num(f, sizeof f, e->l_blk, D),
             num(g, sizeof g, e->m_new, D), num(h, sizeof h, e->alpha, D), num(i, sizeof i, e->beta, D));
    q->answer = e->l_new;
    snprintf(q->why, sizeof q->why, "ℓ = %s · %s + %s · %s = %s: each partial sum is brought to the merged maximum, then the two "
             "are added, exactly as if one pass had seen both key ranges.", num(a, sizeof a, e->alpha, D),
             num(b, sizeof b, e->l_old, D), num(d, sizeof d, e->beta, D), num(f, sizeof f, e->l_blk, D),
             num(g, sizeof g, e->l_new, D));
    unrounded_note(q, shown(e->alpha, D) * shown(e->l_old, D) + shown(e->beta, D) * shown(e->l_blk, D), e->l_new,
                   D);
    /* a student may work the factors out again from the shown maxima (a quiz asks that just before):
     * exp(0.6366 − 0.8156) = 0.83611, not the shown 0.8362, moves ℓ ≈ 31 by 0.0009 */
    const double ma = shown(e->m_old, D), mb = shown(e->m_blk, D), mn = shown(e->m_new, D);
    const bool two = !strcmp(c->EXP, "exp2");
    q->has_from_inputs = true;
    q->from_inputs = (two ? exp2(ma - mn) : exp(ma - mn)) * shown(e->l_old, D) + (two ? exp2(mb - mn) : exp(mb - mn)) * shown(e->l_blk, D);
    return true;
}

static bool ask_delta(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_DELTA || e->n_o < 1 || e->n_o > 8 || !isfinite(e->x)) return false;
    const int D = c->digits;
    char a[48];
    *q = blank(FS_Q_DELTA, k, D);
    snprintf(q->prompt, sizeof q->prompt, "Row %d: dO = ", e->row);
    add_vec(q->prompt, sizeof q->prompt, c->t, e->o_blk, e->n_o, D);
    add(q->prompt, sizeof q->prompt, " and O = ");
    add_vec(q->prompt, sizeof q->prompt, c->t, e->o_new, e->n_o, D);
    add(q->prompt, sizeof q->prompt, ". What is D = rowsum(dO ∘ O), the sum of their element-wise products?");
    q->answer = e->x;
    snprintf(q->why, sizeof q->why, "D = Σ dO_j O_j = %s. It is computed once per row and used by every tile's dS, so the "
             "backward never needs the whole P row at once.", num(a, sizeof a, e->x, D));
    const double *dO = fs_trace_at(c->t, e->o_blk), *O = fs_trace_at(c->t, e->o_new);
    if (dO && O) {   /* the sum of the printed products, where it rounds otherwise */
        double from = 0;
        for (int32_t j = 0; j < e->n_o; j++) from += shown(dO[j], D) * shown(O[j], D);
        unrounded_note(q, from, e->x, D);
    }
    return true;
}

static bool ask_ds(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_BROW || e->visible == 0 || !isfinite(e->m_new)) return false;
    const double *P = fs_trace_at(c->t, e->p_row), *dP = fs_trace_at(c->t, e->dp_row), *dS = fs_trace_at(c->t, e->ds_row);
    if (!P || !dP || !dS) return false;
    int32_t j = -1;
    for (int32_t i = 0; i < e->n_s; i++)
        if (P[i] > 0 && isfinite(dS[i]) && fabs(dS[i]) >= 0.5 * pow(10, -c->digits) && (j < 0 || fabs(dS[i]) > fabs(dS[j]))) j = i;
    if (j < 0) return false;
    const int D = c->digits;
    char a[48], b[48], d[48], f[48];
    *q = blank(FS_Q_DS, k, D);
    if (e->device >= 0)   /* on a ring, rows and keys count within the device and the shard it holds, not V's rows */
        snprintf(q->prompt, sizeof q->prompt, "Device %d's query at position %d, key %d of shard %d (counted within the shard): "
                 "the recomputed weight is P = %s, dP = dO · (that key's row of V) = %s, and the row's D = %s. What is dS for "
                 "this key?", e->device, e->pos >= 0 ? e->pos : e->row,
                 e->c0 + j, e->shard, num(a, sizeof a, P[j], D), num(b, sizeof b, dP[j], D), num(d, sizeof d, e->m_new, D));
    else if (c->run && c->run->tiling.dropout.on)   /* the forward's mask Z and factor reach dP too */
        snprintf(q->prompt, sizeof q->prompt, "Row %d, key %d: the recomputed weight is P = %s, dP = Z · (dO · V[%d]) / "
                 "(1 − p) = %s (Z: 1 where the forward kept the weight, 0 where it dropped it), and the row's D = %s. "
                 "What is dS for this key?", e->row, e->c0 + j, num(a, sizeof a, P[j], D), e->c0 + j,
                 num(b, sizeof b, dP[j], D), num(d, sizeof d, e->m_new, D));
    else
        snprintf(q->prompt, sizeof q->prompt, "Row %d, key %d: the recomputed weight is P = %s, dP = dO · V[%d] = %s, and "
                 "the row's D = %s. What is dS for this key?", e->row, e->c0 + j, num(a, sizeof a, P[j], D), e->c0 + j,
                 num(b, sizeof b, dP[j], D), num(d, sizeof d, e->m_new, D));
    q->answer = dS[j];
    /* a negative D is added: "(−1.0000 + 0.4205)", not "(−1.0000 − -0.4205)" */
    snprintf(q->why, sizeof q->why, "dS = P (dP − D) = %s · (%s %s %s) = %s: the softmax's Jacobian, applied to one row "
             "without forming it.", num(a, sizeof a, P[j], D), num(b, sizeof b, dP[j], D), e->m_new < 0 ? "+" : "−",
             num(d, sizeof d, fabs(e->m_new), D), num(f, sizeof f, dS[j], D));
    return true;
}

/* A key row of a recomputed tile (no dropout, not on a ring): what the tile adds to the first
 * element of the key's dV, Σ_i P_ij dO_i[0] over the tile's query rows, given each row's P for
 * the key (from its BROW) and dO. Asked where at least two rows weigh the key. */
static bool ask_dv(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_BKEY || e->device >= 0 || !c->run || c->run->tiling.dropout.on || e->n_g < 1 || e->r1 - e->r0 > 8)
        return false;
    const double *g = fs_trace_at(c->t, e->g_blk);
    const fs_attn *a = &c->run->attn;
    if (!g || !isfinite(g[0])) return false;
    const int32_t j = e->row - e->c0;
    int64_t t0 = k - 1;   /* the pair's BTILE; its BROW events follow it in row order */
    while (t0 >= 0 && !(c->t->ev[t0].kind == FS_EV_BTILE && c->t->ev[t0].head == e->head && c->t->ev[t0].qt == e->qt &&
                        c->t->ev[t0].kt == e->kt))
        t0--;
    double P[8], dO[8];
    int n = 0, weighed = 0;
    for (int64_t i = t0 + 1; t0 >= 0 && i < k && n < 8; i++) {
        const fs_event *b = &c->t->ev[i];
        if (b->kind != FS_EV_BROW || b->head != e->head || b->qt != e->qt || b->kt != e->kt) continue;
        const double *p = fs_trace_at(c->t, b->p_row);
        if (!p || j < 0 || j >= b->n_s) return false;
        P[n] = p[j];
        dO[n] = c->run->dO ? c->run->dO[((size_t)e->head * a->n_q + b->row) * a->d_v] : 1.0;
        weighed += p[j] > 0;
        n++;
    }
    if (n != e->r1 - e->r0 || weighed < 2) return false;
    const int D = c->digits;
    char a1[48], a2[48];
    *q = blank(FS_Q_DV, k, D);
    add(q->prompt, sizeof q->prompt, "Key %d, in the recomputed tile of query rows %d-%d%s: the rows' weights for it are P = [", e->row,
        e->r0, e->r1 - 1, a->n_q_heads > 1 ? " of its head" : "");
    for (int i = 0; i < n; i++) add(q->prompt, sizeof q->prompt, "%s%s", i ? ", " : "", num(a1, sizeof a1, P[i], D));
    add(q->prompt, sizeof q->prompt, "] (P = exp(S − L), 0 where masked), and their output gradients' first elements are "
        "dO[·][0] = [");
    for (int i = 0; i < n; i++) add(q->prompt, sizeof q->prompt, "%s%s", i ? ", " : "", num(a1, sizeof a1, dO[i], D));
    add(q->prompt, sizeof q->prompt, "]. What does this tile add to dV[%d][0]?", e->row);
    q->answer = g[0];
    double from = 0;
    add(q->why, sizeof q->why, "dV_j += Σ_i P_ij dO_i[0] = ");
    for (int i = 0; i < n; i++) {
        add(q->why, sizeof q->why, "%s%s · %s", i ? " + " : "", num(a1, sizeof a1, P[i], D), numf(a2, sizeof a2, dO[i], D));
        from += shown(P[i], D) * shown(dO[i], D);
    }
    add(q->why, sizeof q->why, " = %s: dV = Pᵀ dO, so a key collects the gradient of every output it fed, weighted as the "
        "forward weighted it.", num(a1, sizeof a1, g[0], D));
    unrounded_note(q, from, g[0], D);
    return true;
}

/* Which shard device p holds at the next ring step, asked at its hold of step t: the hops that bring
 * step t + 1's shards come after every device's step t, so nothing shown before the question names
 * the answer (asked about step t itself, the hop just before it had named the shard). */
static bool ask_shard(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_HOLD || e->ring_step < 0 || !c->run || c->run->ring.P < 2) return false;
    const int32_t P = c->run->ring.P, p = e->device, t = e->ring_step + 1;
    int64_t n = k + 1;
    while (n < c->t->n && !(c->t->ev[n].kind == FS_EV_HOLD && c->t->ev[n].device == p && c->t->ev[n].ring_step == t)) n++;
    if (n == c->t->n) return false;                  /* the last step: no next one */
    const int32_t s = c->t->ev[n].shard;
    if (s != ((p - t) % P + P) % P || e->shard != ((p - e->ring_step) % P + P) % P)
        return false;   /* the reason's rule does not hold here */
    fs_question_shard(P, p, e->ring_step, q);
    q->step = k;
    return true;
}

void fs_question_shard(int32_t P, int32_t p, int32_t t0, fs_question *q)
{
    const int32_t t = t0 + 1, held = ((p - t0) % P + P) % P, s = ((p - t) % P + P) % P;
    *q = blank(FS_Q_SHARD, -1, 0);
    snprintf(q->prompt, sizeof q->prompt, "%d devices in a ring: at step 0 device p holds KV shard p, and after each step "
             "every device passes its shard on to device p + 1. At ring step %d device %d holds shard %d: which shard "
             "will it hold at ring step %d?", P, t0, p, held, t);
    q->answer = s;
    snprintf(q->why, sizeof q->why, "Device p holds shard (p − t) mod %d at ring step t: (%d − %d) mod %d = %d, since each "
             "step moves every shard one device on (device %d receives the shard device %d held).", P, p, t, P, s, p,
             (p + P - 1) % P);
}

static bool ask_page(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    /* not in block 0 (nothing to work out), nor at a block's first slot: the page taken for that
     * block (the alloc just before) has named it */
    if (e->kind != FS_EV_WRITE || !c->run || c->run->page_size < 1 || e->c0 < c->run->page_size || e->slot == 0) return false;
    const int32_t ps = c->run->page_size;
    *q = blank(FS_Q_PAGE, k, 0);
    snprintf(q->prompt, sizeof q->prompt, "Pages hold %d positions each. Position %d of sequence %d is written next: which "
             "logical block of the sequence does it fall in (counting from 0)?", ps, e->c0, e->seq);
    q->answer = e->block;
    snprintf(q->why, sizeof q->why, "Position %d is in block ⌊%d / %d⌋ = %d, at slot %d mod %d = %d of it; the block table then "
             "says which physical page holds that block (page %d here).", e->c0, e->c0, ps, e->block, e->c0, ps, e->slot, e->page);
    return true;
}

/* The TILE event of the pair that row event k belongs to (the nearest before it), or NULL. */
static const fs_event *pair_of(const fs_trace *t, int64_t k)
{
    const fs_event *e = &t->ev[k];
    for (int64_t i = k - 1; i >= 0; i--) {
        const fs_event *x = &t->ev[i];
        if (x->kind == FS_EV_TILE && x->head == e->head && x->qt == e->qt && x->kt == e->kt) return x;
    }
    return NULL;
}

/* Dropout in the forward, at a row of a tile where the mask of dropout drops one of the row's
 * visible weights and keeps another: the block's sum ℓ_blk, which keeps the dropped ones (the
 * softmax is over every visible score; dropout acts on P afterwards, in the product with V). */
static bool ask_drop(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_ROW || c->truth != c->t || e->lowp || e->device >= 0 || e->visible < 2 || e->n_s > 8 ||
        !isfinite(e->l_blk))
        return false;
    const fs_event *te = pair_of(c->t, k);
    if (!te || !(te->dropout > 0) || te->n_drop <= 0) return false;
    const double *pairs = fs_trace_at(c->t, te->drop), *p = fs_trace_at(c->t, e->p_row);
    if (!pairs || !p) return false;
    char keys[96] = "";
    size_t at = 0;
    int nd = 0;
    for (int32_t i = 0; i < te->n_drop && at < sizeof keys; i++)
        if ((int32_t)pairs[2 * i] == e->row) {
            int32_t j = (int32_t)pairs[2 * i + 1];
            at += (size_t)snprintf(keys + at, sizeof keys - at, "%s%d", nd ? ", " : "", j);
            nd++;
        }
    if (nd == 0 || nd >= e->visible) return false;
    const int D = c->digits;
    const double dp = te->dropout;
    char a[48], b[48];
    *q = blank(FS_Q_DROP, k, D);
    add(q->prompt, sizeof q->prompt, "Row %d meets keys %d-%d, with dropout at p = %g. Its block weights %s(s − m_blk) are ",
        e->row, e->c0, e->c1 - 1, dp, c->EXP);
    add_vec(q->prompt, sizeof q->prompt, c->t, e->p_row, e->n_s, D);
    add(q->prompt, sizeof q->prompt, "%s; dropout drops key%s %s for this row and keeps the others, each × 1/(1 − p) = %s in the "
        "product with V. What is ℓ_blk, the block's sum that enters the running ℓ?",
        e->visible < e->n_s ? " (0: hidden by the mask)" : "", nd > 1 ? "s" : "", keys, num(a, sizeof a, 1 / (1 - dp), D));
    q->answer = e->l_blk;
    snprintf(q->why, sizeof q->why, "ℓ_blk = Σ exp(s − m_blk) over every visible key = %s, the dropped key%s included: dropout acts on P after "
             "the softmax (O = dropout(P) V, P the whole softmax), so only the product with V leaves %s out, and the kept "
             "weights are scaled by 1/(1 − p) = %s there, so that O keeps its expected value.", num(b, sizeof b, e->l_blk, D),
             nd > 1 ? "s" : "", nd > 1 ? "them" : "it", num(a, sizeof a, 1 / (1 - dp), D));
    double sum = 0;   /* the shown weights, added up */
    for (int32_t j = 0; j < e->n_s; j++) sum += shown(p[j], D);
    unrounded_note(q, sum, e->l_blk, D);
    return true;
}

/* A scale or an input printed with six significant digits (the prompt's σ and x must allow the
 * division to be redone; four decimals of 0.00412 would not). */
static const char *num6(char *s, size_t n, double x)
{
    snprintf(s, n, "%.6g", x);
    return s;
}

/* The index of the element of x (n values) whose e4m3 rounding moves it most, relative to the
 * grid (not 0, not on the grid); −1 when none moves. */
static int32_t most_rounded(const double *x, const double *x8, int32_t n)
{
    int32_t best = -1;
    double worst = 0;
    for (int32_t j = 0; j < n; j++) {
        if (x[j] == 0 || x8[j] == 0 || x[j] == x8[j]) continue;
        const double r = fabs(x8[j] - x[j]) / fabs(x[j]);
        if (r > worst) worst = r, best = j;
    }
    return best;
}

/* FP8 (lowp with its values, e4m3): the value of one element of the row's query that Q Kᵀ uses,
 * e4m3(x / σ_q) · σ_q. */
static bool ask_quant(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_ROW || !e->lowp || !c->run || !c->run->lowp || c->run->recipe.fmt != FS_LOWP_E4M3 || e->n_x < 1)
        return false;
    const double *x = fs_trace_at(c->t, e->x_row), *x8 = fs_trace_at(c->t, e->x8_row);
    if (!x || !x8 || !(e->q_scale > 0)) return false;
    const int32_t j = most_rounded(x, x8, e->n_x);
    if (j < 0) return false;
    const fs_lowp_recipe *r = &c->run->recipe;
    const double sq = e->q_scale;
    char a[48], b[48], d[48], f[48];
    *q = blank(FS_Q_QUANT, k, c->digits);
    const char *whose = r->scaling == FS_SCALE_TENSOR ? "the largest |entry| of all of Q"
                        : r->scaling == FS_SCALE_BLOCK ? "the largest |entry| of the row's Q tile"
                                                       : NULL;
    if (whose)
        add(q->prompt, sizeof q->prompt, "Before Q Kᵀ, Q%s goes into e4m3 divided by a scale σ_q = amax / 448, where amax is %s "
            "and 448 e4m3's largest value; the product multiplies σ_q back. ", r->hadamard ? " (after the Hadamard rotation)" : "",
            whose);
    else
        add(q->prompt, sizeof q->prompt, "Before Q Kᵀ, Q%s goes into e4m3 as it is (no scale: σ_q = 1). ",
            r->hadamard ? " (after the Hadamard rotation)" : "");
    add(q->prompt, sizeof q->prompt, "Row %d's element %d is x = %s%s%s. What value does the product use for it, e4m3(x / σ_q) · σ_q? "
        "(e4m3 keeps 3 fraction bits: 8 values between two powers of two, ties to even.)", e->row, j, num6(a, sizeof a, x[j]),
        whose ? " and σ_q = " : "", whose ? num6(b, sizeof b, sq) : "");
    q->answer = x8[j];
    const double y = (double)(float)(x[j] / sq), r8 = fs_fp8_round(FS_FP8_E4M3, y);
    snprintf(q->why, sizeof q->why, "x / σ_q = %s, which e4m3 rounds to %s; times σ_q: %s", num6(a, sizeof a, y),
             num6(b, sizeof b, r8), num(d, sizeof d, x8[j], c->digits));
    fs_question_e4m3_why(q->why, sizeof q->why, y);
    /* the printed x and σ, worked out */
    const double xs = strtod(num6(a, sizeof a, x[j]), NULL), ss = strtod(num6(f, sizeof f, sq), NULL);
    unrounded_note(q, fs_fp8_round(FS_FP8_E4M3, xs / ss) * ss, x8[j], c->digits);
    q->has_before = xs != q->answer;   /* x itself, as the prompt prints it, typed back */
    q->before = xs;
    return true;
}

/* FP8: the P that P · V uses for one key, e4m3(P × p) / p, at the visible weight its rounding
 * moves most without taking it to 0 (else the smallest, which it does take to 0). */
static bool ask_p8(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_ROW || !e->lowp || !c->run || !c->run->lowp || c->run->recipe.fmt != FS_LOWP_E4M3 || e->visible < 2)
        return false;
    const double *P = fs_trace_at(c->t, e->p_row), *P8 = fs_trace_at(c->t, e->p8_row);
    if (!P || !P8 || !(e->p_scale > 0)) return false;
    /* the weight that loses the most to the rounding without vanishing (else the smallest one, which
     * vanishes: 004_11's point without a scale) */
    int32_t j = -1, small = -1;
    double worst = 0;
    for (int32_t i = 0; i < e->n_s; i++) {
        if (!(P[i] > 1e-6) || P[i] >= 1) continue;
        if (small < 0 || P[i] < P[small]) small = i;
        const double r = fabs(P8[i] - P[i]) / P[i];
        if (P8[i] != 0 && r > worst) worst = r, j = i;
    }
    if (j < 0) j = small;
    if (j < 0 || P8[j] == P[j]) return false;
    const double ps = e->p_scale;
    char a[48], b[48], d[48];
    *q = blank(FS_Q_P8, k, c->digits);
    add(q->prompt, sizeof q->prompt, "Row %d's weight for key %d is P = exp(s − m_new) = %s. P · V runs in e4m3 too: P is multiplied "
        "by p = %g, rounded to e4m3 and p is divided out after the product. What P does P · V use, e4m3(P × %g) / %g? (e4m3 "
        "keeps 3 fraction bits: 8 values between two powers of two, ties to even; below 2^-6 its steps are 2^-9 apart.)",
        e->row, e->c0 + j, num6(a, sizeof a, P[j]), ps, ps, ps);
    q->answer = P8[j];
    q->digits = P8[j] != 0 && fabs(P8[j]) < 0.01 ? 6 : c->digits;
    const double y = (double)(float)(P[j] * ps), r8 = fs_fp8_round(FS_FP8_E4M3, y);
    snprintf(q->why, sizeof q->why, "P × p = %s, which e4m3 rounds to %s; divided by p: %s.%s", num6(a, sizeof a, y),
             num6(b, sizeof b, r8), num6(d, sizeof d, P8[j]),
             ps == 1 ? " Without a scale of its own a small weight keeps few bits, or none: the reason for p." : "");
    fs_question_e4m3_why(q->why, sizeof q->why, y);
    const double shownP = strtod(num6(a, sizeof a, P[j]), NULL);
    unrounded_note(q, fs_fp8_round(FS_FP8_E4M3, shownP * ps) / ps, P8[j], q->digits);
    q->has_before = shownP != q->answer;   /* P itself, as the prompt prints it, typed back */
    q->before = shownP;
    return true;
}

/* The ring under the causal mask, at a device's hold of step t ≥ 1 (step 0 is every device's own
 * shard): of the pairs (its query, the shard's key), does it compute all, some or none? */
static bool ask_ring_work(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_HOLD || e->ring_step < 1 || !c->run || c->run->ring.P < 2 || !has_mask(c) ||
        c->run->attn.mask.kind != FS_MASK_CAUSAL)
        return false;
    const double *kp = fs_trace_at(c->t, e->s_row);
    const int32_t n = c->run->attn.n_kv;
    if (!kp || e->n_s < 1 || n > 4096) return false;
    int32_t *qp = malloc(sizeof *qp * (size_t)n);
    if (!qp) return false;
    const int32_t nq = fs_ring_positions(&c->run->ring, n, e->device, qp);
    int64_t seen = 0;
    for (int32_t i = 0; i < nq; i++)
        for (int32_t j = 0; j < e->n_s; j++) seen += kp[j] <= qp[i];
    const int64_t all = (int64_t)nq * e->n_s;
    char qs[96], ks[96];
    size_t at = 0;
    for (int32_t i = 0; i < nq && at < sizeof qs; i++) at += (size_t)snprintf(qs + at, sizeof qs - at, "%s%d", i ? ", " : "", qp[i]);
    at = 0;
    for (int32_t j = 0; j < e->n_s && at < sizeof ks; j++)
        at += (size_t)snprintf(ks + at, sizeof ks - at, "%s%d", j ? ", " : "", (int)kp[j]);
    free(qp);
    if (nq > 8 || e->n_s > 8) return false;   /* the prompt lists every position */
    *q = blank(FS_Q_RING_WORK, k, 0);
    q->numeric = false;
    q->n_options = 3;
    q->options[0] = "all";
    q->options[1] = "some";
    q->options[2] = "none";
    q->right = seen == all ? 0 : seen ? 1 : 2;
    snprintf(q->prompt, sizeof q->prompt, "Ring step %d: device %d's queries are at positions %s, and it now holds KV shard %d, the "
             "keys at positions %s. Under the causal mask (a query sees the keys at or before its own position), how many of "
             "its (query, key) pairs does it compute at this step: all, some, or none (it waits)?", e->ring_step, e->device, qs,
             e->shard, ks);
    if (q->right == 2)
        snprintf(q->why, sizeof q->why, "None: every key of shard %d comes after every query of device %d, so the step is skipped "
                 "and the device waits for the busiest one; contiguous shards leave the early devices idle this way.", e->shard,
                 e->device);
    else if (q->right == 0)
        snprintf(q->why, sizeof q->why, "All %lld: every key of shard %d comes at or before every query of device %d, so no pair is "
                 "hidden.", (long long)all, e->shard, e->device);
    else
        snprintf(q->why, sizeof q->why, "Some: %lld of the %lld pairs are visible (a key at or before its query), so the device "
                 "works on part of the step.", (long long)seen, (long long)all);
    return true;
}

/* A pitfall lesson's own question, at a row update of the wrong variant (c->t): the number the
 * mistake computes, its formula stated, and in the reason what the correct update of the same
 * state gives. Pitfall 1: the row's weights' sum (V the identity) or o[0]; pitfall 2 in both forms:
 * ℓ_new; pitfall 4 and 001's fix: ℓ_new at a block that hides every key of the row (NaN or not). */
static bool ask_mistake(const ctx *c, int64_t k, fs_question *q)
{
    if (!c->run || c->run->algo != FS_ALGO_TILED || c->run->tiling.pitfall == FS_PITFALL_NONE) return false;
    const fs_event *e = &c->t->ev[k];
    if (e->kind != FS_EV_ROW || e->n_s > 8 || e->n_o < 1) return false;
    const fs_pitfall pf = c->run->tiling.pitfall;
    const bool masked = pf == FS_PITFALL_MASKED_NAN || pf == FS_PITFALL_MASKED_DOC_FIX;
    const bool first = e->m_old == -INFINITY;
    if (masked ? e->visible != 0 : first || e->visible < 1 || !isfinite(e->l_new) || !(e->l_new > 0)) return false;
    if (!masked && (!isfinite(e->m_old) || !isfinite(e->l_old) || !isfinite(e->m_blk) || !isfinite(e->l_blk))) return false;
    if (masked && !(first || (isfinite(e->m_old) && isfinite(e->l_old)))) return false;   /* the first NaN of a row, not the rest */
    const double *s = fs_trace_at(c->t, e->s_row), *o_old = fs_trace_at(c->t, e->o_old), *o_new = fs_trace_at(c->t, e->o_new);
    if (!s || !o_old || !o_new) return false;
    const int D = c->digits;
    const char *X = c->EXP;
    char a[48], b[48], d[48], f[48], g[48], h[48], i2[48];
    char who[64];   /* a sentence's start */
    snprintf(who, sizeof who, "Row %d%s", e->row, c->run->attn.n_q_heads > 1 ? " of its head" : "");
    *q = blank(FS_Q_MISTAKE, k, D);
    const bool two = !strcmp(X, "exp2");
    /* the correct β (the pitfall-2 variants record 1, as they use it) */
    const double beta = isfinite(e->m_blk) && isfinite(e->m_new) ? (two ? exp2(e->m_blk - e->m_new) : exp(e->m_blk - e->m_new)) : 0;
    /* pitfall 2 as it bites leaves out β: where the block holds the new maximum β is 1 and the
     * mistake's number is the correct one, which cannot tell the two apart: asked where β < 1 */
    if (pf == FS_PITFALL_BLOCK_MAX_NO_BETA && !(beta < 1 - 1e-9)) return false;

    if (pf == FS_PITFALL_NO_RESCALE) {
        add(q->prompt, sizeof q->prompt, "A kernel with 001's pitfall 1 adds each block as o_new = o_old + P_blk V / ℓ_new, "
            "P_blk = %s(s − m_blk), and never rescales o_old (its ℓ is kept right). Before: m = %s. %s meets keys %d-%d; its "
            "scores are ", X, num(a, sizeof a, e->m_old, D), who, e->c0, e->c1 - 1);
        add_vec(q->prompt, sizeof q->prompt, c->t, e->s_row, e->n_s, D);
        add(q->prompt, sizeof q->prompt, ": m_blk = %s, ℓ_blk = Σ P_blk = %s, and ℓ_new = α ℓ_old + β ℓ_blk = %s. ",
            num(a, sizeof a, e->m_blk, D), num(b, sizeof b, e->l_blk, D), num(d, sizeof d, e->l_new, D));
        if (v_identity(c->run) && e->head == 0) {
            double sum_old = 0, sum_new = 0;
            for (int32_t i = 0; i < e->n_o; i++) sum_old += o_old[i], sum_new += o_new[i];
            add(q->prompt, sizeof q->prompt, "V is the identity, so o is the row's weights; before this block they sum to %s. "
                "What do they sum to after the update?", num(a, sizeof a, sum_old, D));
            q->answer = sum_new;
            snprintf(q->why, sizeof q->why, "Σ o_new = Σ o_old + ℓ_blk / ℓ_new = %s + %s / %s = %s, where the correct row sums to 1: "
                     "the old weights keep their old divisor and maximum (the correct update multiplies them by α ℓ_old / ℓ_new = "
                     "%s), and the block's are added without β = %s.", num(a, sizeof a, sum_old, D), num(b, sizeof b, e->l_blk, D),
                     num(d, sizeof d, e->l_new, D), num(f, sizeof f, sum_new, D),
                     num(g, sizeof g, e->alpha * e->l_old / e->l_new, D), num(h, sizeof h, e->beta, D));
            unrounded_note(q, shown(sum_old, D) + shown(e->l_blk, D) / shown(e->l_new, D), sum_new, D);
            return true;
        }
        /* V not the identity: the first element of o, from the block's (P_blk V)[0] */
        const double *p = fs_trace_at(c->t, e->p_row), *V = c->run->attn.V;
        if (!p || !V) return false;
        const int32_t dv = c->run->attn.d_v;
        const double *Vh = V + (size_t)e->kv_head * c->run->attn.n_kv * dv;
        double pv = 0;
        for (int32_t j = 0; j < e->n_s; j++) pv += p[j] * Vh[(size_t)(e->c0 + j) * dv];
        add(q->prompt, sizeof q->prompt, "Before this block o[0] = %s, and the block's (P_blk V)[0] = Σ_j P_blk[j] V[j][0] = %s. "
            "What is o[0] after the update?", num(a, sizeof a, o_old[0], D), num(b, sizeof b, pv, D));
        q->answer = o_new[0];
        snprintf(q->why, sizeof q->why, "o_new[0] = o_old[0] + (P_blk V)[0] / ℓ_new = %s + %s / %s = %s; the correct update gives "
                 "(α ℓ_old o_old[0] + β (P_blk V)[0]) / ℓ_new = %s, with α = %s and β = %s.", num(a, sizeof a, o_old[0], D),
                 numf(b, sizeof b, pv, D), num(d, sizeof d, e->l_new, D), num(f, sizeof f, o_new[0], D),
                 num(g, sizeof g, (e->alpha * e->l_old * o_old[0] + e->beta * pv) / e->l_new, D), num(h, sizeof h, e->alpha, D),
                 num(i2, sizeof i2, e->beta, D));
        unrounded_note(q, shown(o_old[0], D) + shown(pv, D) / shown(e->l_new, D), o_new[0], D);
        return true;
    }

    if (pf == FS_PITFALL_GLOBAL_MAX_NO_BETA || pf == FS_PITFALL_BLOCK_MAX_NO_BETA) {
        const bool global = pf == FS_PITFALL_GLOBAL_MAX_NO_BETA;
        if (global)
            add(q->prompt, sizeof q->prompt, "In 001's pitfall 2 as printed, a kernel weighs a block's keys against the new "
                "running maximum, P = %s(s − m_new), and adds them without β: ℓ_new = α ℓ_old + Σ P, α = %s(m_old − m_new). ",
                X, X);
        else
            add(q->prompt, sizeof q->prompt, "A kernel with pitfall 2 as it bites weighs a block's keys against the block's own "
                "maximum, P_blk = %s(s − m_blk), and adds them without β: ℓ_new = α ℓ_old + Σ P_blk, α = %s(m_old − m_new). ", X, X);
        add(q->prompt, sizeof q->prompt, "Before: m = %s, ℓ = %s. %s meets keys %d-%d; its scores are ", num(a, sizeof a, e->m_old, D),
            num(b, sizeof b, e->l_old, D), who, e->c0, e->c1 - 1);
        add_vec(q->prompt, sizeof q->prompt, c->t, e->s_row, e->n_s, D);
        add(q->prompt, sizeof q->prompt, ". What ℓ_new does the kernel compute?");
        q->answer = e->l_new;
        const double right = e->alpha * e->l_old + beta * e->l_blk, added = e->l_new - e->alpha * e->l_old;
        double from = shown(e->alpha, D) * shown(e->l_old, D);
        if (global) {
            snprintf(q->why, sizeof q->why, "m_new = %s, α = %s; Σ %s(s − m_new) = %s; ℓ_new = α ℓ_old + Σ P = %s. The correct α ℓ_old "
                     "+ β ℓ_blk gives the same (β = %s, ℓ_blk = %s): %s(s − m_new) = β · %s(s − m_blk), so β is already inside P, "
                     "and this printed mistake is exact.", num(a, sizeof a, e->m_new, D), num(b, sizeof b, e->alpha, D), X,
                     num(d, sizeof d, added, D), num(f, sizeof f, e->l_new, D), num(g, sizeof g, beta, D),
                     num(h, sizeof h, e->l_blk, D), X, X);
            from += shown(added, D);   /* α ℓ_old + Σ P as the reason prints them */
        } else {
            snprintf(q->why, sizeof q->why, "m_blk = %s, m_new = %s, α = %s; Σ P_blk = ℓ_blk = %s; ℓ_new = α ℓ_old + ℓ_blk = %s. The "
                     "correct update takes β ℓ_blk, β = %s(m_blk − m_new) = %s: α ℓ_old + β ℓ_blk = %s. %s",
                     num(a, sizeof a, e->m_blk, D), num(b, sizeof b, e->m_new, D), num(d, sizeof d, e->alpha, D),
                     num(f, sizeof f, e->l_blk, D), num(g, sizeof g, e->l_new, D), X, num(h, sizeof h, beta, D),
                     num(i2, sizeof i2, right, D),
                     beta < 1 ? "Without β the block, whose maximum is below the running one, weighs 1/β times too much."
                              : "This block holds the new maximum (β = 1), so the mistake changes nothing here; it shows "
                                "where a block's maximum is below the running one.");
            from += shown(e->l_blk, D);
        }
        unrounded_note(q, from, e->l_new, D);
        return true;
    }

    /* pitfall 4 and 001's fix, at a block that hides every key of the row */
    if (pf == FS_PITFALL_MASKED_NAN)
        add(q->prompt, sizeof q->prompt, "A kernel with 001's pitfall 4 computes the update as written, with no guard for masked "
            "keys: m_blk = the block's largest score, P_blk = %s(s − m_blk), ℓ_blk = Σ P_blk, m_new = max(m_old, m_blk), α = %s(m_old − "
            "m_new), β = %s(m_blk − m_new), ℓ_new = α ℓ_old + β ℓ_blk. ", X, X, X);
    else
        add(q->prompt, sizeof q->prompt, "A kernel with 001's fix for masked keys sets β = 0 and P_blk = 0 (so ℓ_blk = 0) where a "
            "block hides every key of the row (m_blk = -inf), and computes m_new = max(m_old, m_blk), α = %s(m_old − m_new) and "
            "ℓ_new = α ℓ_old + β ℓ_blk as usual. ", X);
    add(q->prompt, sizeof q->prompt, "%s meets keys %d-%d, every one hidden by the mask (its scores are -inf). ", who, e->c0,
        e->c1 - 1);
    if (first) add(q->prompt, sizeof q->prompt, "It has seen no key before: m = -inf, ℓ = 0. ");
    else add(q->prompt, sizeof q->prompt, "Before: m = %s, ℓ = %s. ", num(a, sizeof a, e->m_old, D), num(b, sizeof b, e->l_old, D));
    add(q->prompt, sizeof q->prompt, "What ℓ_new does the kernel compute? (A number, -inf or NaN.)");
    q->answer = e->l_new;
    if (first)
        snprintf(q->why, sizeof q->why, "m_new = max(-inf, -inf) = -inf, so α = %s(-inf − (-inf)) = NaN (-inf − (-inf) has no "
                 "value), and NaN times anything, 0 included, is NaN: ℓ_new = NaN, carried into O by every later update. The correct "
                 "algorithm leaves (-inf, 0, 0) alone while m_new is -inf.", X);
    else if (pf == FS_PITFALL_MASKED_NAN)
        snprintf(q->why, sizeof q->why, "m_new = m_old = %s, so α = 1 and β = 0, but each hidden key's P_blk = %s(-inf − (-inf)) is "
                 "NaN (-inf − (-inf) has no value), so ℓ_blk = NaN and ℓ_new = ℓ_old + 0 · NaN = NaN. The correct algorithm gives "
                 "a hidden key the weight 0.", num(a, sizeof a, e->m_old, D), X);
    else
        snprintf(q->why, sizeof q->why, "m_new = m_old = %s, so α = %s(0) = 1; β = 0 and ℓ_blk = 0 by the fix: ℓ_new = 1 · %s + 0 = %s. "
                 "The fix holds for a row that has seen a key; it fails where a row's first visited block hides every key (m_old "
                 "= -inf, so α = %s(-inf − (-inf)) = NaN).", num(a, sizeof a, e->m_old, D), X, num(b, sizeof b, e->l_old, D),
                 num(d, sizeof d, e->l_new, D), X);
    return true;
}

/* Soft-capping (003_07), at a row update: the score the softmax uses for the visible key whose
 * raw score the cap moves most, cap · tanh(raw / cap), the raw score given. */
static bool ask_softcap(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (!c->run || !(c->run->attn.softcap > 0) || c->run->algo != FS_ALGO_TILED || wrong_numbers(c) || e->kind != FS_EV_ROW ||
        e->device >= 0 || e->visible < 1 || e->n_s > 8 || strcmp(c->EXP, "exp"))
        return false;
    const double *s = fs_trace_at(c->t, e->s_row);
    if (!s) return false;
    fs_attn raw = c->run->attn;
    raw.softcap = 0;
    int32_t j = -1;
    double best = -1, r = 0;
    for (int32_t x = 0; x < e->n_s; x++) {
        if (s[x] == -INFINITY) continue;
        const double rx = fs_attn_score(&raw, e->head, e->row, e->c0 + x);
        if (isfinite(rx) && fabs(rx - s[x]) > best) best = fabs(rx - s[x]), j = x, r = rx;
    }
    if (j < 0) return false;
    const int D = c->digits;
    const double cap = c->run->attn.softcap;
    char a[48], b[48], d[48];
    *q = blank(FS_Q_SOFTCAP, k, D);
    snprintf(q->prompt, sizeof q->prompt, "Every score passes through the soft-cap s = cap · tanh(raw / cap), cap = %g, before the "
             "softmax. Row %d's raw score for key %d is %s. What score s enters the softmax?", cap, e->row, e->c0 + j,
             num(a, sizeof a, r, D));
    q->answer = s[j];
    snprintf(q->why, sizeof q->why, "%g · tanh(%s / %g) = %g · tanh(%s) = %s: tanh stays inside (−1, 1), so a capped score stays "
             "inside (−%g, %g), and one near 0 comes through almost unchanged (tanh(x) ≈ x there).", cap, num(a, sizeof a, r, D),
             cap, cap, num(b, sizeof b, r / cap, D), num(d, sizeof d, s[j], D), cap, cap);
    unrounded_note(q, cap * tanh(shown(r, D) / cap), s[j], D);
    return true;
}

/* GQA (000_08), at the first pair a query head visits: the KV head whose K and V it reads. */
static bool ask_kv_head(const ctx *c, int64_t k, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    if (!c->run || e->kind != FS_EV_TILE || e->device >= 0) return false;
    const int32_t hq = c->run->attn.n_q_heads, hkv = c->run->attn.n_kv_heads;
    if (hkv < 1 || hq <= hkv || e->head < 2 * (hq / hkv)) return false;   /* past the heads the prompt lists */
    if (!first_pair(c->t, k, e->head)) return false;
    const int32_t g = hq / hkv;
    *q = blank(FS_Q_KV_HEAD, k, 0);
    snprintf(q->prompt, sizeof q->prompt, "GQA: %d query heads share %d KV heads, each KV head serving %d / %d = %d consecutive "
             "query heads (query heads 0-%d read KV head 0, heads %d-%d KV head 1, …). Query head %d starts here: which KV head's "
             "K and V does it read (counting from 0)?", hq, hkv, hq, hkv, g, g - 1, g, 2 * g - 1, e->head);
    q->answer = e->kv_head;
    snprintf(q->why, sizeof q->why, "⌊%d / %d⌋ = %d: the %d query heads of a group read the same K and V, so the cache holds "
             "%d heads' K and V instead of %d, 1/%d of the bytes.", e->head, g, e->kv_head, g, hkv, hq, g);
    return true;
}

/* Whether text starts with a one-letter symbol (z[0], l_blk, f(x), m = …) rather than a word. */
static bool symbol_start(const char *s)
{
    if (s[0] && s[1] == ' ' && s[2] == '=') return true;   /* "m = …" */
    size_t i = 0;
    bool digit = false;
    for (; isalnum((unsigned char)s[i]); i++) digit |= isdigit((unsigned char)s[i]) != 0;
    /* a name: "z[0]", "l_blk", "exp(100)", or a word with a digit in it: "bfloat16", "e4m3" */
    return i > 0 && (s[i] == '[' || s[i] == '_' || s[i] == '(' || digit);
}

/* ---- choosing the moments ------------------------------------------------------------------ */

static bool ask_kind_(const ctx *c, int64_t k, fs_qkind kind, fs_question *q);

/* A question, its prompt starting with a capital letter, unless it starts with a symbol whose
 * case is its meaning ("z[0] = 2 arrives", "m = …", "l_blk"). */
static bool ask_kind(const ctx *c, int64_t k, fs_qkind kind, fs_question *q)
{
    if (!ask_kind_(c, k, kind, q)) return false;
    /* 003's base-2 form: its scores and maxima are in base-2 units, and every factor is exp2 of a
     * difference. Said in the question itself, which a quiz asks away from the lesson's
     * introduction (a student who takes exp would be marked wrong). */
    const bool factors = kind == FS_Q_ALPHA || kind == FS_Q_BETA || kind == FS_Q_L_NEW || kind == FS_Q_MERGE ||
                         kind == FS_Q_DELTA || kind == FS_Q_DS;
    if (factors && !strcmp(c->EXP, "exp2") && !strstr(q->prompt, "base-2"))
        add(q->prompt, sizeof q->prompt, " (In base-2 units, as this run keeps its scores: every factor is exp2, 2 to the "
            "power of a difference.)");
    if (q->prompt[0] >= 'a' && q->prompt[0] <= 'z' && !symbol_start(q->prompt))
        q->prompt[0] = (char)(q->prompt[0] - 'a' + 'A');
    return true;
}

static bool ask_kind_(const ctx *c, int64_t k, fs_qkind kind, fs_question *q)
{
    switch (kind) {
    case FS_Q_L_NEW:
        if (c->t->ev[k].kind == FS_EV_PARTIAL) return ask_partial(c, k, kind, q);
        if (c->t->ev[k].kind == FS_EV_MERGE || c->t->ev[k].kind == FS_EV_RMERGE) return ask_merge_l(c, k, q);
        return ask_row(c, k, kind, q);
    case FS_Q_M_NEW:
        if (c->t->ev[k].kind == FS_EV_PARTIAL) return ask_partial(c, k, kind, q);
        return ask_row(c, k, kind, q);
    case FS_Q_ALPHA: case FS_Q_BETA: return ask_row(c, k, kind, q);
    case FS_Q_OUT: return ask_out(c, k, q);
    case FS_Q_TILE_CLASS: return ask_tile(c, k, q);
    case FS_Q_SKIPS: return ask_skips(c, k, q);
    case FS_Q_LIVE: return ask_live(c, k, q);
    case FS_Q_MERGE: return ask_merge(c, k, q);
    case FS_Q_DELTA: return ask_delta(c, k, q);
    case FS_Q_DS: return ask_ds(c, k, q);
    case FS_Q_DV: return ask_dv(c, k, q);
    case FS_Q_SHARD: return ask_shard(c, k, q);
    case FS_Q_PAGE: return ask_page(c, k, q);
    case FS_Q_DROP: return ask_drop(c, k, q);
    case FS_Q_QUANT: return ask_quant(c, k, q);
    case FS_Q_P8: return ask_p8(c, k, q);
    case FS_Q_RING_WORK: return ask_ring_work(c, k, q);
    case FS_Q_MISTAKE: return ask_mistake(c, k, q);
    case FS_Q_SOFTCAP: return ask_softcap(c, k, q);
    case FS_Q_KV_HEAD: return ask_kv_head(c, k, q);
    default: return false;
    }
}

/* The kind worth asking at step k, in order of interest: a rescale asks α, then the kinds not
 * asked yet (seen may be NULL), then the rest. FS_Q_COUNT when none. */
static fs_qkind best_kind(const ctx *c, int64_t k, const bool *seen, fs_question *q)
{
    const fs_event *e = &c->t->ev[k];
    switch (e->kind) {
    case FS_EV_ROW: case FS_EV_ELEM: {
        const fs_event *x = truth_at(c, k);
        if (!x) return FS_Q_COUNT;
        const bool moved = x->m_old > -INFINITY && x->m_new > x->m_old;
        static const fs_qkind order[] = {FS_Q_M_NEW, FS_Q_L_NEW, FS_Q_BETA};
        if (moved && (!seen || !seen[FS_Q_ALPHA]) && ask_kind(c, k, FS_Q_ALPHA, q)) return FS_Q_ALPHA;
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
                fs_qkind kd = order[i];
                if (pass == 0 && seen && seen[kd]) continue;
                if (kd == FS_Q_BETA && !(x->beta < 1)) continue;
                if (ask_kind(c, k, kd, q)) return kd;
            }
        if (moved && ask_kind(c, k, FS_Q_ALPHA, q)) return FS_Q_ALPHA;
        return FS_Q_COUNT;
    }
    case FS_EV_TILE: case FS_EV_SKIP: return ask_tile(c, k, q) ? FS_Q_TILE_CLASS : FS_Q_COUNT;
    case FS_EV_OUT: return ask_out(c, k, q) ? FS_Q_OUT : FS_Q_COUNT;
    case FS_EV_MERGE: case FS_EV_RMERGE: return ask_merge(c, k, q) ? FS_Q_MERGE : FS_Q_COUNT;
    case FS_EV_DELTA: return ask_delta(c, k, q) ? FS_Q_DELTA : FS_Q_COUNT;
    case FS_EV_BROW: return ask_ds(c, k, q) ? FS_Q_DS : FS_Q_COUNT;
    case FS_EV_BKEY: return ask_dv(c, k, q) ? FS_Q_DV : FS_Q_COUNT;
    case FS_EV_HOLD:
        if ((!seen || !seen[FS_Q_RING_WORK]) && ask_ring_work(c, k, q)) return FS_Q_RING_WORK;
        return ask_shard(c, k, q) ? FS_Q_SHARD : ask_ring_work(c, k, q) ? FS_Q_RING_WORK : FS_Q_COUNT;
    case FS_EV_WRITE: return ask_page(c, k, q) ? FS_Q_PAGE : FS_Q_COUNT;
    default: return FS_Q_COUNT;
    }
}

/* Where a question of this kind comes among those of one step: a row's in the order a student
 * computes them (a soft-capped score, the new maximum, then α, β, and ℓ, each question giving
 * what the next needs and none giving away an earlier one's answer); every other kind after them. */
static int kind_rank(fs_qkind k)
{
    switch (k) {
    case FS_Q_SOFTCAP: return -1;   /* the capped score first: the row's other prompts show it */
    case FS_Q_M_NEW: return 0;
    case FS_Q_ALPHA: case FS_Q_MERGE: return 1;   /* (a merge's factor before its ℓ) */
    case FS_Q_BETA: return 2;
    case FS_Q_L_NEW: return 3;
    default: return 4;
    }
}

static int by_step(const void *a, const void *b)
{
    const fs_question *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return kind_rank(x->kind) - kind_rank(y->kind);
}

/* How many of the chosen ask at step k, and is (k, kind) among them? */
static int at_step(const fs_question *got, int n, int64_t k, fs_qkind kind, bool *same)
{
    int c = 0;
    *same = false;
    for (int i = 0; i < n; i++)
        if (got[i].step == k) {
            c++;
            *same |= got[i].kind == kind;
        }
    return c;
}

/* Every (step, kind) that can be asked, in step order; the caller frees *out. */
typedef struct {
    int64_t step;
    fs_qkind kind;
} moment;

static int moments(const ctx *c, moment **out)
{
    static const fs_qkind row_kinds[] = {FS_Q_M_NEW, FS_Q_ALPHA, FS_Q_L_NEW, FS_Q_BETA};
    int cap = 1024, n = 0;
    moment *m = malloc(sizeof *m * (size_t)cap);
    fs_question tmp;
    for (int64_t k = 0; m && k < c->t->n; k++) {
        fs_qkind one[8];
        int none = 0;
        const fs_event_kind ek = c->t->ev[k].kind;
        if (ek == FS_EV_ROW || ek == FS_EV_ELEM) {
            const fs_event *x = truth_at(c, k);
            for (size_t i = 0; x && i < sizeof row_kinds / sizeof *row_kinds; i++) {
                if (row_kinds[i] == FS_Q_ALPHA && !(x->m_old > -INFINITY && x->m_new > x->m_old)) continue;
                if (row_kinds[i] == FS_Q_BETA && !(x->beta < 1)) continue;
                if (ask_kind(c, k, row_kinds[i], &tmp)) one[none++] = row_kinds[i];
            }
            /* what the run adds to a row: dropout's ℓ_blk, FP8's rounded inputs, a pitfall's wrong number,
             * a soft-capped score */
            static const fs_qkind extra[] = {FS_Q_DROP, FS_Q_QUANT, FS_Q_P8, FS_Q_MISTAKE, FS_Q_SOFTCAP};
            for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
                if (ask_kind(c, k, extra[i], &tmp)) one[none++] = extra[i];
        } else if (ek == FS_EV_HOLD) {
            if (ask_kind(c, k, FS_Q_SHARD, &tmp)) one[none++] = FS_Q_SHARD;
            if (ask_kind(c, k, FS_Q_RING_WORK, &tmp)) one[none++] = FS_Q_RING_WORK;
        } else if (ek == FS_EV_PARTIAL) {
            if (ask_kind(c, k, FS_Q_M_NEW, &tmp)) one[none++] = FS_Q_M_NEW;
            if (ask_kind(c, k, FS_Q_L_NEW, &tmp)) one[none++] = FS_Q_L_NEW;
        } else if (ek == FS_EV_MERGE || ek == FS_EV_RMERGE) {
            if (ask_kind(c, k, FS_Q_MERGE, &tmp)) one[none++] = FS_Q_MERGE;
            if (ask_kind(c, k, FS_Q_L_NEW, &tmp)) one[none++] = FS_Q_L_NEW;
        } else {
            fs_qkind kd = best_kind(c, k, NULL, &tmp);
            if (kd != FS_Q_COUNT && !(kd == FS_Q_TILE_CLASS && tmp.right == 0)) one[none++] = kd;
            if (ek == FS_EV_TILE && ask_kind(c, k, FS_Q_KV_HEAD, &tmp)) one[none++] = FS_Q_KV_HEAD;   /* GQA's head */
            if (ek == FS_EV_TILE && ask_kind(c, k, FS_Q_LIVE, &tmp)) one[none++] = FS_Q_LIVE;         /* the loop order */
        }
        for (int i = 0; i < none; i++) {
            if (n == cap) {
                moment *g = realloc(m, sizeof *m * (size_t)(cap *= 2));
                if (!g) { free(m); m = NULL; break; }
                m = g;
            }
            if (m) m[n++] = (moment){k, one[i]};
        }
    }
    *out = m;
    return m ? n : 0;
}

#define PER_STEP 2   /* questions asked before one step at most */

static bool take(const ctx *c, fs_question *got, int *n, moment mo)
{
    bool same;
    if (*n >= MAX_PER_TRACE || at_step(got, *n, mo.step, mo.kind, &same) >= PER_STEP || same) return false;
    fs_question q;
    if (!ask_kind(c, mo.step, mo.kind, &q)) return false;
    got[(*n)++] = q;
    return true;
}

/* "a − -0.1323" written "a − (-0.1323)": a negative number after a minus sign is put in
 * parentheses, as a student would write the substitution (α's exp(m_old − m_new) with a negative
 * m_new, and every formula of that form). s holds at most n bytes; a text too long to grow is
 * left as it is. */
static void paren_negatives(char *s, size_t n)
{
    static const char pat[] = "\xe2\x88\x92 -";   /* "− -" */
    for (char *p = strstr(s, pat); p; p = strstr(p, pat)) {
        char *num = p + sizeof pat - 2, *end = num + 1;   /* num at the '-' */
        if (!strncmp(end, "inf", 3)) end += 3;
        else
            while (isdigit((unsigned char)*end) || *end == '.' || ((*end == 'e' || *end == 'E') && isdigit((unsigned char)end[1])))
                end++;
        const size_t len = strlen(s);
        if (end == num + 1 || len + 3 > n) return;
        memmove(end + 2, end, len - (size_t)(end - s) + 1);   /* room for the two parentheses */
        end[1] = ')';
        memmove(num + 1, num, (size_t)(end - num));
        *num = '(';
        p = end + 2;
    }
}

static void tidy(fs_question *q)
{
    paren_negatives(q->prompt, sizeof q->prompt);
    paren_negatives(q->why, sizeof q->why);
}

static int trace_questions(const ctx *c, fs_question *q, int max)
{
    fs_question got[MAX_PER_TRACE], tmp;
    int n = 0;
    const fs_trace *t = c->t;
    if (!t || t->n == 0) return 0;
    /* 1. the whole run's skips, asked at its first pair */
    for (int64_t k = 0; k < t->n; k++)
        if (t->ev[k].kind == FS_EV_TILE || t->ev[k].kind == FS_EV_SKIP) {
            if (ask_skips(c, k, &tmp)) got[n++] = tmp;
            break;
        }
    moment *mo;
    int nm = moments(c, &mo);
    /* 2. the first moment of each kind, in step order; a rescale (α) first of all */
    bool seen[FS_Q_COUNT] = {false};
    for (int i = 0; i < nm; i++)
        if (mo[i].kind == FS_Q_ALPHA && take(c, got, &n, mo[i])) { seen[FS_Q_ALPHA] = true; break; }
    /* then what this run adds to the algorithm (a pitfall's wrong number, dropout, FP8, the ring's
     * load, a soft-cap, GQA's shared heads), each once: a lesson on dropout asks about dropout before
     * it asks m again */
    static const fs_qkind own[] = {FS_Q_MISTAKE, FS_Q_DROP, FS_Q_P8, FS_Q_QUANT, FS_Q_RING_WORK, FS_Q_SOFTCAP, FS_Q_KV_HEAD};
    for (size_t o = 0; o < sizeof own / sizeof *own; o++)
        for (int i = 0; i < nm && !seen[own[o]]; i++)
            if (mo[i].kind == own[o] && take(c, got, &n, mo[i])) seen[own[o]] = true;
    /* the ring's shard question depends on the device and the step only, so every ring lesson of one
     * shape would open with the same one: a lesson takes the hold its title picks */
    if (c->l && c->l->title) {
        int holds = 0;
        for (int i = 0; i < nm; i++) holds += mo[i].kind == FS_Q_SHARD;
        uint64_t h = 1469598103934665603ull;   /* FNV-1a of the title */
        for (const unsigned char *p = (const unsigned char *)c->l->title; *p; p++) h = (h ^ *p) * 1099511628211ull;
        for (int i = 0, k = holds ? (int)(h % (uint64_t)holds) : 0; i < nm && holds && !seen[FS_Q_SHARD]; i++)
            if (mo[i].kind == FS_Q_SHARD && k-- == 0 && take(c, got, &n, mo[i])) seen[FS_Q_SHARD] = true;
    }
    for (int i = 0; i < nm; i++)
        if (!seen[mo[i].kind] && take(c, got, &n, mo[i])) seen[mo[i].kind] = true;
    /* 3. more moments, spread evenly over the lesson, until a handful */
    const int want = MIN_PER_TRACE + 2;
    for (int round = 0; round < 2 && n < want && nm > 0; round++) {
        int need = want - n;
        for (int i = 0; i < need && n < want; i++) {
            int j = (int)((int64_t)nm * (2 * i + 1) / (2 * need));
            for (int d = 0; d < nm && !take(c, got, &n, mo[(j + d) % nm]); d++)
                if (n >= want) break;
        }
    }
    free(mo);
    /* in step order, those of one step in a row's order of work (kind_rank), else in the order
     * they were chosen: a stable sort (an insertion sort: qsort is not stable, and C libraries
     * order equal steps differently, so that the page (Emscripten's libc) would ask the same quiz
     * in another order than the terminal) */
    for (int i = 1; i < n; i++) {
        tmp = got[i];
        int j = i - 1;
        for (; j >= 0 && by_step(&got[j], &tmp) > 0; j--) got[j + 1] = got[j];
        got[j + 1] = tmp;
    }
    for (int i = 0; i < n; i++) tidy(&got[i]);
    for (int i = 0; i < n && i < max; i++) q[i] = got[i];
    return n;
}

/* l may be NULL (a trace of one's own); run is l's run or the caller's. */
static void ctx_init(ctx *c, const fs_lesson *l, const fs_run *run, const fs_trace *t, int digits)
{
    memset(c, 0, sizeof *c);
    c->l = l;
    c->run = run;
    c->t = t;
    c->truth = t;
    c->digits = digits < 1 ? 4 : digits > 12 ? 12 : digits;
    c->EXP = run && run->tiling.exp2 && run->algo == FS_ALGO_TILED ? "exp2" : "exp";
    if (l && l->has_cmp && t == &l->tr && run && !run->lowp) c->truth = &l->cmp_tr;
}

int fs_run_questions(const fs_run *run, const fs_trace *t, int digits, fs_question *q, int max)
{
    ctx c;
    ctx_init(&c, NULL, run, t, digits);
    return trace_questions(&c, q, max);
}

bool fs_run_question_at(const fs_run *run, const fs_trace *t, int64_t step, fs_qkind kind, int digits, fs_question *q)
{
    ctx c;
    ctx_init(&c, NULL, run, t, digits);
    if (!t || step < 0 || step >= t->n || !ask_kind(&c, step, kind, q)) return false;
    tidy(q);
    return true;
}

/* An expression a student can work out by hand: numbers, + − * / ^, parentheses and the
 * common functions; not the memory model's named helpers. */
static bool by_hand(const char *x)
{
    static const char *const words[] = {"exp", "exp2", "log", "log2", "sqrt", "min", "max", "abs", "pi", "e", "inf", "e4m3"};
    for (const char *start = x; *x;) {
        if ((*x == 'e' || *x == 'E') && x > start && (isdigit((unsigned char)x[-1]) || x[-1] == '.') &&
            (isdigit((unsigned char)x[1]) || ((x[1] == '-' || x[1] == '+') && isdigit((unsigned char)x[2])))) {
            x += 1 + !isdigit((unsigned char)x[1]);   /* a power of ten (312e12, 2.0e-3): part of its number */
        } else if (isalpha((unsigned char)*x) || *x == '_') {
            const char *w = x;
            while (isalnum((unsigned char)*x) || *x == '_') x++;
            bool ok = false;
            for (size_t i = 0; i < sizeof words / sizeof *words; i++)
                ok |= strlen(words[i]) == (size_t)(x - w) && !strncmp(words[i], w, (size_t)(x - w));
            if (!ok) return false;
        } else if (!strchr("0123456789.+-*/^(), ", *x)) {
            return false;
        } else {
            x++;
        }
    }
    return true;
}

const char *fs_claim_sentence(const char *claim, char *buf, size_t n)
{
    snprintf(buf, n, "%s", claim);
    if (!symbol_start(buf)) buf[0] = (char)toupper((unsigned char)buf[0]);
    return buf;
}

/* The number token that starts at s: digits, with '.' or ',' between digits ("8,388,608",
 * "0.0498"); its length, or 0 when s does not start one. A token glued after a word, a decimal
 * point or a power ("x2", ".5", "2^-14") or written with an exponent ("1e5") is not one. */
static size_t number_at(const char *all, const char *s)
{
    if (!isdigit((unsigned char)*s)) return 0;
    if (s > all && (isalnum((unsigned char)s[-1]) || strchr("_.^", s[-1]))) return 0;
    size_t n = 0;
    while (isdigit((unsigned char)s[n]) || ((s[n] == '.' || s[n] == ',') && n > 0 && isdigit((unsigned char)s[n + 1]))) n++;
    if ((s[n] == 'e' || s[n] == 'E') && (isdigit((unsigned char)s[n + 1]) || s[n + 1] == '-' || s[n + 1] == '+'))
        return 0;   /* 1e5: not a plain number (a unit or a symbol after it, 256L or 16M, is) */
    return n;
}

/* Is the number token a (n characters) the printed number p, commas aside? */
static bool same_number(const char *a, size_t n, const char *p)
{
    size_t i = 0;
    for (size_t k = 0; k < n; k++) {
        if (a[k] == ',') continue;
        while (p[i] == ',') i++;
        if (p[i] != a[k]) return false;
        i++;
    }
    while (p[i] == ',') i++;
    return p[i] == 0;
}

/* Does text hold the printed number p as a token of its own? */
static bool holds_number(const char *text, const char *p)
{
    for (const char *s = text; *s; s++) {
        size_t n = number_at(text, s);
        if (n && same_number(s, n, p)) return true;
        if (n) s += n - 1;
    }
    return false;
}

/* A claim that states its own answer ("1024 threads = 32 SIMD groups of 32", asked as 32 * 32)
 * would hand it to the student: each token of the printed number in buf (capacity cap) becomes
 * "___" (a negative one's magnitude: "nearer -___"), and so does a small whole number's name
 * ("four times the numbers" for 4), unless the expression shows the same number (then it is one
 * of the inputs, and hiding it in the claim hides nothing). A non-numeric printed value is left
 * alone. */
static void hide_answer(char *buf, size_t cap, const char *printed, const char *expr)
{
    static const char *const names[] = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                                        "twelve"};   /* 2 to 12: "one" is too common a word to hide */
    const char *p = printed;
    while (*p == '~' || *p == '+' || *p == '-') p++;
    if (!isdigit((unsigned char)*p) || holds_number(expr, p)) return;
    char *end;
    const long whole = strtol(p, &end, 10);
    if (!*end && whole >= 2 && whole <= 12) {   /* its name, as a word of its own */
        const char *name = names[whole - 2];
        const size_t k = strlen(name);
        for (char *w = buf; *w; w++) {
            size_t i = 0;
            while (i < k && tolower((unsigned char)w[i]) == name[i]) i++;
            if (i == k && (w == buf || !isalpha((unsigned char)w[-1])) && !isalpha((unsigned char)w[k])) {
                memmove(w + 3, w + k, strlen(w + k) + 1);   /* k >= 3: the text does not grow */
                memcpy(w, "___", 3);
                w += 2;
            }
        }
    }
    char out[320];
    size_t o = 0;
    for (const char *s = buf; *s && o + 4 < sizeof out;) {
        size_t n = number_at(buf, s);
        if (n && same_number(s, n, p)) {
            memcpy(out + o, "___", 3);
            o += 3;
            s += n;
        } else if (n) {
            size_t k = n < sizeof out - 4 - o ? n : sizeof out - 4 - o;
            memcpy(out + o, s, k);
            o += k;
            s += n;
        } else {
            out[o++] = *s++;
        }
    }
    out[o] = 0;
    snprintf(buf, cap, "%s", out);
}

/* Why e4m3(x) is what it is, for a plain number x (e4m3(-1.7)): its two neighbours on the e4m3
 * grid and which one it goes to; appended to why (capacity n). e4m3 keeps 3 fraction bits: in
 * [2^e, 2^(e+1)) its values are 2^(e−3) apart; below 2^-6 (subnormal) 2^-9 apart. Nothing for an
 * expression, a number past 448 (saturated) or one on the grid already. */
static void e4m3_reason(char *why, size_t n, const char *expr)
{
    char *end;
    if (strncmp(expr, "e4m3(", 5)) return;
    const double x = strtod(expr + 5, &end);
    if (end == expr + 5 || strcmp(end, ")")) return;
    fs_question_e4m3_why(why, n, x);
}

/* The question of check i, if a student can answer it: arithmetic by hand, an e4m3 rounding, or
 * which of two measured errors is the larger (a ratio of RMSEs). */
static bool ask_claim(const fs_lesson *l, int i, int digits, fs_question *x)
{
    const fs_check *ck = &l->checks[i];
    char cl[320];   /* a claim is a phrase: longer ones are cut here */
    if (strcmp(ck->op, "=") || !isfinite(ck->got.exact)) return false;
    const char *slash = strstr(ck->target, " / ");
    if (!strncmp(ck->target, "rmse ", 5) && slash && slash > ck->target + 5 && slash[3] && ck->got.exact != 1) {
        /* "rmse A / B": which recipe's error is larger */
        *x = blank(FS_Q_CLAIM, -1, digits);
        x->check = i;
        x->numeric = false;
        x->n_options = 2;
        x->options[0] = "the first";
        x->options[1] = "the second";
        x->right = ck->got.exact > 1 ? 0 : 1;
        snprintf(x->alias[0], sizeof x->alias[0], "%.*s", (int)(slash - ck->target - 5), ck->target + 5);
        snprintf(x->alias[1], sizeof x->alias[1], "%s", slash + 3);
        if (!strcasecmp(x->alias[0], x->alias[1])) x->alias[0][0] = x->alias[1][0] = 0;
        snprintf(x->prompt, sizeof x->prompt, "%s. On the same problem, which error against float64 is larger: the first, "
                 "%.*s, or the second, %s?", fs_claim_sentence(ck->claim, cl, sizeof cl), (int)(slash - ck->target - 5), ck->target + 5, slash + 3);
        /* why, by what the two recipes differ in: the format (its first word), else the
         * Hadamard, else the scales' blocks */
        const char *ra = ck->target + 5, *rb = slash + 3;
        const size_t fa = strcspn(ra, " /"), fb = strcspn(rb, " ");
        const bool had_a = strstr(ra, "hadamard") && strstr(ra, "hadamard") < slash, had_b = strstr(rb, "hadamard") != NULL;
        const bool blk_a = strstr(ra, "block") && strstr(ra, "block") < slash, blk_b = strstr(rb, "block") != NULL;
        const char *because = fa != fb || strncmp(ra, rb, fa) ? " Fewer fraction bits round each value more coarsely."
                            : had_a != had_b ? " Both use the same format and differ by the Hadamard, which spreads each "
                                               "outlier, and its rounding error, over all the coordinates: measured, that "
                                               "lowers the error where the scores read the outlier's column (the inputs "
                                               "FlashAttention-3 measured) and raises it where only one side has it (lesson "
                                               "004_12)."
                            : blk_a != blk_b ? " Both use the same format; a scale per block fits that block's own largest "
                                               "entry, so small entries keep more bits."
                                             : "";
        snprintf(x->why, sizeof x->why, "Their ratio is %s: %s.%s", ck->exact_text,
                 ck->got.exact > 1 ? "the first is larger" : "the second is larger", because);
        return true;
    }
    if (strncmp(ck->target, "expr ", 5) || !by_hand(ck->target + 5)) return false;
    const bool e4 = strstr(ck->target, "e4m3(") != NULL;
    *x = blank(e4 ? FS_Q_E4M3 : FS_Q_CLAIM, -1, digits);
    x->check = i;
    const char *unit = *ck->unit ? ck->unit : "";
    const char *reading = !strcmp(ck->got.reading, "decimal") ? " (decimal units: 1 KB = 1000 B)"
                          : !strcmp(ck->got.reading, "binary") ? " (binary units: 1 KB = 1024 B)" : "";
    fs_claim_sentence(ck->claim, cl, sizeof cl);
    /* an e4m3 claim's label works its rounding out after a colon ("q[1] = -1.7 in e4m3: between
     * -1.625 and -1.75, nearer -1.75"): the question keeps what is asked */
    char *colon = e4 ? strstr(cl, ": ") : NULL;
    if (colon) *colon = 0;
    /* an erratum's printed figure is not the answer: a blank in its place would ask for it, so it
     * stays, said to be the document's */
    const bool erratum = ck->got.verdict == FS_VERDICT_ERRATUM;
    if (!erratum) hide_answer(cl, sizeof cl, ck->printed, ck->target + 5);
    /* a ratio ("x", "times") is asked as how many times, not "in x" */
    const bool times = !strcmp(unit, "x") || !strcmp(unit, "times");
    /* The expression counts the unit's base (bytes, seconds): say so, and how many make the unit,
     * so that a student who multiplies it out knows what to divide by (KB, MB, … whose reading
     * the verdict gives say theirs in `reading`). */
    fs_unit u;
    char base[128] = "", raw[64] = "";
    double answer = ck->got.exact;
    const char *asked = unit;   /* the unit the answer is in: KB read as 1024 B is asked in KiB */
    if (fs_unit_parse(unit, &u) && fs_unit_factor(u, true) != 1.0 && u != FS_UNIT_PERCENT) {
        /* KB, MB, GB: binary (the engine's reading of them) unless the verdict read them as decimal;
         * K, M, G of a count (FLOPs, elements): decimal unless it read them as binary, as the claim's
         * step shows them; the factor says which, so the reading's own words are not needed beside it */
        const bool bytes = u >= FS_UNIT_B && u <= FS_UNIT_TIB, count = u >= FS_UNIT_K && u <= FS_UNIT_G;
        const bool bin = count ? !strcmp(ck->got.reading, "binary") : strcmp(ck->got.reading, "decimal") != 0;
        const double f = fs_unit_factor(u, bin);
        reading = "";
        /* in the reading the factor names (an erratum's exact value is in the reading nearer the
         * printed one, which may be the other) */
        answer = bin ? ck->got.exact_bin : ck->got.exact_dec;
        if (count) {   /* no base unit to name */
            snprintf(base, sizeof base, " (1 %s = %.10g here)", unit, f);
        } else if (bytes && bin && u >= FS_UNIT_KB && u <= FS_UNIT_TB) {
            /* the course names binary byte units KiB, MiB, …: the document's KB is asked in KiB */
            asked = fs_unit_str((fs_unit)(u - FS_UNIT_KB + FS_UNIT_KIB));
            snprintf(base, sizeof base, " (the document writes %s; the expression counts bytes: 1 %s = %.0f B)", unit, asked, f);
        } else {
            snprintf(base, sizeof base, " (the expression counts %s: 1 %s = %.10g %s)", bytes ? "bytes" : "seconds", unit, f,
                     bytes ? "B" : "s");
        }
        snprintf(raw, sizeof raw, "%.15g%s = ", answer * f, count ? "" : bytes ? " B" : " s");
    }
    fs_text_fit(x->prompt, sizeof x->prompt,   /* (a lesson's claim can be longer than a prompt holds) */
        snprintf(x->prompt, sizeof x->prompt, "%s%s: %s%s%s%s%s?%s", cl,
                 erratum ? ", as the document prints it. Work out what it should be" : ". Work it out", ck->target + 5,
                 times ? " (how many times)" : *unit ? ", in " : "", times ? "" : asked, reading, base,
                 e4 ? " (e4m3 keeps 3 fraction bits: 8 values between two powers of two, ties to even, "
                      "no value above 448, no nonzero magnitude below 2^-9)" : ""));
    x->answer = answer;
    char exact[32];
    fs_question_answer(x, exact, sizeof exact);   /* as the answer line prints it */
    if (*ck->from)   /* another document's figure, counted in the lesson that teaches it */
        snprintf(x->why, sizeof x->why, "%s = %s%s%s%s; the figure lesson %s counts is %s%s%s.", ck->target + 5, raw,
                 exact, *unit ? " " : "", asked, ck->from, ck->printed, *unit ? " " : "", unit);
    else if (!fs_lesson_has_source(l) || ck->own)   /* a number of the lesson's own, not the document's */
        snprintf(x->why, sizeof x->why, "%s = %s%s%s%s; the lesson's own figure is %s%s%s.", ck->target + 5, raw, exact,
                 *unit ? " " : "", asked, ck->printed, *unit ? " " : "", unit);
    else
        snprintf(x->why, sizeof x->why, "%s = %s%s%s%s; the document prints %s%s%s (%s).", ck->target + 5, raw, exact,
                 *unit ? " " : "", asked, ck->printed, *unit ? " " : "", unit,
                 ck->got.verdict == FS_VERDICT_HOLDS ? "it holds"
                 : ck->got.verdict == FS_VERDICT_UNITS ? (!strcmp(ck->got.reading, "decimal") ? "it holds in decimal units"
                                                                                             : "it holds in binary units")
                 : ck->got.verdict == FS_VERDICT_ERRATUM ? "an erratum"
                 : ck->got.verdict == FS_VERDICT_ROUNDED ? "from its own rounded intermediates"
                 : "as an approximation");
    if (e4) e4m3_reason(x->why, sizeof x->why, ck->target + 5);
    if (e4) {   /* a plain number rounded ("e4m3(-1.7)"): that number, typed, is not the answer */
        char *end;
        const double v = strtod(ck->target + 10, &end);
        if (end != ck->target + 10 && !strcmp(end, ")") && v != answer) {
            x->has_before = true;
            x->before = v;
        }
    }
    return true;
}

/* A claim's arithmetic with its numbers left out ("min(#, # * #)"), into buf (n bytes). */
static void expr_form(const char *x, char *buf, size_t n)
{
    size_t o = 0;
    for (const char *s = x; *s && o + 2 < n;) {
        if (isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]))) {
            while (isdigit((unsigned char)*s) || *s == '.' ||
                   ((*s == 'e' || *s == 'E') && (isdigit((unsigned char)s[1]) || s[1] == '-' || s[1] == '+')))
                s += (*s == 'e' || *s == 'E') && !isdigit((unsigned char)s[1]) ? 2 : 1;
            buf[o++] = '#';
        } else if (*s != ' ') {
            buf[o++] = *s++;
        } else {
            s++;
        }
    }
    buf[o] = 0;
}

/* Whether one of the n questions in got asks a claim of the same form as c (both claims of l). */
static bool form_asked(const fs_lesson *l, const fs_question *got, int n, const fs_question *c)
{
    if (c->check < 0) return false;
    char fc[256], fg[256];
    expr_form(l->checks[c->check].target + 5, fc, sizeof fc);
    for (int i = 0; i < n; i++) {
        if (got[i].check < 0 || got[i].kind != c->kind) continue;
        expr_form(l->checks[got[i].check].target + 5, fg, sizeof fg);
        if (!strcmp(fc, fg)) return true;
    }
    return false;
}

int fs_lesson_questions(const fs_lesson *l, int digits, fs_question *q, int max)
{
    fs_question got[MAX_PER_TRACE > MAX_PER_CLAIMS ? MAX_PER_TRACE : MAX_PER_CLAIMS];
    int n = 0;
    const bool runs = l->has_run && l->tr.n > 0;
    const bool subject = l->quiz_named && l->n_checks > 0;   /* its claims are its subject (not in a variation: none) */
    if (runs) {
        ctx c;
        ctx_init(&c, l, &l->run, &l->tr, digits);
        n = trace_questions(&c, got, MAX_PER_TRACE);
        if (n >= MIN_PER_TRACE && !subject) {
            for (int i = 0; i < n && i < max; i++) q[i] = got[i];
            return n;
        }
        if (subject && n > MIN_PER_TRACE) n = MIN_PER_TRACE;   /* the run's first few, then the claims */
    }
    /* claims: a claims-only lesson's (up to eight), enough to make three, or, where a lesson that
     * runs names its claims' kind (quiz:), enough to fill eight; where the lesson has more claims
     * a student can work out than that, they are taken evenly from its whole list (the middle of
     * each of `slots` equal stretches), not its first few, so that the questions cover its
     * sections rather than repeat its first table's arithmetic */
    const int want = !runs || subject ? MAX_PER_CLAIMS : MIN_PER_TRACE;
    const int slots = want - n;
    fs_question *all = slots > 0 && l->n_checks > 0 ? malloc((size_t)l->n_checks * sizeof *all) : NULL;
    int n_ok = 0;
    for (int i = 0; all && i < l->n_checks; i++)
        if (ask_claim(l, i, digits, &all[n_ok])) tidy(&all[n_ok++]);
    for (int k = 0; k < slots && k < n_ok; k++) {
        if (n_ok <= slots) { got[n++] = all[k]; continue; }
        /* the middle of stretch k, or the claim nearest to it whose arithmetic has a form not
         * asked yet (four "min(990, I * 3.35)" in a row teach one thing four times) */
        const int lo = (int)((long)k * n_ok / slots), hi = (int)((long)(k + 1) * n_ok / slots);
        const int mid = (int)(((2 * (long)k + 1) * n_ok) / (2 * slots));
        int pick = mid;
        for (int dist = 0; dist < hi - lo; dist++) {
            const int a = mid - dist, b = mid + dist;
            if (a >= lo && !form_asked(l, got, n, &all[a])) { pick = a; break; }
            if (b < hi && !form_asked(l, got, n, &all[b])) { pick = b; break; }
        }
        got[n++] = all[pick];
    }
    free(all);
    for (int i = 0; i < n && i < max; i++) q[i] = got[i];
    return n;
}

/* ---- judging -------------------------------------------------------------------------------- */

/* Significant digits typed: "0.0960" has 3, "12" has 2, "1.5e3" has 2. */
static int sig_digits(const char *s)
{
    int n = 0;
    bool lead = true;
    for (; *s && *s != 'e' && *s != 'E'; s++) {
        if (!isdigit((unsigned char)*s)) continue;
        if (lead && *s == '0') continue;
        lead = false;
        n++;
    }
    return n;
}

/* A whole number typed with trailing zeros ("300", "-1200"), written with only the digits before
 * its zeros and at least two of them ("3.0e2", "-1.2e3"), into out; false for any other text. Its
 * zeros may only hold places, so a student who meant 300 as two significant digits is told how to
 * type that. */
static bool without_placeholder_zeros(const char *t, char *out, size_t n)
{
    const char *p = t + (*t == '-');
    size_t len = strlen(p), lead = len;
    if (len < 2 || p[0] == '0') return false;
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)p[i])) return false;
    while (lead > 1 && p[lead - 1] == '0') lead--;
    if (lead == len) return false;   /* no trailing zero */
    snprintf(out, n, "%s%c.%.*s%se%d", *t == '-' ? "-" : "", p[0], (int)(lead - 1), p + 1, lead == 1 ? "0" : "",
             (int)len - 1);
    return true;
}

/* The typed text, cleaned: blanks trimmed, a Unicode minus made ASCII, control bytes dropped, at
 * most n − 1 bytes. */
static void clean(const char *typed, char *out, size_t n)
{
    size_t w = 0;
    while (*typed == ' ' || *typed == '\t') typed++;
    for (const unsigned char *p = (const unsigned char *)typed; *p && w + 1 < n; p++) {
        if (p[0] == 0xE2 && p[1] == 0x88 && p[2] == 0x92) { out[w++] = '-'; p += 2; continue; }
        if (*p < 0x20 || *p == 0x7F) continue;
        out[w++] = (char)*p;
    }
    while (w > 0 && (out[w - 1] == ' ' || out[w - 1] == '\t' || out[w - 1] == '\n' || out[w - 1] == '\r')) w--;
    /* an answer ended as a sentence ("NaN.", "partial."): the period is not part of it */
    if (w > 1 && out[w - 1] == '.' && !isdigit((unsigned char)out[w - 2])) w--;
    out[w] = 0;
}

/* A decimal comma (0,7408) read as the point it means: one comma, no point, and either a whole
 * part of 0 or not three digits after it (1,000 stays a thousand, as the judge's thousands
 * separators read it). */
static void decimal_comma(char *t)
{
    char *comma = strchr(t, ',');
    if (!comma || strchr(comma + 1, ',') || strchr(t, '.')) return;
    size_t after = strspn(comma + 1, "0123456789");
    const char *whole = t + (*t == '-' || *t == '+');
    if ((comma - whole == 1 && *whole == '0') || after != 3) *comma = '.';
}

/* The option a typed answer names (by its number, or the start of its words), -1 for none, -2
 * for more than one. */
static int picked(const fs_question *q, const char *t)
{
    int pick = -1;
    for (int i = 0; i < q->n_options; i++) {
        size_t len = strlen(t);
        if (len && !strncasecmp(t, q->options[i], len) && len <= strlen(q->options[i])) pick = pick < 0 ? i : -2;
    }
    /* an option's other name, typed whole: a recipe for "the first" or "the second", alone or as
     * the players show it beside the option ("the first (bf16)") */
    char shown_as[112];
    for (int i = 0; pick == -1 && i < q->n_options; i++)
        if (q->alias[i][0] && (!strcasecmp(t, q->alias[i]) || !strcasecmp(t, fs_question_option(q, i, shown_as, sizeof shown_as))))
            pick = i;
    if (t[0] >= '1' && t[0] <= '0' + q->n_options && !t[1]) pick = t[0] - '1';
    /* a choice typed as the players list it, its number and its name ("2 partial") */
    if (pick == -1 && t[0] >= '1' && t[0] <= '0' + q->n_options && t[1] == ' ') {
        const int i = t[0] - '1';
        const char *name = t + 1 + strspn(t + 1, " ");
        if (*name && !strncasecmp(name, q->options[i], strlen(name)) && strlen(name) <= strlen(q->options[i])) pick = i;
    }
    return pick;
}

bool fs_question_readable(const fs_question *q, const char *typed)
{
    char t[64];
    clean(typed ? typed : "", t, sizeof t);
    if (!t[0]) return false;
    if (!q->numeric) return picked(q, t) >= 0;
    if (!strcasecmp(t, "nan")) return true;   /* an answer where the arithmetic has no value */
    decimal_comma(t);
    double x, half;
    return fs_printed_parse(t, &x, &half) && !isnan(x);
}

static const char *where(const fs_question *q, char *buf, size_t n)
{
    if (q->step >= 0) snprintf(buf, n, " (step %lld shows it)", (long long)q->step);
    else buf[0] = 0;
    return buf;
}

const char *fs_question_option(const fs_question *q, int i, char *buf, size_t n)
{
    if (i < 0 || i >= q->n_options) snprintf(buf, n, "%s", "");
    else if (q->alias[i][0]) snprintf(buf, n, "%s (%s)", q->options[i], q->alias[i]);
    else snprintf(buf, n, "%s", q->options[i]);
    return buf;
}

const char *fs_question_answer(const fs_question *q, char *buf, size_t n)
{
    if (!q->numeric) fs_question_option(q, q->right, buf, n);
    else if (isnan(q->answer)) snprintf(buf, n, "NaN");
    else if (q->kind == FS_Q_SKIPS || q->kind == FS_Q_SHARD || q->kind == FS_Q_PAGE) snprintf(buf, n, "%.0f", q->answer);
    else if ((q->kind == FS_Q_CLAIM || q->kind == FS_Q_E4M3) && q->answer == floor(q->answer) && fabs(q->answer) < 1e15)
        snprintf(buf, n, "%.0f", q->answer);   /* a whole number in full, not as 3.4359738e+10 */
    else if (q->kind == FS_Q_CLAIM || q->kind == FS_Q_E4M3) snprintf(buf, n, "%.8g", q->answer);   /* as the exact line */
    else {
        num(buf, n, q->answer, q->digits);
        /* an e4m3 rounding is often a short binary fraction (0.28125): in full where 8 digits hold it
         * exactly and the usual digits would cut it */
        char full[48];
        snprintf(full, sizeof full, "%.8g", q->answer);
        if ((q->kind == FS_Q_P8 || q->kind == FS_Q_QUANT) && strtod(full, NULL) == q->answer && strtod(buf, NULL) != q->answer &&
            !strchr(full, 'e'))
            snprintf(buf, n, "%s", full);
    }
    return buf;
}

bool fs_question_unit_hint(const fs_question *q, const char *typed, char *hint, size_t n)
{
    char t[256];
    clean(typed, t, sizeof t);
    if (!q->numeric || !t[0]) return false;
    char *end;
    strtod(t, &end);
    if (end == t) return false;
    const char *u = end + strspn(end, " \t");
    /* a word or a percent sign after the number, and nothing else a number could be */
    if (!(*u == '%' || isalpha((unsigned char)*u) || (unsigned char)*u >= 0x80) || !strncmp(u, "inf", 3)) return false;
    for (const char *c = u; *c; c++)
        if (isdigit((unsigned char)*c)) return false;   /* "2 or 3": not a unit */
    if (hint)
        snprintf(hint, n, "\"%.60s\": type the number alone, without \"%.20s\" (a question that wants a unit names it).", t, u);
    return true;
}

bool fs_question_about_classes(const fs_question *q)
{
    return q->kind == FS_Q_SKIPS || q->kind == FS_Q_TILE_CLASS || q->kind == FS_Q_RING_WORK;
}

bool fs_question_judge(const fs_question *q, const char *typed, char *feedback, size_t n)
{
    char t[64], right[112], at[48], zeros_hint[224];
    clean(typed ? typed : "", t, sizeof t);
    if (n) feedback[0] = 0;
    if (!q->numeric) {
        int pick = picked(q, t);
        bool ok = pick == q->right;
        char said[112];
        fs_question_option(q, q->right, right, sizeof right);
        if (!t[0]) snprintf(feedback, n, "No answer typed: it is %s. %s%s", right, q->why, where(q, at, sizeof at));
        else if (pick < 0)
            snprintf(feedback, n, "\"%s\" is none of the choices; the answer is %s. %s%s", t, right, q->why, where(q, at, sizeof at));
        else if (ok) snprintf(feedback, n, "Right: %s. %s", right, q->why);
        else
            snprintf(feedback, n, "Not quite: you said %s; it is %s. %s%s", fs_question_option(q, pick, said, sizeof said), right,
                     q->why, where(q, at, sizeof at));
        return ok;
    }
    fs_question_answer(q, right, sizeof right);
    if (!t[0]) {
        snprintf(feedback, n, "No answer typed: it is %s. %s%s", right, q->why, where(q, at, sizeof at));
        return false;
    }
    /* NaN, typed as a word: right only where the mistake's arithmetic has no value */
    if (!strcasecmp(t, "nan") || isnan(q->answer)) {
        const bool ok = !strcasecmp(t, "nan") && isnan(q->answer);
        snprintf(feedback, n, "%s: you typed %s; it is %s. %s%s", ok ? "Right" : "Not quite", t, right, q->why,
                 ok ? "" : where(q, at, sizeof at));
        return ok;
    }
    double x, half;
    decimal_comma(t);
    bool parsed = fs_printed_parse(t, &x, &half);
    if (!parsed || isnan(x)) {
        snprintf(feedback, n, "\"%s\" is not a number (type the number alone, as 0.25 or 2.5e-3); the answer is %s. %s%s", t,
                 right, q->why, where(q, at, sizeof at));
        return false;
    }
    bool ok;
    const char *hint = "";
    if (isinf(q->answer) || isinf(x)) ok = isinf(q->answer) && isinf(x) && (x < 0) == (q->answer < 0);
    else if (q->digits == 0) ok = x == q->answer;   /* a count or an index */
    else if (fabs(x - q->answer) <= 1e-12 * fmax(1, fabs(q->answer))) ok = true;   /* exactly it */
    else if (fabs(q->answer) < 0.5 * pow(10, -q->digits)) ok = fabs(x) < 0.5 * pow(10, -q->digits) || fs_rounds_to(q->answer, t);
    else if (q->kind == FS_Q_E4M3) {
        /* an e4m3 value is one of few, each exact: typed whole, or to three significant digits
         * where it has more ("0.00195" for 2^-9); the number before rounding is not it, however
         * near (-1.7 rounds to -1.75, and reads as its rounding to two digits) */
        char exact[32];
        snprintf(exact, sizeof exact, "%.17g", q->answer);
        const int need = sig_digits(exact) < 3 ? sig_digits(exact) : 3;
        ok = fs_rounds_to(q->answer, t) && sig_digits(t) >= need;
        if (!ok && fs_rounds_to(q->answer, t))
            hint = " An e4m3 value is exact and has few digits: type it whole, or to three significant digits.";
    } else {
        ok = fs_rounds_to(q->answer, t);
        if (ok && sig_digits(t) < 2) {
            ok = false;
            hint = " Give at least two significant digits.";
        }
        /* worked out from the prompt's numbers, which are rounded to q->digits decimals, an answer
         * may end one unit off the exact value's rounding (exp(0.4950 − 0.6718) = 0.8379, the
         * exact 0.83801): typed to at least as fine a digit, one unit of its last one (2 · half,
         * fs_printed_parse's half a unit) is right */
        const double unit = 2 * half;
        const bool fine = unit > 0 && unit <= 1.000001 * pow(10, -q->digits);   /* typed to the question's digits */
        /* one unit either side of the answer as printed to that digit (4.0867 for 4.08665: 4.0866 and
         * 4.0868 alike), not of the exact value, which would take one side's neighbour only */
        const double printed = fine ? round(q->answer / unit) * unit : q->answer;
        if (!ok && fine && fabs(x - printed) <= 1.000001 * unit) {
            ok = true;
            hint = " (One unit off in the last digit: within what the rounded numbers of a question allow.)";
        }
        /* the prompt's rounded numbers worked out (32.6040 / 1.5910 = 20.4928 for the exact
         * 20.4926): right, to its rounding or one unit of its last digit off it */
        if (!ok && q->has_from_prompt && sig_digits(t) >= 2 &&
            (fs_rounds_to(q->from_prompt, t) || (fine && fabs(x - q->from_prompt) <= 1.000001 * unit))) {
            ok = true;
            hint = " (What the prompt's rounded numbers give: right.)";
        }
        if (!ok && q->has_from_inputs && sig_digits(t) >= 2 &&
            (fs_rounds_to(q->from_inputs, t) || (fine && fabs(x - q->from_inputs) <= 1.000001 * unit))) {
            ok = true;
            hint = " (What the prompt's rounded numbers give, worked another way: right.)";
        }
        /* "300" for 295.22: read as three significant digits it is wrong, but its zeros may only
         * hold places; where the digits before them are right, say how to type them */
        char sci[48];
        if (!ok && !*hint && without_placeholder_zeros(t, sci, sizeof sci) && fs_rounds_to(q->answer, sci)) {
            snprintf(zeros_hint, sizeof zeros_hint, " (%s is read with all its digits; if its zeros only hold places, "
                     "type %s, which is right.)", t, sci);
            hint = zeros_hint;
        }
    }
    /* the number a rounding question starts from, typed back as it was printed, is not where the
     * rounding takes it, however near (e4m3(-1.7) is -1.75, and -1.7 reads as its rounding);
     * unless the answer as printed is that number (x / σ_q = 448 exactly: the rounding keeps it) */
    const double shown = strtod(right, NULL);
    if (q->has_before && fabs(shown - q->before) > 1e-12 * fmax(1, fabs(q->before)) &&
        fabs(x - q->before) <= 1e-12 * fmax(1, fabs(q->before))) {
        ok = false;
        hint = " That is the number before rounding: the question asks where e4m3's rounding takes it.";
    }
    /* a comma left after decimal_comma is a thousands separator (1,368 is 1368): say how it was
     * read, where a student may have meant a decimal comma */
    if (!ok && strchr(t, ',') && !*hint) hint = " (A comma before three digits is read as a thousands separator; type the "
                                               "decimal point as a dot: 1.368.)";
    if (ok) snprintf(feedback, n, "Right: you typed %s; it is %s.%s %s", t, right, hint, q->why);
    else snprintf(feedback, n, "Not quite: you typed %s; it is %s.%s %s%s", t, right, hint, q->why, where(q, at, sizeof at));
    return ok;
}

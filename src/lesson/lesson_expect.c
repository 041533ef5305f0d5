/* lesson_expect.c: each expectation's target looked up in the run and judged.
 *
 * A target is a trace field of the events a selector picks ("step 3 l_new", "row qt=0 row=1
 * m_new"), an output or a gradient, a count of events, the reference, or an expression of the
 * memory model; fs_claim_judge (judge.c) compares it with the number the document prints.
 */
#include "lesson_parse.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- targets ---------------------------------------------------------------------------- */

/* A small tokenizer over a target: words separated by blanks; positions kept for errors. */
typedef struct {
    const char *s;
    size_t n, i;
} toks;

static bool next_tok(toks *t, size_t *a, size_t *b)
{
    while (t->i < t->n && (t->s[t->i] == ' ' || t->s[t->i] == '\t')) t->i++;
    if (t->i >= t->n) return false;
    *a = t->i;
    while (t->i < t->n && t->s[t->i] != ' ' && t->s[t->i] != '\t') t->i++;
    *b = t->i;
    return true;
}

static const char *const kind_names[FS_EV_COUNT] = {"elem", "tile",  "skip",  "row",   "partial", "merge", "out",
                                                    "lse",  "delta", "btile", "bskip", "brow",    "bkey",  "grad",
                                                    "lookup", "alloc", "share", "cow", "write", "hold",
                                                    "send", "recv", "rmerge"};

/* Read an event field; false if the event has no such field (or the index is out of range). */
static bool event_field(const fs_trace *tr, const fs_event *e, const char *f, double *v, char *why,
                        size_t nwhy)
{
    struct { const char *name; double val; } scal[] = {
        {"m_old", e->m_old}, {"m_blk", e->m_blk}, {"m_new", e->m_new}, {"l_old", e->l_old},
        {"l_blk", e->l_blk}, {"l_new", e->l_new}, {"ell_old", e->l_old}, {"ell_blk", e->l_blk},
        {"ell_new", e->l_new}, {"alpha", e->alpha}, {"beta", e->beta}, {"correction", e->alpha},
        {"weight", e->beta}, {"x", e->x}, {"visible", e->visible}, {"head", e->head},
        {"kv_head", e->kv_head}, {"qt", e->qt}, {"kt", e->kt}, {"row", e->row}, {"r0", e->r0},
        {"r1", e->r1}, {"c0", e->c0}, {"c1", e->c1}, {"stride", e->stride}, {"a", e->a},
        {"b", e->b}, {"id", e->id}, {"level", e->level}, {"step", e->step},
        {"r_last", e->r1 - 1}, {"c_last", e->c1 - 1},
        /* ring attention (ring.h): −1 outside a ring step; bytes on send and recv */
        {"device", e->device}, {"ring_step", e->ring_step}, {"shard", e->shard}, {"pos", e->pos},
        /* the paged cache (paged.h): −1 outside its events */
        {"seq", e->seq}, {"page", e->page}, {"block", e->block}, {"slot", e->slot},
        {"bytes", (double)e->bytes}, {"from", e->kind == FS_EV_SEND || e->kind == FS_EV_RECV ? e->a : NAN},
        {"to", e->kind == FS_EV_SEND || e->kind == FS_EV_RECV ? e->b : NAN},
        /* dropout: how many visible cells of a tile or btile are dropped */
        {"dropped", e->kind == FS_EV_TILE || e->kind == FS_EV_BTILE ? e->n_drop : NAN},
        /* a low-precision run's scales (lowp.h): NaN on other events */
        {"q_scale", e->lowp ? e->q_scale : NAN}, {"k_scale", e->lowp ? e->k_scale : NAN},
        {"v_scale", e->lowp ? e->v_scale : NAN}, {"p_scale", e->lowp ? e->p_scale : NAN},
        /* the backward's per-row numbers: L on lse and brow events, D on delta and brow events */
        {"L", e->kind == FS_EV_LSE || e->kind == FS_EV_BROW ? e->x : NAN},
        {"D", e->kind == FS_EV_DELTA ? e->x : e->kind == FS_EV_BROW ? e->m_new : NAN},
    };
    for (size_t k = 0; k < sizeof scal / sizeof scal[0]; k++)
        if (!strcmp(f, scal[k].name)) {
            if (!strcmp(f, "x") && (e->kind != FS_EV_ELEM || isnan(e->x))) {
                snprintf(why, nwhy, "field x exists only for elem events of one element");
                return false;
            }
            if (!strcmp(f, "dropped") && isnan(scal[k].val)) {
                snprintf(why, nwhy, "field dropped exists only for tile and btile events");
                return false;
            }
            if (!strcmp(f + (f[0] ? 1 : 0), "_scale") && !e->lowp) {
                snprintf(why, nwhy, "field %s exists only for tile and row events of an fp8 lesson", f);
                return false;
            }
            if ((!strcmp(f, "from") || !strcmp(f, "to")) && isnan(scal[k].val)) {
                snprintf(why, nwhy, "field %s exists only for send and recv events", f);
                return false;
            }
            if ((!strcmp(f, "L") || !strcmp(f, "D")) && isnan(scal[k].val)) {
                snprintf(why, nwhy, "field %s exists only for %s events", f, f[0] == 'L' ? "lse and brow" : "delta and brow");
                return false;
            }
            *v = scal[k].val;
            return true;
        }
    const char *br = strchr(f, '[');
    if (br) {
        size_t nl = (size_t)(br - f);
        char *end;
        long idx = strtol(br + 1, &end, 10);
        if (end == br + 1 || *end != ']' || end[1]) {
            snprintf(why, nwhy, "malformed index in '%s'", f);
            return false;
        }
        int64_t off = -1;
        int32_t len = 0;
        if (nl == 1 && f[0] == 's') { off = e->s_row; len = e->n_s; }
        else if (nl == 1 && f[0] == 'p') { off = e->p_row; len = e->n_s; }
        else if (nl == 5 && !strncmp(f, "o_old", 5)) { off = e->o_old; len = e->n_o; }
        else if (nl == 5 && !strncmp(f, "o_blk", 5)) { off = e->o_blk; len = e->n_o; }
        else if (nl == 5 && !strncmp(f, "o_new", 5)) { off = e->o_new; len = e->n_o; }
        else if (nl == 1 && f[0] == 'o') { off = e->o_new; len = e->n_o; }
        else if (nl == 2 && !strncmp(f, "dp", 2)) { off = e->dp_row; len = e->n_s; }
        else if (nl == 2 && !strncmp(f, "ds", 2)) { off = e->ds_row; len = e->n_s; }
        else if (nl == 5 && !strncmp(f, "g_old", 5)) { off = e->g_old; len = e->n_g; }
        else if (nl == 5 && !strncmp(f, "g_blk", 5)) { off = e->g_blk; len = e->n_g; }
        else if (nl == 5 && !strncmp(f, "g_new", 5)) { off = e->g_new; len = e->n_g; }
        /* fp8 lessons: the exact and the rounded (dequantized) inputs, and P as P · V uses it */
        else if (nl == 2 && !strncmp(f, "qx", 2)) { off = e->x_row; len = e->n_x; }
        else if (nl == 2 && !strncmp(f, "q8", 2)) { off = e->x8_row; len = e->n_x; }
        else if (nl == 2 && !strncmp(f, "p8", 2)) { off = e->p8_row; len = e->n_s; }
        else if (nl == 2 && !strncmp(f, "kx", 2)) { off = e->k_tile; len = (e->c1 - e->c0) * e->n_x; }
        else if (nl == 2 && !strncmp(f, "k8", 2)) { off = e->k8_tile; len = (e->c1 - e->c0) * e->n_x; }
        else if (nl == 2 && !strncmp(f, "vx", 2)) { off = e->v_tile; len = (e->c1 - e->c0) * e->n_xv; }
        else if (nl == 2 && !strncmp(f, "v8", 2)) { off = e->v8_tile; len = (e->c1 - e->c0) * e->n_xv; }
        else {
            snprintf(why, nwhy, "unknown vector field '%.*s' (s, p, o_old, o_blk, o_new, dp, ds, g_old, g_blk, g_new, "
                                "qx, q8, p8, kx, k8, vx, v8)", (int)nl, f);
            return false;
        }
        if (off < 0) {
            snprintf(why, nwhy, "this %s event has no vector '%.*s'", fs_event_kind_str(e->kind), (int)nl, f);
            return false;
        }
        if (idx < 0 || idx >= len) {
            snprintf(why, nwhy, "index %ld out of range: '%.*s' has %d elements", idx, (int)nl, f, len);
            return false;
        }
        *v = fs_trace_at(tr, off)[idx];
        return true;
    }
    snprintf(why, nwhy, "unknown field '%s'", f);
    return false;
}

/* Does event e pass the filter key=value? *known is false for an unknown key. */
static bool filter_ok(const fs_event *e, const char *key, const char *val, bool *known, bool *badval)
{
    *known = true;
    *badval = false;
    if (!strcmp(key, "cls")) {
        for (int c = 0; c <= FS_TILE_SKIPPED; c++)
            if (!strcmp(val, fs_tile_class_str((fs_tile_class)c))) return (int)e->cls == c;
        *badval = true;
        return false;
    }
    if (!strcmp(key, "tensor")) {
        for (int c = FS_GRAD_DQ; c <= FS_GRAD_DV; c++)
            if (!strcmp(val, fs_grad_str(c))) return e->tensor == c;
        *badval = true;
        return false;
    }
    if (!strcmp(key, "reason")) {
        for (int c = FS_SKIP_CAUSAL; c <= FS_SKIP_BITMASK; c++)
            if (!strcmp(val, fs_skip_reason_str((fs_skip_reason)c))) return (int)e->reason == c;
        *badval = true;
        return false;
    }
    char *end;
    long x = strtol(val, &end, 10);
    if (end == val || *end) {
        *badval = true;
        return false;
    }
    int32_t f;
    if (!strcmp(key, "head")) f = e->head;
    else if (!strcmp(key, "kv_head")) f = e->kv_head;
    else if (!strcmp(key, "qt")) f = e->qt;
    else if (!strcmp(key, "kt")) f = e->kt;
    else if (!strcmp(key, "row")) f = e->row;
    else if (!strcmp(key, "level")) f = e->level;
    else if (!strcmp(key, "a")) f = e->a;
    else if (!strcmp(key, "b")) f = e->b;
    else if (!strcmp(key, "id")) f = e->id;
    else if (!strcmp(key, "c0")) f = e->c0;
    else if (!strcmp(key, "visible")) f = e->visible;
    else if (!strcmp(key, "device")) f = e->device;
    else if (!strcmp(key, "ring_step")) f = e->ring_step;
    else if (!strcmp(key, "shard")) f = e->shard;
    else if (!strcmp(key, "pos")) f = e->pos;
    else if (!strcmp(key, "seq")) f = e->seq;
    else if (!strcmp(key, "page")) f = e->page;
    else if (!strcmp(key, "block")) f = e->block;
    else {
        *known = false;
        return false;
    }
    return f == x;
}

/* Select events: KIND [key=value …] [#k]. Returns the step of the k-th match (or -1 with err),
 * or the count when counting. */
static bool select_events(parse_t *P, const fs_trace *tr, const char *s, size_t n, int32_t line,
                          int32_t col, bool count, int64_t *out, size_t *rest)
{
    toks t = {s, n, 0};
    size_t a, b;
    if (!next_tok(&t, &a, &b)) return fs_loc_error_set(P->err, P->name, line, col, "expected an event kind");
    int kind = -1;
    for (int k = 0; k < FS_EV_COUNT; k++)
        if (b - a == strlen(kind_names[k]) && !strncmp(s + a, kind_names[k], b - a)) kind = k;
    if (kind < 0)
        return fs_loc_error_set(P->err, P->name, line, col + (int32_t)a,
                       "unknown event kind '%.*s' (elem tile skip row partial merge out lse delta btile bskip brow bkey grad lookup alloc share cow write hold send recv rmerge)", (int)(b - a), s + a);
    char keys[8][16], vals[8][32];
    int32_t kcol[8];
    int nf = 0;
    long nth = 0;
    size_t after = t.i;
    while (next_tok(&t, &a, &b)) {
        const char *eq = memchr(s + a, '=', b - a);
        if (s[a] == '#') {
            char buf[24];
            snprintf(buf, sizeof buf, "%.*s", (int)(b - a - 1 < 20 ? b - a - 1 : 20), s + a + 1);
            char *end;
            nth = strtol(buf, &end, 10);
            if (end == buf || *end || nth < 0)
                return fs_loc_error_set(P->err, P->name, line, col + (int32_t)a, "'#k' needs a number k ≥ 0");
            after = t.i;
            continue;
        }
        if (!eq) {
            t.i = a;   /* not a filter: the field name */
            break;
        }
        if (nf == 8) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)a, "too many filters");
        size_t kl = (size_t)(eq - (s + a)), vl = b - a - kl - 1;
        if (kl == 0 || kl >= 16 || vl == 0 || vl >= 32)
            return fs_loc_error_set(P->err, P->name, line, col + (int32_t)a, "malformed filter '%.*s'", (int)(b - a), s + a);
        memcpy(keys[nf], s + a, kl);
        keys[nf][kl] = 0;
        memcpy(vals[nf], eq + 1, vl);
        vals[nf][vl] = 0;
        kcol[nf] = col + (int32_t)a;
        nf++;
        after = t.i;
    }
    *rest = after;
    if (!tr) return fs_loc_error_set(P->err, P->name, line, col, "this lesson has no trace (nothing ran)");
    int64_t found = 0;
    for (int64_t e = 0; e < tr->n; e++) {
        const fs_event *ev = &tr->ev[e];
        if ((int)ev->kind != kind) continue;
        bool ok = true;
        for (int f = 0; f < nf && ok; f++) {
            bool known, bad;
            ok = filter_ok(ev, keys[f], vals[f], &known, &bad);
            if (!known)
                return fs_loc_error_set(P->err, P->name, line, kcol[f],
                               "unknown filter '%s' (head kv_head qt kt row level a b id c0 visible device ring_step shard pos seq page block cls "
                               "reason tensor)", keys[f]);
            if (bad) return fs_loc_error_set(P->err, P->name, line, kcol[f], "bad value '%s' for filter '%s'", vals[f], keys[f]);
        }
        if (!ok) continue;
        if (!count && found == nth) {
            *out = e;
            return true;
        }
        found++;
    }
    if (count) {
        *out = found;
        return true;
    }
    return fs_loc_error_set(P->err, P->name, line, col, "no %s event matches '%.*s' (%lld match%s)", kind_names[kind],
                   (int)after, s, (long long)found, found == 1 ? "es" : "");
}

/* Parse "[i][j]…" after a name: up to 3 indices; returns how many. */
static int indices(const char *s, long *idx, const char **end)
{
    int n = 0;
    while (*s == '[' && n < 3) {
        char *e;
        idx[n] = strtol(s + 1, &e, 10);
        if (e == s + 1 || *e != ']') return -1;
        n++;
        s = e + 1;
    }
    *end = s;
    return n;
}

static bool need_ref(parse_t *P, int32_t line, int32_t col)
{
    fs_lesson *l = P->l;
    if (l->has_ref) return true;
    if (!l->has_run || l->run.algo == FS_ALGO_SOFTMAX) {
        if (l->has_run) {   /* softmax: the two-pass softmax is the reference */
            fs_result *r = &l->ref;
            r->n_heads = r->n_rows = 1;
            r->n_cols = l->run.n_z;
            r->O = malloc(sizeof(double) * (size_t)l->run.n_z);
            if (!r->O) return fs_loc_error_set(P->err, P->name, line, col, "out of memory");
            fs_reference_softmax(l->run.z, l->run.n_z, r->O);
            l->has_ref = true;
            return true;
        }
        return fs_loc_error_set(P->err, P->name, line, col, "this lesson runs no attention problem");
    }
    fs_run rr = l->run;
    rr.algo = FS_ALGO_REFERENCE;
    fs_status st = fs_run_exec(&rr, &l->ref, NULL);
    if (st == FS_OK && l->run.tiling.dropout.on) {
        /* With dropout the reference is the dense spec with the whole mask materialized. */
        const fs_attn *a = &l->run.attn;
        uint8_t *Z = malloc((size_t)a->n_q_heads * a->n_q * a->n_kv);
        if (!Z) return fs_loc_error_set(P->err, P->name, line, col, "out of memory");
        fs_dropout_keep_mask(&l->run.tiling.dropout, a, Z);
        st = fs_dropout_reference(a, Z, l->run.tiling.dropout.p, l->ref.O);
        free(Z);
    }
    if (st != FS_OK) return fs_loc_error_set(P->err, P->name, line, col, "reference failed: %s", fs_status_str(st));
    l->has_ref = true;
    return true;
}

/* Element [h][r][c] of a result with 2 or 3 indices. */
static bool result_at(parse_t *P, const fs_result *r, const char *what, const long *idx, int ni,
                      int32_t line, int32_t col, double *v)
{
    long h = 0, row, c;
    if (ni == 2) { row = idx[0]; c = idx[1]; }
    else if (ni == 3) { h = idx[0]; row = idx[1]; c = idx[2]; }
    else return fs_loc_error_set(P->err, P->name, line, col, "%s needs [row][col] or [head][row][col]", what);
    if (h < 0 || h >= r->n_heads || row < 0 || row >= r->n_rows || c < 0 || c >= r->n_cols)
        return fs_loc_error_set(P->err, P->name, line, col, "head %ld, row %ld, column %ld is outside the %s (%d heads × %d rows × %d cols)",
                       h, row, c, !strcmp(what, "out") ? "output" : what, r->n_heads, r->n_rows, r->n_cols);
    *v = r->O[((size_t)h * r->n_rows + (size_t)row) * r->n_cols + (size_t)c];
    return true;
}

/* max |a − b| over every element; NaN if either holds a NaN (a NaN is not a small error). */
static double max_abs_diff(const fs_result *a, const fs_result *b)
{
    double w = 0;
    size_t n = (size_t)a->n_heads * a->n_rows * a->n_cols;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a->O[i] - b->O[i]);
        if (isnan(d)) return NAN;
        if (d > w) w = d;
    }
    return w;
}

/* The RMSE of O against the reference for the recipe written in s[a, e) (blank: the lesson's
 * own run), on the lesson's problem and tiles. Errors point at the offending word. */
static bool rmse_of(parse_t *P, const char *s, size_t a, size_t e, int32_t line, int32_t col, double *v)
{
    fs_lesson *l = P->l;
    const fs_result *r = &l->res;
    size_t no = (size_t)r->n_heads * r->n_rows * r->n_cols;
    a = lp_skip_blank(s, a, e);
    if (a == e) {
        *v = fs_lowp_rmse(r->O, l->ref.O, no);
        return true;
    }
    fs_lowp_recipe rc;
    size_t at;
    char why[200];
    if (!fs_lowp_recipe_parse(s + a, e - a, &rc, &at, why, sizeof why))
        return fs_loc_error_set(P->err, P->name, line, col + (int32_t)(a + at), "rmse: %s", why);
    const fs_attn *pa = &l->run.attn;
    if (rc.hadamard && (pa->d & (pa->d - 1)))
        return fs_loc_error_set(P->err, P->name, line, col + (int32_t)a, "rmse: hadamard needs d a power of two, not %d", pa->d);
    double *O = malloc(sizeof(double) * (no ? no : 1));
    if (!O) return fs_loc_error_set(P->err, P->name, line, col, "out of memory");
    fs_status st = fs_lowp_tiled(pa, l->run.tiling.Bq, l->run.tiling.Bk, &rc, O, NULL, NULL, NULL);
    if (st == FS_OK) *v = fs_lowp_rmse(O, l->ref.O, no);
    free(O);
    if (st != FS_OK) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)a, "rmse: the recipe cannot run: %s", fs_status_str(st));
    return true;
}

/* The value a target names, in base units. */
static bool eval_target(parse_t *P, expect_rec *x, double *v)
{
    fs_lesson *l = P->l;
    const char *s = x->c.target;
    size_t n = strlen(s);
    int32_t line = x->c.line, col = x->tcol;
    char why[160];
    toks t = {s, n, 0};
    size_t a, b;
    next_tok(&t, &a, &b);
    char first[32];
    snprintf(first, sizeof first, "%.*s", (int)(b - a < 31 ? b - a : 31), s + a);

    if (!strcmp(first, "expr")) {
        size_t e = lp_skip_blank(s, b, n);
        if (e == n) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)b, "expr: the expression is missing");
        return fs_expr_eval(s + e, n - e, P->name, line, col + (int32_t)e, v, P->err);
    }
    if (!strcmp(first, "step")) {
        size_t c, d;
        if (!next_tok(&t, &c, &d)) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)b, "step: which step?");
        char num[24];
        snprintf(num, sizeof num, "%.*s", (int)(d - c < 20 ? d - c : 20), s + c);
        char *end;
        long k = strtol(num, &end, 10);
        if (end == num || *end) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)c, "step: expected a number");
        if (!l->has_run) return fs_loc_error_set(P->err, P->name, line, col, "this lesson has no trace (nothing ran)");
        if (k < 0 || k >= l->tr.n)
            return fs_loc_error_set(P->err, P->name, line, col + (int32_t)c, "step %ld does not exist (the trace has steps 0 to %lld)",
                           k, (long long)l->tr.n - 1);
        size_t f, g;
        if (!next_tok(&t, &f, &g)) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)d, "step %ld: which field?", k);
        char fld[32];
        snprintf(fld, sizeof fld, "%.*s", (int)(g - f < 31 ? g - f : 31), s + f);
        if (next_tok(&t, &c, &d)) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)c, "unexpected '%.*s'", (int)(d - c), s + c);
        if (!event_field(&l->tr, &l->tr.ev[k], fld, v, why, sizeof why))
            return fs_loc_error_set(P->err, P->name, line, col + (int32_t)f, "step %ld (%s): %s", k,
                           fs_event_kind_str(l->tr.ev[k].kind), why);
        return true;
    }
    if (!strcmp(first, "count")) {
        int64_t cnt;
        size_t rest;
        if (!select_events(P, l->has_run ? &l->tr : NULL, s + b, n - b, line, col + (int32_t)b, true, &cnt, &rest))
            return false;
        size_t e = lp_skip_blank(s, b + rest, n);
        if (e < n) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)e, "count: unexpected '%s'", s + e);
        *v = (double)cnt;
        return true;
    }
    for (int k = 0; k < FS_EV_COUNT; k++)
        if (!strcmp(first, kind_names[k])) {
            int64_t step;
            size_t rest;
            if (!select_events(P, l->has_run ? &l->tr : NULL, s, n, line, col, false, &step, &rest)) return false;
            toks u = {s, n, rest};
            size_t f, g;
            if (!next_tok(&u, &f, &g)) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)n, "which field?");
            char fld[32];
            snprintf(fld, sizeof fld, "%.*s", (int)(g - f < 31 ? g - f : 31), s + f);
            size_t c, d;
            if (next_tok(&u, &c, &d)) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)c, "unexpected '%.*s'", (int)(d - c), s + c);
            if (!event_field(&l->tr, &l->tr.ev[step], fld, v, why, sizeof why))
                return fs_loc_error_set(P->err, P->name, line, col + (int32_t)f, "%s", why);
            return true;
        }
    if (!strcmp(s, "maxerr")) {
        if (!l->has_run) return fs_loc_error_set(P->err, P->name, line, col, "this lesson runs nothing");
        if (!need_ref(P, line, col)) return false;
        *v = max_abs_diff(&l->res, &l->ref);
        return true;
    }
    if (!strcmp(s, "count_nan")) {
        if (!l->has_run) return fs_loc_error_set(P->err, P->name, line, col, "this lesson runs nothing");
        size_t cnt = 0, N = (size_t)l->res.n_heads * l->res.n_rows * l->res.n_cols;
        for (size_t i = 0; i < N; i++) cnt += isnan(l->res.O[i]) != 0;
        *v = (double)cnt;
        return true;
    }
    if (!strcmp(s, "graderr")) {
        /* max |g − g_dense| over dQ, dK, dV: the traced backward against the materializing one */
        if (!l->has_run || !l->res.dQ)
            return fs_loc_error_set(P->err, P->name, line, col, "graderr needs algo: backward or ring-backward");
        const fs_attn *at = &l->run.attn;
        size_t nq = (size_t)at->n_q_heads * at->n_q, nk = (size_t)at->n_kv_heads * at->n_kv;
        size_t n1 = nq * (size_t)at->d, n2 = nk * (size_t)at->d, n3 = nk * (size_t)at->d_v;
        double *g = malloc(sizeof(double) * (n1 + n2 + n3)), *ones = NULL;
        const double *dO = l->run.dO;
        if (g && !dO && (ones = malloc(sizeof(double) * nq * (size_t)at->d_v)))
            for (size_t k = 0; k < nq * (size_t)at->d_v; k++) ones[k] = 1;
        if (!g || (!dO && !ones)) {
            free(g);
            free(ones);
            return fs_loc_error_set(P->err, P->name, line, col, "out of memory");
        }
        fs_status st;
        if (l->run.tiling.dropout.on) {   /* the dense spec with the whole mask materialized */
            uint8_t *Z = malloc(nq * (size_t)at->n_kv);
            if (Z) fs_dropout_keep_mask(&l->run.tiling.dropout, at, Z);
            st = Z ? fs_dropout_backward_dense(at, Z, l->run.tiling.dropout.p, dO ? dO : ones, g, g + n1, g + n1 + n2)
                   : FS_ERR_NOMEM;
            free(Z);
        } else {
            st = fs_backward_dense(at, dO ? dO : ones, g, g + n1, g + n1 + n2);
        }
        double w = 0;
        const double *mine[3] = {l->res.dQ, l->res.dK, l->res.dV}, *ref[3] = {g, g + n1, g + n1 + n2};
        size_t len[3] = {n1, n2, n3};
        for (int q = 0; q < 3 && st == FS_OK; q++)
            for (size_t k = 0; k < len[q]; k++) {
                double dd = fabs(mine[q][k] - ref[q][k]);
                w = isnan(dd) ? NAN : fmax(w, dd);
            }
        free(g);
        free(ones);
        if (st != FS_OK) return fs_loc_error_set(P->err, P->name, line, col, "dense backward failed: %s", fs_status_str(st));
        *v = w;
        return true;
    }
    if (!strcmp(s, "dropmismatch")) {
        /* algo: backward with dropout: the cells the forward's tiles drop (a traced forward on the
         * same problem and tiling) against those the backward's btiles regenerate; how many are
         * in one list and not in the other. */
        if (!l->has_run || l->run.algo != FS_ALGO_BACKWARD || !l->run.tiling.dropout.on)
            return fs_loc_error_set(P->err, P->name, line, col, "dropmismatch needs algo: backward with dropout:");
        const fs_attn *at = &l->run.attn;
        size_t cells = (size_t)at->n_q_heads * at->n_q * at->n_kv;
        fs_tiling ft = l->run.tiling;
        fs_trace ftr;
        fs_trace_init(&ftr);
        ftr.max_events = FS_LESSON_MAX_EVENTS;
        double *O = malloc(sizeof(double) * (size_t)at->n_q_heads * at->n_q * at->d_v);
        signed char *mark = calloc(cells, 1);
        fs_status st = O && mark ? fs_tiled(at, &ft, O, NULL, NULL, &ftr) : FS_ERR_NOMEM;
        const fs_trace *trs[2] = {&ftr, &l->tr};
        for (int w = 0; w < 2 && st == FS_OK; w++)
            for (int64_t k = 0; k < trs[w]->n; k++) {
                const fs_event *e = &trs[w]->ev[k];
                if ((e->kind != FS_EV_TILE && e->kind != FS_EV_BTILE) || e->drop < 0) continue;
                const double *pr = fs_trace_at(trs[w], e->drop);
                for (int32_t q = 0; q < e->n_drop; q++)
                    mark[((size_t)e->head * at->n_q + (size_t)pr[2 * q]) * at->n_kv + (size_t)pr[2 * q + 1]] += w ? -1 : 1;
            }
        double miss = 0;
        for (size_t k = 0; k < cells && st == FS_OK; k++) miss += mark[k] != 0;
        free(O);
        free(mark);
        fs_trace_free(&ftr);
        if (st != FS_OK) return fs_loc_error_set(P->err, P->name, line, col, "the forward failed: %s", fs_status_str(st));
        *v = miss;
        return true;
    }
    if (!strcmp(first, "rmse")) {
        /* the RMSE of O against the float64 reference: this run's ("rmse"), another recipe's on
         * the same problem and tiles ("rmse e4m3 hadamard"), or the ratio of two ("rmse e4m3 /
         * e4m3 hadamard"; an empty side is this run) */
        if (!l->has_run || (l->run.algo != FS_ALGO_TILED && l->run.algo != FS_ALGO_REFERENCE) || !l->run.attn.Q)
            return fs_loc_error_set(P->err, P->name, line, col, "rmse needs algo: tiled or reference, with Q and K");
        if (!need_ref(P, line, col)) return false;
        size_t slash = b;
        while (slash < n && s[slash] != '/') slash++;
        double num_, den_ = 1;
        if (!rmse_of(P, s, b, slash, line, col, &num_)) return false;
        if (slash < n) {
            if (!rmse_of(P, s, slash + 1, n, line, col, &den_)) return false;
            if (!(den_ > 0)) return fs_loc_error_set(P->err, P->name, line, col + (int32_t)slash, "rmse: the divisor's RMSE is 0");
        }
        *v = num_ / den_;
        return true;
    }
    if (!strcmp(s, "drift")) {
        if (!l->has_cmp) return fs_loc_error_set(P->err, P->name, line, col, "drift needs a pitfall or fp8 lesson");
        *v = max_abs_diff(&l->res, &l->cmp_res);
        return true;
    }
    /* name[…]… */
    size_t nl = 0;
    while (nl < n && (isalnum((unsigned char)s[nl]) || s[nl] == '_')) nl++;
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(nl < 31 ? nl : 31), s);
    long idx[3] = {0, 0, 0};
    const char *end;
    int ni = indices(s + nl, idx, &end);
    if (ni < 0 || *end || nl == n)
        return fs_loc_error_set(P->err, P->name, line, col, "unknown target '%s' (step, KIND …, count, out[r][c], m[r], l[r], "
                       "ref[r][c], compare[r][c], score[i][j], mask[i][j], mask, kv_head[h], work[p][t], skipped[p][t], "
                       "pairs[p][t], load[p], pairs_load[p], maxerr, graderr, dropmismatch, drift, count_nan, rmse, expr)", s);
    if (!strcmp(name, "work") || !strcmp(name, "skipped") || !strcmp(name, "pairs") || !strcmp(name, "load") ||
        !strcmp(name, "pairs_load")) {
        /* ring attention's work table (fs_ring_work): [p][t] per device and step, load[p] and
         * pairs_load[p] summed over the steps */
        const bool sum = name[0] == 'l' || !strcmp(name, "pairs_load");
        if (!l->has_run || l->run.algo != FS_ALGO_RING)
            return fs_loc_error_set(P->err, P->name, line, col, "%s needs algo: ring or ring-backward", name);
        const int32_t D = l->run.ring.P;
        if (ni != (sum ? 1 : 2) || idx[0] < 0 || idx[0] >= D || (!sum && (idx[1] < 0 || idx[1] >= D)))
            return fs_loc_error_set(P->err, P->name, line, col, "%s needs %s with devices and steps 0 to %d", name,
                                    sum ? "[device]" : "[device][step]", D - 1);
        fs_ring g = l->run.ring;
        g.tiling = l->run.tiling;
        int64_t *w = malloc(sizeof(int64_t) * (size_t)D * D * 3);
        if (!w || fs_ring_work(&l->run.attn, &g, w, w + (size_t)D * D, w + 2 * (size_t)D * D) != FS_OK) {
            free(w);
            return fs_loc_error_set(P->err, P->name, line, col, "the work table failed");
        }
        const int64_t *tab = name[0] == 'w' || name[0] == 'l' ? w : name[0] == 's' ? w + (size_t)D * D : w + 2 * (size_t)D * D;
        double total = 0;
        for (int32_t step = 0; step < D; step++)
            if (sum || step == idx[1]) total += (double)tab[idx[0] * D + step];
        free(w);
        *v = total;
        return true;
    }
    if (!strcmp(name, "out") || !strcmp(name, "ref") || !strcmp(name, "compare")) {
        if (!l->has_run) return fs_loc_error_set(P->err, P->name, line, col, "this lesson runs nothing");
        const fs_result *r = &l->res;
        if (!strcmp(name, "ref")) {
            if (!need_ref(P, line, col)) return false;
            r = &l->ref;
        } else if (!strcmp(name, "compare")) {
            if (!l->has_cmp) return fs_loc_error_set(P->err, P->name, line, col, "compare needs a pitfall or fp8 lesson");
            r = &l->cmp_res;
        }
        return result_at(P, r, name, idx, ni, line, col, v);
    }
    if (!strcmp(name, "m") || !strcmp(name, "l")) {
        if (!l->has_run) return fs_loc_error_set(P->err, P->name, line, col, "this lesson runs nothing");
        if (ni < 1 || ni > 2) return fs_loc_error_set(P->err, P->name, line, col, "%s needs [row] or [head][row]", name);
        long h = ni == 2 ? idx[0] : 0, r = ni == 2 ? idx[1] : idx[0];
        if (h < 0 || h >= l->res.n_heads || r < 0 || r >= l->res.n_rows)
            return fs_loc_error_set(P->err, P->name, line, col, "%s: row %ld of head %ld does not exist", name, r, h);
        *v = (name[0] == 'm' ? l->res.m : l->res.l)[(size_t)h * l->res.n_rows + (size_t)r];
        return true;
    }
    const fs_attn *at = l->has_run && l->run.algo != FS_ALGO_SOFTMAX ? &l->run.attn : NULL;
    if (!strcmp(name, "score")) {
        if (!at) return fs_loc_error_set(P->err, P->name, line, col, "score needs an attention problem");
        if (ni < 2) return fs_loc_error_set(P->err, P->name, line, col, "score needs [i][j] or [head][i][j]");
        long h = ni == 3 ? idx[0] : 0, i = idx[ni - 2], j = idx[ni - 1];
        if (h < 0 || h >= at->n_q_heads || i < 0 || i >= at->n_q || j < 0 || j >= at->n_kv)
            return fs_loc_error_set(P->err, P->name, line, col, "score[%ld][%ld][%ld] is outside the problem (%d heads, %d queries, %d keys)",
                           h, i, j, at->n_q_heads, at->n_q, at->n_kv);
        *v = fs_attn_score(at, (int32_t)h, (int32_t)i, (int32_t)j);
        return true;
    }
    if (!strcmp(name, "mask")) {
        if (!at) return fs_loc_error_set(P->err, P->name, line, col, "mask needs an attention problem");
        if (ni != 2) return fs_loc_error_set(P->err, P->name, line, col, "mask needs [i][j]");
        if (idx[0] < 0 || idx[0] >= at->n_q || idx[1] < 0 || idx[1] >= at->n_kv)
            return fs_loc_error_set(P->err, P->name, line, col, "mask[%ld][%ld] is outside %d queries × %d keys", idx[0], idx[1],
                           at->n_q, at->n_kv);
        *v = fs_mask_visible(&at->mask, at->n_q, at->n_kv, (int32_t)idx[0], (int32_t)idx[1]) ? 1 : 0;
        return true;
    }
    if (!strcmp(name, "kv_head")) {
        if (!at) return fs_loc_error_set(P->err, P->name, line, col, "kv_head needs an attention problem");
        if (ni != 1 || idx[0] < 0 || idx[0] >= at->n_q_heads)
            return fs_loc_error_set(P->err, P->name, line, col, "kv_head[h] needs 0 ≤ h < %d", at->n_q_heads);
        *v = fs_attn_kv_head(at, (int32_t)idx[0]);
        return true;
    }
    return fs_loc_error_set(P->err, P->name, line, col, "unknown target '%s'", name);
}

static bool eval_expect(parse_t *P, expect_rec *x, fs_check *out)
{
    fs_lesson *l = P->l;
    *out = x->c;
    if (!strcmp(x->c.target, "mask")) {
        const fs_attn *at = l->has_run && l->run.algo != FS_ALGO_SOFTMAX ? &l->run.attn : NULL;
        if (!at) return fs_loc_error_set(P->err, P->name, x->c.line, x->tcol, "mask needs an attention problem");
        if (x->mask_n_rows != at->n_q || x->mask_n_cols != at->n_kv)
            return fs_loc_error_set(P->err, P->name, x->mask_line, 1, "the printed mask is %d×%d but the problem is %d×%d",
                           x->mask_n_rows, x->mask_n_cols, at->n_q, at->n_kv);
        size_t len = (size_t)at->n_q * ((size_t)at->n_kv + 1);
        char *got = malloc(len + 1);
        if (!got) return fs_loc_error_set(P->err, P->name, x->c.line, 1, "out of memory");
        size_t k = 0;
        int32_t wrong = 0;
        for (int32_t i = 0; i < at->n_q; i++) {
            for (int32_t j = 0; j < at->n_kv; j++) got[k++] = fs_mask_visible(&at->mask, at->n_q, at->n_kv, i, j) ? '1' : '0';
            got[k++] = ';';
        }
        got[k - 1] = 0;
        for (size_t t = 0; got[t]; t++) wrong += got[t] != x->mask_rows[t];
        out->got.verdict = wrong ? FS_VERDICT_ERRATUM : FS_VERDICT_HOLDS;
        out->got.reading = "";
        out->got.exact = wrong;
        snprintf(out->exact_text, sizeof out->exact_text, "%s", wrong ? "differs" : "same matrix");
        if (wrong && !*out->why) {
            char *w = malloc(96);
            if (w) {
                snprintf(w, 96, "%d entries differ from the mask built from the parent array", wrong);
                out->why = lp_keep(l, w);
            }
        }
        free(got);
    } else {
        double base;
        if (!eval_target(P, x, &base)) return false;
        fs_claim_in in;
        memset(&in, 0, sizeof in);
        in.printed = x->c.printed;
        in.unit = x->unit;
        in.approx_marked = x->c.approx_marked;
        in.tol = x->tol;
        in.exact_base = base;
        if (x->c.chain) {
            in.has_chain = true;
            if (!fs_expr_eval(x->c.chain, strlen(x->c.chain), P->name, x->chain_line, x->chain_col,
                              &in.chain_value, P->err))
                return false;
        }
        if (strcmp(x->c.op, "=")) {
            /* a bound: holds when it holds (under either reading of an ambiguous unit) */
            double p, h;
            fs_printed_parse(x->c.printed, &p, &h);
            memset(&out->got, 0, sizeof out->got);
            out->got.reading = "";
            out->got.exact_dec = base / fs_unit_factor(x->unit, false);
            out->got.exact_bin = base / fs_unit_factor(x->unit, true);
            out->got.exact = out->got.exact_dec;
            bool ok = false;
            for (int rd = 0; rd < 2; rd++) {
                double e = rd ? out->got.exact_bin : out->got.exact_dec;
                const char *o = x->c.op;
                ok |= (!strcmp(o, "<=") && e <= p) || (!strcmp(o, "<") && e < p) ||
                      (!strcmp(o, ">=") && e >= p) || (!strcmp(o, ">") && e > p);
            }
            out->got.verdict = ok ? FS_VERDICT_HOLDS : FS_VERDICT_ERRATUM;
        } else {
            fs_claim_judge(&in, &out->got);
        }
        /* NaN has no sign worth showing ("-nan" read as a number) */
        if (isnan(out->got.exact)) snprintf(out->exact_text, sizeof out->exact_text, "nan");
        else if (out->got.exact == floor(out->got.exact) && fabs(out->got.exact) < 1e15)
            snprintf(out->exact_text, sizeof out->exact_text, "%.0f", out->got.exact);   /* 34359738368, not 3.4359738e+10 */
        else snprintf(out->exact_text, sizeof out->exact_text, "%.8g", out->got.exact);
    }
    out->agrees = out->got.verdict == out->expected &&
                  (out->expected != FS_VERDICT_UNITS || !strcmp(out->got.reading, out->expected_reading));
    return true;
}

bool lp_resolve(parse_t *P)
{
    fs_lesson *l = P->l;
    if (P->n_narr) {
        l->narr = lp_keep(l, calloc((size_t)P->n_narr, sizeof(fs_narration)));
        if (!l->narr) return fs_loc_error_set(P->err, P->name, 1, 1, "out of memory");
    }
    for (int32_t k = 0; k < P->n_narr; k++) {
        narr_rec *r = &P->narr[k];
        int64_t step;
        char *end;
        errno = 0;
        long s = strtol(r->sel, &end, 10);
        if (end != r->sel && !*end) {
            if (!l->has_run) return fs_loc_error_set(P->err, P->name, r->line, r->col, "this lesson has no steps (nothing ran)");
            if (errno == ERANGE)
                return fs_loc_error_set(P->err, P->name, r->line, r->col, "step %s does not exist (the trace has steps 0 to %lld)",
                               r->sel, (long long)l->tr.n - 1);
            if (s < 0 || s >= l->tr.n)
                return fs_loc_error_set(P->err, P->name, r->line, r->col, "step %ld does not exist (the trace has steps 0 to %lld)",
                               s, (long long)l->tr.n - 1);
            step = s;
        } else {
            size_t rest;
            if (!select_events(P, l->has_run ? &l->tr : NULL, r->sel, strlen(r->sel), r->line, r->col, false, &step, &rest))
                return false;
            if (lp_skip_blank(r->sel, rest, strlen(r->sel)) < strlen(r->sel))
                return fs_loc_error_set(P->err, P->name, r->line, r->col + (int32_t)rest, "step: unexpected text in the selector");
        }
        for (int32_t q = 0; q < l->n_narr; q++)
            if (l->narr[q].step == step)
                return fs_loc_error_set(P->err, P->name, r->line, r->col, "step %lld already has narration", (long long)step);
        l->narr[l->n_narr].step = step;
        l->narr[l->n_narr].text = r->text;
        l->n_narr++;
    }
    if (P->n_ex) {
        l->checks = lp_keep(l, calloc((size_t)P->n_ex, sizeof(fs_check)));
        if (!l->checks) return fs_loc_error_set(P->err, P->name, 1, 1, "out of memory");
    }
    for (int32_t k = 0; k < P->n_ex; k++) {
        if (!eval_expect(P, &P->ex[k], &l->checks[k])) return false;
        l->n_checks++;
    }
    return true;
}


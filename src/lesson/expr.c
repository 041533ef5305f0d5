/* expr.c: the small arithmetic language of arithmetic claims (lesson.h, fs_expr_eval).
 *
 *   expr  := term (('+' | '-') term)*
 *   term  := unary (('*' | '/') unary)*
 *   unary := ('-' | '+') unary | power
 *   power := primary ('^' unary)?          right associative: 2^3^2 = 2^9; -2^2 = -4
 *   primary := number | name | name '(' expr (',' expr)* ')' | '(' expr ')'
 *
 * Recursive descent over the text with a depth bound (the fuzzer feeds it anything). Errors
 * carry the column of the offending character.
 */
#include "lesson.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/dropout.h"
#include "engine/fp8.h"
#include "engine/memory.h"

#define FS_EXPR_MAX_DEPTH 64
#define FS_EXPR_MAX_ARGS 8

typedef struct {
    const char *s;
    size_t n, i;
    const char *name;
    int32_t line, col;
    fs_loc_error *err;
    bool failed;
    int depth;
} parser;

static bool fail(parser *p, size_t at, const char *msg)
{
    if (!p->failed) {
        p->failed = true;
        if (p->err) {
            snprintf(p->err->file, sizeof p->err->file, "%s", p->name ? p->name : "<expr>");
            p->err->line = p->line;
            p->err->col = p->col + (int32_t)at;
            snprintf(p->err->msg, sizeof p->err->msg, "%s", msg);
        }
    }
    return false;
}

static void skip_ws(parser *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t')) p->i++;
}

static bool expr(parser *p, double *v);

static bool number(parser *p, double *v)
{
    size_t st = p->i;
    char buf[64];
    size_t k = 0;
    while (p->i < p->n && isdigit((unsigned char)p->s[p->i])) p->i++;
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        while (p->i < p->n && isdigit((unsigned char)p->s[p->i])) p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        size_t save = p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (p->i < p->n && isdigit((unsigned char)p->s[p->i])) {
            while (p->i < p->n && isdigit((unsigned char)p->s[p->i])) p->i++;
        } else {
            p->i = save;   /* "2e" is 2 followed by the name e: not ours to guess */
        }
    }
    if (p->i - st >= sizeof buf || p->i == st || (p->i - st == 1 && p->s[st] == '.'))
        return fail(p, st, "malformed number");
    for (size_t j = st; j < p->i; j++) buf[k++] = p->s[j];
    buf[k] = 0;
    *v = strtod(buf, NULL);
    return true;
}

typedef struct {
    const char *name;
    int nargs;   /* < 0: at least −nargs (min, max: two or more; the paged model: four or more) */
} fn_info;

static const fn_info fns[] = {
    {"exp", 1}, {"log", 1}, {"log2", 1}, {"exp2", 1}, {"sqrt", 1}, {"tanh", 1}, {"abs", 1},
    {"floor", 1}, {"ceil", 1}, {"round", 1}, {"min", -2}, {"max", -2}, {"f32", 1}, {"e4m3", 1}, {"e5m2", 1},
    {"expf32", 1}, {"s_bytes", 4}, {"stats_bytes", 4}, {"mask_bytes", 4}, {"sp_bytes", 4}, {"mat_traffic", 4}, {"tile_sram", 5}, {"tile_flops", 3},
    {"kv_bytes", 4}, {"tiles_computed", 4}, {"tiled_traffic", 6},
    {"contig_reserved", -4}, {"contig_filled", -4}, {"paged_unique", -4}, {"paged_pages", -4},
    {"paged_copied", -4}, {"paged_empty", -4}, {"paged_shared", -4},
};

/* The paged KV cache model (fs_mem_paged_model): page_size, shared prompt, max_len, then each
 * sequence's length; `what` names the count. NaN when the model refuses the numbers. */
static double paged(const char *what, const double *a, int n)
{
    int32_t len[FS_EXPR_MAX_ARGS];
    for (int i = 0; i < 3; i++)
        if (!(a[i] >= 0 && a[i] <= FS_MAX_DIM && a[i] == floor(a[i]))) return NAN;
    for (int i = 3; i < n; i++) {
        if (!(a[i] >= 0 && a[i] <= FS_MAX_DIM && a[i] == floor(a[i]))) return NAN;
        len[i - 3] = (int32_t)a[i];
    }
    fs_mem_paged r;
    if (fs_mem_paged_model(n - 3, len, (int32_t)a[1], (int32_t)a[2], (int32_t)a[0], &r) != FS_OK) return NAN;
    return (double)(!strcmp(what, "contig_reserved") ? r.reserved
                    : !strcmp(what, "contig_filled") ? r.filled
                    : !strcmp(what, "paged_unique")  ? r.unique
                    : !strcmp(what, "paged_pages")   ? r.pages
                    : !strcmp(what, "paged_copied")  ? r.copied
                    : !strcmp(what, "paged_empty")   ? r.empty
                                                     : r.shared_pages);
}

/* The full model (fs_mem_model) on one head of n queries and n keys; causal ≠ 0 masks causally.
 * NaN when the model refuses the problem (the caller reports NaN as an error). */
static double model(double n, double d, double Bq, double Bk, double causal, double in_bytes, bool traffic)
{
    if (!(n >= 1 && n <= FS_MAX_DIM && d >= 1 && d <= FS_MAX_HEAD && Bq >= 1 && Bk >= 1 && Bq <= FS_MAX_DIM &&
          Bk <= FS_MAX_DIM && in_bytes >= 1 && in_bytes <= 16))
        return NAN;
    fs_mem_problem p = fs_mem_problem_make((int32_t)n, (int32_t)n, (int32_t)d, (int32_t)d);
    p.Bq = (int32_t)Bq;
    p.Bk = (int32_t)Bk;
    p.in_bytes = (int32_t)in_bytes;
    p.mask.kind = causal != 0 ? FS_MASK_CAUSAL : FS_MASK_NONE;
    fs_mem_report r;
    if (fs_mem_model(&p, &r) != FS_OK) return NAN;
    return traffic ? (double)r.tiled_traffic : (double)(r.tiles_full + r.tiles_partial);
}

static double apply(const char *f, const double *a, int n)
{
    if (!strcmp(f, "exp")) return exp(a[0]);
    if (!strcmp(f, "log")) return log(a[0]);
    if (!strcmp(f, "log2")) return log2(a[0]);
    if (!strcmp(f, "exp2")) return exp2(a[0]);
    if (!strcmp(f, "sqrt")) return sqrt(a[0]);
    if (!strcmp(f, "tanh")) return tanh(a[0]);
    if (!strcmp(f, "abs")) return fabs(a[0]);
    if (!strcmp(f, "floor")) return floor(a[0]);
    if (!strcmp(f, "ceil")) return ceil(a[0]);
    if (!strcmp(f, "round")) return round(a[0]);
    if (!strcmp(f, "f32")) return (double)(float)a[0];
    if (!strcmp(f, "e4m3")) return fs_fp8_round(FS_FP8_E4M3, a[0]);
    if (!strcmp(f, "e5m2")) return fs_fp8_round(FS_FP8_E5M2, a[0]);
    if (!strcmp(f, "expf32")) return (double)expf((float)a[0]);
    if (!strcmp(f, "s_bytes")) return fs_mem_s_bytes(a[0], a[1], a[2], a[3]);
    if (!strcmp(f, "mask_bytes")) return fs_dropout_mask_bytes(a[2], a[0], a[1], a[3]);   /* (n_q, n_kv, heads, bits) */
    if (!strcmp(f, "stats_bytes")) return fs_mem_stats_bytes(a[0], a[1], a[2], a[3]);
    if (!strcmp(f, "sp_bytes")) return fs_mem_sp_bytes(a[0], a[1], a[2], a[3]);
    if (!strcmp(f, "mat_traffic")) return fs_mem_mat_traffic(a[0], a[1], a[2], a[3]);
    if (!strcmp(f, "tile_sram")) return fs_mem_tile_sram(a[0], a[1], a[2], a[3], a[4]);
    if (!strcmp(f, "tile_flops")) return fs_mem_tile_flops(a[0], a[1], a[2]);
    if (!strcmp(f, "kv_bytes")) return fs_mem_kv_bytes(a[0], a[1], a[2], a[3]);
    if (!strcmp(f, "tiles_computed")) return model(a[0], 1, a[1], a[2], a[3], 2, false);
    if (!strcmp(f, "tiled_traffic")) return model(a[0], a[1], a[2], a[3], a[4], a[5], true);
    if (!strncmp(f, "paged_", 6) || !strncmp(f, "contig_", 7)) return paged(f, a, n);
    double r = a[0];
    for (int i = 1; i < n; i++) r = !strcmp(f, "min") ? fmin(r, a[i]) : fmax(r, a[i]);
    return r;
}

static bool primary(parser *p, double *v)
{
    skip_ws(p);
    if (p->i >= p->n) return fail(p, p->i, "expected a number, a name or '('");
    char c = p->s[p->i];
    if (isdigit((unsigned char)c) || c == '.') return number(p, v);
    if (c == '(') {
        size_t open = p->i++;
        if (!expr(p, v)) return false;
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] != ')') return fail(p, open, "unclosed '('");
        p->i++;
        return true;
    }
    if (!isalpha((unsigned char)c) && c != '_')
        return fail(p, p->i, "expected a number, a name or '('");
    size_t st = p->i;
    while (p->i < p->n && (isalnum((unsigned char)p->s[p->i]) || p->s[p->i] == '_')) p->i++;
    char name[32];
    size_t len = p->i - st;
    if (len >= sizeof name) return fail(p, st, "unknown name");
    memcpy(name, p->s + st, len);
    name[len] = 0;
    skip_ws(p);
    bool call = p->i < p->n && p->s[p->i] == '(';
    if (!call) {
        if (!strcmp(name, "inf")) *v = INFINITY;
        else if (!strcmp(name, "pi")) *v = 3.14159265358979323846;
        else if (!strcmp(name, "e")) *v = 2.71828182845904523536;
        else if (!strcmp(name, "flt_max")) *v = (double)FLT_MAX;
        else {
            char msg[96];
            snprintf(msg, sizeof msg, "unknown name '%s'", name);
            return fail(p, st, msg);
        }
        return true;
    }
    const fn_info *fi = NULL;
    for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++)
        if (!strcmp(fns[k].name, name)) fi = &fns[k];
    if (!fi) {
        char msg[96];
        snprintf(msg, sizeof msg, "unknown function '%s'", name);
        return fail(p, st, msg);
    }
    size_t open = p->i++;
    double args[FS_EXPR_MAX_ARGS];
    int n = 0;
    for (;;) {
        if (n == FS_EXPR_MAX_ARGS) return fail(p, p->i, "too many arguments");
        if (!expr(p, &args[n])) return false;
        n++;
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->n && p->s[p->i] == ')') {
            p->i++;
            break;
        }
        return fail(p, open, "unclosed '(' of a function call");
    }
    if ((fi->nargs >= 0 && n != fi->nargs) || (fi->nargs < 0 && n < -fi->nargs)) {
        char msg[96];
        if (fi->nargs >= 0)
            snprintf(msg, sizeof msg, "%s takes %d argument%s, got %d", name, fi->nargs,
                     fi->nargs == 1 ? "" : "s", n);
        else
            snprintf(msg, sizeof msg, "%s takes %s or more arguments, got %d", name, fi->nargs == -2 ? "two" : "four", n);
        return fail(p, st, msg);
    }
    *v = apply(name, args, n);
    return true;
}

static bool unary(parser *p, double *v);

static bool power(parser *p, double *v)
{
    if (!primary(p, v)) return false;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == '^') {
        p->i++;
        double e;
        if (!unary(p, &e)) return false;
        *v = pow(*v, e);
    }
    return true;
}

static bool unary(parser *p, double *v)
{
    if (++p->depth > FS_EXPR_MAX_DEPTH) return fail(p, p->i, "expression nested too deeply");
    skip_ws(p);
    bool ok;
    if (p->i < p->n && (p->s[p->i] == '-' || p->s[p->i] == '+')) {
        bool neg = p->s[p->i++] == '-';
        ok = unary(p, v);
        if (ok && neg) *v = -*v;
    } else {
        ok = power(p, v);
    }
    p->depth--;
    return ok;
}

static bool term(parser *p, double *v)
{
    if (!unary(p, v)) return false;
    for (;;) {
        skip_ws(p);
        if (p->i >= p->n || (p->s[p->i] != '*' && p->s[p->i] != '/')) return true;
        char op = p->s[p->i++];
        double r;
        if (!unary(p, &r)) return false;
        *v = op == '*' ? *v * r : *v / r;
    }
}

static bool expr(parser *p, double *v)
{
    if (++p->depth > FS_EXPR_MAX_DEPTH) return fail(p, p->i, "expression nested too deeply");
    bool ok = term(p, v);
    while (ok) {
        skip_ws(p);
        if (p->i >= p->n || (p->s[p->i] != '+' && p->s[p->i] != '-')) break;
        char op = p->s[p->i++];
        double r;
        ok = term(p, &r);
        if (ok) *v = op == '+' ? *v + r : *v - r;
    }
    p->depth--;
    return ok;
}

bool fs_expr_eval(const char *text, size_t len, const char *name, int32_t line, int32_t col,
                  double *out, fs_loc_error *err)
{
    parser p = {text, len, 0, name, line, col, err, false, 0};
    double v = 0;
    if (!expr(&p, &v)) return false;
    skip_ws(&p);
    if (p.i < p.n) return fail(&p, p.i, "unexpected character in expression");
    if (isnan(v)) return fail(&p, 0, "expression is not a number (NaN)");
    *out = v;
    return true;
}

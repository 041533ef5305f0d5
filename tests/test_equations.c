/* test_equations.c: the equation finder and checker of test_equations.h. */
#include "test_equations.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lesson/lesson.h"
#include "test_util.h"

/* A value and the interval its printed operands allow: p from the printed numbers themselves,
 * [lo, hi] over every operand within half a unit of its last digit. */
typedef struct {
    double p, lo, hi;
} iv;

typedef struct {
    const char *s;
    size_t i;
} cur;

static bool lit(cur *c, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(c->s + c->i, w, n)) return false;
    c->i += n;
    return true;
}

static void skip_sp(cur *c)
{
    while (c->s[c->i] == ' ') c->i++;
}

static bool dig(char ch) { return isdigit((unsigned char)ch) != 0; }

/* A printed number: 1.2000, -0.4, 6.144e-06, 64, -inf, inf, nan. */
static bool number(cur *c, iv *out)
{
    const char *p = c->s + c->i;
    size_t k = 0;
    if (!strncmp(p, "-inf", 4) || !strncmp(p, "+inf", 4)) k = 4;
    else if (!strncmp(p, "inf", 3) || !strncmp(p, "nan", 3)) k = 3;
    else {
        if (p[k] == '-' || p[k] == '+') k++;
        size_t d0 = k;
        while (dig(p[k])) k++;
        if (k == d0) return false;
        if (p[k] == '.' && dig(p[k + 1])) {
            k++;
            while (dig(p[k])) k++;
        }
        if (p[k] == 'e' && (dig(p[k + 1]) || ((p[k + 1] == '-' || p[k + 1] == '+') && dig(p[k + 2])))) {
            k += 2;
            while (dig(p[k])) k++;
        }
    }
    if (isalnum((unsigned char)p[k]) || p[k] == '_' || p[k] == '[' || (p[k] == '.' && dig(p[k + 1]))) return false;
    char tok[64];
    if (k >= sizeof tok) return false;
    memcpy(tok, p, k);
    tok[k] = 0;
    double v, h;
    if (!fs_printed_parse(tok, &v, &h)) return false;
    out->p = v;
    if (isnan(v) || isinf(v)) out->lo = out->hi = v;
    else {
        out->lo = v - h;
        out->hi = v + h;
    }
    c->i += k;
    return true;
}

/* A number, or a number in parentheses ("(-0.4000)"). */
static bool operand(cur *c, iv *out)
{
    size_t save = c->i;
    if (c->s[c->i] == '(') {
        c->i++;
        if (number(c, out) && lit(c, ")")) return true;
        c->i = save;
        return false;
    }
    return number(c, out);
}

static bool minus_op(cur *c) { return lit(c, "\xe2\x88\x92 ") || lit(c, "- "); }

static iv iv_sub(iv a, iv b) { return (iv){a.p - b.p, a.lo - b.hi, a.hi - b.lo}; }
static iv iv_add(iv a, iv b) { return (iv){a.p + b.p, a.lo + b.lo, a.hi + b.hi}; }

static iv corners(double p, const double *x, int n)
{
    iv r = {p, INFINITY, -INFINITY};
    for (int k = 0; k < n; k++) {
        if (isnan(x[k])) continue;
        if (x[k] < r.lo) r.lo = x[k];
        if (x[k] > r.hi) r.hi = x[k];
    }
    if (r.lo > r.hi) r.lo = r.hi = p;
    return r;
}

static iv iv_mul(iv a, iv b)
{
    double x[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    return corners(a.p * b.p, x, 4);
}

static iv iv_div(iv a, iv b)
{
    if (b.lo <= 0 && b.hi >= 0 && !(b.lo == 0 && b.hi == 0)) return (iv){a.p / b.p, -INFINITY, INFINITY};
    double x[4] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
    return corners(a.p / b.p, x, 4);
}

static iv iv_exp(iv a, bool two)
{
    if (two) return (iv){exp2(a.p), exp2(a.lo), exp2(a.hi)};
    return (iv){exp(a.p), exp(a.lo), exp(a.hi)};
}

/* max as the engine takes it: a > b ? a : b */
static double mx(double a, double b) { return a > b ? a : b; }

/* exp(A − B), exp2(A − B), max(A, B), or an operand. *calls counts the calls. */
static bool factor(cur *c, iv *out, int *calls)
{
    size_t save = c->i;
    bool two = false;
    if (lit(c, "exp2(") ? (two = true) : lit(c, "exp(")) {
        iv a, b;
        if (operand(c, &a) && (skip_sp(c), minus_op(c)) && operand(c, &b) && lit(c, ")")) {
            *out = iv_exp(iv_sub(a, b), two);
            (*calls)++;
            return true;
        }
        c->i = save;
        return false;
    }
    if (lit(c, "max(")) {
        iv a, b;
        if (operand(c, &a) && lit(c, ", ") && operand(c, &b) && lit(c, ")")) {
            *out = (iv){mx(a.p, b.p), mx(a.lo, b.lo), mx(a.hi, b.hi)};
            (*calls)++;
            return true;
        }
        c->i = save;
        return false;
    }
    return operand(c, out);
}

static bool term(cur *c, iv *out, int *ops)
{
    if (!factor(c, out, ops)) return false;
    for (;;) {
        size_t save = c->i;
        skip_sp(c);
        bool mul = lit(c, "\xc2\xb7"), div = !mul && lit(c, "/ ");
        if (!mul && !div) {
            c->i = save;
            return true;
        }
        skip_sp(c);
        iv b;
        if (!factor(c, &b, ops)) return false;
        *out = mul ? iv_mul(*out, b) : iv_div(*out, b);
        (*ops)++;
    }
}

static bool sum(cur *c, iv *out, int *ops)
{
    if (!term(c, out, ops)) return false;
    for (;;) {
        size_t save = c->i;
        skip_sp(c);
        bool add = lit(c, "+ "), sub = !add && minus_op(c);
        if (!add && !sub) {
            c->i = save;
            return true;
        }
        skip_sp(c);
        iv b;
        if (!term(c, &b, ops)) return false;
        *out = add ? iv_add(*out, b) : iv_sub(*out, b);
        (*ops)++;
    }
}

/* The last non-space character(s) before i end an operator: an equation cannot start there. */
static bool after_operator(const char *s, size_t i)
{
    while (i > 0 && s[i - 1] == ' ') i--;
    if (i == 0) return false;
    char ch = s[i - 1];
    if (ch == '+' || ch == '-' || ch == '/' || ch == '*') return true;
    if (i >= 2 && !strncmp(s + i - 2, "\xc2\xb7", 2)) return true;      /* · */
    if (i >= 2 && !strncmp(s + i - 2, "\xc3\x97", 2)) return true;      /* × */
    if (i >= 3 && !strncmp(s + i - 3, "\xe2\x88\x92", 3)) return true;  /* − */
    return false;
}

/* Try an equation at i. Returns 0: none there; 1: a true one; 2: a false one (its text and the
 * interval in why). *end is where it stops. */
static int equation_at(const char *s, size_t i, size_t *end, char *why, size_t n)
{
    char ch = s[i];
    if (!(dig(ch) || ch == '-' || ch == '+' || ch == '(' || ch == 'i' || ch == 'n' || ch == 'e' || ch == 'm')) return 0;
    if (i > 0 && s[i - 1] != ' ' && s[i - 1] != '(') return 0;
    if (after_operator(s, i)) return 0;
    cur c = {s, i};
    iv left, r;
    int ops = 0;
    if (!sum(&c, &left, &ops) || ops == 0) return 0;
    skip_sp(&c);
    if (!lit(&c, "= ")) return 0;
    if (!number(&c, &r)) return 0;
    {   /* the result must not be the first operand of something longer */
        cur d = c;
        skip_sp(&d);
        if (lit(&d, "\xc2\xb7") || lit(&d, "+ ") || lit(&d, "/ ") || minus_op(&d)) return 0;
    }
    *end = c.i;
    bool ok;
    if (isnan(left.p) || isnan(r.p)) ok = isnan(left.p) && isnan(r.p);
    else if (isinf(left.p) || isinf(r.p)) ok = left.p == r.p;
    else {
        double h = (r.hi - r.lo) / 2, u = 2 * h;
        double lo = isnan(left.lo) ? left.p : left.lo, hi = isnan(left.hi) ? left.p : left.hi;
        ok = r.p - h - u <= hi && r.p + h + u >= lo;
    }
    if (!ok && why)
        snprintf(why, n, "\"%.*s\" (the printed operands give %.6g, between %.6g and %.6g)",
                 (int)(c.i - i), s + i, left.p, left.lo, left.hi);
    return ok ? 1 : 2;
}

int fs_eq_check_text(const char *text, fs_eq_result *r)
{
    int wrong = 0;
    for (size_t i = 0; text[i];) {
        size_t end = i;
        char why[400];
        int k = equation_at(text, i, &end, why, sizeof why);
        if (!k) {
            i++;
            continue;
        }
        r->checked++;
        if (k == 2) {
            if (!r->wrong) snprintf(r->first, sizeof r->first, "%s", why);
            r->wrong++;
            wrong++;
        }
        i = end;
    }
    return wrong;
}

int fs_eq_describe_wrong(const char *text, int k, char *buf, size_t n)
{
    int seen = 0;
    for (size_t i = 0; text[i];) {
        size_t end = i;
        int v = equation_at(text, i, &end, buf, n);
        if (!v) {
            i++;
            continue;
        }
        if (v == 2 && seen++ == k) return 1;
        i = end;
    }
    if (n) buf[0] = 0;
    return 0;
}

/* ---- random problems written as lessons ---- */

typedef struct {
    char *s;
    size_t n, cap;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    if (w > 0) t->n += (size_t)w < t->cap - t->n ? (size_t)w : t->cap - t->n - 1;
}

/* A random entry: coarse (one decimal, so that maxima tie) or fine. */
static double entry(fs_rng *r, bool coarse)
{
    double x = fs_rng_uniform(r, -2, 2);
    return coarse ? round(x * 10) / 10 : round(x * 1e4) / 1e4;
}

static void matrix(text *t, fs_rng *r, const char *name, int rows, int cols, bool coarse)
{
    add(t, "%s:\n", name);
    for (int i = 0; i < rows; i++) {
        add(t, " ");
        for (int j = 0; j < cols; j++) add(t, " %.4f", entry(r, coarse));
        add(t, "\n");
    }
}

static const char *mask_line(fs_rng *r, int n_q, int n_kv, char *b, size_t n)
{
    switch (fs_rng_int(r, 0, 4)) {
    case 0: snprintf(b, n, "mask: none\n"); break;
    case 1: snprintf(b, n, "mask: causal\n"); break;
    case 2: snprintf(b, n, "mask: window %d\n", fs_rng_int(r, 1, 3)); break;
    case 3: snprintf(b, n, "mask: causal\noffset: %d\n", fs_rng_int(r, -2, n_kv - n_q > 0 ? n_kv - n_q : 0)); break;
    default: snprintf(b, n, "mask: window %d\noffset: %d\n", fs_rng_int(r, 1, 2), fs_rng_int(r, -2, 1)); break;
    }
    return b;
}

/* The text of lesson number k of the random set. */
static void draw_lesson(fs_rng *r, int k, text *t)
{
    static const char *pit[] = {"none", "no-rescale", "global-max-no-beta", "block-max-no-beta", "masked-nan", "masked-doc-fix"};
    char mb[96];
    bool coarse = fs_rng_int(r, 0, 1);
    int n_q = fs_rng_int(r, 1, 6), n_kv = fs_rng_int(r, 1, 8), d = fs_rng_int(r, 1, 3), d_v = fs_rng_int(r, 1, 3);
    add(t, "title: random %d\nsource: 001_b200530c91d92eb7.txt, §random\n", k);
    switch (k % 9) {
    case 0: case 1: case 2: case 3:   /* tiled, every pitfall */
        add(t, "algo: tiled\npitfall: %s\norder: %s\nform: %s\nbq: %d\nbk: %d\n%s", pit[fs_rng_int(r, 0, 5)],
            fs_rng_int(r, 0, 1) ? "kv-outer" : "q-outer", fs_rng_int(r, 0, 1) ? "normalized" : "unnormalized",
            fs_rng_int(r, 1, 4), fs_rng_int(r, 1, 4), mask_line(r, n_q, n_kv, mb, sizeof mb));
        if (fs_rng_int(r, 0, 3) == 0) add(t, "exp2: yes\n");
        if (fs_rng_int(r, 0, 2) == 0) {
            add(t, "scale: 1\n");
            matrix(t, r, "S", n_q, n_kv, coarse);
            matrix(t, r, "V", n_kv, d_v, false);
        } else {
            matrix(t, r, "Q", n_q, d, coarse);
            matrix(t, r, "K", n_kv, d, coarse);
            matrix(t, r, "V", n_kv, d_v, false);
        }
        break;
    case 4:   /* dropout */
        add(t, "algo: tiled\ndropout: %.2f\nseed: %d\nbq: %d\nbk: %d\nform: %s\n%s", fs_rng_uniform(r, 0, 0.8),
            fs_rng_int(r, 0, 1000), fs_rng_int(r, 1, 4), fs_rng_int(r, 1, 4),
            fs_rng_int(r, 0, 1) ? "normalized" : "unnormalized", mask_line(r, n_q, n_kv, mb, sizeof mb));
        matrix(t, r, "Q", n_q, d, coarse);
        matrix(t, r, "K", n_kv, d, coarse);
        matrix(t, r, "V", n_kv, d_v, false);
        break;
    case 5:   /* the one-query walk */
        add(t, "algo: query\n");
        matrix(t, r, "Q", 1, d, coarse);
        matrix(t, r, "K", n_kv, d, coarse);
        matrix(t, r, "V", n_kv, d_v, false);
        break;
    case 6: {  /* softmax, with −∞ entries */
        add(t, "algo: softmax\nchunk: %d\nz:", fs_rng_int(r, 1, 3));
        for (int j = 0; j < n_kv; j++) {
            if (fs_rng_int(r, 0, 4) == 0) add(t, " -inf");
            else add(t, " %.4f", entry(r, coarse) * 2);
        }
        add(t, "\n");
        break;
    }
    case 7:   /* decode */
        add(t, "algo: decode\nbk: %d\nmerge: %s\nform: %s\n", fs_rng_int(r, 1, 4), fs_rng_int(r, 0, 1) ? "tree" : "sequential",
            fs_rng_int(r, 0, 1) ? "normalized" : "unnormalized");
        if (fs_rng_int(r, 0, 1)) add(t, "split: strided\nparts: %d\n", fs_rng_int(r, 1, 3));
        matrix(t, r, "Q", fs_rng_int(r, 1, 2), d, coarse);
        matrix(t, r, "K", n_kv, d, coarse);
        matrix(t, r, "V", n_kv, d_v, false);
        break;
    default:  /* backward, or the ring */
        if (fs_rng_int(r, 0, 1)) {
            add(t, "algo: backward\nbq: %d\nbk: %d\norder: %s\n%s", fs_rng_int(r, 1, 4), fs_rng_int(r, 1, 4),
                fs_rng_int(r, 0, 1) ? "kv-outer" : "q-outer", mask_line(r, n_q, n_kv, mb, sizeof mb));
        } else {
            n_q = n_kv;
            add(t, "algo: ring\ndevices: %d\nsharding: %s\nbq: %d\nbk: %d\n%s", fs_rng_int(r, 1, 3),
                fs_rng_int(r, 0, 1) ? "zigzag" : "contiguous", fs_rng_int(r, 1, 2), fs_rng_int(r, 1, 2),
                fs_rng_int(r, 0, 1) ? "mask: causal\n" : "");
        }
        matrix(t, r, "Q", n_q, d, coarse);
        matrix(t, r, "K", n_kv, d, coarse);
        matrix(t, r, "V", n_kv, d_v, false);
        break;
    }
}

size_t fs_eq_random_lesson(fs_rng *r, int k, char *buf, size_t cap)
{
    text t = {buf, 0, cap};
    if (cap) buf[0] = 0;
    draw_lesson(r, k, &t);
    return t.n;
}

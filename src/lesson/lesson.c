/* lesson.c: reading a lesson file, running it on the engine, evaluating its expectations.
 *
 * Data flow: text ──split into records──> header keys, narration, expectations
 *            header keys ──> fs_run ──fs_run_exec──> trace and result (and, for pitfall
 *            lessons, the correct run beside it) ──> each expectation's target is looked up
 *            (trace field, output, score, count, expression) ──fs_claim_judge──> fs_check.
 *
 * A record starts in column 1; indented lines continue it (docs/lesson-format.md). Every error
 * names file:line:column of the place in the lesson (or in the matrix file it names).
 */
#include "lesson_internal.h"
#include "io/text.h"

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

/* Bounds on what a lesson may ask for, so that no file (or fuzzer) can request absurd work.
 * The fuzz build (tests/fuzz) lowers them and turns off file access. */
#ifndef FS_LESSON_MAX_ELEMS
#define FS_LESSON_MAX_ELEMS   (1 << 20)   /* per random matrix */
#endif
#ifndef FS_LESSON_MAX_SCORES
#define FS_LESSON_MAX_SCORES  (1LL << 24) /* heads · n_q · n_kv of a run */
#endif
#ifndef FS_LESSON_MAX_EVENTS
#define FS_LESSON_MAX_EVENTS  (1 << 21)
#endif
#define FS_LESSON_MAX_BYTES   (1 << 22)   /* lesson text */

/* ---- allocation: everything hangs off the lesson and is freed with it -------------------- */

static void *keep(fs_lesson *l, void *p)
{
    if (!p) return NULL;
    if (l->n_allocs == l->cap_allocs) {
        int32_t cap = l->cap_allocs ? l->cap_allocs * 2 : 64;
        void **a = realloc(l->allocs, sizeof(void *) * (size_t)cap);
        if (!a) {
            free(p);
            return NULL;
        }
        l->allocs = a;
        l->cap_allocs = cap;
    }
    l->allocs[l->n_allocs++] = p;
    return p;
}

/* Every string a lesson keeps from its file is kept escaped (src/io/text.h): a title, a
 * narration or a reason then reaches the terminal, the window and verify's Markdown with the
 * bytes that could drive a terminal shown as \xHH. */
static char *dupn(fs_lesson *l, const char *s, size_t n)
{
    char *d = fs_text_escape_dup(s, n);
    return d ? keep(l, d) : NULL;
}

/* The name the lesson was loaded under, byte for byte: it is a path to open again. */
static char *dup_raw(fs_lesson *l, const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n + 1);
    return keep(l, d);
}



/* ---- lines and records ------------------------------------------------------------------ */

typedef struct {
    const char *s;   /* start of the line in the text */
    size_t n;        /* length without the newline (and without a trailing '\r') */
} line_t;

static bool is_blank_or_comment(const line_t *ln)
{
    size_t i = 0;
    while (i < ln->n && (ln->s[i] == ' ' || ln->s[i] == '\t')) i++;
    return i == ln->n || ln->s[i] == '#';
}

static bool is_indented(const line_t *ln) { return ln->n > 0 && (ln->s[0] == ' ' || ln->s[0] == '\t'); }

/* Trimmed copy of s[a, b). */
static char *trimdup(fs_lesson *l, const char *s, size_t a, size_t b)
{
    while (a < b && isspace((unsigned char)s[a])) a++;
    while (b > a && isspace((unsigned char)s[b - 1])) b--;
    return dupn(l, s + a, b - a);
}

/* First non-blank column (0-based) of s[a, n), or n. */
static size_t skip_blank(const char *s, size_t a, size_t n)
{
    while (a < n && (s[a] == ' ' || s[a] == '\t')) a++;
    return a;
}

/* ---- parse state ------------------------------------------------------------------------ */

typedef enum { MAT_INLINE, MAT_FILE, MAT_RANDOM } mat_src;

typedef struct {
    bool set;
    int32_t line, col;      /* of the key */
    fs_matrix m;
} mat_t;

typedef struct {
    const char *sel;        /* "3" or "row qt=0 kt=0 row=1" */
    int32_t line, col;
    const char *text;
} narr_rec;

typedef struct {
    fs_check c;             /* filled as far as parsing goes */
    int32_t tcol;           /* column of the target */
    int32_t chain_line, chain_col;
    double tol;
    fs_unit unit;
    char *mask_rows;        /* for the whole-mask target: the rows as printed, ';'-joined */
    int32_t mask_n_rows, mask_n_cols;
    int32_t mask_line;
} expect_rec;

typedef struct {
    fs_lesson *l;
    const char *name;       /* for errors */
    char dir[PATH_MAX];     /* for relative file names */
    fs_loc_error *err;

    bool seen[64];          /* header keys given (index in key table) */
    int32_t key_line[64];
    int32_t key_col[64];    /* column of the value */

    int algo;               /* -1: none (claims only) */
    bool scene_set;
    mat_t z, Q, K, V, S, dO;
    int32_t n_qh, n_kvh;
    bool scale_set;
    double scale, softcap;
    fs_mask_kind mask;
    int32_t window, offset;
    bool offset_set;
    int32_t Bq, Bk, chunk, parts;
    fs_form form;
    fs_order order;
    bool exp2;
    fs_pitfall pitfall;
    fs_split split;
    fs_merge merge;

    narr_rec *narr;
    int32_t n_narr, cap_narr;
    expect_rec *ex;
    int32_t n_ex, cap_ex;
} parse_t;

enum {
    K_TITLE, K_SOURCE, K_ALGO, K_SCENE, K_INTRO, K_LABELS, K_Z, K_CHUNK, K_Q, K_K, K_V, K_S,
    K_HEADS, K_SCALE, K_SOFTCAP, K_MASK, K_OFFSET, K_TREE, K_BQ, K_BK, K_FORM, K_ORDER, K_EXP2,
    K_PITFALL, K_SPLIT, K_PARTS, K_MERGE, K_DO, K_COUNT
};
static const char *key_names[K_COUNT] = {
    "title", "source", "algo", "scene", "intro", "labels", "z", "chunk", "Q", "K", "V", "S",
    "heads", "scale", "softcap", "mask", "offset", "tree", "bq", "bk", "form", "order", "exp2",
    "pitfall", "split", "parts", "merge", "dO"};

static const char *scene_names[FS_SCENE_COUNT] = {"softmax", "query",   "tiled",   "tree",  "window",
                                                  "gqa",     "decode",  "pitfall", "claims", "backward"};

const char *fs_scene_str(fs_scene s) { return (unsigned)s < FS_SCENE_COUNT ? scene_names[s] : "?"; }

/* Match word against a list; index or -1. */
static int lookup(const char *w, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(w, names[i])) return i;
    return -1;
}

/* Text of a record: the value on the key's line plus its continuation lines, joined with a
 * space; a continuation line that is just "." starts a new paragraph. */
static char *record_text(parse_t *P, const line_t *lines, int32_t i, int32_t j, size_t vstart)
{
    size_t cap = 1;
    for (int32_t k = i; k < j; k++) cap += lines[k].n + 2;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    size_t n = 0;
    for (int32_t k = i; k < j; k++) {
        const line_t *ln = &lines[k];
        size_t a = k == i ? vstart : 0;
        if (k > i && is_blank_or_comment(ln)) continue;
        a = skip_blank(ln->s, a, ln->n);
        size_t b = ln->n;
        while (b > a && isspace((unsigned char)ln->s[b - 1])) b--;
        if (b - a == 1 && ln->s[a] == '.' && k > i) {
            if (n > 0) {
                buf[n++] = '\n';
                buf[n++] = '\n';
            }
            continue;
        }
        if (a == b) continue;
        if (n > 0 && buf[n - 1] != '\n') buf[n++] = ' ';
        memcpy(buf + n, ln->s + a, b - a);
        n += b - a;
    }
    buf[n] = 0;
    char *safe = fs_text_escape_dup(buf, n);
    free(buf);
    return safe ? keep(P->l, safe) : NULL;
}

/* A copy of lines [i, j) with the first 'blank' bytes of line i replaced by spaces, so that a
 * number parser reports the columns of the lesson file. */
static char *blanked_block(const line_t *lines, int32_t i, int32_t j, size_t blank, size_t *len)
{
    const char *a = lines[i].s;
    const char *b = lines[j - 1].s + lines[j - 1].n;
    size_t n = (size_t)(b - a);
    char *t = malloc(n + 1);
    if (!t) return NULL;
    memcpy(t, a, n);
    t[n] = 0;
    for (size_t k = 0; k < blank && k < n && t[k] != '\n'; k++) t[k] = ' ';
    *len = n;
    return t;
}

/* ---- random matrices (reproducible: splitmix64, Box–Muller) ----------------------------- */

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unif(uint64_t *s) { return ((double)(mix(s) >> 11) + 0.5) * 0x1.0p-53; }

static void fill_random(double *x, long n, uint64_t seed, bool normal)
{
    uint64_t s = seed;
    for (long i = 0; i < n; i++) {
        if (normal) {
            double u1 = unif(&s), u2 = unif(&s);
            x[i] = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
        } else {
            x[i] = 2.0 * unif(&s) - 1.0;
        }
    }
}

/* ---- header keys ------------------------------------------------------------------------ */

static bool parse_int(parse_t *P, const char *v, int32_t line, int32_t col, long lo, long hi,
                      int32_t *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno)
        return fs_loc_error_set(P->err, P->name, line, col, "expected an integer, got '%s'", v);
    if (x < lo || x > hi)
        return fs_loc_error_set(P->err, P->name, line, col, "%ld is out of range [%ld, %ld]", x, lo, hi);
    *out = (int32_t)x;
    return true;
}

static bool parse_matrix(parse_t *P, mat_t *M, const char *key, const line_t *lines, int32_t i,
                         int32_t j, size_t vstart, const char *v, bool allow_neg_inf)
{
    int32_t line = i + 1, col = (int32_t)skip_blank(lines[i].s, vstart, lines[i].n) + 1;
    M->set = true;
    M->line = line;
    M->col = 1;
    if (!*v) {
        if (j == i + 1)
            return fs_loc_error_set(P->err, P->name, line, col,
                           "%s: give the rows on the indented lines below, 'file PATH' or "
                           "'random ROWSxCOLS'", key);
        const char *a = lines[i + 1].s;
        const char *b = lines[j - 1].s + lines[j - 1].n;
        return fs_matrix_parse_text(a, (size_t)(b - a), P->name, i + 2, allow_neg_inf, &M->m, P->err);
    }
    if (!strncmp(v, "file", 4) && (v[4] == ' ' || v[4] == '\t')) {
#ifdef FS_LESSON_NO_FILES
        return fs_loc_error_set(P->err, P->name, line, col, "file access is off in this build");
#endif
        const char *path = v + 4;
        while (*path == ' ' || *path == '\t') path++;
        char full[PATH_MAX + 256];
        if (path[0] == '/') snprintf(full, sizeof full, "%s", path);
        else snprintf(full, sizeof full, "%s%s", P->dir, path);
        fs_loc_error e;
        memset(&e, 0, sizeof e);
        if (!fs_matrix_read(full, allow_neg_inf, &M->m, &e)) {
            if (e.line > 0) {
                *P->err = e;
                return false;
            }
            return fs_loc_error_set(P->err, P->name, line, col + (int32_t)(path - v), "%s: %s", full, e.msg);
        }
        return true;
    }
    if (!strncmp(v, "random", 6) && (v[6] == ' ' || v[6] == '\t')) {
        long rows = 0, cols = 0;
        uint64_t seed = 0;
        bool normal = true;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", v + 6);
        char *save = NULL;
        int k = 0;
        for (char *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save), k++) {
            int32_t tcol = col + 6 + (int32_t)(tok - buf);
            if (k == 0) {
                char *x, *end;
                rows = strtol(tok, &x, 10);
                if (x == tok || *x != 'x' || (cols = strtol(x + 1, &end, 10), end == x + 1 || *end))
                    return fs_loc_error_set(P->err, P->name, line, tcol, "expected ROWSxCOLS, got '%s'", tok);
                if (rows < 1 || cols < 1 || rows > FS_LESSON_MAX_ELEMS || cols > FS_LESSON_MAX_ELEMS ||
                    rows * cols > FS_LESSON_MAX_ELEMS)
                    return fs_loc_error_set(P->err, P->name, line, tcol,
                                   "random matrix must have 1 to %d elements", FS_LESSON_MAX_ELEMS);
            } else if (!strncmp(tok, "seed=", 5)) {
                char *end;
                errno = 0;
                seed = strtoull(tok + 5, &end, 10);
                /* strtoull would wrap "-1" and saturate an overlong number: refuse both */
                if (end == tok + 5 || *end || tok[5] == '-' || tok[5] == '+' || errno == ERANGE)
                    return fs_loc_error_set(P->err, P->name, line, tcol,
                                   "seed must be an integer from 0 to 18446744073709551615");
            } else if (!strcmp(tok, "dist=normal")) {
                normal = true;
            } else if (!strcmp(tok, "dist=uniform")) {
                normal = false;
            } else {
                return fs_loc_error_set(P->err, P->name, line, tcol,
                               "unknown option '%s' (seed=N, dist=normal|uniform)", tok);
            }
        }
        if (k == 0) return fs_loc_error_set(P->err, P->name, line, col, "random needs ROWSxCOLS");
        M->m.rows = (int32_t)rows;
        M->m.cols = (int32_t)cols;
        M->m.data = malloc(sizeof(double) * (size_t)(rows * cols));
        if (!M->m.data) return fs_loc_error_set(P->err, P->name, line, col, "out of memory");
        fill_random(M->m.data, rows * cols, seed, normal);
        return true;
    }
    /* Numbers on the key's own line (and maybe more below): z, or a one-row matrix. */
    size_t len;
    char *t = blanked_block(lines, i, j, vstart, &len);
    if (!t) return fs_loc_error_set(P->err, P->name, line, col, "out of memory");
    bool ok = fs_matrix_parse_text(t, len, P->name, line, allow_neg_inf, &M->m, P->err);
    free(t);
    return ok;
}

static bool header_key(parse_t *P, int key, const line_t *lines, int32_t i, int32_t j, size_t vstart)
{
    fs_lesson *l = P->l;
    const line_t *ln = &lines[i];
    int32_t line = i + 1, col = (int32_t)skip_blank(ln->s, vstart, ln->n) + 1;   /* the value */
    char *v = trimdup(l, ln->s, vstart, ln->n);
    if (!v) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
    if (P->seen[key])
        return fs_loc_error_set(P->err, P->name, line, 1, "'%s' given twice (first on line %d)", key_names[key],
                       P->key_line[key]);
    P->seen[key] = true;
    P->key_line[key] = line;
    P->key_col[key] = col;
    bool single_line = key != K_INTRO && key != K_TITLE && key != K_SOURCE && key != K_Q &&
                       key != K_K && key != K_V && key != K_S && key != K_Z && key != K_TREE &&
                       key != K_LABELS && key != K_DO;
    if (single_line)
        for (int32_t k = i + 1; k < j; k++)
            if (!is_blank_or_comment(&lines[k]))
                return fs_loc_error_set(P->err, P->name, k + 1, 1, "'%s' takes one line; unexpected indented line",
                               key_names[key]);
    switch (key) {
    case K_TITLE: l->title = record_text(P, lines, i, j, vstart); break;
    case K_SOURCE: l->source = record_text(P, lines, i, j, vstart); break;
    case K_INTRO: l->intro = record_text(P, lines, i, j, vstart); break;
    case K_ALGO: {
        static const char *const algos[] = {"reference", "softmax", "query", "tiled", "decode", "backward"};
        if (!strcmp(v, "none")) {
            P->algo = -1;
            break;
        }
        P->algo = lookup(v, algos, 6);
        if (P->algo < 0)
            return fs_loc_error_set(P->err, P->name, line, col,
                           "unknown algo '%s' (softmax, query, tiled, decode, reference, backward, none)", v);
        break;
    }
    case K_SCENE: {
        int s = lookup(v, scene_names, FS_SCENE_COUNT);
        if (s < 0)
            return fs_loc_error_set(P->err, P->name, line, col,
                           "unknown scene '%s' (softmax query tiled tree window gqa decode pitfall claims backward)", v);
        l->scene = (fs_scene)s;
        P->scene_set = true;
        break;
    }
    case K_LABELS: {
        char *t = record_text(P, lines, i, j, vstart);
        if (!t) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
        int32_t n = 0;
        for (char *p = t; *p;) {
            while (*p == ' ') p++;
            if (!*p) break;
            n++;
            while (*p && *p != ' ') p++;
        }
        l->labels = keep(l, calloc((size_t)(n ? n : 1), sizeof(char *)));
        if (!l->labels) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
        char *save = NULL;
        for (char *tok = strtok_r(t, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
            l->labels[l->n_labels++] = tok;
        break;
    }
    case K_Z: return parse_matrix(P, &P->z, "z", lines, i, j, vstart, v, true);
    case K_Q: return parse_matrix(P, &P->Q, "Q", lines, i, j, vstart, v, false);
    case K_K: return parse_matrix(P, &P->K, "K", lines, i, j, vstart, v, false);
    case K_V: return parse_matrix(P, &P->V, "V", lines, i, j, vstart, v, false);
    case K_DO: return parse_matrix(P, &P->dO, "dO", lines, i, j, vstart, v, false);
    case K_S: return parse_matrix(P, &P->S, "S", lines, i, j, vstart, v, true);
    case K_CHUNK: return parse_int(P, v, line, col, 1, FS_MAX_DIM, &P->chunk);
    case K_BQ: return parse_int(P, v, line, col, 1, FS_MAX_DIM, &P->Bq);
    case K_BK: return parse_int(P, v, line, col, 1, FS_MAX_DIM, &P->Bk);
    case K_PARTS: return parse_int(P, v, line, col, 1, FS_MAX_DIM, &P->parts);
    case K_OFFSET:
        P->offset_set = true;
        return parse_int(P, v, line, col, -FS_MAX_DIM, FS_MAX_DIM, &P->offset);
    case K_HEADS: {
        char a[32], b[32], extra[8];
        int n = sscanf(v, "%31s %31s %7s", a, b, extra);
        if (n != 2) return fs_loc_error_set(P->err, P->name, line, col, "heads: expected 'NQ NKV', e.g. '32 8'");
        if (!parse_int(P, a, line, col, 1, FS_MAX_HEADS, &P->n_qh)) return false;
        if (!parse_int(P, b, line, col + (int32_t)(strstr(v, b) - v), 1, FS_MAX_HEADS, &P->n_kvh))
            return false;
        if (P->n_qh % P->n_kvh)
            return fs_loc_error_set(P->err, P->name, line, col, "%d query heads are not a multiple of %d KV heads",
                           P->n_qh, P->n_kvh);
        break;
    }
    case K_SCALE:
    case K_SOFTCAP: {
        double x;
        if (!fs_expr_eval(v, strlen(v), P->name, line, col, &x, P->err)) return false;
        if (!isfinite(x) || (key == K_SOFTCAP && x < 0))
            return fs_loc_error_set(P->err, P->name, line, col, "%s must be a finite%s number", key_names[key],
                           key == K_SOFTCAP ? " non-negative" : "");
        if (key == K_SCALE) {
            P->scale = x;
            P->scale_set = true;
        } else {
            P->softcap = x;
        }
        break;
    }
    case K_MASK:
        if (!strcmp(v, "none")) P->mask = FS_MASK_NONE;
        else if (!strcmp(v, "causal")) P->mask = FS_MASK_CAUSAL;
        else if (!strcmp(v, "tree")) P->mask = FS_MASK_BITS;
        else if (!strncmp(v, "window", 6) && (v[6] == ' ' || v[6] == '\t')) {
            P->mask = FS_MASK_WINDOW;
            const char *w = v + 6;
            while (*w == ' ' || *w == '\t') w++;
            return parse_int(P, w, line, col + (int32_t)(w - v), 1, FS_MAX_DIM, &P->window);
        } else
            return fs_loc_error_set(P->err, P->name, line, col, "unknown mask '%s' (none, causal, window W, tree)", v);
        break;
    case K_TREE: {
        size_t len;
        char *t = blanked_block(lines, i, j, vstart, &len);
        if (!t) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
        int32_t *par = NULL, n = 0;
        bool ok = fs_ints_parse_text(t, len, P->name, line, &par, &n, P->err);
        free(t);
        if (!ok) return false;
        l->parent = keep(l, par);
        l->n_parent = n;
        if (!l->parent) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
        break;
    }
    case K_FORM:
        if (!strcmp(v, "normalized")) P->form = FS_FORM_NORMALIZED;
        else if (!strcmp(v, "unnormalized")) P->form = FS_FORM_UNNORMALIZED;
        else return fs_loc_error_set(P->err, P->name, line, col, "unknown form '%s' (normalized, unnormalized)", v);
        break;
    case K_ORDER:
        if (!strcmp(v, "q-outer")) P->order = FS_ORDER_Q_OUTER;
        else if (!strcmp(v, "kv-outer")) P->order = FS_ORDER_KV_OUTER;
        else return fs_loc_error_set(P->err, P->name, line, col, "unknown order '%s' (q-outer, kv-outer)", v);
        break;
    case K_EXP2:
        if (!strcmp(v, "yes")) P->exp2 = true;
        else if (!strcmp(v, "no")) P->exp2 = false;
        else return fs_loc_error_set(P->err, P->name, line, col, "exp2: expected yes or no");
        break;
    case K_PITFALL: {
        int k = -1;
        for (int p = 0; p < FS_PITFALL_COUNT; p++)
            if (!strcmp(v, fs_pitfall_str((fs_pitfall)p))) k = p;
        if (k < 0)
            return fs_loc_error_set(P->err, P->name, line, col,
                           "unknown pitfall '%s' (none no-rescale global-max-no-beta block-max-no-beta "
                           "masked-nan masked-doc-fix)", v);
        P->pitfall = (fs_pitfall)k;
        break;
    }
    case K_SPLIT:
        if (!strcmp(v, "contiguous")) P->split = FS_SPLIT_CONTIGUOUS;
        else if (!strcmp(v, "strided")) P->split = FS_SPLIT_STRIDED;
        else return fs_loc_error_set(P->err, P->name, line, col, "unknown split '%s' (contiguous, strided)", v);
        break;
    case K_MERGE:
        if (!strcmp(v, "sequential")) P->merge = FS_MERGE_SEQUENTIAL;
        else if (!strcmp(v, "tree")) P->merge = FS_MERGE_TREE;
        else return fs_loc_error_set(P->err, P->name, line, col, "unknown merge '%s' (sequential, tree)", v);
        break;
    }
    return true;
}

/* ---- narration and expectations (parsed now, resolved after the run) -------------------- */

static bool add_narr(parse_t *P, const line_t *lines, int32_t i, int32_t j)
{
    const line_t *ln = &lines[i];
    size_t a = skip_blank(ln->s, 4, ln->n), c = a;
    while (c < ln->n && ln->s[c] != ':') c++;
    if (c == ln->n)
        return fs_loc_error_set(P->err, P->name, i + 1, (int32_t)ln->n + 1, "step: expected 'step N: text'");
    if (c == a) return fs_loc_error_set(P->err, P->name, i + 1, (int32_t)a + 1, "step: which step? ('step N: text')");
    if (P->n_narr == P->cap_narr) {
        int32_t cap = P->cap_narr ? P->cap_narr * 2 : 32;
        narr_rec *n = realloc(P->narr, sizeof *n * (size_t)cap);
        if (!n) return fs_loc_error_set(P->err, P->name, i + 1, 1, "out of memory");
        P->narr = n;
        P->cap_narr = cap;
    }
    narr_rec *r = &P->narr[P->n_narr++];
    r->sel = trimdup(P->l, ln->s, a, c);
    r->line = i + 1;
    r->col = (int32_t)a + 1;
    r->text = record_text(P, lines, i, j, c + 1);
    if (!r->sel || !r->text) return fs_loc_error_set(P->err, P->name, i + 1, 1, "out of memory");
    return true;
}

static const char *const attr_names[] = {"claim", "section", "verdict", "chain", "tol", "why", "own"};

static bool add_expect(parse_t *P, const line_t *lines, int32_t i, int32_t j)
{
    fs_lesson *l = P->l;
    const line_t *ln = &lines[i];
    int32_t line = i + 1;
    if (P->n_ex == P->cap_ex) {
        int32_t cap = P->cap_ex ? P->cap_ex * 2 : 32;
        expect_rec *n = realloc(P->ex, sizeof *n * (size_t)cap);
        if (!n) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
        P->ex = n;
        P->cap_ex = cap;
    }
    expect_rec *r = &P->ex[P->n_ex];
    memset(r, 0, sizeof *r);
    r->c.line = line;
    r->c.col = 1;
    r->c.why = "";
    r->c.expected_reading = "";
    r->c.unit = "";
    r->c.section = NULL;

    /* expect TARGET OP [~]PRINTED [UNIT]: split at the last operator with blanks around it
     * (OP is "=", or a bound "<=", "<", ">=", ">"). */
    size_t a = skip_blank(ln->s, 6, ln->n);
    size_t eq = SIZE_MAX, oplen = 0;
    for (size_t k = a; k < ln->n; k++) {
        size_t L = 0;
        if (ln->s[k] == '=' ) L = 1;
        else if ((ln->s[k] == '<' || ln->s[k] == '>') && k + 1 < ln->n && ln->s[k + 1] == '=') L = 2;
        else if (ln->s[k] == '<' || ln->s[k] == '>') L = 1;
        if (!L) continue;
        bool before = k > 0 && (ln->s[k - 1] == ' ' || ln->s[k - 1] == '\t');
        bool after = k + L == ln->n || ln->s[k + L] == ' ' || ln->s[k + L] == '\t';
        if (before && after) {
            eq = k;
            oplen = L;
        }
        k += L - 1;
    }
    if (eq == SIZE_MAX)
        return fs_loc_error_set(P->err, P->name, line, (int32_t)ln->n + 1,
                       "expect: expected 'expect TARGET = PRINTED [UNIT]' (spaces around '=')");
    r->c.op = dupn(l, ln->s + eq, oplen);
    if (!r->c.op) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
    r->c.target = trimdup(l, ln->s, a, eq);
    r->tcol = (int32_t)a + 1;
    if (!r->c.target) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
    if (!*r->c.target) return fs_loc_error_set(P->err, P->name, line, (int32_t)a + 1, "expect: the target is missing");

    size_t p = skip_blank(ln->s, eq + oplen, ln->n);
    bool matrix = p == ln->n;
    if (!matrix) {
        if (ln->s[p] == '~') {
            r->c.approx_marked = true;
            p = skip_blank(ln->s, p + 1, ln->n);
        }
        size_t q = p;
        while (q < ln->n && ln->s[q] != ' ' && ln->s[q] != '\t') q++;
        r->c.printed = dupn(l, ln->s + p, q - p);
        double pv, ph;
        if (!r->c.printed || !fs_printed_parse(r->c.printed, &pv, &ph))
            return fs_loc_error_set(P->err, P->name, line, (int32_t)p + 1, "not a printed number: '%.*s'",
                           (int)(q - p), ln->s + p);
        size_t u = skip_blank(ln->s, q, ln->n);
        if (u < ln->n) {
            char *us = trimdup(l, ln->s, u, ln->n);
            if (!us) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
            if (!fs_unit_parse(us, &r->unit))
                return fs_loc_error_set(P->err, P->name, line, (int32_t)u + 1,
                               "unknown unit '%s' (B KB MB GB TB KiB MiB GiB TiB K M G s ms us x FLOP/B %%)", us);
            r->c.unit = fs_unit_str(r->unit);
        }
    }

    /* Continuation: rows of 0/1 for a whole-mask target, then attributes. */
    int32_t k = i + 1;
    if (matrix) {
        if (strcmp(r->c.target, "mask") || strcmp(r->c.op, "="))
            return fs_loc_error_set(P->err, P->name, line, (int32_t)eq + 2,
                           "expect: the printed value is missing after '='");
        size_t cap = 1;
        for (int32_t t = k; t < j; t++) cap += lines[t].n + 1;
        char *rows = malloc(cap);
        if (!rows) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
        size_t n = 0;
        r->mask_line = k + 1;
        for (; k < j; k++) {
            const line_t *c = &lines[k];
            if (is_blank_or_comment(c)) continue;
            size_t s = skip_blank(c->s, 0, c->n);
            if (!isdigit((unsigned char)c->s[s]) && c->s[s] != '[') break;
            int32_t cols = 0;
            for (size_t t = s; t < c->n; t++) {
                char ch = c->s[t];
                if (ch == '0' || ch == '1') {
                    rows[n++] = ch;
                    cols++;
                } else if (ch != ' ' && ch != '\t' && ch != '[' && ch != ']' && ch != ',') {
                    free(rows);
                    return fs_loc_error_set(P->err, P->name, k + 1, (int32_t)t + 1,
                                   "mask rows hold 0 and 1 only, got '%c'", ch);
                }
            }
            if (r->mask_n_rows > 0 && cols != r->mask_n_cols) {
                free(rows);
                return fs_loc_error_set(P->err, P->name, k + 1, (int32_t)s + 1,
                               "mask row has %d entries, expected %d", cols, r->mask_n_cols);
            }
            r->mask_n_cols = cols;
            r->mask_n_rows++;
            rows[n++] = ';';
        }
        if (n > 0) n--;   /* drop the last ';' */
        rows[n] = 0;
        r->mask_rows = keep(l, rows);
        if (r->mask_n_rows == 0)
            return fs_loc_error_set(P->err, P->name, line, (int32_t)eq + 2,
                           "expect mask =: give the rows of 0/1 on the indented lines below");
        r->c.printed = r->mask_rows;
    }
    const char **last_text = NULL;   /* claim, section or why: a deeper line continues it */
    size_t attr_indent = 0;
    for (; k < j; k++) {
        const line_t *c = &lines[k];
        if (is_blank_or_comment(c)) continue;
        size_t s = skip_blank(c->s, 0, c->n), e = s;
        while (e < c->n && c->s[e] != ':' && c->s[e] != ' ') e++;
        if (last_text && s > attr_indent) {
            size_t ol = strlen(*last_text);
            char *more = trimdup(l, c->s, s, c->n);
            char *joined = more ? malloc(ol + strlen(more) + 2) : NULL;
            if (!joined) return fs_loc_error_set(P->err, P->name, k + 1, 1, "out of memory");
            snprintf(joined, ol + strlen(more) + 2, "%s %s", *last_text, more);
            *last_text = keep(l, joined);
            continue;
        }
        attr_indent = s;
        last_text = NULL;
        if (e == c->n || c->s[e] != ':')
            return fs_loc_error_set(P->err, P->name, k + 1, (int32_t)s + 1,
                           "expected an attribute 'key: value' (claim, section, verdict, chain, tol, why, own)");
        char *key = dupn(l, c->s + s, e - s);
        char *val = trimdup(l, c->s, e + 1, c->n);
        int32_t vcol = (int32_t)skip_blank(c->s, e + 1, c->n) + 1;
        if (!key || !val) return fs_loc_error_set(P->err, P->name, k + 1, 1, "out of memory");
        int at = lookup(key, attr_names, 7);
        switch (at) {
        case 0: r->c.claim = val; last_text = &r->c.claim; break;
        case 1: r->c.section = val; last_text = &r->c.section; break;
        case 2: {
            char w1[32] = "", w2[32] = "", w3[8] = "";
            int n = sscanf(val, "%31s %31s %7s", w1, w2, w3);
            fs_verdict v;
            if (n < 1 || !fs_verdict_parse(w1, &v))
                return fs_loc_error_set(P->err, P->name, k + 1, vcol,
                               "unknown verdict '%s' (holds, units decimal|binary, rounded-intermediates, "
                               "approximate, erratum)", val);
            if (v == FS_VERDICT_UNITS) {
                if (n != 2 || (strcmp(w2, "decimal") && strcmp(w2, "binary")))
                    return fs_loc_error_set(P->err, P->name, k + 1, vcol, "verdict units: say which reading: "
                                   "'units decimal' or 'units binary'");
                r->c.expected_reading = !strcmp(w2, "decimal") ? "decimal" : "binary";
            } else if (n != 1) {
                return fs_loc_error_set(P->err, P->name, k + 1, vcol, "verdict: one word expected, got '%s'", val);
            }
            r->c.expected = v;
            break;
        }
        case 3:
            r->c.chain = val;
            r->chain_line = k + 1;
            r->chain_col = vcol;
            break;
        case 4: {
            char *end;
            double t = strtod(val, &end);
            if (end != val && *end == '%' && !end[1]) t /= 100;
            else if (end == val || *end) t = -1;
            if (!(t > 0 && t < 10))
                return fs_loc_error_set(P->err, P->name, k + 1, vcol, "tol: expected a positive number or a percentage");
            r->tol = t;
            break;
        }
        case 5: r->c.why = val; last_text = &r->c.why; break;
        case 6:
            if (!strcmp(val, "yes")) r->c.own = true;
            else if (!strcmp(val, "no")) r->c.own = false;
            else return fs_loc_error_set(P->err, P->name, k + 1, vcol, "own: expected yes or no");
            break;
        default:
            return fs_loc_error_set(P->err, P->name, k + 1, (int32_t)s + 1,
                           "unknown attribute '%s' (claim, section, verdict, chain, tol, why, own)", key);
        }
    }
    if (!r->c.claim) r->c.claim = r->c.target;
    P->n_ex++;
    return true;
}

/* ---- building and running --------------------------------------------------------------- */

static double *keep_matrix(fs_lesson *l, mat_t *M)
{
    double *d = M->m.data;
    M->m.data = NULL;
    return keep(l, d);
}

static bool build_and_run(parse_t *P)
{
    fs_lesson *l = P->l;
    fs_loc_error *err = P->err;
    int32_t aline = P->key_line[K_ALGO];
    if (P->algo < 0) {
        static const int mats[] = {K_Z, K_Q, K_K, K_V, K_S, K_TREE, K_DO};
        for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++)
            if (P->seen[mats[k]])
                return fs_loc_error_set(err, P->name, P->key_line[mats[k]], 1,
                               "'%s:' is not used with algo: none (a claims-only lesson)", key_names[mats[k]]);
        if (!P->scene_set) l->scene = FS_SCENE_CLAIMS;
        return true;
    }
    fs_run *r = &l->run;
    *r = fs_run_make((fs_algo)P->algo);
    if (P->algo == FS_ALGO_SOFTMAX) {
        if (!P->z.set) return fs_loc_error_set(err, P->name, aline, 1, "algo: softmax needs 'z:'");
        r->n_z = P->z.m.rows * P->z.m.cols;
        r->z = l->z = keep_matrix(l, &P->z);
        r->chunk = P->chunk ? P->chunk : 1;
        if (!r->z) return fs_loc_error_set(err, P->name, aline, 1, "out of memory");
        if (!P->scene_set) l->scene = FS_SCENE_SOFTMAX;
    } else {
        if (P->z.set) return fs_loc_error_set(err, P->name, P->z.line, 1, "'z:' belongs to algo: softmax");
        if (!P->V.set && !P->S.set) return fs_loc_error_set(err, P->name, aline, 1, "this algo needs 'V:'");
        if (!P->S.set && (!P->Q.set || !P->K.set))
            return fs_loc_error_set(err, P->name, aline, 1, "algo needs 'Q:' and 'K:' (or the scores 'S:')");
        if (P->S.set && (P->Q.set || P->K.set))
            return fs_loc_error_set(err, P->name, P->S.line, 1, "give either the scores 'S:' or 'Q:' and 'K:', not both");
        int32_t hq = P->n_qh ? P->n_qh : 1, hkv = P->n_kvh ? P->n_kvh : 1;
        fs_attn *a = &r->attn;
        int32_t nq, nkv, d;
        if (P->S.set) {
            if (P->S.m.rows % hq)
                return fs_loc_error_set(err, P->name, P->S.line, 1, "S has %d rows, not a multiple of %d heads",
                               P->S.m.rows, hq);
            nq = P->S.m.rows / hq;
            nkv = P->S.m.cols;
            d = 1;
        } else {
            if (P->Q.m.rows % hq)
                return fs_loc_error_set(err, P->name, P->Q.line, 1, "Q has %d rows, not a multiple of %d query heads",
                               P->Q.m.rows, hq);
            if (P->K.m.rows % hkv)
                return fs_loc_error_set(err, P->name, P->K.line, 1, "K has %d rows, not a multiple of %d KV heads",
                               P->K.m.rows, hkv);
            if (P->Q.m.cols != P->K.m.cols)
                return fs_loc_error_set(err, P->name, P->K.line, 1, "K has %d columns but Q has %d (both are d)",
                               P->K.m.cols, P->Q.m.cols);
            nq = P->Q.m.rows / hq;
            nkv = P->K.m.rows / hkv;
            d = P->Q.m.cols;
        }
        if (!P->V.set) {
            /* Scores given and no V: V = identity per KV head, so that O = P (001's walk). */
            if ((long long)hkv * nkv * nkv > FS_LESSON_MAX_ELEMS)
                return fs_loc_error_set(err, P->name, P->S.line, 1, "too many keys for an identity V; give 'V:'");
            P->V.m.rows = hkv * nkv;
            P->V.m.cols = nkv;
            P->V.m.data = calloc((size_t)hkv * nkv * nkv, sizeof(double));
            if (!P->V.m.data) return fs_loc_error_set(err, P->name, aline, 1, "out of memory");
            for (int32_t h = 0; h < hkv; h++)
                for (int32_t j = 0; j < nkv; j++) P->V.m.data[((size_t)h * nkv + j) * nkv + j] = 1.0;
            P->V.line = P->S.line;
        }
        if (P->V.m.rows != nkv * hkv)
            return fs_loc_error_set(err, P->name, P->V.line, 1, "V has %d rows, expected %d (one per key%s)",
                           P->V.m.rows, nkv * hkv, hkv > 1 ? " and KV head" : "");
        if ((long long)hq * nq * nkv > FS_LESSON_MAX_SCORES)
            return fs_loc_error_set(err, P->name, aline, 1, "problem too large for a lesson (%d heads × %d × %d scores)",
                           hq, nq, nkv);
        *a = fs_attn_make(nq, nkv, d, P->V.m.cols);
        a->n_q_heads = hq;
        a->n_kv_heads = hkv;
        if (P->S.set) a->S = l->S = keep_matrix(l, &P->S);
        else {
            a->Q = l->Q = keep_matrix(l, &P->Q);
            a->K = l->K = keep_matrix(l, &P->K);
        }
        a->V = l->V = keep_matrix(l, &P->V);
        a->scale = P->scale_set ? P->scale : (P->S.set ? 1.0 : fs_attn_default_scale(d));
        a->softcap = P->softcap;
        a->mask.kind = P->mask;
        a->mask.window = P->window;
        a->mask.has_offset = P->offset_set;
        a->mask.offset = P->offset;
        if (l->parent || P->mask == FS_MASK_BITS) {
            int32_t tl = P->seen[K_TREE] ? P->key_line[K_TREE] : P->key_line[K_MASK];
            if (!l->parent) return fs_loc_error_set(err, P->name, tl, 1, "mask: tree needs 'tree:' (the parent array)");
            if (l->n_parent != nq || nq != nkv)
                return fs_loc_error_set(err, P->name, tl, 1,
                               "the tree has %d positions but there are %d queries and %d keys (all must agree)",
                               l->n_parent, nq, nkv);
            int32_t words = fs_mask_words(nq);
            l->bits = keep(l, calloc((size_t)nq * (size_t)words, sizeof(uint64_t)));
            if (!l->bits) return fs_loc_error_set(err, P->name, tl, 1, "out of memory");
            int32_t bad = -1;
            fs_status st = fs_mask_tree_build(l->parent, nq, l->bits, &bad);
            if (st != FS_OK)
                return fs_loc_error_set(err, P->name, P->key_line[K_TREE], P->key_col[K_TREE],
                               "not a tree: %s at position %d (one root -1, parents in range, no cycles)",
                               fs_status_str(st), bad);
            fs_mask tm = fs_mask_tree(l->bits, nq);
            tm.has_offset = true;
            tm.offset = 0;
            a->mask = tm;
        }
        /* Keys that one algorithm reads and another would silently ignore. */
        static const struct { int key; fs_algo algo; } only[] = {
            {K_BQ, FS_ALGO_TILED},      {K_ORDER, FS_ALGO_TILED}, {K_PITFALL, FS_ALGO_TILED},
            {K_SPLIT, FS_ALGO_DECODE},  {K_PARTS, FS_ALGO_DECODE}, {K_MERGE, FS_ALGO_DECODE},
            {K_DO, FS_ALGO_BACKWARD},   {K_FORM, FS_ALGO_COUNT},  {K_EXP2, FS_ALGO_COUNT}};
        int first = -1;   /* the misplaced key nearest the top of the file */
        for (int k = 0; k < (int)(sizeof only / sizeof only[0]); k++) {
            /* the backward reads the tiles and the order, but not the forward's form or exp2 */
            bool backward_reads = only[k].key == K_BQ || only[k].key == K_ORDER;
            bool applies = only[k].algo == FS_ALGO_COUNT ? P->algo != FS_ALGO_BACKWARD
                                                         : P->algo == (int)only[k].algo ||
                                                               (backward_reads && P->algo == FS_ALGO_BACKWARD);
            if (P->seen[only[k].key] && !applies &&
                (first < 0 || P->key_line[only[k].key] < P->key_line[only[first].key]))
                first = k;
        }
        if (first >= 0 && only[first].algo == FS_ALGO_COUNT)
            return fs_loc_error_set(err, P->name, P->key_line[only[first].key], 1,
                                    "'%s:' does not apply to algo: backward", key_names[only[first].key]);
        if (first >= 0)
            return fs_loc_error_set(err, P->name, P->key_line[only[first].key], 1, "'%s:' applies to algo: %s%s only",
                           key_names[only[first].key], fs_algo_str(only[first].algo),
                           only[first].key == K_BQ || only[first].key == K_ORDER ? " and backward" : "");
        if (P->dO.set) {
            if (P->dO.m.rows != hq * nq || P->dO.m.cols != P->V.m.cols)
                return fs_loc_error_set(err, P->name, P->dO.line, 1, "dO is %d x %d but O is %d x %d (one row per query%s)",
                                        P->dO.m.rows, P->dO.m.cols, hq * nq, P->V.m.cols, hq > 1 ? " and head" : "");
            r->dO = keep_matrix(l, &P->dO);
            if (!r->dO) return fs_loc_error_set(err, P->name, aline, 1, "out of memory");
        }
        r->tiling.Bq = P->Bq ? P->Bq : 64;
        r->tiling.Bk = P->Bk ? P->Bk : 64;
        /* 000's one-query walk is unnormalized (divide once at the end) unless told otherwise */
        r->tiling.form = P->algo == FS_ALGO_QUERY && !P->seen[K_FORM] ? FS_FORM_UNNORMALIZED : P->form;
        r->tiling.order = P->order;
        r->tiling.exp2 = P->exp2;
        r->tiling.pitfall = P->pitfall;
        r->decoding.split = P->split;
        r->decoding.Bk = P->Bk ? P->Bk : 64;
        r->decoding.parts = P->parts ? P->parts : 1;
        r->decoding.merge = P->merge;
        r->decoding.form = P->form;
        if (!P->scene_set) {
            if (P->algo == FS_ALGO_QUERY) l->scene = FS_SCENE_QUERY;
            else if (P->algo == FS_ALGO_BACKWARD) l->scene = FS_SCENE_BACKWARD;
            else if (P->algo == FS_ALGO_DECODE) l->scene = FS_SCENE_DECODE;
            else if (P->pitfall != FS_PITFALL_NONE) l->scene = FS_SCENE_PITFALL;
            else if (a->mask.is_tree) l->scene = FS_SCENE_TREE;
            else if (a->mask.kind == FS_MASK_WINDOW) l->scene = FS_SCENE_WINDOW;
            else if (hq > 1) l->scene = FS_SCENE_GQA;
            else l->scene = FS_SCENE_TILED;
        }
    }
    l->tr.max_events = FS_LESSON_MAX_EVENTS;
    fs_status st = fs_run_exec(r, &l->res, &l->tr);
    char why[320];
    if (st != FS_OK)
        return fs_loc_error_set(err, P->name, aline, 1, "the engine cannot run this lesson: %s",
                                fs_attn_status_detail(&r->attn, st, why, sizeof why));
    l->has_run = true;
    if (P->pitfall != FS_PITFALL_NONE) {
        l->cmp = *r;
        l->cmp.tiling.pitfall = FS_PITFALL_NONE;
        l->cmp_tr.max_events = FS_LESSON_MAX_EVENTS;
        st = fs_run_exec(&l->cmp, &l->cmp_res, &l->cmp_tr);
        if (st != FS_OK)
            return fs_loc_error_set(err, P->name, aline, 1, "the engine cannot run the comparison: %s",
                                    fs_attn_status_detail(&l->cmp.attn, st, why, sizeof why));
        l->has_cmp = true;
    }
    return true;
}

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
                                                    "lse",  "delta", "btile", "bskip", "brow",    "bkey",  "grad"};

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
        else {
            snprintf(why, nwhy, "unknown vector field '%.*s' (s, p, o_old, o_blk, o_new, dp, ds, g_old, g_blk, g_new)",
                     (int)nl, f);
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
                       "unknown event kind '%.*s' (elem tile skip row partial merge out lse delta btile bskip brow bkey grad)", (int)(b - a), s + a);
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
                               "unknown filter '%s' (head kv_head qt kt row level a b id c0 visible cls reason tensor)", keys[f]);
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
        size_t e = skip_blank(s, b, n);
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
        size_t e = skip_blank(s, b + rest, n);
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
        if (!l->has_run || l->run.algo != FS_ALGO_BACKWARD || !l->res.dQ)
            return fs_loc_error_set(P->err, P->name, line, col, "graderr needs algo: backward");
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
        fs_status st = fs_backward_dense(at, dO ? dO : ones, g, g + n1, g + n1 + n2);
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
    if (!strcmp(s, "drift")) {
        if (!l->has_cmp) return fs_loc_error_set(P->err, P->name, line, col, "drift needs a pitfall lesson");
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
                       "ref[r][c], compare[r][c], score[i][j], mask[i][j], mask, kv_head[h], maxerr, graderr, drift, "
                       "count_nan, expr)", s);
    if (!strcmp(name, "out") || !strcmp(name, "ref") || !strcmp(name, "compare")) {
        if (!l->has_run) return fs_loc_error_set(P->err, P->name, line, col, "this lesson runs nothing");
        const fs_result *r = &l->res;
        if (!strcmp(name, "ref")) {
            if (!need_ref(P, line, col)) return false;
            r = &l->ref;
        } else if (!strcmp(name, "compare")) {
            if (!l->has_cmp) return fs_loc_error_set(P->err, P->name, line, col, "compare needs a pitfall lesson");
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
                out->why = keep(l, w);
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
        snprintf(out->exact_text, sizeof out->exact_text, "%.8g", out->got.exact);
    }
    out->agrees = out->got.verdict == out->expected &&
                  (out->expected != FS_VERDICT_UNITS || !strcmp(out->got.reading, out->expected_reading));
    return true;
}

static bool resolve(parse_t *P)
{
    fs_lesson *l = P->l;
    if (P->n_narr) {
        l->narr = keep(l, calloc((size_t)P->n_narr, sizeof(fs_narration)));
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
            if (skip_blank(r->sel, rest, strlen(r->sel)) < strlen(r->sel))
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
        l->checks = keep(l, calloc((size_t)P->n_ex, sizeof(fs_check)));
        if (!l->checks) return fs_loc_error_set(P->err, P->name, 1, 1, "out of memory");
    }
    for (int32_t k = 0; k < P->n_ex; k++) {
        if (!eval_expect(P, &P->ex[k], &l->checks[k])) return false;
        l->n_checks++;
    }
    return true;
}

/* ---- entry points ----------------------------------------------------------------------- */

static void parse_free(parse_t *P)
{
    fs_matrix_free(&P->z.m);
    fs_matrix_free(&P->Q.m);
    fs_matrix_free(&P->K.m);
    fs_matrix_free(&P->V.m);
    fs_matrix_free(&P->S.m);
    fs_matrix_free(&P->dO.m);
    free(P->narr);
    free(P->ex);
}

bool fs_lesson_parse(const char *text, size_t len, const char *name, fs_lesson **out, fs_loc_error *err)
{
    fs_loc_error dummy;
    if (!err) err = &dummy;
    memset(err, 0, sizeof *err);
    *out = NULL;
    if (!name) name = "<lesson>";
    fs_lesson *l = calloc(1, sizeof *l);
    if (!l) return fs_loc_error_set(err, name, 0, 0, "out of memory");
    fs_trace_init(&l->tr);
    fs_trace_init(&l->cmp_tr);
    l->path = dup_raw(l, name);
    l->intro = "";
    parse_t *P = calloc(1, sizeof *P);
    line_t *lines = NULL;
    bool ok = false;
    if (!P || !l->path) {
        fs_loc_error_set(err, name, 0, 0, "out of memory");
        goto done;
    }
    P->l = l;
    P->name = name;
    P->err = err;
    P->algo = -2;
    {
        const char *slash = strrchr(name, '/');
        if (slash) snprintf(P->dir, sizeof P->dir, "%.*s/", (int)(slash - name), name);
    }
    if (len > FS_LESSON_MAX_BYTES) {
        fs_loc_error_set(err, name, 0, 0, "lesson larger than %d bytes", FS_LESSON_MAX_BYTES);
        goto done;
    }
    /* split into lines */
    int32_t nlines = 0;
    for (size_t k = 0; k < len; k++) nlines += text[k] == '\n';
    nlines++;
    lines = malloc(sizeof *lines * (size_t)nlines);
    if (!lines) {
        fs_loc_error_set(err, name, 0, 0, "out of memory");
        goto done;
    }
    nlines = 0;
    for (size_t k = 0, st = 0; k <= len; k++)
        if (k == len || text[k] == '\n') {
            if (k == len && st == len && nlines > 0) break;
            size_t e = k;
            if (e > st && text[e - 1] == '\r') e--;
            lines[nlines].s = text + st;
            lines[nlines].n = e - st;
            nlines++;
            st = k + 1;
        }
    for (int32_t i = 0; i < nlines;) {
        const line_t *ln = &lines[i];
        if (is_blank_or_comment(ln)) {
            i++;
            continue;
        }
        for (size_t k = 0; k < ln->n; k++)
            if (ln->s[k] == 0) {
                fs_loc_error_set(err, name, i + 1, (int32_t)k + 1, "NUL byte in a lesson");
                goto done;
            }
        if (is_indented(ln)) {
            fs_loc_error_set(err, name, i + 1, 1, "indented line outside a record (records start in column 1)");
            goto done;
        }
        int32_t j = i + 1;
        while (j < nlines && (is_indented(&lines[j]) || is_blank_or_comment(&lines[j]))) j++;
        bool rec_ok;
        if (ln->n >= 5 && !strncmp(ln->s, "step", 4) && (ln->s[4] == ' ' || ln->s[4] == '\t')) {
            rec_ok = add_narr(P, lines, i, j);
        } else if (ln->n >= 7 && !strncmp(ln->s, "expect", 6) && (ln->s[6] == ' ' || ln->s[6] == '\t')) {
            rec_ok = add_expect(P, lines, i, j);
        } else {
            size_t e = 0;
            while (e < ln->n && (isalnum((unsigned char)ln->s[e]) || ln->s[e] == '_' || ln->s[e] == '-')) e++;
            if (e == 0 || e == ln->n || ln->s[e] != ':') {
                fs_loc_error_set(err, name, i + 1, (int32_t)e + 1, "expected 'key: value', 'step N: text' or 'expect …'");
                goto done;
            }
            char key[32];
            snprintf(key, sizeof key, "%.*s", (int)(e < 31 ? e : 31), ln->s);
            int k = e < 31 ? lookup(key, key_names, K_COUNT) : -1;
            if (k < 0) {
                fs_loc_error_set(err, name, i + 1, 1, "unknown key '%.*s'", (int)e, ln->s);
                goto done;
            }
            rec_ok = header_key(P, k, lines, i, j, e + 1);
        }
        if (!rec_ok) goto done;
        i = j;
    }
    int32_t last = nlines;
    if (!l->title) {
        fs_loc_error_set(err, name, last, 1, "missing 'title:'");
        goto done;
    }
    if (!l->source) {
        fs_loc_error_set(err, name, last, 1, "missing 'source:' (document file name, §section)");
        goto done;
    }
    if (P->algo == -2) {
        fs_loc_error_set(err, name, last, 1, "missing 'algo:' (softmax, query, tiled, decode, reference, none)");
        goto done;
    }
    if (!build_and_run(P) || !resolve(P)) goto done;
    ok = true;
done:
    if (P) parse_free(P);
    free(P);
    free(lines);
    if (!ok) {
        fs_lesson_free(l);
        return false;
    }
    *out = l;
    return true;
}

bool fs_lesson_load(const char *path, fs_lesson **out, fs_loc_error *err)
{
    fs_loc_error dummy;
    if (!err) err = &dummy;
    *out = NULL;
    size_t n;
    char *buf = fs_file_read(path, FS_LESSON_MAX_BYTES, &n, err);
    if (!buf) return false;
    bool ok = fs_lesson_parse(buf, n, path, out, err);
    free(buf);
    return ok;
}

void fs_lesson_free(fs_lesson *l)
{
    if (!l) return;
    fs_result_free(&l->res);
    fs_result_free(&l->cmp_res);
    fs_result_free(&l->ref);
    fs_trace_free(&l->tr);
    fs_trace_free(&l->cmp_tr);
    for (int32_t i = 0; i < l->n_allocs; i++) free(l->allocs[i]);
    free(l->allocs);
    free(l);
}

/* ---- getters ---------------------------------------------------------------------------- */

const char *fs_lesson_title(const fs_lesson *l) { return l->title; }
const char *fs_lesson_source(const fs_lesson *l) { return l->source; }
const char *fs_lesson_intro(const fs_lesson *l) { return l->intro; }
const char *fs_lesson_path(const fs_lesson *l) { return l->path; }
fs_scene fs_lesson_scene(const fs_lesson *l) { return l->scene; }
const fs_run *fs_lesson_run(const fs_lesson *l) { return l->has_run ? &l->run : NULL; }
const fs_result *fs_lesson_result(const fs_lesson *l) { return l->has_run ? &l->res : NULL; }
const fs_trace *fs_lesson_trace(const fs_lesson *l) { return l->has_run ? &l->tr : NULL; }
const fs_run *fs_lesson_compare_run(const fs_lesson *l) { return l->has_cmp ? &l->cmp : NULL; }
const fs_trace *fs_lesson_compare_trace(const fs_lesson *l) { return l->has_cmp ? &l->cmp_tr : NULL; }
const fs_result *fs_lesson_compare_result(const fs_lesson *l) { return l->has_cmp ? &l->cmp_res : NULL; }

const char *fs_lesson_narration(const fs_lesson *l, int64_t step)
{
    for (int32_t i = 0; i < l->n_narr; i++)
        if (l->narr[i].step == step) return l->narr[i].text;
    return NULL;
}

const int32_t *fs_lesson_tree_parent(const fs_lesson *l, int32_t *n)
{
    if (n) *n = l->parent ? l->n_parent : 0;
    return l->parent;
}

const char *fs_lesson_label(const fs_lesson *l, int32_t i)
{
    return i >= 0 && i < l->n_labels ? l->labels[i] : NULL;
}

int fs_lesson_check_count(const fs_lesson *l) { return l->n_checks; }

const fs_check *fs_lesson_check(const fs_lesson *l, int i)
{
    return i >= 0 && i < l->n_checks ? &l->checks[i] : NULL;
}

int fs_lesson_check_failures(const fs_lesson *l)
{
    int n = 0;
    for (int32_t i = 0; i < l->n_checks; i++) n += !l->checks[i].agrees;
    return n;
}

/* ---- finding lessons -------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

int fs_lesson_list(const char *dir, char ***paths, int *n)
{
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return -1;
    char **v = NULL;
    int cnt = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !ends_with(de->d_name, ".lesson")) continue;
        if (cnt == cap) {
            cap = cap ? cap * 2 : 32;
            char **nv = realloc(v, sizeof(char *) * (size_t)cap);
            if (!nv) break;
            v = nv;
        }
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        char *p = malloc(len);
        if (!p) break;
        snprintf(p, len, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", de->d_name);
        v[cnt++] = p;
    }
    closedir(d);
    if (cnt) qsort(v, (size_t)cnt, sizeof(char *), cmp_str);
    *paths = v;
    *n = cnt;
    return 0;
}

void fs_lesson_list_free(char **paths, int n)
{
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

bool fs_lesson_dir(const char *argv0, char *buf, size_t n)
{
    const char *env = getenv("FLASHSTEP_LESSONS");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return is_dir(buf);
    }
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) exe[k] = 0;
    else if (argv0) snprintf(exe, sizeof exe, "%s", argv0);
    else exe[0] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) {
        *slash = 0;
        /* build/flashstep and build/clang/flashstep, build/san/flashstep */
        for (int up = 1; up <= 3; up++) {
            char cand[PATH_MAX + 64];
            int w = snprintf(cand, sizeof cand, "%s", exe);
            for (int u = 0; u < up && w < (int)sizeof cand - 4; u++) w += snprintf(cand + w, sizeof cand - (size_t)w, "/..");
            snprintf(cand + w, sizeof cand - (size_t)w, "/lessons");
            if (is_dir(cand)) {
                char *rp = realpath(cand, NULL);
                snprintf(buf, n, "%s", rp ? rp : cand);
                free(rp);
                return true;
            }
        }
    }
    snprintf(buf, n, "lessons");
    return is_dir(buf);
}

bool fs_lesson_resolve(const char *name, const char *dir, char *buf, size_t n)
{
    struct stat st;
    if (stat(name, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(buf, n, "%s", name);
        return true;
    }
    char **paths;
    int cnt;
    if (!dir || fs_lesson_list(dir, &paths, &cnt) != 0) {
        snprintf(buf, n, "no lesson file '%s' and no lessons directory", name);
        return false;
    }
    int found = -1, matches = 0;
    size_t nl = strlen(name);
    for (int i = 0; i < cnt; i++) {
        const char *base = strrchr(paths[i], '/');
        base = base ? base + 1 : paths[i];
        size_t bl = strlen(base) - strlen(".lesson");
        if ((bl == nl && !strncmp(base, name, nl)) || !strcmp(base, name)) {   /* exact stem */
            found = i;
            matches = 1;
            break;
        }
        if (nl < bl && !strncmp(base, name, nl)) {
            found = i;
            matches++;
        }
    }
    bool ok = matches == 1;
    if (ok) snprintf(buf, n, "%s", paths[found]);
    else if (matches == 0) snprintf(buf, n, "no lesson named '%s' in %s", name, dir);
    else snprintf(buf, n, "'%s' matches %d lessons in %s; give more of the name", name, matches, dir);
    fs_lesson_list_free(paths, cnt);
    return ok;
}

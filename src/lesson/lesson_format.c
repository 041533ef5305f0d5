/* lesson_format.c: the lesson's text, record by record (docs/lesson-format.md).
 *
 * A record starts in column 1; indented lines continue it. Header keys are checked as they are
 * read (a number where a number belongs, a matrix with its file:line:column); narration and
 * expectations are parsed here and evaluated after the run (lesson_expect.c). Every string kept
 * from the file is kept escaped (src/io/text.h).
 */
#include "lesson_parse.h"
#include "io/text.h"
#include "engine/lowp.h"

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

/* ---- allocation: everything hangs off the lesson and is freed with it -------------------- */

void *lp_keep(fs_lesson *l, void *p)
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
    return d ? lp_keep(l, d) : NULL;
}

/* The name the lesson was loaded under, byte for byte: it is a path to open again. */
char *lp_dup_raw(fs_lesson *l, const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n + 1);
    return lp_keep(l, d);
}



/* ---- lines and records ------------------------------------------------------------------ */


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
size_t lp_skip_blank(const char *s, size_t a, size_t n)
{
    while (a < n && (s[a] == ' ' || s[a] == '\t')) a++;
    return a;
}

/* ---- parse state ------------------------------------------------------------------------ */
const char *const lp_key_names[K_COUNT] = {
    "title", "source", "algo", "scene", "intro", "labels", "z", "chunk", "Q", "K", "V", "S",
    "heads", "scale", "softcap", "mask", "offset", "tree", "bq", "bk", "form", "order", "exp2",
    "pitfall", "split", "parts", "merge", "dO", "fp8", "dropout", "seed", "devices", "sharding",
    "pages", "table", "quiz", "summary", "try"};

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
        a = lp_skip_blank(ln->s, a, ln->n);
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
    return safe ? lp_keep(P->l, safe) : NULL;
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

static double unif(uint64_t *s) { return ((double)(fs_splitmix64(s) >> 11) + 0.5) * 0x1.0p-53; }

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
    int32_t line = i + 1, col = (int32_t)lp_skip_blank(lines[i].s, vstart, lines[i].n) + 1;
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
        bool normal = true, outliers = false;
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
            } else if (!strcmp(tok, "dist=outliers")) {
                outliers = true;   /* FlashAttention-3's outlier test: N(0, 1), 0.1 % of entries of standard deviation 10
                                     instead (the paper adds such a term to the normal entry) */
            } else if (!strcmp(tok, "dist=uniform")) {
                normal = false;
            } else {
                return fs_loc_error_set(P->err, P->name, line, tcol,
                               "unknown option '%s' (seed=N, dist=normal|uniform|outliers)", tok);
            }
        }
        if (k == 0) return fs_loc_error_set(P->err, P->name, line, col, "random needs ROWSxCOLS");
        M->m.rows = (int32_t)rows;
        M->m.cols = (int32_t)cols;
        M->m.data = malloc(sizeof(double) * (size_t)(rows * cols));
        if (!M->m.data) return fs_loc_error_set(P->err, P->name, line, col, "out of memory");
        if (outliers) {
            uint64_t st = seed;
            fs_lowp_fill_outliers(M->m.data, (size_t)(rows * cols), 0.001, 10, &st);
        } else {
            fill_random(M->m.data, rows * cols, seed, normal);
        }
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

static bool header_key(parse_t *P, int key, const line_t *lines, int32_t i, int32_t j, size_t vstart);

/* The lesson's ending (docs/lesson-format.md, "The ending"): `summary: TEXT` with an indented
 * `keep: FORMULA` line, or `try: LABEL` with an indented `play: OPTIONS` line. lines[i, j) is the
 * record, vstart the column after the key's colon. The text of summary: goes on over indented
 * lines up to its keep:; keep: and play: take one line each and end the record. The play options
 * are read here (lp_options_parse, file:line:column of each) and kept for a variation of the
 * lesson (fs_lesson_parse_variation); whether that variation runs is for the tests to say. */
static bool ending_key(parse_t *P, bool summary, const line_t *lines, int32_t i, int32_t j, size_t vstart)
{
    fs_lesson *l = P->l;
    const char *key = summary ? "summary" : "try", *attr = summary ? "keep" : "play";
    size_t alen = strlen(attr);
    int32_t at = -1;   /* the line of the attribute */
    for (int32_t k = i + 1; k < j; k++) {
        if (is_blank_or_comment(&lines[k])) continue;
        size_t a = lp_skip_blank(lines[k].s, 0, lines[k].n);
        bool is_attr = lines[k].n > a + alen && !strncmp(lines[k].s + a, attr, alen) && lines[k].s[a + alen] == ':';
        if (at >= 0)
            return fs_loc_error_set(P->err, P->name, k + 1, (int32_t)a + 1, "%s: nothing may follow its '%s:' line",
                                    key, attr);
        if (is_attr) at = k;
        else if (!summary)
            return fs_loc_error_set(P->err, P->name, k + 1, (int32_t)a + 1,
                                    "try: expected 'play: OPTIONS' on the indented line (the label takes one line)");
    }
    if (at < 0)
        return fs_loc_error_set(P->err, P->name, i + 1, 1, "%s: needs an indented '%s:' line (%s)", key, attr,
                                summary ? "the one formula to keep" : "the play options of the variation");
    char *text = record_text(P, lines, i, at, vstart);
    if (!text) return fs_loc_error_set(P->err, P->name, i + 1, 1, "out of memory");
    if (!*text)
        return fs_loc_error_set(P->err, P->name, i + 1, (int32_t)vstart + 1, "%s: expected %s after the colon", key,
                                summary ? "what the lesson showed" : "a label for the variation");
    const line_t *ln = &lines[at];
    size_t v0 = lp_skip_blank(ln->s, 0, ln->n) + alen + 1;
    size_t v = lp_skip_blank(ln->s, v0, ln->n);
    char *val = trimdup(l, ln->s, v, ln->n);
    if (!val) return fs_loc_error_set(P->err, P->name, at + 1, 1, "out of memory");
    if (!*val)
        return fs_loc_error_set(P->err, P->name, at + 1, (int32_t)v + 1, "%s: expected %s", attr,
                                summary ? "a formula" : "play options such as --bq 2 --bk 3");
    if (summary) {
        l->summary = text;
        l->keep = val;
        return true;
    }
    lp_set sets[LP_MAX_SETS];
    int n = 0;
    size_t e = ln->n;
    while (e > v && (ln->s[e - 1] == ' ' || ln->s[e - 1] == '\t')) e--;
    if (!lp_options_parse(ln->s + v, e - v, P->name, at + 1, (int32_t)v + 1, sets, &n, P->err)) return false;
    l->try_label = text;
    l->try_options = val;
    if (P->own_try) {
        memcpy(P->sets, sets, sizeof sets[0] * (size_t)n);
        P->n_sets = n;
    }
    return true;
}

/* A variation's key: the header key sets[k] names, read as if the lesson said `key: value`, in
 * place of the lesson's own line. Errors point at the option (the play: line of the lesson's own
 * try:, or the command line's options). */
static bool apply_set(parse_t *P, const lp_set *e)
{
    char text[128];
    int len = snprintf(text, sizeof text, "%s: %s", lp_key_names[e->key], e->value);
    line_t ln = {text, (size_t)(len < (int)sizeof text ? len : (int)sizeof text - 1)};
    const char *file = P->own_try ? P->name : P->opts_name;
    if (!lp_set_applies(e, P->algo, P->ring_backward)) {
        static const char *const algos[] = {"reference", "softmax", "query", "tiled", "decode", "backward", "ring"};
        fs_loc_error_set(P->err, file, e->line, e->col, "%s changes nothing in a lesson of algo: %s", e->opt,
                         P->ring_backward ? "ring-backward" : P->algo >= 0 && P->algo < 7 ? algos[P->algo] : "none");
        return false;
    }
    if (!header_key(P, e->key, &ln, 0, 1, strlen(lp_key_names[e->key]) + 1)) {
        snprintf(P->err->file, sizeof P->err->file, "%s", file);
        P->err->line = e->line;
        P->err->col = e->col;
        return false;
    }
    /* later errors about the key (one that does not apply to the algorithm) point at the option */
    P->key_line[e->key] = P->own_try ? e->line : 0;
    P->key_col[e->key] = e->col;
    if (e->key == K_PARTS) {   /* --parts is the strided split */
        P->split = FS_SPLIT_STRIDED;
        P->seen[K_SPLIT] = true;
        P->key_line[K_SPLIT] = P->key_line[K_PARTS];
    }
    return true;
}

static bool header_key(parse_t *P, int key, const line_t *lines, int32_t i, int32_t j, size_t vstart)
{
    fs_lesson *l = P->l;
    const line_t *ln = &lines[i];
    int32_t line = i + 1, col = (int32_t)lp_skip_blank(ln->s, vstart, ln->n) + 1;   /* the value */
    char *v = trimdup(l, ln->s, vstart, ln->n);
    if (!v) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
    if (P->seen[key])
        return fs_loc_error_set(P->err, P->name, line, 1, "'%s' given twice (first on line %d)", lp_key_names[key],
                       P->key_line[key]);
    P->seen[key] = true;
    P->key_line[key] = line;
    P->key_col[key] = col;
    bool single_line = key != K_INTRO && key != K_TITLE && key != K_SOURCE && key != K_Q &&
                       key != K_K && key != K_V && key != K_S && key != K_Z && key != K_TREE &&
                       key != K_LABELS && key != K_DO && key != K_SUMMARY && key != K_TRY;
    if (single_line)
        for (int32_t k = i + 1; k < j; k++)
            if (!is_blank_or_comment(&lines[k]))
                return fs_loc_error_set(P->err, P->name, k + 1, 1, "'%s' takes one line; unexpected indented line",
                               lp_key_names[key]);
    switch (key) {
    case K_TITLE: l->title = record_text(P, lines, i, j, vstart); break;
    case K_SUMMARY: return ending_key(P, true, lines, i, j, vstart);
    case K_TRY: return ending_key(P, false, lines, i, j, vstart);
    case K_SOURCE: l->source = record_text(P, lines, i, j, vstart); break;
    case K_INTRO: l->intro = record_text(P, lines, i, j, vstart); break;
    case K_ALGO: {
        /* in the order of fs_algo (run.h) */
        static const char *const algos[] = {"reference", "softmax", "query", "tiled", "decode", "backward", "ring"};
        if (!strcmp(v, "none")) {
            P->algo = -1;
            break;
        }
        P->ring_backward = !strcmp(v, "ring-backward");
        P->algo = P->ring_backward ? FS_ALGO_RING : lookup(v, algos, 7);
        if (P->algo < 0)
            return fs_loc_error_set(P->err, P->name, line, col,
                           "unknown algo '%s' (softmax, query, tiled, decode, reference, backward, ring, ring-backward, none)", v);
        break;
    }
    case K_QUIZ: {
        static const char *const kinds[FS_QUIZ_KIND_COUNT] = {"memory", "pages", "e4m3", "ring", "stability", "kernel",
                                                              "roofline", "io"};
        const int q = lookup(v, kinds, FS_QUIZ_KIND_COUNT);
        if (q < 0)
            return fs_loc_error_set(P->err, P->name, line, col,
                                    "unknown quiz '%s' (memory, pages, e4m3, ring, stability, kernel, roofline, io)", v);
        l->quiz = (fs_quiz_kind)q;
        l->quiz_named = true;
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
        l->labels = lp_keep(l, calloc((size_t)(n ? n : 1), sizeof(char *)));
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
    case K_DEVICES: return parse_int(P, v, line, col, 1, FS_RING_MAX_DEVICES, &P->devices);
    case K_PAGES: return parse_int(P, v, line, col, 1, FS_MAX_DIM, &P->pages);
    case K_TABLE: {   /* the page of each logical block, checked against the sequence in lesson_run.c */
        size_t len;
        char *t = blanked_block(lines, i, j, vstart, &len);
        if (!t) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
        int32_t *pages = NULL, n = 0;
        bool ok = fs_ints_parse_text(t, len, P->name, line, &pages, &n, P->err);
        free(t);
        if (!ok) return false;
        l->table = lp_keep(l, pages);
        l->n_table = n;
        if (!l->table) return fs_loc_error_set(P->err, P->name, line, 1, "out of memory");
        break;
    }
    case K_SHARDING:
        P->sharding = fs_sharding_parse(v);
        if (P->sharding == FS_SHARD_COUNT)
            return fs_loc_error_set(P->err, P->name, line, col, "unknown sharding '%s' (contiguous, zigzag, striped)", v);
        break;
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
            return fs_loc_error_set(P->err, P->name, line, col, "%s must be a finite%s number", lp_key_names[key],
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
        l->parent = lp_keep(l, par);
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
    case K_DROPOUT: {
        char *end;
        errno = 0;
        double p = strtod(v, &end);
        if (end == v || *end || errno || fs_dropout_check(p) != FS_OK)
            return fs_loc_error_set(P->err, P->name, line, col, "dropout: expected a probability from 0 up to but not including 1, got '%s'", v);
        P->dropout = p;
        break;
    }
    case K_SEED: {
        size_t n = strlen(v);
        bool ok = n > 0 && n <= 20 && strspn(v, "0123456789") == n;
        uint64_t x = 0;
        for (size_t k = 0; ok && k < n; k++) {
            unsigned dgt = (unsigned)(v[k] - '0');
            if (x > (UINT64_MAX - dgt) / 10) ok = false;
            else x = x * 10 + dgt;
        }
        if (!ok) return fs_loc_error_set(P->err, P->name, line, col, "seed: expected a whole number from 0 to 2^64 - 1, got '%s'", v);
        P->seed = x;
        break;
    }
    case K_FP8: {
        /* a recipe of src/engine/lowp.h as words: "e4m3 block hadamard seed=3 p-scale=1" */
        size_t at;
        char why[200];
        if (!fs_lowp_recipe_parse(v, strlen(v), &P->recipe, &at, why, sizeof why))
            return fs_loc_error_set(P->err, P->name, line, col + (int32_t)at, "fp8: %s", why);
        break;
    }
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
    size_t a = lp_skip_blank(ln->s, 4, ln->n), c = a;
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

static const char *const attr_names[] = {"claim", "section", "verdict", "chain", "tol", "why", "own", "from"};

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
    r->c.from = "";
    r->c.expected_reading = "";
    r->c.unit = "";
    r->c.section = NULL;

    /* expect TARGET OP [~]PRINTED [UNIT]: split at the last operator with blanks around it
     * (OP is "=", or a bound "<=", "<", ">=", ">"). */
    size_t a = lp_skip_blank(ln->s, 6, ln->n);
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

    size_t p = lp_skip_blank(ln->s, eq + oplen, ln->n);
    bool matrix = p == ln->n;
    if (!matrix) {
        if (ln->s[p] == '~') {
            r->c.approx_marked = true;
            p = lp_skip_blank(ln->s, p + 1, ln->n);
        }
        size_t q = p;
        while (q < ln->n && ln->s[q] != ' ' && ln->s[q] != '\t') q++;
        r->c.printed = dupn(l, ln->s + p, q - p);
        double pv, ph;
        if (!r->c.printed || !fs_printed_parse(r->c.printed, &pv, &ph))
            return fs_loc_error_set(P->err, P->name, line, (int32_t)p + 1, "not a printed number: '%.*s'",
                           (int)(q - p), ln->s + p);
        size_t u = lp_skip_blank(ln->s, q, ln->n);
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
            size_t s = lp_skip_blank(c->s, 0, c->n);
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
        r->mask_rows = lp_keep(l, rows);
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
        size_t s = lp_skip_blank(c->s, 0, c->n), e = s;
        while (e < c->n && c->s[e] != ':' && c->s[e] != ' ') e++;
        if (last_text && s > attr_indent) {
            size_t ol = strlen(*last_text);
            char *more = trimdup(l, c->s, s, c->n);
            char *joined = more ? malloc(ol + strlen(more) + 2) : NULL;
            if (!joined) return fs_loc_error_set(P->err, P->name, k + 1, 1, "out of memory");
            snprintf(joined, ol + strlen(more) + 2, "%s %s", *last_text, more);
            *last_text = lp_keep(l, joined);
            continue;
        }
        attr_indent = s;
        last_text = NULL;
        if (e == c->n || c->s[e] != ':')
            return fs_loc_error_set(P->err, P->name, k + 1, (int32_t)s + 1,
                           "expected an attribute 'key: value' (claim, section, verdict, chain, tol, why, own, from)");
        char *key = dupn(l, c->s + s, e - s);
        char *val = trimdup(l, c->s, e + 1, c->n);
        int32_t vcol = (int32_t)lp_skip_blank(c->s, e + 1, c->n) + 1;
        if (!key || !val) return fs_loc_error_set(P->err, P->name, k + 1, 1, "out of memory");
        int at = lookup(key, attr_names, 8);
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
        case 7: {   /* a figure another lesson counts as its document's claim: checked here as one's own */
            const size_t m = strlen(val);
            bool ok = m > 0 && m <= 32;
            for (size_t q = 0; ok && q < m; q++) ok = isalnum((unsigned char)val[q]) || val[q] == '_';
            if (!ok)
                return fs_loc_error_set(P->err, P->name, k + 1, vcol,
                               "from: expected the stem of the lesson that counts this figure (e.g. 001_04)");
            r->c.from = val;
            r->c.own = true;
            break;
        }
        default:
            return fs_loc_error_set(P->err, P->name, k + 1, (int32_t)s + 1,
                           "unknown attribute '%s' (claim, section, verdict, chain, tol, why, own, from)", key);
        }
    }
    if (*r->c.from && !r->c.own)
        return fs_loc_error_set(P->err, P->name, r->c.line, 1,
                       "from: marks a figure checked here and counted in another lesson: 'own: no' contradicts it");
    if (!r->c.claim) r->c.claim = r->c.target;
    P->n_ex++;
    return true;
}


/* Apply a variation once every record is read: the options replace the keys they set (the
 * lesson's own try: was read among the records, so its keys were read first and are set again,
 * after forgetting them; the command line's keys were skipped as they came). The title says
 * which variation this is. */
static bool apply_variation(parse_t *P, int32_t nlines)
{
    fs_lesson *l = P->l;
    if (P->own_try && !l->try_options)
        return fs_loc_error_set(P->err, P->name, nlines, 1, "this lesson has no 'try:' to vary it by");
    for (int k = 0; k < P->n_sets; k++) P->seen[P->sets[k].key] = false;
    for (int k = 0; k < P->n_sets; k++)
        if (!apply_set(P, &P->sets[k])) return false;
    if (!l->title) return true;   /* reported by the caller */
    const char *opts = P->own_try ? l->try_options : l->variation;
    char *t = malloc(strlen(l->title) + strlen(opts) + 16);
    if (!t) return fs_loc_error_set(P->err, P->name, 0, 0, "out of memory");
    sprintf(t, "%s (varied: %s)", l->title, opts);
    l->title = lp_keep(l, t);
    if (P->own_try) l->variation = l->try_options;
    if (!l->title) return fs_loc_error_set(P->err, P->name, 0, 0, "out of memory");
    /* the introduction was written for the lesson as it stands: its sizes and tiles may not be
     * this run's, and it says so before it says anything (the steps and pages follow the run) */
    if (l->intro && *l->intro) {
        static const char fmt[] = "(A variation, %s: this introduction is the lesson's own, written for its usual values; "
                                  "the steps and the pages follow the values you set.)\n\n%s";
        char *in = malloc(sizeof fmt + strlen(opts) + strlen(l->intro));
        if (!in) return fs_loc_error_set(P->err, P->name, 0, 0, "out of memory");
        sprintf(in, fmt, opts, l->intro);
        l->intro = lp_keep(l, in);
        if (!l->intro) return fs_loc_error_set(P->err, P->name, 0, 0, "out of memory");
    }
    return true;
}

/* Split the text into lines and its lines into records, and parse each record: header keys,
 * narration ("step N: …") and expectations ("expect …"). Checks that the keys every lesson needs
 * are there. */
bool lp_read_records(parse_t *P, const char *text, size_t len)
{
    fs_lesson *l = P->l;
    fs_loc_error *err = P->err;
    const char *name = P->name;
    line_t *lines = NULL;
    bool ok = false;
    /* split into lines */
    int32_t nlines = 0;
    for (size_t k = 0; k < len; k++) nlines += text[k] == '\n';
    nlines++;
    lines = malloc(sizeof *lines * (size_t)nlines);
    if (!lines) {
        fs_loc_error_set(err, name, 0, 0, "out of memory");
        goto out;
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
                goto out;
            }
        if (is_indented(ln)) {
            fs_loc_error_set(err, name, i + 1, 1, "indented line outside a record (records start in column 1)");
            goto out;
        }
        int32_t j = i + 1;
        while (j < nlines && (is_indented(&lines[j]) || is_blank_or_comment(&lines[j]))) j++;
        bool rec_ok;
        if (ln->n >= 5 && !strncmp(ln->s, "step", 4) && (ln->s[4] == ' ' || ln->s[4] == '\t')) {
            rec_ok = P->variation || add_narr(P, lines, i, j);   /* a variation has other steps */
        } else if (ln->n >= 7 && !strncmp(ln->s, "expect", 6) && (ln->s[6] == ' ' || ln->s[6] == '\t')) {
            rec_ok = P->variation || add_expect(P, lines, i, j);   /* and other numbers */
        } else {
            size_t e = 0;
            while (e < ln->n && (isalnum((unsigned char)ln->s[e]) || ln->s[e] == '_' || ln->s[e] == '-')) e++;
            if (e == 0 || e == ln->n || ln->s[e] != ':') {
                fs_loc_error_set(err, name, i + 1, (int32_t)e + 1, "expected 'key: value', 'step N: text' or 'expect …'");
                goto out;
            }
            char key[32];
            snprintf(key, sizeof key, "%.*s", (int)(e < 31 ? e : 31), ln->s);
            int k = e < 31 ? lookup(key, lp_key_names, K_COUNT) : -1;
            if (k < 0) {
                fs_loc_error_set(err, name, i + 1, 1, "unknown key '%.*s'", (int)e, ln->s);
                goto out;
            }
            bool replaced = false;   /* a variation's option sets this key instead */
            for (int s = 0; P->variation && !P->own_try && s < P->n_sets; s++) replaced |= P->sets[s].key == k;
            rec_ok = replaced || header_key(P, k, lines, i, j, e + 1);
        }
        if (!rec_ok) goto out;
        i = j;
    }
    int32_t last = nlines;
    if (P->variation && !apply_variation(P, nlines)) goto out;
    if (!l->title) {
        fs_loc_error_set(err, name, last, 1, "missing 'title:'");
        goto out;
    }
    if (!l->source) {
        fs_loc_error_set(err, name, last, 1, "missing 'source:' (document file name, §section)");
        goto out;
    }
    if (P->algo == -2) {
        fs_loc_error_set(err, name, last, 1, "missing 'algo:' (softmax, query, tiled, decode, reference, backward, ring, none)");
        goto out;
    }
    /* A lesson on a topic none of the documents covers claims nothing on their behalf. */
    for (int32_t k = 0; !fs_lesson_source_given(l->source) && k < P->n_ex; k++)
        if (!P->ex[k].c.own) {
            fs_loc_error_set(err, name, P->ex[k].c.line, 1,
                             "source: none: no document prints this number; mark the expectation 'own: yes'");
            goto out;
        }
    ok = true;
out:
    free(lines);
    return ok;
}

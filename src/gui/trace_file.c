/* trace_file.c: a trace saved by `flashstep trace --format jsonl` read back into a gui_show, so
 * the window replays it (one made by the engine or by the CUDA kernel: the same format).
 *
 * One JSON object per line, one line per event, in step order (cmd_trace.c's print_jsonl writes
 * them; docs/02-trace.md lists the fields). Numbers are JSON numbers or the strings "nan", "inf",
 * "-inf". The reader takes exactly that flat shape (no nested objects) and checks it: every
 * field an event needs is there with a value of the right type, steps count 0, 1, 2 …, vectors
 * have the lengths the event implies, indices are in range, and the file ends with the output
 * rows, one for every row of every head (a file cut after one of them is refused too). Anything
 * else is one message "FILE:LINE:COLUMN: what" and no show.
 *
 * A backward trace (`trace --backward`) is read the same way: its events come in the engine's
 * order (every row's lse, every row's delta, then per pair one btile with its brows and bkeys or
 * one bskip, then the grad rows), each brow and bkey inside the btile before it, and the file
 * ends with every gradient row (dQ of each query row, dK and dV of each key). Vector lengths are checked per kind: o, dO and dV vectors have d_v
 * numbers throughout, dQ and dK vectors d.
 *
 * A decode through a paged KV cache (`trace --decode --page-size P`) adds its page events (alloc,
 * write, lookup; share and cow too), each with the fields its kind needs; the page size is
 * recovered from the writes (position − slot = block · page size, one size for the whole file).
 *
 * The file holds the events, not the problem: the shape (rows, keys, heads, tiles, splits, the
 * backward's loop order) is recovered from the events; Q, K and V are absent, so the scenes draw
 * what the events hold.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gui/gui.h"
#include "io/text.h"

#define MAX_LINE (1 << 22)          /* one event's line; longer is refused */
#define MAX_EVENTS ((int64_t)1 << 22) /* the bound `flashstep trace` records at most */
#define MAX_VEC 1048576

typedef struct {
    const char *path;
    int line;
    const char *s, *p;      /* the line and the cursor */
    char msg[1536];
    FILE *err;
    int32_t len[2];         /* vector lengths so far (LEN_DV: o, dO, dV; LEN_D: dQ, dK), −1 before the first */
    int backward;           /* −1 before the first event, then 0 (forward) or 1 (backward) */
    int phase;              /* backward: 0 lse, 1 delta, 2 tiles, 3 grad; never goes back */
    int64_t tile;           /* backward: the btile the next brow or bkey belongs to, −1 none */
} rd;

enum { LEN_DV = 0, LEN_D = 1 };

static int col(const rd *r) { return (int)(r->p - r->s) + 1; }

static bool failf(rd *r, const char *what, const char *arg)
{
    if (!r->msg[0]) {
        char w[256];
        snprintf(w, sizeof w, what, arg ? arg : "");
        /* w may quote the file's own bytes (an unknown value): escaped, so none reaches the
         * terminal raw (src/io/text.h). */
        char safe[sizeof w];
        fs_text_escape(w, strlen(w), safe, sizeof safe);
        snprintf(r->msg, sizeof r->msg, "%s:%d:%d: %s", r->path, r->line, col(r), safe);
    }
    return false;
}

static void skip_ws(rd *r)
{
    while (*r->p == ' ' || *r->p == '\t' || *r->p == '\r') r->p++;
}

/* A JSON string without escapes (the writer never needs them) into buf. */
static bool read_string(rd *r, char *buf, size_t n)
{
    skip_ws(r);
    if (*r->p != '"') return failf(r, "expected a string", NULL);
    r->p++;
    size_t k = 0;
    while (*r->p && *r->p != '"') {
        if (*r->p == '\\' || (unsigned char)*r->p < 0x20) return failf(r, "unexpected character in a string", NULL);
        if (k + 1 >= n) return failf(r, "string too long", NULL);
        buf[k++] = *r->p++;
    }
    if (*r->p != '"') return failf(r, "the line ends inside a string (truncated?)", NULL);
    r->p++;
    buf[k] = 0;
    return true;
}

/* A number: a JSON number, or "nan", "inf", "-inf". */
static bool read_number(rd *r, double *x)
{
    skip_ws(r);
    if (*r->p == '"') {
        const char *at = r->p;
        char b[16];
        if (!read_string(r, b, sizeof b)) return false;
        if (!strcmp(b, "nan")) *x = NAN;
        else if (!strcmp(b, "inf")) *x = INFINITY;
        else if (!strcmp(b, "-inf")) *x = -INFINITY;
        else { r->p = at; return failf(r, "expected a number (or \"nan\", \"inf\", \"-inf\")", NULL); }
        return true;
    }
    const char *q = r->p;
    if (*q == '-') q++;
    if (*q < '0' || *q > '9') return failf(r, "expected a number", NULL);
    char *end;
    errno = 0;
    double v = strtod(r->p, &end);
    if (end == r->p || (errno == ERANGE && isinf(v))) return failf(r, "expected a number", NULL);
    /* JSON has no hexadecimal, "infinity" or "nan" spellings: only digits, '.', 'e', signs. */
    for (const char *c = r->p; c < end; c++)
        if (!strchr("0123456789.eE+-", *c)) return failf(r, "expected a number", NULL);
    r->p = end;
    *x = v;
    return true;
}

/* The fields of one line, as read. */
enum { F_INT, F_NUM, F_STR, F_BOOL, F_VEC, F_PAIRS };
typedef struct {
    char key[24];
    int type;
    double num;
    char str[24];
    bool b;
    int64_t vec;            /* offset in the trace's pool */
    int32_t n;              /* vector length (F_PAIRS: 2 numbers a pair, flattened) */
    int col;                /* where the value starts */
    bool used;
} field;

#define MAX_FIELDS 40

typedef struct {
    field f[MAX_FIELDS];
    int n;
} fields;

static bool read_value(rd *r, fs_trace *t, field *f)
{
    skip_ws(r);
    f->col = col(r);
    if (*r->p == '[') {
        r->p++;
        double *buf = NULL;
        int32_t n = 0, cap = 0;
        skip_ws(r);
        /* A list of pairs, [[i, j], ...] (dropout's "dropped"), is read flattened: i, j, i, j ... */
        const bool pairs = *r->p == '[';
        if (*r->p == ']') r->p++;
        else for (;;) {
            double x, y = 0;
            if (pairs) {
                if (*r->p != '[') { free(buf); return failf(r, "expected '[' (a list of [row, key] pairs)", NULL); }
                r->p++;
                skip_ws(r);
                bool two = read_number(r, &x);
                if (two) { skip_ws(r); two = *r->p == ','; }
                if (two) { r->p++; skip_ws(r); two = read_number(r, &y); }
                if (two) { skip_ws(r); two = *r->p == ']'; }
                if (!two) { free(buf); return r->msg[0] ? false : failf(r, "expected a pair [row, key]", NULL); }
                r->p++;
            } else if (!read_number(r, &x)) {
                free(buf);
                return false;
            }
            if (n + 1 >= cap) {
                if (cap >= MAX_VEC) { free(buf); return failf(r, "vector too long", NULL); }
                cap = cap ? 2 * cap : 16;
                double *nb = realloc(buf, sizeof *nb * (size_t)cap);
                if (!nb) { free(buf); return failf(r, "out of memory", NULL); }
                buf = nb;
            }
            buf[n++] = x;
            if (pairs) buf[n++] = y;
            skip_ws(r);
            if (*r->p == ',') { r->p++; continue; }
            if (*r->p == ']') { r->p++; break; }
            free(buf);
            return failf(r, *r->p ? "expected ',' or ']'" : "the line ends inside a list (truncated?)", NULL);
        }
        f->type = pairs ? F_PAIRS : F_VEC;
        f->n = n;
        f->vec = n ? fs_trace_vec(t, buf, n) : -1;
        free(buf);
        if (n && f->vec < 0) return failf(r, "out of memory", NULL);
        return true;
    }
    if (*r->p == '"') {
        const char *at = r->p;
        if (!read_string(r, f->str, sizeof f->str)) return false;
        if (!strcmp(f->str, "nan") || !strcmp(f->str, "inf") || !strcmp(f->str, "-inf")) {
            r->p = at;
            f->type = F_NUM;
            return read_number(r, &f->num);
        }
        f->type = F_STR;
        return true;
    }
    if (!strncmp(r->p, "true", 4) || !strncmp(r->p, "false", 5)) {
        f->type = F_BOOL;
        f->b = r->p[0] == 't';
        r->p += f->b ? 4 : 5;
        return true;
    }
    f->type = F_NUM;
    return read_number(r, &f->num);
}

static bool read_object(rd *r, fs_trace *t, fields *fs)
{
    fs->n = 0;
    skip_ws(r);
    if (*r->p != '{') return failf(r, *r->p ? "expected '{' (one JSON object per line)" : "empty line", NULL);
    r->p++;
    for (;;) {
        skip_ws(r);
        if (!*r->p) return failf(r, "the line ends inside the object (truncated?)", NULL);
        if (fs->n == MAX_FIELDS) return failf(r, "too many fields", NULL);
        field *f = &fs->f[fs->n];
        memset(f, 0, sizeof *f);
        const char *key_at = r->p;
        if (!read_string(r, f->key, sizeof f->key)) return false;
        for (int i = 0; i < fs->n; i++)
            if (!strcmp(fs->f[i].key, f->key)) { r->p = key_at; return failf(r, "field \"%s\" given twice", f->key); }
        skip_ws(r);
        if (*r->p != ':') return failf(r, *r->p ? "expected ':'" : "the line ends inside the object (truncated?)", NULL);
        r->p++;
        if (!read_value(r, t, f)) return false;
        fs->n++;
        skip_ws(r);
        if (*r->p == ',') { r->p++; continue; }
        if (*r->p == '}') { r->p++; break; }
        return failf(r, *r->p ? "expected ',' or '}'" : "the line ends inside the object (truncated?)", NULL);
    }
    skip_ws(r);
    if (*r->p) return failf(r, "text after the object", NULL);
    return true;
}

/* A field of the line by name and type; a missing or mistyped one is an error at the line. */
static field *need(rd *r, fields *fs, const char *key, int type)
{
    for (int i = 0; i < fs->n; i++) {
        field *f = &fs->f[i];
        if (strcmp(f->key, key)) continue;
        f->used = true;
        bool ok = f->type == type || (type == F_INT && f->type == F_NUM) || (type == F_PAIRS && f->type == F_VEC && f->n == 0);
        if (type == F_INT && ok && !(f->num == floor(f->num) && fabs(f->num) <= 1e9)) ok = false;
        if (!ok) {
            r->p = r->s + f->col - 1;
            static const char *names[] = {"an integer", "a number", "a string", "true or false", "a list of numbers",
                                          "a list of [row, key] pairs"};
            char b[64];
            snprintf(b, sizeof b, "\"%s\" must be %s", key, names[type]);
            failf(r, "%s", b);
            return NULL;
        }
        return f;
    }
    r->p = r->s + strlen(r->s);
    failf(r, "the event has no \"%s\"", key);
    return NULL;
}

static bool get_int(rd *r, fields *fs, const char *key, int32_t lo, int32_t hi, int32_t *v)
{
    field *f = need(r, fs, key, F_INT);
    if (!f) return false;
    if (f->num < lo || f->num > hi) {
        r->p = r->s + f->col - 1;
        char b[96];
        snprintf(b, sizeof b, "\"%s\" = %.0f is out of range (%d to %d)", key, f->num, lo, hi);
        return failf(r, "%s", b);
    }
    *v = (int32_t)f->num;
    return true;
}

static bool get_num(rd *r, fields *fs, const char *key, double *v)
{
    field *f = need(r, fs, key, F_NUM);
    if (!f) return false;
    *v = f->num;
    return true;
}

static bool get_vec(rd *r, fields *fs, const char *key, int32_t len, int64_t *off, int32_t *n)
{
    field *f = need(r, fs, key, F_VEC);
    if (!f) return false;
    if (len >= 0 && f->n != len) {
        r->p = r->s + f->col - 1;
        char b[96];
        snprintf(b, sizeof b, "\"%s\" has %d numbers, the event needs %d", key, f->n, len);
        return failf(r, "%s", b);
    }
    *off = f->vec;
    if (n) *n = f->n;
    return true;
}

/* Whether the line has the field at all (for the optional ones). */
static bool has(const fields *fs, const char *key)
{
    for (int i = 0; i < fs->n; i++)
        if (!strcmp(fs->f[i].key, key)) return true;
    return false;
}

static bool get_bool(rd *r, fields *fs, const char *key, bool *v)
{
    field *f = need(r, fs, key, F_BOOL);
    if (!f) return false;
    *v = f->b;
    return true;
}

static bool get_enum(rd *r, fields *fs, const char *key, const char *(*name)(int), int count, int *v)
{
    field *f = need(r, fs, key, F_STR);
    if (!f) return false;
    for (int k = 0; k < count; k++)
        if (!strcmp(f->str, name(k))) { *v = k; return true; }
    r->p = r->s + f->col - 1;
    return failf(r, "unknown value \"%s\"", f->str);
}

static const char *kind_name(int k) { return fs_event_kind_str((fs_event_kind)k); }
static const char *class_name(int k) { return fs_tile_class_str((fs_tile_class)k); }
static const char *reason_name(int k) { return fs_skip_reason_str((fs_skip_reason)k); }
static const char *grad_name(int k) { return fs_grad_str(k); }

/* Put the cursor at a field's value (or at the line's start when the line has no such field). */
static void at_field(rd *r, const fields *fs, const char *key)
{
    r->p = r->s;
    for (int i = 0; i < fs->n; i++)
        if (!strcmp(fs->f[i].key, key)) r->p = r->s + fs->f[i].col - 1;
}

/* Every vector of one length class (LEN_DV or LEN_D) in a trace has the same length: the first
 * sets it. what names the vector in the message. */
static bool same_len(rd *r, const fields *fs, const char *key, int cls, int32_t n, const char *what)
{
    if (n <= 0) return true;
    if (r->len[cls] < 0) { r->len[cls] = n; return true; }
    if (n == r->len[cls]) return true;
    at_field(r, fs, key);
    char b[160];
    snprintf(b, sizeof b, "%s of %d numbers, earlier ones have %d", what, n, r->len[cls]);
    return failf(r, "%s", b);
}

/* A backward event's place in the engine's order: lse rows, delta rows, the pairs, grad rows. */
static bool backward_phase(rd *r, const fields *fs, fs_event_kind kind)
{
    static const char *names[] = {"an lse row", "a delta row", "a recomputed pair", "a grad row"};
    int ph = kind == FS_EV_LSE ? 0 : kind == FS_EV_DELTA ? 1 : kind == FS_EV_GRAD ? 3 : 2;
    if (ph < r->phase) {
        at_field(r, fs, "event");
        char b[160];
        snprintf(b, sizeof b, "%s after %s (the backward writes every lse, every delta, the pairs, then the grad rows)",
                 names[ph], names[r->phase]);
        return failf(r, "%s", b);
    }
    r->phase = ph;
    return true;
}

#define BIG 1048576   /* bounds on indices (the engine's FS_MAX_DIM) */

/* The online-softmax state of an elem or row line: m and ℓ before, of the block and after; α, β. */
static bool get_state(rd *r, fields *fs, fs_event *e)
{
    return get_num(r, fs, "m_old", &e->m_old) && get_num(r, fs, "m_blk", &e->m_blk) && get_num(r, fs, "m_new", &e->m_new) &&
           get_num(r, fs, "l_old", &e->l_old) && get_num(r, fs, "l_blk", &e->l_blk) && get_num(r, fs, "l_new", &e->l_new) &&
           get_num(r, fs, "alpha", &e->alpha) && get_num(r, fs, "beta", &e->beta);
}

/* One line into one event (appended to t). */
/* Dropout on a pair's event (optional): "dropout" p in [0, 1) and "dropped", the pair's dropped
 * cells as [row, key] pairs, each an integer inside the pair's rows and keys (none on a skip). */
static bool get_dropped(rd *r, fs_trace *t, fields *fs, fs_event *e)
{
    if (!has(fs, "dropped") && !has(fs, "dropout")) return true;
    if (!get_num(r, fs, "dropout", &e->dropout)) return false;
    if (!(e->dropout >= 0 && e->dropout < 1)) {
        at_field(r, fs, "dropout");
        return failf(r, "\"dropout\" must be from 0 up to but not including 1", NULL);
    }
    field *f = need(r, fs, "dropped", F_PAIRS);
    if (!f) return false;
    if (e->cls == FS_TILE_SKIPPED && f->n) {
        r->p = r->s + f->col - 1;
        return failf(r, "a skipped pair drops no cell (it has no visible weight)", NULL);
    }
    const double *v = fs_trace_at(t, f->vec);
    for (int32_t k = 0; k + 1 < f->n; k += 2)
        if (v[k] != floor(v[k]) || v[k + 1] != floor(v[k + 1]) || v[k] < e->r0 || v[k] >= e->r1 || v[k + 1] < e->c0 ||
            v[k + 1] >= e->c1) {
            r->p = r->s + f->col - 1;
            char b[160];
            snprintf(b, sizeof b, "dropped pair %d [%.17g, %.17g] is not a cell of the pair (rows %d-%d, keys %d-%d)", k / 2,
                     v[k], v[k + 1], e->r0, e->r1 - 1, e->c0, e->c1 - 1);
            return failf(r, "%s", b);
        }
    e->drop = f->n ? f->vec : fs_trace_vec(t, NULL, 0);   /* none dropped: still a run with dropout */
    e->n_drop = f->n / 2;
    return true;
}

static bool read_event(rd *r, fs_trace *t, int64_t step)
{
    fields fs;
    if (!read_object(r, t, &fs)) return false;
    int kind;
    if (!get_enum(r, &fs, "event", kind_name, FS_EV_COUNT, &kind)) return false;
    fs_event e = fs_event_blank((fs_event_kind)kind);
    int32_t st;
    if (!get_int(r, &fs, "step", 0, INT32_MAX, &st)) return false;
    if (st != step) {
        for (int i = 0; i < fs.n; i++) if (!strcmp(fs.f[i].key, "step")) r->p = r->s + fs.f[i].col - 1;
        char b[80];
        snprintf(b, sizeof b, "step %d, expected %lld (a line missing or out of order?)", st, (long long)step);
        return failf(r, "%s", b);
    }
    e.head = e.kv_head = 0;
    if (kind != FS_EV_ELEM && (!get_int(r, &fs, "head", 0, 1023, &e.head) || !get_int(r, &fs, "kv_head", 0, 1023, &e.kv_head)))
        return false;
    int cls = 0, reason = 0;
    bool ok = true;
    switch ((fs_event_kind)kind) {
    case FS_EV_ELEM:
        ok = get_int(r, &fs, "c0", 0, BIG, &e.c0) && get_int(r, &fs, "c1", 1, BIG, &e.c1) &&
             get_vec(r, &fs, "values", -1, &e.s_row, &e.n_s) && get_state(r, &fs, &e);
        if (ok && e.n_s != e.c1 - e.c0) {
            r->p = r->s;
            return failf(r, "\"values\" does not hold c1 - c0 numbers", NULL);
        }
        if (ok && e.c1 - e.c0 == 1) ok = get_num(r, &fs, "x", &e.x);
        break;
    case FS_EV_TILE:
    case FS_EV_SKIP:
    case FS_EV_BTILE:
    case FS_EV_BSKIP: {
        const bool skip = kind == FS_EV_SKIP || kind == FS_EV_BSKIP;
        ok = get_int(r, &fs, "qt", 0, BIG, &e.qt) && get_int(r, &fs, "kt", 0, BIG, &e.kt) && get_int(r, &fs, "r0", 0, BIG, &e.r0) &&
             get_int(r, &fs, "r1", 1, BIG, &e.r1) && get_int(r, &fs, "c0", 0, BIG, &e.c0) && get_int(r, &fs, "c1", 1, BIG, &e.c1) &&
             get_enum(r, &fs, "class", class_name, 3, &cls);
        e.cls = (fs_tile_class)cls;
        if (ok && skip) ok = get_enum(r, &fs, "reason", reason_name, 5, &reason);
        e.reason = (fs_skip_reason)reason;
        if (ok) ok = get_dropped(r, t, &fs, &e);
        /* A backward pair's event and its class must agree. */
        if (ok && (kind == FS_EV_BTILE || kind == FS_EV_BSKIP) && skip != (e.cls == FS_TILE_SKIPPED)) {
            at_field(r, &fs, "class");
            return failf(r, kind == FS_EV_BSKIP ? "a bskip of class \"%s\" (it is \"skipped\")"
                                                : "a btile of class \"%s\" (a skipped pair is a bskip)",
                         class_name(cls));
        }
        break;
    }
    case FS_EV_ROW:
        ok = get_int(r, &fs, "row", 0, BIG, &e.row) && get_int(r, &fs, "qt", -1, BIG, &e.qt) && get_int(r, &fs, "kt", -1, BIG, &e.kt) &&
             get_int(r, &fs, "c0", 0, BIG, &e.c0) && get_int(r, &fs, "c1", 0, BIG, &e.c1) && get_state(r, &fs, &e) &&
             get_int(r, &fs, "visible", 0, BIG, &e.visible) &&
             get_vec(r, &fs, "s", e.c1 - e.c0, &e.s_row, &e.n_s) && get_vec(r, &fs, "p", e.c1 - e.c0, &e.p_row, NULL) &&
             get_vec(r, &fs, "o_old", -1, &e.o_old, &e.n_o) && get_vec(r, &fs, "o_new", e.n_o, &e.o_new, NULL) &&
             get_bool(r, &fs, "normalized", &e.normalized);
        break;
    case FS_EV_PARTIAL:
        ok = get_int(r, &fs, "row", 0, BIG, &e.row) && get_int(r, &fs, "split", 0, BIG, &e.kt) && get_int(r, &fs, "c0", 0, BIG, &e.c0) &&
             get_int(r, &fs, "c1", 0, BIG, &e.c1) && get_int(r, &fs, "stride", 1, BIG, &e.stride) &&
             get_enum(r, &fs, "class", class_name, 3, &cls) && get_int(r, &fs, "visible", 0, BIG, &e.visible) &&
             get_num(r, &fs, "m", &e.m_new) && get_num(r, &fs, "l", &e.l_new) && get_vec(r, &fs, "s", -1, &e.s_row, &e.n_s) &&
             get_vec(r, &fs, "o", -1, &e.o_new, &e.n_o) && get_bool(r, &fs, "normalized", &e.normalized);
        e.cls = (fs_tile_class)cls;
        break;
    case FS_EV_MERGE:
        ok = get_int(r, &fs, "row", 0, BIG, &e.row) && get_int(r, &fs, "a", 0, BIG, &e.a) && get_int(r, &fs, "b", 0, BIG, &e.b) &&
             get_int(r, &fs, "id", 0, BIG, &e.id) && get_int(r, &fs, "level", -1, BIG, &e.level) &&
             get_num(r, &fs, "m_a", &e.m_old) && get_num(r, &fs, "l_a", &e.l_old) && get_vec(r, &fs, "o_a", -1, &e.o_old, &e.n_o) &&
             get_num(r, &fs, "m_b", &e.m_blk) && get_num(r, &fs, "l_b", &e.l_blk) && get_vec(r, &fs, "o_b", e.n_o, &e.o_blk, NULL) &&
             get_num(r, &fs, "c_a", &e.alpha) && get_num(r, &fs, "c_b", &e.beta) && get_num(r, &fs, "m", &e.m_new) &&
             get_num(r, &fs, "l", &e.l_new) && get_vec(r, &fs, "o", e.n_o, &e.o_new, NULL) &&
             get_bool(r, &fs, "normalized", &e.normalized);
        break;
    case FS_EV_OUT:
        ok = get_int(r, &fs, "row", 0, BIG, &e.row) && get_vec(r, &fs, "o", -1, &e.o_new, &e.n_o) && get_num(r, &fs, "m", &e.m_new) &&
             get_num(r, &fs, "l", &e.l_new);
        break;
    case FS_EV_LSE:
        ok = get_int(r, &fs, "row", 0, BIG, &e.row) && get_num(r, &fs, "lse", &e.x);
        break;
    case FS_EV_DELTA:
        ok = get_int(r, &fs, "row", 0, BIG, &e.row) && get_num(r, &fs, "D", &e.x) &&
             get_vec(r, &fs, "do", -1, &e.o_blk, &e.n_o) && get_vec(r, &fs, "o", e.n_o, &e.o_new, NULL) &&
             same_len(r, &fs, "do", LEN_DV, e.n_o, "a dO row");
        break;
    case FS_EV_BROW:
        ok = get_int(r, &fs, "row", 0, BIG, &e.row) && get_int(r, &fs, "qt", 0, BIG, &e.qt) && get_int(r, &fs, "kt", 0, BIG, &e.kt) &&
             get_int(r, &fs, "c0", 0, BIG, &e.c0) && get_int(r, &fs, "c1", 1, BIG, &e.c1) &&
             get_int(r, &fs, "visible", 0, BIG, &e.visible) && get_num(r, &fs, "lse", &e.x) && get_num(r, &fs, "D", &e.m_new);
        if (ok && e.c1 < e.c0) { r->p = r->s; return failf(r, "c1 is before c0", NULL); }
        ok = ok && get_vec(r, &fs, "s", e.c1 - e.c0, &e.s_row, &e.n_s) && get_vec(r, &fs, "p", e.n_s, &e.p_row, NULL) &&
             get_vec(r, &fs, "dp", e.n_s, &e.dp_row, NULL) && get_vec(r, &fs, "ds", e.n_s, &e.ds_row, NULL) &&
             get_vec(r, &fs, "dq_old", -1, &e.o_old, &e.n_o) && get_vec(r, &fs, "dq_blk", e.n_o, &e.o_blk, NULL) &&
             get_vec(r, &fs, "dq_new", e.n_o, &e.o_new, NULL) && same_len(r, &fs, "dq_old", LEN_D, e.n_o, "a dQ row");
        if (ok && e.visible > e.n_s) {
            at_field(r, &fs, "visible");
            return failf(r, "\"visible\" counts more keys than the row has", NULL);
        }
        break;
    case FS_EV_BKEY:
        ok = get_int(r, &fs, "key", 0, BIG, &e.row) && get_int(r, &fs, "qt", 0, BIG, &e.qt) && get_int(r, &fs, "kt", 0, BIG, &e.kt) &&
             get_int(r, &fs, "r0", 0, BIG, &e.r0) && get_int(r, &fs, "r1", 1, BIG, &e.r1) &&
             get_vec(r, &fs, "dk_old", -1, &e.o_old, &e.n_o) && get_vec(r, &fs, "dk_blk", e.n_o, &e.o_blk, NULL) &&
             get_vec(r, &fs, "dk_new", e.n_o, &e.o_new, NULL) && same_len(r, &fs, "dk_old", LEN_D, e.n_o, "a dK row") &&
             get_vec(r, &fs, "dv_old", -1, &e.g_old, &e.n_g) && get_vec(r, &fs, "dv_blk", e.n_g, &e.g_blk, NULL) &&
             get_vec(r, &fs, "dv_new", e.n_g, &e.g_new, NULL) && same_len(r, &fs, "dv_old", LEN_DV, e.n_g, "a dV row");
        break;
    case FS_EV_GRAD: {
        int tensor = 0;
        ok = get_enum(r, &fs, "tensor", grad_name, 3, &tensor) && get_int(r, &fs, "row", 0, BIG, &e.row) &&
             get_vec(r, &fs, "value", -1, &e.o_new, &e.n_o);
        e.tensor = tensor;
        if (ok && e.n_o == 0) { at_field(r, &fs, "value"); return failf(r, "an empty gradient row", NULL); }
        if (ok) ok = same_len(r, &fs, "value", tensor == FS_GRAD_DV ? LEN_DV : LEN_D, e.n_o,
                              tensor == FS_GRAD_DQ ? "a dQ row" : tensor == FS_GRAD_DK ? "a dK row" : "a dV row");
        if (ok && tensor != FS_GRAD_DQ && e.head != e.kv_head) {
            at_field(r, &fs, "head");
            return failf(r, "a %s row belongs to a KV head: \"head\" and \"kv_head\" must agree", grad_name(tensor));
        }
        break;
    }
    case FS_EV_LOOKUP:
        ok = get_int(r, &fs, "row", 0, BIG, &e.row) && get_int(r, &fs, "split", 0, BIG, &e.kt) &&
             get_int(r, &fs, "seq", 0, BIG, &e.seq) && get_int(r, &fs, "block", 0, BIG, &e.block) &&
             get_int(r, &fs, "page", 0, BIG, &e.page) && get_int(r, &fs, "c0", 0, BIG, &e.c0) &&
             get_int(r, &fs, "c1", 1, BIG, &e.c1) && get_int(r, &fs, "stride", 1, BIG, &e.stride) &&
             get_int(r, &fs, "refs", 1, BIG, &e.refs);
        break;
    case FS_EV_ALLOC:
        ok = get_int(r, &fs, "seq", 0, BIG, &e.seq) && get_int(r, &fs, "block", 0, BIG, &e.block) &&
             get_int(r, &fs, "page", 0, BIG, &e.page) && get_int(r, &fs, "free", 0, BIG, &e.n_free);
        e.refs = 1;
        break;
    case FS_EV_SHARE:
        ok = get_int(r, &fs, "seq", 0, BIG, &e.seq) && get_int(r, &fs, "from", 0, BIG, &e.src) &&
             get_int(r, &fs, "block", 0, BIG, &e.block) && get_int(r, &fs, "page", 0, BIG, &e.page) &&
             get_int(r, &fs, "refs", 2, BIG, &e.refs) && get_int(r, &fs, "c0", 0, BIG, &e.c0) &&
             get_int(r, &fs, "c1", 0, BIG, &e.c1);
        break;
    case FS_EV_COW:
        ok = get_int(r, &fs, "seq", 0, BIG, &e.seq) && get_int(r, &fs, "block", 0, BIG, &e.block) &&
             get_int(r, &fs, "page", 0, BIG, &e.page) && get_int(r, &fs, "from_page", 0, BIG, &e.src) &&
             get_int(r, &fs, "slots", 1, BIG, &e.slot) && get_int(r, &fs, "refs", 1, BIG, &e.refs) &&
             get_int(r, &fs, "free", 0, BIG, &e.n_free) && get_int(r, &fs, "c0", 0, BIG, &e.c0) &&
             get_int(r, &fs, "c1", 1, BIG, &e.c1);
        break;
    case FS_EV_WRITE:
        ok = get_int(r, &fs, "seq", 0, BIG, &e.seq) && get_int(r, &fs, "pos", 0, BIG, &e.c0) &&
             get_int(r, &fs, "block", 0, BIG, &e.block) && get_int(r, &fs, "page", 0, BIG, &e.page) &&
             get_int(r, &fs, "slot", 0, BIG, &e.slot) && get_int(r, &fs, "refs", 1, BIG, &e.refs);
        e.c1 = e.c0 + 1;
        break;
    case FS_EV_HOLD:
    case FS_EV_SEND:
    case FS_EV_RECV:
    case FS_EV_RMERGE:   /* ring attention (src/engine/ring.h): no scene replays it yet */
        return failf(r, "a '%s' event belongs to ring attention, which the window does not replay yet", kind_name(kind));
    case FS_EV_COUNT: break;
    }
    if (!ok) return false;
    if (e.c1 >= 0 && e.c1 < e.c0) { r->p = r->s; return failf(r, "c1 is before c0", NULL); }
    if (kind < FS_EV_LSE && kind != FS_EV_ELEM &&
        !same_len(r, &fs, kind == FS_EV_ROW ? "o_old" : kind == FS_EV_MERGE ? "o_a" : "o", LEN_DV, e.n_o, "an o vector"))
        return false;
    if (e.r1 >= 0 && e.r1 < e.r0) { r->p = r->s; return failf(r, "r1 is before r0", NULL); }
    /* One trace is forward or backward throughout. */
    int bw = kind >= FS_EV_LSE && kind < FS_EV_LOOKUP;
    if (r->backward < 0) r->backward = bw;
    else if (bw != r->backward) {
        at_field(r, &fs, "event");
        return failf(r, bw ? "a backward event (\"%s\") in a forward trace" : "a forward event (\"%s\") in a backward trace",
                     kind_name(kind));
    }
    if (bw) {
        if (!backward_phase(r, &fs, (fs_event_kind)kind)) return false;
        if (kind == FS_EV_BTILE || kind == FS_EV_BSKIP) r->tile = kind == FS_EV_BTILE ? t->n : -1;
        else if (kind == FS_EV_BROW || kind == FS_EV_BKEY) {
            /* Inside the btile before it: same head, tile, and its rows and keys (which the line
             * does not repeat: they are taken from the btile). */
            const fs_event *te = r->tile >= 0 ? &t->ev[r->tile] : NULL;
            if (!te) {
                at_field(r, &fs, "event");
                return failf(r, "a %s outside a recomputed pair (no btile before it)", kind_name(kind));
            }
            if (te->head != e.head || te->kv_head != e.kv_head || te->qt != e.qt || te->kt != e.kt) {
                at_field(r, &fs, te->head != e.head ? "head" : te->kv_head != e.kv_head ? "kv_head" : te->qt != e.qt ? "qt" : "kt");
                char b[160];
                snprintf(b, sizeof b, "this %s is not in the btile before it (head %d, Q tile %d, KV tile %d)", kind_name(kind),
                         te->head, te->qt, te->kt);
                return failf(r, "%s", b);
            }
            bool fits = kind == FS_EV_BROW ? e.row >= te->r0 && e.row < te->r1 && e.c0 == te->c0 && e.c1 == te->c1
                                           : e.row >= te->c0 && e.row < te->c1 && e.r0 == te->r0 && e.r1 == te->r1;
            if (!fits) {
                at_field(r, &fs, kind == FS_EV_BROW ? (e.row < te->r0 || e.row >= te->r1 ? "row" : e.c0 != te->c0 ? "c0" : "c1")
                                                    : (e.row < te->c0 || e.row >= te->c1 ? "key" : e.r0 != te->r0 ? "r0" : "r1"));
                char b[160];
                snprintf(b, sizeof b, "this %s lies outside the btile before it (rows %d-%d, keys %d-%d)", kind_name(kind),
                         te->r0, te->r1 - 1, te->c0, te->c1 - 1);
                return failf(r, "%s", b);
            }
            e.r0 = te->r0; e.r1 = te->r1; e.c0 = te->c0; e.c1 = te->c1;
            e.cls = te->cls;
        }
    }
    if (!fs_trace_push(t, &e)) return failf(r, "too many events (or out of memory)", NULL);
    return true;
}

/* Dropout from the events: on, with the p of the first pair event (tile, skip, btile, bskip) that
 * carries one (the seed is not in the file; the cells are). */
static void recover_dropout(fs_run *r, const fs_trace *t)
{
    for (int64_t k = 0; k < t->n; k++)
        if ((t->ev[k].kind == FS_EV_TILE || t->ev[k].kind == FS_EV_BTILE || t->ev[k].kind == FS_EV_SKIP ||
             t->ev[k].kind == FS_EV_BSKIP) && t->ev[k].drop >= 0) {
            r->tiling.dropout.on = true;
            r->tiling.dropout.p = t->ev[k].dropout;
            return;
        }
}

/* A backward trace's problem from its events: rows and keys (the largest index any event
 * names), d (the dQ and dK rows) and d_v (the dO and dV rows), heads (query heads from every
 * event but the dK and dV rows, which name their KV head), Bq and Bk (the largest pair), the
 * loop order (the pairs come sorted by head, Q tile, KV tile in q-outer order; otherwise the
 * run was kv-outer: a trace both orders write alike reads as q-outer) and a causal mask from
 * causal skips. */
static bool recover_backward(gui_show *show, const char *path, char *msg, size_t n_msg)
{
    const fs_trace *t = &show->trace;
    int n_q = 0, n_kv = 0, hq = 1, hkv = 1, d = 0, d_v = 0, Bq = 0, Bk = 0;
    bool causal = false, sorted = true;
    const fs_event *prev = NULL;
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        bool kv_row = e->kind == FS_EV_BKEY || (e->kind == FS_EV_GRAD && e->tensor != FS_GRAD_DQ);
        if (!(e->kind == FS_EV_GRAD && kv_row) && e->head + 1 > hq) hq = e->head + 1;
        if (e->kv_head + 1 > hkv) hkv = e->kv_head + 1;
        if (kv_row && e->row + 1 > n_kv) n_kv = e->row + 1;
        if (!kv_row && e->row + 1 > n_q) n_q = e->row + 1;
        if (e->r1 > n_q) n_q = e->r1;
        if (e->c1 > n_kv) n_kv = e->c1;
        switch (e->kind) {
        case FS_EV_DELTA: d_v = e->n_o; break;
        case FS_EV_BROW: d = e->n_o; break;
        case FS_EV_BKEY: d = e->n_o; d_v = e->n_g; break;
        case FS_EV_GRAD: if (e->tensor == FS_GRAD_DV) d_v = e->n_o; else d = e->n_o; break;
        case FS_EV_BTILE:
        case FS_EV_BSKIP:
            if (e->r1 - e->r0 > Bq) Bq = e->r1 - e->r0;
            if (e->c1 - e->c0 > Bk) Bk = e->c1 - e->c0;
            causal |= e->kind == FS_EV_BSKIP && e->reason == FS_SKIP_CAUSAL;
            if (prev && (prev->head != e->head ? prev->head > e->head : prev->qt != e->qt ? prev->qt > e->qt : prev->kt >= e->kt))
                sorted = false;
            prev = e;
            break;
        default: break;
        }
    }
    if (hkv > hq || hq % hkv) {
        snprintf(msg, n_msg, "%s:1:1: %d query heads cannot share %d KV heads", path, hq, hkv);
        return false;
    }
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        bool kv_row = e->kind == FS_EV_GRAD && e->tensor != FS_GRAD_DQ;
        if (!kv_row && e->kv_head != e->head / (hq / hkv)) {
            snprintf(msg, n_msg, "%s:%lld:1: query head %d reads KV head %d, not %d (%d query heads over %d KV heads)", path,
                     (long long)k + 1, e->head, e->kv_head, e->head / (hq / hkv), hq, hkv);
            return false;
        }
    }
    /* The gradient rows come last, all of them: hq·n_q of dQ, hkv·n_kv of dK and of dV. Fewer is
     * a file cut after one of them. */
    int64_t grads[3] = {0, 0, 0}, want[3] = {(int64_t)hq * n_q, (int64_t)hkv * n_kv, (int64_t)hkv * n_kv};
    for (int64_t k = 0; k < t->n; k++)
        if (t->ev[k].kind == FS_EV_GRAD && t->ev[k].tensor >= 0 && t->ev[k].tensor < 3) grads[t->ev[k].tensor]++;
    for (int g = 0; g < 3; g++)
        if (grads[g] < want[g]) {
            snprintf(msg, n_msg, "%s:%lld:1: the trace stops before its gradient rows: %lld of %lld %s rows written (truncated?)",
                     path, (long long)t->n + 1, (long long)grads[g], (long long)want[g], fs_grad_str(g));
            return false;
        }
    int64_t tq = Bq > 0 ? (n_q + Bq - 1) / Bq : n_q, tk = Bk > 0 ? (n_kv + Bk - 1) / Bk : n_kv;
    if (n_q > 65536 || n_kv > 65536 || tq * tk > ((int64_t)1 << 24)) {
        snprintf(msg, n_msg, "%s:1:1: the events describe %d queries and %d keys: too large to draw", path, n_q, n_kv);
        return false;
    }
    fs_run r = fs_run_make(FS_ALGO_BACKWARD);
    r.tiling.Bq = Bq > 0 ? Bq : 1;
    r.tiling.Bk = Bk > 0 ? Bk : 1;
    r.tiling.order = sorted ? FS_ORDER_Q_OUTER : FS_ORDER_KV_OUTER;
    r.attn = fs_attn_make(n_q, n_kv, d, d_v);
    r.attn.n_q_heads = hq;
    r.attn.n_kv_heads = hkv;
    if (causal) r.attn.mask.kind = FS_MASK_CAUSAL;
    recover_dropout(&r, t);
    show->run = r;
    show->scene = GUI_SCENE_BACKWARD;
    return true;
}

/* The problem's shape from the events; false with msg (FILE:LINE:1 of the event at fault) when
 * the events do not describe one problem the window can draw. */
static bool recover_shape(gui_show *show, const char *path, char *msg, size_t n_msg)
{
    const fs_trace *t = &show->trace;
    if (t->n > 0 && t->ev[0].kind >= FS_EV_LSE && t->ev[0].kind < FS_EV_LOOKUP) return recover_backward(show, path, msg, n_msg);
    int n_q = 0, n_kv = 0, hq = 1, hkv = 1, d_v = 0, Bq = 0, Bk = 0, stride = 1, bk_split = 0;
    bool elem = false, tiles = false, partial = false, merge_tree = false, causal = false, rows = false;
    int page_size = 0, max_slot = -1;   /* paged: from the writes (position − slot = block · page size) */
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *e = &t->ev[k];
        if (e->head + 1 > hq) hq = e->head + 1;
        if (e->kv_head + 1 > hkv) hkv = e->kv_head + 1;
        if (e->row + 1 > n_q) n_q = e->row + 1;
        if (e->r1 > n_q) n_q = e->r1;
        if (e->c1 > n_kv) n_kv = e->c1;
        if (e->n_o > d_v) d_v = e->n_o;
        switch (e->kind) {
        case FS_EV_ELEM: elem = true; break;
        case FS_EV_TILE:
        case FS_EV_SKIP:
            tiles = true;
            if (e->r1 - e->r0 > Bq) Bq = e->r1 - e->r0;
            if (e->c1 - e->c0 > Bk) Bk = e->c1 - e->c0;
            causal |= e->kind == FS_EV_SKIP && e->reason == FS_SKIP_CAUSAL;
            break;
        case FS_EV_ROW: rows = true; break;
        case FS_EV_PARTIAL:
            partial = true;
            if (e->stride > stride) stride = e->stride;
            if (e->c1 - e->c0 > bk_split) bk_split = e->c1 - e->c0;
            break;
        case FS_EV_MERGE: merge_tree |= e->level > 0; break;
        case FS_EV_WRITE:
            if (e->slot > max_slot) max_slot = e->slot;
            if (e->block > 0 && (e->c0 - e->slot) % e->block == 0 && !page_size) page_size = (e->c0 - e->slot) / e->block;
            if ((e->block > 0 && page_size && e->c0 - e->slot != e->block * page_size) || (e->block == 0 && e->c0 != e->slot) ||
                (page_size && e->slot >= page_size)) {
                snprintf(msg, n_msg, "%s:%lld:1: position %d in block %d, slot %d: not one page size for the whole trace",
                         path, (long long)k + 1, e->c0, e->block, e->slot);
                return false;
            }
            break;
        default: break;
        }
    }
    if (!page_size && max_slot >= 0) page_size = max_slot + 1;   /* one block: at least its slots */
    /* Heads: HQ a multiple of HKV, each event's KV head the one its query head reads. */
    if (hkv > hq || hq % hkv) {
        snprintf(msg, n_msg, "%s:1:1: %d query heads cannot share %d KV heads", path, hq, hkv);
        return false;
    }
    for (int64_t k = 0; k < t->n; k++)
        if (!elem && t->ev[k].kv_head != t->ev[k].head / (hq / hkv)) {
            snprintf(msg, n_msg, "%s:%lld:1: query head %d reads KV head %d, not %d (%d query heads over %d KV heads)", path,
                     (long long)k + 1, t->ev[k].head, t->ev[k].kv_head, t->ev[k].head / (hq / hkv), hq, hkv);
            return false;
        }
    /* Sizes the window can draw (a problem this large would not have been traced anyway). */
    int64_t tq = Bq > 0 ? (n_q + Bq - 1) / Bq : n_q, tk = Bk > 0 ? (n_kv + Bk - 1) / Bk : n_kv;
    if (n_q > 65536 || n_kv > 65536 || tq * tk > ((int64_t)1 << 24)) {
        snprintf(msg, n_msg, "%s:1:1: the events describe %d queries and %d keys: too large to draw", path, n_q, n_kv);
        return false;
    }
    /* Every query row of every head ends in an output row: a file cut after some of them (at a
     * line boundary) is a truncated trace, not a shorter one. */
    if (!elem) {
        bool *done = calloc((size_t)hq * (size_t)(n_q > 0 ? n_q : 1), 1);
        if (!done) { snprintf(msg, n_msg, "%s:1:1: out of memory", path); return false; }
        for (int64_t k = 0; k < t->n; k++)
            if (t->ev[k].kind == FS_EV_OUT && t->ev[k].row >= 0) done[(size_t)t->ev[k].head * n_q + t->ev[k].row] = true;
        for (int h = 0; h < hq; h++)
            for (int i = 0; i < n_q; i++)
                if (!done[(size_t)h * n_q + i]) {
                    snprintf(msg, n_msg, "%s:%lld:1: no output row for query %d of head %d: the trace stops early (truncated?)",
                             path, (long long)t->n + 1, i, h);
                    free(done);
                    return false;
                }
        free(done);
    }
    fs_run r;
    if (elem) {
        r = fs_run_make(FS_ALGO_SOFTMAX);
        show->scene = GUI_SCENE_SOFTMAX;
    } else if (partial) {
        r = fs_run_make(FS_ALGO_DECODE);
        if (stride > 1) { r.decoding.split = FS_SPLIT_STRIDED; r.decoding.parts = stride; }
        else r.decoding.Bk = bk_split > 0 ? bk_split : 1;
        r.decoding.merge = merge_tree ? FS_MERGE_TREE : FS_MERGE_SEQUENTIAL;
        r.page_size = page_size;
        show->scene = page_size > 0 ? GUI_SCENE_PAGED : GUI_SCENE_DECODE;
    } else if (tiles) {
        r = fs_run_make(FS_ALGO_TILED);
        r.tiling.Bq = Bq > 0 ? Bq : 1;
        r.tiling.Bk = Bk > 0 ? Bk : 1;
        show->scene = hq > 1 ? GUI_SCENE_GQA : GUI_SCENE_TILED;
    } else if (rows) {
        r = fs_run_make(FS_ALGO_QUERY);
        show->scene = GUI_SCENE_QUERY;
    } else {   /* only output rows: the reference; drawn as a grid of one tile */
        r = fs_run_make(FS_ALGO_REFERENCE);
        r.tiling.Bq = n_q > 0 ? n_q : 1;
        r.tiling.Bk = n_kv > 0 ? n_kv : 1;
        show->scene = GUI_SCENE_TILED;
    }
    r.attn = fs_attn_make(n_q, n_kv, 0, d_v);
    r.attn.n_q_heads = hq;
    r.attn.n_kv_heads = hkv;
    if (causal) r.attn.mask.kind = FS_MASK_CAUSAL;
    if (elem) {   /* the vector itself is in the events: each element or chunk's values */
        r.n_z = n_kv;
        double *z = show->owned[0] = calloc(n_kv > 0 ? (size_t)n_kv : 1, sizeof(double));
        for (int64_t k = 0; z && k < t->n; k++) {
            const fs_event *e = &t->ev[k];
            const double *v = fs_trace_at(t, e->s_row);
            for (int j = 0; v && e->kind == FS_EV_ELEM && j < e->n_s && e->c0 + j < n_kv; j++) z[e->c0 + j] = v[j];
        }
        r.z = z;
    }
    recover_dropout(&r, t);
    show->run = r;
    return true;
}

int gui_trace_load(const char *file, gui_show *show, FILE *err)
{
    memset(show, 0, sizeof *show);
    /* path: the file's name as messages and the title show it (control bytes, tab and newline
     * escaped, io/text.h); file: the name to open */
    char path[1024];
    fs_text_escape_line(file, strlen(file), path, sizeof path);
    fs_trace_init(&show->trace);
    fs_trace_init(&show->correct);
    show->diverge = -1;
    show->trace.max_events = MAX_EVENTS;
    const char *slash = strrchr(path, '/'), *b = slash ? slash + 1 : path;
    snprintf(show->name, sizeof show->name, "%.*s", (int)(strcspn(b, ".") ? strcspn(b, ".") : strlen(b)), b);
    snprintf(show->source, sizeof show->source, "a saved trace");
    FILE *f = fopen(file, "rb");
    if (!f) {
        fprintf(err, "flashstep: %s:1:1: cannot open: %s\n", path, strerror(errno));
        return 2;
    }
    char *line = malloc(MAX_LINE + 2);
    rd r = {.path = path, .err = err, .len = {-1, -1}, .backward = -1, .tile = -1};
    bool ok = line != NULL;
    if (!ok) snprintf(r.msg, sizeof r.msg, "%s:1:1: out of memory", path);
    int64_t step = 0;
    bool ended_with_newline = true;
    while (ok && fgets(line, MAX_LINE + 2, f)) {
        r.line++;
        size_t len = strlen(line);
        ended_with_newline = len > 0 && line[len - 1] == '\n';
        if (!ended_with_newline && !feof(f)) {
            r.s = r.p = line + MAX_LINE;
            ok = failf(&r, "line longer than 4 MiB", NULL);
            break;
        }
        if (ended_with_newline) line[--len] = 0;
        if (memchr(line, 0, len)) { r.s = r.p = line; ok = failf(&r, "a NUL byte in the line", NULL); break; }
        r.s = r.p = line;
        skip_ws(&r);
        if (!*r.p && ended_with_newline) { ok = failf(&r, "empty line", NULL); break; }
        r.p = line;
        ok = read_event(&r, &show->trace, step);
        step++;
    }
    if (ok && ferror(f)) { snprintf(r.msg, sizeof r.msg, "%s:%d:1: read error", path, r.line + 1); ok = false; }
    fclose(f);
    int last_col = (int)(r.s ? strlen(r.s) : 0) + 1;   /* the last line's end, before the line's buffer goes */
    free(line);
    r.s = r.p = NULL;
    if (ok && show->trace.n == 0) { snprintf(r.msg, sizeof r.msg, "%s:1:1: no events (an empty file)", path); ok = false; }
    if (ok && show->trace.ev[show->trace.n - 1].kind != (r.backward ? FS_EV_GRAD : FS_EV_OUT)) {
        snprintf(r.msg, sizeof r.msg, "%s:%d:1: the trace stops before its %s (truncated?)", path,
                 r.line + (ended_with_newline ? 1 : 0), r.backward ? "gradient rows" : "output rows");
        ok = false;
    }
    if (ok && !ended_with_newline) {
        snprintf(r.msg, sizeof r.msg, "%s:%d:%d: the last line has no newline (truncated?)", path, r.line, last_col);
        ok = false;
    }
    if (!ok) {
        fprintf(err, "flashstep: %s\n", r.msg);
        gui_show_free(show);
        return 2;
    }
    if (!recover_shape(show, path, r.msg, sizeof r.msg)) {
        fprintf(err, "flashstep: %s\n", r.msg);
        gui_show_free(show);
        return 2;
    }
    fs_text_fit(show->title, sizeof show->title,   /* (a long file name) */
                snprintf(show->title, sizeof show->title, "Replay of %s: %s, %lld events", b, fs_algo_str(show->run.algo),
                         (long long)show->trace.n));
    return 0;
}

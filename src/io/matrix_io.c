/* matrix_io.c: matrices and integer lists from text or .npy files, with file:line:column errors.
 *
 * Text is read whole, then scanned line by line; every number's column is kept so an error can
 * point at it. .npy is parsed from its header dictionary ('descr', 'fortran_order', 'shape').
 */
#include "io/matrix_io.h"
#include "io/text.h"
#include "engine/fp8.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILE_BYTES ((size_t)1 << 30)   /* text and .npy inputs */

bool fs_loc_error_set(fs_loc_error *e, const char *file, int32_t line, int32_t col, const char *fmt, ...)
{
    if (!e) return false;
    /* The file name and the message may quote text from a file (a key, a word, a name from a
     * directory listing): both are kept escaped (src/io/text.h), tab and newline included, so
     * printing them is safe and the message stays one line. */
    if (!file) file = "";
    fs_text_escape_line(file, strlen(file), e->file, sizeof e->file);
    e->line = line;
    e->col = col;
    char raw[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    fs_text_escape_line(raw, strlen(raw), e->msg, sizeof e->msg);
    return false;
}


void fs_loc_error_format(const fs_loc_error *e, char *buf, size_t n)
{
    if (e->line > 0)
        snprintf(buf, n, "%s:%d:%d: %s", e->file, e->line, e->col, e->msg);
    else
        snprintf(buf, n, "%s: %s", e->file, e->msg);
}

void fs_matrix_free(fs_matrix *m)
{
    free(m->data);
    m->data = NULL;
    m->rows = m->cols = 0;
}

char *fs_file_read(const char *path, size_t max_bytes, size_t *len, fs_loc_error *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fs_loc_error_set(err, path, 0, 0, "is a directory, not a file");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        fs_loc_error_set(err, path, 0, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 65536 * 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                fs_loc_error_set(err, path, 0, 0, "out of memory");
                goto fail;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, 65536, f);
        n += got;
        if (n > max_bytes) {
            fs_loc_error_set(err, path, 0, 0, "file larger than %zu bytes", max_bytes);
            goto fail;
        }
        if (got < 65536) break;
    }
    if (ferror(f)) {
        fs_loc_error_set(err, path, 0, 0, "read error: %s", strerror(errno));
        goto fail;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
fail:
    free(buf);
    fclose(f);
    return NULL;
}

/* Growable array of doubles. */
typedef struct {
    double *v;
    long n, cap;
} dvec;

static int dvec_push(dvec *d, double x)
{
    if (d->n == d->cap) {
        long cap = d->cap ? d->cap * 2 : 64;
        double *v = realloc(d->v, sizeof(double) * (size_t)cap);
        if (!v) return 0;
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = x;
    return 1;
}

static int is_sep(char c) { return c == ' ' || c == '\t' || c == ',' || c == '\r'; }

/* A word from a file as it may appear in a message: printable ASCII and well-formed UTF-8 as
 * they are; control bytes, bytes that are not UTF-8, C1 controls and the invisible byte-order
 * mark as \xHH, so binary garbage cannot reach the terminal raw. At most about 40 characters,
 * then "...". word is (n) bytes and may hold NUL bytes. */
static const char *shown_word(const char *word, size_t n, char *out, size_t cap)
{
    const unsigned char *w = (const unsigned char *)word;
    size_t o = 0, chars = 0;
    for (size_t i = 0; i < n;) {
        if (chars >= 40 || o + 16 > cap) {
            snprintf(out + o, cap - o, "...");
            return out;
        }
        unsigned char c = w[i];
        size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                                                                 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        bool ok = len > 0 && i + len <= n && !(len == 1 && (c < 0x20 || c == 0x7f));
        for (size_t k = 1; ok && k < len; k++) ok = (w[i + k] & 0xC0) == 0x80;
        if (ok && len == 2 && c == 0xC2 && w[i + 1] < 0xA0) ok = false;                  /* C1 controls */
        if (ok && len == 3 && c == 0xEF && w[i + 1] == 0xBB && w[i + 2] == 0xBF) ok = false;  /* BOM */
        if (ok) {
            memcpy(out + o, w + i, len);
            o += len;
            i += len;
        } else {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
            i++;
        }
        chars++;
    }
    out[o] = 0;
    return out;
}

/* Walks text word by word. Words are separated by spaces, tabs and commas; '#' ends a line. */
typedef struct {
    const char *text;
    size_t len, pos, bol, eol;  /* position, beginning and end of the current line */
    int32_t line;
} scanner;

static void scan_start(scanner *s, const char *text, size_t len, int32_t first_line)
{
    s->text = text;
    s->len = len;
    s->pos = s->bol = 0;
    s->line = first_line;
    s->eol = 0;
    while (s->eol < len && text[s->eol] != '\n') s->eol++;
}

/* Move to the next line; false at the end of the text. */
static bool scan_next_line(scanner *s)
{
    if (s->eol >= s->len) return false;
    s->pos = s->bol = s->eol + 1;
    s->line++;
    s->eol = s->bol;
    while (s->eol < s->len && s->text[s->eol] != '\n') s->eol++;
    return true;
}

/* The next word of the current line into tok (truncated to cap − 1, *n its full length) and
 * its 1-based column; false at the end of the line. */
static bool scan_word(scanner *s, char *tok, size_t cap, size_t *n, int32_t *col)
{
    while (s->pos < s->eol && is_sep(s->text[s->pos])) s->pos++;
    if (s->pos >= s->eol || s->text[s->pos] == '#') {
        s->pos = s->eol;
        return false;
    }
    *col = (int32_t)(s->pos - s->bol) + 1;
    size_t t = 0;
    while (s->pos < s->eol && !is_sep(s->text[s->pos]) && s->text[s->pos] != '#') {
        if (t < cap - 1) tok[t] = s->text[s->pos];
        t++;
        s->pos++;
    }
    tok[t < cap - 1 ? t : cap - 1] = 0;
    *n = t;
    return true;
}

/* The text parser; allow_nonfinite (fs_array_read with FS_IO_NONFINITE) also admits nan, inf and
 * -inf, for a kernel's output that is being judged. */
static bool parse_text(const char *text, size_t len, const char *name, int32_t first_line,
                       bool allow_neg_inf, bool allow_nonfinite, fs_matrix *out, fs_loc_error *err)
{
    memset(out, 0, sizeof *out);
    dvec d = {0};
    long cols = -1, rows = 0;
    int32_t first_row_line = 0, col = 0;
    scanner sc;
    scan_start(&sc, text, len, first_line);
    do {
        long in_row = 0;
        char tok[128];
        size_t t;
        while (scan_word(&sc, tok, sizeof tok, &t, &col)) {
            char *stop, shown[200];
            double x = strtod(tok, &stop);
            int is_neg_inf = !strcmp(tok, "-inf") || !strcmp(tok, "-Inf") || !strcmp(tok, "-INF");
            /* too long, not the whole word (a NUL inside), hexadecimal (strtod reads 0x10), or
             * starting with a vertical tab or form feed (strtod skips them; they separate nothing) */
            if (t >= sizeof tok - 1 || stop != tok + t || strpbrk(tok, "xX") || isspace((unsigned char)tok[0])) {
                fs_loc_error_set(err, name, sc.line, col, "not a number: '%s'",
                        shown_word(tok, t < sizeof tok - 1 ? t : sizeof tok - 1, shown, sizeof shown));
                goto fail;
            }
            if (!allow_nonfinite && (isnan(x) || (isinf(x) && !(allow_neg_inf && is_neg_inf)))) {
                fs_loc_error_set(err, name, sc.line, col, "%s is not allowed here (inputs must be finite%s)", tok,
                        allow_neg_inf ? "; -inf marks a masked score" : "");
                goto fail;
            }
            if (d.n >= FS_IO_MAX_ELEMS) {
                fs_loc_error_set(err, name, sc.line, col, "more than %d numbers", FS_IO_MAX_ELEMS);
                goto fail;
            }
            if (!dvec_push(&d, x)) {
                fs_loc_error_set(err, name, sc.line, col, "out of memory");
                goto fail;
            }
            in_row++;
            if (cols >= 0 && in_row > cols) {
                fs_loc_error_set(err, name, sc.line, col, "row has more than %ld number%s (line %d has %ld)", cols,
                        cols == 1 ? "" : "s", first_row_line, cols);
                goto fail;
            }
        }
        if (in_row > 0) {
            if (cols < 0) {
                cols = in_row;
                first_row_line = sc.line;
            } else if (in_row != cols) {
                fs_loc_error_set(err, name, sc.line, (int32_t)(sc.eol - sc.bol) + 1,
                        "row has %ld number%s, expected %ld like line %d", in_row, in_row == 1 ? "" : "s",
                        cols, first_row_line);
                goto fail;
            }
            rows++;
        }
    } while (scan_next_line(&sc));
    if (rows == 0) {
        fs_loc_error_set(err, name, first_line, 1, "no numbers found");
        goto fail;
    }
    out->rows = (int32_t)rows;
    out->cols = (int32_t)cols;
    out->data = d.v;
    return true;
fail:
    free(d.v);
    return false;
}

bool fs_matrix_parse_text(const char *text, size_t len, const char *name, int32_t first_line,
                          bool allow_neg_inf, fs_matrix *out, fs_loc_error *err)
{
    return parse_text(text, len, name, first_line, allow_neg_inf, false, out, err);
}

/* ---- .npy ---- */

static bool npy_field(const char *h, size_t hl, const char *key, const char **val)
{
    const char *p = h, *end = h + hl;
    size_t kl = strlen(key);
    while (p + kl + 2 <= end) {
        if ((p[0] == '\'' || p[0] == '"') && !strncmp(p + 1, key, kl) && p[1 + kl] == p[0]) {
            p += kl + 2;
            while (p < end && (*p == ' ' || *p == ':')) p++;
            *val = p;
            return true;
        }
        p++;
    }
    return false;
}

/* float16 bits → double (subnormals, ±inf and NaN included). */
static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, f = h & 0x3ff;
    double x = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexp(f + 1024, e - 25);
    return (h & 0x8000) ? -x : x;
}

/* bfloat16 bits → double: the upper half of a float32. */
static double bf16_to_double(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Parse a .npy image into an array of at most max_nd dimensions. A 1-D file is one row. */
static bool npy_parse(const unsigned char *b, size_t n, const char *name, unsigned flags, int max_nd,
                      fs_array *out, fs_loc_error *err)
{
    memset(out, 0, sizeof *out);
    if (n < 6 || memcmp(b, "\x93NUMPY", 6) != 0) {
        fs_loc_error_set(err, name, 1, 1, "not a .npy file (bad magic)");
        return false;
    }
    if (n < 10) {
        fs_loc_error_set(err, name, 1, (int32_t)n + 1, "truncated header");
        return false;
    }
    int major = b[6];
    size_t hl, off;
    if (major == 1) {
        hl = (size_t)b[8] | (size_t)b[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        if (n < 12) {
            fs_loc_error_set(err, name, 1, 9, "truncated header");
            return false;
        }
        hl = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    } else {
        fs_loc_error_set(err, name, 1, 7, "unsupported .npy version %d", major);
        return false;
    }
    if (off + hl > n) {
        fs_loc_error_set(err, name, 1, (int32_t)off + 1, "header longer than the file");
        return false;
    }
    /* The header is read within h[0, hl) only: it is followed by the data, not by a NUL. */
    const char *h = (const char *)b + off, *end = h + hl, *v;
#define COL(p) ((int32_t)((const unsigned char *)(p) - b) + 1)
    if (!npy_field(h, hl, "descr", &v)) {
        fs_loc_error_set(err, name, 1, (int32_t)off + 1, "header has no 'descr'");
        return false;
    }
    const char *close = v < end && (*v == '\'' || *v == '"') ? memchr(v + 1, *v, (size_t)(end - v - 1)) : NULL;
    if (!close) {
        fs_loc_error_set(err, name, 1, COL(v), "bad 'descr': expected a quoted dtype such as '<f4'");
        return false;
    }
    /* descr is order, kind, size in bytes: '<f4'. Anything else is refused by the check below. */
    char order = close - v > 1 ? v[1] : 0, kind = close - v > 2 ? v[2] : 0;
    int size = 0;
    for (const char *p = v + 3; p < close; p++)
        size = isdigit((unsigned char)*p) && size < 100 ? size * 10 + (*p - '0') : 1000;
    bool bits16 = (kind == 'u' || kind == 'i') && size == 2;   /* bfloat16 saved as its bits */
    bool bits8 = (kind == 'u' || kind == 'i') && size == 1;    /* FP8 saved as its bits */
    bool known_order = order == '<' || order == '>' || order == '=' || order == '|';
    const unsigned fp8_flags = FS_IO_E4M3_BITS | FS_IO_E5M2_BITS;
    const fs_fp8 fp8 = (flags & FS_IO_E5M2_BITS) ? FS_FP8_E5M2 : FS_FP8_E4M3;
    if (bits16 && known_order && !(flags & FS_IO_BF16_BITS)) {
        fs_loc_error_set(err, name, 1, COL(v), "dtype '%c%c2' holds 16-bit integers; they are read as "
                "bfloat16 bits only when asked (flashstep check --dtype bf16)", order, kind);
        return false;
    }
    if (bits8 && known_order && !(flags & fp8_flags)) {
        fs_loc_error_set(err, name, 1, COL(v), "dtype '%c%c1' holds 8-bit integers; they are read as "
                "FP8 bits only when asked (flashstep check --dtype e4m3 or e5m2)", order, kind);
        return false;
    }
    if (!(bits16 || bits8 || (kind == 'f' && (size == 2 || size == 4 || size == 8))) || !known_order) {
        fs_loc_error_set(err, name, 1, COL(v),
                "dtype must be float16, float32 or float64 ('<f2', '<f4', '<f8')%s",
                (flags & FS_IO_BF16_BITS) ? ", or bfloat16 bits as '<u2' or '<i2'"
                : (flags & fp8_flags) ? ", or FP8 bits as '|u1' or '|i1'" : "");
        return false;
    }
    int big = order == '>';
    bool fortran = false;   /* the first index runs fastest in the file (np.save of a transpose) */
    if (npy_field(h, hl, "fortran_order", &v)) {
        fortran = end - v >= 4 && !memcmp(v, "True", 4);
        if (!fortran && !(end - v >= 5 && !memcmp(v, "False", 5))) {
            fs_loc_error_set(err, name, 1, COL(v), "bad 'fortran_order': expected True or False");
            return false;
        }
    }
    if (!npy_field(h, hl, "shape", &v) || v >= end || *v != '(') {
        fs_loc_error_set(err, name, 1, (int32_t)off + 1, "header has no 'shape'");
        return false;
    }
    /* (d0, d1, ...): each dimension's digits are kept where they stand, for the message */
    long dims[FS_IO_MAX_NDIM] = {0};
    const char *dim_at[FS_IO_MAX_NDIM] = {0};
    long dim_len[FS_IO_MAX_NDIM] = {0};
    int nd = 0;
    const char *p = v + 1;
    for (;;) {
        while (p < end && (*p == ' ' || *p == ',')) p++;
        if (p >= end) {
            fs_loc_error_set(err, name, 1, COL(v), "bad shape: no closing ')'");
            return false;
        }
        if (*p == ')') break;
        if (!isdigit((unsigned char)*p) || nd == FS_IO_MAX_NDIM) {
            fs_loc_error_set(err, name, 1, COL(p), nd == FS_IO_MAX_NDIM ? "more than %d dimensions" : "bad shape",
                    FS_IO_MAX_NDIM);
            return false;
        }
        dim_at[nd] = p;
        long x = 0;
        for (; p < end && isdigit((unsigned char)*p); p++)
            x = x > FS_IO_MAX_ELEMS ? x : x * 10 + (*p - '0');   /* saturates above the bound */
        dim_len[nd] = (long)(p - dim_at[nd]);
        if (p < end && *p == 'L') p++;   /* Python 2's NumPy wrote (3L, 4L) */
        dims[nd++] = x;
    }
    if (nd == 0 || nd > max_nd) {
        if (max_nd == 2)
            fs_loc_error_set(err, name, 1, COL(v), "shape must have 1 or 2 dimensions");
        else
            fs_loc_error_set(err, name, 1, COL(v), "shape must have 1 to %d dimensions", max_nd);
        return false;
    }
    long total = 1;
    for (int k = 0; k < nd; k++) {
        if (dims[k] < 1) {
            fs_loc_error_set(err, name, 1, COL(dim_at[k]), "shape is empty (dimension %d is 0)", k);
            return false;
        }
        if (dims[k] > FS_IO_MAX_ELEMS || total * dims[k] > FS_IO_MAX_ELEMS) {
            fs_loc_error_set(err, name, 1, COL(dim_at[k]), "shape is too large (dimension %d is %.*s%s; at most %d "
                    "numbers in all)", k, (int)(dim_len[k] < 40 ? dim_len[k] : 40), dim_at[k], dim_len[k] > 40 ? "..." : "",
                    FS_IO_MAX_ELEMS);
            return false;
        }
        total *= dims[k];
    }
    size_t data_off = off + hl, need = (size_t)total * (size_t)size;
    if (n - data_off < need) {
        fs_loc_error_set(err, name, 1, (int32_t)data_off + 1, "file holds %zu data bytes, shape needs %zu",
                n - data_off, need);
        return false;
    }
    double *d = malloc(sizeof(double) * (size_t)total);
    if (!d) {
        fs_loc_error_set(err, name, 0, 0, "out of memory");
        return false;
    }
    const long cols = dims[nd - 1];
    const unsigned char *src = b + data_off;
    /* ci: where the file's i-th number goes in C order (the same i unless fortran) */
    long fidx[FS_IO_MAX_NDIM] = {0};   /* fortran: the index of number i, first axis fastest */
    for (long i = 0, ci = 0; i < total; i++) {
        if (fortran) {
            ci = 0;
            for (int k = 0; k < nd; k++) ci = ci * dims[k] + fidx[k];
            for (int k = 0; k < nd && ++fidx[k] == dims[k]; k++) fidx[k] = 0;
        } else {
            ci = i;
        }
        unsigned char t[8];
        for (int k = 0; k < size; k++) t[k] = src[(size_t)i * size + (big ? size - 1 - k : k)];
        double x;
        if (size == 1) {
            x = fs_fp8_value(fp8, t[0]);
        } else if (size == 2) {
            uint16_t u = (uint16_t)(t[0] | t[1] << 8);
            x = bits16 ? bf16_to_double(u) : half_to_double(u);
        } else if (size == 4) {
            float f;
            memcpy(&f, t, 4);
            x = f;
        } else {
            memcpy(&x, t, 8);
        }
        if (!isfinite(x) && !(flags & FS_IO_NONFINITE)) {
            /* 1-D and 2-D: row and column; 3-D and 4-D: the whole index, as NumPy writes it */
            char where[120];
            if (nd <= 2) {
                snprintf(where, sizeof where, "row %ld, column %ld", ci / cols, ci % cols);
            } else {
                size_t w = (size_t)snprintf(where, sizeof where, "index [");
                for (int k = 0; k < nd; k++) {
                    long stride = 1;
                    for (int j = k + 1; j < nd; j++) stride *= dims[j];
                    w += (size_t)snprintf(where + w, sizeof where - w, "%s%ld", k ? ", " : "", ci / stride % dims[k]);
                }
                snprintf(where + w, sizeof where - w, "]");
            }
            fs_loc_error_set(err, name, 1, (int32_t)(data_off + (size_t)i * size) + 1, "element %ld (%s) is %s", i,
                    where, isnan(x) ? "NaN" : "infinite");
            free(d);
            return false;
        }
        d[ci] = x;
    }
#undef COL
    out->ndim = nd;
    for (int k = 0; k < nd; k++) out->dims[k] = dims[k];
    snprintf(out->dtype, sizeof out->dtype, "%s", bits8 ? fs_fp8_str(fp8) : bits16 ? "bf16" : size == 2 ? "f16"
             : size == 4 ? "f32" : "f64");
    out->data = d;
    return true;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

bool fs_matrix_read(const char *path, bool allow_neg_inf, fs_matrix *out, fs_loc_error *err)
{
    memset(out, 0, sizeof *out);
    size_t len;
    char *buf = fs_file_read(path, MAX_FILE_BYTES, &len, err);
    if (!buf) return false;
    bool ok;
    if (ends_with(path, ".npy")) {
        fs_array a;
        ok = npy_parse((unsigned char *)buf, len, path, 0, 2, &a, err);
        if (ok) {
            out->rows = a.ndim == 2 ? (int32_t)a.dims[0] : 1;
            out->cols = (int32_t)a.dims[a.ndim - 1];
            out->data = a.data;
        }
    } else {
        ok = parse_text(buf, len, path, 1, allow_neg_inf, false, out, err);
    }
    free(buf);
    return ok;
}

void fs_array_free(fs_array *a)
{
    free(a->data);
    memset(a, 0, sizeof *a);
}

bool fs_array_parse(const char *buf, size_t len, const char *name, unsigned flags, fs_array *out,
                    fs_loc_error *err)
{
    memset(out, 0, sizeof *out);
    if (ends_with(name, ".npy")) return npy_parse((const unsigned char *)buf, len, name, flags, FS_IO_MAX_NDIM, out, err);
    fs_matrix m;
    if (!parse_text(buf, len, name, 1, false, (flags & FS_IO_NONFINITE) != 0, &m, err)) return false;
    out->ndim = 2;
    out->dims[0] = m.rows;
    out->dims[1] = m.cols;
    snprintf(out->dtype, sizeof out->dtype, "text");
    out->data = m.data;
    return true;
}

bool fs_array_read(const char *path, unsigned flags, fs_array *out, fs_loc_error *err)
{
    memset(out, 0, sizeof *out);
    size_t len;
    char *buf = fs_file_read(path, MAX_FILE_BYTES, &len, err);
    if (!buf) return false;
    bool ok = fs_array_parse(buf, len, path, flags, out, err);
    free(buf);
    return ok;
}

bool fs_ints_parse_text(const char *text, size_t len, const char *name, int32_t first_line,
                        int32_t **out, int32_t *n, fs_loc_error *err)
{
    *out = NULL;
    *n = 0;
    int32_t *v = NULL, col = 0;
    long cnt = 0, cap = 0;
    scanner sc;
    scan_start(&sc, text, len, first_line);
    do {
        char tok[32];
        size_t t;
        while (scan_word(&sc, tok, sizeof tok, &t, &col)) {
            char *stop, shown[200];
            errno = 0;
            long x = strtol(tok, &stop, 10);
            if (t >= sizeof tok - 1 || stop != tok + t || errno || x < -1 || x > FS_IO_MAX_ELEMS ||
                isspace((unsigned char)tok[0])) {
                fs_loc_error_set(err, name, sc.line, col, "expected an integer ≥ -1, got '%s'",
                        shown_word(tok, t < sizeof tok - 1 ? t : sizeof tok - 1, shown, sizeof shown));
                goto fail;
            }
            if (cnt == cap) {
                cap = cap ? cap * 2 : 64;
                int32_t *nv = cap > FS_IO_MAX_ELEMS ? NULL : realloc(v, sizeof(int32_t) * (size_t)cap);
                if (!nv) {
                    fs_loc_error_set(err, name, sc.line, col, cap > FS_IO_MAX_ELEMS ? "too many entries" : "out of memory");
                    goto fail;
                }
                v = nv;
            }
            v[cnt++] = (int32_t)x;
        }
    } while (scan_next_line(&sc));
    if (cnt == 0) {
        fs_loc_error_set(err, name, first_line, 1, "no entries found");
        goto fail;
    }
    *out = v;
    *n = (int32_t)cnt;
    return true;
fail:
    free(v);
    return false;
}

bool fs_ints_read(const char *path, int32_t **out, int32_t *n, fs_loc_error *err)
{
    size_t len;
    char *buf = fs_file_read(path, MAX_FILE_BYTES, &len, err);
    if (!buf) return false;
    bool ok = fs_ints_parse_text(buf, len, path, 1, out, n, err);
    free(buf);
    return ok;
}

bool fs_ints_locate(const char *path, int32_t index, int32_t *line, int32_t *col)
{
    fs_loc_error err;
    size_t len;
    char *buf = fs_file_read(path, MAX_FILE_BYTES, &len, &err);
    if (!buf) return false;
    scanner sc;
    scan_start(&sc, buf, len, 1);
    int32_t k = 0;
    bool found = false;
    do {
        char tok[32];
        size_t t;
        while (!found && scan_word(&sc, tok, sizeof tok, &t, col))
            if (k++ == index) {
                *line = sc.line;
                found = true;
            }
    } while (!found && scan_next_line(&sc));
    free(buf);
    return found;
}

bool fs_matrix_locate(const char *path, int64_t index, int32_t *line, int32_t *col)
{
    size_t n = strlen(path);
    if (n >= 4 && !strcmp(path + n - 4, ".npy")) {
        *line = *col = 1;
        return true;
    }
    if (index < 0 || index > INT32_MAX) return false;
    return fs_ints_locate(path, (int32_t)index, line, col);   /* the same words, read as numbers */
}

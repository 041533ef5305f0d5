/* fuzz_array.c: libFuzzer target for the array readers `flashstep check` uses (src/io):
 * .npy images, text matrices and parent lists.
 *
 * The first byte chooses the reader and its flags; the rest is the file's bytes, copied into a
 * buffer of exactly that size (no terminating NUL), so a read past the end is an ASan report:
 *
 *   byte 0 & 3   0: fs_array_parse as text   1: fs_array_parse as .npy
 *                2: fs_ints_parse_text       3: fs_matrix_parse_text with -inf allowed
 *   byte 0 & 4   FS_IO_NONFINITE             byte 0 & 8   FS_IO_BF16_BITS
 *   byte 0 & 48  16: FS_IO_E4M3_BITS  32: FS_IO_E5M2_BITS
 *
 * Beyond the sanitizers, every result is held to the readers' contract (abort() when not): a
 * read array has 1 to 4 dimensions of at least 1, no more than FS_IO_MAX_ELEMS numbers, and
 * finite values unless asked otherwise; a refused file has a message without control bytes, and
 * its place (line:column) lies inside the file.
 *
 *   make fuzz-arrays                      FUZZ_SECONDS (20 s), as in `make test`
 *   make fuzz-arrays FUZZ_SECONDS=600     a longer run (docs/check.md, "Tests")
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/matrix_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int cond, const char *what, const fs_loc_error *e)
{
    if (cond) return;
    fprintf(stderr, "fuzz_array: contract broken: %s", what);
    if (e) fprintf(stderr, " (%s:%d:%d: %s)", e->file, e->line, e->col, e->msg);
    fputc('\n', stderr);
    abort();
}

/* No byte below 0x20 and no DEL: what a refused file's message shows must not drive a terminal. */
static int clean(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f) return 0;
    return 1;
}

/* The length of line `line` (1-based) of text[0, n), or -1 when the text has fewer lines. */
static long line_len(const char *text, size_t n, int32_t line)
{
    size_t bol = 0;
    for (int32_t l = 1; l < line; l++) {
        const char *nl = memchr(text + bol, '\n', n - bol);
        if (!nl) return -1;
        bol = (size_t)(nl - text) + 1;
    }
    const char *nl = memchr(text + bol, '\n', n - bol);
    return (long)((nl ? (size_t)(nl - text) : n) - bol);
}

/* A refused input: a clean message, and a place inside the file (or none, for lack of memory). */
static void check_error(const fs_loc_error *e, const char *buf, size_t n, int npy)
{
    require(e->msg[0] != 0, "empty message", e);
    require(clean(e->msg) && clean(e->file), "control bytes in the message", e);
    if (e->line == 0) {
        require(e->col == 0 && strstr(e->msg, "memory") != NULL, "an error without a place", e);
        return;
    }
    require(e->line >= 1 && e->col >= 1, "a place before the file's start", e);
    if (npy) {
        require(e->line == 1 && (size_t)e->col <= n + 1, "a .npy place beyond the file", e);
    } else {
        long len = line_len(buf, n, e->line);
        require(len >= 0 && e->col <= len + 1, "a text place beyond its line", e);
    }
}

static void check_array(const fs_array *a, unsigned flags)
{
    require(a->ndim >= 1 && a->ndim <= FS_IO_MAX_NDIM, "ndim out of range", NULL);
    int64_t total = 1;
    for (int k = 0; k < a->ndim; k++) {
        require(a->dims[k] >= 1 && a->dims[k] <= FS_IO_MAX_ELEMS, "a dimension out of range", NULL);
        total *= a->dims[k];
        require(total <= FS_IO_MAX_ELEMS, "too many numbers", NULL);
    }
    require(a->data != NULL && a->dtype[0] != 0, "no data or no dtype", NULL);
    if (!(flags & FS_IO_NONFINITE))
        for (int64_t i = 0; i < total; i++) require(isfinite(a->data[i]), "a non-finite number read", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const unsigned mode = data[0] & 3;
    const unsigned flags = ((data[0] & 4) ? FS_IO_NONFINITE : 0) | ((data[0] & 8) ? FS_IO_BF16_BITS : 0) |
                           ((data[0] & 16) ? FS_IO_E4M3_BITS : 0) | ((data[0] & 32) ? FS_IO_E5M2_BITS : 0);
    const size_t n = size - 1;
    char *buf = malloc(n ? n : 1);   /* exactly the file's bytes: nothing after them to lean on */
    if (!buf) return 0;
    memcpy(buf, data + 1, n);
    fs_loc_error e;
    memset(&e, 0, sizeof e);
    if (mode <= 1) {
        fs_array a;
        if (fs_array_parse(buf, n, mode ? "fuzz/input.npy" : "fuzz/input.txt", flags, &a, &e)) {
            check_array(&a, flags);
            fs_array_free(&a);
        } else {
            check_error(&e, buf, n, mode == 1);
        }
    } else if (mode == 2) {
        int32_t *v = NULL, count = 0;
        if (fs_ints_parse_text(buf, n, "fuzz/parent.txt", 1, &v, &count, &e)) {
            require(count >= 1 && v != NULL, "no entries read", NULL);
            for (int32_t i = 0; i < count; i++) require(v[i] >= -1 && v[i] <= FS_IO_MAX_ELEMS, "entry out of range", NULL);
            free(v);
        } else {
            check_error(&e, buf, n, 0);
        }
    } else {
        fs_matrix m;
        if (fs_matrix_parse_text(buf, n, "fuzz/input.txt", 1, true, &m, &e)) {
            require(m.rows >= 1 && m.cols >= 1 && (int64_t)m.rows * m.cols <= FS_IO_MAX_ELEMS, "bad matrix shape", NULL);
            for (int64_t i = 0; i < (int64_t)m.rows * m.cols; i++)
                require(!isnan(m.data[i]) && m.data[i] != INFINITY, "NaN or +inf read", NULL);
            fs_matrix_free(&m);
        } else {
            check_error(&e, buf, n, 0);
        }
    }
    char line[1024];
    fs_loc_error_format(&e, line, sizeof line);
    free(buf);
    return 0;
}

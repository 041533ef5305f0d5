/* check_io.c: reading matrices and parent arrays: text, .npy, and every error's location. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/matrix_io.h"
#include "test_util.h"

static bool parse(const char *text, bool neg_inf, fs_matrix *m, fs_loc_error *e)
{
    return fs_matrix_parse_text(text, strlen(text), "x.txt", 1, neg_inf, m, e);
}

START_TEST(test_text_ok)
{
    fs_matrix m;
    fs_loc_error e;
    ck_assert(parse("# comment\n1, 2 ,3\n\n  4\t5 6 # trailing\r\n", false, &m, &e));
    ck_assert_int_eq(m.rows, 2);
    ck_assert_int_eq(m.cols, 3);
    ck_assert(m.data[0] == 1 && m.data[5] == 6);
    fs_matrix_free(&m);
    ck_assert(parse("-inf 1e-3\n", true, &m, &e));
    ck_assert(m.data[0] == -INFINITY && m.data[1] == 1e-3);
    fs_matrix_free(&m);
}
END_TEST

/* Each malformed text names the line and column of the culprit. */
START_TEST(test_text_errors)
{
    static const struct { const char *text; int line, col; const char *msg; } cases[] = {
        {"1 2\n3\n", 2, 2, "expected 2"},
        {"1 2\n3 4 5\n", 2, 5, "more than 2"},
        {"1 2\n3 zz\n", 2, 3, "not a number"},
        {"1 nan\n", 1, 3, "not allowed"},
        {"1 -inf\n", 1, 3, "not allowed"},
        {"inf\n", 1, 1, "not allowed"},
        {"# only a comment\n\n", 1, 1, "no numbers"},
        {"1 2e\n", 1, 3, "not a number"},
        {"1 0x10\n", 1, 3, "not a number"},
        {"1 \v2\n", 1, 3, "not a number: '\\x0b2'"},   /* strtod would skip the vertical tab */
        {"1\f 2\n", 1, 1, "not a number: '1\\x0c'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fs_matrix m;
        fs_loc_error e;
        ck_assert_msg(!parse(cases[i].text, false, &m, &e), "case %zu parsed", i);
        ck_assert_msg(e.line == cases[i].line && e.col == cases[i].col, "case %zu: %d:%d (%s)", i, e.line,
                      e.col, e.msg);
        ck_assert_msg(strstr(e.msg, cases[i].msg), "case %zu: '%s'", i, e.msg);
        ck_assert_str_eq(e.file, "x.txt");
    }
    /* A lesson's inline matrix starts at some line of its file. */
    fs_matrix m;
    fs_loc_error e;
    ck_assert(!fs_matrix_parse_text("1 2\n3\n", 6, "lesson.txt", 40, false, &m, &e));
    ck_assert_int_eq(e.line, 41);
    char buf[300];
    fs_loc_error_format(&e, buf, sizeof buf);
    ck_assert_msg(!strncmp(buf, "lesson.txt:41:2: ", 17), "%s", buf);
}
END_TEST

/* Words that are not numbers are quoted in the message, but never raw: binary garbage, control
 * bytes and a byte-order mark come out as \xHH, long words are cut, and a NUL byte inside a
 * word does not end it early (strtod would read "1" out of "1<NUL>abc"). */
START_TEST(test_text_garbage)
{
    static const struct { const char *text; size_t len; int line, col; const char *shown; } cases[] = {
        {"1 2\n3 \x01\xff\x80z\n", 12, 2, 3, "'\\x01\\xff\\x80z'"},
        {"1\0abc 2\n", 9, 1, 1, "'1\\x00abc'"},
        {"\xef\xbb\xbf" "1 2\n", 8, 1, 1, "'\\xef\\xbb\\xbf" "1'"},
        {"1 \xe2\x88\x92" "2\n", 7, 1, 3, "'\xe2\x88\x92" "2'"},   /* U+2212 minus stays readable */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fs_matrix m;
        fs_loc_error e;
        ck_assert_msg(!fs_matrix_parse_text(cases[i].text, cases[i].len, "g.txt", 1, false, &m, &e),
                      "case %zu parsed", i);
        ck_assert_msg(e.line == cases[i].line && e.col == cases[i].col, "case %zu: %d:%d", i, e.line, e.col);
        ck_assert_msg(strstr(e.msg, cases[i].shown), "case %zu: '%s'", i, e.msg);
    }
    /* 300 random bytes: one short message with no control byte and no byte that cannot start or
     * continue UTF-8 (0xC0, 0xC1, 0xF5..0xFF). */
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    char junk[300];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(unsigned char)(fs_rng_next(&r) >> 56);
    junk[0] = 'x';   /* a word starts here, whatever follows */
    fs_matrix m;
    fs_loc_error e;
    ck_assert(!fs_matrix_parse_text(junk, sizeof junk, "g.txt", 1, false, &m, &e));
    for (const unsigned char *p = (const unsigned char *)e.msg; *p; p++)
        FS_ASSERT_SEED(*p >= 0x20 && *p != 0x7f && *p != 0xC0 && *p != 0xC1 && *p < 0xF5, seed,
                       "byte 0x%02x in '%s'", *p, e.msg);
    int32_t *v, n;
    ck_assert(!fs_ints_parse_text("-1\0 0\n", 6, "p.txt", 1, &v, &n, &e));
    ck_assert_msg(strstr(e.msg, "'-1\\x00'") && e.col == 1, "%s", e.msg);
}
END_TEST

/* Create a fresh file from a mkstemps template with a 4-character suffix (".npy", ".txt"), which
 * becomes its name; returns the open descriptor. */
static int temp_file(char *path)
{
    int fd = mkstemps(path, 4);
    ck_assert(fd >= 0);
    return fd;
}

/* Write a .npy with a given header and payload; returns the path. */
static void write_npy(const char *path, int version, const char *dict, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert(f);
    size_t pre = version == 1 ? 10 : 12, hl = strlen(dict) + 1;
    size_t pad = (64 - (pre + hl) % 64) % 64;
    hl += pad;
    fwrite("\x93NUMPY", 1, 6, f);
    unsigned char v[2] = {(unsigned char)version, 0};
    fwrite(v, 1, 2, f);
    unsigned char len[4] = {hl & 255, (hl >> 8) & 255, (hl >> 16) & 255, (hl >> 24) & 255};
    fwrite(len, 1, version == 1 ? 2 : 4, f);
    fputs(dict, f);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, n, f);
    fclose(f);
}

START_TEST(test_npy)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    char path[] = "/tmp/fs-io-XXXXXX.npy";
    close(temp_file(path));
    double d[6];
    float f[6];
    fs_rng_fill(&r, d, 6, -3, 3);
    for (int i = 0; i < 6; i++) f[i] = (float)d[i];
    fs_matrix m;
    fs_loc_error e;
    write_npy(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", d, sizeof d);
    ck_assert_msg(fs_matrix_read(path, false, &m, &e), "%s", e.msg);
    ck_assert(m.rows == 2 && m.cols == 3 && !memcmp(m.data, d, sizeof d));
    fs_matrix_free(&m);
    write_npy(path, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", f, sizeof f);
    ck_assert_msg(fs_matrix_read(path, false, &m, &e), "%s", e.msg);
    ck_assert(m.rows == 1 && m.cols == 6 && m.data[5] == (double)f[5]);
    fs_matrix_free(&m);
    /* big-endian float64 */
    unsigned char be[16];
    double two[2] = {1.5, -2.25};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 8; k++) be[i * 8 + k] = ((unsigned char *)&two[i])[7 - k];
    write_npy(path, 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (1, 2), }", be, 16);
    ck_assert_msg(fs_matrix_read(path, false, &m, &e), "%s", e.msg);
    ck_assert(m.data[0] == 1.5 && m.data[1] == -2.25);
    fs_matrix_free(&m);
    /* errors */
    write_npy(path, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", d, 8);
    ck_assert(!fs_matrix_read(path, false, &m, &e) && strstr(e.msg, "float32 or float64") && e.line == 1);
    /* Fortran order (np.save of a transpose): the file holds column 0, then column 1, ... */
    write_npy(path, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", d, sizeof d);
    ck_assert_msg(fs_matrix_read(path, false, &m, &e), "%s", e.msg);
    ck_assert(m.rows == 2 && m.cols == 3);
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 3; c++) FS_ASSERT_SEED(m.data[i * 3 + c] == d[c * 2 + i], seed, "row %d col %d", i, c);
    fs_matrix_free(&m);
    write_npy(path, 1, "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2, 3), }", d, sizeof d);
    ck_assert(!fs_matrix_read(path, false, &m, &e) && strstr(e.msg, "fortran_order"));
    write_npy(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 3), }", d, sizeof d);
    ck_assert(!fs_matrix_read(path, false, &m, &e) && strstr(e.msg, "data bytes"));
    d[4] = NAN;
    write_npy(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", d, sizeof d);
    ck_assert(!fs_matrix_read(path, false, &m, &e) && strstr(e.msg, "NaN") && strstr(e.msg, "element 4") && e.col == 128 + 4 * 8 + 1);
    FILE *fp = fopen(path, "wb");
    fputs("not numpy at all", fp);
    fclose(fp);
    ck_assert(!fs_matrix_read(path, false, &m, &e) && strstr(e.msg, "magic"));
    unlink(path);
    ck_assert(!fs_matrix_read("/nonexistent/q.txt", false, &m, &e) && e.line == 0 && strstr(e.msg, "cannot open"));
    ck_assert(!fs_matrix_read("/tmp", false, &m, &e) && strstr(e.msg, "directory"));
}
END_TEST

START_TEST(test_ints)
{
    /* An entry found wrong after reading is located in the file. */
    char path[] = "/tmp/fs-ints-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(write(fd, "-1  0\n# note\n 1, 7\n", 19) == 19);
    close(fd);
    int32_t line = 0, col = 0;
    ck_assert(fs_ints_locate(path, 3, &line, &col));
    ck_assert_msg(line == 3 && col == 5, "%d:%d", line, col);
    ck_assert(!fs_ints_locate(path, 4, &line, &col));
    unlink(path);

    int32_t *v, n;
    fs_loc_error e;
    const char *t = "-1 0 1\n1, 2 # five\n";
    ck_assert(fs_ints_parse_text(t, strlen(t), "p.txt", 1, &v, &n, &e));
    ck_assert_int_eq(n, 5);
    ck_assert(v[0] == -1 && v[4] == 2);
    free(v);
    t = "-1 0\n0.5\n";
    ck_assert(!fs_ints_parse_text(t, strlen(t), "p.txt", 1, &v, &n, &e));
    ck_assert(e.line == 2 && e.col == 1);
    /* A word longer than the scanner's buffer is refused without reading past it (fuzzer find). */
    t = "-1 0123456789012345678901234567890123456789x\n";
    ck_assert(!fs_ints_parse_text(t, strlen(t), "p.txt", 1, &v, &n, &e));
    ck_assert(e.line == 1 && e.col == 4);
    t = "-1 \f0\n";   /* strtol would skip the form feed */
    ck_assert(!fs_ints_parse_text(t, strlen(t), "p.txt", 1, &v, &n, &e));
    ck_assert(e.line == 1 && e.col == 4);
    t = "-1 -2\n";
    ck_assert(!fs_ints_parse_text(t, strlen(t), "p.txt", 1, &v, &n, &e));
    ck_assert(e.line == 1 && e.col == 4);
}
END_TEST

/* fs_array_read: float16, up to 4-D, bfloat16 bits on request, non-finite values on request. */
START_TEST(test_npy_array)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    char path[] = "/tmp/fs-io-XXXXXX.npy";
    close(temp_file(path));
    fs_array a;
    fs_loc_error e;
    /* float16: 1.5, -0.25, 65504 (the largest), 2^-24 (the smallest subnormal), -0 */
    uint16_t h[5] = {0x3e00, 0xb400, 0x7bff, 0x0001, 0x8000};
    write_npy(path, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }", h, sizeof h);
    ck_assert_msg(fs_array_read(path, 0, &a, &e), "%s", e.msg);
    ck_assert(a.ndim == 1 && a.dims[0] == 5 && !strcmp(a.dtype, "f16"));
    ck_assert(a.data[0] == 1.5 && a.data[1] == -0.25 && a.data[2] == 65504 && a.data[3] == 0x1p-24 && a.data[4] == 0);
    fs_array_free(&a);
    /* the matrix reader takes float16 too */
    fs_matrix m;
    ck_assert_msg(fs_matrix_read(path, false, &m, &e), "%s", e.msg);
    ck_assert(m.rows == 1 && m.cols == 5 && m.data[2] == 65504);
    fs_matrix_free(&m);
    /* 4-D float32, random values */
    float f[12];
    for (int i = 0; i < 12; i++) f[i] = (float)fs_rng_uniform(&r, -3, 3);
    write_npy(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 2, 3), }", f, sizeof f);
    ck_assert_msg(fs_array_read(path, 0, &a, &e), "%s", e.msg);
    ck_assert(a.ndim == 4 && a.dims[0] == 2 && a.dims[1] == 1 && a.dims[2] == 2 && a.dims[3] == 3);
    for (int i = 0; i < 12; i++) FS_ASSERT_SEED(a.data[i] == (double)f[i], seed, "element %d", i);
    fs_array_free(&a);
    ck_assert(!fs_matrix_read(path, false, &m, &e) && strstr(e.msg, "1 or 2 dimensions"));
    /* the same numbers in Fortran order: element [i0, i1, i2, i3] is number i0 + 2 (i1 + i2 + 2 i3) */
    write_npy(path, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1, 2, 3), }", f, sizeof f);
    ck_assert_msg(fs_array_read(path, 0, &a, &e), "%s", e.msg);
    ck_assert(a.ndim == 4 && a.dims[0] == 2 && a.dims[1] == 1 && a.dims[2] == 2 && a.dims[3] == 3);
    for (int i0 = 0; i0 < 2; i0++)
        for (int i2 = 0; i2 < 2; i2++)
            for (int i3 = 0; i3 < 3; i3++)
                FS_ASSERT_SEED(a.data[(i0 * 2 + i2) * 3 + i3] == (double)f[i0 + 2 * (i2 + 2 * i3)], seed,
                               "index [%d, 0, %d, %d]", i0, i2, i3);
    fs_array_free(&a);
    /* a NaN is named by its index, whichever the order: number 7 of the file is [1, 0, 1, 1] */
    float fn = f[7];
    f[7] = NAN;
    write_npy(path, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1, 2, 3), }", f, sizeof f);
    ck_assert(!fs_array_read(path, 0, &a, &e) && strstr(e.msg, "element 7") && strstr(e.msg, "[1, 0, 1, 1]"));
    f[7] = fn;
    write_npy(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 3, 2), }", f, sizeof f);
    ck_assert(!fs_array_read(path, 0, &a, &e) && strstr(e.msg, "more than 4"));
    /* bfloat16 bits: only when asked */
    uint16_t b[2] = {0x3fc0, 0xc049};   /* 1.5, -3.140625 */
    write_npy(path, 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", b, sizeof b);
    ck_assert(!fs_array_read(path, 0, &a, &e) && strstr(e.msg, "bfloat16") && e.line == 1);
    ck_assert_msg(fs_array_read(path, FS_IO_BF16_BITS, &a, &e), "%s", e.msg);
    ck_assert(a.data[0] == 1.5 && a.data[1] == -3.140625 && !strcmp(a.dtype, "bf16"));
    fs_array_free(&a);
    /* NaN and inf: errors, unless asked for (a kernel's output) */
    uint16_t bad[3] = {0x7e00, 0x7c00, 0x3c00};
    write_npy(path, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", bad, sizeof bad);
    ck_assert(!fs_array_read(path, 0, &a, &e) && strstr(e.msg, "NaN"));
    ck_assert(fs_array_read(path, FS_IO_NONFINITE, &a, &e));
    ck_assert(isnan(a.data[0]) && a.data[1] == INFINITY && a.data[2] == 1);
    fs_array_free(&a);
    unlink(path);
    char tpath[] = "/tmp/fs-io-XXXXXX.txt";
    int fd = temp_file(tpath);
    ck_assert(write(fd, "1 nan\n-inf 2\n", 13) == 13);
    close(fd);
    ck_assert(!fs_array_read(tpath, 0, &a, &e) && e.line == 1 && e.col == 3);
    ck_assert(fs_array_read(tpath, FS_IO_NONFINITE, &a, &e));
    ck_assert(a.ndim == 2 && a.dims[0] == 2 && isnan(a.data[1]) && a.data[2] == -INFINITY && !strcmp(a.dtype, "text"));
    fs_array_free(&a);
    unlink(tpath);
}
END_TEST

/* A .npy image in memory, exactly as long as its bytes (no NUL after them, so a sanitized run
 * catches any read past the end): version 1, the header as given (no padding), then n data
 * bytes. Free it. */
static char *npy_image(const char *dict, const void *data, size_t n, size_t *len)
{
    size_t hl = strlen(dict);
    *len = 10 + hl + n;
    char *b = malloc(*len);
    ck_assert(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (char)(hl & 255);
    b[9] = (char)(hl >> 8);
    memcpy(b + 10, dict, hl);
    memcpy(b + 10 + hl, data, n);
    return b;
}

/* The header is read within its stated length: what follows it is data, never more header (the
 * fuzzer's first find: a shape without ')' took its digits from the data, an unclosed descr its
 * size). Every refusal names its place. */
START_TEST(test_npy_header_bounds)
{
    static const struct { const char *dict, *data; size_t n; const char *msg; } bad[] = {
        /* the shape "(2, " ends the header; the data starts with "3)": not (2, 3) */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, ", "3)xxxxxxxxxxxxxxxxxxxxxx", 24, "no closing ')'"},
        /* descr '<f4 without its closing quote */
        {"{'shape': (2,), 'fortran_order': False, 'descr': '<f4", "\x01\x02\x03\x04'zzz", 8, "bad 'descr'"},
        {"{'descr': '<f4x', 'fortran_order': False, 'shape': (2,), }", "xxxxxxxx", 8, "dtype must be"},
        {"{'descr': '<f', 'fortran_order': False, 'shape': (2,), }", "xxxxxxxx", 8, "dtype must be"},
        {"{'descr': '<f4', 'fortran_order': Tru", "e, 'shape': (2,), }xxxxxxxx", 27, "True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 2), }", "", 0,
         "dimension 0 is 99999999999999999999999"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", "", 0, "empty"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': ", "(1,)xxxx", 8, "no 'shape'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t len;
        char *b = npy_image(bad[i].dict, bad[i].data, bad[i].n, &len);
        fs_array a;
        fs_loc_error e;
        ck_assert_msg(!fs_array_parse(b, len, "h.npy", 0, &a, &e), "case %zu was read", i);
        ck_assert_msg(strstr(e.msg, bad[i].msg) && e.line == 1 && e.col >= 1 && (size_t)e.col <= len + 1,
                      "case %zu: %d:%d: %s", i, e.line, e.col, e.msg);
        free(b);
    }
    /* a .npy cut inside its first 10 bytes says so */
    fs_array a;
    fs_loc_error e;
    ck_assert(!fs_array_parse("\x93NUMPY\x01", 7, "t.npy", 0, &a, &e) && strstr(e.msg, "truncated") && e.col == 8);
    /* what NumPy writes still reads: Python 2's (2L, 3L) included */
    const float f[6] = {1, 2, 3, 4, 5, 6};
    size_t len;
    char *b = npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", f, sizeof f, &len);
    ck_assert_msg(fs_array_parse(b, len, "ok.npy", 0, &a, &e), "%s", e.msg);
    ck_assert(a.ndim == 2 && a.dims[0] == 2 && a.dims[1] == 3 && a.data[5] == 6);
    fs_array_free(&a);
    free(b);
    /* NaN in a 4-D array is named by its whole index */
    float g[12] = {0};
    g[11] = NAN;
    b = npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 2, 3), }", g, sizeof g, &len);
    ck_assert(!fs_array_parse(b, len, "g.npy", 0, &a, &e));
    ck_assert_msg(strstr(e.msg, "element 11 (index [1, 0, 1, 2]) is NaN"), "%s", e.msg);
    free(b);
    /* a file name with a tab or a newline stays on one line in the message */
    ck_assert(!fs_array_parse("1 x\n", 4, "a\tb\nc.txt", 0, &a, &e));
    ck_assert_msg(!strcmp(e.file, "a\\x09b\\x0ac.txt"), "%s", e.file);
}
END_TEST

Suite *io_suite(void)
{
    Suite *s = suite_create("io");
    TCase *tc = tcase_create("matrix");
    tcase_add_test(tc, test_text_ok);
    tcase_add_test(tc, test_text_errors);
    tcase_add_test(tc, test_text_garbage);
    tcase_add_test(tc, test_npy);
    tcase_add_test(tc, test_npy_array);
    tcase_add_test(tc, test_npy_header_bounds);
    tcase_add_test(tc, test_ints);
    suite_add_tcase(s, tc);
    return s;
}

/* matrix_io.h: reading matrices and parent arrays from files, with located errors.
 *
 * Text: one row per line, numbers separated by spaces or commas, '#' starts a comment, blank
 * lines are ignored. ".npy": version 1/2/3, float16, float32 or float64 (either byte order), C
 * or Fortran order (read into C order), 1-D (one row) or 2-D; fs_array_read also takes up to 4-D
 * and bfloat16 bits. Every error names the file, the line and the column (for .npy the line
 * is 1 and the column is the byte offset + 1 of the bad header field).
 * This module does no printing; the caller prints fs_loc_error.
 */
#ifndef FS_MATRIX_IO_H
#define FS_MATRIX_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FS_IO_MAX_ELEMS (1 << 26)   /* 64 Mi numbers: a bound for files read by the tools */

typedef struct {
    char file[256];
    int32_t line, col;    /* 1-based; 0 when the error is not about a place in the file */
    char msg[256];
} fs_loc_error;

typedef struct {
    int32_t rows, cols;
    double *data;         /* rows × cols, row-major; free with fs_matrix_free */
} fs_matrix;

void fs_matrix_free(fs_matrix *m);

/* Read a matrix; ".npy" by file name suffix, text otherwise. NaN and ±Inf are errors unless
 * allow_neg_inf, which admits "-inf" (for given scores that are masked). Returns false and
 * fills err on failure. */
bool fs_matrix_read(const char *path, bool allow_neg_inf, fs_matrix *out, fs_loc_error *err);

/* An array of 1 to FS_IO_MAX_NDIM dimensions, held in C order (.npy), or a text matrix (2-D). */
#define FS_IO_MAX_NDIM 4
typedef struct {
    int32_t ndim;
    int64_t dims[FS_IO_MAX_NDIM];
    char dtype[8];        /* what the file held: "f16", "f32", "f64", "bf16", "e4m3", "e5m2" (bits)
                           * or "text" */
    double *data;         /* every element, row-major; free with fs_array_free */
} fs_array;

enum {
    FS_IO_NONFINITE = 1u << 0,  /* admit NaN and ±inf (an output being judged, not an input) */
    FS_IO_BF16_BITS = 1u << 1,  /* read '<u2' / '<i2' .npy as bfloat16 bit patterns */
    FS_IO_E4M3_BITS = 1u << 2,  /* read '|u1' / '|i1' .npy as e4m3 bit patterns (engine/fp8.h) */
    FS_IO_E5M2_BITS = 1u << 3,  /* ... as e5m2 bit patterns */
};

/* Read an array; ".npy" by suffix, text otherwise. flags: FS_IO_*. */
bool fs_array_read(const char *path, unsigned flags, fs_array *out, fs_loc_error *err);
void fs_array_free(fs_array *a);
/* The same for a file's bytes held in memory, buf[0, len) (no terminating NUL needed): name
 * decides the kind (".npy" or text) and is the file errors name. */
bool fs_array_parse(const char *buf, size_t len, const char *name, unsigned flags, fs_array *out,
                    fs_loc_error *err);

/* Parse text held in memory; name and first_line locate errors (a lesson's inline matrix
 * starts at some line of the lesson file). */
bool fs_matrix_parse_text(const char *text, size_t len, const char *name, int32_t first_line,
                          bool allow_neg_inf, fs_matrix *out, fs_loc_error *err);

/* Read integers (a parent array: one per entry, any layout, −1 for the root). */
bool fs_ints_read(const char *path, int32_t **out, int32_t *n, fs_loc_error *err);
bool fs_ints_parse_text(const char *text, size_t len, const char *name, int32_t first_line,
                        int32_t **out, int32_t *n, fs_loc_error *err);

/* Where the index-th integer (0-based) of the file at path stands, for an error about that
 * entry found after reading (a parent array that is not a tree). false when it cannot tell. */
bool fs_ints_locate(const char *path, int32_t index, int32_t *line, int32_t *col);

/* Where the index-th number (0-based, row-major) of a matrix file stands, for an error about
 * that value: the text file's line and column; for a .npy file line 1 and column 1 (the caller
 * names the element by its index). False when the file cannot be read again or is shorter. */
bool fs_matrix_locate(const char *path, int64_t index, int32_t *line, int32_t *col);

/* A whole file in memory, NUL-terminated (free it), or NULL with err set: a directory, a file that
 * cannot be opened or read, or one larger than max_bytes. */
char *fs_file_read(const char *path, size_t max_bytes, size_t *len, fs_loc_error *err);

/* Fill e (when not NULL) with the place and a printf-style message. Returns false, so a parser
 * can write `return fs_loc_error_set(...)`. */
bool fs_loc_error_set(fs_loc_error *e, const char *file, int32_t line, int32_t col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Format "file:line:col: msg" (or "file: msg") into buf. */
void fs_loc_error_format(const fs_loc_error *e, char *buf, size_t n);

#endif

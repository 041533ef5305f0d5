/* test_equations.h: find the equations in a player's text and re-evaluate them from the printed
 * numbers (for tests/check_equations.c and tests/check_equations_gui.c).
 *
 * The forms recognised are the ones the players print, with numbers filled in:
 *     exp(A − B) = C      exp2(A − B) = C      max(A, B) = C
 *     X · Y + Z · W = V   X · Y + Z = V        a / b = c
 * and any sum of products of numbers and such calls ("1.0000 · 2.0836 + exp(0.5 − 1.2) = 2.58").
 * "−" may be written "-"; a negative operand may stand in parentheses ("0.8 − (-0.4)"). An
 * equation starts after "=", ":", ";" or an opening parenthesis or at the start of the text, never
 * after an operator (so "2.0836 + 1.0 · 2.7 = …" inside a longer sum is not read on its own).
 * Text that does not parse as one of these forms (symbols, vectors, "o = […] → […]") is skipped.
 *
 * A printed number x stands for the interval x ± half a unit of its last digit (fs_printed_parse).
 * The left side is evaluated in interval arithmetic over its operands' intervals; the printed
 * result r (± its own half unit) must lie within one unit of its last digit of that interval.
 * NaN must be printed "nan" and only where the point value is NaN; ±inf likewise.
 */
#ifndef FS_TEST_EQUATIONS_H
#define FS_TEST_EQUATIONS_H

#include <stddef.h>

#include "test_util.h"

typedef struct {
    int checked;      /* equations found and re-evaluated */
    int wrong;        /* of those, the false ones */
    char first[512];  /* the first false one: the equation and the value its left side gives */
} fs_eq_result;

/* Check every equation in text; adds to *r (zero it before the first call). Returns the number
 * of false equations found in this text. */
int fs_eq_check_text(const char *text, fs_eq_result *r);

/* For one false equation of text at a time: writes "EQUATION (left side gives [lo, hi])" for the
 * k-th false equation (0-based) into buf; returns 0 when there is no k-th one. */
int fs_eq_describe_wrong(const char *text, int k, char *buf, size_t n);

/* Random lesson number k (its kind from k % 9: tiled with a random pitfall, dropout, the query
 * walk, softmax, decode, backward or the ring; masks that can leave rows with nothing visible) as
 * lesson text into buf (cap bytes); returns its length. A few drawn combinations are refused by
 * the lesson format: the callers skip those. */
size_t fs_eq_random_lesson(fs_rng *r, int k, char *buf, size_t cap);

#endif

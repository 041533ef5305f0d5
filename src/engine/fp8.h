/* fp8.h: the two 8-bit floating-point formats of the OCP standard that FlashAttention-3 and
 * Hopper's tensor cores use, exact in float64.
 *
 *   e4m3 (PyTorch's float8_e4m3fn): sign, 4 exponent bits (bias 7), 3 fraction bits; no
 *        infinities, NaN is S.1111.111; largest finite 448, smallest normal 2^-6, subnormals in
 *        steps of 2^-9.
 *   e5m2 (float8_e5m2): sign, 5 exponent bits (bias 15), 2 fraction bits, IEEE-like with ±inf;
 *        largest finite 57344, smallest normal 2^-14, subnormals in steps of 2^-16.
 *
 * Conversion from float64 rounds to nearest, ties to even, and saturates: a finite value beyond
 * the largest finite one becomes that value (the OCP standard's saturating mode, the one used
 * to quantize activations; PyTorch's casts give NaN there instead). NaN stays NaN; ±inf saturates
 * too for e4m3 (which has none) and stays ±inf for e5m2.
 */
#ifndef FS_FP8_H
#define FS_FP8_H

#include <stdint.h>

typedef enum { FS_FP8_E4M3 = 0, FS_FP8_E5M2, FS_FP8_COUNT } fs_fp8;

const char *fs_fp8_str(fs_fp8 f);            /* "e4m3", "e5m2" */
double fs_fp8_max(fs_fp8 f);                 /* 448, 57344 */
/* x rounded to the format (a float64 holding an exact FP8 value; NaN for NaN). */
double fs_fp8_round(fs_fp8 f, double x);
/* The bit pattern of x rounded to the format, and the value of a bit pattern (every one of
 * the 256: NaN for the NaN codes, ±inf for e5m2's infinities). */
uint8_t fs_fp8_bits(fs_fp8 f, double x);
double fs_fp8_value(fs_fp8 f, uint8_t bits);

#endif

/* fp8.c: e4m3 and e5m2 (see fp8.h). Values are computed from the fields, never through a
 * narrower hardware type, so every result is exact in float64. */
#include "engine/fp8.h"

#include <math.h>

typedef struct {
    int man;       /* fraction bits */
    int bias;
    double max;    /* largest finite value */
    int emin;      /* exponent of the smallest normal */
} layout;

static layout layout_of(fs_fp8 f)
{
    return f == FS_FP8_E5M2 ? (layout){2, 15, 57344.0, -14} : (layout){3, 7, 448.0, -6};
}

const char *fs_fp8_str(fs_fp8 f) { return f == FS_FP8_E5M2 ? "e5m2" : f == FS_FP8_E4M3 ? "e4m3" : "?"; }

double fs_fp8_max(fs_fp8 f) { return layout_of(f).max; }

double fs_fp8_round(fs_fp8 f, double x)
{
    layout L = layout_of(f);
    if (isnan(x) || x == 0) return x;
    if (isinf(x)) return f == FS_FP8_E5M2 ? x : copysign(L.max, x);
    int e;
    frexp(x, &e);                               /* x = g · 2^e, 0.5 ≤ |g| < 1 */
    int E = e - 1 < L.emin ? L.emin : e - 1;    /* the exponent of x's leading bit, or emin */
    double q = ldexp(1.0, E - L.man);           /* the spacing of the format at x */
    double r = nearbyint(x / q) * q;            /* ties to even: the default rounding mode */
    return fabs(r) > L.max ? copysign(L.max, x) : r;
}

double fs_fp8_value(fs_fp8 f, uint8_t bits)
{
    layout L = layout_of(f);
    int s = bits >> 7, ef = (bits >> L.man) & ((1 << (7 - L.man)) - 1), m = bits & ((1 << L.man) - 1);
    int emax_field = (1 << (7 - L.man)) - 1;
    double v;
    if (f == FS_FP8_E4M3 && ef == emax_field && m == (1 << L.man) - 1) return NAN;
    if (f == FS_FP8_E5M2 && ef == emax_field) {
        if (m) return NAN;
        v = INFINITY;
    } else if (ef == 0) {
        v = ldexp((double)m, L.emin - L.man);                      /* subnormal */
    } else {
        v = ldexp(1.0 + (double)m / (1 << L.man), ef - L.bias);    /* normal */
    }
    return s ? -v : v;
}

uint8_t fs_fp8_bits(fs_fp8 f, double x)
{
    layout L = layout_of(f);
    double r = fs_fp8_round(f, x);
    if (isnan(r)) return 0x7f;   /* a NaN of both: 0.1111.111 (e4m3), 0.11111.11 (e5m2) */
    uint8_t s = signbit(r) ? 0x80 : 0;
    double a = fabs(r);
    if (isinf(a)) return s | 0x7c;                          /* e5m2 only */
    if (a == 0) return s;
    int e;
    frexp(a, &e);
    int E = e - 1;
    if (E < L.emin)                                          /* subnormal: the fraction alone */
        return s | (uint8_t)lround(ldexp(a, L.man - L.emin));
    int m = (int)lround((ldexp(a, -E) - 1.0) * (1 << L.man));
    return s | (uint8_t)((E + L.bias) << L.man) | (uint8_t)m;
}

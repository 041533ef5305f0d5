/* num.c: the decimals of a printed number (num.h). */
#include "io/num.h"

#include <math.h>

int fs_num_decimals(double x, int digits)
{
    if (digits < 3 || !isfinite(x) || fabs(x) < 1e-4 || fabs(x) >= 0.01) return digits;
    const int dec = 2 - (int)floor(log10(fabs(x)));   /* 0.00159: floor(log10) = -3, 5 decimals */
    return dec > digits ? dec : digits;
}

int fs_num_factor_decimals(int D, double f, double other)
{
    if (f == 0 || f == 1 || !isfinite(f) || !isfinite(other) || fabs(other) < 10) return D;
    const int d = D + (int)ceil(log10(fabs(other)));
    return d > 12 ? 12 : d;
}

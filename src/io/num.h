/* num.h: how many decimals a printed number gets, one rule for every place that prints one.
 *
 * The terminal, the page's words and the window print numbers in different widths (the window's
 * panels are narrower), but two rules must agree everywhere, or a student reads one value two ways:
 *
 *   a small number keeps 3 significant digits: β = 0.000159, not 0.0002 (under 0.01, from 1e-4 on;
 *   below that each printer switches to exponent form);
 *
 *   a factor (α, β) keeps as many decimals as the product it takes part in needs: before
 *   ℓ_old = 1173.5108, α = 0.98714858 and not 0.9871, which would move the printed sum by 0.06;
 *   and the maxima inside its own exp(a − b) get the factor's decimals too, so that the printed
 *   operands give the printed factor: exp(0.43365017 − 0.44658488) = 0.98714858, where
 *   exp(0.4337 − 0.4466) would give 0.98718. (Below |other| = 10 a factor keeps D decimals and
 *   its rounding can still move a sum's last digit by a few units; the first lesson says so.)
 */
#ifndef FS_NUM_H
#define FS_NUM_H

/* The decimals for x printed with `digits` decimals: more when 1e-4 <= |x| < 0.01 and digits >= 3,
 * so that 3 significant digits show; otherwise digits. */
int fs_num_decimals(double x, int digits);

/* The decimals for a factor f that multiplies `other` in a printed sum, where the sum's terms have
 * D decimals: D, and from |other| = 10 on, D + ceil(log10 |other|) (at most 12), so f's rounding
 * stays under half the result's last digit. An exact 0 or 1, or a non-finite f or other, keeps D. */
int fs_num_factor_decimals(int D, double f, double other);

#endif

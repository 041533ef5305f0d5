/* judge.c: the verdict on one printed number (lesson.h, "verification").
 *
 * A claim is a number as the document prints it, a unit, and the recomputed exact value.
 * The verdicts are tried in a fixed order (holds, units, rounded-intermediates, approximate,
 * erratum); docs/lesson-format.md states the rounding rule. Everything here is a pure function
 * of its arguments so that tests/check_lesson.c can probe each verdict, including the cases
 * where a claim must fail.
 */
#include "lesson.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack for the recomputation's own rounding. */
#define FS_JUDGE_SLACK 1e-12
/* Tolerance of an approximation the document marks, when the lesson states none. */
#define FS_JUDGE_DEFAULT_TOL 0.05

static const char *verdict_names[FS_VERDICT_COUNT] = {"holds", "units", "rounded-intermediates",
                                                      "approximate", "erratum"};

const char *fs_verdict_str(fs_verdict v)
{
    return (unsigned)v < FS_VERDICT_COUNT ? verdict_names[v] : "?";
}

bool fs_verdict_parse(const char *s, fs_verdict *v)
{
    for (int i = 0; i < FS_VERDICT_COUNT; i++)
        if (!strcmp(s, verdict_names[i])) {
            *v = (fs_verdict)i;
            return true;
        }
    if (!strcmp(s, "rounded")) {
        *v = FS_VERDICT_ROUNDED;
        return true;
    }
    return false;
}

static const char *unit_names[FS_UNIT_COUNT] = {
    "", "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "K", "M", "G",
    "s", "ms", "us", "x", "FLOP/B", "%"};

const char *fs_unit_str(fs_unit u) { return (unsigned)u < FS_UNIT_COUNT ? unit_names[u] : "?"; }

bool fs_unit_parse(const char *s, fs_unit *u)
{
    for (int i = 0; i < FS_UNIT_COUNT; i++)
        if (!strcmp(s, unit_names[i])) {
            *u = (fs_unit)i;
            return true;
        }
    return false;
}

bool fs_unit_ambiguous(fs_unit u)
{
    return (u >= FS_UNIT_KB && u <= FS_UNIT_TB) || (u >= FS_UNIT_K && u <= FS_UNIT_G);
}

double fs_unit_factor(fs_unit u, bool binary)
{
    switch (u) {
    case FS_UNIT_KB: case FS_UNIT_K: return binary ? 1024.0 : 1e3;
    case FS_UNIT_MB: case FS_UNIT_M: return binary ? 1048576.0 : 1e6;
    case FS_UNIT_GB: case FS_UNIT_G: return binary ? 1073741824.0 : 1e9;
    case FS_UNIT_TB: return binary ? 1099511627776.0 : 1e12;
    case FS_UNIT_KIB: return 1024.0;
    case FS_UNIT_MIB: return 1048576.0;
    case FS_UNIT_GIB: return 1073741824.0;
    case FS_UNIT_TIB: return 1099511627776.0;
    case FS_UNIT_MS: return 1e-3;
    case FS_UNIT_US: return 1e-6;
    case FS_UNIT_PERCENT: return 1e-2;
    default: return 1.0;
    }
}

bool fs_printed_parse(const char *printed, double *value, double *half_ulp)
{
    char buf[80];
    size_t n = 0;
    const char *p = printed;
    if (!p) return false;
    bool neg = false;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (!strcmp(p, "nan")) {
        *value = NAN;
        *half_ulp = 0;
        return true;
    }
    if (!strcmp(p, "inf")) {
        *value = neg ? -INFINITY : INFINITY;
        *half_ulp = 0;
        return true;
    }
    int digits = 0, decimals = 0;
    bool dot = false;
    for (; *p && *p != 'e' && *p != 'E'; p++) {
        if (isdigit((unsigned char)*p)) {
            digits++;
            if (dot) decimals++;
        } else if (*p == '.' && !dot) {
            dot = true;
        } else if (*p == ',' && !dot && digits > 0 && isdigit((unsigned char)p[1])) {
            continue;   /* a thousands separator: 34,359,738,368 */
        } else {
            return false;
        }
        if (n + 2 >= sizeof buf) return false;
        buf[n++] = *p;
    }
    if (digits == 0) return false;
    long ex = 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        char *end;
        if (!*p) return false;
        ex = strtol(p, &end, 10);
        if (*end || end == p || ex > 400 || ex < -400) return false;
    }
    buf[n] = 0;
    double mant = strtod(buf, NULL);
    *value = (neg ? -mant : mant) * pow(10.0, (double)ex);
    *half_ulp = 0.5 * pow(10.0, (double)(ex - decimals));
    return true;
}

/* |x − p| ≤ h, with the slack for x's own rounding. */
static bool near(double x, double p, double h)
{
    if (isnan(x) || isnan(p)) return isnan(x) && isnan(p);
    if (isinf(p) || isinf(x)) return x == p;
    double slack = FS_JUDGE_SLACK * fmax(fabs(x), fabs(p));
    return fabs(x - p) <= h + slack;
}

bool fs_rounds_to(double x, const char *printed)
{
    double p, h;
    if (!fs_printed_parse(printed, &p, &h)) return false;
    return near(x, p, h);
}

fs_verdict fs_claim_judge(const fs_claim_in *in, fs_claim_out *out)
{
    fs_claim_out o;
    memset(&o, 0, sizeof o);
    o.reading = "";
    double p = NAN, h = 0;
    bool parsed = fs_printed_parse(in->printed, &p, &h);
    o.half_ulp = h;
    o.exact_dec = in->exact_base / fs_unit_factor(in->unit, false);
    o.exact_bin = in->exact_base / fs_unit_factor(in->unit, true);
    bool amb = fs_unit_ambiguous(in->unit);
    /* The reading shown when no verdict needs one: the one closer to the printed number. */
    bool bin_closer = amb && parsed && fabs(o.exact_bin - p) < fabs(o.exact_dec - p);
    o.exact = bin_closer ? o.exact_bin : o.exact_dec;

    bool hd = parsed && near(o.exact_dec, p, h);
    bool hb = parsed && near(o.exact_bin, p, h);
    if (!parsed) {
        o.verdict = FS_VERDICT_ERRATUM;
    } else if (hd && hb) {
        o.verdict = FS_VERDICT_HOLDS;
    } else if (hd || hb) {
        /* only possible for an ambiguous unit */
        o.verdict = FS_VERDICT_UNITS;
        o.reading = hd ? "decimal" : "binary";
        o.exact = hd ? o.exact_dec : o.exact_bin;
    } else if (in->has_chain && near(in->chain_value, p, h)) {
        o.verdict = FS_VERDICT_ROUNDED;
    } else {
        double tol = in->tol > 0 ? in->tol : FS_JUDGE_DEFAULT_TOL;
        bool ad = near(o.exact_dec, p, h + tol * fabs(p));
        bool ab = near(o.exact_bin, p, h + tol * fabs(p));
        if (in->approx_marked && (ad || ab)) {
            o.verdict = FS_VERDICT_APPROX;
            if (amb && ad != ab) {
                o.reading = ad ? "decimal" : "binary";
                o.exact = ad ? o.exact_dec : o.exact_bin;
            }
        } else {
            o.verdict = FS_VERDICT_ERRATUM;
        }
    }
    if (out) *out = o;
    return o.verdict;
}

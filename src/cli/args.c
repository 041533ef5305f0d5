/* args.c: the command line's argument helpers (args.h). */
#include "cli/args.h"
#include "io/text.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

int cli_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* ERANGE also marks an underflow to a subnormal (1e-320), which is finite and kept. */
    if (!*s || *end || (errno && fabs(v) >= DBL_MIN) || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

int cli_fail(const char *cmd, const char *fmt, const char *a)
{
    /* a is what the user typed (an option's value): shown with control bytes escaped, as text
     * from a file is (io/text.h), so a pasted escape sequence cannot drive the terminal. */
    char safe[512];
    fs_text_escape_line(a ? a : "", a ? strlen(a) : 0, safe, sizeof safe);
    fprintf(stderr, "flashstep %s: ", cmd);
    fprintf(stderr, fmt, safe);
    fprintf(stderr, "\n(see flashstep %s --help)\n", cmd);
    return 2;
}

const char *cli_shown(const char *s, char *buf, size_t n)
{
    if (!s) s = "(none)";
    fs_text_escape_line(s, strlen(s), buf, n);
    return buf;
}

/* args.h: the command line's argument helpers, shared by the subcommands: whole numbers and
 * finite numbers read from an argument, the message for a bad one, and a file's name as
 * messages show it.
 *
 * The parsers return 1 when the whole argument is a number in range (stored in *out), 0
 * otherwise (*out untouched); they print nothing, so each command words its own message.
 */
#ifndef FS_CLI_ARGS_H
#define FS_CLI_ARGS_H

#include <stddef.h>

/* A decimal integer from lo to hi: "12", "-3"; not "", "1.5", "3x" or one past long. */
int cli_parse_int(const char *s, long lo, long hi, long *out);
/* A finite number ("0.5", "-2e3", a subnormal such as 1e-320); not "", "inf", "nan", "1e999". */
int cli_parse_double(const char *s, double *out);
/* "flashstep CMD: " + fmt with a, then "(see flashstep CMD --help)" on stderr; returns 2, the
 * exit status of bad usage. */
int cli_fail(const char *cmd, const char *fmt, const char *a);

/* A file's name (or any argument) as a message shows it, on one line: control bytes, tab and
 * newline as \xHH (io/text.h). Fills buf (n bytes, cut when longer) and returns it; NULL shows
 * as "(none)". */
const char *cli_shown(const char *s, char *buf, size_t n);

#endif

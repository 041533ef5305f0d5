/* cli.h: the subcommands of the flashstep program. Each takes the arguments after its name
 * (argv[0] is the subcommand) and returns the process exit code: 0 success, 1 a check failed,
 * 2 bad usage or bad input. */
#ifndef FS_CLI_H
#define FS_CLI_H

int cli_trace(int argc, char **argv);          /* cmd_trace.c */
int cli_lessons(int argc, char **argv);        /* cmd_lessons.c */
int cli_verify(int argc, char **argv);         /* cmd_verify.c */
int cli_check(int argc, char **argv);          /* cmd_check.c: judge a kernel's output */
int cli_play(int argc, char **argv);           /* cmd_play.c: the window, or the terminal */
int cli_play_terminal(int argc, char **argv);  /* cmd_play_terminal.c */
int cli_render(int argc, char **argv);         /* cmd_render.c */
int cli_bench(int argc, char **argv);          /* cmd_bench.c */
int cli_fp8(int argc, char **argv);            /* cmd_fp8.c: low-precision error tables */
int cli_quiz(int argc, char **argv);           /* cmd_quiz.c: a section of the course, checked */

/* A trace as JSON lines, one event per line, every number round-tripping (%.17g; "-inf", "inf",
 * "nan" as strings): what `trace --format jsonl` prints and `play --trace` reads back. */
#include <stdio.h>
#include "engine/trace.h"
void cli_trace_jsonl(FILE *f, const fs_trace *tr);    /* cmd_trace.c */

#endif

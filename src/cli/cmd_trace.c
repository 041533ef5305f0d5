/* cmd_trace.c: placeholder until the trace command lands. */
#include <stdio.h>
#include "cli/cli.h"
int cli_trace(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "flashstep trace: not built yet\n"); return 2; }

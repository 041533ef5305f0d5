/* cmd_play_terminal.c: placeholder until its module lands; replaced by the real command. */
#include <stdio.h>
#include "cli/cli.h"
int cli_play_terminal(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "flashstep: this command is not built yet\n");
    return 2;
}

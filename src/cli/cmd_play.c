/* cmd_play.c: `flashstep play`. Until the window exists, the terminal player. */
#include "cli/cli.h"
int cli_play(int argc, char **argv) { return cli_play_terminal(argc, argv); }

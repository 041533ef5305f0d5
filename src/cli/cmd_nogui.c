/* cmd_nogui.c: `play` and `render` in a build without the window (make NO_GUI=1, for machines
 * without SDL2, such as a GPU server): play steps through the lesson in the terminal, render
 * says the window is absent. The normal build uses cmd_play.c and cmd_render.c instead. */
#include <stdio.h>

#include "cli/cli.h"

int cli_play(int argc, char **argv) { return cli_play_terminal(argc, argv); }

int cli_render(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "flashstep render: this build has no window (it was built with NO_GUI=1); "
                    "rebuild without NO_GUI, with SDL2 and SDL2_ttf installed\n");
    return 2;
}

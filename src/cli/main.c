/* main.c: the flashstep program: a table of subcommands and the help that lists them. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *what;
} command;

static const command commands[] = {
    {"trace",   cli_trace,   "run one algorithm on given matrices and print its trace"},
    {"lessons", cli_lessons, "list the lessons and their sources"},
    {"play",    cli_play,    "step through a lesson (window if a display is available, else terminal)"},
    {"verify",  cli_verify,  "recompute every number the documents print and give a verdict"},
    {"check",   cli_check,   "judge your own kernel's output against the exact reference, name the bug"},
    {"render",  cli_render,  "render lesson frames to PNG without a display"},
    {"bench",   cli_bench,   "time the full-size CPU kernels against the materializing baseline"},
    {"fp8",     cli_fp8,     "the error of FP8 (and 16-bit) attention against float64, recipe by recipe"},
    {"quiz",    cli_quiz,    "five questions on a section of the course, on fresh problems, scored"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: flashstep COMMAND [OPTIONS]\n\n"
               "An exact, step-through simulator of FlashAttention.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].what);
    fprintf(f, "\n'flashstep COMMAND --help' describes each one.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "flashstep: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}

/* problem.h: the problem options that `trace`, `play` and `render` share (--q/--k/--v,
 * --scores, --z, the algorithm, tiles, form, order, mask, window, tree, heads, decode, the
 * backward and its dO...): one table of options, their checks and messages, and the loading of
 * the matrices into an fs_run. `check` reads the rows of the mask, scale, softcap and heads
 * from the same table (cli_problem_option_of) and loads its own arrays.
 *
 * An option is one row of the table in problem.c (its name, whether it takes a value, which
 * algorithms read it, and the function that checks and stores it); adding an option is adding
 * a row. An option given twice is refused ("--q given twice"). Messages begin "flashstep CMD: "
 * with the command that parses them.
 */
#ifndef FS_CLI_PROBLEM_H
#define FS_CLI_PROBLEM_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/run.h"
#include "io/matrix_io.h"

typedef struct {
    const char *cmd;        /* "trace", "play", "render", "check" */
    /* What the options said. */
    const char *q, *k, *v, *scores, *z, *tree, *dout;   /* file names (dout: --do) */
    const char *block_table;   /* --block-table FILE, or NULL */
    long page_size;            /* --page-size, 0 when not given */
    long ring;                 /* --ring P: devices, 0 when not given */
    unsigned long long seed;   /* --seed: the dropout's key (default 0) or, with --page-size, the
                                  table's shuffle (default 1) */
    int algo_set;           /* how many of --reference/--query/--decode/--backward/--z */
    fs_run run;             /* algorithm and its settings; inputs after cli_problem_load */
    int hq, hkv;            /* --heads */
    bool form_set;
    bool seed_set;          /* --seed given */
    double scale;           /* NAN: the default */
    bool mask_causal, has_offset;
    int window;
    long offset;
    uint64_t given;         /* bit k: row k of the table was given */
    int64_t max_events, max_pool;   /* the trace's bounds (CLI_MAX_TRACE_*; the web page's are lower) */
    /* What cli_problem_load made (owned; the run's pointers point into these). */
    fs_matrix Q, K, V, S, Z, dO;
    double *eye;
    int32_t *parent, n_parent;
    uint64_t *bits;
    int32_t *table, n_table;   /* the block table (--block-table, or drawn from --seed) */
} cli_problem;

/* The option help shared by the commands: inputs, algorithm and options (one block of text). */
extern const char cli_problem_help[];

void cli_problem_init(cli_problem *p, const char *cmd);
/* argv[*i] if it is a problem option: 1 (taken, with its value; *i moved past it), 0 (not a
 * problem option), or 2 (a bad value, or an option given twice: the message is printed). */
int cli_problem_option(cli_problem *p, int argc, char **argv, int *i);
/* The same, taking only the options named in the NULL-terminated list `only` (NULL: all): how
 * `check` reads the rows it shares (--mask, --window, --offset, --scale, --softcap, --heads,
 * --tree) with the same checks and messages, and stores them in p without cli_problem_load. */
int cli_problem_option_of(cli_problem *p, const char *const *only, int argc, char **argv, int *i);
/* The same for one option given by name and value (value NULL for a flag). */
int cli_problem_set(cli_problem *p, const char *opt, const char *value);
/* Whether any problem option was given. */
bool cli_problem_given(const cli_problem *p);
/* Check the options together (one algorithm; options it does not read refused), read the
 * matrices and the tree (text or .npy; file:line:column on error), build p->run, and bound the
 * trace it will record. 0, or 2 with the message printed. */
int cli_problem_load(cli_problem *p);
/* What was given, for the window: a title ("Tiled attention of q.txt, k.txt, v.txt") and the
 * details (sizes, tiles, form, mask, options). */
void cli_problem_describe(const cli_problem *p, char *title, size_t n, char *detail, size_t m);
void cli_problem_free(cli_problem *p);

/* Finite inputs whose scores or running sums would overflow float64 (fs_attn_check_range), and
 * for the backward a dO whose gradients would (fs_backward_check_range; dO may be NULL for 1):
 * 0 when in range, else 2 with the message printed at the place in the file it comes from,
 * "q.txt:3:1: the score of query row 2 and key 0 … (K's row: k.txt:1:1)" or "v.txt:2:5: V's
 * entry …". Files are the ones the matrices were read from (NULL when not from a file; spath
 * when the scores were given). */
int cli_range_report(const char *cmd, const fs_attn *a, const double *dO, const char *qpath, const char *kpath,
                     const char *vpath, const char *spath, const char *dopath);

/* Bounds on what a trace may record, so a mistaken huge input fails with a message instead of
 * eating the machine's memory. */
#define CLI_MAX_TRACE_EVENTS ((int64_t)1 << 22)
#define CLI_MAX_TRACE_POOL   ((int64_t)1 << 25)

#endif

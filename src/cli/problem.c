/* problem.c: the problem options shared by trace, play and render, and in part by check (problem.h).
 *
 * Data flow: argv → the option table (check, store) → cli_problem_load: options checked
 * together, matrices read (src/io), fs_run filled, the trace it will record bounded.
 */
#include "cli/problem.h"
#include "cli/args.h"
#include "engine/backward.h"
#include "engine/lowp.h"

#include "io/text.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_problem_help[] =
    "inputs (text: one row per line, numbers separated by spaces or commas, '#' comments;\n"
    "        or .npy float16/float32/float64, C or Fortran order):\n"
    "  --q FILE --k FILE --v FILE   queries (n_q x d), keys (n_kv x d), values (n_kv x d_v)\n"
    "  --scores FILE                the scores S (n_q x n_kv) directly, '-inf' allowed; without\n"
    "                               --v, V is the identity so O shows the attention weights P\n"
    "  --z FILE                     a vector for online softmax (all its numbers, in order)\n"
    "  --heads HQ:HKV               GQA: Q holds HQ blocks of n_q rows, K and V HKV blocks (1:1)\n"
    "\n"
    "algorithm (tiled by default):\n"
    "  --reference                  plain two-pass softmax attention (only the output rows)\n"
    "  --query                      online attention, one key at a time (000's walk)\n"
    "  --decode                     FlashDecoding: split the keys, partials, then merge\n"
    "  --z FILE                     online softmax of a vector\n"
    "  --backward                   the backward pass by recomputation: run the tiled forward\n"
    "                               (untraced) for O and each row's L = m + ln l, then trace\n"
    "                               the backward: D, recomputed S and P = exp(S - L), dP, dS,\n"
    "                               and dQ, dK, dV tile by tile (needs --q, --k and --v)\n"
    "  --do FILE                    with --backward: dO (n_q x d_v, like --v per head); without\n"
    "                               it dO = 1, the gradient of sum(O), and the run says so\n"
    "  --ring P                     ring attention over P simulated devices (1 to 1024): the\n"
    "                               sequence sharded, each KV shard passed around the ring, each\n"
    "                               device's step a tiled run merged into its rows (alpha, beta);\n"
    "                               with --backward, dK and dV travel with their shard. Needs\n"
    "                               n_q = n_kv, --mask none or causal; the table ends with the\n"
    "                               work per device and step; play and render show the ring\n"
    "                               scene (devices by ring steps, the hops, each device's load)\n"
    "  --sharding contiguous|zigzag|striped   with --ring: device p holds block p, or blocks p\n"
    "                               and 2P-1-p of 2P (default), or every P-th position from p\n"
    "\n"
    "problem options:\n"
    "  --bq N --bk N                tile sizes (default 2 and 3; decode: --bk is the split size)\n"
    "  --form normalized|unnormalized   001's alpha/beta form, or divide by l at the end (default\n"
    "                               normalized; --query and --decode default to unnormalized)\n"
    "  --order q-outer|kv-outer     loop order (default q-outer); with --backward, kv-outer is\n"
    "                               FlashAttention 2's (dK, dV of a KV tile finished in one pass)\n"
    "  --mask none|causal           (default none)\n"
    "  --offset N                   query i sits at position i+N (default n_kv - n_q)\n"
    "  --window W                   sliding window: query at p sees keys p-W < j <= p\n"
    "  --tree FILE                  tree mask from parent indices (-1 for the root)\n"
    "  --scale X                    score scale (default 1/sqrt(d); 1 with --scores)\n"
    "  --softcap C                  S = C*tanh(S/C) before the softmax\n"
    "  --exp2                       003's exp2 form: scores in base-2 units\n"
    "  --pitfall NAME               a deliberately wrong variant from 001: no-rescale,\n"
    "                               global-max-no-beta, block-max-no-beta, masked-nan,\n"
    "                               masked-doc-fix\n"
    "  --merge sequential|tree      decode merge order (default sequential)\n"
    "  --parts P                    decode: 003's strided partition into P parts instead of\n"
    "                               contiguous splits of --bk\n"
    "  --chunk N                    online softmax chunk size (default 1)\n"
    "  --fp8 RECIPE                 run the tiled algorithm with low-precision inputs, every\n"
    "                               operation rounded as float32 rounds it (FlashAttention-3's\n"
    "                               FP8 recipe: Q outer, unnormalized). RECIPE is words: a format\n"
    "                               e4m3 (default), e5m2, f16, bf16 or f32; a scaling tensor\n"
    "                               (default for FP8), block or none; hadamard (Q and K times a\n"
    "                               random orthogonal matrix first; d a power of two); seed=N\n"
    "                               (its signs, default 1); p-scale=X (P times X before its\n"
    "                               rounding; default 256 for FP8). E.g. --fp8 'e4m3 block'\n"
    "  --fp8-values                 with --fp8: the trace also records the exact and the rounded\n"
    "                               inputs (each query row, each tile's K and V rows) and P8\n"
    "  --dropout P                  tiled and --backward: drop each weight of P with probability\n"
    "                               P (0 <= P < 1), the kept ones times 1/(1-P); l stays the sum\n"
    "                               of P before dropout; the backward regenerates the same mask\n"
    "  --page-size P                decode through a paged KV cache (PagedAttention): K and V\n"
    "                               written into pages of P positions, then read back through\n"
    "                               the block table; the trace adds each page taken (alloc),\n"
    "                               each position written and each table lookup, and the\n"
    "                               output rows are the contiguous run's, bit for bit\n"
    "  --block-table FILE           with --page-size: the physical page of each logical block,\n"
    "                               one integer a line ('#' comments), distinct, from 0; the\n"
    "                               pool has (largest page + 1) pages, at most 4 x blocks + 16\n"
    "  --seed S                     0 to 2^64-1. With --dropout: the Philox4x32-10 key (default\n"
    "                               0). With --page-size and no --block-table: the table is the\n"
    "                               pages 0 .. blocks-1 shuffled by S (default 1; never left\n"
    "                               in order: an unshuffled draw is rotated by one)\n";

static int fail(const cli_problem *p, const char *fmt, const char *a) { return cli_fail(p->cmd, fmt, a); }

/* ---- the options: one setter each ---- */

static int set_q(cli_problem *p, const char *v) { p->q = v; return 0; }
static int set_k(cli_problem *p, const char *v) { p->k = v; return 0; }
static int set_v(cli_problem *p, const char *v) { p->v = v; return 0; }
static int set_scores(cli_problem *p, const char *v) { p->scores = v; return 0; }
static int set_tree(cli_problem *p, const char *v) { p->tree = v; return 0; }
static int set_z(cli_problem *p, const char *v) { p->z = v; p->run.algo = FS_ALGO_SOFTMAX; p->algo_set++; return 0; }
static int set_reference(cli_problem *p, const char *v) { (void)v; p->run.algo = FS_ALGO_REFERENCE; p->algo_set++; return 0; }
static int set_query(cli_problem *p, const char *v) { (void)v; p->run.algo = FS_ALGO_QUERY; p->algo_set++; return 0; }
static int set_decode(cli_problem *p, const char *v) { (void)v; p->run.algo = FS_ALGO_DECODE; p->algo_set++; return 0; }
static int set_backward(cli_problem *p, const char *v) { (void)v; p->run.algo = FS_ALGO_BACKWARD; p->algo_set++; return 0; }
static int set_do(cli_problem *p, const char *v) { p->dout = v; return 0; }

static int set_ring(cli_problem *p, const char *v)
{
    if (!cli_parse_int(v, 1, FS_RING_MAX_DEVICES, &p->ring))
        return fail(p, "--ring must be a number of devices from 1 to 1024, not '%s'", v);
    p->run.ring.P = (int32_t)p->ring;
    return 0;
}

static int set_sharding(cli_problem *p, const char *v)
{
    fs_sharding s = fs_sharding_parse(v);
    if (s == FS_SHARD_COUNT) return fail(p, "--sharding is contiguous, zigzag or striped, not '%s'", v);
    p->run.ring.sharding = s;
    return 0;
}
static int set_exp2(cli_problem *p, const char *v) { (void)v; p->run.tiling.exp2 = true; return 0; }

static int set_bq(cli_problem *p, const char *v)
{
    long n;
    if (!cli_parse_int(v, 1, FS_MAX_DIM, &n)) return fail(p, "--bq must be an integer from 1 to 1048576, not '%s'", v);
    p->run.tiling.Bq = (int32_t)n;
    return 0;
}

static int set_bk(cli_problem *p, const char *v)
{
    long n;
    if (!cli_parse_int(v, 1, FS_MAX_DIM, &n)) return fail(p, "--bk must be an integer from 1 to 1048576, not '%s'", v);
    p->run.tiling.Bk = p->run.decoding.Bk = (int32_t)n;
    return 0;
}

static int set_parts(cli_problem *p, const char *v)
{
    long n;
    if (!cli_parse_int(v, 1, FS_MAX_DIM, &n)) return fail(p, "--parts must be an integer from 1 to 1048576, not '%s'", v);
    p->run.decoding.parts = (int32_t)n;
    p->run.decoding.split = FS_SPLIT_STRIDED;
    return 0;
}

static int set_chunk(cli_problem *p, const char *v)
{
    long n;
    if (!cli_parse_int(v, 1, FS_MAX_DIM, &n)) return fail(p, "--chunk must be an integer from 1 to 1048576, not '%s'", v);
    p->run.chunk = (int32_t)n;
    return 0;
}

static int set_form(cli_problem *p, const char *v)
{
    if (!strcmp(v, "normalized")) p->run.tiling.form = p->run.decoding.form = FS_FORM_NORMALIZED;
    else if (!strcmp(v, "unnormalized")) p->run.tiling.form = p->run.decoding.form = FS_FORM_UNNORMALIZED;
    else return fail(p, "--form is normalized or unnormalized, not '%s'", v);
    p->form_set = true;
    return 0;
}

static int set_order(cli_problem *p, const char *v)
{
    if (!strcmp(v, "q-outer")) p->run.tiling.order = FS_ORDER_Q_OUTER;
    else if (!strcmp(v, "kv-outer")) p->run.tiling.order = FS_ORDER_KV_OUTER;
    else return fail(p, "--order is q-outer or kv-outer, not '%s'", v);
    return 0;
}

static int set_mask(cli_problem *p, const char *v)
{
    if (!strcmp(v, "none")) p->mask_causal = false;
    else if (!strcmp(v, "causal")) p->mask_causal = true;
    else return fail(p, "--mask is none or causal, not '%s' (see also --window and --tree)", v);
    return 0;
}

static int set_window(cli_problem *p, const char *v)
{
    long n;
    if (!cli_parse_int(v, 1, FS_MAX_DIM, &n)) return fail(p, "--window must be an integer from 1 to 1048576, not '%s'", v);
    p->window = (int)n;
    return 0;
}

static int set_offset(cli_problem *p, const char *v)
{
    if (!cli_parse_int(v, -FS_MAX_DIM, FS_MAX_DIM, &p->offset)) return fail(p, "--offset must be an integer, not '%s'", v);
    p->has_offset = true;
    return 0;
}

static int set_scale(cli_problem *p, const char *v)
{
    if (!cli_parse_double(v, &p->scale)) return fail(p, "--scale must be a finite number, not '%s'", v);
    return 0;
}

static int set_softcap(cli_problem *p, const char *v)
{
    if (!cli_parse_double(v, &p->run.attn.softcap) || p->run.attn.softcap <= 0)
        return fail(p, "--softcap must be a positive number, not '%s'", v);
    return 0;
}

static int set_pitfall(cli_problem *p, const char *v)
{
    for (int k = 1; k < FS_PITFALL_COUNT; k++)
        if (!strcmp(v, fs_pitfall_str((fs_pitfall)k))) { p->run.tiling.pitfall = (fs_pitfall)k; return 0; }
    return fail(p, "unknown --pitfall '%s'", v);
}

static int set_dropout(cli_problem *p, const char *v)
{
    double x;
    if (!cli_parse_double(v, &x) || fs_dropout_check(x) != FS_OK)
        return fail(p, "--dropout must be a probability from 0 up to but not including 1, not '%s'", v);
    p->run.tiling.dropout.on = true;
    p->run.tiling.dropout.p = x;
    return 0;
}

static int set_seed(cli_problem *p, const char *v)
{
    /* Decimal digits only, within 64 bits (strtoull alone would take "-1", " 7" or "0x10"). */
    size_t n = strlen(v);
    if (n == 0 || n > 20 || strspn(v, "0123456789") != n)
        return fail(p, "--seed must be a whole number from 0 to 18446744073709551615, not '%s'", v);
    uint64_t x = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned dgt = (unsigned)(v[k] - '0');
        if (x > (UINT64_MAX - dgt) / 10)
            return fail(p, "--seed must be a whole number from 0 to 18446744073709551615, not '%s'", v);
        x = x * 10 + dgt;
    }
    p->seed = x;
    p->seed_set = true;
    return 0;
}

static int set_merge(cli_problem *p, const char *v)
{
    if (!strcmp(v, "sequential")) p->run.decoding.merge = FS_MERGE_SEQUENTIAL;
    else if (!strcmp(v, "tree")) p->run.decoding.merge = FS_MERGE_TREE;
    else return fail(p, "--merge is sequential or tree, not '%s'", v);
    return 0;
}

static int set_fp8(cli_problem *p, const char *v)
{
    size_t at;
    char why[200], shown[300];
    if (!fs_lowp_recipe_parse(v, strlen(v), &p->run.recipe, &at, why, sizeof why)) {
        fprintf(stderr, "flashstep %s: --fp8 '%s', column %zu: %s\n(see flashstep %s --help)\n", p->cmd,
                cli_shown(v, shown, sizeof shown), at + 1, why, p->cmd);
        return 2;
    }
    p->run.lowp = true;
    return 0;
}

static int set_fp8_values(cli_problem *p, const char *v) { (void)v; p->run.recipe.values = true; return 0; }

static int set_page_size(cli_problem *p, const char *v)
{
    if (!cli_parse_int(v, 1, FS_MAX_DIM, &p->page_size))
        return fail(p, "--page-size must be an integer from 1 to 1048576, not '%s'", v);
    return 0;
}

static int set_block_table(cli_problem *p, const char *v) { p->block_table = v; return 0; }

static int set_heads(cli_problem *p, const char *v)
{
    long hq = 0, hkv = 0;
    char left[32];
    const char *colon = strchr(v, ':');
    size_t nl = colon ? (size_t)(colon - v) : 0;
    if (colon && nl < sizeof left) {
        memcpy(left, v, nl);
        left[nl] = 0;
    }
    if (!colon || nl >= sizeof left || !cli_parse_int(left, 1, FS_MAX_HEADS, &hq) ||
        !cli_parse_int(colon + 1, 1, FS_MAX_HEADS, &hkv) || hq % hkv)
        return fail(p, "--heads is HQ:HKV with HQ a multiple of HKV, each 1 to 1024 (e.g. 4:2), not '%s'", v);
    p->hq = (int)hq;
    p->hkv = (int)hkv;
    return 0;
}

/* The table. algos: the algorithms that read the option (ALGO_BIT); 0: every one. An option
 * given to an algorithm that does not read it is refused rather than silently ignored (a --tree
 * given to --z, a --parts without --decode). */
#define ALGO_BIT(x) (1u << (x))
#define RING ALGO_BIT(FS_ALGO_RING)
#define ALL_ATTN (ALGO_BIT(FS_ALGO_REFERENCE) | ALGO_BIT(FS_ALGO_QUERY) | ALGO_BIT(FS_ALGO_TILED) | \
                  ALGO_BIT(FS_ALGO_DECODE) | ALGO_BIT(FS_ALGO_BACKWARD) | RING)
#define TILES (ALGO_BIT(FS_ALGO_TILED) | ALGO_BIT(FS_ALGO_BACKWARD))
static const struct {
    const char *opt;
    bool value;
    unsigned algos;
    int (*set)(cli_problem *p, const char *value);
} options[] = {
    {"--q", true, 0, set_q},
    {"--k", true, 0, set_k},
    {"--v", true, 0, set_v},
    {"--scores", true, ~ALGO_BIT(FS_ALGO_BACKWARD), set_scores},   /* given scores have no dQ, dK */
    {"--z", true, 0, set_z},
    {"--tree", true, ALL_ATTN, set_tree},
    {"--reference", false, 0, set_reference},
    {"--query", false, 0, set_query},
    {"--decode", false, 0, set_decode},
    {"--backward", false, 0, set_backward},
    {"--do", true, ALGO_BIT(FS_ALGO_BACKWARD) | RING, set_do},
    {"--ring", true, RING, set_ring},
    {"--sharding", true, RING, set_sharding},
    {"--bq", true, TILES | RING, set_bq},
    {"--bk", true, TILES | RING | ALGO_BIT(FS_ALGO_DECODE), set_bk},
    {"--parts", true, ALGO_BIT(FS_ALGO_DECODE), set_parts},
    {"--chunk", true, ALGO_BIT(FS_ALGO_SOFTMAX), set_chunk},
    {"--form", true, ALGO_BIT(FS_ALGO_TILED) | ALGO_BIT(FS_ALGO_QUERY) | ALGO_BIT(FS_ALGO_DECODE) | RING, set_form},
    {"--order", true, TILES | RING, set_order},
    {"--mask", true, ALL_ATTN, set_mask},
    {"--window", true, ALL_ATTN, set_window},
    {"--offset", true, ALL_ATTN, set_offset},
    {"--scale", true, ALL_ATTN, set_scale},
    {"--softcap", true, ALL_ATTN, set_softcap},
    {"--exp2", false, ALGO_BIT(FS_ALGO_TILED) | ALGO_BIT(FS_ALGO_QUERY), set_exp2},
    {"--pitfall", true, ALGO_BIT(FS_ALGO_TILED), set_pitfall},
    {"--merge", true, ALGO_BIT(FS_ALGO_DECODE), set_merge},
    {"--heads", true, ALL_ATTN, set_heads},
    {"--fp8", true, ALGO_BIT(FS_ALGO_TILED), set_fp8},
    {"--fp8-values", false, ALGO_BIT(FS_ALGO_TILED), set_fp8_values},
    {"--dropout", true, TILES, set_dropout},
    {"--page-size", true, ALGO_BIT(FS_ALGO_DECODE), set_page_size},
    {"--block-table", true, ALGO_BIT(FS_ALGO_DECODE), set_block_table},
    {"--seed", true, TILES | ALGO_BIT(FS_ALGO_DECODE), set_seed},   /* the dropout's key, or the table's shuffle */
};
#define N_OPTIONS ((int)(sizeof options / sizeof options[0]))

void cli_problem_init(cli_problem *p, const char *cmd)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->run = fs_run_make(FS_ALGO_TILED);
    p->run.tiling.Bq = 2;
    p->run.tiling.Bk = 3;
    p->run.decoding.Bk = 3;
    p->hq = p->hkv = 1;
    p->scale = NAN;
    p->max_events = CLI_MAX_TRACE_EVENTS;
    p->max_pool = CLI_MAX_TRACE_POOL;
    p->seed = 1;
}

int cli_problem_set(cli_problem *p, const char *opt, const char *value)
{
    for (int k = 0; k < N_OPTIONS; k++) {
        if (strcmp(opt, options[k].opt)) continue;
        if (options[k].value && !value) return fail(p, "%s needs a value", opt);
        if (p->given >> k & 1u) return fail(p, "%s given twice", opt);   /* not "the last one wins" */
        p->given |= (uint64_t)1 << k;
        return options[k].set(p, value) ? 2 : 1;
    }
    return 0;
}

/* Whether name is one of the NULL-terminated list only (NULL: every option). */
static bool listed(const char *const *only, const char *name)
{
    if (!only) return true;
    for (; *only; only++)
        if (!strcmp(*only, name)) return true;
    return false;
}

int cli_problem_option_of(cli_problem *p, const char *const *only, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    for (int k = 0; k < N_OPTIONS; k++) {
        if (strcmp(a, options[k].opt) || !listed(only, a)) continue;
        const char *v = NULL;
        if (options[k].value) {
            if (*i + 1 >= argc) return fail(p, "%s needs a value", a);
            v = argv[++*i];
        }
        return cli_problem_set(p, a, v);
    }
    return 0;
}

int cli_problem_option(cli_problem *p, int argc, char **argv, int *i)
{
    return cli_problem_option_of(p, NULL, argc, argv, i);
}

bool cli_problem_given(const cli_problem *p) { return p->given != 0; }

static int load(const cli_problem *p, const char *path, bool neg_inf, fs_matrix *m)
{
    fs_loc_error err;
    if (fs_matrix_read(path, neg_inf, m, &err)) return 1;
    char buf[600];
    fs_loc_error_format(&err, buf, sizeof buf);
    fprintf(stderr, "flashstep %s: %s\n", p->cmd, buf);
    return 0;
}

static int shape_err(const cli_problem *p, const char *file, const char *msg)
{
    char name[300];
    fprintf(stderr, "flashstep %s: %s:1:1: %s\n", p->cmd, cli_shown(file, name, sizeof name), msg);
    return 2;
}

/* The block table file: one page number a line, '#' comments and blank lines allowed; each
 * page distinct, from 0, at most max_page; exactly `blocks` of them. 1, or 0 with the message
 * printed at file:line:column. */
static int read_block_table(cli_problem *p, int32_t blocks, int32_t max_page)
{
    char name[300], msg[400];
    cli_shown(p->block_table, name, sizeof name);
    fs_loc_error err;
    size_t len;
    char *text = fs_file_read(p->block_table, (size_t)1 << 24, &len, &err);
    if (!text) {
        fs_loc_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "flashstep %s: %s\n", p->cmd, msg);
        return 0;
    }
    p->table = malloc(sizeof(int32_t) * (size_t)blocks);
    int32_t *line_of = malloc(sizeof(int32_t) * (size_t)blocks);
    int32_t *page_block = malloc(sizeof(int32_t) * ((size_t)max_page + 1));
    int ok = p->table && line_of && page_block;
    if (!ok) fprintf(stderr, "flashstep %s: out of memory\n", p->cmd);
    for (int32_t q = 0; ok && q <= max_page; q++) page_block[q] = -1;
    int32_t n = 0, line = 0;
    const char *s = text, *end = text + len;
    while (ok && s < end) {
        line++;
        const char *eol = memchr(s, '\n', (size_t)(end - s));
        if (!eol) eol = end;
        const char *c = s;
        while (c < eol && (*c == ' ' || *c == '\t' || *c == '\r')) c++;
        if (c < eol && *c != '#') {
            const char *w = c;
            while (c < eol && *c != ' ' && *c != '\t' && *c != '\r' && *c != '#') c++;
            char word[40], shown[90];
            size_t wl = (size_t)(c - w) < sizeof word - 1 ? (size_t)(c - w) : sizeof word - 1;
            memcpy(word, w, wl);
            word[wl] = 0;
            fs_text_escape(word, wl, shown, sizeof shown);
            long page;
            const int col = (int)(w - s) + 1;
            if (!cli_parse_int(word, LONG_MIN / 2, LONG_MAX / 2, &page) || (size_t)(c - w) != wl) {
                fprintf(stderr, "flashstep %s: %s:%d:%d: expected a page number (an integer from 0), got '%s'\n",
                        p->cmd, name, line, col, shown);
                ok = 0;
                break;
            }
            while (c < eol && (*c == ' ' || *c == '\t' || *c == '\r')) c++;
            if (c < eol && *c != '#') {
                fprintf(stderr, "flashstep %s: %s:%d:%d: one page number a line: something follows %ld\n", p->cmd, name,
                        line, (int)(c - s) + 1, page);
                ok = 0;
                break;
            }
            if (page < 0 || page > max_page) {
                fprintf(stderr, "flashstep %s: %s:%d:%d: page %ld is out of range: pages are numbered from 0, and the "
                                "pool may have at most %d pages (4 x the %d blocks + 16)\n",
                        p->cmd, name, line, col, page, max_page + 1, blocks);
                ok = 0;
                break;
            }
            if (n == blocks) {
                fprintf(stderr, "flashstep %s: %s:%d:%d: one entry too many: the sequence has %d blocks (%d keys in "
                                "pages of %ld)\n",
                        p->cmd, name, line, col, blocks, p->run.attn.n_kv, p->page_size);
                ok = 0;
                break;
            }
            if (page_block[page] >= 0) {
                fprintf(stderr, "flashstep %s: %s:%d:%d: page %ld already holds block %d (line %d): each block needs a "
                                "page of its own\n",
                        p->cmd, name, line, col, page, page_block[page], line_of[page_block[page]]);
                ok = 0;
                break;
            }
            page_block[page] = n;
            line_of[n] = line;
            p->table[n++] = (int32_t)page;
        }
        s = eol + 1;
    }
    if (ok && n < blocks) {
        fprintf(stderr, "flashstep %s: %s:%d:1: the table has %d entries but the sequence has %d blocks (%d keys in "
                        "pages of %ld)\n",
                p->cmd, name, line + 1, n, blocks, p->run.attn.n_kv, p->page_size);
        ok = 0;
    }
    free(text);
    free(line_of);
    free(page_block);
    p->n_table = n;
    return ok;
}

/* --page-size: the table from the file, or pages 0 … blocks − 1 shuffled by --seed. */
static int make_block_table(cli_problem *p)
{
    fs_run *r = &p->run;
    if (!p->page_size) {
        /* (with the tiled algorithms --seed is the dropout's key, checked in cli_problem_load) */
        if (p->block_table || (r->algo == FS_ALGO_DECODE && p->seed_set))
            return fail(p, "%s", p->block_table ? "--block-table needs --page-size" : "--seed needs --page-size");
        return 0;
    }
    if (p->scores) return fail(p, "%s", "--page-size pages K and V: it needs --q, --k and --v, not --scores");
    if (p->block_table && p->seed_set)
        return fail(p, "%s", "--block-table gives the table and --seed draws one: give one or the other");
    const int32_t blocks = (int32_t)((r->attn.n_kv + p->page_size - 1) / p->page_size);
    if (p->block_table) {
        if (!read_block_table(p, blocks, 4 * blocks + 15)) return 2;
    } else {
        p->table = malloc(sizeof(int32_t) * (size_t)blocks);
        if (!p->table) return fail(p, "%s", "out of memory");
        p->n_table = blocks;
        for (int32_t b = 0; b < blocks; b++) p->table[b] = b;
        uint64_t x = p->seed;   /* splitmix64, Fisher–Yates */
        for (int32_t b = blocks - 1; b > 0; b--) {
            const uint64_t z = fs_splitmix64(&x);
            int32_t j = (int32_t)(z % (uint64_t)(b + 1)), t = p->table[b];
            p->table[b] = p->table[j];
            p->table[j] = t;
        }
        /* A shuffle can leave every block in place; then rotate by one, so the table always
         * shows pages out of order. */
        bool in_order = true;
        for (int32_t b = 0; b < blocks; b++) in_order &= p->table[b] == b;
        for (int32_t b = 0; in_order && b < blocks; b++) p->table[b] = (b + 1) % blocks;
    }
    r->page_size = (int32_t)p->page_size;
    r->block_table = p->table;
    r->n_table = p->n_table;
    return 0;
}

int cli_problem_load(cli_problem *p)
{
    fs_run *r = &p->run;
    if (p->algo_set > 1) return fail(p, "%s", "choose one of --reference, --query, --decode, --backward, --z");
    bool sharding_given = false;
    for (int k = 0; k < N_OPTIONS; k++) sharding_given |= (p->given >> k & 1u) && !strcmp(options[k].opt, "--sharding");
    if (sharding_given && !p->ring) return fail(p, "%s", "--sharding needs --ring P");
    if (p->ring) {   /* the ring runs the tiled forward, or with --backward the backward, on each device */
        if (r->algo != FS_ALGO_TILED && r->algo != FS_ALGO_BACKWARD)
            return fail(p, "%s", "--ring runs the tiled forward (the default) or --backward; drop the other algorithm");
        if (r->algo == FS_ALGO_TILED && p->dout) return fail(p, "%s", "--do is the backward's input: give --backward too");
        r->ring_backward = r->algo == FS_ALGO_BACKWARD;
        if (r->ring_backward && p->scores) return fail(p, "%s", "--scores have no dQ or dK: the ring's backward needs --q and --k");
        r->algo = FS_ALGO_RING;
    }
    for (int k = 0; k < N_OPTIONS; k++)
        if ((p->given >> k & 1u) && options[k].algos && !(options[k].algos & ALGO_BIT(r->algo))) {
            fprintf(stderr, "flashstep %s: %s does not apply to %s\n(see flashstep %s --help)\n", p->cmd, options[k].opt,
                    r->algo == FS_ALGO_SOFTMAX     ? "--z (online softmax of a vector)"
                    : r->algo == FS_ALGO_REFERENCE ? "--reference"
                    : r->algo == FS_ALGO_QUERY     ? "--query"
                    : r->algo == FS_ALGO_DECODE    ? "--decode"
                    : r->algo == FS_ALGO_BACKWARD  ? "--backward"
                    : r->algo == FS_ALGO_RING      ? "ring attention (--ring)"
                                                   : "tiled attention (the default)",
                    p->cmd);
            return 2;
        }
    if (p->seed_set && r->algo != FS_ALGO_DECODE && !r->tiling.dropout.on)
        return fail(p, "%s", "--seed is the dropout's key here: give --dropout too");
    if (r->tiling.dropout.on) r->tiling.dropout.seed = p->seed_set ? p->seed : 0;
    if (r->tiling.dropout.on && r->tiling.pitfall)
        return fail(p, "%s", "--dropout runs the correct algorithm only; drop --pitfall");
    if (r->tiling.dropout.on && r->lowp)
        return fail(p, "%s", "--dropout does not apply to --fp8 (the low-precision recipe runs without dropout)");
    if (r->recipe.values && !r->lowp) return fail(p, "%s", "--fp8-values needs --fp8");
    if (r->lowp) {
        /* FlashAttention-3's recipe has one form and one order; it reads Q and K, not scores */
        static const char *const no[] = {"--form", "--order", "--exp2", "--pitfall", "--softcap", "--scores"};
        for (size_t j = 0; j < sizeof no / sizeof no[0]; j++)
            for (int k = 0; k < N_OPTIONS; k++)
                if ((p->given >> k & 1u) && !strcmp(options[k].opt, no[j]))
                    return fail(p, "%s does not apply to --fp8 (FlashAttention-3's recipe: Q outer, unnormalized, from Q and K)",
                                no[j]);
        r->tiling.form = FS_FORM_UNNORMALIZED;
    }
    if ((r->algo == FS_ALGO_QUERY || r->algo == FS_ALGO_DECODE) && !p->form_set)
        r->tiling.form = r->decoding.form = FS_FORM_UNNORMALIZED;

    if (r->algo == FS_ALGO_SOFTMAX) {
        if (p->q || p->k || p->v || p->scores) return fail(p, "%s", "--z takes no --q/--k/--v/--scores");
        if (!load(p, p->z, true, &p->Z)) return 2;
        r->z = p->Z.data;
        r->n_z = p->Z.rows * p->Z.cols;
        return 0;
    }
    fs_attn *at = &r->attn;
    if (p->scores) {
        if (p->q || p->k) return fail(p, "%s", "--scores replaces --q and --k; give one or the other");
        if (!load(p, p->scores, true, &p->S)) return 2;
        if (p->S.rows % p->hq) return shape_err(p, p->scores, "rows are not a multiple of the query heads");
        at->n_q = p->S.rows / p->hq;
        at->n_kv = p->S.cols;
        at->d = 0;
        at->S = p->S.data;
    } else {
        if (!p->q || !p->k || !p->v) return fail(p, "%s", "need --q, --k and --v (or --scores, or --z)");
        if (!load(p, p->q, false, &p->Q) || !load(p, p->k, false, &p->K)) return 2;
        if (p->Q.rows % p->hq) return shape_err(p, p->q, "rows are not a multiple of the query heads (--heads)");
        if (p->K.rows % p->hkv) return shape_err(p, p->k, "rows are not a multiple of the KV heads (--heads)");
        if (p->K.cols != p->Q.cols) {
            char msg[160];
            snprintf(msg, sizeof msg, "K has %d columns but Q has %d: they must share d", p->K.cols, p->Q.cols);
            return shape_err(p, p->k, msg);
        }
        at->n_q = p->Q.rows / p->hq;
        at->n_kv = p->K.rows / p->hkv;
        at->d = p->Q.cols;
        at->Q = p->Q.data;
        at->K = p->K.data;
    }
    if (p->v) {
        if (!load(p, p->v, false, &p->V)) return 2;
        if (p->V.rows != at->n_kv * p->hkv) {
            char msg[160];
            snprintf(msg, sizeof msg, "V has %d rows but there are %d keys (x %d KV heads)", p->V.rows, at->n_kv, p->hkv);
            return shape_err(p, p->v, msg);
        }
        at->V = p->V.data;
        at->d_v = p->V.cols;
        if (p->dout) {
            if (!load(p, p->dout, false, &p->dO)) return 2;
            if (p->dO.rows != at->n_q * p->hq || p->dO.cols != p->V.cols) {
                char msg[200];
                snprintf(msg, sizeof msg, "dO is %d x %d but O is %d x %d (n_q x d_v, x %d query heads)", p->dO.rows,
                         p->dO.cols, at->n_q * p->hq, p->V.cols, p->hq);
                return shape_err(p, p->dout, msg);
            }
            r->dO = p->dO.data;
        } else if (r->algo == FS_ALGO_BACKWARD || r->ring_backward) {
            fprintf(stderr, "flashstep %s: no --do given: dO = 1, the gradient of sum(O)\n", p->cmd);
        }
    } else {
        /* Scores without values: V = I, so each output row is that row's weights P. */
        p->eye = calloc((size_t)p->hkv * at->n_kv * at->n_kv, sizeof(double));
        if (!p->eye) return fail(p, "%s", "out of memory");
        for (int h = 0; h < p->hkv; h++)
            for (int j = 0; j < at->n_kv; j++) p->eye[((size_t)h * at->n_kv + j) * at->n_kv + j] = 1;
        at->V = p->eye;
        at->d_v = at->n_kv;
    }
    at->n_q_heads = p->hq;
    at->n_kv_heads = p->hkv;
    at->scale = isnan(p->scale) ? (p->scores ? 1.0 : fs_attn_default_scale(at->d)) : p->scale;
    if (p->tree) {
        fs_loc_error err;
        int32_t n;
        if (!fs_ints_read(p->tree, &p->parent, &n, &err)) {
            char buf[600];
            fs_loc_error_format(&err, buf, sizeof buf);
            fprintf(stderr, "flashstep %s: %s\n", p->cmd, buf);
            return 2;
        }
        p->n_parent = n;
        if (n != at->n_q || n != at->n_kv) {
            char name[300];
            fprintf(stderr, "flashstep %s: %s:1:1: the tree has %d positions but there are %d queries and %d keys\n", p->cmd,
                    cli_shown(p->tree, name, sizeof name), n, at->n_q, at->n_kv);
            return 2;
        }
        p->bits = calloc((size_t)n * fs_mask_words(n), sizeof(uint64_t));
        if (!p->bits) return fail(p, "%s", "out of memory");
        int32_t bad;
        if (fs_mask_tree_build(p->parent, n, p->bits, &bad) != FS_OK) {
            int32_t line = 1, col = 1;
            fs_ints_locate(p->tree, bad >= 0 ? bad : 0, &line, &col);   /* point at the entry */
            char name[300];
            fprintf(stderr, "flashstep %s: %s:%d:%d: not a tree: position %d (parent %d) %s\n", p->cmd,
                    cli_shown(p->tree, name, sizeof name), line, col,
                    bad, bad >= 0 ? p->parent[bad] : 0, "breaks it (exactly one -1 root, parents in range, no cycles)");
            return 2;
        }
        at->mask = fs_mask_tree(p->bits, n);
        if (p->mask_causal || p->window) return fail(p, "%s", "--tree already decides visibility; drop --mask/--window");
    } else if (p->window) {
        at->mask.kind = FS_MASK_WINDOW;
        at->mask.window = p->window;
    } else if (p->mask_causal) {
        at->mask.kind = FS_MASK_CAUSAL;
    }
    at->mask.has_offset = p->has_offset;
    at->mask.offset = (int32_t)p->offset;
    if (r->algo != FS_ALGO_SOFTMAX && fs_attn_check(at) == FS_ERR_RANGE)
        return cli_range_report(p->cmd, at, NULL, p->q, p->k, p->v, p->scores, NULL);
    if (make_block_table(p)) return 2;
    if ((r->algo == FS_ALGO_BACKWARD || r->ring_backward) && r->dO && fs_attn_check(at) == FS_OK &&
        cli_range_report(p->cmd, at, r->dO, p->q, p->k, p->v, p->scores, p->dout))
        return 2;
    if (r->lowp && r->recipe.hadamard && (at->d & (at->d - 1))) {
        char msg[120];
        snprintf(msg, sizeof msg, "--fp8 hadamard needs d a power of two; Q and K have d = %d", at->d);
        return shape_err(p, p->q, msg);
    }
    /* Bound what a trace will hold before running. */
    int64_t nqt = (at->n_q + r->tiling.Bq - 1) / r->tiling.Bq, nkt = (at->n_kv + r->tiling.Bk - 1) / r->tiling.Bk;
    int64_t events = (int64_t)p->hq * (nqt * nkt + (int64_t)at->n_q * (nkt + 1));
    int64_t pool = (int64_t)p->hq * at->n_q * (nkt * (2 * (int64_t)r->tiling.Bk + 2 * at->d_v) + at->d_v);
    if (r->lowp && r->recipe.values)   /* a query row and P8 per row, K and V per tile, exact and rounded */
        pool += (int64_t)p->hq * (at->n_q * nkt * (2 * (int64_t)at->d + r->tiling.Bk) +
                                  nqt * nkt * 2 * (int64_t)r->tiling.Bk * (at->d + at->d_v));
    if (r->algo == FS_ALGO_QUERY) {
        events = (int64_t)p->hq * at->n_q * (2 * (int64_t)at->n_kv + 1);
        pool = (int64_t)p->hq * at->n_q * at->n_kv * (2 + 2 * (int64_t)at->d_v);
    }
    if (r->algo == FS_ALGO_DECODE) {
        /* Per head and row: one PARTIAL per split (its scores and o), n_splits − 1 MERGEs
         * (three o vectors each) and one OUT. --parts may ask for far more splits than keys. */
        int64_t nsp = r->decoding.split == FS_SPLIT_STRIDED ? r->decoding.parts
                                                             : (at->n_kv + r->decoding.Bk - 1) / r->decoding.Bk;
        events = (int64_t)p->hq * at->n_q * 2 * nsp;
        pool = (int64_t)p->hq * at->n_q * (at->n_kv + (4 * nsp - 2) * (int64_t)at->d_v);
        /* Paged: a WRITE per key, an ALLOC per block, and per head and row at most one LOOKUP
         * per key read (a contiguous split's lookups are at most its blocks). */
        if (r->page_size > 0) events += 2 * (int64_t)at->n_kv + (int64_t)p->hq * at->n_q * at->n_kv;
    }
    if (r->algo == FS_ALGO_BACKWARD) {
        /* Per head: one LSE and one DELTA per row, per visited pair one BTILE, Bq BROWs (4 Bk +
         * 3 d numbers) and Bk BKEYs (3 d + 3 d_v); then the gradient rows. */
        int64_t bq = r->tiling.Bq < at->n_q ? r->tiling.Bq : at->n_q, bk = r->tiling.Bk < at->n_kv ? r->tiling.Bk : at->n_kv;
        events = (int64_t)p->hq * (2 * at->n_q + nqt * nkt * (1 + bq + bk) + at->n_q + 2 * (int64_t)at->n_kv);
        pool = (int64_t)p->hq * (2 * (int64_t)at->n_q * at->d_v +
                                 nqt * nkt * (bq * (4 * bk + 3 * (int64_t)at->d) + bk * 3 * (int64_t)(at->d + at->d_v)) +
                                 (int64_t)at->n_q * at->d + (int64_t)at->n_kv * (at->d + at->d_v));
    }
    if (r->algo == FS_ALGO_RING && fs_attn_check(at) == FS_OK) {
        fs_ring g = r->ring;
        g.tiling = r->tiling;
        char why[200];
        if (fs_ring_check(at, &g, why, sizeof why) != FS_OK) {
            fprintf(stderr, "flashstep %s: %s\n", p->cmd, why[0] ? why : "the ring cannot run this problem");
            return 2;
        }
        /* Every device meets every shard: P² steps of at most the largest shard (cap) each, a
         * tiled run (or backward) of cap queries and cap keys, and a merge per row. */
        int64_t cap = 0, P = g.P;
        for (int32_t s = 0; s < g.P; s++) {
            int64_t c = fs_ring_positions(&g, at->n_q, s, NULL);
            cap = c > cap ? c : cap;
        }
        int64_t bq = r->tiling.Bq < cap ? r->tiling.Bq : cap, bk = r->tiling.Bk < cap ? r->tiling.Bk : cap;
        int64_t qt = (cap + bq - 1) / bq, kt = (cap + bk - 1) / bk;
        if (r->ring_backward) {
            events = P * P * p->hq * qt * kt * (1 + bq + bk) + 4 * (int64_t)p->hq * at->n_q + 2 * (int64_t)p->hkv * at->n_q;
            pool = P * P * p->hq * qt * kt * (bq * (4 * bk + 3 * (int64_t)at->d) + bk * 3 * (int64_t)(at->d + at->d_v)) +
                   (int64_t)p->hq * at->n_q * (3 * (int64_t)at->d_v + at->d) + (int64_t)p->hkv * at->n_q * (at->d + at->d_v);
        } else {
            events = P * P * p->hq * (qt * kt + cap * kt + 2 * cap) + (int64_t)p->hq * at->n_q;
            pool = P * P * p->hq * (cap * kt * (2 * bk + 2 * (int64_t)at->d_v) + 4 * cap * (int64_t)at->d_v) +
                   (int64_t)p->hq * at->n_q * at->d_v;
        }
        events += 3 * P * P;
        pool += P * P * cap;
    }
    if (r->tiling.dropout.on) {   /* each visited pair lists its dropped cells, two numbers each */
        int64_t bq = r->tiling.Bq < at->n_q ? r->tiling.Bq : at->n_q, bk = r->tiling.Bk < at->n_kv ? r->tiling.Bk : at->n_kv;
        pool += (int64_t)p->hq * nqt * nkt * 2 * bq * bk;
    }
    if (events > p->max_events || pool > p->max_pool) {
        fprintf(stderr, "flashstep %s: this problem would record about %lld events and %lld numbers; "
                        "the limit is %lld and %lld. Trace a smaller problem, or larger tiles "
                        "(decode: fewer splits).\n",
                p->cmd, (long long)events, (long long)pool, (long long)p->max_events, (long long)p->max_pool);
        return 2;
    }
    return 0;
}

/* The last part of a path (titles name files, not directories). */
static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void cli_problem_describe(const cli_problem *p, char *title, size_t n, char *detail, size_t m)
{
    const fs_run *r = &p->run;
    const fs_attn *a = &r->attn;
    int len = 0;
#define ADD(...) do { if ((size_t)len < m) len += snprintf(detail + len, m - (size_t)len, __VA_ARGS__); } while (0)
    detail[0] = 0;
    if (r->algo == FS_ALGO_SOFTMAX) {
        snprintf(title, n, "Online softmax of %s", base(p->z));
        ADD("%d values", r->n_z);
        if (r->chunk > 1) ADD(", chunks of %d", r->chunk);
        return;
    }
    const char *what = r->algo == FS_ALGO_TILED ? (r->tiling.pitfall ? "Tiled attention, wrong variant," : "Tiled attention")
                       : r->algo == FS_ALGO_QUERY  ? "Online attention"
                       : r->algo == FS_ALGO_DECODE ? "FlashDecoding"
                       : r->algo == FS_ALGO_BACKWARD ? "Backward pass"
                       : r->algo == FS_ALGO_RING ? (r->ring_backward ? "Ring attention, backward," : "Ring attention")
                                                   : "Reference attention";
    if (p->scores) snprintf(title, n, "%s of S = %s%s%s", what, base(p->scores), p->v ? ", V = " : "", p->v ? base(p->v) : "");
    else snprintf(title, n, "%s of %s, %s, %s", what, base(p->q), base(p->k), base(p->v));
    ADD("n_q = %d, n_kv = %d", a->n_q, a->n_kv);
    if (a->d) ADD(", d = %d", a->d);
    ADD(", d_v = %d", a->d_v);
    if (a->n_q_heads > 1) ADD(", heads %d:%d", a->n_q_heads, a->n_kv_heads);
    if (r->algo == FS_ALGO_RING) ADD(", %d devices, %s sharding", r->ring.P, fs_sharding_str(r->ring.sharding));
    if (r->algo == FS_ALGO_TILED || r->algo == FS_ALGO_BACKWARD || r->algo == FS_ALGO_RING)
        ADD(", Bq = %d, Bk = %d, %s", r->tiling.Bq, r->tiling.Bk, fs_order_str(r->tiling.order));
    if (r->algo == FS_ALGO_BACKWARD || r->ring_backward) ADD(", dO = %s", p->dout ? base(p->dout) : "1");
    if (r->algo == FS_ALGO_DECODE) {
        if (r->decoding.split == FS_SPLIT_STRIDED) ADD(", %d strided parts", r->decoding.parts);
        else ADD(", splits of %d", r->decoding.Bk);
        ADD(", %s merge", fs_merge_str(r->decoding.merge));
        if (r->page_size > 0) ADD(", pages of %d (%s)", r->page_size, p->block_table ? base(p->block_table) : "shuffled table");
    }
    if (r->algo != FS_ALGO_REFERENCE && r->algo != FS_ALGO_BACKWARD && !r->ring_backward)
        ADD(", %s", fs_form_str(r->algo == FS_ALGO_DECODE ? r->decoding.form : r->tiling.form));
    if (p->tree) ADD(", tree %s", base(p->tree));
    else if (p->window) ADD(", window %d", p->window);
    else if (p->mask_causal) ADD(", causal");
    if (!isnan(p->scale)) ADD(", scale %g", p->scale);
    if (a->softcap > 0) ADD(", softcap %g", a->softcap);
    if (r->tiling.exp2) ADD(", exp2");
    if (r->tiling.pitfall) ADD(", pitfall %s", fs_pitfall_str(r->tiling.pitfall));
    if (r->tiling.dropout.on)
        ADD(", dropout %g (seed %llu)", r->tiling.dropout.p, (unsigned long long)r->tiling.dropout.seed);
#undef ADD
}

void cli_problem_free(cli_problem *p)
{
    fs_matrix_free(&p->Q);
    fs_matrix_free(&p->K);
    fs_matrix_free(&p->V);
    fs_matrix_free(&p->S);
    fs_matrix_free(&p->Z);
    fs_matrix_free(&p->dO);
    free(p->eye);
    free(p->parent);
    free(p->bits);
    free(p->table);
    p->eye = NULL;
    p->parent = NULL;
    p->bits = NULL;
    p->table = NULL;
}

/* "file:line:col" of flat element index of the matrix read from path, or just "file". */
static void place(const char *path, int64_t index, char *b, size_t n)
{
    int32_t line = 0, col = 0;
    char name[300];
    cli_shown(path ? path : "(input)", name, sizeof name);
    if (path && fs_matrix_locate(path, index, &line, &col)) snprintf(b, n, "%s:%d:%d", name, line, col);
    else snprintf(b, n, "%s", name);
}

int cli_range_report(const char *cmd, const fs_attn *a, const double *dO, const char *qpath, const char *kpath,
                     const char *vpath, const char *spath, const char *dopath)
{
    fs_range_issue w;
    char why[400], at[400], at2[400];
    if (fs_attn_check_range(a, &w) == FS_ERR_RANGE) {
        fs_attn_status_detail(a, FS_ERR_RANGE, why, sizeof why);
        if (w.in_v) {
            place(vpath, ((int64_t)w.head * a->n_kv + w.row) * a->d_v + w.col, at, sizeof at);
            fprintf(stderr, "flashstep %s: %s: %s\n", cmd, at, why);
        } else if (a->S) {
            place(spath, ((int64_t)w.head * a->n_q + w.row) * a->n_kv + w.col, at, sizeof at);
            fprintf(stderr, "flashstep %s: %s: %s\n", cmd, at, why);
        } else {
            place(qpath, ((int64_t)w.head * a->n_q + w.row) * a->d, at, sizeof at);
            place(kpath, ((int64_t)fs_attn_kv_head(a, w.head) * a->n_kv + w.col) * a->d, at2, sizeof at2);
            fprintf(stderr, "flashstep %s: %s: %s (the key's row: %s)\n", cmd, at, why, at2);
        }
        return 2;
    }
    if (dO && fs_backward_check_range(a, dO, why, sizeof why) != FS_OK) {
        fprintf(stderr, "flashstep %s: %s: %s\n", cmd, dopath ? cli_shown(dopath, at, sizeof at) : "dO", why);
        return 2;
    }
    return 0;
}

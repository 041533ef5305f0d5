/* cmd_trace.c: `flashstep trace`: run one engine algorithm on matrices from files and print
 * its trace, as a table for people or as JSON lines for programs.
 *
 * Data flow: options → matrices (src/io) → fs_run → fs_run_exec (src/engine) → events → printer.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/run.h"
#include "io/matrix_io.h"
#include "kernels/cuda/cuda_backend.h"

/* Bounds on what a trace may record, so a mistaken huge input fails with a message instead of
 * eating the machine's memory. Untraced runs are not bounded here. */
#define MAX_TRACE_EVENTS ((int64_t)1 << 22)
#define MAX_TRACE_POOL   ((int64_t)1 << 25)

static const char *usage_text =
    "usage: flashstep trace [INPUTS] [ALGORITHM] [OPTIONS]\n"
    "\n"
    "Run one algorithm of the engine (float64) and print every step it takes.\n"
    "\n"
    "inputs (text: one row per line, numbers separated by spaces or commas, '#' comments;\n"
    "        or .npy float16/float32/float64 in C order):\n"
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
    "                               and dQ, dK, dV tile by tile (needs --q and --k)\n"
    "  --do FILE                    with --backward: dO (n_q x d_v, like --v per head); without\n"
    "                               it dO = 1, the gradient of sum(O), and the run says so\n"
    "\n"
    "options:\n"
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
    "  --format table|jsonl         (default table)\n"
    "  --digits N                   digits after the point in the table (default 4)\n"
    "  --backend engine|cuda        cuda: run the tiled kernel on the GPU (make CUDA=1)\n"
    "\n"
    "An option the chosen algorithm does not read (--bq with --decode, --merge without it) is\n"
    "refused. Bad input exits 2 with file:line:column. The JSONL form prints every number so it\n"
    "round-trips (%.17g); -inf is the string \"-inf\".\n";

typedef struct {
    const char *q, *k, *v, *scores, *z, *tree, *dout;
    int algo_set;
    fs_run run;
    int hq, hkv;
    int jsonl, digits, cuda;
    int form_set;
} opts;

/* Options that only some algorithms read. Given to another algorithm they are refused rather than
 * silently ignored (a --tree given to --z, a --parts without --decode). */
#define ALGO_BIT(x) (1u << (x))
#define ALL_ATTN (ALGO_BIT(FS_ALGO_REFERENCE) | ALGO_BIT(FS_ALGO_QUERY) | ALGO_BIT(FS_ALGO_TILED) | \
                  ALGO_BIT(FS_ALGO_DECODE) | ALGO_BIT(FS_ALGO_BACKWARD))
#define TILES (ALGO_BIT(FS_ALGO_TILED) | ALGO_BIT(FS_ALGO_BACKWARD))
static const struct {
    const char *opt;
    unsigned algos;   /* ALGO_BIT of every algorithm that reads it */
} scoped_opts[] = {
    {"--bq", TILES},
    {"--order", TILES},
    {"--pitfall", ALGO_BIT(FS_ALGO_TILED)},
    {"--bk", TILES | ALGO_BIT(FS_ALGO_DECODE)},
    {"--do", ALGO_BIT(FS_ALGO_BACKWARD)},
    {"--scores", ~ALGO_BIT(FS_ALGO_BACKWARD)},    /* given scores have no dQ, dK */
    {"--backend", ~ALGO_BIT(FS_ALGO_BACKWARD)},
    {"--merge", ALGO_BIT(FS_ALGO_DECODE)},
    {"--parts", ALGO_BIT(FS_ALGO_DECODE)},
    {"--exp2", ALGO_BIT(FS_ALGO_TILED) | ALGO_BIT(FS_ALGO_QUERY)},
    {"--form", ALGO_BIT(FS_ALGO_TILED) | ALGO_BIT(FS_ALGO_QUERY) | ALGO_BIT(FS_ALGO_DECODE)},
    {"--chunk", ALGO_BIT(FS_ALGO_SOFTMAX)},
    {"--mask", ALL_ATTN}, {"--window", ALL_ATTN}, {"--tree", ALL_ATTN}, {"--offset", ALL_ATTN},
    {"--scale", ALL_ATTN}, {"--softcap", ALL_ATTN}, {"--heads", ALL_ATTN},
};

static int fail(const char *fmt, const char *a)
{
    fprintf(stderr, "flashstep trace: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n(see flashstep trace --help)\n");
    return 2;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

/* ---- printing ---- */

static void jnum(FILE *f, double x)
{
    if (isnan(x)) fputs("\"nan\"", f);
    else if (x == INFINITY) fputs("\"inf\"", f);
    else if (x == -INFINITY) fputs("\"-inf\"", f);
    else fprintf(f, "%.17g", x);
}

static void jvec(FILE *f, const char *key, const fs_trace *tr, int64_t off, int32_t n)
{
    const double *v = fs_trace_at(tr, off);
    if (!v) return;
    fprintf(f, ",\"%s\":[", key);
    for (int32_t i = 0; i < n; i++) {
        if (i) fputc(',', f);
        jnum(f, v[i]);
    }
    fputc(']', f);
}

#define JF(key, x) (fprintf(f, ",\"" key "\":"), jnum(f, (x)))
#define JI(key, x) fprintf(f, ",\"" key "\":%d", (int)(x))

static void print_jsonl(FILE *f, const fs_trace *tr)
{
    for (int64_t k = 0; k < tr->n; k++) {
        const fs_event *e = &tr->ev[k];
        fprintf(f, "{\"event\":\"%s\",\"step\":%d", fs_event_kind_str(e->kind), e->step);
        if (e->kind != FS_EV_ELEM) {
            JI("head", e->head);
            JI("kv_head", e->kv_head);
        }
        switch (e->kind) {
        case FS_EV_ELEM:
            JI("i", e->c0);
            JI("c0", e->c0);
            JI("c1", e->c1);
            if (e->c1 - e->c0 == 1) JF("x", e->x);
            jvec(f, "values", tr, e->s_row, e->n_s);
            JF("m_old", e->m_old); JF("m_blk", e->m_blk); JF("m_new", e->m_new);
            JF("l_old", e->l_old); JF("l_blk", e->l_blk); JF("l_new", e->l_new);
            JF("alpha", e->alpha); JF("beta", e->beta);
            break;
        case FS_EV_TILE:
        case FS_EV_SKIP:
            JI("qt", e->qt); JI("kt", e->kt);
            JI("r0", e->r0); JI("r1", e->r1); JI("c0", e->c0); JI("c1", e->c1);
            fprintf(f, ",\"class\":\"%s\"", fs_tile_class_str(e->cls));
            if (e->kind == FS_EV_SKIP) fprintf(f, ",\"reason\":\"%s\"", fs_skip_reason_str(e->reason));
            break;
        case FS_EV_ROW:
            JI("row", e->row); JI("qt", e->qt); JI("kt", e->kt); JI("c0", e->c0); JI("c1", e->c1);
            JF("m_old", e->m_old); JF("m_blk", e->m_blk); JF("m_new", e->m_new);
            JF("l_old", e->l_old); JF("l_blk", e->l_blk); JF("l_new", e->l_new);
            JF("alpha", e->alpha); JF("beta", e->beta);
            JI("visible", e->visible);
            jvec(f, "s", tr, e->s_row, e->n_s);
            jvec(f, "p", tr, e->p_row, e->n_s);
            jvec(f, "o_old", tr, e->o_old, e->n_o);
            jvec(f, "o_new", tr, e->o_new, e->n_o);
            fprintf(f, ",\"normalized\":%s", e->normalized ? "true" : "false");
            break;
        case FS_EV_PARTIAL:
            JI("row", e->row); JI("split", e->kt); JI("c0", e->c0); JI("c1", e->c1);
            JI("stride", e->stride);
            fprintf(f, ",\"class\":\"%s\"", fs_tile_class_str(e->cls));
            JI("visible", e->visible);
            JF("m", e->m_new); JF("l", e->l_new);
            jvec(f, "s", tr, e->s_row, e->n_s);
            jvec(f, "o", tr, e->o_new, e->n_o);
            fprintf(f, ",\"normalized\":%s", e->normalized ? "true" : "false");
            break;
        case FS_EV_MERGE:
            JI("row", e->row); JI("a", e->a); JI("b", e->b); JI("id", e->id); JI("level", e->level);
            JF("m_a", e->m_old); JF("l_a", e->l_old);
            jvec(f, "o_a", tr, e->o_old, e->n_o);
            JF("m_b", e->m_blk); JF("l_b", e->l_blk);
            jvec(f, "o_b", tr, e->o_blk, e->n_o);
            JF("c_a", e->alpha); JF("c_b", e->beta);
            JF("m", e->m_new); JF("l", e->l_new);
            jvec(f, "o", tr, e->o_new, e->n_o);
            fprintf(f, ",\"normalized\":%s", e->normalized ? "true" : "false");
            break;
        case FS_EV_OUT:
            JI("row", e->row);
            jvec(f, "o", tr, e->o_new, e->n_o);
            JF("m", e->m_new); JF("l", e->l_new);
            break;
        case FS_EV_LSE:
            JI("row", e->row); JF("lse", e->x);
            break;
        case FS_EV_DELTA:
            JI("row", e->row); JF("D", e->x);
            jvec(f, "do", tr, e->o_blk, e->n_o);
            jvec(f, "o", tr, e->o_new, e->n_o);
            break;
        case FS_EV_BTILE:
        case FS_EV_BSKIP:
            JI("qt", e->qt); JI("kt", e->kt);
            JI("r0", e->r0); JI("r1", e->r1); JI("c0", e->c0); JI("c1", e->c1);
            fprintf(f, ",\"class\":\"%s\"", fs_tile_class_str(e->cls));
            if (e->kind == FS_EV_BSKIP) fprintf(f, ",\"reason\":\"%s\"", fs_skip_reason_str(e->reason));
            break;
        case FS_EV_BROW:
            JI("row", e->row); JI("qt", e->qt); JI("kt", e->kt); JI("c0", e->c0); JI("c1", e->c1);
            JI("visible", e->visible); JF("lse", e->x); JF("D", e->m_new);
            jvec(f, "s", tr, e->s_row, e->n_s);
            jvec(f, "p", tr, e->p_row, e->n_s);
            jvec(f, "dp", tr, e->dp_row, e->n_s);
            jvec(f, "ds", tr, e->ds_row, e->n_s);
            jvec(f, "dq_old", tr, e->o_old, e->n_o);
            jvec(f, "dq_blk", tr, e->o_blk, e->n_o);
            jvec(f, "dq_new", tr, e->o_new, e->n_o);
            break;
        case FS_EV_BKEY:
            JI("key", e->row); JI("qt", e->qt); JI("kt", e->kt); JI("r0", e->r0); JI("r1", e->r1);
            jvec(f, "dk_old", tr, e->o_old, e->n_o);
            jvec(f, "dk_blk", tr, e->o_blk, e->n_o);
            jvec(f, "dk_new", tr, e->o_new, e->n_o);
            jvec(f, "dv_old", tr, e->g_old, e->n_g);
            jvec(f, "dv_blk", tr, e->g_blk, e->n_g);
            jvec(f, "dv_new", tr, e->g_new, e->n_g);
            break;
        case FS_EV_GRAD:
            fprintf(f, ",\"tensor\":\"%s\"", fs_grad_str(e->tensor));
            JI("row", e->row);
            jvec(f, "value", tr, e->o_new, e->n_o);
            break;
        default: break;
        }
        fputs("}\n", f);
    }
}

/* Table cells: fixed digits up to 10^7, exponent form beyond (a float64 can have 309 digits
 * before the point); −∞ and NaN spelled out. */
static const char *num(char *buf, double x, int digits)
{
    if (isnan(x)) return "NaN";
    if (x == -INFINITY) return "-inf";
    if (x == INFINITY) return "inf";
    if (fabs(x) >= 1e7) snprintf(buf, 48, "%.*e", digits > 1 ? digits - 1 : 1, x);
    else snprintf(buf, 48, "%.*f", digits, x);
    return buf;
}

static void tvec(FILE *f, const fs_trace *tr, int64_t off, int32_t n, int digits)
{
    const double *v = fs_trace_at(tr, off);
    char b[48];
    fputc('[', f);
    for (int32_t i = 0; v && i < n; i++) fprintf(f, "%s%s", i ? ", " : "", num(b, v[i], digits));
    fputc(']', f);
}

static void print_table(FILE *f, const fs_run *r, const fs_trace *tr, int digits)
{
    char b[8][48];   /* one buffer per number printed in a line */
    const fs_attn *a = &r->attn;
    const int heads = r->algo != FS_ALGO_SOFTMAX && a->n_q_heads > 1;
    if (r->algo == FS_ALGO_SOFTMAX)
        fprintf(f, "online softmax of %d values, chunk %d\n\n", r->n_z, r->chunk);
    else
        fprintf(f, "%s attention: n_q=%d n_kv=%d d=%d d_v=%d heads=%d:%d scale=%s mask=%s\n",
                fs_algo_str(r->algo), a->n_q, a->n_kv, a->d, a->d_v, a->n_q_heads, a->n_kv_heads,
                num(b[0], a->scale, 6), a->mask.kind == FS_MASK_BITS && a->mask.is_tree ? "tree"
                                                                        : fs_mask_kind_str(a->mask.kind));
    if (r->algo == FS_ALGO_BACKWARD)
        fprintf(f, "Bq=%d Bk=%d order=%s dO=%s\n", r->tiling.Bq, r->tiling.Bk, fs_order_str(r->tiling.order),
                r->dO ? "given" : "1 (no --do: the gradient of sum(O))");
    if (r->algo == FS_ALGO_TILED)
        fprintf(f, "Bq=%d Bk=%d form=%s order=%s%s%s%s\n", r->tiling.Bq, r->tiling.Bk,
                fs_form_str(r->tiling.form), fs_order_str(r->tiling.order),
                r->tiling.exp2 ? " exp2 (m and s in base-2 units)" : "",
                r->tiling.pitfall ? " PITFALL: " : "", r->tiling.pitfall ? fs_pitfall_str(r->tiling.pitfall) : "");
    if (r->algo == FS_ALGO_DECODE)
        fprintf(f, "splits=%s %s=%d merge=%s partials=%s\n", fs_split_str(r->decoding.split),
                r->decoding.split == FS_SPLIT_STRIDED ? "parts" : "Bk",
                r->decoding.split == FS_SPLIT_STRIDED ? r->decoding.parts : r->decoding.Bk,
                fs_merge_str(r->decoding.merge), fs_form_str(r->decoding.form));
    if (r->algo != FS_ALGO_SOFTMAX) fputc('\n', f);

    for (int64_t k = 0; k < tr->n; k++) {
        const fs_event *e = &tr->ev[k];
        char hd[32] = "";
        if (heads) snprintf(hd, sizeof hd, "head %d (kv %d) ", e->head, e->kv_head);
        switch (e->kind) {
        case FS_EV_ELEM:
            if (e->c1 - e->c0 == 1)
                fprintf(f, "step %d: z[%d] = %s\n", e->c0 + 1, e->c0, num(b[0], e->x, digits));
            else {
                fprintf(f, "chunk z[%d:%d] = ", e->c0, e->c1);
                tvec(f, tr, e->s_row, e->n_s, digits);
                fputc('\n', f);
            }
            fprintf(f, "  m_new = max(%s, %s) = %s\n", num(b[0], e->m_old, digits), num(b[1], e->m_blk, digits),
                    num(b[2], e->m_new, digits));
            fprintf(f, "  correction exp(m_old - m_new) = %s\n", num(b[0], e->alpha, digits));
            fprintf(f, "  l = %s * %s + %s * %s = %s\n\n", num(b[0], e->l_old, digits), num(b[1], e->alpha, digits),
                    num(b[2], e->l_blk, digits), num(b[3], e->beta, digits), num(b[7], e->l_new, digits));
            break;
        case FS_EV_TILE:
            fprintf(f, "%sQ tile %d (rows %d-%d) x KV tile %d (keys %d-%d): %s\n", hd, e->qt, e->r0,
                    e->r1 - 1, e->kt, e->c0, e->c1 - 1, fs_tile_class_str(e->cls));
            break;
        case FS_EV_SKIP:
            fprintf(f, "%sQ tile %d (rows %d-%d) x KV tile %d (keys %d-%d): skipped (%s)\n\n", hd, e->qt,
                    e->r0, e->r1 - 1, e->kt, e->c0, e->c1 - 1, fs_skip_reason_str(e->reason));
            break;
        case FS_EV_ROW:
            fprintf(f, "  row %d  S = ", e->row);
            tvec(f, tr, e->s_row, e->n_s, digits);
            fprintf(f, "\n    m_blk = %s  l_blk = %s  m: %s -> %s  alpha = %s  beta = %s  l: %s -> %s\n",
                    num(b[0], e->m_blk, digits), num(b[1], e->l_blk, digits), num(b[2], e->m_old, digits),
                    num(b[3], e->m_new, digits), num(b[4], e->alpha, digits), num(b[5], e->beta, digits),
                    num(b[6], e->l_old, digits), num(b[7], e->l_new, digits));
            fprintf(f, "    o%s: ", e->normalized ? "" : " (unnormalized)");
            tvec(f, tr, e->o_old, e->n_o, digits);
            fprintf(f, " -> ");
            tvec(f, tr, e->o_new, e->n_o, digits);
            fputc('\n', f);
            if (k + 1 == tr->n || tr->ev[k + 1].kind != FS_EV_ROW) fputc('\n', f);
            break;
        case FS_EV_PARTIAL:
            if (e->stride > 1)
                fprintf(f, "%srow %d split %d (keys %d, %d, ... step %d): ", hd, e->row, e->kt, e->c0,
                        e->c0 + e->stride, e->stride);
            else
                fprintf(f, "%srow %d split %d (keys %d-%d): ", hd, e->row, e->kt, e->c0, e->c1 - 1);
            fprintf(f, "m = %s  l = %s  o = ", num(b[0], e->m_new, digits), num(b[1], e->l_new, digits));
            tvec(f, tr, e->o_new, e->n_o, digits);
            fputc('\n', f);
            break;
        case FS_EV_MERGE:
            fprintf(f, "%srow %d merge %d + %d -> %d: m = max(%s, %s) = %s  c = %s, %s  l = %s  o = ", hd,
                    e->row, e->a, e->b, e->id, num(b[0], e->m_old, digits), num(b[1], e->m_blk, digits),
                    num(b[2], e->m_new, digits), num(b[3], e->alpha, digits), num(b[4], e->beta, digits),
                    num(b[5], e->l_new, digits));
            tvec(f, tr, e->o_new, e->n_o, digits);
            fputc('\n', f);
            break;
        case FS_EV_OUT:
            if (r->algo == FS_ALGO_DECODE) fputs("  =>", f);   /* decode: each row's result after its merges */
            else if (k == 0 || tr->ev[k - 1].kind != FS_EV_OUT) fprintf(f, "output:\n");
            if (r->algo == FS_ALGO_SOFTMAX) {
                fprintf(f, "  m = %s  l = %s\n  softmax = ", num(b[0], e->m_new, digits), num(b[1], e->l_new, digits));
            } else {
                fprintf(f, "  %sO[%d] = ", hd, e->row);
            }
            tvec(f, tr, e->o_new, e->n_o, digits);
            if (r->algo != FS_ALGO_SOFTMAX)
                fprintf(f, "   m = %s  l = %s", num(b[0], e->m_new, digits), num(b[1], e->l_new, digits));
            fputs(r->algo == FS_ALGO_DECODE ? "\n\n" : "\n", f);
            break;
        case FS_EV_LSE:
            if (k == 0 || tr->ev[k - 1].kind != FS_EV_LSE) fprintf(f, "kept from the forward pass: L = m + ln l\n");
            fprintf(f, "  %sL[%d] = %s\n", hd, e->row, num(b[0], e->x, digits));
            break;
        case FS_EV_DELTA:
            if (k == 0 || tr->ev[k - 1].kind != FS_EV_DELTA) fprintf(f, "\nD = rowsum(dO * O)\n");
            fprintf(f, "  %sD[%d] = ", hd, e->row);
            tvec(f, tr, e->o_blk, e->n_o, digits);
            fputs(" . ", f);
            tvec(f, tr, e->o_new, e->n_o, digits);
            fprintf(f, " = %s\n", num(b[0], e->x, digits));
            if (k + 1 < tr->n && tr->ev[k + 1].kind != FS_EV_DELTA) fputc('\n', f);
            break;
        case FS_EV_BTILE:
            fprintf(f, "%sbackward: Q tile %d (rows %d-%d) x KV tile %d (keys %d-%d): %s\n", hd, e->qt, e->r0,
                    e->r1 - 1, e->kt, e->c0, e->c1 - 1, fs_tile_class_str(e->cls));
            break;
        case FS_EV_BSKIP:
            fprintf(f, "%sbackward: Q tile %d (rows %d-%d) x KV tile %d (keys %d-%d): skipped (%s)\n\n", hd, e->qt,
                    e->r0, e->r1 - 1, e->kt, e->c0, e->c1 - 1, fs_skip_reason_str(e->reason));
            break;
        case FS_EV_BROW:
            fprintf(f, "  row %d  S = ", e->row);
            tvec(f, tr, e->s_row, e->n_s, digits);
            fprintf(f, "\n    P = exp(S - %s) = ", num(b[0], e->x, digits));
            tvec(f, tr, e->p_row, e->n_s, digits);
            fprintf(f, "\n    dP = dO V^T = ");
            tvec(f, tr, e->dp_row, e->n_s, digits);
            fprintf(f, "   dS = P * (dP - %s) = ", num(b[0], e->m_new, digits));
            tvec(f, tr, e->ds_row, e->n_s, digits);
            fprintf(f, "\n    dQ: ");
            tvec(f, tr, e->o_old, e->n_o, digits);
            fprintf(f, " + ");
            tvec(f, tr, e->o_blk, e->n_o, digits);
            fprintf(f, " -> ");
            tvec(f, tr, e->o_new, e->n_o, digits);
            fputc('\n', f);
            break;
        case FS_EV_BKEY:
            fprintf(f, "  key %d  dK: ", e->row);
            tvec(f, tr, e->o_old, e->n_o, digits);
            fprintf(f, " + ");
            tvec(f, tr, e->o_blk, e->n_o, digits);
            fprintf(f, " -> ");
            tvec(f, tr, e->o_new, e->n_o, digits);
            fprintf(f, "   dV: ");
            tvec(f, tr, e->g_old, e->n_g, digits);
            fprintf(f, " + ");
            tvec(f, tr, e->g_blk, e->n_g, digits);
            fprintf(f, " -> ");
            tvec(f, tr, e->g_new, e->n_g, digits);
            fputc('\n', f);
            if (k + 1 == tr->n || tr->ev[k + 1].kind != FS_EV_BKEY) fputc('\n', f);
            break;
        case FS_EV_GRAD:
            if (k == 0 || tr->ev[k - 1].kind != FS_EV_GRAD || tr->ev[k - 1].tensor != e->tensor)
                fprintf(f, "%s:\n", fs_grad_str(e->tensor));
            if (heads) fprintf(f, "  %s %d", e->tensor == FS_GRAD_DQ ? "head" : "kv head", e->head);
            fprintf(f, "  %s[%d] = ", fs_grad_str(e->tensor), e->row);
            tvec(f, tr, e->o_new, e->n_o, digits);
            fputc('\n', f);
            break;
        default: break;
        }
    }
}

/* ---- main ---- */

static int load(const char *path, bool neg_inf, fs_matrix *m)
{
    fs_loc_error err;
    if (fs_matrix_read(path, neg_inf, m, &err)) return 1;
    char buf[600];
    fs_loc_error_format(&err, buf, sizeof buf);
    fprintf(stderr, "flashstep trace: %s\n", buf);
    return 0;
}

static int shape_err(const char *file, const char *msg)
{
    fprintf(stderr, "flashstep trace: %s:1:1: %s\n", file, msg);
    return 2;
}

int cli_trace(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    o.run = fs_run_make(FS_ALGO_TILED);
    o.run.tiling.Bq = 2;
    o.run.tiling.Bk = 3;
    o.run.decoding.Bk = 3;
    o.hq = o.hkv = 1;
    o.digits = 4;
    double scale = NAN;
    int mask_causal = 0, window = 0, has_offset = 0;
    long offset = 0;
    fs_run *r = &o.run;

    unsigned scoped_given = 0;   /* bit k: scoped_opts[k] was given */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        for (unsigned k = 0; k < sizeof scoped_opts / sizeof scoped_opts[0]; k++)
            if (!strcmp(a, scoped_opts[k].opt)) scoped_given |= 1u << k;
#define NEED() do { if (!val) return fail("%s needs a value", a); i++; } while (0)
        long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "--q")) { NEED(); o.q = val; }
        else if (!strcmp(a, "--k")) { NEED(); o.k = val; }
        else if (!strcmp(a, "--v")) { NEED(); o.v = val; }
        else if (!strcmp(a, "--scores")) { NEED(); o.scores = val; }
        else if (!strcmp(a, "--z")) { NEED(); o.z = val; r->algo = FS_ALGO_SOFTMAX; o.algo_set++; }
        else if (!strcmp(a, "--tree")) { NEED(); o.tree = val; }
        else if (!strcmp(a, "--reference")) { r->algo = FS_ALGO_REFERENCE; o.algo_set++; }
        else if (!strcmp(a, "--query")) { r->algo = FS_ALGO_QUERY; o.algo_set++; }
        else if (!strcmp(a, "--decode")) { r->algo = FS_ALGO_DECODE; o.algo_set++; }
        else if (!strcmp(a, "--backward")) { r->algo = FS_ALGO_BACKWARD; o.algo_set++; }
        else if (!strcmp(a, "--do")) { NEED(); o.dout = val; }
        else if (!strcmp(a, "--bq")) {
            NEED();
            if (!parse_int(val, 1, FS_MAX_DIM, &n)) return fail("--bq must be an integer from 1 to 1048576, not '%s'", val);
            r->tiling.Bq = (int32_t)n;
        } else if (!strcmp(a, "--bk")) {
            NEED();
            if (!parse_int(val, 1, FS_MAX_DIM, &n)) return fail("--bk must be an integer from 1 to 1048576, not '%s'", val);
            r->tiling.Bk = r->decoding.Bk = (int32_t)n;
        } else if (!strcmp(a, "--parts")) {
            NEED();
            if (!parse_int(val, 1, FS_MAX_DIM, &n)) return fail("--parts must be an integer from 1 to 1048576, not '%s'", val);
            r->decoding.parts = (int32_t)n;
            r->decoding.split = FS_SPLIT_STRIDED;
        } else if (!strcmp(a, "--chunk")) {
            NEED();
            if (!parse_int(val, 1, FS_MAX_DIM, &n)) return fail("--chunk must be an integer from 1 to 1048576, not '%s'", val);
            r->chunk = (int32_t)n;
        } else if (!strcmp(a, "--form")) {
            NEED();
            if (!strcmp(val, "normalized")) r->tiling.form = r->decoding.form = FS_FORM_NORMALIZED;
            else if (!strcmp(val, "unnormalized")) r->tiling.form = r->decoding.form = FS_FORM_UNNORMALIZED;
            else return fail("--form is normalized or unnormalized, not '%s'", val);
            o.form_set = 1;
        } else if (!strcmp(a, "--order")) {
            NEED();
            if (!strcmp(val, "q-outer")) r->tiling.order = FS_ORDER_Q_OUTER;
            else if (!strcmp(val, "kv-outer")) r->tiling.order = FS_ORDER_KV_OUTER;
            else return fail("--order is q-outer or kv-outer, not '%s'", val);
        } else if (!strcmp(a, "--mask")) {
            NEED();
            if (!strcmp(val, "none")) mask_causal = 0;
            else if (!strcmp(val, "causal")) mask_causal = 1;
            else return fail("--mask is none or causal, not '%s' (see also --window and --tree)", val);
        } else if (!strcmp(a, "--window")) {
            NEED();
            if (!parse_int(val, 1, FS_MAX_DIM, &n)) return fail("--window must be an integer from 1 to 1048576, not '%s'", val);
            window = (int)n;
        } else if (!strcmp(a, "--offset")) {
            NEED();
            if (!parse_int(val, -FS_MAX_DIM, FS_MAX_DIM, &offset)) return fail("--offset must be an integer, not '%s'", val);
            has_offset = 1;
        } else if (!strcmp(a, "--scale")) {
            NEED();
            if (!parse_double(val, &scale)) return fail("--scale must be a finite number, not '%s'", val);
        } else if (!strcmp(a, "--softcap")) {
            NEED();
            if (!parse_double(val, &r->attn.softcap) || r->attn.softcap <= 0)
                return fail("--softcap must be a positive number, not '%s'", val);
        } else if (!strcmp(a, "--exp2")) { r->tiling.exp2 = true; }
        else if (!strcmp(a, "--pitfall")) {
            NEED();
            int found = 0;
            for (int p = 1; p < FS_PITFALL_COUNT; p++)
                if (!strcmp(val, fs_pitfall_str((fs_pitfall)p))) { r->tiling.pitfall = (fs_pitfall)p; found = 1; }
            if (!found) return fail("unknown --pitfall '%s'", val);
        } else if (!strcmp(a, "--merge")) {
            NEED();
            if (!strcmp(val, "sequential")) r->decoding.merge = FS_MERGE_SEQUENTIAL;
            else if (!strcmp(val, "tree")) r->decoding.merge = FS_MERGE_TREE;
            else return fail("--merge is sequential or tree, not '%s'", val);
        } else if (!strcmp(a, "--heads")) {
            NEED();
            long hq = 0, hkv = 0;
            char left[32];
            const char *colon = strchr(val, ':');
            size_t nl = colon ? (size_t)(colon - val) : 0;
            if (colon && nl < sizeof left) {
                memcpy(left, val, nl);
                left[nl] = 0;
            }
            if (!colon || nl >= sizeof left || !parse_int(left, 1, FS_MAX_HEADS, &hq) ||
                !parse_int(colon + 1, 1, FS_MAX_HEADS, &hkv) || hq % hkv)
                return fail("--heads is HQ:HKV with HQ a multiple of HKV, each 1 to 1024 (e.g. 4:2), not '%s'", val);
            o.hq = (int)hq;
            o.hkv = (int)hkv;
        } else if (!strcmp(a, "--format")) {
            NEED();
            if (!strcmp(val, "jsonl")) o.jsonl = 1;
            else if (!strcmp(val, "table")) o.jsonl = 0;
            else return fail("--format is table or jsonl, not '%s'", val);
        } else if (!strcmp(a, "--digits")) {
            NEED();
            if (!parse_int(val, 0, 17, &n)) return fail("--digits must be 0 to 17, not '%s'", val);
            o.digits = (int)n;
        } else if (!strcmp(a, "--backend")) {
            NEED();
            if (!strcmp(val, "cuda")) o.cuda = 1;
            else if (!strcmp(val, "engine")) o.cuda = 0;
            else return fail("--backend is engine or cuda, not '%s'", val);
        } else {
            return fail("unknown option '%s'", a);
        }
#undef NEED
    }
    if (o.algo_set > 1) return fail("%s", "choose one of --reference, --query, --decode, --backward, --z");
    for (unsigned k = 0; k < sizeof scoped_opts / sizeof scoped_opts[0]; k++)
        if ((scoped_given >> k & 1u) && !(scoped_opts[k].algos & ALGO_BIT(r->algo))) {
            fprintf(stderr, "flashstep trace: %s does not apply to %s\n(see flashstep trace --help)\n",
                    scoped_opts[k].opt, r->algo == FS_ALGO_SOFTMAX ? "--z (online softmax of a vector)"
                                        : r->algo == FS_ALGO_REFERENCE ? "--reference"
                                        : r->algo == FS_ALGO_QUERY     ? "--query"
                                        : r->algo == FS_ALGO_DECODE    ? "--decode"
                                        : r->algo == FS_ALGO_BACKWARD  ? "--backward"
                                                                       : "tiled attention (the default)");
            return 2;
        }
    if ((r->algo == FS_ALGO_QUERY || r->algo == FS_ALGO_DECODE) && !o.form_set)
        r->tiling.form = r->decoding.form = FS_FORM_UNNORMALIZED;

    int rc = 2;
    fs_matrix Q = {0}, K = {0}, V = {0}, S = {0}, Z = {0}, dO = {0};
    double *eye = NULL;
    int32_t *parent = NULL;
    uint64_t *bits = NULL;
    fs_trace tr;
    fs_trace_init(&tr);
    fs_result res = {0};

    if (r->algo == FS_ALGO_SOFTMAX) {
        if (o.q || o.k || o.v || o.scores) { fail("%s", "--z takes no --q/--k/--v/--scores"); goto out; }
        if (!load(o.z, true, &Z)) goto out;
        r->z = Z.data;
        r->n_z = Z.rows * Z.cols;
    } else {
        fs_attn *at = &r->attn;
        if (o.scores) {
            if (o.q || o.k) { fail("%s", "--scores replaces --q and --k; give one or the other"); goto out; }
            if (!load(o.scores, true, &S)) goto out;
            if (S.rows % o.hq) { rc = shape_err(o.scores, "rows are not a multiple of the query heads"); goto out; }
            at->n_q = S.rows / o.hq;
            at->n_kv = S.cols;
            at->d = 0;
            at->S = S.data;
        } else {
            if (!o.q || !o.k || !o.v) { fail("%s", "need --q, --k and --v (or --scores, or --z)"); goto out; }
            if (!load(o.q, false, &Q) || !load(o.k, false, &K)) goto out;
            if (Q.rows % o.hq) { rc = shape_err(o.q, "rows are not a multiple of the query heads (--heads)"); goto out; }
            if (K.rows % o.hkv) { rc = shape_err(o.k, "rows are not a multiple of the KV heads (--heads)"); goto out; }
            if (K.cols != Q.cols) {
                char msg[160];
                snprintf(msg, sizeof msg, "K has %d columns but Q has %d: they must share d", K.cols, Q.cols);
                rc = shape_err(o.k, msg);
                goto out;
            }
            at->n_q = Q.rows / o.hq;
            at->n_kv = K.rows / o.hkv;
            at->d = Q.cols;
            at->Q = Q.data;
            at->K = K.data;
        }
        if (o.v) {
            if (!load(o.v, false, &V)) goto out;
            if (V.rows != at->n_kv * o.hkv) {
                char msg[160];
                snprintf(msg, sizeof msg, "V has %d rows but there are %d keys (x %d KV heads)", V.rows, at->n_kv, o.hkv);
                rc = shape_err(o.v, msg);
                goto out;
            }
            at->V = V.data;
            at->d_v = V.cols;
            if (o.dout) {
                if (!load(o.dout, false, &dO)) goto out;
                if (dO.rows != at->n_q * o.hq || dO.cols != V.cols) {
                    char msg[200];
                    snprintf(msg, sizeof msg, "dO is %d x %d but O is %d x %d (n_q x d_v, x %d query heads)",
                             dO.rows, dO.cols, at->n_q * o.hq, V.cols, o.hq);
                    rc = shape_err(o.dout, msg);
                    goto out;
                }
                r->dO = dO.data;
            } else if (r->algo == FS_ALGO_BACKWARD) {
                fprintf(stderr, "flashstep trace: no --do given: dO = 1, the gradient of sum(O)\n");
            }
        } else {
            /* Scores without values: V = I, so each output row is that row's weights P. */
            eye = calloc((size_t)o.hkv * at->n_kv * at->n_kv, sizeof(double));
            if (!eye) { fail("%s", "out of memory"); goto out; }
            for (int h = 0; h < o.hkv; h++)
                for (int j = 0; j < at->n_kv; j++) eye[((size_t)h * at->n_kv + j) * at->n_kv + j] = 1;
            at->V = eye;
            at->d_v = at->n_kv;
        }
        at->n_q_heads = o.hq;
        at->n_kv_heads = o.hkv;
        at->scale = isnan(scale) ? (o.scores ? 1.0 : fs_attn_default_scale(at->d)) : scale;
        if (o.tree) {
            fs_loc_error err;
            int32_t n;
            if (!fs_ints_read(o.tree, &parent, &n, &err)) {
                char buf[600];
                fs_loc_error_format(&err, buf, sizeof buf);
                fprintf(stderr, "flashstep trace: %s\n", buf);
                goto out;
            }
            if (n != at->n_q || n != at->n_kv) {
                fprintf(stderr, "flashstep trace: %s:1:1: the tree has %d positions but there are %d queries and %d keys\n",
                        o.tree, n, at->n_q, at->n_kv);
                goto out;
            }
            bits = calloc((size_t)n * fs_mask_words(n), sizeof(uint64_t));
            if (!bits) { fail("%s", "out of memory"); goto out; }
            int32_t bad;
            if (fs_mask_tree_build(parent, n, bits, &bad) != FS_OK) {
                int32_t line = 1, col = 1;
                fs_ints_locate(o.tree, bad >= 0 ? bad : 0, &line, &col);   /* point at the entry */
                fprintf(stderr, "flashstep trace: %s:%d:%d: not a tree: position %d (parent %d) %s\n", o.tree,
                        line, col, bad, bad >= 0 ? parent[bad] : 0,
                        "breaks it (exactly one -1 root, parents in range, no cycles)");
                goto out;
            }
            at->mask = fs_mask_tree(bits, n);
            if (mask_causal || window) { fail("%s", "--tree already decides visibility; drop --mask/--window"); goto out; }
        } else if (window) {
            at->mask.kind = FS_MASK_WINDOW;
            at->mask.window = window;
        } else if (mask_causal) {
            at->mask.kind = FS_MASK_CAUSAL;
        }
        at->mask.has_offset = has_offset;
        at->mask.offset = (int32_t)offset;
        /* Bound what a trace will hold before running. */
        int64_t nqt = (at->n_q + r->tiling.Bq - 1) / r->tiling.Bq, nkt = (at->n_kv + r->tiling.Bk - 1) / r->tiling.Bk;
        int64_t events = (int64_t)o.hq * (nqt * nkt + (int64_t)at->n_q * (nkt + 1));
        int64_t pool = (int64_t)o.hq * at->n_q * (nkt * (2 * (int64_t)r->tiling.Bk + 2 * at->d_v) + at->d_v);
        if (r->algo == FS_ALGO_QUERY) {
            events = (int64_t)o.hq * at->n_q * (2 * (int64_t)at->n_kv + 1);
            pool = (int64_t)o.hq * at->n_q * at->n_kv * (2 + 2 * (int64_t)at->d_v);
        }
        if (r->algo == FS_ALGO_DECODE) {
            /* Per head and row: one PARTIAL per split (its scores and o), n_splits − 1 MERGEs
             * (three o vectors each) and one OUT. --parts may ask for far more splits than keys. */
            int64_t nsp = r->decoding.split == FS_SPLIT_STRIDED
                              ? r->decoding.parts
                              : (at->n_kv + r->decoding.Bk - 1) / r->decoding.Bk;
            events = (int64_t)o.hq * at->n_q * 2 * nsp;
            pool = (int64_t)o.hq * at->n_q * (at->n_kv + (4 * nsp - 2) * (int64_t)at->d_v);
        }
        if (r->algo == FS_ALGO_BACKWARD) {
            /* Per head: one LSE and one DELTA per row, per visited pair one BTILE, Bq BROWs (4 Bk +
             * 3 d numbers) and Bk BKEYs (3 d + 3 d_v); then the gradient rows. */
            int64_t bq = r->tiling.Bq < at->n_q ? r->tiling.Bq : at->n_q, bk = r->tiling.Bk < at->n_kv ? r->tiling.Bk : at->n_kv;
            events = (int64_t)o.hq * (2 * at->n_q + nqt * nkt * (1 + bq + bk) + at->n_q + 2 * (int64_t)at->n_kv);
            pool = (int64_t)o.hq * (2 * (int64_t)at->n_q * at->d_v +
                                    nqt * nkt * (bq * (4 * bk + 3 * (int64_t)at->d) + bk * 3 * (int64_t)(at->d + at->d_v)) +
                                    (int64_t)at->n_q * at->d + (int64_t)at->n_kv * (at->d + at->d_v));
        }
        if (events > MAX_TRACE_EVENTS || pool > MAX_TRACE_POOL) {
            fprintf(stderr, "flashstep trace: this problem would record about %lld events and %lld numbers; "
                            "the limit is %lld and %lld. Trace a smaller problem, or larger tiles "
                            "(decode: fewer splits).\n",
                    (long long)events, (long long)pool, (long long)MAX_TRACE_EVENTS, (long long)MAX_TRACE_POOL);
            goto out;
        }
    }
    tr.max_events = MAX_TRACE_EVENTS;

    fs_status st;
    if (o.cuda) {
        char why[256] = "";
        if (r->algo != FS_ALGO_TILED && r->algo != FS_ALGO_QUERY) {
            fail("%s", "--backend cuda runs the tiled algorithm (and --query) only");
            goto out;
        }
        st = fs_cuda_trace(r, &res, &tr, why, sizeof why);
        if (st != FS_OK) {
            fprintf(stderr, "flashstep trace: CUDA backend: %s\n", why[0] ? why : fs_status_str(st));
            goto out;
        }
    } else {
        st = fs_run_exec(r, &res, &tr);
        if (st != FS_OK) {
            char why[320];
            fprintf(stderr, "flashstep trace: %s\n", fs_run_status_detail(r, st, why, sizeof why));
            goto out;
        }
    }
    if (o.jsonl) print_jsonl(stdout, &tr);
    else print_table(stdout, r, &tr, o.digits);
    rc = fflush(stdout) == 0 ? 0 : 2;
out:
    fs_result_free(&res);
    fs_trace_free(&tr);
    fs_matrix_free(&Q);
    fs_matrix_free(&K);
    fs_matrix_free(&V);
    fs_matrix_free(&S);
    fs_matrix_free(&Z);
    fs_matrix_free(&dO);
    free(eye);
    free(parent);
    free(bits);
    return rc;
}

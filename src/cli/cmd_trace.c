/* cmd_trace.c: `flashstep trace`: run one engine algorithm on matrices from files and print
 * its trace, as a table for people or as JSON lines for programs.
 *
 * Data flow: options (the problem's in cli/problem.c) → matrices (src/io) → fs_run → fs_run_exec
 * (src/engine) → events → printer.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/problem.h"
#include "engine/run.h"
#include "io/matrix_io.h"
#include "kernels/cuda/cuda_backend.h"

static const char *usage_head =
    "usage: flashstep trace [INPUTS] [ALGORITHM] [OPTIONS]\n"
    "\n"
    "Run one algorithm of the engine (float64) and print every step it takes.\n"
    "\n";
static const char *usage_tail =
    "\n"
    "output:\n"
    "  --format table|jsonl         (default table)\n"
    "  --digits N                   digits after the point in the table (default 4)\n"
    "  --backend engine|cuda        cuda: run on the GPU in float32 (make CUDA=1): the tiled\n"
    "                               kernel, --query, or --backward (its forward, D and the\n"
    "                               backward, with --dropout); the same events as the engine.\n"
    "                               Not with --fp8, nor with --dropout on the forward\n"
    "\n"
    "An option the chosen algorithm does not read (--bq with --decode, --merge without it) is\n"
    "refused, and so is an option given twice. Bad input exits 2 with file:line:column. The\n"
    "JSONL form prints every number so it round-trips (%.17g); -inf is the string \"-inf\".\n"
    "'flashstep play' and 'flashstep render' take the same problem options, and replay a JSONL\n"
    "trace with --trace FILE.\n";

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

/* What a ring hop carries (SEND, RECV: the event's tensor field). */
static const char *ring_carries(int32_t what)
{
    return what == 0 ? "K,V" : what == 1 ? "K,V,dK,dV" : "dK,dV";
}

#define JF(key, x) (fprintf(f, ",\"" key "\":"), jnum(f, (x)))
#define JI(key, x) fprintf(f, ",\"" key "\":%d", (int)(x))

/* The online-softmax state of an ELEM or ROW event: m, ℓ before, of the block, after; α, β. */
static void jstate(FILE *f, const fs_event *e)
{
    JF("m_old", e->m_old); JF("m_blk", e->m_blk); JF("m_new", e->m_new);
    JF("l_old", e->l_old); JF("l_blk", e->l_blk); JF("l_new", e->l_new);
    JF("alpha", e->alpha); JF("beta", e->beta);
}

/* A gradient row's update as three arrays of n numbers (offsets old, blk, updated in tr's
 * vector store): <name>_old, <name>_blk (this tile's contribution), <name>_new = old + blk. */
static void jupdate(FILE *f, const char *name, const fs_trace *tr, int64_t old, int64_t blk, int64_t updated,
                    int32_t n)
{
    char key[16];
    snprintf(key, sizeof key, "%s_old", name);
    jvec(f, key, tr, old, n);
    snprintf(key, sizeof key, "%s_blk", name);
    jvec(f, key, tr, blk, n);
    snprintf(key, sizeof key, "%s_new", name);
    jvec(f, key, tr, updated, n);
}

/* Dropout on a TILE or BTILE: p and the pair's dropped visible cells, "dropped":[[i,j],...]. */
static void jdropped(FILE *f, const fs_trace *tr, const fs_event *e)
{
    const double *v = fs_trace_at(tr, e->drop);
    JF("dropout", e->dropout);
    fputs(",\"dropped\":[", f);
    for (int32_t k = 0; k < e->n_drop; k++) fprintf(f, "%s[%d,%d]", k ? "," : "", (int)v[2 * k], (int)v[2 * k + 1]);
    fputc(']', f);
}

void cli_trace_jsonl(FILE *f, const fs_trace *tr)
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
            jstate(f, e);
            break;
        case FS_EV_TILE:
        case FS_EV_SKIP:
        case FS_EV_BTILE:
        case FS_EV_BSKIP:
            JI("qt", e->qt); JI("kt", e->kt);
            JI("r0", e->r0); JI("r1", e->r1); JI("c0", e->c0); JI("c1", e->c1);
            fprintf(f, ",\"class\":\"%s\"", fs_tile_class_str(e->cls));
            if (e->kind == FS_EV_SKIP || e->kind == FS_EV_BSKIP)
                fprintf(f, ",\"reason\":\"%s\"", fs_skip_reason_str(e->reason));
            if (e->drop >= 0) jdropped(f, tr, e);
            break;
        case FS_EV_ROW:
            JI("row", e->row); JI("qt", e->qt); JI("kt", e->kt); JI("c0", e->c0); JI("c1", e->c1);
            jstate(f, e);
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
        case FS_EV_BROW:
            JI("row", e->row); JI("qt", e->qt); JI("kt", e->kt); JI("c0", e->c0); JI("c1", e->c1);
            JI("visible", e->visible); JF("lse", e->x); JF("D", e->m_new);
            jvec(f, "s", tr, e->s_row, e->n_s);
            jvec(f, "p", tr, e->p_row, e->n_s);
            jvec(f, "dp", tr, e->dp_row, e->n_s);
            jvec(f, "ds", tr, e->ds_row, e->n_s);
            jupdate(f, "dq", tr, e->o_old, e->o_blk, e->o_new, e->n_o);
            break;
        case FS_EV_BKEY:
            JI("key", e->row); JI("qt", e->qt); JI("kt", e->kt); JI("r0", e->r0); JI("r1", e->r1);
            jupdate(f, "dk", tr, e->o_old, e->o_blk, e->o_new, e->n_o);
            jupdate(f, "dv", tr, e->g_old, e->g_blk, e->g_new, e->n_g);
            break;
        case FS_EV_GRAD:
            fprintf(f, ",\"tensor\":\"%s\"", fs_grad_str(e->tensor));
            JI("row", e->row);
            jvec(f, "value", tr, e->o_new, e->n_o);
            break;
        case FS_EV_LOOKUP:
            JI("row", e->row); JI("split", e->kt); JI("seq", e->seq); JI("block", e->block); JI("page", e->page);
            JI("c0", e->c0); JI("c1", e->c1); JI("stride", e->stride); JI("refs", e->refs);
            break;
        case FS_EV_ALLOC:
            JI("seq", e->seq); JI("block", e->block); JI("page", e->page); JI("free", e->n_free);
            break;
        case FS_EV_SHARE:
            JI("seq", e->seq); JI("from", e->src); JI("block", e->block); JI("page", e->page); JI("refs", e->refs);
            JI("c0", e->c0); JI("c1", e->c1);
            break;
        case FS_EV_COW:
            JI("seq", e->seq); JI("block", e->block); JI("page", e->page); JI("from_page", e->src);
            JI("slots", e->slot); JI("refs", e->refs); JI("free", e->n_free); JI("c0", e->c0); JI("c1", e->c1);
            break;
        case FS_EV_WRITE:
            JI("seq", e->seq); JI("pos", e->c0); JI("block", e->block); JI("page", e->page); JI("slot", e->slot);
            JI("refs", e->refs);
            break;
        case FS_EV_HOLD:
            jvec(f, "positions", tr, e->s_row, e->n_s);
            break;
        case FS_EV_SEND:
        case FS_EV_RECV:
            JI("from", e->a); JI("to", e->b);
            fprintf(f, ",\"bytes\":%lld,\"carries\":\"%s\"", (long long)e->bytes, ring_carries(e->tensor));
            break;
        case FS_EV_RMERGE:
            JI("row", e->row);
            jstate(f, e);
            jvec(f, "o_old", tr, e->o_old, e->n_o);
            jvec(f, "o_blk", tr, e->o_blk, e->n_o);
            jvec(f, "o_new", tr, e->o_new, e->n_o);
            break;
        default: break;
        }
        if (e->device >= 0) {   /* ring attention: where and when (rows, keys, tiles local to the step) */
            JI("device", e->device); JI("ring_step", e->ring_step); JI("shard", e->shard);
            if (e->pos >= 0) JI("pos", e->pos);
        }
        if (e->lowp) {   /* a low-precision run (--fp8): the scales, and on request the values */
            fputs(",\"lowp\":true", f);
            JF("q_scale", e->q_scale); JF("k_scale", e->k_scale); JF("v_scale", e->v_scale); JF("p_scale", e->p_scale);
            if (e->x_row >= 0) jvec(f, "q", tr, e->x_row, e->n_x);
            if (e->x8_row >= 0) jvec(f, "q8", tr, e->x8_row, e->n_x);
            if (e->p8_row >= 0) jvec(f, "p8", tr, e->p8_row, e->n_s);
            if (e->k_tile >= 0) jvec(f, "k", tr, e->k_tile, (e->c1 - e->c0) * e->n_x);
            if (e->k8_tile >= 0) jvec(f, "k8", tr, e->k8_tile, (e->c1 - e->c0) * e->n_x);
            if (e->v_tile >= 0) jvec(f, "v", tr, e->v_tile, (e->c1 - e->c0) * e->n_xv);
            if (e->v8_tile >= 0) jvec(f, "v8", tr, e->v8_tile, (e->c1 - e->c0) * e->n_xv);
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

/* A gradient row's update, three vectors of n numbers (offsets in tr's store):
 * "old + contribution -> updated". */
static void tvec_update(FILE *f, const fs_trace *tr, int64_t old, int64_t blk, int64_t updated, int32_t n,
                        int digits)
{
    tvec(f, tr, old, n, digits);
    fputs(" + ", f);
    tvec(f, tr, blk, n, digits);
    fputs(" -> ", f);
    tvec(f, tr, updated, n, digits);
}

/* One (Q tile, KV tile) pair of the forward (TILE, SKIP) or the backward (BTILE, BSKIP): its
 * rows and keys, then its class, or why it was skipped and a blank line. */
static void print_tile(FILE *f, const fs_trace *tr, const char *hd, const fs_event *e)
{
    const bool backward = e->kind == FS_EV_BTILE || e->kind == FS_EV_BSKIP;
    const bool skipped = e->kind == FS_EV_SKIP || e->kind == FS_EV_BSKIP;
    fprintf(f, "%s%sQ tile %d (rows %d-%d) x KV tile %d (keys %d-%d): ", hd, backward ? "backward: " : "", e->qt,
            e->r0, e->r1 - 1, e->kt, e->c0, e->c1 - 1);
    if (skipped) {
        fprintf(f, "skipped (%s)\n\n", fs_skip_reason_str(e->reason));
        return;
    }
    fprintf(f, "%s\n", fs_tile_class_str(e->cls));
    if (e->drop < 0) return;
    /* Dropout: the visible cells of this pair whose weight is dropped (the backward's are the
     * forward's, regenerated). */
    const double *v = fs_trace_at(tr, e->drop);
    fprintf(f, "  dropped (row, key):%s", e->n_drop ? "" : " none");
    for (int32_t k = 0; k < e->n_drop; k++) fprintf(f, " (%d, %d)", (int)v[2 * k], (int)v[2 * k + 1]);
    fputc('\n', f);
}

/* A ring shard's positions as ranges: "0-1, 14-15", or "3, 7, 11" (striped). */
static void print_positions(FILE *f, const double *v, int32_t n)
{
    for (int32_t k = 0; k < n;) {
        int32_t j = k;
        while (j + 1 < n && v[j + 1] == v[j] + 1) j++;
        if (j > k) fprintf(f, "%s%d-%d", k ? ", " : "", (int)v[k], (int)v[j]);
        else fprintf(f, "%s%d", k ? ", " : "", (int)v[k]);
        k = j + 1;
    }
}

/* Events of one kind come in runs; the table heads a run or ends it with a line of its own. */
static bool first_of_run(const fs_trace *tr, int64_t k)
{
    return k == 0 || tr->ev[k - 1].kind != tr->ev[k].kind;
}

static bool last_of_run(const fs_trace *tr, int64_t k)
{
    return k + 1 == tr->n || tr->ev[k + 1].kind != tr->ev[k].kind;
}

/* A row of S as the forward (ROW) and the backward (BROW) recompute it. */
static void print_scores(FILE *f, const fs_trace *tr, const fs_event *e, int digits)
{
    if (e->pos >= 0) fprintf(f, "  row %d (pos %d)  S = ", e->row, e->pos);
    else fprintf(f, "  row %d  S = ", e->row);
    tvec(f, tr, e->s_row, e->n_s, digits);
}

static void print_table(FILE *f, const fs_run *r, const fs_trace *tr, int digits)
{
    char b[8][48];   /* one buffer per number printed in a line */
    char rb[160];    /* the --fp8 recipe */
    const fs_attn *a = &r->attn;
    const int heads = r->algo != FS_ALGO_SOFTMAX && a->n_q_heads > 1;
    if (r->algo == FS_ALGO_SOFTMAX)
        fprintf(f, "online softmax of %d values, chunk %d\n\n", r->n_z, r->chunk);
    else
        fprintf(f, "%s attention: n_q=%d n_kv=%d d=%d d_v=%d heads=%d:%d scale=%s mask=%s\n",
                fs_algo_str(r->algo), a->n_q, a->n_kv, a->d, a->d_v, a->n_q_heads, a->n_kv_heads,
                num(b[0], a->scale, 6), a->mask.kind == FS_MASK_BITS && a->mask.is_tree ? "tree"
                                                                        : fs_mask_kind_str(a->mask.kind));
    if ((r->algo == FS_ALGO_TILED || r->algo == FS_ALGO_BACKWARD) && r->tiling.dropout.on)
        fprintf(f, "dropout p=%s seed=%llu: kept weights times 1/(1-p) = %s; l sums P before dropout\n",
                num(b[0], r->tiling.dropout.p, 6), (unsigned long long)r->tiling.dropout.seed,
                num(b[1], fs_dropout_keep_scale(r->tiling.dropout.p), 6));
    if (r->algo == FS_ALGO_RING)
        fprintf(f, "ring of %d devices, %s sharding%s: at ring step t device p holds KV shard (p - t) mod P; "
                   "rows, keys and tiles of a step are the device's own (pos: the position in the sequence)\n",
                r->ring.P, fs_sharding_str(r->ring.sharding), r->ring_backward ? ", backward (dK, dV travel with K, V)" : "");
    if (r->algo == FS_ALGO_BACKWARD || (r->algo == FS_ALGO_RING && r->ring_backward))
        fprintf(f, "Bq=%d Bk=%d order=%s dO=%s\n", r->tiling.Bq, r->tiling.Bk, fs_order_str(r->tiling.order),
                r->dO ? "given" : "1 (no --do: the gradient of sum(O))");
    if (r->algo == FS_ALGO_TILED)
        fprintf(f, "%s%s%s", r->lowp ? "low precision (--fp8): " : "",
                r->lowp ? fs_lowp_recipe_str(&r->recipe, rb, sizeof rb) : "", r->lowp ? ", float32 arithmetic\n" : "");
    if (r->algo == FS_ALGO_TILED || (r->algo == FS_ALGO_RING && !r->ring_backward))
        fprintf(f, "Bq=%d Bk=%d form=%s order=%s%s%s%s\n", r->tiling.Bq, r->tiling.Bk,
                fs_form_str(r->tiling.form), fs_order_str(r->tiling.order),
                r->tiling.exp2 ? " exp2 (m and s in base-2 units)" : "",
                r->tiling.pitfall ? " PITFALL: " : "", r->tiling.pitfall ? fs_pitfall_str(r->tiling.pitfall) : "");
    if (r->algo == FS_ALGO_DECODE)
        fprintf(f, "splits=%s %s=%d merge=%s partials=%s\n", fs_split_str(r->decoding.split),
                r->decoding.split == FS_SPLIT_STRIDED ? "parts" : "Bk",
                r->decoding.split == FS_SPLIT_STRIDED ? r->decoding.parts : r->decoding.Bk,
                fs_merge_str(r->decoding.merge), fs_form_str(r->decoding.form));
    if (r->algo == FS_ALGO_DECODE && r->page_size > 0) {
        fprintf(f, "paged KV cache: pages of %d positions, block table [", r->page_size);
        for (int32_t blk = 0; blk < r->n_table; blk++) fprintf(f, "%s%d", blk ? ", " : "", r->block_table[blk]);
        fputs("] (block -> page)\n", f);
    }
    if (r->algo != FS_ALGO_SOFTMAX) fputc('\n', f);

    for (int64_t k = 0; k < tr->n; k++) {
        const fs_event *e = &tr->ev[k];
        char hd[64] = "";
        if (heads) snprintf(hd, sizeof hd, "head %d (kv %d) ", e->head, e->kv_head);
        if (e->device >= 0 && e->kind != FS_EV_HOLD) {
            size_t used = strlen(hd);
            snprintf(hd + used, sizeof hd - used, "device %d: ", e->device);
        }
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
        case FS_EV_SKIP:
        case FS_EV_BTILE:
        case FS_EV_BSKIP:
            print_tile(f, tr, hd, e);
            if (e->lowp && e->kind == FS_EV_TILE)
                fprintf(f, "  scales: q %s  k %s  v %s  p %s (S descaled by scale * q * k; P * p before e4m3)\n",
                        num(b[0], e->q_scale, 8), num(b[1], e->k_scale, 8), num(b[2], e->v_scale, 8),
                        num(b[3], e->p_scale, digits));
            break;
        case FS_EV_ROW:
            print_scores(f, tr, e, digits);
            fprintf(f, "\n    m_blk = %s  l_blk = %s  m: %s -> %s  alpha = %s  beta = %s  l: %s -> %s\n",
                    num(b[0], e->m_blk, digits), num(b[1], e->l_blk, digits), num(b[2], e->m_old, digits),
                    num(b[3], e->m_new, digits), num(b[4], e->alpha, digits), num(b[5], e->beta, digits),
                    num(b[6], e->l_old, digits), num(b[7], e->l_new, digits));
            if (e->p8_row >= 0) {
                fputs("    P8 = ", f);
                tvec(f, tr, e->p8_row, e->n_s, digits);
                fputs("   q -> q8: ", f);
                tvec(f, tr, e->x_row, e->n_x, digits);
                fputs(" -> ", f);
                tvec(f, tr, e->x8_row, e->n_x, digits);
                fputc('\n', f);
            }
            fprintf(f, "    o%s: ", e->normalized ? "" : " (unnormalized)");
            tvec(f, tr, e->o_old, e->n_o, digits);
            fprintf(f, " -> ");
            tvec(f, tr, e->o_new, e->n_o, digits);
            fputc('\n', f);
            if (last_of_run(tr, k)) fputc('\n', f);
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
            else if (first_of_run(tr, k)) fprintf(f, "output:\n");
            if (r->algo == FS_ALGO_SOFTMAX) {
                fprintf(f, "  m = %s  l = %s\n  softmax = ", num(b[0], e->m_new, digits), num(b[1], e->l_new, digits));
            } else {
                fprintf(f, "  %sO[%d] = ", hd, e->row);
            }
            tvec(f, tr, e->o_new, e->n_o, digits);
            if (r->algo != FS_ALGO_SOFTMAX)
                fprintf(f, "   m = %s  l = %s", num(b[0], e->m_new, digits), num(b[1], e->l_new, digits));
            fputs(r->algo == FS_ALGO_DECODE ? "\n\n" : "\n", f);
            /* Q tiles outside: a Q tile's output rows, and more tiles to come */
            if (r->algo != FS_ALGO_DECODE && k + 1 < tr->n && last_of_run(tr, k)) fputc('\n', f);
            break;
        case FS_EV_LSE:
            if (first_of_run(tr, k)) fprintf(f, "kept from the forward pass: L = m + ln l\n");
            fprintf(f, "  %sL[%d] = %s\n", hd, e->row, num(b[0], e->x, digits));
            break;
        case FS_EV_DELTA:
            if (first_of_run(tr, k)) fprintf(f, "\nD = rowsum(dO * O)\n");
            fprintf(f, "  %sD[%d] = ", hd, e->row);
            tvec(f, tr, e->o_blk, e->n_o, digits);
            fputs(" . ", f);
            tvec(f, tr, e->o_new, e->n_o, digits);
            fprintf(f, " = %s\n", num(b[0], e->x, digits));
            if (k + 1 < tr->n && last_of_run(tr, k)) fputc('\n', f);   /* none after the trace's end */
            break;
        case FS_EV_BROW:
            print_scores(f, tr, e, digits);
            fprintf(f, "\n    P = exp(S - %s) = ", num(b[0], e->x, digits));
            tvec(f, tr, e->p_row, e->n_s, digits);
            fprintf(f, "\n    dP = %s = ", r->tiling.dropout.on ? "Z * dO V^T / (1-p)" : "dO V^T");
            tvec(f, tr, e->dp_row, e->n_s, digits);
            fprintf(f, "   dS = P * (dP - %s) = ", num(b[0], e->m_new, digits));
            tvec(f, tr, e->ds_row, e->n_s, digits);
            fprintf(f, "\n    dQ: ");
            tvec_update(f, tr, e->o_old, e->o_blk, e->o_new, e->n_o, digits);
            fputc('\n', f);
            break;
        case FS_EV_BKEY:
            if (e->pos >= 0) fprintf(f, "  key %d (pos %d)  dK: ", e->row, e->pos);
            else fprintf(f, "  key %d  dK: ", e->row);
            tvec_update(f, tr, e->o_old, e->o_blk, e->o_new, e->n_o, digits);
            fprintf(f, "   dV: ");
            tvec_update(f, tr, e->g_old, e->g_blk, e->g_new, e->n_g, digits);
            fputc('\n', f);
            if (last_of_run(tr, k)) fputc('\n', f);
            break;
        case FS_EV_GRAD:
            if (first_of_run(tr, k) || tr->ev[k - 1].tensor != e->tensor)
                fprintf(f, "%s:\n", fs_grad_str(e->tensor));
            if (heads) fprintf(f, "  %s %d", e->tensor == FS_GRAD_DQ ? "head" : "kv head", e->head);
            fprintf(f, "  %s[%d] = ", fs_grad_str(e->tensor), e->row);
            tvec(f, tr, e->o_new, e->n_o, digits);
            fputc('\n', f);
            break;
        case FS_EV_LOOKUP:
            fprintf(f, "%srow %d split %d: block table of sequence %d: block %d -> page %d (%s)\n", hd, e->row, e->kt,
                    e->seq, e->block, e->page, fs_event_keys(e, b[0], sizeof b[0]));
            break;
        case FS_EV_ALLOC:
            fprintf(f, "sequence %d: block %d takes free page %d (free pages left: %d)\n", e->seq, e->block, e->page,
                    e->n_free);
            break;
        case FS_EV_SHARE:
            fprintf(f, "sequence %d shares block %d (page %d, positions %d-%d) with sequence %d: %d sequences hold it\n",
                    e->seq, e->block, e->page, e->c0, e->c1 - 1, e->src, e->refs);
            break;
        case FS_EV_COW:
            fprintf(f, "sequence %d writes into shared page %d: copy on write of its %d slots to page %d (block %d); "
                       "%d sequences keep page %d\n",
                    e->seq, e->src, e->slot, e->page, e->block, e->refs, e->src);
            break;
        case FS_EV_WRITE:
            fprintf(f, "sequence %d: position %d -> page %d slot %d (block %d)\n", e->seq, e->c0, e->page, e->slot,
                    e->block);
            if (last_of_run(tr, k)) fputc('\n', f);
            break;
        case FS_EV_HOLD:
            fprintf(f, "ring step %d, device %d holds KV shard %d: positions ", e->ring_step, e->device, e->shard);
            print_positions(f, fs_trace_at(tr, e->s_row), e->n_s);
            fputc('\n', f);
            break;
        case FS_EV_SEND:
            if (first_of_run(tr, k)) fprintf(f, "after ring step %d:\n", e->ring_step);
            fprintf(f, "  device %d sends shard %d to device %d (%s, %lld bytes in float64)\n", e->a, e->shard, e->b,
                    ring_carries(e->tensor), (long long)e->bytes);
            break;
        case FS_EV_RECV:
            fprintf(f, "  device %d receives shard %d from device %d\n", e->b, e->shard, e->a);
            if (last_of_run(tr, k)) fputc('\n', f);
            break;
        case FS_EV_RMERGE:
            fprintf(f, "%srow %d merges shard %d: m = max(%s, %s) = %s  alpha = %s  beta = %s\n", hd, e->row, e->shard,
                    num(b[0], e->m_old, digits), num(b[1], e->m_blk, digits), num(b[2], e->m_new, digits),
                    num(b[3], e->alpha, digits), num(b[4], e->beta, digits));
            fprintf(f, "    l = %s * %s + %s * %s = %s\n    o: ", num(b[0], e->alpha, digits), num(b[1], e->l_old, digits),
                    num(b[2], e->beta, digits), num(b[3], e->l_blk, digits), num(b[4], e->l_new, digits));
            tvec(f, tr, e->o_old, e->n_o, digits);
            fputs(" with ", f);
            tvec(f, tr, e->o_blk, e->n_o, digits);
            fputs(" -> ", f);
            tvec(f, tr, e->o_new, e->n_o, digits);
            fputc('\n', f);
            if (last_of_run(tr, k)) fputc('\n', f);
            break;
        default: break;
        }
    }
}

/* Ring attention's work table (fs_ring_work): per device, the tile pairs it visits at each ring
 * step (skipped ones after a slash) and its load, the visited pairs of all steps; then the
 * visible (query, key) pairs of one head, the same per step and in all. */
static void print_ring_work(FILE *f, const fs_run *r)
{
    fs_ring g = r->ring;
    g.tiling = r->tiling;
    const int32_t P = g.P;
    int64_t *vis = malloc(sizeof(int64_t) * P * P), *skip = malloc(sizeof(int64_t) * P * P),
            *pairs = malloc(sizeof(int64_t) * P * P);
    if (vis && skip && pairs && fs_ring_work(&r->attn, &g, vis, skip, pairs) == FS_OK) {
        fprintf(f, "\nwork per device and ring step (one head): tile pairs visited/skipped, then visible (query, key) pairs\n");
        for (int32_t p = 0; p < P; p++) {
            int64_t load = 0, pl = 0;
            fprintf(f, "  device %d: tiles", p);
            for (int32_t t = 0; t < P; t++) {
                fprintf(f, " %lld/%lld", (long long)vis[p * P + t], (long long)skip[p * P + t]);
                load += vis[p * P + t];
                pl += pairs[p * P + t];
            }
            fprintf(f, "  load %lld   pairs", (long long)load);
            for (int32_t t = 0; t < P; t++) fprintf(f, " %lld", (long long)pairs[p * P + t]);
            fprintf(f, "  load %lld\n", (long long)pl);
        }
    }
    free(vis);
    free(skip);
    free(pairs);
}

/* ---- main ---- */

int cli_trace(int argc, char **argv)
{
    cli_problem p;
    cli_problem_init(&p, "trace");
    int jsonl = 0, digits = 4, cuda = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int r = cli_problem_option(&p, argc, argv, &i);
        if (r == 2) return 2;
        if (r == 1) continue;
#define NEED() do { if (!val) return cli_fail("trace", "%s needs a value", a); i++; } while (0)
        long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_head, stdout);
            fputs(cli_problem_help, stdout);
            fputs(usage_tail, stdout);
            return 0;
        } else if (!strcmp(a, "--format")) {
            NEED();
            if (!strcmp(val, "jsonl")) jsonl = 1;
            else if (!strcmp(val, "table")) jsonl = 0;
            else return cli_fail("trace", "--format is table or jsonl, not '%s'", val);
        } else if (!strcmp(a, "--digits")) {
            NEED();
            if (!cli_parse_int(val, 0, 17, &n)) return cli_fail("trace", "--digits must be 0 to 17, not '%s'", val);
            digits = (int)n;
        } else if (!strcmp(a, "--backend")) {
            NEED();
            if (!strcmp(val, "cuda")) cuda = 1;
            else if (!strcmp(val, "engine")) cuda = 0;
            else return cli_fail("trace", "--backend is engine or cuda, not '%s'", val);
        } else {
            return cli_fail("trace", "unknown option '%s'", a);
        }
#undef NEED
    }
    fs_trace tr;
    fs_trace_init(&tr);
    fs_result res = {0};
    int rc = 2;
    rc = cli_problem_load(&p);
    if (rc) goto out;
    rc = 2;
    fs_run *r = &p.run;
    tr.max_events = CLI_MAX_TRACE_EVENTS;
    fs_status st;
    if (cuda) {
        char why[256] = "";
        if (r->algo != FS_ALGO_TILED && r->algo != FS_ALGO_QUERY && r->algo != FS_ALGO_BACKWARD) {
            cli_fail("trace", "%s", "--backend cuda runs the tiled algorithm, --query and --backward only");
            goto out;
        }
        if (r->tiling.dropout.on && r->algo != FS_ALGO_BACKWARD) {
            cli_fail("trace", "%s",
                     "--backend cuda has no dropout in the traced forward (the engine's tiled forward has: drop "
                     "--backend; --backward --backend cuda takes --dropout)");
            goto out;
        }
        if (r->lowp) {
            cli_fail("trace", "%s", "--backend cuda has no low-precision (--fp8) forward: the engine runs it (drop --backend)");
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
    if (jsonl) cli_trace_jsonl(stdout, &tr);
    else print_table(stdout, r, &tr, digits);
    if (!jsonl && r->algo == FS_ALGO_RING) print_ring_work(stdout, r);
    rc = fflush(stdout) == 0 ? 0 : 2;
out:
    fs_result_free(&res);
    fs_trace_free(&tr);
    cli_problem_free(&p);
    return rc;
}

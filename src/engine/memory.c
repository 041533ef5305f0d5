/* memory.c: the memory/traffic model of memory.h (sizes only, no matrices).
 *
 * The tiled counts walk every (Q tile, KV tile) pair of one head and ask the mask for its
 * class, exactly as fs_tiled does before computing, so skipped pairs are counted as moving
 * nothing. Heads only multiply (every head sees the same mask).
 */
#include "memory.h"

#include <string.h>

#define FS_MEM_MAX_PAIRS (1LL << 28)

fs_mem_problem fs_mem_problem_make(int32_t n_q, int32_t n_kv, int32_t d, int32_t d_v)
{
    fs_mem_problem p;
    memset(&p, 0, sizeof p);
    p.n_q_heads = p.n_kv_heads = 1;
    p.n_q = n_q;
    p.n_kv = n_kv;
    p.d = d;
    p.d_v = d_v;
    p.Bq = p.Bk = 32;
    p.in_bytes = 2;
    p.mat_bytes = 4;
    p.acc_bytes = 4;
    p.mask.kind = FS_MASK_NONE;
    return p;
}

fs_status fs_mem_model(const fs_mem_problem *p, fs_mem_report *r)
{
    memset(r, 0, sizeof *r);
    if (p->n_q < 1 || p->n_kv < 1 || p->d < 1 || p->d_v < 1 || p->n_q_heads < 1 ||
        p->n_kv_heads < 1 || p->n_q_heads % p->n_kv_heads != 0 || p->in_bytes < 1 ||
        p->mat_bytes < 1 || p->acc_bytes < 1 || p->n_q > FS_MAX_DIM || p->n_kv > FS_MAX_DIM ||
        p->d > FS_MAX_HEAD || p->d_v > FS_MAX_HEAD || p->n_q_heads > FS_MAX_HEADS)
        return FS_ERR_SHAPE;
    if (p->Bq < 1 || p->Bk < 1) return FS_ERR_TILE;
    if (p->mask.kind == FS_MASK_WINDOW && p->mask.window < 1) return FS_ERR_MASK;
    if (p->mask.kind == FS_MASK_BITS &&
        (!p->mask.bits || p->mask.words_per_row < fs_mask_words(p->n_kv)))
        return FS_ERR_MASK;

    const int64_t H = p->n_q_heads, nq = p->n_q, nkv = p->n_kv, d = p->d, dv = p->d_v;
    const int64_t Bq = p->Bq < p->n_q ? p->Bq : p->n_q;
    const int64_t Bk = p->Bk < p->n_kv ? p->Bk : p->n_kv;
    r->q_tiles = (nq + p->Bq - 1) / p->Bq;
    r->kv_tiles = (nkv + p->Bk - 1) / p->Bk;
    if (r->q_tiles * r->kv_tiles > FS_MEM_MAX_PAIRS) return FS_ERR_SHAPE;

    /* Materializing: S and P of every query head, each written once and read once. */
    r->s_bytes = H * nq * nkv * p->mat_bytes;
    r->sp_bytes = 2 * r->s_bytes;
    r->mat_traffic = 4 * r->s_bytes;
    r->io_bytes = (H * nq * d + p->n_kv_heads * nkv * (d + dv) + H * nq * dv) * p->in_bytes;
    r->mat_flops = 2 * H * nq * nkv * (d + dv);

    /* Tiled: one threadgroup's on-chip footprint (tiles clamped to the problem). */
    r->sram_bytes = (Bq * d + Bk * d + Bk * dv) * p->in_bytes + Bq * Bk * p->acc_bytes;
    r->reg_bytes = (2 * Bq + Bq * dv) * p->acc_bytes;
    r->state_bytes = 2 * H * nq * p->acc_bytes;

    int64_t kv_traffic = 0, flops = 0, full = 0, partial = 0, skipped = 0;
    for (int64_t qt = 0; qt < r->q_tiles; qt++) {
        int32_t r0 = (int32_t)(qt * p->Bq), r1 = (int32_t)(r0 + p->Bq < nq ? r0 + p->Bq : nq);
        for (int64_t kt = 0; kt < r->kv_tiles; kt++) {
            int32_t c0 = (int32_t)(kt * p->Bk), c1 = (int32_t)(c0 + p->Bk < nkv ? c0 + p->Bk : nkv);
            fs_tile_class c = fs_mask_classify(&p->mask, p->n_q, p->n_kv, r0, r1, c0, c1, NULL);
            if (c == FS_TILE_SKIPPED) {
                skipped++;
                continue;
            }
            if (c == FS_TILE_FULL) full++;
            else partial++;
            kv_traffic += (int64_t)(c1 - c0) * (d + dv) * p->in_bytes;
            flops += 2 * (int64_t)(r1 - r0) * (c1 - c0) * (d + dv);
        }
    }
    r->tiles_full = full * H;
    r->tiles_partial = partial * H;
    r->tiles_skipped = skipped * H;
    r->tiled_traffic = H * (nq * d * p->in_bytes + kv_traffic + nq * dv * p->in_bytes);
    r->tiled_flops = H * flops;
    return FS_OK;
}

double fs_mem_s_bytes(double n_q, double n_kv, double heads, double elem)
{
    return n_q * n_kv * heads * elem;
}

double fs_mem_sp_bytes(double n_q, double n_kv, double heads, double elem)
{
    return 2 * fs_mem_s_bytes(n_q, n_kv, heads, elem);
}

double fs_mem_stats_bytes(double n_q, double heads, double per_row, double elem)
{
    return n_q * heads * per_row * elem;
}

double fs_mem_mat_traffic(double n_q, double n_kv, double heads, double elem)
{
    return 4 * fs_mem_s_bytes(n_q, n_kv, heads, elem);
}

double fs_mem_tile_sram(double Bq, double Bk, double d, double in_bytes, double acc_bytes)
{
    return (Bq * d + 2 * Bk * d) * in_bytes + Bq * Bk * acc_bytes;
}

double fs_mem_tile_flops(double Bq, double Bk, double d)
{
    return 2 * Bq * Bk * d + 2 * Bq * Bk * d;
}

double fs_mem_kv_bytes(double n, double d, double heads, double in_bytes)
{
    return 2 * n * d * heads * in_bytes;
}

fs_status fs_mem_paged_model(int32_t n, const int32_t *len, int32_t shared, int32_t max_len, int32_t page_size,
                             fs_mem_paged *r)
{
    memset(r, 0, sizeof *r);
    if (n < 1 || page_size < 1 || shared < 0 || max_len < 1 || max_len > FS_MAX_DIM || shared > max_len)
        return FS_ERR_SHAPE;
    const int64_t ps = page_size;
    const int64_t prompt_blocks = (shared + ps - 1) / ps, full = shared / ps;
    int64_t writers = 0, own = 0;
    for (int32_t s = 0; s < n; s++) {
        if (len[s] < shared || len[s] > max_len) return FS_ERR_SHAPE;
        r->filled += len[s];
        r->unique += len[s] - shared;
        writers += len[s] > shared;
        own += (len[s] + ps - 1) / ps - prompt_blocks;   /* blocks after the prompt's */
    }
    r->reserved = (int64_t)n * max_len;
    r->unique += shared;
    /* The prompt's partly filled page: each writer but the last copies it; the original stays
     * with the last writer and with every sequence that never wrote past the prompt. */
    int64_t tail = shared % ps, copies = 0, tail_pages = 0;
    if (tail) {
        copies = writers == n ? n - 1 : writers;
        tail_pages = copies + 1;
    }
    r->pages = full + tail_pages + own;
    r->slots = r->pages * ps;
    r->copied = copies * tail;
    r->empty = r->slots - r->unique - r->copied;
    r->shared_pages = (n > 1 ? full : 0) + (tail && n - copies > 1 ? 1 : 0);
    return FS_OK;
}

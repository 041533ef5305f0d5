/* paged.h: the paged KV cache (PagedAttention, vLLM's layout), and decode and prefill through it.
 *
 * A contiguous cache gives each sequence one array of K and V rows sized for the longest length
 * it may reach. A paged cache cuts every sequence into logical blocks of page_size positions and
 * keeps them in one pool of fixed-size physical pages that all sequences share:
 *
 *     K pool is (n_pages, page_size, n_kv_heads, d)      pool[page, slot, kv_head, d]
 *     V pool is (n_pages, page_size, n_kv_heads, d_v)
 *
 * Each sequence has a block table: logical block b (positions b·page_size … b·page_size +
 * page_size − 1) lives in physical page table[b], so position j of the sequence is
 *
 *     page = table[j / page_size],  slot = j % page_size.
 *
 * Appending a token writes slot n % page_size of the last page, and takes a free page first when
 * that page is full (or the sequence has none). Sequences forked from one another (a shared
 * prompt, beams, parallel samples) share the pages of the common prefix: each page counts the
 * sequences whose table holds it, and a sequence about to write into a page that another one
 * also holds copies it into a free page first (copy-on-write), so the other's K and V never
 * change under it. Only the last page of a sequence is ever written, so at most that one is
 * copied, and the memory a sequence wastes is at most one partly filled page.
 *
 * Decode and prefill over a cached prefix read K and V through the table (fs_decode_read), and
 * give bit-for-bit the contiguous run's results on the same numbers. Every lookup, allocation,
 * share, copy and write is a trace event (trace.h), beside the decode's split and merge events.
 */
#ifndef FS_PAGED_H
#define FS_PAGED_H

#include <stdint.h>

#include "attn.h"
#include "decode.h"
#include "status.h"
#include "trace.h"

#define FS_PAGED_MAX_PAGES (1 << 20)
#define FS_PAGED_MAX_SEQS  4096

typedef struct {
    int32_t n_tokens;        /* positions written */
    int32_t n_blocks;        /* logical blocks in use: ceil(n_tokens / page_size) */
    int32_t cap_blocks;
    int32_t *table;          /* (n_blocks) physical page of each logical block */
    int32_t live;            /* 1 while the sequence exists, 0 once released */
} fs_paged_seq;

typedef struct {
    int32_t page_size;       /* positions per page (slots), ≥ 1 */
    int32_t n_pages;         /* pages in the pool */
    int32_t n_kv_heads, d, d_v;
    double *K, *V;           /* the pools, laid out as above */
    int32_t *refs;           /* (n_pages) how many tables hold each page; 0 = free */
    int32_t *fill;           /* (n_pages) slots written in each page */
    int32_t *free_pages;     /* (n_pages) the free pages, handed out from the front */
    int32_t n_free, free_head;
    fs_paged_seq *seq;
    int32_t n_seqs, cap_seqs;
} fs_paged_cache;

/* An empty cache of n_pages pages. order (may be NULL: 0, 1, 2, …) is the order in which free
 * pages are handed out, a permutation of 0 … n_pages − 1: a shuffled order interleaves the
 * pages of sequences that grow together, as a real allocator does after some churn; a given
 * order lets one sequence's table be any permutation (the command line's --block-table).
 * FS_ERR_SHAPE on bad sizes, FS_ERR_ARG when order is not a permutation. */
fs_status fs_paged_init(fs_paged_cache *c, int32_t page_size, int32_t n_pages, int32_t n_kv_heads, int32_t d,
                        int32_t d_v, const int32_t *order);
void fs_paged_free(fs_paged_cache *c);

/* A new empty sequence; its id in *seq. */
fs_status fs_paged_add(fs_paged_cache *c, int32_t *seq);

/* A new sequence sharing every page of parent (same positions, no copy): one SHARE event per
 * block. Its id in *seq. */
fs_status fs_paged_fork(fs_paged_cache *c, int32_t parent, int32_t *seq, fs_trace *tr);

/* Append one position to seq: k is (n_kv_heads, d), v is (n_kv_heads, d_v). An ALLOC event when
 * a page is taken, a COW event when the last page was shared and is copied first, then one
 * WRITE event. FS_ERR_LIMIT when no page is free (the cache is unchanged then). */
fs_status fs_paged_append(fs_paged_cache *c, int32_t seq, const double *k, const double *v, fs_trace *tr);

/* Append n positions: K is (n_kv_heads, n, d) and V (n_kv_heads, n, d_v), the engine's
 * contiguous layout (attn.h), from position 0 … n − 1 of those arrays. */
fs_status fs_paged_append_rows(fs_paged_cache *c, int32_t seq, const double *K, const double *V, int32_t n,
                               fs_trace *tr);

/* Release seq: its pages' counts drop, pages no longer held return to the free list. */
void fs_paged_release(fs_paged_cache *c, int32_t seq);

/* K (d numbers) and V (d_v numbers) of position j of seq for a KV head, through the table. */
const double *fs_paged_key(const fs_paged_cache *c, int32_t seq, int32_t kv_head, int32_t j);
const double *fs_paged_value(const fs_paged_cache *c, int32_t seq, int32_t kv_head, int32_t j);

/* The sequence laid out contiguously: K (n_kv_heads, n_tokens, d), V (n_kv_heads, n_tokens,
 * d_v). What a contiguous cache would hold; the tests and the checks compare against it. */
void fs_paged_gather(const fs_paged_cache *c, int32_t seq, double *K, double *V);

/* Decode through the table: a holds the queries, heads, scale, soft-cap and mask; its n_kv is
 * seq's length and its K and V are not read (NULL is fine). Exactly fs_decode's events and
 * numbers on the gathered K and V, with one LOOKUP event (sequence, logical block → page) before
 * each partial for every block whose keys the split reads. The values are checked as fs_decode
 * checks them (on a gathered copy, used for the check only). */
fs_status fs_paged_decode(const fs_paged_cache *c, int32_t seq, const fs_attn *a, const fs_decoding *dc,
                          double *O, double *m_out, double *l_out, fs_trace *tr);

/* fs_paged_decode with the cache stored in low precision (decode.h's fs_decode_kv): kv->page_size
 * is 0 (e4m3: scales per KV head) or the cache's page size (one pair of scales per page and KV
 * head, vLLM's layout with per-page scales); FS_ERR_ARG otherwise. The same LOOKUP events. */
fs_status fs_paged_decode_kv(const fs_paged_cache *c, int32_t seq, const fs_attn *a, const fs_decoding *dc,
                             const fs_kv_store *kv, double *O, double *m_out, double *l_out, fs_trace *tr);

/* Prefill over a cached prefix: append the n_q new positions (a->K and a->V hold their K and V,
 * (n_kv_heads, n_q, d) and (…, d_v)) to seq, which holds the prefix, then attend the n_q new
 * queries to the whole sequence through the table, with a's mask (offset n_kv − n_q: the new
 * queries are the newest positions; causal is the usual choice), one split per page as paged
 * prefill kernels walk the table. a->n_kv must be the prefix plus n_q. */
fs_status fs_paged_prefill(fs_paged_cache *c, int32_t seq, const fs_attn *a, fs_form form, double *O,
                           double *m_out, double *l_out, fs_trace *tr);

/* The contiguous problem a (K, V of n_kv positions) appended to one sequence of a fresh pool
 * whose block b lives in page table[b] (table: n_table = ceil(n_kv / page_size) distinct pages
 * ≥ 0; the pool has max(table) + 1 pages; NULL: pages 0, 1, 2, …), then decoded through the
 * table: the ALLOC and WRITE events of the filling, then fs_paged_decode's. O, m, ℓ are
 * bit-for-bit fs_decode's on a. FS_ERR_ARG for a table that does not fit (length, a repeated or
 * negative page, a page ≥ FS_PAGED_MAX_PAGES); a with given scores (no K) is FS_ERR_ARG too. */
fs_status fs_paged_decode_table(const fs_attn *a, const fs_decoding *dc, int32_t page_size, const int32_t *table,
                                int32_t n_table, double *O, double *m_out, double *l_out, fs_trace *tr);

/* Pages held by at least one sequence. */
int32_t fs_paged_pages_used(const fs_paged_cache *c);

#endif

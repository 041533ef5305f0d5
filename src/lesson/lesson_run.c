/* lesson_run.c: a lesson's header keys become an fs_run, which runs on the engine.
 *
 * Checks what only the whole header can tell (a matrix the algorithm does not read, shapes that
 * disagree, a problem too large), bounds the trace, and for a pitfall lesson runs the correct
 * algorithm on the same problem beside it.
 */
#include "lesson_parse.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- building and running --------------------------------------------------------------- */

static double *keep_matrix(fs_lesson *l, mat_t *M)
{
    double *d = M->m.data;
    M->m.data = NULL;
    return lp_keep(l, d);
}

bool lp_build_and_run(parse_t *P)
{
    fs_lesson *l = P->l;
    fs_loc_error *err = P->err;
    int32_t aline = P->key_line[K_ALGO];
    if (P->algo < 0) {
        static const int mats[] = {K_Z, K_Q, K_K, K_V, K_S, K_TREE, K_DO};
        for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++)
            if (P->seen[mats[k]])
                return fs_loc_error_set(err, P->name, P->key_line[mats[k]], 1,
                               "'%s:' is not used with algo: none (a claims-only lesson)", lp_key_names[mats[k]]);
        if (!P->scene_set) l->scene = FS_SCENE_CLAIMS;
        return true;
    }
    if (P->seen[K_QUIZ] && P->n_ex == 0 && !P->variation)   /* quiz: on a lesson that runs: its claims are its subject */
        return fs_loc_error_set(err, P->name, P->key_line[K_QUIZ], 1, "'quiz:' on a lesson that runs names the kind of its "
                                "claims, and this lesson has no 'expect' lines; without it, it is quizzed on fresh runs of itself");
    fs_run *r = &l->run;
    *r = fs_run_make((fs_algo)P->algo);
    if (P->algo == FS_ALGO_SOFTMAX) {
        if (!P->z.set) return fs_loc_error_set(err, P->name, aline, 1, "algo: softmax needs 'z:'");
        r->n_z = P->z.m.rows * P->z.m.cols;
        r->z = l->z = keep_matrix(l, &P->z);
        r->chunk = P->chunk ? P->chunk : 1;
        if (!r->z) return fs_loc_error_set(err, P->name, aline, 1, "out of memory");
        if (!P->scene_set) l->scene = FS_SCENE_SOFTMAX;
    } else {
        if (P->z.set) return fs_loc_error_set(err, P->name, P->z.line, 1, "'z:' belongs to algo: softmax");
        if (!P->V.set && !P->S.set) return fs_loc_error_set(err, P->name, aline, 1, "this algo needs 'V:'");
        if (!P->S.set && (!P->Q.set || !P->K.set))
            return fs_loc_error_set(err, P->name, aline, 1, "algo needs 'Q:' and 'K:' (or the scores 'S:')");
        if (P->S.set && (P->Q.set || P->K.set))
            return fs_loc_error_set(err, P->name, P->S.line, 1, "give either the scores 'S:' or 'Q:' and 'K:', not both");
        int32_t hq = P->n_qh ? P->n_qh : 1, hkv = P->n_kvh ? P->n_kvh : 1;
        fs_attn *a = &r->attn;
        int32_t nq, nkv, d;
        if (P->S.set) {
            if (P->S.m.rows % hq)
                return fs_loc_error_set(err, P->name, P->S.line, 1, "S has %d rows, not a multiple of %d heads",
                               P->S.m.rows, hq);
            nq = P->S.m.rows / hq;
            nkv = P->S.m.cols;
            d = 1;
        } else {
            if (P->Q.m.rows % hq)
                return fs_loc_error_set(err, P->name, P->Q.line, 1, "Q has %d rows, not a multiple of %d query heads",
                               P->Q.m.rows, hq);
            if (P->K.m.rows % hkv)
                return fs_loc_error_set(err, P->name, P->K.line, 1, "K has %d rows, not a multiple of %d KV heads",
                               P->K.m.rows, hkv);
            if (P->Q.m.cols != P->K.m.cols)
                return fs_loc_error_set(err, P->name, P->K.line, 1, "K has %d columns but Q has %d (both are d)",
                               P->K.m.cols, P->Q.m.cols);
            nq = P->Q.m.rows / hq;
            nkv = P->K.m.rows / hkv;
            d = P->Q.m.cols;
        }
        if (!P->V.set) {
            /* Scores given and no V: V = identity per KV head, so that O = P (001's walk). */
            if ((long long)hkv * nkv * nkv > FS_LESSON_MAX_ELEMS)
                return fs_loc_error_set(err, P->name, P->S.line, 1, "too many keys for an identity V; give 'V:'");
            P->V.m.rows = hkv * nkv;
            P->V.m.cols = nkv;
            P->V.m.data = calloc((size_t)hkv * nkv * nkv, sizeof(double));
            if (!P->V.m.data) return fs_loc_error_set(err, P->name, aline, 1, "out of memory");
            for (int32_t h = 0; h < hkv; h++)
                for (int32_t j = 0; j < nkv; j++) P->V.m.data[((size_t)h * nkv + j) * nkv + j] = 1.0;
            P->V.line = P->S.line;
        }
        if (P->V.m.rows != nkv * hkv)
            return fs_loc_error_set(err, P->name, P->V.line, 1, "V has %d rows, expected %d (one per key%s)",
                           P->V.m.rows, nkv * hkv, hkv > 1 ? " and KV head" : "");
        if ((long long)hq * nq * nkv > FS_LESSON_MAX_SCORES)
            return fs_loc_error_set(err, P->name, aline, 1, "problem too large for a lesson (%d heads × %d × %d scores)",
                           hq, nq, nkv);
        *a = fs_attn_make(nq, nkv, d, P->V.m.cols);
        a->n_q_heads = hq;
        a->n_kv_heads = hkv;
        if (P->S.set) a->S = l->S = keep_matrix(l, &P->S);
        else {
            a->Q = l->Q = keep_matrix(l, &P->Q);
            a->K = l->K = keep_matrix(l, &P->K);
        }
        a->V = l->V = keep_matrix(l, &P->V);
        a->scale = P->scale_set ? P->scale : (P->S.set ? 1.0 : fs_attn_default_scale(d));
        a->softcap = P->softcap;
        a->mask.kind = P->mask;
        a->mask.window = P->window;
        a->mask.has_offset = P->offset_set;
        a->mask.offset = P->offset;
        if (l->parent || P->mask == FS_MASK_BITS) {
            int32_t tl = P->seen[K_TREE] ? P->key_line[K_TREE] : P->key_line[K_MASK];
            if (!l->parent) return fs_loc_error_set(err, P->name, tl, 1, "mask: tree needs 'tree:' (the parent array)");
            if (l->n_parent != nq || nq != nkv)
                return fs_loc_error_set(err, P->name, tl, 1,
                               "the tree has %d positions but there are %d queries and %d keys (all must agree)",
                               l->n_parent, nq, nkv);
            int32_t words = fs_mask_words(nq);
            l->bits = lp_keep(l, calloc((size_t)nq * (size_t)words, sizeof(uint64_t)));
            if (!l->bits) return fs_loc_error_set(err, P->name, tl, 1, "out of memory");
            int32_t bad = -1;
            fs_status st = fs_mask_tree_build(l->parent, nq, l->bits, &bad);
            if (st != FS_OK)
                return fs_loc_error_set(err, P->name, P->key_line[K_TREE], P->key_col[K_TREE],
                               "not a tree: %s at position %d (one root -1, parents in range, no cycles)",
                               fs_status_str(st), bad);
            fs_mask tm = fs_mask_tree(l->bits, nq);
            tm.has_offset = true;
            tm.offset = 0;
            a->mask = tm;
        }
        /* Keys that one algorithm reads and another would silently ignore. */
        static const struct { int key; fs_algo algo; } only[] = {
            {K_BQ, FS_ALGO_TILED},      {K_ORDER, FS_ALGO_TILED}, {K_PITFALL, FS_ALGO_TILED},
            {K_SPLIT, FS_ALGO_DECODE},  {K_PARTS, FS_ALGO_DECODE}, {K_MERGE, FS_ALGO_DECODE},
            {K_DO, FS_ALGO_BACKWARD},   {K_FORM, FS_ALGO_COUNT},  {K_EXP2, FS_ALGO_COUNT},
            {K_FP8, FS_ALGO_TILED}, {K_DROPOUT, FS_ALGO_TILED}, {K_SEED, FS_ALGO_TILED},
            {K_DEVICES, FS_ALGO_RING}, {K_SHARDING, FS_ALGO_RING}, {K_PAGES, FS_ALGO_DECODE}, {K_TABLE, FS_ALGO_DECODE}};
        int first = -1;   /* the misplaced key nearest the top of the file */
        for (int k = 0; k < (int)(sizeof only / sizeof only[0]); k++) {
            /* the backward reads the tiles and the order, but not the forward's form or exp2 */
            bool backward_reads = only[k].key == K_BQ || only[k].key == K_ORDER || only[k].key == K_DROPOUT ||
                                  only[k].key == K_SEED;
            /* the ring reads the tiles, the order and the form (dO for its backward), no exp2 */
            bool ring_reads = only[k].key == K_BQ || only[k].key == K_ORDER ||
                              (only[k].key == K_FORM && !P->ring_backward) || (only[k].key == K_DO && P->ring_backward);
            bool backward = P->algo == FS_ALGO_BACKWARD || P->ring_backward;
            bool applies = P->algo == FS_ALGO_RING ? ring_reads || only[k].algo == FS_ALGO_RING
                           : only[k].algo == FS_ALGO_COUNT ? !backward
                                                           : P->algo == (int)only[k].algo ||
                                                                 (backward_reads && P->algo == FS_ALGO_BACKWARD);
            if (P->seen[only[k].key] && !applies &&
                (first < 0 || P->key_line[only[k].key] < P->key_line[only[first].key]))
                first = k;
        }
        if (first >= 0 && P->algo == FS_ALGO_RING)
            return fs_loc_error_set(err, P->name, P->key_line[only[first].key], 1, "'%s:' does not apply to algo: %s",
                                    lp_key_names[only[first].key], P->ring_backward ? "ring-backward" : "ring");
        if (first >= 0 && only[first].algo == FS_ALGO_COUNT)
            return fs_loc_error_set(err, P->name, P->key_line[only[first].key], 1,
                                    "'%s:' does not apply to algo: backward", lp_key_names[only[first].key]);
        if (first >= 0)
            return fs_loc_error_set(err, P->name, P->key_line[only[first].key], 1, "'%s:' applies to algo: %s%s only",
                           lp_key_names[only[first].key], fs_algo_str(only[first].algo),
                           only[first].key == K_BQ || only[first].key == K_ORDER || only[first].key == K_DROPOUT ||
                                   only[first].key == K_SEED
                               ? " and backward"
                               : "");
        if (P->seen[K_SEED] && !P->seen[K_DROPOUT])
            return fs_loc_error_set(err, P->name, P->key_line[K_SEED], 1, "'seed:' is the dropout's key: give 'dropout:' too");
        if (P->seen[K_DROPOUT] && P->pitfall != FS_PITFALL_NONE)
            return fs_loc_error_set(err, P->name, P->key_line[K_DROPOUT], 1, "'dropout:' runs the correct algorithm only, not a pitfall");
        if (P->seen[K_FP8]) {
            /* FlashAttention-3's recipe: Q outer, unnormalized, from Q and K */
            static const int no[] = {K_S, K_SOFTCAP, K_FORM, K_ORDER, K_EXP2, K_PITFALL, K_DROPOUT, K_SEED};
            for (size_t k = 0; k < sizeof no / sizeof no[0]; k++)
                if (P->seen[no[k]])
                    return fs_loc_error_set(err, P->name, P->key_line[no[k]], 1,
                                            "'%s:' does not apply with 'fp8:' (the recipe runs Q outer, unnormalized, from Q and K)",
                                            lp_key_names[no[k]]);
            if (P->recipe.hadamard && (d & (d - 1)))
                return fs_loc_error_set(err, P->name, P->key_line[K_FP8], P->key_col[K_FP8],
                                        "fp8: hadamard needs d a power of two; Q and K have d = %d", d);
            r->lowp = true;
            r->recipe = P->recipe;
            r->recipe.values = true;   /* lessons are small: the window shows exact and rounded values */
        }
        if (P->dO.set) {
            if (P->dO.m.rows != hq * nq || P->dO.m.cols != P->V.m.cols)
                return fs_loc_error_set(err, P->name, P->dO.line, 1, "dO is %d x %d but O is %d x %d (one row per query%s)",
                                        P->dO.m.rows, P->dO.m.cols, hq * nq, P->V.m.cols, hq > 1 ? " and head" : "");
            r->dO = keep_matrix(l, &P->dO);
            if (!r->dO) return fs_loc_error_set(err, P->name, aline, 1, "out of memory");
        }
        r->tiling.Bq = P->Bq ? P->Bq : 64;
        r->tiling.Bk = P->Bk ? P->Bk : 64;
        /* 000's one-query walk is unnormalized (divide once at the end) unless told otherwise */
        r->tiling.form = (P->algo == FS_ALGO_QUERY && !P->seen[K_FORM]) || r->lowp ? FS_FORM_UNNORMALIZED : P->form;
        r->tiling.order = P->order;
        r->tiling.exp2 = P->exp2;
        r->tiling.pitfall = P->pitfall;
        r->tiling.dropout = (fs_dropout){P->seen[K_DROPOUT], P->dropout, P->seed};
        r->decoding.split = P->split;
        r->decoding.Bk = P->Bk ? P->Bk : 64;
        r->decoding.parts = P->parts ? P->parts : 1;
        r->decoding.merge = P->merge;
        r->decoding.form = P->form;
        if (P->seen[K_TABLE] && !P->seen[K_PAGES])
            return fs_loc_error_set(err, P->name, P->key_line[K_TABLE], 1, "'table:' needs 'pages:' (the page size)");
        if (P->seen[K_PAGES]) {
            /* a paged KV cache: K and V written into pages of P positions, block b into page table[b] */
            if (P->S.set)
                return fs_loc_error_set(err, P->name, P->key_line[K_PAGES], 1, "'pages:' pages K and V: it needs Q:, K: and V:, "
                                        "not S:");
            const int32_t blocks = (a->n_kv + P->pages - 1) / P->pages;
            const int32_t tl = P->key_line[K_TABLE];
            if (P->seen[K_TABLE]) {
                if (l->n_table != blocks)
                    return fs_loc_error_set(err, P->name, tl, 1, "the table has %d entries but the sequence has %d blocks (%d "
                                            "keys in pages of %d)", l->n_table, blocks, a->n_kv, P->pages);
                for (int32_t b = 0; b < blocks; b++) {
                    if (l->table[b] < 0 || l->table[b] >= 4 * blocks + 16)
                        return fs_loc_error_set(err, P->name, tl, 1, "entry %d: page %d is out of range (pages 0 to %d: 4 x the "
                                                "%d blocks + 16)", b, l->table[b], 4 * blocks + 15, blocks);
                    for (int32_t c = 0; c < b; c++)
                        if (l->table[c] == l->table[b])
                            return fs_loc_error_set(err, P->name, tl, 1, "entries %d and %d both name page %d: each block "
                                                    "needs a page of its own", c, b, l->table[b]);
                }
            }
            r->page_size = P->pages;
            r->block_table = P->seen[K_TABLE] ? l->table : NULL;
            r->n_table = P->seen[K_TABLE] ? l->n_table : 0;
        }
        if (P->algo == FS_ALGO_RING) {
            if (!P->seen[K_DEVICES])
                return fs_loc_error_set(err, P->name, aline, 1, "algo: ring needs 'devices:' (the number of devices P)");
            r->ring.P = P->devices;
            r->ring.sharding = P->seen[K_SHARDING] ? P->sharding : FS_SHARD_ZIGZAG;
            r->ring_backward = P->ring_backward;
            r->ring.tiling = r->tiling;
            char why[200];
            if (fs_attn_check(a) == FS_OK && fs_ring_check(a, &r->ring, why, sizeof why) != FS_OK && why[0])
                return fs_loc_error_set(err, P->name, aline, 1, "the ring cannot run this lesson: %s", why);
        }
        if (!P->scene_set) {
            /* The window has no ring scene yet (its grid is the sequence's, the ring's tiles are
             * each device's own): ring lessons show their claims, the terminal player every event. */
            if (P->algo == FS_ALGO_RING) l->scene = FS_SCENE_CLAIMS;
            else if (P->algo == FS_ALGO_QUERY) l->scene = FS_SCENE_QUERY;
            else if (P->algo == FS_ALGO_BACKWARD) l->scene = FS_SCENE_BACKWARD;
            else if (P->algo == FS_ALGO_DECODE) l->scene = FS_SCENE_DECODE;
            else if (P->pitfall != FS_PITFALL_NONE || P->seen[K_FP8]) l->scene = FS_SCENE_PITFALL;   /* beside the float64 run */
            else if (a->mask.is_tree) l->scene = FS_SCENE_TREE;
            else if (a->mask.kind == FS_MASK_WINDOW) l->scene = FS_SCENE_WINDOW;
            else if (hq > 1) l->scene = FS_SCENE_GQA;
            else l->scene = FS_SCENE_TILED;
        }
    }
    l->tr.max_events = FS_LESSON_MAX_EVENTS;
    fs_status st = fs_run_exec(r, &l->res, &l->tr);
    char why[320];
    if (st != FS_OK)
        return fs_loc_error_set(err, P->name, aline, 1, "the engine cannot run this lesson: %s",
                                fs_run_status_detail(r, st, why, sizeof why));
    l->has_run = true;
    if (P->pitfall != FS_PITFALL_NONE || r->lowp) {
        /* the correct algorithm beside a pitfall; the float64 tiled run beside a low-precision one */
        l->cmp = *r;
        l->cmp.tiling.pitfall = FS_PITFALL_NONE;
        l->cmp.lowp = false;
        l->cmp_tr.max_events = FS_LESSON_MAX_EVENTS;
        st = fs_run_exec(&l->cmp, &l->cmp_res, &l->cmp_tr);
        if (st != FS_OK)
            return fs_loc_error_set(err, P->name, aline, 1, "the engine cannot run the comparison: %s",
                                    fs_run_status_detail(&l->cmp, st, why, sizeof why));
        l->has_cmp = true;
    }
    return true;
}


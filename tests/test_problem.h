/* test_problem.h: random attention problems for the Check suites, drawn from a seeded fs_rng
 * (test_util.h): every mask kind, GQA, the soft-cap, each suite's own sizes.
 *
 * The engine's, the backward's and the window's suites (check_engine.c, check_backward.c,
 * check_gui.c) draw whole problems (fs_test_problem_draw) and say in an fs_test_problem_spec how
 * large; the CPU kernels' suite (check_kernels_cpu.c), whose problems are float32 and batched,
 * takes the two masks that need storage (a random tree, random bits) from here too.
 */
#ifndef FS_TEST_PROBLEM_H
#define FS_TEST_PROBLEM_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/attn.h"
#include "test_util.h"

/* The mask kinds a drawn problem can have, by number (suites loop over them with % FS_TEST_MASKS). */
enum {
    FS_TEST_MASK_NONE,
    FS_TEST_MASK_CAUSAL,
    FS_TEST_MASK_CAUSAL_OFFSET,   /* causal with an explicit offset (rows may see nothing) */
    FS_TEST_MASK_WINDOW,
    FS_TEST_MASK_TREE,            /* a random tree; makes the problem square */
    FS_TEST_MASK_BITS,            /* random bits (rows may see nothing) */
    FS_TEST_MASKS
};

/* How a suite's problems are drawn. Every size is drawn from 1 to its bound. */
typedef struct {
    int max_n_q, max_n_kv, max_d, max_d_v;
    int max_offset;        /* FS_TEST_MASK_CAUSAL_OFFSET: the offset is drawn from −3 to this */
    int max_window;        /* FS_TEST_MASK_WINDOW: the window from 1 to this */
    double bits_visible;   /* FS_TEST_MASK_BITS: the chance that a key is visible to a row */
    bool given_scores;     /* S in [−4, 4] (scale 1) instead of Q and K in [−2, 2] */
    bool dO;               /* also dO in [−1, 1], the backward's input */
    bool softcap;          /* one problem in four gets a soft-cap in [0.5, 3) */
    bool random_scale;     /* one problem in four gets a scale in [0.2, 1.5) instead of 1/√d */
} fs_test_problem_spec;

/* A drawn problem and its storage, row-major: Q (n_q_heads, n_q, d), K (n_kv_heads, n_kv, d),
 * V (n_kv_heads, n_kv, d_v) in [−1, 1], S (n_q_heads, n_q, n_kv), dO (n_q_heads, n_q, d_v); 1 or
 * 2 KV heads with groups of 1 to 3 query heads. a points into this storage. Q, K, S, dO are NULL
 * when not drawn; bits holds a tree's or a bitmask's words and parent the tree's parent array
 * (n_q), both NULL when the mask has none. */
typedef struct {
    fs_attn a;
    double *Q, *K, *V, *S, *dO;
    uint64_t *bits;
    int32_t *parent;
} fs_test_problem;

/* Draw a problem with mask mask_kind (FS_TEST_MASK_*) and the sizes and options of spec from r
 * into p (whatever p held is overwritten, not freed). */
void fs_test_problem_draw(fs_test_problem *p, fs_rng *r, int mask_kind, const fs_test_problem_spec *spec);
/* Free p's storage and zero it. */
void fs_test_problem_free(fs_test_problem *p);

/* A random speculative tree over n tokens (each token's parent drawn from those before it):
 * its mask, with the bits allocated into *bits, and the parent array into *parent unless parent
 * is NULL (the caller frees them). */
fs_mask fs_test_mask_tree(fs_rng *r, int32_t n, uint64_t **bits, int32_t **parent);
/* A bitmask of n_q rows over n_kv keys, each key visible to each row with chance `visible`;
 * the bits allocated into *bits. */
fs_mask fs_test_mask_bits(fs_rng *r, int32_t n_q, int32_t n_kv, double visible, uint64_t **bits);

#endif

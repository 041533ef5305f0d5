/* lesson_parse.h: what the files that read and run a lesson share; nothing outside src/lesson
 * sees it (the public interface is lesson.h).
 *
 * Reading a lesson takes three steps, one file each, driven by fs_lesson_parse in lesson.c:
 *   lesson_format.c   the text: lines, records, header keys, narration and expectations, parsed
 *                     into a parse_t but not yet evaluated            (lp_read_records)
 *   lesson_run.c      the header keys become an fs_run, run on the engine, and for a pitfall
 *                     lesson the correct run beside it               (lp_build_and_run)
 *   lesson_expect.c   each expectation's target is looked up in the run (a trace field, an
 *                     output, a count, an expression) and judged     (lp_resolve)
 * Each step returns false with P->err set (file:line:column) on the first problem.
 */
#ifndef FS_LESSON_PARSE_H
#define FS_LESSON_PARSE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/matrix_io.h"
#include "lesson_internal.h"

/* Bounds on what a lesson may ask for, so that no file (or fuzzer) can request absurd work.
 * The fuzz build (tests/fuzz) lowers them and turns off file access. */
#ifndef FS_LESSON_MAX_ELEMS
#define FS_LESSON_MAX_ELEMS   (1 << 20)   /* per random matrix */
#endif
#ifndef FS_LESSON_MAX_SCORES
#define FS_LESSON_MAX_SCORES  (1LL << 24) /* heads · n_q · n_kv of a run */
#endif
#ifndef FS_LESSON_MAX_EVENTS
#define FS_LESSON_MAX_EVENTS  (1 << 21)
#endif
#define FS_LESSON_MAX_BYTES   (1 << 22)   /* lesson text */

/* ---- parse state ------------------------------------------------------------------------ */

typedef struct {
    const char *s;   /* start of the line in the text */
    size_t n;        /* length without the newline (and without a trailing '\r') */
} line_t;


typedef enum { MAT_INLINE, MAT_FILE, MAT_RANDOM } mat_src;

typedef struct {
    bool set;
    int32_t line, col;      /* of the key */
    fs_matrix m;
} mat_t;

typedef struct {
    const char *sel;        /* "3" or "row qt=0 kt=0 row=1" */
    int32_t line, col;
    const char *text;
} narr_rec;

typedef struct {
    fs_check c;             /* filled as far as parsing goes */
    int32_t tcol;           /* column of the target */
    int32_t chain_line, chain_col;
    double tol;
    fs_unit unit;
    char *mask_rows;        /* for the whole-mask target: the rows as printed, ';'-joined */
    int32_t mask_n_rows, mask_n_cols;
    int32_t mask_line;
} expect_rec;

/* One header key a play option sets ("--bq 2" sets bq: 2), with where the option was written. */
#define LP_MAX_SETS 16
typedef struct {
    int key;                /* K_* */
    char value[96];
    int32_t line, col;      /* of the option's value (1-based) */
    const char *opt;        /* the option as written ("--bq"), a static string */
    unsigned algos;         /* which algorithms it changes (variation.c) */
} lp_set;

typedef struct {
    fs_lesson *l;
    const char *name;       /* for errors */
    char dir[PATH_MAX];     /* for relative file names */
    fs_loc_error *err;

    bool seen[64];          /* header keys given (index in key table) */
    int32_t key_line[64];
    int32_t key_col[64];    /* column of the value */

    int algo;               /* -1: none (claims only) */
    bool scene_set;
    mat_t z, Q, K, V, S, dO;
    int32_t n_qh, n_kvh;
    bool scale_set;
    double scale, softcap;
    fs_mask_kind mask;
    int32_t window, offset;
    bool offset_set;
    int32_t Bq, Bk, chunk, parts;
    fs_form form;
    fs_order order;
    bool exp2;
    fs_pitfall pitfall;
    fs_split split;
    fs_merge merge;
    double dropout;         /* dropout: (tiled, backward) */
    uint64_t seed;          /* seed: the dropout's Philox key */
    fs_lowp_recipe recipe;  /* fp8: (lowp.h) */
    int32_t devices;        /* devices: the ring's P (ring.h) */
    int32_t pages;          /* pages: the paged cache's page size (decode) */
    fs_sharding sharding;   /* sharding: */
    bool ring_backward;     /* algo: ring-backward */

    /* A variation (fs_lesson_parse_variation): header keys set by play options, in place of the
     * lesson's own; the lesson's narration and expectations are then left out. */
    lp_set sets[LP_MAX_SETS];
    int n_sets;
    bool variation;           /* load with sets (even none: a try that sets nothing) */
    bool own_try;             /* the sets are the lesson's own try: (read from its play: line) */
    const char *opts_name;    /* where command-line options come from, for errors */

    narr_rec *narr;
    int32_t n_narr, cap_narr;
    expect_rec *ex;
    int32_t n_ex, cap_ex;
} parse_t;

enum {
    K_TITLE, K_SOURCE, K_ALGO, K_SCENE, K_INTRO, K_LABELS, K_Z, K_CHUNK, K_Q, K_K, K_V, K_S,
    K_HEADS, K_SCALE, K_SOFTCAP, K_MASK, K_OFFSET, K_TREE, K_BQ, K_BK, K_FORM, K_ORDER, K_EXP2,
    K_PITFALL, K_SPLIT, K_PARTS, K_MERGE, K_DO, K_FP8, K_DROPOUT, K_SEED, K_DEVICES, K_SHARDING,
    K_PAGES, K_TABLE, K_QUIZ, K_SUMMARY, K_TRY, K_COUNT
};

/* The header keys by index, as written in a lesson ("title", "source", … "dO"). */
extern const char *const lp_key_names[K_COUNT];

/* lesson_format.c: a string or array that lives as long as the lesson (freed by
 * fs_lesson_free); p itself on success, NULL (and p freed) when out of memory. */
void *lp_keep(fs_lesson *l, void *p);

/* lesson_format.c: a copy of s kept byte for byte (a path to open again, not text to show). */
char *lp_dup_raw(fs_lesson *l, const char *s);

/* lesson_format.c: the first column at or after a in s[0, n) that is not a space or a tab. */
size_t lp_skip_blank(const char *s, size_t a, size_t n);

/* lesson_format.c: split text into records and parse every one into P; the keys every lesson
 * needs (title, source, algo) must be there. */
bool lp_read_records(parse_t *P, const char *text, size_t len);

/* lesson_run.c: build the fs_run the header keys describe and run it (and the comparison). */
bool lp_build_and_run(parse_t *P);

/* variation.c: the play options of a variation ("--bq 2 --order kv-outer", quotes group words)
 * as header keys: sets[0 .. *n) (at most LP_MAX_SETS). s[0, n) is the text; name, line and col
 * locate its first byte for errors (file:line:column of each option). False with err set on an
 * unknown option, a missing value, or a key set twice. */
bool lp_options_parse(const char *s, size_t n, const char *name, int32_t line, int32_t col,
                      lp_set *sets, int *n_sets, fs_loc_error *err);

/* variation.c: whether the option e changes a lesson of that algorithm (fs_algo, −1 for none). */
bool lp_set_applies(const lp_set *e, int algo, bool ring_backward);

/* lesson_expect.c: evaluate and judge every expectation against the run. */
bool lp_resolve(parse_t *P);

#endif

/* lesson.h: lessons (worked examples of the source documents) and the verification of every
 * number the documents print.
 *
 * Data flow:   lesson file ──parse──> fs_run ──fs_run_exec──> trace + result
 *                                      └─ expectations ──judge──> one verdict per claim
 *
 * A lesson is a plain-text file (docs/lesson-format.md describes it with a complete example):
 * a title, the document and section it comes from, the algorithm and its parameters, the
 * matrices (inline or by file), narration per step in our own words, and expectations: numbers
 * as the document prints them and where they belong (a trace value, an output element, a
 * score, a count of events, or an arithmetic claim computed from a small expression).
 *
 * Loading a lesson parses it, runs it on the engine (recording the trace), and evaluates every
 * expectation, so an expectation that points at a step, row or field that does not exist is a
 * load error with file:line:column. Verdicts are computed at load too; whether they agree with
 * the verdict the lesson records is for the caller (`flashstep verify`) to report.
 *
 * This module does no printing: errors come back in fs_loc_error, text in caller buffers.
 * Every pointer a getter returns lives as long as the lesson.
 */
#ifndef FS_LESSON_H
#define FS_LESSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/run.h"
#include "io/matrix_io.h"

/* What a viewer should draw. */
typedef enum {
    FS_SCENE_SOFTMAX = 0, /* online softmax of a vector (000, 003, 004) */
    FS_SCENE_QUERY,       /* one query, one key at a time (000's q = [1, 0]) */
    FS_SCENE_TILED,       /* Q tiles × KV tiles, with a mask */
    FS_SCENE_TREE,        /* tiled with a tree mask; fs_lesson_tree_parent gives the tree */
    FS_SCENE_WINDOW,      /* tiled with a sliding window */
    FS_SCENE_GQA,         /* query heads reading shared KV heads */
    FS_SCENE_DECODE,      /* decode splits, partials and merges */
    FS_SCENE_PITFALL,     /* a deliberately wrong variant beside the correct run */
    FS_SCENE_CLAIMS,      /* arithmetic claims only: no trace (or an empty one) */
    FS_SCENE_BACKWARD,    /* the backward pass: a KV tile finished while Q tiles stream past */
    FS_SCENE_COUNT
} fs_scene;

typedef struct fs_lesson fs_lesson;   /* opaque */

/* ---- loading ---------------------------------------------------------------------------- */

/* Read, parse, run and evaluate the lesson at path. Matrix files named in it are relative to
 * the lesson's directory. On failure *out is NULL and err names file:line:column. */
bool fs_lesson_load(const char *path, fs_lesson **out, fs_loc_error *err);

/* The same from text in memory. name locates errors and anchors relative file paths (its
 * directory part). */
bool fs_lesson_parse(const char *text, size_t len, const char *name, fs_lesson **out,
                     fs_loc_error *err);

void fs_lesson_free(fs_lesson *l);

/* A variation of the lesson (its "try this"): the lesson's own problem with some header keys set
 * by play options, `opts` = "--bq 3 --bk 2" (the options src/lesson/variation.c lists, each
 * setting one key: --bq, --bk, --order, --form, --mask, --window, --offset, --exp2, --pitfall,
 * --merge, --parts, --chunk, --softcap, --dropout, --seed, --ring, --sharding, --fp8; quotes
 * group words), in place of the lesson's own lines for those keys. opts NULL: the lesson's own
 * `try:` (its play: line; an error when it has none). The lesson's step narration and
 * expectations are left out (they describe the lesson as written; the generated narration
 * still explains every step), the title gets " (varied: OPTIONS)" and fs_lesson_variation says
 * which options. opts "": the lesson as written (fs_lesson_load, fs_lesson_parse). Errors name file:line:column: of the play: line for the lesson's own try:, of
 * opts_name:1:COLUMN (default "play options") for a bad option in opts. An option the lesson's
 * algorithm would ignore (--bq for a softmax) is refused there, so a variation always changes
 * something. */
bool fs_lesson_load_variation(const char *path, const char *opts, const char *opts_name, fs_lesson **out,
                              fs_loc_error *err);
bool fs_lesson_parse_variation(const char *text, size_t len, const char *name, const char *opts,
                               const char *opts_name, fs_lesson **out, fs_loc_error *err);
/* Whether a command-line word is one of the variation's options: 1 when it takes a value, 0 for
 * a flag (--exp2), −1 when it is none of them. */
int fs_lesson_option_arity(const char *opt);
/* Append one command-line word to a variation's options in buf (capacity n, terminated), quoted
 * when it holds a blank; false (buf unchanged) when it does not fit or cannot be quoted. */
bool fs_lesson_options_add(char *buf, size_t n, const char *word);

/* ---- what it says ----------------------------------------------------------------------- */

const char *fs_lesson_title(const fs_lesson *l);
/* "000_a9212bbbb0f7e97c.txt, §A Complete Numerical Example with Tiling" */
const char *fs_lesson_source(const fs_lesson *l);
/* False for a lesson whose source is `none` (a topic none of the documents covers, such as ring
 * attention): it makes only checks of its own, and the errata leave it out. */
bool fs_lesson_has_source(const fs_lesson *l);
const char *fs_lesson_intro(const fs_lesson *l);       /* "" when absent */
const char *fs_lesson_path(const fs_lesson *l);        /* the name it was loaded under */

/* The ending (docs/lesson-format.md, "The ending"). Shapes: every string lives as long as the
 * lesson, escaped like all lesson text (no byte that could drive a terminal).
 * summary: what the lesson showed, one or more sentences; NULL when the lesson has no summary:.
 * keep: the one formula to keep ("m_new = max(m_old, m_blk)"); NULL exactly when summary is.
 * try label: what the variation changes, a few words ("smaller tiles"); NULL when no try:.
 * try options: its play options ("--bq 2 --bk 2"), NULL exactly when the label is; already
 *   checked as options (variation.c), not yet run: fs_lesson_load_variation(path, NULL, …) runs it.
 * variation: the options this copy was loaded with; "" for the lesson as written. */
const char *fs_lesson_summary(const fs_lesson *l);
const char *fs_lesson_keep(const fs_lesson *l);
const char *fs_lesson_try_label(const fs_lesson *l);
const char *fs_lesson_try_options(const fs_lesson *l);
const char *fs_lesson_variation(const fs_lesson *l);
fs_scene fs_lesson_scene(const fs_lesson *l);

/* What a section's quiz asks for a lesson about claims, on sizes it draws fresh (`quiz:`): the
 * memory of S and of a KV cache (the default), a paged cache's pages, an e4m3 rounding, a ring
 * step's transfer against its computation, exp's range and the softmax of large scores, a GPU
 * kernel's division of work (a lane's elements, a threadgroup's bytes, threadgroups, barriers),
 * the roofline (a tile's FLOPs a byte, a ridge, an attainable rate, a decode's least time), the
 * HBM accesses of standard and tiled attention. A lesson that runs and names one (its claims
 * are its subject, its run the example) asks its claims beside its trace. */
typedef enum {
    FS_QUIZ_MEMORY = 0, FS_QUIZ_PAGES, FS_QUIZ_E4M3, FS_QUIZ_RING, FS_QUIZ_STABILITY, FS_QUIZ_KERNEL, FS_QUIZ_ROOFLINE,
    FS_QUIZ_IO, FS_QUIZ_KIND_COUNT
} fs_quiz_kind;
fs_quiz_kind fs_lesson_quiz_kind(const fs_lesson *l);
const char *fs_scene_str(fs_scene s);                  /* "softmax", "query", … "claims" */

/* The spec that ran; its matrices live as long as the lesson. NULL for a claims-only lesson
 * with no algorithm. */
const fs_run *fs_lesson_run(const fs_lesson *l);
const fs_result *fs_lesson_result(const fs_lesson *l);  /* NULL when nothing ran */
const fs_trace *fs_lesson_trace(const fs_lesson *l);    /* recorded at load; NULL when nothing ran */

/* Pitfall lessons: the run the wrong variant is compared with (the same problem with
 * FS_PITFALL_NONE), its trace and result. NULL otherwise. */
const fs_run *fs_lesson_compare_run(const fs_lesson *l);
const fs_trace *fs_lesson_compare_trace(const fs_lesson *l);
const fs_result *fs_lesson_compare_result(const fs_lesson *l);

/* The lesson's narration for the event at that step (0-based), or NULL if it has none. */
const char *fs_lesson_narration(const fs_lesson *l, int64_t step);

/* Tree lessons: the parent array (−1 for the root), *n set to its length; NULL otherwise. */
const int32_t *fs_lesson_tree_parent(const fs_lesson *l, int32_t *n);

/* Names of the positions when the lesson gives them ("A B C …" for 000's tree); NULL if not. */
const char *fs_lesson_label(const fs_lesson *l, int32_t i);

/* ---- describing events (for players; no printing) --------------------------------------- */

/* One line saying what happened at step, with the formula filled in, formulas separated by
 * "; ", e.g. "row 1, tile (Q 0, KV 0), keys 0..2 (2 visible): s = [0.1202, 0.3253, -inf];
 * m_blk = 0.3253; m_new = max(-inf, 0.3253) = 0.3253; α = exp(-inf − 0.3253) = 0.0000; …".
 * The event's own values are used (only the global-maximum pitfall's Σ P is summed again from the
 * event's scores); a pitfall's trace shows the formulas that variant used. Writes at most n bytes
 * (always terminated); returns the length it wanted. 'digits' is the number of decimals (4 is what the
 * documents use). t is normally fs_lesson_trace(l) or fs_lesson_compare_trace(l). */
size_t fs_lesson_describe(const fs_lesson *l, const fs_trace *t, int64_t step, int digits,
                          char *buf, size_t n);

/* The words for the step: the lesson's own narration when it has one for that step, else a
 * sentence generated from the event itself (narrate.c): what happened, with that step's numbers
 * (4 decimals, the event's stored values only), and why (the maximum moved and by how much, why a
 * tile was skipped, what a merge's factors do, what a backward step adds, what the block table
 * or the ring did). The first event of a kind in the trace (first skip, first rescale, first
 * merge, first output, …) gets one more sentence of explanation. In a pitfall lesson the wrong
 * variant's step is compared with the correct run's step of the same index where the two traces
 * align (same kind, head, row and tiles); in a low-precision lesson, with the exact run's.
 * Every event of every trace gets at least one sentence, ending with '.'. The terminal player
 * shows these words above the step's formulas (fs_lesson_describe); the window and the page show
 * them in the narration bar (the formulas are in their side panel).
 * t is fs_lesson_trace(l) or fs_lesson_compare_trace(l) (own narration belongs to the first only).
 * l may be NULL (a trace without a lesson, such as the window's demos): the words then come from
 * the event alone, without labels, heads, the exp2 base or a comparison.
 * Writes at most n bytes (always terminated); returns the length it wanted. */
size_t fs_lesson_say(const fs_lesson *l, const fs_trace *t, int64_t step, char *buf, size_t n);
/* The generated sentence alone (no lesson narration), for tests and for players that show both. */
size_t fs_lesson_generate(const fs_lesson *l, const fs_trace *t, int64_t step, char *buf, size_t n);

/* ---- the documents by name, and the course (course.c) ----------------------------------- */

/* The title of the source document a source line starts with ("000_a9212bbbb0f7e97c.txt, §…"
 * -> "FlashAttention: Theory and Practice"), or NULL when it names none of the five. */
const char *fs_document_title(const char *source);
/* The source line for a reader: the document's title in place of its file name
 * ("FlashAttention: Theory and Practice, §A Complete …"); "beyond the five documents, §…" for a
 * lesson whose source is none; the line itself when it names no document.
 * Writes at most n bytes, always terminated. */
void fs_source_words(const char *source, char *out, size_t n);

/* The course: one path through the lessons for a newcomer, read from DIR/course.txt ("## Title"
 * starts a section; every other line that is not blank or a '#' comment names a lesson of DIR,
 * its file name without .lesson, each once). names[i] is the i-th lesson of the path, in
 * section sections[section_of[i]]. */
typedef struct {
    char **sections;
    int n_sections;
    char **names;
    int *section_of;
    int n;
} fs_course;

/* Read dir's course. false with err naming file:line:column (a name that is no lesson there, one
 * named twice, a lesson before the first section, a byte that cannot be in a name). */
bool fs_course_load(const char *dir, fs_course *c, fs_loc_error *err);
void fs_course_free(fs_course *c);
/* The place of a lesson (its name) in the course, or −1. */
int fs_course_find(const fs_course *c, const char *name);

/* The third line of a lesson's summary: "next: TITLE" with the title of the lesson after `path`
 * in the course of path's directory, "next: the course ends here" after its last lesson, or
 * "next: not in the course" for a lesson the course does not name (or with no course.txt).
 * The title is read from the next lesson's `title:` record (escaped, without running it).
 * path is a lesson file path ("lessons/000_04_tiled_causal_n6.lesson"). Writes at most n bytes,
 * always terminated. */
void fs_course_next_line(const char *path, char *out, size_t n);

/* Whether the lesson at path is the last of its section of the course (path's directory's):
 * the section's number, 1-based as `flashstep quiz N` takes it, with its title in title, escaped
 * (src/io/text.h; at most n bytes, always terminated); 0 and "" otherwise (another lesson, not in
 * the course, no course). */
int fs_course_section_end(const char *path, char *title, size_t n);

/* ---- the glossary (glossary.c) ----------------------------------------------------------- */

/* Every symbol the course uses, one name per quantity: the symbol as the players print it ("ℓ"),
 * its ASCII spelling in identifiers and lesson files ("l"), what it is in a sentence, and the
 * lesson (file stem) that defines it first. docs/glossary.md lists the same entries. */
typedef struct {
    const char *symbol;    /* "m", "ℓ", "α", "β", "o", "O", "Bq", … */
    const char *ascii;     /* "m", "l", "alpha", … */
    const char *meaning;   /* one sentence */
    const char *lesson;    /* the lesson that defines it, e.g. "000_00_four_numbers" */
} fs_glossary_entry;

int fs_glossary_count(void);
const fs_glossary_entry *fs_glossary_get(int i);   /* NULL outside 0 .. count − 1 */

/* ---- finding lessons -------------------------------------------------------------------- */

/* Sorted paths of the *.lesson files in dir. Returns 0, or -1 when dir cannot be read.
 * Free with fs_lesson_list_free. */
int fs_lesson_list(const char *dir, char ***paths, int *n);
void fs_lesson_list_free(char **paths, int n);

/* The lessons directory: $FLASHSTEP_LESSONS if set, else the first lessons/ found one, two or
 * three levels above the running binary (/proc/self/exe, else argv0, which may be NULL; so
 * build/flashstep and build/clang/flashstep both find the repository's lessons/), else
 * ./lessons. Returns false if that directory does not exist. */
bool fs_lesson_dir(const char *argv0, char *buf, size_t n);

/* A lesson named by a path (an existing file) or by its file stem in dir ("000_01_online_softmax"
 * or a unique prefix of one, such as "000_01"). Returns false when nothing or more than one
 * lesson matches; buf then holds a message. */
bool fs_lesson_resolve(const char *name, const char *dir, char *buf, size_t n);

/* ---- verification ----------------------------------------------------------------------- */

/* Verdicts, in the order they are tried (docs/lesson-format.md, "Verdicts"). */
typedef enum {
    FS_VERDICT_HOLDS = 0,        /* the exact value rounds to the printed digits */
    FS_VERDICT_UNITS,            /* holds under one reading of the units only (decimal/binary) */
    FS_VERDICT_ROUNDED,          /* holds only from the document's own rounded intermediates */
    FS_VERDICT_APPROX,           /* marked ~/about/roughly and within the tolerance */
    FS_VERDICT_ERRATUM,          /* wrong */
    FS_VERDICT_COUNT
} fs_verdict;

/* "holds", "units", "rounded-intermediates", "approximate", "erratum" */
const char *fs_verdict_str(fs_verdict v);
bool fs_verdict_parse(const char *s, fs_verdict *v);

/* Units a printed number may carry. Byte units and K/M/G counts have a decimal and a binary
 * reading; the others have one. */
typedef enum {
    FS_UNIT_NONE = 0,
    FS_UNIT_B, FS_UNIT_KB, FS_UNIT_MB, FS_UNIT_GB, FS_UNIT_TB,   /* ambiguous: 1000^k or 1024^k */
    FS_UNIT_KIB, FS_UNIT_MIB, FS_UNIT_GIB, FS_UNIT_TIB,          /* binary */
    FS_UNIT_K, FS_UNIT_M, FS_UNIT_G,                             /* counts (FLOPs, elements):
                                                                    ambiguous like KB */
    FS_UNIT_S, FS_UNIT_MS, FS_UNIT_US,                           /* time; the exact value is
                                                                    computed in seconds */
    FS_UNIT_X,                                                   /* a ratio, "500x" */
    FS_UNIT_FLOP_PER_B,                                          /* arithmetic intensity */
    FS_UNIT_PERCENT,
    FS_UNIT_COUNT
} fs_unit;

const char *fs_unit_str(fs_unit u);               /* "", "B", "KB", … "x", "FLOP/B", "%" */
bool fs_unit_parse(const char *s, fs_unit *u);
/* The factor from the unit to base units (bytes, seconds, counts) under a reading; for
 * unambiguous units both readings give the same factor. */
double fs_unit_factor(fs_unit u, bool binary);
bool fs_unit_ambiguous(fs_unit u);

/* The judgement of one claim, as a pure function so that it can be tested on its own.
 * exact_base is the recomputed value in base units (bytes, seconds, counts, plain numbers);
 * the printed number is compared in its unit. */
typedef struct {
    const char *printed;     /* as the document prints it: "0.0498", "2.69e43", "+inf", "500" */
    fs_unit unit;
    bool approx_marked;      /* the document writes ~, about, roughly, ≈ */
    double tol;              /* relative tolerance for approximations; ≤ 0: the default 5% */
    double exact_base;
    bool has_chain;          /* the document's own chain of rounded intermediates */
    double chain_value;      /* in the printed unit (the chain is evaluated as written) */
} fs_claim_in;

typedef struct {
    fs_verdict verdict;
    double exact;            /* exact_base in the printed unit, under the reading chosen */
    double exact_dec, exact_bin;   /* both readings (equal for unambiguous units) */
    const char *reading;     /* "decimal", "binary" or "" */
    double half_ulp;         /* half a unit in the last printed digit */
} fs_claim_out;

/* Parse a printed number: its value and half a unit in its last digit. "+inf"/"inf"/"-inf" give
 * infinity with half_ulp 0, "nan" gives NaN (and a value rounds to "nan" only when it is NaN).
 * Thousands separators are accepted ("34,359,738,368"). Returns false if it is not a number. */
bool fs_printed_parse(const char *printed, double *value, double *half_ulp);

/* Does x round to the printed number? Half-way cases hold (either rounding direction), with a
 * relative slack of 1e-12 for the rounding of the recomputation itself. */
bool fs_rounds_to(double x, const char *printed);

fs_verdict fs_claim_judge(const fs_claim_in *in, fs_claim_out *out);

/* One expectation of a lesson, evaluated. */
typedef struct {
    const char *claim;       /* what is claimed, short: "step 2 l_new", "S per head, n=4096" */
    const char *target;      /* the selector or expression as written in the lesson */
    const char *section;     /* the document section, when it differs from the lesson's */
    const char *printed;     /* digits as printed ("0.5580"); for a matrix, rows joined by ';' */
    const char *unit;        /* "" when none */
    bool approx_marked;
    const char *chain;       /* the rounded-intermediates chain as written, or NULL */
    const char *why;         /* the lesson's explanation (errata), or "" */
    fs_verdict expected;     /* the verdict the lesson records (holds when it records none) */
    const char *expected_reading; /* for units: "decimal" or "binary"; else "" */
    fs_claim_out got;        /* the recomputed judgement */
    bool agrees;             /* got.verdict (and reading) equal what the lesson records */
    bool own;                /* the lesson's own check, not a number the document prints: listed
                                apart and not counted among the document's claims */
    const char *from;        /* an own check of a figure another lesson counts as its document's
                                claim ("from: 001_04"): that lesson's stem; else "" */
    const char *op;          /* "=" (rounds to the printed number), or a bound: "<=", "<", ">=", ">"
                                (holds when the bound holds, erratum otherwise) */
    char exact_text[64];     /* the exact value in the printed unit: whole numbers in full, else %.8g (or the matrix) */
    int32_t line, col;       /* where the expectation is in the lesson */
} fs_check;

int fs_lesson_check_count(const fs_lesson *l);
const fs_check *fs_lesson_check(const fs_lesson *l, int i);

/* Whose number c is, in words, into buf (capacity n): "document", "the lesson's own check", or
 * for a figure another lesson counts (from:) "counted in 001_04". Returns buf. */
const char *fs_check_whose(const fs_check *c, char *buf, size_t n);

/* Number of checks whose recomputed verdict differs from the recorded one. */
int fs_lesson_check_failures(const fs_lesson *l);

/* ---- expressions (arithmetic claims) ----------------------------------------------------- */

/* Evaluate a small arithmetic expression: numbers (1e-4, 0x10), + − * / ^ (right assoc.),
 * parentheses, constants (inf, pi, e, flt_max), functions exp log log2 exp2 sqrt tanh abs
 * floor ceil round min max, the float32 helpers f32(x) (round to float) and expf32(x)
 * (exp computed in float32), and the memory model (fs_mem_* in engine/memory.h):
 * sp_bytes(n_q, n_kv, heads, elem), mat_traffic(n_q, n_kv, heads, elem),
 * tile_sram(Bq, Bk, d, in_bytes, acc_bytes), tile_flops(Bq, Bk, d), kv_bytes(n, d, heads, in_bytes),
 * and fs_mem_model itself on one head of n × n: tiles_computed(n, Bq, Bk, causal) (tiles not
 * skipped) and tiled_traffic(n, d, Bq, Bk, causal, in_bytes) (bytes the tiled kernel moves).
 * name/line/col locate errors. */
bool fs_expr_eval(const char *text, size_t len, const char *name, int32_t line, int32_t col,
                  double *out, fs_loc_error *err);

/* ---- questions (question.c) ------------------------------------------------------------- */

/* A student learns by predicting the next number. The question engine picks the moments of a
 * lesson's trace that matter (a maximum that moves, a rescale, a tile's class, a merge, a
 * backward step, a ring step, a claim) and turns each into a question whose answer is the value
 * the engine recorded. The players ask it before they show that step; fs_question_judge judges a
 * typed answer and says why. */
typedef enum {
    FS_Q_M_NEW = 0,   /* the new running maximum, given the block's visible scores */
    FS_Q_ALPHA,       /* α = exp(m_old − m_new) */
    FS_Q_BETA,        /* β = exp(m_blk − m_new) */
    FS_Q_L_NEW,       /* ℓ_new = α ℓ_old + β ℓ_blk */
    FS_Q_OUT,         /* one element of an output row: o / ℓ */
    FS_Q_TILE_CLASS,  /* full, partial or skipped */
    FS_Q_SKIPS,       /* how many tiles the mask skips in the whole run */
    FS_Q_LIVE,        /* the loop order: how many rows' running states are alive at once */
    FS_Q_MERGE,       /* a merge's factor for the side with the smaller maximum */
    FS_Q_DELTA,       /* D = rowsum(dO ∘ O) */
    FS_Q_DS,          /* one entry of dS = P ∘ (dP − D) */
    FS_Q_DV,          /* a tile's contribution to a key's dV, Σ_i P_ij dO_i (its first element) */
    FS_Q_SHARD,       /* which KV shard a device holds at a ring step */
    FS_Q_PAGE,        /* the logical block a position of a paged cache falls in */
    FS_Q_E4M3,        /* the e4m3 value a number rounds to */
    FS_Q_DROP,        /* dropout: the block's sum ℓ_blk, which keeps the dropped weights */
    FS_Q_QUANT,       /* FP8: the value a query element is computed with, e4m3(x / σ) · σ */
    FS_Q_P8,          /* FP8: the P that P · V uses, e4m3(P × p) / p */
    FS_Q_RING_WORK,   /* the ring: how much of a step's pairs a device computes (all, some, none) */
    FS_Q_MISTAKE,     /* a pitfall lesson: the number the wrong variant computes (NaN possible) */
    FS_Q_SOFTCAP,     /* a soft-capped score, cap · tanh(raw / cap) */
    FS_Q_KV_HEAD,     /* GQA: the KV head a query head reads */
    FS_Q_CLAIM,       /* a claim of the lesson: its exact value, or which of two is larger */
    FS_Q_COUNT
} fs_qkind;

#define FS_Q_MAX_OPTIONS 3

typedef struct {
    fs_qkind kind;
    int64_t step;          /* ask before showing this step (−1: a claim, asked on its page) */
    int check;             /* FS_Q_CLAIM: the check's index (fs_lesson_check), else −1 */
    char prompt[600];      /* the question with the numbers it needs, never the answer */
    bool numeric;          /* a number to type; else one of options */
    double answer;         /* the engine's value (numeric); NaN only for FS_Q_MISTAKE, typed "NaN" */
    int digits;            /* decimals the players show for it */
    int n_options;         /* a choice: "full", "partial", "skipped" */
    const char *options[FS_Q_MAX_OPTIONS];
    char alias[FS_Q_MAX_OPTIONS][48];   /* another name of an option, taken whole ("f16 tensor" for
                                           "the first"), or "" */
    int right;             /* the index of the right option */
    char why[560];         /* the one-line reason, with the right answer's arithmetic */
    bool has_from_prompt;  /* the prompt's rounded numbers, worked out, round otherwise than answer: */
    double from_prompt;    /* what they give (44.3835 / 1.2034 = 36.8818 for 36.8806); judged right too */
    bool has_from_inputs;  /* another way through the prompt's numbers (a merge's factors worked out */
    double from_inputs;    /* from the shown maxima, not taken as shown): judged right too */
    bool has_before;       /* FS_Q_E4M3, _QUANT, _P8: the number before its rounding, as the prompt */
    double before;         /* prints it, which typed back is judged wrong however near the answer */
} fs_question;

/* "m_new", "alpha", "beta", "l_new", "out", "tile-class", "skips", "live-rows", "merge", "D", "dS", "dV", "shard",
 * "page", "e4m3", "dropout", "quantize", "P8", "ring-work", "mistake", "softcap", "kv-head", "claim" */
const char *fs_qkind_str(fs_qkind k);

/* The questions of a lesson, in step order: up to max written into q (may be NULL with max 0 to
 * count); returns how many there are. Lessons with a trace ask at least three where the trace
 * has three moments worth asking, of more than one kind when it has more than one kind of
 * event; claims (those a student can work out by hand: arithmetic, e4m3 rounding, which of two
 * errors is larger) fill up a lesson whose trace asks fewer than three, make the questions of a
 * claims-only lesson (up to eight), and follow the first three of a lesson that runs and names
 * its claims' kind (quiz:) up to eight. The trace's questions come in step order, then the
 * claims' (step −1: asked on the claims pages, after the last step).
 * digits: the decimals shown (4 as the players). */
int fs_lesson_questions(const fs_lesson *l, int digits, fs_question *q, int max);

/* The same over any run and its trace (a problem of one's own, a quiz's fresh problem); run may
 * be NULL (then no question needs the problem: no tile classes, no outputs). */
int fs_run_questions(const fs_run *run, const fs_trace *t, int digits, fs_question *q, int max);

/* The question of one kind at one step of that trace (a quiz's draw of a device and a ring step);
 * false when that kind cannot be asked there. */
bool fs_run_question_at(const fs_run *run, const fs_trace *t, int64_t step, fs_qkind kind, int digits, fs_question *q);

/* Judge what the student typed. Numbers: right when the engine's value rounds to what was typed
 * (at least two significant digits, or the exact value when it is an integer, "-inf" spelled
 * out), so 0.96 is right for 0.9585 and 0.95 is not. Choices: the option's name, its first
 * letter or its number (1-based). feedback (n bytes, always terminated): the typed answer
 * echoed, the right one, and why. Returns true when right. */
bool fs_question_judge(const fs_question *q, const char *typed, char *feedback, size_t n);

/* Whether a typed answer says something the judge can weigh: a number (a decimal comma read as a
 * point where it cannot be a thousands separator: 0,7408) for a numeric question, one of the
 * choices for the others. The players count only such answers, so that a word, a unit ("128
 * KiB") or an empty line shows the answer without a mark against the student. */
bool fs_question_readable(const fs_question *q, const char *typed);

/* A number typed with a unit ("128 KiB", "0.6 ms", "15%"): true for a numeric question, with a
 * line into hint (n bytes) that asks for the number alone. The players then ask again instead of
 * judging it: the unit is the question's own, and a student who wrote it knew the number. */
bool fs_question_unit_hint(const fs_question *q, const char *typed, char *hint, size_t n);

/* Option i of a choice as the players show it: its name, with its other name beside it where it
 * has one ("the first (bf16)"); into buf (n bytes), returned. */
const char *fs_question_option(const fs_question *q, int i, char *buf, size_t n);

/* The right answer as the players print it ("0.9585", "3", "skipped"); returns buf. */
const char *fs_question_answer(const fs_question *q, char *buf, size_t n);
/* Whether q asks how many tiles the mask skips, what class a tile is or how much of a ring step a
 * device computes: the players keep what would answer it (the tiles' classes before step 0, the
 * skips' marks, the ring table's work to come) out of sight until it is answered. */
bool fs_question_about_classes(const fs_question *q);

/* The ring's question on device p of P at ring step t0: which KV shard it holds at step t0 + 1
 * (device p holds shard (p − t) mod P at step t); q->step −1. A quiz draws p and t0 afresh. */
void fs_question_shard(int32_t P, int32_t p, int32_t t0, fs_question *q);

/* A claim (written as a phrase: "a contiguous cache reserves …") as the start of a sentence, its
 * first letter a capital unless it starts with a symbol whose case is its meaning ("z[0]", "m =
 * …", "e4m3"); into buf (capacity n), returned. */
const char *fs_claim_sentence(const char *claim, char *buf, size_t n);

/* Why a check "expr e4m3(x)" of a plain number x off e4m3's grid rounds as it does ("2.9 lies
 * between 2.75 and 3, e4m3's neighbours there (0.25 apart); the nearer is 3."), into buf; ""
 * for any other check. Returns buf. */
const char *fs_check_e4m3_words(const fs_check *c, char *buf, size_t n);

/* ---- a section's quiz (quiz.c) ------------------------------------------------------------ */

#define FS_QUIZ_QUESTIONS 5

typedef struct {
    char section[128];                        /* the section's title */
    uint64_t seed;                            /* the same seed gives the same quiz */
    int n;                                    /* FS_QUIZ_QUESTIONS once made */
    fs_question q[FS_QUIZ_QUESTIONS];         /* step −1: each is asked on its own */
    char lesson[FS_QUIZ_QUESTIONS][128];      /* the lesson to revisit when it is answered wrongly */
} fs_quiz;

/* Five questions on the course's section (0-based) of dir's lessons: each lesson that runs an
 * algorithm is run again on a fresh problem of the same shape drawn from seed (so the answers
 * are new each time), and the questions are taken in turn from its lessons, of as many kinds as
 * they offer; a lesson about claims (claims-only, or naming their kind on a quiz: line) asks
 * its kind's arithmetic on fresh sizes. false
 * with err when a lesson does not load or there is no such section. */
bool fs_quiz_make(const char *dir, const fs_course *c, int section, uint64_t seed, fs_quiz *quiz, fs_loc_error *err);

/* Where the quizzes' scores are kept, one tab-separated line per quiz finished (the section's
 * title, the score, the number of questions, the seed, the UTC time): $FLASHSTEP_STATE when set,
 * else $XDG_STATE_HOME/flashstep/quiz.tsv, else ~/.local/state/flashstep/quiz.tsv. The terminal's
 * `flashstep quiz` and the window share it. fs_quiz_state_path: the path into buf (n bytes);
 * false when no home is known (then nothing is kept). */
bool fs_quiz_state_path(char *buf, size_t n);
/* A section's best and last score in the state file at path (−1 both when never taken; a line
 * that does not parse is skipped) and the number of questions of the last one (*of). */
void fs_quiz_scores(const char *path, const char *section, int *best, int *last, int *of);
/* Append one finished quiz (right of n, 0 ≤ right ≤ n) to the state file at path, its folder made
 * first. false (errno set) when it cannot be written. */
bool fs_quiz_keep(const char *path, const char *section, int right, int n, uint64_t seed);

#endif

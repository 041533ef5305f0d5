/* lesson_internal.h: the lesson struct, which the files of src/lesson share and nobody else sees.
 *
 * The public interface is lesson.h. lesson.c, lesson_format.c, lesson_run.c and lesson_expect.c
 * build a lesson (their shared parse state is in lesson_parse.h); describe.c reads it to narrate
 * events for the players.
 */
#ifndef FS_LESSON_INTERNAL_H
#define FS_LESSON_INTERNAL_H

#include <string.h>

#include "lesson.h"

typedef struct {
    int64_t step;
    const char *text;
} fs_narration;

struct fs_lesson {
    const char *path, *title, *source, *intro;
    fs_scene scene;
    fs_quiz_kind quiz;        /* quiz: the fresh questions a quiz draws for a lesson about claims */
    bool quiz_named;          /* quiz: was written (on a lesson that runs: its claims are its subject) */
    const char *summary, *keep;     /* summary: and its keep: line (NULL when absent) */
    const char *try_label, *try_options;   /* try: and its play: line (NULL when absent) */
    const char *variation;    /* the play options this copy was loaded with ("" as written) */

    bool has_run;             /* an algorithm ran (false for claims-only lessons) */
    fs_run run;
    fs_result res;
    fs_trace tr;
    bool has_cmp;             /* pitfall lessons: the correct algorithm on the same problem */
    fs_run cmp;
    fs_result cmp_res;
    fs_trace cmp_tr;
    bool has_ref;             /* the float64 reference of the same problem (computed lazily) */
    fs_result ref;

    double *z, *Q, *K, *V, *S;
    uint64_t *bits;
    int32_t *parent;
    int32_t n_parent;
    int32_t *table;           /* table: the paged cache's block table (page of each logical block) */
    int32_t n_table;
    const char **labels;
    int32_t n_labels;

    fs_narration *narr;
    int32_t n_narr;
    fs_check *checks;
    int32_t n_checks;

    void **allocs;            /* every string and array above, freed together */
    int32_t n_allocs, cap_allocs;
};

/* A `source:` that names a document, not `none` (alone or followed by ", §SECTION"). */
static inline bool fs_lesson_source_given(const char *source)
{
    return !(source && !strncmp(source, "none", 4) && (source[4] == 0 || source[4] == ','));
}

/* A string builder the describing files share (describe.c's formula lines, narrate.c's words):
 * text appended printf-style into buf (capacity n, always terminated); past the capacity only
 * len, the length wanted, grows. ring holds formatted numbers, so that several fit in one call. */
typedef struct {
    char *buf;
    size_t n, len;
    char ring[16][64];
    int k;
} fs_sb;

void fs_sb_put(fs_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A number as the players' formula lines and questions print it, into s (capacity n): "nan",
 * "-inf", "inf"; exponent form far from 1 (at least 10^7, or nonzero under 10^-4); otherwise
 * `digits` decimals. Returns s. (The narration's own words spell −∞ and exact 0 and 1 their way.) */
const char *fs_num_plain(char *s, size_t n, double x, int digits);

/* why += ". x lies between a and b, e4m3's neighbours there (step apart); the nearer is r." (or
 * the tie to even): how a number is rounded to e4m3, for a value not already on its grid
 * (question.c; the quiz's fresh roundings say it too). */
void fs_question_e4m3_why(char *why, size_t n, double x);

/* A number in the players' words and formula lines: fs_num_plain, but between 10^-4 and 0.01
 * with as many decimals as keep 3 significant digits when `digits` is 3 or more ("0.000159",
 * where 4 decimals would print "0.0002"), in vectors too, so that a score reads the same in its
 * row's vector and as m_blk. */
const char *fs_num_scalar(char *s, size_t n, double x, int digits);

/* A scale factor, 4 significant digits whatever its size ("0.002009", "267.9"), in b's ring. */
const char *fs_sb_sig4(fs_sb *b, double x);

#endif

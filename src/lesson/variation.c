/* variation.c: the play options of a lesson's variation ("try this"), read as header keys.
 *
 * A variation is the lesson's own problem with a few settings changed: `flashstep play 000_04
 * --bq 3 --bk 2`, or the lesson's `try:` line. Each option below is one of `flashstep play`'s
 * problem options (src/cli/problem.c) and sets one header key of the lesson
 * (docs/lesson-format.md): the value is then checked by the same code that checks the key in a
 * lesson file, so "--bq 0" is refused exactly as "bq: 0" is.
 *
 *   --bq N  --bk N  --order O  --form F  --mask none|causal  --window W  --offset N  --exp2
 *   --pitfall NAME  --merge M  --parts P (strided split)  --chunk N  --softcap C  --dropout P
 *   --seed S  --ring P (devices)  --sharding S  --fp8 RECIPE
 *
 * Words are separated by blanks; a value of several words is quoted ('e4m3 block' or "…").
 */
#include "lesson_parse.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *opt;
    int key;
    bool takes_value;
    const char *prefix;     /* put before the value ("window " for --window) */
    const char *fixed;      /* the value of a flag */
    unsigned algos;         /* the algorithms it changes (bit fs_algo; RB: the backward ring) */
} opt_row;

/* Which algorithms an option changes: a variation never sets a key the lesson's algorithm would
 * ignore (the softmax has no tiles), so that "try this" always shows a difference. */
#define A(x) (1u << FS_ALGO_##x)
#define RB (1u << FS_ALGO_COUNT)
#define ATTN (A(REFERENCE) | A(QUERY) | A(TILED) | A(DECODE) | A(BACKWARD) | A(RING) | RB)

static const opt_row rows[] = {
    {"--bq", K_BQ, true, "", NULL, A(TILED) | A(BACKWARD) | A(RING) | RB},
    {"--bk", K_BK, true, "", NULL, A(TILED) | A(DECODE) | A(BACKWARD) | A(RING) | RB},
    {"--order", K_ORDER, true, "", NULL, A(TILED) | A(BACKWARD) | A(RING) | RB},
    {"--form", K_FORM, true, "", NULL, A(QUERY) | A(TILED) | A(DECODE) | A(RING)},
    {"--mask", K_MASK, true, "", NULL, ATTN},
    {"--window", K_MASK, true, "window ", NULL, ATTN & ~(A(RING) | RB)},
    {"--offset", K_OFFSET, true, "", NULL, ATTN},
    {"--exp2", K_EXP2, false, "", "yes", A(QUERY) | A(TILED) | A(DECODE)},
    {"--pitfall", K_PITFALL, true, "", NULL, A(TILED)},
    {"--merge", K_MERGE, true, "", NULL, A(DECODE)},
    {"--parts", K_PARTS, true, "", NULL, A(DECODE)},
    {"--chunk", K_CHUNK, true, "", NULL, A(SOFTMAX)},
    {"--softcap", K_SOFTCAP, true, "", NULL, ATTN},
    {"--dropout", K_DROPOUT, true, "", NULL, A(TILED) | A(BACKWARD)},
    {"--seed", K_SEED, true, "", NULL, A(TILED) | A(BACKWARD)},
    {"--ring", K_DEVICES, true, "", NULL, A(RING) | RB},
    {"--sharding", K_SHARDING, true, "", NULL, A(RING) | RB},
    {"--fp8", K_FP8, true, "", NULL, A(TILED)},
};

/* One word of s[*a, n): blanks skipped, quotes grouping (and dropped). The word is written to
 * w (capacity wn); *col0 receives its first byte's offset. False at the end of s, or with err set
 * on an unclosed quote or a word too long. */
static bool word(const char *s, size_t n, size_t *a, char *w, size_t wn, size_t *col0, const char *name,
                 int32_t line, int32_t col, fs_loc_error *err, bool *bad)
{
    size_t i = *a;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    if (i >= n) return false;
    *col0 = i;
    size_t k = 0;
    char quote = 0;
    for (; i < n && (quote || (s[i] != ' ' && s[i] != '\t')); i++) {
        if (!quote && (s[i] == '\'' || s[i] == '"')) {
            quote = s[i];
            continue;
        }
        if (quote && s[i] == quote) {
            quote = 0;
            continue;
        }
        if (k + 1 >= wn) {
            *bad = true;
            fs_loc_error_set(err, name, line, col + (int32_t)*col0, "option word too long");
            return false;
        }
        w[k++] = s[i];
    }
    if (quote) {
        *bad = true;
        fs_loc_error_set(err, name, line, col + (int32_t)*col0, "unclosed %c", quote);
        return false;
    }
    w[k] = 0;
    *a = i;
    return true;
}

bool lp_options_parse(const char *s, size_t n, const char *name, int32_t line, int32_t col, lp_set *sets,
                      int *n_sets, fs_loc_error *err)
{
    *n_sets = 0;
    size_t a = 0, at;
    char w[96];
    bool bad = false;
    while (word(s, n, &a, w, sizeof w, &at, name, line, col, err, &bad)) {
        int32_t wcol = col + (int32_t)at;
        const opt_row *r = NULL;
        for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++)
            if (!strcmp(w, rows[k].opt)) r = &rows[k];
        if (!r)
            return fs_loc_error_set(err, name, line, wcol,
                                    "'%s' is not an option a variation takes (--bq --bk --order --form --mask "
                                    "--window --offset --exp2 --pitfall --merge --parts --chunk --softcap "
                                    "--dropout --seed --ring --sharding --fp8)", w);
        for (int k = 0; k < *n_sets; k++)
            if (sets[k].key == r->key)
                return fs_loc_error_set(err, name, line, wcol, "%s sets '%s:' a second time", r->opt,
                                        lp_key_names[r->key]);
        if (*n_sets >= LP_MAX_SETS) return fs_loc_error_set(err, name, line, wcol, "too many options");
        lp_set *e = &sets[(*n_sets)++];
        e->key = r->key;
        e->opt = r->opt;
        e->algos = r->algos;
        e->line = line;
        e->col = wcol;
        if (!r->takes_value) {
            snprintf(e->value, sizeof e->value, "%s", r->fixed);
            continue;
        }
        char v[80];
        if (!word(s, n, &a, v, sizeof v, &at, name, line, col, err, &bad))
            return bad ? false : fs_loc_error_set(err, name, line, wcol, "%s needs a value", r->opt);
        if (v[0] == '-' && v[1] == '-')
            return fs_loc_error_set(err, name, line, col + (int32_t)at, "%s needs a value", r->opt);
        e->col = col + (int32_t)at;
        if (r->key == K_MASK && !r->prefix[0] && strcmp(v, "none") && strcmp(v, "causal"))
            return fs_loc_error_set(err, name, line, e->col, "--mask takes none or causal (--window W for a window)");
        snprintf(e->value, sizeof e->value, "%s%s", r->prefix, v);
    }
    return !bad;
}

int fs_lesson_option_arity(const char *opt)
{
    for (size_t k = 0; opt && k < sizeof rows / sizeof rows[0]; k++)
        if (!strcmp(opt, rows[k].opt)) return rows[k].takes_value ? 1 : 0;
    return -1;
}

bool fs_lesson_options_add(char *buf, size_t n, const char *word)
{
    size_t len = strlen(buf);
    bool quote = !*word || strpbrk(word, " \t\"") != NULL;
    if (quote && strchr(word, '\'')) return false;   /* no way to quote it in a variation */
    int w = snprintf(buf + len, n - len, "%s%s%s%s", len ? " " : "", quote ? "'" : "", word, quote ? "'" : "");
    if (w < 0 || (size_t)w >= n - len) {
        buf[len] = 0;
        return false;
    }
    return true;
}

bool lp_set_applies(const lp_set *e, int algo, bool ring_backward)
{
    if (algo < 0) return false;   /* algo: none runs nothing */
    unsigned bit = ring_backward ? RB : 1u << algo;
    return (e->algos & bit) != 0;
}

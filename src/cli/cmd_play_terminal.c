/* cmd_play_terminal.c: stepping through a lesson in a terminal.
 *
 * Pages, in order:
 *   before step 0   the intro (when the lesson has one), the lesson's matrices (Q, K, V, and dO,
 *                   z or S when the run has them; when it runs anything), and the mask as a grid
 *                   of cells with its tiles' classes (when the run has a mask);
 *   the steps       one per event of the trace, numbered by the trace's own 0-based index (the
 *                   number lesson files, `trace --format jsonl`, the window and the page's URL
 *                   use): "step 13 of 0–21". A lesson that runs nothing (its claims only) gets
 *                   one step per claim instead: the claim, the expression, the exact value, the
 *                   printed number and the verdict in words;
 *   the checks      for a lesson with a trace: the numbers it checks, as many per page as the
 *                   terminal's height holds ("checks, page 2 of 3");
 *   the ending      the summary (what the lesson showed, the formula to keep, the next lesson of
 *                   the course) and its "try this": the command that plays the variation, to
 *                   copy (or, in a variation, the command back to the lesson as written).
 * Every page starts with the lesson's title. The viewer never recomputes, so going back is as
 * cheap as going forward.
 *
 * Interactive when stdin and stdout are terminals (keys in usage() below; m and t show the
 * matrices and the mask over any page until the next key, m those of the step's own head).
 * Otherwise (or with --all) every page is printed in order, from --step N when given, and with
 * several heads each head's matrices before its first step.
 *
 * Height: rows from TIOCGWINSZ when stdout is a terminal, else $LINES, else 24; width: columns
 * likewise from $COLUMNS, then from stderr's terminal (output piped to a pager), at most 96, at
 * least 40.
 */
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "io/text.h"
#include "lesson/lesson.h"

#define WIDTH 96        /* the widest text is wrapped (narrower when the terminal is) */
#define MIN_WIDTH 40
#define HEIGHT 24       /* rows when neither the terminal nor $LINES says */
#define MIN_HEIGHT 12
#define GRID_CELLS 32   /* a mask is drawn cell by cell up to this many rows and keys */

static void usage(FILE *f)
{
    fprintf(f, "usage: flashstep play [LESSON] --terminal [--all] [--step N] [--digits N] [--no-questions]\n"
               "                      [VARIATION OPTIONS]\n\n"
               "Step through a lesson in the terminal: first the lesson's introduction, its matrices\n"
               "and its mask; then each step's narration and what the engine did, with the formula\n"
               "filled in; then the numbers the lesson checks. Steps carry the trace's own 0-based\n"
               "index (\"step 13 of 0-21\"), as lesson files, `trace --format jsonl` and the window do.\n"
               "A lesson that only checks claims gets one step per claim. LESSON is a path or a file\n"
               "stem (or a unique prefix of one, e.g. 000_01); the first lesson by default.\n\n"
               "keys: Enter, Right, Space or n: next   Backspace, Left or p: back\n"
               "      s or Tab / S: next / previous milestone, a significant step (rescale, skip,\n"
               "         merge, output)\n"
               "      c / C: next / previous narrated step (one the lesson explains in its words)\n"
               "      ] / [: next / previous tile (a tile pair computed or skipped)\n"
               "      m: the matrices   t: the mask and its tiles   y: the glossary, every symbol and\n"
               "         the lesson that defines it (y again: its next page; any other key returns)\n"
               "      a: questions on / off (on by default: before the steps that matter the player asks\n"
               "         for the next number; type it and Enter, or just Enter to see it)\n"
               "      Home or g: first page   End or G: the last step (the checks follow it);\n"
               "         again: the last page   q: quit\n\n"
               "  --all        print every page in order and exit (also when stdin is not a terminal)\n"
               "  --step N     open at step N (with --all: print from step N on)\n"
               "  --digits N   decimals in the numbers (default 4)\n"
               "  --no-questions  ask nothing (for a teacher projecting the lesson); with --all, print\n"
               "               no questions (otherwise each is printed before its step, with its answer)\n"
               "  --terminal   accepted for `flashstep play` (this is the terminal player)\n\n"
               "The last page sums the lesson up and offers its variation (\"try this\"): the lesson's\n"
               "own problem with some settings changed, played by giving them as options:\n"
               "  --bq N --bk N --order q-outer|kv-outer --form F --mask none|causal --window W\n"
               "  --offset N --exp2 --pitfall NAME --merge M --parts P --chunk N --softcap C\n"
               "  --dropout P --seed S --ring P --sharding S --fp8 RECIPE\n"
               "(each sets the lesson key of that name; the lesson's own narration and checks are left out).\n");
}

/* ---- the terminal's size ----------------------------------------------------------------- */

/* The terminal's width (rows false) or height (rows true) when stdout is a terminal, else
 * $COLUMNS or $LINES when set, else (the width of `play --all | less`, whose reader sits at the
 * terminal stderr still writes to) stderr's terminal's width, else 0. */
static long term_dim(bool rows)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && (rows ? ws.ws_row : ws.ws_col) > 0)
        return rows ? ws.ws_row : ws.ws_col;
    const char *env = getenv(rows ? "LINES" : "COLUMNS");
    if (env) return strtol(env, NULL, 10);
    if (!rows && isatty(STDERR_FILENO) && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 0;
}

/* Columns to wrap at: term_dim's width, never more than WIDTH (long lines are hard to read) nor
 * less than MIN_WIDTH. */
static int text_width(void)
{
    long w = term_dim(false);
    if (w <= 0 || w > WIDTH) return WIDTH;
    return w < MIN_WIDTH ? MIN_WIDTH : (int)w;
}

/* Rows a page may take: term_dim's height, else HEIGHT; at least MIN_HEIGHT. */
static int text_height(void)
{
    long h = term_dim(true);
    if (h <= 0 || h > 10000) return HEIGHT;
    return h < MIN_HEIGHT ? MIN_HEIGHT : (int)h;
}

/* ---- text ---------------------------------------------------------------------------------- */

/* Columns a UTF-8 string takes (one per code point). */
static int cols(const char *s) { return fs_text_cols(s, strlen(s)); }

/* Print s wrapped at width columns (fs_text_wrap), every line indented by indent spaces. */
static void wrap(FILE *f, const char *s, int indent, int width)
{
    fprintf(f, "%*s", indent, "");
    fs_text_wrap(f, s, indent, indent, width);
}

/* A heading followed by a rule of at most max_dashes "─" that ends within width columns (a
 * heading longer than width is cut at a character). */
static void heading(FILE *f, const char *text, int max_dashes, int width)
{
    size_t b = fs_text_cut(text, width);
    int len = fs_text_cols(text, b);
    fwrite(text, 1, b, f);
    for (int i = 0; i < max_dashes && len + i < width; i++) fputs("─", f);
    fputc('\n', f);
}

/* A line without its trailing spaces, then a newline. */
static void puts_trimmed(FILE *f, char *line)
{
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == ' ') line[--n] = 0;
    fprintf(f, "%s\n", line);
}

/* Lines a printing function would write: it writes into memory and the newlines are counted. */
typedef struct player player;
typedef void (*printer)(FILE *f, const player *p, int64_t arg);
static int lines_of(printer fn, const player *p, int64_t arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return 1;
    fn(m, p, arg);
    fclose(m);
    int n = 0;
    for (size_t i = 0; i < len; i++) n += buf[i] == '\n';
    free(buf);
    return n;
}

/* ---- the player's pages -------------------------------------------------------------------- */

typedef enum { PRE_INTRO, PRE_MATRICES, PRE_MASK, PRE_GLOSSARY } pre_page;   /* the last: an overlay only */
#define MAX_INTRO_PAGES 8

struct player {
    const fs_lesson *l;
    const fs_trace *t;      /* NULL or empty for a claims-only lesson */
    int64_t n;              /* events in the trace */
    bool claim_steps;       /* no events: one step per claim */
    int64_t n_steps;        /* n, or the number of claims */
    int digits, width, height;
    bool screen;            /* interactive: pages fit the height; --all: matrices and masks may be longer */
    bool first_page;        /* the page being sized is the first (its header names the source) */
    pre_page pre[MAX_INTRO_PAGES + 2];   /* the pages before step 0 */
    int pre_arg[MAX_INTRO_PAGES + 2];    /* PRE_INTRO: which part of the intro */
    int n_pre;
    int n_intro;                         /* the intro's pages: lines intro_start[i] .. [i + 1] − 1 */
    int intro_start[MAX_INTRO_PAGES + 1];
    int *check_first;       /* first claim of each checks page, and one past the last */
    int n_check_pages;      /* 0 for a claims-only lesson */
    int n_end;              /* 1: the ending page, after the checks */
    /* questions (fs_lesson_questions), asked before the step they name when `ask` is on */
    fs_question *q;
    bool *answered;
    int nq, asked, right;
    bool ask;
    /* several query heads: the step where each head's first event is (−1: none), so that its
     * matrices come before it; NULL with one head */
    int64_t *head_first;
    int32_t n_heads;
};

static int64_t page_count(const player *p) { return p->n_pre + p->n_steps + p->n_check_pages + p->n_end; }

/* The title, kept on every page. */
static void title(FILE *f, const player *p, int64_t unused)
{
    (void)unused;
    wrap(f, fs_lesson_title(p->l), 0, p->width);
}

/* The title, and where it comes from: the first page's (and --all's) header. */
static void header(FILE *f, const player *p, int64_t unused)
{
    (void)unused;
    char from[700], words[600];
    title(f, p, 0);
    const char *src = fs_lesson_source(p->l);
    fs_source_words(src, words, sizeof words);   /* the document by its title, and its file */
    if (fs_document_title(src)) snprintf(from, sizeof from, "from %s (%.*s)", words, (int)strcspn(src, ","), src);
    else snprintf(from, sizeof from, "from %s", words);
    wrap(f, from, 0, p->width);
}

/* "step 13 of 0–21": the 0-based index and the range of indices, as the window shows it. */
static void step_label(const player *p, int64_t s, char *buf, size_t n)
{
    snprintf(buf, n, "step %lld of 0–%lld", (long long)s, (long long)(p->n_steps - 1));
}

/* Where page k is, in the words the footer and headings use. */
static void position(const player *p, int64_t k, char *buf, size_t n)
{
    if (k < p->n_pre) snprintf(buf, n, "before step 0 (%lld of %d)", (long long)k + 1, p->n_pre);
    else if (k < p->n_pre + p->n_steps) step_label(p, k - p->n_pre, buf, n);
    else if (k < p->n_pre + p->n_steps + p->n_check_pages)
        snprintf(buf, n, "checks, page %lld of %d", (long long)(k - p->n_pre - p->n_steps) + 1, p->n_check_pages);
    else snprintf(buf, n, "the end");
}

/* ---- the matrices --------------------------------------------------------------------------- */

/* One matrix as a block of text lines (row indices at the left), for the matrices page. */
typedef struct {
    char **line;
    int n_lines, w;    /* w: the widest line, in columns */
} block;

static void block_add(block *b, const char *s)
{
    char **nl = realloc(b->line, sizeof *nl * (size_t)(b->n_lines + 1));
    if (!nl) return;
    b->line = nl;
    b->line[b->n_lines] = strdup(s);
    if (!b->line[b->n_lines]) return;
    int c = cols(s);
    if (c > b->w) b->w = c;
    b->n_lines++;
}

static void block_free(block *b)
{
    for (int i = 0; i < b->n_lines; i++) free(b->line[i]);
    free(b->line);
    b->line = NULL;
    b->n_lines = b->w = 0;
}

/* A number at digits decimals, in scientific notation when it would be long (|x| ≥ 1e6) or show
 * as zero though it is not. Finite inputs only reach here; "inf" and "nan" are spelled out. */
static void num(double x, int digits, char *buf, size_t n)
{
    if (isnan(x)) snprintf(buf, n, "nan");
    else if (isinf(x)) snprintf(buf, n, x < 0 ? "-inf" : "inf");
    else if (x != 0 && (fabs(x) >= 1e6 || fabs(x) < 0.5 * pow(10, -digits)))
        snprintf(buf, n, "%.*e", digits > 2 ? digits - 2 : 1, x);
    else snprintf(buf, n, "%.*f", digits, x);
}

/* Block for the rows × cols matrix at a (row-major), titled name: at most max_rows rows (the
 * first ones, then "… N rows in all") and as many columns as fit within width columns (then
 * "…"). */
static block matrix_block(const char *name, const double *a, int32_t rows, int32_t ncols, int max_rows,
                          int digits, int width)
{
    block b = {0};
    char line[1024], cell[64];
    size_t sym = strcspn(name, ",");   /* "Q, queries" -> "Q (6 × 2): queries" */
    snprintf(line, sizeof line, "%.*s (%d × %d)%s%s", (int)sym, name, rows, ncols, name[sym] ? ":" : "",
             name[sym] ? name + sym + 1 : "");
    block_add(&b, line);
    int shown = rows <= max_rows ? rows : (max_rows > 1 ? max_rows - 1 : 1);
    int iw = snprintf(NULL, 0, "%d", rows - 1);
    /* each column as wide as its widest number among the rows shown; as many columns as fit,
     * the last room kept for "… (N columns)" when some are left out */
    enum { MAX_COLS = 64 };
    int cw[MAX_COLS], room = width - iw - 2, show_cols = 0, used = 0;
    for (int j = 0; j < ncols && j < MAX_COLS; j++) {
        cw[j] = 1;
        for (int i = 0; i < shown; i++) {
            num(a[(size_t)i * (size_t)ncols + (size_t)j], digits, cell, sizeof cell);
            if ((int)strlen(cell) > cw[j]) cw[j] = (int)strlen(cell);
        }
    }
    int tail = snprintf(NULL, 0, " … (%d columns)", ncols);
    for (int j = 0; j < ncols && j < MAX_COLS; j++) {
        bool last = j == ncols - 1;
        if (used + 1 + cw[j] + (last ? 0 : tail) > room && !(last && used + 1 + cw[j] <= room)) break;
        used += 1 + cw[j];
        show_cols++;
    }
    if (show_cols == 0) show_cols = 1;
    for (int i = 0; i < shown; i++) {
        int len = snprintf(line, sizeof line, "%*d │", iw, i);
        for (int j = 0; j < show_cols && len < (int)sizeof line - 80; j++) {
            num(a[(size_t)i * (size_t)ncols + (size_t)j], digits, cell, sizeof cell);
            len += snprintf(line + len, sizeof line - (size_t)len, " %*s", cw[j], cell);
        }
        if (show_cols < ncols) snprintf(line + len, sizeof line - (size_t)len, " … (%d columns)", ncols);
        block_add(&b, line);
    }
    if (shown < rows) {
        snprintf(line, sizeof line, "%*s … %d rows in all", iw, "", rows);
        block_add(&b, line);
    }
    return b;
}

/* The run's matrices as blocks (head 0 only). Returns the count. */
static int run_blocks(const player *p, int32_t head, int max_rows, block *out, int cap)
{
    const fs_run *r = fs_lesson_run(p->l);
    int nb = 0;
    if (!r) return 0;
    if (r->algo == FS_ALGO_SOFTMAX) {
        if (r->z && r->n_z > 0 && nb < cap) out[nb++] = matrix_block("z, the scores", r->z, r->n_z, 1, max_rows, p->digits, p->width);
        return nb;
    }
    const fs_attn *a = &r->attn;
    /* head `head`'s rows, and those of the KV head it reads (fs_attn's layout: heads outermost) */
    int32_t g = fs_attn_kv_head(a, head);
    size_t q0 = (size_t)head * (size_t)a->n_q, k0 = (size_t)g * (size_t)a->n_kv;
    if (a->S) {
        if (nb < cap)
            out[nb++] = matrix_block("S, the scores given", a->S + q0 * (size_t)a->n_kv, a->n_q, a->n_kv, max_rows,
                                     p->digits, p->width);
    } else {
        if (a->Q && nb < cap)
            out[nb++] = matrix_block("Q, queries", a->Q + q0 * (size_t)a->d, a->n_q, a->d, max_rows, p->digits, p->width);
        if (a->K && nb < cap)
            out[nb++] = matrix_block("K, keys", a->K + k0 * (size_t)a->d, a->n_kv, a->d, max_rows, p->digits, p->width);
    }
    if (a->V && nb < cap)
        out[nb++] = matrix_block("V, values", a->V + k0 * (size_t)a->d_v, a->n_kv, a->d_v, max_rows, p->digits, p->width);
    if ((r->algo == FS_ALGO_BACKWARD || (r->algo == FS_ALGO_RING && r->ring_backward)) && r->dO && nb < cap)
        out[nb++] = matrix_block("dO, the loss's gradient with respect to O", r->dO + q0 * (size_t)a->d_v, a->n_q, a->d_v,
                                 max_rows, p->digits, p->width);
    return nb;
}

/* Print blocks side by side where they fit in width, in bands, three spaces apart. Returns the
 * lines written (f may be NULL to only count). */
static int lay_out(FILE *f, block *b, int nb, int width)
{
    int lines = 0;
    for (int i = 0; i < nb;) {
        int j = i, w = b[i].w, h = b[i].n_lines;
        while (j + 1 < nb && w + 3 + b[j + 1].w <= width) {
            j++;
            w += 3 + b[j].w;
            if (b[j].n_lines > h) h = b[j].n_lines;
        }
        if (lines > 0) {
            if (f) fputc('\n', f);
            lines++;
        }
        for (int y = 0; y < h; y++) {
            for (int k = i; k <= j && f; k++) {
                const char *s = y < b[k].n_lines ? b[k].line[y] : "";
                fputs(s, f);
                if (k < j)
                    for (int pad = cols(s); pad < b[k].w + 3; pad++) fputc(' ', f);
            }
            if (f) fputc('\n', f);
            lines++;
        }
        i = j + 1;
    }
    return lines;
}

static void footer_lines(FILE *f, const player *p, int64_t k);
static void glossary_page(FILE *f, const player *p, int64_t part);

/* Lines the page frame takes around a page's body on a screen: the title (with the source on
 * the first page), the heading, and the footer after a blank line. */
static int frame_lines(const player *p)
{
    return lines_of(p->first_page ? header : title, p, 0) + 1 + 1 + lines_of(footer_lines, p, 0);
}

/* The matrices page's body: query head `head`'s Q (and dO) and its KV head's K and V. */
static void matrices_page(FILE *f, const player *p, int64_t head)
{
    const fs_run *r = fs_lesson_run(p->l);
    int32_t h = r && r->algo != FS_ALGO_SOFTMAX && head > 0 && head < r->attn.n_q_heads ? (int32_t)head : 0;
    if (h > 0) {
        char title_h[64];
        snprintf(title_h, sizeof title_h, "── head %d's matrices ", h);
        heading(f, title_h, 40, p->width);
    } else {
        heading(f, "── the lesson's matrices ", 40, p->width);
    }
    if (!r) {
        wrap(f, fs_lesson_has_source(p->l) ? "This lesson runs nothing: it checks the document's arithmetic, one claim a step."
                                           : "This lesson runs nothing: it checks its own arithmetic, one claim a step.",
             0, p->width);
        return;
    }
    char line[512];
    int used = 0;
    if (r->algo != FS_ALGO_SOFTMAX) {
        const fs_attn *a = &r->attn;
        int len = snprintf(line, sizeof line, "S = scale · Q Kᵀ with scale %.*g", p->digits + 2, a->scale);
        /* the usual scale named: one over the square root of the head dimension */
        if (!a->S && a->d > 0 && fabs(a->scale - 1 / sqrt((double)a->d)) < 1e-12 * a->scale)
            len += snprintf(line + len, sizeof line - (size_t)len, " = 1/√d, d = %d", a->d);
        if (a->n_q_heads > 1 || a->n_kv_heads > 1)
            snprintf(line + len, sizeof line - (size_t)len, "; head %d of %d query heads (reading KV head %d of %d)", h,
                     a->n_q_heads, fs_attn_kv_head(a, h), a->n_kv_heads);
        if (a->softcap > 0)
            snprintf(line + strlen(line), sizeof line - strlen(line), "; soft-cap %g", a->softcap);
        if (r->algo == FS_ALGO_BACKWARD && !r->dO) strncat(line, "; dO = 1 everywhere", sizeof line - strlen(line) - 1);
        wrap(f, line, 0, p->width);
        used = 1;
    }
    /* as many rows as keep the page within the terminal's height */
    int avail = p->screen ? p->height - frame_lines(p) - used : 40;
    block b[6];
    int best = 2;
    for (int rows = 32; rows >= 2; rows--) {
        int nb = run_blocks(p, h, rows, b, 6);
        int lines = lay_out(NULL, b, nb, p->width);
        for (int i = 0; i < nb; i++) block_free(&b[i]);
        if (lines <= avail) {
            best = rows;
            break;
        }
    }
    int nb = run_blocks(p, h, best, b, 6);
    lay_out(f, b, nb, p->width);
    for (int i = 0; i < nb; i++) block_free(&b[i]);
}

/* ---- the mask as a grid ---------------------------------------------------------------------- */

/* The tiling the mask is cut by, when the run tiles it (else 0). */
static void run_tiles(const fs_run *r, int32_t *bq, int32_t *bk)
{
    *bq = *bk = 0;
    if (r->algo == FS_ALGO_TILED || r->algo == FS_ALGO_BACKWARD) {
        *bq = r->tiling.Bq;
        *bk = r->tiling.Bk;
    }
}

/* A tile's class as one mark: not a letter, which would read as the matrices P and S beside it. */
static const char *class_mark(fs_tile_class c) { return c == FS_TILE_FULL ? "●" : c == FS_TILE_PARTIAL ? "◐" : "○"; }

/* Whether the tiles' classes wait: on a screen, questions on, and a question before step 0 that
 * asks how many tiles are skipped or what class a tile is (fs_question_about_classes) is not
 * answered yet, which the mask page's counts and marks, shown before step 0, would answer. */
static bool classes_wait(const player *p)
{
    if (!p->screen || !p->ask) return false;
    for (int j = 0; j < p->nq; j++)
        if (!p->answered[j] && p->q[j].step == 0 && fs_question_about_classes(&p->q[j])) return true;
    return false;
}

/* The mask page's body: cell by cell (■ visible, · hidden) with the tile boundaries and each
 * tile's class at the right of its first row, when it fits; else the tiles' classes alone; else
 * their counts. Where the classes wait (classes_wait), the cells and the tiles' edges alone. */
static void mask_page(FILE *f, const player *p, int64_t unused)
{
    (void)unused;
    const bool hide = classes_wait(p);
    const fs_run *r = fs_lesson_run(p->l);
    heading(f, "── the mask and its tiles ", 40, p->width);
    if (!r || r->algo == FS_ALGO_SOFTMAX) {
        wrap(f, "This lesson has no attention mask: it works on a vector of scores, or on claims.", 0, p->width);
        return;
    }
    const fs_attn *a = &r->attn;
    const fs_mask *m = &a->mask;
    int32_t nq = a->n_q, nk = a->n_kv, bq, bk;
    run_tiles(r, &bq, &bk);
    bool tiled = bq > 0 && bk > 0;
    if (!tiled) bq = nq, bk = nk;
    int32_t tq = (nq + bq - 1) / bq, tk = (nk + bk - 1) / bk;
    int64_t count[3] = {0, 0, 0};
    for (int32_t i = 0; i < tq; i++)
        for (int32_t j = 0; j < tk; j++) {
            int32_t r1 = (i + 1) * bq < nq ? (i + 1) * bq : nq, c1 = (j + 1) * bk < nk ? (j + 1) * bk : nk;
            count[fs_mask_classify(m, nq, nk, i * bq, r1, j * bk, c1, NULL)]++;
        }
    char line[1024], text[1024];
    int len = snprintf(line, sizeof line, "%s", m->kind == FS_MASK_NONE ? "no mask (every key visible)"
                                                : m->is_tree               ? "tree mask"
                                                                            : fs_mask_kind_str(m->kind));
    if (m->kind == FS_MASK_WINDOW) len += snprintf(line + len, sizeof line - (size_t)len, " of W = %d", m->window);
    if (m->kind == FS_MASK_CAUSAL || m->kind == FS_MASK_WINDOW) len += snprintf(line + len, sizeof line - (size_t)len, " mask");
    len += snprintf(line + len, sizeof line - (size_t)len, ", %d × %d", nq, nk);
    if (tiled && hide)
        snprintf(line + len, sizeof line - (size_t)len, ", tiles Bq × Bk = %d × %d (classes after the questions)",
                 bq, bk);
    else if (tiled)
        snprintf(line + len, sizeof line - (size_t)len, ", tiles Bq × Bk = %d × %d: %lld full, %lld partial, %lld skipped",
                 bq, bk, (long long)count[FS_TILE_FULL], (long long)count[FS_TILE_PARTIAL],
                 (long long)count[FS_TILE_SKIPPED]);
    snprintf(text, sizeof text, "%s", tiled && !hide ? "■ visible · hidden; rows queries, columns keys; ● full, ◐ partial, ○ skipped"
                                                     : "■ visible · hidden; rows are queries, columns keys");
    wrap(f, line, 0, p->width);
    wrap(f, text, 0, p->width);
    /* the lines left for the grid on a screen */
    int avail = 2 * GRID_CELLS;
    if (p->screen) {
        char *buf = NULL;
        size_t blen = 0;
        FILE *mf = open_memstream(&buf, &blen);
        int above = 2;
        if (mf) {
            wrap(mf, line, 0, p->width);
            wrap(mf, text, 0, p->width);
            fclose(mf);
            above = 0;
            for (size_t i = 0; i < blen; i++) above += buf[i] == '\n';
            free(buf);
        }
        avail = p->height - frame_lines(p) - above;
    }
    int iw = snprintf(NULL, 0, "%d", nq - 1);
    /* cell by cell: two columns a key, "│ " between tiles, classes at the right */
    int grid_w = iw + 2 + 2 * nk + (tiled ? 2 * (tk - 1) + (hide ? 0 : 3 + 2 * tk) : 8);   /* untiled: "  ← key" */
    bool seps = tiled && nq + (tq - 1) + 1 <= avail;
    if (nq <= GRID_CELLS && nk <= GRID_CELLS && grid_w <= p->width && (seps || nq + 1 <= avail)) {
        /* the key numbers of each tile's first key */
        len = snprintf(line, sizeof line, "%*s  ", iw, "");
        for (int32_t j = 0; j < nk; j++) {
            if (tiled && j > 0 && j % bk == 0) len += snprintf(line + len, sizeof line - (size_t)len, "  ");
            if (j % (tiled ? bk : 4) == 0) len += snprintf(line + len, sizeof line - (size_t)len, "%-2d", j);
            else len += snprintf(line + len, sizeof line - (size_t)len, "  ");
        }
        snprintf(line + len, sizeof line - (size_t)len, "%s", tiled && !hide ? "  tiles" : tiled ? "" : "  ← key");
        puts_trimmed(f, line);
        for (int32_t i = 0; i < nq; i++) {
            if (seps && i > 0 && i % bq == 0) {
                len = snprintf(line, sizeof line, "%*s  ", iw, "");
                for (int32_t j = 0; j < nk; j++)
                    len += snprintf(line + len, sizeof line - (size_t)len, "%s──", j > 0 && j % bk == 0 ? "┼─" : "");
                puts_trimmed(f, line);
            }
            len = snprintf(line, sizeof line, "%*d  ", iw, i);
            for (int32_t j = 0; j < nk; j++)
                len += snprintf(line + len, sizeof line - (size_t)len, "%s%s", tiled && j > 0 && j % bk == 0 ? "│ " : "",
                                fs_mask_visible(m, nq, nk, i, j) ? "■ " : "· ");
            if (tiled && !hide && i % bq == 0) {
                len += snprintf(line + len, sizeof line - (size_t)len, "  ");
                for (int32_t j = 0; j < tk; j++) {
                    int32_t r1 = i + bq < nq ? i + bq : nq, c1 = (j + 1) * bk < nk ? (j + 1) * bk : nk;
                    len += snprintf(line + len, sizeof line - (size_t)len, "%s ",
                                    class_mark(fs_mask_classify(m, nq, nk, i, r1, j * bk, c1, NULL)));
                }
            }
            puts_trimmed(f, line);
        }
        return;
    }
    /* too many cells: the tiles' classes alone, when they fit */
    if (tiled && !hide && tq + 2 <= avail && iw + 4 + 2 * tk <= p->width && tk <= 2 * GRID_CELLS) {
        int tw = snprintf(NULL, 0, "%d", tq - 1);
        fprintf(f, "%*s  KV tiles 0..%d →\n", tw + 2, "", tk - 1);
        for (int32_t i = 0; i < tq; i++) {
            len = snprintf(line, sizeof line, "Q %*d  ", tw, i);
            for (int32_t j = 0; j < tk; j++) {
                int32_t r1 = (i + 1) * bq < nq ? (i + 1) * bq : nq, c1 = (j + 1) * bk < nk ? (j + 1) * bk : nk;
                len += snprintf(line + len, sizeof line - (size_t)len, "%s ",
                                class_mark(fs_mask_classify(m, nq, nk, i * bq, r1, j * bk, c1, NULL)));
            }
            puts_trimmed(f, line);
        }
        snprintf(line, sizeof line, "(%d × %d cells are too many to draw one by one: each mark is a tile)", nq, nk);
        wrap(f, line, 0, p->width);
        return;
    }
    if (tiled && hide)
        snprintf(line, sizeof line, "(%d × %d cells in %d × %d tiles are too many to draw here)", nq, nk, tq, tk);
    else if (tiled)
        snprintf(line, sizeof line, "(%d × %d cells in %d × %d tiles are too many to draw here: the counts above "
                 "say how the tiles fall)", nq, nk, tq, tk);
    else
        snprintf(line, sizeof line, "(%d × %d cells are too many to draw in %d columns)", nq, nk, p->width);
    wrap(f, line, 0, p->width);
}

/* ---- claims ------------------------------------------------------------------------------ */

/* A verdict in words: "holds", "wrong (an erratum)", "holds in binary units only (…)". */
static void verdict_words(fs_verdict v, const char *reading, char *buf, size_t n)
{
    switch (v) {
    case FS_VERDICT_HOLDS: snprintf(buf, n, "holds"); break;
    case FS_VERDICT_UNITS:
        snprintf(buf, n, "holds in %s units only (K, M, G as powers of %s)", reading,
                 !strcmp(reading, "binary") ? "1024" : "1000");
        break;
    case FS_VERDICT_ROUNDED: snprintf(buf, n, "holds from its own rounded intermediate numbers"); break;
    case FS_VERDICT_APPROX: snprintf(buf, n, "holds as the approximation it says it is"); break;
    case FS_VERDICT_ERRATUM: snprintf(buf, n, "wrong (an erratum)"); break;
    default: snprintf(buf, n, "?"); break;
    }
}

static bool byte_unit(fs_unit u) { return u >= FS_UNIT_B && u <= FS_UNIT_TIB; }

/* The exact value in words: bytes in binary units (KiB, MiB, GiB), with the count of bytes;
 * NaN said in words; other units as they are. */
static void exact_words(const fs_check *c, char *buf, size_t n)
{
    fs_unit u = FS_UNIT_NONE;
    if (!fs_unit_parse(c->unit, &u)) u = FS_UNIT_NONE;
    double x = c->got.exact;
    if (!strcmp(c->exact_text, "differs") || !strcmp(c->exact_text, "same matrix")) {
        snprintf(buf, n, "%s", c->exact_text);
    } else if (isnan(x)) {
        snprintf(buf, n, "not a number (NaN)%s", !strcmp(c->printed, "nan") || !strcmp(c->printed, "NaN")
                                                     ? ", which is the failure this check looks for" : "");
    } else if (byte_unit(u) && isfinite(x)) {
        double bytes = c->got.exact_bin * fs_unit_factor(u, true);
        static const char *bin[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        int e = 0;
        double v = bytes;
        while (e < 4 && fabs(v) >= 1024) v /= 1024, e++;
        int len = snprintf(buf, n, "%.6g %s", v, bin[e]);
        if (e > 0 && fabs(bytes) < 1e15 && bytes == floor(bytes))
            len += snprintf(buf + len, n > (size_t)len ? n - (size_t)len : 0, " (%.0f B)", bytes);
        if (!strcmp(c->got.reading, "decimal") && u != FS_UNIT_B && !(u >= FS_UNIT_KIB))
            snprintf(buf + len, n > (size_t)len ? n - (size_t)len : 0, "; read in decimal units, %.6g %s",
                     c->got.exact_dec, c->unit);
    } else if ((u == FS_UNIT_K || u == FS_UNIT_M || u == FS_UNIT_G) && isfinite(x)) {
        /* a count: in the reading the verdict names (binary: Ki, Mi, Gi), with the count itself */
        bool bin = !strcmp(c->got.reading, "binary");
        double count = c->got.exact_dec * fs_unit_factor(u, false);
        int len = snprintf(buf, n, "%.6g %s%s", bin ? c->got.exact_bin : c->got.exact_dec, c->unit, bin ? "i" : "");
        if (fabs(count) < 1e15 && count == floor(count))
            snprintf(buf + len, n > (size_t)len ? n - (size_t)len : 0, " (%.0f)", count);
    } else if (isinf(x)) {
        snprintf(buf, n, "%s", x < 0 ? "-inf" : "+inf");
    } else {
        snprintf(buf, n, "%s%s%s", c->exact_text, *c->unit ? " " : "", c->unit);
    }
}

/* "~17 KB", "> 100,000", "nan". */
static void printed_words(const fs_check *c, char *buf, size_t n)
{
    bool op = strcmp(c->op, "=") != 0;
    snprintf(buf, n, "%s%s%s%s%s%s", op ? c->op : "", op ? " " : "", c->approx_marked ? "~" : "", c->printed,
             *c->unit ? " " : "", c->unit);
}

/* A printed matrix (rows joined by ';'): a 0/1 mask as rows of ■ (1) and · (0) with their row
 * indices, other matrices one row a line; each line indented. False when printed is no matrix. */
static bool printed_matrix(FILE *f, const char *printed, int indent, int width)
{
    if (!strchr(printed, ';')) return false;
    bool bits = strspn(printed, "01;") == strlen(printed);
    int rows = 1;
    for (const char *c = printed; *c; c++) rows += *c == ';';
    int iw = snprintf(NULL, 0, "%d", rows - 1);
    const char *r = printed;
    for (int i = 0; i < rows; i++) {
        size_t len = strcspn(r, ";");
        char line[1024];
        int at = snprintf(line, sizeof line, "%*s%*d  ", indent, "", iw, i);
        for (size_t j = 0; j < len && at < (int)sizeof line - 8; j++) {
            if (bits) at += snprintf(line + at, sizeof line - (size_t)at, "%s", r[j] == '1' ? "■ " : "· ");
            else line[at++] = r[j], line[at] = 0;
        }
        if (cols(line) > width) {   /* cut at width − 2 columns (whole characters), said so */
            size_t b = fs_text_cut(line, width - 2);
            snprintf(line + b, sizeof line - b, " …");
        }
        puts_trimmed(f, line);
        r += len + (r[len] == ';');
    }
    return true;
}

/* "✓ as recorded" or "✗ the lesson records …": does the tool agree with the lesson's verdict? */
static void agree_words(const fs_check *c, char *buf, size_t n)
{
    if (c->agrees) {
        snprintf(buf, n, "✓ the tool agrees");
        return;
    }
    char rec[256];
    verdict_words(c->expected, c->expected_reading, rec, sizeof rec);
    snprintf(buf, n, "✗ the tool disagrees with the lesson, which records: %s", rec);
}

/* One claim on a checks page: the claim, then printed, exact and the verdict, then why. */
static void claim_lines(FILE *f, const player *p, int64_t i)
{
    const fs_check *c = fs_lesson_check(p->l, (int)i);
    char line[2048], pr[256], ex[256], vw[256], whose[64], tag[80] = "";
    printed_words(c, pr, sizeof pr);
    exact_words(c, ex, sizeof ex);
    verdict_words(c->got.verdict, c->got.reading, vw, sizeof vw);
    fs_check_whose(c, whose, sizeof whose);
    if (c->own) snprintf(tag, sizeof tag, " [%s]", *c->from ? whose : "own check");
    snprintf(line, sizeof line, "%s %s%s", c->agrees ? "✓" : "✗", c->claim, tag);
    wrap(f, line, 0, p->width);
    if (strchr(c->printed, ';')) {   /* a matrix: its rows, then the rest */
        wrap(f, strspn(c->printed, "01;") == strlen(c->printed) ? "printed (■ 1, · 0):" : "printed:", 4, p->width);
        printed_matrix(f, c->printed, 6, p->width);
        snprintf(line, sizeof line, "exact: %s · %s: %s", ex, whose, vw);
    } else {
        snprintf(line, sizeof line, "%s %s · exact %s · %s: %s", c->own && !*c->from ? "expected" : "printed", pr, ex,
                 whose, vw);
    }
    wrap(f, line, 4, p->width);
    if (!c->agrees) {
        agree_words(c, line, sizeof line);
        wrap(f, line, 4, p->width);
    }
    if (c->chain) {
        snprintf(line, sizeof line, "the document's chain: %s", c->chain);
        wrap(f, line, 8, p->width);
    }
    if (*c->why) wrap(f, c->why, 8, p->width);
}

static const char AGREE_NOTE[] = "Each line: what is checked, the number, and the lesson's verdict on it (the words "
                                "after the number: holds, an erratum, rounded...). ✓: the tool worked the number out "
                                "again and reached that verdict; ✗: it did not.";
static const char UNITS_NOTE[] = "Bytes are in binary units (1 KiB = 1024 B, 1 MiB = 1024 KiB, 1 GiB = 1024 MiB); "
                                "a decimal reading (1 KB = 1000 B) is named as such.";

/* Does any claim count bytes? (Then the unit convention is stated.) */
static bool has_bytes(const fs_lesson *l)
{
    for (int i = 0; i < fs_lesson_check_count(l); i++) {
        fs_unit u;
        if (fs_unit_parse(fs_lesson_check(l, i)->unit, &u) && byte_unit(u)) return true;
    }
    return false;
}

/* What the first checks page (or a claims-only lesson's step 0) says once. */
static void notes(FILE *f, const player *p, int64_t claims_only)
{
    if (!claims_only) wrap(f, AGREE_NOTE, 0, p->width);
    if (has_bytes(p->l)) wrap(f, UNITS_NOTE, 0, p->width);
}

/* Checks page cp's body. */
static void checks_page(FILE *f, const player *p, int64_t cp)
{
    int nc = fs_lesson_check_count(p->l);
    char head[160], pos[64];
    position(p, p->n_pre + p->n_steps + cp, pos, sizeof pos);
    snprintf(head, sizeof head, "── the %d number%s this lesson checks · %s ", nc, nc == 1 ? "" : "s", pos + strlen("checks, "));
    if (cols(head) > p->width) snprintf(head, sizeof head, "── checks · %s ", pos + strlen("checks, "));
    heading(f, head, 30, p->width);
    if (nc == 0) {
        fprintf(f, "    (none)\n");
        return;
    }
    if (cp == 0) notes(f, p, 0);
    for (int i = p->check_first[cp]; i < p->check_first[cp + 1]; i++) claim_lines(f, p, i);
}

/* A claims-only lesson's step s: one claim in full. */
static void claim_step(FILE *f, const player *p, int64_t s)
{
    const fs_check *c = fs_lesson_check(p->l, (int)s);
    char line[2048], pr[256], ex[256], vw[256], lab[64];
    step_label(p, s, lab, sizeof lab);
    snprintf(line, sizeof line, "── %s · claim ", lab);
    heading(f, line, 40, p->width);
    if (s == 0 && has_bytes(p->l)) {
        notes(f, p, 1);
        fputc('\n', f);
    }
    char cl[1024];   /* the step's one claim, as a sentence (the checks pages list them as phrases) */
    wrap(f, fs_claim_sentence(c->claim, cl, sizeof cl), 0, p->width);
    if (c->section && *c->section) {
        snprintf(line, sizeof line, "(from §%s)", c->section);
        wrap(f, line, 0, p->width);
    }
    printed_words(c, pr, sizeof pr);
    exact_words(c, ex, sizeof ex);
    verdict_words(c->got.verdict, c->got.reading, vw, sizeof vw);
    const char *expr = c->target;
    if (!strncmp(expr, "expr ", 5)) expr += 5;
    snprintf(line, sizeof line, "the lesson computes: %s", expr);
    wrap(f, line, 4, p->width);
    snprintf(line, sizeof line, "exact result: %s", ex);
    wrap(f, line, 4, p->width);
    char e4[320];   /* an e4m3 rounding: between which two values, and why this one (unless its claim says) */
    if (!strstr(c->claim, "nearer") && !strstr(c->claim, "tie") && *fs_check_e4m3_words(c, e4, sizeof e4)) wrap(f, e4, 4, p->width);
    /* a bound (expect X >= 3.40e38) is what the document claims, not a number it prints */
    snprintf(line, sizeof line, c->own && !*c->from ? "the check expects: %s" : strcmp(c->op, "=") ? "the document claims: %s"
                                                                                       : "the document prints: %s",
             strchr(c->printed, ';') ? "" : pr);
    wrap(f, line, 4, p->width);
    printed_matrix(f, c->printed, 6, p->width);
    char whose[64];
    snprintf(line, sizeof line, "%s: %s", fs_check_whose(c, whose, sizeof whose), vw);
    wrap(f, line, 4, p->width);
    agree_words(c, line, sizeof line);
    strncat(line, c->agrees ? " with the verdict the lesson records" : "", sizeof line - strlen(line) - 1);
    wrap(f, line, 4, p->width);
    if (c->chain) {
        snprintf(line, sizeof line, "the document's own chain: %s", c->chain);
        wrap(f, line, 4, p->width);
    }
    if (*c->why) {
        fputc('\n', f);
        wrap(f, c->why, 0, p->width);
    }
}

/* ---- the ending ------------------------------------------------------------------------- */

/* The lesson's file stem, the name `flashstep play` takes ("000_04_tiled_causal_n6"). */
static void lesson_stem(const fs_lesson *l, char *buf, size_t n)
{
    const char *path = fs_lesson_path(l), *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t len = strlen(base);
    if (len > 7 && !strcmp(base + len - 7, ".lesson")) len -= 7;
    snprintf(buf, n, "%.*s", (int)len, base);
}

/* The last page: the summary in three lines (what the lesson showed; keep: the formula; next:
 * the course's next lesson), then "try this" with the command to copy, or in a variation the
 * command back to the lesson as written. A lesson without a summary says so. */
static void ending_page(FILE *f, const player *p, int64_t unused)
{
    (void)unused;
    const fs_lesson *l = p->l;
    char line[1024], stem[256], next[700];
    heading(f, "── summary ", 40, p->width);
    if (fs_lesson_summary(l)) {
        wrap(f, fs_lesson_summary(l), 0, p->width);
        snprintf(line, sizeof line, "keep: %s", fs_lesson_keep(l));
        wrap(f, line, 0, p->width);
    } else {
        wrap(f, "(this lesson has no summary)", 0, p->width);
    }
    fs_course_next_line(fs_lesson_path(l), next, sizeof next);
    wrap(f, next, 0, p->width);
    char section[512];
    int sec = fs_course_section_end(fs_lesson_path(l), section, sizeof section);
    if (sec > 0) {   /* the end of a section: its quiz */
        fputc('\n', f);
        snprintf(line, sizeof line, "this ends the section \"%s\"; its quiz, five questions on fresh problems:", section);
        wrap(f, line, 0, p->width);
        snprintf(line, sizeof line, "flashstep quiz %d", sec);
        wrap(f, line, 4, p->width);
    }
    lesson_stem(l, stem, sizeof stem);
    if (*fs_lesson_variation(l)) {
        fputc('\n', f);
        snprintf(line, sizeof line, "this was a variation (%s); the lesson as written:", fs_lesson_variation(l));
        wrap(f, line, 0, p->width);
        snprintf(line, sizeof line, "flashstep play %s --terminal", stem);
        wrap(f, line, 4, p->width);
    } else if (fs_lesson_try_label(l)) {
        fputc('\n', f);
        snprintf(line, sizeof line, "try this: %s", fs_lesson_try_label(l));
        wrap(f, line, 0, p->width);
        snprintf(line, sizeof line, "flashstep play %s %s", stem, fs_lesson_try_options(l));
        wrap(f, line, 4, p->width);
    }
}

/* ---- one page --------------------------------------------------------------------------- */

/* A step of the trace: the narration, then the formulas. */
/* Whether event e names a KV head, not a query head: a backward's final dK or dV row. */
static bool kv_headed(const fs_event *e)
{
    return e->kind == FS_EV_GRAD && e->tensor != FS_GRAD_DQ;
}

/* The query head of page k's step (0 where the page is no step or the run has one head); for a
 * final dK or dV row, whose event names its KV head, the query head of the step before it, as the
 * window's backward scene shows. */
static int32_t page_head(const player *p, int64_t k)
{
    int64_t s = k - p->n_pre;
    if (!p->head_first || s < 0 || s >= p->n_steps) return 0;
    while (s > 0 && kv_headed(&p->t->ev[s])) s--;
    int32_t h = kv_headed(&p->t->ev[s]) ? 0 : p->t->ev[s].head;
    return h >= 0 && h < p->n_heads ? h : 0;
}

/* Whether step s is the first of a head other than head 0, whose matrices the pages before step 0
 * do not show. */
static bool head_begins(const player *p, int64_t s)
{
    int32_t h = page_head(p, p->n_pre + s);
    return h > 0 && p->head_first[h] == s;
}

static void step_page(FILE *f, const player *p, int64_t k)
{
    const fs_lesson *l = p->l;
    const fs_trace *t = p->t;
    int width = p->width;
    const fs_event *e = &t->ev[k];
    char head[160], lab[64];
    step_label(p, k, lab, sizeof lab);
    snprintf(head, sizeof head, "── %s · %s ", lab, fs_event_kind_str(e->kind));
    heading(f, head, 40, width);
    char said[4096];   /* the lesson's own words for the step, else the engine's (fs_lesson_say) */
    if (fs_lesson_say(l, t, k, said, sizeof said)) wrap(f, said, 0, width);
    char buf[4096];
    fs_lesson_describe(l, t, k, p->digits, buf, sizeof buf);
    /* one formula per line: split the description at "; " */
    char *q = buf;
    while (q && *q) {
        char *semi = strstr(q, "; ");
        if (semi) *semi = 0;
        wrap(f, q, 4, width);
        q = semi ? semi + 2 : NULL;
    }
    if (p->screen && head_begins(p, k)) {
        char hint[96];
        snprintf(hint, sizeof hint, "(m shows head %d's Q, K and V)", e->head);
        wrap(f, hint, 4, width);
    }
}

static void intro_page(FILE *f, const player *p, int64_t part)
{
    char head[64];
    if (p->n_intro > 1) snprintf(head, sizeof head, "── introduction, %lld of %d ", (long long)part + 1, p->n_intro);
    else snprintf(head, sizeof head, "── introduction ");
    heading(f, head, 40, p->width);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return;
    wrap(m, fs_lesson_intro(p->l), 0, p->width);
    fclose(m);
    int line = 0;
    for (size_t i = 0; i < len; i++) {
        if (line >= p->intro_start[part] && line < p->intro_start[part + 1]) fputc(buf[i], f);
        line += buf[i] == '\n';
    }
    free(buf);
}

/* Page k's body (the title is the caller's). */
static void page(FILE *f, const player *p, int64_t k)
{
    if (k < p->n_pre) {
        switch (p->pre[k]) {
        case PRE_INTRO: intro_page(f, p, p->pre_arg[k]); break;
        case PRE_MATRICES: matrices_page(f, p, 0); break;
        case PRE_MASK: mask_page(f, p, 0); break;
        case PRE_GLOSSARY: glossary_page(f, p, 0); break;   /* never a page of its own */
        }
    } else if (k < p->n_pre + p->n_steps) {
        if (p->claim_steps) claim_step(f, p, k - p->n_pre);
        else step_page(f, p, k - p->n_pre);
    } else if (k < p->n_pre + p->n_steps + p->n_check_pages) {
        checks_page(f, p, k - p->n_pre - p->n_steps);
    } else {
        ending_page(f, p, 0);
    }
}

/* The interactive footer: the keys, then where this is; two lines of at most 80 columns. The
 * position is the page's own when k ≥ 0. */
static void footer_lines(FILE *f, const player *p, int64_t k)
{
    char pos[96];
    position(p, k, pos, sizeof pos);
    /* q quit on the first line, which has room for it at 80 columns, so that the second keeps
     * room for the score and the position beside it */
    /* a claims-only lesson runs nothing: no tiles, mask or matrices to move by or show */
    const char *keys = p->claim_steps ? "→/Enter next · ←/Bksp back · g/G first/last · q quit"
                                      : "→/Enter next · ←/Bksp back · s/S milestone · c/C narrated · ]/[ tile · q quit";
    char more[96];
    if (p->claim_steps && p->asked) snprintf(more, sizeof more, "y glossary · a questions %s, %d/%d right", p->ask ? "on" : "off",
                                             p->right, p->asked);
    else if (p->claim_steps) snprintf(more, sizeof more, "y glossary%s", p->nq ? (p->ask ? " · a questions on" : " · a questions off") : "");
    else if (p->nq == 0) snprintf(more, sizeof more, "m matrices · t mask · y glossary · g/G first/last");
    else if (p->asked) snprintf(more, sizeof more, "m/t/y matrices/mask/glossary · a questions %s, %d/%d right",
                                p->ask ? "on" : "off", p->right, p->asked);
    else snprintf(more, sizeof more, "m matrices · t mask · y glossary · a questions %s", p->ask ? "on" : "off");
    wrap(f, keys, 0, p->width);
    int room = p->width - cols(more) - cols(pos);
    if (room >= 2) fprintf(f, "%s%*s%s\n", more, room, "", pos);
    else fprintf(f, "%s\n%s\n", more, pos);   /* a narrow terminal: the position on a line of its own */
}

/* Cut the claims into checks pages that each fit the terminal's height with the frame. */
static bool paginate(player *p)
{
    int nc = fs_lesson_check_count(p->l);
    free(p->check_first);
    p->check_first = NULL;
    p->n_check_pages = 0;
    if (p->claim_steps) return true;
    p->check_first = malloc(sizeof(int) * (size_t)(nc + 2));
    if (!p->check_first) return false;
    p->check_first[0] = 0;
    if (nc == 0) {
        p->check_first[1] = 0;
        p->n_check_pages = *fs_lesson_variation(p->l) ? 0 : 1;   /* a variation checks nothing */
        return true;
    }
    int budget = p->height - frame_lines(p);
    int conv = lines_of(notes, p, 0);
    int used = conv, np = 0;
    for (int i = 0; i < nc; i++) {
        int h = lines_of(claim_lines, p, i);
        if (i > p->check_first[np] && used + h > budget) {
            p->check_first[++np] = i;
            used = 0;
        }
        used += h;
    }
    p->check_first[++np] = nc;
    p->n_check_pages = np;
    return true;
}

/* ---- the glossary ------------------------------------------------------------------------- */

/* One glossary entry: "ℓ (l)  the running sum …  — 000_00_four_numbers". */
static void glossary_entry(FILE *f, const player *p, int64_t i)
{
    const fs_glossary_entry *g = fs_glossary_get((int)i);
    char line[1024];
    if (strcmp(g->symbol, g->ascii)) snprintf(line, sizeof line, "%s (%s): %s — %s", g->symbol, g->ascii, g->meaning, g->lesson);
    else snprintf(line, sizeof line, "%s: %s — %s", g->symbol, g->meaning, g->lesson);
    wrap(f, line, 0, p->width);
}

/* The glossary cut into pages that fit the screen: the first entry of page `part`, or the count
 * of pages when part < 0. */
static int glossary_first(const player *p, int part)
{
    int budget = p->height - frame_lines(p) - 1, first = 0, page_no = 0, used = 0;
    if (budget < 3) budget = 3;
    for (int i = 0; i < fs_glossary_count(); i++) {
        int h = lines_of(glossary_entry, p, i);
        if (i > first && used + h > budget) {
            if (page_no == part) return first;
            page_no++;
            first = i;
            used = 0;
        }
        used += h;
    }
    return part < 0 ? page_no + 1 : part == page_no ? first : -1;
}

/* Glossary page `part` (every symbol, its meaning, the lesson that defines it). */
static void glossary_page(FILE *f, const player *p, int64_t part)
{
    int pages = glossary_first(p, -1), first = glossary_first(p, (int)part);
    int last = part + 1 < pages ? glossary_first(p, (int)part + 1) : fs_glossary_count();
    char head[128];
    snprintf(head, sizeof head, "── glossary, %lld of %d: each symbol and the lesson that defines it ", (long long)part + 1,
             pages);
    heading(f, head, 20, p->width);
    for (int i = first; i >= 0 && i < last; i++) glossary_entry(f, p, i);
}

/* ---- questions -------------------------------------------------------------------------- */

/* The step a question is asked before: its step, or for a claim on a claims-only lesson the
 * claim's own step; a claim of a lesson with a trace is asked before the first checks page. */
static int64_t question_page(const player *p, const fs_question *q)
{
    if (q->step >= 0) return p->n_pre + q->step;
    if (p->claim_steps && q->check >= 0) return p->n_pre + q->check;
    return p->n_pre + p->n_steps;
}

/* The first question not yet answered that is asked before page k, or −1. */
static int pending(const player *p, int64_t k)
{
    if (!p->ask) return -1;
    for (int i = 0; i < p->nq; i++)
        if (!p->answered[i] && question_page(p, &p->q[i]) == k) return i;
    return -1;
}

/* A question's page body: the prompt, the choices, where to type. */
static void question_page_body(FILE *f, const player *p, int64_t i)
{
    const fs_question *q = &p->q[i];
    char head[128], lab[64];
    int64_t at = question_page(p, q) - p->n_pre;
    if (at < p->n_steps) step_label(p, at, lab, sizeof lab);
    else snprintf(lab, sizeof lab, "the checks");
    snprintf(head, sizeof head, "── a question before %s ", lab);
    heading(f, head, 40, p->width);
    wrap(f, q->prompt, 0, p->width);
    if (!q->numeric) {
        char line[256] = "";
        for (int o = 0; o < q->n_options; o++) {
            size_t len = strlen(line);
            char name[112];
            snprintf(line + len, sizeof line - len, "%s%d %s", o ? "   " : "", o + 1, fs_question_option(q, o, name, sizeof name));
        }
        wrap(f, line, 4, p->width);
    }
}

/* --all: the question, then its answer and why, as a check for a reader. */
static void question_printed(FILE *f, const player *p, int i)
{
    question_page_body(f, p, i);
    const fs_question *q = &p->q[i];
    char ans[128], line[1024];
    snprintf(line, sizeof line, "Answer: %s. %s", fs_question_answer(q, ans, sizeof ans), q->why);
    wrap(f, line, 4, p->width);
}

/* ---- keys ------------------------------------------------------------------------------- */

typedef enum {
    KEY_NONE, KEY_NEXT, KEY_BACK, KEY_FIRST, KEY_LAST, KEY_SIG_NEXT, KEY_SIG_BACK, KEY_NAR_NEXT, KEY_NAR_BACK,
    KEY_TILE_NEXT, KEY_TILE_BACK, KEY_MATRICES, KEY_MASK, KEY_ASK, KEY_GLOSSARY, KEY_QUIT
} play_key;

static play_key read_key(void)
{
    unsigned char c;
    if (read(STDIN_FILENO, &c, 1) != 1) return KEY_QUIT;
    switch (c) {
    case '\r': case '\n': case ' ': case 'n': case 'l': return KEY_NEXT;
    case 127: case 8: case 'p': case 'h': return KEY_BACK;
    case 'q': case 'Q': case 3: case 4: return KEY_QUIT;
    case 'g': return KEY_FIRST;
    case 'G': return KEY_LAST;
    case 's': case '\t': return KEY_SIG_NEXT;
    case 'S': return KEY_SIG_BACK;
    case 'c': return KEY_NAR_NEXT;
    case 'C': return KEY_NAR_BACK;
    case ']': return KEY_TILE_NEXT;
    case '[': return KEY_TILE_BACK;
    case 'm': return KEY_MATRICES;
    case 't': return KEY_MASK;
    case 'a': return KEY_ASK;
    case 'y': return KEY_GLOSSARY;
    case 27: {
        unsigned char s[3];
        if (read(STDIN_FILENO, &s[0], 1) != 1) return KEY_QUIT;
        if (s[0] != '[' && s[0] != 'O') return KEY_NONE;
        if (read(STDIN_FILENO, &s[1], 1) != 1) return KEY_QUIT;
        switch (s[1]) {
        case 'C': return KEY_NEXT;
        case 'D': return KEY_BACK;
        case 'H': return KEY_FIRST;
        case 'F': return KEY_LAST;
        case '1': case '7': case '4': case '8':
            if (read(STDIN_FILENO, &s[2], 1) != 1) return KEY_QUIT;
            return (s[1] == '1' || s[1] == '7') ? KEY_FIRST : KEY_LAST;
        default: return KEY_NONE;
        }
    }
    default: return KEY_NONE;
    }
}

/* Is step s a chapter of the kind the key asks for: a step the lesson narrates, or a tile pair's
 * own event (computed or skipped, forward or backward)? */
static bool is_mark(const player *p, int64_t s, bool narrated)
{
    if (p->claim_steps) return true;
    if (narrated) return fs_lesson_narration(p->l, s) != NULL;
    fs_event_kind k = p->t->ev[s].kind;
    return k == FS_EV_TILE || k == FS_EV_SKIP || k == FS_EV_BTILE || k == FS_EV_BSKIP;
}

/* The page of the next (dir 1) or previous (dir −1) mark after page k, or k when there is none. */
static int64_t seek_mark(const player *p, int64_t k, int dir, bool narrated)
{
    int64_t s = k - p->n_pre;   /* the step k is at; −1 before step 0, n_steps in the checks */
    if (s < -1) s = -1;
    if (s > p->n_steps) s = p->n_steps;
    for (s += dir; s >= 0 && s < p->n_steps; s += dir)
        if (is_mark(p, s, narrated)) return p->n_pre + s;
    return k;
}

/* ---- the command ------------------------------------------------------------------------- */

static void player_init(player *p, const fs_lesson *l, int digits)
{
    memset(p, 0, sizeof *p);
    p->l = l;
    p->t = fs_lesson_trace(l);
    p->n = p->t ? p->t->n : 0;
    p->claim_steps = p->n == 0 && fs_lesson_check_count(l) > 0;
    p->n_steps = p->claim_steps ? fs_lesson_check_count(l) : p->n;
    p->digits = digits;
    p->n_end = 1;
    const fs_run *r = fs_lesson_run(l);
    if (r && r->algo != FS_ALGO_SOFTMAX && r->attn.n_q_heads > 1 && !p->claim_steps &&
        (p->head_first = malloc(sizeof(int64_t) * (size_t)r->attn.n_q_heads))) {
        p->n_heads = r->attn.n_q_heads;
        for (int32_t h = 0; h < p->n_heads; h++) p->head_first[h] = -1;
        for (int64_t k = 0; k < p->n; k++) {
            int32_t h = p->t->ev[k].head;
            if (!kv_headed(&p->t->ev[k]) && h >= 0 && h < p->n_heads && p->head_first[h] < 0) p->head_first[h] = k;
        }
    }
}

/* The pages before step 0: the intro (on a screen, cut into pages that fit it, the first one
 * under the source line), the matrices, the mask. */
static void build_pre(player *p)
{
    const fs_lesson *l = p->l;
    p->n_pre = p->n_intro = 0;
    if (*fs_lesson_intro(l)) {
        int lines = 1 << 30;
        bool blank[512] = {false};   /* which of the first lines are blank (paragraphs end there) */
        if (p->screen) {
            char *buf = NULL;
            size_t len = 0;
            FILE *m = open_memstream(&buf, &len);
            if (m) {
                wrap(m, fs_lesson_intro(l), 0, p->width);
                fclose(m);
                lines = 0;
                for (size_t i = 0; i < len; i++) {
                    if (buf[i] == '\n' && (i == 0 || buf[i - 1] == '\n') && lines < 512) blank[lines] = true;
                    lines += buf[i] == '\n';
                }
                free(buf);
            }
        }
        p->intro_start[0] = 0;
        for (int at = 0; at < lines && p->n_intro < MAX_INTRO_PAGES;) {
            p->first_page = p->n_intro == 0;
            int room = p->screen ? p->height - frame_lines(p) : lines;
            if (room < 4) room = 4;
            int to = p->n_intro == MAX_INTRO_PAGES - 1 || at + room > lines ? lines : at + room;
            if (to < lines)   /* end the page at a paragraph's end when one is in its second half */
                for (int b = to - 1; b > at + room / 2; b--)
                    if (b < 512 && blank[b]) {
                        to = b + 1;
                        break;
                    }
            at = to;
            p->pre_arg[p->n_pre] = p->n_intro;
            p->pre[p->n_pre++] = PRE_INTRO;
            p->intro_start[++p->n_intro] = at;
        }
        p->first_page = false;
    }
    const fs_run *r = fs_lesson_run(l);
    if (r) {
        p->pre[p->n_pre++] = PRE_MATRICES;
        if (r->algo != FS_ALGO_SOFTMAX && r->algo != FS_ALGO_QUERY &&
            (r->attn.mask.kind != FS_MASK_NONE || r->algo == FS_ALGO_TILED || r->algo == FS_ALGO_BACKWARD))
            p->pre[p->n_pre++] = PRE_MASK;
    }
    if (p->n_pre == 0) p->pre[p->n_pre++] = PRE_MATRICES;   /* says that nothing runs */
}

/* Take the terminal's size again and cut the intro and the checks pages for it. */
static void player_size(player *p)
{
    p->width = text_width();
    p->height = text_height();
    p->first_page = false;
    build_pre(p);
    paginate(p);
}

static void player_free(player *p)
{
    free(p->head_first);
    free(p->check_first);
    free(p->q);
    free(p->answered);
}

/* Draw a screen: the title, a body, the footer line at the foot. */
static void screen(const player *p, printer body, int64_t arg, const char *foot)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return;
    title(m, p, 0);
    body(m, p, arg);
    fclose(m);
    int used = 0;
    for (size_t i = 0; i < len; i++) used += buf[i] == '\n';
    fputs("\033[H\033[2J", stdout);
    fwrite(buf, 1, len, stdout);
    free(buf);
    for (int i = used; i < p->height - 2; i++) fputc('\n', stdout);
    wrap(stdout, foot, 0, p->width);
    fflush(stdout);
}

/* The feedback after an answer, under the question. */
typedef struct {
    const player *p;
    int i;
    const char *feedback;
} answered_page;

static void feedback_body(FILE *f, const player *p, int64_t arg)
{
    const answered_page *a = (const answered_page *)(intptr_t)arg;
    question_page_body(f, p, a->i);
    fputc('\n', f);
    wrap(f, a->feedback, 0, p->width);
}

/* Is another byte on its way within ms milliseconds? (what follows an escape byte: a key's
 * sequence comes at once, a lone Esc does not) */
static bool byte_follows(int ms)
{
    struct pollfd f = {STDIN_FILENO, POLLIN, 0};
    return poll(&f, 1, ms) == 1 && (f.revents & POLLIN);
}

/* One answer typed with the keys coming one at a time, unechoed (the player's own mode): what is
 * printable is echoed and kept, Backspace takes back the last character, Ctrl-U the whole line,
 * Enter ends it (kept with its '\n', as fgets would); a key's escape sequence (an arrow, Home) is
 * read and dropped, so that it neither shows as ^[[C nor lands in the answer; other control
 * characters are ignored. false when the input ends, or Ctrl-D on an empty line. */
static bool read_answer(char *line, size_t cap)
{
    size_t n = 0;
    for (;;) {
        unsigned char c;
        if (read(STDIN_FILENO, &c, 1) != 1) return false;
        if (c == '\r' || c == '\n') break;
        if (c == 4) {
            if (n == 0) return false;
            continue;
        }
        if (c == 127 || c == 8 || c == 21) {   /* Backspace (one character, UTF-8 whole), Ctrl-U (all) */
            while (n > 0) {
                while (n > 0 && ((unsigned char)line[n - 1] & 0xC0) == 0x80) n--;
                if (n > 0) n--;
                fputs("\b \b", stdout);
                if (c != 21) break;
            }
            fflush(stdout);
            continue;
        }
        if (c == 27) {   /* CSI: parameters, then a final byte; SS3: one byte; a lone Esc: nothing */
            unsigned char d;
            if (!byte_follows(50) || read(STDIN_FILENO, &d, 1) != 1) continue;
            if (d == '[')
                while (byte_follows(50) && read(STDIN_FILENO, &d, 1) == 1 && !(d >= 0x40 && d <= 0x7e)) {}
            else if (d == 'O' && byte_follows(50) && read(STDIN_FILENO, &d, 1) != 1)
                return false;   /* the input ended inside the key's sequence */
            continue;
        }
        if (c < 0x20) continue;
        if (n + 2 < cap) {
            line[n++] = (char)c;
            fputc(c, stdout);
            fflush(stdout);
        }
    }
    line[n++] = '\n';
    line[n] = 0;
    fputs("\r\n", stdout);
    fflush(stdout);
    return true;
}

/* Ask the questions that come before page k, one after another: a line typed at a prompt
 * (read_answer where the keys come one at a time, else the terminal's own line mode), judged, its
 * feedback shown until a key. A line of nothing but keys' escape sequences (an arrow pressed to
 * go on) counts as Enter alone: the answer shown, no score. false when the student quits (q at
 * the feedback, or the input ends). */
static bool ask_before(player *p, int64_t k, bool raw_on)
{
    for (int i; (i = pending(p, k)) >= 0;) {
        fputs("\033[H\033[2J", stdout);
        title(stdout, p, 0);
        question_page_body(stdout, p, i);
        const fs_question *q = &p->q[i];
        wrap(stdout, q->numeric && q->digits > 0 ? "\nType your answer, at least two significant digits, and Enter (Enter alone: "
                                                   "see the answer; q alone: quit)."
                                                 : "\nType your answer and Enter (Enter alone: see the answer; q alone: quit).",
             0, p->width);
        fputs("> ", stdout);
        fflush(stdout);
        char line[256], hint[160];
        if (!(raw_on ? read_answer(line, sizeof line) : fgets(line, sizeof line, stdin) != NULL)) return false;
        fs_text_drop_keys(line);
        const char *w = line + strspn(line, " \t");
        if ((w[0] == 'q' || w[0] == 'Q') && w[1 + strspn(w + 1, " \t\r")] == '\n' && !fs_question_readable(q, w)) return false;
        /* a number with a unit: asked again, the number alone, nothing shown or counted */
        while (fs_question_unit_hint(q, line, hint, sizeof hint)) {
            wrap(stdout, hint, 0, p->width);
            fputs("> ", stdout);
            fflush(stdout);
            if (!(raw_on ? read_answer(line, sizeof line) : fgets(line, sizeof line, stdin) != NULL)) return false;
            fs_text_drop_keys(line);
        }
        char fb[2048];
        bool ok = fs_question_judge(q, line, fb, sizeof fb);
        p->answered[i] = true;
        if (fs_question_readable(q, line)) {   /* a word, a unit, an empty line: the answer shown, no mark */
            p->asked++;
            p->right += ok;
        }
        answered_page a = {p, i, fb};
        char foot[128];
        snprintf(foot, sizeof foot, "any key: on to the step · q quit   (%d of %d right so far)", p->right, p->asked);
        screen(p, feedback_body, (int64_t)(intptr_t)&a, foot);
        if (read_key() == KEY_QUIT) return false;
    }
    return true;
}

int cli_play_terminal(int argc, char **argv)
{
    bool all = false, no_questions = false;
    int digits = 4;
    long long start = -1;
    const char *name = NULL;
    char opts[512] = "";   /* a variation: play options that set the lesson's keys (--bq 3 --bk 2) */
    for (int i = 1; i < argc; i++) {
        int arity = fs_lesson_option_arity(argv[i]);
        if (arity >= 0) {
            if ((arity && i + 1 == argc) || !fs_lesson_options_add(opts, sizeof opts, argv[i]) ||
                (arity && !fs_lesson_options_add(opts, sizeof opts, argv[++i]))) {
                fprintf(stderr, "flashstep play: %s needs a value\n", argv[i]);
                return 2;
            }
            continue;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--terminal")) {
            /* accepted: this is the terminal player */
        } else if (!strcmp(argv[i], "--all")) {
            all = true;
        } else if (!strcmp(argv[i], "--no-questions")) {
            no_questions = true;
        } else if (!strcmp(argv[i], "--digits") || !strcmp(argv[i], "--step")) {
            bool is_step = !strcmp(argv[i], "--step");
            if (i + 1 == argc) {
                fprintf(stderr, "flashstep play: %s needs a value (%s)\n", argv[i],
                        is_step ? "a step number, from 0" : "1 to 12");
                return 2;
            }
            char *end;
            long long d = strtoll(argv[++i], &end, 10);
            if (is_step) {
                if (*end || end == argv[i] || d < 0) {
                    fprintf(stderr, "flashstep play: --step takes a step number, from 0\n");
                    return 2;
                }
                start = d;
            } else {
                if (*end || d < 1 || d > 12) {
                    char shown[64];
                    fs_text_escape_line(argv[i], strlen(argv[i]), shown, sizeof shown);
                    fprintf(stderr, "flashstep play: --digits takes 1 to 12, not '%s'\n", shown);
                    return 2;
                }
                digits = (int)d;
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "flashstep play: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!name) {
            name = argv[i];
        } else {
            fprintf(stderr, "flashstep play: one lesson at a time ('%s' and '%s')\n", name, argv[i]);
            return 2;
        }
    }
    char dir[4096], path[4096];
    bool have_dir = fs_lesson_dir(NULL, dir, sizeof dir);
    if (!name) {
        char **paths;
        int n;
        if (!have_dir || fs_lesson_list(dir, &paths, &n) != 0 || n == 0) {
            fprintf(stderr, "flashstep play: no lessons found (set FLASHSTEP_LESSONS, or name a lesson file)\n");
            return 2;
        }
        snprintf(path, sizeof path, "%s", paths[0]);
        fs_lesson_list_free(paths, n);
    } else if (!fs_lesson_resolve(name, have_dir ? dir : NULL, path, sizeof path)) {
        fprintf(stderr, "flashstep play: %s\n", path);
        return 2;
    }
    fs_lesson *l;
    fs_loc_error err;
    if (!fs_lesson_load_variation(path, opts, "command line", &l, &err)) {
        char msg[1024];
        fs_loc_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    bool interactive = !all && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    player pl;
    player_init(&pl, l, digits);
    pl.screen = interactive;
    player_size(&pl);
    pl.ask = !no_questions;
    pl.nq = fs_lesson_questions(l, digits, NULL, 0);
    pl.q = calloc((size_t)(pl.nq ? pl.nq : 1), sizeof *pl.q);
    pl.answered = calloc((size_t)(pl.nq ? pl.nq : 1), sizeof *pl.answered);
    if (!pl.q || !pl.answered) pl.nq = 0;
    else fs_lesson_questions(l, digits, pl.q, pl.nq);
    if (start >= pl.n_steps) {
        if (pl.n_steps == 0) fprintf(stderr, "flashstep play: --step %lld: this lesson has no steps\n", start);
        else fprintf(stderr, "flashstep play: --step %lld: this lesson's steps are 0–%lld\n", start,
                     (long long)pl.n_steps - 1);
        player_free(&pl);
        fs_lesson_free(l);
        return 2;
    }

    if (!interactive) {
        header(stdout, &pl, 0);
        for (int64_t k = start >= 0 ? pl.n_pre + start : 0; k < page_count(&pl); k++) {
            /* a head's matrices before its first step, so that its numbers can be followed */
            if (k >= pl.n_pre && k < pl.n_pre + pl.n_steps && head_begins(&pl, k - pl.n_pre)) {
                fputc('\n', stdout);
                matrices_page(stdout, &pl, page_head(&pl, k));
            }
            for (int i = 0; pl.ask && i < pl.nq; i++)
                if (question_page(&pl, &pl.q[i]) == k) {
                    fputc('\n', stdout);
                    question_printed(stdout, &pl, i);
                }
            fputc('\n', stdout);
            page(stdout, &pl, k);
        }
        int bad = fs_lesson_check_failures(l);
        player_free(&pl);
        fs_lesson_free(l);
        return bad ? 1 : 0;
    }

    /* init: keys arrive one at a time, unechoed; restored before returning */
    struct termios saved;
    bool raw_on = false;
    if (tcgetattr(STDIN_FILENO, &saved) == 0) {
        struct termios r = saved;
        r.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        r.c_cc[VMIN] = 1;
        r.c_cc[VTIME] = 0;
        raw_on = tcsetattr(STDIN_FILENO, TCSAFLUSH, &r) == 0;
    }
    int64_t k = start >= 0 ? pl.n_pre + start : 0;
    int overlay = -1;   /* PRE_MATRICES, PRE_MASK or PRE_GLOSSARY shown over page k until the next key */
    int gloss = 0;      /* the glossary's page on show */
    const char *note = NULL;   /* said once above the footer: why a key did not move */
    bool quit = false;
    while (!quit) {
        /* draw */
        player_size(&pl);   /* the terminal may have been resized: the intro and checks are cut again */
        if (k >= page_count(&pl)) k = page_count(&pl) - 1;
        /* the page, then the footer at the foot of the screen (its last line without a newline,
         * so that a full screen does not scroll) */
        pl.first_page = k == 0 && overlay < 0;
        char *body = NULL, *foot = NULL;
        size_t blen = 0, flen = 0;
        FILE *bf = open_memstream(&body, &blen), *ff = open_memstream(&foot, &flen);
        if (!bf || !ff) {
            if (bf) fclose(bf);
            if (ff) fclose(ff);
            free(body);
            free(foot);
            break;
        }
        if (pl.first_page) header(bf, &pl, 0);
        else title(bf, &pl, 0);
        if (overlay == PRE_MATRICES) matrices_page(bf, &pl, page_head(&pl, k));
        else if (overlay == PRE_MASK) mask_page(bf, &pl, 0);
        else if (overlay == PRE_GLOSSARY) glossary_page(bf, &pl, gloss);
        else page(bf, &pl, k);
        if (overlay >= 0) {
            char pos[96], line[256];
            position(&pl, k, pos, sizeof pos);
            snprintf(line, sizeof line, "any key: back to %s · q quit", pos);   /* two lines, as the footer's */
            wrap(ff, line, 0, pl.width);
            wrap(ff, "m matrices · t mask · y glossary", 0, pl.width);
        } else {
            footer_lines(ff, &pl, k);
        }
        fclose(bf);
        fclose(ff);
        int used = 0;
        for (size_t i = 0; i < blen; i++) used += body[i] == '\n';
        for (size_t i = 0; i < flen; i++) used += foot[i] == '\n';
        if (flen > 0 && foot[flen - 1] == '\n') flen--;
        fputs("\033[H\033[2J", stdout);
        fwrite(body, 1, blen, stdout);
        for (int i = used; i < pl.height - 1; i++) fputc('\n', stdout);
        if (note) fputs(note, stdout);   /* on the blank line above the footer */
        fputc('\n', stdout);
        note = NULL;
        fwrite(foot, 1, flen, stdout);
        free(body);
        free(foot);
        fflush(stdout);
        /* update */
        int64_t last = page_count(&pl) - 1, was_k = k;
        play_key key = read_key();
        if (overlay >= 0) {
            int was = overlay;
            overlay = -1;
            if (key == KEY_QUIT) quit = true;
            else if (key == KEY_MATRICES && was != PRE_MATRICES) overlay = PRE_MATRICES;
            else if (key == KEY_MASK && was != PRE_MASK) overlay = PRE_MASK;
            else if (key == KEY_GLOSSARY) {   /* the next glossary page, after the last the first */
                gloss = was == PRE_GLOSSARY ? (gloss + 1) % glossary_first(&pl, -1) : 0;
                overlay = PRE_GLOSSARY;
            }
            continue;
        }
        switch (key) {
        case KEY_NEXT: if (k < last) k++; break;
        case KEY_BACK: if (k > 0) k--; break;
        case KEY_FIRST: k = 0; break;
        case KEY_LAST: {   /* the last step first, so that the checks after it are not jumped over */
            const int64_t last_step = pl.n_pre + pl.n_steps - 1;
            k = pl.n_steps > 0 && k < last_step ? last_step : last;
            break;
        }
        case KEY_SIG_NEXT: /* the next rescale, skip, merge or output (trace.h); past them, the checks */
            if (k >= pl.n_pre + pl.n) {
                if (k < last) k++;
                break;
            }
            if (k < pl.n_pre) k = pl.n_pre - 1;
            do k++; while (k < pl.n_pre + pl.n && !fs_event_significant(&pl.t->ev[k - pl.n_pre]));
            break;
        case KEY_SIG_BACK:
            if (k <= pl.n_pre) {
                if (k > 0) k--;
                break;
            }
            if (k > pl.n_pre + pl.n) k = pl.n_pre + pl.n;
            do k--; while (k > pl.n_pre && !fs_event_significant(&pl.t->ev[k - pl.n_pre]));
            break;
        case KEY_NAR_NEXT: case KEY_NAR_BACK: case KEY_TILE_NEXT: case KEY_TILE_BACK: {
            bool narrated = key == KEY_NAR_NEXT || key == KEY_NAR_BACK;
            int way = key == KEY_NAR_NEXT || key == KEY_TILE_NEXT ? 1 : -1;
            int64_t to = seek_mark(&pl, k, way, narrated);
            if (to == k)
                note = narrated ? (way > 0 ? "(no narrated step after this page)" : "(no narrated step before this page)")
                                : (way > 0 ? "(no tile after this page)" : "(no tile before this page)");
            k = to;
            break;
        }
        case KEY_MATRICES: overlay = PRE_MATRICES; break;
        case KEY_MASK: overlay = PRE_MASK; break;
        case KEY_GLOSSARY: overlay = PRE_GLOSSARY; gloss = 0; break;
        case KEY_ASK:
            pl.ask = !pl.ask;
            note = pl.nq == 0 ? "(this lesson asks no questions)"
                   : pl.ask ? "(questions on: asked before the steps they are about)" : "(questions off)";
            break;
        case KEY_QUIT: quit = true; break;
        default: break;
        }
        /* moving forward onto a step with a question: ask it first */
        if (!quit && k > was_k && overlay < 0 && pending(&pl, k) >= 0 && !ask_before(&pl, k, raw_on)) quit = true;
    }
    /* shutdown: the cursor below the footer's last line */
    fputc('\n', stdout);
    if (raw_on) tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    player_free(&pl);
    fs_lesson_free(l);
    return 0;
}

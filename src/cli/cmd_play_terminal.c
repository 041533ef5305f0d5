/* cmd_play_terminal.c: stepping through a lesson in a terminal.
 *
 * The lesson's trace is replayed by index: each page shows the lesson's narration for that
 * step (if any) and what the engine did, with the formula filled in (fs_lesson_describe). The
 * viewer never recomputes, so going back is as cheap as going forward. After the last step,
 * pages list the numbers this lesson checks, with their verdicts.
 *
 * Interactive when stdin and stdout are terminals: Enter/→/Space/n forward, Backspace/←/p back,
 * s/S next/previous significant step, Home/g first, End/G last, q quit. Otherwise (or with --all) every page is printed in order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lesson/lesson.h"

#define WIDTH 96        /* the widest text is wrapped (narrower when the terminal is) */
#define MIN_WIDTH 40
#define CLAIMS_PER_PAGE 14   /* claims listed per page, so a page fits a 40-line terminal */

static void usage(FILE *f)
{
    fprintf(f, "usage: flashstep play [LESSON] --terminal [--all] [--digits N]\n\n"
               "Step through a lesson in the terminal: the narration, then what the engine did at that\n"
               "step with the formula filled in. LESSON is a path or a file stem (or a unique prefix of\n"
               "one, e.g. 000_01); the first lesson by default.\n\n"
               "keys: Enter, Right, Space or n: next step   Backspace, Left or p: back\n"
               "      s or Tab / S: next / previous significant step (a rescale, skip, merge or output)\n"
               "      Home or g: first   End or G: last   q: quit\n\n"
               "  --all        print every step in order and exit (also when stdin is not a terminal)\n"
               "  --digits N   decimals in the numbers (default 4)\n"
               "  --terminal   accepted for `flashstep play` (this is the terminal player)\n");
}

/* Columns to wrap at: the terminal's width when stdout is a terminal, else $COLUMNS when it is
 * set, never more than WIDTH (long lines are hard to read) nor less than MIN_WIDTH. */
static int text_width(void)
{
    long w = 0;
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        w = ws.ws_col;
    else if (getenv("COLUMNS"))
        w = strtol(getenv("COLUMNS"), NULL, 10);
    if (w <= 0 || w > WIDTH) return WIDTH;
    return w < MIN_WIDTH ? MIN_WIDTH : (int)w;
}

/* Print text wrapped at width columns (counting UTF-8 characters), every line indented. */
static void wrap(FILE *f, const char *s, int indent, int width)
{
    int col = 0;
    while (*s) {
        if (*s == '\n') {
            fputc('\n', f);
            col = 0;
            s++;
            continue;
        }
        const char *w = s;
        int len = 0;
        while (*w && *w != ' ' && *w != '\n') {
            if (((unsigned char)*w & 0xC0) != 0x80) len++;
            w++;
        }
        if (col > indent && col + 1 + len > width) {
            fputc('\n', f);
            col = 0;
        }
        if (col == 0) {
            for (int i = 0; i < indent; i++) fputc(' ', f);
            col = indent;
        } else {
            fputc(' ', f);
            col++;
        }
        fwrite(s, 1, (size_t)(w - s), f);
        col += len;
        s = w;
        while (*s == ' ') s++;
    }
    if (col) fputc('\n', f);
}

static void header(FILE *f, const fs_lesson *l, int width)
{
    char from[700], words[600];
    wrap(f, fs_lesson_title(l), 0, width);
    const char *src = fs_lesson_source(l);
    fs_source_words(src, words, sizeof words);   /* the document by its title, and its file */
    if (fs_document_title(src)) snprintf(from, sizeof from, "from %s (%.*s)", words, (int)strcspn(src, ","), src);
    else snprintf(from, sizeof from, "from %s", words);
    wrap(f, from, 0, width);
}

/* A heading followed by a rule of at most max_dashes "─" that ends within width columns. */
static void heading(FILE *f, const char *text, int max_dashes, int width)
{
    int len = 0;
    for (const char *c = text; *c; c++) len += ((unsigned char)*c & 0xC0) != 0x80;
    fputs(text, f);
    for (int i = 0; i < max_dashes && len + i < width; i++) fputs("─", f);
    fputc('\n', f);
}

/* Pages after the steps that list the lesson's checks (at least one, even when empty). */
static int64_t claim_pages(const fs_lesson *l)
{
    int nc = fs_lesson_check_count(l);
    return nc == 0 ? 1 : (nc + CLAIMS_PER_PAGE - 1) / CLAIMS_PER_PAGE;
}

/* Page k: 0 .. n−1 are the steps, then the claims pages; text wrapped at width columns. */
static void page(FILE *f, const fs_lesson *l, int64_t k, int64_t n, int digits, int width)
{
    const fs_trace *t = fs_lesson_trace(l);
    if (k < n) {
        const fs_event *e = &t->ev[k];
        char head[128];
        snprintf(head, sizeof head, "── step %lld of %lld · %s ", (long long)k + 1, (long long)n,
                 fs_event_kind_str(e->kind));
        heading(f, head, 40, width);
        char said[4096]; const char *nar = fs_lesson_say(l, t, k, said, sizeof said) ? said : NULL;
        if (nar) wrap(f, nar, 0, width);
        char buf[4096];
        fs_lesson_describe(l, t, k, digits, buf, sizeof buf);
        /* one formula per line: split the description at "; " */
        char *p = buf;
        while (p && *p) {
            char *semi = strstr(p, "; ");
            if (semi) *semi = 0;
            wrap(f, p, 4, width);
            p = semi ? semi + 2 : NULL;
        }
        return;
    }
    int nc = fs_lesson_check_count(l);
    int64_t cp = k - n, np = claim_pages(l);
    char head[128];
    int hl = snprintf(head, sizeof head, "── the numbers this lesson checks (%d)", nc);
    if (np > 1) snprintf(head + hl, sizeof head - (size_t)hl, ", part %lld of %lld", (long long)cp + 1, (long long)np);
    strncat(head, " ", sizeof head - strlen(head) - 1);
    heading(f, head, 30, width);
    if (nc == 0) fprintf(f, "    (none)\n");
    int i0 = (int)cp * CLAIMS_PER_PAGE, i1 = i0 + CLAIMS_PER_PAGE < nc ? i0 + CLAIMS_PER_PAGE : nc;
    for (int i = i0; i < i1; i++) {
        const fs_check *c = fs_lesson_check(l, i);
        char line[1024];
        snprintf(line, sizeof line, "%s %s: printed %s%s%s%s, exact %s%s%s → %s%s%s%s%s", c->agrees ? "✓" : "✗",
                 c->claim, strcmp(c->op, "=") ? c->op : "", strcmp(c->op, "=") ? " " : "", c->approx_marked ? "~" : "",
                 c->printed, c->exact_text, *c->unit ? " " : "", c->unit, fs_verdict_str(c->got.verdict),
                 *c->got.reading ? " (" : "", c->got.reading, *c->got.reading ? ")" : "", c->own ? " [own check]" : "");
        wrap(f, line, 4, width);
        if (c->chain) {
            snprintf(line, sizeof line, "the document's chain: %s", c->chain);
            wrap(f, line, 8, width);
        }
        if (*c->why) wrap(f, c->why, 8, width);
    }
}

typedef enum { KEY_NONE, KEY_NEXT, KEY_BACK, KEY_FIRST, KEY_LAST, KEY_SIG_NEXT, KEY_SIG_BACK, KEY_QUIT } play_key;

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

int cli_play_terminal(int argc, char **argv)
{
    bool all = false;
    int digits = 4;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--terminal")) {
            /* accepted: this is the terminal player */
        } else if (!strcmp(argv[i], "--all")) {
            all = true;
        } else if (!strcmp(argv[i], "--digits")) {
            if (i + 1 == argc) {
                fprintf(stderr, "flashstep play: --digits needs a value (1 to 12)\n");
                return 2;
            }
            char *end;
            long d = strtol(argv[++i], &end, 10);
            if (*end || d < 1 || d > 12) {
                fprintf(stderr, "flashstep play: --digits takes 1 to 12\n");
                return 2;
            }
            digits = (int)d;
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
    if (!fs_lesson_load(path, &l, &err)) {
        char msg[1024];
        fs_loc_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    const fs_trace *t = fs_lesson_trace(l);
    int64_t n = t ? t->n : 0;
    bool interactive = !all && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    int width = text_width();

    if (!interactive) {
        header(stdout, l, width);
        if (*fs_lesson_intro(l)) {
            fputc('\n', stdout);
            wrap(stdout, fs_lesson_intro(l), 0, width);
        }
        for (int64_t k = 0; k < n + claim_pages(l); k++) {
            fputc('\n', stdout);
            page(stdout, l, k, n, digits, width);
        }
        int bad = fs_lesson_check_failures(l);
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
    int64_t k = 0;
    bool quit = false;
    while (!quit) {
        /* draw */
        width = text_width();   /* the terminal may have been resized */
        fputs("\033[H\033[2J", stdout);
        header(stdout, l, width);
        if (k == 0 && *fs_lesson_intro(l)) {
            fputc('\n', stdout);
            wrap(stdout, fs_lesson_intro(l), 0, width);
        }
        fputc('\n', stdout);
        page(stdout, l, k, n, digits, width);
        char keys[256];
        snprintf(keys, sizeof keys, "[Enter/→ next · Backspace/← back · s/S next/previous rescale, skip, merge, "
                 "output · g first · G last · q quit]   page %lld of %lld",
                 (long long)k + 1, (long long)(n + claim_pages(l)));
        fputc('\n', stdout);
        wrap(stdout, keys, 0, width);
        fflush(stdout);
        /* update */
        switch (read_key()) {
        case KEY_NEXT: if (k < n + claim_pages(l) - 1) k++; break;
        case KEY_BACK: if (k > 0) k--; break;
        case KEY_FIRST: k = 0; break;
        case KEY_LAST: k = n + claim_pages(l) - 1; break;
        case KEY_SIG_NEXT: /* the next rescale, skip, merge or output (trace.h); past them, the claims */
            if (k >= n) {
                if (k < n + claim_pages(l) - 1) k++;
                break;
            }
            do k++; while (k < n && !fs_event_significant(&t->ev[k]));
            break;
        case KEY_SIG_BACK:
            if (k > n) k = n;
            do k--; while (k > 0 && !fs_event_significant(&t->ev[k]));
            if (k < 0) k = 0;
            break;
        case KEY_QUIT: quit = true; break;
        default: break;
        }
    }
    /* shutdown */
    if (raw_on) tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    fs_lesson_free(l);
    return 0;
}

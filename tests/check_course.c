/* check_course.c: the order of ideas. Walking lessons/course.txt in order, no lesson may show a
 * symbol of the glossary (src/lesson/glossary.c) before the lesson that defines it.
 *
 * "Shows" means: the symbol appears as a whole token in what the players print for the lesson:
 * its title, its intro, for every step of its trace the words (fs_lesson_say: the lesson's own
 * narration, else the generated sentence) and the formulas (fs_lesson_describe), and its ending
 * (the summary, the formula to keep and the try's label). Claims are
 * left out: they quote the documents in the documents' own notation. A symbol's ASCII spelling
 * ("l" for ℓ, "alpha" for α) counts as the symbol.
 *
 * A token is a maximal run of letters, digits, '_' and the Greek letters α, β, ℓ; a symbol of
 * several words ("ring step") matches at token boundaries. Four readings are not uses of a
 * symbol: a letter right after an apostrophe ("row's"), big-O notation ("O(n²)"), a name in
 * double quotes (a mention: 002 writes "D" for d) and the name of a position in a lesson that
 * names its positions (000's tree calls position 3 D).
 *
 * Within the lesson that defines a symbol, its words (title, intro, narration) must name the
 * symbol before a formula line of a step shows it.
 *
 * The glossary is checked too: symbols unique, every defining lesson in the course and showing
 * its symbol, and docs/glossary.md listing exactly the same entries. FS_COURSE_SURVEY=1 prints,
 * for every symbol, the first lesson of the course that shows it (to place a new entry).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lesson/lesson.h"
#include "test_util.h"

/* Bytes of the "letter" starting at s (ASCII letter, digit or '_', or one of α β ℓ), or 0. */
static size_t letter_len(const char *s)
{
    unsigned char c = (unsigned char)s[0];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') return 1;
    if (!strncmp(s, "α", strlen("α")) || !strncmp(s, "β", strlen("β")) || !strncmp(s, "σ", strlen("σ"))) return strlen("α");
    if (!strncmp(s, "ℓ", strlen("ℓ"))) return strlen("ℓ");
    return 0;
}

/* Whether a letter ends just before offset i of text. */
static bool letter_before(const char *text, size_t i)
{
    if (i == 0) return false;
    if (letter_len(text + i - 1) == 1) return true;
    if (i >= strlen("α") && letter_len(text + i - strlen("α")) == strlen("α")) return true;
    if (i >= strlen("ℓ") && letter_len(text + i - strlen("ℓ")) == strlen("ℓ")) return true;
    return false;
}

/* Whether symbol sym (or "" for none) occurs at offset i of text as a whole token, read as a
 * symbol: not after an apostrophe, not big-O. */
static bool symbol_at(const char *text, size_t i, const char *sym)
{
    size_t k = strlen(sym);
    if (!k || strncmp(text + i, sym, k) || letter_before(text, i) || letter_len(text + i + k)) return false;
    if (i >= 1 && text[i - 1] == '\'') return false;
    if (i >= strlen("’") && !strncmp(text + i - strlen("’"), "’", strlen("’"))) return false;
    if (!strcmp(sym, "O") && text[i + k] == '(') return false;
    if (i >= 1 && text[i - 1] == '"' && text[i + k] == '"') return false;
    return true;
}

/* The glossary entry (index) shown at offset i of text, the longest that matches (P̃ before P),
 * or −1. */
static int entry_at(const char *text, size_t i)
{
    int best = -1;
    size_t best_len = 0;
    for (int g = 0; g < fs_glossary_count(); g++) {
        const fs_glossary_entry *e = fs_glossary_get(g);
        size_t len = symbol_at(text, i, e->symbol) ? strlen(e->symbol) : 0;
        if (!len && strcmp(e->ascii, e->symbol) && symbol_at(text, i, e->ascii)) len = strlen(e->ascii);
        if (len > best_len) {
            best = g;
            best_len = len;
        }
    }
    return best;
}

/* A few characters around offset i, on one line, for a message. */
static const char *context(const char *text, size_t i, char *buf, size_t n)
{
    size_t a = i > 30 ? i - 30 : 0;
    while (a > 0 && ((unsigned char)text[a] & 0xC0) == 0x80) a--;
    size_t len = strlen(text + a);
    if (len > 70) len = 70;
    while (len > 0 && ((unsigned char)text[a + len] & 0xC0) == 0x80) len--;
    snprintf(buf, n, "%.*s", (int)len, text + a);
    for (char *p = buf; *p; p++)
        if (*p == '\n') *p = ' ';
    return buf;
}

typedef struct {
    const fs_course *c;
    const fs_lesson *l; /* the lesson being scanned (its position names are no symbols) */
    int at;             /* the lesson's place in the course */
    const int *def;     /* per entry: the place of its defining lesson (−1 when not in the course) */
    int *first;         /* per entry: the first place showing it (survey), −1 before */
    bool *shown_here;   /* per entry: shown by the lesson at `at` */
    char *msg;          /* failures, appended */
    size_t msg_n;
    int failures;
} walk;

/* Whether the token at offset i of text is the name of one of l's positions ("D" in 000's tree). */
static bool is_label(const fs_lesson *l, const char *text, size_t i)
{
    for (int32_t p = 0; p < 4096; p++) {
        const char *name = fs_lesson_label(l, p);
        if (!name) return false;
        if (symbol_at(text, i, name)) return true;
    }
    return false;
}

/* Scan one text of the lesson at w->at (where: "intro", "step 3", …), in the order a player shows
 * them. words: the lesson's words (title, intro, narration), else a formula line. In the lesson
 * that defines a symbol, its words must name it before a formula line shows it. */
static void scan(walk *w, const char *text, const char *where, bool words)
{
    for (size_t i = 0; text[i]; i++) {
        if (!letter_len(text + i) || letter_before(text, i)) continue;
        int g = entry_at(text, i);
        if (g < 0 || is_label(w->l, text, i)) continue;
        if (w->def[g] == w->at && !w->shown_here[g] && !words && w->failures++ < 25) {
            char ctx[128];
            size_t len = strlen(w->msg);
            snprintf(w->msg + len, w->msg_n - len, "\n  %s (%s): a formula line shows %s before the lesson's words define it: \"%s\"",
                     w->c->names[w->at], where, fs_glossary_get(g)->symbol, context(text, i, ctx, sizeof ctx));
        }
        w->shown_here[g] = true;
        if (w->first[g] < 0) w->first[g] = w->at;
        if (w->def[g] <= w->at || w->def[g] < 0) continue;
        if (w->failures++ < 25) {
            char ctx[128];
            size_t len = strlen(w->msg);
            snprintf(w->msg + len, w->msg_n - len, "\n  %s (%s) shows %s before %s defines it: \"%s\"",
                     w->c->names[w->at], where, fs_glossary_get(g)->symbol, fs_glossary_get(g)->lesson,
                     context(text, i, ctx, sizeof ctx));
        }
    }
}

/* The tokenizer: whole tokens only, Greek letters as letters, and the readings that are no use of a
 * symbol. */
START_TEST(test_tokens)
{
    /* whole tokens only, and the two readings that are no symbol */
    ck_assert(symbol_at("m = 2", 0, "m"));
    ck_assert(!symbol_at("m_blk = 2", 0, "m"));
    ck_assert(symbol_at("m_blk = 2", 0, "m_blk"));
    ck_assert(!symbol_at("ℓ_blk", 0, "ℓ"));
    ck_assert(symbol_at("α·ℓ_old", strlen("α·"), "ℓ_old"));
    ck_assert(symbol_at("(α)", 1, "α"));
    ck_assert(!symbol_at("the row's sum", strlen("the row'"), "s"));
    ck_assert(!symbol_at("the row’s sum", strlen("the row’"), "s"));
    ck_assert(!symbol_at("O(n²) memory", 0, "O"));
    ck_assert(!symbol_at("002 writes \"D\" for d", strlen("002 writes \""), "D"));
    ck_assert(symbol_at("D = \"x\"", 0, "D"));
    ck_assert(symbol_at("O = P V", 0, "O"));
    ck_assert(symbol_at("n²", 0, "n"));
    ck_assert(!symbol_at("2n", 1, "n"));
    ck_assert(symbol_at("after the ring step.", strlen("after the "), "ring step"));
    ck_assert(!symbol_at("the ring steps", strlen("the "), "ring step"));
    ck_assert_int_eq(entry_at("l = 3", 0), entry_at("ℓ = 3", 0));
    ck_assert_int_ge(entry_at("ℓ = 3", 0), 0);
    ck_assert_int_lt(entry_at("lane", 0), 0);
}
END_TEST

/* The glossary: unique symbols, one sentence each, a defining lesson of the course that shows it;
 * and the course in order shows nothing before it is defined. */
START_TEST(test_course_order)
{
    fs_course c;
    fs_loc_error err;
    ck_assert_msg(fs_course_load("lessons", &c, &err), "%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    int ng = fs_glossary_count();
    ck_assert_int_gt(ng, 0);
    ck_assert_ptr_null(fs_glossary_get(ng));
    ck_assert_ptr_null(fs_glossary_get(-1));
    int *def = calloc((size_t)ng, sizeof *def), *first = calloc((size_t)ng, sizeof *first);
    bool *shown = calloc((size_t)ng, sizeof *shown), *def_shows = calloc((size_t)ng, sizeof *def_shows);
    ck_assert(def && first && shown && def_shows);
    for (int g = 0; g < ng; g++) {
        const fs_glossary_entry *e = fs_glossary_get(g);
        ck_assert_msg(e->symbol && *e->symbol && e->ascii && *e->ascii && e->meaning && *e->meaning,
                      "glossary entry %d is incomplete", g);
        for (int h = 0; h < g; h++) ck_assert_msg(strcmp(fs_glossary_get(h)->symbol, e->symbol), "%s twice", e->symbol);
        def[g] = fs_course_find(&c, e->lesson);
        ck_assert_msg(def[g] >= 0, "glossary: %s is defined in \"%s\", which is not in lessons/course.txt", e->symbol,
                      e->lesson);
        first[g] = -1;
    }

    size_t msg_n = 1 << 14;
    char *msg = calloc(msg_n, 1);
    char *buf = malloc(1 << 16);
    ck_assert(msg && buf);
    walk w = {.c = &c, .def = def, .first = first, .shown_here = shown, .msg = msg, .msg_n = msg_n};
    for (w.at = 0; w.at < c.n; w.at++) {
        char path[512], where[64];
        snprintf(path, sizeof path, "lessons/%s.lesson", c.names[w.at]);
        fs_lesson *l;
        ck_assert_msg(fs_lesson_load(path, &l, &err), "%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
        memset(shown, 0, (size_t)ng * sizeof *shown);
        w.l = l;
        scan(&w, fs_lesson_title(l), "title", true);
        scan(&w, fs_lesson_intro(l), "intro", true);
        const fs_trace *t = fs_lesson_trace(l);
        for (int64_t k = 0; t && k < t->n; k++) {
            snprintf(where, sizeof where, "step %lld", (long long)k + 1);
            fs_lesson_say(l, t, k, buf, 1 << 16);
            scan(&w, buf, where, true);
            fs_lesson_describe(l, t, k, 4, buf, 1 << 16);
            scan(&w, buf, where, false);
        }
        /* the ending, shown after the last step: the summary (words), the formula to keep and the
         * try's label (its next line is the next lesson's title, checked in that lesson) */
        if (fs_lesson_summary(l)) scan(&w, fs_lesson_summary(l), "summary", true);
        if (fs_lesson_keep(l)) scan(&w, fs_lesson_keep(l), "keep", true);
        if (fs_lesson_try_label(l)) scan(&w, fs_lesson_try_label(l), "try", true);
        for (int g = 0; g < ng; g++)
            if (def[g] == w.at && shown[g]) def_shows[g] = true;
        fs_lesson_free(l);
    }
    if (getenv("FS_COURSE_SURVEY"))
        for (int g = 0; g < ng; g++)
            printf("%-12s first shown by %s, defined in %s\n", fs_glossary_get(g)->symbol,
                   first[g] >= 0 ? c.names[first[g]] : "(none)", fs_glossary_get(g)->lesson);
    fflush(stdout);
    ck_assert_msg(!w.failures, "%d places show a symbol before it is defined:%s", w.failures, msg);
    for (int g = 0; g < ng; g++)
        ck_assert_msg(def_shows[g], "glossary: %s is defined in %s, which never shows it", fs_glossary_get(g)->symbol,
                      fs_glossary_get(g)->lesson);
    free(buf);
    free(msg);
    free(def);
    free(first);
    free(shown);
    free(def_shows);
    fs_course_free(&c);
}
END_TEST

/* A check marked from: (another document's figure, checked here) names a lesson of the course
 * that counts the same printed figure among its document's claims, so the figure is counted
 * once, where it is taught. */
START_TEST(test_from_counted)
{
    fs_course c;
    fs_loc_error err;
    ck_assert_msg(fs_course_load("lessons", &c, &err), "%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    int n_from = 0;
    for (int at = 0; at < c.n; at++) {
        char path[512];
        snprintf(path, sizeof path, "lessons/%s.lesson", c.names[at]);
        fs_lesson *l;
        ck_assert_msg(fs_lesson_load(path, &l, &err), "%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
        for (int i = 0; i < fs_lesson_check_count(l); i++) {
            const fs_check *ck = fs_lesson_check(l, i);
            if (!*ck->from) continue;
            n_from++;
            ck_assert_msg(ck->own, "%s:%d: from: without own", path, ck->line);
            /* the stem names one lesson as the player's prefixes do: 001_01 is 001_01_memory_wall */
            int found = -1, matches = 0;
            const size_t fl = strlen(ck->from);
            for (int k = 0; k < c.n; k++)
                if (!strncmp(c.names[k], ck->from, fl) && (c.names[k][fl] == '_' || !c.names[k][fl])) {
                    found = k;
                    matches++;
                }
            ck_assert_msg(matches == 1, "%s:%d: from: %s names %d lessons of the course, not one", path, ck->line,
                          ck->from, matches);
            char other[512];
            snprintf(other, sizeof other, "lessons/%s.lesson", c.names[found]);
            fs_lesson *o;
            ck_assert_msg(fs_lesson_load(other, &o, &err), "%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
            bool counted = false;
            for (int k = 0; k < fs_lesson_check_count(o); k++) {
                const fs_check *x = fs_lesson_check(o, k);
                counted |= !x->own && !strcmp(x->printed, ck->printed) && !strcmp(x->unit, ck->unit);
            }
            ck_assert_msg(counted, "%s:%d: from: %s, but %s counts no claim printed %s %s", path, ck->line, ck->from,
                          ck->from, ck->printed, ck->unit);
            fs_lesson_free(o);
        }
        fs_lesson_free(l);
    }
    ck_assert_int_gt(n_from, 0);   /* 004_08 checks 001's figures */
    fs_course_free(&c);
}
END_TEST

/* docs/glossary.md's table lists exactly the entries of glossary.c, in order: rows
 * "| `symbol` | `ascii` | meaning | `lesson` |". */
START_TEST(test_glossary_doc)
{
    FILE *f = fopen("docs/glossary.md", "r");
    ck_assert_msg(f, "docs/glossary.md cannot be read");
    char line[2048], want[2048];
    int g = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "| `", 3)) continue;
        line[strcspn(line, "\n")] = 0;
        const fs_glossary_entry *e = fs_glossary_get(g);
        ck_assert_msg(e, "docs/glossary.md has more entries than glossary.c (%d): %s", fs_glossary_count(), line);
        snprintf(want, sizeof want, "| `%s` | `%s` | %s | `%s` |", e->symbol, e->ascii, e->meaning, e->lesson);
        ck_assert_msg(!strcmp(line, want), "docs/glossary.md row %d differs from glossary.c:\n  doc:  %s\n  code: %s",
                      g + 1, line, want);
        g++;
    }
    fclose(f);
    ck_assert_msg(g == fs_glossary_count(), "docs/glossary.md lists %d entries, glossary.c %d", g,
                  fs_glossary_count());
}
END_TEST

Suite *course_suite(void)
{
    Suite *s = suite_create("course");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_tokens);
    tcase_add_test(tc, test_course_order);
    tcase_add_test(tc, test_from_counted);
    tcase_add_test(tc, test_glossary_doc);
    suite_add_tcase(s, tc);
    return s;
}

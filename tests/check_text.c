/* check_text.c: file-borne text made safe to show (src/io/text.h), and lessons that keep it so. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/text.h"
#include "lesson/lesson.h"
#include "test_util.h"

static const char *esc(const char *s, char *buf, size_t n)
{
    fs_text_escape(s, strlen(s), buf, n);
    return buf;
}

START_TEST(test_escape_cases)
{
    char b[256];
    ck_assert_str_eq(esc("plain text, tab\there\nand newline", b, sizeof b), "plain text, tab\there\nand newline");
    ck_assert_str_eq(esc("\x1b[31mred", b, sizeof b), "\\x1b[31mred");
    ck_assert_str_eq(esc("\x1b]0;title\x07", b, sizeof b), "\\x1b]0;title\\x07");
    ck_assert_str_eq(esc("a\rb\x7f", b, sizeof b), "a\\x0db\\x7f");
    ck_assert_str_eq(esc("\xc2\x9b" "2J", b, sizeof b), "\\xc2\\x9b2J");        /* C1 CSI in UTF-8 */
    ck_assert_str_eq(esc("\x9b" "2J", b, sizeof b), "\\x9b2J");                  /* lone C1 byte */
    ck_assert_str_eq(esc("ℓ α → §", b, sizeof b), "ℓ α → §");                    /* UTF-8 kept */
    ck_assert_str_eq(esc("\xe2\x84", b, sizeof b), "\\xe2\\x84");                /* cut sequence */
    ck_assert_str_eq(esc("\xc0\xaf", b, sizeof b), "\\xc0\\xaf");                /* overlong */
    ck_assert_str_eq(esc("\xed\xa0\x80", b, sizeof b), "\\xed\\xa0\\x80");       /* surrogate */
    ck_assert_str_eq(esc("\xf4\x90\x80\x80", b, sizeof b), "\\xf4\\x90\\x80\\x80");
    ck_assert_str_eq(esc("\xf0\x9f\x98\x80", b, sizeof b), "\xf0\x9f\x98\x80");  /* emoji kept */
    ck_assert(fs_text_needs_escape("x\x1b", 2));
    ck_assert(!fs_text_needs_escape("ℓ_new", strlen("ℓ_new")));
    /* Cut at a whole character or escape, always terminated. */
    char small[6];
    fs_text_escape("ab\x1b" "cd", 5, small, sizeof small);
    ck_assert_str_eq(small, "ab");
    fs_text_escape("aℓ", strlen("aℓ"), small, 3);
    ck_assert_str_eq(small, "a");
    /* One line (a file's name in a message): tab and newline escaped too, the rest as above. */
    const char *name = "q\n.npy\tx\x1b[2Jℓ";
    fs_text_escape_line(name, strlen(name), b, sizeof b);
    ck_assert_str_eq(b, "q\\x0a.npy\\x09x\\x1b[2Jℓ");
}
END_TEST

/* Random bytes: the escaped text holds no control byte but tab and newline, no DEL, no C1 in
 * either form, and it is well-formed UTF-8 (checked by escaping it again: nothing changes). */
START_TEST(test_escape_random)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    char in[64], out[64 * 4 + 1], again[64 * 16 + 1];
    size_t n = (size_t)fs_rng_int(&r, 0, 63);
    for (size_t i = 0; i < n; i++) in[i] = (char)fs_rng_int(&r, 0, 255);
    size_t len = fs_text_escape(in, n, out, sizeof out);
    FS_ASSERT_SEED(len == fs_text_escaped_len(in, n) && len == strlen(out), seed, "length %zu", len);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)out[i];
        FS_ASSERT_SEED(c == '\t' || c == '\n' || (c >= 0x20 && c != 0x7f), seed, "byte %02x kept", c);
        FS_ASSERT_SEED(!(c == 0xc2 && i + 1 < len && (unsigned char)out[i + 1] < 0xa0), seed, "C1 kept");
    }
    FS_ASSERT_SEED(!fs_text_needs_escape(out, len), seed, "escaped text still needs escaping");
    fs_text_escape(out, len, again, sizeof again);
    FS_ASSERT_SEED(!strcmp(out, again), seed, "escaping is not idempotent");
}
END_TEST

/* A lesson keeps its title, intro and narration escaped, so the window draws \xHH too. */
START_TEST(test_lesson_keeps_text_escaped)
{
    const char *text = "title: T \x1b[31mred\n"
                       "source: 000_a9212bbbb0f7e97c.txt\n"
                       "algo: tiled\n"
                       "intro: I \x1b]0;x\x07\n"
                       "S:\n  1 2\n"
                       "step 0: N \x9b ok ℓ\n";
    fs_lesson *l;
    fs_loc_error err;
    ck_assert_msg(fs_lesson_parse(text, strlen(text), "t.lesson", &l, &err), "%s", err.msg);
    ck_assert_str_eq(fs_lesson_title(l), "T \\x1b[31mred");
    ck_assert_str_eq(fs_lesson_intro(l), "I \\x1b]0;x\\x07");
    ck_assert_str_eq(fs_lesson_narration(l, 0), "N \\x9b ok ℓ");
    fs_lesson_free(l);
}
END_TEST

/* A text too long for its buffer ends in "…" at a character's start: never half of ℓ. */
START_TEST(test_fit_cuts_at_a_character)
{
    char buf[12];
    /* (through volatile pointers, so that the compiler does not see the truncation coming and warn) */
    const char *volatile fits = "ℓ = 4", *volatile mid = "abcdefℓℓℓ", *volatile many = "ℓℓℓℓℓℓℓℓ";
    ck_assert(fs_text_fit(buf, sizeof buf, snprintf(buf, sizeof buf, "%s", fits)));
    ck_assert_str_eq(buf, "ℓ = 4");
    /* byte 8, the cut's first choice, is inside the first ℓ (bytes 6-8): the cut moves to its start */
    ck_assert(!fs_text_fit(buf, sizeof buf, snprintf(buf, sizeof buf, "%s", mid)));
    ck_assert_str_eq(buf, "abcdef…");
    ck_assert(!fs_text_needs_escape(buf, strlen(buf)));
    for (size_t cap = 4; cap <= sizeof buf; cap++) {   /* every capacity: well-formed, ends in "…" */
        ck_assert(!fs_text_fit(buf, cap, snprintf(buf, cap, "%s", many)));
        const size_t n = strlen(buf);
        ck_assert_uint_lt(n, cap);
        ck_assert(n >= 3 && !strcmp(buf + n - 3, "…") && !fs_text_needs_escape(buf, n));
    }
}
END_TEST

/* Columns are code points, and a cut at k columns keeps the first k characters whole: for every
 * k, on a string of one-, two- and three-byte characters. */
START_TEST(test_cols_and_cut)
{
    const char *s = "aℓ=α·3→x";   /* 8 characters in 14 bytes */
    ck_assert_int_eq(fs_text_cols(s, strlen(s)), 8);
    ck_assert_int_eq(fs_text_cols(s, 0), 0);
    ck_assert_int_eq(fs_text_cols("ℓ", 2), 1);   /* a start byte counts, its continuation does not */
    ck_assert_uint_eq(fs_text_cut(s, 0), 0);
    ck_assert_uint_eq(fs_text_cut(s, -3), 0);
    size_t last = 0;
    for (int k = 1; k <= 10; k++) {
        const size_t b = fs_text_cut(s, k);
        ck_assert_int_eq(fs_text_cols(s, b), k < 8 ? k : 8);
        ck_assert(s[b] == 0 || ((unsigned char)s[b] & 0xC0) != 0x80);   /* ends at a character's end */
        if (k <= 8) ck_assert_uint_gt(b, last);   /* one more character each column */
        else ck_assert_uint_eq(b, strlen(s));
        last = b;
    }
    ck_assert_uint_eq(fs_text_cut(s, 100), strlen(s));
    ck_assert_uint_eq(fs_text_cut("", 5), 0);
}
END_TEST

/* fs_text_wrap's cases, each a rule of text.h's with the case that a mistake would change. */
static const struct {
    const char *s;
    int col, indent, width;
    const char *want;
} wrap_cases[] = {
    /* greedy, and a line of exactly width columns fits: "only ever grows when" is 20 */
    {"the running maximum only ever grows when a larger score arrives", 0, 0, 20,
     "the running maximum\nonly ever grows when\na larger score\narrives\n"},
    /* columns are code points: "αβγ ℓℓℓ" is 7 columns in 16 bytes, so it fits in 7 */
    {"αβγ ℓℓℓ δ", 0, 0, 7, "αβγ ℓℓℓ\nδ\n"},
    /* the first line goes on from column col: at 6, "abc def" (7 columns) no longer fits in 12 */
    {"abc def ghi", 6, 2, 12, "abc\n  def ghi\n"},
    {"abc def ghi", 0, 2, 12, "abc def ghi\n"},
    /* later lines start with indent spaces, the first with none (the course's section heads) */
    {"1. Softmax one number at a time", 0, 3, 14, "1. Softmax one\n   number at a\n   time\n"},
    /* every line indented: the caller prints the indent and passes col = indent */
    {"a bb ccc dddd", 4, 4, 10, "a bb\n    ccc\n    dddd\n"},
    /* s's own newlines end lines; the next is indented once it has a word, so an empty line and
     * a final newline get no spaces, and nothing follows a final newline */
    {"one two\n\nthree four", 0, 2, 40, "one two\n\n  three four\n"},
    {"end\n", 0, 2, 40, "end\n"},
    {"a\nb c d", 0, 1, 4, "a\n b c\n d\n"},
    /* a run of spaces is one; spaces at either end print nothing */
    {"  a   b  ", 0, 0, 40, "a b\n"},
    /* a word wider than the line is not cut and gets a line of its own, and the next word a new
     * one; the first word stays on the caller's line even when it overflows it */
    {"a abcdefghijklmnop b", 0, 2, 8, "a\n  abcdefghijklmnop\n  b\n"},
    {"abcdefghijklmnop", 0, 0, 5, "abcdefghijklmnop\n"},
    {"xyz w", 4, 0, 5, "xyz\nw\n"},
    {"ab", 0, 0, 0, "ab\n"},   /* no room at all: still one word a line, and it ends */
    /* nothing to print: nothing, or the caller's line ended */
    {"", 0, 0, 40, ""},
    {"", 3, 3, 40, "\n"},
};

START_TEST(test_wrap_cases)
{
    const char *s = wrap_cases[_i].s, *want = wrap_cases[_i].want;
    const int col = wrap_cases[_i].col, indent = wrap_cases[_i].indent, width = wrap_cases[_i].width;
    char *got = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&got, &n);
    ck_assert_ptr_nonnull(f);
    fs_text_wrap(f, s, col, indent, width);
    fclose(f);
    ck_assert_msg(!strcmp(got, want), "fs_text_wrap(\"%s\", col %d, indent %d, width %d) gave\n\"%s\", not\n\"%s\"", s,
                  col, indent, width, got, want);
    free(got);
}
END_TEST

/* Random words (ASCII and ℓ, some wider than the line) at random widths: the words come out in
 * order, one space apart; a line is over width only when it holds one word; a line ends only
 * when its next word would not fit; the lines after the first start with indent spaces. */
START_TEST(test_wrap_random)
{
    uint64_t seed = fs_test_seed() + 29 + (uint64_t)_i;
    fs_rng r = {seed};
    char s[40 * 64] = "", words[40][61];   /* up to 40 words of up to 20 characters, ℓ 3 bytes */
    int nw = fs_rng_int(&r, 1, 40), wc[40];
    for (int i = 0; i < nw; i++) {
        int len = fs_rng_int(&r, 1, fs_rng_int(&r, 0, 4) ? 6 : 20);
        words[i][0] = 0;
        for (int k = 0; k < len; k++) strcat(words[i], fs_rng_int(&r, 0, 3) ? "w" : "ℓ");
        wc[i] = len;
        strcat(s, i ? (fs_rng_int(&r, 0, 3) ? " " : "   ") : "");
        strcat(s, words[i]);
    }
    const int width = fs_rng_int(&r, 4, 30), indent = fs_rng_int(&r, 0, 3), col = fs_rng_int(&r, 0, 6);
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    ck_assert_ptr_nonnull(f);
    fs_text_wrap(f, s, col, indent, width);
    fclose(f);
    FS_ASSERT_SEED(n > 0 && out[n - 1] == '\n', seed, "no final newline");
    int w = 0, line = 0;
    for (char *p = out; *p; line++) {
        char *end = strchr(p, '\n');
        if (line) FS_ASSERT_SEED((int)strspn(p, " ") == indent, seed, "line %d not indented by %d", line, indent);
        p += line ? indent : 0;
        int cols = line ? indent : col, on_line = 0;
        while (p < end) {   /* the line's words, one space apart, as in s */
            FS_ASSERT_SEED(w < nw && !strncmp(p, words[w], strlen(words[w])), seed, "word %d out of order", w);
            cols += (on_line ? 1 : 0) + wc[w];
            p += strlen(words[w++]);
            on_line++;
            if (p < end) FS_ASSERT_SEED(*p == ' ' && p[1] != ' ', seed, "words not one space apart");
            if (p < end) p++;
        }
        FS_ASSERT_SEED(on_line > 0, seed, "an empty line");
        FS_ASSERT_SEED(cols <= width || on_line == 1, seed, "line %d has %d columns, over %d", line, cols, width);
        if (w < nw) FS_ASSERT_SEED(cols + 1 + wc[w] > width, seed, "line %d ended while word %d fitted", line, w);
        p = end + 1;
    }
    FS_ASSERT_SEED(w == nw, seed, "%d of %d words printed", w, nw);
    free(out);
}
END_TEST

/* fs_text_drop_keys: the keys' escape sequences out, everything else (UTF-8 included) kept */
START_TEST(test_drop_keys)
{
    static const struct { const char *in, *out; } cases[] = {
        {"\033[C\n", "\n"},                           /* → alone: nothing typed */
        {"\033[C\033[C0.5\n", "0.5\n"},                /* arrows, then the answer */
        {"0.\033[D5\n", "0.5\n"},                     /* ← in the middle */
        {"\033OC42\n", "42\n"},                        /* an arrow in application mode */
        {"\033[1;5C\033[15~3\n", "3\n"},               /* Ctrl+→, F5 */
        {"\033b1\n", "1\n"},                           /* Alt+b */
        {"α = 0.9585\n", "α = 0.9585\n"},             /* nothing to drop */
        {"7\033", "7"},                                /* a lone ESC at the end */
        {"7\033[", "7"},                               /* a sequence cut short */
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "%s", cases[i].in);
        fs_text_drop_keys(line);
        ck_assert_msg(!strcmp(line, cases[i].out), "case %zu: got '%s', want '%s'", i, line, cases[i].out);
    }
}
END_TEST

Suite *text_suite(void)
{
    Suite *s = suite_create("text");
    TCase *tc = tcase_create("text");
    tcase_add_test(tc, test_escape_cases);
    tcase_add_loop_test(tc, test_escape_random, 0, 300);
    tcase_add_test(tc, test_lesson_keeps_text_escaped);
    tcase_add_test(tc, test_fit_cuts_at_a_character);
    tcase_add_test(tc, test_cols_and_cut);
    tcase_add_loop_test(tc, test_wrap_cases, 0, (int)(sizeof wrap_cases / sizeof wrap_cases[0]));
    tcase_add_loop_test(tc, test_wrap_random, 0, 300);
    tcase_add_test(tc, test_drop_keys);
    suite_add_tcase(s, tc);
    return s;
}

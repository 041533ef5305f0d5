/* course.c: the five source documents by their titles, and the course: one ordered path through
 * the lessons (lessons/course.txt), for the terminal (`flashstep lessons --course`) and the page
 * ("Start here"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/text.h"
#include "lesson/lesson.h"

/* The five documents: file name, title (as each document names itself), and what it is. */
static const struct { const char *file, *title; } documents[] = {
    {"000_a9212bbbb0f7e97c.txt", "FlashAttention: Theory and Practice"},
    {"001_b200530c91d92eb7.txt", "Flash Attention Concept -- Deep Dive"},
    {"002_41e4155167b0c491.txt", "Triton Flash Attention"},
    {"003_12991977aa774511.txt", "FlashAttention Kernels (Akunu, Metal)"},
    {"004_80094ccf861f664e.txt", "FlashAttention & Memory Efficiency"},
};

const char *fs_document_title(const char *source)
{
    if (!source) return NULL;
    for (size_t i = 0; i < sizeof documents / sizeof documents[0]; i++) {
        size_t n = strlen(documents[i].file);
        if (!strncmp(source, documents[i].file, n)) return documents[i].title;
    }
    return NULL;
}

void fs_source_words(const char *source, char *out, size_t n)
{
    if (!n) return;
    const char *t = fs_document_title(source);
    if (!t && source && !strncmp(source, "none", 4) && (source[4] == ',' || !source[4]))
        t = "beyond the five documents";   /* a lesson's "source: none" */
    if (!t) {
        snprintf(out, n, "%s", source ? source : "");
        return;
    }
    const char *rest = source + strcspn(source, ",");   /* ", §A Complete …" or "" */
    snprintf(out, n, "%s%s", t, rest);
}

static void course_error(fs_loc_error *err, const char *file, int line, int col, const char *msg, const char *arg)
{
    if (!err) return;
    size_t k = strlen(file);   /* a long path keeps its end, which names the file */
    if (k >= sizeof err->file) file += k - (sizeof err->file - 1);
    memcpy(err->file, file, strlen(file) + 1);
    err->line = line;
    err->col = col;
    char buf[2048];
    snprintf(buf, sizeof buf, msg, arg);
    size_t m = strlen(buf);
    if (m >= sizeof err->msg) m = sizeof err->msg - 1;
    memcpy(err->msg, buf, m);
    err->msg[m] = 0;
}

void fs_course_free(fs_course *c)
{
    for (int i = 0; i < c->n_sections; i++) free(c->sections[i]);
    for (int i = 0; i < c->n; i++) free(c->names[i]);
    free(c->sections);
    free(c->names);
    free(c->section_of);
    memset(c, 0, sizeof *c);
}

static bool push(char ***v, int *n, const char *s, size_t len)
{
    char **nv = realloc(*v, (size_t)(*n + 1) * sizeof *nv);
    if (!nv) return false;
    *v = nv;
    if (!(nv[*n] = malloc(len + 1))) return false;
    memcpy(nv[*n], s, len);
    nv[*n][len] = 0;
    (*n)++;
    return true;
}

bool fs_course_load(const char *dir, fs_course *c, fs_loc_error *err)
{
    memset(c, 0, sizeof *c);
    if (err) memset(err, 0, sizeof *err);
    char path[4096];
    snprintf(path, sizeof path, "%s/course.txt", dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        course_error(err, path, 0, 0, "cannot read it (%s)", "the course: one lesson name a line, in sections");
        return false;
    }
    char line[1024];
    int ln = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        ln++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            course_error(err, path, ln, (int)len, "line longer than %s characters", "1022");
            ok = false;
            break;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ')) line[--len] = 0;
        size_t lead = strspn(line, " \t");
        const char *s = line + lead;
        if (!*s || (s[0] == '#' && s[1] != '#')) continue;
        if (s[0] == '#') {   /* "## Section title" */
            const char *t = s + 2 + strspn(s + 2, " ");
            if (!*t) {
                course_error(err, path, ln, (int)lead + 3, "a section needs a title after '%s'", "##");
                ok = false;
            } else if (!push(&c->sections, &c->n_sections, t, strlen(t))) {
                course_error(err, path, ln, 1, "%s", "out of memory");
                ok = false;
            }
            continue;
        }
        /* A lesson's name: letters, digits, '_', '-' and '.', a file of the lessons directory. */
        size_t nl = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.");
        if (nl != strlen(s)) {
            char what[64];
            snprintf(what, sizeof what, "0x%02x", (unsigned char)s[nl]);
            course_error(err, path, ln, (int)(lead + nl) + 1,
                         "a lesson's name is letters, digits, '_', '-' and '.' (found the byte %s)", what);
            ok = false;
        } else if (c->n_sections == 0) {
            course_error(err, path, ln, (int)lead + 1, "a lesson before the first section (%s)", "## Title");
            ok = false;
        } else if (fs_course_find(c, s) >= 0) {
            course_error(err, path, ln, (int)lead + 1, "%s is in the course twice", s);
            ok = false;
        } else {
            char lp[4096];
            snprintf(lp, sizeof lp, "%s/%s.lesson", dir, s);
            FILE *t = fopen(lp, "rb");
            if (!t) {
                course_error(err, path, ln, (int)lead + 1, "no lesson %s.lesson in this directory", s);
                ok = false;
            } else {
                fclose(t);
                int *so = realloc(c->section_of, (size_t)(c->n + 1) * sizeof *so);
                if (!so || !push(&c->names, &c->n, s, strlen(s))) {
                    if (so) c->section_of = so;
                    course_error(err, path, ln, 1, "%s", "out of memory");
                    ok = false;
                } else {
                    c->section_of = so;
                    so[c->n - 1] = c->n_sections - 1;
                }
            }
        }
    }
    fclose(f);
    if (ok && c->n == 0) {
        course_error(err, path, ln, 0, "the course names no lesson%s", "");
        ok = false;
    }
    if (!ok) fs_course_free(c);
    return ok;
}

int fs_course_find(const fs_course *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->names[i], name)) return i;
    return -1;
}

/* The text of the `title:` record of the lesson file at path, continuation lines joined by one
 * blank, escaped (src/io/text.h); false when the file cannot be read or has no title. */
static bool peek_title(const char *path, char *out, size_t n)
{
    size_t len;
    fs_loc_error e;
    char *text = fs_file_read(path, 1 << 22, &len, &e);
    if (!text) return false;
    char *buf = malloc(len + 1);
    size_t k = 0;
    bool found = false, in = false;
    for (size_t a = 0; buf && a < len;) {
        size_t b = a;
        while (b < len && text[b] != '\n') b++;
        size_t e2 = b;
        while (e2 > a && (text[e2 - 1] == '\r' || text[e2 - 1] == ' ' || text[e2 - 1] == '\t')) e2--;
        bool indented = b > a && (text[a] == ' ' || text[a] == '\t');
        if (in && indented) {
            size_t s = a;
            while (s < e2 && (text[s] == ' ' || text[s] == '\t')) s++;
            if (s < e2 && text[s] != '#') {
                buf[k++] = ' ';
                memcpy(buf + k, text + s, e2 - s);
                k += e2 - s;
            }
        } else if (in && e2 > a && text[a] != '#') {
            break;
        } else if (!in && e2 - a >= 6 && !strncmp(text + a, "title:", 6)) {
            size_t s = a + 6;
            while (s < e2 && (text[s] == ' ' || text[s] == '\t')) s++;
            memcpy(buf, text + s, e2 - s);
            k = e2 - s;
            found = in = true;
        }
        a = b + 1;
    }
    if (found) {
        char *safe = fs_text_escape_dup(buf, k);
        snprintf(out, n, "%s", safe ? safe : "");
        free(safe);
    }
    free(buf);
    free(text);
    return found;
}

/* A lesson file's folder ("." when path has none) and its name, the file stem the course uses. */
static void split_path(const char *path, char *dir, size_t dn, char *name, size_t nn)
{
    const char *slash = strrchr(path, '/');
    snprintf(dir, dn, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    const char *base = slash ? slash + 1 : path;
    size_t bl = strlen(base);
    if (bl > 7 && !strcmp(base + bl - 7, ".lesson")) bl -= 7;
    snprintf(name, nn, "%.*s", (int)bl, base);
}

int fs_course_section_end(const char *path, char *title, size_t n)
{
    if (n) title[0] = 0;
    char dir[4096], name[256];
    split_path(path, dir, sizeof dir, name, sizeof name);
    fs_course c;
    if (!fs_course_load(dir, &c, NULL)) return 0;
    int i = fs_course_find(&c, name), sec = 0;
    if (i >= 0 && (i + 1 >= c.n || c.section_of[i + 1] != c.section_of[i])) {
        sec = c.section_of[i] + 1;
        const char *t = c.sections[c.section_of[i]];
        if (n) fs_text_escape_line(t, strlen(t), title, n);   /* a file's text never drives the terminal */
    }
    fs_course_free(&c);
    return sec;
}

void fs_course_next_line(const char *path, char *out, size_t n)
{
    if (!n) return;
    snprintf(out, n, "next: not in the course");
    char dir[4096], name[256];
    split_path(path, dir, sizeof dir, name, sizeof name);
    fs_course c;
    if (!fs_course_load(dir, &c, NULL)) return;
    int i = fs_course_find(&c, name);
    if (i >= 0 && i + 1 >= c.n) snprintf(out, n, "next: the course ends here");
    else if (i >= 0) {
        char p[4600], t[512];
        snprintf(p, sizeof p, "%s/%s.lesson", dir, c.names[i + 1]);
        if (peek_title(p, t, sizeof t)) snprintf(out, n, "next: %s", t);
        else snprintf(out, n, "next: %s", c.names[i + 1]);
    }
    fs_course_free(&c);
}

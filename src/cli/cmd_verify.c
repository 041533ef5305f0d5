/* cmd_verify.c: `flashstep verify`: recompute every number the documents print.
 *
 * Each lesson is loaded (parsed, run on the engine, expectations evaluated); this command only
 * reports. Output: a table (default), JSON lines (--format jsonl), or the Markdown of
 * docs/errata.md (--markdown). Exit 0 when every recomputed verdict is the one its lesson
 * records, 1 when any differs, 2 when a lesson cannot be loaded or the usage is wrong.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "io/text.h"
#include "lesson/lesson.h"

typedef enum { OUT_TABLE, OUT_JSONL, OUT_MARKDOWN } out_fmt;

static void usage(FILE *f)
{
    fprintf(f, "usage: flashstep verify [LESSON ...] [--format table|jsonl] [--markdown] [--dir DIR]\n\n"
               "Recompute every number the lessons' documents print and give one verdict per claim:\n"
               "  holds                  the exact value rounds to the printed digits\n"
               "  units                  it does under one reading of KB/MB/GB (decimal or binary) only\n"
               "  rounded-intermediates  only from the document's own rounded intermediates (chain shown)\n"
               "  approximate            marked ~/about/roughly, and within tolerance\n"
               "  erratum                wrong: the exact value and an explanation are shown\n\n"
               "In the table, 'ok' says only that the recomputed verdict is the one the lesson records\n"
               "('BAD' that it is not): an 'ok' beside 'erratum' is still a wrong number in the document.\n\n"
               "LESSON is a path or a lesson's file stem (or a unique prefix); all lessons by default.\n"
               "  --format table|jsonl   a readable table (default) or one JSON object per claim\n"
               "  --markdown             the Markdown of docs/errata.md\n"
               "  --dir DIR              the lessons directory\n\n"
               "Exit status: 0 every verdict matches its lesson; 1 some recomputed claim disagrees;\n"
               "2 a lesson does not load or bad usage.\n");
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double x)
{
    if (isnan(x)) fputs("\"nan\"", f);
    else if (isinf(x)) fputs(x < 0 ? "\"-inf\"" : "\"inf\"", f);
    else fprintf(f, "%.17g", x);
}

/* The verdict as a table cell: "units (binary)". */
static void verdict_text(const fs_check *c, char *buf, size_t n)
{
    if (c->got.verdict == FS_VERDICT_UNITS || (c->got.verdict == FS_VERDICT_APPROX && *c->got.reading))
        snprintf(buf, n, "%s (%s)", fs_verdict_str(c->got.verdict), c->got.reading);
    else
        snprintf(buf, n, "%s", fs_verdict_str(c->got.verdict));
}

static void expected_text(const fs_check *c, char *buf, size_t n)
{
    if (c->expected == FS_VERDICT_UNITS) snprintf(buf, n, "units (%s)", c->expected_reading);
    else snprintf(buf, n, "%s", fs_verdict_str(c->expected));
}

static const char *stem_of(const char *path, char *buf, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len >= 7 && !strcmp(base + len - 7, ".lesson")) len -= 7;
    fs_text_escape_line(base, len, buf, n);   /* a file name can hold an escape sequence, or a newline */
    return buf;
}

/* Printed number with its marker and unit: "~0.32 ms". */
static void printed_text(const fs_check *c, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s%s%s", strcmp(c->op, "=") ? c->op : "", strcmp(c->op, "=") ? " " : "",
             c->approx_marked ? "~" : "", c->printed, "");
    if (*c->unit) {
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, " %s", c->unit);
    }
}

/* One short note: the reading, the chain, or the explanation. */
static void note_text(const fs_check *c, char *buf, size_t n)
{
    buf[0] = 0;
    const char *sp = *c->unit ? " " : "";
    switch (c->got.verdict) {
    case FS_VERDICT_UNITS:
        snprintf(buf, n, "%s reading: %.8g%s%s%s%s", c->got.reading, c->got.exact, sp, c->unit,
                 *c->why ? "; " : "", c->why);
        break;
    case FS_VERDICT_ROUNDED:
        snprintf(buf, n, "chain %s; exact %s%s%s%s%s", c->chain ? c->chain : "", c->exact_text, sp, c->unit,
                 *c->why ? "; " : "", c->why);
        break;
    case FS_VERDICT_APPROX:
    case FS_VERDICT_ERRATUM:
        snprintf(buf, n, "exact %s%s%s%s%s", c->exact_text, sp, c->unit, *c->why ? "; " : "", c->why);
        break;
    default:
        if (*c->why) snprintf(buf, n, "%s", c->why);
        break;
    }
}

/* For maxerr and drift, the errata page shows the power of ten the value stays under
 * ("< 1e-15"), not its last digits: rounding noise must not make docs/errata.md depend on the
 * compiler that generated it. Other claims show the exact value. */
static const char *bound_exact(const fs_check *c, char *buf, size_t n)
{
    double x = fabs(c->got.exact);
    if ((strcmp(c->target, "maxerr") && strcmp(c->target, "drift")) || !isfinite(x)) return c->exact_text;
    if (x == 0) snprintf(buf, n, "0");
    else snprintf(buf, n, "%s1e%d", c->got.exact < 0 ? "> -" : "< ", (int)floor(log10(x)) + 1);
    return buf;
}

/* s cut or padded to exactly width characters (UTF-8 code points, so "→" or "ℓ" take one column
 * like any letter and a cut never splits a character), into out. */
static const char *column(const char *s, int width, char *out, size_t cap)
{
    size_t o = 0;
    int chars = 0;
    for (const char *p = s; *p && o + 5 < cap;) {
        size_t len = 1;
        while (((unsigned char)p[len] & 0xC0) == 0x80) len++;
        if (chars == width) break;
        memcpy(out + o, p, len);
        o += len;
        p += len;
        chars++;
    }
    while (chars < width && o + 1 < cap) {
        out[o++] = ' ';
        chars++;
    }
    out[o] = 0;
    return out;
}

/* Markdown cells must not contain '|' or newlines. */
static void md_cell(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else if (*s == '\n') fputc(' ', f);
        else fputc(*s, f);
    }
}

typedef struct {
    int claims, own, agree, disagree, by[FS_VERDICT_COUNT], lessons, broken;
} totals;

int cli_verify(int argc, char **argv)
{
    out_fmt fmt = OUT_TABLE;
    const char *dir_arg = NULL;
    char **names = calloc((size_t)argc + 1, sizeof(char *));
    int n_names = 0;
    if (!names) return 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            free(names);
            return 0;
        } else if ((!strcmp(argv[i], "--format") || !strcmp(argv[i], "--dir")) && i + 1 == argc) {
            fprintf(stderr, "flashstep verify: %s needs a value\n", argv[i]);
            free(names);
            return 2;
        } else if (!strcmp(argv[i], "--format")) {
            const char *v = argv[++i];
            if (!strcmp(v, "table")) fmt = OUT_TABLE;
            else if (!strcmp(v, "jsonl")) fmt = OUT_JSONL;
            else {
                fprintf(stderr, "flashstep verify: unknown format '%s' (table, jsonl)\n", v);
                free(names);
                return 2;
            }
        } else if (!strcmp(argv[i], "--markdown")) {
            fmt = OUT_MARKDOWN;
        } else if (!strcmp(argv[i], "--dir")) {
            dir_arg = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "flashstep verify: unknown option '%s'\n", argv[i]);
            usage(stderr);
            free(names);
            return 2;
        } else {
            names[n_names++] = argv[i];
        }
    }
    char dir[4096];
    bool have_dir = dir_arg ? (snprintf(dir, sizeof dir, "%s", dir_arg), true) : fs_lesson_dir(NULL, dir, sizeof dir);
    char **paths = NULL;
    int n = 0;
    bool listed = false;
    if (n_names == 0) {
        if (!have_dir || fs_lesson_list(dir, &paths, &n) != 0 || n == 0) {
            fprintf(stderr, "flashstep verify: no lessons found (set FLASHSTEP_LESSONS or use --dir)\n");
            free(names);
            if (paths) fs_lesson_list_free(paths, n);
            return 2;
        }
        listed = true;
    } else {
        paths = calloc((size_t)n_names, sizeof(char *));
        for (int i = 0; paths && i < n_names; i++) {
            char buf[4096];
            if (!fs_lesson_resolve(names[i], have_dir ? dir : NULL, buf, sizeof buf)) {
                fprintf(stderr, "flashstep verify: %s\n", buf);
                fs_lesson_list_free(paths, n);
                free(names);
                return 2;
            }
            paths[n++] = strdup(buf);
        }
    }
    free(names);
    (void)listed;

    totals T;
    memset(&T, 0, sizeof T);
    fs_lesson **ls = calloc((size_t)n, sizeof *ls);
    if (!ls) return 2;
    for (int i = 0; i < n; i++) {
        fs_loc_error err;
        if (!fs_lesson_load(paths[i], &ls[i], &err)) {
            char msg[1024];
            fs_loc_error_format(&err, msg, sizeof msg);
            fprintf(stderr, "%s\n", msg);
            T.broken++;
            continue;
        }
        if (fmt == OUT_MARKDOWN && !fs_lesson_has_source(ls[i])) {
            /* the errata list the documents' claims; a lesson with `source: none` makes none */
            fs_lesson_free(ls[i]);
            ls[i] = NULL;
            continue;
        }
        T.lessons++;
        for (int k = 0; k < fs_lesson_check_count(ls[i]); k++) {
            const fs_check *c = fs_lesson_check(ls[i], k);
            if (c->own) T.own++;
            else {
                T.claims++;
                T.by[c->got.verdict]++;
            }
            if (c->agrees) T.agree++;
            else T.disagree++;
        }
    }

    if (fmt == OUT_MARKDOWN) {
        printf("# Errata: every number the documents print, recomputed\n\n"
               "Generated by `flashstep verify --markdown` from the lessons in `lessons/`; do not edit by\n"
               "hand. Each claim is a number a source document prints (each named by its file name, such as\n"
               "`000_a9212bbbb0f7e97c.txt`), recomputed by the engine, the memory model or a small\n"
               "expression. docs/lesson-format.md defines the verdicts and the rounding rule (the exact\n"
               "value must round to the printed digits; half-way cases hold).\n\n");
        printf("**%d claims in %d lessons; %d hold at the printed precision.** ", T.claims, T.lessons,
               T.by[FS_VERDICT_HOLDS]);
        printf("%d hold under one reading of the units only, %d only from the document's rounded "
               "intermediates, %d are marked approximations within tolerance, %d are errata.",
               T.by[FS_VERDICT_UNITS], T.by[FS_VERDICT_ROUNDED], T.by[FS_VERDICT_APPROX], T.by[FS_VERDICT_ERRATUM]);
        printf(" Besides these, the lessons make %d checks of their own (numbers the documents do not print).\n\n", T.own);
        printf("| verdict | claims |\n|---|---|\n");
        for (int v = 0; v < FS_VERDICT_COUNT; v++) printf("| %s | %d |\n", fs_verdict_str((fs_verdict)v), T.by[v]);
        if (T.disagree) printf("\n**%d recomputed verdicts disagree with their lessons.**\n", T.disagree);
        if (T.broken) printf("\n**%d lessons did not load.**\n", T.broken);

        /* per document */
        printf("\n| document | claims | holds | units | rounded-intermediates | approximate | erratum |\n"
               "|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < n;) {
            if (!ls[i]) {
                i++;
                continue;
            }
            const char *src = fs_lesson_source(ls[i]);
            int dl = (int)strcspn(src, ",");
            int by[FS_VERDICT_COUNT] = {0}, all = 0, j = i;
            for (; j < n; j++) {
                if (!ls[j]) continue;
                const char *s2 = fs_lesson_source(ls[j]);
                if ((int)strcspn(s2, ",") != dl || strncmp(s2, src, (size_t)dl)) break;
                for (int k = 0; k < fs_lesson_check_count(ls[j]); k++) {
                    const fs_check *c = fs_lesson_check(ls[j], k);
                    if (c->own) continue;
                    by[c->got.verdict]++;
                    all++;
                }
            }
            printf("| %.*s | %d | %d | %d | %d | %d | %d |\n", dl, src, all, by[0], by[1], by[2], by[3], by[4]);
            i = j;
        }

        /* the errata at a glance */
        printf("\n## The errata\n\n| document | claim | printed | exact | why |\n|---|---|---|---|---|\n");
        for (int i = 0; i < n; i++) {
            if (!ls[i]) continue;
            const char *src = fs_lesson_source(ls[i]);
            for (int k = 0; k < fs_lesson_check_count(ls[i]); k++) {
                const fs_check *c = fs_lesson_check(ls[i], k);
                if (c->own || c->got.verdict != FS_VERDICT_ERRATUM) continue;
                char pr[128];
                printed_text(c, pr, sizeof pr);
                printf("| %.3s | ", src);
                md_cell(stdout, c->claim);
                printf(" | ");
                md_cell(stdout, pr);
                printf(" | ");
                md_cell(stdout, c->exact_text);
                if (*c->unit) printf(" %s", c->unit);
                printf(" | ");
                md_cell(stdout, c->why);
                printf(" |\n");
            }
        }
        char doc[64] = "";
        for (int i = 0; i < n; i++) {
            if (!ls[i]) continue;
            const char *src = fs_lesson_source(ls[i]);
            char d[64];
            snprintf(d, sizeof d, "%.*s", (int)strcspn(src, ","), src);
            if (strcmp(d, doc)) {
                snprintf(doc, sizeof doc, "%s", d);
                printf("\n## Every claim of %s\n", doc);
            }
            char stem[256];
            printf("\n### %s\n\n`%s` — %s\n\n", fs_lesson_title(ls[i]), stem_of(paths[i], stem, sizeof stem), src);
            int shown = 0;
            for (int k = 0; k < fs_lesson_check_count(ls[i]); k++) {
                const fs_check *c = fs_lesson_check(ls[i], k);
                if (c->own) continue;
                if (!shown++) printf("| claim | printed | exact | verdict | note |\n|---|---|---|---|---|\n");
                char pr[128], vt[64], note[1024], ex[64];
                printed_text(c, pr, sizeof pr);
                verdict_text(c, vt, sizeof vt);
                note_text(c, note, sizeof note);
                printf("| ");
                md_cell(stdout, c->claim);
                if (c->section) {
                    printf(" (§");
                    md_cell(stdout, c->section);
                    printf(")");
                }
                printf(" | ");
                md_cell(stdout, pr);
                printf(" | ");
                md_cell(stdout, bound_exact(c, ex, sizeof ex));
                printf(" | %s%s | ", vt, c->agrees ? "" : " **(lesson says otherwise)**");
                md_cell(stdout, note);
                printf(" |\n");
            }
            int own = 0;
            for (int k = 0; k < fs_lesson_check_count(ls[i]); k++) own += fs_lesson_check(ls[i], k)->own;
            if (own) printf("%sAnd %d check%s of the lesson's own.\n", shown ? "\n" : "", own, own == 1 ? "" : "s");
            if (!shown && !own) printf("No printed numbers.\n");
        }
    } else {
        for (int i = 0; i < n; i++) {
            if (!ls[i]) continue;
            char stem[256];
            stem_of(paths[i], stem, sizeof stem);
            if (fmt == OUT_TABLE)
                printf("%s — %s\n  %s\n", stem, fs_lesson_title(ls[i]), fs_lesson_source(ls[i]));
            for (int k = 0; k < fs_lesson_check_count(ls[i]); k++) {
                const fs_check *c = fs_lesson_check(ls[i], k);
                char vt[64], et[64];
                verdict_text(c, vt, sizeof vt);
                expected_text(c, et, sizeof et);
                if (fmt == OUT_JSONL) {
                    printf("{\"lesson\":");
                    json_str(stdout, stem);
                    printf(",\"source\":");
                    json_str(stdout, fs_lesson_source(ls[i]));
                    if (c->section) {
                        printf(",\"section\":");
                        json_str(stdout, c->section);
                    }
                    printf(",\"claim\":");
                    json_str(stdout, c->claim);
                    printf(",\"target\":");
                    json_str(stdout, c->target);
                    printf(",\"op\":");
                    json_str(stdout, c->op);
                    printf(",\"printed\":");
                    json_str(stdout, c->printed);
                    printf(",\"approx\":%s,\"unit\":", c->approx_marked ? "true" : "false");
                    json_str(stdout, c->unit);
                    printf(",\"exact\":");
                    if (!strcmp(c->target, "mask")) json_str(stdout, c->exact_text);
                    else json_num(stdout, c->got.exact);
                    printf(",\"verdict\":");
                    json_str(stdout, fs_verdict_str(c->got.verdict));
                    printf(",\"reading\":");
                    json_str(stdout, c->got.reading);
                    printf(",\"expected\":");
                    json_str(stdout, et);
                    printf(",\"agrees\":%s,\"own\":%s", c->agrees ? "true" : "false", c->own ? "true" : "false");
                    if (*c->from) {
                        printf(",\"from\":");
                        json_str(stdout, c->from);
                    }
                    if (c->chain) {
                        printf(",\"chain\":");
                        json_str(stdout, c->chain);
                    }
                    if (*c->why) {
                        printf(",\"why\":");
                        json_str(stdout, c->why);
                    }
                    printf(",\"line\":%d}\n", c->line);
                } else {
                    char pr[128], note[1024], claim[200], tag[80] = "";
                    printed_text(c, pr, sizeof pr);
                    note_text(c, note, sizeof note);
                    if (*c->from) snprintf(tag, sizeof tag, " [counted in %s]", c->from);
                    else if (c->own) snprintf(tag, sizeof tag, " [own check]");
                    printf("  %s %s %14s  %-12s %-26s%s%s%s\n", c->agrees ? "ok " : "BAD",
                           column(c->claim, 44, claim, sizeof claim), pr, c->exact_text, vt, tag, *note ? "  " : "",
                           note);
                    if (!c->agrees)
                        printf("      ^ %s:%d: the lesson records '%s' but the recomputed verdict is '%s'\n", paths[i],
                               c->line, et, vt);
                }
            }
        }
        if (fmt == OUT_TABLE) {
            printf("\n%d claims in %d lessons: %d holds, %d units, %d rounded-intermediates, %d approximate, "
                   "%d errata; %d own checks.\n",
                   T.claims, T.lessons, T.by[FS_VERDICT_HOLDS], T.by[FS_VERDICT_UNITS], T.by[FS_VERDICT_ROUNDED],
                   T.by[FS_VERDICT_APPROX], T.by[FS_VERDICT_ERRATUM], T.own);
            if (T.disagree) printf("%d verdicts disagree with their lessons.\n", T.disagree);
            else if (T.broken) printf("Every verdict of the lessons that loaded agrees with its lesson.\n");
            else printf("Every verdict agrees with its lesson.\n");
            if (T.broken) printf("%d lesson%s did not load (see above).\n", T.broken, T.broken == 1 ? "" : "s");
        }
    }
    for (int i = 0; i < n; i++) fs_lesson_free(ls[i]);
    free(ls);
    fs_lesson_list_free(paths, n);
    if (T.broken) return 2;
    return T.disagree ? 1 : 0;
}

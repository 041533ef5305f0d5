/* lesson.c: a lesson from its file: read (lesson_format.c), run (lesson_run.c), judged
 * (lesson_expect.c); the getters; finding lessons on disk.
 *
 * Data flow: text ──split into records──> header keys, narration, expectations
 *            header keys ──> fs_run ──fs_run_exec──> trace and result (and, for pitfall
 *            lessons, the correct run beside it) ──> each expectation's target is looked up
 *            (trace field, output, score, count, expression) ──fs_claim_judge──> fs_check.
 *
 * A record starts in column 1; indented lines continue it (docs/lesson-format.md). Every error
 * names file:line:column of the place in the lesson (or in the matrix file it names).
 */
#include "lesson_parse.h"
#include "io/text.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- entry points ----------------------------------------------------------------------- */

static void parse_free(parse_t *P)
{
    fs_matrix_free(&P->z.m);
    fs_matrix_free(&P->Q.m);
    fs_matrix_free(&P->K.m);
    fs_matrix_free(&P->V.m);
    fs_matrix_free(&P->S.m);
    fs_matrix_free(&P->dO.m);
    free(P->narr);
    free(P->ex);
}

/* The lesson as written (opts NULL, own_try false), its own try: (own_try), or the variation that
 * the play options opts give (errors in them named opts_name:1:column). */
static bool parse_any(const char *text, size_t len, const char *name, bool own_try, const char *opts,
                      const char *opts_name, fs_lesson **out, fs_loc_error *err)
{
    fs_loc_error dummy;
    if (!err) err = &dummy;
    memset(err, 0, sizeof *err);
    *out = NULL;
    if (!name) name = "<lesson>";
    fs_lesson *l = calloc(1, sizeof *l);
    if (!l) return fs_loc_error_set(err, name, 0, 0, "out of memory");
    fs_trace_init(&l->tr);
    fs_trace_init(&l->cmp_tr);
    l->path = lp_dup_raw(l, name);
    l->intro = "";
    l->variation = "";
    parse_t *P = calloc(1, sizeof *P);
    bool ok = false;
    if (!P || !l->path) {
        fs_loc_error_set(err, name, 0, 0, "out of memory");
        goto done;
    }
    P->l = l;
    P->name = name;
    P->err = err;
    P->algo = -2;
    P->variation = own_try || opts;
    P->own_try = own_try;
    P->opts_name = opts_name ? opts_name : "play options";
    if (opts) {
        if (!lp_options_parse(opts, strlen(opts), P->opts_name, 1, 1, P->sets, &P->n_sets, err)) goto done;
        char *v = fs_text_escape_dup(opts, strlen(opts));
        l->variation = v ? lp_keep(l, v) : NULL;
        if (!l->variation) {
            fs_loc_error_set(err, name, 0, 0, "out of memory");
            goto done;
        }
    }
    {
        const char *slash = strrchr(name, '/');
        if (slash) snprintf(P->dir, sizeof P->dir, "%.*s/", (int)(slash - name), name);
    }
    if (len > FS_LESSON_MAX_BYTES) {
        fs_loc_error_set(err, name, 0, 0, "lesson larger than %d bytes", FS_LESSON_MAX_BYTES);
        goto done;
    }
    ok = lp_read_records(P, text, len) && lp_build_and_run(P) && lp_resolve(P);
done:
    if (P) parse_free(P);
    free(P);
    if (!ok) {
        fs_lesson_free(l);
        return false;
    }
    *out = l;
    return true;
}

bool fs_lesson_parse(const char *text, size_t len, const char *name, fs_lesson **out, fs_loc_error *err)
{
    return parse_any(text, len, name, false, NULL, NULL, out, err);
}

bool fs_lesson_parse_variation(const char *text, size_t len, const char *name, const char *opts,
                               const char *opts_name, fs_lesson **out, fs_loc_error *err)
{
    if (opts && !*opts) return parse_any(text, len, name, false, NULL, NULL, out, err);   /* as written */
    return parse_any(text, len, name, !opts, opts, opts_name, out, err);
}

bool fs_lesson_load(const char *path, fs_lesson **out, fs_loc_error *err)
{
    return fs_lesson_load_variation(path, "", NULL, out, err);
}

bool fs_lesson_load_variation(const char *path, const char *opts, const char *opts_name, fs_lesson **out,
                              fs_loc_error *err)
{
    fs_loc_error dummy;
    if (!err) err = &dummy;
    *out = NULL;
    size_t n;
    char *buf = fs_file_read(path, FS_LESSON_MAX_BYTES, &n, err);
    if (!buf) return false;
    bool ok = opts && !*opts ? fs_lesson_parse(buf, n, path, out, err)
                             : fs_lesson_parse_variation(buf, n, path, opts, opts_name, out, err);
    free(buf);
    return ok;
}

void fs_lesson_free(fs_lesson *l)
{
    if (!l) return;
    fs_result_free(&l->res);
    fs_result_free(&l->cmp_res);
    fs_result_free(&l->ref);
    fs_trace_free(&l->tr);
    fs_trace_free(&l->cmp_tr);
    for (int32_t i = 0; i < l->n_allocs; i++) free(l->allocs[i]);
    free(l->allocs);
    free(l);
}

/* ---- getters ---------------------------------------------------------------------------- */

const char *fs_lesson_title(const fs_lesson *l) { return l->title; }
const char *fs_lesson_source(const fs_lesson *l) { return l->source; }
bool fs_lesson_has_source(const fs_lesson *l) { return fs_lesson_source_given(l->source); }
const char *fs_lesson_intro(const fs_lesson *l) { return l->intro; }
const char *fs_lesson_summary(const fs_lesson *l) { return l->summary; }
fs_quiz_kind fs_lesson_quiz_kind(const fs_lesson *l) { return l->quiz; }
const char *fs_lesson_keep(const fs_lesson *l) { return l->keep; }
const char *fs_lesson_try_label(const fs_lesson *l) { return l->try_label; }
const char *fs_lesson_try_options(const fs_lesson *l) { return l->try_options; }
const char *fs_lesson_variation(const fs_lesson *l) { return l->variation; }
const char *fs_lesson_path(const fs_lesson *l) { return l->path; }
fs_scene fs_lesson_scene(const fs_lesson *l) { return l->scene; }
const fs_run *fs_lesson_run(const fs_lesson *l) { return l->has_run ? &l->run : NULL; }
const fs_result *fs_lesson_result(const fs_lesson *l) { return l->has_run ? &l->res : NULL; }
const fs_trace *fs_lesson_trace(const fs_lesson *l) { return l->has_run ? &l->tr : NULL; }
const fs_run *fs_lesson_compare_run(const fs_lesson *l) { return l->has_cmp ? &l->cmp : NULL; }
const fs_trace *fs_lesson_compare_trace(const fs_lesson *l) { return l->has_cmp ? &l->cmp_tr : NULL; }
const fs_result *fs_lesson_compare_result(const fs_lesson *l) { return l->has_cmp ? &l->cmp_res : NULL; }

const char *fs_lesson_narration(const fs_lesson *l, int64_t step)
{
    for (int32_t i = 0; i < l->n_narr; i++)
        if (l->narr[i].step == step) return l->narr[i].text;
    return NULL;
}

const int32_t *fs_lesson_tree_parent(const fs_lesson *l, int32_t *n)
{
    if (n) *n = l->parent ? l->n_parent : 0;
    return l->parent;
}

const char *fs_lesson_label(const fs_lesson *l, int32_t i)
{
    return i >= 0 && i < l->n_labels ? l->labels[i] : NULL;
}

int fs_lesson_check_count(const fs_lesson *l) { return l->n_checks; }

const char *fs_check_whose(const fs_check *c, char *buf, size_t n)
{
    if (c->from && *c->from) snprintf(buf, n, "counted in %s", c->from);
    else snprintf(buf, n, "%s", c->own ? "the lesson's own check" : "document");
    return buf;
}

const fs_check *fs_lesson_check(const fs_lesson *l, int i)
{
    return i >= 0 && i < l->n_checks ? &l->checks[i] : NULL;
}

int fs_lesson_check_failures(const fs_lesson *l)
{
    int n = 0;
    for (int32_t i = 0; i < l->n_checks; i++) n += !l->checks[i].agrees;
    return n;
}

/* ---- finding lessons -------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

int fs_lesson_list(const char *dir, char ***paths, int *n)
{
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return -1;
    char **v = NULL;
    int cnt = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !ends_with(de->d_name, ".lesson")) continue;
        if (cnt == cap) {
            cap = cap ? cap * 2 : 32;
            char **nv = realloc(v, sizeof(char *) * (size_t)cap);
            if (!nv) break;
            v = nv;
        }
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        char *p = malloc(len);
        if (!p) break;
        snprintf(p, len, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", de->d_name);
        v[cnt++] = p;
    }
    closedir(d);
    if (cnt) qsort(v, (size_t)cnt, sizeof(char *), cmp_str);
    *paths = v;
    *n = cnt;
    return 0;
}

void fs_lesson_list_free(char **paths, int n)
{
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

bool fs_lesson_dir(const char *argv0, char *buf, size_t n)
{
    const char *env = getenv("FLASHSTEP_LESSONS");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return is_dir(buf);
    }
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) exe[k] = 0;
    else if (argv0) snprintf(exe, sizeof exe, "%s", argv0);
    else exe[0] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) {
        *slash = 0;
        /* build/flashstep and build/clang/flashstep, build/san/flashstep */
        for (int up = 1; up <= 3; up++) {
            char cand[PATH_MAX + 64];
            int w = snprintf(cand, sizeof cand, "%s", exe);
            for (int u = 0; u < up && w < (int)sizeof cand - 4; u++) w += snprintf(cand + w, sizeof cand - (size_t)w, "/..");
            snprintf(cand + w, sizeof cand - (size_t)w, "/lessons");
            if (is_dir(cand)) {
                char *rp = realpath(cand, NULL);
                snprintf(buf, n, "%s", rp ? rp : cand);
                free(rp);
                return true;
            }
        }
    }
    snprintf(buf, n, "lessons");
    return is_dir(buf);
}

bool fs_lesson_resolve(const char *name, const char *dir, char *buf, size_t n)
{
    struct stat st;
    if (stat(name, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(buf, n, "%s", name);
        return true;
    }
    char **paths;
    int cnt;
    if (!dir || fs_lesson_list(dir, &paths, &cnt) != 0) {
        snprintf(buf, n, "no lesson file '%s' and no lessons directory", name);
        return false;
    }
    int found = -1, matches = 0;
    size_t nl = strlen(name);
    for (int i = 0; i < cnt; i++) {
        const char *base = strrchr(paths[i], '/');
        base = base ? base + 1 : paths[i];
        size_t bl = strlen(base) - strlen(".lesson");
        if ((bl == nl && !strncmp(base, name, nl)) || !strcmp(base, name)) {   /* exact stem */
            found = i;
            matches = 1;
            break;
        }
        if (nl < bl && !strncmp(base, name, nl)) {
            found = i;
            matches++;
        }
    }
    bool ok = matches == 1;
    if (ok) snprintf(buf, n, "%s", paths[found]);
    else if (matches == 0) snprintf(buf, n, "no lesson named '%s' in %s", name, dir);
    else snprintf(buf, n, "'%s' matches %d lessons in %s; give more of the name", name, matches, dir);
    fs_lesson_list_free(paths, cnt);
    return ok;
}


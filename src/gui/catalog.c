/* catalog.c: lessons as things to show. A lesson (src/lesson) has already run the engine and
 * recorded its trace; this copies the trace and the problem into a gui_show and keeps the lesson
 * alive for its narration, its tree and its claims. With no lessons directory, the catalogue
 * is the built-in demos (show.c). */
#include <stdlib.h>
#include <string.h>

#include "gui/gui.h"
#include "io/text.h"
#include "lesson/lesson.h"

typedef struct {
    fs_lesson *l;
    char buf[4096];
} lesson_ctx;

static void free_lesson(void *ctx)
{
    lesson_ctx *c = ctx;
    if (c) fs_lesson_free(c->l);
    free(c);
}

/* The words for the step: the lesson's own narration, else a sentence generated from the event
 * (fs_lesson_say). The formulas stay in the side panel: words and formulas together do not fit the
 * bar at projector sizes. */
static const char *narrate(void *ctx, int64_t step)
{
    lesson_ctx *c = ctx;
    const fs_trace *t = fs_lesson_trace(c->l);
    if (!t || step < 0 || step >= t->n) return NULL;
    fs_lesson_say(c->l, t, step, c->buf, sizeof c->buf);
    return c->buf;
}

static bool copy_trace(fs_trace *dst, const fs_trace *src)
{
    fs_trace_init(dst);
    if (!src) return true;
    for (int64_t i = 0; i < src->n; i++)
        if (!fs_trace_push(dst, &src->ev[i])) return false;
    if (src->n_pool > 0 && fs_trace_vec(dst, src->pool, (int32_t)src->n_pool) < 0) return false;
    return true;
}

int gui_lesson_load(const char *path, gui_show *show, FILE *err)
{
    return gui_lesson_load_variation(path, "", show, err);
}

int gui_lesson_load_variation(const char *path, const char *opts, gui_show *show, FILE *err)
{
    memset(show, 0, sizeof *show);
    show->diverge = -1;
    fs_lesson *l = NULL;
    fs_loc_error e;
    memset(&e, 0, sizeof e);
    if (!fs_lesson_load_variation(path, opts, "command line", &l, &e)) {
        if (e.line > 0) fprintf(err, "%s:%d:%d: %s\n", e.file[0] ? e.file : path, e.line, e.col, e.msg);
        else fprintf(err, "%s: %s\n", e.file[0] ? e.file : path, e.msg);
        return 2;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(show->name, sizeof show->name, "%.*s", (int)(strlen(base) > 7 && !strcmp(base + strlen(base) - 7, ".lesson")
                                                              ? strlen(base) - 7 : strlen(base)), base);
    snprintf(show->title, sizeof show->title, "%s", fs_lesson_title(l));
    snprintf(show->source, sizeof show->source, "%s", fs_lesson_source(l));
    snprintf(show->intro, sizeof show->intro, "%s", fs_lesson_intro(l));
    /* the ending, shown at the last step */
    snprintf(show->path, sizeof show->path, "%s", path);
    snprintf(show->variation, sizeof show->variation, "%s", fs_lesson_variation(l));
    if (fs_lesson_summary(l)) {
        snprintf(show->summary, sizeof show->summary, "%s", fs_lesson_summary(l));
        snprintf(show->keep, sizeof show->keep, "keep: %s", fs_lesson_keep(l));
        fs_course_next_line(path, show->next, sizeof show->next);
    }
    if (fs_lesson_try_options(l)) {
        snprintf(show->try_label, sizeof show->try_label, "%s", fs_lesson_try_label(l));
        snprintf(show->try_opts, sizeof show->try_opts, "%s", fs_lesson_try_options(l));
    }
    show->scene = (gui_scene)fs_lesson_scene(l);
    if ((int)show->scene < 0 || show->scene >= GUI_SCENE_COUNT) show->scene = GUI_SCENE_CLAIMS;
    const fs_run *r = fs_lesson_run(l);
    if (r) show->run = *r;
    else show->run = fs_run_make(FS_ALGO_REFERENCE);
    if (r && r->algo == FS_ALGO_RING) show->scene = GUI_SCENE_RING;   /* the lesson format has no ring scene name */
    if (r && r->algo == FS_ALGO_DECODE && r->page_size > 0 && show->scene == GUI_SCENE_DECODE)
        show->scene = GUI_SCENE_PAGED;   /* nor a paged one: a decode through pages: shows them */
    bool ok = true;
    if (show->scene == GUI_SCENE_PITFALL && fs_lesson_compare_trace(l)) {
        /* The timeline walks the lesson's main trace (the wrong variant, which its narration
         * describes); the compare trace is the correct run drawn beside it. */
        ok = copy_trace(&show->trace, fs_lesson_trace(l)) && copy_trace(&show->correct, fs_lesson_compare_trace(l));
        if (r && r->lowp) fs_lowp_recipe_str(&r->recipe, show->wrong_label, sizeof show->wrong_label);   /* an fp8 lesson */
        else snprintf(show->wrong_label, sizeof show->wrong_label, "%s", fs_pitfall_str(r ? r->tiling.pitfall : FS_PITFALL_NONE));
    } else {
        ok = copy_trace(&show->trace, fs_lesson_trace(l));
    }
    int32_t np = 0;
    const int32_t *par = fs_lesson_tree_parent(l, &np);
    if (ok && par && np > 0) {
        show->parent = malloc(sizeof(int32_t) * (size_t)np);
        if (show->parent) {
            memcpy(show->parent, par, sizeof(int32_t) * (size_t)np);
            show->n_parent = np;
        }
        for (int32_t i = 0; i < np && i < 256; i++) {
            const char *lab = fs_lesson_label(l, i);
            if (lab) snprintf(show->node_label[i], sizeof show->node_label[i], "%s", lab);
        }
    }
    show->n_claims_all = fs_lesson_check_count(l);
    for (int i = 0; i < fs_lesson_check_count(l) && show->n_claims < GUI_MAX_CLAIMS; i++) {
        const fs_check *c = fs_lesson_check(l, i);
        snprintf(show->claim_verdict[show->n_claims], sizeof show->claim_verdict[0], "%s", fs_verdict_str(c->got.verdict));
        /* the exact value is in the printed one's unit: both carry it */
        const char *sp = c->unit && *c->unit ? " " : "", *unit = c->unit ? c->unit : "";
        /* what the number is: printed by the document, a bound it states (with its operator), or
         * what the lesson's own check expects */
        const bool bound = strcmp(c->op, "=") != 0;
        char tag[64] = "";
        if (*c->from) snprintf(tag, sizeof tag, "(see %s) ", c->from);
        else if (c->own) snprintf(tag, sizeof tag, "(own) ");
        /* the claim's words, then its values; a claim too long for the line loses words, never a
         * digit of its values (the window cuts the words before them when it has one line) */
        char values[192];   /* (a printed value too long even for this ends in "…", not mid-character) */
        fs_text_fit(values, sizeof values,
                    snprintf(values, sizeof values, ": %s %s%s%s%s%s, exact %s%s%s", c->own && !*c->from ? "expected" : bound ? "claims" : "printed",
                             bound ? c->op : "", bound ? " " : "", c->printed, sp, unit, c->exact_text, sp, unit));
        char *line = show->claims[show->n_claims];
        const size_t cap = sizeof show->claims[0], vn = strlen(values);
        int head = snprintf(line, cap, "%s%s", tag, c->claim);
        if (head < 0) head = 0;
        if ((size_t)head + vn >= cap) {   /* the words cut at a character, with "…" (vn < cap: values is smaller) */
            fs_text_fit(line, cap - vn, (int)cap);
            head = (int)strlen(line);
        }
        snprintf(line + head, cap - (size_t)head, "%s", values);
        show->claim_values[show->n_claims++] = head;
    }
    lesson_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) { fs_lesson_free(l); ok = false; }
    else ctx->l = l;
    show->narrate = narrate;
    show->narrate_ctx = ctx;
    show->narrate_free = free_lesson;
    if (!ok) {
        fprintf(err, "%s: out of memory copying the trace\n", path);
        gui_show_free(show);
        return 2;
    }
    if (show->trace.n > 0 && show->correct.n > 0) show->diverge = gui_first_divergence(&show->trace, &show->correct);
    gui_show_questions(show, l);   /* the lesson's questions (predict mode) */
    return 0;
}

int gui_catalog_open(gui_catalog *c, FILE *err)
{
    memset(c, 0, sizeof *c);
    char dir[4096];
    if (fs_lesson_dir(NULL, dir, sizeof dir) && fs_lesson_list(dir, &c->paths, &c->n) == 0 && c->n > 0) {
        c->names = calloc((size_t)c->n, sizeof *c->names);
        if (!c->names) { gui_catalog_free(c); fprintf(err, "flashstep: out of memory\n"); return 2; }
        for (int i = 0; i < c->n; i++) {
            const char *b = strrchr(c->paths[i], '/');
            b = b ? b + 1 : c->paths[i];
            size_t n = strlen(b);
            if (n > 7 && !strcmp(b + n - 7, ".lesson")) n -= 7;
            c->names[i] = strndup(b, n);
            if (!c->names[i]) { gui_catalog_free(c); fprintf(err, "flashstep: out of memory\n"); return 2; }
        }
        return 0;
    }
    if (c->paths) fs_lesson_list_free(c->paths, c->n);
    c->paths = NULL;
    c->n = gui_demo_count();
    c->names = calloc((size_t)c->n, sizeof *c->names);
    if (!c->names) { fprintf(err, "flashstep: out of memory\n"); return 2; }
    for (int i = 0; i < c->n; i++) c->names[i] = strdup(gui_demo_name(i));
    return 0;
}

void gui_catalog_free(gui_catalog *c)
{
    if (c->names) for (int i = 0; i < c->n; i++) free(c->names[i]);
    free(c->names);
    if (c->paths) fs_lesson_list_free(c->paths, c->n);
    memset(c, 0, sizeof *c);
}

int gui_catalog_find(const gui_catalog *c, const char *name)
{
    int found = -1, matches = 0;
    size_t nl = strlen(name);
    for (int i = 0; i < c->n; i++) {
        if (!strcmp(c->names[i], name) || (c->paths && !strcmp(c->paths[i], name))) return i;
        if (!strncmp(c->names[i], name, nl)) { found = i; matches++; }
    }
    return matches == 1 ? found : -1;
}

int gui_catalog_load(const gui_catalog *c, int i, gui_show *show, FILE *err)
{
    if (i < 0 || i >= c->n) {
        fprintf(err, "flashstep: no lesson number %d\n", i + 1);
        return 2;
    }
    if (c->paths) return gui_lesson_load(c->paths[i], show, err);
    return gui_demo_load(c->names[i], show, err);
}

/* state.c: the window's state machine. Keys become commands, commands change the state.
 *
 * gui_update is the only function that writes a gui_state; the drawing code only reads it. A
 * command is plain data (gui_cmd), so a test replays a list of them, or a script of key presses,
 * and checks the state afterwards without a display (tests/check_gui.c, tests/gui/).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gui/gui.h"

static const char *const scene_names[GUI_SCENE_COUNT] = {
    "softmax", "query", "tiled", "tree", "window", "gqa", "decode", "pitfall", "claims", "backward", "paged", "ring",
};

const char *gui_scene_str(gui_scene s)
{
    return (int)s >= 0 && s < GUI_SCENE_COUNT ? scene_names[s] : "?";
}

static const char *const key_names[GUI_KEY_COUNT] = {
    "None", "Space", "Left", "Right", "Up", "Down", "Home", "End", "Escape", "Enter",
    "Backspace", "Plus", "Minus", "Period", "Question", "F", "L", "T", "P", "Q", "E",
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "LeftBracket", "RightBracket", "V", "A", "I", "N",
};

const char *gui_key_str(gui_key k)
{
    return (int)k >= 0 && k < GUI_KEY_COUNT ? key_names[k] : "?";
}

gui_key gui_key_parse(const char *s)
{
    for (int k = 1; k < GUI_KEY_COUNT; k++)
        if (!strcasecmp(s, key_names[k])) return (gui_key)k;
    if (!strcmp(s, "+")) return GUI_KEY_PLUS;
    if (!strcmp(s, "-")) return GUI_KEY_MINUS;
    if (!strcmp(s, "?")) return GUI_KEY_QUESTION;
    if (!strcmp(s, ".")) return GUI_KEY_PERIOD;
    if (!strcmp(s, "[")) return GUI_KEY_LBRACKET;
    if (!strcmp(s, "]")) return GUI_KEY_RBRACKET;
    return GUI_KEY_NONE;
}

static const char *const cmd_names[GUI_CMD_COUNT] = {
    "none", "quit", "play-pause", "step", "significant", "speed", "home", "end", "seek",
    "mouse-move", "mouse-down", "mouse-up", "menu", "lesson", "fullscreen", "scale", "theme",
    "save-png", "help", "predict", "char", "backspace", "enter", "resize", "tick", "splits", "quiz",
    "intro",
};

const char *gui_cmd_str(gui_cmd_kind k)
{
    return (int)k >= 0 && k < GUI_CMD_COUNT ? cmd_names[k] : "?";
}

double gui_speed_eps(int level)
{
    if (level < 0) level = 0;
    if (level >= GUI_SPEEDS) level = GUI_SPEEDS - 1;
    return 0.5 * (double)(1 << level);
}

/* ---------------------------------------------------------------------------------------------
 * Predict mode: the show's questions (the question engine's), each asked before its step. */

/* The first question about step k after question `after` (−1: from the first), or −1. */
static int question_at(const gui_show *show, int64_t k, int after)
{
    for (int i = after + 1; i < show->n_questions; i++)
        if (show->questions[i].step == k) return i;
    return -1;
}

/* The first question about one of the lesson's claims after question `after` (−1: from the
 * first), or −1; *nth and *total (may be NULL): its place among them, 1-based, and their count. */
static int claim_question(const gui_show *show, int after, int *nth, int *total)
{
    int found = -1, k = 0, n = 0;
    for (int i = 0; i < show->n_questions; i++) {
        if (show->questions[i].step >= 0) continue;
        n++;
        if (i > after && found < 0) { found = i; k = n; }
    }
    if (nth) *nth = k;
    if (total) *total = n;
    return found;
}

static void predict_ask(gui_state *s, int64_t k, int qi)
{
    gui_predict *p = &s->predict;
    p->phase = GUI_PREDICT_ASK;
    p->at = k;
    p->qi = qi;
    p->input[0] = 0;
    p->correct = false;
    s->playing = false;
}

/* The lesson's next claim question (after the one just answered, or the first), or, when none
 * is left, the claims are done and shown. */
static void claims_next(gui_state *s, const gui_show *show)
{
    gui_predict *p = &s->predict;
    bool after_one = p->phase == GUI_PREDICT_SHOWN && p->at == GUI_AT_CLAIMS;
    int qi = claim_question(show, after_one ? p->qi : -1, NULL, NULL);
    if (qi >= 0) {
        predict_ask(s, GUI_AT_CLAIMS, qi);
        return;
    }
    p->claims_done = true;
    if (after_one) p->phase = GUI_PREDICT_ARMED;
}

static void predict_reveal(gui_state *s, const gui_show *show)
{
    gui_predict *p = &s->predict;
    if (p->qi < 0 || p->qi >= show->n_questions) return;
    char fb[8];
    p->correct = fs_question_judge(&show->questions[p->qi], p->input, fb, sizeof fb);
    if (fs_question_readable(&show->questions[p->qi], p->input)) {   /* a word or an empty line: shown, not marked */
        p->n_asked++;
        p->n_right += p->correct;
    }
    p->phase = GUI_PREDICT_SHOWN;
}

bool gui_predict_text(const gui_state *s, const gui_show *show, char l[4][GUI_PREDICT_LEN])
{
    const gui_predict *p = &s->predict;
    if (p->phase != GUI_PREDICT_ASK && p->phase != GUI_PREDICT_SHOWN) return false;
    if (p->qi < 0 || p->qi >= show->n_questions) return false;
    if (p->at != GUI_AT_CLAIMS && (p->at < 0 || p->at >= show->trace.n)) return false;
    const fs_question *q = &show->questions[p->qi];
    if (p->at == GUI_AT_CLAIMS) {
        int nth = 0, total = 0;
        claim_question(show, p->qi - 1, &nth, &total);
        snprintf(l[0], GUI_PREDICT_LEN, "A figure of the lesson (%d of %d): %s", nth, total, q->prompt);
    } else if (gui_predict_covers(s) && !strncmp(q->prompt, "Before ", 7)) snprintf(l[0], GUI_PREDICT_LEN, "%s", q->prompt);
    else if (gui_predict_covers(s)) snprintf(l[0], GUI_PREDICT_LEN, "Before the first step: %s", q->prompt);
    else snprintf(l[0], GUI_PREDICT_LEN, "Before step %lld: %s", (long long)p->at, q->prompt);
    l[1][0] = 0;
    for (int o = 0; !q->numeric && o < q->n_options; o++) {
        size_t n = strlen(l[1]);
        char name[112];
        snprintf(l[1] + n, GUI_PREDICT_LEN - n, "%s%d %s", o ? "   " : "type ", o + 1, fs_question_option(q, o, name, sizeof name));
    }
    if (p->phase == GUI_PREDICT_ASK) {
        snprintf(l[2], GUI_PREDICT_LEN, "answer: %s_", p->input);
        snprintf(l[3], GUI_PREDICT_LEN, "Enter: check (empty: see the answer)   Right: reveal   Q: questions off");
    } else {
        char ans[64];
        fs_question_answer(q, ans, sizeof ans);
        snprintf(l[2], GUI_PREDICT_LEN, "answer: %s   %s", ans,
                 !p->input[0] ? "(revealed)" : !fs_question_readable(q, p->input) ? "(not read: not counted)"
                 : p->correct ? "(you: right!)" : "(you: not quite)");
        char fb[GUI_PREDICT_LEN - 64];
        fs_question_judge(q, p->input, fb, sizeof fb);
        snprintf(l[3], GUI_PREDICT_LEN, "%s   Right: %s   score %d / %d", fb,
                 p->at == GUI_AT_CLAIMS && claim_question(show, p->qi, NULL, NULL) < 0 ? "the figures" : "go on",
                 p->n_right, p->n_asked);
    }
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * A section's quiz: the show's quiz (made by the platform), one question at a time. */

static void quiz_judge(gui_state *s, const gui_show *show)
{
    gui_quiz_view *z = &s->quiz;
    if (!show->quiz || z->qi < 0 || z->qi >= show->quiz->n) { z->phase = GUI_QUIZ_OFF; return; }
    char fb[8];
    z->correct = fs_question_judge(&show->quiz->q[z->qi], z->input, fb, sizeof fb);
    z->answered++;
    z->right += z->correct;
    z->wrong[z->qi] = !z->correct;
    z->phase = GUI_QUIZ_SHOWN;
}

/* The lessons of the wrong answers, each once, after "To revisit: ", into b. */
static void quiz_revisit(const gui_quiz_view *z, const fs_quiz *q, char *b, size_t n)
{
    size_t k = (size_t)snprintf(b, n, "To revisit: ");
    for (int i = 0; i < q->n && k < n; i++) {
        if (!z->wrong[i]) continue;
        bool dup = false;
        for (int j = 0; j < i; j++) dup |= z->wrong[j] && !strcmp(q->lesson[j], q->lesson[i]);
        if (!dup) k += (size_t)snprintf(b + k, n - k, "%s%s", k > 12 ? ", " : "", q->lesson[i]);
    }
    if (k < n) snprintf(b + k, n - k, " (L lists the lessons).");
}

bool gui_quiz_text(const gui_state *s, const gui_show *show, char l[5][GUI_PREDICT_LEN])
{
    const gui_quiz_view *z = &s->quiz;
    const fs_quiz *q = show->quiz;
    if (z->phase == GUI_QUIZ_OFF || !q || q->n <= 0) return false;
    for (int i = 0; i < 5; i++) l[i][0] = 0;
    if (z->phase == GUI_QUIZ_DONE) {
        snprintf(l[0], GUI_PREDICT_LEN, "Quiz on \"%s\": %d of %d right", q->section, z->right, q->n);
        if (z->right == q->n) snprintf(l[1], GUI_PREDICT_LEN, "Every answer right: on to the next section.");
        else quiz_revisit(z, q, l[1], GUI_PREDICT_LEN);
        snprintf(l[4], GUI_PREDICT_LEN, "%s   Enter or Esc: back to the lesson",
                 z->kept ? "The score is kept with your progress." : "");
        return true;
    }
    int i = z->qi < 0 ? 0 : z->qi >= q->n ? q->n - 1 : z->qi;
    const fs_question *qq = &q->q[i];
    snprintf(l[0], GUI_PREDICT_LEN, "Quiz on \"%s\": question %d of %d (from %s), on a fresh problem", q->section, i + 1,
             q->n, q->lesson[i]);
    snprintf(l[1], GUI_PREDICT_LEN, "%s", qq->prompt);
    for (int o = 0; !qq->numeric && o < qq->n_options; o++) {
        size_t n = strlen(l[2]);
        char name[112];
        snprintf(l[2] + n, GUI_PREDICT_LEN - n, "%s%d %s", o ? "   " : "type ", o + 1, fs_question_option(qq, o, name, sizeof name));
    }
    if (z->phase == GUI_QUIZ_ASK) {
        snprintf(l[3], GUI_PREDICT_LEN, "answer: %s_", z->input);
        snprintf(l[4], GUI_PREDICT_LEN, "Enter: check (empty: see the answer, counted wrong)   Esc: leave the quiz (no score kept)"
                 "   score %d / %d", z->right, z->answered);
    } else {
        char ans[64];
        fs_question_answer(qq, ans, sizeof ans);
        snprintf(l[3], GUI_PREDICT_LEN, "answer: %s   %s", ans, z->correct ? "(you: right!)" : "(you: not quite)");
        char fb[GUI_PREDICT_LEN - 96];
        fs_question_judge(qq, z->input, fb, sizeof fb);
        snprintf(l[4], GUI_PREDICT_LEN, "%s   Enter: %s   score %d / %d", fb, i + 1 < q->n ? "next question" : "the score",
                 z->right, z->answered);
    }
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * Moving along the trace. */

int64_t gui_next_significant(const fs_trace *t, int64_t k, int dir)
{
    for (int64_t i = k + dir; i >= 0 && i < t->n; i += dir)
        if (fs_event_significant(&t->ev[i])) return i;
    return k;
}

static void set_status(gui_state *s, const char *msg)
{
    strncpy(s->status, msg, sizeof s->status - 1);
    s->status[sizeof s->status - 1] = 0;
    s->status_ttl = 150;
}

/* Jump to a step with no questions asked (timeline, Home, End, backward). */
static void seek(gui_state *s, int64_t k)
{
    if (s->n <= 0) { s->step = 0; return; }
    if (k < 0) k = 0;
    if (k > s->n - 1) k = s->n - 1;
    s->step = k;
    if (s->predict.phase != GUI_PREDICT_OFF) s->predict.phase = GUI_PREDICT_ARMED;
}

/* Move forward to step k, stopping before a step with a question when predict mode is on. */
static void forward(gui_state *s, const gui_show *show, int64_t k)
{
    gui_predict *p = &s->predict;
    if (p->phase == GUI_PREDICT_ASK) { predict_reveal(s, show); return; }
    if (p->phase == GUI_PREDICT_SHOWN && p->at == GUI_AT_CLAIMS) { claims_next(s, show); return; }
    if (k > s->n - 1) k = s->n - 1;
    if (k <= s->step) {
        /* Right at the last step (or in a lesson of claims only): the lesson's claim questions, once */
        if (p->phase == GUI_PREDICT_ARMED && !p->claims_done && s->step >= s->n - 1) claims_next(s, show);
        return;
    }
    if (p->phase == GUI_PREDICT_SHOWN && p->at == 0 && s->step == 0) {
        /* A question about step 0, asked before the scene was shown (gui_state_attach): the
         * step's next question, else the first step is shown now (it was covered). */
        int next = question_at(show, 0, p->qi);
        if (next >= 0) predict_ask(s, 0, next);
        else p->phase = GUI_PREDICT_ARMED;
        return;
    }
    int64_t from = s->step + 1;
    if (p->phase == GUI_PREDICT_SHOWN && p->at == from) {
        /* The answer was shown: the step's next question, else this step applies the event. */
        int next = question_at(show, from, p->qi);
        if (next >= 0) {
            predict_ask(s, from, next);
            return;
        }
        s->step = from;
        p->phase = GUI_PREDICT_ARMED;
        from++;
        if (k < from) return;
    }
    if (p->phase == GUI_PREDICT_ARMED) {
        for (int64_t i = from; i <= k; i++) {
            int qi = question_at(show, i, -1);
            if (qi >= 0) {
                s->step = i - 1;
                predict_ask(s, i, qi);
                return;
            }
        }
    }
    s->step = k;
}

void gui_state_init(gui_state *s, int w, int h, int catalog_n, int lesson)
{
    memset(s, 0, sizeof *s);
    s->glossary = -1;
    s->w = w;
    s->h = h;
    s->scale_pct = 100;
    s->theme = GUI_THEME_DARK;
    s->catalog_n = catalog_n;
    s->lesson = lesson;
    s->menu_sel = lesson;
    s->speed = 2;
    s->follow = -1;
    s->hover_step = -1;
    s->narr_longest = -1;
    s->quiz_want = -1;
    s->section_end = -1;
    s->course_pos = -1;
}

void gui_state_attach(gui_state *s, const gui_show *show)
{
    s->n = show->trace.n;
    /* The longest narration decides the narration bar's height (gui_layout_for). */
    s->narr_longest = -1;
    size_t longest = 0;
    char buf[4096];
    for (int64_t k = 0; k < s->n; k++) {
        size_t len = strlen(gui_narration(show, k, buf, sizeof buf));
        if (len > longest) { longest = len; s->narr_longest = k; }
    }
    s->step = 0;
    s->acc_ms = 0;
    s->follow = -1;
    s->hover = GUI_HOVER_NONE;
    s->intro = false;   /* it was the old show's */
    s->lesson_changed = false;
    s->playing = s->autoplay;
    bool on = s->predict.phase != GUI_PREDICT_OFF;
    memset(&s->predict, 0, sizeof s->predict);
    s->predict.phase = on ? GUI_PREDICT_ARMED : GUI_PREDICT_OFF;
    memset(&s->quiz, 0, sizeof s->quiz);   /* a quiz belongs to the show it was opened over */
    /* The window opens on step 0 with that step applied: a question about it is asked first,
     * with the scene covered until it is answered or revealed (frame.c). */
    int q0 = on && s->n > 0 ? question_at(show, 0, -1) : -1;
    if (q0 >= 0) predict_ask(s, 0, q0);
    /* A lesson of claims only has no step to wait for: its claim questions are asked at once,
     * the claims covered until the last is answered. */
    if (on && s->n <= 0) claims_next(s, show);
}

bool gui_predict_covers(const gui_state *s)
{
    const gui_predict *p = &s->predict;
    return (p->phase == GUI_PREDICT_ASK || p->phase == GUI_PREDICT_SHOWN) &&
           ((p->at == 0 && s->step == 0) || p->at == GUI_AT_CLAIMS);
}

int64_t gui_classes_wait(const gui_state *s, const gui_show *show)
{
    const gui_predict *p = &s->predict;
    if ((p->phase != GUI_PREDICT_ASK && p->phase != GUI_PREDICT_SHOWN) || p->at < 0) return -1;
    for (int i = p->phase == GUI_PREDICT_ASK ? p->qi : question_at(show, p->at, p->qi); i >= 0;
         i = question_at(show, p->at, i))
        if (fs_question_about_classes(&show->questions[i])) return p->at;
    return -1;
}

bool gui_kv_head_wait(const gui_state *s, const gui_show *show)
{
    const gui_predict *p = &s->predict;
    return p->phase == GUI_PREDICT_ASK && p->qi >= 0 && p->qi < show->n_questions &&
           show->questions[p->qi].kind == FS_Q_KV_HEAD;
}

/* The letters an answer may hold besides e: those of NaN and -inf (F is full screen otherwise). */
static char answer_letter(gui_key k)
{
    return k == GUI_KEY_A ? 'a' : k == GUI_KEY_F ? 'f' : k == GUI_KEY_I ? 'i' : 'n';
}

gui_cmd gui_key_cmd(const gui_state *s, gui_key k, bool shift)
{
    gui_cmd c = {GUI_CMD_NONE, 0, 0};
    /* A quiz takes every key while it is open: the answer's characters, Enter (or Right, or
     * Space) to check and go on, Esc to leave. */
    if (s->quiz.phase != GUI_QUIZ_OFF) {
        if (k >= GUI_KEY_0 && k <= GUI_KEY_9) return (gui_cmd){GUI_CMD_CHAR, '0' + (k - GUI_KEY_0), 0};
        switch (k) {
        case GUI_KEY_PERIOD: return (gui_cmd){GUI_CMD_CHAR, '.', 0};
        case GUI_KEY_MINUS: return (gui_cmd){GUI_CMD_CHAR, '-', 0};
        case GUI_KEY_E: return (gui_cmd){GUI_CMD_CHAR, 'e', 0};
        case GUI_KEY_A: case GUI_KEY_F: case GUI_KEY_I: case GUI_KEY_N: return (gui_cmd){GUI_CMD_CHAR, answer_letter(k), 0};
        case GUI_KEY_BACKSPACE: return (gui_cmd){GUI_CMD_BACKSPACE, 0, 0};
        case GUI_KEY_ENTER: case GUI_KEY_RIGHT: case GUI_KEY_SPACE: return (gui_cmd){GUI_CMD_ENTER, 0, 0};
        case GUI_KEY_ESCAPE: return (gui_cmd){GUI_CMD_QUIT, 0, 0};
        default: return c;
        }
    }
    /* While predict mode is on, digits and the point belong to the answer, even before a
     * question is pending (a learner who types "0.4" early must not land in lesson 4); lessons
     * stay on L and the list. */
    if (s->predict.phase != GUI_PREDICT_OFF) {
        if (k >= GUI_KEY_0 && k <= GUI_KEY_9) return (gui_cmd){GUI_CMD_CHAR, '0' + (k - GUI_KEY_0), 0};
        if (k == GUI_KEY_PERIOD) return (gui_cmd){GUI_CMD_CHAR, '.', 0};
    }
    if (s->predict.phase == GUI_PREDICT_ASK) {
        switch (k) {
        case GUI_KEY_MINUS: return (gui_cmd){GUI_CMD_CHAR, '-', 0};
        case GUI_KEY_E: return (gui_cmd){GUI_CMD_CHAR, 'e', 0};
        case GUI_KEY_A: case GUI_KEY_F: case GUI_KEY_I: case GUI_KEY_N: return (gui_cmd){GUI_CMD_CHAR, answer_letter(k), 0};
        case GUI_KEY_BACKSPACE: return (gui_cmd){GUI_CMD_BACKSPACE, 0, 0};
        case GUI_KEY_ENTER: return (gui_cmd){GUI_CMD_ENTER, 0, 0};
        default: break;
        }
    }
    if (s->menu) {
        switch (k) {
        case GUI_KEY_UP: return (gui_cmd){GUI_CMD_LESSON, -2, -1};   /* move the selection */
        case GUI_KEY_DOWN: return (gui_cmd){GUI_CMD_LESSON, -2, +1};
        case GUI_KEY_ENTER:
            if (s->menu_sel >= s->catalog_n) return (gui_cmd){GUI_CMD_QUIZ, s->menu_sel - s->catalog_n, 0};
            return (gui_cmd){GUI_CMD_LESSON, s->menu_sel, 0};
        default: break;
        }
    }
    /* The last step of a section's last lesson offers the section's quiz. */
    if (k == GUI_KEY_ENTER && s->section_end >= 0 && (s->n <= 0 || s->step >= s->n - 1) &&
        s->predict.phase != GUI_PREDICT_ASK && s->predict.phase != GUI_PREDICT_SHOWN)
        return (gui_cmd){GUI_CMD_QUIZ, s->section_end, 0};
    if (k >= GUI_KEY_1 && k <= GUI_KEY_9) return (gui_cmd){GUI_CMD_LESSON, k - GUI_KEY_1, 0};
    switch (k) {
    case GUI_KEY_0: c = (gui_cmd){GUI_CMD_LESSON, 9, 0}; break;
    case GUI_KEY_SPACE: c.kind = GUI_CMD_PLAY_PAUSE; break;
    case GUI_KEY_RIGHT: c = (gui_cmd){shift ? GUI_CMD_SIGNIFICANT : GUI_CMD_STEP, +1, 0}; break;
    case GUI_KEY_LEFT: c = (gui_cmd){shift ? GUI_CMD_SIGNIFICANT : GUI_CMD_STEP, -1, 0}; break;
    case GUI_KEY_UP: c = (gui_cmd){GUI_CMD_SPEED, +1, 0}; break;
    case GUI_KEY_DOWN: c = (gui_cmd){GUI_CMD_SPEED, -1, 0}; break;
    case GUI_KEY_HOME: c.kind = GUI_CMD_HOME; break;
    case GUI_KEY_END: c.kind = GUI_CMD_END; break;
    case GUI_KEY_ESCAPE: c.kind = GUI_CMD_QUIT; break;
    case GUI_KEY_PLUS: c = (gui_cmd){GUI_CMD_SCALE, +1, 0}; break;
    case GUI_KEY_MINUS: c = (gui_cmd){GUI_CMD_SCALE, -1, 0}; break;
    case GUI_KEY_QUESTION: c.kind = GUI_CMD_HELP; break;
    case GUI_KEY_F: c.kind = GUI_CMD_FULLSCREEN; break;
    case GUI_KEY_L: c.kind = GUI_CMD_MENU; break;
    case GUI_KEY_T: c.kind = GUI_CMD_THEME; break;
    case GUI_KEY_P: c.kind = GUI_CMD_SAVE_PNG; break;
    case GUI_KEY_Q: c.kind = GUI_CMD_PREDICT; break;
    case GUI_KEY_LBRACKET: c = (gui_cmd){GUI_CMD_SPLITS, -1, 0}; break;
    case GUI_KEY_RBRACKET: c = (gui_cmd){GUI_CMD_SPLITS, +1, 0}; break;
    case GUI_KEY_V: c.kind = GUI_CMD_TRY; break;
    case GUI_KEY_I: c.kind = GUI_CMD_INTRO; break;   /* while a question waits, I types the i of inf */
    case GUI_KEY_ENTER: if (s->predict.phase == GUI_PREDICT_SHOWN) c = (gui_cmd){GUI_CMD_STEP, +1, 0}; break;
    default: break;
    }
    return c;
}

int gui_followed_row(const gui_state *s, const gui_show *show)
{
    if (s->follow >= 0 && s->follow < show->run.attn.n_q) return s->follow;
    if (s->n <= 0 || s->step < 0 || s->step >= show->trace.n) return -1;
    const fs_event *e = &show->trace.ev[s->step];
    if (e->row >= 0) return e->row;
    if (e->r0 >= 0 && (e->kind == FS_EV_TILE || e->kind == FS_EV_SKIP)) return e->r0;
    return -1;
}

static void hover_at(gui_state *s, const gui_show *show)
{
    gui_layout L = gui_layout_for(s, show);
    s->hover = GUI_HOVER_NONE;
    s->hover_step = -1;
    if (gui_rect_contains(L.timeline, s->mouse_x, s->mouse_y) && s->n > 0) {
        s->hover = GUI_HOVER_TIMELINE;
        s->hover_step = gui_timeline_step_at(L.timeline, s->n, s->mouse_x);
        return;
    }
    if (gui_rect_contains(L.narration, s->mouse_x, s->mouse_y)) {
        s->hover = GUI_HOVER_NARRATION;
        return;
    }
    gui_grid g = gui_scene_grid(show, &L);
    int i, j;
    if (gui_grid_hit(&g, s->mouse_x, s->mouse_y, &i, &j)) {
        s->hover = GUI_HOVER_CELL;
        s->hover_i = i;
        s->hover_j = j;
    } else if (g.cell > 0 && s->mouse_y >= g.y0 && s->mouse_y < g.y0 + g.rows * g.cell &&
               s->mouse_x < g.x0 && s->mouse_x >= L.main.x) {
        s->hover = GUI_HOVER_ROW;   /* the row labels left of the grid */
        s->hover_i = (s->mouse_y - g.y0) / g.cell;
        s->hover_j = -1;
    }
}

static bool has_rows(const gui_show *show)
{
    switch (show->scene) {
    case GUI_SCENE_TILED: case GUI_SCENE_TREE: case GUI_SCENE_WINDOW: case GUI_SCENE_GQA:
    case GUI_SCENE_PITFALL: return true;
    default: return false;
    }
}

static const int scales[] = {50, 67, 75, 90, 100, 110, 125, 150, 175, 200, 250, 300};
#define N_SCALES ((int)(sizeof scales / sizeof scales[0]))

void gui_update(gui_state *s, const gui_show *show, const gui_cmd *c)
{
    switch (c->kind) {
    case GUI_CMD_NONE: break;
    case GUI_CMD_QUIT:
        if (s->quiz.phase != GUI_QUIZ_OFF) s->quiz.phase = GUI_QUIZ_OFF;   /* left (a score not finished is not kept) */
        else if (s->glossary >= 0) s->glossary = -1;
        else if (s->help) s->help = false;
        else if (s->intro) s->intro = false;
        else if (s->menu) s->menu = false;
        else s->quit = true;
        break;
    case GUI_CMD_PLAY_PAUSE:
        if (s->predict.phase == GUI_PREDICT_ASK) break;
        s->playing = !s->playing;
        if (s->playing && s->step >= s->n - 1) seek(s, 0);   /* play again from the start */
        s->acc_ms = 0;
        break;
    case GUI_CMD_STEP:
        if (c->a > 0) forward(s, show, s->step + 1);
        else seek(s, s->step - 1);
        s->playing = false;
        break;
    case GUI_CMD_SIGNIFICANT:
        if (c->a > 0) forward(s, show, gui_next_significant(&show->trace, s->step, +1));
        else seek(s, gui_next_significant(&show->trace, s->step, -1));
        s->playing = false;
        break;
    case GUI_CMD_SPEED:
        s->speed += c->a > 0 ? 1 : -1;
        if (s->speed < 0) s->speed = 0;
        if (s->speed >= GUI_SPEEDS) s->speed = GUI_SPEEDS - 1;
        break;
    case GUI_CMD_HOME: seek(s, 0); break;
    case GUI_CMD_END: seek(s, s->n - 1); s->playing = false; break;
    case GUI_CMD_SEEK: seek(s, c->a); break;
    case GUI_CMD_MOUSE_MOVE:
        s->mouse_x = c->a;
        s->mouse_y = c->b;
        if (s->dragging) {
            gui_layout L = gui_layout_for(s, show);
            seek(s, gui_timeline_step_at(L.timeline, s->n, c->a));
        }
        hover_at(s, show);
        break;
    case GUI_CMD_MOUSE_DOWN: {
        s->mouse_x = c->a;
        s->mouse_y = c->b;
        gui_layout L = gui_layout_for(s, show);
        if (s->menu || s->quiz.phase != GUI_QUIZ_OFF) break;
        if (gui_rect_contains(L.timeline, c->a, c->b)) {
            s->dragging = true;
            s->playing = false;
            seek(s, gui_timeline_step_at(L.timeline, s->n, c->a));
            break;
        }
        hover_at(s, show);
        if (has_rows(show) && (s->hover == GUI_HOVER_CELL || s->hover == GUI_HOVER_ROW)) {
            int row = s->hover_i;
            s->follow = s->follow == row ? -1 : row;   /* a second click lets go */
        }
        break;
    }
    case GUI_CMD_MOUSE_UP:
        s->mouse_x = c->a;
        s->mouse_y = c->b;
        s->dragging = false;
        break;
    case GUI_CMD_MENU:
        s->menu = !s->menu;
        if (s->menu) s->intro = false;
        s->menu_sel = s->lesson >= 0 ? s->lesson : 0;
        break;
    case GUI_CMD_LESSON:
        if (c->a == -2) {   /* move the menu selection */
            s->menu_sel += c->b;
            if (s->menu_sel < 0) s->menu_sel = 0;
            if (s->menu_sel >= s->catalog_n + s->n_sections) s->menu_sel = s->catalog_n + s->n_sections - 1;
            break;
        }
        if (c->a >= 0 && c->a < s->catalog_n) {
            if (c->a != s->lesson) {
                s->lesson = c->a;
                s->lesson_changed = true;
            }
            s->menu = false;
        }
        break;
    case GUI_CMD_FULLSCREEN: s->fullscreen = !s->fullscreen; break;
    case GUI_CMD_SCALE: {
        int i = 0;
        while (i < N_SCALES - 1 && scales[i] < s->scale_pct) i++;
        if (c->a > 0 && scales[i] <= s->scale_pct && i < N_SCALES - 1) i++;
        else if (c->a < 0 && i > 0) i--;
        s->scale_pct = c->a == 0 ? 100 : scales[i];
        break;
    }
    case GUI_CMD_THEME: s->theme = (gui_theme_id)((s->theme + 1) % GUI_THEME_COUNT); break;
    case GUI_CMD_SAVE_PNG: s->save_png = true; break;
    case GUI_CMD_TRY:
        if (show->variation[0] || show->try_opts[0]) s->try_request = true;
        else set_status(s, show->summary[0] ? "this lesson has no variation to try" : "V: nothing to try here");
        break;
    case GUI_CMD_INTRO:
        if (!show->intro[0]) {
            set_status(s, "this lesson has no introduction");
            break;
        }
        if (gui_predict_covers(s) && s->predict.at == GUI_AT_CLAIMS) {   /* it can state the figures */
            set_status(s, "the introduction shows once the questions on the figures are done");
            break;
        }
        s->intro = !s->intro;
        if (s->intro) {
            s->help = s->menu = false;
            s->glossary = -1;
            s->playing = false;
        }
        break;
    case GUI_CMD_HELP: {
        /* ? cycles: the keys, then the glossary's pages, then nothing */
        const int pages = (fs_glossary_count() + GUI_GLOSSARY_PER_PAGE - 1) / GUI_GLOSSARY_PER_PAGE;
        if (s->glossary >= 0) s->glossary = s->glossary + 1 < pages ? s->glossary + 1 : -1;
        else if (s->help) {
            s->help = false;
            s->glossary = pages > 0 ? 0 : -1;
        } else {
            s->help = true;
            s->intro = false;
        }
        break;
    }
    case GUI_CMD_PREDICT:
        if (s->predict.phase == GUI_PREDICT_OFF) {
            s->predict.phase = GUI_PREDICT_ARMED;
            set_status(s, "questions on: before a step that matters, type the number it gives, then Enter");
        } else {
            s->predict.phase = GUI_PREDICT_OFF;
            set_status(s, "questions off (Q turns them on)");
        }
        break;
    case GUI_CMD_CHAR: {
        if (s->quiz.phase != GUI_QUIZ_OFF) {
            size_t m = strlen(s->quiz.input);
            if (s->quiz.phase == GUI_QUIZ_ASK && m + 1 < sizeof s->quiz.input) {
                s->quiz.input[m] = (char)c->a;
                s->quiz.input[m + 1] = 0;
            }
            break;
        }
        size_t n = strlen(s->predict.input);
        if (s->predict.phase == GUI_PREDICT_ASK && n + 1 < sizeof s->predict.input) {
            s->predict.input[n] = (char)c->a;
            s->predict.input[n + 1] = 0;
        } else if (s->predict.phase == GUI_PREDICT_ARMED) {
            set_status(s, "no question yet: Right steps on to the next step with a question");
        } else if (s->predict.phase == GUI_PREDICT_SHOWN) {
            set_status(s, "the answer is shown: Right applies the step");
        }
        break;
    }
    case GUI_CMD_BACKSPACE: {
        if (s->quiz.phase == GUI_QUIZ_ASK) {
            size_t m = strlen(s->quiz.input);
            if (m) s->quiz.input[m - 1] = 0;
            break;
        }
        size_t n = strlen(s->predict.input);
        if (n) s->predict.input[n - 1] = 0;
        break;
    }
    case GUI_CMD_ENTER:
        if (s->quiz.phase == GUI_QUIZ_ASK) quiz_judge(s, show);
        else if (s->quiz.phase == GUI_QUIZ_SHOWN) {
            gui_quiz_view *z = &s->quiz;
            if (show->quiz && z->qi + 1 < show->quiz->n) {
                z->qi++;
                z->input[0] = 0;
                z->phase = GUI_QUIZ_ASK;
            } else {
                z->phase = GUI_QUIZ_DONE;   /* the platform keeps the score */
            }
        } else if (s->quiz.phase == GUI_QUIZ_DONE) s->quiz.phase = GUI_QUIZ_OFF;
        else if (s->predict.phase == GUI_PREDICT_ASK) predict_reveal(s, show);   /* empty: the answer, revealed */
        break;
    case GUI_CMD_RESIZE:
        s->w = c->a > 0 ? c->a : s->w;
        s->h = c->b > 0 ? c->b : s->h;
        break;
    case GUI_CMD_TICK:
        s->frames++;
        if (s->status_ttl > 0 && --s->status_ttl == 0) s->status[0] = 0;
        if (!s->playing) break;
        if (s->step >= s->n - 1) {
            s->playing = false;
            if (s->exit_at_end) s->quit = true;
            break;
        }
        s->acc_ms += c->a;
        double period = 1000.0 / gui_speed_eps(s->speed);
        int64_t k = s->step;
        while (s->acc_ms >= period && k < s->n - 1) {
            s->acc_ms -= period;
            k++;
        }
        if (k > s->step) forward(s, show, k);
        if (s->acc_ms > period) s->acc_ms = 0;
        break;
    case GUI_CMD_SPLITS:
        if (show->scene == GUI_SCENE_DECODE && show->run.algo == FS_ALGO_DECODE) s->resplit = c->a > 0 ? 1 : -1;
        else set_status(s, "[ and ] change the number of splits in a decode lesson");
        break;
    case GUI_CMD_QUIZ:
        if (c->a < 0 || c->a >= s->n_sections) break;
        if (c->b == 0) {   /* asked for: the platform makes it */
            s->quiz_want = c->a;
            s->menu = s->help = s->intro = false;
            s->glossary = -1;
            s->playing = false;
        } else if (show->quiz && show->quiz->n > 0) {   /* made: the first question */
            memset(&s->quiz, 0, sizeof s->quiz);
            s->quiz.phase = GUI_QUIZ_ASK;
            s->quiz.section = c->a;
            s->playing = false;
        }
        break;
    case GUI_CMD_COUNT: break;
    }
    /* What lies under a resting pointer changes with the layout (a step, the question's box, the
     * ending, the text size, the window's size): the hover is read again from the same point, so
     * that a tooltip never names a cell that has moved away from under it. */
    bool pointer_seen = s->mouse_x > 0 || s->mouse_y > 0;
    if (pointer_seen && !s->dragging && c->kind != GUI_CMD_MOUSE_MOVE && c->kind != GUI_CMD_MOUSE_DOWN) hover_at(s, show);
}

/* ---------------------------------------------------------------------------------------------
 * Scripts. */

/* One located error line. The quoted word w (may be NULL) comes from the file: bytes outside
 * printable ASCII are written as \xHH and it is cut at 40 characters, so a binary file given as
 * a script cannot put raw bytes on the terminal. */
static int script_error(FILE *err, const char *file, int line, int col, const char *msg, const char *w)
{
    char shown[200] = "";
    size_t o = 0;
    for (size_t i = 0; w && w[i] && o + 8 < sizeof shown; i++) {
        unsigned char c = (unsigned char)w[i];
        if (i == 40) {
            snprintf(shown + o, sizeof shown - o, "...");
            break;
        }
        o += (size_t)(c >= 0x20 && c < 0x7f ? snprintf(shown + o, sizeof shown - o, "%c", c)
                                             : snprintf(shown + o, sizeof shown - o, "\\x%02x", c));
    }
    fprintf(err, "%s:%d:%d: %s%s%s%s\n", file, line, col, msg, w ? " '" : "", shown, w ? "'" : "");
    return 2;
}

int gui_script_load(const char *path, gui_script *sc, FILE *err)
{
    memset(sc, 0, sizeof *sc);
    snprintf(sc->file, sizeof sc->file, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(err, "%s: cannot open the script\n", path);
        return 2;
    }
    char *buf = NULL;   /* one whole line, however long (getline) */
    size_t buf_cap = 0;
    int line = 0, cap = 0, rc = 0;
    while (getline(&buf, &buf_cap, f) != -1) {
        line++;
        char *p = buf;
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == '#') continue;
        char word[5][256] = {{0}};
        int cols[5] = {0};
        int nw = 0;
        while (*p && nw < 5) {
            cols[nw] = (int)(p - buf) + 1;
            int k = 0;
            while (*p && !isspace((unsigned char)*p) && k < 255) word[nw][k++] = *p++;
            word[nw][k] = 0;
            if (*p && !isspace((unsigned char)*p)) {
                rc = script_error(err, path, line, cols[nw], "word longer than 255 characters:", word[nw]);
                goto fail;
            }
            nw++;
            while (isspace((unsigned char)*p)) p++;
        }
        if (*p) { rc = script_error(err, path, line, (int)(p - buf) + 1, "too many words", NULL); goto fail; }
        gui_script_line L;
        memset(&L, 0, sizeof L);
        L.line = line;
        int need = 0;   /* integer arguments */
        const char *op = word[0];
        if (!strcmp(op, "key")) {
            L.op = GUI_SCRIPT_KEY;
            if (nw < 2 || (L.key = gui_key_parse(word[1])) == GUI_KEY_NONE) {
                rc = script_error(err, path, line, cols[nw < 2 ? 0 : 1], "unknown key", nw < 2 ? "" : word[1]);
                goto fail;
            }
            if (nw >= 3) {
                if (strcmp(word[2], "shift")) { rc = script_error(err, path, line, cols[2], "expected 'shift', got", word[2]); goto fail; }
                L.shift = true;
            }
        } else if (!strcmp(op, "move")) { L.op = GUI_SCRIPT_MOVE; need = 2; }
        else if (!strcmp(op, "down")) { L.op = GUI_SCRIPT_DOWN; need = 2; }
        else if (!strcmp(op, "up")) { L.op = GUI_SCRIPT_UP; need = 2; }
        else if (!strcmp(op, "click")) { L.op = GUI_SCRIPT_CLICK; need = 2; }
        else if (!strcmp(op, "drag")) { L.op = GUI_SCRIPT_DRAG; need = 4; }
        else if (!strcmp(op, "wait")) { L.op = GUI_SCRIPT_WAIT; need = 1; }
        else if (!strcmp(op, "resize")) { L.op = GUI_SCRIPT_RESIZE; need = 2; }
        else if (!strcmp(op, "quit")) { L.op = GUI_SCRIPT_QUIT; }
        else if (!strcmp(op, "save")) {
            L.op = GUI_SCRIPT_SAVE;
            if (nw != 2) { rc = script_error(err, path, line, cols[0], "save needs a file name", NULL); goto fail; }
            snprintf(L.path, sizeof L.path, "%.255s", word[1]);
        } else if (!strcmp(op, "match")) {
            L.op = GUI_SCRIPT_MATCH;
            if (nw != 2) { rc = script_error(err, path, line, cols[0], "match needs a reference image", NULL); goto fail; }
            /* Relative to the script's own directory, so tests run from anywhere. */
            const char *slash = strrchr(path, '/');
            if (word[1][0] == '/' || !slash) snprintf(L.path, sizeof L.path, "%.255s", word[1]);
            else snprintf(L.path, sizeof L.path, "%.*s/%.200s", (int)(slash - path > 50 ? 50 : slash - path), path, word[1]);
            if (slash && slash - path > 50 && word[1][0] != '/') {
                rc = script_error(err, path, line, cols[1], "script directory too long for a relative reference", NULL);
                goto fail;
            }
        } else if (!strcmp(op, "expect")) {
            L.op = GUI_SCRIPT_EXPECT;
            static const char *const whats[] = {"step", "playing", "theme", "scale", "predict", "lesson",
                                                "follow", "help", "hover", "speed", "menu", "right", "events", "course",
                                                "intro"};
            bool ok = false;
            for (size_t i = 0; i < sizeof whats / sizeof whats[0]; i++) ok |= nw >= 2 && !strcmp(word[1], whats[i]);
            if (!ok) { rc = script_error(err, path, line, cols[nw >= 2], "unknown expectation", nw >= 2 ? word[1] : ""); goto fail; }
            snprintf(L.what, sizeof L.what, "%.15s", word[1]);
            if (!strcmp(L.what, "predict")) {
                static const char *const ph[] = {"off", "armed", "ask", "shown"};
                L.v[0] = -1;
                for (int i = 0; i < 4; i++) if (nw == 3 && !strcmp(word[2], ph[i])) L.v[0] = i;
                if (L.v[0] < 0) { rc = script_error(err, path, line, cols[nw == 3 ? 2 : 0], "expected off, armed, ask or shown", NULL); goto fail; }
            } else {
                int n_args = !strcmp(L.what, "hover") ? 2 : 1;
                if (nw != 2 + n_args) { rc = script_error(err, path, line, cols[0], "wrong number of arguments", NULL); goto fail; }
                for (int i = 0; i < n_args; i++) {
                    char *end;
                    long v = strtol(word[2 + i], &end, 10);
                    if (*end || end == word[2 + i]) { rc = script_error(err, path, line, cols[2 + i], "not an integer:", word[2 + i]); goto fail; }
                    L.v[i] = (int)v;
                }
            }
        } else {
            rc = script_error(err, path, line, cols[0], "unknown command", op);
            goto fail;
        }
        if (need) {
            if (nw != 1 + need) { rc = script_error(err, path, line, cols[0], "wrong number of arguments for", op); goto fail; }
            for (int i = 0; i < need; i++) {
                char *end;
                long v = strtol(word[1 + i], &end, 10);
                if (*end || end == word[1 + i] || v < -100000 || v > 100000) {
                    rc = script_error(err, path, line, cols[1 + i], "not an integer:", word[1 + i]);
                    goto fail;
                }
                L.v[i] = (int)v;
            }
        }
        if (sc->n == cap) {
            cap = cap ? 2 * cap : 64;
            gui_script_line *nl = realloc(sc->lines, (size_t)cap * sizeof *nl);
            if (!nl) { fprintf(err, "%s: out of memory\n", path); rc = 2; goto fail; }
            sc->lines = nl;
        }
        sc->lines[sc->n++] = L;
    }
    free(buf);
    fclose(f);
    return 0;
fail:
    free(buf);
    fclose(f);
    gui_script_free(sc);
    return rc;
}

void gui_script_free(gui_script *sc)
{
    free(sc->lines);
    sc->lines = NULL;
    sc->n = 0;
}

bool gui_script_expect(const gui_script_line *l, const gui_state *s, char *buf, size_t n)
{
    long got = 0, want = l->v[0];
    const char *w = l->what;
    if (!strcmp(w, "step")) got = (long)s->step;
    else if (!strcmp(w, "playing")) got = s->playing;
    else if (!strcmp(w, "theme")) got = s->theme;
    else if (!strcmp(w, "scale")) got = s->scale_pct;
    else if (!strcmp(w, "predict")) got = s->predict.phase;
    else if (!strcmp(w, "lesson")) got = s->lesson;
    else if (!strcmp(w, "follow")) got = s->follow;
    else if (!strcmp(w, "help")) got = s->help;
    else if (!strcmp(w, "intro")) got = s->intro;
    else if (!strcmp(w, "speed")) got = s->speed;
    else if (!strcmp(w, "menu")) got = s->menu;
    else if (!strcmp(w, "right")) got = s->predict.n_right;
    else if (!strcmp(w, "events")) got = (long)s->n;
    else if (!strcmp(w, "course")) got = s->course_pos + 1;   /* the header's "lesson N of …"; 0: not in the course */
    else if (!strcmp(w, "hover")) {
        bool ok = s->hover == GUI_HOVER_CELL && s->hover_i == l->v[0] && s->hover_j == l->v[1];
        if (!ok) snprintf(buf, n, "expected hover over cell (%d, %d), got kind %d at (%d, %d)", l->v[0], l->v[1],
                          (int)s->hover, s->hover_i, s->hover_j);
        return ok;
    }
    if (got != want) snprintf(buf, n, "expected %s %ld, got %ld", w, want, got);
    return got == want;
}

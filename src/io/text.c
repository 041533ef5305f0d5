/* text.c: escaping the bytes of file-borne text that could drive a terminal, and measuring and
 * wrapping text by columns (see text.h). */
#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many bytes starting at s[i] form one character to keep as it is: 1 for printable ASCII,
 * and for tab and newline when keep_ws; 2 to 4 for well-formed UTF-8 that is not a C1 control;
 * 0 when s[i] must be escaped. */
static size_t keep_len(const unsigned char *s, size_t n, size_t i, bool keep_ws)
{
    unsigned char c = s[i];
    if ((keep_ws && (c == '\t' || c == '\n')) || (c >= 0x20 && c < 0x7f)) return 1;
    if (c < 0xc2 || c > 0xf4) return 0;         /* C0, DEL, continuation bytes, overlong leads */
    size_t len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    if (i + len > n) return 0;
    unsigned char lo = 0x80, hi = 0xbf;         /* the range of the second byte */
    if (c == 0xc2) lo = 0xa0;                   /* C2 80 … C2 9F are the C1 controls */
    else if (c == 0xe0) lo = 0xa0;              /* overlong */
    else if (c == 0xed) hi = 0x9f;              /* surrogates */
    else if (c == 0xf0) lo = 0x90;              /* overlong */
    else if (c == 0xf4) hi = 0x8f;              /* beyond U+10FFFF */
    if (s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if (s[i + k] < 0x80 || s[i + k] > 0xbf) return 0;
    return len;
}

static size_t escape(const char *s, size_t n, char *out, size_t cap, bool keep_ws)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = keep_len(u, n, i, keep_ws);
        if (k) {
            if (out && o + k < cap) memcpy(out + o, s + i, k);
            else if (out) break;
            o += k;
            i += k;
        } else {
            /* A C1 control in UTF-8 is two bytes: escape both, so no half of it is shown. */
            size_t m = u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f ? 2 : 1;
            if (out && o + 4 * m >= cap) break;
            for (size_t b = 0; b < m; b++) {
                if (out) {
                    out[o] = '\\';
                    out[o + 1] = 'x';
                    out[o + 2] = hex[u[i + b] >> 4];
                    out[o + 3] = hex[u[i + b] & 15];
                }
                o += 4;
            }
            i += m;
        }
    }
    if (out && cap > 0) out[o < cap ? o : cap - 1] = 0;
    return o;
}

size_t fs_text_escape(const char *s, size_t n, char *out, size_t cap) { return escape(s, n, out, cap, true); }

size_t fs_text_escape_line(const char *s, size_t n, char *out, size_t cap) { return escape(s, n, out, cap, false); }

size_t fs_text_escaped_len(const char *s, size_t n) { return fs_text_escape(s, n, NULL, 0); }

char *fs_text_escape_dup(const char *s, size_t n)
{
    size_t len = fs_text_escaped_len(s, n);
    char *d = malloc(len + 1);
    if (d) fs_text_escape(s, n, d, len + 1);
    return d;
}

bool fs_text_needs_escape(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = keep_len(u, n, i, true);
        if (!k) return true;
        i += k;
    }
    return false;
}

int fs_text_cols(const char *s, size_t n)
{
    int k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

size_t fs_text_cut(const char *s, int cols)
{
    size_t b = 0;
    for (int c = 0; s[b] && c < cols; b++) c += ((unsigned char)s[b + 1] & 0xC0) != 0x80;
    return b;
}

void fs_text_wrap(FILE *f, const char *s, int col, int indent, int width)
{
    bool bare = true;   /* no word on this line yet */
    int owed = 0;       /* after a newline of s's: the indent, printed with the line's first word */
    for (s += strspn(s, " "); *s; s += strspn(s, " ")) {
        if (*s == '\n') {
            fputc('\n', f);
            col = 0;
            owed = indent;
            bare = true;
            s++;
            continue;
        }
        const size_t n = strcspn(s, " \n");
        const int len = fs_text_cols(s, n);
        if (bare) {
            fprintf(f, "%*s", owed, "");
            col += owed;
            owed = 0;
        } else if (col + 1 + len > width) {   /* too wide for this line: on the next */
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else {
            fputc(' ', f);
            col++;
        }
        fwrite(s, 1, n, f);
        col += len;
        bare = false;
        s += n;
    }
    if (col > 0) fputc('\n', f);
}

bool fs_text_fit(char *buf, size_t cap, int n)
{
    if (n >= 0 && (size_t)n < cap) return true;
    if (cap < 4) return false;
    size_t k = cap - 4;   /* room for "…" (3 bytes) and the terminator */
    while (k > 0 && ((unsigned char)buf[k] & 0xC0) == 0x80) k--;
    memcpy(buf + k, "\xe2\x80\xa6", 4);
    return false;
}

void fs_text_drop_keys(char *line)
{
    char *w = line;
    for (const char *r = line; *r;) {
        if (*r != '\033') {
            *w++ = *r++;
            continue;
        }
        r++;
        if (*r == '[') {   /* CSI: parameters and intermediates, then one final byte */
            r++;
            while (*r >= 0x20 && *r <= 0x3f) r++;
            if (*r >= 0x40 && *r <= 0x7e) r++;
        } else if (*r == 'O') {   /* SS3: one byte */
            r++;
            if (*r) r++;
        } else if (*r) {   /* ESC and one key */
            r++;
        }
    }
    *w = 0;
}

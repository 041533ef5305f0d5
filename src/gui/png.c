/* png.c: PNG files for saved frames (P key, `flashstep render`) and for the reference images
 * the window tests compare against.
 *
 * Our own small writer and reader over zlib rather than SDL2_image: zlib is already on every
 * machine that has SDL2_ttf (FreeType needs it), the code is ~150 lines, and the tests need a
 * reader as well (to compare a frame with a reference image under tests/gui/ref), which SDL2_image's IMG_Load would
 * give only with one more library to install. Writer: 8-bit RGB, filter "Up" on every row
 * (flat panels become runs of zeros), zlib level 6. Reader: 8-bit RGB or RGBA, non-interlaced,
 * all five filters.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "gui/gui.h"

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int chunk(FILE *f, const char *type, const uint8_t *data, uint32_t n)
{
    uint8_t hdr[8];
    put32(hdr, n);
    memcpy(hdr + 4, type, 4);
    uLong crc = crc32(0, (const Bytef *)type, 4);
    if (n) crc = crc32(crc, data, n);
    uint8_t tail[4];
    put32(tail, (uint32_t)crc);
    return fwrite(hdr, 1, 8, f) == 8 && (n == 0 || fwrite(data, 1, n, f) == n) &&
           fwrite(tail, 1, 4, f) == 4 ? 0 : -1;
}

int gui_png_write(const char *path, const uint8_t *rgb, int w, int h, int stride)
{
    if (w <= 0 || h <= 0) return -1;
    size_t row = (size_t)w * 3 + 1, raw_n = row * (size_t)h;
    uint8_t *raw = malloc(raw_n);
    uLongf z_n = compressBound((uLong)raw_n);
    uint8_t *z = malloc(z_n);
    if (!raw || !z) { free(raw); free(z); return -1; }
    for (int y = 0; y < h; y++) {
        uint8_t *o = raw + row * (size_t)y;
        const uint8_t *cur = rgb + (size_t)stride * (size_t)y, *up = y ? cur - stride : NULL;
        o[0] = 2;   /* Up */
        for (int i = 0; i < w * 3; i++) o[1 + i] = (uint8_t)(cur[i] - (up ? up[i] : 0));
    }
    int rc = compress2(z, &z_n, raw, (uLong)raw_n, 6) == Z_OK ? 0 : -1;
    free(raw);
    FILE *f = rc == 0 ? fopen(path, "wb") : NULL;
    if (!f) { free(z); return -1; }
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[13];
    put32(ihdr, (uint32_t)w);
    put32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;   /* 8-bit RGB */
    if (fwrite(sig, 1, 8, f) != 8 || chunk(f, "IHDR", ihdr, 13) || chunk(f, "IDAT", z, (uint32_t)z_n) ||
        chunk(f, "IEND", NULL, 0))
        rc = -1;
    free(z);
    if (fclose(f)) rc = -1;
    return rc;
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

int gui_png_read(const char *path, uint8_t **out, int *w_out, int *h_out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = n > 8 ? malloc((size_t)n) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); fclose(f); return -1; }
    fclose(f);
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    int rc = -1;
    uint8_t *idat = NULL, *raw = NULL, *rgb = NULL;
    size_t idat_n = 0;
    uint32_t w = 0, h = 0;
    int ch = 0;
    if (memcmp(buf, sig, 8)) goto done;
    for (long p = 8; p + 12 <= n;) {
        uint32_t len = get32(buf + p);
        if (len > (uint32_t)(n - p - 12)) goto done;
        const uint8_t *type = buf + p + 4, *data = buf + p + 8;
        if (!memcmp(type, "IHDR", 4) && len == 13) {
            w = get32(data); h = get32(data + 4);
            if (data[8] != 8 || (data[9] != 2 && data[9] != 6) || data[12] != 0) goto done;
            ch = data[9] == 2 ? 3 : 4;
        } else if (!memcmp(type, "IDAT", 4)) {
            uint8_t *ni = realloc(idat, idat_n + len + 1);
            if (!ni) goto done;
            idat = ni;
            memcpy(idat + idat_n, data, len);
            idat_n += len;
        }
        p += 12 + (long)len;
    }
    if (!ch || w == 0 || h == 0 || w > 16384 || h > 16384) goto done;
    size_t row = (size_t)w * (size_t)ch + 1;
    uLongf raw_n = (uLongf)(row * h);
    raw = malloc(raw_n);
    rgb = malloc((size_t)w * h * 3);
    if (!raw || !rgb || uncompress(raw, &raw_n, idat, (uLong)idat_n) != Z_OK || raw_n != row * h) goto done;
    for (uint32_t y = 0; y < h; y++) {
        uint8_t *cur = raw + row * y + 1, *up = y ? cur - row : NULL;
        int ft = cur[-1];
        for (size_t i = 0; i < row - 1; i++) {
            int a = i >= (size_t)ch ? cur[i - (size_t)ch] : 0, b = up ? up[i] : 0;
            int c = (up && i >= (size_t)ch) ? up[i - (size_t)ch] : 0;
            int v = cur[i];
            switch (ft) {
            case 0: break;
            case 1: v += a; break;
            case 2: v += b; break;
            case 3: v += (a + b) / 2; break;
            case 4: v += paeth(a, b, c); break;
            default: goto done;
            }
            cur[i] = (uint8_t)v;
        }
        for (uint32_t x = 0; x < w; x++)
            memcpy(rgb + ((size_t)y * w + x) * 3, cur + (size_t)x * (size_t)ch, 3);
    }
    *out = rgb;
    rgb = NULL;
    *w_out = (int)w;
    *h_out = (int)h;
    rc = 0;
done:
    free(buf); free(idat); free(raw); free(rgb);
    return rc;
}

int64_t gui_image_diff(const uint8_t *a, const uint8_t *b, int w, int h, int tol)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < (int64_t)w * h; i++) {
        int d = 0;
        for (int c = 0; c < 3; c++) {
            int x = abs((int)a[3 * i + c] - (int)b[3 * i + c]);
            if (x > d) d = x;
        }
        bad += d > tol;
    }
    return bad;
}

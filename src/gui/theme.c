/* theme.c: the three colour themes (dark, light, high contrast) and colour arithmetic.
 *
 * Tile classes are told apart by colour AND by pattern (draw.c hatches partial tiles and
 * cross-hatches skipped ones), so no information rests on hue alone. The palette of the dark and
 * light themes keeps blue/orange for full/partial, which stay distinct under the common forms of
 * colour blindness. tests/check_gui.c checks text contrast (WCAG ratio ≥ 7 for body text).
 */
#include <math.h>

#include "gui/gui.h"

static const gui_theme themes[GUI_THEME_COUNT] = {
    [GUI_THEME_DARK] = {
        .name = "dark",
        .bg = 0x14171c, .panel = 0x1d2129, .border = 0x3a404c, .text = 0xe8eaed, .dim = 0xa4abb8,
        .accent = 0x6cb4ff, .good = 0x6fdc8c, .bad = 0xff7070, .warn = 0xffc850,
        .full = 0x2f6fb0, .partial = 0xd08a2a, .skipped = 0x3c3f46, .masked = 0x23252b,
        .current = 0xffe14d, .future = 0x262a32,
        .rescale = 0xff7070, .skip_mark = 0x8a8f99, .merge_mark = 0xc792ea, .out_mark = 0x6fdc8c,
        .heat_lo = 0x1e2a3a, .heat_hi = 0x4aa3ff,
    },
    [GUI_THEME_LIGHT] = {
        .name = "light",
        .bg = 0xf7f7f4, .panel = 0xffffff, .border = 0xc4c7cc, .text = 0x16181d, .dim = 0x4d535e,
        .accent = 0x0b5cad, .good = 0x1b7a3a, .bad = 0xc0282d, .warn = 0x9a6200,
        .full = 0x6fa3d8, .partial = 0xf2b766, .skipped = 0xd9dadd, .masked = 0xb9bbc0,
        .current = 0xc0282d, .future = 0xeeeeee,
        .rescale = 0xc0282d, .skip_mark = 0x767b85, .merge_mark = 0x7b3fb0, .out_mark = 0x1b7a3a,
        .heat_lo = 0xeef4fb, .heat_hi = 0x2f7fd0,
    },
    [GUI_THEME_CONTRAST] = {
        .name = "high contrast",
        .bg = 0x000000, .panel = 0x000000, .border = 0xffffff, .text = 0xffffff, .dim = 0xf0f0f0,
        .accent = 0x00ffff, .good = 0x00ff00, .bad = 0xff4040, .warn = 0xffff00,
        .full = 0x0050ff, .partial = 0xff9900, .skipped = 0x505050, .masked = 0x202020,
        .current = 0xffff00, .future = 0x101010,
        .rescale = 0xff4040, .skip_mark = 0xc0c0c0, .merge_mark = 0xff00ff, .out_mark = 0x00ff00,
        .heat_lo = 0x000040, .heat_hi = 0x00a0ff,
    },
};

const gui_theme *gui_theme_get(gui_theme_id id)
{
    if ((int)id < 0 || id >= GUI_THEME_COUNT) id = GUI_THEME_DARK;
    return &themes[id];
}

static double lin(uint32_t c8)
{
    double c = c8 / 255.0;
    return c <= 0.03928 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

static double luminance(uint32_t rgb)
{
    return 0.2126 * lin((rgb >> 16) & 255) + 0.7152 * lin((rgb >> 8) & 255) + 0.0722 * lin(rgb & 255);
}

double gui_contrast(uint32_t a, uint32_t b)
{
    double la = luminance(a), lb = luminance(b);
    if (la < lb) { double t = la; la = lb; lb = t; }
    return (la + 0.05) / (lb + 0.05);
}

uint32_t gui_mix(uint32_t a, uint32_t b, double t)
{
    if (!(t > 0)) t = 0;
    if (t > 1) t = 1;
    uint32_t out = 0;
    for (int sh = 0; sh <= 16; sh += 8) {
        double ca = (a >> sh) & 255, cb = (b >> sh) & 255;
        out |= (uint32_t)lround(ca + (cb - ca) * t) << sh;
    }
    return out;
}

/* anim.c: frames into an animation file, for slides: an animated GIF (giflib) or an MP4 video
 * (FFmpeg's libavcodec, libavformat, libswscale). The frames are the RGB pixels `render` writes
 * as PNG files, one per step.
 *
 * Either library may be missing from a build (src/gui/module.mk asks pkg-config and the compiler
 * at build time and defines FS_HAVE_GIF / FS_HAVE_VIDEO); then gui_anim_open says so, and the
 * command exits 2. Nothing falls back silently to another format.
 *
 * GIF holds at most 256 colours per frame: each frame gets its own palette, its own 256 most
 * frequent colours (palette_quantize), so a frame's GIF pixels differ from its PNG pixels only
 * where a rarer colour was replaced by the nearest of those (tests/check_gui.c measures it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gui/gui.h"

#ifdef FS_HAVE_GIF
#include <gif_lib.h>
#endif
#ifdef FS_HAVE_VIDEO
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#endif

struct gui_anim {
    gui_anim_kind kind;
    int w, h;
    double fps;             /* frames per second (0.5 to 100) */
    char path[1024];
#ifdef FS_HAVE_GIF
    GifFileType *gif;
    uint8_t *r, *g, *b, *idx;
    uint8_t *prev;          /* the last frame's RGB: a frame stores only the rectangle that changed */
    int n_frames;
#endif
#ifdef FS_HAVE_VIDEO
    AVFormatContext *fmt;
    AVCodecContext *enc;
    AVStream *st;
    struct SwsContext *sws;
    AVFrame *frame;
    AVPacket *pkt;
    int64_t pts;
#endif
};

bool gui_anim_supported(gui_anim_kind k)
{
#ifdef FS_HAVE_GIF
    if (k == GUI_ANIM_GIF) return true;
#endif
#ifdef FS_HAVE_VIDEO
    if (k == GUI_ANIM_MP4) return true;
#endif
    (void)k;
    return false;
}

gui_anim_kind gui_anim_kind_of(const char *path)
{
    size_t n = strlen(path);
    if (n >= 4 && !strcasecmp(path + n - 4, ".gif")) return GUI_ANIM_GIF;   /* x.GIF too */
    if (n >= 4 && !strcasecmp(path + n - 4, ".mp4")) return GUI_ANIM_MP4;
    return GUI_ANIM_NONE;
}

#ifdef FS_HAVE_GIF
static int gif_open(gui_anim *a, FILE *err)
{
    int e = 0;
    int fd = open(a->path, O_WRONLY | O_CREAT | O_TRUNC, 0666);   /* (giflib's own open makes it 0600) */
    if (fd < 0) {
        fprintf(err, "flashstep: cannot write %s: %s\n", a->path, strerror(errno));
        return 2;
    }
    a->gif = EGifOpenFileHandle(fd, &e);
    if (!a->gif) {
        close(fd);
        fprintf(err, "flashstep: cannot write %s: %s\n", a->path, GifErrorString(e));
        return 2;
    }
    EGifSetGifVersion(a->gif, true);   /* GIF89a: frame delays and looping */
    size_t n = (size_t)a->w * a->h;
    a->r = malloc(n); a->g = malloc(n); a->b = malloc(n); a->idx = malloc(n); a->prev = malloc(3 * n);
    if (!a->r || !a->g || !a->b || !a->idx || !a->prev) { fprintf(err, "flashstep: out of memory\n"); return 2; }
    if (EGifPutScreenDesc(a->gif, a->w, a->h, 8, 0, NULL) == GIF_ERROR) {
        fprintf(err, "flashstep: cannot write %s: %s\n", a->path, GifErrorString(a->gif->Error));
        return 2;
    }
    /* NETSCAPE2.0: loop forever. */
    unsigned char loop[3] = {1, 0, 0};
    if (EGifPutExtensionLeader(a->gif, APPLICATION_EXT_FUNC_CODE) == GIF_ERROR ||
        EGifPutExtensionBlock(a->gif, 11, "NETSCAPE2.0") == GIF_ERROR || EGifPutExtensionBlock(a->gif, 3, loop) == GIF_ERROR ||
        EGifPutExtensionTrailer(a->gif) == GIF_ERROR) {
        fprintf(err, "flashstep: cannot write %s: %s\n", a->path, GifErrorString(a->gif->Error));
        return 2;
    }
    return 0;
}

/* The palette of a frame: its 256 most frequent colours, exactly; every other colour (the
 * anti-aliased edges of text and lines) becomes the nearest of them (squared RGB distance). A
 * window frame is a few flat colours and their blends, so most pixels come back exact.
 * (giflib's own GifQuantizeBuffer cuts every channel to 5 bits first, so no pixel stays exact.) */
typedef struct { uint32_t rgb; uint32_t count; int idx; } colour_slot;

static int palette_quantize(const uint8_t *r, const uint8_t *g, const uint8_t *b, size_t n, uint8_t *idx,
                            GifColorType colors[256], int *n_colors)
{
    size_t cap = 1 << 16;
    colour_slot *t = NULL;
    size_t used = 0;
    for (;;) {   /* count the colours in an open-addressing table, grown when it fills */
        free(t);
        t = calloc(cap, sizeof *t);
        if (!t) return -1;
        used = 0;
        bool full = false;
        for (size_t i = 0; i < n && !full; i++) {
            uint32_t c = (uint32_t)r[i] << 16 | (uint32_t)g[i] << 8 | b[i];
            size_t h = (c * 2654435761u) & (cap - 1);
            while (t[h].count && t[h].rgb != c) h = (h + 1) & (cap - 1);
            if (!t[h].count) {
                if (++used * 2 > cap) full = true;
                t[h].rgb = c;
            }
            t[h].count++;
        }
        if (!full) break;
        cap *= 2;
    }
    /* The 256 most frequent, by repeated selection over the (few thousand) distinct colours. */
    int k = 0;
    size_t best[256];
    for (; k < 256 && (size_t)k < used; k++) {
        size_t m = SIZE_MAX;
        for (size_t h = 0; h < cap; h++)
            if (t[h].count && t[h].idx == 0 && (m == SIZE_MAX || t[h].count > t[m].count)) m = h;
        if (m == SIZE_MAX) break;
        t[m].idx = k + 1;   /* 1-based while choosing; 0: not chosen */
        best[k] = m;
        colors[k].Red = (GifByteType)(t[m].rgb >> 16);
        colors[k].Green = (GifByteType)(t[m].rgb >> 8);
        colors[k].Blue = (GifByteType)t[m].rgb;
    }
    (void)best;
    *n_colors = k > 0 ? k : 1;
    /* The rest: the nearest chosen colour, found once per distinct colour. */
    for (size_t h = 0; h < cap; h++) {
        if (!t[h].count || t[h].idx) continue;
        int cr = (int)(t[h].rgb >> 16), cg = (int)(t[h].rgb >> 8 & 255), cb = (int)(t[h].rgb & 255);
        int bi = 0;
        long bd = -1;
        for (int j = 0; j < k; j++) {
            long dr = cr - colors[j].Red, dg = cg - colors[j].Green, db = cb - colors[j].Blue;
            long dd = dr * dr + dg * dg + db * db;
            if (bd < 0 || dd < bd) { bd = dd; bi = j; }
        }
        t[h].idx = bi + 1;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t c = (uint32_t)r[i] << 16 | (uint32_t)g[i] << 8 | b[i];
        size_t h = (c * 2654435761u) & (cap - 1);
        while (t[h].rgb != c || !t[h].count) h = (h + 1) & (cap - 1);
        idx[i] = (uint8_t)(t[h].idx - 1);
    }
    free(t);
    return 0;
}

/* One frame. The first is stored whole; each later one only as the rectangle of pixels that
 * differ from the frame before (drawn over it: DISPOSE_DO_NOT), which keeps a slide deck's GIF
 * small, since a step changes a few cells and lines. Each stored rectangle has its own palette. */
static int gif_frame(gui_anim *a, const uint8_t *rgb, int stride, FILE *err)
{
    int x0 = 0, y0 = 0, x1 = a->w - 1, y1 = a->h - 1;
    if (a->n_frames > 0) {
        x0 = a->w; y0 = a->h; x1 = -1; y1 = -1;
        for (int y = 0; y < a->h; y++)
            for (int x = 0; x < a->w; x++)
                if (memcmp(rgb + (size_t)y * stride + 3 * (size_t)x, a->prev + ((size_t)y * a->w + x) * 3, 3)) {
                    if (x < x0) x0 = x;
                    if (x > x1) x1 = x;
                    if (y < y0) y0 = y;
                    if (y > y1) y1 = y;
                }
        if (x1 < 0) x0 = x1 = y0 = y1 = 0;   /* the same picture: one pixel, to keep the frame's time */
    }
    int w = x1 - x0 + 1, h = y1 - y0 + 1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = rgb + (size_t)(y0 + y) * stride + 3 * (size_t)(x0 + x);
            size_t i = (size_t)y * w + x;
            a->r[i] = p[0]; a->g[i] = p[1]; a->b[i] = p[2];
        }
    for (int y = 0; y < a->h; y++) memcpy(a->prev + (size_t)y * a->w * 3, rgb + (size_t)y * stride, (size_t)a->w * 3);
    a->n_frames++;
    GifColorType colors[256];
    int n = 256;
    if (palette_quantize(a->r, a->g, a->b, (size_t)w * h, a->idx, colors, &n)) {
        fprintf(err, "flashstep: out of memory\n");
        return 2;
    }
    int bits = 1;
    while ((1 << bits) < n) bits++;
    ColorMapObject *map = GifMakeMapObject(1 << bits, NULL);
    if (!map) { fprintf(err, "flashstep: out of memory\n"); return 2; }
    memset(map->Colors, 0, sizeof(GifColorType) * (size_t)(1 << bits));
    memcpy(map->Colors, colors, sizeof(GifColorType) * (size_t)n);
    GraphicsControlBlock gcb = {.DisposalMode = DISPOSE_DO_NOT, .UserInputFlag = false,
                                .DelayTime = (int)(100.0 / a->fps + 0.5), .TransparentColor = NO_TRANSPARENT_COLOR};
    if (gcb.DelayTime < 2) gcb.DelayTime = 2;   /* viewers treat 0 and 1 hundredths as "slow" */
    GifByteType ext[4];
    size_t len = EGifGCBToExtension(&gcb, ext);
    int rc = EGifPutExtension(a->gif, GRAPHICS_EXT_FUNC_CODE, (int)len, ext) == GIF_ERROR ||
             EGifPutImageDesc(a->gif, x0, y0, w, h, false, map) == GIF_ERROR;
    for (int y = 0; !rc && y < h; y++)
        rc = EGifPutLine(a->gif, a->idx + (size_t)y * w, w) == GIF_ERROR;
    GifFreeMapObject(map);
    if (rc) {
        fprintf(err, "flashstep: cannot write %s: %s\n", a->path, GifErrorString(a->gif->Error));
        return 2;
    }
    return 0;
}

static int gif_close(gui_anim *a, FILE *err)
{
    int rc = 0;
    if (a->gif) {
        int e = 0;
        if (EGifCloseFile(a->gif, &e) == GIF_ERROR) {
            fprintf(err, "flashstep: cannot finish %s: %s\n", a->path, GifErrorString(e));
            rc = 2;
        }
    }
    free(a->r); free(a->g); free(a->b); free(a->idx); free(a->prev);
    return rc;
}
#endif

#ifdef FS_HAVE_VIDEO
static int av_fail(gui_anim *a, const char *what, int e, FILE *err)
{
    char buf[128] = "";
    if (e < 0) av_strerror(e, buf, sizeof buf);
    fprintf(err, "flashstep: cannot write %s: %s%s%s\n", a->path, what, buf[0] ? ": " : "", buf);
    return 2;
}

static int mp4_open(gui_anim *a, FILE *err)
{
    av_log_set_level(AV_LOG_ERROR);   /* the encoders' statistics are not for our users */
    int e = avformat_alloc_output_context2(&a->fmt, NULL, "mp4", a->path);
    if (e < 0 || !a->fmt) return av_fail(a, "no MP4 muxer", e, err);
    /* H.264 where this FFmpeg has an encoder for it, else MPEG-4 part 2 (built into libavcodec). */
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_H264);
    if (!codec) codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
    if (!codec) return av_fail(a, "no H.264 or MPEG-4 encoder in this FFmpeg", 0, err);
    a->st = avformat_new_stream(a->fmt, NULL);
    a->enc = avcodec_alloc_context3(codec);
    if (!a->st || !a->enc) return av_fail(a, "out of memory", 0, err);
    a->enc->width = a->w & ~1;   /* 4:2:0 wants even sizes */
    a->enc->height = a->h & ~1;
    a->enc->pix_fmt = AV_PIX_FMT_YUV420P;
    a->enc->time_base = (AVRational){1, 1000};   /* milliseconds: any frame rate, 0.5 fps too */
    a->enc->framerate = (AVRational){(int)(a->fps * 1000 + 0.5), 1000};
    a->enc->gop_size = a->fps >= 1 ? 2 * (int)(a->fps + 0.5) : 1;
    if (codec->id == AV_CODEC_ID_H264) av_opt_set(a->enc->priv_data, "crf", "18", 0);   /* sharp text */
    else a->enc->bit_rate = 8000000;
    if (a->fmt->oformat->flags & AVFMT_GLOBALHEADER) a->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if ((e = avcodec_open2(a->enc, codec, NULL)) < 0) return av_fail(a, "cannot open the encoder", e, err);
    if ((e = avcodec_parameters_from_context(a->st->codecpar, a->enc)) < 0) return av_fail(a, "encoder parameters", e, err);
    a->st->time_base = a->enc->time_base;
    if ((e = avio_open(&a->fmt->pb, a->path, AVIO_FLAG_WRITE)) < 0) return av_fail(a, "cannot open the file", e, err);
    if ((e = avformat_write_header(a->fmt, NULL)) < 0) return av_fail(a, "header", e, err);
    a->frame = av_frame_alloc();
    a->pkt = av_packet_alloc();
    if (!a->frame || !a->pkt) return av_fail(a, "out of memory", 0, err);
    a->frame->format = AV_PIX_FMT_YUV420P;
    a->frame->width = a->enc->width;
    a->frame->height = a->enc->height;
    if ((e = av_frame_get_buffer(a->frame, 0)) < 0) return av_fail(a, "frame buffer", e, err);
    a->sws = sws_getContext(a->enc->width, a->enc->height, AV_PIX_FMT_RGB24, a->enc->width, a->enc->height, AV_PIX_FMT_YUV420P,
                            SWS_BICUBIC, NULL, NULL, NULL);
    if (!a->sws) return av_fail(a, "no RGB to YUV conversion", 0, err);
    return 0;
}

/* Send one frame (NULL: flush) and write the packets that come out. */
static int mp4_send(gui_anim *a, AVFrame *f, FILE *err)
{
    int e = avcodec_send_frame(a->enc, f);
    if (e < 0) return av_fail(a, "encoding", e, err);
    for (;;) {
        e = avcodec_receive_packet(a->enc, a->pkt);
        if (e == AVERROR(EAGAIN) || e == AVERROR_EOF) return 0;
        if (e < 0) return av_fail(a, "encoding", e, err);
        av_packet_rescale_ts(a->pkt, a->enc->time_base, a->st->time_base);
        a->pkt->stream_index = a->st->index;
        e = av_interleaved_write_frame(a->fmt, a->pkt);
        if (e < 0) return av_fail(a, "writing", e, err);
    }
}

static int mp4_frame(gui_anim *a, const uint8_t *rgb, int stride, FILE *err)
{
    int e = av_frame_make_writable(a->frame);
    if (e < 0) return av_fail(a, "frame buffer", e, err);
    const uint8_t *src[1] = {rgb};
    int src_stride[1] = {stride};
    sws_scale(a->sws, src, src_stride, 0, a->enc->height, a->frame->data, a->frame->linesize);
    a->frame->pts = (int64_t)(a->pts++ * 1000.0 / a->fps + 0.5);
    return mp4_send(a, a->frame, err);
}

static int mp4_close(gui_anim *a, bool ok, FILE *err)
{
    int rc = 0;
    if (ok && a->enc) rc = mp4_send(a, NULL, err);
    if (ok && a->fmt && a->fmt->pb && av_write_trailer(a->fmt) < 0) rc = av_fail(a, "trailer", 0, err);
    if (a->fmt && a->fmt->pb) avio_closep(&a->fmt->pb);
    avformat_free_context(a->fmt);
    avcodec_free_context(&a->enc);
    sws_freeContext(a->sws);
    av_frame_free(&a->frame);
    av_packet_free(&a->pkt);
    return rc;
}
#endif

int gui_anim_open(gui_anim **out, const char *path, int w, int h, double fps, FILE *err)
{
    *out = NULL;
    gui_anim_kind k = gui_anim_kind_of(path);
    if (k == GUI_ANIM_NONE) {
        fprintf(err, "flashstep: %s: an animation is a .gif or an .mp4 file\n", path);
        return 2;
    }
    if (!gui_anim_supported(k)) {
        fprintf(err, "flashstep: this build has no %s support (%s when it was built; "
                     "scripts/install-deps.sh installs %s, then rebuild)\n",
                k == GUI_ANIM_GIF ? "GIF" : "video",
                k == GUI_ANIM_GIF ? "giflib was not found" : "FFmpeg's libavcodec, libavformat and libswscale were not found",
                k == GUI_ANIM_GIF ? "it" : "them");
        return 2;
    }
    gui_anim *a = calloc(1, sizeof *a);
    if (!a) { fprintf(err, "flashstep: out of memory\n"); return 2; }
    a->kind = k;
    a->w = w;
    a->h = h;
    a->fps = fps < 0.5 ? 0.5 : fps > 100 ? 100 : fps;
    snprintf(a->path, sizeof a->path, "%s", path);
    int rc = 2;
#ifdef FS_HAVE_GIF
    if (k == GUI_ANIM_GIF) rc = gif_open(a, err);
#endif
#ifdef FS_HAVE_VIDEO
    if (k == GUI_ANIM_MP4) rc = mp4_open(a, err);
#endif
    if (rc) {
        gui_anim_close(a, false, stderr);
        return rc;
    }
    *out = a;
    return 0;
}

int gui_anim_frame(gui_anim *a, const uint8_t *rgb, int stride, FILE *err)
{
#ifdef FS_HAVE_GIF
    if (a->kind == GUI_ANIM_GIF) return gif_frame(a, rgb, stride, err);
#endif
#ifdef FS_HAVE_VIDEO
    if (a->kind == GUI_ANIM_MP4) return mp4_frame(a, rgb, stride, err);
#endif
    (void)rgb; (void)stride; (void)err;
    return 2;
}

int gui_anim_close(gui_anim *a, bool ok, FILE *err)
{
    if (!a) return 0;
    int rc = 0;
#ifdef FS_HAVE_GIF
    if (a->kind == GUI_ANIM_GIF) rc = gif_close(a, err);
#endif
#ifdef FS_HAVE_VIDEO
    if (a->kind == GUI_ANIM_MP4) rc = mp4_close(a, ok, err);
#endif
    (void)ok; (void)err;
    free(a);
    return rc;
}

int gui_gif_read_first(const char *path, uint8_t **rgb, int *w, int *h)
{
#ifdef FS_HAVE_GIF
    int e = 0;
    GifFileType *g = DGifOpenFileName(path, &e);
    if (!g) return -1;
    if (DGifSlurp(g) == GIF_ERROR || g->ImageCount < 1) { DGifCloseFile(g, &e); return -1; }
    const SavedImage *im = &g->SavedImages[0];
    const ColorMapObject *map = im->ImageDesc.ColorMap ? im->ImageDesc.ColorMap : g->SColorMap;
    *w = g->SWidth;
    *h = g->SHeight;
    *rgb = calloc((size_t)*w * *h * 3, 1);
    if (!*rgb || !map) { DGifCloseFile(g, &e); free(*rgb); *rgb = NULL; return -1; }
    for (int y = 0; y < im->ImageDesc.Height; y++)
        for (int x = 0; x < im->ImageDesc.Width; x++) {
            int c = im->RasterBits[(size_t)y * im->ImageDesc.Width + x];
            int X = x + im->ImageDesc.Left, Y = y + im->ImageDesc.Top;
            if (X >= *w || Y >= *h || c >= map->ColorCount) continue;
            uint8_t *p = *rgb + ((size_t)Y * *w + X) * 3;
            p[0] = map->Colors[c].Red; p[1] = map->Colors[c].Green; p[2] = map->Colors[c].Blue;
        }
    DGifCloseFile(g, &e);
    return 0;
#else
    (void)path; (void)rgb; (void)w; (void)h;
    return -1;
#endif
}

/* The HTML report's plots as inline SVG: histograms, the pooled error map (a
 * PNG inside the SVG, one pixel per cell, so that a map of 4096 cells stays a
 * few kilobytes), trend lines and bars. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "reports/svg.h"

void kv_ratio_colour(double r, char out[8])
{
    unsigned char c[3];
    if (isnan(r) || r < 0) c[0] = c[1] = c[2] = 0xe4; /* nothing compared */
    else if (r > 1) c[0] = 0xd7, c[1] = 0x19, c[2] = 0x1c; /* fails */
    else {
        /* pale green at 1e-4 and below, through yellow, to orange at 1 */
        double t = r <= 1e-4 ? 0 : (log10(r) + 4) / 4;
        static const double stops[3][3] = {{0xe5, 0xf5, 0xe0}, {0xfe, 0xe0, 0x8b}, {0xf4, 0x6d, 0x43}};
        int k = t < 0.5 ? 0 : 1;
        double u = t < 0.5 ? t / 0.5 : (t - 0.5) / 0.5;
        for (int i = 0; i < 3; i++) c[i] = (unsigned char)(stops[k][i] + u * (stops[k + 1][i] - stops[k][i]) + 0.5);
    }
    snprintf(out, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

void kv_svg_hist(struct kv_sbuf *b, const char *cls, const char *title, const cJSON *hist, int base2, double pass_line)
{
    const cJSON *edges = cJSON_GetObjectItemCaseSensitive(hist, "edges");
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(hist, "counts");
    int n = cJSON_GetArraySize(counts);
    if (n <= 0 || cJSON_GetArraySize(edges) != n) return;
    double zero = kv_jnum(hist, "zero"), max = zero > 0 ? zero : 0;
    for (int i = 0; i < n; i++) max = fmax(max, cJSON_GetArrayItem(counts, i)->valuedouble);
    const double W = 360, H = 120, x0 = 34, y0 = 14, bw = (W - x0 - 6) / (n + 1);
    kv_sb_printf(b, "<svg class=\"hist %s\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">"
                    "<title>", cls, W, H + 44, W, H + 44);
    kv_sb_esc(b, title);
    kv_sb_printf(b, "</title><text x=\"%.0f\" y=\"10\" class=\"t\">", x0);
    kv_sb_esc(b, title);
    kv_sb_printf(b, " (count, log scale)</text><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" class=\"ax\"/>", x0,
                 y0 + H, W - 4, y0 + H);
    for (int i = -1; i < n; i++) {
        double c = i < 0 ? zero : cJSON_GetArrayItem(counts, i)->valuedouble;
        if (!(c > 0)) continue;
        double h = max > 0 ? (H - 4) * log10(1 + c) / log10(1 + max) : 0, x = x0 + (i + 1) * bw;
        double lo = i < 0 ? 0 : cJSON_GetArrayItem(edges, i)->valuedouble;
        double hi = i + 1 < n ? cJSON_GetArrayItem(edges, i + 1)->valuedouble : INFINITY;
        int over = pass_line > 0 && lo >= pass_line;
        kv_sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"%s\"><title>",
                     x + 0.5, y0 + H - h, bw - 1, h, i < 0 ? "bz" : over ? "bf" : "b");
        if (i < 0) kv_sb_printf(b, "exactly 0: %.0f", c);
        else kv_sb_printf(b, "[%g, %g): %.0f", lo, hi, c);
        kv_sb_printf(b, "</title></rect>");
    }
    /* x labels: 0, then every few edges */
    kv_sb_printf(b, "<text x=\"%.1f\" y=\"%.0f\" class=\"l\">0</text>", x0 + bw / 2, y0 + H + 12);
    for (int i = 1; i < n; i += base2 ? 5 : 4) {
        double e = cJSON_GetArrayItem(edges, i)->valuedouble;
        kv_sb_printf(b, "<text x=\"%.1f\" y=\"%.0f\" class=\"l\">", x0 + (i + 1) * bw, y0 + H + 12);
        if (base2) kv_sb_printf(b, "2^%d", (int)lround(log2(e)));
        else kv_sb_printf(b, "%g", e);
        kv_sb_printf(b, "</text>");
    }
    kv_sb_printf(b, "<text x=\"%.0f\" y=\"%.0f\" class=\"l\">%s</text>", W / 2, y0 + H + 26,
                 base2 ? "error in ULP of the output dtype" : "error / allowed error (bound ratio)");
    for (int i = 1; pass_line > 0 && i < n; i++)
        if (cJSON_GetArrayItem(edges, i)->valuedouble == pass_line) {
            double x = x0 + (i + 1) * bw;
            kv_sb_printf(b, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" class=\"pass\"/>"
                            "<text x=\"%.1f\" y=\"%.0f\" class=\"pl\">pass line</text>", x, y0, x, y0 + H, x + 2, y0 + 8);
        }
    kv_sb_printf(b, "</svg>");
}

/* --- PNG: 8-bit RGB, filter 0, one zlib stream --- */

static void be32(unsigned char *p, uint32_t v) { p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = (unsigned char)v; }

static size_t chunk(unsigned char *out, const char *type, const unsigned char *data, uint32_t len)
{
    be32(out, len);
    memcpy(out + 4, type, 4);
    if (len) memcpy(out + 8, data, len);
    be32(out + 8 + len, (uint32_t)crc32(0, out + 4, len + 4));
    return 12 + len;
}

static void base64(struct kv_sbuf *b, const unsigned char *p, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        kv_sb_printf(b, "%c%c%c%c", a[v >> 18 & 63], a[v >> 12 & 63], i + 1 < n ? a[v >> 6 & 63] : '=',
                     i + 2 < n ? a[v & 63] : '=');
    }
}

/* The PNG of a w x h RGB image as a data: URI into b. */
static void png_uri(struct kv_sbuf *b, const unsigned char *rgb, int w, int h)
{
    size_t raw_n = (size_t)h * (3 * (size_t)w + 1);
    unsigned char *raw = malloc(raw_n);
    uLongf z_n = compressBound((uLong)raw_n);
    unsigned char *png = malloc(z_n + 64);
    if (!raw || !png) {
        b->oom = 1;
        free(raw), free(png);
        return;
    }
    for (int y = 0; y < h; y++) {
        raw[(size_t)y * (3 * (size_t)w + 1)] = 0;
        memcpy(raw + (size_t)y * (3 * (size_t)w + 1) + 1, rgb + (size_t)y * 3 * (size_t)w, 3 * (size_t)w);
    }
    unsigned char ihdr[13] = {0};
    be32(ihdr, (uint32_t)w), be32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8, ihdr[9] = 2;
    memcpy(png, "\x89PNG\r\n\x1a\n", 8);
    size_t o = 8 + chunk(png + 8, "IHDR", ihdr, 13);
    unsigned char *z = malloc(z_n);
    if (!z || compress2(z, &z_n, raw, (uLong)raw_n, 9) != Z_OK) {
        b->oom = 1;
    } else {
        unsigned char *png2 = realloc(png, o + z_n + 24);
        if (png2) {
            png = png2;
            o += chunk(png + o, "IDAT", z, (uint32_t)z_n);
            o += chunk(png + o, "IEND", NULL, 0);
            kv_sb_printf(b, "data:image/png;base64,");
            base64(b, png, o);
        } else {
            b->oom = 1;
        }
    }
    free(z), free(raw), free(png);
}

void kv_svg_map(struct kv_sbuf *b, const cJSON *map)
{
    const double crd = kv_jnum(map, "cell_rows"), ccd = kv_jnum(map, "cell_cols"); /* NaN where absent */
    if (!(crd >= 1 && crd <= 4096 && ccd >= 1 && ccd <= 4096)) return;
    const int cr = (int)crd, cc = (int)ccd;
    double rows = kv_jnum(map, "rows"), cols = kv_jnum(map, "cols");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(map, "max_ratio");
    if (cJSON_GetArraySize(v) != cr) return;
    unsigned char *rgb = calloc((size_t)cr * (size_t)cc, 3);
    if (!rgb) {
        b->oom = 1;
        return;
    }
    for (int r = 0; r < cr; r++) {
        const cJSON *row = cJSON_GetArrayItem(v, r);
        for (int c = 0; c < cc; c++) {
            const cJSON *x = cJSON_GetArrayItem(row, c);
            char col[8];
            kv_ratio_colour(cJSON_IsNumber(x) ? x->valuedouble : cJSON_IsString(x) ? INFINITY : -1, col);
            unsigned px = (unsigned)strtoul(col + 1, NULL, 16);
            unsigned char *p = rgb + 3 * ((size_t)r * (size_t)cc + (size_t)c);
            p[0] = (unsigned char)(px >> 16), p[1] = (unsigned char)(px >> 8), p[2] = (unsigned char)px;
        }
    }
    double W = 540, Hpx = cr == 1 ? 24 : fmin(fmax(W * cr / cc, 60), 400);
    kv_sb_printf(b, "<svg class=\"heatmap\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %d %d\" "
                    "preserveAspectRatio=\"none\" role=\"img\"><title>bound ratio, max-pooled: %.0f x %.0f elements "
                    "in %d x %d cells</title><image width=\"%d\" height=\"%d\" preserveAspectRatio=\"none\" "
                    "style=\"image-rendering:pixelated\" href=\"",
                 W, Hpx, cc, cr, rows, cols, cr, cc, cc, cr);
    png_uri(b, rgb, cc, cr);
    kv_sb_printf(b, "\"/>");
    const cJSON *bad, *mm = cJSON_GetObjectItemCaseSensitive(map, "mismatch_cells");
    cJSON_ArrayForEach(bad, mm)
    {
        double r = cJSON_GetArrayItem(bad, 0) ? cJSON_GetArrayItem(bad, 0)->valuedouble : 0;
        double c = cJSON_GetArrayItem(bad, 1) ? cJSON_GetArrayItem(bad, 1)->valuedouble : 0;
        kv_sb_printf(b, "<rect class=\"mm\" x=\"%g\" y=\"%g\" width=\"1\" height=\"1\"><title>NaN/Inf mismatch in cell "
                        "[%g, %g]</title></rect>", c, r, r, c);
    }
    kv_sb_printf(b, "</svg><p class=\"cap\">rows 0..%.0f top to bottom, columns 0..%.0f left to right (the last "
                    "dimension; leading dimensions folded into rows); each of the %d x %d cells shows the largest "
                    "bound ratio of its elements</p>", rows - 1, cols - 1, cr, cc);
    free(rgb);
}

void kv_svg_trend(struct kv_sbuf *b, const char *title, const double *v, const unsigned char *marks, size_t runs,
                  double pass_line)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t r = 0; r < runs; r++)
        if (isfinite(v[r]) && v[r] > 0) lo = fmin(lo, log10(v[r])), hi = fmax(hi, log10(v[r]));
    if (!isfinite(lo)) lo = -1, hi = 0;
    if (pass_line > 0) lo = fmin(lo, log10(pass_line)), hi = fmax(hi, log10(pass_line));
    lo = floor(lo), hi = fmax(ceil(hi), lo + 1);
    const double W = 300, H = 90, x0 = 40, y0 = 12;
    kv_sb_printf(b, "<svg class=\"trend\" width=\"%.0f\" height=\"%.0f\" role=\"img\"><title>", W, H + 30);
    kv_sb_esc(b, title);
    kv_sb_printf(b, "</title><text x=\"%.0f\" y=\"9\" class=\"t\">", x0);
    kv_sb_esc(b, title);
    kv_sb_printf(b, "</text><text x=\"2\" y=\"%.0f\" class=\"l\">1e%.0f</text><text x=\"2\" y=\"%.0f\" class=\"l\">1e%.0f"
                    "</text><path class=\"line\" d=\"", y0 + 4, hi, y0 + H, lo);
    int pen = 0;
    for (size_t r = 0; r < runs; r++) {
        double x = x0 + (runs > 1 ? (W - x0 - 10) * (double)r / (double)(runs - 1) : 0);
        double y = isfinite(v[r]) && v[r] > 0 ? y0 + H - H * (log10(v[r]) - lo) / (hi - lo) : y0 + H;
        kv_sb_printf(b, "%c%.1f %.1f ", pen ? 'L' : 'M', x, y);
        pen = 1;
    }
    kv_sb_printf(b, "\"/>");
    if (pass_line > 0 && log10(pass_line) >= lo && log10(pass_line) <= hi) {
        double y = y0 + H - H * (log10(pass_line) - lo) / (hi - lo);
        kv_sb_printf(b, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" class=\"pass\"/>", x0, y, W - 10, y);
    }
    for (size_t r = 0; r < runs; r++) {
        double x = x0 + (runs > 1 ? (W - x0 - 10) * (double)r / (double)(runs - 1) : 0);
        double y = isfinite(v[r]) && v[r] > 0 ? y0 + H - H * (log10(v[r]) - lo) / (hi - lo) : y0 + H;
        kv_sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" class=\"%s\"><title>run %zu: %g%s</title></circle>",
                     x, y, marks[r] ? 5 : 2, marks[r] ? "reg" : "pt", r + 1, v[r], marks[r] ? " (regression)" : "");
    }
    kv_sb_printf(b, "<text x=\"%.0f\" y=\"%.0f\" class=\"l\">run 1 .. %zu</text></svg>", x0, y0 + H + 16, runs);
}

void kv_svg_bar(struct kv_sbuf *b, const char *label, double pct, const char *text)
{
    double w = fmax(0, fmin(pct, 100)) * 3;
    kv_sb_printf(b, "<div class=\"bar\"><span class=\"bl\">");
    kv_sb_esc(b, label);
    kv_sb_printf(b, "</span><svg width=\"300\" height=\"14\"><rect width=\"300\" height=\"14\" class=\"bg\"/>"
                    "<rect width=\"%.1f\" height=\"14\" class=\"fg\"/></svg> ", w);
    kv_sb_esc(b, text);
    kv_sb_printf(b, "</div>");
}

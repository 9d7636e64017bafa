// Software rasteriser for Plot (see plot_raster.h): alpha-blended rectangles, anti-aliased thick lines by
// distance to the segment, and bitmap text.
#include "core/export/plot_raster.h"

#include "core/file_io.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace speculum::exporting {

namespace {

void blend(Image& img, int x, int y, Rgba c, float coverage) {
    if (x < 0 || y < 0 || x >= img.width || y >= img.height || coverage <= 0) return;
    const float a        = std::min(1.0f, coverage) * float(c.a) / 255.0f;
    uint8_t* px          = &img.rgba[(size_t(y) * size_t(img.width) + size_t(x)) * 4];
    const uint8_t src[3] = {c.r, c.g, c.b};
    for (int k = 0; k < 3; ++k) px[k] = uint8_t(std::lround(float(px[k]) * (1 - a) + float(src[k]) * a));
    px[3] = uint8_t(std::lround(float(px[3]) * (1 - a) + 255.0f * a));
}

void fill_rect(Image& img, const PlotRect& r) {
    // Pixel centres inside the rectangle are covered (no edge anti-aliasing: plots are axis-aligned).
    const int x0 = int(std::lround(r.x)), x1 = int(std::lround(r.x + r.w));
    const int y0 = int(std::lround(r.y)), y1 = int(std::lround(r.y + r.h));
    for (int y = std::max(0, std::min(y0, y1)); y < std::min(img.height, std::max(y0, y1)); ++y)
        for (int x = std::max(0, std::min(x0, x1)); x < std::min(img.width, std::max(x0, x1)); ++x)
            blend(img, x, y, r.fill, 1);
}

void draw_line(Image& img, const PlotLine& l) {
    const float hw = std::max(0.5f, l.width / 2);
    const int xa = int(std::floor(std::min(l.x0, l.x1) - hw - 1)), xb = int(std::ceil(std::max(l.x0, l.x1) + hw + 1));
    const int ya = int(std::floor(std::min(l.y0, l.y1) - hw - 1)), yb = int(std::ceil(std::max(l.y0, l.y1) + hw + 1));
    const float dx = l.x1 - l.x0, dy = l.y1 - l.y0, len2 = dx * dx + dy * dy;
    for (int y = std::max(0, ya); y <= std::min(img.height - 1, yb); ++y)
        for (int x = std::max(0, xa); x <= std::min(img.width - 1, xb); ++x) {
            const float px = float(x) + 0.5f, py = float(y) + 0.5f;
            const float t  = len2 > 0 ? std::clamp(((px - l.x0) * dx + (py - l.y0) * dy) / len2, 0.0f, 1.0f) : 0.0f;
            const float ex = px - (l.x0 + t * dx), ey = py - (l.y0 + t * dy);
            const float dist = std::sqrt(ex * ex + ey * ey);
            blend(img, x, y, l.color, hw + 0.5f - dist);  // 1 inside, ramping to 0 over the last pixel
        }
}

// Decodes one UTF-8 code point at s[i], advancing i; invalid bytes read as U+FFFD.
uint32_t next_codepoint(const std::string& s, size_t& i) {
    const auto b = static_cast<unsigned char>(s[i++]);
    if (b < 0x80) return b;
    int extra = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : -1;
    if (extra < 0) return 0xFFFD;
    uint32_t cp = b & (0x3F >> extra);
    for (int k = 0; k < extra; ++k) {
        if (i >= s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) return 0xFFFD;
        cp = (cp << 6) | (static_cast<unsigned char>(s[i++]) & 0x3F);
    }
    return cp;
}

void draw_text(Image& img, const PlotText& t, const GlyphSource& font) {
    const int scale = std::max(1, int(std::lround(t.size / font.pixel_size())));
    std::vector<GlyphSource::Glyph> glyphs;
    float width = 0;
    for (size_t i = 0; i < t.text.size();) {
        GlyphSource::Glyph g;
        if (!font.glyph(next_codepoint(t.text, i), g) && !font.glyph('?', g)) continue;
        glyphs.push_back(g);
        width += g.advance * float(scale);
    }
    float pen       = t.x - (t.anchor == TextAnchor::middle ? width / 2 : t.anchor == TextAnchor::end ? width : 0);
    const float top = t.y - font.ascent() * float(scale);
    for (const auto& g : glyphs) {
        for (int gy = 0; g.alpha && gy < g.h * scale; ++gy)
            for (int gx = 0; gx < g.w * scale; ++gx) {
                const uint8_t a = g.alpha[size_t(gy / scale) * size_t(g.stride) + size_t(gx / scale)];
                if (a)
                    blend(img, int(std::lround(pen)) + g.x0 * scale + gx, int(std::lround(top)) + g.y0 * scale + gy,
                          t.color, a / 255.0f);
            }
        pen += g.advance * float(scale);
    }
}

}  // namespace

Image rasterize(const Plot& p, const GlyphSource* glyphs) {
    if (p.width <= 0 || p.height <= 0 || p.width > 16384 || p.height > 16384)
        throw std::invalid_argument("plot size must be 1..16384 pixels each way, got " + std::to_string(p.width) + "x" +
                                    std::to_string(p.height));
    Image img;
    img.width  = p.width;
    img.height = p.height;
    img.rgba.resize(size_t(p.width) * size_t(p.height) * 4);
    for (size_t i = 0; i < img.rgba.size(); i += 4) {
        img.rgba[i] = p.background.r, img.rgba[i + 1] = p.background.g, img.rgba[i + 2] = p.background.b;
        img.rgba[i + 3] = p.background.a;
    }
    for (const auto& r : p.rects) fill_rect(img, r);
    for (const auto& l : p.lines) draw_line(img, l);
    if (glyphs)
        for (const auto& t : p.texts) draw_text(img, t, *glyphs);
    return img;
}

void write_file(const std::string& path, const std::string& bytes) {
    write_file_atomic(path, bytes);
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
    write_file(path, std::string(bytes.begin(), bytes.end()));
}

}  // namespace speculum::exporting

// Plot -> RGBA image: rectangles and lines blended in software, text drawn from a GlyphSource (an alpha bitmap per
// character). core has no font: the ui library supplies ImGui's built-in one (ui/plot_font.h); without a glyph
// source the text is left out. Plus PNG encoding and decoding through libpng.
#pragma once

#include "core/export/plot.h"

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::exporting {

struct Image {
    int width = 0, height = 0;
    std::vector<uint8_t> rgba;  // (height, width, 4) row-major, straight alpha
    bool operator==(const Image&) const = default;
};

// An alpha-coverage bitmap per character, positioned relative to the pen on the line's top.
class GlyphSource {
public:
    struct Glyph {
        int x0 = 0, y0 = 0;              // bitmap top-left relative to the pen (x) and the line top (y), pixels
        int w = 0, h = 0;                // bitmap size, pixels
        float advance        = 0;        // pen advance, pixels
        const uint8_t* alpha = nullptr;  // coverage 0..255, rows `stride` bytes apart
        int stride           = 0;
    };
    virtual ~GlyphSource()                                   = default;
    virtual bool glyph(uint32_t codepoint, Glyph& out) const = 0;  // false: not in the font (drawn as '?')
    virtual float pixel_size() const                         = 0;  // the font's native pixel height
    virtual float ascent() const                             = 0;  // line top to baseline, pixels
};

// Renders `p`; text is scaled from the glyph source's native size by the nearest whole factor (at least 1).
Image rasterize(const Plot& p, const GlyphSource* glyphs);

// 8-bit RGBA PNG. Throws std::runtime_error when libpng fails.
std::vector<uint8_t> encode_png(const Image& img);
// Any PNG libpng reads, converted to 8-bit RGBA. Throws std::runtime_error naming what is wrong.
Image decode_png(const std::vector<uint8_t>& bytes);

void write_file(const std::string& path, const std::string& bytes);
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace speculum::exporting

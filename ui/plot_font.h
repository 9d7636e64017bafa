// Text for raster plots (PNG export): Dear ImGui's built-in font (ProggyClean, 13 px) baked into an atlas of its
// own with ImFontAtlas::GetTexDataAsAlpha8 — no ImGui context, window or GL needed, so speculum-cli can use it.
#pragma once

#include "core/export/plot_raster.h"

#include <memory>

struct ImFontAtlas;
struct ImFont;

namespace speculum::ui {

class ImGuiGlyphSource final : public exporting::GlyphSource {
public:
    ImGuiGlyphSource();
    ~ImGuiGlyphSource() override;
    ImGuiGlyphSource(const ImGuiGlyphSource&)            = delete;
    ImGuiGlyphSource& operator=(const ImGuiGlyphSource&) = delete;

    bool glyph(uint32_t codepoint, Glyph& out) const override;
    float pixel_size() const override;
    float ascent() const override;

private:
    std::unique_ptr<ImFontAtlas> m_atlas;
    ImFont* m_font          = nullptr;
    unsigned char* m_pixels = nullptr;  // (m_height, m_width) alpha, owned by the atlas
    int m_width = 0, m_height = 0;
};

// One shared instance, built on first use (thread-safe initialisation; read-only afterwards).
const exporting::GlyphSource& plot_glyphs();

}  // namespace speculum::ui

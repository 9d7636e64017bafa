// ImGui's default font as a GlyphSource (see plot_font.h).
#include "ui/plot_font.h"

#include <imgui.h>

#include <cmath>
#include <stdexcept>

namespace speculum::ui {

ImGuiGlyphSource::ImGuiGlyphSource() : m_atlas(std::make_unique<ImFontAtlas>()) {
    m_font = m_atlas->AddFontDefault();
    m_atlas->GetTexDataAsAlpha8(&m_pixels, &m_width, &m_height);
    if (!m_font || !m_pixels || m_width <= 0 || m_height <= 0)
        throw std::runtime_error("ImGui could not build its default font atlas");
}

ImGuiGlyphSource::~ImGuiGlyphSource() = default;

bool ImGuiGlyphSource::glyph(uint32_t codepoint, Glyph& out) const {
    if (codepoint > 0xFFFF) return false;  // ImWchar is 16-bit in Debian's build
    const ImFontGlyph* g = m_font->FindGlyphNoFallback(static_cast<ImWchar>(codepoint));
    if (!g) return false;
    out         = Glyph{};
    out.advance = g->AdvanceX;
    if (!g->Visible) return true;  // a space: advance only
    // Texture coordinates -> atlas pixels; the bitmap sits at (X0, Y0) from the pen on the line top.
    const int u0 = int(std::lround(g->U0 * float(m_width))), v0 = int(std::lround(g->V0 * float(m_height)));
    const int u1 = int(std::lround(g->U1 * float(m_width))), v1 = int(std::lround(g->V1 * float(m_height)));
    out.x0     = int(std::lround(g->X0));
    out.y0     = int(std::lround(g->Y0));
    out.w      = u1 - u0;
    out.h      = v1 - v0;
    out.stride = m_width;
    out.alpha  = m_pixels + size_t(v0) * size_t(m_width) + size_t(u0);
    return true;
}

float ImGuiGlyphSource::pixel_size() const {
    return m_font->FontSize;
}
float ImGuiGlyphSource::ascent() const {
    return m_font->Ascent;
}

const exporting::GlyphSource& plot_glyphs() {
    static const ImGuiGlyphSource glyphs;
    return glyphs;
}

}  // namespace speculum::ui

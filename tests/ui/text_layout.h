// Text as the panels drew it, read back from ImGui's draw data: every glyph quad (4 vertices, 6 indices, a
// textured rectangle whose corner UVs are a glyph of the font) with the clip rectangle it was drawn under and the
// character it is. Glyphs are grouped into runs (one line of one text item: consecutive glyphs left to right on a
// line, no gap wider than two advances), so a test can find text that is cut at a clip edge, text drawn over other
// text, and a number split across two wrapped lines ("3." / "75": ImGui wraps after a period).
#pragma once

#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace speculum::test {

struct Glyph {
    ImRect r, clip;
    unsigned c = 0;
};

struct TextRun {
    std::string window;  // the draw list's owner
    std::string text;    // its characters (spaces where a gap was)
    ImRect r;
    std::vector<Glyph> glyphs;
};

// Every run of text in the draw data, window by window.
inline std::vector<TextRun> text_runs(const ImDrawData* dd, const ImFont* font) {
    std::map<std::pair<float, float>, unsigned> by_uv;
    for (const ImFontGlyph& g : font->Glyphs)
        if (g.Visible) by_uv[{g.U0, g.V0}] = g.Codepoint;
    std::vector<TextRun> runs;
    for (int l = 0; l < dd->CmdListsCount; ++l) {
        const ImDrawList* dl = dd->CmdLists[l];
        std::vector<Glyph> glyphs;
        for (const ImDrawCmd& cmd : dl->CmdBuffer) {
            if (cmd.UserCallback) continue;
            const ImRect clip(cmd.ClipRect.x, cmd.ClipRect.y, cmd.ClipRect.z, cmd.ClipRect.w);
            for (unsigned i = 0; i + 6 <= cmd.ElemCount; i += 3) {
                const ImDrawIdx* ix = dl->IdxBuffer.Data + cmd.IdxOffset + i;
                const unsigned a    = cmd.VtxOffset + ix[0];
                if (!(ix[1] == ix[0] + 1 && ix[2] == ix[0] + 2 && ix[3] == ix[0] && ix[4] == ix[0] + 2 &&
                      ix[5] == ix[0] + 3))
                    continue;
                const ImDrawVert* v = dl->VtxBuffer.Data + a;
                if (!(v[0].uv.x < v[1].uv.x && v[0].uv.y < v[2].uv.y)) continue;  // shapes use one UV
                auto it = by_uv.find({v[0].uv.x, v[0].uv.y});
                if (it == by_uv.end()) continue;
                glyphs.push_back({ImRect(v[0].pos, v[2].pos), clip, it->second});
                i += 3;  // the quad's second triangle
            }
        }
        // Runs, in the order the glyphs were emitted (one text item's glyphs are consecutive): a glyph that is not
        // to the right of the last one on its line starts a new run.
        const float adv = font->FallbackAdvanceX > 0 ? font->FallbackAdvanceX : 7.0f;
        for (const Glyph& g : glyphs) {
            TextRun* last =
                runs.empty() || runs.back().window != (dl->_OwnerName ? dl->_OwnerName : "") ? nullptr : &runs.back();
            const float line = font->FontSize * 0.5f;
            const bool joins = last && std::fabs(last->glyphs.back().r.GetCenter().y - g.r.GetCenter().y) < line &&
                               g.r.Min.x >= last->glyphs.back().r.Min.x &&
                               g.r.Min.x - last->glyphs.back().r.Max.x < 2.0f * adv;
            if (!joins) {
                runs.push_back({dl->_OwnerName ? dl->_OwnerName : "", "", g.r, {}});
                last = &runs.back();
            } else if (g.r.Min.x - last->glyphs.back().r.Max.x > adv) {
                last->text += ' ';
            }
            last->text += g.c < 128 ? char(g.c) : '?';
            last->r.Add(g.r);
            last->glyphs.push_back(g);
        }
    }
    return runs;
}

// What is wrong with the text of one frame, one line each, prefixed with `at`: a glyph cut at the left or right edge
// of its clip rectangle (on a visible line: a vertical cut is a scrolled view's edge); a run drawn over another run
// of its window (visible parts overlapping by more than a pixel both ways); a number split over two wrapped lines
// (a run ending in "<digit>." and the next starting with a digit, below it).
inline std::vector<std::string> text_problems(const std::vector<TextRun>& runs, const std::string& at) {
    std::vector<std::string> problems;
    auto visible = [](const Glyph& g) {
        ImRect v = g.r;
        v.ClipWithFull(g.clip);
        return v;
    };
    for (size_t i = 0; i < runs.size(); ++i) {
        const TextRun& a = runs[i];
        for (const Glyph& g : a.glyphs)
            if (g.r.Max.y > g.clip.Min.y && g.r.Min.y < g.clip.Max.y &&
                (g.r.Min.x < g.clip.Min.x - 0.5f || g.r.Max.x > g.clip.Max.x + 0.5f)) {
                problems.push_back(at + a.window + ": cut at the edge: \"" + a.text + "\"");
                break;
            }
        if (i + 1 < runs.size()) {
            const TextRun& b = runs[i + 1];
            const size_t n   = a.text.size();
            if (b.window == a.window && n >= 2 && a.text[n - 1] == '.' && std::isdigit((unsigned char)a.text[n - 2]) &&
                !b.text.empty() && std::isdigit((unsigned char)b.text[0]) && b.r.Min.y > a.r.Max.y - 1)
                problems.push_back(at + a.window + ": a number split over two lines: \"" + a.text + "\" / \"" + b.text +
                                   "\"");
        }
        for (size_t j = i + 1; j < runs.size(); ++j) {
            const TextRun& b = runs[j];
            if (b.window != a.window || !a.r.Overlaps(b.r)) continue;
            bool over = false;
            for (const Glyph& g : a.glyphs)
                for (const Glyph& h : b.glyphs) {
                    const ImRect x = visible(g), y = visible(h);
                    ImRect both = x;
                    both.ClipWithFull(y);
                    over |= x.Overlaps(y) && both.GetWidth() > 1.0f && both.GetHeight() > 1.0f;
                }
            if (over) problems.push_back(at + a.window + ": \"" + a.text + "\" drawn over \"" + b.text + "\"");
        }
    }
    return problems;
}

// Table cells whose contents run past their column this frame (a column too narrow for its text: ImGui clips the
// cell, so a one-character-wide column shows a letter), from the tables' own item extents; headers too. Tables that
// scroll sideways are passed over.
inline std::vector<std::string> table_problems(const std::string& at) {
    std::vector<std::string> problems;
    ImGuiContext& g = *GImGui;
    for (int i = 0; i < g.Tables.GetMapSize(); ++i) {
        const ImGuiTable* t = g.Tables.TryGetMapData(i);
        if (!t || t->LastFrameActive != g.FrameCount || (t->Flags & ImGuiTableFlags_ScrollX)) continue;
        for (int c = 0; c < t->ColumnsCount; ++c) {
            const ImGuiTableColumn& col = t->Columns[c];
            if (!col.IsEnabled || !col.IsVisibleX) continue;
            const float content =
                std::max({col.ContentMaxXFrozen, col.ContentMaxXUnfrozen, col.ContentMaxXHeadersIdeal});
            if (content > col.MaxX + 1.0f) {
                const char* name = t->ColumnsNames.Buf.Size > 0 && col.NameOffset >= 0
                                       ? t->ColumnsNames.c_str() + col.NameOffset
                                       : "?";
                problems.push_back(at + t->OuterWindow->Name + ": table column \"" + name + "\" is " +
                                   std::to_string(int(col.MaxX - col.MinX)) + " px wide for " +
                                   std::to_string(int(content - col.MinX)) + " px of contents");
            }
        }
    }
    return problems;
}

}  // namespace speculum::test

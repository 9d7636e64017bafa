// Shared panel helpers (Tracy's TracyImGui.hpp role).
#include "ui/widgets.h"

#include "core/export/plot.h"

#include <imgui_internal.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace speculum::ui {

namespace {

struct Fractions {
    ImVec2 pos, size;  // of the display
};
// UI thread only: the panels' last places as fractions of the display, and what changed since the last frame.
struct Layout {
    std::map<std::string, Fractions> placed;
    ImVec2 display{0, 0};
    bool resized     = false;  // the display changed size this frame: put every panel back at its fractions
    int reset_frames = 0;      // frames left in which every panel goes to its default place
};
Layout& layout() {
    static Layout l;
    return l;
}

}  // namespace

namespace {
bool g_probe = false;
std::map<std::string, ProbedItem> g_probed;
}  // namespace

void probe_enable(bool on) {
    g_probe = on;
}

void probe_item(const char* name) {
    if (!g_probe) return;
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    g_probed[name] = {a.x, a.y, b.x - a.x, b.y - a.y};
}

void probe_slider(const char* name) {
    if (!g_probe) return;
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    g_probed[name] = {a.x, a.y, std::min(ImGui::CalcItemWidth(), b.x - a.x), b.y - a.y};
}

void probe_window(const char* name) {
    if (!g_probe) return;
    const ImVec2 p = ImGui::GetWindowPos(), s = ImGui::GetWindowSize();
    g_probed[name] = {p.x, p.y, s.x, s.y};
}

const std::map<std::string, ProbedItem>& probed_items() {
    return g_probed;
}

void layout_new_frame() {
    Layout& l      = layout();
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    l.resized      = l.display.x > 0 && (d.x != l.display.x || d.y != l.display.y);
    l.display      = d;
    l.reset_frames = std::max(0, l.reset_frames - 1);
}

void reset_layout() {
    layout().placed.clear();
    layout().reset_frames = 2;  // the next frame (layout_new_frame counts this one down) places every panel
}

void place_window(const char* title, ImVec2 frac_pos, ImVec2 frac_size, bool fill) {
    ImVec2 d = ImGui::GetIO().DisplaySize;
    if (fill) {
        ImGui::SetNextWindowPos(ImVec2(0, 0), ImGuiCond_Always);
        ImGui::SetNextWindowSize(d, ImGuiCond_Always);
        return;
    }
    Layout& l      = layout();
    ImGuiCond cond = l.reset_frames > 0 ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
    if (l.resized && l.reset_frames == 0) {
        if (auto it = l.placed.find(title); it != l.placed.end()) {
            frac_pos = it->second.pos, frac_size = it->second.size;
            cond = ImGuiCond_Always;
        }
    }
    ImGui::SetNextWindowPos(ImVec2(frac_pos.x * d.x + 6, frac_pos.y * d.y + 6), cond);
    ImGui::SetNextWindowSize(ImVec2(frac_size.x * d.x - 12, frac_size.y * d.y - 12), cond);
}

bool begin_panel(const char* title, bool* visible, ImVec2 frac_pos, ImVec2 frac_size, bool fill) {
    place_window(title, frac_pos, frac_size, fill);
    if (!ImGui::Begin(title, visible)) {
        ImGui::End();
        return false;
    }
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    if (!fill && d.x > 0 && d.y > 0) {  // where the user (or the default) put it, for the next resize
        const ImVec2 p = ImGui::GetWindowPos(), s = ImGui::GetWindowSize();
        layout().placed[title] = {ImVec2((p.x - 6) / d.x, (p.y - 6) / d.y), ImVec2((s.x + 12) / d.x, (s.y + 12) / d.y)};
    }
    return true;
}

void empty_state(const char* text) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    text_wrapped("%s", text);
    ImGui::PopStyleColor();
}

static void tag(const char* text, ImVec4 color) {
    // On the same line when it fits, else on the next: the tag that tells modeled from measured is never cut off.
    char label[32];
    std::snprintf(label, sizeof label, "[%s]", text);
    // (Not SameLine() then NewLine(): that records the line's end past the edge as content, widening the panel.)
    same_line_if_fits(ImGui::CalcTextSize(label).x);
    ImGui::TextColored(color, "%s", label);
}

void modeled_tag() {
    tag("modeled", ImVec4(0.95f, 0.75f, 0.35f, 1.0f));
}
void measured_tag() {
    tag("measured", ImVec4(0.45f, 0.9f, 0.5f, 1.0f));
}

void measured_status(const UiSnapshot& snap) {
    if (!snap.measured) return;
    const MeasuredView& r = *snap.measured;
    if (r.cancelled)
        warning_wrapped("cancelled: partial figures (%d of %d prompts)", int(r.prompts.size()), r.prompts_total);
    else if (!r.complete)
        ImGui::TextDisabled("streaming: prompt %d of %d", int(r.prompts.size()), r.prompts_total);
    else if (snap.measured_config &&
             !(snap.measured_config->spec == snap.config.spec && snap.measured_config->prefs == snap.config.prefs))
        ImGui::TextDisabled("measured with earlier settings (gamma %d, %s)", snap.measured_config->gamma(),
                            describe_draft(snap.measured_config->draft()).c_str());
}

std::string wrap_at_spaces(const std::string& text, float width) {
    std::string out, line;
    size_t start = 0;
    while (start <= text.size()) {  // each paragraph on its own
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        line.clear();
        for (size_t w = start; w <= end;) {
            size_t next = text.find(' ', w);
            if (next == std::string::npos || next > end) next = end;
            const std::string_view word(text.data() + w, next - w);
            if (line.empty() || ImGui::CalcTextSize((line + ' ').append(word).c_str()).x <= width) {
                if (w > start) line += ' ';
                line += word;
            } else {
                out += line, out += '\n';
                line.assign(word);
            }
            w = next + 1;
        }
        out += line;
        if (end < text.size()) out += '\n';
        start = end + 1;
    }
    return out;
}

void text_wrapped_v(const char* fmt, va_list args) {
    va_list copy;
    va_copy(copy, args);
    const int n = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    std::string buf(size_t(std::max(n, 0)), '\0');
    std::vsnprintf(buf.data(), buf.size() + 1, fmt, args);
    // The width ImGui's TextWrapped wraps at from here (the window's work area, or a pushed wrap position), a pixel
    // to spare.
    const ImGuiWindow* window = ImGui::GetCurrentWindow();
    const float width         = ImGui::CalcWrapWidthForPos(ImGui::GetCursorScreenPos(),
                                                   window->DC.TextWrapPos < 0 ? 0.0f : window->DC.TextWrapPos) -
                        1.0f;
    ImGui::TextWrapped("%s", wrap_at_spaces(buf, std::max(width, 1.0f)).c_str());
}

void text_wrapped(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    text_wrapped_v(fmt, args);
    va_end(args);
}

void text_disabled_wrapped(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    text_wrapped_v(fmt, args);
    ImGui::PopStyleColor();
    va_end(args);
}

void text_colored_wrapped(ImVec4 color, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    ImGui::PushStyleColor(ImGuiCol_Text, color);
    text_wrapped_v(fmt, args);
    ImGui::PopStyleColor();
    va_end(args);
}

void same_line_if_fits(float width) {
    const float right = ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width;
    const float edge  = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (right <= edge) ImGui::SameLine();
}

float button_width(const char* label) {
    return ImGui::CalcTextSize(label, nullptr, true).x + 2 * ImGui::GetStyle().FramePadding.x;
}

float text_width(const char* text) {
    return ImGui::CalcTextSize(text).x;
}

std::string fit_text(const std::string& text, float width) {
    if (ImGui::CalcTextSize(text.c_str()).x <= width) return text;
    // Binary search over character boundaries: the widths of prefixes grow with their length.
    std::vector<size_t> cuts;  // byte offsets where a character starts
    for (size_t i = 0; i < text.size(); ++i)
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) cuts.push_back(i);
    size_t lo = 0, hi = cuts.size();  // the answer is cuts[k] for the largest k in [0, hi) that fits
    while (lo + 1 < hi) {
        const size_t mid            = (lo + hi) / 2;
        const std::string candidate = text.substr(0, cuts[mid]) + "...";
        if (ImGui::CalcTextSize(candidate.c_str()).x <= width)
            lo = mid;
        else
            hi = mid;
    }
    return text.substr(0, cuts.empty() ? 0 : cuts[lo]) + "...";
}

static void text_fit_v(bool disabled, const char* fmt, va_list args) {
    va_list copy;
    va_copy(copy, args);
    const int n = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    std::string full(size_t(std::max(n, 0)), '\0');
    if (n > 0) std::vsnprintf(full.data(), full.size() + 1, fmt, args);
    const std::string shown = fit_text(full, std::max(0.0f, ImGui::GetContentRegionAvail().x));
    if (disabled) ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextUnformatted(shown.c_str());
    if (disabled) ImGui::PopStyleColor();
    if (shown.size() != full.size() && ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 35.0f);
        ImGui::TextUnformatted(full.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

void text_fit(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    text_fit_v(false, fmt, args);
    va_end(args);
}

void text_fit_disabled(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    text_fit_v(true, fmt, args);
    va_end(args);
}

void warning_wrapped(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.75f, 0.3f, 1));
    text_wrapped_v(fmt, args);
    ImGui::PopStyleColor();
    va_end(args);
}

void help_marker(const char* text) {
    same_line_if_fits(ImGui::CalcTextSize("(?)").x);
    ImGui::TextDisabled("(?)");
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30.0f);
        ImGui::TextUnformatted(text);
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

ImU32 level_color(int level, float alpha) {
    static const ImVec4 colors[] = {{0.85f, 0.85f, 0.85f, 1},
                                    {0.30f, 0.70f, 1.00f, 1},
                                    {0.55f, 0.85f, 0.35f, 1},
                                    {0.95f, 0.60f, 0.20f, 1},
                                    {0.80f, 0.45f, 0.90f, 1}};
    ImVec4 c                     = colors[std::clamp(level, 0, 4)];
    c.w                          = alpha;
    return ImGui::ColorConvertFloat4ToU32(c);
}

ImU32 origin_color(TokenOrigin origin) {
    switch (origin) {
        case TokenOrigin::accepted:
            return IM_COL32(90, 170, 255, 255);
        case TokenOrigin::corrected:
            return IM_COL32(240, 90, 80, 255);
        case TokenOrigin::bonus:
            return IM_COL32(120, 220, 120, 255);
    }
    return IM_COL32_WHITE;
}

ImU32 heat_color(double t) {
    if (!std::isfinite(t)) return IM_COL32(60, 60, 60, 255);  // darker than the SVG export's grey, for the dark theme
    const exporting::Rgba c = exporting::heat_rgba(t);        // the ramp the exported plots use
    return IM_COL32(c.r, c.g, c.b, 255);
}

}  // namespace speculum::ui

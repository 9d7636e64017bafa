// Shared panel helpers (Tracy's TracyImGui.hpp role).
#include "ui/widgets.h"

#include <algorithm>
#include <cmath>

namespace speculum::ui {

void place_window(ImVec2 frac_pos, ImVec2 frac_size, bool fill) {
    ImVec2 d = ImGui::GetIO().DisplaySize;
    if (fill) {
        ImGui::SetNextWindowPos(ImVec2(0, 0), ImGuiCond_Always);
        ImGui::SetNextWindowSize(d, ImGuiCond_Always);
        return;
    }
    ImGui::SetNextWindowPos(ImVec2(frac_pos.x * d.x + 6, frac_pos.y * d.y + 6), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize(ImVec2(frac_size.x * d.x - 12, frac_size.y * d.y - 12), ImGuiCond_FirstUseEver);
}

bool begin_panel(const char* title, bool* visible, ImVec2 frac_pos, ImVec2 frac_size, bool fill) {
    place_window(frac_pos, frac_size, fill);
    if (!ImGui::Begin(title, visible)) {
        ImGui::End();
        return false;
    }
    return true;
}

void empty_state(const char* text) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", text);
    ImGui::PopStyleColor();
}

static void tag(const char* text, ImVec4 color) {
    ImGui::SameLine();
    ImGui::TextColored(color, "[%s]", text);
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
    if (!r.complete)
        ImGui::TextDisabled("streaming: prompt %d of %d", int(r.prompts.size()), r.prompts_total);
    else if (snap.measured_config && !(*snap.measured_config == snap.config))
        ImGui::TextDisabled("measured with earlier settings (gamma %d, %s)", snap.measured_config->gamma(),
                            describe_draft(snap.measured_config->draft()).c_str());
}

void help_marker(const char* text) {
    ImGui::SameLine();
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
    if (!std::isfinite(t)) return IM_COL32(60, 60, 60, 255);
    t = std::clamp(t, 0.0, 1.0);
    // A short viridis-like ramp: dark blue → teal → green → yellow.
    static const float stops[][3] = {{0.27f, 0.00f, 0.33f},
                                     {0.23f, 0.32f, 0.55f},
                                     {0.13f, 0.57f, 0.55f},
                                     {0.37f, 0.79f, 0.38f},
                                     {0.99f, 0.91f, 0.14f}};
    double x                      = t * 4.0;
    int i                         = std::min(3, int(x));
    float f                       = float(x - i);
    float r = stops[i][0] + f * (stops[i + 1][0] - stops[i][0]), g = stops[i][1] + f * (stops[i + 1][1] - stops[i][1]),
          b = stops[i][2] + f * (stops[i + 1][2] - stops[i][2]);
    return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, 1));
}

}  // namespace speculum::ui

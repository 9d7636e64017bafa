// Live decode panel: wrapped token stream coloured by origin with the draft level underlined; step timeline.
#include "ui/panels/live_decode_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>

namespace speculum::ui {

namespace {

void legend() {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(origin_color(TokenOrigin::accepted)), "accepted draft");
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(origin_color(TokenOrigin::corrected)), "corrected");
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(origin_color(TokenOrigin::bonus)), "bonus");
    ImGui::SameLine();
    ImGui::TextDisabled("(underline = draft level)");
}

void token_stream(const std::vector<TokenPiece>& tokens, float height) {
    ImGui::BeginChild("stream", ImVec2(0, height), true);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    float wrap     = ImGui::GetContentRegionAvail().x;
    ImVec2 origin  = ImGui::GetCursorScreenPos();
    float x = 0, y = 0, line = ImGui::GetTextLineHeightWithSpacing();
    for (const auto& t : tokens) {
        for (size_t start = 0; start <= t.text.size();) {
            size_t nl         = t.text.find('\n', start);
            std::string piece = t.text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
            float w           = ImGui::CalcTextSize(piece.c_str()).x;
            if (x + w > wrap && x > 0) x = 0, y += line;
            ImVec2 p(origin.x + x, origin.y + y);
            dl->AddText(p, origin_color(t.origin), piece.c_str());
            if (t.level > 0) dl->AddLine(ImVec2(p.x, p.y + line - 3), ImVec2(p.x + w, p.y + line - 3), level_color(t.level), 2);
            x += w;
            if (nl == std::string::npos) break;
            x = 0, y += line, start = nl + 1;
        }
    }
    ImGui::Dummy(ImVec2(wrap, y + line));
    if (ImGui::GetScrollY() >= ImGui::GetScrollMaxY() - line) ImGui::SetScrollHereY(1.0f);  // follow the stream
    ImGui::EndChild();
}

// One column per verification step: stacked cells per committed token, coloured by origin.
void timeline(const std::vector<TokenPiece>& tokens, int n_steps) {
    ImVec2 size(ImGui::GetContentRegionAvail().x, 60);
    ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("timeline", size);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(p0, ImVec2(p0.x + size.x, p0.y + size.y), IM_COL32(25, 27, 32, 255));
    int steps = std::max(1, n_steps);
    float col = std::max(2.0f, size.x / float(std::min(steps, 400)));
    int first = std::max(0, steps - int(size.x / col));  // show the latest steps that fit
    std::vector<int> height(size_t(steps), 0);
    for (const auto& t : tokens) {
        if (t.step < first || t.step >= steps) continue;
        int h     = height[size_t(t.step)]++;
        float x   = p0.x + col * float(t.step - first);
        float y1  = p0.y + size.y - float(h) * 6.0f;
        dl->AddRectFilled(ImVec2(x, y1 - 5), ImVec2(x + col - 1, y1), origin_color(t.origin));
    }
}

}  // namespace

void LiveDecodePanel::draw(const UiSnapshot& snap, UiActions&, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.5f, 0.0f), ImVec2(0.25f, 0.34f), fill)) return;
    if (!snap.measured || snap.measured->tokens.empty()) {
        empty_state(snap.measured ? "The measured run committed no tokens yet." : snap.measured_note.c_str());
        legend();
        ImGui::End();
        return;
    }
    const auto& r = *snap.measured;
    ImGui::Text("%lld tokens in %lld steps%s", static_cast<long long>(r.n_generated), static_cast<long long>(r.n_steps),
                r.complete ? "" : " (streaming)");
    measured_tag();
    legend();
    token_stream(r.tokens, std::max(60.0f, ImGui::GetContentRegionAvail().y - 90));
    ImGui::TextUnformatted("Step timeline (tokens committed per verification step)");
    timeline(r.tokens, int(r.n_steps));
    ImGui::End();
}

}  // namespace speculum::ui

// Live decode panel: wrapped token stream coloured by origin with the draft level underlined; step timeline.
#include "ui/panels/live_decode_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>

namespace speculum::ui {

namespace {

void legend() {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(origin_color(TokenOrigin::accepted)), "accepted draft");
    same_line_if_fits(text_width("corrected"));
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(origin_color(TokenOrigin::corrected)), "corrected");
    same_line_if_fits(text_width("bonus"));
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(origin_color(TokenOrigin::bonus)), "bonus");
    same_line_if_fits(text_width("(underline = draft level)"));
    text_disabled_wrapped("(underline = draft level)");
}

// Wrapped text runs drawn piece by piece (ImGui's own wrapping cannot colour single tokens).
class StreamWriter {
public:
    StreamWriter()
        : m_origin(ImGui::GetCursorScreenPos()),
          m_wrap(ImGui::GetContentRegionAvail().x),
          m_line(ImGui::GetTextLineHeightWithSpacing()),
          m_dl(ImGui::GetWindowDrawList()) {}
    // `underline` > 0: a line under the text in that draft level's colour.
    void text(const std::string& s, ImU32 color, int underline = 0) {
        for (size_t start = 0; start <= s.size();) {
            size_t nl         = s.find('\n', start);
            std::string piece = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
            float w           = ImGui::CalcTextSize(piece.c_str()).x;
            if (m_x + w > m_wrap && m_x > 0) newline();
            ImVec2 p(m_origin.x + m_x, m_origin.y + m_y);
            m_dl->AddText(p, color, piece.c_str());
            if (underline > 0) {
                const float y = p.y + m_line - 3;
                m_dl->AddLine(ImVec2(p.x, y), ImVec2(p.x + w, y), level_color(underline), 2);
            }
            m_x += w;
            if (nl == std::string::npos) break;
            newline();
            start = nl + 1;
        }
    }
    void newline() { m_x = 0, m_y += m_line; }
    bool at_line_start() const { return m_x == 0; }
    void finish() { ImGui::Dummy(ImVec2(m_wrap, m_y + m_line)); }

private:
    ImVec2 m_origin;
    float m_wrap, m_line, m_x = 0, m_y = 0;
    ImDrawList* m_dl;
};

// Each prompt (dim, with its id) followed by the tokens committed after it, coloured by origin.
void token_stream(const MeasuredView& r, float height) {
    ImGui::BeginChild("stream", ImVec2(0, height), true);
    StreamWriter out;
    const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    int prompt      = -1;
    for (const auto& t : r.tokens) {
        if (t.prompt != prompt) {
            prompt = t.prompt;
            if (prompt > 0) out.newline(), out.newline();
            if (prompt >= 0 && size_t(prompt) < r.prompts.size()) {
                out.text("[" + r.prompts[size_t(prompt)].id + "] ", dim);
                out.text(r.prompts[size_t(prompt)].text, dim);
            }
        }
        out.text(t.text, origin_color(t.origin), t.level);
    }
    out.finish();
    if (ImGui::GetScrollY() >= ImGui::GetScrollMaxY() - ImGui::GetTextLineHeightWithSpacing())
        ImGui::SetScrollHereY(1.0f);  // follow the stream
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
        int h    = height[size_t(t.step)]++;
        float x  = p0.x + col * float(t.step - first);
        float y1 = p0.y + size.y - float(h) * 6.0f;
        dl->AddRectFilled(ImVec2(x, y1 - 5), ImVec2(x + col - 1, y1), origin_color(t.origin));
    }
    if (ImGui::IsItemHovered()) {  // the readout of the step under the mouse
        const int step = first + int((ImGui::GetIO().MousePos.x - p0.x) / col);
        if (step >= first && step < steps) {
            int accepted = 0, corrected = 0, bonus = 0;
            for (const auto& t : tokens)
                if (t.step == step)
                    accepted += t.origin == TokenOrigin::accepted, corrected += t.origin == TokenOrigin::corrected,
                        bonus += t.origin == TokenOrigin::bonus;
            ImGui::SetTooltip("step %d: %d tokens committed (%d accepted draft, %d corrected, %d bonus)", step + 1,
                              accepted + corrected + bonus, accepted, corrected, bonus);
        }
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
    text_wrapped("%lld tokens in %lld steps%s", static_cast<long long>(r.n_generated),
                 static_cast<long long>(r.n_steps), r.complete ? "" : " (streaming)");
    measured_tag();
    measured_status(snap);
    if (!r.drafter.empty()) text_disabled_wrapped("draft: %s; prompts: %s", r.drafter.c_str(), r.source.c_str());
    legend();
    token_stream(r, std::max(60.0f, ImGui::GetContentRegionAvail().y - 90));
    text_wrapped("Step timeline (tokens committed per verification step)");
    timeline(r.tokens, int(r.n_steps));
    ImGui::End();
}

}  // namespace speculum::ui

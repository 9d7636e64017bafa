// Acceptance panel: bars (measured α_i, Wilson 95 % whiskers) over modeled markers; length histogram; by rank.
#include "ui/panels/acceptance_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace speculum::ui {

namespace {

// A bar chart in [0, top] with optional whiskers and one modeled marker per bar.
struct BarSeries {
    std::vector<double> measured;    // empty = no measured bars
    std::vector<Interval> whiskers;  // parallel to measured (may be empty)
    std::vector<double> modeled;     // markers
    const char* id;
    int first_label = 1;
};

void bar_chart(const BarSeries& s, float height) {
    size_t n = std::max(s.measured.size(), s.modeled.size());
    if (n == 0) return;
    ImVec2 size(ImGui::GetContentRegionAvail().x, height);
    ImVec2 p0 = ImGui::GetCursorScreenPos(), p1(p0.x + size.x, p0.y + size.y);
    ImGui::InvisibleButton(s.id, size);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(p0, p1, IM_COL32(25, 27, 32, 255));
    // The bars leave a margin at the right for the axis labels, so no label is drawn over the last bar.
    const float axis_w = ImGui::CalcTextSize("0.75").x + 6;
    float plot_h = size.y - 16, slot = std::max(1.0f, size.x - axis_w) / float(n);
    auto y_of = [&](double v) { return p0.y + plot_h * float(1.0 - std::clamp(v, 0.0, 1.0)); };
    for (double g : {0.25, 0.5, 0.75})
        dl->AddLine(ImVec2(p0.x, y_of(g)), ImVec2(p1.x, y_of(g)), IM_COL32(55, 55, 65, 255));
    if (ImGui::IsItemHovered()) {  // the readout of the bar under the mouse
        const size_t i  = std::min(n - 1, size_t(std::max(0.0f, ImGui::GetIO().MousePos.x - p0.x) / slot));
        std::string tip = std::string(s.id) + " " + std::to_string(i + size_t(s.first_label)) + ":";
        char part[96];
        if (i < s.measured.size()) {
            std::snprintf(part, sizeof part, " measured %.3f", s.measured[i]);
            tip += part;
            if (i < s.whiskers.size()) {
                std::snprintf(part, sizeof part, " [%.3f, %.3f]", s.whiskers[i].lo, s.whiskers[i].hi);
                tip += part;
            }
        }
        if (i < s.modeled.size()) {
            std::snprintf(part, sizeof part, "%s modeled %.3f", i < s.measured.size() ? "," : "", s.modeled[i]);
            tip += part;
        }
        ImGui::SetTooltip("%s", tip.c_str());
    }
    for (size_t i = 0; i < n; ++i) {
        float x0 = p0.x + slot * float(i) + slot * 0.15f, x1 = p0.x + slot * float(i + 1) - slot * 0.15f;
        if (i < s.measured.size()) {
            dl->AddRectFilled(ImVec2(x0, y_of(s.measured[i])), ImVec2(x1, y_of(0)), IM_COL32(90, 170, 255, 255));
            if (i < s.whiskers.size()) {
                float xm = (x0 + x1) / 2;
                dl->AddLine(ImVec2(xm, y_of(s.whiskers[i].lo)), ImVec2(xm, y_of(s.whiskers[i].hi)), IM_COL32_WHITE,
                            1.5f);
                dl->AddLine(ImVec2(xm - 4, y_of(s.whiskers[i].hi)), ImVec2(xm + 4, y_of(s.whiskers[i].hi)),
                            IM_COL32_WHITE);
                dl->AddLine(ImVec2(xm - 4, y_of(s.whiskers[i].lo)), ImVec2(xm + 4, y_of(s.whiskers[i].lo)),
                            IM_COL32_WHITE);
            }
        }
        if (i < s.modeled.size()) {
            float y = y_of(s.modeled[i]);
            if (s.measured.empty()) dl->AddRectFilled(ImVec2(x0, y), ImVec2(x1, y_of(0)), IM_COL32(235, 180, 80, 90));
            dl->AddLine(ImVec2(x0 - 2, y), ImVec2(x1 + 2, y), IM_COL32(235, 180, 80, 255), 2.5f);
        }
        char label[16];
        std::snprintf(label, sizeof label, "%zu", i + size_t(s.first_label));
        dl->AddText(ImVec2((x0 + x1) / 2 - 4, p1.y - 15), IM_COL32(160, 160, 160, 255), label);
    }
    for (double g : {0.25, 0.5, 0.75}) {  // the axis (shares in [0, 1]), in its margin right of the bars
        char tick[16];
        std::snprintf(tick, sizeof tick, "%.2g", g);
        dl->AddText(ImVec2(p1.x - ImGui::CalcTextSize(tick).x - 2, y_of(g) - 14), IM_COL32(150, 150, 160, 255), tick);
    }
}

}  // namespace

void AcceptancePanel::draw(const UiSnapshot& snap, UiActions&, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.25f, 0.67f), ImVec2(0.25f, 0.33f), fill)) return;
    const auto& m                            = snap.modeled;
    const engine::RunStats* r                = snap.measured ? &snap.measured->stats : nullptr;
    const std::vector<int64_t> rank_offered  = r ? r->rank_offered_pooled() : std::vector<int64_t>{};
    const std::vector<int64_t> rank_accepted = r ? r->rank_accepted_pooled() : std::vector<int64_t>{};
    float h = std::max(90.0f, (ImGui::GetContentRegionAvail().y - 90) / (!rank_offered.empty() ? 3 : 2));

    // The analytic expectation per position is the i.i.d. model: every position accepted with the same α — the
    // assumed one, or once measured the pooled measured rate, so the bars show how acceptance depends on position.
    double iid = snap.config.level1().alpha;
    if (r) {
        int64_t reached = 0, accepted = 0;
        for (size_t i = 0; i < r->pos_reached.size() && i < r->pos_accepted.size(); ++i)
            reached += r->pos_reached[i], accepted += r->pos_accepted[i];
        if (reached > 0) iid = double(accepted) / double(reached);
    }
    if (r) text_wrapped("%s, %.2f tokens per target pass", acceptance_text(*r).c_str(), r->mean_accepted_length());
    text_wrapped("alpha_i per position (accepted / reached at i): measured (95%% Wilson) vs");
    // A draft that predicts its own acceptance (DSpark's confidence head) is compared with what it predicted.
    const bool predicted = r && !r->pos_predicted.empty();
    char modeled_line[96];
    if (predicted)
        std::snprintf(modeled_line, sizeof modeled_line,
                      "predicted by the draft's confidence head (mean per position)");
    else
        std::snprintf(modeled_line, sizeof modeled_line, "modeled, one alpha everywhere: %.2f (%s)", iid,
                      r ? "the measured alpha_i pooled" : "assumed");
    same_line_if_fits(text_width(modeled_line));
    text_colored_wrapped(ImVec4(0.92f, 0.7f, 0.3f, 1), "%s", modeled_line);
    BarSeries pos{{}, {}, {}, "positions"};
    const size_t n_pos = std::max(size_t(snap.config.gamma()), r ? r->pos_reached.size() : size_t(0));
    pos.modeled.assign(n_pos, iid);
    if (predicted) {
        const std::vector<double> p = r->predicted_alpha();
        for (size_t i = 0; i < n_pos; ++i) pos.modeled[i] = i < p.size() ? p[i] : 0.0;
    }
    if (r) {
        pos.measured = r->alpha();
        for (size_t i = 0; i < r->pos_reached.size(); ++i)
            pos.whiskers.push_back(wilson_interval(r->pos_accepted[i], r->pos_reached[i]));
    }
    bar_chart(pos, h);

    text_wrapped("Accepted draft tokens per step (share of steps; modeled from the alpha_i in use)");
    BarSeries hist{{}, {}, {}, "histogram", 0};
    // The modeled distribution is over tokens per pass t = 1..k+1, i.e. accepted = t − 1.
    for (size_t t = 1; t < m.length_distribution.size(); ++t) hist.modeled.push_back(m.length_distribution[t]);
    if (r) {
        double steps = 0;
        for (auto c : r->accepted_len_hist) steps += double(c);
        for (auto c : r->accepted_len_hist) hist.measured.push_back(steps > 0 ? double(c) / steps : 0.0);
    }
    bar_chart(hist, h);

    if (!rank_offered.empty()) {
        ImGui::TextUnformatted("Tree acceptance by sibling rank");
        BarSeries rank{r->rank_alpha(), {}, snap.config.spec.tree.prior, "ranks", 0};
        for (size_t i = 0; i < rank_offered.size(); ++i)
            rank.whiskers.push_back(wilson_interval(rank_accepted[i], rank_offered[i]));
        bar_chart(rank, h);
    }
    if (!r)
        empty_state(snap.measured_note.c_str());
    else
        measured_status(snap);
    ImGui::End();
}

}  // namespace speculum::ui

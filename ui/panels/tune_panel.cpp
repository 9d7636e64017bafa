// Tune panel (see tune_panel.h).
#include "ui/panels/tune_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace speculum::ui {

namespace {

// Measured speedup against the draft's bytes per pass: every measured candidate, the front outlined.
void front_plot(const std::vector<sweep::TuneCandidate>& cs) {
    double top = 1.0, right = 1.0;
    for (const auto& c : cs)
        if (c.measured_speedup) top = std::max(top, *c.measured_speedup), right = std::max(right, c.extra_bytes);
    const float w = std::max(120.0f, ImGui::GetContentRegionAvail().x), h = 140;
    const ImVec2 o = ImGui::GetCursorScreenPos();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRect(o, ImVec2(o.x + w, o.y + h), IM_COL32(120, 120, 120, 160));
    auto at = [&](double bytes, double s) {
        return ImVec2(o.x + 4 + float(std::log1p(bytes) / std::log1p(right)) * (w - 8),
                      o.y + h - 4 - float(s / (top * 1.05)) * (h - 8));
    };
    const float y1 = at(0, 1.0).y;  // no speedup
    dl->AddLine(ImVec2(o.x, y1), ImVec2(o.x + w, y1), IM_COL32(200, 200, 200, 110));
    const ImVec2 mouse                  = ImGui::GetIO().MousePos;
    const sweep::TuneCandidate* hovered = nullptr;
    for (const auto& c : cs) {
        if (!c.measured_speedup) continue;
        const ImVec2 p = at(c.extra_bytes, *c.measured_speedup);
        dl->AddCircleFilled(p, c.on_front ? 4.5f : 3.0f,
                            c.on_front ? IM_COL32(110, 210, 120, 255) : IM_COL32(150, 150, 150, 200));
        if (std::abs(mouse.x - p.x) < 5 && std::abs(mouse.y - p.y) < 5) hovered = &c;
    }
    ImGui::InvisibleButton("##front", ImVec2(w, h));
    if (hovered && ImGui::IsItemHovered())
        ImGui::SetTooltip("%s\n%.2fx measured (%d prompts)\ndraft's own weights %.2f MiB; it reads %.2f MiB a pass",
                          hovered->label.c_str(), *hovered->measured_speedup, hovered->prompts,
                          hovered->extra_bytes / (1 << 20), hovered->draft_bytes / (1 << 20));
    text_disabled_wrapped(
        "speedup (up) against the draft's own weights beyond the target's (right, log scale; 0 for early exit, "
        "layer skip and n-gram drafters); green: the Pareto front; the line is 1x");
}

void result_block(const sweep::TuneResult& r) {
    if (!r.winner) {
        warning_wrapped("Nothing was measured to the end: see each configuration's state below.");
        return;
    }
    if (r.confirmed && r.confirmed->speedup.n > 0) {
        text_wrapped("best: %.2fx [%.2f, %.2f] (median of %d A/B pairs, %.0f %% interval)", r.confirmed->speedup.median,
                     r.confirmed->speedup.lo, r.confirmed->speedup.hi, r.confirmed->speedup.n,
                     100 * r.confirmed->speedup.coverage);
        measured_tag();
    }
    for (const auto& s : r.waterfall.steps)
        text_wrapped("%s%s: %.2fx  (%s)", &s == &r.waterfall.steps.front() ? "" : "- ", s.name.c_str(), s.speedup,
                     s.detail.c_str());
    if (r.waterfall.oracle_width > 0) {
        text_wrapped("headroom: %.2fx with an always-right free drafter", r.waterfall.oracle_speedup);
        modeled_tag();
    }
    if (r.combined.speedup > 0) {
        text_wrapped("per-position best of the drafters tried: %.2f tokens a pass, %.2fx",
                     1 + r.combined.accepted_length, r.combined.speedup);
        modeled_tag();
    }
    text_disabled_wrapped("%zu measured, %zu from the store, %zu pruned by the model, %zu failed%s", r.measured,
                          r.cached, r.pruned, r.failed, r.budget_exhausted ? "; the budget ended the search" : "");
}

void candidate_table(const std::vector<sweep::TuneCandidate>& cs, UiActions& actions) {
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_Resizable |
                                  ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingStretchProp;
    if (!ImGui::BeginTable("tune_candidates", 5, flags, ImVec2(0, std::max(120.0f, ImGui::GetContentRegionAvail().y))))
        return;
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("configuration", ImGuiTableColumnFlags_WidthStretch, 3.0f);
    ImGui::TableSetupColumn("measured", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableSetupColumn("modeled", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableSetupColumn("state", ImGuiTableColumnFlags_WidthStretch, 2.5f);
    ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, button_width("apply"));
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < cs.size(); ++i) {
        const sweep::TuneCandidate& c = cs[i];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        text_wrapped("%s%s", c.on_front ? "* " : "", c.label.c_str());
        ImGui::TableNextColumn();
        if (c.measured_speedup)
            ImGui::Text("%.2fx (%d)", *c.measured_speedup, c.prompts);
        else
            ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        if (c.modeled_speedup)
            ImGui::Text("%.2fx", *c.modeled_speedup);
        else
            ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        text_wrapped("%s", c.state.c_str());
        ImGui::TableNextColumn();
        ImGui::PushID(int(i));
        if (ImGui::SmallButton("apply")) actions.push(ActionLoadResultConfig{c.config, c.label});
        ImGui::PopID();
    }
    ImGui::EndTable();
}

}  // namespace

void TunePanel::draw(const UiSnapshot& snap, UiActions& actions, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.3f, 0.12f), ImVec2(0.4f, 0.76f), fill)) return;
    const TuneView* t    = snap.tune.get();
    const bool running   = t && t->running;
    const bool has_input = snap.model && snap.dataset;
    ImGui::SetNextItemWidth(std::min(160.0f, ImGui::GetContentRegionAvail().x * 0.4f));
    ImGui::SliderInt("minutes", &m_minutes, 1, 60);
    same_line_if_fits(180);
    ImGui::SetNextItemWidth(std::min(120.0f, ImGui::GetContentRegionAvail().x * 0.4f));
    ImGui::SliderInt("prompts", &m_max_prompts, 2, 32);
    ImGui::Checkbox("drafts derived from the target", &m_self);
    help_marker(
        "Tune measures each drafter that applies to the open model once, models its other draft lengths from that "
        "measurement, prunes what cannot win, measures the rest with more prompts at each round, and confirms the "
        "best with repeated A/B runs. Early exit, layer skip, compact and MXFP4 drafts are derived from the target's "
        "weights; n-gram and suffix drafters need no model. Measurements are stored: running it again resumes.");
    same_line_if_fits(button_width("Tune"));
    if (!has_input || running) ImGui::BeginDisabled();
    if (ImGui::Button("Tune")) actions.push(ActionRunTune{60.0 * m_minutes, m_self, m_max_prompts});
    if (!has_input || running) ImGui::EndDisabled();
    if (!has_input) text_disabled_wrapped("Open a model and a dataset (Model and data) to tune on them.");
    if (!t) {
        empty_state("No tune yet: it finds how to draft for the open model on this machine, measured.");
        ImGui::End();
        return;
    }
    if (running)
        text_wrapped("running: %s (%zu measured so far; cancel in Jobs)", t->phase.c_str(), t->candidates.size());
    if (!t->error.empty()) warning_wrapped("stopped: %s", t->error.c_str());
    front_plot(t->candidates);
    if (t->result) result_block(*t->result);
    text_disabled_wrapped("measurements: %s", t->store_path.c_str());
    candidate_table(t->candidates, actions);
    ImGui::End();
}

}  // namespace speculum::ui

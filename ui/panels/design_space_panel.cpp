// Design-space panel: axis/metric pickers, a heatmap (click loads the cell's config) and a Pareto scatter.
#include "ui/panels/design_space_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace speculum::ui {

namespace {

template <class E, size_t N>
void pick(const char* label, E& value, const E (&options)[N], const char* (*name)(E), bool (*disabled)(E)) {
    if (ImGui::BeginCombo(label, name(value))) {
        for (E o : options) {
            bool off = disabled && disabled(o);
            if (off) ImGui::BeginDisabled();
            if (ImGui::Selectable(name(o), o == value)) value = o;
            if (off) {
                ImGui::EndDisabled();
                if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
                    ImGui::SetTooltip(
                        "Needs a measured sweep, and no model is open to measure on: no formula "
                        "predicts its acceptance. Open a model in Model and data.");
            }
        }
        ImGui::EndCombo();
    }
}

void heatmap(const SweepView& s, const AppConfig& current, UiActions& actions, float height) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (double v : s.values)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    ImVec2 size(ImGui::GetContentRegionAvail().x, height);
    ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("heatmap", size);
    bool hovered = ImGui::IsItemHovered(), clicked = ImGui::IsItemClicked();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    float left = 40, bottom = 16, right = 58;  // right: the colour scale
    float cw = (size.x - left - right) / float(s.xs.size()), ch = (size.y - bottom) / float(s.ys.size());
    ImVec2 mouse = ImGui::GetIO().MousePos;
    for (size_t iy = 0; iy < s.ys.size(); ++iy) {
        for (size_t ix = 0; ix < s.xs.size(); ++ix) {
            double v = s.at(ix, iy);
            double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
            ImVec2 a(p0.x + left + cw * float(ix), p0.y + ch * float(s.ys.size() - 1 - iy));
            ImVec2 b(a.x + cw - 1, a.y + ch - 1);
            dl->AddRectFilled(a, b, heat_color(std::isfinite(v) ? t : NAN));
            if (cw > 34 && ch > 14 && std::isfinite(v)) {
                char text[16];
                std::snprintf(text, sizeof text, "%.2f", v);
                dl->AddText(ImVec2(a.x + 3, a.y + (ch - 13) / 2), t > 0.6 ? IM_COL32_BLACK : IM_COL32_WHITE, text);
            }
            // The cell of the configuration in the editor: outlined.
            if (apply_axis(apply_axis(current, s.x, s.xs[ix]), s.y, s.ys[iy]) == current)
                dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), IM_COL32_WHITE, 0, 0, 2.5f);
            bool over = mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y;
            if (over && hovered) {
                ImGui::SetTooltip("%s = %g\n%s = %g\n%s = %.3f\nclick to load this configuration", sweep_axis_name(s.x),
                                  s.xs[ix], sweep_axis_name(s.y), s.ys[iy], sweep_metric_name(s.metric), v);
                if (clicked)
                    actions.push(ActionSetConfig{apply_axis(apply_axis(current, s.x, s.xs[ix]), s.y, s.ys[iy])});
            }
        }
    }
    for (size_t iy = 0; iy < s.ys.size(); iy += std::max<size_t>(1, s.ys.size() / 6)) {
        char text[16];
        std::snprintf(text, sizeof text, "%g", s.ys[iy]);
        dl->AddText(ImVec2(p0.x, p0.y + ch * float(s.ys.size() - 1 - iy) + (ch - 13) / 2), IM_COL32(170, 170, 170, 255),
                    text);
    }
    for (size_t ix = 0; ix < s.xs.size(); ix += std::max<size_t>(1, s.xs.size() / 8)) {
        char text[16];
        std::snprintf(text, sizeof text, "%g", s.xs[ix]);
        dl->AddText(ImVec2(p0.x + left + cw * float(ix) + 2, p0.y + size.y - 14), IM_COL32(170, 170, 170, 255), text);
    }
    // The colour scale: the metric's range, bottom (lowest) to top (highest), with its end values.
    if (hi >= lo) {
        const float x0 = p0.x + size.x - right + 8, x1 = x0 + 12, top = p0.y, h = size.y - bottom;
        constexpr int kSteps = 32;
        for (int k = 0; k < kSteps; ++k) {
            const float ya = top + h * float(k) / kSteps, yb = top + h * float(k + 1) / kSteps;
            dl->AddRectFilled(ImVec2(x0, ya), ImVec2(x1, yb), heat_color(1.0 - (k + 0.5) / kSteps));
        }
        char text[16];
        std::snprintf(text, sizeof text, "%.3g", hi);
        dl->AddText(ImVec2(x1 + 3, top), IM_COL32(170, 170, 170, 255), text);
        std::snprintf(text, sizeof text, "%.3g", lo);
        dl->AddText(ImVec2(x1 + 3, top + h - 14), IM_COL32(170, 170, 170, 255), text);
        // The readout: the metric's value at the colour under the mouse.
        if (hovered && mouse.x >= x0 - 2 && mouse.x <= x1 + 2 && mouse.y >= top && mouse.y <= top + h)
            ImGui::SetTooltip("%s = %.3f at this colour", sweep_metric_name(s.metric),
                              hi - (hi - lo) * double((mouse.y - top) / h));
    }
}

void pareto(const SweepView& s, float height) {
    std::vector<size_t> front = pareto_front(s);
    double wmax = 1e-9, vmax = 1e-9;
    for (size_t i = 0; i < s.values.size(); ++i)
        if (std::isfinite(s.values[i])) wmax = std::max(wmax, s.work[i]), vmax = std::max(vmax, s.values[i]);
    ImVec2 size(ImGui::GetContentRegionAvail().x, height);
    ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("pareto", size);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(p0, ImVec2(p0.x + size.x, p0.y + size.y), IM_COL32(25, 27, 32, 255));
    auto at = [&](size_t i) {
        return ImVec2(p0.x + 6 + float(s.work[i] / wmax) * (size.x - 12),
                      p0.y + size.y - 6 - float(s.values[i] / vmax) * (size.y - 12));
    };
    for (size_t i = 0; i < s.values.size(); ++i)
        if (std::isfinite(s.values[i])) dl->AddCircleFilled(at(i), 2.5f, IM_COL32(140, 140, 160, 200));
    std::sort(front.begin(), front.end(), [&](size_t a, size_t b) { return s.work[a] < s.work[b]; });
    for (size_t k = 0; k < front.size(); ++k) {
        dl->AddCircleFilled(at(front[k]), 4, IM_COL32(250, 210, 80, 255));
        if (k > 0) dl->AddLine(at(front[k - 1]), at(front[k]), IM_COL32(250, 210, 80, 255), 1.5f);
    }
    if (ImGui::IsItemHovered()) {  // the readout of the point nearest the mouse
        const ImVec2 mouse = ImGui::GetIO().MousePos;
        size_t best        = s.values.size();
        float best_d2      = 12.0f * 12.0f;
        for (size_t i = 0; i < s.values.size(); ++i) {
            if (!std::isfinite(s.values[i])) continue;
            const ImVec2 p = at(i);
            const float d2 = (p.x - mouse.x) * (p.x - mouse.x) + (p.y - mouse.y) * (p.y - mouse.y);
            if (d2 < best_d2) best = i, best_d2 = d2;
        }
        if (best < s.values.size()) {
            const size_t ix = best % s.xs.size(), iy = best / s.xs.size();
            const bool on_front = std::find(front.begin(), front.end(), best) != front.end();
            ImGui::SetTooltip("%s = %g, %s = %g\n%s = %.3f, draft work gamma*c = %.3f%s", sweep_axis_name(s.x),
                              s.xs[ix], sweep_axis_name(s.y), s.ys[iy], sweep_metric_name(s.metric), s.values[best],
                              s.work[best], on_front ? "\non the Pareto front" : "");
        }
    }
    text_disabled_wrapped("metric (up) vs draft work per pass gamma*c (right); the front in yellow");
}

}  // namespace

void DesignSpacePanel::draw(const UiSnapshot& snap, UiActions& actions, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.75f, 0.5f), ImVec2(0.25f, 0.5f), fill)) return;
    if (snap.store && m_store_seen.lock() != snap.store) m_source = Source::store, m_store_seen = snap.store;
    if (!snap.store) m_source = Source::modeled;
    if (snap.store) {  // the source row only once a store is open (the modeled view keeps its layout)
        int source = int(m_source);
        ImGui::RadioButton("Modeled sweep", &source, int(Source::modeled));
        ImGui::SameLine();
        ImGui::RadioButton("Results store", &source, int(Source::store));
        ImGui::SameLine();
        if (ImGui::SmallButton("Open results...")) actions.push(ActionOpenResultsDialog{});
        m_source = Source(source);
    }
    for (const auto& job : snap.jobs)
        if (job.name.rfind("Opening results", 0) == 0) {
            ImGui::ProgressBar(float(job.progress), ImVec2(-70, 0));
            ImGui::SameLine();
            if (ImGui::SmallButton("Cancel##results")) actions.push(ActionCancelJob{job.id});
        }
    if (m_source == Source::store && snap.store)
        m_store.draw(snap.store, snap.config, actions);
    else
        draw_modeled(snap, actions);
    ImGui::End();
}

void DesignSpacePanel::draw_modeled(const UiSnapshot& snap, UiActions& actions) {
    ImGui::PushItemWidth(ImGui::GetWindowWidth() * 0.45f);
    // Pruning and truncation change acceptance, which only a measurement shows: those axes run a measured sweep
    // (one engine run per cell on the job system) when a model is open to measure on.
    const bool can_measure   = snap.measuring_available && snap.model;
    bool (*needs)(SweepAxis) = can_measure ? nullptr : sweep_axis_needs_measurement;
    pick("x axis", m_x, kSweepAxes, sweep_axis_name, needs);
    pick("y axis", m_y, kSweepAxes, sweep_axis_name, needs);
    pick<SweepMetric>("metric", m_metric, kSweepMetrics, sweep_metric_name, nullptr);
    ImGui::PopItemWidth();
    const bool measured = sweep_axis_needs_measurement(m_x) || sweep_axis_needs_measurement(m_y);
    const bool runnable = m_x != m_y && (!measured || can_measure);
    if (!runnable) ImGui::BeginDisabled();
    if (ImGui::Button(measured ? "Run measured sweep" : "Run modeled sweep"))
        actions.push(ActionRunSweep{m_x, m_y, m_metric});
    if (!runnable) ImGui::EndDisabled();
    if (measured && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(
            "One measured run (engine and baseline) per cell: %zu cells. Cancel stops it; the cells "
            "measured so far stay.",
            sweep_axis_values(m_x).size() * sweep_axis_values(m_y).size());
    if (!snap.store) {
        ImGui::SameLine();
        if (ImGui::Button("Open results...")) actions.push(ActionOpenResultsDialog{});
    }
    for (const auto& job : snap.jobs)
        if (job.name.rfind("Sweeping", 0) == 0) {
            ImGui::SameLine();
            ImGui::ProgressBar(float(job.progress), ImVec2(-70, 0));
            ImGui::SameLine();
            if (ImGui::SmallButton("Cancel")) actions.push(ActionCancelJob{job.id});
        }
    if (!snap.sweep) {
        empty_state(
            "No sweep yet. Pick two axes and a metric, then run a sweep; click a cell to load its configuration. "
            "Or open the result store of a speculum-cli sweep (File > Open results...).");
        return;
    }
    const auto& s = *snap.sweep;
    ImGui::TextWrapped("%s over %s (x) and %s (y), %d/%zu rows", sweep_metric_name(s.metric), sweep_axis_name(s.x),
                       sweep_axis_name(s.y), s.rows_done, s.ys.size());
    if (s.source == "modeled") {
        modeled_tag();
        // Which α and c the cells used: the panels use the last run's, so a clicked cell's figure matches them.
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("cells use alpha %s, c %s%s",
                           s.alpha_source == "measured" ? "measured (last run)" : "assumed",
                           s.c_source == "measured" ? "measured (last run)" : "assumed",
                           s.alpha_source != "measured" && (s.x == SweepAxis::alpha || s.y == SweepAxis::alpha)
                               ? " (the alpha axis sets the assumption; the panels show it only without a run)"
                               : "");
        ImGui::PopStyleColor();
    } else {
        measured_tag();
    }
    float avail = ImGui::GetContentRegionAvail().y;
    heatmap(s, snap.config, actions, std::max(120.0f, avail * 0.62f));
    ImGui::TextUnformatted("Pareto front");
    pareto(s, std::max(60.0f, ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() - 4));
}

}  // namespace speculum::ui

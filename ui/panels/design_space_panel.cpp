// Design-space panel: the sweep's axis pickers and Run, then the store's heatmap and Pareto front.
#include "ui/panels/design_space_panel.h"

#include "ui/model/app_sweep.h"
#include "ui/widgets.h"

#include <imgui.h>

namespace speculum::ui {

namespace {

// Why an axis cannot be picked now ("" = it can).
const char* axis_unavailable(const AppSweepAxis& a, bool can_measure, bool measuring) {
    if (a.needs == AppSweepAxis::Needs::measurement && !can_measure)
        return "Needs a measured sweep (no formula predicts its effect on acceptance), and no model is open to "
               "measure on: open one in Model and data.";
    if (a.needs == AppSweepAxis::Needs::model && measuring)
        return "A modeled assumption: a measured sweep measures alpha and c instead. Untick \"measure every cell\" "
               "and pick no pruning or truncation axis.";
    return "";
}

void axis_combo(const char* label, std::string& key, bool can_measure, bool measuring) {
    const AppSweepAxis* current = find_app_sweep_axis(key);
    if (!ImGui::BeginCombo(label, current ? current->label : key.c_str())) return;
    for (const AppSweepAxis& a : app_sweep_axes()) {
        const char* why = axis_unavailable(a, can_measure, measuring);
        if (*why) ImGui::BeginDisabled();
        if (ImGui::Selectable(a.label, key == a.key)) key = a.key;
        if (*why) {
            ImGui::EndDisabled();
            if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", why);
        }
    }
    ImGui::EndCombo();
}

}  // namespace

void DesignSpacePanel::draw(const UiSnapshot& snap, UiActions& actions, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.75f, 0.5f), ImVec2(0.25f, 0.5f), fill)) return;
    draw_sweep_controls(snap, actions);
    for (const auto& job : snap.jobs)
        if (job.name.rfind("Opening results", 0) == 0 || job.name.rfind("Sweeping", 0) == 0) {
            ImGui::ProgressBar(float(job.progress), ImVec2(-80, 0));
            ImGui::SameLine();
            if (ImGui::SmallButton(("Cancel##" + std::to_string(job.id)).c_str()))
                actions.push(ActionCancelJob{job.id});
        }
    if (!snap.store) {
        empty_state(
            "No sweep yet. Pick two axes, then run a sweep; its cells are stored (a sweep run again resumes) and a "
            "click on a cell loads its configuration. Or open the result store of a speculum-cli sweep (File > Open "
            "results...).");
    } else {
        if (!snap.store->title.empty()) text_wrapped("%s", snap.store->title.c_str());
        m_store.draw(snap.store, snap.config, actions);
    }
    ImGui::End();
}

void DesignSpacePanel::draw_sweep_controls(const UiSnapshot& snap, UiActions& actions) {
    const bool can_measure = snap.measuring_available && snap.model;
    ActionRunSweep run{m_x, m_y, m_measure && can_measure};
    AppSweepRequest probe;
    probe.x = find_app_sweep_axis(m_x), probe.y = find_app_sweep_axis(m_y), probe.measure = run.measure;
    const bool measured = app_sweep_measured(probe);
    ImGui::PushItemWidth(ImGui::GetWindowWidth() * 0.45f);
    axis_combo("x axis", m_x, can_measure, measured);
    axis_combo("y axis", m_y, can_measure, measured);
    ImGui::PopItemWidth();
    if (!can_measure) ImGui::BeginDisabled();
    ImGui::Checkbox("measure every cell", &m_measure);
    if (!can_measure) ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(can_measure ? "One engine run with its baseline per cell, on the open model and dataset."
                                      : "Open a model in Model and data to measure cells.");
    const AppSweepAxis *x = probe.x, *y = probe.y;
    const char* why = "";
    if (!x || !y || x == y)
        why = "Pick two different axes.";
    else if (*axis_unavailable(*x, can_measure, measured))
        why = axis_unavailable(*x, can_measure, measured);
    else if (*axis_unavailable(*y, can_measure, measured))
        why = axis_unavailable(*y, can_measure, measured);
    if (*why) ImGui::BeginDisabled();
    if (ImGui::Button(measured ? "Run measured sweep" : "Run modeled sweep")) actions.push(run);
    if (*why) ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
        if (*why)
            ImGui::SetTooltip("%s", why);
        else
            ImGui::SetTooltip(
                "%zu cells, %s. Stored: Cancel keeps the cells done, and running the same sweep again "
                "resumes.",
                x->values.size() * y->values.size(),
                measured ? "one engine run and its baseline each" : "modeled (the analytic model)");
    }
    ImGui::SameLine();
    if (ImGui::Button("Open results...")) actions.push(ActionOpenResultsDialog{});
    same_line_if_fits(button_width("Tune..."));
    if (ImGui::Button("Tune...")) actions.push(ActionShowPanel{"Tune"});
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Search drafters, draft lengths, trees and cascades for the open model, measured (Tune)");
}

}  // namespace speculum::ui

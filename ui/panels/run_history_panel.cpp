// Run history panel: a table of finished measured runs; pinned runs first, with their configuration differences.
#include "ui/panels/run_history_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace speculum::ui {

namespace {

// Every leaf of a JSON value as pointer -> value text.
void leaves(const nlohmann::json& j, const std::string& at, std::map<std::string, std::string>& out) {
    if (j.is_object() && !j.empty()) {
        for (const auto& [k, v] : j.items()) leaves(v, at + "/" + k, out);
    } else if (j.is_array() && !j.empty() && (j[0].is_object() || j[0].is_array())) {
        for (size_t i = 0; i < j.size(); ++i) leaves(j[i], at + "/" + std::to_string(i), out);
    } else {
        out[at.empty() ? "/" : at] = j.dump();
    }
}

}  // namespace

std::vector<std::string> pinned_differences(const std::vector<RunRecord>& history) {
    std::vector<std::map<std::string, std::string>> runs;
    for (const RunRecord& r : history)
        if (r.pinned) {
            runs.emplace_back();
            leaves(nlohmann::json(r.config), "", runs.back());
        }
    if (runs.size() < 2) return {};
    std::set<std::string> keys;
    for (const auto& m : runs)
        for (const auto& [k, v] : m) keys.insert(k);
    std::vector<std::string> out;
    for (const std::string& k : keys) {
        std::vector<std::string> values;
        for (const auto& m : runs) {
            auto it = m.find(k);
            values.push_back(it == m.end() ? "(none)" : it->second);
        }
        if (std::all_of(values.begin(), values.end(), [&](const std::string& v) { return v == values[0]; })) continue;
        std::string line = k + ":";
        for (size_t i = 0; i < values.size(); ++i) line += (i ? " | " : " ") + values[i];
        out.push_back(line);
    }
    return out;
}

void RunHistoryPanel::draw(const UiSnapshot& snap, UiActions& actions, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.25f, 0.5f), ImVec2(0.5f, 0.5f), fill)) return;
    if (snap.history.empty()) {
        empty_state(
            "No measured run has finished yet. Every finished run is listed here; pin runs to keep them "
            "and compare them side by side.");
        ImGui::End();
        return;
    }
    const std::vector<std::string> diff = pinned_differences(snap.history);
    if (!diff.empty()) {
        ImGui::TextWrapped("pinned runs differ in (in the table's order):");
        for (const std::string& d : diff) ImGui::BulletText("%s", d.c_str());
    } else {
        text_disabled_wrapped("Pin two or more runs to see what their configurations differ in.");
    }
    if (ImGui::SmallButton("Clear unpinned")) actions.push(ActionClearHistory{});
    ImGui::SameLine();
    help_marker(
        "Speedup is the median of the A/B pairs (each prompt's speculative run and its baseline back to back) "
        "with its 95 % interval (hover a cell with fewer than 6 pairs for its true coverage); one pair shows a "
        "single figure.");

    // Pinned first (oldest first, the order of the differences above), then the rest newest first.
    std::vector<const RunRecord*> rows;
    for (const RunRecord& r : snap.history)
        if (r.pinned) rows.push_back(&r);
    for (auto it = snap.history.rbegin(); it != snap.history.rend(); ++it)
        if (!it->pinned) rows.push_back(&*it);

    const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                                  ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit;
    if (ImGui::BeginTable("runs", 10, flags)) {
        ImGui::TableSetupScrollFreeze(0, 1);
        for (const char* h :
             {"pin", "#", "time", "draft", "gamma", "speedup [interval]", "tokens/s", "c", "tokens/pass", "prompts"})
            ImGui::TableSetupColumn(h);
        ImGui::TableHeadersRow();
        for (const RunRecord* r : rows) {
            const MeasuredView& v            = r->view;
            const session::RepeatSummary& rs = v.repeats;
            ImGui::TableNextRow();
            ImGui::PushID(r->id);
            ImGui::TableNextColumn();
            bool pinned = r->pinned;
            if (ImGui::Checkbox("##pin", &pinned)) actions.push(ActionPinRun{r->id, pinned});
            ImGui::TableNextColumn();
            ImGui::Text("%d", r->id);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(r->when.c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(describe_draft(r->config.draft()).c_str());
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", nlohmann::json(r->config.spec).dump(2).c_str());
            ImGui::TableNextColumn();
            ImGui::Text("%d", r->config.gamma());
            ImGui::TableNextColumn();
            if (rs.speedup.n > 1) {
                ImGui::Text("%.2fx [%.2f, %.2f]%s", rs.speedup.median, rs.speedup.lo, rs.speedup.hi,
                            rs.speedup.coverage < 0.95 ? "*" : "");
                if (ImGui::IsItemHovered())
                    ImGui::SetTooltip("%s", interval_text(rs.speedup.coverage, rs.speedup.n).c_str());
            } else
                ImGui::Text("%.2fx", v.stats.speedup);
            if (rs.loaded()) {
                ImGui::SameLine();
                ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1), "(loaded)");
                if (ImGui::IsItemHovered())
                    ImGui::SetTooltip("other processes used %.0f %% of the CPU", 100.0 * *rs.other_load);
            }
            ImGui::TableNextColumn();
            ImGui::Text("%.1f", rs.tokens_per_s.n > 1 ? rs.tokens_per_s.median : v.stats.tokens_per_s);
            ImGui::TableNextColumn();
            ImGui::Text("%.3f", rs.cost_ratio.n > 1 ? rs.cost_ratio.median : v.stats.draft_cost_ratio());
            ImGui::TableNextColumn();
            ImGui::Text("%.2f", v.stats.mean_accepted_length());
            ImGui::TableNextColumn();
            ImGui::Text("%d", int(v.prompts.size()));
            ImGui::SameLine();
            if (ImGui::SmallButton("load")) actions.push(ActionSetConfig{r->config});
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("Load this run's configuration into the editor");
            ImGui::PopID();
        }
        ImGui::EndTable();
    }
    ImGui::End();
}

}  // namespace speculum::ui

// Run history panel: a table of finished measured runs; pinned runs first, with their configuration differences.
#include "ui/panels/run_history_panel.h"

#include "ui/model/run_compare.h"
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

ImU32 run_color(size_t i) {
    static const ImU32 colors[] = {IM_COL32(110, 190, 255, 255), IM_COL32(255, 170, 80, 255),
                                   IM_COL32(120, 220, 130, 255), IM_COL32(230, 110, 200, 255),
                                   IM_COL32(240, 230, 110, 255), IM_COL32(170, 150, 255, 255)};
    return colors[i % (sizeof colors / sizeof colors[0])];
}

// The pinned runs as pictures: acceptance per position (a line each, measured alpha_i) and the speedup with its
// interval (a bar each, the whiskers the interval), in one color per run.
void overlay(const std::vector<const RunRecord*>& runs) {
    size_t positions = 0;
    double top       = 1.0;
    for (const RunRecord* r : runs) {
        positions                        = std::max(positions, r->view.stats.alpha().size());
        const session::RepeatSummary& rs = r->view.repeats;
        top                              = std::max(top, rs.speedup.n > 1 ? rs.speedup.hi : r->view.stats.speedup);
    }
    const float w = std::max(160.0f, ImGui::GetContentRegionAvail().x), h = 110;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImGui::TextUnformatted("acceptance per position (measured alpha_i):");
    ImVec2 o = ImGui::GetCursorScreenPos();
    dl->AddRect(o, ImVec2(o.x + w, o.y + h), IM_COL32(120, 120, 120, 160));
    auto at = [&](size_t i, double a) {
        const float x = positions > 1 ? float(i) / float(positions - 1) : 0.5f;
        return ImVec2(o.x + 8 + x * (w - 16), o.y + h - 6 - float(a) * (h - 12));
    };
    for (size_t k = 0; k < runs.size(); ++k) {
        const std::vector<double> a = runs[k]->view.stats.alpha();
        for (size_t i = 0; i < a.size(); ++i) {
            dl->AddCircleFilled(at(i, a[i]), 3.0f, run_color(k));
            if (i > 0) dl->AddLine(at(i - 1, a[i - 1]), at(i, a[i]), run_color(k), 2.0f);
        }
    }
    ImGui::Dummy(ImVec2(w, h));
    probe_item("history_overlay");
    text_disabled_wrapped("positions 1 to %zu left to right; 0 at the bottom, 1 at the top", positions);
    ImGui::TextUnformatted("speedup (measured median and interval):");
    const float row = ImGui::GetTextLineHeightWithSpacing(), label_w = std::min(w * 0.45f, 220.0f);
    o         = ImGui::GetCursorScreenPos();
    auto x_of = [&](double s) { return o.x + label_w + float(s / (top * 1.05)) * (w - label_w - 8); };
    for (size_t k = 0; k < runs.size(); ++k) {
        const RunRecord& r               = *runs[k];
        const session::RepeatSummary& rs = r.view.repeats;
        const float y                    = o.y + float(k) * row + row * 0.5f;
        ImGui::SetCursorScreenPos(ImVec2(o.x, o.y + float(k) * row));
        std::string label = std::to_string(r.id);  // "#3 small draft" (built in steps: GCC 12 warns on "#" + ...)
        label.insert(0, 1, '#');
        label += ' ';
        label += describe_draft(r.config.draft());
        ImGui::PushClipRect(ImVec2(o.x, o.y), ImVec2(o.x + label_w - 4, o.y + 1e4f), true);
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(run_color(k)), "%s", label.c_str());
        ImGui::PopClipRect();
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", label.c_str());
        dl->AddRectFilled(ImVec2(x_of(0), y - row * 0.3f), ImVec2(x_of(r.view.speedup()), y + row * 0.3f),
                          run_color(k));
        if (rs.speedup.n > 1) {
            dl->AddLine(ImVec2(x_of(rs.speedup.lo), y), ImVec2(x_of(rs.speedup.hi), y), IM_COL32(255, 255, 255, 220),
                        1.5f);
            for (double e : {rs.speedup.lo, rs.speedup.hi})
                dl->AddLine(ImVec2(x_of(e), y - row * 0.35f), ImVec2(x_of(e), y + row * 0.35f),
                            IM_COL32(255, 255, 255, 220), 1.5f);
        }
    }
    const float x1 = x_of(1.0);  // no speedup
    dl->AddLine(ImVec2(x1, o.y), ImVec2(x1, o.y + float(runs.size()) * row), IM_COL32(200, 200, 200, 120));
    ImGui::SetCursorScreenPos(ImVec2(o.x, o.y + float(runs.size()) * row));
    ImGui::Dummy(ImVec2(w, 2));
    text_disabled_wrapped(
        "the line is 1x; bars the median, whiskers its interval (hover a run in the table for its "
        "coverage)");
}

// Each prompt of a run: its task, speedup and acceptance (the first pass), from the run's report.
void prompt_table(const RunRecord& r) {
    const std::vector<PromptRow> rows = prompt_rows(r);
    if (rows.empty()) {
        text_disabled_wrapped("run #%d has no per-prompt figures (it did not finish)", r.id);
        return;
    }
    const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;
    if (!ImGui::BeginTable(("prompts" + std::to_string(r.id)).c_str(), 5, flags)) return;
    for (const char* h : {"prompt", "task", "speedup", "tokens/pass", "accepted"}) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (const PromptRow& p : rows) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        text_wrapped("%s", p.id.c_str());
        ImGui::TableNextColumn();
        text_wrapped("%s", p.task.c_str());
        ImGui::TableNextColumn();
        if (p.speedup > 0)
            ImGui::Text("%.2fx", p.speedup);
        else
            ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        ImGui::Text("%.2f", p.tokens_per_pass);
        ImGui::TableNextColumn();
        if (p.drafted > 0)
            ImGui::Text("%.0f %%", 100 * p.acceptance);
        else
            ImGui::TextDisabled("none drafted");
    }
    ImGui::EndTable();
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
    std::vector<const RunRecord*> pinned;
    for (const RunRecord& r : snap.history)
        if (r.pinned) pinned.push_back(&r);
    if (!diff.empty()) {
        text_wrapped("pinned runs differ in (in the table's order):");
        for (const std::string& d : diff) ImGui::BulletText("%s", d.c_str());
    } else {
        text_disabled_wrapped(
            "Pin two or more runs to compare them: what their configurations differ in, their "
            "acceptance and speedup overlaid, and their prompts.");
    }
    if (pinned.size() >= 2 && ImGui::CollapsingHeader("Pinned runs compared", ImGuiTreeNodeFlags_DefaultOpen)) {
        overlay(pinned);
        measured_tag();
    }
    if (ImGui::CollapsingHeader("Per prompt")) {
        // The pinned runs, else the newest.
        std::vector<const RunRecord*> shown = pinned;
        if (shown.empty()) shown.push_back(&snap.history.back());
        for (const RunRecord* r : shown) {
            ImGui::TextUnformatted(
                ("run #" + std::to_string(r->id) + ": " + describe_draft(r->config.draft())).c_str());
            prompt_table(*r);
        }
    }
    if (ImGui::SmallButton("Export CSV...")) actions.push(ActionShowPanel{"Export"});
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("The Export panel writes the history as CSV (Run history, and Run history per prompt)");
    ImGui::SameLine();
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

    // Columns keep the width of their contents; a panel narrower than the table scrolls it sideways.
    const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                                  ImGuiTableFlags_ScrollX | ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit;
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
            if (r == rows[0]) probe_item("history_pin_0");  // the first two rows' boxes, for the GUI test
            if (rows.size() > 1 && r == rows[1]) probe_item("history_pin_1");
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

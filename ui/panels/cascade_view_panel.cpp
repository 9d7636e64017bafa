// Cascade view panel: target and draft levels as boxes (cost ratio, acceptance, steps), the cascade's modeled
// EWIF, and a strip showing which model drafts each position of a horizontal split.
#include "ui/panels/cascade_view_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>

namespace speculum::ui {

namespace {

void level_box(ImDrawList* dl, ImVec2 a, ImVec2 b, int level, const char* line1, const char* line2) {
    dl->AddRectFilled(a, b, level_color(level, 0.25f), 6);
    dl->AddRect(a, b, level_color(level), 6, 0, 2);
    dl->AddText(ImVec2(a.x + 8, a.y + 6), IM_COL32_WHITE, line1);
    dl->AddText(ImVec2(a.x + 8, a.y + 24), IM_COL32(200, 200, 200, 255), line2);
}

}  // namespace

bool cascade_level_measured(const UiSnapshot& snap, size_t i) {
    const AppConfig& cfg = snap.config;
    if (!snap.measured || !snap.measured_config || i >= cfg.spec.levels.size()) return false;
    const engine::RunStats& m = snap.measured->stats;
    // The run measured this very drafter at this level (after a kind change the last run is another drafter's).
    const std::vector<drafts::DraftSpec>& ran = snap.measured_config->spec.levels;
    return ran.size() == cfg.spec.levels.size() && ran[i] == cfg.spec.levels[i] &&
           m.levels.size() == cfg.spec.levels.size() + 1 && m.levels[i].n_reviewed > 0 &&
           m.levels[i + 1].cost_ratio > 0;
}

void CascadeViewPanel::draw(const UiSnapshot& snap, UiActions&, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.5f, 0.67f), ImVec2(0.25f, 0.33f), fill)) return;
    const auto& cfg = snap.config;
    const auto& o   = snap.modeled.output;
    const size_t n  = std::min(cfg.spec.levels.size(), cfg.modeled.levels.size());
    ImGui::Text("%zu draft level%s", n, n == 1 ? "" : "s");
    if (o.kmatrix)
        text_wrapped(
            "cascade, as the engine runs it (truncate lengths): %.2f tokens per target pass, cost %.2f target "
            "calls, EWIF %.2f",
            o.kmatrix->expected_tokens, o.kmatrix->cost, o.kmatrix->ewif);
    if (o.cascade)
        text_wrapped("cascade, Thm. 4.3 (each level runs a fixed number of steps): %.2f tokens, cost %.2f, EWIF %.2f",
                     o.cascade->expected_tokens, o.cascade->cost, o.cascade->ewif);
    else
        text_wrapped("single draft: %.2f tokens per target pass, EWIF %.2f", o.expected_tokens, o.ewif);
    modeled_tag();

    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImVec2 p0      = ImGui::GetCursorScreenPos();
    float w = ImGui::GetContentRegionAvail().x - 10, box_h = 44, gap = 18;
    char l1[96], l2[128];
    level_box(dl, p0, ImVec2(p0.x + w, p0.y + box_h), 0, "target (level 0)", "verifies; c = 1 by definition");
    float y = p0.y + box_h + gap;
    for (size_t i = 0; i < n; ++i) {
        const LevelAssumption& a = cfg.modeled.levels[i];
        std::snprintf(l1, sizeof l1, "level %zu: %s", i + 1, describe_draft(cfg.spec.levels[i]).c_str());
        // Once a run of these levels has finished: the level's measured c and the share of its tokens the level
        // above accepted (that level's review counts); else the assumed figures.
        const engine::RunStats* m = snap.measured ? &snap.measured->stats : nullptr;
        const bool has_measured   = cascade_level_measured(snap, i);
        if (has_measured)
            std::snprintf(l2, sizeof l2, "measured: c %.3f, acceptance %.0f %%; %s %d", m->levels[i + 1].cost_ratio,
                          100.0 * double(m->levels[i].n_review_accepted) / double(m->levels[i].n_reviewed),
                          i + 1 == n ? "tokens" : "steps", cfg.spec.draft_length(int32_t(i)));
        else
            std::snprintf(l2, sizeof l2, "%s c %.3f, alpha %.2f, %s %d",
                          i == 0 && snap.head_cost && snap.head_cost->error.empty() && snap.head_cost->c == a.c
                              ? "modeled (head file)"
                              : "assumed",
                          a.c, a.alpha, i + 1 == n ? "tokens" : "steps", cfg.spec.draft_length(int32_t(i)));
        dl->AddLine(ImVec2(p0.x + w / 2, y - gap), ImVec2(p0.x + w / 2, y), IM_COL32(200, 200, 200, 255), 2);
        level_box(dl, ImVec2(p0.x, y), ImVec2(p0.x + w, y + box_h), int(i) + 1, l1, l2);
        y += box_h + gap;
    }
    y -= box_h + gap;
    ImGui::Dummy(ImVec2(w, y + box_h - p0.y + 6));

    if (cfg.modeled.horizontal.empty()) {
        empty_state(
            "No horizontal split: every draft position comes from level 1. Add segments in Configuration > Cascade.");
    } else {
        text_wrapped("horizontal split: EWIF %.2f", o.horizontal_ewif.value_or(0.0));
        modeled_tag();
        int total = 0;
        for (const auto& s : cfg.modeled.horizontal) total += s.count;
        ImVec2 q   = ImGui::GetCursorScreenPos();
        float cell = w / float(std::max(1, total));
        int pos    = 0;
        for (size_t i = 0; i < cfg.modeled.horizontal.size(); ++i)
            for (int k = 0; k < cfg.modeled.horizontal[i].count; ++k, ++pos) {
                ImVec2 a(q.x + cell * float(pos), q.y), b(a.x + cell - 2, q.y + 22);
                dl->AddRectFilled(a, b, level_color(int(i) + 1, 0.8f), 3);
                char t[16];
                std::snprintf(t, sizeof t, "%d", pos + 1);
                dl->AddText(ImVec2(a.x + 3, a.y + 4), IM_COL32_BLACK, t);
            }
        ImGui::Dummy(ImVec2(w, 26));
        for (size_t i = 0; i < cfg.modeled.horizontal.size(); ++i)
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(level_color(int(i) + 1)),
                               "segment %zu: alpha %.2f, c %.3f, %d positions", i + 1, cfg.modeled.horizontal[i].alpha,
                               cfg.modeled.horizontal[i].c, cfg.modeled.horizontal[i].count);
    }
    ImGui::End();
}

}  // namespace speculum::ui

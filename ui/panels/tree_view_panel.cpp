// Tree view panel: depth left to right, leaves top to bottom; node colour and label = modeled P(on accepted path).
#include "ui/panels/tree_view_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <functional>

namespace speculum::ui {

void TreeViewPanel::draw(const UiSnapshot& snap, UiActions&, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.5f, 0.34f), ImVec2(0.25f, 0.33f), fill)) return;
    const auto& m = snap.modeled;
    if (!m.error.empty() || m.tree.parent.empty()) {
        empty_state(m.error.empty() ? "No tree to draw." : m.error.c_str());
        ImGui::End();
        return;
    }
    text_wrapped("%s: %zu nodes, depth %d, E[accepted length] %.2f", tree_mode_name(tree_mode(snap.config)),
                 m.tree.parent.size(), m.tree_depth, m.tree_expected_length);
    modeled_tag();
    const auto& parent = m.tree.parent;
    size_t n           = parent.size();
    std::vector<std::vector<int>> children(n);
    for (size_t i = 1; i < n; ++i) children[size_t(parent[i])].push_back(int(i));
    std::vector<float> row(n, 0);
    std::vector<int> depth(n, 0);
    float next_leaf = 0;
    // Leaves get consecutive rows; a parent sits at the mean of its children's rows.
    std::function<void(int)> place = [&](int v) {
        if (children[size_t(v)].empty()) {
            row[size_t(v)] = next_leaf++;
            return;
        }
        float sum = 0;
        for (int c : children[size_t(v)]) {
            depth[size_t(c)] = depth[size_t(v)] + 1;
            place(c);
            sum += row[size_t(c)];
        }
        row[size_t(v)] = sum / float(children[size_t(v)].size());
    };
    place(0);
    ImVec2 size(ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y);
    ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("tree", ImVec2(std::max(size.x, 10.0f), std::max(size.y, 10.0f)));
    bool hovered   = ImGui::IsItemHovered();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    float dx = (size.x - 40) / float(std::max(1, m.tree_depth)), dy = (size.y - 20) / std::max(1.0f, next_leaf);
    auto pos = [&](size_t v) {
        return ImVec2(p0.x + 20 + dx * float(depth[v]), p0.y + 10 + dy * (row[v] + 0.5f) - dy * 0.5f + 6);
    };
    for (size_t i = 1; i < n; ++i) dl->AddLine(pos(size_t(parent[i])), pos(i), IM_COL32(120, 120, 130, 255), 1.5f);
    float radius = std::clamp(std::min(dx, dy) * 0.3f, 3.0f, 12.0f);
    ImVec2 mouse = ImGui::GetIO().MousePos;
    for (size_t i = 0; i < n; ++i) {
        double p = i < m.node_acceptance.size() ? m.node_acceptance[i] : 0.0;
        ImVec2 c = pos(i);
        dl->AddCircleFilled(c, radius, heat_color(p));
        char text[16];
        std::snprintf(text, sizeof text, "%.0f", p * 100);
        const ImVec2 ts = ImGui::CalcTextSize(text);
        if (ts.x <= 2 * radius - 2)  // centred in its circle, or left to the tooltip when it does not fit
            dl->AddText(ImVec2(c.x - ts.x / 2, c.y - ts.y / 2), p > 0.6 ? IM_COL32_BLACK : IM_COL32_WHITE, text);
        float ddx = mouse.x - c.x, ddy = mouse.y - c.y;
        if (hovered && ddx * ddx + ddy * ddy <= radius * radius)
            ImGui::SetTooltip("node %zu, depth %d\nP(on the accepted path) = %.3f (modeled)", i, depth[i], p);
    }
    ImGui::End();
}

}  // namespace speculum::ui

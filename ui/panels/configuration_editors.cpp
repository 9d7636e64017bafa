// Tree and cascade editors for the Configuration panel.
#include "ui/panels/configuration_editors.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <string>

namespace speculum::ui {

bool edit_tree(TreeConfig& tree) {
    bool changed        = false;
    int mode            = int(tree.mode);
    const char* modes[] = {tree_mode_name(TreeMode::chain), tree_mode_name(TreeMode::branching),
                           tree_mode_name(TreeMode::budget), tree_mode_name(TreeMode::optimal_measured)};
    if (ImGui::Combo("tree shape", &mode, modes, IM_ARRAYSIZE(modes))) {
        tree.mode = TreeMode(mode);
        changed   = true;
    }
    if (tree.mode == TreeMode::branching) {
        ImGui::TextUnformatted("children per node, by depth:");
        for (size_t d = 0; d < tree.branching.size(); ++d) {
            ImGui::PushID(int(d));
            std::string label = "depth " + std::to_string(d + 1);
            changed |= ImGui::SliderInt(label.c_str(), &tree.branching[d], 1, 8);
            ImGui::PopID();
        }
        if (tree.branching.size() < 12 && ImGui::Button("+ depth")) {
            tree.branching.push_back(1);
            changed = true;
        }
        ImGui::SameLine();
        if (tree.branching.size() > 1 && ImGui::Button("- depth")) {
            tree.branching.pop_back();
            changed = true;
        }
    } else if (tree.mode != TreeMode::chain) {
        changed |= ImGui::SliderInt("node budget", &tree.budget, 1, 128);
        changed |= ImGui::SliderInt("max depth", &tree.max_depth, 1, 16);
        if (tree.mode == TreeMode::optimal_measured)
            help_marker(
                "Sequoia's best tree for the measured acceptance by rank; until a tree run has been "
                "measured, the assumed rank acceptance below is used.");
    }
    if (tree.mode != TreeMode::chain) {
        ImGui::TextUnformatted("assumed acceptance by sibling rank:");
        modeled_tag();
        for (size_t r = 0; r < tree.rank_acceptance.size(); ++r) {
            ImGui::PushID(int(100 + r));
            float p           = float(tree.rank_acceptance[r]);
            std::string label = "rank " + std::to_string(r);
            if (ImGui::SliderFloat(label.c_str(), &p, 0.0f, 1.0f, "%.2f")) {
                tree.rank_acceptance[r] = p;
                changed                 = true;
            }
            ImGui::PopID();
        }
        if (tree.rank_acceptance.size() < 8 && ImGui::Button("+ rank")) {
            tree.rank_acceptance.push_back(0.0);
            changed = true;
        }
        ImGui::SameLine();
        if (tree.rank_acceptance.size() > 1 && ImGui::Button("- rank")) {
            tree.rank_acceptance.pop_back();
            changed = true;
        }
    }
    return changed;
}

bool edit_cascade(AppConfig& cfg) {
    bool changed = false;
    ImGui::TextDisabled("level 1: the draft above (alpha %.2f, c %.3f, %d tokens)", cfg.alpha, cfg.cost_ratio,
                        cfg.gamma);
    const char* kinds[] = {draft_kind_name(drafts::DraftKind::self), draft_kind_name(drafts::DraftKind::model),
                           draft_kind_name(drafts::DraftKind::maxgram)};
    for (size_t i = 0; i < cfg.cascade.size(); ++i) {
        auto& l = cfg.cascade[i];
        ImGui::PushID(int(i));
        ImGui::Separator();
        ImGui::Text("level %zu drafts for level %zu", i + 2, i + 1);
        ImGui::SameLine();
        if (ImGui::SmallButton("remove")) {
            cfg.cascade.erase(cfg.cascade.begin() + long(i));
            ImGui::PopID();
            return true;
        }
        int kind = int(l.drafter);
        if (ImGui::Combo("drafter", &kind, kinds, IM_ARRAYSIZE(kinds))) {
            l.drafter = drafts::DraftKind(kind);
            if (l.drafter == drafts::DraftKind::maxgram) l.c = 0.0;  // statistical: no forward pass
            changed = true;
        }
        float a = float(l.alpha), c = float(l.c);
        if (ImGui::SliderFloat("alpha", &a, 0.05f, 0.99f, "%.2f")) l.alpha = a, changed = true;
        if (ImGui::SliderFloat("c", &c, 0.0f, 1.0f, "%.3f")) l.c = c, changed = true;
        changed |= ImGui::SliderInt("steps", &l.steps, 1, 16);
        ImGui::PopID();
    }
    if (cfg.cascade.size() < 4 && ImGui::Button("Add level")) {
        CascadeLevelConfig l;
        l.drafter = drafts::DraftKind::maxgram;
        l.alpha   = 0.5;
        l.c       = 0.0;
        l.steps   = 10;
        cfg.cascade.push_back(l);
        changed = true;
    }
    ImGui::Separator();
    ImGui::TextUnformatted("horizontal split of the draft positions:");
    for (size_t i = 0; i < cfg.horizontal.size(); ++i) {
        auto& s = cfg.horizontal[i];
        ImGui::PushID(int(1000 + i));
        ImGui::Text("segment %zu", i + 1);
        ImGui::SameLine();
        if (ImGui::SmallButton("remove")) {
            cfg.horizontal.erase(cfg.horizontal.begin() + long(i));
            ImGui::PopID();
            return true;
        }
        float a = float(s.alpha), c = float(s.c);
        if (ImGui::SliderFloat("alpha", &a, 0.05f, 0.99f, "%.2f")) s.alpha = a, changed = true;
        if (ImGui::SliderFloat("c", &c, 0.0f, 1.0f, "%.3f")) s.c = c, changed = true;
        changed |= ImGui::SliderInt("positions", &s.count, 1, 16);
        ImGui::PopID();
    }
    if (cfg.horizontal.size() < 4 && ImGui::Button("Add segment")) {
        cfg.horizontal.push_back(
            {cfg.horizontal.empty() ? cfg.alpha : 0.6, cfg.horizontal.empty() ? cfg.cost_ratio : 0.01, 2});
        changed = true;
    }
    return changed;
}

}  // namespace speculum::ui

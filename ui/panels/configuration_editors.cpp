// Tree and cascade editors for the Configuration panel.
#include "ui/panels/configuration_editors.h"

#include "ui/widgets.h"

#include <imgui.h>

#include <string>

namespace speculum::ui {

bool edit_tree(AppConfig& cfg) {
    engine::TreeConfig& tree = cfg.spec.tree;
    bool changed             = false;
    const TreeMode current   = tree_mode(cfg);
    if (current == TreeMode::cats) {
        text_wrapped(
            "CATS: the target's first layers draft, a shallow verifier corrects (loaded from a configuration).");
        if (ImGui::Button("Use a chain instead")) {
            set_tree_mode(cfg, TreeMode::chain);
            return true;
        }
        return false;
    }
    constexpr TreeMode kModes[] = {TreeMode::chain,  TreeMode::branching,        TreeMode::top_k,
                                   TreeMode::budget, TreeMode::optimal_measured, TreeMode::chain_second,
                                   TreeMode::dynamic};
    const char* names[std::size(kModes)];
    int mode = 0;
    for (size_t i = 0; i < std::size(kModes); ++i) {
        names[i] = tree_mode_name(kModes[i]);
        if (kModes[i] == current) mode = int(i);
    }
    // A tree verifies one draft level: with cascade levels below level 1 only the chain is offered.
    const bool cascade = cfg.spec.levels.size() > 1;
    if (cascade && current == TreeMode::chain) {
        text_disabled_wrapped("chain (a verification tree takes one draft level: remove the cascade levels first)");
    } else if (ImGui::Combo("tree shape", &mode, names, int(std::size(kModes)))) {
        set_tree_mode(cfg, kModes[mode]);
        changed = true;
    }
    const TreeMode m = tree_mode(cfg);
    if (m == TreeMode::branching) {
        text_wrapped("children per node, by depth:");
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
    } else if (m == TreeMode::top_k) {
        changed |= ImGui::SliderInt("children per node", &tree.top_k, 1, 8);
        changed |= ImGui::SliderInt("depth", &tree.depth, 1, 12);
    } else if (m == TreeMode::budget || m == TreeMode::optimal_measured) {
        changed |= ImGui::SliderInt("draft nodes", &tree.node_budget, 1, 127);
        help_marker("Draft nodes in the tree, the root (the last accepted token) not counted.");
        changed |= ImGui::SliderInt("max depth", &tree.max_depth, 1, 16);
        if (m == TreeMode::optimal_measured)
            help_marker(
                "Sequoia's best tree for the measured acceptance by rank; until a tree run has been "
                "measured, the rank acceptance below is used.");
    } else if (m == TreeMode::chain_second) {
        text_wrapped("The chain of gamma tokens, each with the draft's second choice as an extra leaf.");
    } else if (m == TreeMode::dynamic) {
        changed |= ImGui::SliderInt("expanded per depth", &tree.top_k, 1, 8);
        help_marker(
            "EAGLE-2: at every depth the most probable nodes (by the product of the draft's probabilities "
            "along their path) are expanded, each with this many children.");
        changed |= ImGui::SliderInt("depth", &tree.depth, 1, 12);
        changed |= ImGui::SliderInt("draft nodes", &tree.node_budget, 1, 127);
        help_marker(
            "The most probable draft nodes kept for verification, the root not counted. Drafters without "
            "probabilities (n-gram, Max-Gram) verify the first nodes of the top-k tree breadth-first.");
    }
    if (m != TreeMode::chain) {
        text_wrapped("acceptance by sibling rank (Sequoia's prior):");
        modeled_tag();
        for (size_t r = 0; r < tree.prior.size(); ++r) {
            ImGui::PushID(int(100 + r));
            float p           = float(tree.prior[r]);
            std::string label = "rank " + std::to_string(r);
            if (ImGui::SliderFloat(label.c_str(), &p, 0.0f, 1.0f, "%.2f")) {
                tree.prior[r] = p;
                changed       = true;
            }
            ImGui::PopID();
        }
        if (tree.prior.size() < 8 && ImGui::Button("+ rank")) {
            tree.prior.push_back(0.0);
            changed = true;
        }
        ImGui::SameLine();
        if (tree.prior.size() > 1 && ImGui::Button("- rank")) {
            tree.prior.pop_back();
            changed = true;
        }
    }
    return changed;
}

bool edit_ngram(drafts::NgramSpec& s) {
    bool changed = false;
    int method   = int(s.method);
    const char* methods[drafts::kNgramMethods.size()];
    for (size_t i = 0; i < drafts::kNgramMethods.size(); ++i) methods[i] = drafts::to_string(drafts::kNgramMethods[i]);
    if (ImGui::Combo("method", &method, methods, int(drafts::kNgramMethods.size()))) {
        const drafts::NgramSpec defaults;
        const std::string static_cache = s.static_cache, dynamic_cache = s.dynamic_cache;
        s        = defaults;  // each method's own defaults (the reference engine's)
        s.method = drafts::NgramMethod(method);
        if (s.method == drafts::NgramMethod::cache) s.static_cache = static_cache, s.dynamic_cache = dynamic_cache;
        changed = true;
    }
    switch (s.method) {
        case drafts::NgramMethod::simple:
        case drafts::NgramMethod::map_k:
        case drafts::NgramMethod::map_k4v:
            text_disabled_wrapped(
                "llama.cpp --spec-type %s: copy what followed an earlier occurrence of the last n "
                "tokens.",
                drafts::to_string(s.method));
            changed |= ImGui::SliderInt("key n", &s.size_n, 1, 32);
            changed |= ImGui::SliderInt("longest draft m", &s.size_m, 1, 64);
            if (s.method == drafts::NgramMethod::map_k4v) changed |= ImGui::SliderInt("min hits", &s.min_hits, 1, 8);
            break;
        case drafts::NgramMethod::mod:
            text_disabled_wrapped("llama.cpp --spec-type ngram-mod: a hashed pool of n-gram -> next token.");
            changed |= ImGui::SliderInt("key n", &s.mod_n_match, 1, 64);
            changed |= ImGui::SliderInt("shortest draft", &s.mod_n_min, 0, s.mod_n_max);
            changed |= ImGui::SliderInt("longest draft", &s.mod_n_max, std::max(1, s.mod_n_min), 128);
            break;
        case drafts::NgramMethod::cache:
            text_disabled_wrapped(
                "llama.cpp lookup decoding: 1..4-gram counts of the context, a dynamic and a "
                "static cache file (speculum-cli ngram-cache).");
            changed |= ImGui::Checkbox("learn across prompts", &s.cache_update);
            break;
        case drafts::NgramMethod::prompt_lookup:
            text_disabled_wrapped("vLLM prompt lookup: the longest recurring suffix, earliest occurrence.");
            changed |= ImGui::SliderInt("shortest match", &s.lookup_min, 1, s.lookup_max);
            changed |= ImGui::SliderInt("longest match", &s.lookup_max, s.lookup_min, 16);
            break;
        case drafts::NgramMethod::suffix:
            text_disabled_wrapped("SuffixDecoding: suffix trees over this sequence and earlier responses.");
            changed |= ImGui::SliderInt("tree depth", &s.suffix_max_depth, 2, 64);
            changed |= ImGui::SliderFloat("alpha (tokens per match)", &s.suffix_spec_factor, 0.25f, 8.0f, "%.2f");
            changed |= ImGui::SliderFloat("least probability", &s.suffix_min_prob, 0.0f, 1.0f, "%.2f");
            changed |= ImGui::Checkbox("tree drafts", &s.suffix_tree);
            help_marker(
                "With tree verification: a best-first tree of likely continuations; else the chain of the "
                "most frequent ones.");
            break;
    }
    return changed;
}

namespace {

// The drafter a cascade level gets when its kind is picked in the editor: the target's first layer (self), a
// separate model (its path resolved when measuring: the next smaller bundled model, else level 1's), Max-Gram.
drafts::DraftSpec cascade_level(drafts::DraftKind kind) {
    drafts::DraftSpec d;
    d.kind = kind;
    if (kind == drafts::DraftKind::self) d.exit_layer = 0, d.label = "self: exit@0";
    return d;
}

}  // namespace

bool edit_cascade(AppConfig& cfg) {
    bool changed              = false;
    engine::SpecConfig& spec  = cfg.spec;
    const LevelAssumption& l1 = cfg.level1();
    text_disabled_wrapped("level 1: the draft above (alpha %.2f, c %.3f, %d tokens)", l1.alpha, l1.c, cfg.gamma());
    const char* kinds[]         = {draft_kind_name(drafts::DraftKind::self), draft_kind_name(drafts::DraftKind::model),
                                   draft_kind_name(drafts::DraftKind::maxgram), draft_kind_name(drafts::DraftKind::ngram)};
    const bool lengths_editable = spec.k_matrix.empty() && spec.gamma.size() == spec.levels.size();
    for (size_t i = 1; i < spec.levels.size() && i < cfg.modeled.levels.size(); ++i) {
        drafts::DraftSpec& d = spec.levels[i];
        LevelAssumption& a   = cfg.modeled.levels[i];
        ImGui::PushID(int(i));
        ImGui::Separator();
        ImGui::Text("level %zu drafts for level %zu", i + 1, i);
        ImGui::SameLine();
        if (ImGui::SmallButton("remove")) {
            spec.levels.erase(spec.levels.begin() + long(i));
            if (lengths_editable) spec.gamma.erase(spec.gamma.begin() + long(i));
            cfg.modeled.levels.erase(cfg.modeled.levels.begin() + long(i));
            spec.k_matrix.clear();
            normalize(cfg);
            ImGui::PopID();
            return true;
        }
        // Max-Gram and the n-gram drafters review nothing: only the bottom level may be one.
        const bool bottom = i + 1 == spec.levels.size();
        int kind          = int(d.kind);
        if (ImGui::Combo("drafter", &kind, kinds, bottom ? IM_ARRAYSIZE(kinds) : 2)) {
            d = cascade_level(drafts::DraftKind(kind));
            if (drafts::is_statistical(d.kind)) a.c = 0.0;  // statistical: no forward pass
            changed = true;
        }
        if (d.kind == drafts::DraftKind::ngram) changed |= edit_ngram(d.ngram);
        if (!(d == cascade_level(d.kind))) text_disabled_wrapped("recipe: %s", d.describe().c_str());
        float al = float(a.alpha), c = float(a.c);
        if (ImGui::SliderFloat("alpha", &al, 0.05f, 0.99f, "%.2f")) a.alpha = al, changed = true;
        if (ImGui::SliderFloat("c", &c, 0.0f, 1.0f, "%.3f")) a.c = c, changed = true;
        if (lengths_editable) changed |= ImGui::SliderInt("steps", &spec.gamma[i], 1, 16);
        ImGui::PopID();
    }
    // Max-Gram reviews nothing, so it stays the leaf: with one at the bottom, a new model level goes above it.
    const bool leaf_maxgram = drafts::is_statistical(spec.levels.back().kind);
    if (spec.verification != engine::Verification::chain) {
        text_disabled_wrapped("levels below level 1 need chain verification (Verification tree: chain)");
    } else if (spec.levels.size() < 5 && !(leaf_maxgram && spec.levels.size() == 1) && ImGui::Button("Add level")) {
        const drafts::DraftKind kind = leaf_maxgram ? drafts::DraftKind::model : drafts::DraftKind::maxgram;
        const long at                = long(spec.levels.size()) - (leaf_maxgram ? 1 : 0);
        if (!lengths_editable) spec.k_matrix.clear(), spec.gamma.resize(spec.levels.size(), 4);
        spec.levels.insert(spec.levels.begin() + at, cascade_level(kind));
        spec.gamma.insert(spec.gamma.begin() + at, kind == drafts::DraftKind::maxgram ? 10 : 4);
        cfg.modeled.levels.insert(cfg.modeled.levels.begin() + at,
                                  kind == drafts::DraftKind::maxgram ? LevelAssumption{0.5, 0.0} : LevelAssumption{});
        normalize(cfg);
        changed = true;
    }
    ImGui::Separator();
    text_wrapped("horizontal split of the draft positions:");
    modeled_tag();
    std::vector<analytic::HorizontalSegment>& horizontal = cfg.modeled.horizontal;
    for (size_t i = 0; i < horizontal.size(); ++i) {
        auto& s = horizontal[i];
        ImGui::PushID(int(1000 + i));
        ImGui::Text("segment %zu", i + 1);
        ImGui::SameLine();
        if (ImGui::SmallButton("remove")) {
            horizontal.erase(horizontal.begin() + long(i));
            ImGui::PopID();
            return true;
        }
        float a = float(s.alpha), c = float(s.c);
        if (ImGui::SliderFloat("alpha", &a, 0.05f, 0.99f, "%.2f")) s.alpha = a, changed = true;
        if (ImGui::SliderFloat("c", &c, 0.0f, 1.0f, "%.3f")) s.c = c, changed = true;
        changed |= ImGui::SliderInt("positions", &s.count, 1, 16);
        ImGui::PopID();
    }
    if (horizontal.size() < 4 && ImGui::Button("Add segment")) {
        horizontal.push_back(
            {horizontal.empty() ? cfg.level1().alpha : 0.6, horizontal.empty() ? cfg.level1().c : 0.01, 2});
        changed = true;
    }
    return changed;
}

}  // namespace speculum::ui

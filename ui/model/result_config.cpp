// Stored configuration (SpecConfig or predict input) -> AppConfig, listing every field the editor cannot express.
#include "ui/model/result_config.h"

#include "core/engine/spec_config.h"

#include <algorithm>
#include <set>

namespace speculum::ui {

namespace {

using nlohmann::json;

void from_engine(const engine::SpecConfig& s, ResultConfigLoad& out) {
    AppConfig& cfg = out.config;
    auto note      = [&](const std::string& text) { out.not_loaded.push_back(text); };
    if (s.levels.empty()) {
        note("levels: the row has no draft level; the draft recipe is unchanged");
    } else {
        cfg.draft = s.levels[0];
    }
    if (!s.gamma.empty()) cfg.gamma = s.gamma[0];
    cfg.cascade.clear();
    for (size_t i = 1; i < s.levels.size(); ++i) {
        const drafts::DraftSpec& d = s.levels[i];
        CascadeLevelConfig l;
        l.drafter = d.kind;
        if (i < s.gamma.size()) l.steps = s.gamma[i];
        cfg.cascade.push_back(l);
        // The cascade editor picks only the drafter: a self level is the target's first layer (exit@0) and a model
        // level uses level 1's model; any other recipe cannot be kept.
        drafts::DraftSpec editor;
        editor.kind       = d.kind;
        editor.label      = d.label;
        editor.model_path = d.model_path;
        if (d.kind == drafts::DraftKind::self) editor.exit_layer = 0;
        if (d.kind == drafts::DraftKind::model && d.model_path != s.levels[0].model_path)
            note("levels/" + std::to_string(i) + "/model_path: the cascade editor uses level 1's model");
        editor.model_path = d.model_path;
        if (!(editor == d))
            note("levels/" + std::to_string(i) + ": only the drafter kind and steps are loaded (recipe '" +
                 d.describe() + "' is not)");
    }
    if (s.verification == engine::Verification::chain) {
        cfg.tree.mode = TreeMode::chain;
    } else if (!cfg.cascade.empty()) {
        note("tree: the editor takes a verification tree over one draft level only; loaded as a chain");
        cfg.tree.mode = TreeMode::chain;
    } else {
        switch (s.tree.kind) {
        case engine::TreeKind::static_shape:
            cfg.tree.mode      = TreeMode::branching;
            cfg.tree.branching = std::vector<int>(s.tree.branching.begin(), s.tree.branching.end());
            break;
        case engine::TreeKind::top_k:  // every node has top_k children down to `depth`: a static shape
            cfg.tree.mode      = TreeMode::branching;
            cfg.tree.branching = std::vector<int>(size_t(std::max(0, s.tree.depth)), s.tree.top_k);
            break;
        case engine::TreeKind::sequoia:
            cfg.tree.mode            = TreeMode::budget;
            cfg.tree.budget          = s.tree.node_budget + 1;  // the editor's budget counts the root
            cfg.tree.max_depth       = s.tree.max_depth;
            cfg.tree.rank_acceptance = s.tree.prior;
            break;
        case engine::TreeKind::chain_second:
            note("tree.kind chain_second: not in the tree editor; loaded as a chain");
            cfg.tree.mode = TreeMode::chain;
            break;
        }
    }
    cfg.temperature = s.sampling.temperature;
    model::SamplerConfig plain;
    plain.temperature = s.sampling.temperature;
    if (!(plain == s.sampling)) note("sampling: only the temperature is loaded (top_k, top_p and seed are not)");
    cfg.p_min = s.p_min;
    if (s.adaptive_gamma.enabled) note("adaptive_gamma: not in the editor");
    if (std::any_of(s.lenience.begin(), s.lenience.end(), [](float l) { return l != 1.0f; }))
        note("lenience: not in the editor");
    if (!s.k_matrix.empty()) note("k_matrix: the editor's horizontal split is modeled only; not loaded");
    if (s.length_mode == engine::LengthMode::threshold)
        note("length_mode threshold: the app's measured cascades use truncate lengths; not loaded");
    cfg.horizontal.clear();
    cfg.measure_tokens  = s.max_new_tokens;
    cfg.measure_prompts = s.max_prompts;
    if (!s.dataset.empty())
        note("dataset " + s.dataset + (s.task.empty() ? "" : " (task " + s.task + ")") +
             ": open it in Model and data");
    else if (!s.prompt.empty() || !s.prompt_ids.empty())
        note("prompt: the row's own prompt is not loaded (measured runs use the opened dataset)");
}

// The first value of a number or an array of numbers (per-position alpha); notes when positions are dropped.
double first_number(const json& v, const std::string& field, double fallback, ResultConfigLoad& out) {
    if (v.is_number()) return v.get<double>();
    if (v.is_array() && !v.empty() && v[0].is_number()) {
        if (v.size() > 1) out.not_loaded.push_back(field + ": per-position values; only the first is loaded");
        return v[0].get<double>();
    }
    out.not_loaded.push_back(field + ": not a number");
    return fallback;
}

void from_predict(const json& j, ResultConfigLoad& out) {
    AppConfig& cfg = out.config;
    auto note      = [&](const std::string& text) { out.not_loaded.push_back(text); };
    static const std::set<std::string> grouping = {"task", "dataset", "label"};
    for (const auto& [key, v] : j.items()) {
        if (key == "alpha") {
            cfg.alpha = first_number(v, "alpha", cfg.alpha, out);
        } else if (key == "k" && v.is_number_integer()) {
            cfg.gamma = v.get<int>();
        } else if (key == "c" && v.is_number()) {
            cfg.cost_ratio = v.get<double>();
        } else if (key == "cascade" && v.is_array()) {
            // The app models a cascade as [level 1 (alpha, c, gamma), then its extra levels] (ui/modeled.cpp).
            cfg.cascade.clear();
            for (size_t i = 0; i < v.size(); ++i) {
                const json& l       = v[i];
                const std::string f = "cascade/" + std::to_string(i);
                double alpha        = l.contains("alpha") ? first_number(l["alpha"], f + "/alpha", 0.8, out) : 0.8;
                double c            = l.value("c", 0.05);
                int steps           = l.value("steps", 4);
                if (i == 0) {
                    cfg.alpha = alpha, cfg.cost_ratio = c, cfg.gamma = steps;
                    continue;
                }
                CascadeLevelConfig level;
                level.drafter = l.value("max_gram", false) ? drafts::DraftKind::maxgram : drafts::DraftKind::self;
                level.alpha = alpha, level.c = c, level.steps = steps;
                cfg.cascade.push_back(level);
            }
        } else if (key == "horizontal" && v.is_array()) {
            cfg.horizontal.clear();
            for (const json& s : v)
                cfg.horizontal.push_back({s.value("alpha", 0.8), s.value("c", 0.05), s.value("count", 4)});
        } else if (key == "tree" && v.is_object()) {
            if (v.contains("budget")) {
                cfg.tree.mode   = TreeMode::budget;
                cfg.tree.budget = v.value("budget", cfg.tree.budget);
            }
            if (v.contains("max_depth")) cfg.tree.max_depth = v.value("max_depth", cfg.tree.max_depth);
            if (v.contains("p") && v["p"].is_array() && !v["p"].empty() && v["p"][0].is_number())
                cfg.tree.rank_acceptance = v["p"].get<std::vector<double>>();
            if (v.contains("parents")) note("tree.parents: an explicit tree is not in the tree editor");
        } else if (key == "hardware" && v.is_object()) {
            for (const auto& [hk, hv] : v.items()) {
                if (hk == "profile" && hv.is_string()) cfg.hardware_profile = hv.get<std::string>();
                else if (hk == "context" && hv.is_number_integer()) cfg.context = hv.get<int>();
                else note("hardware/" + hk + ": not in the editor (the profile's own value is used)");
            }
        } else if (grouping.count(key)) {
            if (key != "label") note(key + " " + (v.is_string() ? v.get<std::string>() : v.dump()) + ": a label only");
        } else {
            note(key + ": not expressible in the editor");
        }
    }
}

}  // namespace

ResultConfigLoad app_config_from_result(const json& config, const AppConfig& base) {
    ResultConfigLoad out;
    out.config = base;
    if (!config.is_object()) {
        out.not_loaded.push_back("configuration: not a JSON object; nothing loaded");
        return out;
    }
    const bool engine_like = config.contains("levels") || (config.contains("gamma") && config["gamma"].is_array());
    try {
        if (engine_like) {
            out.kind = "engine";
            from_engine(config.get<engine::SpecConfig>(), out);
        } else {
            out.kind = "predict";
            from_predict(config, out);
        }
    } catch (const std::exception& e) {  // a mistyped field: keep the editor's configuration as it was
        out.config     = base;
        out.not_loaded = {std::string("configuration: ") + e.what() + "; nothing loaded"};
    }
    return out;
}

}  // namespace speculum::ui

// Stored configuration (SpecConfig or predict input) -> AppConfig, listing every field the editor cannot express.
#include "ui/model/result_config.h"

#include "core/sweep/spec_predict_evaluator.h"
#include "ui/model/spec_mapping.h"

#include <algorithm>
#include <set>

namespace speculum::ui {

namespace {

using nlohmann::json;

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
    AppConfig& cfg                              = out.config;
    auto note                                   = [&](const std::string& text) { out.not_loaded.push_back(text); };
    static const std::set<std::string> grouping = {"task", "dataset", "label"};
    for (const auto& [key, v] : j.items()) {
        if (key == "alpha") {
            cfg.level1().alpha = first_number(v, "alpha", cfg.level1().alpha, out);
        } else if (key == "k" && v.is_number_integer()) {
            cfg.spec.k_matrix.clear();
            normalize(cfg);
            cfg.spec.gamma[0] = v.get<int>();
        } else if (key == "c" && v.is_number()) {
            cfg.level1().c = v.get<double>();
        } else if (key == "cascade" && v.is_array()) {
            // A predict cascade is [level 1 (alpha, c, steps), then the levels below it] (as ui/model/modeled.cpp
            // builds it); a level below is Max-Gram or, being a model the input does not name, the target's first
            // layer.
            drafts::DraftSpec level1 = cfg.draft();
            cfg.spec.levels          = {level1};
            cfg.spec.k_matrix.clear();
            cfg.spec.gamma     = {cfg.gamma() > 0 ? cfg.gamma() : 4};
            cfg.modeled.levels = {cfg.level1()};
            for (size_t i = 0; i < v.size() && i < 8; ++i) {
                const json& l       = v[i];
                const std::string f = "cascade/" + std::to_string(i);
                double alpha        = l.contains("alpha") ? first_number(l["alpha"], f + "/alpha", 0.8, out) : 0.8;
                double c            = l.value("c", 0.05);
                int steps           = l.value("steps", 4);
                if (i == 0) {
                    cfg.level1() = {alpha, c}, cfg.spec.gamma[0] = steps;
                    continue;
                }
                drafts::DraftSpec d;
                if (l.value("max_gram", false))
                    d.kind = drafts::DraftKind::maxgram;
                else
                    d.exit_layer = 0, d.label = "self: exit@0";
                cfg.spec.levels.push_back(d), cfg.spec.gamma.push_back(steps), cfg.modeled.levels.push_back({alpha, c});
            }
        } else if (key == "horizontal" && v.is_array()) {
            cfg.modeled.horizontal.clear();
            for (const json& s : v)
                cfg.modeled.horizontal.push_back({s.value("alpha", 0.8), s.value("c", 0.05), s.value("count", 4)});
        } else if (key == "tree" && v.is_object()) {
            if (v.contains("budget")) {
                set_tree_mode(cfg, TreeMode::budget);
                cfg.spec.tree.node_budget =
                    v.value("budget", cfg.spec.tree.node_budget + 1) - 1;  // predict counts the root
            }
            if (v.contains("max_depth")) cfg.spec.tree.max_depth = v.value("max_depth", cfg.spec.tree.max_depth);
            if (v.contains("p") && v["p"].is_array() && !v["p"].empty() && v["p"][0].is_number())
                cfg.spec.tree.prior = v["p"].get<std::vector<double>>();
            if (v.contains("parents")) note("tree.parents: an explicit tree is not in the tree editor");
        } else if (key == "hardware" && v.is_object()) {
            for (const auto& [hk, hv] : v.items()) {
                if (hk == "profile" && hv.is_string())
                    cfg.modeled.hardware_profile = hv.get<std::string>();
                else if (hk == "context" && hv.is_number_integer())
                    cfg.modeled.context = hv.get<int>();
                else
                    note("hardware/" + hk + ": not in the editor (the profile's own value is used)");
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
        if (engine_like && config.contains("modeled")) {  // a modeled sweep's row: the spec and its assumed figures
            out.kind                              = "modeled";
            const sweep::SpecPredictConfig parsed = sweep::parse_spec_predict_config(config);
            app_config_from_spec(parsed.spec, out.config, out.not_loaded);
            const engine::ModelFigures& f = parsed.modeled.figures;
            for (size_t i = 0; i < f.levels.size() && i < out.config.modeled.levels.size(); ++i) {
                const std::string at               = "modeled/levels/" + std::to_string(i);
                out.config.modeled.levels[i].alpha = first_number(nlohmann::json(f.levels[i].alpha), at + "/alpha",
                                                                  out.config.modeled.levels[i].alpha, out);
                out.config.modeled.levels[i].c     = f.levels[i].c;
            }
            out.config.modeled.horizontal = parsed.modeled.horizontal;
        } else if (engine_like) {
            out.kind = "engine";
            app_config_from_spec(config.get<engine::SpecConfig>(), out.config, out.not_loaded);
            out.config.modeled.horizontal.clear();  // the row was measured without one (the split is modeled only)
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

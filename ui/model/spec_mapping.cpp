// AppConfig <-> SpecConfig (see spec_mapping.h).
#include "ui/model/spec_mapping.h"

#include "core/resources.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace speculum::ui {

const char* const kBuiltinPrompt = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n";

namespace {

constexpr size_t kMaxPrior = 16;  // Sequoia prior entries the engine takes

std::string bundled_draft_model() {
    std::error_code ec;
    if (auto res = resources_dir(); res && std::filesystem::exists(*res / kBundledDraftModel, ec))
        return (*res / kBundledDraftModel).string();
    return "";
}

// The bundled model one size below `above` (the mid-level draft -> the small draft), so that a cascade level
// under the bundled mid-level draft is the bundled small draft; "" when `above` is not the bundled mid model.
std::string smaller_bundled_model(const std::string& above) {
    std::error_code ec;
    auto res = resources_dir();
    if (above.empty() || !res || !std::filesystem::equivalent(above, *res / kBundledMidModel, ec)) return "";
    return bundled_draft_model();
}

// A separate-model level without a path uses the bundled draft model (it shares the bundled target's vocabulary).
drafts::DraftSpec with_model_path(drafts::DraftSpec d, const std::string& field) {
    if (d.kind != drafts::DraftKind::model) return d;
    if (!d.model_path.empty()) {
        if (d.label.empty()) d.label = "model " + std::filesystem::path(d.model_path).filename().string();
        return d;
    }
    d.model_path = bundled_draft_model();
    if (d.model_path.empty())
        throw std::invalid_argument(field + ".model_path: choose a draft GGUF (no bundled draft model found)");
    if (d.label.empty()) d.label = "bundled draft model";
    return d;
}
}  // namespace

engine::SpecConfig spec_config_of(const AppConfig& cfg) {
    engine::SpecConfig s;
    s.levels = {cfg.draft};
    s.gamma  = {cfg.gamma};
    for (const CascadeLevelConfig& l : cfg.cascade) {
        drafts::DraftSpec d;
        d.kind = l.drafter;
        if (d.kind == drafts::DraftKind::self) {
            d.exit_layer = 0;  // the cheapest self-draft: the target's first layer
            d.label      = "self: exit@0";
        } else if (d.kind == drafts::DraftKind::model && cfg.draft.kind == drafts::DraftKind::model) {
            d.model_path = cfg.draft.model_path;  // level 1's model until measuring resolves a smaller one
        }
        s.levels.push_back(d);
        s.gamma.push_back(l.steps);
    }
    if (cfg.tree.mode != TreeMode::chain) {
        s.verification = engine::Verification::tree;
        if (cfg.tree.mode == TreeMode::branching) {
            s.tree.kind      = engine::TreeKind::static_shape;
            s.tree.branching = std::vector<int32_t>(cfg.tree.branching.begin(), cfg.tree.branching.end());
        } else {
            s.tree.kind               = engine::TreeKind::sequoia;
            s.tree.node_budget        = std::max(1, cfg.tree.budget - 1);  // the UI's budget counts the root
            s.tree.max_depth          = cfg.tree.max_depth;
            std::vector<double> prior = cfg.tree.rank_acceptance;
            if (prior.size() > kMaxPrior) prior.resize(kMaxPrior);
            if (!prior.empty()) s.tree.prior = prior;
        }
    }
    s.sampling.temperature = cfg.temperature;
    s.p_min                = cfg.p_min;
    s.max_new_tokens       = cfg.measure_tokens;
    s.max_prompts          = cfg.measure_prompts;
    return s;
}

engine::SpecConfig spec_config_from_app(const AppConfig& cfg, const MeasureSource& source) {
    engine::SpecConfig s = spec_config_of(cfg);
    s.levels[0]          = with_model_path(s.levels[0], "draft");
    if (s.levels[0].uses_wanda() && s.levels[0].prune.calibration.empty()) {
        if (source.dataset.empty())
            throw std::invalid_argument("draft.prune.method: Wanda needs calibration text: open a dataset");
        s.levels[0].prune.calibration = source.dataset;  // ||X|| from the prompts the run decodes
    }
    for (size_t i = 1; i < s.levels.size(); ++i) {
        drafts::DraftSpec& d = s.levels[i];
        if (d.kind != drafts::DraftKind::model) continue;
        // The next smaller bundled model, else level 1's model.
        d.model_path = smaller_bundled_model(s.levels[i - 1].model_path);
        if (d.model_path.empty()) d.model_path = cfg.draft.kind == drafts::DraftKind::model ? cfg.draft.model_path : "";
        d = with_model_path(d, "cascade[" + std::to_string(i - 1) + "]");
    }
    if (cfg.tree.mode != TreeMode::chain && !cfg.cascade.empty())
        throw std::invalid_argument(
            "tree: a verification tree takes one draft level; remove the cascade levels or choose the chain");
    if (cfg.tree.mode == TreeMode::optimal_measured && !source.rank_acceptance.empty()) {
        std::vector<double> prior = source.rank_acceptance;  // optimal: the measured acceptance by rank
        if (prior.size() > kMaxPrior) prior.resize(kMaxPrior);
        s.tree.prior = prior;
    }
    s.dataset = source.dataset;
    s.task    = source.task;
    if (s.dataset.empty()) s.prompt = kBuiltinPrompt;
    s.baseline = true;
    return s;
}

void app_config_from_spec(const engine::SpecConfig& s, AppConfig& cfg, std::vector<std::string>& not_loaded) {
    auto note                                    = [&](const std::string& text) { not_loaded.push_back(text); };
    const std::vector<CascadeLevelConfig> before = cfg.cascade;  // their assumed alpha and c are kept
    if (s.levels.empty()) {
        note("levels: the row has no draft level; the draft recipe is unchanged");
    } else {
        cfg.draft = s.levels[0];
    }
    if (!s.gamma.empty()) cfg.gamma = s.gamma[0];
    cfg.cascade.clear();
    for (size_t i = 1; i < s.levels.size(); ++i) {
        const drafts::DraftSpec& d = s.levels[i];
        CascadeLevelConfig l       = i - 1 < before.size() ? before[i - 1] : CascadeLevelConfig{};
        l.drafter                  = d.kind;
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
            case engine::TreeKind::sequoia:  // "optimal" is a Sequoia tree whose prior the last measurement gives
                cfg.tree.mode      = cfg.tree.mode == TreeMode::optimal_measured ? cfg.tree.mode : TreeMode::budget;
                cfg.tree.budget    = s.tree.node_budget + 1;  // the editor's budget counts the root
                cfg.tree.max_depth = s.tree.max_depth;
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
    cfg.measure_tokens  = s.max_new_tokens;
    cfg.measure_prompts = s.max_prompts;
    if (!s.dataset.empty())
        note("dataset " + s.dataset + (s.task.empty() ? "" : " (task " + s.task + ")") + ": open it in Model and data");
    else if (!s.prompt.empty() || !s.prompt_ids.empty())
        note("prompt: the row's own prompt is not loaded (measured runs use the opened dataset)");
}

namespace {

// The short `--set` keys that are SpecConfig fields, and their one name.
struct KeyPointer {
    const char* key;
    const char* pointer;
};
constexpr KeyPointer kKeyPointers[] = {
    {"gamma", "/gamma/0"},
    {"p_min", "/p_min"},
    {"temperature", "/sampling/temperature"},
    {"drafter", "/levels/0/kind"},
    {"draft_model", "/levels/0/model_path"},
    {"prune", "/levels/0/prune/ratio"},
    {"prune_method", "/levels/0/prune/method"},
    {"trunc_bits", "/levels/0/weight_trunc_bits"},
    {"kv_trunc_bits", "/levels/0/kv_trunc_bits"},
    {"kv_drop", "/levels/0/kv_drop_ratio"},
    {"exit_layer", "/levels/0/exit_layer"},
    {"measure_tokens", "/max_new_tokens"},
    {"measure_prompts", "/max_prompts"},
};

}  // namespace

const char* config_key_pointer(const std::string& key) {
    for (const KeyPointer& k : kKeyPointers)
        if (key == k.key) return k.pointer;
    return nullptr;
}

std::string set_config_pointer(AppConfig& cfg, const std::string& pointer, const std::string& value) {
    nlohmann::json j = spec_config_of(cfg);
    nlohmann::json::json_pointer at;
    try {
        at = nlohmann::json::json_pointer(pointer);
    } catch (const std::exception& e) {
        return pointer + ": not a JSON pointer (" + e.what() + ")";
    }
    if (!j.contains(at))
        return pointer + ": no such field in the configuration (docs/engine.md lists SpecConfig's fields)";
    nlohmann::json v = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded()) v = value;  // a bare word: a string (an enum name, a path)
    j[at] = v;
    engine::SpecConfig s;
    try {
        from_json(j, s);
    } catch (const std::exception& e) {
        return pointer + ": " + e.what();
    }
    AppConfig out = cfg;
    std::vector<std::string> not_loaded;
    app_config_from_spec(s, out, not_loaded);
    if (!not_loaded.empty()) return pointer + ": the app's editor cannot hold this (" + not_loaded.front() + ")";
    cfg = out;
    return "";
}

}  // namespace speculum::ui

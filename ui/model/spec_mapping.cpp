// AppConfig <-> SpecConfig (see spec_mapping.h).
#include "ui/model/spec_mapping.h"

#include "core/json_input.h"
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
    // A reduced head (FR-Spec) is part of the name, so runs with and without it are told apart.
    const std::string head = d.head_vocab > 0 ? " + head " + std::to_string(d.head_vocab) : "";
    if (!d.model_path.empty()) {
        if (d.label.empty()) d.label = "model " + std::filesystem::path(d.model_path).filename().string() + head;
        return d;
    }
    d.model_path = bundled_draft_model();
    if (d.model_path.empty())
        throw std::invalid_argument(field + ".model_path: choose a draft GGUF (no bundled draft model found)");
    if (d.label.empty()) d.label = "bundled draft model" + head;
    return d;
}
}  // namespace

engine::SpecConfig spec_with_model_paths(const AppConfig& cfg) {
    engine::SpecConfig s = cfg.spec;
    if (s.levels.empty()) throw std::invalid_argument("levels: at least one draft level is needed");
    s.levels[0] = with_model_path(s.levels[0], "levels[0]");
    for (size_t i = 1; i < s.levels.size(); ++i) {
        drafts::DraftSpec& d = s.levels[i];
        if (d.kind != drafts::DraftKind::model) continue;
        if (d.model_path.empty()) {  // the next smaller bundled model, else level 1's model
            d.model_path = smaller_bundled_model(s.levels[i - 1].model_path);
            if (d.model_path.empty()) d.model_path = s.levels[0].model_path;
        }
        d = with_model_path(d, "levels[" + std::to_string(i) + "]");
    }
    return s;
}

engine::SpecConfig spec_config_from_app(const AppConfig& cfg, const MeasureSource& source) {
    engine::SpecConfig s = spec_with_model_paths(cfg);
    if (s.levels[0].uses_wanda() && s.levels[0].prune.calibration.empty()) {
        if (source.dataset.empty())
            throw std::invalid_argument("levels[0].prune.method: Wanda needs calibration text: open a dataset");
        s.levels[0].prune.calibration = source.dataset;  // ||X|| from the prompts the run decodes
    }
    if (s.verification == engine::Verification::tree && s.levels.size() > 1)
        throw std::invalid_argument(
            "tree: a verification tree takes one draft level; remove the cascade levels or choose the chain");
    if (cfg.prefs.tree_prior_measured && !source.rank_acceptance.empty()) {
        std::vector<double> prior = source.rank_acceptance;  // optimal: the measured acceptance by rank
        if (prior.size() > kMaxPrior) prior.resize(kMaxPrior);
        s.tree.prior = prior;
    }
    s.dataset = source.dataset;
    s.task    = source.task;
    s.prompt.clear(), s.prompt_ids.clear();
    if (s.dataset.empty()) s.prompt = kBuiltinPrompt;
    s.baseline = true;
    return s;
}

std::string use_token_id_prompt(engine::SpecConfig& s, int32_t n_vocab) {
    constexpr int32_t kFallbackIdCount = 8;
    s.dataset.clear(), s.prompt.clear(), s.prompt_ids.clear();
    for (int32_t i = 1; i <= std::min(kFallbackIdCount, n_vocab - 1); ++i) s.prompt_ids.push_back(i);
    return "token ids 1.." + std::to_string(s.prompt_ids.size()) + " (the model has no tokenizer)";
}

void app_config_from_spec(const engine::SpecConfig& s, AppConfig& cfg, std::vector<std::string>& not_loaded) {
    if (s.levels.empty()) {
        not_loaded.push_back("levels: the configuration has no draft level; nothing loaded");
        return;
    }
    cfg.spec = s;
    if (!s.dataset.empty())
        not_loaded.push_back("dataset " + s.dataset + (s.task.empty() ? "" : " (task " + s.task + ")") +
                             ": open it in Model and data");
    else if (!s.prompt.empty() || !s.prompt_ids.empty())
        not_loaded.push_back(
            "prompt: the configuration's own prompt is not loaded (measured runs use the opened "
            "dataset)");
    cfg.spec.dataset.clear(), cfg.spec.task.clear(), cfg.spec.prompt.clear(), cfg.spec.prompt_ids.clear();
    normalize(cfg);
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
    nlohmann::json j = cfg.spec;
    nlohmann::json::json_pointer at;
    try {
        check_json_pointer(pointer, "--set");
        at = nlohmann::json::json_pointer(pointer);
    } catch (const std::exception& e) {
        return pointer.substr(0, 80) + ": " + e.what();
    }
    if (!j.contains(at))
        return pointer + ": no such field in the configuration (docs/engine.md lists SpecConfig's fields)";
    nlohmann::json v;
    try {
        v = parse_json(value, pointer);
    } catch (const std::invalid_argument&) {
        v = value;  // a bare word: a string (an enum name, a path)
    }
    j[at] = v;
    engine::SpecConfig s;
    try {
        from_json(j, s);
        validate_app_spec(s);
    } catch (const std::exception& e) {
        return pointer + ": " + e.what();
    }
    cfg.spec = std::move(s);
    normalize(cfg);
    return "";
}

}  // namespace speculum::ui

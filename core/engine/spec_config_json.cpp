// SpecConfig JSON: writing, strict reading (unknown keys and wrong types name the key) and loading a config file.
#include "core/engine/spec_config.h"
#include "core/json_reader.h"

#include "core/file_io.h"
#include "core/json_input.h"

#include <set>
#include <stdexcept>

namespace speculum::engine {

namespace {

const char* tree_kind_name(TreeKind k) {
    switch (k) {
        case TreeKind::static_shape:
            return "static";
        case TreeKind::top_k:
            return "top_k";
        case TreeKind::sequoia:
            return "sequoia";
        case TreeKind::chain_second:
            return "chain_second";
        case TreeKind::dynamic:
            return "dynamic";
    }
    return "static";
}

// Rejects keys not in `allowed`, naming the first one and the object it is in.
void check_keys(const nlohmann::json& j, const std::string& where, const std::set<std::string>& allowed) {
    if (!j.is_object()) throw std::invalid_argument(where + ": expected a JSON object, got " + j.type_name());
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!allowed.count(it.key())) throw_unknown_key(json_path(where, it.key()));
}

// Reads j[key] into out when present; a wrong type names the key.
template <class T>
void get(const nlohmann::json& j, const std::string& where, const char* key, T& out) {
    auto it = j.find(key);
    if (it == j.end()) return;
    try {
        out = it->template get<T>();
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(where + "." + key + ": wrong type (" + e.what() + ")");
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(where + "." + key + ": " + e.what());
    }
}

}  // namespace

void to_json(nlohmann::json& j, const SpecConfig& c) {
    nlohmann::json levels = nlohmann::json::array();
    for (const auto& l : c.levels) levels.push_back(l);
    const TreeConfig& t = c.tree;
    j                   = nlohmann::json{
        {"levels", levels},
        {"gamma", c.gamma},
        {"verification", c.verification == Verification::chain  ? "chain"
                                           : c.verification == Verification::tree ? "tree"
                                                                                  : "cats"},
        {"cats",
                           {{"draft_layers", c.cats.draft_layers},
                            {"sv_layers", c.cats.sv_layers},
                            {"dram_budget_gb", c.cats.dram_budget_gb},
                            {"typical", c.cats.typical},
                            {"typical_epsilon", c.cats.typical_epsilon},
                            {"typical_delta", c.cats.typical_delta}}},
        {"tree",
                           {{"kind", tree_kind_name(t.kind)},
                            {"branching", t.branching},
                            {"top_k", t.top_k},
                            {"depth", t.depth},
                            {"node_budget", t.node_budget},
                            {"max_depth", t.max_depth},
                            {"prior", t.prior},
                            {"refit_every", t.refit_every}}},
        {"sampling", c.sampling},
        {"p_min", c.p_min},
        {"adaptive_gamma",
                           {{"enabled", c.adaptive_gamma.enabled}, {"min", c.adaptive_gamma.min}, {"max", c.adaptive_gamma.max}}},
        {"lenience", c.lenience},
        {"k_matrix", c.k_matrix},
        {"length_mode", to_string(c.length_mode)},
        {"maxgram_block", c.maxgram_block},
        {"max_new_tokens", c.max_new_tokens},
        {"prompt_ids", c.prompt_ids},
        {"prompt", c.prompt},
        {"dataset", c.dataset},
        {"task", c.task},
        {"max_prompts", c.max_prompts},
        {"context", c.context},
        {"baseline", c.baseline},
        {"repeats",
                           {{"min", c.repeats.min},
                            {"max", c.repeats.max},
                            {"min_time_s", c.repeats.min_time_s},
                            {"max_time_s", c.repeats.max_time_s},
                            {"rel_width", c.repeats.rel_width}}},
        {"eos", c.eos},
    };
}

void from_json(const nlohmann::json& j, SpecConfig& c) {
    const std::string w = "spec";
    check_keys(j, w, {"levels",         "gamma",          "verification", "tree",     "cats",        "sampling",
                      "p_min",          "adaptive_gamma", "lenience",     "k_matrix", "length_mode", "maxgram_block",
                      "max_new_tokens", "prompt_ids",     "prompt",       "dataset",  "task",        "max_prompts",
                      "context",        "baseline",       "repeats",      "eos",      "comment"});
    c = SpecConfig{};
    if (auto it = j.find("levels"); it != j.end()) {
        if (!it->is_array()) throw std::invalid_argument("spec.levels: expected an array of draft specs");
        c.levels.clear();
        for (size_t i = 0; i < it->size(); ++i) {
            try {
                c.levels.push_back((*it)[i].get<drafts::DraftSpec>());
            } catch (const std::exception& e) {
                throw std::invalid_argument("spec.levels[" + std::to_string(i) + "]: " + e.what());
            }
        }
    }
    get(j, w, "gamma", c.gamma);
    if (auto it = j.find("verification"); it != j.end()) {
        const std::string v = it->is_string() ? it->get<std::string>() : "";
        if (v != "chain" && v != "tree" && v != "cats")
            throw std::invalid_argument("spec.verification: expected \"chain\", \"tree\" or \"cats\", got " +
                                        it->dump());
        c.verification = v == "chain" ? Verification::chain : v == "tree" ? Verification::tree : Verification::cats;
    }
    if (auto it = j.find("cats"); it != j.end()) {
        const std::string cw = "spec.cats";
        check_keys(*it, cw,
                   {"draft_layers", "sv_layers", "dram_budget_gb", "typical", "typical_epsilon", "typical_delta"});
        get(*it, cw, "draft_layers", c.cats.draft_layers);
        get(*it, cw, "sv_layers", c.cats.sv_layers);
        get(*it, cw, "dram_budget_gb", c.cats.dram_budget_gb);
        get(*it, cw, "typical", c.cats.typical);
        get(*it, cw, "typical_epsilon", c.cats.typical_epsilon);
        get(*it, cw, "typical_delta", c.cats.typical_delta);
    }
    if (auto it = j.find("tree"); it != j.end()) {
        const std::string tw = "spec.tree";
        check_keys(*it, tw,
                   {"kind", "branching", "top_k", "depth", "node_budget", "max_depth", "prior", "refit_every"});
        TreeConfig& t = c.tree;
        if (auto k = it->find("kind"); k != it->end()) {
            const std::string s = k->is_string() ? k->get<std::string>() : "";
            if (s == "static")
                t.kind = TreeKind::static_shape;
            else if (s == "top_k")
                t.kind = TreeKind::top_k;
            else if (s == "sequoia")
                t.kind = TreeKind::sequoia;
            else if (s == "chain_second")
                t.kind = TreeKind::chain_second;
            else if (s == "dynamic")
                t.kind = TreeKind::dynamic;
            else if (s == "cats")
                throw std::invalid_argument(tw +
                                            ".kind: \"cats\" was renamed \"chain_second\" (a chain plus the draft's "
                                            "second choice as a leaf at each position); CATS's three-stage process "
                                            "is \"verification\": \"cats\" with a \"cats\" section");
            else
                throw std::invalid_argument(tw +
                                            ".kind: expected \"static\", \"top_k\", \"sequoia\", "
                                            "\"chain_second\" or \"dynamic\", got " +
                                            k->dump());
        }
        get(*it, tw, "branching", t.branching);
        get(*it, tw, "top_k", t.top_k);
        get(*it, tw, "depth", t.depth);
        get(*it, tw, "node_budget", t.node_budget);
        get(*it, tw, "max_depth", t.max_depth);
        get(*it, tw, "prior", t.prior);
        get(*it, tw, "refit_every", t.refit_every);
    }
    if (auto it = j.find("sampling"); it != j.end()) {
        check_keys(*it, "spec.sampling", {"temperature", "top_k", "top_p", "seed"});
        get(j, w, "sampling", c.sampling);
    }
    get(j, w, "p_min", c.p_min);
    if (auto it = j.find("repeats"); it != j.end()) {
        check_keys(*it, "spec.repeats", {"min", "max", "min_time_s", "max_time_s", "rel_width"});
        get(*it, "spec.repeats", "min", c.repeats.min);
        get(*it, "spec.repeats", "max", c.repeats.max);
        get(*it, "spec.repeats", "min_time_s", c.repeats.min_time_s);
        get(*it, "spec.repeats", "max_time_s", c.repeats.max_time_s);
        get(*it, "spec.repeats", "rel_width", c.repeats.rel_width);
    }
    if (auto it = j.find("adaptive_gamma"); it != j.end()) {
        check_keys(*it, "spec.adaptive_gamma", {"enabled", "min", "max"});
        get(*it, "spec.adaptive_gamma", "enabled", c.adaptive_gamma.enabled);
        get(*it, "spec.adaptive_gamma", "min", c.adaptive_gamma.min);
        get(*it, "spec.adaptive_gamma", "max", c.adaptive_gamma.max);
    }
    get(j, w, "lenience", c.lenience);
    get(j, w, "k_matrix", c.k_matrix);
    if (auto it = j.find("length_mode"); it != j.end()) {
        const std::string v = it->is_string() ? it->get<std::string>() : "";
        if (v != "truncate" && v != "threshold")
            throw std::invalid_argument("spec.length_mode: expected \"truncate\" or \"threshold\", got " + it->dump());
        c.length_mode = v == "truncate" ? LengthMode::truncate : LengthMode::threshold;
    }
    get(j, w, "maxgram_block", c.maxgram_block);
    get(j, w, "max_new_tokens", c.max_new_tokens);
    get(j, w, "prompt_ids", c.prompt_ids);
    get(j, w, "prompt", c.prompt);
    get(j, w, "dataset", c.dataset);
    get(j, w, "task", c.task);
    get(j, w, "max_prompts", c.max_prompts);
    if (auto it = j.find("context"); it != j.end()) {
        check_keys(*it, "spec.context", {"n_ctx", "n_batch", "path", "int8_activations", "rollback", "max_rollback"});
        get(j, w, "context", c.context);
    }
    get(j, w, "baseline", c.baseline);
    get(j, w, "eos", c.eos);
}

SpecConfig load_spec_config(const std::string& path) {
    const std::string text = read_input_file(path, kMaxConfigFileBytes, "config file");
    nlohmann::json j;
    try {
        j = parse_json(text, path);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
    }
    SpecConfig c;
    try {
        from_json(j, c);
        c.validate();
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(path + ": " + e.what());
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return c;
}

}  // namespace speculum::engine

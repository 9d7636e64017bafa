// SpecConfig JSON: writing, strict reading (unknown keys and wrong types name the key) and loading a config file.
#include "core/engine/spec_config.h"
#include "core/json_reader.h"

#include "core/file_io.h"
#include "core/json_input.h"

#include <set>
#include <stdexcept>

namespace speculum::engine {

namespace {

// One name table per enum, for writing and reading (JsonReader::get_enum).
constexpr std::pair<const char*, Verification> kVerificationNames[] = {
    {"chain", Verification::chain}, {"tree", Verification::tree}, {"cats", Verification::cats}};
constexpr std::pair<const char*, LengthMode> kLengthModeNames[] = {{"truncate", LengthMode::truncate},
                                                                   {"threshold", LengthMode::threshold}};
constexpr std::pair<const char*, TreeKind> kTreeKindNames[]     = {{"static", TreeKind::static_shape},
                                                                   {"top_k", TreeKind::top_k},
                                                                   {"sequoia", TreeKind::sequoia},
                                                                   {"chain_second", TreeKind::chain_second},
                                                                   {"dynamic", TreeKind::dynamic}};

// The name of `v` in a (name, value) table.
template <class E, size_t N>
const char* name_of(const std::pair<const char*, E> (&names)[N], E v) {
    for (const auto& [n, e] : names)
        if (e == v) return n;
    return names[0].first;
}

}  // namespace

void to_json(nlohmann::json& j, const SpecConfig& c) {
    nlohmann::json levels = nlohmann::json::array();
    for (const auto& l : c.levels) levels.push_back(l);
    const TreeConfig& t = c.tree;
    j                   = nlohmann::json{
        {"levels", levels},
        {"gamma", c.gamma},
        {"verification", name_of(kVerificationNames, c.verification)},
        {"cats",
                           {{"draft_layers", c.cats.draft_layers},
                            {"sv_layers", c.cats.sv_layers},
                            {"dram_budget_gb", c.cats.dram_budget_gb},
                            {"typical", c.cats.typical},
                            {"typical_epsilon", c.cats.typical_epsilon},
                            {"typical_delta", c.cats.typical_delta}}},
        {"tree",
                           {{"kind", name_of(kTreeKindNames, t.kind)},
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

namespace {

void read_tree(const nlohmann::json& j, const std::string& where, TreeConfig& t) {
    JsonReader r(j, where);
    if (const nlohmann::json* k = r.sub("kind"); k && k->is_string() && k->get<std::string>() == "cats")
        r.fail(r.at("kind"),
               "\"cats\" was renamed \"chain_second\" (a chain plus the draft's second choice as a leaf at each "
               "position); CATS's three-stage process is \"verification\": \"cats\" with a \"cats\" section");
    r.get_enum("kind", t.kind, kTreeKindNames);
    r.get("branching", t.branching);
    r.get("top_k", t.top_k);
    r.get("depth", t.depth);
    r.get("node_budget", t.node_budget);
    r.get("max_depth", t.max_depth);
    r.get("prior", t.prior);
    r.get("refit_every", t.refit_every);
    r.finish();
}

void read_cats(const nlohmann::json& j, const std::string& where, CatsConfig& c) {
    JsonReader r(j, where);
    r.get("draft_layers", c.draft_layers);
    r.get("sv_layers", c.sv_layers);
    r.get("dram_budget_gb", c.dram_budget_gb);
    r.get("typical", c.typical);
    r.get("typical_epsilon", c.typical_epsilon);
    r.get("typical_delta", c.typical_delta);
    r.finish();
}

void read_repeats(const nlohmann::json& j, const std::string& where, Repeats& p) {
    JsonReader r(j, where);
    r.get("min", p.min);
    r.get("max", p.max);
    r.get("min_time_s", p.min_time_s);
    r.get("max_time_s", p.max_time_s);
    r.get("rel_width", p.rel_width);
    r.finish();
}

void read_adaptive(const nlohmann::json& j, const std::string& where, AdaptiveGamma& a) {
    JsonReader r(j, where);
    r.get("enabled", a.enabled);
    r.get("min", a.min);
    r.get("max", a.max);
    r.finish();
}

// A nested value with its own strict reader (SamplerConfig reads as "sampling", ContextConfig as "context"): its
// errors name the path from the spec down ("spec.context.n_ctx: ...").
template <class T>
void read_nested(const nlohmann::json& j, T& out) {
    try {
        out = j.get<T>();
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("spec.") + e.what());
    }
}

}  // namespace

void from_json(const nlohmann::json& j, SpecConfig& c) {
    JsonReader r(j, "spec");
    c = SpecConfig{};
    if (const nlohmann::json* levels = r.sub("levels")) {
        if (!levels->is_array()) r.fail(r.at("levels"), "expected an array of draft specs");
        c.levels.clear();
        for (size_t i = 0; i < levels->size(); ++i) {
            try {
                c.levels.push_back((*levels)[i].get<drafts::DraftSpec>());
            } catch (const std::exception& e) {
                r.fail(json_path(r.at("levels"), i), e.what());
            }
        }
    }
    r.get("gamma", c.gamma);
    r.get_enum("verification", c.verification, kVerificationNames);
    if (const nlohmann::json* t = r.sub("tree")) read_tree(*t, r.at("tree"), c.tree);
    if (const nlohmann::json* v = r.sub("cats")) read_cats(*v, r.at("cats"), c.cats);
    if (const nlohmann::json* v = r.sub("sampling")) read_nested(*v, c.sampling);
    r.get("p_min", c.p_min);
    if (const nlohmann::json* v = r.sub("repeats")) read_repeats(*v, r.at("repeats"), c.repeats);
    if (const nlohmann::json* v = r.sub("adaptive_gamma")) read_adaptive(*v, r.at("adaptive_gamma"), c.adaptive_gamma);
    std::vector<double> lenience;
    r.get("lenience", lenience);
    c.lenience.assign(lenience.begin(), lenience.end());
    if (const nlohmann::json* k = r.sub("k_matrix")) {
        if (!k->is_array()) r.fail(r.at("k_matrix"), "expected an array of arrays of positions");
        for (size_t i = 0; i < k->size(); ++i) {
            const std::string row = json_path(r.at("k_matrix"), i);
            if (!(*k)[i].is_array()) r.fail(row, "expected an array of positions");
            std::vector<int32_t> counts;
            for (size_t m = 0; m < (*k)[i].size(); ++m)
                counts.push_back(int32_t(r.integer((*k)[i][m], json_path(row, m), INT32_MIN, INT32_MAX)));
            c.k_matrix.push_back(std::move(counts));
        }
    }
    r.get_enum("length_mode", c.length_mode, kLengthModeNames);
    r.get("maxgram_block", c.maxgram_block);
    r.get("max_new_tokens", c.max_new_tokens);
    r.get("prompt_ids", c.prompt_ids);
    r.get("prompt", c.prompt);
    r.get("dataset", c.dataset);
    r.get("task", c.task);
    r.get("max_prompts", c.max_prompts);
    if (const nlohmann::json* v = r.sub("context")) read_nested(*v, c.context);
    r.get("baseline", c.baseline);
    r.get("eos", c.eos);
    r.ignore("comment");
    r.finish();
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

// AppConfig JSON: the settings the app persists between runs, {"spec", "modeled", "preferences"}, and the flat
// layout older versions wrote. Missing keys keep their defaults; unknown keys and wrong types are errors naming the
// key ("ui.modeled.context: expected an integer, got \"x\"").
#include "core/json_reader.h"
#include "ui/model/app_config.h"

#include <stdexcept>
#include <utility>

namespace speculum::ui {

namespace {

using nlohmann::json;

// A list of objects at `key`, each read by `one` through its own reader (the path names the element).
template <class Fn>
void read_objects(JsonReader& r, const char* key, size_t max, Fn&& one) {
    const json* v = r.sub(key);
    if (!v) return;
    if (!v->is_array()) r.fail(r.at(key), "expected an array, got " + json_kind(*v));
    if (v->size() > max) r.fail(r.at(key), "more than " + std::to_string(max) + " entries");
    for (size_t i = 0; i < v->size(); ++i) {
        JsonReader e((*v)[i], json_path(r.at(key), i));
        one(e);
        e.finish();
    }
}

void read_segments(JsonReader& r, std::vector<analytic::HorizontalSegment>& out) {
    if (!r.has("horizontal")) return;
    out.clear();
    read_objects(r, "horizontal", 64, [&](JsonReader& e) {
        analytic::HorizontalSegment s;
        e.get("alpha", s.alpha), e.get("c", s.c), e.get("count", s.count);
        out.push_back(s);
    });
}

// --- the flat layout written before SpecConfig was the app's state (still loaded) ------------------------------

void read_legacy_tree(const json& j, const std::string& where, AppConfig& c) {
    static constexpr std::pair<const char*, TreeMode> kModes[] = {{"chain", TreeMode::chain},
                                                                  {"branching", TreeMode::branching},
                                                                  {"budget", TreeMode::budget},
                                                                  {"optimal", TreeMode::optimal_measured}};
    JsonReader r(j, where);
    if (r.has("mode")) {
        TreeMode mode = TreeMode::chain;
        r.get_enum("mode", mode, kModes);
        set_tree_mode(c, mode);
    }
    r.get("branching", c.spec.tree.branching);
    if (r.has("budget")) {
        int32_t budget = 0;
        r.get("budget", budget);
        c.spec.tree.node_budget = budget - 1;  // the flat layout counted the root
    }
    r.get("max_depth", c.spec.tree.max_depth);
    r.get("rank_acceptance", c.spec.tree.prior);
    r.finish();
}

// Cascade levels below level 1 in the flat layout: {drafter, alpha, c, steps}. A self level was the target's
// first layer and a model level level 1's model (its path resolved when measuring), as the editor made them.
void read_legacy_cascade(JsonReader& r, AppConfig& c) {
    static constexpr std::pair<const char*, drafts::DraftKind> kKinds[] = {{"self", drafts::DraftKind::self},
                                                                           {"model", drafts::DraftKind::model},
                                                                           {"maxgram", drafts::DraftKind::maxgram},
                                                                           {"ngram", drafts::DraftKind::ngram}};
    if (!r.has("cascade")) return;
    c.spec.levels.resize(1), c.spec.gamma.resize(1), c.modeled.levels.resize(1);
    read_objects(r, "cascade", 7, [&](JsonReader& e) {
        drafts::DraftSpec d;
        LevelAssumption a;
        int32_t steps = 4;
        e.get_enum("drafter", d.kind, kKinds);
        e.get("alpha", a.alpha), e.get("c", a.c), e.get("steps", steps);
        if (d.kind == drafts::DraftKind::self) d.exit_layer = 0, d.label = "self: exit@0";
        c.spec.levels.push_back(d), c.spec.gamma.push_back(steps), c.modeled.levels.push_back(a);
    });
}

void from_legacy_json(JsonReader& r, AppConfig& c) {
    if (const json* draft = r.sub("draft")) {
        try {
            c.draft() = draft->get<drafts::DraftSpec>();
        } catch (const std::exception& e) {
            r.fail(r.at("draft"), e.what());
        }
    }
    r.get("gamma", c.spec.gamma.at(0));
    r.get("p_min", c.spec.p_min);
    r.get("temperature", c.spec.sampling.temperature);
    r.get("alpha", c.level1().alpha);
    r.get("cost_ratio", c.level1().c);
    if (const json* tree = r.sub("tree")) read_legacy_tree(*tree, r.at("tree"), c);
    read_legacy_cascade(r, c);  // after level 1 and its γ, which it keeps
    read_segments(r, c.modeled.horizontal);
    r.get("hardware_profile", c.modeled.hardware_profile);
    r.get("context", c.modeled.context);
    r.get("measure_tokens", c.spec.max_new_tokens);
    r.get("measure_prompts", c.spec.max_prompts);
}

// --- the current layout ---------------------------------------------------------------------------------------

void read_modeled(const json& j, const std::string& where, ModeledAssumptions& m) {
    JsonReader r(j, where);
    if (r.has("levels")) m.levels.clear();
    read_objects(r, "levels", 8, [&](JsonReader& e) {
        LevelAssumption a;
        e.get("alpha", a.alpha), e.get("c", a.c);
        m.levels.push_back(a);
    });
    read_segments(r, m.horizontal);
    r.get("hardware_profile", m.hardware_profile);
    r.get("context", m.context);
    if (const json* p = r.sub("acceptance_profile")) {
        JsonReader pr(*p, r.at("acceptance_profile"));
        LoadedAcceptanceProfile loaded;
        pr.get("path", loaded.path);
        if (const json* body = pr.sub("profile")) {
            try {
                loaded.profile = body->get<engine::AcceptanceProfile>();
            } catch (const std::exception& e) {
                pr.fail(pr.at("profile"), e.what());
            }
        }
        pr.finish();
        m.acceptance_profile = std::move(loaded);
    }
    r.finish();
}

void read_preferences(const json& j, const std::string& where, Preferences& p) {
    static constexpr std::pair<const char*, bool> kPriors[] = {{"assumed", false}, {"measured", true}};
    JsonReader r(j, where);
    r.get_enum("tree_prior", p.tree_prior_measured, kPriors);
    r.get("auto_measure", p.auto_measure);
    r.finish();
}

}  // namespace

void to_json(nlohmann::json& j, const AppConfig& c) {
    nlohmann::json levels = nlohmann::json::array(), horizontal = nlohmann::json::array();
    for (const auto& l : c.modeled.levels) levels.push_back({{"alpha", l.alpha}, {"c", l.c}});
    for (const auto& s : c.modeled.horizontal)
        horizontal.push_back({{"alpha", s.alpha}, {"c", s.c}, {"count", s.count}});
    j = nlohmann::json{
        {"spec", c.spec},
        {"modeled",
         {{"levels", levels},
          {"horizontal", horizontal},
          {"hardware_profile", c.modeled.hardware_profile},
          {"context", c.modeled.context}}},
        {"preferences",
         {{"tree_prior", c.prefs.tree_prior_measured ? "measured" : "assumed"},
          {"auto_measure", c.prefs.auto_measure}}},
    };
    if (c.modeled.acceptance_profile)
        j["modeled"]["acceptance_profile"] = {{"path", c.modeled.acceptance_profile->path},
                                              {"profile", c.modeled.acceptance_profile->profile}};
}

void from_json(const nlohmann::json& j, AppConfig& out) {
    JsonReader r(j, "ui");
    AppConfig c;
    if (!r.has("spec") && !r.has("modeled") && !r.has("preferences")) {
        from_legacy_json(r, c);
    } else {
        if (const json* spec = r.sub("spec")) {
            try {
                c.spec = spec->get<engine::SpecConfig>();
            } catch (const std::exception& e) {
                r.fail(r.at("spec"), e.what());
            }
        }
        if (const json* modeled = r.sub("modeled")) read_modeled(*modeled, r.at("modeled"), c.modeled);
        if (const json* prefs = r.sub("preferences")) read_preferences(*prefs, r.at("preferences"), c.prefs);
    }
    r.finish();
    normalize(c);
    out = std::move(c);
}

}  // namespace speculum::ui

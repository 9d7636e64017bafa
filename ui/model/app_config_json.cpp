// AppConfig JSON: the settings the app persists between runs, {"spec", "modeled", "preferences"}, and the flat
// layout older versions wrote. Missing keys keep their defaults; unknown keys and wrong types are errors naming the
// key ("ui.modeled.context: expected an integer, got \"x\"").
#include "core/json_reader.h"
#include "ui/model/app_config.h"

#include <stdexcept>

namespace speculum::ui {

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& why) {
    throw std::invalid_argument(where + ": " + why);
}

void require_object(const nlohmann::json& j, const std::string& where) {
    if (!j.is_object()) bad(where, std::string("expected a JSON object, got ") + j.type_name());
}

void read(const nlohmann::json& v, const std::string& where, int& out) {
    if (!v.is_number_integer()) bad(where, "expected an integer, got " + v.dump());
    const auto x = v.get<int64_t>();
    if (x < INT32_MIN || x > INT32_MAX) bad(where, "integer out of range: " + v.dump());
    out = int(x);
}

void read(const nlohmann::json& v, const std::string& where, double& out) {
    if (!v.is_number()) bad(where, "expected a number, got " + v.dump());
    out = v.get<double>();
}

void read(const nlohmann::json& v, const std::string& where, float& out) {
    double d = 0;
    read(v, where, d);
    out = float(d);
}

void read(const nlohmann::json& v, const std::string& where, std::string& out) {
    if (!v.is_string()) bad(where, "expected a string, got " + v.dump());
    out = v.get<std::string>();
}

template <class T>
void read_list(const nlohmann::json& v, const std::string& where, std::vector<T>& out) {
    if (!v.is_array()) bad(where, "expected an array, got " + v.dump());
    if (v.size() > 4096) bad(where, "more than 4096 entries");
    out.assign(v.size(), T{});
    for (size_t i = 0; i < v.size(); ++i) read(v[i], where + "[" + std::to_string(i) + "]", out[i]);
}

// --- the flat layout written before SpecConfig was the app's state (still loaded) ------------------------------

void read_legacy_tree(const nlohmann::json& j, const std::string& w, AppConfig& c) {
    require_object(j, w);
    for (const auto& [key, v] : j.items()) {
        const std::string f = w + "." + key;
        if (key == "mode") {
            std::string s;
            read(v, f, s);
            if (s == "chain")
                set_tree_mode(c, TreeMode::chain);
            else if (s == "branching")
                set_tree_mode(c, TreeMode::branching);
            else if (s == "budget")
                set_tree_mode(c, TreeMode::budget);
            else if (s == "optimal")
                set_tree_mode(c, TreeMode::optimal_measured);
            else
                bad(f, "expected \"chain\", \"branching\", \"budget\" or \"optimal\", got \"" + s + "\"");
        } else if (key == "branching") {
            read_list(v, f, c.spec.tree.branching);
        } else if (key == "budget") {
            int budget = 0;
            read(v, f, budget);
            c.spec.tree.node_budget = budget - 1;  // the flat layout counted the root
        } else if (key == "max_depth") {
            read(v, f, c.spec.tree.max_depth);
        } else if (key == "rank_acceptance") {
            read_list(v, f, c.spec.tree.prior);
        } else {
            throw_unknown_key(f);
        }
    }
}

drafts::DraftKind parse_kind(const nlohmann::json& v, const std::string& where) {
    std::string s;
    read(v, where, s);
    for (auto k :
         {drafts::DraftKind::self, drafts::DraftKind::model, drafts::DraftKind::maxgram, drafts::DraftKind::ngram})
        if (s == drafts::to_string(k)) return k;
    bad(where, "expected \"self\", \"model\", \"maxgram\" or \"ngram\", got \"" + s + "\"");
}

void read_segments(const nlohmann::json& v, const std::string& f, std::vector<analytic::HorizontalSegment>& out) {
    if (!v.is_array()) bad(f, "expected an array, got " + v.dump());
    if (v.size() > 64) bad(f, "more than 64 entries");
    out.clear();
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string fi = f + "[" + std::to_string(i) + "]";
        require_object(v[i], fi);
        analytic::HorizontalSegment s;
        for (const auto& [k, x] : v[i].items()) {
            const std::string fk = fi + "." + k;
            if (k == "alpha")
                read(x, fk, s.alpha);
            else if (k == "c")
                read(x, fk, s.c);
            else if (k == "count")
                read(x, fk, s.count);
            else
                throw_unknown_key(fk);
        }
        out.push_back(s);
    }
}

// Cascade levels below level 1 in the flat layout: {drafter, alpha, c, steps}. A self level was the target's
// first layer and a model level level 1's model (its path resolved when measuring), as the editor made them.
void read_legacy_cascade(const nlohmann::json& v, const std::string& f, AppConfig& c) {
    if (!v.is_array()) bad(f, "expected an array, got " + v.dump());
    if (v.size() > 7) bad(f, "more than 7 levels below level 1");
    c.spec.levels.resize(1), c.spec.gamma.resize(1), c.modeled.levels.resize(1);
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string fi = f + "[" + std::to_string(i) + "]";
        require_object(v[i], fi);
        drafts::DraftSpec d;
        LevelAssumption a;
        int steps = 4;
        for (const auto& [k, x] : v[i].items()) {
            const std::string fk = fi + "." + k;
            if (k == "drafter")
                d.kind = parse_kind(x, fk);
            else if (k == "alpha")
                read(x, fk, a.alpha);
            else if (k == "c")
                read(x, fk, a.c);
            else if (k == "steps")
                read(x, fk, steps);
            else
                throw_unknown_key(fk);
        }
        if (d.kind == drafts::DraftKind::self) d.exit_layer = 0, d.label = "self: exit@0";
        c.spec.levels.push_back(d), c.spec.gamma.push_back(steps), c.modeled.levels.push_back(a);
    }
}

void from_legacy_json(const nlohmann::json& j, const std::string& w, AppConfig& c) {
    nlohmann::json cascade;  // read after level 1 and its γ, which it keeps
    for (const auto& [key, v] : j.items()) {
        const std::string f = w + "." + key;
        if (key == "draft") {
            try {
                c.draft() = v.get<drafts::DraftSpec>();
            } catch (const std::exception& e) {
                bad(f, e.what());
            }
        } else if (key == "gamma")
            read(v, f, c.spec.gamma.at(0));
        else if (key == "p_min")
            read(v, f, c.spec.p_min);
        else if (key == "temperature")
            read(v, f, c.spec.sampling.temperature);
        else if (key == "alpha")
            read(v, f, c.level1().alpha);
        else if (key == "cost_ratio")
            read(v, f, c.level1().c);
        else if (key == "tree")
            read_legacy_tree(v, f, c);
        else if (key == "cascade")
            cascade = v;
        else if (key == "horizontal")
            read_segments(v, f, c.modeled.horizontal);
        else if (key == "hardware_profile")
            read(v, f, c.modeled.hardware_profile);
        else if (key == "context")
            read(v, f, c.modeled.context);
        else if (key == "measure_tokens")
            read(v, f, c.spec.max_new_tokens);
        else if (key == "measure_prompts")
            read(v, f, c.spec.max_prompts);
        else
            throw_unknown_key(f);
    }
    if (!cascade.is_null()) read_legacy_cascade(cascade, w + ".cascade", c);
}

// --- the current layout ---------------------------------------------------------------------------------------

void read_modeled(const nlohmann::json& j, const std::string& w, ModeledAssumptions& m) {
    require_object(j, w);
    for (const auto& [key, v] : j.items()) {
        const std::string f = w + "." + key;
        if (key == "levels") {
            if (!v.is_array()) bad(f, "expected an array, got " + v.dump());
            if (v.size() > 8) bad(f, "more than 8 levels");
            m.levels.clear();
            for (size_t i = 0; i < v.size(); ++i) {
                const std::string fi = f + "[" + std::to_string(i) + "]";
                require_object(v[i], fi);
                LevelAssumption a;
                for (const auto& [k, x] : v[i].items()) {
                    if (k == "alpha")
                        read(x, fi + ".alpha", a.alpha);
                    else if (k == "c")
                        read(x, fi + ".c", a.c);
                    else
                        throw_unknown_key(fi + "." + k);
                }
                m.levels.push_back(a);
            }
        } else if (key == "horizontal")
            read_segments(v, f, m.horizontal);
        else if (key == "hardware_profile")
            read(v, f, m.hardware_profile);
        else if (key == "context")
            read(v, f, m.context);
        else
            throw_unknown_key(f);
    }
}

void read_preferences(const nlohmann::json& j, const std::string& w, Preferences& p) {
    require_object(j, w);
    for (const auto& [key, v] : j.items()) {
        const std::string f = w + "." + key;
        if (key != "tree_prior") throw_unknown_key(f);
        std::string s;
        read(v, f, s);
        if (s != "assumed" && s != "measured") bad(f, "expected \"assumed\" or \"measured\", got \"" + s + "\"");
        p.tree_prior_measured = s == "measured";
    }
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
        {"preferences", {{"tree_prior", c.prefs.tree_prior_measured ? "measured" : "assumed"}}},
    };
}

void from_json(const nlohmann::json& j, AppConfig& out) {
    const std::string w = "ui";
    require_object(j, w);
    AppConfig c;
    if (!j.contains("spec") && !j.contains("modeled") && !j.contains("preferences")) {
        from_legacy_json(j, w, c);
    } else {
        for (const auto& [key, v] : j.items()) {
            const std::string f = w + "." + key;
            if (key == "spec") {
                try {
                    c.spec = v.get<engine::SpecConfig>();
                } catch (const std::exception& e) {
                    bad(f, e.what());
                }
            } else if (key == "modeled")
                read_modeled(v, f, c.modeled);
            else if (key == "preferences")
                read_preferences(v, f, c.prefs);
            else
                throw_unknown_key(f);
        }
    }
    normalize(c);
    out = std::move(c);
}

}  // namespace speculum::ui

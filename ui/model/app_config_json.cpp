// AppConfig JSON: the settings the app persists between runs. Missing keys keep their defaults (older files load);
// unknown keys and wrong types are errors naming the key ("ui.tree.budget: expected an integer, got \"x\"").
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

const char* tree_mode_key(TreeMode m) {
    switch (m) {
        case TreeMode::chain:
            return "chain";
        case TreeMode::branching:
            return "branching";
        case TreeMode::budget:
            return "budget";
        case TreeMode::optimal_measured:
            return "optimal";
    }
    return "chain";
}

drafts::DraftKind parse_kind(const nlohmann::json& v, const std::string& where) {
    std::string s;
    read(v, where, s);
    for (auto k : {drafts::DraftKind::self, drafts::DraftKind::model, drafts::DraftKind::maxgram})
        if (s == drafts::to_string(k)) return k;
    bad(where, "expected \"self\", \"model\" or \"maxgram\", got \"" + s + "\"");
}

void read_tree(const nlohmann::json& j, const std::string& w, TreeConfig& t) {
    require_object(j, w);
    for (const auto& [key, v] : j.items()) {
        const std::string f = w + "." + key;
        if (key == "mode") {
            std::string s;
            read(v, f, s);
            bool found = false;
            for (auto m : {TreeMode::chain, TreeMode::branching, TreeMode::budget, TreeMode::optimal_measured})
                if (s == tree_mode_key(m)) t.mode = m, found = true;
            if (!found) bad(f, "expected \"chain\", \"branching\", \"budget\" or \"optimal\", got \"" + s + "\"");
        } else if (key == "branching")
            read_list(v, f, t.branching);
        else if (key == "budget")
            read(v, f, t.budget);
        else if (key == "max_depth")
            read(v, f, t.max_depth);
        else if (key == "rank_acceptance")
            read_list(v, f, t.rank_acceptance);
        else
            bad(f, "is not a known key");
    }
}

}  // namespace

void to_json(nlohmann::json& j, const AppConfig& c) {
    nlohmann::json cascade = nlohmann::json::array(), horizontal = nlohmann::json::array();
    for (const auto& l : c.cascade)
        cascade.push_back(
            {{"drafter", drafts::to_string(l.drafter)}, {"alpha", l.alpha}, {"c", l.c}, {"steps", l.steps}});
    for (const auto& s : c.horizontal) horizontal.push_back({{"alpha", s.alpha}, {"c", s.c}, {"count", s.count}});
    j = nlohmann::json{
        {"draft", c.draft},
        {"gamma", c.gamma},
        {"p_min", c.p_min},
        {"temperature", c.temperature},
        {"alpha", c.alpha},
        {"cost_ratio", c.cost_ratio},
        {"tree",
         {{"mode", tree_mode_key(c.tree.mode)},
          {"branching", c.tree.branching},
          {"budget", c.tree.budget},
          {"max_depth", c.tree.max_depth},
          {"rank_acceptance", c.tree.rank_acceptance}}},
        {"cascade", cascade},
        {"horizontal", horizontal},
        {"hardware_profile", c.hardware_profile},
        {"context", c.context},
        {"measure_tokens", c.measure_tokens},
        {"measure_prompts", c.measure_prompts},
    };
}

void from_json(const nlohmann::json& j, AppConfig& out) {
    const std::string w = "ui";
    require_object(j, w);
    AppConfig c;
    for (const auto& [key, v] : j.items()) {
        const std::string f = w + "." + key;
        if (key == "draft") {
            try {
                c.draft = v.get<drafts::DraftSpec>();
            } catch (const std::exception& e) {
                bad(f, e.what());
            }
        } else if (key == "gamma")
            read(v, f, c.gamma);
        else if (key == "p_min")
            read(v, f, c.p_min);
        else if (key == "temperature")
            read(v, f, c.temperature);
        else if (key == "alpha")
            read(v, f, c.alpha);
        else if (key == "cost_ratio")
            read(v, f, c.cost_ratio);
        else if (key == "tree")
            read_tree(v, f, c.tree);
        else if (key == "cascade" || key == "horizontal") {
            if (!v.is_array()) bad(f, "expected an array, got " + v.dump());
            if (v.size() > 64) bad(f, "more than 64 entries");
            if (key == "cascade")
                c.cascade.clear();
            else
                c.horizontal.clear();
            for (size_t i = 0; i < v.size(); ++i) {
                const std::string fi = f + "[" + std::to_string(i) + "]";
                require_object(v[i], fi);
                CascadeLevelConfig l;
                analytic::HorizontalSegment s;
                for (const auto& [k, x] : v[i].items()) {
                    const std::string fk = fi + "." + k;
                    if (key == "cascade" && k == "drafter")
                        l.drafter = parse_kind(x, fk);
                    else if (k == "alpha")
                        read(x, fk, key == "cascade" ? l.alpha : s.alpha);
                    else if (k == "c")
                        read(x, fk, key == "cascade" ? l.c : s.c);
                    else if (key == "cascade" && k == "steps")
                        read(x, fk, l.steps);
                    else if (key == "horizontal" && k == "count")
                        read(x, fk, s.count);
                    else
                        bad(fk, "is not a known key");
                }
                if (key == "cascade")
                    c.cascade.push_back(l);
                else
                    c.horizontal.push_back(s);
            }
        } else if (key == "hardware_profile")
            read(v, f, c.hardware_profile);
        else if (key == "context")
            read(v, f, c.context);
        else if (key == "measure_tokens")
            read(v, f, c.measure_tokens);
        else if (key == "measure_prompts")
            read(v, f, c.measure_prompts);
        else
            bad(f, "is not a known key");
    }
    out = std::move(c);
}

void AppConfig::validate() const {
    const std::vector<std::string> p = problems();
    if (p.empty()) return;
    std::string all = "ui config: " + p.front();
    for (size_t i = 1; i < p.size(); ++i) all += "; " + p[i];
    throw std::invalid_argument(all);
}

}  // namespace speculum::ui

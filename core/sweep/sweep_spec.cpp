// SweepSpec parsing, validation and grid indexing (see sweep_spec.h).
#include "core/sweep/sweep_spec.h"
#include "core/json_reader.h"

#include "core/json_input.h"

#include "core/store/result_store.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

namespace speculum::sweep {

using nlohmann::json;

// ---- field readers ----

namespace {

// A validation error: "spec.FIELD: WHY", the form the reader's errors take.
[[noreturn]] void bad(const std::string& field, const std::string& why) {
    throw_json_error("spec." + field, why);
}

// ---- ranges ----

// 12 significant digits, so 0.1 steps give 0.3 and not 0.30000000000000004 (the value is hashed).
double tidy(double v) {
    if (v == 0 || !std::isfinite(v)) return v;
    double scale = std::pow(10.0, 11 - std::floor(std::log10(std::fabs(v))));
    return std::round(v * scale) / scale;
}

constexpr size_t kMaxAxisValues = 100000;

std::vector<json> expand_range(const json& range, const std::string& field) {
    JsonReader r(range, field);
    double from = 0, to = 0, step = 0;
    int count = 0;
    bool log  = false;
    if (!r.has("from") || !r.has("to")) throw_json_error(field, "needs from and to");
    r.get("from", from), r.get("to", to), r.get("log", log);
    r.get("step", step), r.get("count", count);
    r.finish();
    if (r.has("step") == r.has("count")) throw_json_error(field, "needs exactly one of step and count");
    if (to < from) throw_json_error(r.at("to"), "must be >= from");
    std::vector<json> out;
    if (r.has("step")) {
        if (!(step > 0)) throw_json_error(r.at("step"), "must be > 0");
        if (log) throw_json_error(r.at("log"), "applies to count, not step");
        double n = std::floor((to - from) / step + 1e-9) + 1;
        if (n > kMaxAxisValues)
            throw_json_error(field, "expands to more than " + std::to_string(kMaxAxisValues) + " values");
        // Integer from/to/step give integers (layer indices, k, bits must stay JSON integers).
        const bool integers =
            range["from"].is_number_integer() && range["to"].is_number_integer() && range["step"].is_number_integer();
        for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
            if (integers)
                out.push_back(range["from"].get<int64_t>() + i * range["step"].get<int64_t>());
            else
                out.push_back(tidy(from + static_cast<double>(i) * step));
        }
    } else {
        if (count < 1 || static_cast<size_t>(count) > kMaxAxisValues)
            throw_json_error(r.at("count"), "must be in [1, " + std::to_string(kMaxAxisValues) + "]");
        if (log && !(from > 0)) throw_json_error(r.at("from"), "must be > 0 for a log range");
        for (int i = 0; i < count; ++i) {
            double t = count == 1 ? 0.0 : static_cast<double>(i) / (count - 1);
            double v = log ? from * std::pow(to / from, t) : from + t * (to - from);
            out.push_back(tidy(v));
        }
    }
    return out;
}

bool known_metric(const std::string& m) {
    const auto& cols = store::metric_columns();
    return std::find(cols.begin(), cols.end(), m) != cols.end();
}

std::string metric_list() {
    std::string s;
    for (const auto& c : store::metric_columns()) s += (s.empty() ? "" : ", ") + c;
    return s;
}

}  // namespace

// ---- parsing ----

SweepSpec sweep_spec_from_json(const json& j) {
    static constexpr std::pair<const char*, SamplingMode> kModes[] = {{"grid", SamplingMode::grid},
                                                                      {"random", SamplingMode::random},
                                                                      {"adaptive", SamplingMode::adaptive},
                                                                      {"bayesian", SamplingMode::bayesian}};
    static constexpr std::pair<const char*, bool> kGoals[]         = {{"max", true}, {"min", false}};
    JsonReader r(j, "spec");
    SweepSpec s;
    r.get("name", s.name), r.get("evaluator", s.evaluator), r.get("task", s.task), r.get("prompts", s.prompts);
    if (const json* t = r.sub("target")) s.target = *t;
    if (const json* base = r.sub("base")) {
        if (!base->is_object()) throw_json_error(r.at("base"), "expected a JSON object, got " + json_kind(*base));
        s.base = *base;
    }
    if (const json* axes = r.sub("axes")) {
        if (!axes->is_array()) throw_json_error(r.at("axes"), "expected an array, got " + json_kind(*axes));
        for (size_t i = 0; i < axes->size(); ++i) {
            JsonReader a((*axes)[i], json_path(r.at("axes"), i));
            Axis axis;
            a.need("path");
            a.get("path", axis.path), a.get("name", axis.name), a.get("encoding", axis.encoding);
            const json* values = a.sub("values");
            const json* range  = a.sub("range");
            a.finish();
            if (!values == !range) throw_json_error(a.where(), "needs exactly one of values and range");
            if (values) {
                if (!values->is_array())
                    throw_json_error(a.at("values"), "must be an array of values, got " + json_kind(*values));
                axis.values.assign(values->begin(), values->end());
            } else {
                axis.values = expand_range(*range, a.at("range"));
                if (range->value("log", false) && !a.has("encoding")) axis.encoding = "log";
            }
            s.axes.push_back(std::move(axis));
        }
    }
    if (const json* sampling = r.sub("sampling")) {
        JsonReader m(*sampling, r.at("sampling"));
        m.get_enum("mode", s.sampling.mode, kModes);
        m.get("n", s.sampling.n), m.get("seed", s.sampling.seed), m.get("eta", s.sampling.eta);
        m.get("min_prompts", s.sampling.min_prompts), m.get("max_prompts", s.sampling.max_prompts);
        m.get("initial", s.sampling.initial), m.get("kernel", s.sampling.kernel), m.get("xi", s.sampling.xi);
        m.get("batch", s.sampling.batch);
        m.finish();
    }
    if (const json* objective = r.sub("objective")) {
        JsonReader o(*objective, r.at("objective"));
        o.get("metric", s.objective.metric);
        o.get_enum("goal", s.objective.maximize, kGoals);
        o.finish();
    }
    if (const json* constraints = r.sub("constraints")) {
        if (!constraints->is_array())
            throw_json_error(r.at("constraints"), "expected an array, got " + json_kind(*constraints));
        for (size_t i = 0; i < constraints->size(); ++i) {
            JsonReader c((*constraints)[i], json_path(r.at("constraints"), i));
            Constraint con;
            c.need("metric");
            c.get("metric", con.metric);
            for (auto [key, bound] : {std::pair{"min", &con.min}, {"max", &con.max}})
                if (c.has(key)) c.get(key, bound->emplace());
            c.finish();
            s.constraints.push_back(con);
        }
    }
    r.finish();
    s.validate();
    return s;
}

// ---- validation ----

void SweepSpec::validate() const {
    if (name.empty()) bad("name", "must not be empty");
    // Names and values are copied into every configuration, row and table: a 50 MB name made a sweep crawl.
    auto check_length = [](const std::string& field, const std::string& text) {
        if (text.size() > kMaxSweepNameBytes)
            bad(field, "is " + std::to_string(text.size()) + " bytes long; the limit is " +
                           std::to_string(kMaxSweepNameBytes));
    };
    check_length("name", name);
    check_length("task", task);
    if (evaluator != "predict" && evaluator != "spec-predict" && evaluator != "engine")
        bad("evaluator", "must be predict, spec-predict or engine, got '" + evaluator + "'");
    if (!base.is_object()) bad("base", "must be an object");
    if (!target.is_null() && !target.is_string() && !(target.is_object() && target.contains("synthetic")))
        bad("target", "must be a GGUF path or {\"synthetic\": {...}}");
    if (evaluator != "engine" && !target.is_null()) bad("target", "applies to the engine evaluator only");
    if (prompts < 0) bad("prompts", "must be >= 0");
    std::set<std::string> paths;
    for (size_t i = 0; i < axes.size(); ++i) {
        std::string field = "axes[" + std::to_string(i) + "]";
        const Axis& a     = axes[i];
        if (a.path.empty() || a.path[0] != '/') bad(field + ".path", "must be a JSON pointer starting with '/'");
        try {
            check_json_pointer(a.path, "");  // a hostile path (30,000 segments) must not build 30,000 objects
        } catch (const std::invalid_argument& e) {
            bad(field + ".path", std::string(e.what()).substr(2));
        }
        try {
            json::json_pointer p(a.path);
        } catch (const json::exception& e) {
            bad(field + ".path", std::string("is not a valid JSON pointer: ") + e.what());
        }
        if (!paths.insert(a.path).second) bad(field + ".path", "repeats an earlier axis ('" + a.path + "')");
        if (a.values.empty()) bad(field + ".values", "must not be empty");
        check_length(field + ".name", a.name);
        for (size_t k = 0; k < a.values.size(); ++k)
            if (const size_t bytes = a.values[k].dump().size(); bytes > kMaxAxisValueBytes)
                bad(field + ".values[" + std::to_string(k) + "]", "is " + std::to_string(bytes) +
                                                                      " bytes of JSON; the limit is " +
                                                                      std::to_string(kMaxAxisValueBytes));
        if (a.encoding != "auto" && a.encoding != "linear" && a.encoding != "log" && a.encoding != "categorical")
            bad(field + ".encoding", "must be auto, linear, log or categorical, got '" + a.encoding + "'");
        if (a.encoding == "linear" || a.encoding == "log") {
            for (const auto& v : a.values) {
                if (!v.is_number())
                    bad(field + ".encoding", "'" + a.encoding + "' needs numeric values, got " + v.dump());
                if (a.encoding == "log" && !(v.get<double>() > 0))
                    bad(field + ".encoding", "'log' needs values > 0, got " + v.dump());
            }
        }
    }
    if (sampling.mode == SamplingMode::grid && grid_size() > kMaxGridConfigurations)
        bad("axes", "span " + std::to_string(grid_size()) + " configurations, more than the grid limit " +
                        std::to_string(kMaxGridConfigurations) + "; use random or adaptive sampling");
    if (sampling.mode != SamplingMode::grid && sampling.n < 1) bad("sampling.n", "must be >= 1");
    if (sampling.mode == SamplingMode::adaptive) {
        if (sampling.eta < 2) bad("sampling.eta", "must be >= 2");
        if (sampling.min_prompts < 1) bad("sampling.min_prompts", "must be >= 1");
        if (sampling.max_prompts < sampling.min_prompts) bad("sampling.max_prompts", "must be >= min_prompts");
    }
    if (sampling.mode == SamplingMode::bayesian) {
        if (sampling.n > kMaxBayesianBudget)
            bad("sampling.n", "must be <= " + std::to_string(kMaxBayesianBudget) +
                                  " for bayesian (the GP costs n^3 per step); use random or adaptive sampling");
        if (sampling.initial < 0 || sampling.initial > sampling.n) bad("sampling.initial", "must be in [0, n]");
        if (sampling.kernel != "matern52" && sampling.kernel != "rbf")
            bad("sampling.kernel", "must be matern52 or rbf, got '" + sampling.kernel + "'");
        if (!(sampling.xi >= 0) || !std::isfinite(sampling.xi)) bad("sampling.xi", "must be a finite number >= 0");
        if (sampling.batch < 1 || sampling.batch > sampling.n) bad("sampling.batch", "must be in [1, n]");
    }
    if (!known_metric(objective.metric))
        bad("objective.metric", "'" + objective.metric + "' is not a metric (known: " + metric_list() + ")");
    for (size_t i = 0; i < constraints.size(); ++i) {
        std::string field = "constraints[" + std::to_string(i) + "]";
        if (!known_metric(constraints[i].metric))
            bad(field + ".metric", "'" + constraints[i].metric + "' is not a metric (known: " + metric_list() + ")");
        if (!constraints[i].min && !constraints[i].max) bad(field, "needs min or max");
        if (constraints[i].min && constraints[i].max && *constraints[i].min > *constraints[i].max)
            bad(field, "has min > max");
    }
}

// ---- grid indexing ----

uint64_t SweepSpec::grid_size() const {
    uint64_t n = 1;
    for (const auto& a : axes) {
        uint64_t k = a.values.size();
        if (k != 0 && n > std::numeric_limits<uint64_t>::max() / k) return std::numeric_limits<uint64_t>::max();
        n *= k;
    }
    return n;
}

json SweepSpec::config_at(uint64_t index) const {
    json config = base;
    for (size_t i = axes.size(); i-- > 0;) {
        const Axis& a = axes[i];
        uint64_t k    = a.values.size();
        try {
            config[json::json_pointer(a.path)] = a.values[index % k];
        } catch (const json::exception& e) {
            bad("axes[" + std::to_string(i) + "].path", "'" + a.path + "' cannot be set in base: " + e.what());
        }
        index /= k;
    }
    return config;
}

namespace {
// How an axis value reads in a progress line: a drafter (an object, or an array of draft levels) by its labels where
// every one has a label, else its JSON; shortened.
std::string axis_value_text(const json& v) {
    auto label = [](const json& o) {
        return o.is_object() && o.contains("label") && o["label"].is_string() ? o["label"].get<std::string>()
                                                                              : std::string();
    };
    std::string s = label(v);
    if (s.empty() && v.is_array() && !v.empty())
        for (const json& e : v) {
            const std::string l = label(e);
            if (l.empty()) {
                s.clear();
                break;
            }
            s += (s.empty() ? "" : " + ") + l;
        }
    const size_t most = s.empty() ? 24 : 40;  // labels are written to be read: they get more room
    if (s.empty()) s = v.dump();
    if (s.size() > most) s = s.substr(0, most - 3) + "...";
    return s;
}
}  // namespace

std::string SweepSpec::describe(uint64_t index) const {
    std::vector<std::string> parts(axes.size());
    for (size_t i = axes.size(); i-- > 0;) {
        const Axis& a = axes[i];
        uint64_t k    = a.values.size();
        std::string v = axis_value_text(a.values[index % k]);
        parts[i]      = (a.name.empty() ? a.path : a.name) + "=" + v;
        index /= k;
    }
    std::string s;
    for (const auto& p : parts) s += (s.empty() ? "" : " ") + p;
    return s.empty() ? "base" : s;
}

// ---- JSON ----

void to_json(json& j, const SweepSpec& s) {
    j              = json::object();
    j["name"]      = s.name;
    j["evaluator"] = s.evaluator;
    j["base"]      = s.base;
    j["task"]      = s.task;
    if (!s.target.is_null()) j["target"] = s.target;
    j["prompts"] = s.prompts;
    j["axes"]    = json::array();
    for (const auto& a : s.axes) {
        json ja = {{"path", a.path}, {"values", a.values}};
        if (!a.name.empty()) ja["name"] = a.name;
        if (a.encoding != "auto") ja["encoding"] = a.encoding;
        j["axes"].push_back(ja);
    }
    const char* modes[] = {"grid", "random", "adaptive", "bayesian"};
    j["sampling"]       = {{"mode", modes[static_cast<int>(s.sampling.mode)]},
                           {"n", s.sampling.n},
                           {"seed", s.sampling.seed},
                           {"eta", s.sampling.eta},
                           {"min_prompts", s.sampling.min_prompts},
                           {"max_prompts", s.sampling.max_prompts},
                           {"initial", s.sampling.initial},
                           {"kernel", s.sampling.kernel},
                           {"xi", s.sampling.xi},
                           {"batch", s.sampling.batch}};
    j["objective"]      = {{"metric", s.objective.metric}, {"goal", s.objective.maximize ? "max" : "min"}};
    j["constraints"]    = json::array();
    for (const auto& c : s.constraints) {
        json jc = {{"metric", c.metric}};
        if (c.min) jc["min"] = *c.min;
        if (c.max) jc["max"] = *c.max;
        j["constraints"].push_back(jc);
    }
}

}  // namespace speculum::sweep

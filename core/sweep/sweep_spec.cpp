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

[[noreturn]] void bad(const std::string& field, const std::string& why) {
    throw std::invalid_argument(field + " " + why);
}

void check_keys(const json& j, const std::string& field, std::initializer_list<std::string_view> allowed) {
    if (!j.is_object()) bad(field, "must be an object");
    check_known_keys(j, field, allowed);
}

const json& get(const json& j, const char* key) {
    return j.at(key);
}

double number(const json& j, const std::string& field) {
    if (!j.is_number()) bad(field, "must be a number");
    return j.get<double>();
}

int integer(const json& j, const std::string& field) {
    if (!j.is_number_integer()) bad(field, "must be an integer");
    auto v = j.get<int64_t>();
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) bad(field, "is out of range");
    return static_cast<int>(v);
}

std::string string(const json& j, const std::string& field) {
    if (!j.is_string()) bad(field, "must be a string");
    return j.get<std::string>();
}

// ---- ranges ----

// 12 significant digits, so 0.1 steps give 0.3 and not 0.30000000000000004 (the value is hashed).
double tidy(double v) {
    if (v == 0 || !std::isfinite(v)) return v;
    double scale = std::pow(10.0, 11 - std::floor(std::log10(std::fabs(v))));
    return std::round(v * scale) / scale;
}

constexpr size_t kMaxAxisValues = 100000;

std::vector<json> expand_range(const json& r, const std::string& field) {
    check_keys(r, field, {"from", "to", "step", "count", "log"});
    if (!r.contains("from") || !r.contains("to")) bad(field, "needs from and to");
    double from = number(get(r, "from"), field + ".from");
    double to   = number(get(r, "to"), field + ".to");
    bool log    = r.contains("log") && r.at("log").is_boolean() && r.at("log").get<bool>();
    if (r.contains("log") && !r.at("log").is_boolean()) bad(field + ".log", "must be true or false");
    if (r.contains("step") == r.contains("count")) bad(field, "needs exactly one of step and count");
    if (to < from) bad(field + ".to", "must be >= from");
    std::vector<json> out;
    if (r.contains("step")) {
        double step = number(get(r, "step"), field + ".step");
        if (!(step > 0)) bad(field + ".step", "must be > 0");
        if (log) bad(field + ".log", "applies to count, not step");
        double n = std::floor((to - from) / step + 1e-9) + 1;
        if (n > kMaxAxisValues) bad(field, "expands to more than " + std::to_string(kMaxAxisValues) + " values");
        // Integer from/to/step give integers (layer indices, k, bits must stay JSON integers).
        bool integers =
            r.at("from").is_number_integer() && r.at("to").is_number_integer() && r.at("step").is_number_integer();
        for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
            if (integers)
                out.push_back(r.at("from").get<int64_t>() + i * r.at("step").get<int64_t>());
            else
                out.push_back(tidy(from + static_cast<double>(i) * step));
        }
    } else {
        int count = integer(get(r, "count"), field + ".count");
        if (count < 1 || static_cast<size_t>(count) > kMaxAxisValues)
            bad(field + ".count", "must be in [1, " + std::to_string(kMaxAxisValues) + "]");
        if (log && !(from > 0)) bad(field + ".from", "must be > 0 for a log range");
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
    check_keys(
        j, "spec",
        {"name", "evaluator", "target", "base", "axes", "sampling", "objective", "constraints", "task", "prompts"});
    SweepSpec s;
    if (j.contains("name")) s.name = string(j["name"], "name");
    if (j.contains("evaluator")) s.evaluator = string(j["evaluator"], "evaluator");
    if (j.contains("task")) s.task = string(j["task"], "task");
    if (j.contains("target")) s.target = j["target"];
    if (j.contains("prompts")) s.prompts = integer(j["prompts"], "prompts");
    if (j.contains("base")) {
        if (!j["base"].is_object()) bad("base", "must be an object");
        s.base = j["base"];
    }
    if (j.contains("axes")) {
        if (!j["axes"].is_array()) bad("axes", "must be an array");
        for (size_t i = 0; i < j["axes"].size(); ++i) {
            std::string field = "axes[" + std::to_string(i) + "]";
            const json& a     = j["axes"][i];
            check_keys(a, field, {"name", "path", "values", "range", "encoding"});
            Axis axis;
            if (!a.contains("path")) bad(field + ".path", "is missing");
            axis.path = string(a["path"], field + ".path");
            if (a.contains("name")) axis.name = string(a["name"], field + ".name");
            if (a.contains("values") == a.contains("range")) bad(field, "needs exactly one of values and range");
            if (a.contains("values")) {
                if (!a["values"].is_array()) bad(field + ".values", "must be an array");
                for (const auto& v : a["values"]) axis.values.push_back(v);
            } else {
                axis.values   = expand_range(a["range"], field + ".range");
                const json& r = a["range"];
                if (r.contains("log") && r["log"].is_boolean() && r["log"].get<bool>()) axis.encoding = "log";
            }
            if (a.contains("encoding")) axis.encoding = string(a["encoding"], field + ".encoding");
            s.axes.push_back(std::move(axis));
        }
    }
    if (j.contains("sampling")) {
        const json& m = j["sampling"];
        check_keys(m, "sampling",
                   {"mode", "n", "seed", "eta", "min_prompts", "max_prompts", "initial", "kernel", "xi", "batch"});
        std::string mode = m.contains("mode") ? string(m["mode"], "sampling.mode") : "grid";
        if (mode == "grid")
            s.sampling.mode = SamplingMode::grid;
        else if (mode == "random")
            s.sampling.mode = SamplingMode::random;
        else if (mode == "adaptive")
            s.sampling.mode = SamplingMode::adaptive;
        else if (mode == "bayesian")
            s.sampling.mode = SamplingMode::bayesian;
        else
            bad("sampling.mode", "must be grid, random, adaptive or bayesian, got '" + mode + "'");
        if (m.contains("n")) s.sampling.n = integer(m["n"], "sampling.n");
        if (m.contains("seed")) {
            const json& seed = m["seed"];
            if (!seed.is_number_integer() || (!seed.is_number_unsigned() && seed.get<int64_t>() < 0))
                bad("sampling.seed", "must be a non-negative integer");
            s.sampling.seed = m["seed"].get<uint64_t>();
        }
        if (m.contains("eta")) s.sampling.eta = integer(m["eta"], "sampling.eta");
        if (m.contains("min_prompts")) s.sampling.min_prompts = integer(m["min_prompts"], "sampling.min_prompts");
        if (m.contains("max_prompts")) s.sampling.max_prompts = integer(m["max_prompts"], "sampling.max_prompts");
        if (m.contains("initial")) s.sampling.initial = integer(m["initial"], "sampling.initial");
        if (m.contains("kernel")) s.sampling.kernel = string(m["kernel"], "sampling.kernel");
        if (m.contains("xi")) s.sampling.xi = number(m["xi"], "sampling.xi");
        if (m.contains("batch")) s.sampling.batch = integer(m["batch"], "sampling.batch");
    }
    if (j.contains("objective")) {
        const json& o = j["objective"];
        check_keys(o, "objective", {"metric", "goal"});
        if (o.contains("metric")) s.objective.metric = string(o["metric"], "objective.metric");
        if (o.contains("goal")) {
            std::string goal = string(o["goal"], "objective.goal");
            if (goal != "max" && goal != "min") bad("objective.goal", "must be max or min, got '" + goal + "'");
            s.objective.maximize = goal == "max";
        }
    }
    if (j.contains("constraints")) {
        if (!j["constraints"].is_array()) bad("constraints", "must be an array");
        for (size_t i = 0; i < j["constraints"].size(); ++i) {
            std::string field = "constraints[" + std::to_string(i) + "]";
            const json& c     = j["constraints"][i];
            check_keys(c, field, {"metric", "min", "max"});
            Constraint con;
            if (!c.contains("metric")) bad(field + ".metric", "is missing");
            con.metric = string(c["metric"], field + ".metric");
            if (c.contains("min")) con.min = number(c["min"], field + ".min");
            if (c.contains("max")) con.max = number(c["max"], field + ".max");
            s.constraints.push_back(con);
        }
    }
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

std::string SweepSpec::describe(uint64_t index) const {
    std::vector<std::string> parts(axes.size());
    for (size_t i = axes.size(); i-- > 0;) {
        const Axis& a = axes[i];
        uint64_t k    = a.values.size();
        std::string v = a.values[index % k].dump();
        if (v.size() > 24) v = v.substr(0, 21) + "...";
        parts[i] = (a.name.empty() ? a.path : a.name) + "=" + v;
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

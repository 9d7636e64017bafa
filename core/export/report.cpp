// Reports and plot data (see report.h).
#include "core/export/report.h"

#include "core/analytic/calibration.h"
#include "core/store/summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace speculum::exporting {

namespace {

using nlohmann::json;

const json& need(const json& j, const char* key, const std::string& where) {
    if (!j.is_object() || !j.contains(key)) throw std::invalid_argument(where + ": missing \"" + key + "\"");
    return j.at(key);
}

template <class T>
T as(const json& j, const char* key, const std::string& where) {
    const json& v = need(j, key, where);
    try {
        return v.get<T>();
    } catch (const json::exception&) {
        throw std::invalid_argument(where + "." + key + ": wrong type (" + v.type_name() + ")");
    }
}

std::optional<double> pointer_number(const json& j, const std::string& ptr) {
    const json::json_pointer p(ptr);  // throws json::parse_error on a malformed pointer
    if (!j.contains(p)) return std::nullopt;
    const json& v = j.at(p);
    if (v.is_number()) return v.get<double>();
    if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
    return std::nullopt;
}

}  // namespace

MeasuredFigures measured_from_run_report(const nlohmann::json& report) {
    const std::string w  = "run report";
    const json& t        = need(report, "total", w);
    const std::string tw = w + ".total";
    engine::RunStats s;
    s.n_generated           = as<int32_t>(t, "n_generated", tw);
    s.n_steps               = as<int32_t>(t, "n_steps", tw);
    s.pos_reached           = as<std::vector<int64_t>>(t, "pos_reached", tw);
    s.pos_accepted          = as<std::vector<int64_t>>(t, "pos_accepted", tw);
    s.tokens_per_s          = as<double>(t, "tokens_per_s", tw);
    s.baseline_tokens_per_s = as<double>(t, "baseline_tokens_per_s", tw);
    s.speedup               = as<double>(t, "speedup", tw);
    s.bytes_per_token       = as<double>(t, "bytes_per_token", tw);
    s.lossless_checked      = as<bool>(t, "lossless_checked", tw);
    s.lossless_mismatch     = as<int32_t>(t, "lossless_mismatch", tw);
    const json& levels      = need(t, "levels", tw);
    if (!levels.is_array()) throw std::invalid_argument(tw + ".levels: expected an array");
    for (size_t i = 0; i < levels.size(); ++i) {
        engine::LevelStats l;
        l.cost_ratio = as<double>(levels[i], "cost_ratio", tw + ".levels[" + std::to_string(i) + "]");
        s.levels.push_back(l);
    }
    const int32_t prompts = report.contains("runs") && report["runs"].is_array() ? int32_t(report["runs"].size()) : 0;
    MeasuredFigures m     = measured_from_stats(s, prompts, "speculum-cli run");
    // mean_accepted_length() needs n_steps and n_generated, which RunStats carries; nothing else is derived.
    return m;
}

AcceptanceData acceptance_data(const Manifest& m) {
    AcceptanceData d;
    if (m.figures.measured) d.reached = m.figures.measured->pos_reached, d.accepted = m.figures.measured->pos_accepted;
    if (m.figures.predicted) d.predicted = m.figures.predicted->alpha;
    // The prediction may list one α for every position; draw as many markers as the draft is long.
    const size_t k = size_t(std::max<int32_t>(1, m.config.draft_length(0)));
    if (d.predicted.size() == 1 && k > 1) d.predicted.assign(k, d.predicted[0]);
    d.subtitle = (m.name.empty() ? "" : m.name + ": ") + describe_config(m.config);
    return d;
}

std::vector<SpeedupBar> speedup_bars(const Manifest& m) {
    std::vector<SpeedupBar> bars;
    if (const auto& p = m.figures.predicted) {
        bars.push_back({"EWIF (gamma " + std::to_string(m.config.draft_length(0)) + ")", p->ewif, false});
        if (p->speedup > 0 && std::abs(p->speedup - p->ewif) > 1e-12)
            bars.push_back({m.hardware ? "on " + m.hardware->id : "predicted", p->speedup, false});
    }
    if (const auto& r = m.figures.measured)
        if (r->speedup > 0) bars.push_back({"measured", r->speedup, true});
    return bars;
}

HeatmapData heatmap_from_rows(const std::vector<store::ResultRow>& rows, const std::string& x_pointer,
                              const std::string& y_pointer, const std::string& metric) {
    HeatmapData d;
    d.x_label = x_pointer, d.y_label = y_pointer, d.metric = metric;
    std::map<std::pair<double, double>, double> best;
    size_t n_measured = 0, n_used = 0;  // rows with engine statistics are measured; the others are modeled
    for (const auto& r : rows) {
        std::optional<double> x, y;
        try {
            x = pointer_number(r.config, x_pointer), y = pointer_number(r.config, y_pointer);
        } catch (const json::exception& e) {
            throw std::invalid_argument("heatmap axis: not a JSON pointer (" + std::string(e.what()) + ")");
        }
        const std::optional<double> v = metric == "objective" ? r.objective : r.metric(metric);
        if (!x || !y || !v || !std::isfinite(*v) || r.status != "done") continue;
        auto [it, fresh] = best.emplace(std::make_pair(*x, *y), *v);
        if (!fresh) it->second = std::max(it->second, *v);
        ++n_used;
        n_measured += r.stats.is_object() && !r.stats.empty();
    }
    for (const auto& [xy, v] : best) d.xs.push_back(xy.first), d.ys.push_back(xy.second);
    std::sort(d.xs.begin(), d.xs.end());
    d.xs.erase(std::unique(d.xs.begin(), d.xs.end()), d.xs.end());
    std::sort(d.ys.begin(), d.ys.end());
    d.ys.erase(std::unique(d.ys.begin(), d.ys.end()), d.ys.end());
    d.values.assign(d.xs.size() * d.ys.size(), NAN);
    for (const auto& [xy, v] : best) {
        const size_t ix                 = size_t(std::lower_bound(d.xs.begin(), d.xs.end(), xy.first) - d.xs.begin());
        const size_t iy                 = size_t(std::lower_bound(d.ys.begin(), d.ys.end(), xy.second) - d.ys.begin());
        d.values[iy * d.xs.size() + ix] = v;
    }
    d.source = n_measured == n_used ? "measured" : n_measured == 0 ? "modeled" : "measured and modeled rows";
    return d;
}

std::string describe_config(const engine::SpecConfig& c) {
    std::string s;
    for (size_t i = 0; i < c.levels.size(); ++i) {
        const auto& l = c.levels[i];
        s += (i ? " <- " : "") + std::string(drafts::to_string(l.kind)) + ": " + l.name();
    }
    if (c.verification == engine::Verification::tree)
        s += ", tree";
    else
        s += ", chain gamma " + std::to_string(c.draft_length(0));
    s += c.greedy() ? ", greedy" : ", sampled";
    return s;
}

nlohmann::json make_report(const Manifest& m, const nlohmann::json& run_report) {
    json acc               = json::object();
    const AcceptanceData a = acceptance_data(m);
    json positions         = json::array();
    const size_t n         = std::max(a.reached.size(), a.predicted.size());
    const std::vector<double> unconditional =
        m.figures.measured ? m.figures.measured->acceptance_rate_per_position() : std::vector<double>{};
    for (size_t i = 0; i < n; ++i) {
        json p = {{"position", i + 1}};
        if (i < a.reached.size()) {
            const auto [lo, hi]  = analytic::wilson_interval(a.accepted[i], a.reached[i]);
            p["reached"]         = a.reached[i];
            p["accepted"]        = a.accepted[i];
            p["alpha"]           = a.reached[i] > 0 ? double(a.accepted[i]) / double(a.reached[i]) : 0.0;
            p["alpha_wilson95"]  = {lo, hi};
            p["acceptance_rate"] = unconditional[i];
        }
        if (i < a.predicted.size()) p["alpha_modeled"] = a.predicted[i];
        positions.push_back(p);
    }
    json bars = json::array();
    for (const auto& b : speedup_bars(m))
        bars.push_back({{"label", b.label}, {"speedup", b.value}, {"kind", b.measured ? "measured" : "modeled"}});
    return json{{"format", kReportFormat}, {"version", kReportVersion}, {"configuration", describe_config(m.config)},
                {"manifest", m},           {"acceptance", positions},   {"speedup", bars},
                {"run", run_report}};
}

}  // namespace speculum::exporting

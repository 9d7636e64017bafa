// A run report → analytic::MeasuredEngineRun, what calibration fits (see run_report.h).
#include "core/session/run_report.h"

#include "core/engine/spec_config.h"
#include "core/engine/tree_shapes.h"
#include "core/file_io.h"
#include "core/json_input.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace speculum::session {

using namespace engine;  // the report is the engine's: SpecConfig, RunStats, Verification

namespace {

using nlohmann::json;

class Fields {
public:
    explicit Fields(std::string source) : m_source(std::move(source)) {}

    [[noreturn]] void fail(const std::string& path, const std::string& what) const {
        throw std::invalid_argument(m_source + ": " + path + ": " + what);
    }
    const json& at(const json& j, const std::string& key, const std::string& path) const {
        if (!j.is_object()) fail(path, "must be a JSON object");
        auto it = j.find(key);
        if (it == j.end()) fail(path + "." + key, "missing");
        return *it;
    }
    double number(const json& j, const std::string& key, const std::string& path) const {
        const json& v = at(j, key, path);
        if (!v.is_number()) fail(path + "." + key, "must be a number");
        return v.get<double>();
    }
    int64_t count(const json& j, const std::string& key, const std::string& path) const {
        const json& v = at(j, key, path);
        if (!v.is_number_integer() || v.get<int64_t>() < 0) fail(path + "." + key, "must be an integer >= 0");
        return v.get<int64_t>();
    }
    std::vector<int64_t> counts(const json& j, const std::string& key, const std::string& path) const {
        const json& v = at(j, key, path);
        if (!v.is_array()) fail(path + "." + key, "must be an array of counts");
        std::vector<int64_t> out;
        for (size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_number_integer() || v[i].get<int64_t>() < 0)
                fail(path + "." + key + "[" + std::to_string(i) + "]", "must be an integer >= 0");
            out.push_back(v[i].get<int64_t>());
        }
        return out;
    }
    // An array of counts at arr[i] (path names the array).
    std::vector<int64_t> counts_at(const json& arr, size_t i, const std::string& path) const {
        const std::string where = path + "[" + std::to_string(i) + "]";
        const json& v           = arr[i];
        if (!v.is_array()) fail(where, "must be an array of counts");
        std::vector<int64_t> out;
        for (size_t k = 0; k < v.size(); ++k) {
            if (!v[k].is_number_integer() || v[k].get<int64_t>() < 0)
                fail(where + "[" + std::to_string(k) + "]", "must be an integer >= 0");
            out.push_back(v[k].get<int64_t>());
        }
        return out;
    }
    std::string text(const json& j, const std::string& key, const std::string& path) const {
        const json& v = at(j, key, path);
        if (!v.is_string()) fail(path + "." + key, "must be a string");
        return v.get<std::string>();
    }

private:
    std::string m_source;
};

}  // namespace

analytic::MeasuredEngineRun measured_run_from_report(const json& report, const std::string& source) {
    Fields f(source);
    if (!report.is_object() || !report.contains("config") || !report.contains("runs") || !report.contains("total")) {
        std::string found;
        if (report.is_object())
            for (const auto& [key, _] : report.items()) found += (found.empty() ? "" : ", ") + key;
        throw std::invalid_argument(source +
                                    ": not a `speculum-cli run --report` file (expected an object with "
                                    "config, runs and total; found " +
                                    (report.is_object() ? "keys: " + (found.empty() ? "none" : found)
                                                        : std::string("a JSON ") + report.type_name()) +
                                    ")");
    }
    SpecConfig cfg;
    try {
        from_json(report["config"], cfg);
        cfg.validate();
    } catch (const std::exception& e) {
        throw std::invalid_argument(source + ": config: " + e.what());
    }
    if (report.contains("repeated")) {  // checked whole, though calibration reads the first pass only
        RepeatSummary rs;
        try {
            from_json(report["repeated"], rs);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(source + ": " + e.what());
        }
    }
    // What the calibration models: chains (one level or a cascade, vertical or horizontal) at fixed draft lengths.
    if (cfg.verification == Verification::cats)
        f.fail("config.verification",
               "CATS's three-stage runs are not modeled by the calibration (chains and cascades "
               "only); predict's cats section models their BPT");

    if (cfg.adaptive_gamma.enabled)
        f.fail("config.adaptive_gamma", "runs with an adaptive draft length are not modeled (fixed gamma only)");
    if (cfg.p_min > 0) f.fail("config.p_min", "early-stopped drafts (p_min > 0) are not modeled");
    // Like with like: the calibration models the engine's truncate lengths over a whole generation
    // (kmatrix_generation); CS Drafting's threshold lengths are modeled per target run only (predict's kmatrix).
    if (cfg.length_mode == LengthMode::threshold)
        f.fail("config.length_mode",
               "threshold-length runs are not modeled by the calibration, which models the engine's truncate "
               "lengths over a whole generation; predict models threshold lengths per target run (kmatrix.mode)");

    analytic::MeasuredEngineRun r;
    r.source       = source;
    r.target       = f.text(report, "target", "report");
    const size_t n = cfg.levels.size();
    if (!cfg.k_matrix.empty()) {
        r.k_matrix = cfg.k_matrix;
    } else {
        r.k_matrix.assign(n + 1, std::vector<int>(n + 1, 0));
        for (size_t i = 0; i < n; ++i) r.k_matrix[i][i + 1] = cfg.gamma[i];
    }

    const json& runs = report["runs"];
    if (!runs.is_array() || runs.empty()) f.fail("runs", "must be a non-empty array (one entry per prompt)");
    for (size_t p = 0; p < runs.size(); ++p) {
        std::string path = "runs[" + std::to_string(p) + "]";
        const json& c    = f.at(runs[p], "cancelled", path);
        if (!c.is_boolean()) f.fail(path + ".cancelled", "must be true or false");
        if (c.get<bool>()) f.fail(path, "was cancelled: its statistics are partial");
        int64_t g = f.count(f.at(runs[p], "stats", path), "n_generated", path + ".stats");
        if (g < 1 || g > (1 << 16)) f.fail(path + ".stats.n_generated", "must be in [1, 65536]");
        r.generated.push_back(int(g));
    }

    if (cfg.verification == Verification::tree) {
        // The verified shape (Sequoia's is re-fitted during the run: modeled as its best tree for the run's
        // acceptance).
        if (cfg.tree.kind == TreeKind::sequoia) {
            r.sequoia_budget    = cfg.tree.node_budget + 1;  // the analytic budget counts the root
            r.sequoia_max_depth = cfg.tree.max_depth;
        } else {
            const drafts::TreeShape e = explicit_shape(make_tree_shape(cfg.tree, cfg.gamma.front(), cfg.tree.prior));
            r.tree_parent.push_back(-1);
            for (int32_t par : e.parent) r.tree_parent.push_back(par + 1);
        }
        const int nodes = r.sequoia_budget > 0 ? r.sequoia_budget - 1 : static_cast<int>(r.tree_parent.size()) - 1;
        r.k_matrix      = {{0, std::max(1, nodes)}, {0, 0}};
        for (const char* key : {"rank_offered", "rank_accepted"}) {
            const json& v = f.at(report["total"], key, "total");
            if (!v.is_array()) f.fail(std::string("total.") + key, "must be an array of arrays of counts");
            auto& out = std::string(key) == "rank_offered" ? r.rank_offered : r.rank_accepted;
            for (size_t d = 0; d < v.size(); ++d) out.push_back(f.counts_at(v, d, std::string("total.") + key));
        }
        if (r.rank_offered.empty())
            f.fail("total.rank_offered",
                   "is empty: a token-tree run counts its acceptance by depth and rank (is this "
                   "report from a chain run with its config edited?)");
    }

    const json& t           = report["total"];
    const std::string tp    = "total";
    r.n_steps               = f.count(t, "n_steps", tp);
    r.n_drafted             = f.count(t, "n_drafted", tp);
    r.pos_reached           = f.counts(t, "pos_reached", tp);
    r.pos_accepted          = f.counts(t, "pos_accepted", tp);
    r.t_decode_s            = f.number(t, "t_decode_s", tp);
    r.t_draft_s             = f.number(t, "t_draft_s", tp);
    r.t_verify_s            = f.number(t, "t_verify_s", tp);
    r.baseline_tokens_per_s = f.number(t, "baseline_tokens_per_s", tp);
    r.speedup               = f.number(t, "speedup", tp);
    // Verification passes by width: in reports written since issue #24; older ones fall back to a line in the width.
    if (t.contains("verify_width_passes") && t.contains("verify_width_seconds")) {
        r.verify_width_passes = f.counts(t, "verify_width_passes", tp);
        const json& ws        = t["verify_width_seconds"];
        if (!ws.is_array() || ws.size() != r.verify_width_passes.size())
            f.fail("total.verify_width_seconds", "must be an array as long as verify_width_passes");
        for (size_t i = 0; i < ws.size(); ++i) {
            if (!ws[i].is_number() || !(ws[i].get<double>() >= 0.0))
                f.fail("total.verify_width_seconds[" + std::to_string(i) + "]", "must be a number >= 0");
            r.verify_width_s.push_back(ws[i].get<double>());
        }
    }
    // A mixture-of-experts target's recorded routing (RunStats::experts): the usage shares and the distinct experts
    // per layer by pass width, for calibration's MoE term.
    if (t.contains("experts")) {
        const json& e        = t["experts"];
        const std::string ep = "total.experts";
        const int64_t ne = f.count(e, "n_expert", ep), nu = f.count(e, "n_expert_used", ep);
        const int64_t nl                = f.count(e, "n_layer", ep);
        const std::vector<int64_t> hist = f.counts(e, "hist", ep);
        if (ne < 1 || ne > 4096 || nu < 1 || nu > ne || nl < 1 || hist.size() != size_t(ne * nl))
            f.fail(ep, "n_expert, n_expert_used, n_layer and hist (n_layer x n_expert counts) do not agree");
        std::vector<double> share(size_t(ne), 0.0);
        double total = 0;
        for (size_t i = 0; i < hist.size(); ++i) share[i % size_t(ne)] += double(hist[i]), total += double(hist[i]);
        if (total > 0)
            for (double& x : share) x *= double(nu) / total;
        r.expert_usage = total > 0 ? share : std::vector<double>{};
        const json& md = f.at(e, "mean_distinct_per_layer", ep);
        if (!md.is_array() || md.size() > 4096) f.fail(ep + ".mean_distinct_per_layer", "must be an array of numbers");
        for (size_t i = 0; i < md.size(); ++i) {
            if (!md[i].is_number() || !(md[i].get<double>() >= 0.0) || md[i].get<double>() > double(ne))
                f.fail(ep + ".mean_distinct_per_layer[" + std::to_string(i) + "]", "must be a number in [0, n_expert]");
            r.distinct_by_width.push_back(md[i].get<double>());
        }
    }
    int64_t total_generated = f.count(t, "n_generated", tp);
    int64_t sum             = 0;
    for (int g : r.generated) sum += g;
    if (sum != total_generated)
        f.fail("total.n_generated", std::to_string(total_generated) + " differs from the runs' sum " +
                                        std::to_string(sum) + " (an edited or mixed report)");
    const json& levels = f.at(t, "levels", tp);
    if (!levels.is_array() || levels.size() != n + 1)
        f.fail("total.levels",
               "must have one entry per level (the target and " + std::to_string(n) + " draft levels, as configured)");
    for (size_t j = 0; j <= n; ++j) {
        std::string lp = "total.levels[" + std::to_string(j) + "]";
        analytic::MeasuredLevel l;
        l.name              = f.text(levels[j], "name", lp);
        l.per_call          = j > 0 && drafts::is_statistical(cfg.levels[j - 1].kind);
        l.n_calls           = f.count(levels[j], "n_calls", lp);
        l.n_forward         = f.count(levels[j], "n_forward", lp);
        l.t_s               = f.number(levels[j], "t_s", lp);
        l.n_reviewed        = f.count(levels[j], "n_reviewed", lp);
        l.n_review_accepted = f.count(levels[j], "n_review_accepted", lp);
        r.levels.push_back(l);
    }
    analytic::validate(r);  // names the source too
    return r;
}

analytic::MeasuredEngineRun load_run_report(const std::string& path) {
    std::string text;
    try {
        text = read_input_file(path, kMaxReportFileBytes, "run report");
    } catch (const std::runtime_error& e) {
        throw std::invalid_argument(e.what());
    }
    const json j = parse_json(text, path);
    return measured_run_from_report(j, path);
}

}  // namespace speculum::session

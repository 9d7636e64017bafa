// A run report → analytic::MeasuredEngineRun, what calibration fits (see run_report.h).
#include "core/session/run_report.h"

#include "core/engine/spec_config.h"
#include "core/engine/tree_shapes.h"
#include "core/file_io.h"
#include "core/json_input.h"
#include "core/json_reader.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace speculum::session {

using namespace engine;  // the report is the engine's: SpecConfig, RunStats, Verification

namespace {

using nlohmann::json;

// The report's fields calibration needs; each must be there (a missing one is an edited or older report). The
// report has many more keys than these, so its readers skip keys they do not know (no finish()).
int64_t count(JsonReader& r, const char* key) {
    int64_t v = 0;
    r.need(key), r.get(key, v, 0, INT64_MAX);
    return v;
}
double number(JsonReader& r, const char* key) {
    double v = 0;
    r.need(key), r.get(key, v);
    return v;
}
std::vector<int64_t> counts(JsonReader& r, const char* key) {
    std::vector<int64_t> v;
    r.need(key), r.get(key, v, 0, INT64_MAX);
    return v;
}
std::string text(JsonReader& r, const char* key) {
    std::string v;
    r.need(key), r.get(key, v);
    return v;
}
// An array of arrays of counts (path names the outer array).
std::vector<std::vector<int64_t>> count_rows(const JsonReader& r, const json& v, const std::string& path) {
    if (!v.is_array()) r.fail(path, "expected an array of arrays of counts, got " + json_kind(v));
    std::vector<std::vector<int64_t>> out;
    for (size_t d = 0; d < v.size(); ++d) {
        const std::string row = json_path(path, d);
        if (!v[d].is_array()) r.fail(row, "expected an array of counts, got " + json_kind(v[d]));
        out.emplace_back();
        for (size_t k = 0; k < v[d].size(); ++k)
            out.back().push_back(r.integer(v[d][k], json_path(row, k), 0, INT64_MAX));
    }
    return out;
}

// Reads the report; errors name the path, and measured_run_from_report adds the source.
analytic::MeasuredEngineRun read_report(const json& report, const std::string& source) {
    JsonReader in(report, "");
    SpecConfig cfg;
    try {
        from_json(in.need("config"), cfg);
        cfg.validate();
    } catch (const std::exception& e) {
        throw std::invalid_argument(std::string("config: ") + e.what());
    }
    if (const json* rep = in.sub("repeated")) {  // checked whole, though calibration reads the first pass only
        RepeatSummary rs;
        from_json(*rep, rs);
    }
    // What the calibration models: chains (one level or a cascade, vertical or horizontal) at fixed draft lengths.
    if (cfg.verification == Verification::cats)
        in.fail("config.verification",
                "CATS's three-stage runs are not modeled by the calibration (chains and cascades "
                "only); predict's cats section models their BPT");
    if (cfg.adaptive_gamma.enabled)
        in.fail("config.adaptive_gamma", "runs with an adaptive draft length are not modeled (fixed gamma only)");
    if (cfg.p_min > 0) in.fail("config.p_min", "early-stopped drafts (p_min > 0) are not modeled");
    // Like with like: the calibration models the engine's truncate lengths over a whole generation
    // (kmatrix_generation); CS Drafting's threshold lengths are modeled per target run only (predict's kmatrix).
    if (cfg.length_mode == LengthMode::threshold)
        in.fail("config.length_mode",
                "threshold-length runs are not modeled by the calibration, which models the engine's truncate "
                "lengths over a whole generation; predict models threshold lengths per target run (kmatrix.mode)");

    analytic::MeasuredEngineRun r;
    r.source       = source;
    r.target       = text(in, "target");
    const size_t n = cfg.levels.size();
    if (!cfg.k_matrix.empty()) {
        r.k_matrix = cfg.k_matrix;
    } else {
        r.k_matrix.assign(n + 1, std::vector<int>(n + 1, 0));
        for (size_t i = 0; i < n; ++i) r.k_matrix[i][i + 1] = cfg.gamma[i];
    }

    const json& runs = in.need("runs");
    if (!runs.is_array() || runs.empty()) in.fail("runs", "must be a non-empty array (one entry per prompt)");
    for (size_t p = 0; p < runs.size(); ++p) {
        JsonReader run(runs[p], json_path("runs", p));
        bool cancelled = false;
        run.need("cancelled"), run.get("cancelled", cancelled);
        if (cancelled) run.fail(run.where(), "was cancelled: its statistics are partial");
        JsonReader stats(run.need("stats"), run.at("stats"));
        const int64_t g = count(stats, "n_generated");
        if (g < 1 || g > (1 << 16)) stats.fail(stats.at("n_generated"), "must be in [1, 65536]");
        r.generated.push_back(int(g));
    }

    JsonReader t(in.need("total"), "total");
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
        r.rank_offered  = count_rows(t, t.need("rank_offered"), t.at("rank_offered"));
        r.rank_accepted = count_rows(t, t.need("rank_accepted"), t.at("rank_accepted"));
        if (r.rank_offered.empty())
            t.fail(t.at("rank_offered"),
                   "is empty: a token-tree run counts its acceptance by depth and rank (is this "
                   "report from a chain run with its config edited?)");
    }

    r.n_steps               = count(t, "n_steps");
    r.n_drafted             = count(t, "n_drafted");
    r.pos_reached           = counts(t, "pos_reached");
    r.pos_accepted          = counts(t, "pos_accepted");
    r.t_decode_s            = number(t, "t_decode_s");
    r.t_draft_s             = number(t, "t_draft_s");
    r.t_verify_s            = number(t, "t_verify_s");
    r.baseline_tokens_per_s = number(t, "baseline_tokens_per_s");
    r.speedup               = number(t, "speedup");
    // Verification passes by width: in reports written since issue #24; older ones fall back to a line in the width.
    if (t.has("verify_width_passes") && t.has("verify_width_seconds")) {
        r.verify_width_passes = counts(t, "verify_width_passes");
        t.get("verify_width_seconds", r.verify_width_s);
        if (r.verify_width_s.size() != r.verify_width_passes.size())
            t.fail(t.at("verify_width_seconds"), "must be an array as long as verify_width_passes");
        for (size_t i = 0; i < r.verify_width_s.size(); ++i)
            if (!(r.verify_width_s[i] >= 0.0))
                t.fail(json_path(t.at("verify_width_seconds"), i), "must be a number >= 0");
    }
    // A mixture-of-experts target's recorded routing (RunStats::experts): the usage shares and the distinct experts
    // per layer by pass width, for calibration's MoE term.
    if (const json* experts = t.sub("experts")) {
        JsonReader e(*experts, t.at("experts"));
        const int64_t ne = count(e, "n_expert"), nu = count(e, "n_expert_used"), nl = count(e, "n_layer");
        const std::vector<int64_t> hist = counts(e, "hist");
        if (ne < 1 || ne > 4096 || nu < 1 || nu > ne || nl < 1 || hist.size() != size_t(ne * nl))
            e.fail(e.where(), "n_expert, n_expert_used, n_layer and hist (n_layer x n_expert counts) do not agree");
        std::vector<double> share(size_t(ne), 0.0);
        double total = 0;
        for (size_t i = 0; i < hist.size(); ++i) share[i % size_t(ne)] += double(hist[i]), total += double(hist[i]);
        if (total > 0)
            for (double& x : share) x *= double(nu) / total;
        r.expert_usage = total > 0 ? share : std::vector<double>{};
        e.need("mean_distinct_per_layer"), e.get("mean_distinct_per_layer", r.distinct_by_width);
        if (r.distinct_by_width.size() > 4096) e.fail(e.at("mean_distinct_per_layer"), "is too long");
        for (size_t i = 0; i < r.distinct_by_width.size(); ++i)
            if (!(r.distinct_by_width[i] >= 0.0) || r.distinct_by_width[i] > double(ne))
                e.fail(json_path(e.at("mean_distinct_per_layer"), i), "must be a number in [0, n_expert]");
    }
    const int64_t total_generated = count(t, "n_generated");
    int64_t sum                   = 0;
    for (int g : r.generated) sum += g;
    if (sum != total_generated)
        t.fail(t.at("n_generated"), std::to_string(total_generated) + " differs from the runs' sum " +
                                        std::to_string(sum) + " (an edited or mixed report)");
    const json& levels = t.need("levels");
    if (!levels.is_array() || levels.size() != n + 1)
        t.fail(t.at("levels"),
               "must have one entry per level (the target and " + std::to_string(n) + " draft levels, as configured)");
    for (size_t j = 0; j <= n; ++j) {
        JsonReader lr(levels[j], json_path(t.at("levels"), j));
        analytic::MeasuredLevel l;
        l.name              = text(lr, "name");
        l.per_call          = j > 0 && (drafts::is_statistical(cfg.levels[j - 1].kind) ||
                               drafts::drafts_a_block_per_pass(cfg.levels[j - 1].kind));
        l.n_calls           = count(lr, "n_calls");
        l.n_forward         = count(lr, "n_forward");
        l.t_s               = number(lr, "t_s");
        l.n_reviewed        = count(lr, "n_reviewed");
        l.n_review_accepted = count(lr, "n_review_accepted");
        r.levels.push_back(l);
    }
    return r;
}

}  // namespace

analytic::MeasuredEngineRun measured_run_from_report(const json& report, const std::string& source) {
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
    analytic::MeasuredEngineRun r;
    try {
        r = read_report(report, source);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(source + ": " + e.what());
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

// RunStats derived figures and JSON.
#include "core/engine/run_stats.h"

#include "core/json_reader.h"

#include <algorithm>

#include <stdexcept>

namespace speculum::engine {

std::vector<double> conditional_alpha(const std::vector<int64_t>& reached, const std::vector<int64_t>& accepted) {
    std::vector<double> a(reached.size(), 0.0);
    for (size_t i = 0; i < a.size(); ++i)
        if (reached[i] > 0 && i < accepted.size())
            a[i] = static_cast<double>(accepted[i]) / static_cast<double>(reached[i]);
    return a;
}

std::vector<double> RunStats::alpha() const {
    return conditional_alpha(pos_reached, pos_accepted);
}

std::vector<double> RunStats::predicted_alpha() const {
    std::vector<double> a;
    for (size_t i = 0; i < pos_predicted.size() && i < pos_reached.size(); ++i)
        a.push_back(pos_reached[i] > 0 ? pos_predicted[i] / double(pos_reached[i]) : 0.0);
    return a;
}

double RunStats::mean_accepted_length() const {
    return n_steps > 0 ? static_cast<double>(n_generated) / n_steps : 0.0;
}

static std::vector<int64_t> pooled(const std::vector<std::vector<int64_t>>& by_depth) {
    std::vector<int64_t> out;
    for (const auto& ranks : by_depth) {
        if (out.size() < ranks.size()) out.resize(ranks.size());
        for (size_t r = 0; r < ranks.size(); ++r) out[r] += ranks[r];
    }
    return out;
}

std::vector<int64_t> RunStats::rank_offered_pooled() const {
    return pooled(rank_counts.offered);
}

std::vector<int64_t> RunStats::rank_accepted_pooled() const {
    std::vector<int64_t> a = pooled(rank_counts.accepted);
    a.resize(rank_offered_pooled().size());
    return a;
}

std::vector<double> RunStats::rank_alpha() const {
    const std::vector<int64_t> offered = rank_offered_pooled(), accepted = rank_accepted_pooled();
    std::vector<double> a(offered.size(), 0.0);
    for (size_t r = 0; r < a.size(); ++r)
        if (offered[r] > 0) a[r] = static_cast<double>(accepted[r]) / static_cast<double>(offered[r]);
    return a;
}

double RunStats::draft_cost_ratio() const {
    return levels.size() > 1 ? levels[1].cost_ratio : 0.0;
}

double RunStats::draft_bytes_per_pass() const {
    if (levels.size() < 2 || levels[1].n_forward <= 0) return 0.0;
    return static_cast<double>(levels[1].bytes_weights) / static_cast<double>(levels[1].n_forward);
}

double RunStats::draft_flops_per_pass() const {
    if (levels.size() < 2 || levels[1].n_forward <= 0) return 0.0;
    return levels[1].flops / static_cast<double>(levels[1].n_forward);
}

std::vector<VerifyContextCost> RunStats::verify_context_curve() const {
    std::vector<VerifyContextCost> out;
    const size_t n = std::min({verify_ctx_passes.size(), verify_ctx_s.size(), verify_ctx_tokens.size()});
    for (size_t b = 0; b < n; ++b) {
        if (verify_ctx_passes[b] <= 0) continue;
        VerifyContextCost c;
        c.context_from = int32_t(b) * kVerifyContextBucket, c.context_to = c.context_from + kVerifyContextBucket;
        c.passes     = verify_ctx_passes[b];
        c.seconds    = verify_ctx_s[b] / double(c.passes);
        c.steps      = baseline_tokens_per_s > 0 ? c.seconds * baseline_tokens_per_s : 0.0;
        c.mean_width = double(verify_ctx_tokens[b]) / double(c.passes);
        out.push_back(c);
    }
    return out;
}

std::vector<VerifyCost> RunStats::verify_cost_curve() const {
    std::vector<VerifyCost> out;
    for (size_t w = 0; w < verify_width_passes.size() && w < verify_width_s.size(); ++w) {
        if (verify_width_passes[w] <= 0) continue;
        VerifyCost c;
        c.width            = static_cast<int32_t>(w);
        c.passes           = verify_width_passes[w];
        c.seconds          = verify_width_s[w] / static_cast<double>(verify_width_passes[w]);
        c.steps            = baseline_tokens_per_s > 0 ? c.seconds * baseline_tokens_per_s : 0.0;
        c.distinct_experts = experts.mean_distinct(w);
        out.push_back(c);
    }
    return out;
}

bool RunStats::any_bytes_modeled() const {
    for (const LevelStats& l : levels)
        if (l.bytes_modeled || l.bytes_kv_modeled) return true;
    return false;
}

bool RunStats::draft_bytes_modeled() const {
    return levels.size() > 1 && levels[1].bytes_modeled;
}

static nlohmann::json level_json(const LevelStats& l) {
    return {{"level", l.level},
            {"name", l.name},
            {"n_calls", l.n_calls},
            {"n_forward", l.n_forward},
            {"t_s", l.t_s},
            {"t_prefill_s", l.t_prefill_s},
            {"bytes_weights", l.bytes_weights},
            {"bytes_kv", l.bytes_kv},
            {"bytes_modeled", l.bytes_modeled},
            {"bytes_kv_modeled", l.bytes_kv_modeled},
            {"flops", l.flops},
            {"n_reviewed", l.n_reviewed},
            {"n_review_accepted", l.n_review_accepted},
            {"cost_ratio", l.cost_ratio}};
}

void to_json(nlohmann::json& j, const RunStats& s) {
    nlohmann::json levels = nlohmann::json::array();
    for (const auto& l : s.levels) levels.push_back(level_json(l));
    j = nlohmann::json{{"n_prompt", s.n_prompt},
                       {"n_generated", s.n_generated},
                       {"n_steps", s.n_steps},
                       {"n_drafted", s.n_drafted},
                       {"n_accepted", s.n_accepted},
                       {"t_prefill_s", s.t_prefill_s},
                       {"t_draft_s", s.t_draft_s},
                       {"t_verify_s", s.t_verify_s},
                       {"t_decode_s", s.t_decode_s},
                       {"pos_reached", s.pos_reached},
                       {"pos_accepted", s.pos_accepted},
                       {"alpha", s.alpha()},
                       {"accepted_len_hist", s.accepted_len_hist},
                       {"verify_width_passes", s.verify_width_passes},
                       {"verify_width_seconds", s.verify_width_s},
                       {"verify_context_bucket", kVerifyContextBucket},
                       {"verify_context_passes", s.verify_ctx_passes},
                       {"verify_context_seconds", s.verify_ctx_s},
                       {"verify_context_tokens", s.verify_ctx_tokens},
                       {"rank_offered", s.rank_counts.offered},
                       {"rank_accepted", s.rank_counts.accepted},
                       {"levels", levels},
                       {"mean_accepted_length", s.mean_accepted_length()},
                       {"tokens_per_s", s.tokens_per_s},
                       {"baseline_tokens_per_s", s.baseline_tokens_per_s},
                       {"speedup", s.speedup},
                       {"bytes_per_token", s.bytes_per_token},
                       {"lossless_checked", s.lossless_checked},
                       {"lossless_mismatch", s.lossless_mismatch},
                       {"verifier_mismatch", s.verifier_mismatch}};
    if (!s.experts.empty()) j["experts"] = s.experts;  // measured routing of the verification passes
    if (!s.recurrent.empty()) j["recurrent"] = s.recurrent;
    if (!s.pos_predicted.empty()) {  // the draft's predicted acceptance per position (DSpark), beside alpha
        j["pos_predicted"]   = s.pos_predicted;
        j["predicted_alpha"] = s.predicted_alpha();
    }
    if (s.bpt_cats_eq4 > 0) {
        j["bpt_cats_eq4"] = s.bpt_cats_eq4;  // bytes per token, decoder weights only (the paper's accounting)
        j["cats_layers"]  = s.cats_layers;   // {L_DM, L_SV, n_layer}
    }
}

RunStats run_figures_from_json(const nlohmann::json& j) {
    JsonReader r(j, "stats");
    RunStats s;
    r.get("n_prompt", s.n_prompt, 0, INT32_MAX), r.get("n_generated", s.n_generated, 0, INT32_MAX);
    r.get("n_steps", s.n_steps, 0, INT32_MAX), r.get("n_drafted", s.n_drafted, 0, INT64_MAX);
    r.get("n_accepted", s.n_accepted, 0, INT64_MAX);
    for (auto [key, out] : {std::pair{"t_prefill_s", &s.t_prefill_s},
                            {"t_draft_s", &s.t_draft_s},
                            {"t_verify_s", &s.t_verify_s},
                            {"t_decode_s", &s.t_decode_s},
                            {"tokens_per_s", &s.tokens_per_s},
                            {"baseline_tokens_per_s", &s.baseline_tokens_per_s},
                            {"speedup", &s.speedup},
                            {"bytes_per_token", &s.bytes_per_token}})
        r.get(key, *out, 0.0);
    r.get("pos_reached", s.pos_reached, 0, INT64_MAX), r.get("pos_accepted", s.pos_accepted, 0, INT64_MAX);
    r.get("accepted_len_hist", s.accepted_len_hist, 0, INT64_MAX);
    r.get("pos_predicted", s.pos_predicted);
    if (s.pos_predicted.size() > s.pos_reached.size())
        r.fail(r.at("pos_predicted"), "has more positions than pos_reached");
    for (size_t i = 0; i < s.pos_predicted.size(); ++i)
        if (!(s.pos_predicted[i] >= 0.0 && s.pos_predicted[i] <= double(s.pos_reached[i])))
            r.fail(json_path(r.at("pos_predicted"), i), "must be in [0, pos_reached]");
    r.get("verify_width_passes", s.verify_width_passes, 0, INT64_MAX);
    r.get("verify_width_seconds", s.verify_width_s);
    if (s.pos_accepted.size() != s.pos_reached.size())
        r.fail(r.at("pos_accepted"), "must have as many positions as pos_reached");
    for (size_t i = 0; i < s.pos_reached.size(); ++i)
        if (s.pos_accepted[i] > s.pos_reached[i]) r.fail(json_path(r.at("pos_accepted"), i), "exceeds pos_reached");
    if (s.verify_width_s.size() != s.verify_width_passes.size())
        r.fail(r.at("verify_width_seconds"), "must be as long as verify_width_passes");
    int32_t bucket = kVerifyContextBucket;
    r.get("verify_context_bucket", bucket, 1, INT32_MAX);
    if (bucket == kVerifyContextBucket) {  // another bucket size (a later version's) is not read
        r.get("verify_context_passes", s.verify_ctx_passes, 0, INT64_MAX);
        r.get("verify_context_seconds", s.verify_ctx_s);
        r.get("verify_context_tokens", s.verify_ctx_tokens, 0, INT64_MAX);
        if (s.verify_ctx_s.size() != s.verify_ctx_passes.size() ||
            s.verify_ctx_tokens.size() != s.verify_ctx_passes.size())
            r.fail(r.at("verify_context_passes"), "verify_context_{passes,seconds,tokens} must be as long");
    }
    for (auto [key, out] :
         {std::pair{"rank_offered", &s.rank_counts.offered}, {"rank_accepted", &s.rank_counts.accepted}})
        if (const nlohmann::json* v = r.sub(key)) {
            if (!v->is_array()) r.fail(r.at(key), "must be an array of arrays");
            for (size_t d = 0; d < v->size(); ++d) {
                const std::string at = json_path(r.at(key), d);
                if (!(*v)[d].is_array()) r.fail(at, "must be an array of counts");
                std::vector<int64_t>& row = out->emplace_back();
                for (size_t k = 0; k < (*v)[d].size(); ++k)
                    row.push_back(r.integer((*v)[d][k], json_path(at, k), 0, INT64_MAX));
            }
        }
    r.get("lossless_checked", s.lossless_checked);
    r.get("lossless_mismatch", s.lossless_mismatch, -1, INT32_MAX);
    r.get("verifier_mismatch", s.verifier_mismatch, -1, INT32_MAX);
    if (const nlohmann::json* levels = r.sub("levels")) {
        if (!levels->is_array()) r.fail(r.at("levels"), "must be an array");
        for (size_t i = 0; i < levels->size(); ++i) {
            JsonReader lr((*levels)[i], json_path(r.at("levels"), i));
            LevelStats& l = s.levels.emplace_back();
            lr.get("level", l.level, 0, INT32_MAX), lr.get("name", l.name);
            lr.get("n_calls", l.n_calls, 0, INT64_MAX), lr.get("n_forward", l.n_forward, 0, INT64_MAX);
            lr.get("t_s", l.t_s, 0.0), lr.get("t_prefill_s", l.t_prefill_s, 0.0);
            lr.get("bytes_weights", l.bytes_weights), lr.get("bytes_kv", l.bytes_kv);
            lr.get("bytes_modeled", l.bytes_modeled), lr.get("bytes_kv_modeled", l.bytes_kv_modeled);
            lr.get("flops", l.flops, 0.0);
            lr.get("n_reviewed", l.n_reviewed, 0, INT64_MAX);
            lr.get("n_review_accepted", l.n_review_accepted, 0, INT64_MAX);
            lr.get("cost_ratio", l.cost_ratio, 0.0);
        }
    }
    return s;
}

void RecurrentReport::add(const RecurrentReport& o) {
    if (o.empty()) return;
    if (empty()) strategy = o.strategy, state_bytes = o.state_bytes;
    passes += o.passes, rollbacks += o.rollbacks, tokens_kept += o.tokens_kept, tokens_rerun += o.tokens_rerun;
    keep_s += o.keep_s, restore_s += o.restore_s;
    peak_bytes = std::max(peak_bytes, o.peak_bytes);
}

void to_json(nlohmann::json& j, const RecurrentReport& r) {
    j = nlohmann::json{{"strategy", r.strategy},         {"passes", r.passes},
                       {"rollbacks", r.rollbacks},       {"tokens_kept", r.tokens_kept},
                       {"tokens_rerun", r.tokens_rerun}, {"keep_seconds", r.keep_s},
                       {"restore_seconds", r.restore_s}, {"peak_bytes", r.peak_bytes},
                       {"state_bytes", r.state_bytes}};
}

double ExpertUsage::mean_distinct(size_t w) const {
    if (w >= width_passes.size() || width_passes[w] == 0 || n_layer == 0) return 0.0;
    return double(width_distinct[w]) / double(width_passes[w]) / double(n_layer);
}

std::vector<double> ExpertUsage::usage() const {
    std::vector<double> u(size_t(n_expert), 0.0);
    double slots = 0;
    for (size_t i = 0; i < hist.size(); ++i) u[i % u.size()] += double(hist[i]), slots += double(hist[i]);
    if (slots > 0)
        for (double& x : u) x = x / slots * n_expert_used;
    return u;
}

void ExpertUsage::add(const ExpertUsage& o) {
    if (o.empty()) return;
    if (empty()) {
        *this = o;
        return;
    }
    if (o.n_expert != n_expert || o.n_layer != n_layer || o.n_expert_used != n_expert_used)
        throw std::invalid_argument("ExpertUsage::add: runs of different models");
    for (size_t i = 0; i < o.hist.size() && i < hist.size(); ++i) hist[i] += o.hist[i];
    if (width_passes.size() < o.width_passes.size())
        width_passes.resize(o.width_passes.size()), width_distinct.resize(o.width_passes.size());
    for (size_t w = 0; w < o.width_passes.size(); ++w)
        width_passes[w] += o.width_passes[w], width_distinct[w] += o.width_distinct[w];
}

void to_json(nlohmann::json& j, const ExpertUsage& u) {
    std::vector<double> mean(u.width_passes.size(), 0.0);
    for (size_t w = 0; w < mean.size(); ++w) mean[w] = u.mean_distinct(w);
    j = nlohmann::json{{"n_expert", u.n_expert},         {"n_expert_used", u.n_expert_used},
                       {"n_layer", u.n_layer},           {"hist", u.hist},
                       {"width_passes", u.width_passes}, {"width_distinct", u.width_distinct},
                       {"mean_distinct_per_layer", mean}};
}

void to_json(nlohmann::json& j, const RunResult& r) {
    j = nlohmann::json{{"prompt", r.prompt},
                       {"tokens", r.tokens},
                       {"baseline_tokens", r.baseline_tokens},
                       {"cancelled", r.cancelled},
                       {"stats", r.stats}};
}

}  // namespace speculum::engine

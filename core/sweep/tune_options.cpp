// TuneOptions (validation, JSON), the drafters that apply to a target, and the chain model tune prunes with (see
// tune.h).
#include "core/json_reader.h"
#include "core/model/gguf.h"
#include "core/resources.h"
#include "core/sweep/sweep_spec.h"
#include "core/sweep/tune.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

namespace speculum::sweep {

void TuneOptions::validate() const {
    auto bad = [](const std::string& field, const std::string& why) { throw_json_error("tune." + field, why); };
    if (dataset.empty() && prompt_ids.empty()) bad("dataset", "needs a prompt suite (or prompt_ids)");
    if (!(budget_s > 0) || !std::isfinite(budget_s)) bad("budget_s", "must be a positive number of seconds");
    if (max_new_tokens < 1 || max_new_tokens > 4096) bad("max_new_tokens", "must be in [1, 4096]");
    if (min_prompts < 1) bad("min_prompts", "must be >= 1");
    if (max_prompts < min_prompts) bad("max_prompts", "must be >= min_prompts");
    if (eta < 2) bad("eta", "must be >= 2");
    if (gammas.empty()) bad("gammas", "must not be empty");
    for (int32_t g : gammas)
        if (g < 1 || g > 32) bad("gammas", "every draft length must be in [1, 32]");
    if (probe_gamma < 1 || probe_gamma > 32) bad("probe_gamma", "must be in [1, 32]");
    for (int32_t b : tree_budgets)
        if (b < 2 || b > 256) bad("tree_budgets", "every budget must be in [2, 256]");
    for (double p : p_mins)
        if (!(p > 0 && p < 1)) bad("p_mins", "every p_min must be in (0, 1)");
    if (!(prune_below >= 0 && prune_below <= 1)) bad("prune_below", "must be in [0, 1]");
    if (confirm_passes < 2 || confirm_passes > 100) bad("confirm_passes", "must be in [2, 100]");
    if (bayes_evaluations < 0 || bayes_evaluations > kMaxBayesianBudget)
        bad("bayes_evaluations", "must be in [0, " + std::to_string(kMaxBayesianBudget) + "]");
}

void to_json(nlohmann::json& j, const TuneOptions& o) {
    j = {{"dataset", o.dataset},
         {"task", o.task},
         {"prompt_ids", o.prompt_ids},
         {"draft_models", o.draft_models},
         {"eagle3_heads", o.eagle3_heads},
         {"mtp_modules", o.mtp_modules},
         {"block_drafts", o.block_drafts},
         {"bundled_drafts", o.bundled_drafts},
         {"self_drafts", o.self_drafts},
         {"budget_s", o.budget_s},
         {"max_new_tokens", o.max_new_tokens},
         {"min_prompts", o.min_prompts},
         {"max_prompts", o.max_prompts},
         {"eta", o.eta},
         {"gammas", o.gammas},
         {"probe_gamma", o.probe_gamma},
         {"tree_budgets", o.tree_budgets},
         {"p_mins", o.p_mins},
         {"cascades", o.cascades},
         {"prune_below", o.prune_below},
         {"confirm_passes", o.confirm_passes},
         {"bayes_evaluations", o.bayes_evaluations}};
}

void from_json(const nlohmann::json& j, TuneOptions& o) {
    JsonReader r(j, "tune");
    o = TuneOptions{};
    r.get("dataset", o.dataset), r.get("task", o.task), r.get("prompt_ids", o.prompt_ids, 0, INT32_MAX);
    for (auto [key, out] : {std::pair{"draft_models", &o.draft_models},
                            {"eagle3_heads", &o.eagle3_heads},
                            {"mtp_modules", &o.mtp_modules},
                            {"block_drafts", &o.block_drafts}}) {
        const nlohmann::json* v = r.sub(key);
        if (!v) continue;
        if (!v->is_array()) r.fail(r.at(key), "expected an array of file names, got " + json_kind(*v));
        for (size_t i = 0; i < v->size(); ++i) out->push_back(r.string((*v)[i], json_path(r.at(key), i)));
    }
    r.get("bundled_drafts", o.bundled_drafts), r.get("self_drafts", o.self_drafts);
    r.get("budget_s", o.budget_s), r.get("max_new_tokens", o.max_new_tokens);
    r.get("min_prompts", o.min_prompts), r.get("max_prompts", o.max_prompts), r.get("eta", o.eta);
    r.get("gammas", o.gammas), r.get("probe_gamma", o.probe_gamma), r.get("tree_budgets", o.tree_budgets);
    r.get("p_mins", o.p_mins), r.get("cascades", o.cascades), r.get("prune_below", o.prune_below);
    r.get("confirm_passes", o.confirm_passes), r.get("bayes_evaluations", o.bayes_evaluations);
    r.finish();
    o.validate();
}

std::vector<TuneFamily> tune_families(const TuneOptions& o, const model::Model& target) {
    using drafts::DraftKind;
    using drafts::DraftSpec;
    std::vector<TuneFamily> out;
    auto add = [&](std::string name, DraftSpec d, bool statistical) {
        d.label = name;
        out.push_back({std::move(name), {std::move(d)}, statistical});
    };
    auto stem = [](const std::string& path) { return std::filesystem::path(path).stem().string(); };
    // Statistical drafters: no model, any target.
    for (auto [name, method] : {std::pair{"suffix decoding", drafts::NgramMethod::suffix},
                                {"prompt lookup", drafts::NgramMethod::prompt_lookup}}) {
        DraftSpec d;
        d.kind         = DraftKind::ngram;
        d.ngram.method = method;
        add(name, d, true);
    }
    {
        DraftSpec d;
        d.kind = DraftKind::maxgram;
        add("Max-Gram", d, true);
    }
    // Heads on the target's hidden states: its own MTP layers, and the modules and heads given.
    const model::Hparams& hp = target.hparams();
    if (hp.n_nextn > 0) {
        DraftSpec d;
        d.kind = DraftKind::mtp;
        add("MTP layer (the target's own)", d, false);
    }
    std::vector<std::string> mtp = o.mtp_modules, eagle3 = o.eagle3_heads, models = o.draft_models,
                             blocks = o.block_drafts;
    if (o.bundled_drafts) {
        for (const char* b : {kBundledDflash, kBundledDspark})  // the bundled block drafts, where they are shipped
            if (const std::optional<std::filesystem::path> dir = resources_dir();
                dir && std::filesystem::exists(*dir / b))
                blocks.push_back((*dir / b).string());
        mtp.push_back(resource_path(kBundledMtpModule).string());
        eagle3.push_back(resource_path(kBundledEagle3Head).string());
        models.push_back(resource_path(kBundledDraftModel).string());
        models.push_back(resource_path(kBundledMidModel).string());
    }
    for (const std::string& path : mtp) {
        DraftSpec d;
        d.kind = DraftKind::mtp, d.model_path = path;
        add("MTP module " + stem(path), d, false);
    }
    for (const std::string& path : eagle3) {
        DraftSpec d;
        d.kind = DraftKind::eagle3, d.model_path = path;
        add("EAGLE-3 head " + stem(path), d, false);
    }
    for (const std::string& path : blocks) {
        // DFlash always; DSpark too where the file has its heads.
        const bool heads = model::GgufFile::open(path).tensor("markov_w1.weight") != nullptr;
        for (const DraftKind k : {DraftKind::dflash, DraftKind::dspark}) {
            if (k == DraftKind::dspark && !heads) continue;
            DraftSpec d;
            d.kind = k, d.model_path = path;
            add(std::string(k == DraftKind::dflash ? "DFlash " : "DSpark ") + stem(path), d, false);
        }
    }
    for (const std::string& path : models) {
        DraftSpec d;
        d.kind = DraftKind::model, d.model_path = path;
        add("draft model " + stem(path), d, false);
    }
    // Drafts derived from the target's own weights.
    if (o.self_drafts && hp.n_layer >= 2) {
        const int32_t quarter = std::max(0, hp.n_layer / 4 - 1), half = std::max(0, hp.n_layer / 2 - 1);
        for (int32_t exit : {quarter, half}) {
            if (exit == half && half == quarter) continue;
            DraftSpec d;
            d.exit_layer = exit;
            add("self: early exit after layer " + std::to_string(exit), d, false);
        }
        DraftSpec skip;
        for (int32_t l = 1; l < hp.n_layer - 1; l += 2) skip.skip_ffn.push_back(l);
        if (!skip.skip_ffn.empty()) add("self: skip every other FFN", skip, false);
        DraftSpec compact;
        compact.prune.ratio = 0.5f, compact.weight_trunc_bits = 4;
        add("self: prune 0.5 + truncate 4 bits (compact)", compact, false);
        out.back().compact = true;
        DraftSpec mxfp4;
        mxfp4.weight_format = drafts::WeightFormat::mxfp4;
        add("self: MXFP4 weights", mxfp4, false);
    }
    return out;
}

namespace {

// Steps of a verification pass of w tokens: the measured curve where it has w, else interpolated between measured
// widths (from one step at w = 1 below them), and extended along the chord from w = 1 beyond them.
double verify_steps(const std::vector<double>& curve, int w) {
    if (size_t(w) < curve.size() && curve[size_t(w)] > 0) return curve[size_t(w)];
    int lo = 1, hi = -1;
    double vlo = 1.0, vhi = 0.0;
    for (int x = 2; x < int(curve.size()); ++x) {
        if (curve[size_t(x)] <= 0) continue;
        if (x < w) lo = x, vlo = curve[size_t(x)];
        if (x > w && hi < 0) hi = x, vhi = curve[size_t(x)];
    }
    if (hi > 0) return vlo + (vhi - vlo) * double(w - lo) / double(hi - lo);
    // Beyond the widest measured width: along the chord from one step at w = 1 to it (steadier than the slope of
    // the last two widths, whose passes are few and noisy).
    const double slope = lo > 1 ? std::max(0.0, (vlo - 1.0) / double(lo - 1)) : 0.0;
    return vlo + slope * double(w - lo);
}

}  // namespace

double modeled_chain_speedup(const engine::RunStats& p, int gamma, const std::vector<double>& curve) {
    if (p.baseline_tokens_per_s <= 0 || p.n_steps <= 0 || gamma < 1) return 0.0;
    const double t1 = 1.0 / p.baseline_tokens_per_s, rounds = double(p.n_steps);
    const std::vector<double> alpha = p.alpha();
    const size_t probe_gamma        = std::max<size_t>(1, p.pos_reached.size());
    const double draft_per_token    = p.t_draft_s / t1 / rounds / double(probe_gamma);
    const double overhead = std::max(0.0, p.t_decode_s - p.t_draft_s - engine::target_pass_seconds(p)) / t1 / rounds;
    // Accepted tokens per round: the measured share of rounds that accepted position k (short drafts included),
    // then the last measured acceptance per further position.
    double accepted = 0.0, m = 0.0;
    const double tail = alpha.empty() ? 0.0 : std::min(0.99, alpha.back());
    for (int k = 0; k < gamma; ++k) {
        m = size_t(k) < p.pos_accepted.size() ? double(p.pos_accepted[size_t(k)]) / rounds : m * tail;
        accepted += m;
    }
    // Verification per round: the probe's mix of pass widths (a drafter that found nothing to propose verified one
    // token), full-length drafts at gamma + 1 tokens instead of the probe's length + 1, shorter ones kept.
    double verify = 0, counted = 0;
    for (size_t w = 1; w < p.verify_width_passes.size(); ++w) {
        if (p.verify_width_passes[w] <= 0) continue;
        const int width = w >= probe_gamma + 1 ? gamma + 1 : std::min(int(w), gamma + 1);
        verify += double(p.verify_width_passes[w]) * verify_steps(curve, width);
        counted += double(p.verify_width_passes[w]);
    }
    verify            = counted > 0 ? verify / counted : verify_steps(curve, gamma + 1);
    const double cost = double(gamma) * draft_per_token + verify + overhead;
    return (1.0 + accepted) / cost;
}

}  // namespace speculum::sweep

// EngineEvaluator: SpecEngine runs per configuration, statistics accumulated over the prompts (engine::accumulate)
// and reported as the row's stats with the scalar metrics the store indexes.
#include "core/sweep/engine_evaluator.h"

#include "core/session/run.h"
#include "core/session/run_report.h"
#include "core/store/hash.h"

namespace speculum::sweep {

namespace {
engine::SpecConfig parse_config(const nlohmann::json& config) {
    engine::SpecConfig cfg;
    from_json(config, cfg);  // strict: unknown keys and wrong types name the key
    return cfg;
}
}  // namespace

EngineEvaluator::EngineEvaluator(const nlohmann::json& target, const CancelToken& cancel) {
    const session::TargetSource source = session::TargetSource::from_json(target);
    session::TargetOptions options;
    options.cancel = cancel;
    m_target       = session::load_target(source, options);
    // Random weights are identified by their spec (no tokenizer: prompts are token ids), files by their content.
    m_model_hash =
        source.synthetic ? store::json_hash({{"synthetic", target.at("synthetic")}}) : store::file_hash(m_target.path);
}

EngineEvaluator::EngineEvaluator(session::Target target, std::string model_hash)
    : m_target(std::move(target)), m_model_hash(std::move(model_hash)) {
    if (!m_target.model) throw std::invalid_argument("EngineEvaluator: no target model");
}

EngineEvaluator::~EngineEvaluator() = default;

std::string EngineEvaluator::dataset_hash(const nlohmann::json& config, int prompts) const {
    nlohmann::json id = {{"prompts", prompts}};
    for (const char* key : {"task", "prompt", "prompt_ids", "max_new_tokens"})
        if (config.contains(key)) id[key] = config[key];
    if (config.contains("dataset") && config["dataset"].is_string() && !config["dataset"].get<std::string>().empty()) {
        std::string path = config["dataset"].get<std::string>();
        std::lock_guard lock(m_hash_mutex);
        auto it = m_file_hashes.find(path);
        if (it == m_file_hashes.end()) it = m_file_hashes.emplace(path, store::file_hash(path)).first;
        id["dataset"] = it->second;  // the content, not the path: an edited dataset is a new key
    }
    return store::json_hash(id);
}

void EngineEvaluator::validate(const nlohmann::json& config) const {
    engine::SpecConfig cfg = parse_config(config);
    cfg.validate(m_target.model->hparams().n_layer);
    if (!m_target.tokenizer && (!cfg.prompt.empty() || !cfg.dataset.empty()))
        throw std::invalid_argument("prompt/dataset: text prompts need the target's tokenizer; use prompt_ids");
    if (!cfg.baseline) throw std::invalid_argument("baseline must be true in a sweep (speedup needs it)");
}

EvalResult EngineEvaluator::evaluate(const nlohmann::json& config, const EvalContext& ctx) {
    engine::SpecConfig cfg = parse_config(config);
    if (ctx.prompts > 0) cfg.max_prompts = ctx.prompts;
    session::RunHooks hooks;
    hooks.cancel         = ctx.token;
    size_t n_prompts     = 0;
    hooks.on_start       = [&](const std::string&, const std::vector<session::RunPrompt>& p) { n_prompts = p.size(); };
    hooks.on_prompt_done = [&](size_t i, const session::PromptRun& pr, const engine::RunStats&) {
        report(ctx.progress, static_cast<double>(i + 1) / static_cast<double>(n_prompts), pr.prompt.id);
    };
    const session::RunOutcome out = session::run(cfg, m_target, hooks);
    const engine::RunStats& total = out.total;

    EvalResult res;
    res.stats   = total;
    res.prompts = static_cast<int>(out.runs.size());
    // Repeated passes (the config's `repeats`): the median of the A/B pairs, its interval kept in the statistics.
    const session::RepeatSummary& rs = out.repeats;
    if (rs.passes > 1 && rs.speedup.n > 0) {
        res.metrics["speedup"] = rs.speedup.median;
        res.stats["repeated"]  = rs;  // the run report's shape (session/run_report.h)
    } else if (total.speedup > 0) {
        res.metrics["speedup"] = total.speedup;
    }
    res.metrics["accepted_length"] = total.mean_accepted_length();
    res.metrics["bpt"]             = total.bytes_per_token / 1e9;  // GB per token, like the analytic bpt
    // Draft memory proxy: weight bytes each draft level reads per forward pass (the weights it keeps resident).
    double draft_bytes = 0;
    for (const auto& l : total.levels)
        if (l.level > 0 && l.n_forward > 0) draft_bytes += static_cast<double>(l.bytes_weights) / l.n_forward;
    res.metrics["draft_bytes"] = draft_bytes;
    // The Pareto's cost axis beside draft_bytes: draft work per target pass, gamma x level 1's measured c.
    if (!cfg.gamma.empty()) res.stats["draft_work"] = double(cfg.gamma[0]) * total.draft_cost_ratio();
    // Greedy runs: the share of each prompt's tokens equal to the target's own output.
    if (out.agreement) res.metrics["quality"] = *out.agreement;
    // Cassandra's objective from the measured acceptance (single self-draft levels), so J-driven grid searches run on
    // measured data.
    if (out.cassandra_j) res.metrics["j"] = *out.cassandra_j;
    return res;
}

}  // namespace speculum::sweep

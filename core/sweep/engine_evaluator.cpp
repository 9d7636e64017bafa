// EngineEvaluator: SpecEngine runs per configuration, statistics accumulated over the prompts (engine::accumulate)
// and reported as the row's stats with the scalar metrics the store indexes.
#include "core/sweep/engine_evaluator.h"

#include "core/drafts/draft_bits.h"

#include "core/engine/engine.h"
#include "core/engine/session.h"
#include "core/model/synthetic.h"
#include "core/model/vocab.h"
#include "core/resources.h"
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
    if (target.is_object()) {
        if (target.size() != 1 || !target.contains("synthetic"))
            throw std::invalid_argument("target must be a GGUF path or {\"synthetic\": {...}}");
        model::SyntheticSpec spec;
        from_json(target.at("synthetic"), spec);
        spec.validate();
        // The layout Model::load would choose (WeightMemory::automatic), as for a file.
        m_target = std::make_unique<model::Model>(
            model::Model::with_preferred_memory(model::make_synthetic_model(spec, {}, cancel), {}, cancel));
        m_model_hash = store::json_hash({{"synthetic", target.at("synthetic")}});
        return;  // random weights: no tokenizer, prompts are token ids
    }
    if (!target.is_null() && !target.is_string()) throw std::invalid_argument("target must be a string or an object");
    std::string path = target.is_string() ? target.get<std::string>() : resource_path(kBundledTargetModel).string();
    m_target         = std::make_unique<model::Model>(model::Model::load(path, {}, cancel));
    m_model_hash     = store::file_hash(path);
    if (m_target->gguf()) {
        try {
            m_tokenizer = model::Tokenizer::from_vocab(model::vocab_from_gguf(*m_target->gguf()));
        } catch (const std::exception&) {
            // token-id prompts still work; text prompts fail in validate() with a clear message
        }
    }
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
    cfg.validate(m_target->hparams().n_layer);
    if (!m_tokenizer && (!cfg.prompt.empty() || !cfg.dataset.empty()))
        throw std::invalid_argument("prompt/dataset: text prompts need the target's tokenizer; use prompt_ids");
    if (!cfg.baseline) throw std::invalid_argument("baseline must be true in a sweep (speedup needs it)");
}

EvalResult EngineEvaluator::evaluate(const nlohmann::json& config, const EvalContext& ctx) {
    engine::SpecConfig cfg = parse_config(config);
    if (ctx.prompts > 0) cfg.max_prompts = ctx.prompts;
    cfg.validate(m_target->hparams().n_layer);
    const model::Tokenizer* tok            = m_tokenizer ? &*m_tokenizer : nullptr;
    std::vector<engine::RunPrompt> prompts = engine::resolve_prompts(cfg, tok);
    drafts::DrafterOptions dopts;
    dopts.cancel = ctx.token;  // building a draft (pruning, loading a model) is part of the cancel latency
    if (tok) dopts.tokenize = [tok](const std::string& t) { return tok->encode(t, false, false); };
    auto stack = engine::make_draft_stack(cfg, *m_target, dopts);

    engine::RunStats total;
    double agreement = 0;  // greedy runs: share of each prompt's tokens equal to the target's own output
    int checked      = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
        ctx.token.throw_if_cancelled();
        engine::SpecConfig pc = cfg;
        pc.max_new_tokens     = prompts[i].max_new_tokens;
        engine::SpecEngine eng(*m_target, pc, stack);
        engine::RunResult r = eng.run(prompts[i].tokens, ctx.token);
        if (r.cancelled) throw Cancelled();
        engine::accumulate(total, r.stats);
        if (r.stats.lossless_checked && r.stats.n_generated > 0) {
            agreement += r.stats.lossless_mismatch < 0
                             ? 1.0
                             : static_cast<double>(r.stats.lossless_mismatch) / r.stats.n_generated;
            ++checked;
        }
        report(ctx.progress, static_cast<double>(i + 1) / static_cast<double>(prompts.size()), prompts[i].id);
    }
    EvalResult res;
    res.stats   = total;
    res.prompts = static_cast<int>(prompts.size());
    if (total.speedup > 0) res.metrics["speedup"] = total.speedup;
    res.metrics["accepted_length"] = total.mean_accepted_length();
    res.metrics["bpt"]             = total.bytes_per_token / 1e9;  // GB per token, like the analytic bpt
    // Draft memory proxy: weight bytes each draft level reads per forward pass (the weights it keeps resident).
    double draft_bytes = 0;
    for (const auto& l : total.levels)
        if (l.level > 0 && l.n_forward > 0) draft_bytes += static_cast<double>(l.bytes_weights) / l.n_forward;
    res.metrics["draft_bytes"] = draft_bytes;
    if (checked > 0) res.metrics["quality"] = agreement / checked;
    // Cassandra's objective from the measured acceptance (single self-draft levels), so J-driven grid searches run on
    // measured data.
    if (cfg.levels.size() == 1 && cfg.verification != engine::Verification::cats && !prompts.empty()) {
        const double mean_ctx = (double(total.n_prompt) + 0.5 * double(total.n_generated)) / double(prompts.size());
        if (auto j = drafts::measured_cassandra_j(cfg.levels[0], *m_target, total.n_drafted, total.n_accepted, mean_ctx))
            res.metrics["j"] = *j;
    }
    return res;
}

}  // namespace speculum::sweep

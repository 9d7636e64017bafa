// Draft stack assembly from DraftSpecs, prompt resolution, and the one run loop.
#include "core/session/run.h"
#include "core/clock.h"

#include "core/data/dataset.h"
#include "core/drafts/draft_bits.h"
#include "core/drafts/model_drafter.h"
#include "core/drafts/self_draft.h"
#include "core/engine/cats.h"
#include "core/engine/engine.h"
#include "core/hw/cpu_load.h"
#include "core/model/generate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace speculum::session {

using engine::SpecConfig;

std::shared_ptr<engine::CompositeDrafter> make_draft_stack(const SpecConfig& cfg, const model::Model& target,
                                                           const drafts::DrafterOptions& options,
                                                           std::shared_ptr<drafts::Drafter>* first) {
    std::vector<engine::LevelMaterial> mats;
    drafts::DrafterOptions o = options;
    o.context                = cfg.context;
    for (size_t i = 0; i < cfg.levels.size(); ++i) {
        engine::LevelMaterial m;
        try {
            m.drafter = std::shared_ptr<drafts::Drafter>(drafts::make_drafter(cfg.levels[i], target, o));
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("spec.levels[" + std::to_string(i) + "]: " + e.what());
        }
        if (const auto* md = dynamic_cast<const drafts::ModelDrafter*>(m.drafter.get())) {
            m.model   = &md->model();
            m.options = md->forward_options();
            m.cost    = md->cost_model();
        }
        m.name = cfg.levels[i].name();
        if (i == 0 && first) *first = m.drafter;
        mats.push_back(std::move(m));
    }
    return engine::build_draft_stack(cfg, mats);
}

std::vector<RunPrompt> resolve_prompts(const SpecConfig& cfg, const model::Tokenizer* tokenizer) {
    std::vector<RunPrompt> out;
    // A rendered chat holds the template's special tokens as text (<|im_start|>, ...): they are parsed as specials.
    auto encode = [&](const std::string& text, const std::string& field, bool parse_special = false) {
        if (!tokenizer)
            throw std::invalid_argument(field +
                                        ": text prompts need the target's tokenizer (its GGUF has none); "
                                        "use spec.prompt_ids");
        std::vector<int32_t> ids = tokenizer->encode(text, true, parse_special);
        if (ids.empty()) throw std::invalid_argument(field + ": the prompt encodes to no tokens");
        return ids;
    };
    if (!cfg.dataset.empty()) {
        const data::Dataset ds = data::load_dataset(cfg.dataset);
        for (const data::Prompt& p : ds.prompts) {
            if (!cfg.task.empty() && p.task != cfg.task) continue;
            if (static_cast<int32_t>(out.size()) >= cfg.max_prompts) break;
            const std::string where = cfg.dataset + ":" + std::to_string(p.line);
            if (!p.messages.empty() && !tokenizer) encode("", where);  // the no-tokenizer message
            const std::string text =
                data::prompt_text(p, tokenizer ? tokenizer->vocab().chat_template : "", cfg.dataset);
            out.push_back({p.id, p.task, encode(text, where, !p.messages.empty()),
                           std::min(p.max_new_tokens, cfg.max_new_tokens)});
        }
        if (out.empty()) {
            std::string tasks;
            for (const auto& t : ds.tasks()) tasks += (tasks.empty() ? "" : ", ") + t;
            throw std::invalid_argument("spec.task: no prompt of task \"" + cfg.task + "\" in " + cfg.dataset +
                                        " (tasks: " + tasks + ")");
        }
        return out;
    }
    if (!cfg.prompt.empty()) {
        out.push_back({"prompt", "", encode(cfg.prompt, "spec.prompt"), cfg.max_new_tokens});
        return out;
    }
    if (!cfg.prompt_ids.empty()) {
        out.push_back({"prompt", "", cfg.prompt_ids, cfg.max_new_tokens});
        return out;
    }
    throw std::invalid_argument("spec.prompt: no prompt given (set prompt, prompt_ids or dataset)");
}

namespace {

// What the draft stack is called in reports; CATS drafts with the target's own first layers.
std::string drafter_name(const SpecConfig& cfg, const model::Model& target, const engine::CompositeDrafter& stack) {
    if (cfg.verification != engine::Verification::cats) return stack.name();
    const engine::CatsLayers l =
        engine::cats_layers(cfg.cats, target, cfg.context.n_ctx > 0 ? cfg.context.n_ctx : target.hparams().n_ctx_train);
    return "CATS: the target's layers 0.." + std::to_string(l.draft - 1) + " draft, layers " + std::to_string(l.draft) +
           ".." + std::to_string(l.sv - 1) + " verify shallowly" +
           (l.from_budget ? " (the deepest that fits cats.dram_budget_gb)" : "") +
           (cfg.cats.typical ? "; typical acceptance (LOSSY)" : "");
}

}  // namespace

namespace {

RunOutcome run_unchecked(const SpecConfig& cfg, const Target& target, const RunHooks& hooks) {
    if (!target.model) throw std::invalid_argument("no target model");
    const model::Model& tm = *target.model;
    cfg.validate(tm.hparams().n_layer);
    const model::Tokenizer* tok = target.tokenizer.get();
    if (!tok && (!cfg.prompt.empty() || !cfg.dataset.empty()))
        throw std::invalid_argument("prompt: text prompts need the target's tokenizer, which could not be loaded (" +
                                    target.tokenizer_error + "); give token ids (prompt_ids)");
    RunOutcome out;
    const std::vector<RunPrompt> prompts = resolve_prompts(cfg, tok);
    drafts::DrafterOptions dopts;
    dopts.cancel = hooks.cancel;  // building a draft (pruning, loading a model) is part of the cancel latency
    if (tok) dopts.tokenize = [tok](const std::string& t) { return tok->encode(t, false, false); };
    if (hooks.progress)
        dopts.progress = [&hooks, share = cfg.levels.front().strict_subset ? 0.025 : 0.05](double f,
                                                                                           const std::string& what) {
            hooks.progress(share * f, "building the draft: " + what);
        };
    std::shared_ptr<drafts::Drafter> first;
    const auto stack             = make_draft_stack(cfg, tm, dopts, &first);
    out.drafter                  = drafter_name(cfg, tm, *stack);
    const model::Model* verifier = target.verifier.get();
    std::shared_ptr<const model::Model> split;  // levels[0].strict_subset: the target stored as the draft + the rest
    if (cfg.levels.front().strict_subset) {
        const std::string field = "levels[0].strict_subset";
        if (verifier)
            throw std::invalid_argument(field + ": the target already verifies on another copy (" +
                                        target.verifier_note + "); use one of them");
        const auto* md = dynamic_cast<const drafts::ModelDrafter*>(first.get());
        if (!md) throw std::invalid_argument(field + ": the first level is not a self-draft of the target");
        ProgressFn sp;
        if (hooks.progress)
            sp = [&hooks](double f, const std::string& what) {
                hooks.progress(0.025 + 0.025 * f, "splitting the target with its draft: " + what);
            };
        drafts::SplitTarget st = [&] {
            try {
                return drafts::split_target(tm, md->model(), sp, hooks.cancel);
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument(field + ": " + e.what());
            }
        }();
        auto mib = [](uint64_t b) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / 1048576.0);
            return std::string(buf);
        };
        out.split_bytes       = st.bytes_split;
        out.split_dense_bytes = st.bytes_dense;
        out.split_draft_bytes = st.bytes_draft;
        out.verifier_note     = "the target stored as its draft's compact matrices plus the rest (" +
                            std::to_string(st.n_split) + " matrices: " + mib(st.bytes_split) + " against " +
                            mib(st.bytes_dense) + " dense + " + mib(st.bytes_draft) + " of draft)";
        split    = std::make_shared<const model::Model>(std::move(st.model));
        verifier = split.get();
    }
    if (hooks.on_start) hooks.on_start(out.drafter, prompts);

    const double n             = double(prompts.size());
    const engine::Repeats& rep = cfg.repeats;
    double agreement           = 0;
    int checked                = 0;
    RepeatSummary& rs          = out.repeats;
    std::vector<double> tps, base_tps, cost;
    const hw::CpuSample load_start = hw::cpu_sample();
    const auto t_start             = measure_clock::now();
    auto elapsed                   = [&] { return seconds_since(t_start); };
    for (int pass = 0;; ++pass) {
        const bool first = pass == 0;
        if (!first) stack->reset_learned();  // each pass drafts as the first did, not from its responses
        for (size_t i = 0; i < prompts.size(); ++i) {
            hooks.cancel.throw_if_cancelled();
            const RunPrompt& p = prompts[i];
            if (first && hooks.on_prompt) hooks.on_prompt(i, p);
            SpecConfig pc     = cfg;
            pc.max_new_tokens = p.max_new_tokens;
            engine::SpecEngine eng(tm, pc, stack, verifier);
            engine::FunctionSink sink([&](const engine::TokenEvent& e) { hooks.on_token(i, e); });
            ProgressFn prog;
            const std::string where = (rep.max > 1 ? "pass " + std::to_string(pass + 1) + ", " : std::string()) +
                                      "prompt " + std::to_string(i + 1) + "/" + std::to_string(prompts.size());
            if (hooks.progress)
                prog = [&](double f, const std::string& what) {
                    hooks.progress(0.05 + 0.95 * (double(pass) + (double(i) + 0.5 * f) / n) / double(rep.max),
                                   where + ": " + what);
                };
            engine::RunResult r = eng.run(p.tokens, hooks.cancel, prog, first && hooks.on_token ? &sink : nullptr);
            if (r.cancelled) throw Cancelled();
            if (r.stats.speedup > 0) {
                rs.speedup_pairs.push_back(r.stats.speedup);
                tps.push_back(r.stats.tokens_per_s);
                base_tps.push_back(r.stats.baseline_tokens_per_s);
                if (r.stats.draft_cost_ratio() > 0) cost.push_back(r.stats.draft_cost_ratio());
            }
            if (!first) continue;
            engine::accumulate(out.total, r.stats);
            if (r.stats.lossless_checked && r.stats.n_generated > 0) {
                agreement +=
                    r.stats.lossless_mismatch < 0 ? 1.0 : double(r.stats.lossless_mismatch) / r.stats.n_generated;
                ++checked;
            }
            out.runs.push_back({p, std::move(r)});
            if (hooks.on_prompt_done) hooks.on_prompt_done(i, out.runs.back(), out.total);
        }
        rs.passes                = pass + 1;
        rs.wall_s                = elapsed();
        rs.speedup               = analytic::median_interval(rs.speedup_pairs);
        rs.tokens_per_s          = analytic::median_interval(tps);
        rs.baseline_tokens_per_s = analytic::median_interval(base_tps);
        rs.cost_ratio            = analytic::median_interval(cost);
        rs.other_load            = hw::other_load(load_start, hw::cpu_sample());
        rs.stop                  = repeat_stop(rep, rs);
        if (hooks.on_pass_done) hooks.on_pass_done(rs);
        if (!rs.stop.empty()) break;
    }
    if (hooks.progress) hooks.progress(1.0, "done");
    if (checked > 0) out.agreement = agreement / checked;
    const engine::RunStats& t = out.total;
    if (!prompts.empty()) out.mean_context = (double(t.n_prompt) + 0.5 * double(t.n_generated)) / n;
    if (cfg.levels.size() == 1 && cfg.verification != engine::Verification::cats && !prompts.empty())
        out.cassandra_j = drafts::measured_cassandra_j(cfg.levels[0], tm, t.n_drafted, t.n_accepted, out.mean_context);
    return out;
}

}  // namespace

std::string repeat_stop(const engine::Repeats& rep, const RepeatSummary& rs) {
    const bool enough  = rs.passes >= rep.min && rs.wall_s >= rep.min_time_s;
    const bool precise = rs.speedup.n >= 6 && rs.speedup.rel_width() <= rep.rel_width;
    char why[96];
    if (rs.passes >= rep.max)
        std::snprintf(why, sizeof why, "%d pass%s (the most)", rs.passes, rs.passes == 1 ? "" : "es");
    else if (enough && rep.rel_width <= 0)
        std::snprintf(why, sizeof why, "the minimum of %.3g s and %d passes reached", rep.min_time_s, rep.min);
    else if (enough && precise)
        std::snprintf(why, sizeof why, "interval within %.0f %%", 100.0 * rep.rel_width);
    else if (rs.passes >= rep.min && rep.max_time_s > 0 && rs.wall_s >= rep.max_time_s)
        std::snprintf(why, sizeof why, "time budget (%.0f s) spent", rep.max_time_s);
    else if (rs.speedup_pairs.empty() && rs.passes >= rep.min && rs.wall_s >= rep.min_time_s)
        std::snprintf(why, sizeof why, "no speedup pairs (no baseline)");
    else
        why[0] = 0;
    return why;
}

// NaN or inf logits (a broken model) stop the run with where they first appear in the target on the first prompt,
// which the app shows as the measurement's error; a draft's logits are named when the target's are all finite.
RunOutcome run(const SpecConfig& cfg, const Target& target, const RunHooks& hooks) {
    try {
        return run_unchecked(cfg, target, hooks);
    } catch (const model::NonFiniteLogits& e) {
        std::string where;
        try {
            const auto prompts = resolve_prompts(cfg, target.tokenizer.get());
            if (!prompts.empty()) where = model::locate_non_finite(*target.model, cfg.context, prompts[0].tokens);
        } catch (const std::exception&) {
        }
        throw model::NonFiniteLogits(std::string(e.what()) + "; " +
                                     (where.empty() ? "the target's activations on the first prompt are finite, so a "
                                                      "draft's logits (or a later token's) were not"
                                                    : "target: " + where));
    }
}

}  // namespace speculum::session

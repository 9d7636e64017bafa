// AppConfig -> SpecConfig, and one measured run: SpecEngine per prompt, TokenEvents -> TokenPieces, RunStats ->
// MeasuredView, partial snapshots throttled for the GUI.
#include "ui/model/engine_measurer.h"

#include "core/resources.h"
#include "core/engine/engine.h"
#include "core/session/run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>

namespace speculum::ui {

const char* const kBuiltinPrompt = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n";

namespace {

constexpr auto kPartialEvery       = std::chrono::milliseconds(50);  // GUI refresh of a streaming run
constexpr size_t kPromptTextBytes  = 400;                            // prompt text kept for the Live decode panel
constexpr int32_t kFallbackIdCount = 8;                              // token-id prompt for models without tokenizer

std::string bundled_draft_model() {
    std::error_code ec;
    if (auto res = resources_dir(); res && std::filesystem::exists(*res / kBundledDraftModel, ec))
        return (*res / kBundledDraftModel).string();
    return "";
}

// The bundled model one size below `above` (the mid-level draft -> the small draft), so that a cascade level
// under the bundled mid-level draft is the bundled small draft; "" when `above` is not the bundled mid model.
std::string smaller_bundled_model(const std::string& above) {
    std::error_code ec;
    auto res = resources_dir();
    if (above.empty() || !res || !std::filesystem::equivalent(above, *res / kBundledMidModel, ec)) return "";
    return bundled_draft_model();
}

// A separate-model level without a path uses the bundled draft model (it shares the bundled target's vocabulary).
drafts::DraftSpec with_model_path(drafts::DraftSpec d, const std::string& field) {
    if (d.kind != drafts::DraftKind::model) return d;
    if (!d.model_path.empty()) {
        if (d.label.empty()) d.label = "model " + std::filesystem::path(d.model_path).filename().string();
        return d;
    }
    d.model_path = bundled_draft_model();
    if (d.model_path.empty())
        throw std::invalid_argument(field + ".model_path: choose a draft GGUF (no bundled draft model found)");
    if (d.label.empty()) d.label = "bundled draft model";
    return d;
}

TokenOrigin origin_of(engine::TokenKind k) {
    switch (k) {
        case engine::TokenKind::accepted:
            return TokenOrigin::accepted;
        case engine::TokenKind::corrected:
            return TokenOrigin::corrected;
        case engine::TokenKind::bonus:
            return TokenOrigin::bonus;
    }
    return TokenOrigin::accepted;
}

}  // namespace

engine::SpecConfig spec_config_from_app(const AppConfig& cfg, const MeasureSource& source) {
    engine::SpecConfig s;
    s.levels = {with_model_path(cfg.draft, "draft")};
    if (s.levels[0].uses_wanda() && s.levels[0].prune.calibration.empty()) {
        if (source.dataset.empty())
            throw std::invalid_argument("draft.prune.method: Wanda needs calibration text: open a dataset");
        s.levels[0].prune.calibration = source.dataset;  // ||X|| from the prompts the run decodes
    }
    s.gamma = {cfg.gamma};
    for (size_t i = 0; i < cfg.cascade.size(); ++i) {
        const CascadeLevelConfig& l = cfg.cascade[i];
        const std::string field     = "cascade[" + std::to_string(i) + "]";
        drafts::DraftSpec d;
        d.kind = l.drafter;
        if (d.kind == drafts::DraftKind::self) {
            d.exit_layer = 0;  // the cheapest self-draft: the target's first layer
            d.label      = "self: exit@0";
        } else if (d.kind == drafts::DraftKind::model) {  // the next smaller bundled model, else level 1's model
            d.model_path = smaller_bundled_model(s.levels.back().model_path);
            if (d.model_path.empty()) d.model_path = cfg.draft.kind == drafts::DraftKind::model ? cfg.draft.model_path : "";
            d = with_model_path(d, field);
        }
        s.levels.push_back(d);
        s.gamma.push_back(l.steps);
    }
    if (cfg.tree.mode != TreeMode::chain) {
        if (!cfg.cascade.empty())
            throw std::invalid_argument(
                "tree: a verification tree takes one draft level; remove the cascade levels "
                "or choose the chain");
        s.verification = engine::Verification::tree;
        if (cfg.tree.mode == TreeMode::branching) {
            s.tree.kind      = engine::TreeKind::static_shape;
            s.tree.branching = std::vector<int32_t>(cfg.tree.branching.begin(), cfg.tree.branching.end());
        } else {
            s.tree.kind               = engine::TreeKind::sequoia;
            s.tree.node_budget        = std::max(1, cfg.tree.budget - 1);  // the UI's budget counts the root
            s.tree.max_depth          = cfg.tree.max_depth;
            const bool measured       = cfg.tree.mode == TreeMode::optimal_measured && !source.rank_acceptance.empty();
            std::vector<double> prior = measured ? source.rank_acceptance : cfg.tree.rank_acceptance;
            if (prior.size() > 16) prior.resize(16);
            if (!prior.empty()) s.tree.prior = prior;
        }
    }
    s.sampling.temperature = cfg.temperature;
    s.p_min                = cfg.p_min;
    s.max_new_tokens       = cfg.measure_tokens;
    s.max_prompts          = cfg.measure_prompts;
    s.dataset              = source.dataset;
    s.task                 = source.task;
    if (s.dataset.empty()) s.prompt = kBuiltinPrompt;
    s.baseline = true;
    return s;
}

MeasuredView measure_with_engine(const AppController::MeasureRequest& req, const CancelToken& cancel,
                                 const ProgressFn& progress, const std::function<void(const MeasuredView&)>& partial) {
    const session::Target target = session::open_target(req.model);
    const model::Tokenizer* tok  = target.tokenizer.get();
    engine::SpecConfig cfg = spec_config_from_app(req.config, {req.dataset_path, req.task, req.rank_acceptance});
    MeasuredView view;
    if (!tok) {  // text cannot be encoded: a fixed token-id prompt, said so in the view
        cfg.dataset.clear(), cfg.prompt.clear(), cfg.prompt_ids.clear();
        for (int32_t i = 1; i <= std::min(kFallbackIdCount, target.model->hparams().n_vocab - 1); ++i)
            cfg.prompt_ids.push_back(i);
        view.source = "token ids 1.." + std::to_string(cfg.prompt_ids.size()) + " (the model has no tokenizer)";
    } else if (cfg.dataset.empty()) {
        view.source = "built-in prompt (open a dataset to choose prompts)";
    } else {
        view.source = std::filesystem::path(cfg.dataset).filename().string() +
                      (cfg.task.empty() ? "" : ", task " + cfg.task) + ", first " + std::to_string(cfg.max_prompts);
    }

    using Clock    = std::chrono::steady_clock;
    auto last_post = Clock::now();
    int step_offset = 0;   // target passes of the prompts before this one
    engine::RunStats total;  // of the finished prompts
    session::RunHooks hooks;
    hooks.cancel   = cancel;
    hooks.progress = progress;
    hooks.on_start = [&](const std::string& drafter, const std::vector<session::RunPrompt>& prompts) {
        view.drafter       = drafter;
        view.prompts_total = int(prompts.size());
    };
    hooks.on_prompt = [&](size_t, const session::RunPrompt& p) {
        PromptView pv{p.id, p.task, ""};
        if (tok)
            pv.text = tok->decode(p.tokens);
        else
            for (int32_t id : p.tokens) pv.text += (pv.text.empty() ? "" : " ") + std::to_string(id);
        if (pv.text.size() > kPromptTextBytes) pv.text = "..." + pv.text.substr(pv.text.size() - kPromptTextBytes);
        view.prompts.push_back(pv);
        step_offset = int(total.n_steps);
    };
    hooks.on_token = [&](size_t i, const engine::TokenEvent& e) {
        view.tokens.push_back({tok ? tok->token_to_piece(e.token, false) : "<" + std::to_string(e.token) + ">",
                               e.level, origin_of(e.kind), step_offset + e.step, int(i)});
        ++view.n_generated;
        view.n_steps = std::max<int64_t>(view.n_steps, step_offset + e.step + 1);
        if (partial && Clock::now() - last_post >= kPartialEvery) {
            partial(view);
            last_post = Clock::now();
        }
    };
    hooks.on_prompt_done = [&](size_t i, const session::PromptRun& pr) {
        engine::accumulate(total, pr.result.stats);
        if (pr.result.stats.lossless_checked) {
            ++view.lossless_checked;
            view.lossless_mismatches += pr.result.stats.lossless_mismatch >= 0;
        }
        view.stats       = total;
        view.n_generated = total.n_generated;
        if (partial && i + 1 < size_t(view.prompts_total)) partial(view), last_post = Clock::now();
    };
    session::run(cfg, target, hooks);
    return view;
}

std::string summarize_measured(const MeasuredView& v, const AppConfig& cfg) {
    char buf[256];
    const engine::RunStats& r = v.stats;
    std::snprintf(buf, sizeof buf, "speedup %.3fx (%.1f tokens/s, baseline %.1f), %.2f tokens per target pass, alpha_i",
                  r.speedup, r.tokens_per_s, r.baseline_tokens_per_s, r.mean_accepted_length());
    std::string s = buf;
    for (double a : r.alpha()) {
        std::snprintf(buf, sizeof buf, " %.2f", a);
        s += buf;
    }
    s += ", gamma " + std::to_string(cfg.gamma) + ", " + std::to_string(v.prompts.size()) +
         (v.prompts.size() == 1 ? " prompt, " : " prompts, ") + std::to_string(v.n_generated) + " tokens in " +
         std::to_string(v.n_steps) + " steps, draft " + v.drafter;
    if (v.lossless_checked > 0)
        s += ", lossless on " + std::to_string(v.lossless_checked - v.lossless_mismatches) + "/" +
             std::to_string(v.lossless_checked) + " prompts";
    return s;
}

}  // namespace speculum::ui

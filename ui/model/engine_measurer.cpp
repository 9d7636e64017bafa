// One measured run through session::run: TokenEvents -> TokenPieces, RunStats -> MeasuredView, partial snapshots
// throttled for the GUI.
#include "ui/model/engine_measurer.h"

#include "core/resources.h"
#include "core/session/run.h"
#include "core/session/run_report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>

namespace speculum::ui {

namespace {

constexpr auto kPartialEvery      = std::chrono::milliseconds(50);  // GUI refresh of a streaming run
constexpr size_t kPromptTextBytes = 400;                            // prompt text kept for the Live decode panel

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

// "<42>": a token without a tokenizer (snprintf: GCC 12 warns falsely on "<" + std::string + ">", bug 105651).
std::string id_piece(int32_t id) {
    char text[16];
    std::snprintf(text, sizeof text, "<%d>", id);
    return text;
}

}  // namespace

MeasuredView measure_with_engine(const AppController::MeasureRequest& req, const CancelToken& cancel,
                                 const ProgressFn& progress, const std::function<void(const MeasuredView&)>& partial) {
    const session::Target target = session::open_target(req.model, req.model_path);
    const model::Tokenizer* tok  = target.tokenizer.get();
    engine::SpecConfig cfg       = spec_config_from_app(req.config, {req.dataset_path, req.task, req.rank_acceptance});
    MeasuredView view;
    if (!tok) {  // text cannot be encoded: a fixed token-id prompt, said so in the view
        view.source = use_token_id_prompt(cfg, target.model->hparams().n_vocab);
    } else if (cfg.dataset.empty()) {
        view.source = "built-in prompt (open a dataset to choose prompts)";
    } else {
        view.source = std::filesystem::path(cfg.dataset).filename().string() +
                      (cfg.task.empty() ? "" : ", task " + cfg.task) + ", first " + std::to_string(cfg.max_prompts);
    }

    using Clock     = std::chrono::steady_clock;
    auto last_post  = Clock::now();
    int step_offset = 0;  // target passes of the prompts before this one
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
            for (int32_t id : p.tokens) {
                if (!pv.text.empty()) pv.text += ' ';
                pv.text += std::to_string(id);
            }
        if (pv.text.size() > kPromptTextBytes) pv.text = "..." + pv.text.substr(pv.text.size() - kPromptTextBytes);
        view.prompts.push_back(pv);
        step_offset = int(view.stats.n_steps);
    };
    hooks.on_token = [&](size_t i, const engine::TokenEvent& e) {
        view.tokens.push_back({tok ? tok->token_to_piece(e.token, false) : id_piece(e.token), e.level,
                               origin_of(e.kind), step_offset + e.step, int(i)});
        ++view.n_generated;
        view.n_steps = std::max<int64_t>(view.n_steps, step_offset + e.step + 1);
        if (partial && Clock::now() - last_post >= kPartialEvery) {
            partial(view);
            last_post = Clock::now();
        }
    };
    hooks.on_prompt_done = [&](size_t i, const session::PromptRun& pr, const engine::RunStats& total) {
        if (pr.result.stats.lossless_checked) {
            ++view.lossless_checked;
            view.lossless_mismatches += pr.result.stats.lossless_mismatch >= 0;
        }
        view.stats       = total;
        view.n_generated = total.n_generated;
        if (partial && i + 1 < size_t(view.prompts_total)) partial(view), last_post = Clock::now();
    };
    hooks.on_pass_done = [&](const session::RepeatSummary& rs) {
        view.repeats = rs;
        if (partial && rs.stop.empty()) partial(view), last_post = Clock::now();  // more passes follow
    };
    const session::RunOutcome outcome = session::run(cfg, target, hooks);
    view.report = std::make_shared<const nlohmann::json>(session::run_report(cfg, outcome, target, false));
    return view;
}

std::string summarize_measured(const MeasuredView& v, const AppConfig& cfg) {
    char buf[256];
    const engine::RunStats& r = v.stats;
    std::snprintf(buf, sizeof buf, "speedup %.3fx (%.1f tokens/s, baseline %.1f), %.2f tokens per target pass, alpha_i",
                  r.speedup, r.tokens_per_s, r.baseline_tokens_per_s, r.mean_accepted_length());
    std::string s                    = buf;
    const session::RepeatSummary& rs = v.repeats;
    if (rs.speedup.n > 1) {
        std::snprintf(buf, sizeof buf, "speedup median %.3fx [%.3f, %.3f] (%.0f %% interval, %d pairs in %d passes), ",
                      rs.speedup.median, rs.speedup.lo, rs.speedup.hi, 100.0 * rs.speedup.coverage, rs.speedup.n,
                      rs.passes);
        s = buf + s;
    }
    for (double a : r.alpha()) {
        std::snprintf(buf, sizeof buf, " %.2f", a);
        s += buf;
    }
    s += ", gamma " + std::to_string(cfg.gamma()) + ", " + std::to_string(v.prompts.size()) +
         (v.prompts.size() == 1 ? " prompt, " : " prompts, ") + std::to_string(v.n_generated) + " tokens in " +
         std::to_string(v.n_steps) + " steps, draft " + v.drafter;
    if (v.lossless_checked > 0)
        s += ", lossless on " + std::to_string(v.lossless_checked - v.lossless_mismatches) + "/" +
             std::to_string(v.lossless_checked) + " prompts";
    if (rs.loaded())
        s +=
            "; other processes used " + std::to_string(int(100.0 * *rs.other_load)) + " % of the CPU (timings suspect)";
    return s;
}

}  // namespace speculum::ui

// The measuring engine behind the UI: turns the AppConfig into an engine SpecConfig, runs the real speculative
// engine and the plain autoregressive baseline on the opened model over a few prompts, and streams the committed
// tokens (TokenEvents) and the statistics into MeasuredView snapshots. Runs inside a worker job, never on the GUI
// thread; the controller (ui/app_controller) posts each snapshot to the GUI through the job mailbox.
#pragma once

#include "core/engine/spec_config.h"
#include "ui/model/app_controller.h"

#include <string>
#include <vector>

namespace speculum::ui {

// Where a measured run takes its prompts and tree prior from (besides the AppConfig itself).
struct MeasureSource {
    std::string dataset;                  // JSONL prompt suite; "" = the built-in prompt
    std::string task;                     // "" = every task of the dataset
    std::vector<double> rank_acceptance;  // measured acceptance by sibling rank (tree mode "optimal"); may be empty
};

// The engine configuration a measured run uses. Level 1 is cfg.draft; each cascade level adds a level below it
// (self = the target's first layer, model = a separate GGUF (the bundled draft), Max-Gram); γ of lower levels =
// their `steps`. Trees map to static branching or Sequoia (node budget without the root). The horizontal split
// is modeled only (not measured). Throws std::invalid_argument naming the field for what cannot be measured.
engine::SpecConfig spec_config_from_app(const AppConfig& cfg, const MeasureSource& source);

// The built-in prompt used when no dataset is open (the bundled models know Python and the King James Bible).
extern const char* const kBuiltinPrompt;

// Runs one measured decode: every prompt through SpecEngine (baseline included), streaming `partial` views at
// most every ~50 ms and after each prompt. Throws Cancelled when `cancel` fires, std::exception for bad configs.
MeasuredView measure_with_engine(const AppController::MeasureRequest& request, const CancelToken& cancel,
                                 const ProgressFn& progress, const std::function<void(const MeasuredView&)>& partial);

// One line for scripted runs and logs: "speedup 1.23x (412.5 tokens/s, baseline 334.1), 2.95 tokens per target
// pass, alpha_i 0.81 0.75, gamma 4, 2 prompts, 48 tokens in 17 steps, draft ..., lossless on 2/2 prompts".
std::string summarize_measured(const MeasuredView& v, const AppConfig& measured_config);

}  // namespace speculum::ui

// The measuring engine behind the UI: turns the AppConfig into an engine SpecConfig (spec_mapping.h), runs it with
// session::run (the real speculative engine and the plain autoregressive baseline) on the opened model over a few
// prompts, and streams the committed tokens (TokenEvents) and the statistics into MeasuredView snapshots. Runs
// inside a worker job, never on the GUI thread; the controller (ui/model/app_controller) posts each snapshot to the
// GUI through the job mailbox.
#pragma once

#include "ui/model/app_controller.h"
#include "ui/model/spec_mapping.h"

#include <string>
#include <vector>

namespace speculum::ui {

// Runs one measured decode: every prompt through SpecEngine (baseline included), streaming `partial` views at
// most every ~50 ms and after each prompt. Throws Cancelled when `cancel` fires, std::exception for bad configs.
MeasuredView measure_with_engine(const AppController::MeasureRequest& request, const CancelToken& cancel,
                                 const ProgressFn& progress, const std::function<void(const MeasuredView&)>& partial);

// One line for scripted runs and logs: "speedup 1.23x (412.5 tokens/s, baseline 334.1), 2.95 tokens per target
// pass, alpha_i 0.81 0.75, gamma 4, 2 prompts, 48 tokens in 17 steps, draft ..., lossless on 2/2 prompts".
std::string summarize_measured(const MeasuredView& v, const AppConfig& measured_config);

}  // namespace speculum::ui

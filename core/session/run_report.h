// The run report: what `speculum-cli run --report` writes and the app's "Run report" export writes, one shape
// {config, target, random_weights, drafter, target_memory, verifier_memory, strict_subset?, runs[], total, repeated,
// waterfall (engine::speedup_waterfall of the total: where the speedup went),
// cassandra_j?}. measured_run_from_report (run_report_read.cpp) reads it back for calibration; sweeps keep
// `repeated` in a measured row's statistics in the same shape.
#pragma once

#include "core/analytic/run_calibration.h"
#include "core/session/run.h"
#include "core/session/target.h"

#include <nlohmann/json.hpp>

namespace speculum::session {

// {passes, wall_s, stop, speedup_pairs[], speedup, tokens_per_s, baseline_tokens_per_s, cost_ratio, other_cpu_load?}
// with each interval {median, lo, hi, n, coverage}.
void to_json(nlohmann::json& j, const RepeatSummary& rs);
// Strict (core/json_reader.h): unknown keys and wrong types name the path under "repeated".
void from_json(const nlohmann::json& j, RepeatSummary& rs);

// The report of one run of `cfg` on `target` (its path, weight memory and tokenizer: each prompt's output is decoded
// to text when there is one). `random_weights` marks a synthetic target, whose acceptance means nothing.
nlohmann::json run_report(const engine::SpecConfig& cfg, const RunOutcome& outcome, const Target& target,
                          bool random_weights);

// Reads a report back into what the analytic calibration fits. `source` names the report in every error (e.g. the
// file name). Throws std::invalid_argument with the source and the field ("out.json: total.levels[1].t_s: must be a
// number") for a malformed report, for a file that is not a run report, and for runs the calibration does not model
// (token trees, adaptive gamma, p_min early stops, cancelled runs, runs without the autoregressive baseline).
analytic::MeasuredEngineRun measured_run_from_report(const nlohmann::json& report, const std::string& source);

// Reads and converts one report file (at most 64 MiB, kMaxReportFileBytes); errors name the file.
analytic::MeasuredEngineRun load_run_report(const std::string& path);

}  // namespace speculum::session

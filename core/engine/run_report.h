// Reads the JSON report of `speculum-cli run --report` ({config, target, drafter, runs[], total}) back and turns
// it into what the analytic calibration fits (analytic::MeasuredEngineRun). Lives on the engine side because the
// report's format is the engine's (RunStats, SpecConfig); the analytic models never see engine types.
#pragma once

#include "core/analytic/run_calibration.h"

#include <nlohmann/json.hpp>

#include <string>

namespace speculum::engine {

// `source` names the report in every error (e.g. the file name). Throws std::invalid_argument with the source and
// the field ("out.json: total.levels[1].t_s: must be a number") for a malformed report, for a file that is not a
// run report, and for runs the calibration does not model (token trees, adaptive γ, p_min early stops, cancelled
// runs, runs without the autoregressive baseline).
analytic::MeasuredEngineRun measured_run_from_report(const nlohmann::json& report, const std::string& source);

// Reads and converts one report file (at most 64 MiB, kMaxReportFileBytes); errors name the file.
analytic::MeasuredEngineRun load_run_report(const std::string& path);

}  // namespace speculum::engine

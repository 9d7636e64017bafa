// Pieces of `speculum-cli sweep` shared by the single-process run (cmd_sweep.cpp) and the MPI run
// (mpi/sweep_mpi.cpp): loading the spec, choosing the evaluator, the per-configuration line and the summary.
#pragma once

#include "core/sweep/evaluator.h"
#include "core/sweep/sweep_runner.h"
#include "core/sweep/sweep_spec.h"

#include <memory>
#include <string>

namespace speculum::cli {

// Reads and parses a spec file; errors (std::runtime_error) name the file and the field.
sweep::SweepSpec load_spec(const std::string& file);
// Parses spec JSON text; `origin` names it in errors (the file it came from).
sweep::SweepSpec parse_spec(const std::string& text, const std::string& origin);
// The spec's evaluator; slow_ms (testing) applies to the predict evaluator only (UsageError otherwise).
std::unique_ptr<sweep::Evaluator> make_evaluator(const sweep::SweepSpec& spec, const std::string& resources,
                                                 int slow_ms);

std::string fmt(double v, int precision = 3);
std::string duration(double s);  // "42s", "3m20s", "1.5h"; "?" when negative
// "[12/96] k=3 alpha=0.7  predicted_speedup=2.41  (cached)"
std::string event_line(const sweep::SweepSpec& spec, const sweep::SweepEvent& e);
// The closing lines: counts, rate, rungs, best configuration.
void print_summary(const sweep::SweepSpec& spec, const sweep::SweepSummary& s);

}  // namespace speculum::cli

// Comparing runs as tables and files: the run history as CSV (one row per run: configuration, speedup with its
// interval, acceptance, cost), and each run's per-prompt figures (from its run report: the first pass's speedup and
// tokens per target pass for every prompt, with its task) as rows and CSV. Plain functions over the snapshot's
// history, so the Run history panel and the Export panel show and write the same figures.
#pragma once

#include "ui/model/snapshot.h"

#include <string>
#include <vector>

namespace speculum::ui {

struct PromptRow {
    int run = 0;  // RunRecord::id
    std::string id, task;
    double speedup         = 0;  // the prompt's first pass: speculative tokens/s over its baseline's (0 = no baseline)
    double tokens_per_pass = 0;  // tokens committed per target pass
    double acceptance      = 0;  // accepted / drafted (0 when nothing was drafted)
    int64_t drafted        = 0;
};

// The prompts of a finished run (its report's "runs"); empty while it streams or when it has no report.
std::vector<PromptRow> prompt_rows(const RunRecord& r);

// "run,time,pinned,drafter,gamma,speedup,speedup_lo,speedup_hi,interval_coverage,pairs,tokens_per_s,
// baseline_tokens_per_s,c,tokens_per_pass,acceptance,drafted,prompts,other_cpu_load,config" with one row per run,
// oldest first; text fields quoted (RFC 4180), the configuration as its SpecConfig JSON.
std::string history_csv(const std::vector<RunRecord>& history);
// "run,prompt,task,speedup,tokens_per_pass,acceptance,drafted" for every prompt of every finished run.
std::string prompts_csv(const std::vector<RunRecord>& history);

}  // namespace speculum::ui

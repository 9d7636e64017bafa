// Run history and per-prompt figures as rows and CSV (see run_compare.h).
#include "ui/model/run_compare.h"

#include "core/format.h"

namespace speculum::ui {

namespace {

std::string quoted(const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string num(double v, const char* f = "%.6g") {
    return fmt(f, v);
}

}  // namespace

std::vector<PromptRow> prompt_rows(const RunRecord& r) {
    std::vector<PromptRow> out;
    if (!r.view.report || !r.view.report->contains("runs") || !(*r.view.report)["runs"].is_array()) return out;
    for (const nlohmann::json& one : (*r.view.report)["runs"]) {
        PromptRow p;
        p.run  = r.id;
        p.id   = one.value("id", std::string());
        p.task = one.value("task", std::string());
        if (one.contains("stats")) {
            try {
                const engine::RunStats s = engine::run_figures_from_json(one["stats"]);
                p.speedup                = s.speedup;
                p.tokens_per_pass        = s.mean_accepted_length();
                p.drafted                = s.n_drafted;
                p.acceptance             = s.n_drafted > 0 ? double(s.n_accepted) / double(s.n_drafted) : 0.0;
            } catch (const std::exception&) {
                // a report this version cannot read keeps the prompt's name, without figures
            }
        }
        out.push_back(std::move(p));
    }
    return out;
}

std::string history_csv(const std::vector<RunRecord>& history) {
    std::string csv =
        "run,time,pinned,drafter,gamma,speedup,speedup_lo,speedup_hi,interval_coverage,pairs,tokens_per_s,"
        "baseline_tokens_per_s,c,tokens_per_pass,acceptance,drafted,prompts,other_cpu_load,config\n";
    for (const RunRecord& r : history) {
        const engine::RunStats& s        = r.view.stats;
        const session::RepeatSummary& rs = r.view.repeats;
        const bool pairs                 = rs.speedup.n > 1;
        csv += std::to_string(r.id) + "," + quoted(r.when) + "," + (r.pinned ? "1" : "0") + "," +
               quoted(describe_draft(r.config.draft())) + "," + std::to_string(r.config.gamma()) + "," +
               num(r.view.speedup()) + "," + (pairs ? num(rs.speedup.lo) : "") + "," +
               (pairs ? num(rs.speedup.hi) : "") + "," + (pairs ? num(rs.speedup.coverage) : "") + "," +
               std::to_string(std::max(1, rs.speedup.n)) + "," +
               num(rs.tokens_per_s.n > 1 ? rs.tokens_per_s.median : s.tokens_per_s) + "," +
               num(rs.baseline_tokens_per_s.n > 1 ? rs.baseline_tokens_per_s.median : s.baseline_tokens_per_s) + "," +
               num(rs.cost_ratio.n > 1 ? rs.cost_ratio.median : s.draft_cost_ratio()) + "," +
               num(s.mean_accepted_length()) + "," +
               (s.n_drafted > 0 ? num(double(s.n_accepted) / double(s.n_drafted)) : "") + "," +
               std::to_string(s.n_drafted) + "," + std::to_string(r.view.prompts.size()) + "," +
               (rs.other_load ? num(*rs.other_load) : "") + "," + quoted(nlohmann::json(r.config.spec).dump()) + "\n";
    }
    return csv;
}

std::string prompts_csv(const std::vector<RunRecord>& history) {
    std::string csv = "run,prompt,task,speedup,tokens_per_pass,acceptance,drafted\n";
    for (const RunRecord& r : history)
        for (const PromptRow& p : prompt_rows(r))
            csv += std::to_string(p.run) + "," + quoted(p.id) + "," + quoted(p.task) + "," + num(p.speedup) + "," +
                   num(p.tokens_per_pass) + "," + (p.drafted > 0 ? num(p.acceptance) : "") + "," +
                   std::to_string(p.drafted) + "\n";
    return csv;
}

}  // namespace speculum::ui

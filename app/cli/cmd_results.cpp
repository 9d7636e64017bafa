// `speculum-cli results`: query a sweep result store (read-only; safe while a sweep writes): filtered table,
// CSV export, Pareto frontiers (speedup against draft memory or against quality) and best-per-task summaries.
#include "cli.h"

#include "core/file_io.h"
#include "core/store/csv.h"
#include "core/store/filter.h"
#include "core/store/result_store.h"
#include "core/store/summary.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace speculum::cli {

namespace {

const char* kFilterHelp = R"(Filters (--filter "CLAUSE,CLAUSE,..."; every clause must hold):
  FIELD OP VALUE   with OP one of = != < <= > >=, e.g. "speedup>1.5", "task=gsm8k", "/levels/0/prune/ratio<=0.5"
  FIELD is a number column (speedup, predicted_speedup, accepted_length, bpt, j, draft_bytes, quality,
  memory_gb, objective, prompts, wall_s), a text column (task, status, sweep, config_hash, model_hash,
  dataset_hash), or a JSON pointer into the stored configuration (numbers, true/false, or text).
predicted_speedup, accepted_length, bpt, j and memory_gb from the analytic evaluator are MODELED; speedup and
quality are measured by the engine evaluator.)";

std::string num(const std::optional<double>& v, int precision = 4) {
    if (!v) return "";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", precision + 2, *v);
    return buf;
}

void write_csv(const std::vector<store::ResultRow>& rows, const std::string& file) {
    std::ostringstream out;
    store::write_results_csv(out, rows);
    write_file_atomic(file, out.str());
}

void print_table(const std::vector<store::ResultRow>& rows, const std::string& speedup, size_t limit) {
    std::printf("%-16s %-10s %-6s %9s %8s %8s %12s %10s %7s  %s\n", "config", "task", "status", speedup.c_str(),
                "acc_len", "bpt_gb", "draft_bytes", "objective", "prompts", "configuration");
    size_t shown = 0;
    for (const auto& r : rows) {
        if (shown++ == limit) break;
        std::string cfg = r.config.dump();
        if (cfg.size() > 60) cfg = cfg.substr(0, 57) + "...";
        std::string task = r.task.size() > 10 ? r.task.substr(0, 10) : r.task;
        std::printf("%-16s %-10s %-6s %9s %8s %8s %12s %10s %7d  %s\n", r.key.config_hash.c_str(), task.c_str(),
                    r.status.c_str(), num(r.metric(speedup)).c_str(), num(r.metric("accepted_length")).c_str(),
                    num(r.metric("bpt")).c_str(), num(r.metric("draft_bytes")).c_str(), num(r.objective).c_str(),
                    r.prompts, cfg.c_str());
    }
    if (rows.size() > limit) std::printf("... %zu more (--limit N, or --csv FILE for all)\n", rows.size() - limit);
}

}  // namespace

int cmd_results(int argc, char** argv) {
    Args args("results",
              {{"db", 0, true, "FILE", "SQLite result store written by `speculum-cli sweep`"},
               {"filter", 'f', true, "EXPR", "keep rows matching every comma-separated field<op>value clause"},
               {"csv", 0, true, "FILE", "write the selected rows as CSV"},
               {"pareto", 0, false, "", "only the Pareto frontier of speedup against draft memory (draft_bytes)"},
               {"pareto-quality", 0, false, "", "only the Pareto frontier of speedup against quality (lossy modes)"},
               {"best-per-task", 0, false, "", "only the best row (by objective) for each task"},
               {"json", 0, false, "", "print the selected rows as JSON"},
               {"limit", 'n', true, "N", "rows shown in the table (default 20)"}},
              {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
                         "Query a sweep result store: a table (best objective first), CSV, Pareto frontiers "
                         "and best-per-task summaries. Opens the file read-only.")
                  << '\n'
                  << kFilterHelp << '\n';
        return 0;
    }
    if (!args.has("db")) throw UsageError("--db FILE is required");
    if (auto csv = args.value("csv")) check_output_file(*csv);
    if (args.has("pareto") + args.has("pareto-quality") + args.has("best-per-task") > 1)
        throw UsageError("choose one of --pareto, --pareto-quality and --best-per-task");
    std::vector<store::Filter> filters;
    try {
        filters = store::parse_filters(args.value_or("filter", ""));
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    size_t limit = static_cast<size_t>(args.int_or("limit", 20, 0, 1000000000));

    auto db = store::ResultStore::open(args.value_or("db", ""), store::ResultStore::Mode::read_only);
    std::vector<store::ResultRow> rows = db->query(filters);
    const std::string speedup          = store::speedup_metric(rows);
    std::string title                  = std::to_string(rows.size()) + " row(s)";
    if (args.has("pareto")) {
        rows  = store::pareto_front(rows, {"draft_bytes", false}, {speedup, true});
        title = "Pareto frontier, " + speedup + " against draft_bytes: " + std::to_string(rows.size()) + " row(s)";
    } else if (args.has("pareto-quality")) {
        rows  = store::pareto_front(rows, {"quality", true}, {speedup, true});
        title = "Pareto frontier, " + speedup + " against quality: " + std::to_string(rows.size()) + " row(s)";
    } else if (args.has("best-per-task")) {
        auto best = store::best_per_task(rows);
        rows.clear();
        for (auto& [task, row] : best) rows.push_back(row);
        title = "best objective per task: " + std::to_string(rows.size()) + " task(s)";
    }
    if (auto file = args.value("csv")) {
        write_csv(rows, *file);
        std::cout << "wrote " << rows.size() << " row(s) to " << *file << '\n';
        return 0;
    }
    if (args.has("json")) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& r : rows) {
            nlohmann::json j = {{"config_hash", r.key.config_hash},
                                {"model_hash", r.key.model_hash},
                                {"dataset_hash", r.key.dataset_hash},
                                {"sweep", r.sweep},
                                {"task", r.task},
                                {"status", r.status},
                                {"message", r.message},
                                {"config", r.config},
                                {"stats", r.stats},
                                {"predictions", r.predictions},
                                {"metrics", r.metrics},
                                {"objective", r.objective ? nlohmann::json(*r.objective) : nlohmann::json()},
                                {"prompts", r.prompts},
                                {"wall_s", r.wall_s},
                                {"created_at", r.created_at}};
            out.push_back(j);
        }
        std::cout << out.dump(2) << '\n';
        return 0;
    }
    std::cout << title << '\n';
    if (!rows.empty()) print_table(rows, speedup, limit);
    return 0;
}

}  // namespace speculum::cli

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
#include <functional>
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

// Rows from the store (streamed) or from a summary (in memory), handed one at a time; the callback returns false to
// stop. A 300,000-row store took 4.8 GB when every row was loaded first.
using RowSource = std::function<void(const std::function<bool(const store::ResultRow&)>&)>;

size_t write_csv(const RowSource& rows, const std::string& file) {
    OutputFile out(file);  // a failure leaves no partial CSV
    std::ostringstream line;
    store::write_results_csv_header(line);
    size_t n = 0;
    rows([&](const store::ResultRow& r) {
        store::write_results_csv_row(line, r);
        ++n;
        if (line.tellp() > (1 << 20)) {
            out.write(line.str());
            line.str("");
        }
        return true;
    });
    out.write(line.str());
    out.commit();
    return n;
}

nlohmann::json row_json(const store::ResultRow& r) {
    return {{"config_hash", r.key.config_hash},
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
}

// The rows as one JSON array, written as they come (the same text as the array dumped with indent 2).
void print_json(const RowSource& rows) {
    bool first = true;
    rows([&](const store::ResultRow& r) {
        std::string text = row_json(r).dump(2);
        std::string indented;
        indented.reserve(text.size() + text.size() / 8);
        indented += first ? "[\n  " : ",\n  ";
        for (char c : text) {
            indented += c;
            if (c == '\n') indented += "  ";
        }
        std::cout << indented;
        first = false;
        return true;
    });
    std::cout << (first ? "[]\n" : "\n]\n");
}

void print_table(const RowSource& rows, size_t total, const std::string& speedup, size_t limit) {
    std::printf("%-16s %-10s %-6s %9s %8s %8s %12s %10s %7s  %s\n", "config", "task", "status", speedup.c_str(),
                "acc_len", "bpt_gb", "draft_bytes", "objective", "prompts", "configuration");
    size_t shown = 0;
    rows([&](const store::ResultRow& r) {
        if (shown == limit) return false;
        ++shown;
        std::string cfg = r.config.dump();
        if (cfg.size() > 60) cfg = cfg.substr(0, 57) + "...";
        std::string task = r.task.size() > 10 ? r.task.substr(0, 10) : r.task;
        std::printf("%-16s %-10s %-6s %9s %8s %8s %12s %10s %7d  %s\n", r.key.config_hash.c_str(), task.c_str(),
                    r.status.c_str(), num(r.metric(speedup)).c_str(), num(r.metric("accepted_length")).c_str(),
                    num(r.metric("bpt")).c_str(), num(r.metric("draft_bytes")).c_str(), num(r.objective).c_str(),
                    r.prompts, cfg.c_str());
        return true;
    });
    if (total > limit) std::printf("... %zu more (--limit N, or --csv FILE for all)\n", total - limit);
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
    // Measured speedup when any selected row has one, else the modeled one (speedup_metric, asked of the store).
    std::vector<store::Filter> measured = filters;
    measured.push_back({"speedup", ">", "-1e308"});
    const std::string speedup = db->count(measured) > 0 ? "speedup" : "predicted_speedup";

    // Summaries stream the store into a builder that keeps only what it needs; plain output streams the rows.
    std::vector<store::ResultRow> summary;
    std::string title;
    const bool summarised = args.has("pareto") || args.has("pareto-quality") || args.has("best-per-task");
    if (args.has("pareto") || args.has("pareto-quality")) {
        const bool quality = args.has("pareto-quality");
        store::ParetoBuilder front(
            quality ? store::ParetoAxis{"quality", true} : store::ParetoAxis{"draft_bytes", false}, {speedup, true});
        db->for_each(filters, [&](store::ResultRow&& r) {
            front.add(r);
            return true;
        });
        summary = front.front();
        title   = "Pareto frontier, " + speedup + " against " + (quality ? "quality" : "draft_bytes") + ": " +
                std::to_string(summary.size()) + " row(s)";
    } else if (args.has("best-per-task")) {
        store::BestPerTask best;
        db->for_each(filters, [&](store::ResultRow&& r) {
            best.add(r);
            return true;
        });
        for (const auto& [task, row] : best.best()) summary.push_back(row);
        title = "best objective per task: " + std::to_string(summary.size()) + " task(s)";
    }
    const size_t total   = summarised ? summary.size() : db->count(filters);
    const RowSource rows = [&](const std::function<bool(const store::ResultRow&)>& fn) {
        if (summarised) {
            for (const auto& r : summary)
                if (!fn(r)) return;
            return;
        }
        db->for_each(filters, [&](store::ResultRow&& r) { return fn(r); });
    };
    if (!summarised) title = std::to_string(total) + " row(s)";

    if (auto file = args.value("csv")) {
        const size_t n = write_csv(rows, *file);
        std::cout << "wrote " << n << " row(s) to " << *file << '\n';
        return 0;
    }
    if (args.has("json")) {
        print_json(rows);
        return 0;
    }
    std::cout << title << '\n';
    if (total > 0) print_table(rows, total, speedup, limit);
    return 0;
}

}  // namespace speculum::cli

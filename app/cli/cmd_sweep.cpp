// `speculum-cli sweep`: run a design-space sweep (docs/sweeps.md) on the job system into a SQLite result store,
// with a progress bar on a terminal and plain lines otherwise. Re-running resumes: stored configurations are
// cache hits. --bench (sweep_bench.cpp) measures the pool's overhead against a serial loop and cancel latency.
#include "cli.h"
#include "sweep_bench.h"

#include "core/jobs/job_system.h"
#include "core/store/result_store.h"
#include "core/sweep/engine_evaluator.h"
#include "core/sweep/predict_evaluator.h"
#include "core/sweep/sweep_runner.h"

#include <oneapi/tbb/global_control.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

namespace speculum::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
    g_interrupted = true;
}

sweep::SweepSpec load_spec(const std::string& file) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot open " + file);
    std::ostringstream text;
    text << in.rdbuf();
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::parse_error& e) {
        throw std::runtime_error(file + ": invalid JSON: " + e.what());
    }
    try {
        return sweep::sweep_spec_from_json(j);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(file + ": " + e.what());
    }
}

std::unique_ptr<sweep::Evaluator> make_evaluator(const sweep::SweepSpec& spec, const std::string& resources,
                                                 int slow_ms) {
    if (spec.evaluator == "predict") return std::make_unique<sweep::PredictEvaluator>(resources, slow_ms);
    if (slow_ms > 0) throw UsageError("--slow-ms applies to the predict evaluator only");
    return std::make_unique<sweep::EngineEvaluator>(spec.target);
}

std::string fmt(double v, int precision = 3) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    return buf;
}

std::string duration(double s) {
    if (s < 0) return "?";
    if (s < 60) return fmt(s, 0) + "s";
    if (s < 3600)
        return std::to_string(static_cast<int>(s / 60)) + "m" + std::to_string(static_cast<int>(s) % 60) + "s";
    return fmt(s / 3600, 1) + "h";
}

void draw_bar(const jobs::JobProgress& p, size_t cached) {
    constexpr int kWidth = 30;
    int filled           = static_cast<int>(p.fraction * kWidth + 0.5);
    std::string item     = p.item.size() > 40 ? p.item.substr(0, 37) + "..." : p.item;
    std::printf("\r[%s%s] %3.0f%%  ETA %-6s cached %zu  %-40s", std::string(filled, '#').c_str(),
                std::string(kWidth - filled, '.').c_str(), p.fraction * 100, duration(p.eta_s).c_str(), cached,
                item.c_str());
    std::fflush(stdout);
}

std::string event_line(const sweep::SweepSpec& spec, const sweep::SweepEvent& e) {
    std::ostringstream line;
    line << '[' << e.done << '/' << e.total << "] " << e.label;
    if (spec.sampling.mode == sweep::SamplingMode::adaptive) line << " rung " << e.rung << " prompts " << e.row.prompts;
    if (e.row.status != "done") {
        line << "  FAILED: " << e.row.message;
        return line.str();
    }
    if (auto v = e.row.metric(spec.objective.metric)) line << "  " << spec.objective.metric << '=' << fmt(*v, 4);
    if (!e.row.objective) line << " (infeasible)";
    if (e.cached) line << "  (cached)";
    return line.str();
}

}  // namespace

int cmd_sweep(int argc, char** argv) {
    Args args("sweep",
              {{"db", 0, true, "FILE", "SQLite result store (created if absent; resumes if present)"},
               {"jobs", 'j', true, "N",
                "pool threads: configurations at once (predict; default cores - 1) or threads of "
                "each engine run (engine; default all cores)"},
               {"recompute", 0, false, "", "evaluate every configuration again, replacing stored rows"},
               {"resources", 0, true, "DIR", "resources directory for hardware profiles"},
               {"quiet", 'q', false, "", "no progress output; only the summary"},
               {"slow-ms", 0, true, "MS", "testing: sleep MS per configuration (cancellable) to slow a sweep down"},
               {"bench", 0, false, "",
                "benchmark the pool on this spec: overhead vs a serial loop, throughput, cancel latency"},
               {"repeats", 0, true, "N", "--bench: repetitions per measurement (default 5)"}},
              {"SPEC.json"});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "Run a design-space sweep described in SPEC.json (docs/sweeps.md) and store one row per configuration "
            "in --db. Each finished configuration is committed at once; an interrupted or killed sweep resumes "
            "where it stopped when run again (stored configurations are cache hits). Ctrl-C cancels cleanly. "
            "Exit status: 0 done, 1 error, 2 bad usage, 130 interrupted.");
        return 0;
    }
    if (args.positional().size() != 1) throw UsageError("expected one SPEC.json");
    int hw    = static_cast<int>(std::thread::hardware_concurrency());
    int slow  = static_cast<int>(args.int_or("slow-ms", 0, 0, 60000));
    auto spec = load_spec(args.positional()[0]);
    auto ev   = make_evaluator(spec, args.value_or("resources", ""), slow);
    // The pool's threads: configurations at once for the analytic evaluator; for the engine (one configuration at
    // a time) the threads its forward passes fan out over, since they run inside the pool's arena.
    int jobs = static_cast<int>(args.int_or("jobs", ev->max_parallel() == 1 ? hw : std::max(1, hw - 1), 1, 1024));
    // TBB caps workers at the core count by default; --jobs above it is honoured (one extra for this thread).
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(jobs) + 1);
    if (args.has("bench"))
        return run_sweep_bench(spec, *ev, jobs, static_cast<int>(args.int_or("repeats", 5, 1, 1000)));
    if (!args.has("db")) throw UsageError("--db FILE is required");

    auto store = store::ResultStore::open(args.value_or("db", ""), store::ResultStore::Mode::read_write);
    sweep::SweepOptions options;
    options.recompute = args.has("recompute");
    const bool tty    = isatty(STDOUT_FILENO) != 0;
    const bool quiet  = args.has("quiet");
    std::signal(SIGINT, on_sigint);

    jobs::JobSystem js({.concurrency = jobs});
    jobs::JobId id = js.submit("sweep", [&](jobs::JobContext& ctx) -> std::any {
        return sweep::run_sweep(
            spec, *ev, *store, ctx.token(), ctx.progress_fn(), [&](const sweep::SweepEvent& e) { ctx.post(e); },
            options);
    });
    if (!quiet && !tty)
        std::cout << "sweep " << spec.name << ": " << store->file().string() << ", " << jobs << " job(s)\n"
                  << std::flush;

    // The UI-thread pattern: drain the mailbox every 100 ms, redraw progress, react to Ctrl-C.
    size_t cached = 0;
    std::optional<jobs::JobMessage> final_message;
    while (!final_message) {
        if (g_interrupted) js.cancel(id);
        for (auto& m : js.drain()) {
            if (m.final) {
                final_message = std::move(m);
                continue;
            }
            const auto& e = std::any_cast<const sweep::SweepEvent&>(m.payload);
            cached += e.cached ? 1 : 0;
            if (!quiet && !tty) std::cout << event_line(spec, e) << '\n';
        }
        if (!quiet && tty)
            if (auto p = js.progress(id)) draw_bar(*p, cached);
        if (!final_message) js.wait(id, std::chrono::milliseconds(100));
    }
    if (!quiet && tty) std::cout << '\n';
    std::cout << std::flush;

    if (final_message->status == jobs::JobStatus::failed) throw std::runtime_error(final_message->error);
    if (final_message->status == jobs::JobStatus::cancelled) {
        std::cout << "sweep " << spec.name << ": interrupted; " << store->count()
                  << " rows stored; run the same command again to resume\n";
        return 130;
    }
    const auto& s  = std::any_cast<const sweep::SweepSummary&>(final_message->payload);
    double per_min = s.wall_s > 0 ? static_cast<double>(s.evaluated) / s.wall_s * 60 : 0;
    std::cout << "sweep " << spec.name << ": " << s.planned << " planned, " << s.evaluated << " evaluated, " << s.cached
              << " cached, " << s.failed << " failed in " << fmt(s.wall_s, 2) << " s (" << fmt(per_min, 0)
              << " configurations/min evaluated)\n";
    if (!s.rung_sizes.empty()) {
        std::cout << "successive halving rungs (configurations x prompts):";
        for (size_t i = 0; i < s.rung_sizes.size(); ++i)
            std::cout << ' ' << s.rung_sizes[i] << 'x' << s.rung_prompts[i];
        std::cout << '\n';
    }
    if (s.best) {
        std::cout << "best " << spec.objective.metric << " = " << fmt(*s.best->metric(spec.objective.metric), 4)
                  << (spec.evaluator == "predict" ? " (modeled)" : "") << "  config " << s.best->key.config_hash << ": "
                  << s.best->config.dump() << '\n';
    } else {
        std::cout << "no feasible configuration (failed, or outside the constraints)\n";
    }
    return 0;
}

}  // namespace speculum::cli

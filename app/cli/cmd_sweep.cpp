// `speculum-cli sweep`: run a design-space sweep (docs/sweeps.md) on the job system into a SQLite result store,
// with a progress bar on a terminal and plain lines otherwise. Re-running resumes: stored configurations are
// cache hits. --bench (sweep_bench.cpp) measures the pool's overhead against a serial loop and cancel latency.
#include "cli.h"
#include "sweep_bench.h"
#include "sweep_common.h"
#include "sweep_inflight.h"
#include "sweep_mpi.h"

#include "core/jobs/job_system.h"
#include "core/store/result_store.h"
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

void draw_bar(const jobs::JobProgress& p, size_t cached) {
    constexpr int kWidth = 30;
    int filled           = static_cast<int>(p.fraction * kWidth + 0.5);
    std::string item     = p.item.size() > 40 ? p.item.substr(0, 37) + "..." : p.item;
    std::printf("\r[%s%s] %3.0f%%  ETA %-6s cached %zu  %-40s", std::string(filled, '#').c_str(),
                std::string(kWidth - filled, '.').c_str(), p.fraction * 100, duration(p.eta_s).c_str(), cached,
                item.c_str());
    std::fflush(stdout);
}

}  // namespace

int cmd_sweep(int argc, char** argv) {
    Args args(
        "sweep",
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
         {"repeats", 0, true, "N", "--bench: repetitions per measurement (default 5)"},
         {"mpi", 0, false, "",
          "run across the ranks of an MPI job (mpirun/srun; docs/cluster.md): rank 0 hands out "
          "configurations and writes --db"},
         {"mpi-coordinator-only", 0, false, "", "--mpi: rank 0 only coordinates and writes; it evaluates nothing"},
         {"mpi-timeout", 0, true, "S",
          "--mpi: a rank silent for S seconds while it holds a configuration is dropped and its "
          "configuration re-queued (default 60, 0 = never)"}},
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
    int hw   = static_cast<int>(std::thread::hardware_concurrency());
    int slow = static_cast<int>(args.int_or("slow-ms", 0, 0, 60000));
    if (args.has("mpi")) {
        if (args.has("bench")) throw UsageError("--bench and --mpi do not go together");
        if (!args.has("db")) throw UsageError("--db FILE is required");
        MpiSweepOptions mo;
        mo.spec_file        = args.positional()[0];
        mo.db               = args.value_or("db", "");
        mo.resources        = args.value_or("resources", "");
        mo.slow_ms          = slow;
        mo.recompute        = args.has("recompute");
        mo.quiet            = args.has("quiet");
        mo.coordinator_only = args.has("mpi-coordinator-only");
        mo.timeout_s        = args.float_or("mpi-timeout", 60, 0, 1e6);
        // Threads of each rank's evaluation (the engine's passes; the analytic evaluator uses one).
        int jobs = static_cast<int>(args.int_or("jobs", hw, 1, 1024));
        tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(jobs) + 1);
        return run_sweep_mpi(mo);  // without MPI in this build: a clear error (sweep_mpi_off.cpp)
    }
    for (const char* mpi_only : {"mpi-coordinator-only", "mpi-timeout"})
        if (args.has(mpi_only)) throw UsageError(std::string("--") + mpi_only + " needs --mpi");
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

    if (!quiet) report_previous_inflight(store->file(), *store, std::cout);

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
    print_summary(spec, std::any_cast<const sweep::SweepSummary&>(final_message->payload));
    // Complete: whatever an earlier MPI run left in flight is in the store now.
    std::error_code ec;
    std::filesystem::remove(inflight_path(store->file()), ec);
    return 0;
}

}  // namespace speculum::cli

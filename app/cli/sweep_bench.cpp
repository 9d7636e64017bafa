// `speculum-cli sweep --bench` (see sweep_bench.h). Every variant reports wall time AND the CPU time of the
// threads that ran the configurations, with their page faults and context switches: on a loaded machine the wall
// time of any thread but the one already running includes waiting for a core, which the CPU time does not.
#include "sweep_bench.h"

#include "core/jobs/allocator_tuning.h"
#include "core/jobs/job_system.h"
#include "core/parallel.h"
#include "core/store/result_store.h"
#include "core/sweep/sweep_runner.h"
#include "core/version.h"

#include <sys/resource.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace speculum::cli {

namespace {

using Clock = std::chrono::steady_clock;

// What the threads running the work used: CPU seconds, minor page faults, voluntary and involuntary context
// switches (getrusage RUSAGE_THREAD, read inside the thread itself).
struct Usage {
    double cpu_s = 0;
    long minflt  = 0;
    long nvcsw   = 0;
    long nivcsw  = 0;
    Usage& operator+=(const Usage& o) {
        cpu_s += o.cpu_s;
        minflt += o.minflt;
        nvcsw += o.nvcsw;
        nivcsw += o.nivcsw;
        return *this;
    }
};

Usage thread_usage_now() {
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return {static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9, ru.ru_minflt, ru.ru_nvcsw,
            ru.ru_nivcsw};
}

Usage since(const Usage& start) {
    Usage now = thread_usage_now();
    return {now.cpu_s - start.cpu_s, now.minflt - start.minflt, now.nvcsw - start.nvcsw, now.nivcsw - start.nivcsw};
}

double process_cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    if (!(in >> a >> b >> c)) return "unknown";
    return a + " " + b + " " + c;
}

// Medians over the repeats of one variant.
struct Series {
    std::vector<double> wall, cpu, process_cpu;
    std::vector<Usage> usage;
    void add(double wall_s, const Usage& u, double process_cpu_s = 0) {
        wall.push_back(wall_s);
        cpu.push_back(u.cpu_s);
        process_cpu.push_back(process_cpu_s);
        usage.push_back(u);
    }
    static double median(std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0 : v[v.size() / 2];
    }
    double wall_med() const { return median(wall); }
    double cpu_med() const { return median(cpu); }
    long med(long Usage::*field) const {
        std::vector<double> v;
        for (const auto& u : usage) v.push_back(static_cast<double>(u.*field));
        return static_cast<long>(median(v));
    }
};

void print_header() {
    std::printf("%-34s %10s %9s %10s %9s %11s %8s %8s %9s %9s\n", "variant", "wall ms", "us/conf", "cpu ms", "us/conf",
                "proc cpu ms", "minflt", "inv.cs", "wall vs", "cpu vs");
}

void print_row(const char* name, const Series& s, const Series& ref, double n) {
    double w = s.wall_med(), c = s.cpu_med(), rw = ref.wall_med(), rc = ref.cpu_med();
    std::printf("%-34s %10.3f %9.1f %10.3f %9.1f %11.3f %8ld %8ld %+8.1f%% %+8.1f%%\n", name, w * 1e3, w * 1e6 / n,
                c * 1e3, c * 1e6 / n, Series::median(s.process_cpu) * 1e3, s.med(&Usage::minflt), s.med(&Usage::nivcsw),
                (w / rw - 1) * 100, (c / rc - 1) * 100);
}

void remove_db(const std::string& db) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
}

}  // namespace

int run_sweep_bench(const sweep::SweepSpec& spec, sweep::Evaluator& ev, int jobs, int repeats) {
    auto points = sweep::plan_points(spec);
    if (points.empty()) throw std::runtime_error("the spec plans no configurations");
    const double n            = static_cast<double>(points.size());
    const bool inner_parallel = ev.max_parallel() == 1;  // the engine fans its passes out over the arena it runs in
    const int pool_threads    = inner_parallel ? jobs : 1;
    BuildInfo info            = build_info();
    std::printf("bench: %zu configurations of '%s', evaluator %s, %d repeat(s) (medians), build %s %s\n", points.size(),
                spec.name.c_str(), ev.kind().c_str(), repeats, info.version.c_str(), info.build_type.c_str());
    std::printf("machine: %u hardware threads, load average %s (1/5/15 min) at start\n",
                std::thread::hardware_concurrency(), load_average().c_str());
    jobs::JobSystem js({.concurrency = pool_threads});  // applies the allocator tuning (allocator_tuning.h)
    jobs::AllocatorTuning tuning = jobs::tune_allocator_for_workers();
    std::printf("allocator: glibc malloc tuning for workers %s\n",
                tuning.applied         ? "applied (M_MXFAST 0, M_TRIM_THRESHOLD 8 MB, M_MMAP_THRESHOLD 4 MB)"
                : tuning.disabled      ? "off (SPECULUM_MALLOC_TUNING=0)"
                : tuning.user_tunables ? "left to GLIBC_TUNABLES"
                                       : "not available (not glibc)");
    std::printf(
        "cpu = CPU time of the thread(s) that ran the configurations (proc cpu: the whole process, with the "
        "engine's own fan-out threads); minflt, inv.cs = their minor page "
        "faults and involuntary context switches; vs = against the serial loop on this thread\n\n");

    // ---- 1. The same work, no store ----
    // A serial loop on this thread; the same loop on a plain std::thread; one pool job running the loop and posting
    // each result (how a sweep runs); one pool job per configuration (the finest grain). The analytic evaluator is
    // single-threaded: pools get 1 thread. The engine fans its passes out over the arena it runs in: pools get
    // --jobs threads like this thread's default arena, and the per-configuration variant is skipped.
    std::printf("1. evaluate() over the %zu configurations, results kept (pool: %d thread(s))\n", points.size(),
                pool_threads);
    Series serial, thread_loop, one_job, per_config;
    js.wait(js.submit("", [](jobs::JobContext&) -> std::any { return {}; }));  // the worker has joined the arena
    js.drain();
    for (int r = 0; r < repeats; ++r) {
        std::vector<std::any> kept;  // kept like the mailbox keeps them: both sides allocate and hold the results
        kept.reserve(points.size());
        double pc0 = process_cpu_s();
        auto t0    = Clock::now();
        Usage u0   = thread_usage_now();
        for (const auto& p : points) kept.emplace_back(ev.evaluate(p.config, sweep::EvalContext{}));
        serial.add(seconds_since(t0), since(u0), process_cpu_s() - pc0);
        kept.clear();

        Usage ut;
        pc0 = process_cpu_s();
        t0  = Clock::now();
        std::thread th([&] {
            Usage start = thread_usage_now();
            for (const auto& p : points) kept.emplace_back(ev.evaluate(p.config, sweep::EvalContext{}));
            ut = since(start);
        });
        th.join();
        thread_loop.add(seconds_since(t0), ut, process_cpu_s() - pc0);
        kept.clear();

        Usage uj;
        pc0     = process_cpu_s();
        t0      = Clock::now();
        auto id = js.submit("", [&](jobs::JobContext& ctx) -> std::any {
            Usage start = thread_usage_now();
            sweep::EvalContext ec;
            ec.token = ctx.token();
            for (const auto& p : points) ctx.post(ev.evaluate(p.config, ec));
            uj = since(start);
            return {};
        });
        js.wait(id);
        auto drained = js.drain();  // destroyed after the clock stops, like `kept` above
        one_job.add(seconds_since(t0), uj, process_cpu_s() - pc0);
        if (drained.size() != points.size() + 1) throw std::runtime_error("bench: lost results");
        drained.clear();

        if (!inner_parallel) {
            std::mutex mutex;
            Usage up;
            pc0 = process_cpu_s();
            t0  = Clock::now();
            for (const auto& p : points)
                js.submit("", [&ev, &p, &mutex, &up](jobs::JobContext& ctx) -> std::any {
                    Usage start = thread_usage_now();
                    sweep::EvalContext ec;
                    ec.token     = ctx.token();
                    std::any out = ev.evaluate(p.config, ec);
                    Usage u      = since(start);
                    std::lock_guard lock(mutex);
                    up += u;
                    return out;
                });
            js.wait_idle();
            auto all = js.drain();
            per_config.add(seconds_since(t0), up, process_cpu_s() - pc0);
            if (all.size() != points.size()) throw std::runtime_error("bench: lost results");
        }
    }
    print_header();
    print_row("serial loop, this thread", serial, serial, n);
    print_row("serial loop, std::thread", thread_loop, serial, n);
    print_row("pool, one job (posts each result)", one_job, serial, n);
    if (!per_config.wall.empty()) print_row("pool, one job per configuration", per_config, serial, n);

    // ---- 2. The sweep machinery with the store ----
    // run_sweep on this thread in serial mode (the engine keeps its own fan-out, so no serial mode there) against
    // run_sweep as one pool job with --jobs threads, both writing a fresh SQLite store (one commit per row).
    std::printf("\n2. run_sweep with a fresh SQLite store (WAL; every finished configuration committed)\n");
    std::string db =
        (std::filesystem::temp_directory_path() / ("speculum_bench_" + std::to_string(getpid()) + ".sqlite")).string();
    Series sweep_serial, sweep_pool;
    // The same job both ways, as the CLI runs it (progress, every finished row posted to the mailbox, drained):
    // inline on this thread (a serial JobSystem, and serial mode for evaluators the runner would fan out), and on
    // a pool of --jobs threads.
    auto run_variant = [&](bool inline_serial, Series& out) {
        remove_db(db);
        auto store = store::ResultStore::open(db, store::ResultStore::Mode::read_write);
        jobs::JobSystem pool({.concurrency = jobs, .serial = inline_serial});
        if (!inline_serial) pool.wait(pool.submit("", [](jobs::JobContext&) -> std::any { return {}; }));
        pool.drain();
        bool was = serial_mode();
        if (inline_serial && !inner_parallel) set_serial_mode(true);
        Usage uj;
        double pc0 = process_cpu_s();
        auto t0    = Clock::now();
        auto id    = pool.submit("sweep", [&](jobs::JobContext& ctx) -> std::any {
            Usage start = thread_usage_now();
            auto s      = sweep::run_sweep(spec, ev, *store, ctx.token(), ctx.progress_fn(),
                                              [&](const sweep::SweepEvent& e) { ctx.post(e); });
            uj          = since(start);
            return s;
        });
        pool.wait(id);
        auto drained = pool.drain();
        out.add(seconds_since(t0), uj, process_cpu_s() - pc0);
        set_serial_mode(was);
        if (pool.status(id) != jobs::JobStatus::done) throw std::runtime_error("bench: sweep did not finish");
        if (drained.size() != points.size() + 1) throw std::runtime_error("bench: lost sweep events");
    };
    for (int r = 0; r < repeats; ++r) {
        run_variant(true, sweep_serial);
        run_variant(false, sweep_pool);
    }
    std::printf("%-34s %10s %9s %10s %10s %14s\n", "variant", "wall ms", "us/conf", "cpu ms", "process cpu",
                "configs/min");
    auto sweep_row = [&](const char* name, const Series& s) {
        double w = s.wall_med();
        std::printf("%-34s %10.3f %9.1f %10.3f %10.3f %14.0f\n", name, w * 1e3, w * 1e6 / n, s.cpu_med() * 1e3,
                    Series::median(s.process_cpu) * 1e3, n / w * 60);
    };
    sweep_row(inner_parallel ? "sweep job inline, this thread" : "sweep job inline, serial mode", sweep_serial);
    char pool_name[64];
    std::snprintf(pool_name, sizeof pool_name, "sweep job on the pool, %d thread(s)", jobs);
    sweep_row(pool_name, sweep_pool);
    std::printf("pool overhead of the sweep machinery: wall %+.1f %%, process CPU %+.1f %%\n",
                (sweep_pool.wall_med() / sweep_serial.wall_med() - 1) * 100,
                (Series::median(sweep_pool.process_cpu) / Series::median(sweep_serial.process_cpu) - 1) * 100);

    // ---- 3. Cancellation latency: cancel a running sweep at about half way, time until the job has returned ----
    std::vector<double> latency;
    for (int r = 0; r < repeats; ++r) {
        remove_db(db);
        auto store = store::ResultStore::open(db, store::ResultStore::Mode::read_write);
        jobs::JobSystem pool({.concurrency = jobs});
        auto id = pool.submit("sweep", [&](jobs::JobContext& ctx) -> std::any {
            return sweep::run_sweep(spec, ev, *store, ctx.token(), ctx.progress_fn());
        });
        while (pool.progress(id)->fraction < 0.5 && !pool.wait(id, std::chrono::milliseconds(1))) {
        }
        auto t0 = Clock::now();
        pool.cancel(id);
        pool.wait(id);
        if (pool.status(id) == jobs::JobStatus::cancelled) latency.push_back(seconds_since(t0));
    }
    remove_db(db);
    std::printf("\n3. ");
    if (latency.empty()) {
        std::printf("cancel latency: the sweep finished before it could be cancelled (use a slower spec)\n");
    } else {
        std::printf("cancel latency: median %.2f ms, max %.2f ms over %zu cancels (target < 200 ms)\n",
                    Series::median(latency) * 1e3, *std::max_element(latency.begin(), latency.end()) * 1e3,
                    latency.size());
    }
    std::printf("load average %s at the end\n", load_average().c_str());
    return 0;
}

}  // namespace speculum::cli

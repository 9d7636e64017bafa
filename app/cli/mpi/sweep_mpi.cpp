// `speculum-cli sweep --mpi` (see sweep_mpi.h): the spec broadcast, rank 0's run (the sweep runner with the
// Coordinator as its executor, progress, summary, the in-flight list) and the worker loop of every other rank.
#include "../sweep_mpi.h"

#include "../sweep_common.h"
#include "../sweep_inflight.h"
#include "async_eval.h"
#include "coordinator.h"
#include "core/file_io.h"
#include "core/store/result_store.h"
#include "core/store/row_json.h"
#include "mpi_comm.h"

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

namespace speculum::cli {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

volatile sig_atomic_t g_interrupted = 0;
extern "C" void on_signal(int) {
    g_interrupted = 1;
}

constexpr auto kIdleSleep = std::chrono::milliseconds(1);

// Heartbeats come often enough that a few lost or late ones never trip the timeout.
std::chrono::duration<double> heartbeat_period(double timeout_s) {
    return std::chrono::duration<double>(std::clamp(timeout_s / 5, 0.05, 2.0));
}

// ---- workers (rank > 0) ----

class Worker {
public:
    Worker(mpi::MpiSession& comm, const sweep::SweepSpec& spec, const MpiSweepOptions& o)
        : m_comm(comm), m_spec(spec), m_options(o), m_period(heartbeat_period(o.timeout_s)) {}

    int run() {
        if (!load()) return wait_for_stop(1);
        send(mpi::Tag::ready, {{"model_hash", m_evaluator->model_hash()},
                               {"host", mpi::host_name()},
                               {"pid", static_cast<int64_t>(getpid())}});
        while (true) {
            bool activity = false;
            if (g_interrupted) {
                uint64_t task = m_current ? m_task : 0;
                m_current.reset();
                fail(task, "interrupted by a signal");
                return wait_for_stop(130);
            }
            while (auto m = m_comm.poll()) {
                activity = true;
                if (m->source != 0) continue;
                if (m->tag == static_cast<int>(mpi::Tag::stop)) return 0;  // m_current's destructor cancels it
                if (m->tag != static_cast<int>(mpi::Tag::work)) continue;
                std::string why = start(m->payload);
                if (!why.empty()) {
                    fail(m_task, why);
                    return wait_for_stop(1);
                }
            }
            if (m_current && m_current->finished()) {
                activity  = true;
                auto done = std::move(m_current);
                if (done->row()) {
                    send(mpi::Tag::result, {{"task", m_task}, {"row", store::row_to_json(*done->row())}});
                } else {
                    fail(m_task, done->error().empty() ? "evaluation cancelled" : done->error());
                    return wait_for_stop(1);
                }
            }
            if (m_current) heartbeat();
            if (!activity) std::this_thread::sleep_for(kIdleSleep);
        }
    }

private:
    void send(mpi::Tag tag, const json& body) {
        m_comm.send(0, tag, body.dump());
        m_last_sent = Clock::now();
    }

    void fail(uint64_t task, const std::string& message) {
        send(mpi::Tag::failed, {{"task", task}, {"message", message}});
    }

    // While busy (or loading), rank 0 must hear from us within its timeout.
    void heartbeat() {
        if (m_options.timeout_s > 0 && Clock::now() - m_last_sent >= m_period)
            send(mpi::Tag::heartbeat, json::object());
    }

    // The evaluator (an engine evaluator loads the model: minutes for a big one) on a thread, heartbeating.
    bool load() {
        std::atomic<bool> loaded{false};
        std::string error;
        std::thread loader([&] {
            try {
                m_evaluator = make_evaluator(m_spec, m_options.resources, m_options.slow_ms);
            } catch (const std::exception& e) {
                error = e.what();
            }
            loaded = true;
        });
        m_last_sent = Clock::now();
        while (!loaded) {
            heartbeat();
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        loader.join();
        if (error.empty()) return true;
        fail(0, "cannot set up the evaluator: " + error);
        return false;
    }

    // Returns "" or why the work message is unusable (a spec that differs from rank 0's, a garbled message).
    std::string start(const std::string& payload) {
        if (m_current) return "got work while busy";
        try {
            json j      = json::parse(payload);
            m_task      = j.at("task").get<uint64_t>();
            auto index  = j.at("grid_index").get<uint64_t>();
            int prompts = j.at("prompts").get<int>();
            if (index >= m_spec.grid_size()) return "grid index " + std::to_string(index) + " is outside the grid";
            sweep::SweepPoint p = sweep::plan_point(m_spec, index);
            if (p.config_hash != j.at("config_hash").get<std::string>())
                return "configuration " + std::to_string(index) + " hashes differently here: the spec differs";
            m_current = std::make_unique<mpi::AsyncEvaluation>(m_spec, *m_evaluator, std::move(p), prompts);
            return "";
        } catch (const std::exception& e) {
            return std::string("invalid work message: ") + e.what();
        }
    }

    // After a failure: rank 0 drops us and sends a stop (at once, or at the end of the sweep).
    int wait_for_stop(int status) {
        while (true) {
            while (auto m = m_comm.poll())
                if (m->source == 0 && m->tag == static_cast<int>(mpi::Tag::stop)) return status;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }

    mpi::MpiSession& m_comm;
    const sweep::SweepSpec& m_spec;
    MpiSweepOptions m_options;
    std::chrono::duration<double> m_period;
    std::unique_ptr<sweep::Evaluator> m_evaluator;
    std::unique_ptr<mpi::AsyncEvaluation> m_current;
    uint64_t m_task = 0;
    Clock::time_point m_last_sent;
};

// ---- rank 0 ----

int run_rank0(mpi::MpiSession& comm, const sweep::SweepSpec& spec, const MpiSweepOptions& o) {
    if (o.coordinator_only && comm.size() < 2)
        throw std::runtime_error("--mpi-coordinator-only needs at least 2 ranks (mpirun -n 2 or more)");
    std::unique_ptr<mpi::Coordinator> coordinator;
    auto stop_all = [&](const std::string& reason) {
        if (coordinator) return coordinator->shutdown(reason);
        for (int r = 1; r < comm.size(); ++r) try {
                comm.send(r, mpi::Tag::stop, json{{"reason", reason}}.dump());
            } catch (const std::exception&) {
            }
    };
    try {
        auto evaluator = make_evaluator(spec, o.resources, o.slow_ms);
        auto store     = store::ResultStore::open(o.db, store::ResultStore::Mode::read_write);
        if (!o.quiet) {
            std::cout << "sweep " << spec.name << ": " << store->file().string() << ", " << comm.size()
                      << " MPI rank(s), " << (o.coordinator_only ? comm.size() - 1 : comm.size())
                      << " evaluating one configuration at a time each\n";
            report_previous_inflight(o.db, *store, std::cout);
            std::cout << std::flush;
        }
        coordinator = std::make_unique<mpi::Coordinator>(comm, spec, *evaluator, o.db, o, g_interrupted, std::cout);

        CancelToken token;
        sweep::SweepOptions options;
        options.recompute = o.recompute;
        options.executor  = [&](const std::vector<sweep::SweepPoint>& points, int prompts,
                               const sweep::FinishFn& finish) { coordinator->run_batch(points, prompts, finish); };
        auto on_event     = [&](const sweep::SweepEvent& e) {
            if (g_interrupted) token.cancel();
            if (o.quiet) return;
            std::cout << event_line(spec, e);
            if (!e.cached) std::cout << "  (rank " << coordinator->current_rank() << ")";
            std::cout << '\n' << std::flush;
        };
        sweep::SweepSummary summary;
        try {
            summary = sweep::run_sweep(spec, *evaluator, *store, token, {}, on_event, options);
        } catch (const Cancelled&) {
            stop_all("interrupted");
            const auto& stranded = coordinator->stranded();
            std::cout << "sweep " << spec.name
                      << ": interrupted (Ctrl-C, or the launcher ending the job, e.g. after a rank died); "
                      << store->count() << " rows stored; " << stranded.size() << " configuration(s) were in flight";
            if (!stranded.empty()) std::cout << " (listed in " << inflight_path(o.db).string() << ")";
            std::cout << "; run the same command again to resume\n";
            for (const auto& e : stranded)
                std::cout << "  rank " << e.rank << " (pid " << e.pid << " on " << e.host << "): " << e.label << " ["
                          << e.config_hash << "]\n";
            return 130;
        }
        stop_all("sweep finished");
        print_summary(spec, summary);
        if (coordinator->lost_ranks() > 0)
            std::cout << coordinator->lost_ranks() << " rank(s) were lost during the sweep (see above)\n";
        const auto& unfinished = coordinator->unfinished();
        int code               = 0;
        if (unfinished.empty()) {
            coordinator->remove_inflight();
        } else {
            coordinator->write_inflight_now();
            std::cout << unfinished.size() << " configuration(s) were not evaluated (lost ranks); they are listed in "
                      << inflight_path(o.db).string() << " and a re-run evaluates them:\n";
            for (const auto& e : unfinished) std::cout << "  " << e.label << " [" << e.config_hash << "]\n";
            code = 1;
        }
        if (coordinator->lost_ranks() > 0) {
            // With a dead peer, OpenMPI 4.1's MPI_Finalize can wait for it forever (its closing fence includes the
            // lost rank). Everything is stored: close the store, then end the job with MPI_Abort and this status.
            std::cout << "every result is stored in " << o.db
                      << "; ending the MPI job with MPI_Abort (a clean finalize would wait for the lost rank)\n"
                      << std::flush;
            coordinator.reset();
            store.reset();
            comm.abort(code);
        }
        return code;
    } catch (...) {
        stop_all("rank 0 failed");
        throw;
    }
}

// A launcher that started several tasks whose MPI cannot reach it (srun without a matching --mpi plugin, another
// MPI's mpiexec) gives N singletons, each "rank 0 of 1": N copies of the whole sweep writing one store. Refuse.
void refuse_lone_singleton(int size) {
    if (size != 1) return;
    for (const char* var : {"SLURM_STEP_NUM_TASKS", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"}) {
        const char* v = std::getenv(var);
        if (v && std::atoi(v) > 1)
            throw std::runtime_error(std::string("--mpi: the launcher started ") + v + " tasks (" + var +
                                     ") but MPI sees only this one: the MPI library cannot talk to the launcher. "
                                     "Under Slurm use srun --mpi=pmix (see srun --mpi=list) or mpirun inside the "
                                     "allocation (docs/cluster.md)");
    }
}

}  // namespace

int run_sweep_mpi(const MpiSweepOptions& o) {
    mpi::MpiSession comm(nullptr, nullptr);
    refuse_lone_singleton(comm.size());
    // mpirun turns Ctrl-C into SIGTERM for every rank (and SIGKILL shortly after): both end the sweep cleanly.
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);

    // Rank 0 reads the spec and every rank gets its text, so all of them run the same configurations.
    std::string message, error;
    if (comm.rank() == 0) {
        try {
            const std::string text = read_input_file(o.spec_file, kMaxConfigFileBytes, "sweep spec");
            parse_spec(text, o.spec_file);  // errors stop every rank, not only rank 0
            message = json{{"spec", text}}.dump();
        } catch (const std::exception& e) {
            error   = e.what();
            message = json{{"error", error}}.dump();
        }
    }
    json j = json::parse(comm.broadcast(message));
    if (j.contains("error")) {
        if (comm.rank() == 0) throw std::runtime_error(error);
        return 1;  // rank 0 says why
    }
    sweep::SweepSpec spec = parse_spec(j.at("spec").get<std::string>(), o.spec_file);
    if (comm.rank() == 0) return run_rank0(comm, spec, o);
    try {
        return Worker(comm, spec, o).run();
    } catch (const std::exception& e) {
        std::cerr << "speculum-cli sweep: rank " << comm.rank() << " on " << mpi::host_name() << ": " << e.what()
                  << '\n';
        return 1;
    }
}

}  // namespace speculum::cli

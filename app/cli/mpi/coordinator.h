// Rank 0 of `sweep --mpi`: dynamic work distribution. Configurations are handed out one at a time to whichever
// rank is idle (rank 0's own evaluation thread counts as one unless coordinator-only), so a slow configuration
// holds up only the rank that runs it. Results are validated on receipt and handed to the sweep runner, which
// stores each at once. A rank that reports a failure, sends garbage, or (with a timeout) falls silent while it
// holds a configuration is dropped; its configuration goes back to the queue once, and is given up (reported,
// left to the next run) if it is lost again.
#pragma once

#include "../sweep_inflight.h"
#include "../sweep_mpi.h"
#include "async_eval.h"
#include "mpi_comm.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <deque>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <vector>

namespace speculum::cli::mpi {

class Coordinator {
public:
    Coordinator(MpiSession& comm, const sweep::SweepSpec& spec, sweep::Evaluator& evaluator,
                const std::filesystem::path& db, const MpiSweepOptions& options,
                const volatile sig_atomic_t& interrupted, std::ostream& log);
    ~Coordinator();

    // The sweep runner's BatchExecutor: returns when every point is finished or given up. Throws Cancelled when
    // `interrupted` is set (the in-flight list is written first).
    void run_batch(const std::vector<sweep::SweepPoint>& points, int prompts, const sweep::FinishFn& finish);
    // The rank whose row the runner is being handed right now (for progress lines).
    int current_rank() const { return m_current_rank; }
    // Tells every worker to stop and joins the local evaluation (idempotent; never throws).
    void shutdown(const std::string& reason) noexcept;

    const std::vector<InflightEntry>& unfinished() const { return m_unfinished; }
    size_t lost_ranks() const { return m_lost; }
    // What was in flight when a batch ended by an exception (an interrupt): not stored, listed in the file.
    const std::vector<InflightEntry>& stranded() const { return m_stranded; }
    // Writes <db>.inflight.json now (the current batch's assignments, or the stranded ones between batches).
    void write_inflight_now();
    void remove_inflight();

private:
    using Clock = std::chrono::steady_clock;
    enum class State { starting, idle, busy, gone };
    struct Task {
        uint64_t id = 0;
        size_t k    = 0;  // index into the batch's points
        std::string since;
    };
    struct Rank {
        State state = State::starting;
        std::string host;
        int64_t pid = 0;
        Clock::time_point last_heard;
        std::optional<Task> task;
        bool stopped = false;  // a stop was sent
    };
    struct Batch {
        const std::vector<sweep::SweepPoint>* points = nullptr;
        int prompts                                  = 0;
        const sweep::FinishFn* finish                = nullptr;
        std::deque<size_t> queue;
        std::vector<int> attempts;
        size_t remaining = 0;
    };

    void distribute(Batch& b);
    std::vector<InflightEntry> in_flight() const;
    void handle(const Message& m, Batch& b);
    store::ResultRow validate_result(int r, const nlohmann::json& body, const Batch& b) const;
    void handle_local(Batch& b);
    void deliver(Batch& b, int r, store::ResultRow row);
    void assign_one(Batch& b, size_t r);  // the front of the queue to idle rank r
    bool assign(Batch& b);                // the queue to every idle rank
    void check_timeouts(Batch& b);
    void drop_rank(int r, const std::string& why, Batch* b);
    void give_back(Batch& b, size_t k, int r);
    void stop_rank(int r, const std::string& reason) noexcept;
    InflightEntry entry(int r, const Task& t) const;  // r < 0: never handed out
    std::string who(int r) const;
    void mark_dirty();
    void write_inflight_if_due();

    MpiSession& m_comm;
    const sweep::SweepSpec& m_spec;
    sweep::Evaluator& m_evaluator;
    std::filesystem::path m_inflight_file;
    MpiSweepOptions m_options;
    const volatile sig_atomic_t& m_interrupted;
    std::ostream& m_log;
    std::string m_model_hash;

    std::vector<Rank> m_ranks;  // [0] = the local evaluation thread
    std::unique_ptr<AsyncEvaluation> m_local;
    Batch* m_batch       = nullptr;  // the batch being run (for the in-flight list)
    uint64_t m_next_task = 1;
    int m_current_rank   = 0;
    size_t m_lost        = 0;
    std::vector<InflightEntry> m_unfinished;
    std::vector<InflightEntry> m_stranded;
    bool m_dirty = false;
    Clock::time_point m_last_write;
};

}  // namespace speculum::cli::mpi

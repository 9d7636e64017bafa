// One configuration evaluated on its own thread, so that the rank's MPI thread stays free to answer messages,
// send heartbeats and notice a stop while a configuration takes minutes. Used by the workers and by rank 0's
// local worker. The evaluation thread never calls MPI.
#pragma once

#include "core/sweep/sweep_runner.h"

#include <atomic>
#include <optional>
#include <string>
#include <thread>

namespace speculum::cli::mpi {

class AsyncEvaluation {
public:
    // Starts evaluate_point(spec, evaluator, point, prompts) on a new thread. spec and evaluator must outlive this.
    AsyncEvaluation(const sweep::SweepSpec& spec, sweep::Evaluator& evaluator, sweep::SweepPoint point, int prompts);
    ~AsyncEvaluation();  // cancels and joins
    AsyncEvaluation(const AsyncEvaluation&)            = delete;
    AsyncEvaluation& operator=(const AsyncEvaluation&) = delete;

    bool finished() const { return m_finished.load(std::memory_order_acquire); }
    void cancel() { m_token.cancel(); }
    // After finished(): the row, or nullopt when it was cancelled or failed outside the evaluator (then error()
    // says why; empty when cancelled).
    const std::optional<store::ResultRow>& row() const { return m_row; }
    const std::string& error() const { return m_error; }
    const sweep::SweepPoint& point() const { return m_point; }

private:
    sweep::SweepPoint m_point;
    CancelToken m_token;
    std::optional<store::ResultRow> m_row;
    std::string m_error;
    std::atomic<bool> m_finished{false};
    std::thread m_thread;  // last: starts after every member it reads exists
};

}  // namespace speculum::cli::mpi

// Background jobs on one oneTBB task_arena: ids, cancel tokens, progress readable at any time, and a result
// mailbox the UI thread drains once per frame. Submitting never blocks and nothing here waits on the caller's
// thread except the explicit wait helpers meant for the CLI and tests (never call them on a GUI thread).
#pragma once

#include "core/cancel.h"

#include <any>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace speculum::jobs {

using JobId = uint64_t;  // 1, 2, 3, ... per JobSystem; 0 = none

enum class JobStatus { queued, running, done, cancelled, failed };
const char* to_string(JobStatus s);

struct JobProgress {
    double fraction  = 0;   // [0, 1]
    double elapsed_s = 0;   // since the job started running
    double eta_s     = -1;  // seconds left, extrapolated from fraction and elapsed; -1 = unknown
    std::string item;       // current item, e.g. "config 12/270"
};

// One mailbox entry: an intermediate result posted by the job, or the final one (final = true) with the status.
struct JobMessage {
    JobId id = 0;
    std::string slot;
    bool final       = false;
    JobStatus status = JobStatus::running;  // for final messages: done, cancelled or failed
    std::string error;                      // failed: the exception's message
    std::any payload;                       // what the job posted or returned (may be empty)
};

struct JobState;  // shared between the system and the running job (defined in job_system.cpp)

// Handed to the job function: its token, progress reporter and mailbox.
class JobContext {
public:
    explicit JobContext(std::shared_ptr<JobState> state, class JobSystem* system);
    JobId id() const;
    const CancelToken& token() const;
    bool cancelled() const { return token().cancelled(); }
    // fraction in [0, 1] and the current item; cheap (one short mutex section); never blocks on the UI.
    void progress(double fraction, const std::string& item);
    // A ProgressFn forwarding to progress(), for core functions that take one.
    ProgressFn progress_fn();
    // Posts an intermediate result into the mailbox (kept even if the job is cancelled later).
    void post(std::any payload);

private:
    std::shared_ptr<JobState> m_state;
    class JobSystem* m_system;
};

// The job body: returns the final payload (may be empty) or throws. Throwing Cancelled (e.g. via
// token().throw_if_cancelled()) ends the job as cancelled; any other exception ends it as failed.
using JobFn = std::function<std::any(JobContext&)>;

struct JobSystemOptions {
    int concurrency = 0;      // worker threads of the arena; 0 = hardware_concurrency - 1 (at least 1)
    bool serial     = false;  // run each job inline inside submit(), in order (deterministic tests)
    // Apply tune_allocator_for_workers() (allocator_tuning.h: process-wide glibc malloc settings, once) so that
    // allocation-heavy jobs run as fast on the workers as on the main thread.
    bool tune_allocator = true;
};

class JobSystem {
public:
    explicit JobSystem(JobSystemOptions options = {});
    // Cancels every job and waits for the running ones to return (they must check their tokens).
    ~JobSystem();
    JobSystem(const JobSystem&)            = delete;
    JobSystem& operator=(const JobSystem&) = delete;

    // Starts fn in the arena and returns at once. A newer submit to the same non-empty slot supersedes the
    // older job: the older one is cancelled and its messages still in the mailbox are dropped by drain().
    JobId submit(std::string slot, JobFn fn);

    void cancel(JobId id);  // no-op for unknown or finished jobs
    void cancel_all();

    // Mailbox: every message posted since the last drain, in posting order, minus those of superseded jobs.
    std::vector<JobMessage> drain();

    std::optional<JobStatus> status(JobId id) const;  // nullopt for an unknown or long-forgotten id
    std::optional<JobProgress> progress(JobId id) const;
    JobId latest(const std::string& slot) const;  // the job that owns the slot now (0 = none)
    size_t active() const;                        // queued or running jobs
    int concurrency() const { return m_concurrency; }
    bool serial() const { return m_serial; }

    // Blocking helpers for the CLI and tests only: wait until the job has finished (or the timeout passes).
    bool wait(JobId id, std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
    bool wait_idle(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());

private:
    friend class JobContext;
    void run_job(const std::shared_ptr<JobState>& state, const JobFn& fn);
    void push_message(JobMessage m);
    void forget_old_jobs_locked();

    struct Impl;
    std::unique_ptr<Impl> m_impl;
    int m_concurrency = 1;
    bool m_serial     = false;
};

}  // namespace speculum::jobs

// Minimal background jobs for the UI until core/jobs (#8) lands: each job gets an id, a cancel token, atomic
// progress and a mailbox; the GUI thread drains the mailbox once per frame and a result whose job is no longer
// the latest of its slot is dropped. One std::thread per job (jobs are few and long); never waited on from the
// GUI thread except in the destructor, after cancelling.
#pragma once

#include "core/cancel.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace speculum::ui {

using JobId = uint64_t;
enum class JobStatus { running, done, canceled, failed };

// What a job's code sees: its token, a progress callback and `post` for streaming partial results.
struct JobContext {
    CancelToken cancel;
    ProgressFn progress;
    std::function<void(std::function<void()>)> post;  // the closure runs on the GUI thread at the next drain
};

// Work returns the closure that applies its result on the GUI thread (or nothing).
using JobWork = std::function<std::function<void()>(JobContext&)>;

struct JobOutcome {
    JobId id = 0;
    std::string slot;
    std::string name;
    JobStatus status = JobStatus::done;
    std::string error;            // failed: the exception's message
    bool canceled_by_user = false;
};

struct JobProgress {
    JobId id = 0;
    std::string slot, name, what;
    double fraction = 0;
};

class BackgroundJobs {
public:
    BackgroundJobs() = default;
    ~BackgroundJobs();  // cancels every job and joins its thread
    BackgroundJobs(const BackgroundJobs&)            = delete;
    BackgroundJobs& operator=(const BackgroundJobs&) = delete;

    // Starts `work` on its own thread. A running job of the same slot is cancelled (superseded): its results
    // will be dropped.
    JobId submit(const std::string& slot, const std::string& name, JobWork work);
    void cancel(JobId id);  // by the user: reported as canceled
    void cancel_slot(const std::string& slot);

    // GUI thread, once per frame: runs the posted closures of current jobs in order, then returns the finished
    // jobs' outcomes (their result closures already applied). Superseded jobs' closures are discarded.
    std::vector<JobOutcome> drain();

    std::vector<JobProgress> running() const;  // current (not superseded) running jobs
    bool any_running() const;
    JobId latest(const std::string& slot) const;  // 0 when the slot never had a job

private:
    struct Job;

    mutable std::mutex m_mutex;
    JobId m_next = 1;
    std::map<JobId, std::shared_ptr<Job>> m_jobs;  // not yet drained
    std::map<std::string, JobId> m_latest;         // slot → newest job
    std::vector<std::pair<JobId, std::function<void()>>> m_mailbox;  // posted partial results, in order
};

}  // namespace speculum::ui

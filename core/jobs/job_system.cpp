// JobSystem: one tbb::task_arena with fire-and-forget enqueue, completion tracked by our own counter and
// condition variable (task_arena::enqueue(f, task_group&) is oneTBB 2022.3+, not in Debian bookworm).
#include "core/jobs/job_system.h"

#include "core/jobs/allocator_tuning.h"

#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace speculum::jobs {

using Clock = std::chrono::steady_clock;

const char* to_string(JobStatus s) {
    switch (s) {
        case JobStatus::queued:
            return "queued";
        case JobStatus::running:
            return "running";
        case JobStatus::done:
            return "done";
        case JobStatus::cancelled:
            return "cancelled";
        case JobStatus::failed:
            return "failed";
    }
    return "?";
}

struct JobState {
    JobId id = 0;
    std::string slot;
    CancelToken token;
    std::atomic<JobStatus> status{JobStatus::queued};
    mutable std::mutex progress_mutex;  // guards the three fields below
    double fraction = 0;
    std::string item;
    Clock::time_point started{};
};

struct JobSystem::Impl {
    tbb::task_arena arena;
    mutable std::mutex mutex;  // guards everything below
    std::condition_variable finished;
    std::map<JobId, std::shared_ptr<JobState>> jobs;  // every job submitted (finished ones stay for status())
    std::map<std::string, JobId> slots;               // slot -> latest job
    std::deque<JobMessage> mailbox;
    JobId next_id = 1;
    size_t active = 0;

    // reserved_for_masters = 0: the caller never joins the arena, so every slot is a worker's.
    explicit Impl(int concurrency) : arena(concurrency, 0) {}
};

// ---- JobContext ----

JobContext::JobContext(std::shared_ptr<JobState> state, JobSystem* system)
    : m_state(std::move(state)), m_system(system) {}

JobId JobContext::id() const {
    return m_state->id;
}
const CancelToken& JobContext::token() const {
    return m_state->token;
}

void JobContext::progress(double fraction, const std::string& item) {
    std::lock_guard lock(m_state->progress_mutex);
    m_state->fraction = std::clamp(fraction, 0.0, 1.0);
    m_state->item     = item;
}

ProgressFn JobContext::progress_fn() {
    return [state = m_state](double fraction, const std::string& item) {
        std::lock_guard lock(state->progress_mutex);
        state->fraction = std::clamp(fraction, 0.0, 1.0);
        state->item     = item;
    };
}

void JobContext::post(std::any payload) {
    JobMessage m;
    m.id      = m_state->id;
    m.slot    = m_state->slot;
    m.payload = std::move(payload);
    m_system->push_message(std::move(m));
}

// ---- JobSystem ----

JobSystem::JobSystem(JobSystemOptions options) {
    int hw        = static_cast<int>(std::thread::hardware_concurrency());
    m_concurrency = options.concurrency > 0 ? options.concurrency : std::max(1, hw - 1);
    m_serial      = options.serial;
    if (options.tune_allocator) tune_allocator_for_workers();
    m_impl = std::make_unique<Impl>(m_concurrency);
}

JobSystem::~JobSystem() {
    cancel_all();
    wait_idle();
}

JobId JobSystem::submit(std::string slot, JobFn fn) {
    auto state  = std::make_shared<JobState>();
    state->slot = std::move(slot);
    {
        std::lock_guard lock(m_impl->mutex);
        state->id               = m_impl->next_id++;
        m_impl->jobs[state->id] = state;
        if (!state->slot.empty()) {
            auto it = m_impl->slots.find(state->slot);
            if (it != m_impl->slots.end()) {
                auto old = m_impl->jobs.find(it->second);
                if (old != m_impl->jobs.end()) old->second->token.cancel();
            }
            m_impl->slots[state->slot] = state->id;
        }
        ++m_impl->active;
    }
    if (m_serial) {
        run_job(state, fn);
    } else {
        m_impl->arena.enqueue([this, state, fn = std::move(fn)] { run_job(state, fn); });
    }
    return state->id;
}

void JobSystem::run_job(const std::shared_ptr<JobState>& state, const JobFn& fn) {
    {
        std::lock_guard lock(state->progress_mutex);
        state->started = Clock::now();
    }
    JobMessage final_message;
    final_message.id    = state->id;
    final_message.slot  = state->slot;
    final_message.final = true;
    if (state->token.cancelled()) {
        final_message.status = JobStatus::cancelled;  // cancelled while queued: never started
    } else {
        state->status = JobStatus::running;
        JobContext ctx(state, this);
        try {
            final_message.payload = fn(ctx);
            final_message.status  = JobStatus::done;
        } catch (const Cancelled&) {
            final_message.status = JobStatus::cancelled;
        } catch (const std::exception& e) {
            final_message.status = JobStatus::failed;
            final_message.error  = e.what();
        } catch (...) {
            final_message.status = JobStatus::failed;
            final_message.error  = "unknown exception";
        }
    }
    if (final_message.status == JobStatus::done) {
        std::lock_guard lock(state->progress_mutex);
        state->fraction = 1;
    }
    // Status, final message and the active count change under one lock, and the notify happens under it too, so
    // a destructor woken by it cannot free the mutex or condition variable while this thread still uses them.
    std::lock_guard lock(m_impl->mutex);
    state->status = final_message.status;
    m_impl->mailbox.push_back(std::move(final_message));
    --m_impl->active;
    forget_old_jobs_locked();
    m_impl->finished.notify_all();
}

// Keeps the table bounded in a long GUI session: finished jobs beyond the newest kKeepFinished are forgotten
// (status() then answers nullopt for them). Caller holds m_impl->mutex.
void JobSystem::forget_old_jobs_locked() {
    constexpr size_t kKeepFinished = 4096;
    if (m_impl->jobs.size() <= kKeepFinished + m_impl->active) return;
    size_t excess = m_impl->jobs.size() - kKeepFinished - m_impl->active;
    for (auto it = m_impl->jobs.begin(); it != m_impl->jobs.end() && excess > 0;) {
        JobStatus s = it->second->status.load();
        if (s == JobStatus::done || s == JobStatus::cancelled || s == JobStatus::failed) {
            it = m_impl->jobs.erase(it);
            --excess;
        } else {
            ++it;
        }
    }
}

void JobSystem::push_message(JobMessage m) {
    std::lock_guard lock(m_impl->mutex);
    m_impl->mailbox.push_back(std::move(m));
}

void JobSystem::cancel(JobId id) {
    std::lock_guard lock(m_impl->mutex);
    auto it = m_impl->jobs.find(id);
    if (it != m_impl->jobs.end()) it->second->token.cancel();
}

void JobSystem::cancel_all() {
    std::lock_guard lock(m_impl->mutex);
    for (auto& [id, state] : m_impl->jobs) state->token.cancel();
}

std::vector<JobMessage> JobSystem::drain() {
    std::lock_guard lock(m_impl->mutex);
    std::vector<JobMessage> out;
    out.reserve(m_impl->mailbox.size());
    for (auto& m : m_impl->mailbox) {
        if (!m.slot.empty()) {
            auto it = m_impl->slots.find(m.slot);
            if (it != m_impl->slots.end() && it->second != m.id) continue;  // superseded: drop silently
        }
        out.push_back(std::move(m));
    }
    m_impl->mailbox.clear();
    return out;
}

std::optional<JobStatus> JobSystem::status(JobId id) const {
    std::lock_guard lock(m_impl->mutex);
    auto it = m_impl->jobs.find(id);
    if (it == m_impl->jobs.end()) return std::nullopt;
    return it->second->status.load();
}

std::optional<JobProgress> JobSystem::progress(JobId id) const {
    std::shared_ptr<JobState> state;
    {
        std::lock_guard lock(m_impl->mutex);
        auto it = m_impl->jobs.find(id);
        if (it == m_impl->jobs.end()) return std::nullopt;
        state = it->second;
    }
    JobProgress p;
    std::lock_guard lock(state->progress_mutex);
    p.fraction = state->fraction;
    p.item     = state->item;
    if (state->started != Clock::time_point{}) {
        p.elapsed_s = std::chrono::duration<double>(Clock::now() - state->started).count();
        if (p.fraction >= 1)
            p.eta_s = 0;
        else if (p.fraction > 0)
            p.eta_s = p.elapsed_s * (1 - p.fraction) / p.fraction;
    }
    return p;
}

JobId JobSystem::latest(const std::string& slot) const {
    std::lock_guard lock(m_impl->mutex);
    auto it = m_impl->slots.find(slot);
    return it == m_impl->slots.end() ? 0 : it->second;
}

size_t JobSystem::active() const {
    std::lock_guard lock(m_impl->mutex);
    return m_impl->active;
}

bool JobSystem::wait(JobId id, std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_impl->mutex);
    auto done = [&] {
        auto it = m_impl->jobs.find(id);
        if (it == m_impl->jobs.end()) return true;
        JobStatus s = it->second->status.load();
        return s == JobStatus::done || s == JobStatus::cancelled || s == JobStatus::failed;
    };
    if (timeout == std::chrono::milliseconds::max()) {
        m_impl->finished.wait(lock, done);
        return true;
    }
    return m_impl->finished.wait_for(lock, timeout, done);
}

bool JobSystem::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_impl->mutex);
    auto idle = [&] { return m_impl->active == 0; };
    if (timeout == std::chrono::milliseconds::max()) {
        m_impl->finished.wait(lock, idle);
        return true;
    }
    return m_impl->finished.wait_for(lock, timeout, idle);
}

}  // namespace speculum::jobs

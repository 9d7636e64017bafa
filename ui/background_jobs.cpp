// Background jobs: thread per job, atomic progress, a mutex-guarded mailbox drained by the GUI thread.
#include "ui/background_jobs.h"

namespace speculum::ui {

struct BackgroundJobs::Job {
    JobId id = 0;
    std::string slot, name;
    CancelToken cancel;
    std::atomic<double> fraction{0};
    std::mutex what_mutex;
    std::string what;
    std::atomic<bool> finished{false};
    JobOutcome outcome;               // written by the worker before `finished`
    std::function<void()> apply;      // the result closure, run by drain()
    bool canceled_by_user = false;    // GUI thread only
    std::thread thread;
};

BackgroundJobs::~BackgroundJobs() {
    std::map<JobId, std::shared_ptr<Job>> jobs;
    {
        std::lock_guard lock(m_mutex);
        jobs = m_jobs;
    }
    for (auto& [_, job] : jobs) job->cancel.cancel();
    for (auto& [_, job] : jobs)
        if (job->thread.joinable()) job->thread.join();
}

JobId BackgroundJobs::submit(const std::string& slot, const std::string& name, JobWork work) {
    auto job  = std::make_shared<Job>();
    job->slot = slot;
    job->name = name;
    {
        std::lock_guard lock(m_mutex);
        job->id = m_next++;
        if (auto it = m_latest.find(slot); it != m_latest.end())
            if (auto old = m_jobs.find(it->second); old != m_jobs.end()) old->second->cancel.cancel();  // superseded
        m_latest[slot] = job->id;
        m_jobs[job->id] = job;
    }
    Job* raw  = job.get();  // the map keeps the job alive until its thread has been joined
    job->thread = std::thread([this, raw, work = std::move(work)] {
        JobContext ctx;
        ctx.cancel   = raw->cancel;
        ctx.progress = [raw](double f, const std::string& what) {
            raw->fraction.store(f, std::memory_order_relaxed);
            std::lock_guard lock(raw->what_mutex);
            raw->what = what;
        };
        ctx.post = [this, id = raw->id](std::function<void()> fn) {
            std::lock_guard lock(m_mutex);
            m_mailbox.emplace_back(id, std::move(fn));
        };
        JobOutcome out;
        out.id   = raw->id;
        out.slot = raw->slot;
        out.name = raw->name;
        try {
            raw->apply = work(ctx);
            out.status = raw->cancel.cancelled() ? JobStatus::canceled : JobStatus::done;
        } catch (const Cancelled&) {
            out.status = JobStatus::canceled;
        } catch (const std::exception& e) {
            out.status = JobStatus::failed;
            out.error  = e.what();
        } catch (...) {
            out.status = JobStatus::failed;
            out.error  = "unknown error";
        }
        raw->outcome = std::move(out);
        raw->finished.store(true, std::memory_order_release);
    });
    return job->id;
}

void BackgroundJobs::cancel(JobId id) {
    std::lock_guard lock(m_mutex);
    if (auto it = m_jobs.find(id); it != m_jobs.end()) {
        it->second->canceled_by_user = true;
        it->second->cancel.cancel();
    }
}

void BackgroundJobs::cancel_slot(const std::string& slot) {
    std::lock_guard lock(m_mutex);
    if (auto it = m_latest.find(slot); it != m_latest.end())
        if (auto job = m_jobs.find(it->second); job != m_jobs.end()) job->second->cancel.cancel();
}

std::vector<JobOutcome> BackgroundJobs::drain() {
    std::vector<std::pair<JobId, std::function<void()>>> mail;
    std::vector<std::shared_ptr<Job>> done;
    {
        std::lock_guard lock(m_mutex);
        mail.swap(m_mailbox);
        for (auto it = m_jobs.begin(); it != m_jobs.end();) {
            if (it->second->finished.load(std::memory_order_acquire)) {
                done.push_back(it->second);
                it = m_jobs.erase(it);
            } else {
                ++it;
            }
        }
    }
    auto current = [this](JobId id, const std::string& slot) { return latest(slot) == id; };
    for (auto& [id, fn] : mail) {
        // A posted closure of a superseded or cancelled job is stale: drop it.
        std::string slot;
        bool cancelled = false;
        {
            std::lock_guard lock(m_mutex);
            if (auto it = m_jobs.find(id); it != m_jobs.end()) slot = it->second->slot, cancelled = it->second->cancel.cancelled();
        }
        if (slot.empty())
            for (auto& j : done)
                if (j->id == id) slot = j->slot, cancelled = j->cancel.cancelled();
        if (!slot.empty() && !cancelled && current(id, slot) && fn) fn();
    }
    std::vector<JobOutcome> outcomes;
    for (auto& job : done) {
        if (job->thread.joinable()) job->thread.join();  // already finished: returns at once
        if (!current(job->id, job->slot)) continue;      // superseded: dropped silently
        JobOutcome out       = job->outcome;
        out.canceled_by_user = job->canceled_by_user;
        if (out.status == JobStatus::done && job->apply) job->apply();
        outcomes.push_back(std::move(out));
    }
    return outcomes;
}

std::vector<JobProgress> BackgroundJobs::running() const {
    std::lock_guard lock(m_mutex);
    std::vector<JobProgress> out;
    for (const auto& [id, job] : m_jobs) {
        if (job->finished.load(std::memory_order_acquire) || job->cancel.cancelled()) continue;
        if (auto it = m_latest.find(job->slot); it == m_latest.end() || it->second != id) continue;
        JobProgress p{id, job->slot, job->name, {}, job->fraction.load(std::memory_order_relaxed)};
        std::lock_guard what_lock(job->what_mutex);
        p.what = job->what;
        out.push_back(std::move(p));
    }
    return out;
}

bool BackgroundJobs::any_running() const {
    std::lock_guard lock(m_mutex);
    return !m_jobs.empty();
}

JobId BackgroundJobs::latest(const std::string& slot) const {
    std::lock_guard lock(m_mutex);
    auto it = m_latest.find(slot);
    return it == m_latest.end() ? 0 : it->second;
}

}  // namespace speculum::ui

// AppController: the Qt-free heart of the desktop app. It owns the current configuration, the opened model and
// dataset, and the background jobs; it turns panel actions into state changes and jobs, drains the jobs' mailbox
// once per frame, debounces measured re-runs (a newer one supersedes the stale one), and keeps the UiSnapshot the
// panels draw from. The analytic ("modeled") view is recomputed synchronously on every config change.
#pragma once

#include "core/model/model.h"
#include "ui/actions.h"
#include "ui/background_jobs.h"
#include "ui/snapshot.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace speculum::ui {

class AppController {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::milliseconds kDebounce{300};  // quiet time after an edit before re-measuring

    struct MeasureRequest {
        AppConfig config;
        std::shared_ptr<const model::Model> model;  // the opened target
        std::string dataset_path;                   // "" = none opened
        std::string task;                           // "" = every task
    };
    // Runs one measured decode on a worker thread; `partial` streams intermediate views. Throws Cancelled.
    using Measurer = std::function<MeasuredView(const MeasureRequest&, JobContext&,
                                                const std::function<void(const MeasuredView&)>& partial)>;

    // `now` is injectable so tests can drive the debounce without sleeping.
    explicit AppController(std::function<Clock::time_point()> now = {});

    void set_build(const BuildInfo& build);
    // Wires a measuring engine (the speculative engine, #6). Without one, the measured panels say why they are empty.
    void set_measurer(Measurer measurer);

    // Handles a Qt-free action; returns false for actions the app shell must handle (dialogs, quit, messages).
    bool handle(const Action& action);
    void open_model(const std::string& path);
    void open_dataset(const std::string& path);
    void set_config(const AppConfig& config);

    // Once per frame on the GUI thread: applies finished jobs and posted results, refreshes job progress, and
    // starts a debounced measured run whose quiet time has passed.
    void poll();

    const UiSnapshot& snapshot() const { return m_snap; }
    uint64_t revision() const { return m_revision; }  // bumps on every change of the snapshot
    bool busy() const;                                 // a job runs or a re-run is pending (redraw at ~30 Hz)
    bool rerun_pending() const { return m_rerun_at.has_value(); }
    const model::Model* model() const { return m_model.get(); }
    void message(MessageLevel level, const std::string& text);

private:
    void refresh_modeled();
    void refresh_notes();
    void schedule_rerun();
    void start_measured();
    void start_sweep(const ActionRunSweep& a);
    void changed() { ++m_revision; }

    std::function<Clock::time_point()> m_now;
    UiSnapshot m_snap;
    std::shared_ptr<const model::Model> m_model;
    Measurer m_measurer;
    std::optional<Clock::time_point> m_rerun_at;
    uint64_t m_revision = 1;
    BackgroundJobs m_jobs;  // last member: destroyed (cancelled and joined) first
};

}  // namespace speculum::ui

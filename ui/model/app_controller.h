// AppController: the Qt-free heart of the desktop app. It owns the current configuration, the opened model and
// dataset, and the background jobs (core/jobs JobSystem: one task_arena); it turns panel actions into state
// changes and jobs, drains the jobs' mailbox once per frame, debounces measured re-runs (a newer one supersedes and
// cancels the stale one), and keeps the UiSnapshot the panels draw from. The analytic ("modeled") view is
// recomputed synchronously on every config change. The GUI thread never waits on a job.
#pragma once

#include "core/cancel.h"
#include "core/jobs/job_system.h"
#include "core/model/model.h"
#include "core/model/synthetic.h"
#include "ui/model/actions.h"
#include "ui/model/session_file.h"
#include "ui/model/snapshot.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace speculum::ui {

// The app's random-weight model of `arch` (qwen3moe, gpt-oss): the shape the Model panel's buttons build; nullopt for
// other architectures.
std::optional<model::SyntheticSpec> synthetic_preset(const std::string& arch);

class AppController {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::milliseconds kDebounce{300};  // quiet time after an edit before re-measuring

    struct MeasureRequest {
        AppConfig config;
        std::shared_ptr<const model::Model> model;  // the opened target
        std::string dataset_path;                   // "" = none opened
        std::string task;                           // "" = every task
        std::vector<double> rank_acceptance;        // the last measured acceptance by sibling rank (trees)
        std::string model_path;                     // the opened target's file (the run report names it)
    };
    // Runs one measured decode on a worker thread; `partial` streams intermediate views (each call posts a copy to
    // the GUI). Throws Cancelled once `cancel` fires; any other exception becomes an error message.
    using Measurer =
        std::function<MeasuredView(const MeasureRequest&, const CancelToken& cancel, const ProgressFn& progress,
                                   const std::function<void(const MeasuredView&)>& partial)>;

    // `now` is injectable so tests can drive the debounce without sleeping; `jobs` sizes the worker arena.
    explicit AppController(std::function<Clock::time_point()> now = {}, jobs::JobSystemOptions jobs = {});
    ~AppController();

    void set_build(const BuildInfo& build);
    // Wires a measuring engine (ui/model/engine_measurer: the real speculative engine). Without one, the measured
    // panels say why they are empty.
    void set_measurer(Measurer measurer);

    // Handles a Qt-free action; returns false for actions the app shell must handle (dialogs, quit, messages).
    bool handle(const Action& action);
    void open_model(const std::string& path);
    // Builds a random-weight model of `arch` at the app's preset shape (synthetic_preset), writes it as a GGUF with
    // the bundled tokenizer, and opens it as open_model does. Unknown architectures are an error message.
    void open_synthetic_model(const std::string& arch);
    // Reads a prompt suite on a job; `task` (a restored session's) is chosen once it is read, when the suite has it.
    void open_dataset(const std::string& path, const std::string& task = {});
    void set_config(const AppConfig& config);
    // A Browse button's file: a draft level's model, head or module (the level's path), or an acceptance profile
    // (read now, at most 1 MiB: level 1's modeled acceptance per position). A file that cannot be used changes
    // nothing and says why.
    void file_picked(const ActionFilePicked& a);
    // Opens a sweep result store read-only on a worker (ui/model/store_view); an unreadable file becomes an error
    // message and a snapshot store with its error set.
    void open_results(const std::string& path);
    // Writes level 1 of the configuration as a standalone draft GGUF (llama.cpp -md) on the job system, with
    // progress; the result or the reason is a message. (app_controller_export.cpp, with the two below.)
    void export_draft(const std::string& path);
    // The model file's SHA-256 into the snapshot's model_digest, on a job, once per file (ActionHashModel).
    void hash_model(const std::string& path);
    // Writes an Export panel document on a job; the outcome goes to export_status and the status bar.
    void save_export(const ActionSaveExport& a);
    // Where the app's sweeps keep their result stores (the app passes its data directory; default: a "speculum-sweeps"
    // folder in the system's temporary directory). The same sweep run again resumes from its store.
    void set_sweep_dir(std::string dir) { m_sweep_dir = std::move(dir); }
    const std::string& sweep_dir() const { return m_sweep_dir; }
    // Maps a stored row's configuration onto the editor and says what could not be loaded.
    void load_result_config(const ActionLoadResultConfig& a);

    // The session to keep or save (ui/model/session_file.h): the configuration, the open files, the Design space
    // panel's store and the run history with its pinned runs (app_controller_session.cpp, with the one below).
    SessionState session() const;
    // Puts a saved session back: its run history (pinned runs kept; new runs number on from its last) and the
    // Design space panel's store, read again from its file. `whole` (File > Open session) also takes its
    // configuration and opens its model, dataset and task; without it (a launch) the settings' configuration stays.
    // Files that are gone are named in one message; the rest loads.
    void restore_session(const SessionState& s, bool whole);

    // Once per frame on the GUI thread: applies finished jobs and posted results, refreshes job progress, and
    // starts a debounced measured run whose quiet time has passed.
    void poll();

    const UiSnapshot& snapshot() const { return m_snap; }
    uint64_t revision() const { return m_revision; }  // bumps on every change of the snapshot
    bool busy() const;                                // a job runs or a re-run is pending (redraw at ~30 Hz)
    bool rerun_pending() const { return m_rerun_at.has_value(); }
    const model::Model* model() const { return m_model.get(); }
    void message(MessageLevel level, const std::string& text);

private:
    // A job's result (or streamed partial result) is a closure applied on the GUI thread when the mailbox drains.
    // Jobs stream partial results with ctx.post(std::any(Apply{...})).
    using Apply = std::function<void()>;
    using Work  = std::function<Apply(jobs::JobContext&)>;
    struct JobInfo {
        std::string slot, name;
        bool cancelled      = false;  // results are dropped (superseded by a new model, or by the user)
        bool user_cancelled = false;  // the outcome is reported as "cancelled"
    };

    void refresh_modeled();
    void refresh_notes();
    // Reads level 1's draft head on a worker when the head or the model changed (UiSnapshot::head_cost).
    void refresh_head_cost();
    void schedule_rerun();
    void start_measured();
    // A design-space sweep (ui/model/app_sweep) run by core/sweep into a store under the sweep directory, its rows
    // streamed into the snapshot's store view (app_controller_design.cpp, with open_results).
    void start_sweep(const ActionRunSweep& a);
    void start_tune(const ActionRunTune& a);
    // Opens, summarises and loads a GGUF on a job; the returned Apply installs it (open_model, open_synthetic_model).
    Apply load_model_job(const std::string& path, jobs::JobContext& ctx);
    void measure_machine();                           // microbenchmarks -> the cached "This machine" profile
    void add_machine_profile(hw::HardwareProfile p);  // first in the list, replacing an older one
    void record_run(const MeasuredView& view, const AppConfig& cfg);  // into the history (Run history panel)
    void trim_history();                                              // kHistoryKept unpinned runs at most
    jobs::JobId submit(const std::string& slot, const std::string& name, Work work);
    void cancel_job(jobs::JobId id, bool by_user);
    void apply_message(jobs::JobMessage& m);
    void refresh_jobs();
    void changed() { ++m_revision; }

    std::function<Clock::time_point()> m_now;
    UiSnapshot m_snap;
    std::shared_ptr<const model::Model> m_model;
    Measurer m_measurer;
    std::optional<Clock::time_point> m_rerun_at;
    uint64_t m_revision    = 1;
    bool m_measure_started = false;
    std::string m_head_pending;                 // the head key a "head" job is reading
    std::string m_hashing;                      // the file a "hash" job is hashing
    std::string m_sweep_dir;                    // set_sweep_dir
    std::map<jobs::JobId, JobInfo> m_job_info;  // submitted jobs whose final message has not been drained
    jobs::JobSystem m_jobs;                     // last member: destroyed (every job cancelled and finished) first
};

}  // namespace speculum::ui

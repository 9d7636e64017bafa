// AppController: actions → state and jobs; the configuration and its modeled view; the mailbox → snapshot. The
// other parts are app_controller_open.cpp (model, dataset), app_controller_measure.cpp (measured runs, history, this
// machine's profile), app_controller_design.cpp (sweeps, result stores), app_controller_export.cpp (exports).
#include "ui/model/app_controller.h"

#include "core/data/dataset.h"
#include "core/drafts/draft_bits.h"
#include "core/hw/cpu_load.h"
#include "core/hw/large_pages.h"
#include "core/hw/microbench.h"
#include "core/model/gguf.h"
#include "core/model/synthetic.h"
#include "core/resources.h"
#include "ui/model/spec_mapping.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>

namespace speculum::ui {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxMessages = 50;

std::vector<std::string> files_with_extension(const std::optional<fs::path>& dir, const std::string& ext) {
    std::vector<std::string> out;
    std::error_code ec;
    if (!dir || !fs::is_directory(*dir, ec)) return out;
    for (const auto& e : fs::directory_iterator(*dir, ec))
        if (e.is_regular_file(ec) && e.path().extension() == ext) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

AppController::AppController(std::function<Clock::time_point()> now, jobs::JobSystemOptions jobs)
    : m_now(std::move(now)), m_jobs(jobs) {
    if (!m_now) m_now = [] { return Clock::now(); };
    std::optional<fs::path> res = resources_dir();
    m_snap.bundled_models =
        files_with_extension(res ? std::optional<fs::path>(*res / "models") : std::nullopt, ".gguf");
    m_snap.bundled_datasets = files_with_extension(datasets_dir(), ".jsonl");
    m_snap.llc_bytes        = hw::last_level_cache_bytes();
    try {
        m_snap.profiles = hw::list_profiles(hw::hardware_dir());
    } catch (const std::exception& e) {
        message(MessageLevel::error, std::string("Hardware profiles unavailable: ") + e.what());
    }
    // "This machine", measured once and cached, is the default profile when there is one.
    std::error_code ec;
    if (const fs::path cached = hw::machine_profile_cache(); !cached.empty() && fs::is_regular_file(cached, ec)) {
        try {
            add_machine_profile(hw::load_profile(cached));
            m_snap.config.modeled.hardware_profile = hw::kMachineProfileId;
        } catch (const std::exception& e) {
            message(MessageLevel::error, std::string("The cached profile of this machine is ignored: ") + e.what() +
                                             " (Hardware: Measure this machine writes it again)");
        }
    }
    refresh_modeled();
    refresh_notes();
}

// Jobs capture `this`: m_jobs (the last member) is destroyed first, cancelling them and waiting for them to return.
AppController::~AppController() = default;

void AppController::set_build(const BuildInfo& build) {
    m_snap.build = build;
    changed();
}

void AppController::set_measurer(Measurer measurer) {
    m_measurer                 = std::move(measurer);
    m_snap.measuring_available = bool(m_measurer);
    refresh_notes();
    changed();
}

void AppController::message(MessageLevel level, const std::string& text) {
    m_snap.messages.push_back({level, text});
    if (m_snap.messages.size() > kMaxMessages) m_snap.messages.erase(m_snap.messages.begin());
    m_snap.status_line = text;
    changed();
}

bool AppController::handle(const Action& action) {
    if (auto* a = std::get_if<ActionSetConfig>(&action))
        set_config(a->config);
    else if (auto* a = std::get_if<ActionOpenModel>(&action))
        open_model(a->path);
    else if (auto* a = std::get_if<ActionOpenSyntheticModel>(&action))
        open_synthetic_model(a->arch);
    else if (auto* a = std::get_if<ActionOpenDataset>(&action))
        open_dataset(a->path);
    else if (auto* a = std::get_if<ActionSelectTask>(&action)) {
        m_snap.task = a->task;
        schedule_rerun();
        changed();
    } else if (auto* a = std::get_if<ActionCancelJob>(&action))
        cancel_job(a->id, true);
    else if (auto* a = std::get_if<ActionRunSweep>(&action))
        start_sweep(*a);
    else if (auto* a = std::get_if<ActionRunTune>(&action))
        start_tune(*a);
    else if (auto* a = std::get_if<ActionSelectDesignGrid>(&action)) {
        m_snap.design_selection = a->selection;
        changed();
    } else if (std::holds_alternative<ActionRunMeasured>(action))
        start_measured();
    else if (auto* a = std::get_if<ActionOpenResults>(&action))
        open_results(a->path);
    else if (auto* a = std::get_if<ActionLoadResultConfig>(&action))
        load_result_config(*a);
    else if (std::holds_alternative<ActionClearMessages>(action)) {
        m_snap.messages.clear();
        changed();
    } else if (auto* a = std::get_if<ActionPinRun>(&action)) {
        for (RunRecord& r : m_snap.history)
            if (r.id == a->id) r.pinned = a->pinned;
        trim_history();
        changed();
    } else if (std::holds_alternative<ActionMeasureMachine>(action)) {
        measure_machine();
    } else if (auto* hash = std::get_if<ActionHashModel>(&action)) {
        hash_model(hash->path);
    } else if (auto* save = std::get_if<ActionSaveExport>(&action)) {
        save_export(*save);
    } else if (auto* picked = std::get_if<ActionFilePicked>(&action)) {
        file_picked(*picked);
    } else if (std::holds_alternative<ActionClearHistory>(action)) {
        std::erase_if(m_snap.history, [](const RunRecord& r) { return !r.pinned; });
        changed();
    } else
        return false;
    return true;
}

void AppController::set_config(const AppConfig& in) {
    if (in == m_snap.config) return;
    // A level whose drafter kind changed keeps only what applies to its new kind (a self-draft's pruning on a
    // separate model would make every panel red with nothing visible to fix it); what was cleared is said.
    AppConfig config = in;
    std::string cleared;
    for (size_t i = 0; i < config.spec.levels.size() && i < m_snap.config.spec.levels.size(); ++i) {
        drafts::DraftSpec& d        = config.spec.levels[i];
        const drafts::DraftKind was = m_snap.config.spec.levels[i].kind;
        if (d.kind == was) continue;
        const std::vector<std::string> dropped = drafts::drop_inapplicable(d, m_snap.config.spec.levels[i]);
        if (dropped.empty()) continue;
        std::string list;
        for (size_t k = 0; k < dropped.size(); ++k)
            list += (k == 0 ? "" : k + 1 == dropped.size() ? " and " : ", ") + dropped[k];
        cleared += (cleared.empty() ? "" : "; ") + std::string(i == 0 ? "" : "level " + std::to_string(i + 1) + ": ") +
                   list + " cleared: " + (dropped.size() == 1 ? "it applies" : "they apply") + " to the " +
                   draft_kind_name(was) + ", not the " + draft_kind_name(d.kind);
    }
    if (config == m_snap.config) return;
    // Only what the engine runs is measured again; a modeled assumption (α, c, the profile, the horizontal split)
    // changes the modeled panels alone.
    const bool measured_part_changed = !(config.spec == m_snap.config.spec) || !(config.prefs == m_snap.config.prefs);
    m_snap.config                    = config;
    refresh_modeled();  // the analytic panels follow in this very frame
    if (measured_part_changed) schedule_rerun();
    refresh_head_cost();
    if (!cleared.empty()) {
        cleared[0] = char(std::toupper(static_cast<unsigned char>(cleared[0])));
        message(MessageLevel::info, cleared);
    }
    changed();
}

namespace {

// What a modeled head cost is for: the head (kind, file, layer) and the model it drafts for.
std::string head_key(const drafts::DraftSpec& d, const std::optional<ModelSummary>& model) {
    return std::string(drafts::to_string(d.kind)) + "|" + d.model_path + "|" + std::to_string(d.mtp_layer) + "|" +
           (model ? model->path : std::string());
}

}  // namespace

void AppController::refresh_head_cost() {
    const drafts::DraftSpec& d = m_snap.config.draft();
    if (!m_model || !drafts::reads_target_states(d.kind)) {
        if (m_snap.head_cost) m_snap.head_cost.reset(), changed();
        m_head_pending.clear();
        return;
    }
    const std::string key = head_key(d, m_snap.model);
    if ((m_snap.head_cost && m_snap.head_cost->key == key) || m_head_pending == key) return;
    m_head_pending = key;
    submit("head", "Reading the draft head", [this, d, key, model = m_model](jobs::JobContext&) -> Apply {
        HeadCost h;
        h.key = key;
        try {
            const drafts::DraftBits b = drafts::draft_bits(d, *model);
            h.c                       = double(b.weight_bytes_per_forward) / double(b.verify_weight_bytes_per_forward);
            h.what = describe_draft(d) + ": " + format_bytes(b.weight_bytes_per_forward) + " per pass, the target " +
                     format_bytes(b.verify_weight_bytes_per_forward);
        } catch (const std::exception& e) {
            h.error = e.what();
        }
        return [this, h, kind = d.kind] {
            if (m_head_pending == h.key) m_head_pending.clear();
            if (head_key(m_snap.config.draft(), m_snap.model) != h.key) return;  // the head changed meanwhile
            // A head starts from its kind's assumed cost; once its file is read, from the cost the file models,
            // unless the user has moved c away from both.
            double& c          = m_snap.config.level1().c;
            const bool assumed = c == default_assumption(kind).c ||
                                 (m_snap.head_cost && m_snap.head_cost->error.empty() && m_snap.head_cost->c == c);
            m_snap.head_cost = h;
            if (h.error.empty() && assumed) c = h.c;
            refresh_modeled();
            changed();
        };
    });
}

void AppController::refresh_modeled() {
    m_snap.config_problems = m_snap.config.problems();
    m_snap.profile_index   = -1;
    for (size_t i = 0; i < m_snap.profiles.size(); ++i)
        if (m_snap.profiles[i].id == m_snap.config.modeled.hardware_profile) m_snap.profile_index = int(i);
    const hw::HardwareProfile* hw =
        m_snap.profile_index >= 0 ? &m_snap.profiles[size_t(m_snap.profile_index)] : nullptr;
    const ModelSummary* model = m_snap.model && m_snap.model->hparams ? &*m_snap.model : nullptr;
    m_snap.modeled = compute_modeled(m_snap.config, model, hw, m_snap.measured ? &*m_snap.measured : nullptr);
    const std::optional<HeadCost>& h = m_snap.head_cost;
    if (m_snap.modeled.c_source == "assumed" && h && h->error.empty() && h->c == m_snap.config.level1().c)
        m_snap.modeled.c_source = "modeled from the head's file";
}

void AppController::refresh_notes() {
    if (!m_measurer)
        m_snap.measured_note =
            "No measured run: no measuring engine is wired into this controller. "
            "Every figure shown is modeled.";
    else if (!m_model)
        m_snap.measured_note = "No measured run yet: open a model in Model and data.";
    else if (!m_measure_started)
        m_snap.measured_note = "No measured run yet: change a setting or press Run.";
    else
        m_snap.measured_note.clear();
}

jobs::JobId AppController::submit(const std::string& slot, const std::string& name, Work work) {
    // The slot's previous job is superseded: JobSystem cancels it and drops its messages; stop tracking it here.
    for (auto it = m_job_info.begin(); it != m_job_info.end();)
        it = it->second.slot == slot ? m_job_info.erase(it) : std::next(it);
    jobs::JobId id = m_jobs.submit(
        slot, [work = std::move(work)](jobs::JobContext& ctx) -> std::any { return std::any(work(ctx)); });
    m_job_info[id] = {slot, name};
    refresh_jobs();
    changed();
    return id;
}

void AppController::cancel_job(jobs::JobId id, bool by_user) {
    auto it = m_job_info.find(id);
    if (it == m_job_info.end()) return;
    it->second.cancelled = true;
    it->second.user_cancelled |= by_user;
    m_jobs.cancel(id);
    refresh_jobs();
    changed();
}

void AppController::apply_message(jobs::JobMessage& m) {
    auto it = m_job_info.find(m.id);
    if (it == m_job_info.end()) return;  // superseded (JobSystem drops most of these itself)
    const JobInfo info = it->second;
    if (!m.final) {
        if (auto* apply = std::any_cast<Apply>(&m.payload); apply && *apply && !info.cancelled) (*apply)();
        return;
    }
    m_job_info.erase(it);
    if (info.slot == "tune" && m_snap.tune && m_snap.tune->running && m.status != jobs::JobStatus::done) {
        auto stopped     = std::make_shared<TuneView>(*m_snap.tune);  // what was measured stays shown (and stored)
        stopped->running = false;
        stopped->error   = m.status == jobs::JobStatus::failed ? m.error : "cancelled: running it again resumes";
        m_snap.tune      = stopped;
    }
    if (m.status == jobs::JobStatus::done && !info.cancelled) {
        if (auto* apply = std::any_cast<Apply>(&m.payload); apply && *apply) (*apply)();
    } else if (m.status == jobs::JobStatus::failed && !info.cancelled) {
        std::string kept;
        if (info.slot == "model") {
            m_snap.model_state = m_model ? ModelState::loaded : ModelState::failed;
            if (m_snap.model) kept = " (" + m_snap.model->name + " stays open)";
            if (m_model) schedule_rerun();  // the run the load stopped
        }
        message(MessageLevel::error, info.name + " failed: " + m.error + kept);
    } else if (info.user_cancelled) {  // cancelled (or finished just as the user cancelled): dropped either way
        if (info.slot == "measure" && m_snap.measured && !m_snap.measured->complete) m_snap.measured->cancelled = true;
        if (info.slot == "model") m_snap.model_state = m_model ? ModelState::loaded : ModelState::none;
        message(MessageLevel::info, info.name + ": cancelled");
    }
    changed();
}

void AppController::refresh_jobs() {
    std::vector<JobView> jobs;
    for (const auto& [id, info] : m_job_info) {
        if (info.cancelled) continue;
        JobView v{id, info.name, 0, ""};
        if (auto p = m_jobs.progress(id)) v.progress = p->fraction, v.what = p->item;
        jobs.push_back(std::move(v));
    }
    bool same = jobs.size() == m_snap.jobs.size();
    for (size_t i = 0; same && i < jobs.size(); ++i)
        same = jobs[i].id == m_snap.jobs[i].id && jobs[i].progress == m_snap.jobs[i].progress &&
               jobs[i].what == m_snap.jobs[i].what;
    if (!same) {
        m_snap.jobs = std::move(jobs);
        changed();
    }
}

void AppController::poll() {
    bool landed = false;
    for (jobs::JobMessage& m : m_jobs.drain()) apply_message(m), landed = true;
    if (landed) {  // a model, a draft or a run came in: what the process holds now (the Model and data summary)
        const int64_t rss = hw::resident_bytes();
        if (rss != m_snap.resident_bytes) m_snap.resident_bytes = rss, changed();
    }
    refresh_jobs();
    if (m_rerun_at && m_now() >= *m_rerun_at) start_measured();
}

bool AppController::busy() const {
    return !m_job_info.empty() || m_rerun_at.has_value();
}

}  // namespace speculum::ui

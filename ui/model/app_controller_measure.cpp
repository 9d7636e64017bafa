// The controller's measured runs: debounced re-runs of the configuration (one "measure" job superseding the stale
// one), the run history with pinned runs, and this machine's measured hardware profile.
#include "ui/model/app_controller.h"

#include "core/hw/microbench.h"
#include "core/hw/profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>

namespace speculum::ui {

namespace fs = std::filesystem;

void AppController::add_machine_profile(hw::HardwareProfile p) {
    p.id   = hw::kMachineProfileId;
    p.name = "This machine (measured)";
    std::erase_if(m_snap.profiles, [](const hw::HardwareProfile& q) { return q.id == hw::kMachineProfileId; });
    m_snap.profiles.insert(m_snap.profiles.begin(), std::move(p));
}

void AppController::measure_machine() {
    submit("machine", "Measuring this machine", [this](jobs::JobContext& ctx) -> Apply {
        hw::MicrobenchOptions opt;
        const hw::MicrobenchResult r = hw::run_microbenchmarks(opt, ctx.token(), ctx.progress_fn());
        hw::HardwareProfile p        = hw::profile_from_microbench(r, hw::kMachineProfileId);
        std::string saved;
        if (const fs::path cache = hw::machine_profile_cache(); !cache.empty()) {
            std::error_code ec;
            fs::create_directories(cache.parent_path(), ec);
            hw::save_profile(p, cache);  // throws with the path: the job fails with that message
            saved = " (cached in " + cache.string() + ")";
        }
        return [this, p, saved, seconds = r.seconds] {
            add_machine_profile(p);
            m_snap.config.modeled.hardware_profile = hw::kMachineProfileId;
            char text[160];
            std::snprintf(text, sizeof text, "Measured this machine in %.1f s: %.1f GB/s, %.2f TFLOP/s fp32", seconds,
                          p.mem_bw_gbps, p.fp32_tflops);
            message(MessageLevel::info, text + saved);
            refresh_modeled();
        };
    });
}

void AppController::schedule_rerun() {
    if (!m_measurer || !m_model) return;
    if (!m_snap.config.prefs.auto_measure) {  // only Run now measures; the panels say the run is stale
        m_snap.status_line = "Auto-measure is off: press Run now to measure these settings.";
        return;
    }
    m_rerun_at = m_now() + kDebounce;
}

void AppController::start_measured() {
    m_rerun_at.reset();
    if (!m_measurer || !m_model) {
        refresh_notes();
        changed();
        return;
    }
    if (!m_snap.config_problems.empty()) {
        message(MessageLevel::error, "Not measuring: " + with_fix(m_snap.config_problems.front()));
        return;
    }
    MeasureRequest req{m_snap.config, m_model, m_snap.dataset ? m_snap.dataset->path : "",
                       m_snap.task,   {},      m_snap.model ? m_snap.model->path : ""};
    if (m_snap.measured) req.rank_acceptance = m_snap.measured->stats.rank_alpha();
    m_measure_started = true;
    // Submitting to the "measure" slot supersedes the stale run: JobSystem cancels it and drops its messages.
    submit("measure", "Measuring " + describe_draft(req.config.draft()),
           [this, req, measurer = m_measurer](jobs::JobContext& ctx) -> Apply {
               auto partial = [this, &ctx, cfg = req.config](const MeasuredView& v) {
                   ctx.post(Apply([this, v, cfg] {
                       m_snap.measured        = v;
                       m_snap.measured_config = cfg;
                       refresh_modeled();
                       changed();
                   }));
               };
               MeasuredView result = measurer(req, ctx.token(), ctx.progress_fn(), partial);
               result.complete     = true;
               return [this, result, cfg = req.config] {
                   m_snap.measured        = result;
                   m_snap.measured_config = cfg;
                   ++m_snap.measured_runs;
                   record_run(result, cfg);
                   // A finished run replaces an old error in the status line.
                   char line[160];
                   std::snprintf(line, sizeof line, "Measured %s: speedup %.2fx%s", describe_draft(cfg.draft()).c_str(),
                                 result.speedup(), result.repeats.speedup.n > 1 ? " (median of the A/B pairs)" : "");
                   m_snap.status_line = line;
                   refresh_modeled();
                   changed();
               };
           });
    refresh_notes();
    changed();
}

void AppController::record_run(const MeasuredView& view, const AppConfig& cfg) {
    RunRecord r;
    r.id     = m_snap.history.empty() ? 1 : m_snap.history.back().id + 1;
    r.config = cfg;
    r.view   = view;
    r.view.tokens.clear();  // the history keeps figures, not the token stream
    r.view.tokens.shrink_to_fit();
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    localtime_r(&t, &tm);
    char when[16];
    std::strftime(when, sizeof when, "%H:%M:%S", &tm);
    r.when = when;
    m_snap.history.push_back(std::move(r));
    trim_history();
}

void AppController::trim_history() {
    std::vector<RunRecord>& h = m_snap.history;
    size_t unpinned           = size_t(std::count_if(h.begin(), h.end(), [](const RunRecord& r) { return !r.pinned; }));
    for (auto it = h.begin(); it != h.end() && unpinned > kHistoryKept;) {
        if (!it->pinned) {
            it = h.erase(it);
            --unpinned;
        } else {
            ++it;
        }
    }
}

}  // namespace speculum::ui

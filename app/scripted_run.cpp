// Scripted run stages, checked after every rendered frame (the controller has just drained its mailbox).
#include "scripted_run.h"

#include "imgui_host_widget.h"
#include "main_window.h"

#include "ui/model/engine_measurer.h"

#include <QTimer>

#include <cstdio>

namespace speculum::app {

ScriptedRun::ScriptedRun(MainWindow& window, Options options)
    : QObject(&window), m_window(window), m_options(std::move(options)) {}

void ScriptedRun::start() {
    auto* host = m_window.host();
    connect(host, &ImGuiHostWidget::frameRendered, this, &ScriptedRun::after_frame);
    connect(host, &ImGuiHostWidget::screenshotSaved, this, [this](const QString& path, bool ok) {
        std::fprintf(ok ? stdout : stderr, ok ? "speculum: saved %s\n" : "speculum: could not save %s\n",
                     qPrintable(path));
        // Scripted runs report what the user would have read in the panels.
        const ui::UiSnapshot& snap = m_window.controller().snapshot();
        for (const auto& m : snap.messages)
            std::printf("speculum: %s: %s\n", m.level == ui::MessageLevel::error ? "error" : "info", m.text.c_str());
        finish(ok ? 0 : 1);
    });
    // A GL context that never renders (no display, broken driver) or a run that never ends must not hang a script.
    m_timeout = new QTimer(this);
    m_timeout->setSingleShot(true);
    connect(m_timeout, &QTimer::timeout, this, [this] {
        std::fprintf(stderr, "speculum: scripted run not finished within %d s; giving up\n", m_options.timeout_s);
        finish(3);
    });
    m_timeout->start(m_options.timeout_s * 1000);
    m_base_runs = m_window.controller().snapshot().measured_runs;
    if (!m_options.then_set.isEmpty())
        m_stage = Stage::first_measure;
    else if (m_options.wait_measured)
        m_stage = Stage::final_measure;
    else if (!m_options.screenshot.isEmpty()) {
        m_stage = Stage::screenshot;
        host->request_screenshot(m_options.screenshot, m_options.frames);
    }
    host->schedule_frames(2);
}

void ScriptedRun::after_frame() {
    if (m_stage != Stage::first_measure && m_stage != Stage::final_measure && m_stage != Stage::tuning) return;
    ui::AppController& controller = m_window.controller();
    if (controller.busy()) return;  // a job runs or a debounced re-run is pending
    const ui::UiSnapshot& snap = controller.snapshot();
    if (m_stage == Stage::tuning) {  // the tune has ended (the controller is idle)
        const ui::TuneView* t = snap.tune.get();
        if (!t || !t->result) {
            std::fprintf(stderr, "speculum: tune did not finish: %s\n", t ? t->error.c_str() : "(not started)");
            return finish(1);
        }
        std::printf("speculum: tuned: %zu measured, %zu pruned\n", t->result->measured, t->result->pruned);
        return take_screenshot_or_finish(snap);
    }
    if (snap.measured_runs <= m_base_runs) {
        // Idle without a new measured run: a failed load or run, or nothing to measure. Say why.
        std::string why = snap.measured_note;
        for (const auto& m : snap.messages)
            if (m.level == ui::MessageLevel::error) why = m.text;
        std::fprintf(stderr, "speculum: no measured run: %s\n", why.empty() ? "(no reason given)" : why.c_str());
        finish(1);
        return;
    }
    std::printf("speculum: measured: %s\n", ui::summarize_measured(*snap.measured, *snap.measured_config).c_str());
    std::fflush(stdout);
    m_base_runs = snap.measured_runs;
    if (m_stage == Stage::first_measure) {
        // The scripted change, as one ActionSetConfig (what a panel emits when a slider moves).
        ui::AppConfig cfg = snap.config;
        for (const QString& item : m_options.then_set) {
            const qsizetype eq = item.indexOf('=');
            if (std::string err =
                    ui::set_config_value(cfg, item.left(eq).toStdString(), item.mid(eq + 1).toStdString());
                !err.empty()) {
                std::fprintf(stderr, "speculum: --then-set %s: %s\n", qPrintable(item), err.c_str());
                return finish(2);
            }
        }
        std::printf("speculum: then-set %s\n", qPrintable(m_options.then_set.join(' ')));
        controller.handle(ui::ActionSetConfig{cfg});
        m_stage = Stage::final_measure;
        m_window.host()->schedule_frames(2);
        return;
    }
    if (m_options.tune_s > 0) {  // the Tune panel's search on the open model and dataset
        controller.handle(ui::ActionRunTune{m_options.tune_s, true, 2});
        m_stage = Stage::tuning;
        m_window.host()->schedule_frames(2);
        return;
    }
    take_screenshot_or_finish(snap);
}

void ScriptedRun::take_screenshot_or_finish(const ui::UiSnapshot& snap) {
    if (m_options.pin_runs)  // as the Run history panel's pin boxes do
        for (const ui::RunRecord& r : snap.history)
            if (!r.pinned) m_window.controller().handle(ui::ActionPinRun{r.id, true});
    if (m_options.screenshot.isEmpty()) {
        for (const auto& m : snap.messages)  // what the user would have read in the panels
            std::printf("speculum: %s: %s\n", m.level == ui::MessageLevel::error ? "error" : "info", m.text.c_str());
        return finish(0);
    }
    m_stage = Stage::screenshot;
    m_window.host()->request_screenshot(m_options.screenshot, m_options.frames);
}

void ScriptedRun::finish(int code) {
    if (m_finished) return;  // e.g. the timeout fired while the screenshot was being saved
    m_finished = true;
    m_stage    = Stage::done;
    if (m_timeout) m_timeout->stop();
    std::fflush(stdout);
    // Queued: this may run inside paintGL (frameRendered), where closing the window would crash the flush.
    QTimer::singleShot(0, this, [this, code] { emit finished(code); });
}

}  // namespace speculum::app

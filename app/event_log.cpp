// --log-events (see event_log.h): checked after every rendered frame.
#include "event_log.h"

#include "imgui_host_widget.h"
#include "main_window.h"

#include "ui/model/engine_measurer.h"

#include <cmath>
#include <cstdio>

namespace speculum::app {

EventLog::EventLog(MainWindow& window) : QObject(&window), m_window(window) {
    ui::probe_enable(true);
    m_runs = m_window.controller().snapshot().measured_runs;
    connect(m_window.host(), &ImGuiHostWidget::frameRendered, this, &EventLog::after_frame);
}

void EventLog::after_frame() {
    ui::AppController& controller = m_window.controller();
    const ui::UiSnapshot& snap    = controller.snapshot();
    for (const auto& m : snap.messages) {
        const std::string line = std::string(m.level == ui::MessageLevel::error ? "error" : "info") + ": " + m.text;
        if (m_messages.insert(line).second) std::printf("speculum: %s\n", line.c_str());
    }
    if (snap.measured_runs > m_runs && snap.measured && snap.measured_config && !controller.busy()) {
        m_runs = snap.measured_runs;
        std::printf("speculum: measured: %s\n", ui::summarize_measured(*snap.measured, *snap.measured_config).c_str());
    }
    const QWidget* host = m_window.host();
    const QRect place(host->mapToGlobal(QPoint(0, 0)), host->size());
    const bool moved = place != m_host;
    if (moved) {
        m_host = place;
        std::printf("speculum: host %d %d %d %d\n", place.x(), place.y(), place.width(), place.height());
    }
    for (const auto& [name, r] : ui::probed_items()) {
        auto it = m_items.find(name);
        if (!moved && it != m_items.end() && it->second == r) continue;
        m_items[name] = r;
        std::printf("speculum: widget: %s %d %d %d %d\n", name.c_str(), place.x() + int(std::lround(r.x)),
                    place.y() + int(std::lround(r.y)), int(std::lround(r.w)), int(std::lround(r.h)));
    }
    std::fflush(stdout);
}

}  // namespace speculum::app

// A QOpenGLWidget (OpenGL 3.3 core) that hosts one Dear ImGui context and draws the ui::Dashboard from the
// controller's snapshot. Redraws on demand: after input, for a few frames afterwards, when the controller's
// snapshot changes, and while the app's progress timer runs; never on a free-running timer.
#pragma once

#include "ui/dashboard.h"
#include "ui/model/actions.h"
#include "ui/model/app_controller.h"

#include <QElapsedTimer>
#include <QOpenGLWidget>
#include <QString>

#include <string>

struct ImGuiContext;

namespace speculum::app {

class ImGuiHostWidget : public QOpenGLWidget {
    Q_OBJECT
public:
    ImGuiHostWidget(ui::AppController& controller, QWidget* parent = nullptr);
    ~ImGuiHostWidget() override;

    // Saves the framebuffer to `path` once `after_frames` frames have been rendered with the controller idle
    // (no job running, no re-run pending), then emits screenshotSaved.
    void request_screenshot(const QString& path, int after_frames);

    uint64_t frames_rendered() const { return m_frames; }
    ui::Dashboard& dashboard() { return m_dashboard; }
    void schedule_frames(int n);  // keep drawing for n more frames (ImGui needs a few to settle hover/animations)

    // The ImGui window layout (positions, sizes, collapsed state) as imgui.ini text, for QSettings.
    std::string save_layout();
    void load_layout(const std::string& ini);

signals:
    void actionsEmitted(std::vector<speculum::ui::Action> actions);  // the ones the controller left to the shell
    void frameRendered();
    void screenshotSaved(const QString& path, bool ok);

protected:
    void initializeGL() override;
    void paintGL() override;
    bool event(QEvent* event) override;

private:
    void take_screenshot();

    ui::AppController& m_controller;
    ImGuiContext* m_ctx = nullptr;
    bool m_gl_ready     = false;
    ui::Dashboard m_dashboard;
    QElapsedTimer m_clock;
    uint64_t m_frames        = 0;
    uint64_t m_seen_revision = 0;
    int m_active_frames      = 3;
    QString m_screenshot_path;
    int m_screenshot_after = -1;  // idle frames still to render before the screenshot; -1 = none requested
};

}  // namespace speculum::app

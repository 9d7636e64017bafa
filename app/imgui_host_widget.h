// A QOpenGLWidget (OpenGL 3.3 core) that hosts one Dear ImGui context and draws the ui::Dashboard.
// Redraws on demand: after input, for a few frames afterwards, and when the app asks; never on a free timer.
#pragma once

#include "ui/actions.h"
#include "ui/dashboard.h"
#include "ui/snapshot.h"

#include <QElapsedTimer>
#include <QOpenGLWidget>
#include <QString>

struct ImGuiContext;

namespace speculum::app {

class ImGuiHostWidget : public QOpenGLWidget {
    Q_OBJECT
public:
    explicit ImGuiHostWidget(QWidget* parent = nullptr);
    ~ImGuiHostWidget() override;

    // Saves the framebuffer to `path` once `after_frames` frames have been rendered, then emits screenshotSaved.
    void request_screenshot(const QString& path, int after_frames);

    void set_snapshot(ui::UiSnapshot snapshot);  // takes effect on the next frame, which it schedules
    uint64_t frames_rendered() const { return m_frames; }
    ui::Dashboard& dashboard() { return m_dashboard; }

signals:
    void actionsEmitted(std::vector<speculum::ui::Action> actions);  // drained once per frame
    void screenshotSaved(const QString& path, bool ok);

protected:
    void initializeGL() override;
    void paintGL() override;
    bool event(QEvent* event) override;

private:
    void schedule_frames(int n);  // keep drawing for n more frames (ImGui needs a few to settle hover/animations)
    void take_screenshot();

    ImGuiContext* m_ctx = nullptr;
    bool m_gl_ready     = false;
    ui::Dashboard m_dashboard;
    ui::UiSnapshot m_snapshot;
    QElapsedTimer m_clock;
    uint64_t m_frames       = 0;
    int m_active_frames     = 3;
    QString m_screenshot_path;
    int m_screenshot_after  = -1;
};

}  // namespace speculum::app

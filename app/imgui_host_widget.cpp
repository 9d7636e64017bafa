// Dear ImGui inside a QOpenGLWidget with the stock OpenGL3 renderer (compiled from Debian's libimgui-dev).
#include "imgui_host_widget.h"

#include "qt_imgui_input.h"

#include <imgui.h>
#include <imgui_impl_opengl3.h>

#include <QEvent>
#include <QImage>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QSaveFile>
#include <QTimer>

namespace speculum::app {

ImGuiHostWidget::ImGuiHostWidget(ui::AppController& controller, QWidget* parent)
    : QOpenGLWidget(parent), m_controller(controller) {
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setMinimumSize(320, 200);
    IMGUI_CHECKVERSION();
    ImGuiContext* previous = ImGui::GetCurrentContext();
    m_ctx                  = ImGui::CreateContext();
    ImGui::SetCurrentContext(m_ctx);
    ImGuiIO& io    = ImGui::GetIO();
    io.IniFilename = nullptr;  // window layout is persisted by the app through QSettings, not imgui.ini
    io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
    imgui_input_init(io);
    ImGui::StyleColorsDark();
    ImGui::SetCurrentContext(previous);
    m_clock.start();
}

ImGuiHostWidget::~ImGuiHostWidget() {
    ImGui::SetCurrentContext(m_ctx);
    if (m_gl_ready) {
        makeCurrent();
        ImGui_ImplOpenGL3_Shutdown();
        doneCurrent();
    }
    ImGui::DestroyContext(m_ctx);
}

void ImGuiHostWidget::initializeGL() {
    ImGui::SetCurrentContext(m_ctx);
    m_gl_ready = ImGui_ImplOpenGL3_Init("#version 330 core");
    if (!m_gl_ready) qWarning("speculum: ImGui OpenGL3 renderer failed to initialise (need OpenGL 3.3 core)");
}

void ImGuiHostWidget::request_screenshot(const QString& path, int after_frames) {
    m_screenshot_path  = path;
    m_screenshot_after = after_frames;
    schedule_frames(after_frames + 1);
}

std::string ImGuiHostWidget::save_layout() {
    ImGui::SetCurrentContext(m_ctx);
    size_t size     = 0;
    const char* ini = ImGui::SaveIniSettingsToMemory(&size);
    return std::string(ini, size);
}

void ImGuiHostWidget::load_layout(const std::string& ini) {
    ImGui::SetCurrentContext(m_ctx);
    if (!ini.empty()) ImGui::LoadIniSettingsFromMemory(ini.data(), ini.size());
}

void ImGuiHostWidget::schedule_frames(int n) {
    m_active_frames = std::max(m_active_frames, n);
    update();
}

void ImGuiHostWidget::paintGL() {
    ImGui::SetCurrentContext(m_ctx);
    ImGuiIO& io = ImGui::GetIO();
    double dt   = double(m_clock.nsecsElapsed()) * 1e-9;
    m_clock.restart();
    feed_frame(io, this, dt);

    // Results of background jobs arrive here, once per frame, before anything is drawn.
    m_controller.poll();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui::NewFrame();
    ui::UiActions actions;
    m_dashboard.draw(m_controller.snapshot(), actions);
    ImGui::Render();

    QOpenGLFunctions* gl = context()->functions();
    gl->glViewport(0, 0, int(io.DisplaySize.x * io.DisplayFramebufferScale.x),
                   int(io.DisplaySize.y * io.DisplayFramebufferScale.y));
    gl->glClearColor(0.13f, 0.14f, 0.17f, 1.0f);
    gl->glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    ++m_frames;

    setCursor(qt_cursor_for(ImGui::GetMouseCursor()));
    // Actions: the controller takes the Qt-free ones (config edits apply to the analytic panels before the next
    // frame); dialogs and quit go to the main window.
    std::vector<ui::Action> for_shell;
    for (auto& a : actions.queue)
        if (!m_controller.handle(a)) for_shell.push_back(std::move(a));
    if (!for_shell.empty()) emit actionsEmitted(std::move(for_shell));
    if (m_controller.revision() != m_seen_revision) {
        m_seen_revision = m_controller.revision();
        schedule_frames(2);
    }
    emit frameRendered();

    // Frame pacing: draw again only while something asked for it. A screenshot waits for an idle controller.
    if (m_screenshot_after >= 0) {
        if (m_controller.busy())
            m_screenshot_after = std::max(m_screenshot_after, 2);
        else if (--m_screenshot_after <= 0) {
            m_screenshot_after = -1;
            QTimer::singleShot(0, this, [this] { take_screenshot(); });
        }
        // While busy the app's ~30 Hz progress timer keeps frames coming; once idle, count down at full speed.
        if (m_screenshot_after >= 0 && !m_controller.busy()) m_active_frames = std::max(m_active_frames, 1);
    }
    if (m_active_frames > 0) {
        --m_active_frames;
        QTimer::singleShot(0, this, [this] { update(); });
    }
}

void ImGuiHostWidget::take_screenshot() {
    // Written to a temporary sibling and renamed (QSaveFile): a full disk leaves no partial PNG.
    QImage image = grabFramebuffer();
    QSaveFile file(m_screenshot_path);
    bool ok = !image.isNull() && file.open(QIODevice::WriteOnly) && image.save(&file, "PNG") && file.commit();
    emit screenshotSaved(m_screenshot_path, ok);
}

bool ImGuiHostWidget::event(QEvent* event) {
    if (m_ctx) {
        ImGui::SetCurrentContext(m_ctx);
        if (feed_qt_event(event, ImGui::GetIO(), this)) schedule_frames(3);
    }
    return QOpenGLWidget::event(event);
}

}  // namespace speculum::app

// The Qt main window: menus, status bar, persisted geometry, and the ImGui host as the central widget.
#pragma once

#include <QMainWindow>

namespace speculum::app {

class ImGuiHostWidget;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    MainWindow();
    ImGuiHostWidget* host() const { return m_host; }

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void build_menus();
    void show_about();

    ImGuiHostWidget* m_host = nullptr;
};

}  // namespace speculum::app

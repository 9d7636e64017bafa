// Main window wiring: menu actions and panel actions meet here; heavy work is always handed to core jobs.
#include "main_window.h"

#include "imgui_host_widget.h"

#include "core/version.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>

namespace speculum::app {

MainWindow::MainWindow() {
    setWindowTitle("Speculum");
    m_host = new ImGuiHostWidget(this);
    setCentralWidget(m_host);
    build_menus();
    statusBar()->showMessage("Ready");

    ui::UiSnapshot snap;
    snap.build       = build_info();
    snap.status_line = "No model loaded yet.";
    m_host->set_snapshot(snap);

    connect(m_host, &ImGuiHostWidget::actionsEmitted, this, [this](std::vector<ui::Action> actions) {
        for (auto& a : actions) {
            if (auto* msg = std::get_if<ui::ActionShowMessage>(&a)) statusBar()->showMessage(QString::fromStdString(msg->text), 5000);
            else if (std::holds_alternative<ui::ActionQuit>(a)) close();
        }
    });

    QSettings settings;
    if (!restoreGeometry(settings.value("main_window/geometry").toByteArray())) resize(1280, 800);
}

void MainWindow::build_menus() {
    QMenu* file = menuBar()->addMenu("&File");
    QAction* quit = file->addAction("&Quit", this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* view          = menuBar()->addMenu("&View");
    QAction* overview    = view->addAction("&Overview");
    overview->setCheckable(true);
    overview->setChecked(true);
    connect(overview, &QAction::toggled, this, [this](bool on) {
        m_host->dashboard().overview.visible = on;
        m_host->update();
    });

    QMenu* help = menuBar()->addMenu("&Help");
    help->addAction("&About Speculum", this, &MainWindow::show_about);
}

void MainWindow::show_about() {
    QString text = QString::fromStdString(build_info_text(build_info()));
    text += QString("  Qt           %1\n").arg(qVersion());
    QMessageBox::about(this, "About Speculum", "<pre>" + text.toHtmlEscaped() + "</pre>");
}

void MainWindow::closeEvent(QCloseEvent* event) {
    QSettings settings;
    settings.setValue("main_window/geometry", saveGeometry());
    event->accept();
}

}  // namespace speculum::app

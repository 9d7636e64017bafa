// speculum: the Qt 6 desktop app. Qt owns the window and events; Dear ImGui draws the panels.
#include "imgui_host_widget.h"
#include "main_window.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QSurfaceFormat>
#include <QTimer>

#include <cstdio>

int main(int argc, char** argv) {
    // The ImGui renderer needs an OpenGL 3.3 core context; it must be requested before QApplication exists.
    QSurfaceFormat format;
    format.setVersion(3, 3);
    format.setProfile(QSurfaceFormat::CoreProfile);
    format.setDepthBufferSize(0);
    format.setStencilBufferSize(0);
    QSurfaceFormat::setDefaultFormat(format);

    QApplication app(argc, argv);
    QApplication::setOrganizationName("Speculum");
    QApplication::setApplicationName("speculum");
    QApplication::setApplicationVersion(SPECULUM_VERSION);

    QCommandLineParser parser;
    parser.setApplicationDescription("Speculum: explore the design space of speculative decoding.");
    parser.addHelpOption();
    parser.addVersionOption();
    QCommandLineOption screenshot("screenshot", "Render, save a screenshot to <file> (PNG) and exit.", "file");
    QCommandLineOption frames("frames", "Frames to render before the screenshot (default 3).", "n", "3");
    QCommandLineOption size("size", "Window size WxH (default: last session's, else 1280x800).", "WxH");
    parser.addOption(screenshot);
    parser.addOption(frames);
    parser.addOption(size);
    parser.process(app);

    speculum::app::MainWindow window;
    if (parser.isSet(size)) {
        const QStringList wh = parser.value(size).split('x');
        bool ok_w = false, ok_h = false;
        int w = wh.size() == 2 ? wh[0].toInt(&ok_w) : 0, h = wh.size() == 2 ? wh[1].toInt(&ok_h) : 0;
        if (!ok_w || !ok_h || w < 320 || h < 200 || w > 16384 || h > 16384) {
            std::fprintf(stderr, "speculum: --size expects WxH with W >= 320 and H >= 200, got '%s'\n",
                         qPrintable(parser.value(size)));
            return 2;
        }
        window.resize(w, h);
    }
    window.show();

    if (parser.isSet(screenshot)) {
        bool ok_n = false;
        int n     = parser.value(frames).toInt(&ok_n);
        if (!ok_n || n < 1 || n > 100000) {
            std::fprintf(stderr, "speculum: --frames expects a positive integer\n");
            return 2;
        }
        auto* host = window.host();
        QObject::connect(host, &speculum::app::ImGuiHostWidget::screenshotSaved, &app,
                         [&app](const QString& path, bool ok) {
                             std::fprintf(ok ? stdout : stderr, ok ? "speculum: saved %s\n" : "speculum: could not save %s\n",
                                          qPrintable(path));
                             app.exit(ok ? 0 : 1);
                         });
        host->request_screenshot(parser.value(screenshot), n);
        // A GL context that never renders (no display, broken driver) must not hang a script forever.
        QTimer::singleShot(120000, &app, [&app] {
            std::fprintf(stderr, "speculum: no frame rendered within 120 s; giving up\n");
            app.exit(3);
        });
    }
    return app.exec();
}

// speculum: the Qt 6 desktop app. Qt owns the window and events; Dear ImGui draws the panels.
#include "imgui_host_widget.h"
#include "main_window.h"

#include "core/resources.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QSurfaceFormat>
#include <QTimer>

#include <cstdio>
#include <filesystem>

namespace {

// --set KEY=VALUE options become one scripted ActionSetConfig, as if a panel had emitted it.
bool apply_settings(speculum::ui::AppController& controller, const QStringList& items) {
    speculum::ui::AppConfig cfg = controller.snapshot().config;
    for (const QString& item : items) {
        int eq = item.indexOf('=');
        std::string error = eq <= 0 ? "expected KEY=VALUE" :
            speculum::ui::set_config_value(cfg, item.left(eq).toStdString(), item.mid(eq + 1).toStdString());
        if (!error.empty()) {
            std::fprintf(stderr, "speculum: --set %s: %s\n", qPrintable(item), error.c_str());
            return false;
        }
    }
    controller.handle(speculum::ui::ActionSetConfig{cfg});
    return true;
}

}  // namespace

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
    QCommandLineOption screenshot("screenshot",
                                  "Render, wait until no job runs, save a screenshot to <file> (PNG) and exit. "
                                  "Saved settings are neither read nor written.", "file");
    QCommandLineOption frames("frames", "Idle frames to render before the screenshot (default 3).", "n", "3");
    QCommandLineOption size("size", "Window size WxH (default: last session's, else 1400x860).", "WxH");
    QCommandLineOption model("model", "Open this GGUF model at start.", "path");
    QCommandLineOption dataset("dataset", "Open this JSONL dataset at start.", "path");
    QCommandLineOption panel("panel", "Show only the panel with this title, over the whole window.", "title");
    QCommandLineOption set("set", "Change a setting at start, e.g. gamma=6, alpha=0.7, profile=rtx4090 (repeatable).",
                           "key=value");
    QCommandLineOption sweep("sweep", "Run a modeled design-space sweep at start over two axes, e.g. gamma,alpha.", "x,y");
    for (const auto& o : {screenshot, frames, size, model, dataset, panel, set, sweep}) parser.addOption(o);
    parser.process(app);

    speculum::app::MainWindow window(!parser.isSet(screenshot));
    auto& controller = window.controller();
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
    if (parser.isSet(panel) && !window.host()->dashboard().set_solo(parser.value(panel).toStdString())) {
        std::fprintf(stderr, "speculum: --panel: no panel titled '%s'\n", qPrintable(parser.value(panel)));
        return 2;
    }
    if (parser.isSet(set) && !apply_settings(controller, parser.values(set))) return 2;
    if (parser.isSet(sweep)) {
        auto axis = [](const QString& name, speculum::ui::SweepAxis& out) {
            using speculum::ui::SweepAxis;
            const std::pair<const char*, SweepAxis> names[] = {{"gamma", SweepAxis::gamma}, {"alpha", SweepAxis::alpha},
                                                               {"c", SweepAxis::cost_ratio}, {"budget", SweepAxis::tree_budget}};
            for (const auto& [n, a] : names)
                if (name == n) return out = a, true;
            return false;
        };
        QStringList xy = parser.value(sweep).split(',');
        speculum::ui::ActionRunSweep run;
        if (xy.size() != 2 || !axis(xy[0], run.x) || !axis(xy[1], run.y)) {
            std::fprintf(stderr, "speculum: --sweep expects two of gamma, alpha, c, budget (e.g. gamma,alpha)\n");
            return 2;
        }
        controller.handle(run);
    }
    if (parser.isSet(model)) {
        controller.open_model(parser.value(model).toStdString());
    } else {
        // No model named: open the bundled target, so a fresh checkout shows a real model at once.
        std::error_code ec;
        if (auto res = speculum::resources_dir(); res && std::filesystem::exists(*res / speculum::kBundledTargetModel, ec))
            controller.open_model((*res / speculum::kBundledTargetModel).string());
    }
    if (parser.isSet(dataset)) controller.open_dataset(parser.value(dataset).toStdString());
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
                         [&app, &controller](const QString& path, bool ok) {
                             std::fprintf(ok ? stdout : stderr, ok ? "speculum: saved %s\n" : "speculum: could not save %s\n",
                                          qPrintable(path));
                             // Scripted runs report what the user would have read in the panels.
                             for (const auto& m : controller.snapshot().messages)
                                 std::printf("speculum: %s: %s\n", m.level == speculum::ui::MessageLevel::error ? "error" : "info",
                                             m.text.c_str());
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

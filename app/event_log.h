// --log-events: what a user would see, printed to stdout as it happens, for GUI tests that drive the real window
// with real input (tests/gui/run_gui_input.sh): each measured run ("speculum: measured: ..."), each new message,
// the host widget's place on the screen, and where the probed widgets (ui::probe_item) were drawn, in screen pixels
// ("speculum: widget: gamma X Y W H"), whenever they move. A script finds a slider there and drags it with xdotool.
#pragma once

#include "ui/widgets.h"

#include <QObject>
#include <QRect>

#include <map>
#include <set>
#include <string>

namespace speculum::app {

class MainWindow;

class EventLog : public QObject {
    Q_OBJECT
public:
    explicit EventLog(MainWindow& window);

private:
    void after_frame();

    MainWindow& m_window;
    int m_runs = 0;
    std::set<std::string> m_messages;  // "level: text" already printed
    std::map<std::string, ui::ProbedItem> m_items;
    QRect m_host;
};

}  // namespace speculum::app

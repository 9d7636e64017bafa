// Flat per-frame dispatch over the panels (Tracy's View::Draw pattern).
#include "ui/dashboard.h"

namespace speculum::ui {

void Dashboard::draw(const UiSnapshot& snap, UiActions& actions) {
    if (overview.visible) overview.draw(snap, actions);
}

}  // namespace speculum::ui

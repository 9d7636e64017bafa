// The immutable, value-type view of the application state that every panel draws from.
// The app builds a new snapshot when core state changes; panels never reach into core objects.
#pragma once

#include "core/version.h"

#include <cstdint>
#include <string>

namespace speculum::ui {

struct UiSnapshot {
    BuildInfo build;             // shown in the Overview panel and the About box
    std::string status_line;     // last message for the user (errors included)
    uint64_t frame_index = 0;    // frames rendered so far (debug overlay; idle checks)
    float dpi_scale      = 1.0f; // device pixel ratio of the window
};

}  // namespace speculum::ui

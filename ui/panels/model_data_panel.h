// Model and data panel: open a GGUF (bundled or any file) and a JSONL dataset, pick a task, read the model summary, see
// errors as messages.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"

namespace speculum::ui {

class ModelDataPanel {
public:
    static constexpr const char* title = "Model and data";
    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = true;
};

}  // namespace speculum::ui

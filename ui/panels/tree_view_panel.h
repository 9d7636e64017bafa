// Tree view panel: the verification tree the configuration describes, each node coloured by its modeled acceptance.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"

namespace speculum::ui {

class TreeViewPanel {
public:
    static constexpr const char* title = "Tree view";
    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = true;
};

}  // namespace speculum::ui

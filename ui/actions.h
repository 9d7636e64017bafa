// Intents that panels emit. The app drains them after ImGui::Render() and calls core; panels never mutate core.
#pragma once

#include <string>
#include <variant>
#include <vector>

namespace speculum::ui {

struct ActionShowMessage {
    std::string text;  // goes to the status bar
};

struct ActionQuit {};

using Action = std::variant<ActionShowMessage, ActionQuit>;

// The per-frame outbox. Panels push; the app pops everything once per frame.
struct UiActions {
    std::vector<Action> queue;
    void push(Action a) { queue.push_back(std::move(a)); }
};

}  // namespace speculum::ui

// Fixture for the layering test: an ImGui include in the application model (ui/model/) must be caught.
#pragma once
#include <imgui.h>

// Fixture for the layering test: an ImGui include in kernels/ must be caught.
#pragma once
#include <imgui.h>

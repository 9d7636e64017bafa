// Fixture for the layering test: the application model including a panel must be caught.
#pragma once
#include "ui/panels/speedup_panel.h"

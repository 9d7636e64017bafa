// Fixture for the layering test: a Qt include in core/ must be caught.
#pragma once
#include <QString>

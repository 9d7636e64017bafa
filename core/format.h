// Small text formatting shared by the CLI, the app and core's reports: one printf-style number, and a byte count
// in MiB. Kept here so every place prints the same figure the same way.
#pragma once

#include <cstdint>
#include <string>

namespace speculum {

// One double through a printf format with a single conversion ("%.3f", "%.0f %%"); at most 159 characters.
std::string fmt(const char* printf_format, double v);
// "12.34 MiB".
std::string mib(uint64_t bytes);

}  // namespace speculum

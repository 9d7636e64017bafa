// Shared text formatting (see format.h).
#include "core/format.h"

#include <cstdio>

namespace speculum {

std::string fmt(const char* printf_format, double v) {
    char b[160];
    std::snprintf(b, sizeof b, printf_format, v);
    return b;
}

std::string mib(uint64_t bytes) {
    char b[48];
    std::snprintf(b, sizeof b, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return b;
}

}  // namespace speculum

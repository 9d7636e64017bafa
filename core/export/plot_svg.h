// Plot -> SVG 1.1 text: one <rect>/<line>/<text> per primitive, each datum's rectangle carrying a <title> with
// its value, so the file is both a picture and a record of the numbers.
#pragma once

#include "core/export/plot.h"

#include <string>

namespace speculum::exporting {

std::string to_svg(const Plot& p);

// XML character escaping for text and attribute values (& < > " ').
std::string xml_escape(const std::string& s);

}  // namespace speculum::exporting

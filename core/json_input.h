// JSON from outside (configs, sweep specs, manifests, predict inputs, profiles, reports, settings, store rows) is
// parsed here, with limits a hostile file cannot get past: nesting deeper than kMaxJsonDepth is refused while
// parsing, before a deep value exists (nlohmann's serializer, comparison and our own readers recurse, and 30,000
// levels overflowed the stack), and so is text after a NUL byte. Errors name what was read ("sweep.json: JSON
// nested deeper than 128 levels"). JSON pointers from outside are checked by check_json_pointer.
#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <string_view>

namespace speculum {

inline constexpr int kMaxJsonDepth              = 128;  // nesting levels of arrays and objects
inline constexpr size_t kMaxJsonPointerSegments = 64;   // "/a/b/..." segments in a pointer from outside
inline constexpr size_t kMaxJsonPointerBytes    = 4096;

// Throws std::invalid_argument "WHAT: ..." for malformed JSON (nlohmann's message, with the byte), nesting deeper
// than kMaxJsonDepth, or a NUL byte.
nlohmann::json parse_json(std::string_view text, const std::string& what);
// The stream read whole first (callers bound its size; see the input limits in CONTRIBUTING).
nlohmann::json parse_json(std::istream& in, const std::string& what);

// Throws std::invalid_argument "WHAT: ..." for a pointer longer than the limits above or not a JSON pointer.
void check_json_pointer(const std::string& pointer, const std::string& what);

}  // namespace speculum

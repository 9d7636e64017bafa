// Depth-limited JSON parsing (see json_input.h).
#include "core/json_input.h"

#include <algorithm>
#include <istream>
#include <iterator>
#include <stdexcept>

namespace speculum {

nlohmann::json parse_json(std::string_view text, const std::string& what) {
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
        throw std::invalid_argument(what + ": a NUL byte at byte " + std::to_string(nul) + " (not JSON text)");
    // The callback sees every value's depth as it is parsed: refused before anything deeper is built.
    const nlohmann::json::parser_callback_t limit = [&what](int depth, nlohmann::json::parse_event_t event,
                                                            nlohmann::json&) {
        if ((event == nlohmann::json::parse_event_t::object_start ||
             event == nlohmann::json::parse_event_t::array_start) &&
            depth >= kMaxJsonDepth)
            throw std::invalid_argument(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                        " levels");
        return true;
    };
    try {
        return nlohmann::json::parse(text.begin(), text.end(), limit);
    } catch (const nlohmann::json::parse_error& e) {
        throw std::invalid_argument(what + ": not valid JSON: " + e.what());
    }
}

nlohmann::json parse_json(std::istream& in, const std::string& what) {
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw std::invalid_argument(what + ": read error");
    return parse_json(std::string_view(text), what);
}

void check_json_pointer(const std::string& pointer, const std::string& what) {
    if (pointer.size() > kMaxJsonPointerBytes)
        throw std::invalid_argument(what + ": JSON pointer longer than " + std::to_string(kMaxJsonPointerBytes) +
                                    " bytes");
    if (size_t(std::count(pointer.begin(), pointer.end(), '/')) > kMaxJsonPointerSegments)
        throw std::invalid_argument(what + ": JSON pointer with more than " + std::to_string(kMaxJsonPointerSegments) +
                                    " segments");
    try {
        (void)nlohmann::json::json_pointer(pointer);
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(what + ": not a JSON pointer: " + e.what());
    }
}

}  // namespace speculum

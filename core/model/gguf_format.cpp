// Renderings of GGUF metadata values for display (see gguf_format.h).
#include "core/model/gguf_format.h"

#include <charconv>
#include <cstdio>

namespace speculum::model {

namespace {

bool is_unsigned(GgufType t) {
    return t == GgufType::UINT8 || t == GgufType::UINT16 || t == GgufType::UINT32 || t == GgufType::UINT64;
}

// Shortest text that reads back to the same value at the value's own precision (1e-05, not 9.99999975e-06).
std::string number(double f, GgufType t) {
    char buf[64];
    auto res = t == GgufType::FLOAT32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(f))
                                      : std::to_chars(buf, buf + sizeof buf, f);
    return std::string(buf, res.ptr);
}

// 'text' with control bytes escaped; bytes >= 0x80 pass through (UTF-8 shows as text on a terminal).
std::string quote(const std::string& s, size_t max_chars) {
    std::string out = "'";
    size_t shown    = 0;
    for (unsigned char c : s) {
        if (shown++ == max_chars) {
            out += "...' (" + std::to_string(s.size()) + " bytes)";
            return out;
        }
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\'')
            out += "\\'";
        else if (c == '\\')
            out += "\\\\";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else
            out += static_cast<char>(c);
    }
    return out + "'";
}

std::string plural_type(GgufType t) {
    return t == GgufType::STRING ? "strings" : t == GgufType::BOOL ? "bools" : gguf_type_name(t);
}

}  // namespace

std::string gguf_value_summary(const GgufValue& v, size_t max_items, size_t max_chars) {
    switch (v.type) {
        case GgufType::STRING:
            return quote(v.s, max_chars);
        case GgufType::BOOL:
            return v.i ? "true" : "false";
        case GgufType::FLOAT32:
        case GgufType::FLOAT64:
            return number(v.f, v.type);
        case GgufType::ARRAY:
            break;
        default:
            return is_unsigned(v.type) ? std::to_string(v.u) : std::to_string(v.i);
    }
    const uint64_t n = v.array_size();
    std::string out  = "[";  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "[" + std::string
    out += std::to_string(n);
    out += ' ';
    out += plural_type(v.array_type);
    for (uint64_t k = 0; k < n && k < max_items; ++k) {
        out += k ? ", " : ": ";
        if (v.array_type == GgufType::STRING)
            out += quote(v.strings[k], 40);
        else if (v.array_type == GgufType::FLOAT32 || v.array_type == GgufType::FLOAT64)
            out += number(v.floats[k], v.array_type);
        else if (v.array_type == GgufType::BOOL)
            out += v.ints[k] ? "true" : "false";
        else if (v.array_type == GgufType::UINT64)
            out += std::to_string(static_cast<uint64_t>(v.ints[k]));
        else
            out += std::to_string(v.ints[k]);
    }
    if (n > max_items) out += ", ...";
    return out + "]";
}

nlohmann::json gguf_value_json(const GgufValue& v, size_t max_items) {
    switch (v.type) {
        case GgufType::STRING:
            return v.s;
        case GgufType::BOOL:
            return v.i != 0;
        case GgufType::FLOAT32:
        case GgufType::FLOAT64:
            return v.f;
        case GgufType::ARRAY:
            break;
        default:
            return is_unsigned(v.type) ? nlohmann::json(v.u) : nlohmann::json(v.i);
    }
    nlohmann::json head = nlohmann::json::array();
    for (uint64_t k = 0; k < v.array_size() && k < max_items; ++k) {
        if (v.array_type == GgufType::STRING)
            head.push_back(v.strings[k]);
        else if (v.array_type == GgufType::FLOAT32 || v.array_type == GgufType::FLOAT64)
            head.push_back(v.floats[k]);
        else if (v.array_type == GgufType::BOOL)
            head.push_back(v.ints[k] != 0);
        else if (v.array_type == GgufType::UINT64)
            head.push_back(static_cast<uint64_t>(v.ints[k]));
        else
            head.push_back(v.ints[k]);
    }
    return {{"element_type", gguf_type_name(v.array_type)}, {"count", v.array_size()}, {"head", head}};
}

}  // namespace speculum::model

// The strict JSON object reader (see json_reader.h).
#include "core/json_reader.h"

#include <algorithm>
#include <cmath>

namespace speculum {

using nlohmann::json;

std::string json_path(const std::string& where, std::string_view key) {
    return where.empty() ? std::string(key) : where + "." + std::string(key);
}

std::string json_path(const std::string& where, size_t index) {
    return where + "[" + std::to_string(index) + "]";
}

void throw_json_error(const std::string& path, const std::string& what) {
    throw std::invalid_argument(path + ": " + what);
}

std::string json_kind(const json& v) {
    if (v.is_number_float()) return "a fractional number";
    if (v.is_number_integer()) return "an integer";
    return v.type_name();  // "string", "array", "object", "boolean", "null"
}

JsonReader::JsonReader(const json& j, std::string where, Fail fail) : m_j(j), m_where(std::move(where)), m_fail(fail) {
    if (!j.is_object())
        this->fail(m_where.empty() ? "input" : m_where, std::string("expected a JSON object, got ") + j.type_name());
}

void JsonReader::fail(const std::string& path, const std::string& what) const {
    m_fail(path, what);
    throw std::logic_error("JsonReader: the error handler returned");  // a Fail must throw
}

const json* JsonReader::find(const char* key) {
    m_known.emplace_back(key);
    auto it = m_j.find(key);
    return it == m_j.end() ? nullptr : &*it;
}

void JsonReader::finish() const {
    for (auto it = m_j.begin(); it != m_j.end(); ++it)
        if (std::find(m_known.begin(), m_known.end(), it.key()) == m_known.end()) {
            // The same message everywhere, raised through this reader's handler.
            m_fail(at(it.key()), "is not a known key");
            throw std::logic_error("JsonReader: the error handler returned");
        }
}

std::string JsonReader::string(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a string, got " + json_kind(v));
    return v.get<std::string>();
}

double JsonReader::number(const json& v, const std::string& path, double lo, double hi) const {
    if (!v.is_number()) fail(path, "expected a number, got " + json_kind(v));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) fail(path, "is out of range");
    return x;
}

int64_t JsonReader::integer(const json& v, const std::string& path, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) fail(path, "expected an integer, got " + json_kind(v));
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) fail(path, "is out of range");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(path, "is out of range");
    return x;
}

void JsonReader::get(const char* key, bool& out) {
    if (const json* v = find(key)) {
        if (!v->is_boolean()) fail(at(key), "expected true or false, got " + json_kind(*v));
        out = v->get<bool>();
    }
}

void JsonReader::get(const char* key, std::string& out) {
    if (const json* v = find(key)) out = string(*v, at(key));
}

void JsonReader::get(const char* key, double& out, double lo, double hi) {
    if (const json* v = find(key)) out = number(*v, at(key), lo, hi);
}

void JsonReader::get(const char* key, float& out, double lo, double hi) {
    if (const json* v = find(key)) out = static_cast<float>(number(*v, at(key), lo, hi));
}

void JsonReader::get(const char* key, int32_t& out, int64_t lo, int64_t hi) {
    if (const json* v = find(key))
        out = static_cast<int32_t>(
            integer(*v, at(key), std::max<int64_t>(lo, INT32_MIN), std::min<int64_t>(hi, INT32_MAX)));
}

void JsonReader::get(const char* key, int64_t& out, int64_t lo, int64_t hi) {
    if (const json* v = find(key)) out = integer(*v, at(key), lo, hi);
}

void JsonReader::get(const char* key, uint64_t& out) {
    if (const json* v = find(key)) {
        if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<int64_t>() < 0))
            fail(at(key), "expected a non-negative integer, got " + json_kind(*v));
        out = v->get<uint64_t>();
    }
}

void JsonReader::get(const char* key, std::vector<double>& out) {
    if (const json* v = find(key)) {
        if (!v->is_array()) fail(at(key), "expected an array of numbers, got " + json_kind(*v));
        std::vector<double> r;
        r.reserve(v->size());
        for (size_t i = 0; i < v->size(); ++i)
            r.push_back(number((*v)[i], json_path(at(key), i), -std::numeric_limits<double>::max(),
                               std::numeric_limits<double>::max()));
        out = std::move(r);
    }
}

void JsonReader::get(const char* key, std::vector<int32_t>& out, int64_t lo, int64_t hi) {
    if (const json* v = find(key)) {
        if (!v->is_array()) fail(at(key), "expected an array of integers, got " + json_kind(*v));
        std::vector<int32_t> r;
        r.reserve(v->size());
        for (size_t i = 0; i < v->size(); ++i)
            r.push_back(static_cast<int32_t>(integer((*v)[i], json_path(at(key), i), std::max<int64_t>(lo, INT32_MIN),
                                                     std::min<int64_t>(hi, INT32_MAX))));
        out = std::move(r);
    }
}

const json& JsonReader::need(const char* key) {
    const json* v = find(key);
    if (!v) fail(at(key), "missing");
    return *v;
}

void JsonReader::get(const char* key, std::vector<int64_t>& out, int64_t lo, int64_t hi) {
    if (const json* v = find(key)) {
        if (!v->is_array()) fail(at(key), "expected an array of integers, got " + json_kind(*v));
        std::vector<int64_t> r;
        r.reserve(v->size());
        for (size_t i = 0; i < v->size(); ++i) r.push_back(integer((*v)[i], json_path(at(key), i), lo, hi));
        out = std::move(r);
    }
}

}  // namespace speculum

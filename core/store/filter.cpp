// Parsing and SQL compilation of result filters (see filter.h).
#include "core/store/filter.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace speculum::store {

namespace {

const std::vector<std::string>& text_columns() {
    static const std::vector<std::string> cols = {"task",        "status",     "sweep",
                                                  "config_hash", "model_hash", "dataset_hash"};
    return cols;
}

const std::vector<std::string>& extra_numeric_columns() {
    static const std::vector<std::string> cols = {"objective", "prompts", "wall_s"};
    return cols;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t");
    size_t e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

bool parse_number(const std::string& s, double& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    out       = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size();
}

std::string known_fields() {
    std::string s;
    for (const auto& c : metric_columns()) s += c + ", ";
    for (const auto& c : extra_numeric_columns()) s += c + ", ";
    for (const auto& c : text_columns()) s += c + ", ";
    return s + "or a JSON pointer such as /k";
}

}  // namespace

Filter parse_filter(const std::string& clause) {
    // The first operator character splits field and value; two-character operators are tried first.
    static const char* ops[] = {"<=", ">=", "!=", "<", ">", "="};
    size_t pos               = clause.find_first_of("<>=!");
    if (pos == std::string::npos)
        throw std::invalid_argument("filter '" + clause + "': expected field<op>value with op one of = != < <= > >=");
    Filter f;
    f.field = trim(clause.substr(0, pos));
    for (const char* op : ops) {
        if (clause.compare(pos, std::char_traits<char>::length(op), op) == 0) {
            f.op    = op;
            f.value = trim(clause.substr(pos + f.op.size()));
            break;
        }
    }
    if (f.op.empty()) throw std::invalid_argument("filter '" + clause + "': unknown operator");
    if (f.field.empty()) throw std::invalid_argument("filter '" + clause + "': missing field name");
    if (f.value.empty()) throw std::invalid_argument("filter '" + clause + "': missing value");
    std::vector<SqlValue> ignored;
    filter_sql(f, ignored);  // validates the field and the value's type
    return f;
}

std::vector<Filter> parse_filters(const std::string& text) {
    std::vector<Filter> out;
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma      = text.find(',', start);
        std::string piece = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!piece.empty()) out.push_back(parse_filter(piece));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

std::string json_pointer_to_sqlite_path(const std::string& pointer) {
    if (pointer.empty() || pointer[0] != '/')
        throw std::invalid_argument("'" + pointer + "' is not a JSON pointer (must start with '/')");
    std::string path = "$";
    size_t start     = 1;
    while (true) {
        size_t slash      = pointer.find('/', start);
        std::string token = pointer.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        std::string key;
        for (size_t i = 0; i < token.size(); ++i) {  // RFC 6901 escapes
            if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
                key += token[i + 1] == '0' ? '~' : '/';
                ++i;
            } else {
                key += token[i];
            }
        }
        if (key.find('"') != std::string::npos)
            throw std::invalid_argument("JSON pointer '" + pointer + "': keys with '\"' are not supported");
        bool index = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) { return std::isdigit(c); });
        path += index ? "[" + key + "]" : ".\"" + key + "\"";
        if (slash == std::string::npos) break;
        start = slash + 1;
    }
    return path;
}

std::string filter_sql(const Filter& f, std::vector<SqlValue>& binds) {
    static const char* ops[] = {"=", "!=", "<", "<=", ">", ">="};
    if (std::find_if(std::begin(ops), std::end(ops), [&](const char* o) { return f.op == o; }) == std::end(ops))
        throw std::invalid_argument("filter on '" + f.field + "': unknown operator '" + f.op + "'");
    double number = 0;
    bool numeric  = parse_number(f.value, number);
    std::string expr;
    if (contains(metric_columns(), f.field) || contains(extra_numeric_columns(), f.field)) {
        if (!numeric) throw std::invalid_argument("filter on '" + f.field + "': '" + f.value + "' is not a number");
        expr = f.field;
        binds.emplace_back(number);
    } else if (contains(text_columns(), f.field)) {
        expr = f.field;
        binds.emplace_back(f.value);
    } else if (!f.field.empty() && f.field[0] == '/') {
        expr = "json_extract(config_json, '" + json_pointer_to_sqlite_path(f.field) + "')";
        if (f.value == "true" || f.value == "false")
            binds.emplace_back(f.value == "true" ? 1.0 : 0.0);  // json_extract gives 1/0 for booleans
        else if (numeric)
            binds.emplace_back(number);
        else if (f.value.size() >= 2 && f.value.front() == '"' && f.value.back() == '"')
            binds.emplace_back(f.value.substr(1, f.value.size() - 2));
        else
            binds.emplace_back(f.value);
    } else {
        throw std::invalid_argument("filter: unknown field '" + f.field + "' (known: " + known_fields() + ")");
    }
    return "(" + expr + " " + f.op + " ?)";
}

}  // namespace speculum::store

// The strict reader of every JSON object from outside (configs, draft and sweep specs, hardware profiles, manifests,
// predict inputs, run reports, store rows, app settings): one message for a key no reader knows, typed values with
// ranges, enums from name tables, and errors that name the path ("spec.levels[1].prune.ratio: ...").
//
//     JsonReader r(j, "spec.context");          // throws "spec.context: expected a JSON object, got array"
//     r.get("n_ctx", cfg.n_ctx, 0, 1 << 20);    // absent: unchanged; wrong type or out of range: an error naming it
//     r.get_enum("rollback", cfg.rollback, kRollbackNames);   // {{"snapshot", Rollback::snapshot}, ...}
//     if (const nlohmann::json* t = r.sub("tree")) read_tree(*t, r.at("tree"));
//     r.finish();                               // "spec.context.n_ctxx: is not a known key"
//
// Parsing the text itself (depth limits, NUL bytes) is json_input.h's job.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace speculum {

// "WHERE.KEY", or KEY alone at the top level (WHERE empty).
std::string json_path(const std::string& where, std::string_view key);
// "WHERE[I]".
std::string json_path(const std::string& where, size_t index);
// Throws std::invalid_argument "PATH: WHAT" (the reader's default error).
[[noreturn]] void throw_json_error(const std::string& path, const std::string& what);
// "an integer", "a fractional number", else the type's name ("string", "array", ...): how errors name a value.
std::string json_kind(const nlohmann::json& v);

class JsonReader {
public:
    // How an error is raised: (path, what). Must throw. The analytic readers raise analytic::InvalidInput.
    using Fail = void (*)(const std::string& path, const std::string& what);

    JsonReader(const nlohmann::json& j, std::string where, Fail fail = &throw_json_error);

    // Optional keys: an absent key leaves `out` as it is (its default).
    void get(const char* key, bool& out);
    void get(const char* key, std::string& out);
    void get(const char* key, double& out, double lo = -std::numeric_limits<double>::infinity(),
             double hi = std::numeric_limits<double>::infinity());
    void get(const char* key, float& out, double lo = -std::numeric_limits<double>::infinity(),
             double hi = std::numeric_limits<double>::infinity());
    void get(const char* key, int32_t& out, int64_t lo = INT32_MIN, int64_t hi = INT32_MAX);
    void get(const char* key, int64_t& out, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);
    void get(const char* key, uint64_t& out);
    void get(const char* key, std::vector<double>& out);
    void get(const char* key, std::vector<int32_t>& out, int64_t lo = INT32_MIN, int64_t hi = INT32_MAX);
    void get(const char* key, std::vector<int64_t>& out, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);
    // An enum by name from a table of (name, value) pairs (an array, a span); an unknown name lists the names.
    template <class E, class Names>
    void get_enum(const char* key, E& out, const Names& names) {
        const nlohmann::json* v = find(key);
        if (!v) return;
        const std::string s = string(*v, at(key));
        for (const auto& [n, e] : names)
            if (s == n) {
                out = e;
                return;
            }
        std::string list;
        for (const auto& [n, e] : names) list += (list.empty() ? "\"" : ", \"") + std::string(n) + "\"";
        m_fail(at(key), "\"" + s + "\" is not one of " + list);
        throw std::logic_error("JsonReader: the error handler returned");
    }
    // A key that must be there: its value (marks the key known), else an error "PATH: missing".
    const nlohmann::json& need(const char* key);
    // A nested value the caller reads itself (marks the key known); nullptr when absent.
    const nlohmann::json* sub(const char* key) { return find(key); }
    bool has(const char* key) const { return m_j.contains(key); }
    // A key that is allowed and skipped (written for readers, recomputed on load).
    void ignore(const char* key) { m_known.emplace_back(key); }
    // Throws for the first key that no get/sub/ignore named.
    void finish() const;

    std::string at(std::string_view key) const { return json_path(m_where, key); }
    const std::string& where() const { return m_where; }
    [[noreturn]] void fail(const std::string& path, const std::string& what) const;

    // Typed values at a path (also for array elements).
    std::string string(const nlohmann::json& v, const std::string& path) const;
    double number(const nlohmann::json& v, const std::string& path, double lo, double hi) const;
    int64_t integer(const nlohmann::json& v, const std::string& path, int64_t lo, int64_t hi) const;

private:
    const nlohmann::json* find(const char* key);

    const nlohmann::json& m_j;
    std::string m_where;
    Fail m_fail;
    std::vector<std::string_view> m_known;
};

}  // namespace speculum

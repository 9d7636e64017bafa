// Crash-safe result store for sweeps: one SQLite (WAL) row per (configuration hash, model hash, dataset hash)
// with the configuration, every statistic and prediction as JSON plus indexed scalar columns. Each row commits
// in its own transaction, so a killed sweep loses only the configurations in flight. A file that is not our
// database (corrupt, foreign, newer schema) is refused with a clear error and never modified.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace speculum::store {

constexpr int kSchemaVersion     = 1;           // PRAGMA user_version and meta.version
constexpr int32_t kApplicationId = 0x5350454d;  // PRAGMA application_id: "SPEM"

struct StoreError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The scalar columns a row may set (names as in ResultRow::metrics, SQL columns of the same name):
// speedup (measured, target-only time / speculative time), predicted_speedup (modeled), accepted_length
// (tokens per target verification), bpt (GB moved per token), j (Cassandra J), draft_bytes (draft memory,
// bytes), quality (lossy modes: agreement with the target, 1 = lossless), memory_gb (resident weights + KV).
const std::vector<std::string>& metric_columns();

struct ResultKey {
    std::string config_hash;   // json_hash of the configuration
    std::string model_hash;    // identity of the model(s) the evaluator ran (or of the analytic model)
    std::string dataset_hash;  // identity of the dataset/task and the prompt subset (fidelity)
    bool operator==(const ResultKey&) const = default;
};

struct ResultRow {
    ResultKey key;
    std::string sweep;            // name of the sweep that first produced the row
    std::string task;             // task or dataset label for best-per-task summaries ("" = none)
    std::string status = "done";  // "done" or "failed" (cancelled configurations are never stored)
    std::string message;          // failed: why
    nlohmann::json config      = nlohmann::json::object();
    nlohmann::json stats       = nlohmann::json::object();  // measured statistics (engine report), {} if none
    nlohmann::json predictions = nlohmann::json::object();  // analytic predictions, {} if none
    std::map<std::string, double> metrics;                  // subset of metric_columns()
    std::optional<double> objective;                        // the sweep objective's value (higher is better)
    int prompts   = 0;                                      // prompts evaluated (0 = not prompt-based)
    double wall_s = 0;                                      // evaluation time, seconds
    std::string created_at;                                 // UTC ISO-8601, set by the store

    std::optional<double> metric(const std::string& name) const;
};

// One `field<op>value` clause; see parse_filter in filter.h.
struct Filter {
    std::string field;  // a column name, or a JSON pointer into the configuration ("/levels/0/prune/ratio")
    std::string op;     // = != < <= > >=
    std::string value;
};

class ResultStore {
public:
    enum class Mode { read_write, read_only };

    // read_write creates the file if it is absent or empty; read_only requires an existing store. Throws
    // StoreError naming the file for: not a SQLite file, corrupt, a foreign SQLite database, a newer schema.
    static std::unique_ptr<ResultStore> open(const std::filesystem::path& file, Mode mode);
    ~ResultStore();
    ResultStore(const ResultStore&)            = delete;
    ResultStore& operator=(const ResultStore&) = delete;

    bool contains(const ResultKey& key) const;
    std::optional<ResultRow> find(const ResultKey& key) const;
    // find() for many keys in one read transaction (one answer per key, in order).
    std::vector<std::optional<ResultRow>> find_many(const std::vector<ResultKey>& keys) const;
    // Inserts or replaces one row in its own transaction (durable against a process kill once it returns).
    void put(const ResultRow& row);
    // Inserts or replaces the rows in ONE transaction: all of them are durable once it returns, none if it throws.
    // Far cheaper per row than put() for many small rows (one WAL commit instead of one each).
    void put_many(const std::vector<ResultRow>& rows);
    // Rows matching every filter, ordered by objective (best first, nulls last) then config hash.
    std::vector<ResultRow> query(const std::vector<Filter>& filters = {}) const;
    // query() one row at a time, in the same order, without holding the rows (a 300,000-row store took 4.8 GB
    // through query()). `fn` returns false to stop; it must not call this store (its lock is held).
    void for_each(const std::vector<Filter>& filters, const std::function<bool(ResultRow&&)>& fn) const;
    // Rows matching every filter.
    size_t count(const std::vector<Filter>& filters = {}) const;
    const std::filesystem::path& file() const { return m_file; }

private:
    ResultStore(std::filesystem::path file, sqlite3* db, bool read_only);
    void check_writable_locked(const ResultRow& row) const;
    void insert_locked(const ResultRow& row);
    std::optional<ResultRow> find_locked(const ResultKey& key) const;
    std::filesystem::path m_file;
    sqlite3* m_db               = nullptr;
    bool m_read_only            = false;
    std::string m_read_only_why = "opened read-only";  // what a write is told
    mutable std::mutex m_mutex;  // one connection shared by the sweep's worker threads; guards the statements too
    // Statements prepared once per connection (preparing cost more than the insert itself for small rows).
    mutable sqlite3_stmt* m_insert = nullptr;
    mutable sqlite3_stmt* m_find   = nullptr;
};

}  // namespace speculum::store

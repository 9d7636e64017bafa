// ResultStore on SQLite: the file checks run on a read-only connection before anything may write, so a foreign
// or damaged file is never touched; writes use WAL with synchronous=NORMAL (durable across a process kill).
#include "core/store/result_store.h"

#include "core/json_input.h"
#include "core/store/filter.h"

#include <sqlite3.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

namespace speculum::store {

namespace fs = std::filesystem;

const std::vector<std::string>& metric_columns() {
    static const std::vector<std::string> cols = {"speedup", "predicted_speedup", "accepted_length", "bpt",
                                                  "j",       "draft_bytes",       "quality",         "memory_gb"};
    return cols;
}

std::optional<double> ResultRow::metric(const std::string& name) const {
    if (name == "objective") return objective;
    auto it = metrics.find(name);
    if (it == metrics.end()) return std::nullopt;
    return it->second;
}

// ---- small SQLite helpers ----

namespace {

constexpr int kBusyTimeoutMs = 10000;  // a reader and the writer share the file; WAL keeps waits short

class Stmt {
public:
    Stmt(sqlite3* db, const std::string& sql, const fs::path& file) : m_db(db), m_file(file) {
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &m_stmt, nullptr) != SQLITE_OK) fail("prepare");
    }
    // Uses a statement cached in `slot` (prepared on first use, kept by the owner); reset and unbound after use.
    Stmt(sqlite3* db, sqlite3_stmt*& slot, const std::string& sql, const fs::path& file)
        : m_db(db), m_owned(false), m_file(file) {
        if (!slot && sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &slot, nullptr) != SQLITE_OK)
            fail("prepare");
        m_stmt = slot;
    }
    ~Stmt() {
        if (m_owned) {
            sqlite3_finalize(m_stmt);
        } else {
            sqlite3_reset(m_stmt);
            sqlite3_clear_bindings(m_stmt);
        }
    }
    Stmt(const Stmt&)            = delete;
    Stmt& operator=(const Stmt&) = delete;

    void bind(int i, const std::string& s) { sqlite3_bind_text(m_stmt, i, s.c_str(), -1, SQLITE_TRANSIENT); }
    void bind(int i, double v) { sqlite3_bind_double(m_stmt, i, v); }
    void bind(int i, const std::optional<double>& v) {
        if (v)
            sqlite3_bind_double(m_stmt, i, *v);
        else
            sqlite3_bind_null(m_stmt, i);
    }
    bool step() {  // true = a row is available
        int rc = sqlite3_step(m_stmt);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        fail("step");
        return false;
    }
    std::string text(int col) const {
        const unsigned char* t = sqlite3_column_text(m_stmt, col);
        return t ? reinterpret_cast<const char*>(t) : "";
    }
    std::optional<double> real(int col) const {
        if (sqlite3_column_type(m_stmt, col) == SQLITE_NULL) return std::nullopt;
        return sqlite3_column_double(m_stmt, col);
    }
    int64_t integer(int col) const { return sqlite3_column_int64(m_stmt, col); }

private:
    [[noreturn]] void fail(const char* what) {
        throw StoreError(m_file.string() + ": SQLite " + what + " failed: " + sqlite3_errmsg(m_db));
    }
    sqlite3* m_db;
    sqlite3_stmt* m_stmt = nullptr;
    bool m_owned         = true;
    fs::path m_file;
};

// A lock another connection holds (SQLITE_BUSY / SQLITE_LOCKED), for the callers that retry.
struct StoreBusy : StoreError {
    using StoreError::StoreError;
};

void exec(sqlite3* db, const std::string& sql, const fs::path& file) {
    char* err = nullptr;
    if (const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err); rc != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errmsg(db);
        sqlite3_free(err);
        if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) throw StoreBusy(file.string() + ": " + msg);
        throw StoreError(file.string() + ": " + msg);
    }
}

bool on_read_only_fs(const fs::path& file) {
    struct statvfs vfs {};
    return ::statvfs(file.c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0;
}

sqlite3* open_connection(const fs::path& file, int flags) {
    sqlite3* db = nullptr;
    int rc      = SQLITE_OK;
    if (on_read_only_fs(file)) {
        // Nothing can change a file on a read-only file system: opened immutable, SQLite reads it without the
        // locks and the -shm index it could not create there (a WAL store whose -shm was removed on its last close
        // could not be read at all; a rollback-journal store could).
        std::string uri = "file:";
        for (char c : file.string()) {
            if (c == '%' || c == '?' || c == '#') {
                char esc[4];
                std::snprintf(esc, sizeof esc, "%%%02X", static_cast<unsigned char>(c));
                uri += esc;
            } else {
                uri += c;
            }
        }
        uri += "?immutable=1";
        rc = sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, nullptr);
    } else {
        rc = sqlite3_open_v2(file.c_str(), &db, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
    }
    if (rc != SQLITE_OK) {
        std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        sqlite3_close(db);
        throw StoreError(file.string() + ": cannot open: " + msg);
    }
    sqlite3_busy_timeout(db, kBusyTimeoutMs);
    return db;
}

const char* kCreateSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE results(
    config_hash TEXT NOT NULL, model_hash TEXT NOT NULL, dataset_hash TEXT NOT NULL,
    sweep TEXT NOT NULL DEFAULT '', task TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
    config_json TEXT NOT NULL, stats_json TEXT NOT NULL, predictions_json TEXT NOT NULL,
    speedup REAL, predicted_speedup REAL, accepted_length REAL, bpt REAL, j REAL, draft_bytes REAL,
    quality REAL, memory_gb REAL, objective REAL,
    prompts INTEGER NOT NULL DEFAULT 0, wall_s REAL NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (config_hash, model_hash, dataset_hash));
CREATE INDEX results_task ON results(task);
CREATE INDEX results_speedup ON results(speedup);
CREATE INDEX results_predicted_speedup ON results(predicted_speedup);
CREATE INDEX results_objective ON results(objective);
)sql";

// Everything that decides whether we may use an existing store, asked on a connection to it. The file is never
// opened other than through SQLite: closing any other descriptor of it would drop every POSIX lock this process
// holds on it (SQLite's own connections included), and another process could then check-point or recover the WAL
// under a live writer (rows were lost when two processes opened a new store at once).
void check_schema(sqlite3* db, const fs::path& file) {
    auto pragma_int = [&](const char* pragma) {
        Stmt s(db, std::string("PRAGMA ") + pragma, file);
        return s.step() ? s.integer(0) : int64_t{0};
    };
    int64_t app_id = 0;
    try {
        app_id = pragma_int("application_id");
    } catch (const StoreError& e) {
        if (sqlite3_errcode(db) == SQLITE_NOTADB)
            throw StoreError(file.string() + ": not a SQLite database (bad header); refusing to use or overwrite it");
        throw StoreError(std::string(e.what()) + " (corrupt or unreadable; the file will not be modified)");
    }
    if (app_id != kApplicationId) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "0x%08llx", static_cast<unsigned long long>(app_id));
        throw StoreError(file.string() + ": a SQLite database that is not a Speculum result store (application_id " +
                         buf + "); refusing to modify it");
    }
    int64_t version = pragma_int("user_version");
    if (version > kSchemaVersion)
        throw StoreError(file.string() + ": result store schema v" + std::to_string(version) +
                         " is newer than this build's v" + std::to_string(kSchemaVersion) + "; upgrade Speculum");
    if (version < 1) throw StoreError(file.string() + ": result store without a schema version; refusing to modify it");
    Stmt check(db, "PRAGMA quick_check", file);
    std::string verdict = check.step() ? check.text(0) : "no answer";
    if (verdict != "ok")
        throw StoreError(file.string() + ": corrupt result store (quick_check: " + verdict +
                         "); it will not be modified");
}

// A process killed inside a write transaction in rollback-journal mode (the schema of a new store is made before
// the switch to WAL) leaves a hot journal; one killed in WAL mode may leave a WAL whose index must be rebuilt. A
// read-only connection can do neither (SQLITE_READONLY_ROLLBACK / _RECOVERY on its first read).
struct StoreNeedsRecovery : StoreError {
    using StoreError::StoreError;
};

bool needs_recovery(sqlite3* db) {
    const int ext = sqlite3_extended_errcode(db);
    return ext == SQLITE_READONLY_ROLLBACK || ext == SQLITE_READONLY_RECOVERY;
}

// check_schema on a read-only connection of its own, before the file is opened for writing.
void check_existing(const fs::path& file) {
    if (::access(file.c_str(), R_OK) != 0) throw StoreError(file.string() + ": cannot read");
    sqlite3* db = open_connection(file, SQLITE_OPEN_READONLY);
    try {
        try {
            check_schema(db, file);
        } catch (const StoreError& e) {
            if (needs_recovery(db)) throw StoreNeedsRecovery(e.what());
            throw;
        }
    } catch (...) {
        sqlite3_close(db);
        throw;
    }
    sqlite3_close(db);
}

// SQLite's own recovery of an interrupted transaction: the first read on a read-write connection rolls a hot
// journal back (or rebuilds the WAL index), which restores the last committed state and nothing else. Any SQLite
// client does this on open; we do it before the schema check, which then sees what was committed.
void recover(const fs::path& file) {
    if (::access(file.c_str(), W_OK) != 0)
        throw StoreError(file.string() +
                         ": holds an interrupted transaction that only a writable open can roll back, and the file "
                         "is not writable");
    sqlite3* db = open_connection(file, SQLITE_OPEN_READWRITE);
    try {
        Stmt s(db, "SELECT count(*) FROM sqlite_master", file);
        s.step();
    } catch (...) {
        sqlite3_close(db);
        throw;
    }
    sqlite3_close(db);
}

// The schema of a new store, made in one transaction under the write lock unless another process made it first
// (then that store is checked as any existing one).
void create_schema(sqlite3* db, const fs::path& file) {
    exec(db, "BEGIN IMMEDIATE;", file);
    bool made = false;
    try {
        {
            Stmt version(db, "PRAGMA user_version", file);
            made = version.step() && version.integer(0) != 0;
        }
        if (!made)
            exec(db,
                 "PRAGMA application_id=" + std::to_string(kApplicationId) +
                     "; PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";" + kCreateSchema +
                     "INSERT INTO meta VALUES('schema','speculum-results'),('version','" +
                     std::to_string(kSchemaVersion) + "');",
                 file);
        exec(db, "COMMIT;", file);
    } catch (...) {
        sqlite3_exec(db, "ROLLBACK;", nullptr, nullptr, nullptr);
        throw;
    }
    if (made) check_schema(db, file);
}

}  // namespace

// ---- ResultStore ----

ResultStore::ResultStore(fs::path file, sqlite3* db, bool read_only)
    : m_file(std::move(file)), m_db(db), m_read_only(read_only) {}

ResultStore::~ResultStore() {
    sqlite3_finalize(m_insert);
    sqlite3_finalize(m_find);
    sqlite3_close(m_db);
}

std::unique_ptr<ResultStore> ResultStore::open(const fs::path& file, Mode mode) {
    std::error_code ec;
    bool exists = fs::exists(file, ec);
    bool fresh  = !exists || fs::file_size(file, ec) == 0;
    if (exists && fs::is_directory(file, ec)) throw StoreError(file.string() + ": is a directory");
    if (!fresh) {
        try {
            check_existing(file);
        } catch (const StoreNeedsRecovery&) {
            recover(file);  // a new store whose schema transaction was killed rolls back to an empty file
            fresh = fs::file_size(file, ec) == 0;
            if (!fresh) check_existing(file);
        }
    }
    if (fresh && mode == Mode::read_only) throw StoreError(file.string() + ": no result store there");

    int flags   = mode == Mode::read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    sqlite3* db = open_connection(file, flags);
    std::unique_ptr<ResultStore> store(new ResultStore(file, db, mode == Mode::read_only));
    if (mode == Mode::read_write) {
        // Two processes may find the file fresh at once (two sweeps started on a new store): the schema is made
        // under the write lock, by whichever takes it first; the other then finds it made and checks it as any
        // existing store ("table meta already exists" failed the second sweep before). A lock upgrade that would
        // deadlock (two readers both wanting to write, or both switching to WAL) is refused by SQLite at once,
        // without the busy handler, so those steps are retried here until the busy timeout.
        const auto start = std::chrono::steady_clock::now();
        try {
            for (int attempt = 0;; ++attempt) {
                try {
                    if (fresh) create_schema(db, file);
                    exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", file);
                    break;
                } catch (const StoreBusy&) {
                    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(kBusyTimeoutMs)) throw;
                    std::this_thread::sleep_for(std::chrono::milliseconds(2 + (attempt * 7 + getpid()) % 13));
                    continue;
                } catch (const StoreError&) {
                    // An existing store on a read-only file system (or in a folder we may not write): what it holds
                    // is read as usual, so a sweep whose every cell is cached runs, whatever its journal mode (a WAL
                    // store already did and a rollback-journal one failed); storing a new result fails naming why.
                    if (fresh || !on_read_only_fs(file)) throw;
                    store->m_read_only     = true;
                    store->m_read_only_why = "on a read-only file system: new results cannot be stored";
                    break;
                }
            }
        } catch (...) {
            // A store this call created and could not make (a full disk): no empty file is left behind. One that
            // another process has written to by now is left alone.
            store.reset();
            if (!exists && fs::file_size(file, ec) == 0 && !ec) {
                fs::remove(file, ec);
                fs::remove(fs::path(file.string() + "-journal"), ec);
            }
            throw;
        }
    }
    return store;
}

bool ResultStore::contains(const ResultKey& key) const {
    std::lock_guard lock(m_mutex);
    Stmt s(m_db, "SELECT 1 FROM results WHERE config_hash=? AND model_hash=? AND dataset_hash=?", m_file);
    s.bind(1, key.config_hash);
    s.bind(2, key.model_hash);
    s.bind(3, key.dataset_hash);
    return s.step();
}

namespace {

const char* kSelectColumns =
    "SELECT config_hash, model_hash, dataset_hash, sweep, task, status, message, config_json, stats_json, "
    "predictions_json, objective, prompts, wall_s, created_at, speedup, predicted_speedup, accepted_length, bpt, "
    "j, draft_bytes, quality, memory_gb FROM results";
constexpr int kFirstMetricColumn = 14;

// A stored JSON column that does not parse names the store, the row and the column (StoreError).
ResultRow read_row(const Stmt& s, const fs::path& file) {
    ResultRow r;
    r.key             = {s.text(0), s.text(1), s.text(2)};
    const auto column = [&](int i, const char* name) {
        try {
            return parse_json(s.text(i), name);
        } catch (const std::invalid_argument& e) {
            throw StoreError(file.string() + ": the row of configuration " + r.key.config_hash + ": " + e.what());
        }
    };
    r.sweep       = s.text(3);
    r.task        = s.text(4);
    r.status      = s.text(5);
    r.message     = s.text(6);
    r.config      = column(7, "config_json");
    r.stats       = column(8, "stats_json");
    r.predictions = column(9, "predictions_json");
    r.objective   = s.real(10);
    r.prompts     = static_cast<int>(s.integer(11));
    r.wall_s      = s.real(12).value_or(0);
    r.created_at  = s.text(13);
    for (size_t i = 0; i < metric_columns().size(); ++i)
        if (auto v = s.real(kFirstMetricColumn + static_cast<int>(i))) r.metrics[metric_columns()[i]] = *v;
    return r;
}

}  // namespace

std::optional<ResultRow> ResultStore::find_locked(const ResultKey& key) const {
    Stmt s(m_db, m_find, std::string(kSelectColumns) + " WHERE config_hash=? AND model_hash=? AND dataset_hash=?",
           m_file);
    s.bind(1, key.config_hash);
    s.bind(2, key.model_hash);
    s.bind(3, key.dataset_hash);
    if (!s.step()) return std::nullopt;
    return read_row(s, m_file);
}

std::optional<ResultRow> ResultStore::find(const ResultKey& key) const {
    std::lock_guard lock(m_mutex);
    return find_locked(key);
}

std::vector<std::optional<ResultRow>> ResultStore::find_many(const std::vector<ResultKey>& keys) const {
    std::vector<std::optional<ResultRow>> out;
    out.reserve(keys.size());
    std::lock_guard lock(m_mutex);
    // One read transaction: one WAL snapshot and lock for all the lookups instead of one per key.
    exec(m_db, "BEGIN", m_file);
    try {
        for (const auto& k : keys) out.push_back(find_locked(k));
    } catch (...) {
        sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    exec(m_db, "COMMIT", m_file);
    return out;
}

void ResultStore::check_writable_locked(const ResultRow& row) const {
    if (m_read_only) throw StoreError(m_file.string() + ": " + m_read_only_why);
    for (const auto& [name, v] : row.metrics)
        if (std::find(metric_columns().begin(), metric_columns().end(), name) == metric_columns().end())
            throw StoreError("unknown metric column '" + name + "'");
}

void ResultStore::insert_locked(const ResultRow& row) {
    static const std::string sql = [] {
        std::string q =
            "INSERT OR REPLACE INTO results (config_hash, model_hash, dataset_hash, sweep, task, status, message, "
            "config_json, stats_json, predictions_json, objective, prompts, wall_s";
        for (const auto& c : metric_columns()) q += ", " + c;
        q += ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?";
        for (size_t i = 0; i < metric_columns().size(); ++i) q += ",?";
        return q + ")";
    }();
    Stmt s(m_db, m_insert, sql, m_file);
    s.bind(1, row.key.config_hash);
    s.bind(2, row.key.model_hash);
    s.bind(3, row.key.dataset_hash);
    s.bind(4, row.sweep);
    s.bind(5, row.task);
    s.bind(6, row.status);
    s.bind(7, row.message);
    s.bind(8, row.config.dump());
    s.bind(9, row.stats.dump());
    s.bind(10, row.predictions.dump());
    s.bind(11, row.objective);
    s.bind(12, static_cast<double>(row.prompts));
    s.bind(13, row.wall_s);
    int i = 14;
    for (const auto& c : metric_columns()) s.bind(i++, row.metric(c));
    s.step();
}

void ResultStore::put(const ResultRow& row) {
    std::lock_guard lock(m_mutex);
    check_writable_locked(row);
    // A single statement outside BEGIN is its own transaction: committed (to the WAL) when step() returns.
    insert_locked(row);
}

void ResultStore::put_many(const std::vector<ResultRow>& rows) {
    if (rows.empty()) return;
    std::lock_guard lock(m_mutex);
    for (const auto& r : rows) check_writable_locked(r);
    exec(m_db, "BEGIN IMMEDIATE", m_file);
    try {
        for (const auto& r : rows) insert_locked(r);
        exec(m_db, "COMMIT", m_file);
    } catch (...) {
        sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

namespace {

// " WHERE a AND b" for the filters, with their bound values.
std::string where_clause(const std::vector<Filter>& filters, std::vector<SqlValue>& binds) {
    std::string where;
    for (const auto& f : filters) {
        std::string clause;
        try {
            clause = filter_sql(f, binds);
        } catch (const std::invalid_argument& e) {
            throw StoreError(e.what());
        }
        where += (where.empty() ? " WHERE " : " AND ") + clause;
    }
    return where;
}

void bind_all(Stmt& s, const std::vector<SqlValue>& binds) {
    for (size_t i = 0; i < binds.size(); ++i) {
        if (auto* d = std::get_if<double>(&binds[i]))
            s.bind(static_cast<int>(i) + 1, *d);
        else
            s.bind(static_cast<int>(i) + 1, std::get<std::string>(binds[i]));
    }
}

}  // namespace

void ResultStore::for_each(const std::vector<Filter>& filters, const std::function<bool(ResultRow&&)>& fn) const {
    std::vector<SqlValue> binds;
    const std::string where = where_clause(filters, binds);
    std::lock_guard lock(m_mutex);
    Stmt s(m_db, std::string(kSelectColumns) + where + " ORDER BY objective IS NULL, objective DESC, config_hash",
           m_file);
    bind_all(s, binds);
    while (s.step())
        if (!fn(read_row(s, m_file))) break;
}

std::vector<ResultRow> ResultStore::query(const std::vector<Filter>& filters) const {
    std::vector<ResultRow> rows;
    for_each(filters, [&](ResultRow&& r) {
        rows.push_back(std::move(r));
        return true;
    });
    return rows;
}

size_t ResultStore::count(const std::vector<Filter>& filters) const {
    std::vector<SqlValue> binds;
    const std::string where = where_clause(filters, binds);
    std::lock_guard lock(m_mutex);
    Stmt s(m_db, "SELECT count(*) FROM results" + where, m_file);
    bind_all(s, binds);
    return s.step() ? static_cast<size_t>(s.integer(0)) : 0;
}

}  // namespace speculum::store

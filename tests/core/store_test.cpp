// ResultStore: round trip and persistence, refusal (without modification) of corrupt, foreign and newer files,
// a reader querying while a writer commits, filters, hashes, Pareto frontier and best-per-task.
#include "core/store/filter.h"
#include "core/store/hash.h"
#include "core/store/result_store.h"
#include "core/store/summary.h"

#include "support/fresh_path.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using namespace speculum::store;
namespace fs = std::filesystem;

namespace {

fs::path fresh_path(const std::string& name) {
    return speculum::test::fresh_tmp_path("store_" + name + ".sqlite");
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

ResultRow make_row(int i, const std::string& task = "t") {
    ResultRow r;
    r.config                       = {{"k", i}, {"task", task}};
    r.key                          = {json_hash(r.config), "m", "d"};
    r.task                         = task;
    r.sweep                        = "s";
    r.metrics["predicted_speedup"] = 1.0 + i * 0.1;
    r.metrics["draft_bytes"]       = 1000.0 * (i % 5);
    r.objective                    = r.metrics["predicted_speedup"];
    r.predictions                  = {{"ewif", 1.0 + i * 0.1}};
    r.prompts                      = 3;
    return r;
}

void expect_refused_unchanged(const fs::path& p, const std::string& needle) {
    std::string before = slurp(p);
    for (auto mode : {ResultStore::Mode::read_write, ResultStore::Mode::read_only}) {
        try {
            ResultStore::open(p, mode);
            ADD_FAILURE() << "opened " << p;
        } catch (const StoreError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << "names the file: " << e.what();
        }
    }
    EXPECT_EQ(slurp(p), before) << "the file must not be modified";
}

}  // namespace

TEST(Hash, Fnv1aKnownValuesAndCanonicalJson) {
    EXPECT_EQ(hex64(fnv1a64("")), "cbf29ce484222325");
    EXPECT_EQ(hex64(fnv1a64("a")), "af63dc4c8601ec8c");
    EXPECT_EQ(json_hash(nlohmann::json::parse(R"({"b": 2, "a": [1, 0.5]})")),
              json_hash(nlohmann::json::parse(R"({"a":[1,0.5],"b":2})")));
    EXPECT_NE(json_hash({{"a", 1}}), json_hash({{"a", 2}}));
}

// A model's identity for the store: its content, with progress by the fraction read and a cancel between blocks
// (the app hashes a multi-GB model before a measured sweep).
TEST(Hash, FileHashFollowsTheContentReportsProgressAndCancels) {
    const fs::path p = fresh_path("hash_me.bin");
    std::ofstream(p, std::ios::binary) << std::string((3 << 20) + 5, 'x');
    std::vector<double> seen;
    const std::string h = file_hash(p, [&](double f, const std::string&) { seen.push_back(f); });
    EXPECT_EQ(h, file_hash(p));
    ASSERT_EQ(seen.size(), 4u) << "one report per 1 MiB block";
    EXPECT_DOUBLE_EQ(seen.back(), 1.0);
    std::ofstream(p, std::ios::binary | std::ios::app) << "y";
    EXPECT_NE(file_hash(p), h);
    speculum::CancelToken cancel;
    cancel.cancel();
    EXPECT_THROW((void)file_hash(p, {}, cancel), speculum::Cancelled);
}

TEST(Store, RoundTripAndPersistence) {
    fs::path p           = fresh_path("roundtrip");
    ResultRow r          = make_row(3);
    r.stats              = {{"n_accepted", 7}};
    r.metrics["speedup"] = 1.7;
    {
        auto s = ResultStore::open(p, ResultStore::Mode::read_write);
        EXPECT_FALSE(s->contains(r.key));
        s->put(r);
        EXPECT_TRUE(s->contains(r.key));
        s->put(r);  // same key: replaced, not duplicated
        EXPECT_EQ(s->count(), 1u);
    }
    auto s   = ResultStore::open(p, ResultStore::Mode::read_only);
    auto got = s->find(r.key);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->config, r.config);
    EXPECT_EQ(got->stats, r.stats);
    EXPECT_EQ(got->predictions, r.predictions);
    EXPECT_EQ(got->metrics, r.metrics);
    EXPECT_EQ(got->objective, r.objective);
    EXPECT_EQ(got->prompts, 3);
    EXPECT_FALSE(got->created_at.empty());
    EXPECT_THROW(s->put(r), StoreError);  // read-only
}

TEST(Store, RefusesAFileThatIsNotSqlite) {
    fs::path p = fresh_path("garbage");
    std::ofstream(p, std::ios::binary) << "this is a CSV file, not a database\n1,2,3\n";
    expect_refused_unchanged(p, "not a SQLite database");
}

TEST(Store, RefusesAForeignSqliteDatabase) {
    fs::path p  = fresh_path("foreign");
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE contacts(name TEXT); INSERT INTO contacts VALUES('x');", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    expect_refused_unchanged(p, "not a Speculum result store");
}

TEST(Store, RefusesANewerSchema) {
    fs::path p = fresh_path("newer");
    ResultStore::open(p, ResultStore::Mode::read_write)->put(make_row(1));
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    expect_refused_unchanged(p, "newer than this build");
}

TEST(Store, RefusesAByteCorruptedStore) {
    fs::path p = fresh_path("corrupt");
    {
        auto s = ResultStore::open(p, ResultStore::Mode::read_write);
        for (int i = 0; i < 200; ++i) s->put(make_row(i));
    }  // last connection closed: the WAL is checkpointed into the main file
    ASSERT_FALSE(fs::exists(p.string() + "-wal"));
    std::string bytes = slurp(p);
    ASSERT_GT(bytes.size(), 3 * 4096u);
    for (size_t i = 4096 + 16; i < bytes.size() && i < 3 * 4096; ++i) bytes[i] = static_cast<char>(0xA5);
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    expect_refused_unchanged(p, "corrupt");
}

TEST(Store, ReadOnlyNeedsAnExistingStore) {
    fs::path p = fresh_path("absent");
    EXPECT_THROW(ResultStore::open(p, ResultStore::Mode::read_only), StoreError);
    EXPECT_FALSE(fs::exists(p));
}

namespace {

// What a process killed inside a write transaction in rollback-journal mode leaves: the database file with some of
// the transaction's pages written and a hot journal beside it. `sql` runs in one transaction on `src` with a cache
// of one page, so pages spill to the file; the file and its journal are copied to `dst` mid-transaction, then the
// transaction is rolled back on `src`. The copy has no lock holder, so its journal is hot.
void make_interrupted_copy(const fs::path& src, const fs::path& dst, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(src.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=DELETE; PRAGMA cache_size=1; BEGIN IMMEDIATE;", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    ASSERT_TRUE(fs::exists(src.string() + "-journal"));
    fs::remove(dst.string() + "-journal");
    fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
    fs::copy_file(src.string() + "-journal", dst.string() + "-journal");
    ASSERT_EQ(sqlite3_exec(db, "ROLLBACK;", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    // The state the store must handle: a read-only connection cannot read it (it cannot roll the journal back).
    ASSERT_EQ(sqlite3_open_v2(dst.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    EXPECT_NE(sqlite3_exec(db, "PRAGMA user_version", nullptr, nullptr, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_extended_errcode(db), SQLITE_READONLY_ROLLBACK) << sqlite3_errmsg(db);
    sqlite3_close(db);
}

const char* kSpillSql =
    "CREATE TABLE junk(b BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 64) "
    "INSERT INTO junk SELECT randomblob(3000) FROM n;";

}  // namespace

// A sweep killed while it made the schema of a new store (CI caught it: the next sweep failed with "attempt to write
// a readonly database" from the read-only check): the next open rolls the journal back to the empty file and makes
// the store.
TEST(Store, ANewStoreWhoseSchemaTransactionWasKilledIsMadeOnTheNextOpen) {
    const fs::path src = fresh_path("hot_new_src"), p = fresh_path("hot_new");
    make_interrupted_copy(src, p, std::string("PRAGMA user_version=1;") + kSpillSql);
    ASSERT_GT(fs::file_size(p), 0u) << "pages of the transaction reached the file";
    for (auto mode : {ResultStore::Mode::read_only, ResultStore::Mode::read_write}) {
        SCOPED_TRACE(mode == ResultStore::Mode::read_only ? "read-only" : "read-write");
        try {
            auto s = ResultStore::open(p, mode);
            ASSERT_EQ(mode, ResultStore::Mode::read_write) << "read-only opened a store that was never made";
            s->put(make_row(1));
            EXPECT_EQ(s->count(), 1u);
        } catch (const StoreError& e) {
            EXPECT_EQ(mode, ResultStore::Mode::read_only) << e.what();
            EXPECT_NE(std::string(e.what()).find("no result store there"), std::string::npos) << e.what();
        }
    }
    EXPECT_FALSE(fs::exists(p.string() + "-journal"));
}

// The same on a store with rows (a store switched to rollback-journal mode by another SQLite client): the
// interrupted transaction is rolled back, and every committed row is there, for a reader as for a writer.
TEST(Store, AnInterruptedTransactionOnAStoreRollsBackToItsCommittedRows) {
    const fs::path src = fresh_path("hot_rows_src");
    {
        auto s = ResultStore::open(src, ResultStore::Mode::read_write);
        for (int i = 0; i < 5; ++i) s->put(make_row(i));
    }
    for (auto mode : {ResultStore::Mode::read_only, ResultStore::Mode::read_write}) {
        const fs::path p = fresh_path(mode == ResultStore::Mode::read_only ? "hot_rows_ro" : "hot_rows_rw");
        make_interrupted_copy(src, p, std::string("DELETE FROM results;") + kSpillSql);
        auto s = ResultStore::open(p, mode);
        EXPECT_EQ(s->count(), 5u);
        for (int i = 0; i < 5; ++i) {
            auto got = s->find(make_row(i).key);
            ASSERT_TRUE(got.has_value()) << i;
            EXPECT_EQ(got->config, make_row(i).config);
        }
        EXPECT_FALSE(fs::exists(p.string() + "-journal"));
    }
}

// Issue #27, item 5: processes that open one new store at the same moment (two sweeps started together) all get
// the store; one of two failed with "table meta already exists". Children are released together by one pipe.
TEST(Store, ProcessesCreatingOneNewStoreAtOnceAllSucceed) {
    constexpr int kProcesses = 4, kRounds = 12;
    for (int round = 0; round < kRounds; ++round) {
        const fs::path p = fresh_path("race_" + std::to_string(round));
        int gate[2], report[2];
        ASSERT_EQ(pipe(gate), 0);
        ASSERT_EQ(pipe(report), 0);
        std::vector<pid_t> children;
        for (int i = 0; i < kProcesses; ++i) {
            const pid_t pid = fork();
            ASSERT_GE(pid, 0);
            if (pid == 0) {  // the child: wait for the gate, open, write one row, report any error
                close(gate[1]);
                char c = 0;
                (void)!read(gate[0], &c, 1);
                std::string error;
                try {
                    auto store = ResultStore::open(p, ResultStore::Mode::read_write);
                    store->put(make_row(i));
                } catch (const std::exception& e) {
                    error = std::string(e.what()) + "\n";
                }
                if (!error.empty()) (void)!write(report[1], error.data(), error.size());
                _exit(error.empty() ? 0 : 1);
            }
            children.push_back(pid);
        }
        close(gate[0]);
        close(report[1]);
        close(gate[1]);  // every child's read returns now
        int failed = 0;
        for (pid_t pid : children) {
            int status = 0;
            waitpid(pid, &status, 0);
            failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        std::string errors;
        char buf[512];
        for (ssize_t n; (n = read(report[0], buf, sizeof buf)) > 0;) errors.append(buf, size_t(n));
        close(report[0]);
        ASSERT_EQ(failed, 0) << "round " << round << ": " << errors;
        EXPECT_EQ(ResultStore::open(p, ResultStore::Mode::read_only)->count(), size_t(kProcesses));
    }
}

TEST(Store, ReaderQueriesWhileAWriterCommits) {
    fs::path p          = fresh_path("concurrent");
    auto writer         = ResultStore::open(p, ResultStore::Mode::read_write);
    auto reader         = ResultStore::open(p, ResultStore::Mode::read_only);
    constexpr int kRows = 300;
    std::atomic<bool> done{false};
    std::thread w([&] {
        for (int i = 0; i < kRows; ++i) writer->put(make_row(i));
        done = true;
    });
    size_t last = 0, reads = 0;
    std::string error;
    while (!done || last < kRows) {
        try {
            size_t n = reader->count();
            EXPECT_GE(n, last) << "committed rows never disappear";
            auto rows = reader->query({parse_filter("predicted_speedup>=1")});
            EXPECT_GE(rows.size(), n);  // rows committed before the count are visible to the later query
            last = n;
            ++reads;
        } catch (const std::exception& e) {
            error = e.what();
            break;
        }
    }
    w.join();
    EXPECT_EQ(error, "");
    EXPECT_EQ(reader->count(), static_cast<size_t>(kRows));
    EXPECT_GT(reads, 1u);
}

TEST(Store, Filters) {
    fs::path p = fresh_path("filters");
    auto s     = ResultStore::open(p, ResultStore::Mode::read_write);
    for (int i = 0; i < 10; ++i) s->put(make_row(i, i < 5 ? "code" : "chat"));
    EXPECT_EQ(s->query().size(), 10u);
    EXPECT_EQ(s->query(parse_filters("predicted_speedup>1.45")).size(), 5u);  // 1.5 .. 1.9
    EXPECT_EQ(s->query(parse_filters("task=code, /k<=1")).size(), 2u);
    EXPECT_EQ(s->query(parse_filters("/task=\"chat\"")).size(), 5u);
    EXPECT_EQ(s->query(parse_filters("status!=done")).size(), 0u);
    auto all = s->query();
    EXPECT_EQ(all.front().config["k"], 9);  // best objective first
    EXPECT_THROW(parse_filter("speedup"), std::invalid_argument);
    EXPECT_THROW(parse_filter("speed>1"), std::invalid_argument);
    EXPECT_THROW(parse_filter("speedup>fast"), std::invalid_argument);
    EXPECT_THROW(parse_filter("bpt<"), std::invalid_argument);
    EXPECT_EQ(json_pointer_to_sqlite_path("/levels/0/prune/ratio"), "$.\"levels\"[0].\"prune\".\"ratio\"");
    EXPECT_EQ(json_pointer_to_sqlite_path("/a~1b/c~0"), "$.\"a/b\".\"c~\"");
}

TEST(Summary, ParetoFrontAndBestPerTask) {
    auto row = [](double bytes, double speedup, const std::string& task) {
        ResultRow r;
        r.config                       = {{"b", bytes}, {"s", speedup}};
        r.task                         = task;
        r.metrics["draft_bytes"]       = bytes;
        r.metrics["predicted_speedup"] = speedup;
        r.objective                    = speedup;
        return r;
    };
    std::vector<ResultRow> rows = {row(100, 1.5, "a"), row(200, 1.4, "a"),  // dominated by (100, 1.5)
                                   row(300, 2.0, "b"), row(50, 1.1, "b"),
                                   row(300, 1.9, "b"), row(400, 2.0, "a")};  // dominated: same speed, more memory
    ResultRow failed            = row(10, 9.0, "a");
    failed.status               = "failed";
    rows.push_back(failed);
    auto front = pareto_front(rows, {"draft_bytes", false}, {"predicted_speedup", true});
    ASSERT_EQ(front.size(), 3u);
    EXPECT_EQ(front[0].metrics["draft_bytes"], 50);
    EXPECT_EQ(front[1].metrics["draft_bytes"], 100);
    EXPECT_EQ(front[2].metrics["draft_bytes"], 300);
    EXPECT_EQ(front[2].metrics["predicted_speedup"], 2.0);
    auto best = best_per_task(rows);
    ASSERT_EQ(best.size(), 2u);
    EXPECT_EQ(best["a"].metrics["draft_bytes"], 400);
    EXPECT_EQ(best["b"].metrics["draft_bytes"], 300);
    EXPECT_EQ(speedup_metric(rows), "predicted_speedup");
}

// Issue #27, item 6: results streams the store; the incremental front equals the front of every row at once, across
// many cuts (5,000 rows, cut at 1,024 candidates), duplicates included, and so does the streamed query.
TEST(Summary, TheIncrementalFrontEqualsTheFrontOfAllRows) {
    std::mt19937 rng(6);
    std::vector<ResultRow> rows;
    for (int i = 0; i < 5000; ++i) {
        ResultRow r;
        r.key.config_hash = std::to_string(i).insert(0, 1, 'h');  // not "h" + ...: GCC 12 -Wrestrict
        r.task.assign(1, i % 3 ? 'a' : 'b');
        r.metrics["draft_bytes"]       = double(std::uniform_int_distribution<int>(1, 400)(rng));
        r.metrics["predicted_speedup"] = double(std::uniform_int_distribution<int>(100, 300)(rng)) / 100.0;
        r.objective                    = r.metrics["predicted_speedup"];
        if (i % 97 == 0) r.status = "failed";
        rows.push_back(r);
        if (i % 500 == 0) rows.push_back(r);  // exact duplicates are all kept
    }
    ParetoBuilder builder({"draft_bytes", false}, {"predicted_speedup", true});
    for (const auto& r : rows) builder.add(r);
    const auto expect = pareto_front(rows, {"draft_bytes", false}, {"predicted_speedup", true});
    const auto got    = builder.front();
    ASSERT_EQ(got.size(), expect.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].key.config_hash, expect[i].key.config_hash) << i;
    BestPerTask best;
    for (const auto& r : rows) best.add(r);
    EXPECT_EQ(best.best().at("a").key.config_hash, best_per_task(rows).at("a").key.config_hash);

    // The store streams the rows query() returns, in its order, and stops when asked.
    const fs::path p = fresh_path("stream");
    auto store       = ResultStore::open(p, ResultStore::Mode::read_write);
    std::vector<ResultRow> some(rows.begin(), rows.begin() + 300);
    for (auto& r : some) r.key.model_hash = "m", r.key.dataset_hash = "d", r.config = {{"i", r.key.config_hash}};
    store->put_many(some);
    const auto all = store->query();
    size_t seen    = 0;
    store->for_each({}, [&](ResultRow&& r) {
        EXPECT_EQ(r.key, all[seen].key);
        return ++seen < 100;
    });
    EXPECT_EQ(seen, 100u);
    EXPECT_EQ(store->count({parse_filter("task=b")}), store->query({parse_filter("task=b")}).size());
}

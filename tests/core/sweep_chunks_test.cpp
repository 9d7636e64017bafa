// The sweep runner's chunked commits and the store calls behind them: put_many (one transaction, all or nothing),
// find_many (one answer per key, in order), every reported row already visible to another connection, chunked
// parallel runs equal to serial ones, and the allocator tuning the pool applies.
#include "core/jobs/allocator_tuning.h"
#include "core/jobs/job_system.h"
#include "core/parallel.h"
#include "core/store/hash.h"
#include "core/store/result_store.h"
#include "core/sweep/predict_evaluator.h"
#include "core/sweep/sweep_runner.h"

#include "support/fresh_path.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>

using namespace speculum;
using namespace speculum::sweep;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path fresh_db(const std::string& name) {
    return speculum::test::fresh_tmp_path("chunks_" + name + ".sqlite");
}

store::ResultRow row_for(int i) {
    store::ResultRow r;
    r.config                       = {{"k", i}};
    r.key                          = {store::json_hash(r.config), "m", "d"};
    r.metrics["predicted_speedup"] = 1.0 + i;
    return r;
}

// 8 x 6 x 4 = 192 analytic configurations: tens of microseconds each, so the runner groups them in chunks.
SweepSpec tiny_spec() {
    return sweep_spec_from_json(json::parse(R"({"name": "tiny", "base": {"alpha": 0.8, "k": 4, "c": 0.05},
        "axes": [{"path": "/k", "range": {"from": 1, "to": 8, "step": 1}},
                 {"path": "/alpha", "values": [0.5, 0.6, 0.7, 0.8, 0.9, 0.95]},
                 {"path": "/c", "values": [0.01, 0.05, 0.1, 0.2]}],
        "objective": {"metric": "predicted_speedup"}})"));
}

}  // namespace

TEST(StoreBatch, PutManyIsOneAllOrNothingTransactionAndFindManyAnswersInOrder) {
    auto db    = fresh_db("put_many");
    auto store = store::ResultStore::open(db, store::ResultStore::Mode::read_write);
    std::vector<store::ResultRow> rows;
    for (int i = 0; i < 50; ++i) rows.push_back(row_for(i));
    store->put_many(rows);
    auto reader = store::ResultStore::open(db, store::ResultStore::Mode::read_only);  // another connection
    EXPECT_EQ(reader->count(), 50u);

    std::vector<store::ResultKey> keys = {rows[7].key, row_for(999).key, rows[0].key};
    auto found                         = reader->find_many(keys);
    ASSERT_EQ(found.size(), 3u);
    ASSERT_TRUE(found[0] && found[2]);
    EXPECT_FALSE(found[1]);
    EXPECT_EQ(found[0]->key, rows[7].key);
    EXPECT_EQ(found[2]->metrics.at("predicted_speedup"), 1.0);
    EXPECT_TRUE(reader->find_many({}).empty());

    // One bad row: nothing of the batch is stored, and the store stays usable.
    std::vector<store::ResultRow> bad = {row_for(100), row_for(101)};
    bad[1].metrics["colour"]          = 1;
    EXPECT_THROW(store->put_many(bad), store::StoreError);
    EXPECT_EQ(reader->count(), 50u);
    EXPECT_FALSE(reader->find(bad[0].key));
    store->put(row_for(100));
    EXPECT_EQ(reader->count(), 51u);
    EXPECT_THROW(reader->put_many({row_for(5)}), store::StoreError);  // read-only
}

TEST(SweepChunks, EveryReportedRowIsAlreadyCommitted) {
    SweepSpec spec = tiny_spec();
    auto db        = fresh_db("committed");
    auto store     = store::ResultStore::open(db, store::ResultStore::Mode::read_write);
    auto reader    = store::ResultStore::open(db, store::ResultStore::Mode::read_only);
    PredictEvaluator ev(test::source_dir() / "resources");
    std::mutex mutex;
    size_t events = 0, missing = 0;
    jobs::JobSystem js;  // cores - 1 threads
    auto id = js.submit("sweep", [&](jobs::JobContext& ctx) -> std::any {
        return run_sweep(spec, ev, *store, ctx.token(), ctx.progress_fn(), [&](const SweepEvent& e) {
            bool visible = reader->find(e.row.key).has_value();  // a separate connection sees only commits
            std::lock_guard lock(mutex);
            ++events;
            missing += visible ? 0 : 1;
        });
    });
    ASSERT_TRUE(js.wait(id, std::chrono::seconds(60)));
    auto msgs = js.drain();
    ASSERT_EQ(msgs.back().status, jobs::JobStatus::done) << msgs.back().error;
    EXPECT_EQ(events, 192u);
    EXPECT_EQ(missing, 0u);
    EXPECT_EQ(reader->count(), 192u);
}

TEST(SweepChunks, ChunkedParallelRunEqualsTheSerialRunAndCancelsPromptly) {
    SweepSpec spec = tiny_spec();
    PredictEvaluator ev(test::source_dir() / "resources");
    auto serial_db = store::ResultStore::open(fresh_db("serial"), store::ResultStore::Mode::read_write);
    set_serial_mode(true);
    SweepSummary a = run_sweep(spec, ev, *serial_db, CancelToken());
    set_serial_mode(false);
    auto pool_db = store::ResultStore::open(fresh_db("pool"), store::ResultStore::Mode::read_write);
    jobs::JobSystem js;  // cores - 1 threads
    auto id = js.submit("sweep",
                        [&](jobs::JobContext& ctx) -> std::any { return run_sweep(spec, ev, *pool_db, ctx.token()); });
    ASSERT_TRUE(js.wait(id, std::chrono::seconds(60)));
    SweepSummary b = std::any_cast<SweepSummary>(js.drain().back().payload);
    EXPECT_EQ(a.evaluated, 192u);
    EXPECT_EQ(b.evaluated, 192u);
    EXPECT_EQ(a.best->key, b.best->key);
    auto ra = serial_db->query(), rb = pool_db->query();
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i) {
        EXPECT_EQ(ra[i].key, rb[i].key);
        EXPECT_EQ(ra[i].metrics, rb[i].metrics);
    }
    // A cancel in the middle of a chunk stops it at the next configuration: what finished is stored, the rest
    // is not, and every stored row is a cache hit next time.
    auto cancel_db = store::ResultStore::open(fresh_db("cancel"), store::ResultStore::Mode::read_write);
    CancelToken token;
    size_t seen = 0;  // the largest count reported (events may come from two threads)
    std::mutex mutex;
    EXPECT_THROW(run_sweep(spec, ev, *cancel_db, token, {},
                           [&](const SweepEvent& e) {
                               std::lock_guard lock(mutex);
                               seen = std::max(seen, e.done);
                               if (e.done >= 20) token.cancel();
                           }),
                 Cancelled);
    EXPECT_GE(seen, 20u);
    EXPECT_LT(seen, 192u);
    EXPECT_EQ(cancel_db->count(), seen);
    SweepSummary rest = run_sweep(spec, ev, *cancel_db, CancelToken());
    EXPECT_EQ(rest.cached, seen);
    EXPECT_EQ(rest.evaluated, 192u - seen);
}

TEST(AllocatorTuning, AppliedOnceAndReportsWhy) {
    jobs::AllocatorTuning first = jobs::tune_allocator_for_workers();
    jobs::AllocatorTuning again = jobs::tune_allocator_for_workers();
    EXPECT_EQ(first.applied, again.applied);
    EXPECT_EQ(first.disabled, again.disabled);
    EXPECT_EQ(first.user_tunables, again.user_tunables);
    // At most one reason; with glibc, no sanitizer and no environment override, mallopt accepts the settings.
    EXPECT_LE(int(first.applied) + int(first.disabled) + int(first.user_tunables), 1);
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
    const char* off = std::getenv("SPECULUM_MALLOC_TUNING");
    const char* tun = std::getenv("GLIBC_TUNABLES");
    if (!(off && std::string(off) == "0") && !(tun && std::string(tun).find("glibc.malloc.") != std::string::npos)) {
        EXPECT_TRUE(first.applied);
    }
#endif
}

// ResultRow <-> JSON (the form rows travel in between MPI ranks): a round trip keeps every field the store keeps,
// and malformed rows are refused with the field named.
#include "core/store/row_json.h"
#include "core/store/result_store.h"

#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace speculum::store;
using nlohmann::json;

namespace {

ResultRow sample_row() {
    ResultRow r;
    r.key         = {"0123456789abcdef", "fedcba9876543210", "00112233aabbccdd"};
    r.sweep       = "s";
    r.task        = "code";
    r.status      = "done";
    r.config      = {{"k", 3}, {"levels", json::array({{{"kind", "self"}, {"exit_layer", 1}}})}};
    r.stats       = {{"n_generated", 16}, {"alpha", {0.5, 0.25}}, {"t_decode_s", 0.123456789012345}};
    r.predictions = {{"expected_tokens", 2.5}};
    r.metrics     = {{"speedup", 1.0 / 3.0}, {"accepted_length", 2.2857142857142856}, {"draft_bytes", 2.5e6}};
    r.objective   = 2.2857142857142856;
    r.prompts     = 2;
    r.wall_s      = 0.25;
    return r;
}

std::string error_of(const json& j) {
    try {
        row_from_json(j);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(RowJson, RoundTripIsExact) {
    ResultRow r    = sample_row();
    ResultRow back = row_from_json(json::parse(row_to_json(r).dump()));  // through text, as on the wire
    EXPECT_EQ(back.key, r.key);
    EXPECT_EQ(back.sweep, r.sweep);
    EXPECT_EQ(back.task, r.task);
    EXPECT_EQ(back.status, r.status);
    EXPECT_EQ(back.message, r.message);
    EXPECT_EQ(back.config, r.config);
    EXPECT_EQ(back.stats, r.stats);
    EXPECT_EQ(back.predictions, r.predictions);
    EXPECT_EQ(back.metrics, r.metrics);  // doubles bit-exact: nlohmann prints the shortest round-trip form
    EXPECT_EQ(back.objective, r.objective);
    EXPECT_EQ(back.prompts, r.prompts);
    EXPECT_EQ(back.wall_s, r.wall_s);

    r.status    = "failed";
    r.message   = "exit_layer 9 >= n_layer 8";
    r.objective = std::nullopt;
    r.metrics   = {{"quality", std::numeric_limits<double>::quiet_NaN()}, {"bpt", 0.5}};
    back        = row_from_json(json::parse(row_to_json(r).dump()));
    EXPECT_EQ(back.status, "failed");
    EXPECT_EQ(back.message, r.message);
    EXPECT_FALSE(back.objective.has_value());
    // A NaN metric travels as null and is absent after the trip, as it is after the store (SQLite NULL).
    EXPECT_EQ(back.metrics, (std::map<std::string, double>{{"bpt", 0.5}}));
}

TEST(RowJson, AStoredRowIsTheSameWhicheverWayItCame) {
    auto path = speculum::test::tmp_dir() / "row_json.sqlite";
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
    auto store  = ResultStore::open(path, ResultStore::Mode::read_write);
    ResultRow r = sample_row();
    store->put(r);
    ResultRow direct = *store->find(r.key);
    store->put(row_from_json(row_to_json(r)));
    ResultRow via_json = *store->find(r.key);
    EXPECT_EQ(via_json.config, direct.config);
    EXPECT_EQ(via_json.stats, direct.stats);
    EXPECT_EQ(via_json.metrics, direct.metrics);
    EXPECT_EQ(via_json.objective, direct.objective);
    EXPECT_EQ(store->count(), 1u);
}

TEST(RowJson, MalformedRowsNameTheField) {
    json good = row_to_json(sample_row());
    EXPECT_EQ(error_of(good), "");
    EXPECT_EQ(error_of(json::array()), "row: expected a JSON object, got array");
    auto with = [&](const std::string& pointer, const json& v) {
        json j                         = good;
        j[json::json_pointer(pointer)] = v;
        return error_of(j);
    };
    auto without = [&](const std::string& key) {
        json j = good;
        j.erase(key);
        return error_of(j);
    };
    EXPECT_EQ(without("status"), "row.status: missing");
    EXPECT_EQ(without("key"), "row.key: missing");
    EXPECT_EQ(with("/extra", 1), "row.extra: is not a known key");
    EXPECT_EQ(with("/status", "running"), "row.status: must be done or failed");
    EXPECT_EQ(with("/status", 1), "row.status: expected a string, got an integer");
    EXPECT_EQ(with("/key/config_hash", ""), "row.key.config_hash: must not be empty");
    EXPECT_EQ(with("/key/salt", "x"), "row.key.salt: is not a known key");
    EXPECT_EQ(with("/config", "k=3"), "row.config: expected a JSON object, got string");
    EXPECT_EQ(with("/metrics/fun", 1.0), "row.metrics.fun: is not a metric column");
    EXPECT_EQ(with("/metrics/speedup", "fast"), "row.metrics.speedup: expected a number or null, got string");
    EXPECT_EQ(with("/objective", "best"), "row.objective: expected a number or null, got string");
    EXPECT_EQ(with("/prompts", -1), "row.prompts: is out of range");
    EXPECT_EQ(with("/prompts", 1.5), "row.prompts: expected an integer, got a fractional number");
    EXPECT_EQ(with("/wall_s", -0.5), "row.wall_s: is out of range");
}

// The strict JSON reader (core/json_reader.h): typed values with ranges, enums by name, paths in errors, and one
// message for an unknown key in every reader of JSON from outside (issue #53).
#include "core/json_reader.h"

#include "core/analytic/calibration.h"
#include "core/analytic/checks.h"
#include "core/analytic/kmatrix.h"
#include "core/analytic/predict.h"
#include "core/drafts/draft_spec.h"
#include "core/drafts/maxgram.h"
#include "core/engine/spec_config.h"
#include "core/export/manifest.h"
#include "core/hw/profile.h"
#include "core/model/runtime_bench.h"
#include "core/model/sampler.h"
#include "core/model/synthetic.h"
#include "core/session/run_report.h"
#include "core/store/row_json.h"
#include "core/sweep/spec_predict_evaluator.h"
#include "core/sweep/sweep_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <functional>

using namespace speculum;
using nlohmann::json;
using ::testing::EndsWith;
using ::testing::HasSubstr;

namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no error)";
}

enum class Colour { red, green };
constexpr std::array<std::pair<const char*, Colour>, 2> kColours{{{"red", Colour::red}, {"green", Colour::green}}};

}  // namespace

TEST(JsonReader, ReadsTypedValuesAndLeavesAbsentKeysAtTheirDefaults) {
    const json j = json::parse(R"({"b": true, "s": "x", "d": 0.5, "i": -3, "u": 7, "v": [1, 2.5], "c": "green"})");
    bool b       = false;
    std::string s;
    double d = 0, absent = 9;
    int32_t i  = 0;
    uint64_t u = 0;
    std::vector<double> v;
    Colour c = Colour::red;
    JsonReader r(j, "cfg");
    r.get("b", b);
    r.get("s", s);
    r.get("d", d, 0.0, 1.0);
    r.get("i", i, -10, 10);
    r.get("u", u);
    r.get("v", v);
    r.get_enum("c", c, kColours);
    r.get("absent", absent);
    r.finish();
    EXPECT_TRUE(b);
    EXPECT_EQ(s, "x");
    EXPECT_EQ(d, 0.5);
    EXPECT_EQ(i, -3);
    EXPECT_EQ(u, 7u);
    EXPECT_EQ(v, (std::vector<double>{1, 2.5}));
    EXPECT_EQ(c, Colour::green);
    EXPECT_EQ(absent, 9);
}

TEST(JsonReader, ErrorsNameThePath) {
    const auto read = [](const char* text, const std::function<void(JsonReader&)>& f) {
        return error_of([&] {
            const json j = json::parse(text);
            JsonReader r(j, "spec.context");
            f(r);
            r.finish();
        });
    };
    int32_t n = 0;
    double d  = 0;
    Colour c  = Colour::red;
    std::vector<double> v;
    EXPECT_EQ(read(R"({"n": "x"})", [&](JsonReader& r) { r.get("n", n); }),
              "spec.context.n: expected an integer, got string");
    EXPECT_EQ(read(R"({"n": 2.5})", [&](JsonReader& r) { r.get("n", n); }),
              "spec.context.n: expected an integer, got a fractional number");
    EXPECT_EQ(read(R"({"n": 11})", [&](JsonReader& r) { r.get("n", n, 0, 10); }), "spec.context.n: is out of range");
    EXPECT_EQ(read(R"({"n": 5000000000})", [&](JsonReader& r) { r.get("n", n); }), "spec.context.n: is out of range");
    EXPECT_EQ(read(R"({"d": 2})", [&](JsonReader& r) { r.get("d", d, 0.0, 1.0); }), "spec.context.d: is out of range");
    EXPECT_EQ(read(R"({"v": [1, "x"]})", [&](JsonReader& r) { r.get("v", v); }),
              "spec.context.v[1]: expected a number, got string");
    EXPECT_EQ(read(R"({"c": "blue"})", [&](JsonReader& r) { r.get_enum("c", c, kColours); }),
              "spec.context.c: \"blue\" is not one of \"red\", \"green\"");
    EXPECT_EQ(read(R"({"n": 1, "m": 2})", [&](JsonReader& r) { r.get("n", n); }), "spec.context.m: is not a known key");
    EXPECT_EQ(read(R"({"skipped": 1})", [&](JsonReader& r) { r.ignore("skipped"); }), "(no error)");
    EXPECT_EQ(error_of([] { JsonReader r(json::array(), "spec"); }), "spec: expected a JSON object, got array");
    EXPECT_EQ(error_of([] {
                  const json j = json::parse(R"({"k": 1})");  // the reader keeps a reference: j must outlive it
                  JsonReader r(j, "");
                  r.finish();
              }),
              "k: is not a known key");
}

TEST(JsonReader, AFailHandlerChoosesTheExceptionType) {
    const json j = json::parse(R"({"x": 1})");
    JsonReader r(j, "run", [](const std::string& path, const std::string& what) {
        throw analytic::InvalidInput(path + ": " + what);
    });
    EXPECT_THROW(r.finish(), analytic::InvalidInput);
}

// Every reader of JSON from outside gives the same message for a key it does not know. Removing a reader's own
// check, or giving it another wording, fails this.
TEST(JsonReader, EveryReaderNamesAnUnknownKeyTheSameWay) {
    const auto with_bogus = [](json j) {
        j["bogus_key"] = 1;
        return j;
    };
    const std::string msg = "bogus_key: is not a known key";

    EXPECT_THAT(error_of([&] { (void)with_bogus(json(engine::SpecConfig{})).get<engine::SpecConfig>(); }),
                EndsWith("spec." + msg));
    EXPECT_THAT(error_of([&] { (void)with_bogus(json(drafts::DraftSpec{})).get<drafts::DraftSpec>(); }),
                EndsWith("draft." + msg));
    json nested     = json(drafts::DraftSpec{});
    nested["kind"]  = "ngram";
    nested["ngram"] = with_bogus(json::object());
    EXPECT_THAT(error_of([&] { (void)nested.get<drafts::DraftSpec>(); }), EndsWith("draft.ngram." + msg));
    json level                      = json(engine::SpecConfig{});
    level["levels"][0]["bogus_key"] = 1;
    EXPECT_THAT(error_of([&] { (void)level.get<engine::SpecConfig>(); }), EndsWith("draft." + msg));

    EXPECT_THAT(error_of([&] { (void)sweep::sweep_spec_from_json(with_bogus(json::object())); }), EndsWith(msg));
    EXPECT_THAT(error_of([&] { (void)with_bogus(json(hw::HardwareProfile{})).get<hw::HardwareProfile>(); }),
                EndsWith(msg));
    EXPECT_THAT(error_of([&] { (void)with_bogus(json(model::SyntheticSpec{})).get<model::SyntheticSpec>(); }),
                EndsWith("SyntheticSpec." + msg));
    EXPECT_THAT(error_of([&] { (void)with_bogus(json(analytic::MeasuredRun{})).get<analytic::MeasuredRun>(); }),
                EndsWith("run." + msg));
    store::ResultRow row;
    row.key    = {"config", "model", "dataset"};
    row.status = "done";
    EXPECT_THAT(error_of([&] { (void)store::row_from_json(with_bogus(store::row_to_json(row))); }),
                EndsWith("row." + msg));
    EXPECT_THAT(error_of([&] { (void)with_bogus(json(exporting::Manifest{})).get<exporting::Manifest>(); }),
                EndsWith("manifest." + msg));
    EXPECT_THAT(error_of([&] { (void)analytic::predict_input_from_json(with_bogus(json::object()), {}); }),
                EndsWith(msg));
    EXPECT_THAT(error_of([&] { (void)analytic::kmatrix_from_json(with_bogus(json::object())); }), EndsWith(msg));
    EXPECT_THAT(error_of([&] { (void)with_bogus(json(model::SamplerConfig{})).get<model::SamplerConfig>(); }),
                EndsWith("sampling." + msg));
    json nested_context               = json(engine::SpecConfig{});
    nested_context["context"]["oops"] = 1;
    EXPECT_THAT(error_of([&] { (void)nested_context.get<engine::SpecConfig>(); }),
                EndsWith("spec.context.oops: is not a known key"));
    EXPECT_THAT(error_of([&] { (void)with_bogus(json(model::BenchConfig{})).get<model::BenchConfig>(); }),
                EndsWith("bench." + msg));
    EXPECT_THAT(error_of([&] { (void)with_bogus(json(drafts::MaxGramParams{})).get<drafts::MaxGramParams>(); }),
                EndsWith("maxgram." + msg));
    // SpecConfig reads through JsonReader too: typed values (no silent truncation of 4.5 to 4) and enums by name.
    json fractional     = json(engine::SpecConfig{});
    fractional["gamma"] = {4.5};
    EXPECT_THAT(error_of([&] { (void)fractional.get<engine::SpecConfig>(); }), HasSubstr("spec.gamma[0]"));
    json verification            = json(engine::SpecConfig{});
    verification["verification"] = "forest";
    EXPECT_THAT(error_of([&] { (void)verification.get<engine::SpecConfig>(); }),
                HasSubstr("spec.verification: \"forest\" is not one of \"chain\", \"tree\", \"cats\""));
    EXPECT_THAT(error_of([&] { (void)with_bogus(json(session::RepeatSummary{})).get<session::RepeatSummary>(); }),
                EndsWith("repeated." + msg));
    engine::SpecConfig one_level;
    one_level.levels = {drafts::DraftSpec{}};
    EXPECT_THAT(error_of([&] { (void)sweep::spec_modeled_from_json(with_bogus(json::object()), one_level); }),
                EndsWith("modeled." + msg));
}

// Sessions: the run history (pinned runs, each run's figures and report), the configuration, the open files and
// the Design space store survive a save and a read; a file that is not a session, or has a bad field, is refused
// by path and changes nothing; the controller puts a session back and numbers new runs on from it.
#include "ui/ui_fixtures.h"

#include "support/fresh_path.h"

#include "core/file_io.h"
#include "core/store/hash.h"
#include "core/store/result_store.h"
#include "ui/model/run_compare.h"
#include "ui/model/session_file.h"

#include <fstream>

using namespace speculum;
using nlohmann::json;

namespace {

// Two finished runs: the first pinned with a report of two prompts and four A/B pairs, the second plain.
ui::SessionState sample_session() {
    ui::SessionState s;
    s.config.spec.gamma[0] = 7;
    s.model_path           = "/models/target.gguf";
    s.dataset_path         = "/data/prose.jsonl";
    s.task                 = "prose";
    s.results_path         = "/tmp/sweep.sqlite";
    ui::RunRecord a;
    a.id     = 3;
    a.when   = "10:11:12";
    a.pinned = true;
    a.config = s.config;
    a.view   = test::sample_measured();
    a.view.tokens.clear();
    a.view.stats.levels.resize(2);
    a.view.stats.levels[1].level      = 1;
    a.view.stats.levels[1].name       = "draft";
    a.view.stats.levels[1].cost_ratio = 0.125;
    a.view.drafter                    = "bundled draft model";
    a.view.source                     = "prose_continuation.jsonl";
    a.view.prompts                    = {{"p-0", "prose", ""}, {"p-1", "prose", ""}};
    a.view.prompts_total              = 2;
    a.view.repeats.passes             = 4;
    a.view.repeats.speedup_pairs      = {2.0, 2.2, 2.4, 2.1};
    a.view.repeats.speedup.median = 2.15, a.view.repeats.speedup.lo = 2.0, a.view.repeats.speedup.hi = 2.4;
    a.view.repeats.speedup.n = 4, a.view.repeats.speedup.coverage = 0.875;
    a.view.report = std::make_shared<const json>(
        json{{"runs", json::array({{{"id", "p-0"}, {"task", "prose"}, {"stats", a.view.stats}},
                                   {{"id", "p-1"}, {"task", "prose"}, {"stats", a.view.stats}}})}});
    ui::RunRecord b = a;
    b.id            = 4;
    b.pinned        = false;
    b.view.report.reset();
    b.config.spec.gamma[0] = 3;
    s.history              = {a, b};
    return s;
}

std::string error_of(const json& j) {
    try {
        (void)ui::session_from_json(j, "s.json");
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Session, EveryRunsFiguresSurviveASaveAndARead) {
    const ui::SessionState s = sample_session();
    const std::string path   = test::fresh_tmp_path("ui_session.json").string();
    ui::save_session_file(path, s);
    const ui::SessionState back = ui::load_session_file(path);
    EXPECT_EQ(back.config.gamma(), 7);
    EXPECT_EQ(back.model_path, s.model_path);
    EXPECT_EQ(back.dataset_path, s.dataset_path);
    EXPECT_EQ(back.task, "prose");
    EXPECT_EQ(back.results_path, s.results_path);
    EXPECT_FALSE(back.saved_at.empty());
    ASSERT_EQ(back.history.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        const ui::RunRecord &x = s.history[i], &y = back.history[i];
        EXPECT_EQ(y.id, x.id);
        EXPECT_EQ(y.when, x.when);
        EXPECT_EQ(y.pinned, x.pinned);
        EXPECT_EQ(json(y.config), json(x.config));
        EXPECT_EQ(y.view.stats, x.view.stats);
        EXPECT_EQ(y.view.repeats.speedup_pairs, x.view.repeats.speedup_pairs);
        EXPECT_DOUBLE_EQ(y.view.repeats.speedup.coverage, x.view.repeats.speedup.coverage);
        EXPECT_DOUBLE_EQ(y.view.speedup(), x.view.speedup());
        EXPECT_EQ(y.view.drafter, x.view.drafter);
        EXPECT_EQ(y.view.prompts.size(), x.view.prompts.size());
        EXPECT_TRUE(y.view.complete);
        EXPECT_EQ(bool(y.view.report), bool(x.view.report));
    }
    // What the Run history panel draws from a restored run is what it drew before: the CSV and the per-prompt rows.
    EXPECT_EQ(ui::history_csv(back.history), ui::history_csv(s.history));
    EXPECT_EQ(ui::prompt_rows(back.history[0]).size(), 2u);
    EXPECT_EQ(ui::prompts_csv(back.history), ui::prompts_csv(s.history));
}

TEST(Session, AFileThatIsNotASessionOrHasABadFieldIsRefusedByPath) {
    const json good = ui::session_json(sample_session());
    EXPECT_NE(error_of(json{{"config", good["config"]}}).find("not a Speculum session"), std::string::npos);
    json v                = good;
    v["speculum_session"] = 2;
    EXPECT_NE(error_of(v).find("this Speculum reads version 1"), std::string::npos) << error_of(v);
    json bad                                     = good;
    bad["history"][1]["run"]["stats"]["n_steps"] = "many";
    EXPECT_NE(error_of(bad).find("history[1].run.stats.n_steps"), std::string::npos) << error_of(bad);
    bad                                                          = good;
    bad["history"][0]["run"]["stats"]["levels"][1]["cost_ratio"] = -1;
    EXPECT_NE(error_of(bad).find("levels[1].cost_ratio"), std::string::npos) << error_of(bad);
    bad                     = good;
    bad["history"][1]["id"] = 2;  // before the run it follows
    EXPECT_NE(error_of(bad).find("history[1].id"), std::string::npos) << error_of(bad);
    bad                                 = good;
    bad["history"][0]["config"]["spec"] = "gamma 5";
    EXPECT_NE(error_of(bad).find("history[0].config"), std::string::npos) << error_of(bad);
    bad            = good;
    bad["surplus"] = 1;
    EXPECT_NE(error_of(bad).find("surplus"), std::string::npos) << error_of(bad);
    bad            = good;
    bad["history"] = json::array();
    for (size_t i = 0; i <= ui::kMaxSessionRuns; ++i) bad["history"].push_back(good["history"][1]);
    EXPECT_NE(error_of(bad).find("at most"), std::string::npos) << error_of(bad);
    EXPECT_EQ(error_of(good), "");

    // Files: not JSON, a directory, a failed write that leaves the old file whole.
    const std::string path = test::fresh_tmp_path("ui_session_bad.json").string();
    std::ofstream(path) << "{\"speculum_session\": 1, \"config\": ";
    EXPECT_THROW((void)ui::load_session_file(path), std::invalid_argument);
    EXPECT_THROW((void)ui::load_session_file(test::tmp_dir().string()), std::runtime_error);
    ui::save_session_file(path, sample_session());
    const std::string before = read_input_file(path, ui::kMaxSessionFileBytes, "session");
    EXPECT_THROW(ui::save_session_file(path + "/not/a/dir.json", sample_session()), std::runtime_error);
    EXPECT_EQ(read_input_file(path, ui::kMaxSessionFileBytes, "session"), before);
}

TEST(Session, TheControllerPutsTheHistoryAndTheStoreBackAndNumbersOn) {
    // A sweep's store on disk, which the session names.
    const auto store_path = test::fresh_tmp_path("ui_session_store.sqlite");
    {
        auto st = store::ResultStore::open(store_path, store::ResultStore::Mode::read_write);
        store::ResultRow r;
        r.config                       = {{"gamma", json::array({4})}};
        r.key                          = {store::json_hash(r.config), "m", "d"};
        r.metrics["predicted_speedup"] = 1.5;
        st->put(r);
    }
    ui::SessionState s = sample_session();
    s.results_path     = store_path.string();
    s.model_path       = "/no/such/model.gguf";

    ui::AppController c;
    c.set_measurer([](const ui::AppController::MeasureRequest&, const CancelToken&, const ProgressFn&,
                      const std::function<void(const ui::MeasuredView&)>&) { return test::sample_measured(); });
    c.restore_session(s, false);
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().store != nullptr; }));
    EXPECT_EQ(c.snapshot().store->path, store_path.string());
    EXPECT_EQ(c.snapshot().store->rows.size(), 1u);
    ASSERT_EQ(c.snapshot().history.size(), 2u);
    EXPECT_TRUE(c.snapshot().history[0].pinned);
    EXPECT_EQ(c.snapshot().config.gamma(), ui::AppConfig{}.gamma()) << "a launch keeps the settings' configuration";

    // A new run numbers on from the restored ones, and the session to save holds all three.
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr; }));
    c.handle(ui::ActionRunMeasured{});
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy() && c.snapshot().history.size() == 3; }));
    EXPECT_EQ(c.snapshot().history.back().id, 5);
    const ui::SessionState saved = c.session();
    EXPECT_EQ(saved.history.size(), 3u);
    EXPECT_EQ(saved.results_path, store_path.string());
    EXPECT_EQ(saved.model_path, test::synthetic_gguf());

    // Opening a whole session takes its configuration and says which of its files are gone.
    ui::AppController d;
    d.restore_session(s, true);
    EXPECT_EQ(d.snapshot().config.gamma(), 7);
    ASSERT_FALSE(d.snapshot().messages.empty());
    EXPECT_NE(d.snapshot().messages.back().text.find("/no/such/model.gguf"), std::string::npos);
    EXPECT_NE(d.snapshot().messages.back().text.find("2 runs in the history (1 pinned)"), std::string::npos)
        << d.snapshot().messages.back().text;
}

// Every field of a session replaced by a value of another shape: each read either succeeds or is refused with
// std::invalid_argument (never another exception, a crash or a hang).
TEST(Session, EveryFieldReplacedByAnotherShapeIsReadOrRefusedCleanly) {
    const json doc  = ui::session_json(sample_session());
    const json flat = doc.flatten();
    const std::vector<json> shapes{"x", -1, nullptr, json::array(), json::object(), 1e308, true};
    int refused = 0, read = 0;
    for (const auto& [pointer, value] : flat.items())
        for (const json& shape : shapes) {
            if (shape == value) continue;
            json f                         = doc;
            f[json::json_pointer(pointer)] = shape;
            try {
                (void)ui::session_from_json(f, "s.json");
                ++read;
            } catch (const std::invalid_argument&) {
                ++refused;
            } catch (const std::exception& e) {
                ADD_FAILURE() << pointer << " = " << shape.dump() << ": " << e.what();
            }
        }
    EXPECT_GT(refused, 100);
    EXPECT_GT(read, 0) << "informative fields (a report's contents) are read as they are";
}

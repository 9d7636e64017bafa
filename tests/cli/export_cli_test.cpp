// `speculum-cli export` and `run --config MANIFEST` against the real binary: a manifest made from a run reproduces
// it token for token; hash mismatches warn; bad manifests name the key; engine snippets say what they cannot
// express; the draft GGUF, CSV, report, SVG and PNG come out right; usage errors exit 2.
#include "core/export/manifest.h"
#include "core/export/plot_raster.h"
#include "core/export/sha256.h"
#include "core/model/model.h"
#include "core/model/synthetic.h"
#include "core/store/result_store.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using speculum::test::run_cli;
namespace fs = std::filesystem;

namespace {

fs::path dir() {
    static const fs::path d = [] {
        fs::path p = speculum::test::tmp_dir() / "export_cli";
        fs::create_directories(p);
        return p;
    }();
    return d;
}

std::string tiny_target() {
    static const std::string path = [] {
        speculum::model::SyntheticSpec s;
        s.n_vocab = 128, s.n_embd = 64, s.n_layer = 3, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 128, s.n_ctx = 256;
        s.type = speculum::kernels::GgmlType::F16, s.seed = 47;
        const std::string p = (dir() / "target.gguf").string();
        speculum::model::write_synthetic_gguf(s, p);
        return p;
    }();
    return path;
}

std::string write(const std::string& name, const std::string& text) {
    const std::string p = (dir() / name).string();
    std::ofstream(p) << text;
    return p;
}

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

std::string read(const std::string& path) {
    std::stringstream s;
    s << std::ifstream(path, std::ios::binary).rdbuf();
    return s.str();
}

const char* kChain = R"({"levels": [{"kind": "self", "exit_layer": 1, "weight_format": "q8_0"}], "gamma": [3],
    "max_new_tokens": 20, "prompt_ids": [5, 17, 3, 42, 17, 3, 42, 8]})";

}  // namespace

TEST(CliExport, ManifestFromARunReproducesIt) {
    const std::string cfg = write("chain.json", kChain);
    const std::string r1  = (dir() / "run1.json").string();
    auto r                = run_cli({"run", "--config", cfg, "-m", tiny_target(), "--reference", "--report", r1});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;

    const std::string man = (dir() / "manifest.json").string();
    r = run_cli({"export", "--format", "manifest", "--config", cfg, "-m", tiny_target(), "--run-report", r1,
                 "--hardware", "rtx4090", "--name", "q8 chain", "-o", man});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto m = speculum::exporting::load_manifest(man);
    EXPECT_EQ(m.name, "q8 chain");
    EXPECT_EQ(m.model.path, tiny_target());
    EXPECT_EQ(m.model.architecture, "llama");
    EXPECT_EQ(m.model.n_layer, 3);
    EXPECT_TRUE(speculum::exporting::is_sha256_hex(m.model.sha256));
    ASSERT_TRUE(m.figures.measured && m.figures.predicted && m.hardware);
    EXPECT_EQ(m.figures.measured->pos_reached, read_json(r1).at("total").at("pos_reached").get<std::vector<int64_t>>());
    EXPECT_EQ(m.hardware->id, "rtx4090");

    // The manifest names its target: no -m needed, and the same tokens come out.
    const std::string r2 = (dir() / "run2.json").string();
    r                    = run_cli({"run", "--config", man, "--reference", "--report", r2});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_EQ(r.err.find("warning: the manifest"), std::string::npos) << r.err;  // the target is the recorded one
    EXPECT_EQ(read_json(r2).at("runs").at(0).at("tokens"), read_json(r1).at("runs").at(0).at("tokens"));
    EXPECT_EQ(read_json(r2).at("total").at("pos_accepted"), read_json(r1).at("total").at("pos_accepted"));

    // run --manifest-out writes the same kind of record directly.
    const std::string man2 = (dir() / "manifest_run.json").string();
    r                      = run_cli({"run", "--config", man, "--reference", "--manifest-out", man2});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto m2 = speculum::exporting::load_manifest(man2);
    EXPECT_EQ(m2.model.sha256, m.model.sha256);
    EXPECT_EQ(m2.config.levels, m.config.levels);
    EXPECT_EQ(m2.config.gamma, m.config.gamma);
    EXPECT_EQ(m2.config.context.path, speculum::model::ForwardPath::reference) << "the run's --reference is recorded";
    EXPECT_TRUE(m2.figures.measured && m2.figures.predicted);
}

TEST(CliExport, HashMismatchWarnsAndBadManifestsNameTheKey) {
    const std::string cfg = write("chain_h.json", kChain);
    const std::string man = (dir() / "manifest_h.json").string();
    ASSERT_EQ(run_cli({"export", "--format", "manifest", "--config", cfg, "-m", tiny_target(), "-o", man}).exit_code,
              0);
    nlohmann::json j        = read_json(man);
    j["model"]["sha256"]    = std::string(64, '0');
    const std::string wrong = write("manifest_wrong_hash.json", j.dump());
    auto r                  = run_cli({"run", "--config", wrong, "--reference", "-n", "4"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: model hash mismatch"), std::string::npos) << r.err;

    j                       = read_json(man);
    j["figures"]            = {{"measured", {{"speedup", "fast"}}}};
    const std::string typed = write("manifest_bad_type.json", j.dump());
    r                       = run_cli({"run", "--config", typed});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(typed + ": manifest.figures.measured.speedup: expected a number, got string"),
              std::string::npos)
        << r.err;
    j                         = read_json(man);
    j["model"]["sha265"]      = "typo";
    const std::string unknown = write("manifest_unknown.json", j.dump());
    r                         = run_cli({"export", "--format", "llama.cpp", "--config", unknown});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("manifest.model.sha265: is not a known key"), std::string::npos) << r.err;
    j                       = read_json(man);
    j["model"]["path"]      = "/nowhere/target.gguf";
    const std::string moved = write("manifest_moved.json", j.dump());
    r                       = run_cli({"run", "--config", moved});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("give it with -m"), std::string::npos) << r.err;
}

TEST(CliExport, EngineSnippetsSayWhatTheyCannotExpress) {
    const std::string cascade = write("cascade.json", R"({"levels": [{"kind": "self", "exit_layer": 1},
        {"kind": "maxgram"}], "gamma": [4, 2], "prompt_ids": [1]})");
    auto r                    = run_cli({"export", "--format", "llama.cpp", "--config", cascade, "-m", tiny_target()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("llama-server \\"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("# cannot express:"), std::string::npos);
    EXPECT_NE(r.err.find("llama.cpp cannot express: a 3-model vertical cascade"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("export falls back to: level 1 (exit@1) drafts 4 tokens"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--format draft-gguf"), std::string::npos);

    const std::string out = (dir() / "vllm.sh").string();
    r = run_cli({"export", "--format", "vllm", "--config", cascade, "-m", tiny_target(), "-o", out, "--draft",
                 "/srv/draft.gguf"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("wrote vllm snippet"), std::string::npos);
    EXPECT_NE(r.out.find("vllm cannot express"), std::string::npos) << r.out;
    EXPECT_NE(read(out).find(R"('{"method":"draft_model","model":"/srv/draft.gguf","num_speculative_tokens":4,)"),
              std::string::npos)
        << read(out);
    r = run_cli({"export", "--format", "sglang", "--config", cascade, "-m", tiny_target()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("--speculative-num-draft-tokens 5"), std::string::npos) << r.out;
}

TEST(CliExport, DraftGgufLoadsAsADraftModel) {
    const std::string cfg   = write("draft_mx.json", R"({"levels": [{"kind": "self", "exit_layer": 1,
        "weight_format": "mxfp4"}], "gamma": [3], "prompt_ids": [5, 17, 3, 42], "max_new_tokens": 12})");
    const std::string draft = (dir() / "draft_mx.gguf").string();
    auto r = run_cli({"export", "--format", "draft-gguf", "--config", cfg, "-m", tiny_target(), "-o", draft});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("2 layers"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("-md " + draft), std::string::npos);
    EXPECT_EQ(speculum::model::Model::load(draft).hparams().n_layer, 2);
    // The file is a draft model our engine accepts (vocabulary checks pass) and runs losslessly.
    const std::string as_model =
        write("draft_as_model.json", R"({"levels": [{"kind": "model", "model_path": ")" + draft +
                                         R"("}], "gamma": [3], "prompt_ids": [5, 17, 3, 42], "max_new_tokens": 12})");
    r = run_cli({"run", "--config", as_model, "-m", tiny_target(), "--reference"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("identical to the target's own greedy output"), std::string::npos) << r.out;

    const std::string skip =
        write("draft_skip.json", R"({"levels": [{"kind": "self", "skip_ffn": [1]}], "prompt_ids": [1]})");
    r = run_cli({"export", "--format", "draft-gguf", "--config", skip, "-m", tiny_target(), "-o", draft});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--drop-unsupported"), std::string::npos) << r.err;
    r = run_cli(
        {"export", "--format", "draft-gguf", "--config", skip, "-m", tiny_target(), "-o", draft, "--drop-unsupported"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("not carried by the file: skip sets"), std::string::npos) << r.out;
}

TEST(CliExport, CsvReportAndPlots) {
    using namespace speculum;
    const std::string db = (dir() / "results.sqlite").string();
    fs::remove(db);
    {
        auto s = store::ResultStore::open(db, store::ResultStore::Mode::read_write);
        for (int g = 1; g <= 3; ++g)
            for (double ratio : {0.0, 0.5}) {
                store::ResultRow row;
                std::string hash = "c";
                hash += std::to_string(g);
                if (ratio > 0) hash += 'p';
                row.key                = {hash, "m", "d"};
                row.config             = {{"gamma", {g}}, {"levels", {{{"prune", {{"ratio", ratio}}}}}}};
                row.metrics["speedup"] = 1.0 + 0.1 * g - ratio;
                row.stats              = {{"n_generated", 10}};
                s->put(row);
            }
    }
    auto r = run_cli({"export", "--format", "csv", "--db", db, "--filter", "speedup>1.0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4) << r.out;  // header + 3 rows
    const std::string svg = (dir() / "heat.svg").string();
    r = run_cli({"export", "--format", "svg", "--plot", "heatmap", "--db", db, "--x", "/gamma/0", "--y",
                 "/levels/0/prune/ratio", "-o", svg});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(read(svg).find("/gamma/0 = 3, /levels/0/prune/ratio = 0: speedup = 1.3"), std::string::npos);

    const std::string cfg = write("chain_plot.json", kChain);
    const std::string rep = (dir() / "run_plot.json").string();
    ASSERT_EQ(run_cli({"run", "--config", cfg, "-m", tiny_target(), "--report", rep}).exit_code, 0);
    r = run_cli({"export", "--format", "report", "--config", cfg, "-m", tiny_target(), "--run-report", rep});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto report = nlohmann::json::parse(r.out);
    EXPECT_EQ(report.at("format"), "speculum.report");
    EXPECT_EQ(report.at("run"), read_json(rep));
    r = run_cli(
        {"export", "--format", "svg", "--plot", "speedup", "--config", cfg, "-m", tiny_target(), "--run-report", rep});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("(measured)</title>"), std::string::npos) << r.out;
    // Where the speedup went: the report's waterfall, a measured bar per step, the headroom modeled.
    r = run_cli({"export", "--format", "svg", "--plot", "waterfall", "--config", cfg, "-m", tiny_target(),
                 "--run-report", rep});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("acceptance alone = "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("- overhead = "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("headroom: always-right drafter = "), std::string::npos) << r.out;
    r = run_cli({"export", "--format", "svg", "--plot", "waterfall", "--config", cfg, "-m", tiny_target()});
    EXPECT_EQ(r.exit_code, 2) << "no run report: " << r.err;
    const std::string png = (dir() / "acceptance.png").string();
    r = run_cli({"export", "--format", "png", "--plot", "acceptance", "--config", cfg, "-m", tiny_target(),
                 "--run-report", rep, "--size", "480x300", "-o", png});
#ifdef SPECULUM_CLI_HAVE_UI
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string bytes = read(png);
    const auto img          = exporting::decode_png(std::vector<uint8_t>(bytes.begin(), bytes.end()));
    EXPECT_EQ(img.width, 480);
    EXPECT_EQ(img.height, 300);
    size_t ink = 0;
    for (size_t i = 0; i < img.rgba.size(); i += 4) ink += img.rgba[i] < 200;
    EXPECT_GT(ink, 500u) << "bars, axes and text";
#else
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("built without"), std::string::npos) << r.err;
#endif
}

TEST(CliExport, UsageErrors) {
    auto r = run_cli({"export", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("draft-gguf"), std::string::npos);
    EXPECT_NE(r.out.find("cannot"), std::string::npos);
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"export"}, "--format is required"},
        {{"export", "--format", "tgi"}, "unknown format 'tgi'"},
        {{"export", "--format", "draft-gguf"}, "needs -o FILE"},
        {{"export", "--format", "png", "--plot", "speedup"}, "needs -o FILE"},
        {{"export", "--format", "csv"}, "--db FILE"},
        {{"export", "--format", "svg"}, "--plot is required"},
        {{"export", "--format", "svg", "--plot", "pie"}, "--plot: expected acceptance, speedup, waterfall or heatmap"},
        {{"export", "--format", "svg", "--plot", "speedup", "--size", "10x10"}, "--size"},
        {{"export", "--format", "manifest", "--hardware", "no_such_gpu"}, "--hardware"},
    };
    for (const auto& [args, expect] : cases) {
        r = run_cli(args);
        EXPECT_EQ(r.exit_code, 2) << args.back() << "\n" << r.err;
        EXPECT_NE(r.err.find(expect), std::string::npos) << r.err;
    }
    r = run_cli({"export", "--format", "svg", "--plot", "acceptance"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("needs figures"), std::string::npos) << r.err;
}
